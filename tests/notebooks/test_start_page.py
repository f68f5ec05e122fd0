"""The course's first minutes: ``make lab`` (``posref lab``) starts as root and as an ordinary user and opens on
the start page; the start page and every notebook link to each other; the released start page is in sync with
``solutions/00_start.ipynb``; students' JupyterLab has no formgrader, no exchange (Assignment List) and no news
pop-up; a student's answers, written in JupyterLab, survive a release and a new version of the course.

Links are checked on the released files (what students click), relative to the notebook that holds them. The
browser tests share one ``posref lab`` server (``student_lab``), started as ``make lab`` starts it.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient
from test_browser import (  # noqa: F401 (chromium is a fixture)
    ALL_CELLS_DONE,
    HANG_S,
    KERNEL_READY,
    LabServer,
    assert_names_what_jupyterlab_shows,
    browser_page,
    chromium,
    run_all,
    save_notebook,
)

from autograder.release.start_page import release_start_page, released_start_page
from posref import explore, i18n, launch, workfolder
from posref.explorers import scaling_explorer

REPO = Path(__file__).resolve().parents[2]
ORDER = [
    "01_order",
    "02_absolute",
    "03_relative",
    "04_rope",
    "05_rope_analysis",
    "06_length",
    "07_scaling",
    "07b_longrope",
    "08_nope",
]
START = REPO / "notebooks" / launch.START_PAGE
LINK = re.compile(r"\]\(([^)\s]+\.ipynb)\)")


def _links(path: Path) -> list[str]:
    """Targets of the markdown links to notebooks in ``path``, in order, as written."""
    nb = nbformat.read(path, as_version=4)
    return [t for c in nb.cells if c.cell_type == "markdown" for t in LINK.findall(c.source)]


def test_released_start_page_is_its_source_without_outputs(tmp_path):
    source = REPO / "solutions" / launch.START_PAGE
    assert all(not c.get("outputs") for c in nbformat.read(source, as_version=4).cells)
    assert release_start_page(REPO / "solutions", tmp_path) == tmp_path / launch.START_PAGE
    assert json.loads((tmp_path / launch.START_PAGE).read_text()) == json.loads(START.read_text()), (
        "notebooks/00_start.ipynb differs from solutions/: run `python -m autograder release 01_order`"
    )
    assert release_start_page(tmp_path / "nowhere", tmp_path / "out") is None  # a course without a start page


def test_released_start_page_clears_outputs(tmp_path):
    nb = nbformat.read(REPO / "solutions" / launch.START_PAGE, as_version=4)
    code = next(c for c in nb.cells if c.cell_type == "code")
    code.outputs = [nbformat.v4.new_output("stream", text="device: cpu\n")]
    code.execution_count = 3
    nbformat.write(nb, tmp_path / "run.ipynb")
    cleared = released_start_page(tmp_path / "run.ipynb")
    assert all(c.outputs == [] and c.execution_count is None for c in cleared.cells if c.cell_type == "code")


def test_start_page_lists_the_course_in_order():
    assert _links(START)[: len(ORDER)] == [f"{n}/{n}.ipynb" for n in ORDER]


def test_start_page_says_how_to_work_and_hand_in():
    text = "\n".join(c.source for c in nbformat.read(START, as_version=4).cells)
    for needed in (
        'raise NotImplementedError("not done yet',  # what an unfinished exercise looks like
        "Run → Run All Cells",  # and where Run All stops
        "Run Selected Cell and All Below",
        "Validate",
        "Assignment List",  # a hub course: fetch and submit
        "Submit",
        "`03_relative.ipynb`",  # a course without a hub: exactly which file to upload
        "no Assignment List",  # and make lab on a laptop hands in that way
        "`work/`",  # where a student's own copy is
        "`NAME.new.ipynb`",  # and where a new version of the course lands
        "ExerciseNotDone",  # what a cell that builds on an unfinished exercise says
        "POSREF_FAST=1",
        "device=cuda",
        "fonts-noto-cjk",
    ):
        assert needed in text, f"the start page does not say {needed!r}"


@pytest.mark.parametrize("name", ORDER)
def test_every_notebook_links_to_its_neighbours_and_the_start_page(name):
    i = ORDER.index(name)
    notebook = REPO / "notebooks" / name / f"{name}.ipynb"
    links = _links(notebook)
    expected = ["../00_start.ipynb"]
    expected += [f"../{n}/{n}.ipynb" for n in ORDER[max(i - 1, 0) : i] + ORDER[i + 1 : i + 2]]
    for target in expected:
        assert target in links, f"{name} has no link to {target}"
    for target in links:  # none is broken
        assert (notebook.parent / target).resolve().is_file(), (
            f"{name} links to {target}, which does not exist"
        )


def test_start_page_code_runs(tmp_path):
    nb = nbformat.read(START, as_version=4)
    env = {**os.environ, "PYTHONPATH": str(REPO), "POSREF_FAST": "1"}
    NotebookClient(
        nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
    ).execute(env=env)
    out = "".join(o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.outputs)
    assert "device:" in out and "fast mode: on" in out and "Chinese in figures:" in out, out


# ---------------------------------------------------------------------------------------------------------------
# posref lab

STUDENT_SERVER_EXTENSIONS = {
    "nbgrader.server_extensions.formgrader": False,
    "nbgrader.server_extensions.assignment_list": False,
    "nbgrader.server_extensions.course_list": False,
    "posref_jupyter.validate": True,  # the course's Validate button's words (posref_jupyter/validate.py)
}
STUDENT_HIDDEN_PLUGINS = {
    "@jupyter/nbgrader:formgrader",
    "@jupyter/nbgrader:create-assignment",
    "@jupyter/nbgrader:assignment-list",
    "@jupyter/nbgrader:course-list",
    "@jupyter/nbgrader:menu",
    "@jupyter/nbgrader:validate-assignment",  # the course's own button replaces it
    "@posref/validate:assignment-list",  # the course's Assignment List: a hub's only (no exchange here either)
    "@jupyterlab/apputils-extension:announcements",
}


def test_lab_command_allows_root_only_as_root(monkeypatch, tmp_path):
    (tmp_path / launch.START_PAGE).write_text("{}")
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    as_root = launch.lab_command(tmp_path)
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    as_user = launch.lab_command(tmp_path)
    assert "--allow-root" in as_root and "--allow-root" not in as_user
    assert f"--LabApp.default_url=/lab/tree/{launch.START_PAGE}" in as_user
    assert not any("default_url" in a for a in launch.lab_command(tmp_path / ".."))  # no start page there


def test_lab_env_hides_instructor_tools_and_the_exchange_unless_asked():
    env = {"JUPYTER_CONFIG_PATH": "/elsewhere", "PATH": "/usr/bin"}
    student = launch.lab_env(env=env)
    assert student["JUPYTER_CONFIG_PATH"].split(os.pathsep) == [
        str(launch.STUDENT_CONFIG),
        str(launch.COURSE_CONFIG),
        "/elsewhere",
    ]
    instructor = launch.lab_env(instructor_tools=True, env={"PATH": "/usr/bin"})
    assert instructor["JUPYTER_CONFIG_PATH"] == str(launch.COURSE_CONFIG)  # the formgrader kept, no news
    hidden = {
        name
        for folder in (launch.STUDENT_CONFIG, launch.COURSE_CONFIG)
        for name in json.loads((folder / "labconfig" / "page_config.json").read_text())["disabledExtensions"]
    }
    assert hidden == STUDENT_HIDDEN_PLUGINS
    server = json.loads((launch.STUDENT_CONFIG / "jupyter_server_config.json").read_text())
    assert server["ServerApp"]["jpserver_extensions"] == STUDENT_SERVER_EXTENSIONS  # Validate's stays on


def test_validate_finds_the_students_nbgrader_config(tmp_path):
    """nbgrader's Validate handler loads its configuration the way this does: from the student config, found on
    JUPYTER_CONFIG_PATH, without the "No nbgrader_config.py file found" warning of a folder that has none."""
    code = (
        "import os; from jupyter_core.paths import jupyter_config_path; from nbgrader.apps import NbGrader\n"
        "app = NbGrader(); app.config_file_paths.append([os.getcwd(), *jupyter_config_path()])\n"
        "app.load_config_file(); print('timeout', app.config.Execute.timeout)"
    )
    env = launch.lab_env(env={k: v for k, v in os.environ.items() if k != "JUPYTER_CONFIG_PATH"})
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "timeout 300" in done.stdout and "No nbgrader_config.py" not in done.stderr, done.stderr


def _front_door_checks(server: LabServer) -> None:
    """What a student's server answers: its front door leads to the start page; no formgrader, no exchange."""
    request = urllib.request.Request(server.url + "/", headers={"Authorization": f"token {server.token}"})
    with urllib.request.urlopen(request, timeout=10) as response:  # the server's front door redirects...
        assert response.geturl() == f"{server.url}/lab/tree/{launch.START_PAGE}"  # ...to the start page
    page = server.api("GET", "/lab").decode()
    disabled = page.split('"disabledExtensions"')[1].split("]")[0]
    assert all(f'"{plugin}"' in disabled for plugin in STUDENT_HIDDEN_PLUGINS), disabled
    for handler in (
        "/formgrader",
        "/assignments",
        "/formgraders",
    ):  # formgrader, Assignment List, Course List
        with pytest.raises(urllib.error.HTTPError, match="404"):
            server.api("GET", handler)
    assert json.loads(server.api("GET", "/api/contents")), "the course folder is not served"


