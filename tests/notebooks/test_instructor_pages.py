"""The instructor's pages under attack, in headless Chromium, through the course's real commands.

One course for the module: 01_order released, ``mallory`` hands in a correct notebook whose written answer, outputs,
metadata and files carry the payloads of ``xss_payloads`` (OWASP's filter-evasion shapes), ``trudy`` hands in one
whose nbgrader metadata nbgrader refuses (markup in it), and ``eve``, whose first written answer plants the ids and
classes the manual-grading page binds other cells' controls by, all graded in one run, then ``bob``, a correct
classmate, is graded after them in a run of his own. One ``python -m autograder lab`` serves every test. Each page
is opened with every request recorded: no payload may run (no request to a ``pwned`` path or to ``evil.invalid``, no
changed title, no dialog), and the instructor's tools must still work on the same pages (formulas typeset, a manual
grade saved, the model answer beside the student's, the Autograde button grading, a submission's score of record),
interactive kernels do not grade, and nothing is written into the checkout (last, after every other use of the
server).
"""

from __future__ import annotations

import csv
import json
import os
import re
import shutil
import subprocess
import time
import urllib.error
import urllib.parse
from pathlib import Path

import nbformat
import notebook_helpers as nh
import pytest
from nbgrader.api import Gradebook
from test_browser import HANG_S, LabServer, _chromium
from xss_payloads import SIGNAL, hostile_files, hostile_notebook, planted_ids

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.timeout(900)]

REPO = Path(__file__).resolve().parents[2]
ASSIGNMENT = "01_order"
SOLUTION = REPO / "solutions" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
FILE_SIGNAL = 900  # the payload number of the files handed in beside the notebook


class Course:
    """The module's course: its folder, environment, server, browser and the payload numbers."""

    def __init__(self, base: Path):
        self.base = base
        self.dir = base / "course"
        self.env = {
            **os.environ,
            "POSREF_COURSE_DIR": str(self.dir),
            "POSREF_RELEASE_DIR": str(self.dir / "release"),  # not the checkout's notebooks/
            "POSREF_FAST": "1",
            "PYTHONPATH": str(REPO),
        }
        self.env.pop("POSREF_GRADING", None)
        self.payloads: list[int] = []

    def hand_in(self, student: str, nb: nbformat.NotebookNode, files: bool = False) -> None:
        folder = self.base / "downloads" / student / student / ASSIGNMENT
        folder.mkdir(parents=True)
        nbformat.write(nb, folder / f"{ASSIGNMENT}.ipynb")
        if files:
            hostile_files(folder, FILE_SIGNAL)
        nh.autograder("import", str(folder.parent.parent), env=self.env)

    def autograde(self, student: str | None = None) -> None:
        """Grade ``student``, or (None) every student handed in and not graded yet, in one run."""
        chosen = ("--student", student) if student else ()
        nh.autograder("autograde", ASSIGNMENT, *chosen, "--workers", "1", env=self.env)

    def grades(self, student: str) -> dict[str, tuple]:
        with Gradebook(f"sqlite:///{self.dir / 'gradebook.db'}") as gb:
            submission = gb.find_submission_notebook(ASSIGNMENT, ASSIGNMENT, student)
            return {g.name: (g.auto_score, g.manual_score) for g in submission.grades}

    def relative(self, student: str) -> str:
        """The student's autograded folder, relative to the server's root (the checkout)."""
        return (self.dir / "autograded" / student / ASSIGNMENT).relative_to(REPO).as_posix()

    def submission_id(self, server: LabServer, student: str) -> str:
        notebooks = json.loads(
            server.api("GET", f"/formgrader/api/submitted_notebooks/{ASSIGNMENT}/{ASSIGNMENT}")
        )
        [notebook] = [n for n in notebooks if n["student"] == student]
        return notebook["id"]


def _own_answers(nb: nbformat.NotebookNode, student: str) -> nbformat.NotebookNode:
    """``nb`` with every written answer the student's own words (the solution's cells hold the model answers,
    which no submission may carry if a test is to find them leaked)."""
    for cell in nb.cells:
        meta = cell.metadata.get("nbgrader", {})
        if cell.cell_type == "markdown" and meta.get("solution") and meta.get("grade_id") != "q_two_layers":
            cell.source = f"{student}'s own answer: the mask hides later keys."
    return nb


REFUSED_SIGNAL = 950  # the payload number of the metadata nbgrader refuses (trudy's)


