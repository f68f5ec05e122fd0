"""The student's own folder (``posref.workfolder``, ``posref update``): filled from the releases, kept up to date,
and never a student's answer written over, whatever the course, git or a release do to the releases.

Each test builds a small course of its own: a releases folder (in a git repository where the rule needs one)
and a work folder, with notebooks that are plain JSON files whose bytes the test controls.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

from posref import i18n, launch, workfolder

REPO = Path(__file__).resolve().parents[2]


def _notebook(text: str) -> str:
    """A notebook of a markdown cell saying ``text`` and a code cell, as nbgrader releases it (no outputs)."""
    cells = [
        {"cell_type": "markdown", "metadata": {}, "source": text},
        {"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [], "source": "x = 1"},
    ]
    return json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 4}) + "\n"


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

    _next_version(tmp_path, "01_a", "a, version 2")
    assert _actions(workfolder.update(releases, work)) == [("beside", "01_a/01_a.new.ipynb")]
    assert (work / "01_a" / "01_a.ipynb").read_text() == mine
    assert (work / "01_a" / "01_a.new.ipynb").read_text() == _notebook("a, version 2")
    assert workfolder.update(releases, work) == []  # delivered once, not at every start

    # a third version replaces the copy of the second, which nobody changed: one newest copy, not a pile
    _next_version(tmp_path, "01_a", "a, version 3")
    assert _actions(workfolder.update(releases, work)) == [("beside", "01_a/01_a.new.ipynb")]
    assert (work / "01_a" / "01_a.new.ipynb").read_text() == _notebook("a, version 3")
    assert (work / "01_a" / "01_a.ipynb").read_text() == mine
    assert not (work / "01_a" / "01_a.new2.ipynb").exists()

    # a copy the student wrote in is theirs too: the next version takes the next free name
    (work / "01_a" / "01_a.new.ipynb").write_text(_notebook("a, version 3, with my notes"))
    _next_version(tmp_path, "01_a", "a, version 4")
    assert _actions(workfolder.update(releases, work)) == [("beside", "01_a/01_a.new2.ipynb")]
    assert (work / "01_a" / "01_a.new.ipynb").read_text() == _notebook("a, version 3, with my notes")
    assert (work / "01_a" / "01_a.new2.ipynb").read_text() == _notebook("a, version 4")


def _next_version(root: Path, name: str, text: str) -> None:
    """The course's next version of ``name``, committed."""
    (root / "notebooks" / name / f"{name}.ipynb").write_text(_notebook(text))
    _commit(root, text)


