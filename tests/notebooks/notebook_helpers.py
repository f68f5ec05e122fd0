"""What the notebook tests (tests/notebooks/test_notebooks.py) need: paths, the environment for nbgrader and kernels,
generating releases, executing a notebook, grading.

Every subprocess and kernel gets this checkout's ``posref`` first on ``PYTHONPATH``, fast sizes
(``POSREF_FAST=1``) and a temporary course folder, never the user's. Set ``POSREF_NOTEBOOK_TIMES`` to a file
path to have the run times appended there (they are printed too; see ``pytest -s``).
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

REPO = Path(__file__).resolve().parents[2]
CONFIG = REPO / "autograder" / "nbgrader_config.py"


def source(name: str) -> Path:
    return REPO / "solutions" / name / f"{name}.ipynb"


def release(name: str) -> Path:
    return REPO / "notebooks" / name / f"{name}.ipynb"


def notebook_env(course_dir: Path, **extra: str) -> dict[str, str]:
    """Environment for nbgrader and kernels: this checkout's posref first, fast sizes, the venv's tools on PATH
    (nbgrader runs ``alembic`` to create a gradebook), the course data in ``course_dir``; plus ``extra``."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    env["POSREF_FAST"] = "1"
    env["POSREF_COURSE_DIR"] = str(course_dir)
    env.update(extra)
    return env


