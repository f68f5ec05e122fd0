"""``python -m autograder stats ASSIGNMENT``: what the class did, cell by cell, from the score of record.

Read, never changed: the records (``records/<assignment>/<student>.json``: each test cell's score and the causes of
its failed checks, ``posref.grading.failure.Cause``), the export's view of who is graded and who is not
(``grading.export.class_rows``: could not grade, not graded, could not import, with why), and nbgrader's gradebook
(the manual grades of the written answers). Made of them (``ClassStats``):

* per test cell: the students graded, how many earned its points, the distribution of its points, two
  discrimination indices (``items.py``: the corrected item-total correlation and Kelley's upper-lower 27% index),
  and its failures counted by cause and edition: a named mistake is counted under its hint's catalog key, the same
  in English, zh-TW and zh-CN, so one mistake is one count however the class is split;
* per written answer: the distribution of its manual grades, those still waiting for a grader and those with no
  response;
* the class's total score of record (autograded points), and the students who could not be graded and why.

Written (``commands.py``) as a CSV (``csv_rows``: one row per test cell, cause and edition) and an HTML page
(``stats_page.py``).
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from autograder import course
from autograder.analysis.items import Item, analyse
from autograder.editions.notebook import EDITIONS, ENGLISH
from autograder.grading.export import class_rows
from posref.grading.failure import Cause

EDITION_ORDER = (ENGLISH, *EDITIONS)
CSV_FIELDS = [
    "cell", "cause", "edition", "count", "notebook", "kind", "detail", "points", "graded", "passed", "pass_rate",
    "item_total_r", "upper_lower_d",
]  # fmt: skip
NO_RESPONSE = "No response."  # nbgrader's comment on an answer left as released
# the statuses of students whom the score of record does not hold (export's words)
NOT_GRADED = ("could not grade", "not graded", "could not import")


@dataclass
class TestCell:
    notebook: str
    grade_id: str
    item: Item
    causes: Counter  # (Cause, edition) -> students whose cell failed with it
    failed: int  # students whose cell failed
    specific: int  # of those, the ones with a named mistake or a kind of failure (not "unknown")


@dataclass
class WrittenAnswer:
    notebook: str
    grade_id: str
    points: float
    grades: dict[float, int]  # manual grade -> students
    waiting: int  # submissions not graded by hand yet
    no_response: int  # left as released (nbgrader's comment "No response."), not graded by hand


@dataclass
class ClassStats:
    assignment: str
    cells: list[TestCell] = field(default_factory=list)
    answers: list[WrittenAnswer] = field(default_factory=list)
    totals: list[float] = field(default_factory=list)  # each graded student's score of record
    max_total: float = 0.0
    editions: Counter = field(default_factory=Counter)  # edition -> students graded
    not_graded: list[dict] = field(default_factory=list)  # {student, notebook, status, reason}

    @property
    def specific_share(self) -> float | None:
        """Of the failed cells, the share whose failure has a named mistake or a kind (not ``unknown``)."""
        failed = sum(c.failed for c in self.cells)
        return sum(c.specific for c in self.cells) / failed if failed else None


def class_stats(assignment: str) -> ClassStats:
    """The statistics of ``assignment`` (see the module docstring)."""
    course.require_assignment(assignment)
    stats = ClassStats(assignment)
    rows = class_rows(assignment, reassess=False)
    by_student: dict[str, list[dict]] = {}
    for row in rows:
        by_student.setdefault(row["student"], []).append(row)
    records = course.course_dir() / "records" / assignment
    graded = []  # (student, [notebook records])
    for student, theirs in sorted(by_student.items()):
        stats.not_graded += [
            {k: row[k] for k in ("student", "notebook", "status", "reason")}
            for row in theirs
            if row["status"] in NOT_GRADED
        ]
        if any(row["status"] != "graded" for row in theirs):
            continue
        try:
            notebooks = _notebooks(records / f"{student}.json")
        except (OSError, ValueError, KeyError, TypeError) as err:  # a record a hand or a disk changed
            why = f"its record cannot be read ({type(err).__name__}: {err})"
            stats.not_graded.append(
                {"student": student, "notebook": "", "status": "could not grade", "reason": why}
            )
            continue
        graded.append((student, notebooks))
    _test_cells(stats, graded)
    stats.answers = written_answers(assignment)
    return stats


def _notebooks(path: Path) -> list[dict]:
    """The notebooks of a record, each ``{"notebook", "edition", "cells": [{"grade_id", "points", "score",
    "causes"}]}``, checked to have that form (a ValueError says what is not)."""
    data = json.loads(path.read_text())
    notebooks = []
    for nb in data["notebooks"]:
        edition = nb.get("edition", ENGLISH)
        cells = [
            {
                "grade_id": str(c["grade_id"]),
                "points": float(c["points"]),
                "score": float(c["score"]),
                "causes": [Cause.from_json(x) for x in c.get("causes", [])],
            }
            for c in nb["cells"]
        ]
        notebooks.append({"notebook": str(nb["notebook"]), "edition": edition if edition in EDITION_ORDER else "?",
                          "cells": cells})  # fmt: skip
    if not notebooks:
        raise ValueError("no notebook in it")
    return notebooks


def _test_cells(stats: ClassStats, graded: list[tuple[str, list[dict]]]) -> None:
    """Each test cell's item analysis and causes over the ``graded`` students (in the order of the first record's
    cells; a cell another record lacks counts 0 for that student, cause unknown, in the edition of the student's
    notebook, ``?`` where the record has no notebook of that name)."""
    order: dict[tuple[str, str], float] = {}
    for _student, notebooks in graded:
        for nb in notebooks:
            for cell in nb["cells"]:
                order.setdefault((nb["notebook"], cell["grade_id"]), cell["points"])
    stats.max_total = sum(order.values())
    scores = {key: [] for key in order}
    causes = {key: Counter() for key in order}
    failed, specific = Counter(), Counter()
    for _student, notebooks in graded:
        stats.editions[notebooks[0]["edition"]] += 1
        theirs = {
            (nb["notebook"], c["grade_id"]): (c, nb["edition"]) for nb in notebooks for c in nb["cells"]
        }
        editions = {nb["notebook"]: nb["edition"] for nb in notebooks}
        stats.totals.append(sum(c["score"] for c, _ in theirs.values()))
        for key, points in order.items():
            missing = {"score": 0.0, "causes": [Cause("unknown")]}
            cell, edition = theirs.get(key, (missing, editions.get(key[0], "?")))
            scores[key].append(cell["score"])
            if cell["score"] < points:
                said = set(cell["causes"]) or {Cause("unknown")}
                failed[key] += 1
                specific[key] += any(c.kind != "unknown" for c in said)
                causes[key].update((c, edition) for c in said)
    for key, points in order.items():
        item = analyse(points, scores[key], stats.totals)
        stats.cells.append(TestCell(*key, item, causes[key], failed[key], specific[key]))


def written_answers(assignment: str) -> list[WrittenAnswer]:
    """Each written answer (nbgrader's manually graded markdown cells) of ``assignment`` with the distribution of its
    grades in nbgrader's gradebook; none where the course has no gradebook or the assignment is not in it."""
    if not course.has_gradebook():
        return []
    answers: dict[tuple[str, str], WrittenAnswer] = {}
    with course.gradebook() as gb:
        try:
            found = gb.find_assignment(assignment)
        except Exception:  # nbgrader's MissingEntry: not released in this course
            return []
        for nb in found.notebooks:
            for cell in nb.grade_cells:
                if cell.cell_type == "markdown":
                    answers[(nb.name, cell.name)] = WrittenAnswer(
                        nb.name, cell.name, float(cell.max_score), {}, 0, 0
                    )
        for submission in found.submissions:
            for nb in submission.notebooks:
                # autograde's comment on a written answer left as released (grading.gradebook.PendingScores)
                unanswered = {c.name for c in nb.comments if c.auto_comment == NO_RESPONSE}
                for grade in nb.grades:
                    answer = answers.get((nb.name, grade.name))
                    if answer is None:
                        continue
                    if grade.manual_score is not None:
                        score = float(grade.manual_score)
                        answer.grades[score] = answer.grades.get(score, 0) + 1
                    elif grade.name in unanswered:
                        answer.no_response += 1
                    else:
                        answer.waiting += 1
    for answer in answers.values():
        answer.grades = dict(sorted(answer.grades.items()))
    return list(answers.values())


def csv_rows(stats: ClassStats) -> list[list[str]]:
    """``CSV_FIELDS`` rows: one per test cell, cause and edition with at least one student."""
    rows = []
    for cell in stats.cells:
        item = cell.item
        shared = [
            f"{item.points:g}", str(item.graded), str(item.passed), _number(item.pass_rate),
            _number(item.item_total_r), _number(item.upper_lower_d),
        ]  # fmt: skip
        for (cause, edition), count in sorted(
            cell.causes.items(), key=lambda kv: (-kv[1], str(kv[0][0]), kv[0][1])
        ):
            rows.append([cell.grade_id, str(cause), edition, str(count), cell.notebook, cause.kind, cause.detail,
                         *shared])  # fmt: skip
    return rows


def _number(value: float | None) -> str:
    return "" if value is None else f"{value:.3f}"


def summary(stats: ClassStats) -> list[str]:
    """What ``python -m autograder stats`` prints: each test cell with its two indices and its three commonest
    causes, the written answers, the students not graded."""
    editions = ", ".join(f"{e} {n}" for e, n in sorted(stats.editions.items()))
    lines = [f"{stats.assignment}: {len(stats.totals)} student(s) graded ({editions or 'none'}), "
             f"{len(stats.not_graded)} row(s) not graded"]  # fmt: skip
    lines.append(
        f"{'test cell':<28} {'points':>6} {'passed':>11}  r_it (corrected item-total)  D (upper-lower 27%)"
    )
    for cell in stats.cells:
        item = cell.item
        rate = "" if item.pass_rate is None else f"{100 * item.pass_rate:.0f}%"
        lines.append(f"{cell.grade_id:<28} {item.points:>6g} {f'{item.passed}/{item.graded}':>7} {rate:>4}"
                     f"  {_number(item.item_total_r) or 'n/a':>27}  {_number(item.upper_lower_d) or 'n/a':>19}")  # fmt: skip
        total = Counter()
        for (cause, _edition), count in cell.causes.items():
            total[cause] += count
        for cause, count in total.most_common(3):
            lines.append(f"    {count:>4} x {course.printable(str(cause))[:110]}")
    share = stats.specific_share
    if share is not None:
        lines.append(f"failed cells with a named mistake or a kind of failure: {100 * share:.1f}%")
    for answer in stats.answers:
        grades = ", ".join(f"{g:g}: {n}" for g, n in answer.grades.items()) or "none yet"
        lines.append(f"written answer {answer.grade_id} ({answer.points:g} points): {grades}; "
                     f"waiting {answer.waiting}, no response {answer.no_response}")  # fmt: skip
    for row in stats.not_graded:
        lines.append(
            course.printable(f"{row['status']}: {row['student']} {row['notebook']}: {row['reason']}")[:200]
        )
    return lines
