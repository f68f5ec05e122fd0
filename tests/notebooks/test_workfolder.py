"""The student's own folder (``posref.workfolder``, ``posref update``): filled from the releases, kept up to date,
and never a student's answer written over, whatever the course, git or a release do to the releases.

Each test builds a small course of its own: a releases folder (in a git repository where the rule needs one)
and a work folder, with notebooks that are plain JSON files whose bytes the test controls.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from posref import launch, workfolder

REPO = Path(__file__).resolve().parents[2]


def _notebook(text: str) -> str:
    return json.dumps({"cells": [{"cell_type": "markdown", "source": text}], "nbformat": 4}) + "\n"


def _course(root: Path, *, git: bool) -> Path:
    """A releases folder with a start page, two assignments and its README; committed when ``git``."""
    releases = root / "notebooks"
    (releases / "01_a").mkdir(parents=True)
    (releases / "02_b").mkdir()
    (releases / "00_start.ipynb").write_text(_notebook("start"))
    (releases / "01_a" / "01_a.ipynb").write_text(_notebook("a, version 1"))
    (releases / "02_b" / "02_b.ipynb").write_text(_notebook("b, version 1"))
    (releases / "README.md").write_text("about the releases folder")
    (releases / ".ipynb_checkpoints").mkdir()
    (releases / ".ipynb_checkpoints" / "00_start-checkpoint.ipynb").write_text(_notebook("old"))
    if git:
        _git(root, "init", "-q")
        _commit(root, "the course, version 1")
    return releases


def _git(root: Path, *args: str) -> None:
    identity = ["-c", "user.name=course", "-c", "user.email=course@example.org"]
    subprocess.run(["git", "-C", str(root), *identity, *args], check=True, capture_output=True)


def _commit(root: Path, message: str) -> None:
    _git(root, "add", "-A")
    _git(root, "commit", "-q", "-m", message)


def _actions(changes: list[workfolder.Change]) -> list[tuple[str, str]]:
    return [(c.action, c.path) for c in changes]


ALL = ["00_start.ipynb", "01_a/01_a.ipynb", "02_b/02_b.ipynb"]


def test_first_open_copies_the_notebooks_only(tmp_path):
    releases, work = _course(tmp_path, git=False), tmp_path / "work"
    assert _actions(workfolder.update(releases, work)) == [("added", rel) for rel in ALL]
    for rel in ALL:
        assert (work / rel).read_bytes() == (releases / rel).read_bytes()
    assert not (work / "README.md").exists() and not (work / ".ipynb_checkpoints").exists()
    assert workfolder.update(releases, work) == []  # a second start: nothing to do


def test_an_edited_notebook_is_never_written_over(tmp_path):
    releases, work = _course(tmp_path, git=True), tmp_path / "work"
    workfolder.update(releases, work)
    mine = _notebook("a, with my answers")
    (work / "01_a" / "01_a.ipynb").write_text(mine)

    (releases / "01_a" / "01_a.ipynb").write_text(_notebook("a, version 2"))  # the course's next version
    _commit(tmp_path, "version 2")
    assert _actions(workfolder.update(releases, work)) == [("beside", "01_a/01_a.new.ipynb")]
    assert (work / "01_a" / "01_a.ipynb").read_text() == mine
    assert (work / "01_a" / "01_a.new.ipynb").read_text() == _notebook("a, version 2")
    assert workfolder.update(releases, work) == []  # delivered once, not at every start

    (releases / "01_a" / "01_a.ipynb").write_text(_notebook("a, version 3"))  # a third: the next free name
    _commit(tmp_path, "version 3")
    assert _actions(workfolder.update(releases, work)) == [("beside", "01_a/01_a.new2.ipynb")]
    assert (work / "01_a" / "01_a.ipynb").read_text() == mine
    assert (work / "01_a" / "01_a.new.ipynb").read_text() == _notebook("a, version 2")


def test_an_untouched_notebook_takes_the_new_version(tmp_path):
    releases, work = _course(tmp_path, git=True), tmp_path / "work"
    workfolder.update(releases, work)
    (releases / "02_b" / "02_b.ipynb").write_text(_notebook("b, version 2"))
    (releases / "03_c").mkdir()
    (releases / "03_c" / "03_c.ipynb").write_text(_notebook("c, new in the course"))
    _commit(tmp_path, "version 2")
    changes = workfolder.update(releases, work)
    assert _actions(changes) == [("updated", "02_b/02_b.ipynb"), ("added", "03_c/03_c.ipynb")]
    assert (work / "02_b" / "02_b.ipynb").read_text() == _notebook("b, version 2")
    assert "you had not changed it" in changes[0].describe()


def test_without_git_an_untouched_notebook_gets_the_new_version_beside(tmp_path):
    """Where git cannot say the delivered file was the course's own, it might hold a student's answers."""
    releases, work = _course(tmp_path, git=False), tmp_path / "work"
    workfolder.update(releases, work)
    (releases / "02_b" / "02_b.ipynb").write_text(_notebook("b, version 2"))
    assert _actions(workfolder.update(releases, work)) == [("beside", "02_b/02_b.new.ipynb")]
    assert (work / "02_b" / "02_b.ipynb").read_text() == _notebook("b, version 1")


def test_answers_written_in_the_releases_folder_stay_the_students(tmp_path):
    """A student of the earlier layout worked in notebooks/ itself: the first copy carries those answers into
    work/, and a later version of the course lands beside them instead of replacing them."""
    releases, work = _course(tmp_path, git=True), tmp_path / "work"
    answered = _notebook("a, answered in notebooks/")
    (releases / "01_a" / "01_a.ipynb").write_text(answered)  # not committed: the student's edit
    workfolder.update(releases, work)
    assert (work / "01_a" / "01_a.ipynb").read_text() == answered

    (releases / "01_a" / "01_a.ipynb").write_text(_notebook("a, version 2"))  # `git checkout` + `git pull`
    _commit(tmp_path, "version 2")
    assert _actions(workfolder.update(releases, work)) == [("beside", "01_a/01_a.new.ipynb")]
    assert (work / "01_a" / "01_a.ipynb").read_text() == answered


def test_a_deleted_notebook_comes_back_and_a_foreign_one_is_left_alone(tmp_path):
    releases, work = _course(tmp_path, git=True), tmp_path / "work"
    workfolder.update(releases, work)
    (work / "01_a" / "01_a.ipynb").unlink()  # to start the notebook again
    (work / "01_a" / "notes.txt").write_text("mine")
    assert _actions(workfolder.update(releases, work)) == [("added", "01_a/01_a.ipynb")]
    assert (work / "01_a" / "notes.txt").read_text() == "mine"

    # a work folder from before the record: a notebook that differs is the student's, the course's lands beside
    (work / workfolder.MANIFEST).unlink()
    (work / "02_b" / "02_b.ipynb").write_text(_notebook("b, mine"))
    assert _actions(workfolder.update(releases, work)) == [("beside", "02_b/02_b.new.ipynb")]
    assert (work / "02_b" / "02_b.ipynb").read_text() == _notebook("b, mine")


def test_bad_input_says_what_was_wrong(tmp_path):
    releases, work = _course(tmp_path, git=False), tmp_path / "work"
    with pytest.raises(FileNotFoundError, match="no folder .* of released notebooks"):
        workfolder.update(tmp_path / "missing", work)
    workfolder.update(releases, work)
    (work / workfolder.MANIFEST).write_text('{"files": {"01_a/01_a.ipynb": {"release": "x"}}}')
    with pytest.raises(ValueError, match="is not posref's record .* move it away"):
        workfolder.update(releases, work)


def test_posref_update_prints_what_it_did(tmp_path):
    releases, work = _course(tmp_path, git=False), tmp_path / "mine"
    command = [sys.executable, "-m", "posref", "update", "--folder", str(work), "--releases", str(releases)]
    first = subprocess.run(command, capture_output=True, text=True, timeout=600)
    assert first.returncode == 0, first.stderr
    assert "added 01_a/01_a.ipynb" in first.stderr and (work / "01_a" / "01_a.ipynb").is_file()
    again = subprocess.run(command, capture_output=True, text=True, timeout=600)
    assert "up to date" in again.stderr, again.stderr


def test_the_checkout_works_in_a_folder_git_ignores(tmp_path):
    assert launch.course_folders() == (REPO / "work", REPO / "notebooks")
    assert launch.course_folders(tmp_path) == (tmp_path, None)  # --folder alone: served as it is
    assert launch.course_folders(tmp_path / "new", REPO / "notebooks") == (
        tmp_path / "new",
        REPO / "notebooks",
    )
    with pytest.raises(FileNotFoundError, match="no folder"):
        launch.course_folders(tmp_path / "missing")
    ignored = subprocess.run(
        ["git", "-C", str(REPO), "check-ignore", "-q", "work/01_order/01_order.ipynb"], capture_output=True
    )
    if ignored.returncode == 128:
        pytest.skip("not a git checkout: nothing to ignore")
    assert ignored.returncode == 0, "git does not ignore work/: a student's answers would show in git status"
