"""The grade files a course site takes back: Canvas's Gradebook import CSV and Moodle's offline grading worksheet,
one row per student of ``export``'s rows, keyed by the site users the course recorded (``site_users.json``).

Each file follows what its site's importer reads (the importer's code, named below, not only its guides):

- Canvas (``app/models/gradebook_importer.rb`` in instructure/canvas-lms): a header ``Student, ID, SIS User ID,
  SIS Login ID, Section, <assignment>``: the first column must hold "Student", the second "ID", the last student
  column "Section"; every column after them that is not a total ("Current Score", "Final Grade"...) is an
  assignment, matched by the id in ``Title (id)``, else by its title, else created as a new assignment. A row is
  matched to a Canvas user by ``ID`` (the Canvas user id, which the download's file names carry and the record
  keeps), else by SIS ids, else by name (``Student`` equal to the user's name or sortable name "Last, First"); a row
  whose first cell holds "Points Possible" sets the assignments' points, and one of blanks and "Muted" only is
  skipped, so no student row may look like either. A grade is the cell's text: empty or "-" is no grade, and an
  empty cell where Canvas holds a grade is a change that the import page shows before it is applied. No
  "Points Possible" row is written: for an assignment Canvas has, it would change its points.
- Moodle (``mod/assign/feedback/offline/importgradeslib.php`` and ``locallib.php``, the columns as
  ``mod/assign/gradingtable.php`` downloads them, the headers ``mod/assign/lang/en/assign.php``'s): the uploader
  needs the columns "Identifier", "Grade" and "Last modified (grade)" by these exact names (the strings of the
  language Moodle speaks to the instructor who uploads), of the other columns only those named as a feedback
  plugin's field ("Feedback comments": left out, since an empty one would erase a comment Moodle has), and refuses
  the whole file when a row has more or fewer fields than the header. The identifier is "Participant " and the
  participant id that Moodle draws per assignment (the download's folder names carry it); a row with none is
  skipped. A grade is skipped when empty, unchanged, above the assignment's maximum, or older than the grade
  Moodle has (by "Last modified (grade)", which is the export's time here). PHP's ``fgetcsv`` reads a backslash
  before a quote as an escape: no field holds a backslash.

Every field is spreadsheet-safe (``spreadsheet.spreadsheet_safe``: no cell reads as a formula under any separator)
and on one line. What the download never tells is left empty, and the README says where to find it: Canvas's
assignment id (``--canvas-column``), SIS ids, and the participant id of a Moodle user who did not hand in this
assignment.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path

from autograder import course
from autograder.grading.spreadsheet import spreadsheet_safe, write_csv
from autograder.intake import extensions, late, refusals, site_users

CANVAS = ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"]
# Canvas reads a column whose header holds one of these as a total, never as an assignment
CANVAS_TOTALS = re.compile(
    "Current Score|Current Points|Current Grade|Final Score|Final Points|Final Grade|Override Score|"
    "Override Grade|Override Status"
)
MOODLE = ["Identifier", "Full name", "Email address", "Status", "Grade", "Maximum Grade", "Last modified (grade)",
          "Student ID"]  # fmt: skip
PARTICIPANT = "Participant "  # Moodle's 'hiddenuser' string, before the participant id
MISSING = {"empty": None, "0": 0.0}  # --missing-grade: what a student who handed in nothing gets


@dataclass
class Standing:
    """One student's grade for a site: ``grade`` (None: none to give), out of ``max_score``, and why."""

    student: str
    grade: float | None
    max_score: float
    status: str
    reason: str


def standings(
    rows: list[dict], missing: str, due_of: Callable[[str], datetime | None], now: datetime
) -> list[Standing]:
    """Per student of ``export``'s rows: the sum of the notebooks' scores (the late penalty taken off) when every
    notebook is graded; ``MISSING[missing]`` when none was handed in and the student's due date (``due_of``, their
    extension included) has passed, or there is none; otherwise no grade (could not grade, not graded yet, refused
    at import: never a 0)."""
    by_student: dict[str, list[dict]] = {}
    for row in rows:
        by_student.setdefault(row["student"], []).append(row)
    out = []
    for student, own in by_student.items():
        statuses = list(dict.fromkeys(r["status"] for r in own))
        reason = "; ".join(dict.fromkeys(r["reason"] for r in own if r["reason"]))
        top = sum(float(r["max_score"] or 0) for r in own)
        grade = None
        if statuses == ["graded"]:
            grade = sum(float(r["score"]) for r in own)
        elif statuses == ["not submitted"]:
            due = due_of(student)
            if due is not None and now < due:
                reason = f"due {due:%Y-%m-%d %H:%M} UTC: not yet"
            else:
                grade = MISSING[missing]
        out.append(Standing(student, grade, top, ", ".join(statuses), reason))
    return out


def _number(value: float | None) -> str:
    """A grade as both importers read it: at most two decimals, a point, no exponent; empty for none."""
    if value is None:
        return ""
    text = f"{value:.2f}".rstrip("0").rstrip(".")
    return "0" if text == "-0" else text


