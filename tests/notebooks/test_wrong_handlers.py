"""Score of record of notebooks 02, 03, 06 and 08 with a wrong position module, bias, handler or drop: it loses
exactly its own test cell (and its hint names the mistake) and, where the mistake shows on the timed inputs, its
speed cell (the speed check verifies the timed function's outputs first); every other cell keeps its points.

Each submission is the solution with one answer cell rewritten the way a student might get it wrong: in 06, RoPE
applied to the token vectors (so the values are rotated too), RoPE counting positions from 1 whatever it is given
(off by one, and blind to a KV-cache offset), ALiBi with its sign flipped; in 08, a drop that swaps the handler of
the model it was given instead of a copy's, and a NoPEHandler pasted in from 06 that still rotates like RoPE (08 has
no test of its own for it: it costs the drop's test, where the dropped model still rotates); in 02, a learned table read at arange(T) whatever positions it is
given; in 03, T5's learned bias with query - key for key - query; in 07, Dynamic NTK with a fixed alpha and a
mutation that adds the noise.
"""

from __future__ import annotations

import re
import shutil

import nbformat
import notebook_helpers as nh
import pytest

from autograder.grading.record import grade_notebook
from autograder.sandbox.sandbox import Sandbox

pytestmark = pytest.mark.xdist_group("sandbox")  # children as Sandbox()'s default uid: see tests/conftest.py

ROPE_FUNCTIONS = """
def rope_cos_sin(positions, inv_freq):
    angles = positions.float()[..., None] * inv_freq.float()
    return angles.cos(), angles.sin()


def apply_rope(x, cos, sin, layout="half"):
    r = cos.shape[-1]
    a, b, rest = x[..., :r], x[..., r : 2 * r], x[..., 2 * r :]
    return torch.cat((a * cos - b * sin, b * cos + a * sin, rest), dim=-1)


def angles(head_dim, base, positions):
    inv_freq = base ** (-2 * torch.arange(head_dim // 2, dtype=torch.float32) / head_dim)
    return rope_cos_sin(positions, inv_freq.to(positions.device))


class RoPESizes(PositionHandler):
    def __init__(self, head_dim, base=10000.0):
        super().__init__()
        self.head_dim, self.base = head_dim, base
"""

ROTATES_THE_TOKENS = (
    ROPE_FUNCTIONS
    + """
class RoPEHandler(RoPESizes):
    def embed(self, x, positions):
        B, T, C = x.shape
        heads = x.view(B, T, C // self.head_dim, self.head_dim).transpose(1, 2)
        rotated = apply_rope(heads, *angles(self.head_dim, self.base, positions))
        return rotated.transpose(1, 2).reshape(B, T, C)
"""
)

COUNTS_FROM_ONE = (
    ROPE_FUNCTIONS
    + """
class RoPEHandler(RoPESizes):
    def rotate(self, q, k, positions):
        def turn(x):
            own = torch.arange(1, x.shape[-2] + 1, device=x.device)
            return apply_rope(x, *angles(self.head_dim, self.base, own))

        return turn(q), turn(k)
"""
)

ALIBI_SIGN_FLIPPED = """
class ALiBiHandler(PositionHandler):
    def __init__(self, n_heads):
        super().__init__()
        c = 2 ** int(math.log2(n_heads))  # the paper's rule for any number of heads, as in notebook 03
        slopes = [2.0 ** (-8.0 * h / c) for h in range(1, c + 1)]
        self.slopes = torch.tensor(slopes + [2.0 ** (-4.0 * h / c) for h in range(1, 2 * c, 2)][: n_heads - c])

    def bias(self, q_positions, k_positions):
        distance = (q_positions[:, None] - k_positions[None, :]).abs().float()
        return self.slopes.to(distance.device)[:, None, None] * distance
"""

DROP_IN_PLACE = """
def drop(model):
    model.positions = NoPEHandler()
    return model
"""

NOPE_STILL_ROTATES = """
class NoPEHandler(PositionHandler):
    def rotate(self, q, k, positions):
        d = q.shape[-1]
        inv_freq = 50.0 ** (-2 * torch.arange(d // 2, dtype=torch.float32, device=q.device) / d)
        angles = positions.float()[:, None] * inv_freq
        cos, sin = angles.cos(), angles.sin()

        def turn(x):
            a, b = x[..., : d // 2], x[..., d // 2 :]
            return torch.cat((a * cos - b * sin, b * cos + a * sin), dim=-1)

        return turn(q), turn(k)
"""

TABLE_FROM_ZERO = """
from torch import nn


class LearnedPositions(nn.Module):
    def __init__(self, max_positions, dim):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(max_positions, dim) * 0.02)

    def forward(self, x, positions):
        if int(positions.min()) < 0 or int(positions.max()) >= self.weight.shape[0]:
            raise IndexError(f"position {int(positions.max())} is past the {self.weight.shape[0]} rows")
        return x + self.weight[: x.shape[1]]
"""

T5_QUERY_MINUS_KEY = """
def t5_learned_bias(weight, q_positions, k_positions, bidirectional=True, max_distance=128):
    rel = q_positions[:, None] - k_positions[None, :]
    buckets = t5_bucket(rel, bidirectional, weight.shape[0], max_distance)
    return weight[buckets].permute(2, 0, 1)
"""