def _refused_metadata(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """``nb`` with nbgrader metadata that nbgrader's autograde refuses, markup in each piece of it: a cell of her
    own claiming points without a grade id, an answer's flag that is a tag, metadata that is a tag."""
    signal = SIGNAL.format(n=REFUSED_SIGNAL)
    nb.cells.append(nbformat.v4.new_markdown_cell(
        f"<script>{signal}</script>", metadata={"nbgrader": {"grade": True, "solution": False, "points": 1}}
    ))  # fmt: skip
    for cell in nb.cells:
        if cell.metadata.get("nbgrader", {}).get("grade_id") == "attention":
            cell.metadata["nbgrader"]["locked"] = f'<img src=x onerror="{signal}">'
    next(c for c in nb.cells if "nbgrader" not in c.metadata).metadata["nbgrader"] = (
        f'<svg onload="{signal}">'
    )
    return nb


@pytest.fixture(scope="module")
def course(released_01_order: Path) -> Course:
    """The course, inside the server's root (the checkout's ignored ``build/``), so that every route that can
    show a submission does: the formgrader's files of a submission, ``/files/``, the notebook in JupyterLab."""
    base = REPO / "build" / f"test-instructor-pages-{os.getpid()}"
    base.mkdir(parents=True)
    try:
        yield _built(Course(base), released_01_order)
    finally:
        shutil.rmtree(base, ignore_errors=True)


def _built(course: Course, released: Path) -> Course:
    shutil.copytree(released, course.dir)  # 01_order released by the course's release, made once for the run
    hostile, course.payloads = hostile_notebook(SOLUTION, "q_two_layers", "attention")
    course.hand_in("mallory", _own_answers(hostile, "mallory"), files=True)
    course.hand_in("trudy", _refused_metadata(_own_answers(nbformat.read(SOLUTION, as_version=4), "trudy")))
    eve = _own_answers(nbformat.read(SOLUTION, as_version=4), "eve")
    for cell in eve.cells:
        grade_id = cell.metadata.get("nbgrader", {}).get("grade_id")
        if grade_id == "q_two_layers":
            cell.source = planted_ids(["q_find_the_bug", "test_attention"])
        elif grade_id == "attention":  # kept correct; its outputs plant the ids of the cells after it
            planted = planted_ids(["test_attention", "test_equivariance_error", "q_find_the_bug"])
            cell.outputs = [nbformat.v4.new_output(
                "display_data", data={"text/html": planted, "text/markdown": planted, "text/plain": "x"}
            )]  # fmt: skip
            cell.execution_count = 1
    course.hand_in("eve", eve)
    course.autograde()  # the three in one run (a run costs seconds of start-up)
    bob = nbformat.read(SOLUTION, as_version=4)
    for cell in bob.cells:
        if cell.metadata.get("nbgrader", {}).get("grade_id") == "q_two_layers":
            cell.source = "bob's own answer: the last token sees the same set of tokens in both sentences."
    course.hand_in("bob", _own_answers(bob, "bob"))
    course.autograde("bob")  # the correct classmate, graded after the attack
    return course


@pytest.fixture(scope="module")
def checkout_before(course: Course) -> str:
    """The checkout's changed and untracked files once the course is built, before the server starts."""
    return _git_status()


@pytest.fixture(scope="module")
def server(course: Course, checkout_before: str):
    if _chromium() is None:
        pytest.skip(
            "no Chromium: install Debian's `chromium` (apt-get install -y chromium) or set POSREF_CHROMIUM"
        )
    (course.base / "lab").mkdir()
    lab = LabServer(course.base / "lab", launcher="autograder", env=course.env)
    lab.env.pop("POSREF_GRADING", None)
    try:
        lab.start()
        yield lab
    finally:
        lab.stop()


@pytest.fixture(scope="module")
def browser(server: LabServer):
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.skip(
            "Playwright for Python is not installed (pip install playwright; no browser download needed)"
        )
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(
            executable_path=_chromium(),
            args=["--disable-dev-shm-usage", "--disable-gpu"],
            env={**os.environ, "HOME": str(server.home)},
        )
        try:
            yield chromium
        finally:
            chromium.close()


class Watched:
    """A page whose every request, dialog and console message is recorded; requests leave only to the server."""

    def __init__(self, browser, server: LabServer):
        self.context = browser.new_context(viewport={"width": 1400, "height": 1000})
        self.page = self.context.new_page()
        self.page.set_default_timeout(HANG_S * 1000)
        self.server = server
        self.requests: list[str] = []
        self.dialogs: list[str] = []
        self.console: list[str] = []
        self.page.on("request", lambda request: self.requests.append(request.url))
        # what the page's policy refused never left it (Chromium announces the request, then fails it: "csp")
        self.refused: list[str] = []
        self.failures: dict[str, str] = {}
        self.page.on("requestfailed", self._failed)
        self.page.on("dialog", lambda dialog: (self.dialogs.append(dialog.message), dialog.dismiss()))
        self.page.on("console", lambda message: self.console.append(message.text))
        self.page.route("**/*", self._only_the_server)
        self.page.goto(f"{server.url}/formgrader?token={server.token}")  # logs in (a cookie)

    def _failed(self, request) -> None:
        self.failures[request.url] = request.failure or ""
        if request.failure in ("csp", "net::ERR_BLOCKED_BY_CSP"):
            self.refused.append(request.url)

    def _only_the_server(self, route):
        if urllib.parse.urlsplit(route.request.url).hostname in ("127.0.0.1", "localhost"):
            return route.continue_()
        return route.abort()

    def visit(self, path: str, wait_for: str | None = None) -> None:
        self.page.goto(self.server.url + path)
        if wait_for:
            self.page.locator(wait_for).first.wait_for()
        self.page.wait_for_load_state("networkidle")
        # give every payload its trigger: hover and focus the whole page, open every <details>
        self.page.mouse.move(700, 500)
        self.page.keyboard.press("Tab")
        self.page.wait_for_load_state("networkidle")

    def assert_nothing_ran(self, where: str) -> None:
        left = [url for url in self.requests if url not in self.refused]
        ran = [
            url
            for url in left
            if urllib.parse.urlsplit(url).path.startswith("/pwned") or "evil.invalid" in url
        ]
        assert not ran, f"{where}: payloads ran (requests {ran}; failed: {self.failures})"
        assert not self.dialogs, f"{where}: dialogs {self.dialogs}"
        assert "pwned" not in self.page.title(), f"{where}: title {self.page.title()!r}"
        outside = [
            url for url in left if not url.startswith((self.server.url, "about:blank", "data:", "blob:"))
        ]
        assert not outside, f"{where}: requests left for other hosts: {outside}"

    def close(self) -> None:
        self.context.close()


@pytest.fixture
def watched(browser, server):
    page = Watched(browser, server)
    try:
        yield page
    finally:
        page.close()


def _headers(server: LabServer, path: str):
    import urllib.request

    request = urllib.request.Request(server.url + path, headers={"Authorization": f"token {server.token}"})
    with urllib.request.urlopen(request, timeout=30) as response:
        return response.headers


def _csp(server: LabServer, path: str) -> str:
    return _headers(server, path).get("Content-Security-Policy", "")


def _content_type(server: LabServer, path: str) -> str:
    return _headers(server, path).get("Content-Type", "")


def _git_status() -> str:
    """Untracked and changed files of the checkout, ignored ones left out."""
    return subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=all"], cwd=REPO, capture_output=True, text=True
    ).stdout


