"""``python -m autograder export``: one CSV row per student and notebook, telling "0" from "could not grade".

The rows come from the JSON records of the score of record (``records/<assignment>/<student>.json``), the
students from the gradebook and from ``submitted/``; the CSV is safe to open in a spreadsheet. Late work: the
submission's time (nbgrader's ``timestamp.txt``), hours late and the late penalty nbgrader assigned from the
score of record (``penalty.py``); ``score`` is the score after the penalty, as in ``nbgrader export``.
``edition``: the edition each notebook was graded in (a class mixes English, zh-TW and zh-CN submissions), from
its record.
"""

from __future__ import annotations

import json
import sys
from datetime import datetime, timedelta
from pathlib import Path

import nbformat

from autograder.course import (
    course_dir,
    gradebook,
    printable,
    require_assignment,
    source_dir,
    student_id_problem,
)
from autograder.editions.notebook import EDITIONS, ENGLISH
from autograder.grading import penalty
from autograder.grading.spreadsheet import write_csv
from autograder.intake import extensions, late, refusals, site_users
from autograder.intake.submission import fingerprint

FIELDS = [
    "student",
    "notebook",
    "edition",
    "score",
    "max_score",
    "late_penalty",
    "submitted",
    "extension_hours",
    "hours_late",
    "status",
    "reason",
]


def _students(course: Path, assignment: str, refused: dict[str, dict]) -> set[str]:
    """Every student the course knows: the gradebook's, those with a folder in ``submitted/`` or a record of the
    assignment, the record of site users' (a student who handed in nothing of this assignment too; a record that
    cannot be read: the site files are not written, and the command says why), and those whose latest import of it
    was refused (``refused``: by id, else as import named them)."""
    with gradebook() as gb:
        students = {s.id for s in gb.students}
    submitted = course / "submitted"
    if submitted.is_dir():
        students |= {p.name for p in submitted.iterdir() if p.is_dir() and p.name[:1] != "."}
    students |= {p.stem for p in (course / "records" / assignment).glob("*.json")}
    try:
        students |= {user["student"] for user in site_users.recorded(course).users.values()}
    except ValueError:
        pass
    return students | set(refused)


def export(assignment: str, csv_path: Path | None = None) -> list[dict]:
    """``class_rows`` written as the CSV (``csv_path``, default ``<course>/<assignment>-grades.csv``)."""
    rows = class_rows(assignment)
    write_csv(
        csv_path or course_dir() / f"{assignment}-grades.csv",
        FIELDS,
        [[row[k] for k in FIELDS] for row in rows],
    )
    return rows


def class_rows(assignment: str, *, reassess: bool = True) -> list[dict]:
    """One row per student and notebook: score (empty unless graded), status and reason, for every student the
    course knows (``_students``); status ``not submitted`` for one without this assignment, ``not graded`` for a
    submission imported but not (or not since) autograded, ``could not import`` for one whose import was refused.
    Hours late are counted from each student's due date (their extension, ``extension_hours``, included); a record
    whose penalty was counted against another due date is counted again first (``penalty.reassess``), unless
    ``reassess`` is False (``stats``, which changes nothing: the record's penalty stays)."""
    require_assignment(assignment)
    course = course_dir()
    points = {
        nb.name: sum(float(_cell_points(c)) for c in nbformat.read(nb, as_version=4).cells)
        for nb in sorted((source_dir() / assignment).glob("*.ipynb"))
    }
    try:
        refused = {e["student"] or e["name"]: e for e in refusals.read(course, assignment).values()}
    except ValueError as err:
        print(f"warning: {err}", file=sys.stderr)
        refused = {}
    try:
        extended = {
            s: timedelta(hours=e["hours"]) for s, e in extensions.read(course).get(assignment, {}).items()
        }
    except ValueError as err:
        raise SystemExit(f"{err}; nothing exported (every hour late depends on it)") from None
    submitted, records = course / "submitted", course / "records" / assignment
    rows = []
    due = late.due_date(assignment)

    def when(student: str, folder: Path | None = None, data: dict | None = None) -> dict:
        """The submission's time, the student's extension and hours late: the record's time (what was graded),
        else the folder's."""
        if data is not None and "submitted" in data:
            handed_in = None if data["submitted"] is None else datetime.fromisoformat(data["submitted"])
        else:
            handed_in = late.read_timestamp(folder) if folder is not None and folder.is_dir() else None
        hours = late.seconds_late(handed_in, extensions.due_for(due, extended.get(student))) / 3600
        extra = extended[student].total_seconds() / 3600 if student in extended else 0
        return {"submitted": "" if handed_in is None else f"{handed_in:%Y-%m-%d %H:%M:%S} UTC",
                "extension_hours": f"{extra:g}" if extra else "", "hours_late": f"{hours:.2f}" if hours else ""}  # fmt: skip

    def again_for(student: str) -> str:
        return f"run `python -m autograder autograde {assignment} --student {student}`"

    def without_score(student: str, status: str, reason: str, time: dict) -> None:
        rows.extend({"student": student, "notebook": name, "edition": "", "score": "", "max_score": f"{top:g}",
                     "late_penalty": "", **time, "status": status, "reason": reason}
                    for name, top in points.items())  # fmt: skip

    def rows_of(student: str) -> None:
        folder, path = submitted / student / assignment, records / f"{student}.json"
        again = again_for(student)
        if not path.exists():
            if folder.is_dir():
                without_score(
                    student, "not graded", f"imported, not autograded yet: {again}", when(student, folder)
                )
            else:
                without_score(student, "not submitted", "", when(student, folder))
            return
        data = json.loads(path.read_text())
        if folder.is_dir() and data.get("submission") not in (None, fingerprint(folder)):
            without_score(
                student, "not graded", f"imported again after it was graded: {again}", when(student, folder)
            )
            return
        outdated = penalty.outdated(
            data, extensions.due_for(due, extended.get(student)), extended.get(student)
        )
        if reassess and outdated:
            data = penalty.reassess(assignment, student)[1]  # an extension edited by hand, a due date moved
        time = when(student, folder, data)
        if data.get("error"):
            what = "" if data.get("error_in") == "submission" else "grader error: "
            rows.append({"student": data["student"], "notebook": "", "edition": "", "score": "", "max_score": "",
                         "late_penalty": "", **time, "status": "could not grade",
                         "reason": f"{what}{data['error']}"})  # fmt: skip
        for nb in data["notebooks"]:
            problems = "; ".join(nb["problems"])
            taken = nb.get("late_penalty") or 0.0
            rows.append({
                "student": data["student"], "notebook": nb["notebook"], "edition": _edition(nb),
                "score": "" if nb["score"] is None else f"{nb['score'] - taken:g}",
                "max_score": f"{nb['max_score']:g}", "late_penalty": f"{taken:g}" if taken else "", **time,
                "status": nb["status"], "reason": nb["reason"] or problems,
            })  # fmt: skip

    for student in sorted(_students(course, assignment, refused)):
        done = len(rows)
        try:  # what is wrong with one student's files is that student's row, never the end of the export
            if student_id_problem(student) is None:
                rows_of(student)
            else:  # a refused import that came to no student id: only its refusal to show
                without_score(student, "not submitted", "", when(student))
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as err:
            del rows[done:]
            without_score(student, "could not grade", f"its record or submission folder cannot be read "
                          f"({type(err).__name__}: {err}): {again_for(student)}", when(student))  # fmt: skip
        if student in refused:
            _refused(rows[done:], refused[student])
    return rows


