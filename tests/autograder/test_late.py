"""Late work (autograder/intake/late.py, grading/penalty.py): the time import records, the due date, nbgrader's
penalty from the score of record, and export showing both. Real nbgrader (release, its autograde API, its
AssignLatePenalties); the score of record is the worker's reply, given here."""

from __future__ import annotations

import math
import tarfile
from datetime import datetime, timedelta, timezone

import nbformat
import pytest
from course_helpers import REPO, gradebook_copy

from autograder import course
from autograder.grading import grade
from autograder.grading.export import export
from autograder.grading.penalty import PenaltyPerHour
from autograder.grading.record import CellResult, Record
from autograder.intake.late import due_date, read_timestamp
from autograder.intake.submission import Submission, fingerprint
from autograder.intake.submissions import import_submissions
from autograder.release.assignment import release

DUE = datetime(2026, 10, 5, 21, 59, tzinfo=timezone.utc)
SOURCE = REPO / "autograder" / "demo" / "source" / "positions" / "positions.ipynb"


def _scored() -> dict:
    """A worker's reply: every test cell of the demo notebook passed (6 points)."""
    cells = [
        CellResult(c.metadata.nbgrader["grade_id"], float(c.metadata.nbgrader["points"]), 0.0)
        for c in nbformat.read(SOURCE, as_version=4).cells
        if c.metadata.get("nbgrader", {}).get("grade") and not c.metadata.nbgrader.get("solution")
    ]
    for cell in cells:
        cell.score, cell.message = cell.points, "passed"
    record = Record("positions.ipynb", "graded", cells=cells, sandbox="bubblewrap").to_json()
    return {"notebooks": [record], "seconds": 1.0, "worker": "here"}


@pytest.fixture
def course_with_due_date(tmp_path, monkeypatch, empty_gradebook):
    """The demo assignment released in a fresh course whose configuration gives it a due date."""
    home = tmp_path / "course"
    monkeypatch.setenv("POSREF_COURSE_DIR", str(home))
    monkeypatch.setenv("POSREF_SOURCE_DIR", "autograder/demo/source")
    monkeypatch.setenv("POSREF_RELEASE_DIR", str(tmp_path / "release"))
    monkeypatch.setattr(grade, "_APIS", {})
    gradebook_copy(home, empty_gradebook).close()
    real = course.config

    def config():
        loaded = real()
        loaded.CourseDueDates.due_dates = {"positions": DUE.isoformat()}
        return loaded

    monkeypatch.setattr(course, "config", config)
    release("positions")
    return home, tmp_path / "release" / "positions" / "positions.ipynb"


def _tar_of(tmp_path, released, students: dict[str, datetime]):
    """A tar of ``<student>/positions/positions.ipynb``, each entry with its time."""
    path = tmp_path / "class.tar.gz"
    with tarfile.open(path, "w:gz") as archive:
        for student, when in students.items():
            info = archive.gettarinfo(released, f"{student}/positions/positions.ipynb")
            info.mtime = when.timestamp()
            with open(released, "rb") as f:
                archive.addfile(info, f)
    return path


@pytest.mark.filterwarnings("ignore:Object of type <Submitted")
def test_a_late_submission_loses_the_configured_penalty_of_its_score_of_record(
    tmp_path, course_with_due_date
):
    """nbgrader's AssignLatePenalties runs inside its autograde, while PendingScores leaves every grade empty: its
    penalty came from a score of 0, so a late submission kept its full score."""
    home, released = course_with_due_date
    late_by = timedelta(hours=25, minutes=30)
    archive = _tar_of(tmp_path, released, {"ontime": DUE - timedelta(minutes=1), "tardy": DUE + late_by})
    assert import_submissions(archive).imported == ["ontime", "tardy"]
    for student, when in [("ontime", DUE - timedelta(minutes=1)), ("tardy", DUE + late_by)]:
        folder = home / "submitted" / student / "positions"
        assert read_timestamp(folder) == when  # nbgrader's timestamp.txt, from the archive's entry time
        submission = Submission.read(student, "positions", {"positions.ipynb"}, due_date("positions"))
        assert (submission.submitted, submission.fingerprint) == (when, fingerprint(folder))
        grade.record_student(submission, "source", _scored())
    # 1% of the score per started hour: 26 started hours of 6 points
    expected = 6 * 0.01 * math.ceil(late_by.total_seconds() / 3600)
    with gradebook_copy(home, home / "gradebook.db") as gb:
        assert gb.find_assignment("positions").duedate == DUE.replace(tzinfo=None)
        tardy = gb.find_submission_notebook("positions", "positions", "tardy")
        assert tardy.score == 6 and tardy.late_submission_penalty == pytest.approx(expected)
        assert not gb.find_submission_notebook("positions", "positions", "ontime").late_submission_penalty
    rows = {row["student"]: row for row in export("positions")}
    assert (rows["tardy"]["score"], rows["tardy"]["late_penalty"]) == (f"{6 - expected:g}", f"{expected:g}")
    assert rows["tardy"]["submitted"] == f"{DUE + late_by:%Y-%m-%d %H:%M:%S} UTC"
    assert rows["tardy"]["hours_late"] == "25.50"
    assert (rows["ontime"]["score"], rows["ontime"]["late_penalty"], rows["ontime"]["hours_late"]) == (
        "6",
        "",
        "",
    )
    # --timestamp instead of the archive's times; imported again, so not graded until graded again
    import_submissions(archive, timestamp=DUE + timedelta(hours=80))
    assert read_timestamp(home / "submitted" / "ontime" / "positions") == DUE + timedelta(hours=80)
    assert export("positions")[0]["status"] == "not graded"


@pytest.mark.parametrize(
    "hours, score, expected",
    [
        (0.0, 6.0, None),
        (0.01, 6.0, 0.06),
        (1.0, 6.0, 0.06),
        (1.01, 6.0, 0.12),
        (71.9, 10.0, 7.2),
        (72.0, 3.0, 3.0),
    ],
)
def test_the_penalty_per_started_hour_and_zero_from_72_hours(hours, score, expected):
    penalty = PenaltyPerHour().late_submission_penalty("s", score, hours * 3600)
    assert penalty == (None if expected is None else pytest.approx(expected))


@pytest.mark.parametrize(
    "content", [b"yesterday-ish", b"", b"\xff\xfe2026-10-05", b"2026-10-05 " + b"9" * 10_000, "dir", "link"]
)
def test_a_timestamp_file_that_cannot_be_read_is_a_clear_error_for_that_submission(tmp_path, content):
    """nbgrader's exchange (or a person) left a timestamp.txt that is no time: a SystemExit from read_timestamp
    ended `import`, `autograde` and `export` for the whole class."""
    folder = tmp_path / "submitted" / "sam" / "02_absolute"
    folder.mkdir(parents=True)
    if content == "dir":
        (folder / "timestamp.txt").mkdir()
    elif content == "link":
        (folder / "timestamp.txt").symlink_to("/etc/hostname")
    else:
        (folder / "timestamp.txt").write_bytes(content)
    with pytest.raises(ValueError, match="submitted/sam/02_absolute/timestamp.txt cannot be read as a time"):
        read_timestamp(folder)
