"""Seconds per student-notebook, and students per minute against the number of workers:

    python -m autograder.benchmark [--students 4] [--assignment 04_rope | --assignment all]
                                   [--clusters 1 2 loopback] [--profile]

Grades ``--students`` copies of a correct submission on each cluster of ``--clusters``, each in a fresh course
folder: a local Dask cluster of 1 worker (``1``), of 2 workers (``2``), and 2 workers of a loopback cluster (a
scheduler and two workers as separate processes on 127.0.0.1, as on other machines: ``loopback``). For each it
prints the wall time of the ``autograde`` calls (cluster start, nbgrader's bookkeeping and the writes of the
instructor's process included), seconds per student-notebook, students per minute (a student: every
assignment graded), what the workers themselves spent per student-notebook, and what the instructor's process
spent per student-notebook in nbgrader's autograde, the gradebook and the record (``record_student``: it
overlaps the workers' time). Without
``--assignment`` it uses the demo assignment (``autograder/demo``); with one, the course's own solution
notebooks (``solutions/<A>``) stand in for the students' submissions; ``all`` grades every assignment of the
course, one ``autograde`` call each (as an instructor would run them), and prints each one's figures too.

``--profile`` grades one solution of each assignment in this process instead and prints where the time of
each notebook goes: the fork server's start, the child's start (fork, program and files sent), its cells (the
slowest named), the correctness checks, the speed checks (their reference child's start included).
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time
from collections import defaultdict
from pathlib import Path

from autograder import course
from autograder.demo.build import write_submissions
from autograder.grading import grade
from autograder.grading.cluster import LoopbackCluster
from autograder.intake.submissions import import_submissions
from autograder.release.assignment import release


def _assignments(assignment: str | None) -> list[str]:
    if assignment != "all":
        return [assignment or "positions"]
    return course.assignments()


def _submissions(assignment: str, target: Path) -> None:
    if assignment == "positions":
        write_submissions(
            course.course_dir() / "release" / "positions" / "positions.ipynb", target, ["correct"]
        )
        (target / "correct").rename(target / "template")
    else:
        shutil.copytree(course.source_dir() / assignment, target / "template")


def _timed_record_student(spent: list[float]):
    """``grade.record_student`` that adds each call's seconds to ``spent`` (the instructor's side)."""
    record_student = grade.record_student

    def timed(*args, **kwargs):
        start = time.perf_counter()
        try:
            return record_student(*args, **kwargs)
        finally:
            spent.append(time.perf_counter() - start)

    return timed


def run(students: int, workers: int, assignments: list[str], scheduler: str | None = None) -> dict:
    """One timed ``autograde`` per assignment of ``students`` correct submissions in a fresh course (a temporary
    folder, removed after the run); the figures of the run, overall and per assignment."""
    with tempfile.TemporaryDirectory(prefix=f"posref-bench-{workers}-") as folder:
        os.environ["POSREF_COURSE_DIR"] = folder
        return _timed_runs(students, workers, assignments, scheduler)


def _timed_runs(students: int, workers: int, assignments: list[str], scheduler: str | None) -> dict:
    if assignments == ["positions"]:
        os.environ["POSREF_SOURCE_DIR"] = "autograder/demo/source"
        os.environ["POSREF_RELEASE_DIR"] = str(course.course_dir() / "release")
    per: dict[str, dict] = {}
    for name in assignments:
        release(name)
        with tempfile.TemporaryDirectory() as tmp:
            _submissions(name, Path(tmp))
            for i in range(students):
                shutil.copytree(Path(tmp) / "template", Path(tmp) / "students" / f"student{i:02d}")
            import_submissions(Path(tmp) / "students", name)
    original = grade.record_student
    try:
        for name in assignments:
            spent: list[float] = []
            grade.record_student = _timed_record_student(spent)
            start = time.perf_counter()
            results = grade.autograde(name, workers=workers, scheduler=scheduler)
            elapsed = time.perf_counter() - start
            short = [
                (r["student"], nb["notebook"], nb["score"], nb["max_score"])
                for r in results
                for nb in r["notebooks"]
            ]
            assert len(results) == students, f"{name}: {students} students sent, {len(results)} graded"
            assert all(score == top for _, _, score, top in short), (
                f"a correct submission lost points: {short}"
            )
            per[name] = {
                "seconds": elapsed,
                "notebooks": students * len(results[0]["notebooks"]),
                "worker": sum(r["seconds"] for r in results),
                "instructor": sum(spent),
            }
    finally:
        grade.record_student = original
    return {"per": per, **_figures(list(per.values()), students)}


def _figures(parts: list[dict], students: int) -> dict:
    seconds, notebooks = sum(p["seconds"] for p in parts), sum(p["notebooks"] for p in parts)
    return {
        "seconds": seconds,
        "notebooks": notebooks,
        "per_notebook": seconds / notebooks,
        "students_per_minute": 60 * students / seconds,  # a student: every assignment graded
        "worker_per_notebook": sum(p["worker"] for p in parts) / notebooks,
        "instructor_per_notebook": sum(p["instructor"] for p in parts) / notebooks,
    }


def profile(assignments: list[str]) -> None:
    """Grade one solution of each assignment here and print where each notebook's time goes."""
    from autograder.grading import record
    from autograder.sandbox.sandbox import Sandbox

    spans: dict[str, float] = defaultdict(float)
    cells: dict[int | None, float] = {}
    _start, _run_check, _reference_fn = (
        record._Children._start,
        record._run_check,
        record._Children.reference_fn,
    )
    fork_server = Sandbox.fork_server

    def timed(what, fn):
        def wrapper(*args, **kwargs):
            start = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                spans[what] += time.perf_counter() - start

        return wrapper

    def start(self, cells_, deadline, files=(), *, fork=True):
        child = _start(self, cells_, deadline, files, fork=fork)
        if cells_ is self.program:
            cells.update(getattr(child, "cell_seconds", {}))
        return child

    def run_check(children, name, fn):
        return timed("speed checks" if name.endswith("_speed") else "correctness checks", _run_check)(
            children, name, fn
        )

    sandbox, scratch = Sandbox(), tempfile.TemporaryDirectory(prefix="posref-profile-")
    started = time.perf_counter()
    sandbox.fork_server()  # once per worker: not a notebook's
    print(
        f"fork server start (once per worker): {time.perf_counter() - started:.2f} s; sandbox: {sandbox.mode}"
    )
    record._Children._start, record._run_check = start, run_check
    record._Children.reference_fn = timed("reference child start", _reference_fn)
    Sandbox.fork_server = timed("fork server (re)start", fork_server)
    print(
        f"  {'notebook':<16} {'total':>6} {'child start':>11} {'cells':>6} {'checks':>7} {'speed':>6}  slowest cells"
    )
    try:
        for name in assignments:
            spans.clear()
            cells.clear()
            path = course.source_dir() / name / f"{name}.ipynb"
            started = time.perf_counter()
            result = record.grade_notebook(path, path, sandbox=sandbox, scratch_base=Path(scratch.name))
            total = time.perf_counter() - started
            slowest = sorted(((s, i) for i, s in cells.items() if i is not None), reverse=True)[:4]
            print(
                f"  {name:<16} {total:6.2f} {cells.get(None, 0.0):11.2f} "
                f"{sum(s for i, s in cells.items() if i is not None):6.2f} {spans['correctness checks']:7.2f} "
                f"{spans['speed checks']:6.2f}  " + ", ".join(f"cell {i} {s:.2f}" for s, i in slowest)
                + (f" (reference child start {spans['reference child start']:.2f})" if spans["reference child start"] else "")
                + ("" if result.score == result.max_score else f" LOST POINTS {result.score}/{result.max_score}")
            )  # fmt: skip
    finally:
        record._Children._start, record._run_check, record._Children.reference_fn = (
            _start,
            _run_check,
            _reference_fn,
        )
        Sandbox.fork_server = fork_server
        scratch.cleanup()