NTK_BASE_TIMES_FACTOR = """
def ntk_frequencies(head_dim, base, params, seq_len=None):
    return plain_inv_freq(head_dim, base * params["factor"]), 1.0
"""

MUTATION_ADDS_NOISE = """
def longrope_mutation(parent, which, noise, low, high, monotone):
    child = torch.where(which, parent + noise, parent).clamp(low, high)
    return torch.cummax(child, dim=0).values if monotone else child
"""

WRONG = {
    "values rotated": ("rope_handler", ROTATES_THE_TOKENS, "test_rope_handler", "rotating the token vectors"),
    "positions off by one": ("rope_handler", COUNTS_FROM_ONE, "test_rope_handler", "positions you are given"),
    "alibi sign flipped": ("alibi_handler", ALIBI_SIGN_FLIPPED, "test_alibi_handler", "a penalty"),
    "drop in place": ("drop", DROP_IN_PLACE, "test_drop", "changed the model it was given"),
    "08's pasted nope rotates": ("nope_handler", NOPE_STILL_ROTATES, "test_drop", "still rotates"),
    "table read from 0": ("LearnedPositions", TABLE_FROM_ZERO, "test_learned_positions", "not at arange(T)"),
    "t5 query - key": ("t5_learned_bias", T5_QUERY_MINUS_KEY, "test_t5_learned_bias", "not query - key"),
    "ntk base times the factor": (
        "ntk_frequencies",
        NTK_BASE_TIMES_FACTOR,
        "test_ntk_frequencies",
        "not base * factor",
    ),
    "mutation adds the noise": (
        "longrope_mutation",
        MUTATION_ADDS_NOISE,
        "test_longrope_mutation",
        "add the noise",
    ),
}
NOTEBOOK = {"drop": "08_nope", "LearnedPositions": "02_absolute", "t5_learned_bias": "03_relative"}
NOTEBOOK |= {"ntk_frequencies": "07_scaling", "longrope_mutation": "07b_longrope"}
IN_08 = {"08's pasted nope rotates"}  # an answer id 06 has too: graded in 06, only used by the drop in 08
TESTS = {
    "06_length": {
        "test_per_position_loss",
        "test_per_position_loss_speed",
        "test_rope_handler",
        "test_rope_handler_speed",
        "test_alibi_handler",
        "test_alibi_handler_speed",
        "test_nope_handler",
    },
    "08_nope": {"test_causal_mean", "test_causal_mean_speed", "test_drop"},  # NoPEHandler: graded in 06 only
    "02_absolute": {
        "test_learned_positions",
        "test_sinusoidal_pe",
        "test_sinusoidal_pe_speed",
        "test_shift_matrix",
    },
    "03_relative": {
        "test_alibi_slopes",
        "test_alibi_bias",
        "test_alibi_bias_speed",
        "test_t5_bucket",
        "test_t5_bucket_speed",
        "test_t5_learned_bias",
        "test_t5_learned_bias_speed",
    },
    "07_scaling": {
        "test_linear_frequencies",
        "test_ntk_by_parts_frequencies",
        "test_ntk_frequencies",
        "test_yarn_frequencies",
    },
    "07b_longrope": {"test_longrope_mutation"},
}


@pytest.mark.skipif(nh.sandbox_problem() is not None, reason=f"sandbox unavailable: {nh.sandbox_problem()}")
@pytest.mark.slow
@pytest.mark.parametrize("wrong", WRONG, ids=str)
def test_a_wrong_handler_loses_exactly_its_own_cell(wrong, tmp_path, monkeypatch):
    answer_id, answer, test_id, hint = WRONG[wrong]
    for key, value in nh.notebook_env(tmp_path).items():
        monkeypatch.setenv(key, value)
    notebook = "08_nope" if wrong in IN_08 else NOTEBOOK.get(answer_id, "06_length")
    source = nh.source(notebook)
    nb = nbformat.read(source, as_version=4)
    (cell,) = [c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == answer_id]
    cell.source = answer.strip()
    submitted = tmp_path / "student" / source.name
    submitted.parent.mkdir()
    nbformat.write(nb, submitted)
    record = grade_notebook(source, submitted, sandbox=Sandbox(), scratch_base=tmp_path / "scratch")
    shutil.rmtree(tmp_path / "scratch", ignore_errors=True)
    assert record.status == "graded", record
    cells = {c.grade_id: c for c in record.cells}
    assert cells[test_id].score == 0 and re.search("hint:.*" + re.escape(hint), cells[test_id].message), (
        cells[test_id].message
    )
    # its speed cell (if any) checks the timed shape first: lost where the mistake shows there (a sign flip), kept
    # where it does not (counting from 1 moves queries and keys alike, so a prefill from 0 scores the same)
    speed = cells.get(test_id + "_speed")
    lost = {test_id} | ({speed.grade_id} if speed is not None and speed.score < speed.points else set())
    if speed is not None and speed.grade_id in lost:
        # the speed check says in one line that the correctness cell above fails (issue 26.5)
        assert speed.score == 0 and speed.message.startswith("not timed:"), speed.message
    kept = {grade_id: c.score for grade_id, c in cells.items() if grade_id not in lost}
    assert kept == {grade_id: c.points for grade_id, c in cells.items() if grade_id not in lost}
    assert set(cells) == TESTS[notebook]