def _kernel_env_value(server: LabServer, name: str) -> str:
    """``os.environ.get(name)`` in a fresh interactive kernel of ``server`` (started through its REST API)."""
    from jupyter_client import BlockingKernelClient

    kernel = json.loads(server.api("POST", "/api/kernels"))
    connection = server.home / "runtime" / f"kernel-{kernel['id']}.json"
    deadline = time.monotonic() + HANG_S
    while not connection.exists() and time.monotonic() < deadline:
        time.sleep(0.2)  # polling for the connection file, not waiting a fixed time
    client = BlockingKernelClient()
    client.load_connection_file(str(connection))
    client.start_channels()
    try:
        while True:  # a kernel still starting on a loaded machine misses heartbeats and reads as dead
            try:
                client.wait_for_ready(timeout=60)
                break
            except RuntimeError:
                assert time.monotonic() < deadline, f"the kernel did not start:\n{server.log_tail()}"
        out: list[str] = []

        def keep(msg):
            if msg["msg_type"] == "stream":
                out.append(msg["content"]["text"])

        client.execute_interactive(
            f"import os; print(os.environ.get({name!r}))", timeout=HANG_S, output_hook=keep
        )
        return "".join(out).strip()
    finally:
        client.stop_channels()
        server.api("DELETE", f"/api/kernels/{kernel['id']}")


