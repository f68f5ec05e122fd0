"""A class on a real JupyterHub (issue 36): JupyterHub 6 with configurable-http-proxy on 127.0.0.1, real Unix users
(two students, one instructor: made by the module with ``useradd``, removed after), PAM logins, LocalProcessSpawner
running each user's server as that user, nbgrader's exchange in a folder every user shares (1777, as /tmp: a student
can neither rename the course's folder nor delete another's submission), the course's nbgrader configuration as the
hub course ``posref``.

Through the hub: the instructor (never root: every command runs as their Unix user, as in a terminal of their hub
server) releases 01_order; student ``a`` logs in in Chromium and fetches, validates and submits in the course's
Assignment List (``posref_jupyter.assignment_list``: the course's panel on nbgrader's exchange); student ``b``,
whose server the hub starts in the zh-TW edition, fetches the zh-TW release (the instructor's one release puts every
edition in the exchange: autograder/release/exchange.py) and validates it through the Assignment List's HTTP API
with a token of their own, with a JupyterLab checkpoint beside the notebook, then logs in and validates and submits
in the Assignment List, which speaks zh-TW (saved as zh-TW_assignment_list.png), then hands in a stub claiming to be
``a`` (nbgrader's ``submit --student``, as from a terminal); the instructor collects (the forged one refused),
grades (the score of record), writes and releases feedback; each student fetches feedback and gets their own page,
which typesets its formulas in a browser that can load nothing but the page.

Set-up as a deployment does it: JupyterHub from PyPI (the course's ``.[hub]``, pinned in constraints.txt, in the
environment ``make setup`` makes), configurable-http-proxy from npm (``make hub-proxy``: ``tools/hub``'s lock into
``.hub/``, which git ignores; nothing is fetched when it is there). The test's Python sits in root's home on the
course's machines, which other users cannot enter: each server starts in a mount namespace that shows it
(``conftest.python_shown_to``) and drops to the user there (``setpriv``) instead of in LocalProcessSpawner's
pre-exec, which is all that differs from a deployment's LocalProcessSpawner. Screenshots go to
``POSREF_SCREENSHOT_DIR`` (default: the test's temporary folder).
"""

from __future__ import annotations

import csv
import json
import os
import pwd
import re
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import nbformat
import pytest
import student_text
from conftest import python_shown_to
from test_browser import HANG_S, _chromium, _free_port, browser_page
from test_html_export import TYPESET

from autograder.course import CONFIG, REPO
from posref import launch
from posref.i18n import _, speaking
from posref_jupyter import assignment_list, validate

pytestmark = [pytest.mark.slow, pytest.mark.browser, pytest.mark.timeout(1800)]  # hang guards (HANG_S)
ASSIGNMENT = "01_order"
COURSE = "posref"
PROXY = REPO / ".hub" / "node_modules" / ".bin" / "configurable-http-proxy"
SERVER = [str(Path(sys.executable).parent / "jupyterhub-singleuser")]
COMMAND_TIMEOUT = 900  # seconds: a hang guard for one command


@dataclass
class Person:
    name: str
    uid: int
    gid: int
    home: Path
    password: str
    lang: str = "en"
    token: str = ""


