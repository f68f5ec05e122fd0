"""The five course notebooks: released copies in sync with their sources, no stored outputs, each solution runs
top to bottom (fast mode), and nbgrader's full round trip gives solutions full marks and releases zero.

The solutions in ``solutions/`` are the only place notebook content is written; ``notebooks/`` is what
``nbgrader generate_assignment`` makes of them. Set ``POSREF_NOTEBOOK_TIMES`` to a file path to have the run
times appended there (the tests print them too; see ``pytest -s``).
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
import pytest
from nbclient import NotebookClient

REPO = Path(__file__).resolve().parent.parent
ASSIGNMENTS = ["01_order", "02_absolute", "03_relative", "04_rope", "05_rope_analysis"]
CONFIG = REPO / "autograder" / "nbgrader_config.py"


def source(name: str) -> Path:
    return REPO / "solutions" / name / f"{name}.ipynb"


def release(name: str) -> Path:
    return REPO / "notebooks" / name / f"{name}.ipynb"


def _env(course_dir: Path) -> dict[str, str]:
    """Environment for nbgrader and kernels: this checkout's posref first, fast sizes, the venv's tools on PATH
    (nbgrader runs ``alembic`` to create a gradebook), the course data in a temporary folder."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    env["POSREF_FAST"] = "1"
    env["POSREF_COURSE_DIR"] = str(course_dir)
    return env


def _nbgrader(*args: str, course_dir: Path, check: bool = True) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "nbgrader", *args, f"--JupyterApp.config_file={CONFIG}"]
    done = subprocess.run(cmd, cwd=REPO, env=_env(course_dir), capture_output=True, text=True, timeout=900)
    if check and done.returncode != 0:
        raise AssertionError(f"{' '.join(args)} failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    return done


@pytest.mark.parametrize("name", ASSIGNMENTS)
def test_release_is_in_sync_with_its_source(name, tmp_path):
    """Regenerating the release from ``solutions/`` gives exactly the committed ``notebooks/`` file."""
    out = tmp_path / "release"
    _nbgrader(
        "generate_assignment",
        name,
        "--force",
        f"--CourseDirectory.release_directory={out}",
        course_dir=tmp_path,
    )
    fresh = json.loads((out / name / f"{name}.ipynb").read_text())
    committed = json.loads(release(name).read_text())
    assert len(fresh["cells"]) == len(committed["cells"]), f"{name}: regenerate notebooks/ with nbgrader"
    for i, (a, b) in enumerate(zip(fresh["cells"], committed["cells"], strict=True)):
        assert a == b, (
            f"{name}: cell {i} of notebooks/ differs from what nbgrader makes of solutions/; regenerate it"
        )
    assert fresh == committed, f"{name}: notebook metadata differs; regenerate notebooks/ with nbgrader"


@pytest.mark.parametrize(
    "path", [source(n) for n in ASSIGNMENTS] + [release(n) for n in ASSIGNMENTS], ids=str
)
def test_no_outputs_are_stored(path):
    nb = nbformat.read(path, as_version=4)
    nbformat.validate(nb)
    for i, cell in enumerate(nb.cells):
        if cell.cell_type == "code":
            assert cell.outputs == [] and cell.execution_count is None, (
                f"{path.name} cell {i} has stored outputs"
            )


def test_releases_hide_solutions_and_hidden_tests():
    for name in ASSIGNMENTS:
        text = release(name).read_text()
        for marker in ("BEGIN SOLUTION", "BEGIN HIDDEN TESTS", "hidden=True"):
            assert marker not in text, f"{name}: the release still contains {marker!r}"
        assert "raise NotImplementedError()" in text


def _report_time(label: str, seconds: float) -> None:
    line = f"{label}: {seconds:.1f} s"
    print(line)
    if os.environ.get("POSREF_NOTEBOOK_TIMES"):
        with open(os.environ["POSREF_NOTEBOOK_TIMES"], "a") as f:
            f.write(line + "\n")


@pytest.mark.slow
@pytest.mark.parametrize("name", ASSIGNMENTS)
def test_solution_runs_top_to_bottom(name, tmp_path, monkeypatch):
    """Every cell of the solution notebook runs without error in fast mode (``POSREF_FAST=1``)."""
    for key, value in _env(tmp_path).items():
        monkeypatch.setenv(key, value)
    nb = nbformat.read(source(name), as_version=4)
    client = NotebookClient(
        nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
    )
    start = time.perf_counter()
    client.execute()
    _report_time(f"{name} (solution, POSREF_FAST=1, nbclient)", time.perf_counter() - start)


@pytest.mark.slow
@pytest.mark.parametrize("name", ASSIGNMENTS)
def test_autograde_round_trip(name, tmp_path):
    """Through nbgrader autograde: the solution scores every autograded point, the untouched release scores 0."""
    from nbgrader.api import Gradebook

    course = tmp_path / "course"
    _nbgrader(
        "generate_assignment",
        name,
        "--force",
        "--CourseDirectory.release_directory=" + str(tmp_path / "rel"),
        course_dir=course,
    )
    for student, nb in (("solution", source(name)), ("release", release(name))):
        target = course / "submitted" / student / name
        target.mkdir(parents=True)
        shutil.copy(nb, target / nb.name)
    start = time.perf_counter()
    _nbgrader("autograde", name, "--create", "--force", course_dir=course)
    _report_time(f"{name} (autograde of both submissions)", time.perf_counter() - start)
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
