"""Checkers for notebook 07 (scaling): RoPE frequencies under each scaling method.

The student's function has the registry's signature, ``fn(head_dim, base, params, seq_len=None)`` ->
``(inv_freq (head_dim/2,), attention_factor)``, with ``params`` the method's keys as the transformers library
names them (``{"factor": 8.0, "original_max_position_embeddings": 8192, ...}``). The reference is
``posref.rope_frequencies(head_dim, base=base, scaling={"rope_type": <type>, **params}, seq_len=seq_len)``.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

import torch

from posref.grading.cases import Draw
from posref.grading.report import Case, first_difference
from posref.grading.rules import enforce_rules
from posref.i18n import N_, _
from posref.longrope_search import mutate_factors, project_factors
from posref.scaling import (
    ORIGINAL_LEN_KEY,
    SCALING_METHODS,
    default_inv_freq,
    ratio_ramp,
    rope_frequencies,
    yarn_index_ramp,
    yarn_mscale,
)

# YaRN's optional keys: absent (the paper's 32 and 1), or other turn counts such as notebook 07's toy betas
_YARN_BETAS = (None, {"beta_fast": 4.0, "beta_slow": 1.0}, {"beta_fast": 16.0, "beta_slow": 2.0})


def _axes(rope_type: str) -> dict[str, tuple]:
    """The case classes of ``rope_type``'s hidden cases: each option of each axis is drawn in every run."""
    axes: dict[str, tuple] = {"factor": ("whole", "fraction"), "base": (10000.0, "other")}
    if rope_type in ("yarn", "ntk_by_parts"):
        axes["betas"] = _YARN_BETAS
    return axes


def _visible(index: int) -> dict:
    """The visible cases' classes: the last of three has toy betas, so reading them is checked in the notebook."""
    return {"factor": "whole", "base": 10000.0, "betas": (None, None, _YARN_BETAS[1])[index]}


def _case(draw: Draw, rope_type: str, head_dim: int, c: dict) -> Case:
    """A case of ``rope_type`` in the class ``c`` (see ``_axes``), its numbers drawn."""
    factor = draw.choice((2.0, 4.0, 8.0, 16.0)) if c["factor"] == "whole" else draw.uniform(1.5, 32.0)
    base = c["base"] if c["base"] != "other" else draw.choice((500000.0, draw.uniform(1e3, 1e6)))
    params = {"factor": factor}
    original = draw.choice((512, 2048, 4096, 8192))
    if SCALING_METHODS[rope_type].needs_original_len:
        params[ORIGINAL_LEN_KEY] = original
    if rope_type in ("yarn", "ntk_by_parts"):
        params.update(c["betas"] or {})
    return Case((head_dim, base, params), atol=1e-12, rtol=1e-5)


def _reference(rope_type: str, head_dim, base, params, seq_len=None):
    return rope_frequencies(head_dim, base=base, scaling={"rope_type": rope_type, **params}, seq_len=seq_len)


def _yarn_default_betas(d, b, p, ramp, seq_len=None):
    p = {key: value for key, value in p.items() if key not in ("beta_fast", "beta_slow")}
    return _reference("yarn", d, b, {**p, "ramp": ramp})


def _by_parts_weighted(
    weight_of: Callable[[torch.Tensor], torch.Tensor],
    attention_factor=lambda s: 1.0,
    *,
    ramp: Callable[..., torch.Tensor] = ratio_ramp,
    read_betas: bool = True,
):
    """NTK-by-parts' frequencies with the weights ``weight_of(ramp(...))`` (the right ones: the identity of
    ``ratio_ramp``), the betas read from ``params`` or not (the defaults 32 and 1), and ``attention_factor(s)``."""

    def run(d, b, p, seq_len=None):
        betas = (p.get("beta_fast", 32.0), p.get("beta_slow", 1.0)) if read_betas else (32.0, 1.0)
        weight = weight_of(ramp(d, b, p[ORIGINAL_LEN_KEY], *betas))
        inv_freq = default_inv_freq(d, b)
        return inv_freq * (1 - weight) + inv_freq / p["factor"] * weight, attention_factor(p["factor"])

    return run


# the function notebook 07 has a student write for each method: what a failing check names (code, in every language)
FUNCTION_NAMES = {"linear": "linear_frequencies", "ntk": "ntk_frequencies", "ntk_by_parts": "ntk_by_parts_frequencies",
                  "yarn": "yarn_frequencies"}  # fmt: skip
