"""The README's library example runs as printed and does what its comments say."""

import re
from pathlib import Path

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
