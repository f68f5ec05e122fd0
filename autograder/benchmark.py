"""Seconds per student per notebook, and the speedup with 2 workers:

    python -m autograder.benchmark [--students 4]

Grades ``--students`` copies of the demo's correct submission with 1 worker, then with 2, each in a fresh
course folder, and prints the wall time per student per notebook and the speedup.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

from autograder import cli
from autograder.demo.build import write_submissions


def run(students: int, workers: int) -> float:
    os.environ["POSREF_COURSE_DIR"] = tempfile.mkdtemp(prefix=f"posref-bench-{workers}-")
    os.environ["POSREF_SOURCE_DIR"] = "autograder/demo/source"
    os.environ["POSREF_RELEASE_DIR"] = str(cli.course_dir() / "release")
    cli.release("positions")
    with tempfile.TemporaryDirectory() as tmp:
        write_submissions(
            cli.course_dir() / "release" / "positions" / "positions.ipynb", Path(tmp), ["correct"]
        )
        template = (Path(tmp) / "correct").rename(Path(tmp) / "student00")
        for i in range(1, students):
            target = Path(tmp) / f"student{i:02d}"
            target.mkdir()
            for f in template.iterdir():
                (target / f.name).write_bytes(f.read_bytes())
        cli.import_submissions(Path(tmp), "positions")
    start = time.perf_counter()
    results = cli.autograde("positions", workers=workers)
    elapsed = time.perf_counter() - start
    assert all(nb["score"] == nb["max_score"] for r in results for nb in r["notebooks"]), results
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--students", type=int, default=4)
    args = parser.parse_args()
    one = run(args.students, 1)
    two = run(args.students, 2)
    print(f"{args.students} students x 1 notebook (demo assignment, sandboxed score of record):")
    print(f"  1 worker : {one:6.1f} s total, {one / args.students:5.1f} s per student per notebook")
    print(f"  2 workers: {two:6.1f} s total, {two / args.students:5.1f} s per student per notebook")
    print(f"  speedup with 2 workers: {one / two:.2f}x")


if __name__ == "__main__":
    main()