def _saved_by_a_front_end(path: Path) -> None:
    """What JupyterLab's save and a run do to a notebook without its owner writing a word: the kernel's metadata
    rewritten, outputs and execution counts, cell ids and cell metadata added, the source split into lines."""
    nb = json.loads(path.read_text())
    nb["metadata"] = {
        "kernelspec": {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"},
        "language_info": {"name": "python", "version": "3.11.9", "mimetype": "text/x-python"},
    }
    nb["nbformat_minor"] = 5
    for i, cell in enumerate(nb["cells"]):
        cell["id"] = f"cell-{i}"
        cell["metadata"] = {"jp-MarkdownHeadingCollapsed": True}
        cell["source"] = cell["source"].splitlines(keepends=True)
        if cell["cell_type"] == "code":
            cell["execution_count"] = i + 1
            cell["outputs"] = [{"output_type": "stream", "name": "stdout", "text": ["1\\n"]}]
    path.write_text(json.dumps(nb, indent=2))


def test_a_notebook_only_opened_run_or_saved_takes_the_new_version(tmp_path):
    """What a student changed is what they wrote: cell types, sources, attachments. Outputs and the metadata a
    front end writes are not theirs, so a notebook with only those changes takes the course's new version."""
    releases, work = _course(tmp_path, git=True), tmp_path / "work"
    workfolder.update(releases, work)
    for rel in ("00_start.ipynb", "02_b/02_b.ipynb"):
        _saved_by_a_front_end(work / rel)
    (releases / "00_start.ipynb").write_text(_notebook("start, version 2"))
    _next_version(tmp_path, "02_b", "b, version 2")
    changes = workfolder.update(releases, work)
    assert _actions(changes) == [("updated", "00_start.ipynb"), ("updated", "02_b/02_b.ipynb")]
    assert (work / "02_b" / "02_b.ipynb").read_text() == _notebook("b, version 2")
    assert not (work / workfolder.NEW_VERSIONS).exists()

    # a saved copy of the course's current version is up to date, whatever its bytes
    _saved_by_a_front_end(work / "02_b" / "02_b.ipynb")
    assert workfolder.update(releases, work) == []


def test_a_changed_source_or_cell_is_the_students(tmp_path):
    """Each way of writing in a notebook keeps it the student's: a source edited, a cell added, deleted or turned
    into another type, an image pasted into a markdown cell."""
    edits = {
        "edited": lambda cells: cells[0].update(source="a, my answer"),
        "added": lambda cells: cells.append({"cell_type": "code", "metadata": {}, "outputs": [], "source": "x = 1"}),
        "deleted": lambda cells: cells.clear(),
        "retyped": lambda cells: cells[0].update(cell_type="raw"),
        "pasted": lambda cells: cells[0].update(attachments={"a.png": {"image/png": "iVBORw0KGgo="}}),
    }  # fmt: skip
    for how, edit in edits.items():
        root = tmp_path / how
        releases, work = _course(root, git=True), root / "work"
        workfolder.update(releases, work)
        nb = json.loads((work / "01_a" / "01_a.ipynb").read_text())
        edit(nb["cells"])
        (work / "01_a" / "01_a.ipynb").write_text(json.dumps(nb))
        _next_version(root, "01_a", "a, version 2")
        assert _actions(workfolder.update(releases, work)) == [("beside", "01_a/01_a.new.ipynb")], how


def test_a_record_from_before_content_keys_still_knows_an_untouched_notebook(tmp_path):
    """A work folder whose record holds the SHA-256 of the bytes written (posref before this rule) keeps its
    untouched notebooks replaceable."""
    releases, work = _course(tmp_path, git=True), tmp_path / "work"
    workfolder.update(releases, work)
    record = json.loads((work / workfolder.MANIFEST).read_text())
    for rel, entry in record["files"].items():
        entry["written"] = hashlib.sha256((work / rel).read_bytes()).hexdigest()
    del record["notice"]
    (work / workfolder.MANIFEST).write_text(json.dumps(record))
    _next_version(tmp_path, "02_b", "b, version 2")
    assert _actions(workfolder.update(releases, work)) == [("updated", "02_b/02_b.ipynb")]


def test_the_content_key_reads_notebooks_and_nothing_else():
    one = json.dumps({"cells": [{"cell_type": "markdown", "source": "ab\ncd"}]}).encode()
    lines = json.dumps({"cells": [{"cell_type": "markdown", "source": ["ab\n", "cd"], "id": "x"}]}).encode()
    assert workfolder.content_key(one, "a.ipynb") == workfolder.content_key(lines, "a.ipynb")
    assert workfolder.content_key(one, "a.json") != workfolder.content_key(lines, "a.json")  # bytes
    for broken in (b"{not json", b"[]", b'{"cells": 3}', b'{"cells": [{"source": "x"}]}'):
        assert workfolder.content_key(broken, "a.ipynb") == hashlib.sha256(broken).hexdigest()


def test_the_new_versions_waiting_are_listed_at_the_top_of_the_folder(tmp_path):
    """While a new version waits beside a student's notebook, NEW_VERSIONS lists the pair with links, in the
    language posref speaks; it goes once the student deleted the new version; a page of the student's by that name
    is never touched."""
    releases, work = _course(tmp_path, git=True), tmp_path / "work"
    workfolder.update(releases, work)
    (work / "01_a" / "01_a.ipynb").write_text(_notebook("a, mine"))
    _next_version(tmp_path, "01_a", "a, version 2")
    with i18n.speaking("zh-TW"):
        changes = workfolder.update(releases, work)
        said = workfolder.summary(changes, releases, work)
    page = json.loads((work / workfolder.NEW_VERSIONS).read_text())
    (text,) = [c["source"] for c in page["cells"]]  # one markdown cell
    # with the course's kernel named, JupyterLab opens it without asking which kernel to start
    assert page["metadata"]["kernelspec"]["name"] == "python3"
    assert "[01_a/01_a.ipynb](01_a/01_a.ipynb) | [01_a/01_a.new.ipynb](01_a/01_a.new.ipynb)" in text, text
    with i18n.speaking("zh-TW"):
        assert i18n._("New versions of the course are waiting") in text
        assert i18n._("New versions of the course are waiting") != "New versions of the course are waiting"
    assert str(work / workfolder.NEW_VERSIONS) in said, said
    assert workfolder.waiting(work) == [("01_a/01_a.ipynb", "01_a/01_a.new.ipynb")]

    _saved_by_a_front_end(work / workfolder.NEW_VERSIONS)  # opened and saved in JupyterLab: still posref's
    (work / "01_a" / "01_a.new.ipynb").unlink()  # the student took what they wanted
    assert workfolder.update(releases, work) == [] and not (work / workfolder.NEW_VERSIONS).exists()

    (work / workfolder.NEW_VERSIONS).write_text(_notebook("my own page"))
    _next_version(tmp_path, "01_a", "a, version 3")
    assert _actions(workfolder.update(releases, work)) == [("beside", "01_a/01_a.new.ipynb")]
    assert (work / workfolder.NEW_VERSIONS).read_text() == _notebook("my own page")


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


def test_posref_lab_opens_on_the_new_versions_when_one_just_arrived(tmp_path):
    releases, work = _course(tmp_path, git=True), tmp_path / "work"
    first = workfolder.update(releases, work)
    assert launch.first_page(work, first) == launch.START_PAGE
    (work / "01_a" / "01_a.ipynb").write_text(_notebook("a, mine"))
    _next_version(tmp_path, "01_a", "a, version 2")
    arrived = workfolder.update(releases, work)
    assert launch.first_page(work, arrived) == workfolder.NEW_VERSIONS
    command = launch.lab_command(work, first=launch.first_page(work, arrived))
    assert f"--LabApp.default_url=/lab/tree/{workfolder.NEW_VERSIONS}" in command
    # at the next start it still waits, listed in the folder, and JupyterLab opens on the start page again
    assert launch.first_page(work, workfolder.update(releases, work)) == launch.START_PAGE
    assert (work / workfolder.NEW_VERSIONS).is_file()
