"""The course's paths and settings (autograder/course.py): read when called, and importing changes nothing."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys

import pytest

from autograder import course
from autograder.course import REPO

# every module of the package but the two entry points that run when imported: ``python -m autograder`` and
# the nbgrader configuration, which nbgrader executes by path (tests/notebooks/test_instructor_lab.py checks
# that loading it leaves the environment alone)
IMPORT_ALL = """
import importlib, json, os, pkgutil
before = dict(os.environ)
import autograder, autograder.demo
names = [m.name for m in pkgutil.walk_packages(autograder.__path__, "autograder.")
         if m.name not in ("autograder.__main__", "autograder.nbgrader_config")]
for name in names:
    importlib.import_module(name)
changed = sorted(k for k in set(before) | set(os.environ) if before.get(k) != os.environ.get(k))
print(json.dumps({"names": names, "changed": changed}))
"""


def test_importing_any_autograder_module_changes_nothing_in_the_environment():
    """Importing ``autograder.grading.record`` used to put the environment's scripts on PATH (for nbgrader's
    alembic)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run(
        [sys.executable, "-c", IMPORT_ALL], cwd=REPO, env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert {
        "autograder.grading.record",
        "autograder.grading.grade",
        "autograder.cli",
        "autograder.demo.run",
    } <= set(result["names"])
    assert result["changed"] == []


def test_no_module_imports_the_command_line_but_its_entry_point():
    importers = []
    for path in sorted((REPO / "autograder").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            names = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
            if "autograder.cli" in names:
                importers.append(str(path.relative_to(REPO)))
    assert importers == ["autograder/__main__.py"]


def test_paths_follow_the_environment_at_each_call(tmp_path, monkeypatch):
    monkeypatch.setenv("POSREF_COURSE_DIR", str(tmp_path / "one"))
    assert course.course_dir() == tmp_path / "one" and (tmp_path / "one").is_dir()
    assert course.gradebook_url() == f"sqlite:///{tmp_path / 'one' / 'gradebook.db'}?timeout=30"
    monkeypatch.setenv("POSREF_COURSE_DIR", str(tmp_path / "two"))
    assert course.course_dir() == tmp_path / "two"
    assert "01_order" in course.assignments()
    monkeypatch.setenv("POSREF_SOURCE_DIR", "autograder/demo/source")
    assert course.source_dir() == REPO / "autograder" / "demo" / "source"
    assert course.assignments() == ["positions"]
    with pytest.raises(SystemExit, match=r"no assignment '01_order' in .*\(the assignments: positions\)"):
        course.require_assignment("01_order")


def test_the_tools_are_on_path_inside_the_block_only(monkeypatch):
    monkeypatch.setenv("PATH", "/usr/bin")
    expected = os.pathsep.join([os.path.dirname(sys.executable), "/usr/bin"])
    assert course.tool_path() == expected
    with course.tools_on_path():
        assert os.environ["PATH"] == expected
    assert os.environ["PATH"] == "/usr/bin"
