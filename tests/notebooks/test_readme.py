"""The README's library example runs as printed and does what its comments say."""

import re
import shlex
import subprocess
from pathlib import Path

import pytest
import torch

README = Path(__file__).resolve().parents[2] / "README.md"


def test_the_library_example_runs_and_its_comments_hold():
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)
    assert blocks, "README.md has no python example"
    namespace: dict = {}
    for block in blocks:
        exec(compile(block, str(README), "exec"), namespace)
    # what the comments promise: plain RoPE tables for 4096 positions, q and k rotated with their own head counts,
    # an ALiBi bias of (heads, q, k)
    q, q_rot, k_rot = namespace["q"], namespace["q_rot"], namespace["k_rot"]
    assert namespace["cos"].shape == (4096, 64)
    assert q_rot.shape == q.shape and k_rot.shape == q.shape  # the module call rotates q and q
    torch.testing.assert_close(q_rot.norm(dim=-1), q.norm(dim=-1), rtol=1e-5, atol=1e-5)  # a rotation
    assert namespace["bias"].shape == (12, 16, 16)


def test_the_other_entry_points_run_as_written():
    """Each command of "Other entry points" is found as the README writes it, after `make lab` or `make setup`
    and without the venv activated (`make` does not activate it): run from the repository root with --help."""
    section = README.read_text().split("## Other entry points", 1)[1].split("\n## ", 1)[0]
    commands = [shlex.split(c) for c in re.findall(r"^\| `([^`]+)` \|", section, flags=re.M)]
    assert len(commands) >= 4, section
    venv = README.parent / ".venv" / "bin"
    for words in commands:
        assert words[0] in ("make", f".venv/bin/{Path(words[0]).name}"), (
            f"{shlex.join(words)}: after make, only make and the venv's .venv/bin/... are found as written"
        )
    if not venv.is_dir():
        pytest.skip(f"no {venv}: made by `make lab` or `make setup`, which this checkout has not run")
    for words in commands:
        if words[0] == "make":
            continue
        done = subprocess.run(
            [str(README.parent / words[0]), *words[1:], "--help"],
            cwd=README.parent,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0 and "usage:" in done.stdout, (
            f"{shlex.join(words)}:\n{done.stderr[-2000:]}"
        )