def main() -> None:
    parser = argparse.ArgumentParser(
        prog="python -m autograder.benchmark", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--students", type=int, default=4)
    parser.add_argument(
        "--assignment", help="a course assignment (solutions/<A>) instead of the demo, or 'all' of them"
    )
    parser.add_argument(
        "--clusters", nargs="+", default=["1", "2", "loopback"], choices=["1", "2", "loopback"]
    )
    parser.add_argument("--profile", action="store_true", help="where each notebook's time goes, then stop")
    args = parser.parse_args()
    assignments = _assignments(args.assignment)
    if args.profile:
        profile(assignments)
        return
    print(f"load average at the start: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    runs = {}
    for what in args.clusters:
        if what == "loopback":
            with LoopbackCluster(workers=2) as cluster:
                runs["2 workers, loopback Dask"] = run(args.students, 2, assignments, cluster.address)
        else:
            runs[f"{what} worker{'s' if what != '1' else ''}"] = run(args.students, int(what), assignments)
    print(
        f"{args.students} students x {len(assignments)} notebook(s) of {args.assignment or 'the demo'}, score of "
        f"record, on {os.cpu_count()} CPUs (load average {' '.join(f'{x:.1f}' for x in os.getloadavg())} "
        "at the end):"
    )
    print(
        f"  {'cluster':<26} {'total s':>8} {'s/student-notebook':>19} {'students/min':>13} "
        f"{'worker s/notebook':>18} {'instructor s/notebook':>22}"
    )
    for what, r in runs.items():
        print(
            f"  {what:<26} {r['seconds']:8.1f} {r['per_notebook']:19.2f} {r['students_per_minute']:13.1f} "
            f"{r['worker_per_notebook']:18.2f} {r['instructor_per_notebook']:22.2f}"
        )
    if len(assignments) > 1:
        print("  s per student-notebook by notebook (worker s in brackets):")
        print(f"  {'notebook':<16}" + "".join(f" {what:>26}" for what in runs))
        for name in assignments:
            row = "".join(
                f" {r['per'][name]['seconds'] / r['per'][name]['notebooks']:17.2f} "
                f"({r['per'][name]['worker'] / r['per'][name]['notebooks']:6.2f})"
                for r in runs.values()
            )
            print(f"  {name:<16}{row}")
    if "1 worker" in runs and "2 workers" in runs:
        print(f"  speedup with 2 workers: {runs['1 worker']['seconds'] / runs['2 workers']['seconds']:.2f}x")


if __name__ == "__main__":
    main()
