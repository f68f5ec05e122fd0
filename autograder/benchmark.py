"""Seconds per student per notebook, and the speedup with 2 workers:

    python -m autograder.benchmark [--students 4] [--assignment 04_rope]

Grades ``--students`` copies of a correct submission with 1 worker, then with 2, each in a fresh course
folder, and prints the wall time per student per notebook and the speedup. Without ``--assignment`` it uses
the demo assignment (``autograder/demo``); with one, the course's own solution notebooks (``solutions/<A>``)
stand in for the students' submissions.
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time
from pathlib import Path

from autograder import course
from autograder.demo.build import write_submissions
from autograder.grade import autograde
from autograder.submissions import import_submissions


def _submissions(assignment: str | None, target: Path) -> None:
    if assignment is None:
        write_submissions(
            course.course_dir() / "release" / "positions" / "positions.ipynb", target, ["correct"]
        )
        (target / "correct").rename(target / "template")
    else:
        shutil.copytree(course.REPO / "solutions" / assignment, target / "template")


def run(students: int, workers: int, assignment: str | None) -> tuple[float, int]:
    os.environ["POSREF_COURSE_DIR"] = tempfile.mkdtemp(prefix=f"posref-bench-{workers}-")
    if assignment is None:
        os.environ["POSREF_SOURCE_DIR"] = "autograder/demo/source"
        os.environ["POSREF_RELEASE_DIR"] = str(course.course_dir() / "release")
    name = assignment or "positions"
    course.release(name)
    with tempfile.TemporaryDirectory() as tmp:
        _submissions(assignment, Path(tmp))
        for i in range(students):
            shutil.copytree(Path(tmp) / "template", Path(tmp) / "students" / f"student{i:02d}")
        import_submissions(Path(tmp) / "students", name)
    start = time.perf_counter()
    results = autograde(name, workers=workers)
    elapsed = time.perf_counter() - start
    notebooks = len(results[0]["notebooks"])
    short = [
        (r["student"], nb["notebook"], nb["score"], nb["max_score"]) for r in results for nb in r["notebooks"]
    ]
    assert all(score == top for _, _, score, top in short), f"a correct submission lost points: {short}"
    return elapsed, notebooks


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--students", type=int, default=4)
    parser.add_argument("--assignment", help="a course assignment (solutions/<A>) instead of the demo")
    args = parser.parse_args()
    one, notebooks = run(args.students, 1, args.assignment)
    two, _ = run(args.students, 2, args.assignment)
    per = args.students * notebooks
    print(
        f"{args.students} students x {notebooks} notebook(s) of {args.assignment or 'the demo'}, score of record:"
    )
    print(f"  1 worker : {one:6.1f} s total, {one / per:5.1f} s per student per notebook")
    print(f"  2 workers: {two:6.1f} s total, {two / per:5.1f} s per student per notebook")
    print(f"  speedup with 2 workers: {one / two:.2f}x")


if __name__ == "__main__":
    main()
