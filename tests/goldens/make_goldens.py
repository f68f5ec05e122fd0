"""Write tests/goldens/rope_frequencies.npz once, from the transformers library (the third layer of the tests).

    .venv/bin/python tests/goldens/make_goldens.py

The file holds what the library computes, so that tests/core/test_rope_goldens.py compares posref with it where
transformers is not installed (tests/hf_reference.py, the live oracle, still runs where it is):

* ``frequency`` cases: ``(inv_freq, attention_factor)`` of the library's init function for random head sizes,
  bases, partial rotary factors, factors and sequence lengths, 12 per RoPE type the library has;
* ``config`` cases: ``inv_freq`` and ``attention_scaling`` of the model's own rotary module for every shipped
  config of data/model_configs.json that both the library and posref read, and for the length-dependent ones
  also the library's init at one position past the original length;
* ``rotary`` cases: the cos and sin that the library's ``LlamaRotaryEmbedding`` returns, with its stateful
  rule (``dynamic_rope_update``), for ``dynamic`` and ``longrope`` called on a sequence of lengths that crosses
  the original length both ways.

Arrays ``inv_freq_<i>`` (float32, as the library returns them) with the float ``attention_<i>``, or for a
rotary case ``cos_<i>_<call>`` and ``sin_<i>_<call>`` (``(length, head_dim / 2)``: the library's cos repeats
over the two halves); ``cases`` is JSON: each case's inputs, in posref's terms. ``transformers_version`` and ``torch_version`` record the source.
Nothing here is random at run time: the cases come from a seeded generator, so a rerun writes the same cases.
"""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path

import numpy as np
import torch
import transformers

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))  # tests/: hf_reference

import hf_reference as hf  # noqa: E402

from posref.config import rope_from_config  # noqa: E402

OUT = HERE / "rope_frequencies.npz"
MODEL_CONFIGS = HERE.parents[1] / "data" / "model_configs.json"
ROPE_TYPES = ("default", "linear", "dynamic", "yarn", "llama3", "longrope")


