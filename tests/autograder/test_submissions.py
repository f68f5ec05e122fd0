"""`python -m autograder import`: a class from a folder or an archive, however it is laid out."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from autograder.submissions import import_submissions


def _archive(tmp_path: Path, files: list[str], fmt: str = "zip") -> Path:
    """An archive of empty notebooks (and other files) at these paths."""
    folder = tmp_path / "archive-content"
    shutil.rmtree(folder, ignore_errors=True)
    for name in files:
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text("{}")
    return Path(shutil.make_archive(str(tmp_path / "subs"), fmt, folder))


def _submitted(course: Path) -> list[str]:
    return sorted(str(p.relative_to(course / "submitted")) for p in (course / "submitted").rglob("*.ipynb"))


def test_import_finds_the_class_however_the_archive_is_laid_out(tmp_path, monkeypatch, capsys):
    """An archive of one student (a late submission) was read as a class whose student is the assignment folder:
    `submitted/02_absolute/02_absolute/...`, or nothing imported with 'imported: 02_absolute'."""
    course = tmp_path / "course"
    monkeypatch.setenv("POSREF_COURSE_DIR", str(course))
    nb = "02_absolute/02_absolute.ipynb"
    for files, assignment in [
        ([f"carol/{nb}"], None),  # one student
        ([f"carol/{nb}"], "02_absolute"),
        (["carol/02_absolute.ipynb"], "02_absolute"),  # with --assignment: in the student folder
        ([f"class/carol/{nb}", "class/notes/todo.ipynb", f"__MACOSX/class/carol/{nb}"], None),  # a Mac's zip
    ]:
        shutil.rmtree(course, ignore_errors=True)
        assert import_submissions(_archive(tmp_path, files), assignment) == ["carol"], files
        assert _submitted(course) == [f"carol/{nb}"], files
    assert "skipped, no assignment folder inside: notes" in capsys.readouterr().err
    # both of a student's assignments at once; a student id twice, in different case, is pointed out
    files = [f"alice/{nb}", "alice/04_rope/04_rope.ipynb", f"Alice/{nb}", f"bob/{nb}"]
    assert import_submissions(_archive(tmp_path, files, "gztar")) == ["Alice", "alice", "bob"]
    assert _submitted(course) == [
        f"Alice/{nb}", f"alice/{nb}", "alice/04_rope/04_rope.ipynb", f"bob/{nb}", f"carol/{nb}"
    ]  # fmt: skip
    assert "Alice and alice differ only in case" in capsys.readouterr().err
    # a re-submission replaces the earlier one, files and all
    (course / "submitted" / "bob" / "02_absolute" / "old.txt").write_text("")
    import_submissions(_archive(tmp_path, [f"bob/{nb}"]))
    assert not (course / "submitted" / "bob" / "02_absolute" / "old.txt").exists()


@pytest.mark.parametrize(
    "what, message",
    [
        ("flat", "no student folders in"),  # notebooks with no student folder
        ("not an archive", "cannot unpack"),
        ("missing", "does not exist"),
        ("misspelt assignment", "no assignment '02_absolut'"),
    ],
)
def test_import_says_what_is_wrong_with_what_it_was_given(tmp_path, monkeypatch, what, message):
    monkeypatch.setenv("POSREF_COURSE_DIR", str(tmp_path / "course"))
    path, assignment = _archive(tmp_path, ["02_absolute.ipynb"]), None
    if what == "not an archive":
        path = path.with_suffix(".rar")
        path.write_bytes(b"Rar!")
    elif what == "missing":
        path = tmp_path / "nothing.zip"
    elif what == "misspelt assignment":
        assignment = "02_absolut"
    with pytest.raises(SystemExit, match=re.escape(message)):
        import_submissions(path, assignment)
    assert not (tmp_path / "course" / "submitted").exists()
