"""Grades back to the course site (autograder/grading/site_files.py): a class imported from a Canvas and a Moodle
download, graded, exported; each site's file read back by the rules its importer's code follows (Canvas:
app/models/gradebook_importer.rb; Moodle: mod/assign/feedback/offline/importgradeslib.php and locallib.php), its
rows matched to students through the course's record of site users (site_users.json).

The class is graded once (the demo assignment; the grading worker's reply is given: full marks), each test works
on a copy of it."""

from __future__ import annotations

import csv
import io
import json
import re
import shutil
import zipfile
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from conftest import demo_environment
from course_helpers import assert_safe_csv, full_marks, run_command

from autograder.grading import grade
from autograder.intake import site_users
from autograder.intake.submission import Submission
from autograder.intake.submissions import import_submissions

pytestmark = pytest.mark.slow  # the class is released and graded once for the file: about 15 s

DUE = datetime(2026, 10, 5, 21, 59, tzinfo=timezone.utc)
LATE_BY = timedelta(hours=30)  # Jane Doe's hand-in, by her Moodle file's time
NOTEBOOK = "positions.ipynb"


def _zip(path: Path, entries: dict[str, tuple[datetime, bytes]]) -> Path:
    """A course site's download: each entry's bytes, at its time as this machine's local time (a DOS time)."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, (when, data) in entries.items():
            archive.writestr(zipfile.ZipInfo(name, date_time=when.astimezone().timetuple()[:6]), data)
    return path


HUGE = bytes(40 * 2**20)  # a notebook over the bound on one submission (32 MiB): its import is refused


@pytest.fixture(scope="module")
def graded_class(released_demo, tmp_path_factory) -> Path:
    """The demo assignment, due ``DUE``: Canvas users 111 (smithjane, on time) and 222 (weili, LATE), Moodle
    participants 5001 (Jane Doe, ``LATE_BY`` late) and 5002 (Ann Lee, on time), graded with full marks (6
    points); dave is on the roster and handed in nothing. Refused at import: Canvas 333 (bigfile: a notebook
    over the bound), then, in a second download, Canvas 444 (another 'smithjane': that id is a roster student's)
    and weili again (over the bound: her graded submission stays)."""
    base = tmp_path_factory.mktemp("sites")
    course = Path(shutil.copytree(released_demo, base / "course"))
    released = (course / "release" / "positions" / NOTEBOOK).read_bytes()
    with pytest.MonkeyPatch.context() as mp:
        demo_environment(mp, course)
        mp.setattr(grade, "_APIS", {})
        from nbgrader.api import Gradebook

        with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
            gb.update_or_create_assignment("positions", duedate=DUE.replace(tzinfo=None))
            gb.add_student("dave", first_name="Dave", last_name="Null", email="dave@example.org")
        canvas = {"smithjane_111_1_positions.ipynb": (DUE, released), "weili_LATE_222_2_positions.ipynb": (DUE, released),
                  "bigfile_333_3_positions.ipynb": (DUE, HUGE)}  # fmt: skip
        moodle = {"Jane Doe_5001_assignsubmission_file_/positions.ipynb": (DUE + LATE_BY, released),
                  "Ann Lee_5002_assignsubmission_file_/positions.ipynb": (DUE - timedelta(hours=2), released)}  # fmt: skip
        for download in (_zip(base / "canvas.zip", canvas), _zip(base / "moodle.zip", moodle)):
            import_submissions(download, "positions")
        for folder in sorted((course / "submitted").glob("*/positions")):
            submission = Submission.read(folder.parent.name, "positions", {"positions.ipynb"}, DUE)
            grade.record_student(submission, "source", full_marks())
        again = {
            "smithjane_444_4_positions.ipynb": (DUE, released),
            "weili_222_5_positions.ipynb": (DUE, HUGE),
        }
        assert import_submissions(_zip(base / "again.zip", again), "positions").imported == []
    return course


@pytest.fixture
def course(graded_class, tmp_path, monkeypatch) -> Path:
    copy = tmp_path / "course"
    shutil.copytree(graded_class, copy)
    demo_environment(monkeypatch, copy)
    monkeypatch.setattr(grade, "_APIS", {})
    return copy


# Canvas reads a column whose header holds one of these as a total (GradebookImporter::NON_ASSIGNMENT_COLUMN_HEADERS)
CANVAS_TOTALS = re.compile(
    "Current (Score|Points|Grade)|Final (Score|Points|Grade)|Override (Score|Grade|Status)"
)


def read_as_canvas(path: Path) -> tuple[str, list[tuple[str, str, str]]]:
    """The file as Canvas's GradebookImporter reads it: (the assignment column, [(ID, Student, grade)] of the rows
    it takes as students). Fails where Canvas would read it otherwise than as one assignment's grades."""
    text = path.read_text(encoding="utf-8")
    first = text.splitlines()[:3]

    def fields(separator: str) -> int:  # identify_delimiter: the same count on every first line, or none
        try:
            counts = {len(next(csv.reader([line], delimiter=separator, strict=True))) for line in first}
        except csv.Error:
            return 0
        return counts.pop() if len(counts) == 1 else 0

    assert fields(",") > fields(";")  # read with commas, not semicolons
    rows = list(csv.reader(io.StringIO(text), strict=True))
    header = rows[0]
    # row_has_student_headers?, update_column_count: Student, ID, SIS User ID, SIS Login ID: 5 student columns
    assert len(header) > 3 and "Student" in header[0] and "ID" in header[1]
    assert re.search(r"SIS\s+User\s+ID", header[2]) and re.search(r"SIS\s+Login\s+ID", header[3])
    assert "Section" in header[4]  # the last student column
    assignments = [h for h in header[5:] if not CANVAS_TOTALS.search(h)]
    assert len(assignments) == 1, header
    out = []
    for row in rows[1:]:
        assert len(row) == len(header)
        assert "Points Possible" not in row[0]  # else read as the assignments' points
        assert not all(re.fullmatch(r"\s*(Muted|Manual Posting.*)?\s*", c, re.I) for c in row)  # else skipped
        out.append((row[1], row[0], row[header.index(assignments[0])].strip()))
    return assignments[0], out


