"""Seconds per student-notebook, and students per minute against the number of workers:

    python -m autograder.benchmark [--students 4] [--assignment 04_rope]

Grades ``--students`` copies of a correct submission three times, each in a fresh course folder: on a local
Dask cluster of 1 worker, of 2 workers, and on 2 workers of a loopback cluster (a scheduler and two workers as
separate processes on 127.0.0.1, as on other machines). For each it prints the wall time of the whole run
(cluster start, nbgrader's bookkeeping and the writes of the instructor's process included), seconds per
student-notebook, students per minute, and what the workers themselves spent per student-notebook. Without
``--assignment`` it uses the demo assignment (``autograder/demo``); with one, the course's own solution
notebooks (``solutions/<A>``) stand in for the students' submissions.
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time
from pathlib import Path

from autograder import course
from autograder.cluster import LoopbackCluster
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


def run(students: int, workers: int, assignment: str | None, scheduler: str | None = None) -> dict:
    """One timed ``autograde`` of ``students`` correct submissions in a fresh course; the figures of the run."""
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
    results = autograde(name, workers=workers, scheduler=scheduler)
    elapsed = time.perf_counter() - start
    short = [
        (r["student"], nb["notebook"], nb["score"], nb["max_score"]) for r in results for nb in r["notebooks"]
    ]
    assert len(results) == students, f"{students} students sent, {len(results)} graded"
    assert all(score == top for _, _, score, top in short), f"a correct submission lost points: {short}"
    notebooks = students * len(results[0]["notebooks"])
    return {
        "seconds": elapsed,
        "per_notebook": elapsed / notebooks,
        "students_per_minute": 60 * students / elapsed,
        "worker_per_notebook": sum(r["seconds"] for r in results) / notebooks,
        "notebooks": notebooks // students,
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        prog="python -m autograder.benchmark", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--students", type=int, default=4)
    parser.add_argument("--assignment", help="a course assignment (solutions/<A>) instead of the demo")
    args = parser.parse_args()
    runs = {
        "1 worker": run(args.students, 1, args.assignment),
        "2 workers": run(args.students, 2, args.assignment),
    }
    with LoopbackCluster(workers=2) as cluster:
        runs["2 workers, loopback Dask cluster"] = run(args.students, 2, args.assignment, cluster.address)
    notebooks = runs["1 worker"]["notebooks"]
    print(
        f"{args.students} students x {notebooks} notebook(s) of {args.assignment or 'the demo'}, score of record, "
        f"on {os.cpu_count()} CPUs (load average {os.getloadavg()[0]:.1f} at the end):"
    )
    print(
        f"  {'cluster':<34} {'total s':>8} {'s/student-notebook':>19} {'students/min':>13} {'worker s/notebook':>18}"
    )
    for what, r in runs.items():
        print(
            f"  {what:<34} {r['seconds']:8.1f} {r['per_notebook']:19.1f} {r['students_per_minute']:13.1f} "
            f"{r['worker_per_notebook']:18.1f}"
        )
    print(f"  speedup with 2 workers: {runs['1 worker']['seconds'] / runs['2 workers']['seconds']:.2f}x")


if __name__ == "__main__":
    main()