# the methods notebook 07 has an exercise for (the registry's others have none), each with the mistakes its
# checker names when a student makes them
FREQUENCY_MISTAKES: dict[str, dict[str, Callable]] = {
    "linear": {
        N_(
            "position interpolation squeezes positions m -> m / factor, so frequencies are divided by the "
            "factor, not multiplied"
        ): lambda d, b, p, seq_len=None: (default_inv_freq(d, b) * p["factor"], 1.0),
    },
    "ntk": {
        N_("NTK-aware scaling changes the base to base * factor**(d/(d-2)), not base * factor"): (
            lambda d, b, p, seq_len=None: (default_inv_freq(d, b * p["factor"]), 1.0)
        ),
        N_("NTK-aware scaling changes the base, it does not divide every frequency by the factor"): (
            lambda d, b, p, seq_len=None: (default_inv_freq(d, b) / p["factor"], 1.0)
        ),
    },
    "yarn": {
        N_(
            "YaRN also returns an attention factor (temperature) 0.1 * ln(factor) + 1, which multiplies cos and sin"
        ): (lambda d, b, p, seq_len=None: (_reference("yarn", d, b, p)[0], 1.0)),
        N_(
            "params holds beta_fast and beta_slow in this case, and your output is what the defaults 32 and 1 "
            'give: read them with params.get("beta_fast", 32.0) and params.get("beta_slow", 1.0)'
        ): partial(_yarn_default_betas, ramp="ratio"),
        N_(
            "params holds beta_fast and beta_slow in this case, and your output is what the defaults 32 and 1 "
            'give with the library\'s ramp: read them with params.get("beta_fast", 32.0) and params.get("beta_slow", 1.0)'
        ): partial(_yarn_default_betas, ramp="index"),
        N_(
            "the ramp runs the wrong way: pairs that turn more than beta_fast times within L are kept (theta), pairs "
            "that turn fewer than beta_slow times are divided by the factor (theta / s)"
        ): (_by_parts_weighted(lambda w: 1 - w, yarn_mscale)),
    },
    "ntk_by_parts": {
        N_("NTK-by-parts has no temperature: its attention factor is 1 (0.1 ln s + 1 is what YaRN adds)"): (
            _by_parts_weighted(lambda w: w, yarn_mscale)
        ),
        N_(
            "the ramp runs the wrong way: pairs that turn more than beta_fast times within L are kept, pairs that "
            "turn fewer than beta_slow times are divided by the factor"
        ): _by_parts_weighted(lambda w: 1 - w),
        N_(
            "NTK-by-parts ramps linearly in the turns r_i = L theta_i / (2 pi) a pair makes within L (the paper's "
            "formula); a ramp linear in the pair index is the transformers library's YaRN ramp, not NTK-by-parts"
        ): (_by_parts_weighted(lambda w: w, ramp=yarn_index_ramp)),
        N_(
            "params holds beta_fast and beta_slow in this case, and your output is what the defaults 32 and 1 "
            'give: read them with params.get("beta_fast", 32.0) and params.get("beta_slow", 1.0)'
        ): _by_parts_weighted(lambda w: w, read_betas=False),
    },
}


def _other_correct(rope_type: str) -> Callable | None:
    """Other correct outputs: YaRN's ramp as the paper writes it (linear in the turns a pair makes within the
    original length, posref's ``ramp="ratio"``), besides the library's (linear in the pair index, with its ends
    rounded to whole pairs by default or not rounded, ``truncate=False``, as gpt-oss configs ask)."""
    if rope_type != "yarn":
        return None
    return lambda d, b, p, seq_len=None: (
        _reference("yarn", d, b, {**p, "ramp": "ratio"}, seq_len),
        _reference("yarn", d, b, {**p, "truncate": False}, seq_len),
    )


@enforce_rules
def check_frequencies(fn: Callable, rope_type: str, *, hidden: bool = False, device=None) -> None:
    """``fn(head_dim, base, params, seq_len=None)`` -> ``(inv_freq, attention_factor)`` like posref's
    ``rope_type`` method (one of ``FREQUENCY_MISTAKES``: ``linear``, ``ntk``, ``ntk_by_parts``, ``yarn``; notebook
    07 gives Llama 3's and Dynamic NTK's rules as code to read, ungraded). Frequencies are float32 on the CPU; the
    tolerance is a few float32 units in the last place (relative). For YaRN the paper's ramp and the library's are
    both accepted. Hidden cases (``_axes``): a whole and a fractional factor, base 10000 and another; no betas and
    two other pairs (YaRN, NTK-by-parts; the last visible case has betas too); each at least once in 16."""
    if rope_type not in FREQUENCY_MISTAKES:
        checked = ", ".join(FREQUENCY_MISTAKES)
        raise ValueError(f"no frequency checker for rope_type {rope_type!r}; expected one of {checked}")
    draw = Draw(hidden=hidden, device=device)
    classes = draw.cover(16, **_axes(rope_type)) if hidden else [_visible(i) for i in range(3)]
    head_dims = [draw.even(8, 256) for _ in classes] if hidden else [64, 128, 32]
    cases = [_case(draw, rope_type, d, c) for d, c in zip(head_dims, classes, strict=True)]
    first_difference(
        FUNCTION_NAMES[rope_type],
        fn,
        partial(_reference, rope_type),
        cases,
        mistakes={_(hint): wrong for hint, wrong in FREQUENCY_MISTAKES[rope_type].items()},
        match_dtype=False,
        accept=_other_correct(rope_type),
        seed=draw.quoted_seed,
    )


