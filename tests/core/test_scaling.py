"""Tests of posref.scaling: first-principles properties, published values, and the transformers library.

Independent oracles: float64 loops written from the papers' formulas (below, ``_oracle_*``), the numbers in
the reference sheet (YaRN mscale, Llama-3.1 band counts, Phi-3.5 attention factor), and
``transformers.modeling_rope_utils`` on random configs.
"""

from __future__ import annotations

import math
import random

import pytest
import torch
from conftest import assert_close

from posref.scaling import (
    EXAMPLE_DIM,
    ORIGINAL_LEN_KEY,
    SCALING_METHODS,
    ScalingMethod,
    default_inv_freq,
    dynamic_ntk_alpha,
    longrope_attention_factor,
    ntk_base,
    register_scaling,
    rope_frequencies,
    yarn_mscale,
)


def f64(values) -> torch.Tensor:
    return torch.as_tensor(values, dtype=torch.float64)


def _oracle_default(dim: int, base: float) -> list[float]:
    return [base ** (-2 * i / dim) for i in range(dim // 2)]


LLAMA31 = {
    "rope_type": "llama3",
    "factor": 8.0,
    "low_freq_factor": 1.0,
    "high_freq_factor": 4.0,
    "original_max_position_embeddings": 8192,
}


# ---------------------------------------------------------------------------------------------------------------
# Errors: unknown types and keys, missing keys, bad values.


def test_unknown_type_lists_the_registry():
    with pytest.raises(ValueError, match="unknown rope_type 'ntk_aware'.*default, dynamic, linear, llama3"):
        rope_frequencies(64, scaling={"rope_type": "ntk_aware", "factor": 2.0})


def test_unknown_key_lists_what_the_method_accepts():
    with pytest.raises(ValueError, match="'linear' does not accept key.*factr.*it accepts: factor"):
        rope_frequencies(64, scaling={"rope_type": "linear", "factr": 2.0})


def test_missing_key_is_named():
    with pytest.raises(ValueError, match="'yarn' requires key.*original_max_position_embeddings"):
        rope_frequencies(64, scaling={"rope_type": "yarn", "factor": 4.0})


@pytest.mark.parametrize(
    ("scaling", "match"),
    [
        ({"rope_type": "linear", "factor": 0.5}, "factor must be >= 1"),
        ({"rope_type": "ntk", "factor": "2"}, "factor must be a finite number"),
        ({"rope_type": "ntk", "factor": float("nan")}, "factor must be a finite number"),
        ({"rope_type": "dynamic", "factor": 2.0, "original_max_position_embeddings": 0}, "positive int"),
        ({"rope_type": "dynamic", "factor": 2.0, "original_max_position_embeddings": 4096.0}, "positive int"),
        ({"rope_type": "yarn", "factor": None, "original_max_position_embeddings": 4096}, "factor is None"),
        (
            {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 4096, "beta_fast": 1, "beta_slow": 2},
            "beta_fast .* must exceed beta_slow",
        ),
        ({"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 4096, "ramp": "r"}, "yarn ramp"),
        (
            {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 4096, "truncate": "no"},
            "truncate must be True or False",
        ),
        ({**LLAMA31, "high_freq_factor": 1.0}, "high_freq_factor must exceed low_freq_factor"),
        (
            {"rope_type": "longrope", "short_factor": [1.0] * 31, "long_factor": [1.0] * 32, "factor": 2.0,
             "original_max_position_embeddings": 4096},
            r"short_factor must have one entry per rotated pair, rotary dim / 2 = 32; got 31",
        ),
        (
            {"rope_type": "longrope", "short_factor": [1.0] * 32, "long_factor": [1.0] * 31 + [-2.0],
             "factor": 2.0, "original_max_position_embeddings": 4096},
            r"long_factor\[31\] must be > 0",
        ),
        (
            {"rope_type": "longrope", "short_factor": [1.0] * 32, "long_factor": [1.0] * 32,
             "original_max_position_embeddings": 4096},
            "needs 'factor' or 'attention_factor'",
        ),
    ],
)  # fmt: skip
def test_bad_values_are_clear_errors(scaling, match):
    with pytest.raises(ValueError, match=match):
        rope_frequencies(64, scaling=scaling)


@pytest.mark.parametrize("base", [float("nan"), float("inf"), 1.0, 0.5, -10000.0, "10000", True])
def test_bad_base_is_a_clear_error(base):
    # NaN used to give all-NaN frequencies and inf a first pair at 1 and the rest at 0, silently
    with pytest.raises(ValueError, match=r"base \(rope_theta\) must be a finite number > 1"):
        rope_frequencies(8, base=base)


@pytest.mark.parametrize("prf", ["0.5", None, float("nan"), 0.0, 1.5])
def test_bad_partial_rotary_factor_is_a_clear_error(prf):
    with pytest.raises(ValueError, match=r"partial_rotary_factor must be in \(0, 1\]"):
        rope_frequencies(8, partial_rotary_factor=prf)


def test_ntk_needs_more_than_one_pair():
    with pytest.raises(ValueError, match="rotary dim >= 4"):
        rope_frequencies(2, scaling={"rope_type": "ntk", "factor": 2.0})


# ---------------------------------------------------------------------------------------------------------------
# Properties from first principles.


@pytest.mark.parametrize(("dim", "base"), [(8, 10000.0), (64, 10000.0), (128, 500000.0), (96, 1e6)])
def test_default_is_base_to_the_minus_2i_over_d(dim, base):
    inv_freq, factor = rope_frequencies(dim, base=base)
    assert_close(inv_freq, f64(_oracle_default(dim, base)), atol=0.0, rtol=2e-6, what="default")
    assert factor == 1.0 and inv_freq.dtype == torch.float32


def test_partial_rotary_uses_the_rotary_dim_in_the_exponent():
    inv_freq, _ = rope_frequencies(64, base=10000.0, partial_rotary_factor=0.25)
    assert_close(inv_freq, f64(_oracle_default(16, 10000.0)), atol=0.0, rtol=2e-6, what="partial")


@pytest.mark.parametrize("factor", [1.0, 2.0, 8.0, 32.5])
def test_linear_is_default_divided_by_factor(factor):
    inv_freq, attention = rope_frequencies(
        64, base=10000.0, scaling={"rope_type": "linear", "factor": factor}
    )
    assert_close(inv_freq, f64(_oracle_default(64, 10000.0)) / factor, atol=0.0, rtol=2e-6, what="linear")
    assert attention == 1.0


@pytest.mark.parametrize(("dim", "factor"), [(16, 2.0), (64, 4.0), (128, 8.0), (128, 64.0)])
def test_ntk_keeps_the_fastest_pair_and_divides_the_slowest_by_factor(dim, factor):
    plain = default_inv_freq(dim, 10000.0)
    inv_freq, _ = rope_frequencies(dim, base=10000.0, scaling={"rope_type": "ntk", "factor": factor})
    ratio = (plain.double() / inv_freq.double()).tolist()
    assert ratio[0] == 1.0
    assert ratio[-1] == pytest.approx(factor, rel=5e-6)
    # every pair in between is interpolated by a factor that grows with the wavelength
    assert all(1.0 <= a <= b <= factor * (1 + 5e-6) for a, b in zip(ratio, ratio[1:], strict=False))
    # closed form: ratio_i = factor ** (2i / (d - 2))
    assert_close(
        f64(ratio), f64([factor ** (2 * i / (dim - 2)) for i in range(dim // 2)]), atol=0.0, rtol=1e-5
    )


def test_dynamic_is_plain_rope_up_to_the_original_length():
    scaling = {"rope_type": "dynamic", "factor": 4.0, "original_max_position_embeddings": 2048}
    plain = default_inv_freq(64, 10000.0)
    for seq_len in (None, 1, 1000, 2048):
        inv_freq, _ = rope_frequencies(64, base=10000.0, scaling=scaling, seq_len=seq_len)
        assert torch.equal(inv_freq, plain), seq_len
    longer, _ = rope_frequencies(64, base=10000.0, scaling=scaling, seq_len=2049)
    assert bool((longer[1:] < plain[1:]).all())


def test_dynamic_past_the_length_is_the_ntk_base_change_with_the_library_alpha():
    dim, base, factor, length, seq_len = 64, 10000.0, 2.0, 1024, 3000
    alpha = factor * seq_len / length - (factor - 1)  # = 4.859...
    expected = [(base * alpha ** (dim / (dim - 2))) ** (-2 * i / dim) for i in range(dim // 2)]
    scaling = {"rope_type": "dynamic", "factor": factor, "original_max_position_embeddings": length}
    inv_freq, _ = rope_frequencies(dim, base=base, scaling=scaling, seq_len=seq_len)
    assert_close(inv_freq, f64(expected), atol=0.0, rtol=1e-5, what="dynamic")


def test_dynamic_alpha_rules_agree_only_for_factor_one():
    assert dynamic_ntk_alpha(3000, 1000, 1.0) == dynamic_ntk_alpha(3000, 1000, 1.0, rule="paper") == 3.0
    assert dynamic_ntk_alpha(3000, 1000, 2.0) == 5.0  # 2 * 3 - 1
    assert dynamic_ntk_alpha(3000, 1000, 2.0, rule="paper") == 3.0
    assert dynamic_ntk_alpha(None, 1000, 2.0) == dynamic_ntk_alpha(500, 1000, 2.0) == 1.0


def test_ntk_base_divides_the_slowest_pair_by_alpha():
    dim, base, alpha = 32, 10000.0, 5.0
    slowest = (2 * (dim // 2 - 1)) / dim
    assert ntk_base(base, alpha, dim) ** -slowest == pytest.approx(base**-slowest / alpha, rel=1e-12)


def _yarn(factor: float, **extra):
    return {"rope_type": "yarn", "factor": factor, "original_max_position_embeddings": 4096, **extra}


@pytest.mark.parametrize("factor", [2.0, 4.0, 16.0, 40.0])
@pytest.mark.parametrize("ramp", ["index", "ratio"])
def test_yarn_lies_between_pi_and_plain_rope(factor, ramp):
    plain = default_inv_freq(128, 10000.0).double()
    inv_freq, _ = rope_frequencies(128, base=10000.0, scaling=_yarn(factor, ramp=ramp))
    inv_freq = inv_freq.double()
    tol = 1e-6 * plain
    assert bool((inv_freq <= plain + tol).all()) and bool((inv_freq >= plain / factor - tol).all())
    # the fastest pairs are kept and the slowest interpolated by the full factor
    assert_close(inv_freq[:4], plain[:4], atol=0.0, rtol=1e-6, what="fast pairs")
    assert_close(inv_freq[-4:], plain[-4:] / factor, atol=0.0, rtol=1e-6, what="slow pairs")


def _oracle_by_parts(dim, base, factor, length, beta_fast=32.0, beta_slow=1.0):
    out = []
    for theta in _oracle_default(dim, base):
        turns = length * theta / (2 * math.pi)
        gamma = min(1.0, max(0.0, (turns - beta_slow) / (beta_fast - beta_slow)))
        out.append((1 - gamma) * theta / factor + gamma * theta)
    return out


@pytest.mark.parametrize(("beta_fast", "beta_slow"), [(32, 1), (16, 2)])
def test_ntk_by_parts_follows_the_paper_ramp_in_turns(beta_fast, beta_slow):
    scaling = {
        "rope_type": "ntk_by_parts",
        "factor": 8.0,
        "original_max_position_embeddings": 2048,
        "beta_fast": beta_fast,
        "beta_slow": beta_slow,
    }
    inv_freq, attention = rope_frequencies(96, base=10000.0, scaling=scaling)
    assert_close(
        inv_freq, f64(_oracle_by_parts(96, 10000.0, 8.0, 2048, beta_fast, beta_slow)), atol=0.0, rtol=2e-6
    )
    assert attention == 1.0


def test_yarn_paper_ramp_is_ntk_by_parts_plus_temperature():
    oracle = _oracle_by_parts(128, 10000.0, 16.0, 4096)
    inv_freq, attention = rope_frequencies(128, base=10000.0, scaling=_yarn(16.0, ramp="ratio"))
    assert_close(inv_freq, f64(oracle), atol=0.0, rtol=2e-6)
    assert attention == pytest.approx(0.1 * math.log(16.0) + 1)


def test_yarn_index_and_paper_ramps_differ_only_inside_the_ramp():
    index, _ = rope_frequencies(128, base=10000.0, scaling=_yarn(4.0))
    paper, _ = rope_frequencies(128, base=10000.0, scaling=_yarn(4.0, ramp="ratio"))
    plain = default_inv_freq(128, 10000.0)
    both_extreme = ((index == plain) | (index == plain / 4)) & ((paper == plain) | (paper == plain / 4))
    rel = (index - paper).abs() / paper
    assert float(rel[both_extreme].max()) < 1e-6
    assert float(rel.max()) > 0.3  # the reference sheet: up to 73% at s = 4


@pytest.mark.parametrize(("factor", "expected"), [(1.0, 1.0), (4.0, 1.1386), (32.0, 1.3466), (40.0, 1.3689)])
def test_yarn_mscale_published_values(factor, expected):
    _, attention = rope_frequencies(64, scaling=_yarn(factor))
    assert attention == pytest.approx(expected, abs=5e-5)
    assert yarn_mscale(factor) == attention


def test_yarn_attention_factor_rules():
    # an explicit attention_factor wins; a lone mscale is ignored (as in the library); both: their ratio
    assert rope_frequencies(64, scaling=_yarn(8.0, attention_factor=1.5, mscale=2.0))[1] == 1.5
    assert rope_frequencies(64, scaling=_yarn(8.0, mscale=2.0))[1] == pytest.approx(0.1 * math.log(8) + 1)
    ratio = (0.1 * 0.707 * math.log(40) + 1) / (0.1 * 1.0 * math.log(40) + 1)
    assert rope_frequencies(64, scaling=_yarn(40.0, mscale=0.707, mscale_all_dim=1.0))[1] == pytest.approx(
        ratio
    )
    assert rope_frequencies(64, scaling=_yarn(40.0, mscale=1.0, mscale_all_dim=1.0))[1] == 1.0


def test_llama31_has_29_kept_6_blended_29_divided_by_8():
    plain = default_inv_freq(128, 500000.0).double()
    inv_freq, attention = rope_frequencies(128, base=500000.0, scaling=LLAMA31)
    ratio = plain / inv_freq.double()
    kept = int((ratio == 1.0).sum())
    divided = int(torch.isclose(ratio, torch.tensor(8.0, dtype=torch.float64), rtol=1e-6).sum())
    blended = int(((ratio > 1.0) & (ratio < 8.0 * (1 - 1e-6))).sum())
    assert (kept, blended, divided) == (29, 6, 29)
    assert attention == 1.0
    # the bands are contiguous: kept, then blended, then divided
    assert bool((ratio[1:] >= ratio[:-1]).all())


def test_llama3_matches_a_loop_over_wavelength_bands():
    length, low, high, factor = 8192, 1.0, 4.0, 32.0
    expected = []
    for theta in _oracle_default(64, 500000.0):
        wavelength = 2 * math.pi / theta
        if wavelength < length / high:
            expected.append(theta)
        elif wavelength > length / low:
            expected.append(theta / factor)
        else:
            smooth = (length / wavelength - low) / (high - low)
            expected.append((1 - smooth) * theta / factor + smooth * theta)
    scaling = {**LLAMA31, "factor": factor}
    assert_close(rope_frequencies(64, base=500000.0, scaling=scaling)[0], f64(expected), atol=0.0, rtol=2e-6)


def test_llama3_is_continuous_on_its_band_edges():
    # pair 0 (w = 1, wavelength 2 pi) placed exactly on an edge: on the low-frequency edge L / low it must be
    # divided by s (the blend's value there, smooth = 0), on the high-frequency edge L / high kept (smooth = 1);
    # the float32 wavelength and edge coincide, so a strict/non-strict comparison slip shows (e.g. w / s**2)
    length, s, edge = 64, 4.0, 64 / (2 * math.pi)
    for low, high, expected in ((edge, 2 * edge, 1 / s), (edge / 2, edge, 1.0)):
        scaling = {"rope_type": "llama3", "factor": s, "original_max_position_embeddings": length}
        scaling |= {"low_freq_factor": low, "high_freq_factor": high}
        inv_freq = rope_frequencies(8, base=10000.0, scaling=scaling)[0]
        assert inv_freq[0].item() == pytest.approx(expected, rel=1e-5), (low, high)


def _longrope(dim=16, **extra):
    return {
        "rope_type": "longrope",
        "short_factor": [1.0 + 0.1 * i for i in range(dim // 2)],
        "long_factor": [2.0 + i for i in range(dim // 2)],
        "original_max_position_embeddings": 4096,
        **extra,
    }


def test_longrope_switches_strictly_above_the_original_length():
    plain = torch.tensor(_oracle_default(16, 10000.0), dtype=torch.float64)
    short = plain / torch.tensor([1.0 + 0.1 * i for i in range(8)], dtype=torch.float64)
    long = plain / torch.tensor([2.0 + i for i in range(8)], dtype=torch.float64)
    for seq_len, expected in [(None, short), (1, short), (4096, short), (4097, long), (100000, long)]:
        inv_freq, _ = rope_frequencies(16, scaling=_longrope(factor=32.0), seq_len=seq_len)
        assert_close(inv_freq, expected, atol=0.0, rtol=2e-6, what=f"seq_len={seq_len}")


def test_longrope_attention_factor_phi35():
    # Phi-3.5-mini: factor = 131072 / 4096 = 32 -> sqrt(1 + ln 32 / ln 4096) = 1.19024, same short and long
    for seq_len in (None, 5000):
        assert rope_frequencies(16, scaling=_longrope(factor=32.0), seq_len=seq_len)[1] == pytest.approx(
            1.19024, abs=1e-5
        )
    assert longrope_attention_factor(1.0, 4096) == 1.0
    assert rope_frequencies(16, scaling=_longrope(attention_factor=1.25))[1] == 1.25


def test_every_method_is_registered_with_its_paper():
    assert set(SCALING_METHODS) == {
        "default",
        "linear",
        "ntk",
        "dynamic",
        "yarn",
        "ntk_by_parts",
        "llama3",
        "longrope",
    }
    for method in SCALING_METHODS.values():
        assert "arXiv" in (method.fn.__doc__ or "") or method.name == "llama3", method.name
    assert {m.name for m in SCALING_METHODS.values() if m.length_dependent} == {"dynamic", "longrope"}


def _example_frequencies(method: ScalingMethod, seq_len: int | None = None, **changes) -> torch.Tensor:
    """``(EXAMPLE_DIM / 2 + 1,)``: the method's example frequencies and its attention factor, with ``changes``."""
    scaling = {"rope_type": method.name, **method.example, **changes}
    inv_freq, attention_factor = rope_frequencies(
        EXAMPLE_DIM, base=500000.0, scaling=scaling, seq_len=seq_len
    )
    return torch.cat((inv_freq, torch.tensor([attention_factor])))


@pytest.mark.parametrize("method", list(SCALING_METHODS.values()), ids=list(SCALING_METHODS))
def test_every_method_says_what_it_reads_and_its_example_runs(method: ScalingMethod):
    # the registry's metadata, checked against what the function does: the example runs and scales something;
    # needs_original_len holds exactly when the training length changes the frequencies, length_dependent
    # exactly when the current length does
    assert method.title and method.title != method.name
    example = _example_frequencies(method)
    assert bool(torch.isfinite(example).all()) and bool((example > 0).all())
    plain = _example_frequencies(SCALING_METHODS["default"])
    long = 1 << 20  # past every example's training length
    scaled = _example_frequencies(method, seq_len=long)
    assert (method.name == "default") == torch.equal(scaled, plain), "only plain RoPE leaves RoPE as it is"
    assert method.length_dependent == (not torch.equal(scaled, _example_frequencies(method, seq_len=16)))
    if method.needs_original_len:
        other = method.example[ORIGINAL_LEN_KEY] // 2
        moved = _example_frequencies(method, seq_len=long, **{ORIGINAL_LEN_KEY: other})
        assert not torch.equal(moved, scaled), "the training length must matter to a method that reads it"
    else:
        with pytest.raises(ValueError, match=f"does not accept key\\(s\\) {ORIGINAL_LEN_KEY}"):
            _example_frequencies(method, **{ORIGINAL_LEN_KEY: 4096})


def test_a_method_is_registered_once_with_an_example_it_accepts():
    def fn(dim, base, params, seq_len):
        return default_inv_freq(dim, base), 1.0

    with pytest.raises(ValueError, match="'linear' is registered twice"):
        register_scaling("linear", title="again", example={"factor": 2.0}, required=("factor",))(fn)
    with pytest.raises(ValueError, match="rope_type 'made_up' requires key\\(s\\) factor"):
        register_scaling("made_up", title="Made up", example={}, required=("factor",))(fn)
    assert "made_up" not in SCALING_METHODS


def test_device_argument_is_honoured():
    inv_freq, _ = rope_frequencies(16, scaling=_yarn(4.0), device="meta")
    assert inv_freq.device.type == "meta"


# ---------------------------------------------------------------------------------------------------------------
# Comparison with the transformers library on random configs.


@pytest.fixture(scope="module")
def hf():
    """The transformers oracle (tests/hf_reference.py); these tests skip where transformers is missing."""
    return pytest.importorskip("hf_reference", reason="needs the transformers library (a dev dependency)")


def _random_case(rng: random.Random, rope_type: str):
    head_dim = rng.choice([8, 16, 32, 64, 80, 96, 128, 256])
    prf = rng.choice([1.0, 1.0, 0.5, 0.75, 0.25])
    if int(head_dim * prf) % 2 or int(head_dim * prf) < 4:
        prf = 1.0
    base = 10 ** rng.uniform(3, 7)
    length = rng.choice([256, 2048, 4096, 8192, 32768])
    factor = rng.choice([1.0, 1.5, 2.0, 4.0, 8.0, 16.0, 32.0, 40.0, 64.0, rng.uniform(1, 100)])
    dim = int(head_dim * prf)
    seq_len = rng.choice([None, 1, length - 1, length, length + 1, rng.randint(1, 8 * length)])
    scaling: dict = {"rope_type": rope_type}
    if rope_type == "linear":
        scaling["factor"] = factor
    elif rope_type == "dynamic":
        scaling["factor"] = factor
    elif rope_type == "yarn":
        scaling.update(factor=factor, original_max_position_embeddings=length)
        for key, values in [
            ("beta_fast", [8, 16, 32, 64.0]),
            ("beta_slow", [0.5, 1, 2.0]),
            ("truncate", [True, False]),
            ("mscale", [0.707, 1.0, 2.0]),
            ("mscale_all_dim", [0.707, 1.0]),
            ("attention_factor", [0.9, 1.0, 1.2]),
        ]:
            if rng.random() < 0.4:
                scaling[key] = rng.choice(values)
    elif rope_type == "llama3":
        low = rng.choice([0.5, 1.0, 2.0])
        scaling.update(factor=factor, low_freq_factor=low, high_freq_factor=low * rng.choice([2, 4, 8]))
        scaling["original_max_position_embeddings"] = length
    elif rope_type == "longrope":
        scaling["short_factor"] = [rng.uniform(1.0, 2.0) for _ in range(dim // 2)]
        scaling["long_factor"] = sorted(rng.uniform(1.0, 60.0) for _ in range(dim // 2))
        scaling["original_max_position_embeddings"] = length
        if rng.random() < 0.3:
            scaling["attention_factor"] = rng.uniform(0.5, 2.0)
        else:
            scaling["factor"] = factor
    return head_dim, base, prf, length, seq_len, scaling


@pytest.mark.parametrize("rope_type", ["linear", "dynamic", "yarn", "llama3", "longrope"])
def test_matches_transformers_on_random_configs(hf, rope_type):
    rng = random.Random(f"scaling-{rope_type}")
    for case in range(60):
        head_dim, base, prf, length, seq_len, scaling = _random_case(rng, rope_type)
        ours, our_attention = rope_frequencies(
            head_dim,
            base=base,
            scaling={**scaling, "original_max_position_embeddings": length}
            if rope_type == "dynamic"
            else scaling,
            seq_len=seq_len,
            partial_rotary_factor=prf,
        )
        config = hf.hf_config(
            head_dim, base=base, scaling=scaling, partial_rotary_factor=prf, max_position_embeddings=length
        )
        theirs, their_attention = hf.hf_init(config, seq_len=seq_len)
        what = f"case {case}: head_dim={head_dim}, prf={prf}, base={base:.6g}, seq_len={seq_len}, {scaling}"
        assert_close(ours, theirs, atol=0.0, rtol=1e-6, what=what)
        assert our_attention == pytest.approx(their_attention, rel=1e-12), what


@pytest.mark.parametrize("factor", [1.0, 2.0, 4.0])
def test_dynamic_alpha_of_transformers_is_the_papers_only_at_factor_one(hf, factor):
    """An old note said the library's dynamic init, given seq_len, computes the YaRN paper's alpha = l / L. Read
    alpha back from the library's slowest pair (NTK divides it by exactly alpha): it is emozilla's
    factor * l / L - (factor - 1), which is the paper's only for factor 1; posref's equals the library's bit for bit."""
    dim, base, length = 16, 50.0, 64
    plain_slowest = base ** (-(dim - 2) / dim)
    for seq_len in (32, 64, 128, 256, 512):
        config = hf.hf_config(dim, base=base, scaling={"rope_type": "dynamic", "factor": factor},
                              max_position_embeddings=length)  # fmt: skip
        theirs, _ = hf.hf_init(config, seq_len=seq_len)
        alpha = plain_slowest / theirs[-1].item()
        n = max(seq_len, length)
        assert alpha == pytest.approx(factor * n / length - (factor - 1), rel=1e-5), seq_len
        assert (alpha == pytest.approx(n / length, rel=1e-5)) == (factor == 1.0 or n == length), seq_len
        scaling = {"rope_type": "dynamic", "factor": factor, "original_max_position_embeddings": length}
        assert torch.equal(rope_frequencies(dim, base=base, scaling=scaling, seq_len=seq_len)[0], theirs)


@pytest.mark.parametrize(
    ("head_dim", "base"), [(8, 10000.0), (64, 10000.0), (128, 500000.0), (256, 1e6), (80, 1e4)]
)
def test_default_matches_transformers(hf, head_dim, base):
    theirs, attention = hf.hf_init(hf.hf_config(head_dim, base=base, scaling=None))
    ours, our_attention = rope_frequencies(head_dim, base=base)
    assert torch.equal(ours, theirs) and our_attention == attention


@pytest.mark.parametrize(("head_dim", "base", "length"), [(16, 50.0, 64), (128, 500000.0, 8192)])
def test_llama3_with_factors_1_and_4_is_ntk_by_parts_with_betas_4_and_1(head_dim, base, length):
    """Notebook 07 says so: L / wavelength counts turns within L, so the bands of Llama 3 at low_freq_factor 1 and
    high_freq_factor 4 are the ramp of NTK-by-parts at beta_slow 1 and beta_fast 4."""
    common = {"factor": 4.0, "original_max_position_embeddings": length}
    llama3 = {"rope_type": "llama3", **common, "low_freq_factor": 1.0, "high_freq_factor": 4.0}
    by_parts = {"rope_type": "ntk_by_parts", **common, "beta_fast": 4.0, "beta_slow": 1.0}
    ours = rope_frequencies(head_dim, base=base, scaling=llama3)[0]
    assert_close(ours, rope_frequencies(head_dim, base=base, scaling=by_parts)[0], atol=0.0, rtol=1e-6)
    assert not torch.equal(ours, rope_frequencies(head_dim, base=base)[0])  # the scaling changed something
