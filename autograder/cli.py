"""The instructor's commands, each wrapping nbgrader (plain nbgrader commands keep working):

    python -m autograder release ASSIGNMENT [--lang zh-TW | zh-CN]   (an edition's release too: editions/<lang>/)
    python -m autograder import PATH [--assignment ASSIGNMENT] [--timestamp TIME] [--roster CSV]
                                   (a folder, an archive, or a Canvas or Moodle "download all submissions" zip)
    python -m autograder autograde ASSIGNMENT [--workers N | --scheduler ADDRESS] [--student ID ... | --regrade]
                                   [--cell-timeout S] [--notebook-timeout S] [--trusted-class]
    python -m autograder feedback ASSIGNMENT
    python -m autograder export ASSIGNMENT [--csv FILE] [--missing-grade empty|0] [--canvas-column TITLE]
                                   (and the Canvas and Moodle grade files of the course's site users)
    python -m autograder extend STUDENT ASSIGNMENT --hours N   (an extension: the late penalty counted from its end)
    python -m autograder stats ASSIGNMENT [--csv FILE] [--html FILE]     (per test cell: pass rate, discrimination,
                                   failures by cause and edition; written answers' grades; who could not be graded)
    python -m autograder similar ASSIGNMENT [--csv FILE] [--html FILE] [--threshold T] [--earlier FOLDER]
                                   [--common M]   (how alike each pair of students' answer cells are)
    python -m autograder demo [--workers N]
    python -m autograder lab [-- JUPYTERLAB OPTIONS]                (JupyterLab with the formgrader, for instructors)
    python -m autograder editions update        (the catalogs merged with solutions/: what translators must redo)
    python -m autograder editions build         (every edition's solutions and release, from the catalogs)

Course data lives in $POSREF_COURSE_DIR (default ~/posref-course), created on first use. See README.md.
Only the options live here; each subcommand is one call of its step's module, imported when it runs (grading
imports torch: seconds that `release` or `export` need not spend).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from autograder import course
from autograder.analysis import defaults as analysis_defaults
from autograder.editions.notebook import EDITIONS
from autograder.intake.late import parse_time


def _positive_int(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"a number of workers is a whole number from 1, not {text!r}")
    return int(text)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m autograder", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("release")
    p.add_argument("assignment")
    p.add_argument(
        "--lang",
        choices=["en", *EDITIONS],
        default="en",
        help="also release this edition (editions/<lang>/notebooks); the gradebook takes the English source",
    )
    p = sub.add_parser("import")
    p.add_argument("path", type=Path)
    p.add_argument("--assignment")
    p.add_argument(
        "--timestamp",
        type=parse_time,
        help="when these were submitted (e.g. '2026-10-05 23:59 UTC'), instead of the archive's own times",
    )
    p.add_argument(
        "--roster",
        type=Path,
        help="CSV id,first_name,last_name[,lms_id]: a course site's students to ids (default: the gradebook's)",
    )
    p = sub.add_parser("autograde")
    p.add_argument("assignment")
    where = p.add_mutually_exclusive_group()
    where.add_argument(
        "--workers",
        type=_positive_int,
        default=os.cpu_count() or 1,
        help="local worker processes (one per CPU)",
    )
    where.add_argument("--scheduler", metavar="ADDRESS", help="grade on the Dask cluster of this scheduler")
    which = p.add_mutually_exclusive_group()
    which.add_argument("--student", action="append", help="grade this student (again); repeat for more")
    which.add_argument(
        "--regrade", action="store_true", help="grade again students whose record is up to date"
    )
    p.add_argument("--cell-timeout", type=float, default=60.0, help="seconds for each answer cell and call")
    p.add_argument(
        "--trusted-class",
        action="store_true",
        help="grade even where the sandbox cannot start (resource limits only): for a class whose code you trust",
    )
    p.add_argument(
        "--notebook-timeout",
        type=float,
        default=course.NOTEBOOK_TIMEOUT,
        help="seconds for one notebook in all",
    )
    sub.add_parser("feedback").add_argument("assignment")
    p = sub.add_parser("export")
    p.add_argument("assignment")
    p.add_argument("--csv", type=Path)
    p.add_argument(
        "--missing-grade",
        choices=["empty", "0"],
        default="empty",
        help="a course site's grade for a student who handed in nothing, once the due date has passed",
    )
    p.add_argument(
        "--canvas-column",
        help="the Canvas file's assignment column, as Canvas's gradebook export names it ('Title (id)'); "
        "default: the assignment's name",
    )
    p = sub.add_parser("extend", help="more time for one student on one assignment (0 hours: none)")
    p.add_argument("student")
    p.add_argument("assignment")
    p.add_argument("--hours", type=float, required=True, help="hours after the assignment's due date")
    p = sub.add_parser("stats", help="what the class did: per test cell, failures by cause and edition")
    p.add_argument("assignment")
    p.add_argument("--csv", type=Path, help="default: <course>/reports/ASSIGNMENT-stats.csv")
    p.add_argument("--html", type=Path, help="default: <course>/reports/ASSIGNMENT-stats.html")
    p = sub.add_parser("similar", help="how alike each pair of students' answer cells are")
    p.add_argument("assignment")
    p.add_argument("--csv", type=Path, help="default: <course>/reports/ASSIGNMENT-similar.csv")
    p.add_argument("--html", type=Path, help="default: <course>/reports/ASSIGNMENT-similar.html")
    p.add_argument(
        "--threshold",
        type=float,
        default=analysis_defaults.THRESHOLD,
        help="pairs from this similarity (0-1) on the page (%(default)s)",
    )
    p.add_argument(
        "--earlier",
        type=Path,
        action="append",
        default=[],
        help="an earlier term's submitted/ folder (<student>/<assignment>/...) as references; repeat for more",
    )
    p.add_argument(
        "--common",
        type=int,
        default=analysis_defaults.COMMON,
        help="a passage held by more than M answers written apart is common knowledge, not counted (%(default)s)",
    )
    p = sub.add_parser("demo")
    p.add_argument("--workers", type=_positive_int, default=2)
    p = sub.add_parser(
        "lab", help="JupyterLab for instructors: the formgrader with the course's configuration"
    )
    p.add_argument("jupyter_args", nargs=argparse.REMAINDER, help="options passed on to JupyterLab")
    p = sub.add_parser("editions", help="the zh-TW and zh-CN editions: catalogs and notebooks")
    p.add_argument(
        "action",
        choices=["update", "build"],
        help="update: merge the catalogs with solutions/ and make zh-CN from zh-TW; build: write editions/",
    )
    return parser


def main(argv: list[str] | None = None) -> None:
    args = _parser().parse_args(argv)
    if args.command == "release":
        from autograder.release import assignment

        written = assignment.release(args.assignment)
        if args.lang != "en":
            written += assignment.release_edition(args.assignment, args.lang)
        print(assignment.release_summary(args.assignment, written, args.lang))
    elif args.command == "import":
        from autograder.intake.submissions import import_submissions

        done = import_submissions(args.path, args.assignment, timestamp=args.timestamp, roster=args.roster)
        print("imported:", ", ".join(done.imported) or "nobody")
        if done.refused:
            raise SystemExit(
                f"could not import {len(done.refused)}: {', '.join(done.refused)} (the reasons above)"
            )
    elif args.command == "autograde":
        from autograder.grading.grade import autograde, print_summary

        status = print_summary(
            args.assignment,
            autograde(
                args.assignment,
                workers=args.workers,
                students=args.student,
                scheduler=args.scheduler,
                regrade=args.regrade,
                cell_timeout=args.cell_timeout,
                notebook_timeout=args.notebook_timeout,
                trusted=args.trusted_class,
            ),
        )
        raise SystemExit(status)
    elif args.command == "feedback":
        from autograder.pages.feedback import feedback

        failed = feedback(args.assignment)
        folder = course.course_dir() / "feedback"
        pages = [p for p in sorted(folder.glob(f"*/{args.assignment}/*.html")) if p.parts[-3] not in failed]
        print(f"feedback {args.assignment}: {len(pages)} page(s) in {folder}/<student>/{args.assignment}/:")
        for page in pages:
            print(f"  {course.printable(str(page))}")
        for student, why in failed.items():
            print(f"no feedback for {course.printable(student)}: {course.printable(why)}", file=sys.stderr)
        if failed:
            raise SystemExit(
                f"no feedback for {len(failed)} student(s): {course.printable(', '.join(failed))}"
            )
    elif args.command == "export":
        from autograder.grading.export import export_with_site_files, print_table

        rows, written = export_with_site_files(
            args.assignment, args.csv, args.missing_grade, args.canvas_column
        )
        print_table(rows)
        for path in written:
            print(f"wrote {course.printable(str(path))}")
        failed = sorted({row["student"] for row in rows if row["status"] == "could not grade"})
        if failed:
            names = course.printable(", ".join(failed))
            raise SystemExit(f"could not grade {len(failed)} student(s): {names} (the reason column)")
    elif args.command == "extend":
        from autograder.grading.penalty import extend

        print("\n".join(course.printable(line) for line in extend(args.student, args.assignment, args.hours)))
    elif args.command == "stats":
        from autograder.analysis.commands import stats_command

        stats_command(args.assignment, args.csv, args.html)
    elif args.command == "similar":
        from autograder.analysis.commands import similar_command

        similar_command(
            args.assignment,
            args.csv,
            args.html,
            threshold=args.threshold,
            earlier=args.earlier,
            common=args.common,
        )
    elif args.command == "demo":
        from autograder.demo.run import demo

        demo(args.workers)
    elif args.command == "lab":
        from autograder.pages.lab import lab
        from posref.launch import passed_on

        raise SystemExit(lab(passed_on(args.jupyter_args)))
    elif args.command == "editions":
        editions_command(args.action)


def editions_command(action: str) -> None:
    """``editions update``: the translators' list; ``editions build``: the files written and the time taken."""
    import time

    start = time.perf_counter()
    if action == "update":
        from autograder.editions.update import report, update

        print(report(update()))
    else:
        from autograder.release.editions import build

        written = build()
        print(f"wrote {len(written)} notebooks of {len(EDITIONS)} editions in editions/")
    print(f"{time.perf_counter() - start:.1f} s")