@pytest.mark.timeout(900)  # a hang guard (test_browser.HANG_S)
def test_posref_lab_starts_as_an_ordinary_user_too():
    if os.geteuid() != 0:
        pytest.skip("running as an ordinary user already: the student_lab server of this module covers it")
    if shutil.which("setpriv") is None:
        pytest.skip("no setpriv to drop to an ordinary user")
    base = Path(tempfile.mkdtemp(prefix="posref-lab-user-"))  # pytest's tmp_path is private to root
    try:
        base.chmod(0o755)
        server = LabServer(base, launcher="posref", run_as=65534)
        shutil.copy(START, server.root / launch.START_PAGE)
        try:
            server.start()
            _front_door_checks(server)
        finally:
            server.stop()
        assert not (server.root / "gradebook.db").exists(), "the student's lab wrote a gradebook"
    finally:
        shutil.rmtree(base, ignore_errors=True)


# ---------------------------------------------------------------------------------------------------------------
# in a browser, on one server: a student's course, a clone of this course's releases


def _git(cwd: Path, *args: str) -> str:
    identity = ["-c", "user.name=course", "-c", "user.email=course@example.org"]
    return subprocess.run(
        ["git", "-C", str(cwd), *identity, *args], check=True, capture_output=True, text=True
    ).stdout


