"""README's route without make (Windows, macOS): its commands are the Makefile's, and they run here without make.

The set-up is not redone (no torch reinstall): the venv command runs in a temporary folder, and the pip commands
run against this checkout's venv with ``--dry-run --no-index``, which must find every requirement satisfied.
"""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
# make's variables as `make lab` and `make test` spell them out (EDITION_ARGS: none for the English edition)
MAKE_VARS = {"$(PY)": "python", "$(PYTHON)": "python", "$(VENV)": ".venv", "$(EDITION_ARGS)": ""}


def readme_commands(text: str) -> list[list[str]]:
    """The commands of the README's block under "Without make", comments dropped, activation left out."""
    section = text.split("## Without make", 1)[1].split("\n## ", 1)[0]
    (block,) = re.findall(r"```bash\n(.*?)```", section, flags=re.S)
    commands = [shlex.split(line, comments=True) for line in block.splitlines()]
    return [c for c in commands if c and c[0] not in ("source", ".")]


def make_commands(text: str, targets: tuple[str, ...]) -> list[list[str]]:
    """The python commands the recipes of ``targets`` run (and of the rules they depend on, first), with make's
    variables spelled out and pip's ``-q`` dropped."""
    rules = {}
    for match in re.finditer(r"^([^\s#:=]+):([^=\n]*)\n((?:\t.*\n)*)", text, flags=re.M):
        deps = [d for d in match[2].split() if d != "|"]  # order-only ones (after |) run first all the same
        rules[match[1]] = (deps, [line[1:] for line in match[3].splitlines()])
    seen: list[list[str]] = []

    def visit(target: str) -> None:
        deps, recipe = rules.get(target, ([], []))
        for dep in deps:
            visit(dep)
        for line in recipe:
            if not line.startswith(("$(PY) ", "$(PYTHON) ")):  # the shell of the fonts and packages rules
                continue
            words = [MAKE_VARS.get(w, w) for w in shlex.split(line) if MAKE_VARS.get(w) != ""]
            if words[2] == "pip":
                words = [w for w in words if w != "-q"]
            if words not in seen:
                seen.append(words)

    for target in targets:
        visit(target)
    return seen


def test_the_readme_route_is_the_makefiles():
    readme = readme_commands((REPO / "README.md").read_text())
    make = make_commands((REPO / "Makefile").read_text(), ("lab", "test"))
    assert make == [
        ["python", "-m", "venv", ".venv"],
        ["python", "-m", "pip", "install", "--upgrade", "pip"],
        ["python", "-m", "pip", "install", "-c", "constraints.txt", "-e", ".[course]"],  # a student's tools
        ["python", "-m", "posref", "lab"],
        ["python", "-m", "pip", "install", "-c", "constraints.txt", "-e", ".[dev]"],  # and the test tools
        ["python", "-m", "pytest", "-q", "-n", "auto", "--durations=25"],  # every CPU, the 25 slowest
    ], "the Makefile's set-up, lab or test recipe changed: update README's route without make and this list"
    assert readme == make


def test_make_commands_reads_a_rule_and_its_dependencies():  # the parser above, on a Makefile of its own
    text = "a: b | c\n\t$(PY) -m x -q\n\techo hi\nb:\n\t$(PY) -m pip install -q y\nc:\n\t$(PY) -m z\n"
    assert make_commands(text, ("a",)) == [
        ["python", "-m", "pip", "install", "y"],
        ["python", "-m", "z"],
        ["python", "-m", "x", "-q"],
    ]


@pytest.mark.slow  # a venv with pip (ensurepip, offline), two pip dry runs, two interpreters: about 15 s
def test_the_readme_route_runs_without_make(tmp_path):
    commands = readme_commands((REPO / "README.md").read_text())
    python = sys.executable  # this checkout's venv, as after `activate`

    def run(command: list[str], cwd: Path, *extra: str) -> subprocess.CompletedProcess:
        assert command[0] == "python", command
        done = subprocess.run(
            [python, *command[1:], *extra], cwd=cwd, capture_output=True, text=True, timeout=300
        )
        assert done.returncode == 0, f"{shlex.join(command)}:\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}"
        return done

    venv, upgrade, course, lab, dev, tests = commands
    run(venv, tmp_path)  # in a folder of its own: this checkout's .venv stays as it is
    made = tmp_path / ".venv"
    made_python = made / ("Scripts/python.exe" if sys.platform == "win32" else "bin/python")
    assert subprocess.run([made_python, "-m", "pip", "--version"], capture_output=True).returncode == 0
    for i, pip in enumerate((upgrade, course, dev)):
        report = tmp_path / f"pip-{i}.json"
        run(pip, REPO, "--dry-run", "--no-index", "--no-build-isolation", "--report", str(report))
        would = [item["metadata"]["name"] for item in json.loads(report.read_text())["install"]]
        assert set(would) <= {"posref"}, f"{shlex.join(pip)} would install {would}: a pin or extra is off"
    assert "--folder" in run([*lab, "--help"], REPO).stdout
    version = run([*tests, "--version"], REPO)
    assert "pytest" in version.stdout + version.stderr
