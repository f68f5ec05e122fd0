"""``python -m autograder stats`` and ``similar`` as commands: each computes (``stats.py``, ``similar.py``), prints
its summary, and writes its CSV and page (``stats_page.py``, ``similar_page.py``) into ``<course>/reports/`` (or
where ``--csv`` and ``--html`` say), where the instructor's lab lists them."""

from __future__ import annotations

import sys
from pathlib import Path

from autograder import course
from autograder.analysis import similar, similar_page, stats, stats_page
from autograder.grading import spreadsheet


def _write(assignment: str, kind: str, fields: list[str], rows: list[list[str]], page: str,
           csv_path: Path | None, html_path: Path | None) -> list[Path]:  # fmt: skip
    """The CSV (default ``<course>/reports/<assignment>-<kind>.csv``) and the page (default ``...-<kind>.html``);
    the paths written."""
    csv_path = csv_path or course.report_path(assignment, kind, "csv")
    html_path = html_path or course.report_path(assignment, kind, "html")
    spreadsheet.write_csv(csv_path, fields, rows)
    course.replace_file(html_path, page.encode())
    return [csv_path, html_path]


def _report(lines: list[str], written: list[Path]) -> None:
    print("\n".join(lines))
    for path in written:
        print(f"wrote {course.printable(str(path))}")
    sys.stdout.flush()


def stats_command(assignment: str, csv_path: Path | None, html_path: Path | None) -> None:
    """Per test cell, the pass rate, points, discrimination and causes by edition; one CSV row per test cell, cause
    and edition."""
    found = stats.class_stats(assignment)
    page = stats_page.page(found)
    written = _write(assignment, "stats", stats.CSV_FIELDS, stats.csv_rows(found), page, csv_path, html_path)
    _report(stats.summary(found), written)


def similar_command(assignment: str, csv_path: Path | None, html_path: Path | None, *, threshold: float,
                    earlier: list[Path], common: int = similar.COMMON) -> None:  # fmt: skip
    """Every pair scored into the CSV, the pairs from ``threshold`` on the page; ``common``: ``similar.similar``'s."""
    found = similar.similar(assignment, threshold=threshold, earlier=earlier, common=common)
    page = similar_page.page(found)
    written = _write(
        assignment, "similar", similar.CSV_FIELDS, similar.csv_rows(found), page, csv_path, html_path
    )
    _report(similar.summary(found), written)
