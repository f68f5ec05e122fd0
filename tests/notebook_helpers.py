"""Shared helpers for the notebook tests: paths, nbgrader runs, executing a notebook, autograding.

One place for what every notebook test needs, so that each test file only lists its assignments: ``source`` and
``release`` paths, ``regenerate`` (what nbgrader makes of a source today), ``execute`` (run a notebook top to bottom
with nbclient in fast mode) and ``autograde`` (nbgrader's full round trip for a solution and an untouched
release). Every subprocess and kernel gets this checkout's ``posref`` first on ``PYTHONPATH`` and a temporary
course directory, never the user's.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient

REPO = Path(__file__).resolve().parent.parent
CONFIG = REPO / "autograder" / "nbgrader_config.py"


def source(name: str) -> Path:
    return REPO / "solutions" / name / f"{name}.ipynb"


def release(name: str) -> Path:
    return REPO / "notebooks" / name / f"{name}.ipynb"


def notebook_env(course_dir: Path, **extra: str) -> dict[str, str]:
    """The environment for nbgrader and kernels: this checkout's posref first, fast sizes, the venv's tools on
    PATH (nbgrader runs ``alembic`` to create a gradebook), the course data in ``course_dir``; plus ``extra``."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    env["POSREF_FAST"] = "1"
    env["POSREF_COURSE_DIR"] = str(course_dir)
    env.update(extra)
    return env


def nbgrader(*args: str, course_dir: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """Run ``nbgrader ARGS`` from the repository root with the course config; a failure raises with its output."""
    cmd = [sys.executable, "-m", "nbgrader", *args, f"--JupyterApp.config_file={CONFIG}"]
    env = env if env is not None else notebook_env(course_dir)
    done = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=900)
    if done.returncode != 0:
        raise AssertionError(
            f"nbgrader {' '.join(args)} failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
        )
    return done


def regenerate(name: str, tmp_path: Path) -> dict:
    """What ``nbgrader generate_assignment`` makes of ``solutions/<name>`` now, as a JSON dict."""
    out = tmp_path / "release"
    nbgrader(
        "generate_assignment",
        name,
        "--force",
        f"--CourseDirectory.release_directory={out}",
        course_dir=tmp_path,
    )
    return json.loads((out / name / f"{name}.ipynb").read_text())


def assert_in_sync(name: str, tmp_path: Path) -> None:
    """The committed release equals a fresh one, cell by cell (the first differing cell is named)."""
    fresh, committed = regenerate(name, tmp_path), json.loads(release(name).read_text())
    assert len(fresh["cells"]) == len(committed["cells"]), f"{name}: regenerate notebooks/ with nbgrader"
    for i, (a, b) in enumerate(zip(fresh["cells"], committed["cells"], strict=True)):
        assert a == b, (
            f"{name}: cell {i} of notebooks/ differs from what nbgrader makes of solutions/; regenerate it"
        )
    assert fresh == committed, f"{name}: notebook metadata differs; regenerate notebooks/ with nbgrader"


def assert_no_outputs(path: Path) -> None:
    nb = nbformat.read(path, as_version=4)
    nbformat.validate(nb)
    for i, cell in enumerate(nb.cells):
        if cell.cell_type == "code":
            assert cell.outputs == [] and cell.execution_count is None, (
                f"{path.name} cell {i} has stored outputs"
            )


def report_time(label: str, seconds: float) -> None:
    """Print a run time (see ``pytest -s``) and append it to ``$POSREF_NOTEBOOK_TIMES`` when that is set."""
    line = f"{label}: {seconds:.1f} s"
    print(line)
    if os.environ.get("POSREF_NOTEBOOK_TIMES"):
        with open(os.environ["POSREF_NOTEBOOK_TIMES"], "a") as f:
            f.write(line + "\n")


def execute(path: Path, env: dict[str, str], workdir: Path, *, timeout: int = 600) -> float:
    """Run every cell of the notebook at ``path`` in a fresh kernel with ``env``; returns the seconds it took.

    The kernel inherits the environment of this process, so ``env`` is applied here and restored afterwards.
    """
    saved = dict(os.environ)
    os.environ.clear()
    os.environ.update(env)
    try:
        nb = nbformat.read(path, as_version=4)
        client = NotebookClient(
            nb, timeout=timeout, kernel_name="python3", resources={"metadata": {"path": str(workdir)}}
        )
        start = time.perf_counter()
        client.execute()
        return time.perf_counter() - start
    finally:
        os.environ.clear()
        os.environ.update(saved)


def autograde(name: str, tmp_path: Path, **extra_env: str) -> dict[str, tuple[float, float]]:
    """Autograde the solution and the untouched release as two students -> ``{student: (score, max_score)}``
    of the autograded code cells."""
    from nbgrader.api import Gradebook

    course = tmp_path / "course"
    env = notebook_env(course, **extra_env)
    nbgrader(
        "generate_assignment",
        name,
        "--force",
        f"--CourseDirectory.release_directory={tmp_path / 'rel'}",
        course_dir=course,
        env=env,
    )
    for student, nb in (("solution", source(name)), ("release", release(name))):
        target = course / "submitted" / student / name
        target.mkdir(parents=True)
        shutil.copy(nb, target / nb.name)
    start = time.perf_counter()
    nbgrader("autograde", name, "--create", "--force", course_dir=course, env=env)
    report_time(f"{name} (autograde of a solution and a release)", time.perf_counter() - start)
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}", "posref") as gb:
        return {
            student: (
                gb.find_submission(name, student).code_score,
                gb.find_submission(name, student).max_code_score,
            )
            for student in ("solution", "release")
        }
