"""posref's RoPE frequencies against frozen goldens written once from the transformers library.

tests/goldens/make_goldens.py wrote tests/goldens/rope_frequencies.npz (the library's version is stored in it);
these tests need only numpy, so the third layer of the tests (full tensors from an independent source) runs
where transformers is absent. Tolerances as for the live oracle: inv_freq to 1e-6 relative (float32 from two
float64 paths), the attention factor to 1e-12 relative, cos and sin to 2e-6 absolute (float32 angles).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch
from conftest import assert_close

from posref.config import rope_from_config
from posref.rope import RotaryEmbedding
from posref.scaling import SCALING_METHODS, rope_frequencies

GOLDENS = Path(__file__).resolve().parents[1] / "goldens" / "rope_frequencies.npz"
MODELS_JSON = Path(__file__).resolve().parents[2] / "data" / "model_configs.json"
MODELS = {entry["name"]: entry["config"] for entry in json.loads(MODELS_JSON.read_text())["models"]}

with np.load(GOLDENS, allow_pickle=False) as _file:
    GOLDEN = {name: _file[name] for name in _file.files}
CASES = json.loads(str(GOLDEN["cases"]))


def _golden(i: int) -> tuple[torch.Tensor, float]:
    return torch.from_numpy(GOLDEN[f"inv_freq_{i}"]), float(GOLDEN[f"attention_{i}"])


def _ids(kind: str) -> list[int]:
    return [i for i, case in enumerate(CASES) if case["kind"] == kind]


def test_the_goldens_come_from_transformers_5_and_cover_every_type_it_shares_with_posref():
    assert str(GOLDEN["transformers_version"]).startswith("5.")
    types = {
        (c["scaling"] or {"rope_type": "default"})["rope_type"] for c in CASES if c["kind"] == "frequency"
    }
    assert types == {"default", "linear", "dynamic", "yarn", "llama3", "longrope"} and types <= set(
        SCALING_METHODS
    )
    assert len(_ids("config")) >= 15  # the shipped configs both libraries read (19 when written)
    assert {CASES[i]["scaling"]["rope_type"] for i in _ids("rotary")} == {"dynamic", "longrope"}


@pytest.mark.parametrize("i", _ids("frequency"))
def test_rope_frequencies_match_the_frozen_library_values(i):
    case = CASES[i]
    ours, attention = rope_frequencies(
        case["head_dim"],
        base=case["base"],
        scaling=case["scaling"],
        seq_len=case["seq_len"],
        partial_rotary_factor=case["partial_rotary_factor"],
    )
    theirs, their_attention = _golden(i)
    assert ours.dtype == torch.float32 and ours.shape == theirs.shape, case
    assert_close(ours, theirs, atol=0.0, rtol=1e-6, what=f"case {i}: {case}")
    assert attention == pytest.approx(their_attention, rel=1e-12), case


@pytest.mark.parametrize("i", _ids("config"))
def test_shipped_configs_match_the_frozen_rotary_modules(i):
    case = CASES[i]
    inv_freq, attention = rope_from_config(MODELS[case["model"]]).frequencies(case["seq_len"])
    theirs, their_attention = _golden(i)
    assert_close(inv_freq, theirs, atol=0.0, rtol=1e-6, what=f"{case['model']} at seq_len={case['seq_len']}")
    assert attention == pytest.approx(their_attention, rel=1e-12), case


@pytest.mark.parametrize("i", _ids("rotary"))
def test_the_stateful_rule_matches_the_frozen_rotary_module(i):
    # one module called on lengths that cross the original length both ways: dynamic grows its base past L and
    # returns to plain RoPE below it; longrope switches between its short and long factors on every call
    case = CASES[i]
    rope = RotaryEmbedding(case["head_dim"], base=case["base"], scaling=case["scaling"])
    for call, length in enumerate(case["lengths"]):
        cos, sin = rope.cos_sin(torch.arange(length))
        what = f"{case['scaling']['rope_type']}, call {call} at length {length}"
        assert_close(cos, torch.from_numpy(GOLDEN[f"cos_{i}_{call}"]), atol=2e-6, what=what)
        assert_close(sin, torch.from_numpy(GOLDEN[f"sin_{i}_{call}"]), atol=2e-6, what=what)


def test_plain_rope_would_fail_the_scaled_goldens():
    # the goldens carry the scaling: frequencies that ignored it are outside the tolerance in every such case
    for i in _ids("frequency"):
        case = CASES[i]
        if case["scaling"] and case["scaling"]["rope_type"] in ("linear", "yarn", "llama3"):
            plain = rope_frequencies(
                case["head_dim"], base=case["base"], partial_rotary_factor=case["partial_rotary_factor"]
            )[0]
            assert not torch.allclose(plain, _golden(i)[0], atol=0.0, rtol=1e-6), case