def test_no_payload_runs_in_any_formgrader_page(course, server, watched):
    """Every formgrader route that shows mallory's submission, her files and her names: nothing of hers runs,
    nothing leaves for another host, and the page still works (her answer shown, formulas typeset)."""
    mallory = course.submission_id(server, "mallory")
    routes = [
        ("/formgrader/manage_assignments", "table a"),
        (f"/formgrader/manage_submissions/{ASSIGNMENT}", "td:has-text('mallory')"),
        ("/formgrader/gradebook", "table a"),
        (f"/formgrader/gradebook/{ASSIGNMENT}", "table a"),
        (f"/formgrader/gradebook/{ASSIGNMENT}/{ASSIGNMENT}", "td:has-text('mallory')"),
        ("/formgrader/manage_students", "td:has-text('mallory')"),
        ("/formgrader/manage_students/mallory", "table a"),
        (f"/formgrader/manage_students/mallory/{ASSIGNMENT}", "table a"),
        (f"/formgrader/submissions/{mallory}/", "text=My answer: positions"),
        (f"/formgrader/submissions/{mallory}/evil.html", None),
        (f"/formgrader/submissions/{mallory}/evil.svg", None),
        (f"/formgrader/submissions/{mallory}/evil.js", None),
        (f"/files/{course.relative('mallory')}/evil.html", None),
        (f"/files/{course.relative('mallory')}/evil.svg", None),
    ]
    for path, wait_for in routes:
        watched.visit(path, wait_for)
        watched.assert_nothing_ran(path)
    # on a laptop: no exchange warning, and students without a roster named by their id, never "None, None"
    watched.visit("/formgrader/manage_assignments", "table a")
    assert watched.page.locator("#warning-exchange").count() == 0
    watched.visit(f"/formgrader/manage_submissions/{ASSIGNMENT}", "td:has-text('mallory')")
    assert "None" not in watched.page.locator("#main-table").inner_text()
    assert watched.page.locator("td", has_text="bob, no name in the roster").count() == 1
    # the submission view still works: her answer is shown as text, and the formulas are typeset
    watched.visit(f"/formgrader/submissions/{mallory}/", ".text_cell_render .MathJax")
    assert watched.page.locator("text=<script>").count() > 0, "the payloads are not shown as text"
    watched.assert_nothing_ran("the submission view, again")
    # every link of the page clicked: none is a javascript: or data: URL that runs
    hrefs = watched.page.eval_on_selector_all(".rendered_html a[href]", "links => links.map(a => a.href)")
    assert not [h for h in hrefs if h.startswith(("javascript:", "data:"))], hrefs
    # last: the autograded notebook in the server's JupyterLab (a page that stays busy when left)
    lab = f"/lab/tree/{course.relative('mallory')}/{ASSIGNMENT}.ipynb"
    watched.visit(lab, ".jp-RenderedMarkdown >> text=My answer")
    watched.assert_nothing_ran(lab)


def test_a_notebook_nbgrader_refused_has_a_page_that_says_why_and_runs_nothing(course, server, watched):
    """trudy's nbgrader metadata made nbgrader's autograde refuse her notebook: the formgrader said "Submission
    notebook file not found". Now her page shows her cells, graded, with a first cell naming each cell nbgrader
    refused, the markup of her metadata as text; her written answer takes a manual grade like anyone's."""
    trudy = course.submission_id(server, "trudy")
    watched.visit(f"/formgrader/submissions/{trudy}/", "text=nbgrader could not take this notebook")
    watched.assert_nothing_ran("the page of a notebook nbgrader refused")
    reasons = watched.page.locator(".text_cell_render pre").first.inner_text()
    assert "nbgrader cell does not have a grade_id: <script>fetch('/pwned/950')" in reasons, reasons
    assert "is not of type 'boolean'" in reasons and "not a mapping" in reasons, reasons
    assert watched.page.locator("input.score#q_two_layers").count() == 1
    assert watched.page.locator("text=trudy's own answer").count() > 0
    _full_marks(course, "trudy")


def test_a_url_cannot_inject_into_nbgraders_pages(server, watched):
    """nbgrader printed a URL's assignment name into its page and into an inline script as it came."""
    for name in ['<img src=x onerror="fetch(`/pwned/url1`)">', '";fetch("/pwned/url2");"']:
        watched.visit("/formgrader/manage_submissions/" + urllib.parse.quote(name, safe=""))
        watched.assert_nothing_ran(f"manage_submissions/{name}")


def test_every_page_has_the_policy_and_terminals_are_gone(course, server):
    mallory = course.submission_id(server, "mallory")
    for path in ["/lab", "/formgrader/manage_assignments", f"/formgrader/submissions/{mallory}/"]:
        policy = dict(d.split(" ", 1) for d in _csp(server, path).split("; ") if " " in d)
        assert "'nonce-" in policy["script-src"] and "'self'" not in policy["script-src"], policy
        assert "unsafe-inline" not in policy["script-src"] + policy["script-src-attr"], policy
    for path in [
        f"/formgrader/submissions/{mallory}/evil.html",
        f"/files/{course.relative('mallory')}/evil.svg",
    ]:
        assert _csp(server, path).endswith("; sandbox"), path
    assert _content_type(server, f"/formgrader/submissions/{mallory}/evil.js").startswith("text/plain")
    # nbgrader's /formgrader?path=FOLDER loaded FOLDER's nbgrader_config.py (mallory handed one in)
    folder = course.dir / "autograded" / "mallory" / ASSIGNMENT
    assert (folder / "nbgrader_config.py").is_file()
    server.api("GET", "/formgrader?path=" + urllib.parse.quote(str(folder)))
    assert not (folder / "ran").exists(), "a GET request ran a student's nbgrader_config.py"
    for method, path in [("POST", "/api/terminals"), ("GET", "/api/terminals")]:  # no terminal to create
        with pytest.raises(urllib.error.HTTPError) as refused:
            server.api(method, path)
        assert refused.value.code in (403, 404), (method, path, refused.value.code)


