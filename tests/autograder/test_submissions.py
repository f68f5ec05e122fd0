"""`python -m autograder import`: a class from a folder or an archive, however it is laid out."""

from __future__ import annotations

import re
import shutil
import zipfile
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from autograder.intake import late
from autograder.intake.submission import Refused, Submission, fingerprint
from autograder.intake.submissions import import_submissions


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
        assert import_submissions(_archive(tmp_path, files), assignment).imported == ["carol"], files
        assert _submitted(course) == [f"carol/{nb}"], files
    assert "skipped, no assignment folder inside: notes" in capsys.readouterr().err
    # both of a student's assignments at once; a student id twice, in different case, is pointed out
    files = [f"alice/{nb}", "alice/04_rope/04_rope.ipynb", f"Alice/{nb}", f"bob/{nb}"]
    assert import_submissions(_archive(tmp_path, files, "gztar")).imported == ["Alice", "alice", "bob"]
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


def _zip(tmp_path: Path, entries: dict[str, tuple]) -> Path:
    """A zip whose entries have these DOS times (as a course site writes them)."""
    path = tmp_path / "download.zip"
    with zipfile.ZipFile(path, "w") as archive:
        for name, when in entries.items():
            archive.writestr(zipfile.ZipInfo(name, date_time=when), "{}")
    return path


def test_import_takes_a_canvas_download_as_it_comes(tmp_path, monkeypatch, capsys):
    """Canvas puts every file at the top as <name>[_LATE]_<user id>_<file id>_<file name>; its entry times are
    the download's, so only the LATE flag tells the time: 1 s after the due date, said on stderr."""
    course = tmp_path / "course"
    monkeypatch.setenv("POSREF_COURSE_DIR", str(course))
    roster = tmp_path / "roster.csv"
    roster.write_text("id,first_name,last_name,email,lms_id\ns1001,Jane,Smith,,12345\ns1002,Li,Wei,,555\n")
    due = datetime(2026, 10, 5, 21, 59, tzinfo=timezone.utc)
    monkeypatch.setattr(late, "due_date", lambda assignment: due)
    download = _zip(tmp_path, {
        "smithjane_12345_67890_02_absolute.ipynb": (2026, 11, 1, 9, 0, 0),  # by user id
        "weili_LATE_777_67892_02_absolute-1.ipynb": (2026, 11, 1, 9, 0, 0),  # by name; uploaded twice
        "doejohn_LATE_999_67893_02_absolute.ipynb": (2026, 11, 1, 9, 0, 0),  # not on the roster
    })  # fmt: skip
    assert import_submissions(download, roster=roster).imported == ["doejohn", "s1001", "s1002"]
    assert _submitted(course) == [f"{s}/02_absolute/02_absolute.ipynb" for s in ("doejohn", "s1001", "s1002")]
    err = capsys.readouterr().err
    assert "no roster entry for doejohn (Canvas 999) -> doejohn (the name as id)" in err
    assert "s1002/02_absolute: Canvas: LATE (time not in the download: 1 s after the due date)" in err
    assert late.read_timestamp(course / "submitted" / "s1002" / "02_absolute") == due + timedelta(seconds=1)
    assert (
        late.read_timestamp(course / "submitted" / "s1001" / "02_absolute") is None
    )  # on time, time unknown


def test_import_takes_a_moodle_download_as_it_comes(tmp_path, monkeypatch, capsys):
    """Moodle: a folder <Full Name>_<participant id>_assignsubmission_file_ per student (or that prefix on each
    file); the entry times are the stored files', read as this machine's local time (DOS times have no zone)."""
    course = tmp_path / "course"
    monkeypatch.setenv("POSREF_COURSE_DIR", str(course))
    download = _zip(tmp_path, {
        "Jane Smith_123456_assignsubmission_file_/02_absolute.ipynb": (2026, 10, 5, 20, 0, 0),
        "Jane Smith_123456_assignsubmission_onlinetext_/onlinetext.html": (2026, 10, 5, 20, 0, 0),
        "Anna-Lena Müller_123457_assignsubmission_file_02_absolute (1).ipynb": (2026, 10, 6, 23, 30, 0),
    })  # fmt: skip
    assert import_submissions(download, "02_absolute").imported == ["anna_lena_müller", "jane_smith"]
    assert _submitted(course) == [
        "anna_lena_müller/02_absolute/02_absolute.ipynb", "jane_smith/02_absolute/02_absolute.ipynb"
    ]  # fmt: skip
    folder = course / "submitted" / "anna_lena_müller" / "02_absolute"
    assert late.read_timestamp(folder) == datetime(2026, 10, 6, 23, 30).astimezone(timezone.utc)  # local time
    assert "Jane Smith (Moodle 123456) -> jane_smith (the name as id)" in capsys.readouterr().err