HUB_CONFIG = """
import pwd
from jupyterhub.spawner import LocalProcessSpawner

PREFIX = {prefix!r}


class CourseSpawner(LocalProcessSpawner):
    # LocalProcessSpawner; where the Python sits where users cannot enter it, the server starts in a mount namespace
    # that shows it, as root, and drops to the user there (setpriv) instead of in the pre-exec function
    def make_preexec_fn(self, name):
        return super().make_preexec_fn(name) if not PREFIX else None

    async def start(self):
        if PREFIX:
            user = pwd.getpwnam(self.user.name)
            drop = ["setpriv", f"--reuid={{user.pw_uid}}", f"--regid={{user.pw_gid}}", "--init-groups", "--"]
            self.cmd = [*PREFIX, *drop, *{server!r}]
            self.popen_kwargs = {{"cwd": user.pw_dir}}
        return await super().start()


c = get_config()
c.JupyterHub.ip = "127.0.0.1"
c.JupyterHub.port = {port}
c.JupyterHub.hub_ip = "127.0.0.1"
c.JupyterHub.hub_port = {hub_port}
c.ConfigurableHTTPProxy.command = [{proxy!r}]
c.ConfigurableHTTPProxy.api_url = "http://127.0.0.1:{proxy_api_port}"
c.JupyterHub.db_url = "sqlite:///{base}/jupyterhub.sqlite"
c.JupyterHub.cookie_secret_file = "{base}/cookie_secret"
c.JupyterHub.authenticator_class = "pam"
c.Authenticator.allowed_users = {users!r}
c.JupyterHub.spawner_class = CourseSpawner
c.Spawner.cmd = {server!r}
c.Spawner.default_url = "/lab"
c.Spawner.notebook_dir = "~"
c.Spawner.http_timeout = {hang}
c.Spawner.start_timeout = {hang}
ENVIRONMENTS = {environments!r}
c.Spawner.environment = {{key: (lambda spawner, key=key: ENVIRONMENTS[spawner.user.name][key])
                         for key in ENVIRONMENTS[{first!r}]}}
c.JupyterHub.services = [{{"name": "course-test", "api_token": {token!r}}}]
c.JupyterHub.load_roles = [{{"name": "course-test", "services": ["course-test"],
                            "scopes": ["admin:users", "admin:servers", "tokens", "read:users"]}}]
"""