def read_as_moodle(path: Path) -> list[tuple[str, str, datetime, list[str]]]:
    """The file as Moodle's offline grading worksheet uploader reads it: [(participant id, grade, last modified,
    the row)] of the rows whose identifier it can take. Fails where it would refuse the file."""
    text = path.read_text(encoding="utf-8")
    rows = list(csv.reader(io.StringIO(text), strict=True))
    # PHP's fgetcsv takes a backslash as an escape: a field holding one would be read otherwise
    assert list(csv.reader(io.StringIO(text), escapechar="\\")) == rows
    header = rows[0]
    assert all(
        len(row) == len(header) for row in rows
    )  # csv_import_reader: else 'csvweirdcolumns', no import
    assert "Feedback comments" not in header  # an empty one would erase Moodle's comment
    identifier, grade_at, modified = (
        header.index(c) for c in ("Identifier", "Grade", "Last modified (grade)")
    )
    out = []
    for row in rows[1:]:
        participant = row[identifier]
        if not participant.startswith("Participant ") or not participant[len("Participant ") :].isdigit():
            assert participant == "", participant  # no identifier: the uploader skips the row
            continue
        out.append(
            (participant[len("Participant ") :], row[grade_at], datetime.fromisoformat(row[modified]), row)
        )
    return out


def _csv_grades(course: Path) -> dict[str, tuple[str, str]]:
    with open(course / "positions-grades.csv", newline="") as f:
        return {row["student"]: (row["score"], row["status"]) for row in csv.DictReader(f)}