@pytest.mark.parametrize("bound", ["MAX_ENTRIES", "MAX_UNPACKED"])
def test_an_archive_beyond_the_bounds_is_refused_whole_before_anything_is_written(
    tmp_path, monkeypatch, bound
):
    """An archive was unpacked with no bound on its entries or size. The bounds are lowered here (a real one
    would be a 100,000-entry or 8 GiB archive); what a header declares is read before anything is written."""
    from autograder.intake import unpack

    course = tmp_path / "course"
    monkeypatch.setenv("POSREF_COURSE_DIR", str(course))
    monkeypatch.setattr(unpack, bound, 10 if bound == "MAX_ENTRIES" else 1000)
    files = [f"s{i}/02_absolute/02_absolute.ipynb" for i in range(6)]  # 6 students: 18 entries, 12 bytes
    if bound == "MAX_UNPACKED":
        files.append("big/02_absolute/02_absolute.ipynb")
    archive = _archive(tmp_path, files, "gztar")
    if bound == "MAX_UNPACKED":  # one entry of 1,001 bytes
        folder = tmp_path / "archive-content" / "big" / "02_absolute"
        (folder / "02_absolute.ipynb").write_text(" " * 1001)
        archive = Path(shutil.make_archive(str(tmp_path / "subs"), "gztar", tmp_path / "archive-content"))
    with pytest.raises(SystemExit, match="entries, .* MiB unpacked: more than an import takes"):
        import_submissions(archive)
    assert not (course / "submitted").exists()


def test_links_in_a_folder_import_are_refused_never_followed(tmp_path, monkeypatch, capsys):
    """A folder (not an archive) of a class or a Moodle download: a student folder that is a link to a classmate's,
    a notebook that is a link to a file of the instructor's, a Moodle participant folder that is a link. Each was
    copied (or followed) into the course."""
    from autograder import cli

    course = tmp_path / "course"
    monkeypatch.setenv("POSREF_COURSE_DIR", str(course))
    secret = tmp_path / "secret.txt"
    secret.write_text("the instructor's")
    plain = tmp_path / "plain"
    (plain / "alice" / "02_absolute").mkdir(parents=True)
    (plain / "alice" / "02_absolute" / "02_absolute.ipynb").write_text("{}")
    (plain / "mallory").symlink_to(plain / "alice")
    (plain / "eve" / "02_absolute").mkdir(parents=True)
    (plain / "eve" / "02_absolute" / "02_absolute.ipynb").symlink_to(secret)
    with pytest.raises(SystemExit, match="could not import 2: eve/02_absolute, mallory/02_absolute"):
        cli.main(["import", str(plain)])
    err = capsys.readouterr().err
    assert "could not import eve/02_absolute: '02_absolute.ipynb' is a link" in err
    assert "could not import mallory/02_absolute: its folder is a link" in err
    assert _submitted(course) == ["alice/02_absolute/02_absolute.ipynb"]
    moodle = tmp_path / "moodle"
    (moodle / "Ann Lee_1_assignsubmission_file_").mkdir(parents=True)
    (moodle / "Ann Lee_1_assignsubmission_file_" / "02_absolute.ipynb").symlink_to(secret)
    (moodle / "Bo Kim_2_assignsubmission_file_").symlink_to(tmp_path)
    (moodle / "Cy Fox_3_assignsubmission_file_02_absolute.ipynb").symlink_to(secret)
    with pytest.raises(SystemExit, match="could not import 3"):
        cli.main(["import", str(moodle), "--assignment", "02_absolute"])
    err = capsys.readouterr().err
    for who in ["Ann Lee (Moodle 1): '02_absolute.ipynb'", "Bo Kim (Moodle 2): 'Bo Kim_2_assignsubmission_file_'",
                "Cy Fox (Moodle 3): '02_absolute.ipynb'"]:  # fmt: skip
        assert f"could not import {who} is a link: send the file itself" in err, err
    assert "the instructor's" not in "".join(p.read_text() for p in (course / "submitted").rglob("*.ipynb"))


def test_a_submission_is_read_once_into_the_facts_grading_takes(tmp_path, monkeypatch):
    """``Submission.read``: the files a worker is sent, their fingerprint (the one export compares with the folder:
    the same digest, or every graded student would read 'imported again after it was graded'), the hand-in time
    and how late it is; a folder that is no submission refused as import refuses it."""
    course = tmp_path / "course"
    monkeypatch.setenv("POSREF_COURSE_DIR", str(course))
    folder = course / "submitted" / "alice" / "02_absolute"
    (folder / "data" / "deep").mkdir(parents=True)
    (folder / "02_absolute.ipynb").write_text('{"cells": []}')
    (folder / "data" / "deep" / "table.csv").write_bytes(b"\x00\x01 binary")
    (folder / "notes é.txt").write_text("not ASCII")
    handed_in, due = (
        datetime(2026, 10, 6, 1, 30, tzinfo=timezone.utc),
        datetime(2026, 10, 5, tzinfo=timezone.utc),
    )
    late.write_timestamp(folder, handed_in)
    submission = Submission.read("alice", "02_absolute", {"02_absolute.ipynb"}, due)
    assert dict(submission.files) == {
        p.relative_to(folder).as_posix(): p.read_bytes() for p in folder.rglob("*") if p.is_file()
    }
    assert submission.fingerprint == fingerprint(folder)
    assert (submission.submitted, submission.seconds_late) == (handed_in, 25.5 * 3600)
    assert Submission.read("alice", "02_absolute", set(), None).seconds_late == 0  # no due date: never late
    with pytest.raises(TypeError):
        submission.files["02_absolute.ipynb"] = b"changed"  # the value is the submission as it was read
    (folder / "data" / "other.ipynb").symlink_to(folder / "02_absolute.ipynb")
    with pytest.raises(Refused, match="is a link"):
        Submission.read("alice", "02_absolute", {"02_absolute.ipynb"}, due)
    with pytest.raises(ValueError, match="is not a student id"):
        Submission.read("../bob", "02_absolute", set(), None)