def test_the_instructors_lab_says_what_the_course_did_and_finds_its_configuration(server):
    """Issue 42.4: 01_order, released by the course's release, reads "released" in Manage Assignments (nbgrader
    asked its exchange, which this course has not: every assignment read "draft"), the others "draft"; JupyterLab's
    news pop-up is off; nbgrader's extensions found the course's configuration at every request."""
    assignments = {a["name"]: a for a in json.loads(server.api("GET", "/formgrader/api/assignments"))}
    assert assignments[ASSIGNMENT]["status"] == "released", assignments[ASSIGNMENT]
    assert assignments["02_absolute"]["status"] == "draft", assignments["02_absolute"]
    page = server.api("GET", "/lab").decode()
    assert '"@jupyterlab/apputils-extension:announcements"' in page.split('"disabledExtensions"')[1][:3000]
    assert "No nbgrader_config.py" not in server.log_tail(10**7)


CLASS_PAGES_SIGNAL = 960  # the payload number of the code that ivan hands in for the class pages


def test_the_class_pages_show_what_students_wrote_as_text_and_run_none_of_it(course, server, watched):
    """Issue 40.2, 40.3: ``stats`` and ``similar`` of the class, listed by the lab at ``/posref/reports/`` and
    served in a sandbox. ivan's answer cell (the solution's code, so that it is shown beside his classmates') opens
    with markup in a comment and in a string: both pages show it as text and nothing of it runs. The screenshots
    are ``docs/class_stats.png`` and ``docs/class_similar.png`` (``POSREF_SCREENSHOT_DIR=docs``)."""
    signal = SIGNAL.format(n=CLASS_PAGES_SIGNAL)
    nb = nbformat.read(SOLUTION, as_version=4)
    for cell in nb.cells:
        if cell.metadata.get("nbgrader", {}).get("grade_id") == "attention":
            cell.source = f"# <script>{signal}</script>\n'<img src=x onerror=\"{signal}\">'\n" + cell.source
    folder = course.dir / "submitted" / "ivan" / ASSIGNMENT  # handed in, never imported nor graded
    folder.mkdir(parents=True)
    nbformat.write(nb, folder / f"{ASSIGNMENT}.ipynb")
    try:
        said = nh.autograder("stats", ASSIGNMENT, env=course.env)
        assert "r_it (corrected item-total)" in said
        said = nh.autograder("similar", ASSIGNMENT, env=course.env)
        assert "[solutions]" in said and "ivan" in said, said
    finally:
        shutil.rmtree(course.dir / "submitted" / "ivan")
    watched.visit("/posref/reports/", wait_for="a")
    assert {f"{ASSIGNMENT}-stats.html", f"{ASSIGNMENT}-similar.html"} <= set(
        watched.page.locator("a").all_inner_texts()
    )
    shots = Path(os.environ.get("POSREF_SCREENSHOT_DIR") or course.base)
    for kind, shown in (("stats", "test_attention"), ("similar", f"<script>{signal}</script>")):
        path = f"/posref/reports/{ASSIGNMENT}-{kind}.html"
        assert _csp(server, path).endswith("; sandbox"), _csp(server, path)
        assert _content_type(server, path).startswith("text/html")
        watched.visit(path, wait_for="h1")
        assert watched.page.get_by_text(shown).count() >= 1, f"{kind}: {shown!r} is not shown as text"
        assert watched.page.locator("script, img, iframe, object, embed").count() == 0
        watched.page.screenshot(path=str(shots / f"class_{kind}.png"))
    watched.assert_nothing_ran("the class pages")


def _full_marks(course: Course, student: str) -> None:
    """Every test cell of ``student`` at its points in the gradebook (the written answers wait for a grader)."""
    with Gradebook(f"sqlite:///{course.dir / 'gradebook.db'}") as gb:
        submission = gb.find_submission_notebook(ASSIGNMENT, ASSIGNMENT, student)
        autograded = {
            g.name: (g.auto_score, g.max_score) for g in submission.grades if not g.cell.name.startswith("q_")
        }
    assert autograded and all(score == points for score, points in autograded.values()), autograded