def test_each_site_file_is_read_by_its_importers_rules_and_keyed_by_the_recorded_site_users(course):
    """Canvas's file by the Canvas user id, Moodle's by the participant id of this assignment, both as the course's
    record of site users gives them; the grade is the CSV's score (the late penalty taken off); a student who
    handed in nothing has a row in both, with the grade the instructor chose."""
    done = run_command("export", "positions")
    assert done.returncode == 0, done.stderr
    for name in ("grades", "canvas", "moodle"):
        assert f"wrote {course / f'positions-{name}.csv'}" in done.stdout
    users = site_users.recorded(course).users
    scores = _csv_grades(course)
    assert scores == {"smithjane": ("6", "graded"), "weili": ("5.94", "graded"), "jane_doe": ("4.2", "graded"),
                      "ann_lee": ("6", "graded"), "dave": ("", "not submitted"), "bigfile": ("", "could not import"),
                      "smithjane (Canvas 444)": ("", "could not import")}  # fmt: skip
    column, canvas = read_as_canvas(course / "positions-canvas.csv")
    assert column == "positions"
    by_id = {user_id: grade for user_id, _, grade in canvas if user_id}
    assert (
        {user_id: by_id[user_id] for user_id in ("111", "222")}
        == {
            user.split()[1]: scores[entry["student"]][0]
            for user, entry in users.items()
            if user.startswith("Canvas ")
        }
        == {"111": "6", "222": "5.94"}
    )
    assert (by_id["333"], by_id["444"]) == ("", "")  # refused at import: their download's user ids, no grade
    # the students Canvas knows by no id: by name ("Last, First" from the roster), for its import page to match
    assert sorted((name, grade) for user_id, name, grade in canvas if not user_id) == [
        ("Null, Dave", ""), ("ann_lee", "6"), ("jane_doe", "4.2")
    ]  # fmt: skip
    moodle = read_as_moodle(course / "positions-moodle.csv")
    by_participant = {pid: grade for pid, grade, _, _ in moodle}
    assert by_participant == {user.split()[2]: scores[entry["student"]][0] for user, entry in users.items()
                              if user.startswith("Moodle positions ")} == {"5001": "4.2", "5002": "6"}  # fmt: skip
    assert all(abs(when - datetime.now(timezone.utc)) < timedelta(hours=1) for _, _, when, _ in moodle)
    with open(course / "positions-moodle.csv", newline="") as f:
        everyone = {row["Student ID"]: row for row in csv.DictReader(f)}
    assert sorted(everyone) == sorted(scores)  # every student a row, those without an identifier too
    assert everyone["bigfile"]["Status"].startswith("could not import: the import of ")
    assert (everyone["dave"]["Grade"], everyone["dave"]["Status"]) == ("", "not submitted")
    assert everyone["dave"]["Email address"] == "dave@example.org"
    # the instructor's choice for a student who handed in nothing, once the due date has passed
    assert run_command("export", "positions", "--missing-grade", "0").returncode == 0
    assert [
        grade for _, name, grade in read_as_canvas(course / "positions-canvas.csv")[1] if name == "Null, Dave"
    ] == ["0"]


def test_a_canvas_column_is_the_instructors_and_one_canvas_would_read_otherwise_is_refused(course):
    """Canvas matches an assignment column by the id in 'Title (id)', else by title, else makes a new assignment; a
    total's name, a student column's or a formula would not be this assignment's column."""
    assert (
        run_command("export", "positions", "--canvas-column", "Notebook 1: positions (4711)").returncode == 0
    )
    assert read_as_canvas(course / "positions-canvas.csv")[0] == "Notebook 1: positions (4711)"
    for column in ("Final Score", "Section", "=1+1", " "):
        done = run_command("export", "positions", "--canvas-column", column)
        assert done.returncode == 1 and "--canvas-column" in done.stderr, column


HOSTILE = ['=HYPERLINK("http://x","y")', "Points Possible", "Muted", "a;=1", 'Bo "Tables" \\', "x\\", "a\nb",
           "@SUM(A1)", "ann\r\n=1", "－1"]  # fmt: skip