@pytest.fixture(scope="module")
def student_lab(tmp_path_factory) -> Iterator[LabServer]:
    """``posref lab`` as ``make lab`` runs it, serving a student's work folder (``root``) filled from the releases
    of a clone (``server.clone``) of a course repository (``server.upstream``: this checkout's notebooks/ and
    .gitignore). Only the course's own settings: no user setting turns JupyterLab's news off."""
    if shutil.which("git") is None:
        pytest.skip("no git: the student's path clones and pulls the course")
    base = tmp_path_factory.mktemp("student")
    upstream, clone = base / "upstream", base / "clone"
    shutil.copytree(REPO / "notebooks", upstream / "notebooks")
    shutil.copy(REPO / ".gitignore", upstream / ".gitignore")
    _git(upstream, "init", "-q")
    _git(upstream, "add", "-A")
    _git(upstream, "commit", "-q", "-m", "the course")
    _git(base, "clone", "-q", str(upstream), str(clone))
    server = LabServer(base, launcher="posref", lab_args=("--releases", str(clone / "notebooks")))
    server.upstream, server.clone = upstream, clone
    (
        server.home
        / "lab-settings"
        / "@jupyterlab"
        / "apputils-extension"
        / "notification.jupyterlab-settings"
    ).unlink()
    try:
        server.start()
        yield server
    finally:
        server.stop()