def test_the_attack_costs_nothing_to_the_classmate_graded_after(course):
    _full_marks(course, "mallory")  # her functions are correct: the attack was on the pages only
    _full_marks(course, "bob")


def _export(course: Course) -> dict[str, dict]:
    out = course.base / "grades.csv"
    nh.autograder("export", ASSIGNMENT, "--csv", str(out), env=course.env)
    with out.open(newline="") as f:
        return {row["student"]: row for row in csv.DictReader(f)}


def test_manual_grading_shows_the_model_answer_and_the_autograde_button_keeps_every_grade(
    course, server, watched
):
    """The grader of bob's written answer finds the source notebook's model answer and rubric right under it,
    types a score, and clicks the Autograde button of bob's row: the course's score of record runs (bob keeps
    his points and the manual grade), then a refusal (mallory's submission folder gone) is the first line the
    instructor reads, and nothing of hers is lost. `export` and `feedback` agree with the gradebook."""
    bob = course.submission_id(server, "bob")
    watched.visit(f"/formgrader/submissions/{bob}/", ".posref-model-answer")
    answer = watched.page.locator(".nbgrader_cell", has_text="bob's own answer: the last token")
    key = watched.page.locator(".posref-model-answer", has_text="q_two_layers")
    assert "Model answer" in key.inner_text()
    # beside the student's answer: the next cell of the page
    assert answer.evaluate(
        "a => a.closest('.cell').nextElementSibling.classList.contains('posref-model-answer')"
    )
    key.scroll_into_view_if_needed()
    shots = Path(os.environ.get("POSREF_SCREENSHOT_DIR") or course.base)
    watched.page.screenshot(path=str(shots / "model_answer.png"))
    watched.page.fill("input.score#q_two_layers", "2")
    watched.page.keyboard.press("Tab")
    watched.page.locator(".score-saved").first.wait_for(state="attached")
    deadline = time.monotonic() + 120  # a hang guard: the save is a request of a loaded machine's server
    while course.grades("bob")["q_two_layers"][1] != 2:
        assert time.monotonic() < deadline, "the manual grade did not reach the gradebook"
        time.sleep(0.2)  # polling the gradebook, not waiting a fixed time
    before = course.grades("bob")

    watched.visit(f"/formgrader/manage_submissions/{ASSIGNMENT}", "td:has-text('bob')")
    watched.page.locator("tr", has_text="bob").locator("td.autograde a").click()
    modal = watched.page.locator("#success-modal")
    modal.wait_for(timeout=600_000)
    first = modal.locator("pre").first.inner_text().splitlines()[0]
    assert first.startswith("graded 1 student(s)"), first
    assert course.grades("bob") == before, "the button changed bob's grades"
    assert (course.dir / "autograded" / "bob" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb").is_file()
    watched.page.keyboard.press("Escape")

    # a refusal: mallory's submission folder is gone; the button says so first, and keeps what she has
    submitted = course.dir / "submitted" / "mallory"
    aside = course.base / "mallory-aside"
    submitted.rename(aside)
    try:
        before = course.grades("mallory")
        watched.visit(f"/formgrader/manage_submissions/{ASSIGNMENT}", "td:has-text('mallory')")
        watched.page.locator("tr", has_text="mallory").locator("td.autograde a").click()
        modal = watched.page.locator("#error-modal")
        modal.wait_for(timeout=600_000)
        first = modal.locator("pre").first.inner_text().splitlines()[0]
        assert first.startswith(f"no submission of {ASSIGNMENT} for mallory"), first
        assert course.grades("mallory") == before
        assert (course.dir / "autograded" / "mallory" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb").is_file()
    finally:
        aside.rename(submitted)
    watched.assert_nothing_ran("manual grading and the Autograde button")

    rows = _export(course)
    assert rows["bob"]["status"] == "graded" and float(rows["bob"]["score"]) == float(
        rows["bob"]["max_score"]
    ), rows
    assert rows["mallory"]["status"] == "graded", rows


def _saved(course: Course, student: str) -> dict:
    """What the gradebook holds of ``student``'s manual grading: each grade's (manual score, extra credit), each
    comment, and the submission's flag."""
    with Gradebook(f"sqlite:///{course.dir / 'gradebook.db'}") as gb:
        submission = gb.find_submission_notebook(ASSIGNMENT, ASSIGNMENT, student)
        grades = {g.name: (g.manual_score, g.extra_credit) for g in submission.grades}
        comments = {c.name: c.manual_comment for c in submission.comments}
        return {"grades": grades, "comments": comments, "flagged": submission.flagged}


def _flag_by_its_shortcut(page, focus: str):
    """Press the formgrader's Control+Shift+F with ``focus`` focused and return the server's answer to the request it
    sends. The request toggles the flag, so the key is pressed again only when no request left the page within a
    minute of the press (a key lost by the page: a CI run's flag never reached the gradebook, with no trace of why);
    a request that went out is never repeated."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    def sent(request) -> bool:
        return request.method == "POST" and request.url.endswith("/flag")

    for attempt in (1, 2):
        page.locator(focus).focus()
        try:
            with page.expect_request(sent, timeout=60_000) as request:
                page.keyboard.press("Control+Shift+F")
        except PlaywrightTimeout:
            assert attempt == 1, "Control+Shift+F sent no flag request, pressed twice"
            continue
        return request.value.response()


def _until(condition, what: str) -> None:
    deadline = time.monotonic() + 120  # a hang guard: each save is a request of a loaded machine's server
    while not condition():
        assert time.monotonic() < deadline, f"{what} did not reach the gradebook"
        time.sleep(0.2)  # polling the gradebook, not waiting a fixed time


def test_every_control_of_manual_grading_saves_to_its_own_cell_whatever_ids_an_answer_plants(
    course, server, watched
):
    """eve's first written answer (q_two_layers) plants the score input's, extra credit's and comment's ids of the
    next written answer (q_find_the_bug) and of a test cell (test_attention), their classes and the status line's id:
    the formgrader bound those controls to her cell, so a score typed for one answer was saved for both and the other
    one's was lost. Each control, used where it is, saves to its own cell, and nothing to hers. Her ``attention``
    cell's outputs plant the same (nbgrader's autograde clears a submission's outputs: a guard for the day it
    does not)."""
    eve = course.submission_id(server, "eve")
    before = _saved(course, "eve")
    watched.visit(f"/formgrader/submissions/{eve}/", "input.score#q_find_the_bug")
    page = watched.page
    planted = page.evaluate(
        """() => {
            const CONTROLS = ['nbgrader_cell', 'panel', 'score', 'tabbable', 'extra-credit', 'comment', 'full-credit',
                              'no-credit', 'mark-graded', 'score-saved', 'comment-saved'];
            const cell = [...document.querySelectorAll('.nbgrader_cell')].find(
                c => c.innerText.includes('An answer of my own'));
            return [...cell.querySelectorAll('.rendered_html *')].filter(e => e.id || e.getAttribute('name')
                || e.getAttribute('for') || [...e.classList].some(c => CONTROLS.includes(c))
                || [...e.attributes].some(a => /^(aria-|data-)/.test(a.name))
            ).map(e => e.outerHTML.slice(0, 80));
        }"""
    )
    assert planted == [], (
        f"her answer's elements keep ids, names, the page's classes or references: {planted}"
    )
    # each control's id, anywhere in the page (her answer, her outputs, whatever else reached it), names exactly
    # one element, the control itself, and nothing of the page refers to it by name, label or aria reference
    tags = {"": "input", "_extra_credit": "input", "-comment": "textarea"}  # score, extra credit, comment
    tests = ("", "_extra_credit")  # a test cell has no comment
    controls = {"q_find_the_bug": tuple(tags), "test_attention": tests, "test_equivariance_error": tests}
    bound = page.evaluate(
        """(ids) => Object.fromEntries(ids.map(id => [id, [...document.querySelectorAll(
            `[id="${id}"], [name="${id}"], [for="${id}"], [aria-controls="${id}"], [aria-labelledby="${id}"]`
        )].map(e => `${e.tagName.toLowerCase()}#${e.id}${e.closest('.rendered_html, .output_area') ? ' hers' : ''}`)
        ]))""",
        [f"{g}{x}" for g in controls for x in tags] + ["statusmessage"],
    )  # fmt: skip
    expected = {f"{g}{x}": [f"{tags[x]}#{g}{x}"] if x in controls[g] else [] for g in controls for x in tags}
    assert bound == {**expected, "statusmessage": ["div#statusmessage"]}, bound

    def typed(selector: str, value: str) -> None:
        page.fill(selector, value)
        page.keyboard.press("Tab")

    grades = lambda: _saved(course, "eve")["grades"]  # noqa: E731
    typed("input.score#q_find_the_bug", "1.5")
    _until(lambda: grades()["q_find_the_bug"][0] == 1.5, "the written answer's score")
    typed("input.extra-credit#q_find_the_bug_extra_credit", "0.5")
    _until(lambda: grades()["q_find_the_bug"][1] == 0.5, "its extra credit")
    typed("textarea#q_find_the_bug-comment", "clear, and right")
    _until(lambda: _saved(course, "eve")["comments"]["q_find_the_bug"] == "clear, and right", "its comment")
    typed("input.score#test_attention", "2")
    _until(lambda: grades()["test_attention"][0] == 2, "the test cell's manual override")
    page.locator(".nbgrader_cell", has=page.locator("input.score#q_find_the_bug")).locator(
        ".no-credit"
    ).click()
    _until(lambda: grades()["q_find_the_bug"][0] == 0, "No credit")
    flag = _flag_by_its_shortcut(page, "textarea#q_find_the_bug-comment")
    assert flag.ok, f"the flag's request was answered {flag.status} {flag.status_text}"
    _until(lambda: _saved(course, "eve")["flagged"], "the flag")
    # the page says so once the server's answer arrives (after the gradebook has it); then the line fades out
    page.wait_for_function(
        "() => document.querySelector('#statusmessage').textContent === 'Submission flagged'"
    )
    after = _saved(course, "eve")
    assert after["grades"]["q_two_layers"] == before["grades"]["q_two_layers"], "her own cell's grade changed"
    assert after["comments"]["q_two_layers"] == before["comments"]["q_two_layers"], (
        "her own cell's comment changed"
    )
    assert after["grades"]["test_equivariance_error"] == before["grades"]["test_equivariance_error"]
    watched.assert_nothing_ran("manual grading of eve's submission")


def test_feedback_keeps_the_key_from_students_and_renders_formulas_offline(course, browser):
    """Feedback pages name no other host for anything they load, carry MathJax inside them (on a hub the exchange
    copies the page alone), and typeset their formulas in a browser that can reach nothing but the page itself; neither they nor the release hold the model answers."""
    nh.autograder("feedback", ASSIGNMENT, env=course.env)
    for student in ("bob", "mallory"):
        page = (course.dir / "feedback" / student / ASSIGNMENT / f"{ASSIGNMENT}.html").read_text()
        assert "Model answer" not in page and "Instructor notes" not in page, (
            f"{student}'s feedback shows the key"
        )
        loaded = re.findall(r"""<(?:script|link|img|iframe)\b[^>]*\b(?:src|href)=["']?([^"' >]+)""", page)
        assert not [url for url in loaded if "//" in url], loaded
        assert '"[MathJax]/config/TeX-AMS-MML_HTMLorMML-full.js"' in page, "no MathJax inside the page"
    released = (course.dir / "release" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb").read_text()
    assert "Model answer" not in released and "Instructor notes" not in released

    context = browser.new_context()
    try:
        page = context.new_page()
        requests: list[str] = []
        page.on("request", lambda request: requests.append(request.url))
        page.route(
            "**/*",
            lambda route: route.continue_() if route.request.url.startswith("file:") else route.abort(),
        )
        page.goto((course.dir / "feedback" / "bob" / ASSIGNMENT / f"{ASSIGNMENT}.html").as_uri())
        page.locator(".MathJax").first.wait_for(timeout=HANG_S * 1000)
        assert page.locator(".MathJax").count() > 10
        assert not [url for url in requests if not url.startswith(("file:", "data:", "about:"))], requests
    finally:
        context.close()


def test_the_formgrader_opens_a_submission_with_its_score_of_record_and_kernels_do_not_grade(
    course, server, watched, checkout_before
):
    """The instructor's route (``python -m autograder lab``): an interactive kernel of the server does not run in
    grading mode; the formgrader lists the assignment and the students and opens bob's submission with its score
    of record under the test cells, formulas typeset by MathJax from the server (offline); nothing was written
    into the checkout since the server started (the module's last test of the server)."""
    assert _kernel_env_value(server, "POSREF_GRADING") == "None", "interactive kernels run in grading mode"
    watched.visit("/formgrader/manage_assignments", f"table a:has-text('{ASSIGNMENT}')")
    watched.visit("/formgrader/manage_students", "table td:has-text('bob')")
    watched.visit(
        f"/formgrader/submissions/{course.submission_id(server, 'bob')}/", ".text_cell_render .MathJax"
    )
    record = watched.page.locator(".output_area pre", has_text="Score of record").first
    record.wait_for()
    record.scroll_into_view_if_needed()
    shots = Path(os.environ.get("POSREF_SCREENSHOT_DIR") or course.base)
    watched.page.screenshot(path=str(shots / "formgrader_submission.png"))
    watched.assert_nothing_ran("bob's submission")
    assert _git_status() == checkout_before, "the instructor's lab wrote into the checkout"
    assert not (REPO / "gradebook.db").exists()