def test_what_a_student_controls_is_inert_in_every_site_file(course):
    """A name is the student's (their site profile, the download's file names): no cell of either site file reads
    as a formula, none breaks a row for Canvas (its 'Points Possible' or 'Muted' rows) or for PHP's fgetcsv (a
    backslash before a quote), and the files stay one row per student."""
    path = course / site_users.FILE
    record = json.loads(path.read_text())
    for i, name in enumerate(HOSTILE):
        record["users"][f"Canvas {900 + i}"] = {"student": f"s{i}", "name": name, "assignment": "positions",
                                                "since": "2026-10-06T08:00:00+00:00"}  # fmt: skip
        record["users"][f"Moodle positions {9000 + i}"] = {**record["users"][f"Canvas {900 + i}"]}
    path.write_text(json.dumps(record))
    assert run_command("export", "positions").returncode == 0
    for site in ("canvas", "moodle"):
        assert_safe_csv(course / f"positions-{site}.csv")
    canvas = {user_id: name for user_id, name, _ in read_as_canvas(course / "positions-canvas.csv")[1]}
    moodle = {pid: row for pid, _, _, row in read_as_moodle(course / "positions-moodle.csv")}
    for i, name in enumerate(HOSTILE):
        assert canvas[f"{900 + i}"] and moodle[f"{9000 + i}"][-1] == f"s{i}", name
    assert canvas["901"] == "s1" and canvas["902"] == "s2"  # never read as Canvas's points or muted row


def test_a_student_whose_import_was_refused_has_a_row_saying_why(course):
    """A notebook over the size bound, or a second site user of a roster student's name, left the student out of
    the CSV (and so of every site file): import keeps what it refused (refusals/<assignment>.json), export reads it; a
    student whose earlier submission stays keeps its grade, with the refusal said; a later import clears it."""
    assert run_command("export", "positions").returncode == 0
    with open(course / "positions-grades.csv", newline="") as f:
        rows = {row["student"]: row for row in csv.DictReader(f)}
    bound = "more than a submission may hold (32 MiB)"
    assert rows["bigfile"]["status"] == "could not import" and bound in rows["bigfile"]["reason"]
    assert (
        "its name as id, 'smithjane', is another roster student's" in rows["smithjane (Canvas 444)"]["reason"]
    )
    weili = rows["weili"]
    assert (weili["status"], weili["score"]) == ("graded", "5.94")
    assert (
        weili["reason"].startswith("the import of ")
        and "this row is the earlier submission's" in weili["reason"]
    )
    assert bound in weili["reason"]
    # handed in again, within the bound: the refusal is gone
    released = (course / "release" / "positions" / NOTEBOOK).read_bytes()
    import_submissions(
        _zip(course.parent / "fixed.zip", {"bigfile_333_6_positions.ipynb": (DUE, released)}), "positions"
    )
    assert "bigfile" not in json.loads((course / "refusals" / "positions.json").read_text())["refused"]
    assert run_command("export", "positions").returncode == 0
    assert _csv_grades(course)["bigfile"] == ("", "not graded")


def _penalty(course: Path, student: str) -> tuple[float | None, float | None, timedelta | None]:
    """The record's late penalty, and the gradebook's with the extension nbgrader counts it from."""
    from nbgrader.api import Gradebook

    (nb,) = json.loads((course / "records" / "positions" / f"{student}.json").read_text())["notebooks"]
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        stored = gb.find_submission_notebook("positions", "positions", student).late_submission_penalty
        extension = gb.find_submission("positions", student).extension
    return nb["late_penalty"], stored, extension


