"""The code, the notebooks and the README's examples stay lint-clean and formatted (ruff, settings in pyproject)."""

import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("ruff", reason="ruff is in the dev extra: pip install -e '.[dev]'")
ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("command", [["check"], ["format", "--check"]], ids=["check", "format"])
def test_ruff(command):
    result = subprocess.run(
        [sys.executable, "-m", "ruff", *command, "--no-cache", "."],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, f"ruff {' '.join(command)} found problems:\n{result.stdout}{result.stderr}"