def export_with_site_files(
    assignment: str, csv_path: Path | None, missing: str = "empty", canvas_column: str | None = None
) -> tuple[list[dict], list[Path]]:
    """``python -m autograder export``: ``export``'s CSV, then the course sites' grade files beside it
    (``site_files.write``: ``missing``, the grade of a student who handed in nothing; ``canvas_column``, the Canvas
    file's assignment column). Returns the rows and the files written; SystemExit for a column Canvas would not
    read as this assignment's."""
    from autograder.grading import site_files

    problem = canvas_column is not None and site_files.canvas_column_problem(canvas_column)
    if problem:
        raise SystemExit(f"--canvas-column: {problem}")
    csv_path = csv_path or course_dir() / f"{assignment}-grades.csv"
    rows = export(assignment, csv_path)
    try:
        sites = site_files.write(
            assignment, rows, csv_path.parent, missing=missing, canvas_column=canvas_column
        )
    except ValueError as err:
        raise SystemExit(f"wrote {csv_path}, but no course site's grade file: {err}") from None
    return rows, [csv_path, *sites]


def _refused(rows: list[dict], refusal: dict) -> None:
    """A student's rows where their latest import was refused (``intake/refusals.py``): ``could not import`` with
    why, where nothing of theirs was imported; otherwise the rows of the earlier submission, saying so."""
    said = f"the import of {refusal['when'][:16].replace('T', ' ')} UTC was refused: {refusal['reason']}"
    for row in rows:
        if row["status"] == "not submitted":
            row.update(status="could not import", reason=said)
        else:
            row["reason"] = "; ".join(
                filter(None, [f"{said}; this row is the earlier submission's", row["reason"]])
            )


def _edition(notebook: dict) -> str:
    """The edition a notebook of a record was graded in (``record.Record.edition``): ``en``, ``zh-TW`` or ``zh-CN``;
    English for a record from before editions, which has none; empty where it is not one of those (a notebook the
    grader could not read, or a record a worker or a hand changed)."""
    edition = notebook.get("edition", ENGLISH)
    return edition if isinstance(edition, str) and (edition == ENGLISH or edition in EDITIONS) else ""


def _cell_points(cell) -> float:
    """A test cell's points (what the score of record grades: ``record.Record.max_score``), else 0."""
    meta = cell.get("metadata", {}).get("nbgrader", {})
    test = cell.get("cell_type") == "code" and meta.get("grade") and not meta.get("solution")
    return float(meta.get("points", 0)) if test else 0.0


def print_table(rows: list[dict], expected: dict | None = None) -> None:
    print(f"{'student':<11} {'score':>7}  {'status':<16} reason")
    for row in rows:
        score = f"{row['score'] or '-'}/{row['max_score']}"
        if row.get("late_penalty"):
            row = {**row, "reason": f"{row['hours_late']} h late: -{row['late_penalty']}; {row['reason']}"}
        extra = f"  (expected {expected[row['student']]})" if expected and row["student"] in expected else ""
        student, reason = printable(row["student"]), printable(row["reason"][:110])
        print(f"{student:<11} {score:>7}  {row['status']:<16} {reason}{extra}")