@enforce_rules
def check_rope_frequencies_linear(fn: Callable, *, hidden: bool = False, device=None) -> None:
    """Position Interpolation (arXiv 2306.15595): ``check_frequencies(fn, "linear")``."""
    check_frequencies(fn, "linear", hidden=hidden, device=device)


@enforce_rules
def check_rope_frequencies_ntk(fn: Callable, *, hidden: bool = False, device=None) -> None:
    """NTK-aware base change (YaRN paper, arXiv 2309.00071, section 3.1): ``check_frequencies(fn, "ntk")``."""
    check_frequencies(fn, "ntk", hidden=hidden, device=device)


@enforce_rules
def check_rope_frequencies_yarn(fn: Callable, *, hidden: bool = False, device=None) -> None:
    """YaRN (arXiv 2309.00071), frequencies and attention factor: ``check_frequencies(fn, "yarn")``."""
    check_frequencies(fn, "yarn", hidden=hidden, device=device)


@enforce_rules
def check_rope_frequencies_ntk_by_parts(fn: Callable, *, hidden: bool = False, device=None) -> None:
    """NTK-by-parts (YaRN paper, arXiv 2309.00071, section 3.2: the ramp in turns, no temperature):
    ``check_frequencies(fn, "ntk_by_parts")``."""
    check_frequencies(fn, "ntk_by_parts", hidden=hidden, device=device)


@enforce_rules
def check_longrope_mutation(fn: Callable, *, hidden: bool = False, device=None) -> None:
    """``fn(parent (n,), which (n,) bool, noise (n,), low, high, monotone)`` -> ``(n,)``: one mutation step of
    LongRoPE's search (arXiv 2402.13753, Alg. 1), like ``posref.longrope_search.mutate_factors``. Hidden cases: one
    whose step breaks the order with ``monotone=False``, then monotone and not, 30%, half and all factors mutated,
    upper bounds 4, 8 and 32, each at least once in 15."""
    draw = Draw(hidden=hidden, device="cpu")  # factors are search bookkeeping, on the CPU
    cases = []
    visible = [dict(monotone=m, share=0.5, high=h) for m, h in ((True, 8.0), (False, 4.0), (True, 32.0))]
    axes = dict(monotone=(True, False), share=(0.3, 0.5, 1.0), high=(4.0, 8.0, 32.0))
    # hidden: first a case whose step breaks the order (the last factor falls to the floor), with monotone False
    classes = [dict(monotone=False, share=1.0, high=32.0), *draw.cover(15, **axes)] if hidden else visible
    for i, c in enumerate(classes):
        n = (draw.int(2, 64) if i == 0 else draw.int(1, 64)) if hidden else (8, 6, 16)[i]
        parent = 1.0 + draw.randn(n, dtype=torch.float64).abs().cumsum(0)  # non-decreasing factors >= 1
        which = torch.rand(n, generator=draw.tensor_generator) < c["share"]
        noise = draw.randn(n, dtype=torch.float64, scale=draw.choice((0.1, 0.5, 1.0)))
        if hidden and i == 0:
            noise[-2:] = torch.tensor([0.5, -3.0])
        cases.append(Case((parent, which, noise, 1.0, c["high"], c["monotone"]), atol=1e-12, rtol=1e-9))

    def reference(parent, which, noise, low, high, monotone):
        return mutate_factors(parent, which, noise, low=low, high=high, monotone=monotone)

    def step(change, *, clamp=True, monotone_ok=True):
        def run(parent, which, noise, low, high, monotone):
            child = change(parent, which, noise)
            if not clamp:  # the bounds widened to the child's own range
                low, high = min(low, float(child.min())), max(high, float(child.max()))
            return project_factors(child, low=low, high=high, monotone=monotone and monotone_ok)

        return run

    mistakes = {
        _(
            "a mutation multiplies a factor by exp(noise) (a log-normal step), it does not add the noise"
        ): step(lambda p, w, z: torch.where(w, p + z, p)),
        _("only the factors where `which` is True change; the others are kept"): step(
            lambda p, w, z: p * z.exp()
        ),
        _(
            "after the step, clamp the factors to [low, high]: the search keeps every candidate inside its bounds"
        ): step(lambda p, w, z: torch.where(w, p * z.exp(), p), clamp=False),
        _(
            "when monotone is True, make the factors non-decreasing with a running maximum (torch.cummax), after "
            "the clamp"
        ): step(lambda p, w, z: torch.where(w, p * z.exp(), p), monotone_ok=False),
    }
    first_difference(
        "longrope_mutation",
        fn,
        reference,
        cases,
        mistakes=mistakes,
        match_dtype=False,
        seed=draw.quoted_seed,
    )