def random_case(rng: random.Random, rope_type: str) -> dict:
    """One case's inputs in posref's terms (dynamic carries original_max_position_embeddings, as posref asks)."""
    head_dim = rng.choice([8, 16, 32, 64, 80, 96, 128, 256])
    prf = rng.choice([1.0, 1.0, 0.5, 0.75])
    if int(head_dim * prf) % 2 or int(head_dim * prf) < 4 or rope_type == "default":
        prf = 1.0  # (Llama's default init, the library's oracle for "default", ignores partial_rotary_factor)
    dim = int(head_dim * prf)
    base = float(f"{10 ** rng.uniform(3, 7):.6g}")
    length = rng.choice([256, 2048, 4096, 8192, 32768])
    factor = rng.choice([1.5, 2.0, 4.0, 8.0, 16.0, 32.0, 40.0, round(rng.uniform(1, 100), 3)])
    seq_len = rng.choice([None, 1, length - 1, length, length + 1, rng.randint(1, 8 * length)])
    scaling: dict = {"rope_type": rope_type}
    if rope_type in ("linear", "dynamic"):
        scaling["factor"] = factor
    if rope_type == "yarn":
        scaling["factor"] = factor
        for key, values in [
            ("beta_fast", [8.0, 16.0, 64.0]),
            ("beta_slow", [0.5, 2.0]),
            ("truncate", [True, False]),
            ("mscale", [0.707, 2.0]),
            ("mscale_all_dim", [0.707, 1.0]),
            ("attention_factor", [0.9, 1.2]),
        ]:
            if rng.random() < 0.4:
                scaling[key] = rng.choice(values)
    if rope_type == "llama3":
        low = rng.choice([0.5, 1.0, 2.0])
        scaling.update(factor=factor, low_freq_factor=low, high_freq_factor=low * rng.choice([2, 4, 8]))
    if rope_type == "longrope":
        scaling["short_factor"] = [round(rng.uniform(1.0, 2.0), 4) for _ in range(dim // 2)]
        scaling["long_factor"] = sorted(round(rng.uniform(1.0, 60.0), 4) for _ in range(dim // 2))
        if rng.random() < 0.3:
            scaling["attention_factor"] = round(rng.uniform(0.5, 2.0), 4)
        else:
            scaling["factor"] = factor
    if rope_type != "default" and rope_type != "linear":
        scaling["original_max_position_embeddings"] = length
    return {
        "head_dim": head_dim,
        "base": base,
        "partial_rotary_factor": prf,
        "scaling": None if rope_type == "default" else scaling,
        "seq_len": seq_len,
        "max_position_embeddings": length,
    }


def library_frequencies(case: dict) -> tuple[torch.Tensor, float]:
    scaling = case["scaling"]
    if scaling is not None and scaling["rope_type"] == "dynamic":  # the library reads L from the model config
        scaling = {k: v for k, v in scaling.items() if k != "original_max_position_embeddings"}
    config = hf.hf_config(
        case["head_dim"],
        base=case["base"],
        scaling=scaling,
        partial_rotary_factor=case["partial_rotary_factor"],
        max_position_embeddings=case["max_position_embeddings"],
    )
    inv_freq, attention = hf.hf_init(config, seq_len=case["seq_len"])
    return inv_freq, float(attention)


def config_cases() -> list[tuple[dict, torch.Tensor, float]]:
    """The shipped configs both libraries read: (case, inv_freq, attention) at the default and past L."""
    found = []
    for entry in json.loads(MODEL_CONFIGS.read_text())["models"]:
        try:
            rope = rope_from_config(entry["config"])
            module = hf.hf_rotary_for_model_config(entry["config"])
        except (ValueError, KeyError, LookupError, ImportError, AttributeError, TypeError):
            continue  # refused by posref (tests/core/test_config.py says why) or not built by the library
        inv_freq = getattr(module, "inv_freq", None)
        if inv_freq is None:
            continue
        found.append(({"model": entry["name"], "seq_len": None}, inv_freq, float(module.attention_scaling)))
        if rope.length_dependent:
            seq_len = rope.original_max_position_embeddings + 1
            config = hf.hf_model_config(entry["config"])
            init = hf.ROPE_INIT_FUNCTIONS[config.rope_parameters["rope_type"]]
            long, attention = init(config, None, seq_len=seq_len)
            found.append(({"model": entry["name"], "seq_len": seq_len}, long, float(attention)))
    return found


ROTARY_HEAD_DIM, ROTARY_L = 32, 64
ROTARY_LENGTHS = [10, 160, 100, 64, 63, 65, 300, 20, 64, 65]
ROTARY_SCALINGS = [
    {"rope_type": "dynamic", "factor": 2.0, "original_max_position_embeddings": ROTARY_L},
    {
        "rope_type": "longrope",
        "short_factor": [1.0 + 0.05 * i for i in range(ROTARY_HEAD_DIM // 2)],
        "long_factor": [1.0 + 2.0 * i for i in range(ROTARY_HEAD_DIM // 2)],
        "original_max_position_embeddings": ROTARY_L,
        "factor": 16.0,
    },
]


def rotary_calls(scaling: dict) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """(cos, sin) of the first half of the pairs for each length of ROTARY_LENGTHS, one module throughout."""
    from transformers.models.llama.modeling_llama import LlamaRotaryEmbedding

    # the library's dynamic reads L from max_position_embeddings; its longrope from the dict
    theirs = {
        k: v for k, v in scaling.items() if scaling["rope_type"] != "dynamic" or not k.startswith("original")
    }
    module = LlamaRotaryEmbedding(
        hf.hf_config(ROTARY_HEAD_DIM, base=10000.0, scaling=theirs, max_position_embeddings=ROTARY_L)
    )
    x = torch.zeros(1, 1, ROTARY_HEAD_DIM)
    calls = []
    for length in ROTARY_LENGTHS:
        cos, sin = module(x, torch.arange(length)[None])
        calls.append((cos[0, :, : ROTARY_HEAD_DIM // 2], sin[0, :, : ROTARY_HEAD_DIM // 2]))
    return calls


def main() -> None:
    rng = random.Random("posref-goldens")
    cases, arrays = [], {}

    def add(kind: str, case: dict, inv_freq: torch.Tensor, attention: float) -> None:
        i = len(cases)
        cases.append({"kind": kind, **case})
        arrays[f"inv_freq_{i}"] = inv_freq.detach().to(torch.float32).numpy()
        arrays[f"attention_{i}"] = np.float64(attention)

    for rope_type in ROPE_TYPES:
        for _ in range(12):
            case = random_case(rng, rope_type)
            add("frequency", case, *library_frequencies(case))
    for case, inv_freq, attention in config_cases():
        add("config", case, inv_freq, attention)
    for scaling in ROTARY_SCALINGS:
        i = len(cases)
        case = {"head_dim": ROTARY_HEAD_DIM, "base": 10000.0, "scaling": scaling, "lengths": ROTARY_LENGTHS}
        cases.append({"kind": "rotary", **case})
        for call, (cos, sin) in enumerate(rotary_calls(scaling)):
            arrays[f"cos_{i}_{call}"] = cos.detach().to(torch.float32).numpy()
            arrays[f"sin_{i}_{call}"] = sin.detach().to(torch.float32).numpy()
    np.savez_compressed(
        OUT,
        cases=np.array(json.dumps(cases)),
        transformers_version=np.array(transformers.__version__),
        torch_version=np.array(torch.__version__),
        **arrays,
    )
    kinds = {kind: sum(c["kind"] == kind for c in cases) for kind in ("frequency", "config", "rotary")}
    print(f"wrote {OUT} ({OUT.stat().st_size:,} bytes): {kinds}, transformers {transformers.__version__}")


if __name__ == "__main__":
    main()
