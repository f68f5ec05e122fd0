"""The course's first minutes: ``make lab`` (``posref lab``) starts as root and as an ordinary user and opens on
the start page; the start page and every notebook link to each other; the released start page is in sync with
``solutions/00_start.ipynb``; students' JupyterLab has no formgrader.

Links are checked on the released files (what students click), relative to the notebook that holds them.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
import urllib.error
import urllib.request
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient
from test_browser import LabServer, browser_page, chromium  # noqa: F401 (a fixture)

from autograder.start_page import release_start_page, released_start_page
from posref import launch

REPO = Path(__file__).resolve().parents[2]
ORDER = [
    "01_order",
    "02_absolute",
    "03_relative",
    "04_rope",
    "05_rope_analysis",
    "06_length",
    "07_scaling",
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
        nb, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
    ).execute(env=env)
    out = "".join(o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.outputs)
    assert "device:" in out and "fast mode: on" in out and "Chinese in figures:" in out, out


# ---------------------------------------------------------------------------------------------------------------
# posref lab


def test_lab_command_allows_root_only_as_root(monkeypatch, tmp_path):
    (tmp_path / launch.START_PAGE).write_text("{}")
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    as_root = launch.lab_command(tmp_path)
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    as_user = launch.lab_command(tmp_path)
    assert "--allow-root" in as_root and "--allow-root" not in as_user
    assert f"--LabApp.default_url=/lab/tree/{launch.START_PAGE}" in as_user
    assert not any("default_url" in a for a in launch.lab_command(tmp_path / ".."))  # no start page there


def test_lab_env_hides_instructor_tools_unless_asked():
    env = {"JUPYTER_CONFIG_PATH": "/elsewhere", "PATH": "/usr/bin"}
    student = launch.lab_env(env=env)
    assert student["JUPYTER_CONFIG_PATH"].split(os.pathsep) == [str(launch.STUDENT_CONFIG), "/elsewhere"]
    assert "JUPYTER_CONFIG_PATH" not in launch.lab_env(instructor_tools=True, env={"PATH": "/usr/bin"})
    page = json.loads((launch.STUDENT_CONFIG / "labconfig" / "page_config.json").read_text())
    assert set(page["disabledExtensions"]) == {
        "@jupyter/nbgrader:formgrader",
        "@jupyter/nbgrader:create-assignment",
    }


def test_course_folder(tmp_path):
    assert launch.course_folder() == REPO / "notebooks"  # this checkout
    assert launch.course_folder(tmp_path) == tmp_path
    with pytest.raises(FileNotFoundError, match="no folder"):
        launch.course_folder(tmp_path / "missing")


def _start_posref_lab(base: Path, run_as: int | None = None) -> None:
    server = LabServer(base, launcher="posref", run_as=run_as)
    shutil.copy(START, server.root / launch.START_PAGE)
    try:
        server.start()
        request = urllib.request.Request(server.url + "/", headers={"Authorization": f"token {server.token}"})
        with urllib.request.urlopen(request, timeout=10) as response:  # the server's front door redirects...
            assert response.geturl() == f"{server.url}/lab/tree/{launch.START_PAGE}"  # ...to the start page
        page = server.api("GET", "/lab").decode()
        assert "@jupyter/nbgrader:formgrader" in page.split('"disabledExtensions"')[1].split("]")[0]
        with pytest.raises(urllib.error.HTTPError, match="404"):
            server.api("GET", "/formgrader")
        assert json.loads(server.api("GET", "/api/contents")), "the course folder is not served"
    finally:
        server.stop()
    assert not (server.root / "gradebook.db").exists(), "the student's lab wrote a gradebook"


@pytest.mark.timeout(180)
def test_posref_lab_starts_as_the_current_user(tmp_path):
    _start_posref_lab(tmp_path)


@pytest.mark.timeout(180)
def test_posref_lab_starts_as_an_ordinary_user_too():
    if os.geteuid() != 0:
        pytest.skip(
            "running as an ordinary user already: test_posref_lab_starts_as_the_current_user covers it"
        )
    if shutil.which("setpriv") is None:
        pytest.skip("no setpriv to drop to an ordinary user")
    base = Path(tempfile.mkdtemp(prefix="posref-lab-user-"))  # pytest's tmp_path is private to root
    try:
        base.chmod(0o755)
        _start_posref_lab(base, run_as=65534)
    finally:
        shutil.rmtree(base, ignore_errors=True)


# ---------------------------------------------------------------------------------------------------------------
# in a browser


def _tab(page, name: str):
    return page.locator(".lm-DockPanel-tabBar .lm-TabBar-tab", has_text=name)


@pytest.mark.browser
@pytest.mark.timeout(240)
def test_make_lab_opens_on_the_start_page_and_its_links_work(chromium, tmp_path):  # noqa: F811
    """What ``make lab`` shows first: the rendered start page; its link opens 01, 01's link opens 02; the
    Nbgrader menu has the Assignment List and no formgrader."""
    server = LabServer(tmp_path, launcher="posref")
    shutil.rmtree(server.root)
    shutil.copytree(REPO / "notebooks", server.root)
    shot_dir = Path(os.environ.get("POSREF_SCREENSHOT_DIR") or tmp_path)
    shot_dir.mkdir(parents=True, exist_ok=True)
    try:
        server.start()
        with browser_page(chromium, server.home) as page:
            try:
                page.goto(f"{server.url}/?token={server.token}")  # the front door, as `make lab` opens it
                heading = page.locator(".jp-RenderedMarkdown h1", has_text="Start here")
                heading.wait_for()
                page.locator(".jp-RenderedMarkdown table a", has_text="Order").wait_for()
                page.screenshot(path=str(shot_dir / "start_page.png"))

                page.get_by_role("menuitem", name="Nbgrader", exact=True).click()
                items = page.locator(".lm-Menu .lm-Menu-itemLabel").all_inner_texts()
                assert "Assignment List" in items, items
                assert not any("Formgrader" in i or "Create Assignment" in i for i in items), items
                page.keyboard.press("Escape")

                page.locator(".jp-RenderedMarkdown table a", has_text="Order").click()
                _tab(page, "01_order.ipynb").wait_for()
                page.locator(".jp-RenderedMarkdown a", has_text="02 absolute").first.click()
                _tab(page, "02_absolute.ipynb").wait_for()
            except Exception:
                page.screenshot(path=str(shot_dir / "start_page_failure.png"))
                print(f"\nJupyterLab log tail:\n{server.log_tail()}")
                raise
    finally:
        server.stop()