def test_posref_lab_fills_the_students_folder_and_hides_the_exchange(student_lab):
    log = student_lab.log_tail(20_000)
    assert f"added {launch.START_PAGE}" in log and "added 01_order/01_order.ipynb" in log, log
    for name in ORDER:
        assert (student_lab.root / name / f"{name}.ipynb").is_file()
    _front_door_checks(student_lab)
    assert not (student_lab.root / "gradebook.db").exists(), "the student's lab wrote a gradebook"


def _tab(page, name: str):
    return page.locator(".lm-DockPanel-tabBar .lm-TabBar-tab", has_text=name)


def _shot_dir(tmp_path: Path) -> Path:
    shots = Path(os.environ.get("POSREF_SCREENSHOT_DIR") or tmp_path)
    shots.mkdir(parents=True, exist_ok=True)
    return shots


@pytest.mark.browser
@pytest.mark.timeout(900)  # a hang guard (test_browser.HANG_S)
def test_make_lab_opens_on_the_start_page_and_its_links_work(chromium, student_lab, tmp_path):  # noqa: F811
    """What ``make lab`` shows first: the rendered start page, with no news pop-up and no Nbgrader menu (no
    formgrader, no Assignment List); its link opens 01, 01's link opens 02."""
    server, shots = student_lab, _shot_dir(tmp_path)
    with browser_page(chromium, server.home) as page:
        try:
            page.goto(f"{server.url}/?token={server.token}")  # the front door, as `make lab` opens it
            heading = page.locator(".jp-RenderedMarkdown h1", has_text="Start here")
            heading.wait_for()
            page.locator(".jp-RenderedMarkdown table a", has_text="Order").wait_for()
            page.screenshot(path=str(shots / "start_page.png"))

            menus = page.locator(".lm-MenuBar-itemLabel").all_inner_texts()
            assert "Run" in menus and "Nbgrader" not in menus, menus

            page.locator(".jp-RenderedMarkdown table a", has_text="Order").click()
            _tab(page, "01_order.ipynb").wait_for()
            page.locator(".jp-RenderedMarkdown a", has_text="02 absolute").first.click()
            _tab(page, "02_absolute.ipynb").wait_for()
            page.locator(".jp-NotebookPanel-toolbar .validate-button:visible").wait_for()  # Validate stays
            news = page.locator(".Toastify__toast", has_text="Jupyter news")
            assert news.count() == 0, "JupyterLab asked about its news"
            # every menu item the English pages name is one this JupyterLab shows (issue 42.7)
            assert assert_names_what_jupyterlab_shows(page, _english_pages()) >= 4
        except Exception:
            page.screenshot(path=str(shots / "start_page_failure.png"))
            print(f"\nJupyterLab log tail:\n{server.log_tail()}")
            raise


def _english_pages() -> dict[str, str]:
    """What a student of the English edition reads about JupyterLab's interface: the README, the start page's
    markdown, the pages posref writes (the explore edition's note, the list of new versions waiting)."""
    start = nbformat.read(START, as_version=4)
    with i18n.speaking("en"):
        return {
            "README.md": (REPO / "README.md").read_text(encoding="utf-8"),
            "notebooks/00_start.ipynb": "\n".join(c.source for c in start.cells if c.cell_type == "markdown"),
            "the explore note": explore.note_cell()["source"],
            workfolder.NEW_VERSIONS: workfolder.new_versions_page([("a.ipynb", "a.new.ipynb")]).decode(),
        }


