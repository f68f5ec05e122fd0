"""rope_from_config on real and hand-made config.json dicts, against the transformers library."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import torch
from conftest import assert_close

from posref.config import RopeConfig, rope_from_config
from posref.scaling import default_inv_freq

DATA = Path(__file__).resolve().parents[2] / "data" / "model_configs.json"
MODELS = {entry["name"]: entry["config"] for entry in json.loads(DATA.read_text())["models"]}

# shipped configs rope_from_config must refuse, and a word its message must contain
REFUSED = {
    "google/gemma-3-1b-it": "per-layer RoPE",
    "mosaicml/mpt-7b-instruct": "ALiBi",
    "openai-community/gpt2": "learned absolute",
    "Snowflake/snowflake-arctic-embed-m": "learned absolute",
}
# shipped configs transformers 5.24 cannot build (remote-code model types) or exposes no inv_freq for
NOT_IN_TRANSFORMERS = {
    "internlm/internlm2_5-7b-chat",
    "MiniCPM-2B",
    "microsoft/Phi-3.5-vision-instruct",
    "microsoft/phi-2",
    "EleutherAI/gpt-j-6b",
}


def llama(**extra):
    return {
        "model_type": "llama",
        "hidden_size": 512,
        "num_attention_heads": 8,
        "max_position_embeddings": 4096,
        **extra,
    }


@pytest.fixture(scope="module")
def hf():
    return pytest.importorskip("hf_reference", reason="needs the transformers library (a dev dependency)")


# ---------------------------------------------------------------------------------------------------------------
# Every shipped config: refused with a reason, or equal to the library.


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_unrepresentable_shipped_configs_are_refused(name):
    with pytest.raises(ValueError, match=REFUSED[name]):
        rope_from_config(MODELS[name])


@pytest.mark.parametrize("name", sorted(set(MODELS) - set(REFUSED) - NOT_IN_TRANSFORMERS))
def test_shipped_config_matches_the_models_own_rotary_module(hf, name):
    config = MODELS[name]
    rope = rope_from_config(config)
    theirs = hf.hf_rotary_for_model_config(config)
    inv_freq, attention = rope.frequencies()
    assert_close(inv_freq, theirs.inv_freq, atol=0.0, rtol=1e-6, what=name)
    assert attention == pytest.approx(theirs.attention_scaling, rel=1e-12), name
    if rope.length_dependent:  # the length-dependent ones also past the original length
        seq_len = rope.original_max_position_embeddings + 1
        ours_long, _ = rope.frequencies(seq_len)
        rope_type = hf.hf_model_config(config).rope_parameters["rope_type"]
        their_long, _ = hf.ROPE_INIT_FUNCTIONS[rope_type](hf.hf_model_config(config), None, seq_len=seq_len)
        assert_close(ours_long, their_long, atol=0.0, rtol=1e-6, what=name)


def test_every_shipped_config_is_covered():
    readable = set(MODELS) - set(REFUSED)
    for name in readable:
        assert isinstance(rope_from_config(MODELS[name]), RopeConfig)
    assert NOT_IN_TRANSFORMERS <= readable


# ---------------------------------------------------------------------------------------------------------------
# Known facts of particular configs.


def test_llama31():
    rope = rope_from_config(MODELS["meta-llama/Llama-3.1-8B"])
    assert (rope.head_dim, rope.base, rope.rope_type, rope.max_position_embeddings) == (
        128,
        5e5,
        "llama3",
        131072,
    )
    assert rope.original_max_position_embeddings == 8192 and rope.notes == ()


def test_phi35_reads_top_level_original_length_and_derives_the_factor():
    rope = rope_from_config(MODELS["microsoft/Phi-3.5-mini-instruct"])
    assert rope.rope_type == "longrope" and rope.head_dim == 96
    assert rope.scaling["original_max_position_embeddings"] == 4096 and rope.scaling["factor"] == 32.0
    assert rope.frequencies()[1] == pytest.approx(math.sqrt(1 + math.log(32) / math.log(4096)))


def test_phi3_top_level_original_length_overrides_the_dict():
    config = MODELS["microsoft/Phi-3.5-mini-instruct"]
    scaling = {**config["rope_scaling"], "original_max_position_embeddings": 8192}
    rope = rope_from_config({**config, "rope_scaling": scaling, "original_max_position_embeddings": 2048})
    assert rope.scaling["original_max_position_embeddings"] == 2048
    assert any("overrides" in note for note in rope.notes)


def test_phi3_aliases_mean_longrope():
    config = MODELS["microsoft/Phi-3.5-mini-instruct"]
    for alias in ("su", "yarn"):
        rope = rope_from_config({**config, "rope_scaling": {**config["rope_scaling"], "type": alias}})
        assert rope.rope_type == "longrope"
    # outside Phi-3, "su" is not a type
    with pytest.raises(ValueError, match="unknown rope_type 'su'"):
        rope_from_config(llama(rope_scaling={"type": "su", "factor": 2.0}))


def test_partial_rotary_spellings():
    stablelm = rope_from_config(MODELS["stabilityai/stablelm-2-zephyr-1_6b"])
    assert (stablelm.head_dim, stablelm.rotary_dim) == (64, 16)
    phi2 = rope_from_config(MODELS["microsoft/phi-2"])  # old phi-msft: n_embd / n_head, rotary_dim
    assert (phi2.head_dim, phi2.rotary_dim, phi2.max_position_embeddings) == (80, 32, 2048)
    neox = rope_from_config(
        {"model_type": "gpt_neox", "hidden_size": 2048, "num_attention_heads": 16, "rotary_pct": 0.25}
    )
    assert neox.rotary_dim == 32
    gptj = rope_from_config(MODELS["EleutherAI/gpt-j-6b"])
    assert (gptj.rotary_dim, gptj.layout, gptj.rope_type) == (64, "interleaved", "default")


def test_explicit_head_dim_wins_over_hidden_over_heads():
    rope = rope_from_config(MODELS["google/gemma-2-9b"])
    assert rope.head_dim == 256 != 3584 // 16


def test_deepseek_rotates_qk_rope_head_dim_and_notes_the_softmax_scale():
    rope = rope_from_config(MODELS["deepseek-ai/DeepSeek-V3"])
    assert rope.head_dim == 64 and rope.frequencies()[1] == 1.0
    assert any("1.8739" in note for note in rope.notes)
    # the shipped config has no rope_interleave: DeepseekV3Config's default (True) pairs dims 2i, 2i + 1
    assert "rope_interleave" not in MODELS["deepseek-ai/DeepSeek-V3"] and rope.layout == "interleaved"
    assert rope_from_config({**MODELS["deepseek-ai/DeepSeek-V3"], "rope_interleave": False}).layout == "half"


def test_ministral_keeps_llama4_beta_out_of_the_frequencies():
    rope = rope_from_config(MODELS["mistralai/Ministral-3 3B 2512"])
    assert "llama_4_scaling_beta" not in rope.scaling
    assert any("llama_4_scaling_beta" in note for note in rope.notes)


def test_missing_theta_is_the_library_default_and_noted():
    rope = rope_from_config(MODELS["meta-llama/Llama-2-7b-hf"])
    assert rope.base == 10000.0 and any("rope_theta" in n for n in rope.notes)
    assert torch.equal(rope.frequencies()[0], default_inv_freq(128, 10000.0))


# ---------------------------------------------------------------------------------------------------------------
# The spellings, against the library.


CASES = {
    "legacy type alias": llama(rope_theta=5e5, rope_scaling={"type": "linear", "factor": 4.0}),
    "rope_parameters": llama(rope_parameters={"rope_type": "yarn", "factor": 8.0, "original_max_position_embeddings": 512, "rope_theta": 1e6}),
    "both type and rope_type": llama(rope_parameters={"rope_type": "yarn", "type": "yarn", "factor": 8.0, "rope_theta": 1e4, "original_max_position_embeddings": 512}),
    "rope_scaling and rope_parameters disagree": llama(rope_theta=1e4, rope_scaling={"rope_type": "linear", "factor": 4.0}, rope_parameters={"rope_type": "linear", "factor": 2.0, "rope_theta": 1e4}),
    "yarn without original": llama(rope_scaling={"rope_type": "yarn", "factor": 4.0}),
    "yarn factor null": {**llama(rope_scaling={"rope_type": "yarn", "factor": None, "original_max_position_embeddings": 1024}), "max_position_embeddings": 8192},
    "llama3 without original": llama(max_position_embeddings=8192, rope_scaling={"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0}),
    "dynamic with a stray original": llama(rope_scaling={"rope_type": "dynamic", "factor": 2.0, "original_max_position_embeddings": 1024}),
    "partial rotary top level": {"model_type": "stablelm", "hidden_size": 512, "num_attention_heads": 8, "partial_rotary_factor": 0.5, "rope_theta": 5e4},
    "phi3 longrope no top-level original": {"model_type": "phi3", "hidden_size": 512, "num_attention_heads": 8, "max_position_embeddings": 65536, "rope_scaling": {"type": "longrope", "short_factor": [1.0] * 32, "long_factor": [float(i + 1) for i in range(32)]}},
}  # fmt: skip


@pytest.mark.parametrize("case", list(CASES))
def test_spellings_match_transformers(hf, case):
    config = CASES[case]
    rope = rope_from_config(config)
    hf_config = hf.hf_model_config(config)
    rope_type = hf_config.rope_parameters["rope_type"]
    for seq_len in (None, 3000, 70000):
        if rope_type == "default":
            theirs = hf.hf_rotary_for_model_config(config)
            their_inv, their_attention = theirs.inv_freq, theirs.attention_scaling
        else:
            their_inv, their_attention = hf.ROPE_INIT_FUNCTIONS[rope_type](hf_config, None, seq_len=seq_len)
        ours, our_attention = rope.frequencies(seq_len)
        assert_close(ours, their_inv, atol=0.0, rtol=1e-6, what=f"{case} at {seq_len}")
        assert our_attention == pytest.approx(their_attention, rel=1e-12), case


# ---------------------------------------------------------------------------------------------------------------
# Refusals.


@pytest.mark.parametrize(
    ("config", "match"),
    [
        (llama(rope_parameters={"full_attention": {"rope_type": "default"}, "sliding_attention": {"rope_type": "default"}}), "nested by layer type"),
        ({"model_type": "qwen2_vl", "hidden_size": 512, "num_attention_heads": 8, "rope_scaling": {"type": "mrope", "mrope_section": [16, 24, 24]}}, "multimodal RoPE"),
        (llama(rope_scaling={"type": "dynamic", "factor": 1.0, "alpha": 1000.0}), "HunYuan"),
        (llama(rope_scaling={"rope_type": "yarn", "type": "linear", "factor": 2.0}), "disagree"),
        (llama(rope_scaling={"rope_type": "linear", "factor": 0.5}), "factor must be >= 1"),
        (llama(rope_scaling={"rope_type": "linear", "factor": 2.0, "beta_fast": 3}), "does not accept key"),
        ({"model_type": "llama", "max_position_embeddings": 10}, "cannot tell the head size"),
        (llama(num_attention_heads=0), "num_attention_heads must be a positive int"),  # was ZeroDivisionError
        (llama(hidden_size="512"), "hidden_size must be a positive int"),  # was a TypeError about //
        ({"model_type": "falcon", "alibi": True, "hidden_size": 64, "num_attention_heads": 4}, "ALiBi"),
        ([1, 2], "must be a dict"),
    ],
)  # fmt: skip
def test_unrepresentable_configs_are_clear_errors(config, match):
    with pytest.raises((ValueError, TypeError), match=match):
        rope_from_config(config)


def test_input_config_is_not_modified():
    config = MODELS["microsoft/Phi-3.5-mini-instruct"]
    before = json.dumps(config, sort_keys=True)
    rope_from_config(config)
    assert json.dumps(config, sort_keys=True) == before


def test_rope_config_is_frozen():
    rope = rope_from_config(MODELS["Qwen/Qwen3-8B"])
    with pytest.raises(AttributeError):
        rope.base = 1.0  # type: ignore[misc]