def _field(value: object) -> str:
    """``spreadsheet_safe``, on one line and without a backslash (PHP's ``fgetcsv`` escape)."""
    return spreadsheet_safe(value).replace("\n", " ").replace("\\", "/")


def canvas_column_problem(column: str) -> str | None:
    """None where ``column`` can head Canvas's assignment column, else what is wrong with it."""
    if not column.strip():
        return "an empty column name"
    if column in CANVAS or CANVAS_TOTALS.search(column) or column != _field(column):
        return (
            f"{column!r} is not an assignment column Canvas reads (a student column, a total, or text a spreadsheet "
            "could read as a formula): give the assignment's title, or 'Title (id)' as Canvas's own export names it"
        )
    return None


def _people() -> dict[str, dict]:
    """The gradebook's students: id -> first_name, last_name, email (the instructor's roster)."""
    if not course.has_gradebook():
        return {}
    with course.gradebook() as gb:
        return {s.id: {"first": s.first_name or "", "last": s.last_name or "", "email": s.email or ""}
                for s in gb.students}  # fmt: skip


def _canvas_name(student: str, person: dict, site_name: str) -> str:
    """The ``Student`` cell: Canvas's sortable name "Last, First" where the roster gives it (what Canvas matches a
    row without an id by), else the name the download gave, else the student id; never a cell Canvas reads as
    its "Points Possible" row or a "Muted" row."""
    name = f"{person['last']}, {person['first']}" if person.get("last") and person.get("first") else site_name
    if (
        not name.strip()
        or "Points Possible" in name
        or re.fullmatch(r"\s*(Muted|Manual Posting.*)?\s*", name, re.I)
    ):
        return student
    return name


def _site_users(
    assignment: str,
) -> tuple[set[str], dict[str, list[tuple[str, str]]], dict[str, list[tuple[str, str]]]]:
    """The sites the course has users of, and per student (as export's rows name them) the Canvas users and this
    assignment's Moodle participants: (id, name on the site), from the record of site users, else from a refused
    import of this assignment (its download named the user)."""
    record = site_users.recorded(course.course_dir())
    sites: set[str] = set()
    canvas: dict[str, list[tuple[str, str]]] = {}
    moodle: dict[str, list[tuple[str, str]]] = {}

    def add(key: str, student: str, name: str) -> None:
        site, *rest = key.split(" ")
        sites.add(site)
        if site == "Canvas":
            canvas.setdefault(student, []).append((rest[0], name))
        elif site == "Moodle" and rest[0] == assignment:
            moodle.setdefault(student, []).append((rest[1], name))

    for key, entry in sorted(record.users.items()):
        add(key, entry["student"], entry["name"])
    for entry in refusals.read(course.course_dir(), assignment).values():
        who = entry["student"] or entry["name"]
        if entry["site_user"] and entry["site_user"] not in record.users and who not in {**canvas, **moodle}:
            add(entry["site_user"], who, entry["name"])
    return sites, canvas, moodle


def write(
    assignment: str,
    rows: list[dict],
    folder: Path,
    *,
    missing: str = "empty",
    canvas_column: str | None = None,
    now: datetime | None = None,
) -> list[Path]:
    """``<assignment>-canvas.csv`` and ``<assignment>-moodle.csv`` in ``folder``, each for a site the course has
    users of, one row per student of ``rows`` (per site user where the record gives the student several).
    Returns the files written; ValueError where the record of site users or of refused imports cannot be read."""
    now = now or datetime.now(timezone.utc)
    sites, canvas, moodle = _site_users(assignment)
    people = _people()
    due, extended = late.due_date(assignment), extensions.read(course.course_dir()).get(assignment, {})
    grades = standings(
        rows,
        missing,
        lambda s: extensions.due_for(due, timedelta(hours=extended.get(s, {}).get("hours", 0))),
        now,
    )
    written = []
    if "Canvas" in sites:
        lines = [
            [_canvas_name(g.student, people.get(g.student, {}), name), user, "", "", "", _number(g.grade)]
            for g in grades
            for user, name in canvas.get(g.student) or [("", "")]
        ]
        written.append(folder / f"{assignment}-canvas.csv")
        write_csv(written[-1], [*CANVAS, canvas_column or assignment], lines, _field)
    if "Moodle" in sites:
        stamp = now.astimezone(timezone.utc).isoformat(timespec="seconds")
        lines = []
        for g in grades:
            person = people.get(g.student, {})
            roster_name = " ".join(p for p in (person.get("first"), person.get("last")) if p)
            status = f"{g.status}: {g.reason}" if g.reason else g.status
            lines += [[f"{PARTICIPANT}{user}" if user else "", name or roster_name or g.student,
                       person.get("email", ""), status, _number(g.grade), _number(g.max_score), stamp, g.student]
                      for user, name in moodle.get(g.student) or [("", "")]]  # fmt: skip
        written.append(folder / f"{assignment}-moodle.csv")
        write_csv(written[-1], MOODLE, lines, _field)
    return written
