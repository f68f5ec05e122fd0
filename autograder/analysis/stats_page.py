"""The HTML page of ``python -m autograder stats`` (``stats.ClassStats``), for the instructor's lab or a browser:
self-contained and inert (``page.py``), plots inline (``plots.py``)."""

from __future__ import annotations

from collections import Counter

from markupsafe import Markup

from autograder.analysis import plots
from autograder.analysis.items import histogram
from autograder.analysis.page import document, table, text
from autograder.analysis.stats import EDITION_ORDER, ClassStats, TestCell

INDICES = Markup(
    "<p class=note><b>r<sub>it</sub></b>: the corrected item-total correlation (point-biserial), between the cell's "
    "points and the rest of each student's score of record; about 0.3 and above discriminates well, below 0.2 "
    "poorly, below 0 the stronger students fail it more often. <b>D</b>: Kelley's upper-lower index, the share of "
    "the top 27% of the class (by score of record) that earned the cell's points minus that share of the bottom 27%. "
    "n/a: the class gives the index no spread.</p>"
)


def _fmt(value: float | None, percent: bool = False) -> str:
    if value is None:
        return "n/a"
    return f"{100 * value:.0f}%" if percent else f"{value:.2f}"


def _cause(cause) -> Markup:
    if cause.kind == "mistake":
        return Markup("<b>named mistake</b>: ") + text(cause.detail)
    if cause.kind == "raised":
        return Markup("raised ") + Markup("<code>") + text(cause.detail) + Markup("</code>")
    return text(cause.kind)


def _causes(cell: TestCell) -> Markup:
    """The cell's causes, a column per edition (and ``?``, an edition none of the course's, where a record has one),
    then their total."""
    by_cause: dict = {}
    for (cause, edition), count in cell.causes.items():
        by_cause.setdefault(cause, Counter())[edition] += count
    editions = [*EDITION_ORDER, *sorted({e for _, e in cell.causes} - set(EDITION_ORDER))]
    ranked = sorted(by_cause.items(), key=lambda kv: (-sum(kv[1].values()), str(kv[0])))
    rows = [[_cause(c), *(n.get(e, 0) for e in editions), sum(n.values())] for c, n in ranked]
    return table(["cause", *editions, "total"], rows, numeric=range(1, len(editions) + 2))


def page(stats: ClassStats) -> str:
    graded = len(stats.totals)
    editions = ", ".join(f"{text(e)}: {n}" for e, n in sorted(stats.editions.items())) or "none"
    body: list = [
        Markup(
            f"<p>{graded} student(s) graded ({editions}); the score of record's autograded points, out of "
            f"{stats.max_total:g}. {len(stats.not_graded)} row(s) could not be graded (below).</p>"
        ),  # fmt: skip
    ]
    share = stats.specific_share
    if share is not None:
        body.append(Markup(f"<p class=note>Failed cells with a named mistake or a kind of failure: {100 * share:.1f}%."
                           "</p>"))  # fmt: skip
    figures = []
    if graded:
        figures.append(plots.histogram(histogram(stats.totals, stats.max_total), "the class's score of record",
                                       f"points (of {stats.max_total:g})"))  # fmt: skip
    if stats.cells:
        figures.append(plots.bars([c.grade_id for c in stats.cells],
                                  [100 * (c.item.pass_rate or 0) for c in stats.cells],
                                  "students who earned each test cell", "% of the graded", top=100))  # fmt: skip
    body.append(Markup("<div class=plots>") + Markup("").join(figures) + Markup("</div>"))
    body.append(Markup("<h2>Test cells</h2>"))
    body.append(INDICES)
    rows = []
    for cell in stats.cells:
        item = cell.item
        spread = ", ".join(f"{points:g}: {n}" for points, n in item.distribution.items())
        rows.append([cell.grade_id, f"{item.points:g}", item.graded, item.passed, _fmt(item.pass_rate, True),
                     spread, _fmt(item.item_total_r), _fmt(item.upper_lower_d)])  # fmt: skip
    body.append(table(["test cell", "points", "graded", "earned", "pass rate", "points: students", "r_it", "D"],
                      rows, numeric=(1, 2, 3, 4, 6, 7)))  # fmt: skip
    body.append(Markup("<h2>Why cells failed, by edition</h2>"))
    body.append(Markup("<p class=note>Each student counts once per cause of a cell (a cell with two failed checks "
                       "of different causes counts under both). A named mistake is its hint's key in posref's "
                       "catalogs (the English hint), the same in every edition.</p>"))  # fmt: skip
    failing = [cell for cell in stats.cells if cell.causes]
    for cell in failing:
        body.append(Markup(f"<h3>{text(cell.grade_id)}</h3>"))
        body.append(_causes(cell))
    if not failing:
        body.append(text("No test cell failed."))
    body.append(Markup("<h2>Written answers (graded by hand)</h2>"))
    answers = [[a.grade_id, f"{a.points:g}", ", ".join(f"{g:g}: {n}" for g, n in a.grades.items()) or "none yet",
                a.waiting, a.no_response] for a in stats.answers]  # fmt: skip
    body.append(table(["answer", "points", "grade: students", "waiting for a grader", "no response"], answers,
                      numeric=(1, 3, 4)) if answers else text("No written answers in the gradebook."))  # fmt: skip
    body.append(Markup("<h2>Could not be graded</h2>"))
    rows = [[r["student"], r["notebook"], r["status"], r["reason"][:2000]] for r in stats.not_graded]
    body.append(
        table(["student", "notebook", "status", "why"], rows) if rows else text("Everyone was graded.")
    )
    return document(f"{stats.assignment}: what the class did", body)