def test_an_extension_takes_the_penalty_away_inside_it_and_counts_it_from_its_end_after(course):
    """A student granted more time had no way to get it but a hand-edited timestamp. `extend` keeps it in the
    course's extensions.json; the penalty is 0 inside the extension and counted from its end after, in the record
    and the gradebook at once (nothing graded again), and export shows it. Jane Doe handed in 30 h late: 6 points,
    1% per started hour."""
    assert _penalty(course, "jane_doe") == (pytest.approx(1.8), pytest.approx(1.8), None)
    for hours, late_hours, left in [(40, "", 6), (20, "10.00", 6 - 0.6)]:
        done = run_command("extend", "jane_doe", "positions", "--hours", str(hours))
        assert done.returncode == 0, done.stderr
        assert (
            f"jane_doe: positions due {DUE + timedelta(hours=hours):%Y-%m-%d %H:%M} UTC ({hours} h after"
            in done.stdout
        )
        assert "without grading it again" in done.stdout
        penalty = 6 - left or None
        assert _penalty(course, "jane_doe") == (
            pytest.approx(penalty),
            pytest.approx(penalty),
            timedelta(hours=hours),
        )
        assert run_command("export", "positions").returncode == 0
        with open(course / "positions-grades.csv", newline="") as f:
            row = {r["student"]: r for r in csv.DictReader(f)}["jane_doe"]
        assert (row["extension_hours"], row["hours_late"], float(row["score"])) == (
            str(hours),
            late_hours,
            pytest.approx(left),
        )
        (moodle,) = [
            grade for pid, grade, _, _ in read_as_moodle(course / "positions-moodle.csv") if pid == "5001"
        ]
        assert float(moodle) == pytest.approx(left)
    # an extension edited by hand: export counts the penalty again (0.5 h late: one started hour)
    extensions = course / "extensions.json"
    data = json.loads(extensions.read_text())
    data["extensions"]["positions"]["jane_doe"]["hours"] = 29.5
    extensions.write_text(json.dumps(data))
    assert run_command("export", "positions").returncode == 0
    assert _csv_grades(course)["jane_doe"] == ("5.94", "graded")
    assert _penalty(course, "jane_doe")[:2] == (pytest.approx(0.06), pytest.approx(0.06))
    # grading again counts from the extension too; taking it back restores the whole penalty
    submission = Submission.read("jane_doe", "positions", {"positions.ipynb"}, DUE)
    assert submission.extension == timedelta(hours=29.5) and submission.due == DUE + timedelta(hours=29.5)
    grade.record_student(submission, "source", full_marks())
    assert _penalty(course, "jane_doe") == (pytest.approx(0.06), pytest.approx(0.06), timedelta(hours=29.5))
    assert run_command("extend", "jane_doe", "positions", "--hours", "0").returncode == 0
    assert _penalty(course, "jane_doe") == (pytest.approx(1.8), pytest.approx(1.8), None)
    assert "jane_doe" not in json.loads(extensions.read_text())["extensions"].get("positions", {})


def test_an_extension_still_running_is_no_missing_grade_and_a_bad_one_is_refused(course):
    """dave handed in nothing: with --missing-grade 0 he gets 0 once his due date has passed, not while his
    extension runs; extend refuses what is not an extension, and writes nothing then. The assignment's due date is
    set a day before now (export compares with the clock): with DUE and 3000 hours, as this test had it, the
    extension ran out on 2027-02-07 and the test failed from then on."""
    from nbgrader.api import Gradebook

    now = datetime.now(timezone.utc).replace(second=0, microsecond=0)
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        gb.update_or_create_assignment("positions", duedate=(now - timedelta(days=1)).replace(tzinfo=None))

    def dave() -> dict[str, str]:
        assert run_command("export", "positions", "--missing-grade", "0").returncode == 0
        with open(course / "positions-moodle.csv", newline="") as f:
            return {row["Student ID"]: row for row in csv.DictReader(f)}["dave"]

    done = run_command("extend", "dave", "positions", "--hours", "48")
    assert done.returncode == 0 and "no graded record yet" in done.stdout, done.stderr
    until = now + timedelta(days=1)
    row = dave()
    assert (row["Grade"], row["Status"]) == ("", f"not submitted: due {until:%Y-%m-%d %H:%M} UTC: not yet")
    before = (course / "extensions.json").read_text()
    for args, message in [
        (("dave", "positions", "--hours", "-1"), "not from 0 to"),
        (("dave", "positions", "--hours", "nan"), "not a number of hours"),
        (("dave", "positions", "--hours", "100000"), "not from 0 to"),
        (("../dave", "positions", "--hours", "1"), "is not a student id"),
        (("dave", "positionz", "--hours", "1"), "no assignment 'positionz'"),
    ]:
        done = run_command("extend", *args)
        assert done.returncode == 1 and message in done.stderr, (args, done.stderr)
    assert (course / "extensions.json").read_text() == before
    assert run_command("extend", "dave", "positions", "--hours", "0").returncode == 0
    assert dave()["Grade"] == "0"  # his due date, without the extension, has passed
