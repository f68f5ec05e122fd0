"""How long ``python -m autograder similar`` and ``stats`` take on a class of 100 students, and their peak memory
(issue 40.4). A measurement, not a test (timings depend on the machine and its load); run it by hand:

    python tests/autograder/class_view_timing.py similar [--students 100]
    python tests/autograder/class_view_timing.py stats --course GRADED_COURSE [--students 100]

``similar``: a course of ``--students`` students in every notebook of ``solutions/``, each answer cell of each
student one of: a disguised copy of the solution, a disguised copy of an independent answer (``test_similar.py``'s),
the release's stub, so that every kind of pair occurs; then ``similar`` on each assignment, one command each.
``stats``: the students of a course already graded (``test_class_stats.py``'s, left in pytest's temporary folder)
copied under new ids (their records saying so) up to ``--students``; then ``stats`` on each of its assignments. Each
command runs in its own process: its wall time, CPU time and peak resident memory (of the child) are printed.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]


def _timed(command: list[str], env: dict) -> tuple[float, float, float, str]:
    """Wall seconds, CPU seconds and peak MiB of one command (run alone, so that ``RUSAGE_CHILDREN`` is its own).
    On a loaded machine the wall time is mostly waiting for a CPU: the CPU time is what the command needs."""
    code = ("import resource, subprocess, sys; done = subprocess.run(sys.argv[1:], capture_output=True, text=True); "
            "used = resource.getrusage(resource.RUSAGE_CHILDREN); print(used.ru_maxrss, used.ru_utime + used.ru_stime); "
            "print(done.returncode); "
            "print(done.stdout[-3000:] + done.stderr[-3000:])")  # fmt: skip
    start = time.perf_counter()
    out = subprocess.run(
        [sys.executable, "-c", code, *command], env=env, capture_output=True, text=True, check=True
    )
    seconds = time.perf_counter() - start
    used, status, text = out.stdout.split("\n", 2)
    if status != "0":
        raise SystemExit(f"{' '.join(command)} failed:\n{text}")
    peak, cpu = used.split()
    return seconds, float(cpu), int(peak) / 1024, text


def similar_class(folder: Path, students: int) -> list[str]:
    sys.path[:0] = [str(HERE), str(REPO / "tests")]
    import test_similar as t
    from disguise import disguised

    assignments = t.ASSIGNMENTS
    for assignment in assignments:
        variants = t._class(assignment)
        kinds = [variants["copy-a"], variants["indep1"], variants["indep2"], variants["release"]]
        for k in range(students):
            nb = json.loads(json.dumps(kinds[k % len(kinds)]))
            for cell in t._cells(nb).values():
                try:
                    cell["source"] = disguised(cell["source"], f"s{k}")
                except SyntaxError:
                    pass  # a stub that does not parse stays as released
            target = folder / "submitted" / f"s{k:03d}" / assignment / f"{assignment}.ipynb"
            target.parent.mkdir(parents=True)
            target.write_text(json.dumps(nb))
    return assignments


def stats_class(folder: Path, graded: Path, students: int) -> list[str]:
    assignments = sorted(p.name for p in (graded / "records").iterdir())
    shutil.copytree(graded, folder, dirs_exist_ok=True, symlinks=True)
    originals = sorted(p.stem for p in (graded / "records" / assignments[0]).glob("*.json"))
    for k in range(students - len(originals)):
        source, copy = originals[k % len(originals)], f"copy{k:03d}"
        for assignment in assignments:
            if (graded / "submitted" / source / assignment).is_dir():
                shutil.copytree(
                    graded / "submitted" / source / assignment, folder / "submitted" / copy / assignment
                )
            record = graded / "records" / assignment / f"{source}.json"
            if record.is_file():
                data = json.loads(record.read_text())
                data["student"] = copy
                (folder / "records" / assignment / f"{copy}.json").write_text(json.dumps(data))
    return assignments


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("command", choices=["similar", "stats"])
    parser.add_argument("--course", type=Path, help="stats: a graded course folder")
    parser.add_argument("--students", type=int, default=100)
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="class-view-"))
    try:
        env = {**os.environ, "POSREF_COURSE_DIR": str(folder), "PYTHONPATH": str(REPO)}
        env.pop("POSREF_RELEASE_DIR", None)
        if args.command == "similar":
            assignments = similar_class(folder, args.students)
        elif args.course is None:
            raise SystemExit("stats needs --course: a graded course folder (test_class_stats.py's)")
        else:
            assignments = stats_class(folder, args.course, args.students)
            env["POSREF_RELEASE_DIR"] = str(args.course / "release")
        total = total_cpu = 0.0
        for assignment in assignments:
            seconds, cpu, peak, text = _timed(
                [sys.executable, "-m", "autograder", args.command, assignment], env
            )
            total, total_cpu = total + seconds, total_cpu + cpu
            print(
                f"{args.command} {assignment}: {seconds:.1f} s ({cpu:.1f} s of CPU), peak {peak:.0f} MiB; "
                f"{text.splitlines()[0]}"
            )
        print(
            f"{args.command}, {args.students} students, {len(assignments)} assignment(s): {total:.1f} s in all "
            f"({total_cpu:.1f} s of CPU)"
        )
        print(f"(load average {os.getloadavg()[0]:.1f}, {os.cpu_count()} CPUs)")
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