def _next_version_of_the_course(upstream: Path) -> None:
    """A new commit upstream: a cell added to 01 (which the student edits), to 02 and to the start page (which they
    only open and save), and a notebook new in the course."""
    for name in ("01_order", "02_absolute", ""):
        path = upstream / "notebooks" / (f"{name}/{name}.ipynb" if name else launch.START_PAGE)
        nb = nbformat.read(path, as_version=4)
        label = name or "start page"
        nb.cells.append(nbformat.v4.new_markdown_cell(f"New in the course's next version ({label})."))
        nbformat.write(nb, path)
    new = upstream / "notebooks" / "09_extra" / "09_extra.ipynb"
    new.parent.mkdir()
    nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("# 09")]), new)
    _git(upstream, "add", "-A")
    _git(upstream, "commit", "-q", "-m", "the course, next version")


@pytest.mark.browser
@pytest.mark.timeout(900)  # a hang guard (test_browser.HANG_S)
def test_a_students_answers_survive_a_release_and_a_new_version(chromium, student_lab, tmp_path):  # noqa: F811
    """A student writes an answer into notebook 01 in JupyterLab and saves it; the course's release of 01 is made
    in the same checkout; the course's next version is pulled and brought over. The answer is still there, on
    disk and in JupyterLab; the next version of 01 sits beside it, listed on the page of new versions waiting. The
    start page (run and saved) and 02 (opened and saved) are not the student's work: JupyterLab's save rewrites
    their metadata, and they take their new versions all the same (issue 42.1)."""
    server, shots = student_lab, _shot_dir(tmp_path)
    relative = "01_order/01_order.ipynb"
    mine = server.root / relative
    answer = "my_answer = 4242  # written in JupyterLab"
    # what the student only opens and saves -> what running it prints (None: not run)
    only_saved = {launch.START_PAGE: "device:", "02_absolute/02_absolute.ipynb": None}
    with browser_page(chromium, server.home) as page:
        try:
            for path, printed in only_saved.items():
                released = (server.root / path).read_bytes()
                if printed is None:
                    page.goto(f"{server.url}/lab/tree/{path}?reset&token={server.token}")
                    server.wait_for_idle_kernel(path)
                    page.wait_for_function(KERNEL_READY)
                else:  # the start page's machine check, run as its text asks
                    run_all(page, server, path, ".jp-OutputArea-output")
                    page.locator(".jp-OutputArea-output", has_text=printed).first.wait_for()
                save_notebook(page, server.root / path)
                assert (server.root / path).read_bytes() != released, f"JupyterLab saved {path} byte for byte"

            page.goto(f"{server.url}/lab/tree/{relative}?reset&token={server.token}")  # no restored tabs
            # JupyterLab may restore an earlier test's tabs, hidden: only the panel in view is this notebook's
            panel = page.locator(".jp-NotebookPanel:visible")
            stub = panel.locator(
                ".jp-CodeCell .jp-InputArea-editor", has_text="raise NotImplementedError"
            ).first
            stub.click()
            page.keyboard.press("Control+a")
            page.keyboard.type(answer)
            # the editor holds the answer before it is saved (on a loaded machine typing lags the keys)
            panel.locator(".jp-CodeCell .jp-InputArea-editor", has_text=answer).first.wait_for()
            saved = save_notebook(page, mine)
            assert any(c.source == answer for c in saved.cells), "the answer was not saved"
            written = mine.read_bytes()

            env = {**os.environ, "POSREF_RELEASE_DIR": str(server.clone / "notebooks"),
                   "POSREF_COURSE_DIR": str(tmp_path / "course")}  # fmt: skip
            release = subprocess.run(
                [sys.executable, "-m", "autograder", "release", "01_order"],
                cwd=REPO, env=env, capture_output=True, text=True, timeout=600,
            )  # fmt: skip
            assert release.returncode == 0, release.stderr
            assert "released 01_order" in release.stdout, release.stdout
            assert str(server.clone / "notebooks" / relative) in release.stdout, release.stdout
            assert mine.read_bytes() == written, "the release changed the student's notebook"

            _git(server.clone, "checkout", "-q", "--", "notebooks")  # the release's own bytes, if they differ
            _next_version_of_the_course(server.upstream)
            _git(server.clone, "pull", "-q", "--ff-only")
            update = subprocess.run(
                [sys.executable, "-m", "posref", "update", "--folder", str(server.root),
                 "--releases", str(server.clone / "notebooks")],
                env=server.env, capture_output=True, text=True, timeout=600,
            )  # fmt: skip
            assert update.returncode == 0, update.stderr
            said = update.stderr
            assert "01_order/01_order.new.ipynb" in said and "yours is as you left it" in said, said
            for path in only_saved:  # opened and saved, not changed: the new version replaced it
                assert f"updated {path}" in said, said
                assert "New in the course's next version" in (server.root / path).read_text(), path
            assert "added 09_extra/09_extra.ipynb" in said, said
            assert "02_absolute.new" not in said and "00_start.new" not in said, said
            assert mine.read_bytes() == written, "the update changed the student's notebook"
            new = nbformat.read(server.root / "01_order" / "01_order.new.ipynb", as_version=4)
            assert new.cells[-1].source == "New in the course's next version (01_order)."
            untouched = nbformat.read(server.root / "02_absolute" / "02_absolute.ipynb", as_version=4)
            assert untouched.cells[-1].source == "New in the course's next version (02_absolute)."

            # the new version waiting is listed at the top of the folder, with links to both notebooks
            page.goto(f"{server.url}/lab/tree/{workfolder.NEW_VERSIONS}?token={server.token}")
            listed = page.locator(".jp-RenderedMarkdown table a", has_text="01_order.new.ipynb")
            listed.wait_for()
            listed.click()
            _tab(page, "01_order.new.ipynb").wait_for()
            page.locator(".jp-DirListing-item", has_text=workfolder.NEW_VERSIONS).first.wait_for()

            page.goto(
                f"{server.url}/lab/tree/{relative}?token={server.token}"
            )  # and JupyterLab shows the answer
            page.locator(
                ".jp-NotebookPanel:visible .jp-CodeCell .jp-InputArea-editor", has_text=answer
            ).wait_for()
            page.screenshot(path=str(shots / "answers_kept.png"))

            # Validate works here, with the student's nbgrader configuration (no warning that there is none)
            page.locator(".jp-NotebookPanel-toolbar .validate-button:visible").click()
            page.locator(".jp-Dialog-content").wait_for(timeout=HANG_S * 1000)
            assert "No nbgrader_config.py" not in server.log_tail(10**7), "nbgrader found no configuration"
        except Exception:
            page.screenshot(path=str(shots / "answers_kept_failure.png"))
            print(f"\nJupyterLab log tail:\n{server.log_tail()}")
            raise


@pytest.mark.browser
@pytest.mark.timeout(900)  # a hang guard (test_browser.HANG_S)
def test_the_scaling_explorers_readout_matches_its_title(chromium, student_lab, tmp_path):  # noqa: F811
    """07's explorer at a factor that is not round: the slider's readout gives the digits of the title."""
    server, shots = student_lab, _shot_dir(tmp_path)
    relative = "readout.ipynb"
    code = "from posref.explorers import scaling_explorer\nscaling_explorer(16, 50.0, 64, factor=2**4.25)"
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(code)])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, server.root / relative)
    readout = ".posref-scaling-explorer .widget-hslider .widget-readout"
    with browser_page(chromium, server.home) as page:
        try:
            run_all(page, server, relative, readout)
            shown = page.inner_text(readout).strip()
        except Exception:
            page.screenshot(path=str(shots / "scaling_readout_failure.png"))
            print(f"\nJupyterLab log tail:\n{server.log_tail()}")
            raise
    title = scaling_explorer(16, 50.0, 64, factor=2**4.25).figure._suptitle.get_text()
    assert "s = 19.0273" in title, title
    assert shown == "19.0273", f"the factor slider reads {shown!r} where the title says {title!r}"