class Hub:
    """A JupyterHub on 127.0.0.1 for ``people`` (their Unix users exist), its log in ``base``."""

    def __init__(self, base: Path, people: list[Person], prefix: list[str], exchange: Path) -> None:
        self.base, self.people, self.prefix, self.exchange = base, people, prefix, exchange
        self.port, self.token = _free_port(), secrets.token_hex(32)
        self.url = f"http://127.0.0.1:{self.port}"
        environments = {
            p.name: {**launch.hub_environment(launch.edition(p.lang), str(exchange)), "POSREF_FAST": "1"}
            for p in people
        }
        (base / "jupyterhub_config.py").write_text(
            HUB_CONFIG.format(
                prefix=prefix, server=SERVER, port=self.port, hub_port=_free_port(), proxy=str(PROXY),
                proxy_api_port=_free_port(), base=base, users={p.name for p in people}, hang=HANG_S,
                environments=environments, first=people[0].name, token=self.token,
            )
        )  # fmt: skip
        self.proc: subprocess.Popen | None = None

    def start(self) -> None:
        path = os.pathsep.join([str(Path(sys.executable).parent), "/usr/local/bin:/usr/bin:/bin"])
        env = {"PATH": path, "LANG": "C.UTF-8", "HOME": str(self.base), "PYTHONPATH": str(REPO)}
        with open(self.base / "jupyterhub.log", "wb") as log:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "jupyterhub", "-f", str(self.base / "jupyterhub_config.py")],
                cwd=self.base, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
            )  # fmt: skip
        self._wait(lambda: self.api("GET", "/hub/api/")[0] == 200, "the hub to answer")

    def _wait(self, ready, what: str) -> None:
        deadline = time.monotonic() + HANG_S
        while not ready():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(f"waiting for {what}:\n{self.log()[-4000:]}")
            time.sleep(0.5)

    def log(self) -> str:
        return (self.base / "jupyterhub.log").read_text(errors="replace")

    def api(self, method: str, path: str, *, token: str | None = None, body: dict | None = None):
        """(status, decoded JSON or text) of a request to the hub or a user's server, with ``token``."""
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.url + path, data=data, method=method)
        request.add_header("Authorization", f"token {token or self.token}")
        try:
            with urllib.request.urlopen(request, timeout=HANG_S) as response:
                status, text = response.status, response.read().decode()
        except urllib.error.HTTPError as err:
            status, text = err.code, err.read().decode(errors="replace")
        except OSError:
            return 0, ""
        try:
            return status, json.loads(text)
        except ValueError:
            return status, text

    def spawn(self, person: Person) -> None:
        """``person``'s server started through the hub's API, and a token of theirs for it."""
        status, said = self.api("POST", f"/hub/api/users/{person.name}/server")
        assert status in (201, 202), (status, said)

        def ready() -> bool:
            _, user = self.api("GET", f"/hub/api/users/{person.name}")
            return bool(user["servers"].get("", {}).get("ready"))

        self._wait(ready, f"{person.name}'s server")
        status, made = self.api(
            "POST", f"/hub/api/users/{person.name}/tokens",
            body={"scopes": [f"access:servers!user={person.name}"], "note": "the Assignment List's API"},
        )  # fmt: skip
        assert status == 201, (status, made)
        person.token = made["token"]

    def student(self, person: Person, action: str = "", **form: str):
        """The Assignment List's API on ``person``'s server: GET the list, or POST ``action`` (fetch, submit,
        fetch_feedback) of the assignment."""
        query = urllib.parse.urlencode({"course_id": COURSE, **form})
        if not action:
            return self.api("GET", f"/user/{person.name}/assignments?{query}", token=person.token)
        body = {"course_id": COURSE, "assignment_id": ASSIGNMENT, **form}
        return self.api("POST", f"/user/{person.name}/assignments/{action}", token=person.token, body=body)

    def stop(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.send_signal(signal.SIGTERM)  # the hub stops every user's server and its proxy
        try:
            self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()

    def run_as(self, person: Person, *args: str, env: dict[str, str] | None = None, cwd: Path | None = None):
        """``args`` (a command) as ``person``'s Unix user: exit status, stdout and stderr."""
        drop = ["setpriv", f"--reuid={person.uid}", f"--regid={person.gid}", "--init-groups", "--"]
        environment = {
            "PATH": os.pathsep.join([str(Path(sys.executable).parent), "/usr/bin:/bin"]), "HOME": str(person.home),
            "USER": person.name, "LOGNAME": person.name, "LANG": "C.UTF-8", "TMPDIR": str(person.home / "tmp"),
            **(env or {}),
        }  # fmt: skip
        return subprocess.run(
            [*self.prefix, *drop, *args], cwd=cwd or person.home, env=environment, capture_output=True,
            text=True, timeout=COMMAND_TIMEOUT,
        )  # fmt: skip


def _make_person(name: str, base: Path, lang: str = "en") -> Person:
    home = base / name
    subprocess.run(["useradd", "--create-home", "--home-dir", str(home), name], check=True)
    password = secrets.token_urlsafe(16)
    subprocess.run(["chpasswd"], input=f"{name}:{password}", text=True, check=True)
    user = pwd.getpwnam(name)
    (home / "tmp").mkdir(mode=0o700)
    os.chown(home / "tmp", user.pw_uid, user.pw_gid)
    return Person(name, user.pw_uid, user.pw_gid, home, password, lang)


def _kill_processes_of(uid: int) -> None:
    """Every process left of a user the module made (a server the hub did not stop), by its id."""
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if entry.stat().st_uid == uid:
                    os.kill(int(entry.name), signal.SIGKILL)
            except (OSError, ProcessLookupError):
                pass


@pytest.fixture(scope="module")
def hub():
    """The hub and its three users: (hub, instructor, student a, student b)."""
    if os.geteuid() != 0:
        pytest.skip("needs root: the module makes Unix users for the hub (CI runs as root)")
    missing = [t for t in ("useradd", "userdel", "chpasswd", "setpriv", "npm", "make") if not shutil.which(t)]
    if missing or _chromium() is None:
        pytest.skip(f"missing {', '.join(missing) or 'Chromium'}: see tests/notebooks/test_browser.py")
    made = subprocess.run(["make", "-s", "hub-proxy"], cwd=REPO, capture_output=True, text=True, timeout=600)
    assert made.returncode == 0 and PROXY.exists(), f"make hub-proxy:\n{made.stdout}\n{made.stderr}"
    base = Path(tempfile.mkdtemp(prefix="posref-hub-"))  # pytest's tmp_path is root's alone
    base.chmod(0o755)
    exchange = base / "exchange"
    exchange.mkdir()
    exchange.chmod(0o1777)
    tag, people, hub = secrets.token_hex(3), [], None
    try:
        for role, lang in (("i", "en"), ("a", "en"), ("b", "zh-TW")):
            people.append(_make_person(f"p{role}{tag}", base, lang))
        prefix = python_shown_to(people[0].uid, also=(REPO,))
        if prefix is None:
            pytest.skip(f"{sys.executable} cannot be run by another user here, and bubblewrap cannot show it")
        hub = Hub(base, people, prefix, exchange)
        hub.start()
        yield (hub, *people)
    finally:
        if hub is not None:
            hub.stop()
        for person in people:
            _kill_processes_of(person.uid)
            subprocess.run(["userdel", "--force", "--remove", person.name], capture_output=True)
        shutil.rmtree(base, ignore_errors=True)


def _instructor(hub: Hub, instructor: Person, *args: str) -> str:
    """``python -m ARGS`` as the instructor, in the checkout with their course folder: its output (asserted 0)."""
    env = {"POSREF_COURSE_DIR": str(instructor.home / "course"), "POSREF_FAST": "1",
           "POSREF_RELEASE_DIR": str(instructor.home / "release"), "POSREF_EXCHANGE_DIR": str(hub.exchange)}  # fmt: skip
    done = hub.run_as(instructor, sys.executable, "-m", *args, env=env, cwd=REPO)
    assert done.returncode == 0, f"{' '.join(args)}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done.stdout + done.stderr


def _work(hub: Hub, person: Person, path: str, wrong: str | None = None) -> dict:
    """The notebook ``person`` fetched, read through their server's contents API as JupyterLab reads it, with every
    answer cell done as the solution of its edition does it, but for the answer ``wrong`` (a grade id)."""
    status, got = hub.api("GET", f"/user/{person.name}/api/contents/{path}", token=person.token)
    assert status == 200, (status, got)
    notebook = got["content"]
    folder = REPO if person.lang == "en" else REPO / "editions" / person.lang
    solution = nbformat.read(folder / "solutions" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb", as_version=4)
    answers = {c.metadata.nbgrader["grade_id"]: c.source for c in solution.cells
               if c.metadata.get("nbgrader", {}).get("solution")}  # fmt: skip
    for cell in notebook["cells"]:
        grade_id = cell["metadata"].get("nbgrader", {}).get("grade_id")
        if grade_id is not None and grade_id == wrong:
            cell["source"] = "def equivariance_error(f, x, perm):\n    return 0.0\n"
        elif grade_id in answers:
            cell["source"] = answers[grade_id]
    return notebook


def _save(hub: Hub, person: Person, notebook: dict, path: str) -> None:
    """``notebook`` saved into ``person``'s folder through their server's contents API, as JupyterLab saves."""
    status, said = hub.api(
        "PUT", f"/user/{person.name}/api/contents/{path}", token=person.token,
        body={"type": "notebook", "format": "json", "content": notebook},
    )  # fmt: skip
    assert status in (200, 201), (status, said)


def _log_in(page, hub: Hub, person: Person) -> None:
    page.goto(f"{hub.url}/hub/login")
    page.fill("input[name=username]", person.name)
    page.fill("input[name=password]", person.password)
    page.click("input[type=submit], button[type=submit]")
    page.wait_for_url(re.compile(f"/user/{person.name}/lab"), timeout=HANG_S * 1000)


def _assignment_list(page, hub: Hub, person: Person):
    """The course's Assignment List opened from its menu (the words of ``person``'s edition) once it has loaded ->
    the panel and its three sections by status (released, fetched, submitted)."""
    texts = assignment_list.words(person.lang)
    page.goto(f"{hub.url}/user/{person.name}/lab")
    page.get_by_role("menuitem", name=texts["menu"], exact=True).click()
    page.get_by_role("menuitem", name=texts["assignment_list"], exact=True).click()
    panel = page.locator(".posref-assignments")
    panel.wait_for()
    page.wait_for_function("!document.querySelector('.posref-assignments .posref-assignments-loading')")
    return panel, {s: panel.locator(f".posref-assignments-{s}") for s in ("released", "fetched", "submitted")}


def _panel(panel) -> dict:
    """What the panel shows: its headings, its empty sections' sentences, its buttons, all its text."""
    return {
        "headings": panel.locator("h2").all_inner_texts(),
        "empty": panel.locator(".posref-assignments-empty").all_inner_texts(),
        "buttons": [b.strip() for b in panel.locator("button:visible").all_inner_texts()],
        "text": panel.inner_text(),
    }


def _validated(page, section) -> dict:
    """Click the first notebook's Validate in ``section`` (fetched) and read the dialog (closed after)."""
    section.locator(".posref-assignment-validate").first.click()
    dialog = page.locator(".jp-Dialog-content")
    dialog.wait_for(timeout=HANG_S * 1000)
    said = {
        "title": dialog.locator(".jp-Dialog-header").inner_text().strip(),
        "paragraphs": dialog.locator(".posref-validation > p").all_inner_texts(),
        "errors": dialog.locator(".posref-validation-error").all_inner_texts(),
        "buttons": [
            b.strip() for b in dialog.locator(".jp-Dialog-footer .jp-Dialog-button").all_inner_texts()
        ],
    }
    return said


@pytest.fixture(scope="module")
def graded(hub, tmp_path_factory):
    """The whole term through the hub; returns what the tests look at."""
    hub, instructor, a, b = hub
    shots = Path(os.environ.get("POSREF_SCREENSHOT_DIR") or tmp_path_factory.mktemp("shots"))
    _instructor(hub, instructor, "autograder", "release", ASSIGNMENT)
    _instructor(
        hub, instructor, "nbgrader", "release_assignment", ASSIGNMENT, f"--JupyterApp.config_file={CONFIG}"
    )
    (hub.exchange / COURSE / "inbound").chmod(0o3733)  # + sticky: no student removes another's hand-in
    for person in (a, b):
        hub.spawn(person)
    out = {"pages": {}, "requests": {}}
    # b, through the Assignment List's API: fetch, work (a checkpoint beside it), validate, submit
    status, listed = hub.student(b)
    assert status == 200 and [x["assignment_id"] for x in listed["value"]] == [ASSIGNMENT], listed
    out["server"] = {
        p: hub.api("GET", f"/user/{b.name}/{p}", token=b.token)[0] for p in ("formgrader", "formgraders")
    }
    assert hub.student(b, "fetch")[0] == 200
    path = f"{ASSIGNMENT}/{ASSIGNMENT}.ipynb"
    out["fetched"] = {b.name: (b.home / path).read_bytes()}
    _save(hub, b, _work(hub, b, path, wrong="equivariance_error"), path)
    assert hub.api("POST", f"/user/{b.name}/api/contents/{path}/checkpoints", token=b.token)[0] == 201
    status, validated = hub.api(
        "POST", f"/user/{b.name}/assignments/validate", token=b.token, body={"path": path}
    )
    out["validate"] = validated
    # b, in the browser, in zh-TW: the Assignment List, Validate (one answer wrong), Submit
    b_texts = assignment_list.words(b.lang)
    with browser_page(_chromium(), hub.base) as page:
        _log_in(page, hub, b)
        panel, sections = _assignment_list(page, hub, b)
        out["panel_b"] = {"before": _panel(panel)}
        out["validate_b"] = _validated(page, sections["fetched"])
        page.locator(".jp-Dialog-footer .jp-Dialog-button").last.click()
        sections["fetched"].locator("button", has_text=b_texts["submit"]).click()
        sections["submitted"].locator(f".posref-assignment[data-assignment='{ASSIGNMENT}']").wait_for()
        out["panel_b"]["after"] = _panel(panel)
        out["menu_b"] = page.locator(".lm-MenuBar-itemLabel").all_inner_texts()
        page.screenshot(path=str(shots / "zh-TW_assignment_list.png"))
    # a, in the browser: log in, fetch, work, validate, submit
    a_texts = assignment_list.words(a.lang)
    with browser_page(_chromium(), hub.base) as page:
        out["requests"]["a"] = requests = []
        page.on("request", lambda request: requests.append(request.url))
        _log_in(page, hub, a)
        panel, sections = _assignment_list(page, hub, a)
        out["panel_a"] = _panel(panel)
        sections["released"].locator("button", has_text=a_texts["fetch"]).click()
        sections["fetched"].get_by_text(ASSIGNMENT).first.wait_for()
        out["fetched"][a.name] = (a.home / path).read_bytes()
        _save(hub, a, _work(hub, a, path), path)  # as JupyterLab saves it
        out["validate_a"] = _validated(page, sections["fetched"])
        page.screenshot(path=str(shots / "hub_validate.png"))
        page.locator(".jp-Dialog-footer .jp-Dialog-button").last.click()
        sections["fetched"].locator("button", has_text=a_texts["submit"]).click()
        sections["submitted"].get_by_text(ASSIGNMENT).first.wait_for()
        page.screenshot(path=str(shots / "hub_assignment_list.png"))
        forged = b.home / "forged"
        shutil.copytree(instructor.home / "release" / ASSIGNMENT, forged / ASSIGNMENT)
        subprocess.run(["chown", "-R", f"{b.uid}:{b.gid}", str(forged)], check=True)
        env = launch.hub_environment(launch.edition(b.lang), str(hub.exchange))
        done = hub.run_as(b, sys.executable, "-m", "nbgrader", "submit", ASSIGNMENT,
                          f"--CourseDirectory.student_id={a.name}", env=env, cwd=forged)  # fmt: skip
        assert done.returncode == 0, done.stderr
        out["inbound"] = sorted(p.name for p in (hub.exchange / COURSE / "inbound").iterdir())
        out["inbound_files"] = sorted(
            str(p.relative_to(hub.exchange)) for p in (hub.exchange / COURSE / "inbound").rglob("*")
        )
        # the instructor: collect, grade, feedback, release it
        out["collect"] = _instructor(
            hub, instructor, "nbgrader", "collect", ASSIGNMENT, f"--JupyterApp.config_file={CONFIG}"
        )
        out["autograde"] = _instructor(
            hub, instructor, "autograder", "autograde", ASSIGNMENT, "--workers", "2"
        )
        _instructor(hub, instructor, "autograder", "feedback", ASSIGNMENT)
        _instructor(
            hub, instructor, "nbgrader", "release_feedback", ASSIGNMENT, f"--JupyterApp.config_file={CONFIG}"
        )
        csv_path = instructor.home / "grades.csv"
        _instructor(hub, instructor, "autograder", "export", ASSIGNMENT, "--csv", str(csv_path))
        with open(csv_path, newline="") as f:
            out["rows"] = {r["student"]: r for r in csv.DictReader(f)}
        # the students fetch their feedback: b through the API, a in the Assignment List
        assert hub.student(b, "fetch_feedback")[0] == 200
        panel, sections = _assignment_list(page, hub, a)
        sections["submitted"].locator("button", has_text=a_texts["fetch_feedback"]).first.click()
        sections["submitted"].locator(
            ".posref-assignment-feedback", has_text=a_texts["view_feedback"]
        ).first.wait_for()
        for person in (a, b):
            out["pages"][person.name] = sorted((person.home / ASSIGNMENT / "feedback").rglob("*.html"))
        # a's fetched page, opened from disk in a browser that may load nothing but files
        fetched = out["pages"][a.name][0]
        # JupyterLab's last requests (its workspace, saved as it is left) go before the count begins
        page.goto("about:blank")
        page.route("**/*", lambda r: r.continue_() if r.request.url.startswith("file:") else r.abort())
        out["requests"]["feedback"] = seen = []
        page.on("request", lambda request: seen.append(request.url))
        page.goto(fetched.as_uri())
        page.wait_for_function(TYPESET, timeout=HANG_S * 1000)
        out["typeset"] = page.locator(".MathJax").count()
        out["errors"] = page.locator(".MathJax_Error, merror").count()
        page.screenshot(path=str(shots / "hub_feedback.png"))
    out["course"] = instructor.home / "course"
    return out, instructor, a, b


def _score(row: dict) -> tuple[str, float, float]:
    return row["status"], float(row["score"] or "nan"), float(row["max_score"] or "nan")


def test_two_students_are_graded_apart_and_a_forged_hand_in_is_refused(graded):
    """a's correct work has every autograded point, b's (one answer wrong) fewer; b's stub handed in as a's (later
    than a's own) is refused at collect and named in the export, and a's grade is a's."""
    out, instructor, a, b = graded
    rows = out["rows"]
    assert _score(rows[a.name]) == ("graded", 6.0, 6.0), rows[a.name]
    assert _score(rows[b.name]) == ("graded", 4.0, 6.0), rows[b.name]
    said = f"could not collect {a.name} (handed in by {b.name})"
    assert said in out["collect"] and f"handed in as {a.name!r} by the Unix user {b.name!r}" in out["collect"]
    forged = rows[f"{a.name} (handed in by {b.name})"]
    assert forged["status"] == "could not import" and f"by the Unix user {b.name!r}" in forged["reason"], (
        forged
    )
    assert sorted(n.split("+")[0] for n in out["inbound"]) == sorted([a.name, a.name, b.name]), out["inbound"]
    records = out["course"] / "records" / ASSIGNMENT
    assert json.loads((records / f"{b.name}.json").read_text())["notebooks"][0]["edition"] == "zh-TW"
    assert json.loads((records / f"{a.name}.json").read_text())["notebooks"][0]["edition"] == "en"


def test_each_student_fetches_the_edition_they_read(graded):
    """b (zh-TW) fetched the zh-TW release, a (English) the instructor's English release, from one release of the
    assignment; b's hand-in, in zh-TW, was graded with a's grade ids and points (above), and b's feedback page is
    that zh-TW notebook, its words of record in zh-TW (below)."""
    out, instructor, a, b = graded
    notebook = f"{ASSIGNMENT}/{ASSIGNMENT}.ipynb"
    assert out["fetched"][b.name] == (REPO / "editions" / "zh-TW" / "notebooks" / notebook).read_bytes()
    assert out["fetched"][a.name] == (instructor.home / "release" / notebook).read_bytes()
    assert out["fetched"][a.name] != out["fetched"][b.name]
    # b's feedback shows the zh-TW notebook b fetched and handed in (its text), a's the English one
    first = next(c.source for c in nbformat.reads(out["fetched"][b.name].decode(), as_version=4).cells
                 if c.cell_type == "markdown")  # fmt: skip
    sentence = max(re.findall(r"[\u3400-\u9fff，、]{4,}", first), key=len)
    pages = {p.name: out["pages"][p.name][0].read_text(encoding="utf-8") for p in (a, b)}
    assert sentence in pages[b.name] and sentence not in pages[a.name], sentence


def test_a_students_server_is_a_students(graded):
    """No formgrader, no course list on a student's server; Validate runs; Submit sent the notebook and not
    JupyterLab's checkpoint of it."""
    out, _, _, b = graded
    assert out["server"] == {"formgrader": 404, "formgraders": 404}, out["server"]
    assert out["validate"]["success"], out["validate"]
    assert not [f for f in out["inbound_files"] if ".ipynb_checkpoints" in f], out["inbound_files"]
    assert any(f.startswith(f"{COURSE}/inbound/{b.name}+") and f.endswith(f"/{ASSIGNMENT}.ipynb")
               for f in out["inbound_files"]), out["inbound_files"]  # fmt: skip


def test_the_assignment_list_speaks_each_students_edition(graded):
    """The course's Assignment List in each student's edition (posref_jupyter.assignment_list's words, the Validate
    dialog posref_jupyter.validate's): a (English) fetched from "Released assignments" and validated with every
    check passing; b (zh-TW) met its menu, headings, empty sections and buttons in zh-TW, no English word among
    them but the names the course's pages give (Nbgrader, Assignment List, Submit, Validate), and Validate's
    dialog said in zh-TW that one check failed, with posref's message in zh-TW."""
    out, _, a, b = graded
    en, en_words = assignment_list.words("en"), validate.words("en")
    assert out["panel_a"]["headings"] == [en["released"], en["fetched"], en["submitted"]], out["panel_a"]
    assert out["panel_a"]["headings"] == [
        "Released assignments",
        "Downloaded assignments",
        "Submitted assignments",
    ]
    assert out["panel_a"]["empty"] == [en["no_fetched"], en["no_submitted"]], out["panel_a"]
    assert en["fetch"] in out["panel_a"]["buttons"], out["panel_a"]
    assert out["validate_a"]["title"] == en_words["title"] and out["validate_a"]["errors"] == [], out[
        "validate_a"
    ]
    assert out["validate_a"]["paragraphs"] == ["Every check of this notebook passed."], out["validate_a"]

    texts, words = assignment_list.words(b.lang), validate.words(b.lang)
    before, after, dialog = out["panel_b"]["before"], out["panel_b"]["after"], out["validate_b"]
    assert texts["menu"] in out["menu_b"], out["menu_b"]
    for shown in (before, after):
        assert shown["headings"] == [texts["released"], texts["fetched"], texts["submitted"]], shown
        assert shown["headings"] == ["已發布的作業", "已下載的作業", "已繳交的作業"], shown
    assert before["empty"] == [texts["no_released"], texts["no_submitted"]], before
    assert before["buttons"] == [texts["refresh"], texts["submit"], words["validate"]], before
    assert after["empty"] == [texts["no_released"]], after
    assert after["buttons"] == [
        texts["refresh"],
        texts["submit"],
        words["validate"],
        texts["fetch_feedback"],
    ], after
    assert dialog["title"] == words["title"] == "驗證結果" and dialog["buttons"] == [words["ok"]], dialog
    assert dialog["paragraphs"][0] == words["failed"].format(count=len(dialog["errors"])), dialog
    assert set(dialog["paragraphs"][1:]) == {words["cell_failed"]} and dialog["errors"], dialog
    assert all(re.search(r"[\u4e00-\u9fff]", error) for error in dialog["errors"]), (
        dialog
    )  # posref's, in zh-TW
    said = [before["text"], after["text"], dialog["title"], *dialog["paragraphs"], *dialog["buttons"]]
    assert not student_text.english_words_in(said, b.lang), student_text.english_words_in(said, b.lang)


def test_each_student_fetches_their_own_feedback_whole_and_offline(graded):
    """Each student's fetched page is the instructor's page of that student, byte for byte, in their edition's
    language; a's typesets its formulas with MathJax from the page, loading nothing but the page itself."""
    out, instructor, a, b = graded
    for person in (a, b):
        [page] = out["pages"][person.name]
        written = out["course"] / "feedback" / person.name / ASSIGNMENT / f"{ASSIGNMENT}.html"
        assert page.read_bytes() == written.read_bytes(), f"{person.name} got another page"
        text = page.read_text(encoding="utf-8")
        with speaking(person.lang):
            header = _("Score of record: {score} / {points}").split("{")[0].strip()
        assert header in text and (person.lang == "en") == ("Score of record" in text), person.lang
        assert '"[MathJax]/config/TeX-AMS-MML_HTMLorMML-full.js"' in text
    assert out["typeset"] > 10 and out["errors"] == 0, out
    fetched = out["pages"][a.name][0].as_uri()
    assert [u for u in out["requests"]["feedback"] if not u.startswith(("data:", "about:"))] == [fetched], out