def nbgrader(*args: str, course_dir: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """``nbgrader ARGS`` from the repository root with the course config; a failure raises with its output."""
    cmd = [sys.executable, "-m", "nbgrader", *args, f"--JupyterApp.config_file={CONFIG}"]
    env = env if env is not None else notebook_env(course_dir)
    done = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=900)
    if done.returncode != 0:
        raise AssertionError(f"{' '.join(args)} failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    return done


_GENERATE_ALL = """
import sys
from pathlib import Path
from nbgrader.apps import NbGraderAPI
from traitlets.config.loader import PyFileConfigLoader

config_file, release_dir, *names = sys.argv[1:]
config = PyFileConfigLoader(Path(config_file).name, path=str(Path(config_file).parent)).load_config()
config.CourseDirectory.release_directory = release_dir
api = NbGraderAPI(config=config)
for name in names:
    result = api.generate_assignment(name, force=True)
    if not result["success"]:
        sys.exit("generate_assignment " + name + " failed:\\n" + result["error"] + "\\n" + result["log"])
"""


def autograder(*args: str, env: dict[str, str]) -> str:
    """``python -m autograder ARGS`` in this checkout with ``env``; fails the test on a non-zero exit -> its
    stdout and stderr."""
    done = subprocess.run(
        [sys.executable, "-m", "autograder", *args],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, f"autograder {' '.join(args)}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done.stdout + done.stderr


def generate_releases(course_dir: Path, names: list[str]) -> Path:
    """Generate every assignment in ``names`` from ``solutions/`` into ``<course_dir>/release`` with nbgrader, in
    one process (nbgrader takes seconds to start); returns that folder."""
    out = course_dir / "release"
    cmd = [sys.executable, "-c", _GENERATE_ALL, str(CONFIG), str(out), *names]
    done = subprocess.run(
        cmd, cwd=REPO, env=notebook_env(course_dir), capture_output=True, text=True, timeout=900
    )
    assert done.returncode == 0, (
        f"nbgrader generate_assignment failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    )
    return out


def assert_in_sync(name: str, release_dir: Path) -> None:
    """The committed ``notebooks/`` copy equals what nbgrader made of ``solutions/`` (first differing cell named)."""
    fresh = json.loads((release_dir / name / f"{name}.ipynb").read_text())
    committed = json.loads(release(name).read_text())
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


def assert_release_hides_solutions(name: str, extra_markers: tuple[str, ...] = ()) -> None:
    text = release(name).read_text()
    for marker in ("BEGIN SOLUTION", "BEGIN HIDDEN TESTS", "hidden=True", *extra_markers):
        assert marker not in text, f"{name}: the release still contains {marker!r}"
    assert "raise NotImplementedError(" in text


def report_time(label: str, seconds: float) -> None:
    line = f"{label}: {seconds:.1f} s"
    print(line)
    if os.environ.get("POSREF_NOTEBOOK_TIMES"):
        with open(os.environ["POSREF_NOTEBOOK_TIMES"], "a") as f:
            f.write(line + "\n")


def execute_at_defaults(name: str, tmp_path: Path, monkeypatch, *, nb=None, timeout: int = 1800):
    """Run every cell of the solution ``name`` (or of ``nb``, a changed copy of it) at its default sizes on the CPU
    (no ``POSREF_FAST``, one thread, CUDA hidden: the sizes its text quotes), report the seconds and return the
    executed notebook."""
    for key, value in notebook_env(tmp_path, POSREF_THREADS="1", CUDA_VISIBLE_DEVICES="").items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("POSREF_FAST")
    nb = nbformat.read(source(name), as_version=4) if nb is None else nb
    client = NotebookClient(
        nb, timeout=timeout, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
    )
    start = time.perf_counter()
    client.execute()
    report_time(f"{name} (solution, defaults, CPU, nbclient)", time.perf_counter() - start)
    return nb


def sandbox_problem() -> str | None:
    from autograder.sandbox.sandbox import Sandbox

    return Sandbox().problem


def assert_round_trip(
    name: str, course: Path, monkeypatch, *, clean: bool = False, scheduler: str | None = None
) -> None:
    """The solution earns every autograded point and the untouched release earns 0, in nbgrader's gradebook.

    Graded the way the course grades: ``python -m autograder autograde`` (nbgrader's autograde, then the score
    of record: answer cells run in a sandboxed child, the checkers in hidden mode in the grader). Where the
    sandbox cannot start, plain ``nbgrader autograde`` (checkers in the notebook's kernel) is used instead.
    ``clean``: also require that every cell of the solution ran without error in the sandbox. ``scheduler``: the
    Dask scheduler whose workers grade (else a local cluster started for this call).
    """
    from nbgrader.api import Gradebook

    submissions = {"solution": source(name), "release": release(name)}
    for student, nb in submissions.items():
        target = course / "submitted" / student / name
        target.mkdir(parents=True, exist_ok=True)
        shutil.copy(nb, target / nb.name)
    start = time.perf_counter()
    problem = sandbox_problem()
    # as the grader's sandbox does: POSREF_GRADING=1, so notebooks train nothing
    for key, value in notebook_env(course, POSREF_GRADING="1").items():
        monkeypatch.setenv(key, value)
    if problem is None:
        from autograder.grading.grade import autograde

        results = {
            r["student"]: r
            for r in autograde(name, workers=2, students=list(submissions), scheduler=scheduler)
        }
        for student, result in results.items():
            assert "error" not in result, f"{name}, {student}: the grader failed: {result['error']}"
            (record,) = result["notebooks"]
            assert record["status"] == "graded", f"{name}, {student}: {record}"
        solved, untouched = results["solution"]["notebooks"][0], results["release"]["notebooks"][0]
        messages = "\n".join(c["message"] for c in solved["cells"] if c["message"])
        assert solved["max_score"] > 0 and solved["score"] == solved["max_score"], f"{name}: {messages}"
        assert untouched["score"] == 0, f"{name}: the untouched release scored {untouched['score']}"
        if clean:
            assert solved["problems"] == [], f"{name}: cells failed in the sandbox: {solved['problems']}"
        how = "score of record"
    else:
        env = dict(os.environ, POSREF_ALLOW_PLAIN_AUTOGRADE="1")  # the course's own solutions: trusted
        nbgrader("autograde", name, "--create", "--force", course_dir=course, env=env)
        how = f"plain nbgrader autograde; sandbox unavailable: {problem}"
    report_time(f"{name} (autograde of both submissions, {how})", time.perf_counter() - start)
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}", "posref") as gb:
        solved = gb.find_submission(name, "solution")
        untouched = gb.find_submission(name, "release")
        assert solved.max_code_score > 0
        assert solved.code_score == solved.max_code_score, (
            f"{name}: the solution scored {solved.code_score} of {solved.max_code_score} autograded points"
        )
        assert untouched.code_score == 0, (
            f"{name}: the untouched release scored {untouched.code_score} points"
        )
