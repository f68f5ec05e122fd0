"""Checkers for the lab notebooks 06-08: per-position loss, four RoPE scaling rules, causal uniform attention.

* 06 length: ``per_position_loss(logits, targets)`` against ``posref.evaluate.per_position_loss``;
* 07 scaling: PI, NTK-aware, YaRN and Llama 3 frequencies against ``posref.rope_frequencies``;
* 08 nope: ``causal_mean(v)``, what a causal head computes when its scores are all equal (the mechanism that
  lets NoPE count positions, arXiv 2305.19466 Theorem 1), against ``posref.scaled_dot_product_attention``.

Frequencies are built on the CPU (as the transformers library builds them), so those checkers take ``device``
only for the common signature. The references are posref's; each recognised mistake is a computed variant.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import nn

from posref.attention import scaled_dot_product_attention
from posref.evaluate import per_position_loss
from posref.grading.cases import Draw
from posref.grading.report import Case, first_difference
from posref.scaling import default_inv_freq, rope_frequencies
from posref.tasks import IGNORE_INDEX

# ---------------------------------------------------------------------------------------------------------------
# 06: loss at each position


class _Replay(nn.Module):
    """A 'model' that returns fixed logits, so that ``posref.evaluate`` can score them as it scores a model."""

    def __init__(self, logits: torch.Tensor) -> None:
        super().__init__()
        self.logits = logits
        self.anchor = nn.Parameter(torch.zeros((), device=logits.device))  # the device evaluate reads

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.logits


def _per_position_reference(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    curve = per_position_loss(_Replay(logits), [(targets, targets)])
    return curve.to(logits.device)


def _ce(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """(B, T) cross-entropy in nats; ignored targets give 0."""
    return F.cross_entropy(
        logits.float().transpose(1, 2), targets, reduction="none", ignore_index=IGNORE_INDEX
    )


def _draw_lm_case(draw: Draw, b: int, t: int, v: int, ignore_share: float) -> Case:
    logits = draw.randn(b, t, v, scale=draw.choice((1.0, 3.0)))
    targets = torch.randint(0, v, (b, t), generator=draw._gen).to(draw.device)
    ignored = torch.rand(b, t, generator=draw._gen).to(draw.device) < ignore_share
    ignored[0] = False  # every position keeps at least one scored target (an all-ignored position is nan)
    targets = targets.masked_fill(ignored, IGNORE_INDEX)
    return Case((logits, targets), label=f"{int(ignored.sum())} targets ignored", atol=1e-5, rtol=1e-5)


def check_per_position_loss(fn: Callable[..., torch.Tensor], *, hidden: bool = False, device=None) -> None:
    """``fn(logits (B, T, V), targets (B, T))`` -> ``(T,)``: mean cross-entropy (nats) at each position over the
    batch, targets equal to ``IGNORE_INDEX`` (-100) neither scored nor counted; like ``posref.evaluate``."""
    draw = Draw(hidden=hidden, device=device)
    if hidden:
        cases = [
            _draw_lm_case(
                draw, draw.int(2, 8), draw.int(1, 70), draw.int(2, 100), draw.choice((0.0, 0.2, 0.5))
            )
            for _ in range(20)
        ]
    else:
        cases = [_draw_lm_case(draw, 3, 5, 4, 0.0), _draw_lm_case(draw, 4, 6, 7, 0.3)]

    def ignored_as_zero(logits, targets):
        return _ce(logits, targets).sum(0) / targets.shape[0]

    def ignored_scored(logits, targets):
        return _ce(logits, targets.clamp(min=0)).mean(0)

    def no_log_softmax(logits, targets):
        picked = logits.float().gather(-1, targets.clamp(min=0)[..., None])[..., 0]
        scored = (targets != IGNORE_INDEX).float()
        return (-picked * scored).sum(0) / scored.sum(0)

    def bits(logits, targets):
        return _per_position_reference(logits, targets) / math.log(2)

    mistakes = {
        "ignored targets (-100) were counted in the mean as a loss of 0: divide each position's sum by the "
        "number of targets scored there, not by the batch size": ignored_as_zero,
        "targets equal to -100 must not be scored at all (clamping them to 0 scores them as token 0)": ignored_scored,
        "cross-entropy is -log softmax(logits)[target], not -logits[target]: take log_softmax first": no_log_softmax,
        "report the loss in nats (natural log), not bits": bits,
    }
    first_difference(
        "per_position_loss",
        fn,
        _per_position_reference,
        cases,
        mistakes=mistakes,
        match_dtype=False,
        seed=draw.seed if hidden else None,
    )


# ---------------------------------------------------------------------------------------------------------------
# 07: scaling rules as frequencies


def _freq_case(args: tuple, kwargs: dict | None = None, label: str = "") -> Case:
    # relative tolerance only: the slowest frequencies are ~1e-6 and an absolute tolerance would hide them
    return Case(args, kwargs or {}, label=label, atol=1e-30, rtol=3e-5)


def _draw_rope(draw: Draw) -> tuple[int, float, float]:
    head_dim = draw.even(4, 128)
    base = draw.choice((10.0, 50.0, 500.0, 10000.0, 500000.0))
    factor = draw.choice((1.0, 2.0, 4.0, 8.0, round(draw.uniform(1.0, 40.0), 3)))
    return head_dim, base, factor


def _frequencies(head_dim: int, base: float, scaling: dict) -> torch.Tensor:
    return rope_frequencies(head_dim, base=base, scaling=scaling)[0]


def _check_frequencies(name, fn, reference, cases, mistakes, draw: Draw) -> None:
    first_difference(
        name,
        fn,
        reference,
        cases,
        mistakes=mistakes,
        match_dtype=False,
        seed=draw.seed if draw.hidden else None,
    )


def check_pi_inv_freq(fn: Callable[..., torch.Tensor], *, hidden: bool = False, device=None) -> None:
    """``fn(head_dim, base, factor)`` -> ``(head_dim/2,)``: Position Interpolation (arXiv 2306.15595), every
    frequency ``base**(-2i/d)`` divided by ``factor``."""
    draw = Draw(hidden=hidden, device=device)
    specs = [_draw_rope(draw) for _ in range(16)] if hidden else [(8, 10000.0, 2.0), (16, 50.0, 4.0)]
    cases = [_freq_case(spec) for spec in specs]

    def reference(d, b, s):
        return _frequencies(d, b, {"rope_type": "linear", "factor": s})

    mistakes = {
        "PI divides every frequency by the factor (positions are squeezed m -> m / s); multiplying speeds the "
        "clock hands up instead": lambda d, b, s: default_inv_freq(d, b) * s,
        "the frequencies are unchanged: divide each by the factor": lambda d, b, s: default_inv_freq(d, b),
        "only the base was scaled (base * s): that is not PI; PI divides every frequency by s": lambda d, b, s: (
            default_inv_freq(d, b * s)
        ),
    }
    _check_frequencies("pi_inv_freq", fn, reference, cases, mistakes, draw)


def check_ntk_inv_freq(fn: Callable[..., torch.Tensor], *, hidden: bool = False, device=None) -> None:
    """``fn(head_dim, base, factor)`` -> ``(head_dim/2,)``: NTK-aware scaling, plain RoPE frequencies with the
    base ``base * factor**(d / (d - 2))`` (YaRN paper arXiv 2309.00071 eq. 16)."""
    draw = Draw(hidden=hidden, device=device)
    specs = [_draw_rope(draw) for _ in range(16)] if hidden else [(8, 10000.0, 2.0), (16, 50.0, 4.0)]
    cases = [_freq_case(spec) for spec in specs]

    def reference(d, b, s):
        return _frequencies(d, b, {"rope_type": "ntk", "factor": s})

    mistakes = {
        "the base is multiplied by factor ** (d / (d - 2)), not by the factor: with base * s the slowest pair is "
        "divided by less than s": lambda d, b, s: default_inv_freq(d, b * s),
        "that is Position Interpolation (every frequency / s); NTK-aware changes the base instead, so the "
        "fastest pair keeps its frequency": lambda d, b, s: default_inv_freq(d, b) / s,
        "the exponent is d / (d - 2), not (d - 2) / d": lambda d, b, s: default_inv_freq(
            d, b * s ** ((d - 2) / d)
        ),
    }
    _check_frequencies("ntk_inv_freq", fn, reference, cases, mistakes, draw)


def _yarn_scaling(s, original_len, beta_fast, beta_slow, ramp):
    return {
        "rope_type": "yarn",
        "factor": s,
        "original_max_position_embeddings": original_len,
        "beta_fast": beta_fast,
        "beta_slow": beta_slow,
        "ramp": ramp,
    }


def _yarn(d, b, s, original_len, beta_fast=32.0, beta_slow=1.0, *, ramp="ratio"):
    inv_freq, attention_factor = rope_frequencies(
        d, base=b, scaling=_yarn_scaling(s, original_len, beta_fast, beta_slow, ramp)
    )
    return inv_freq, attention_factor


def _yarn_by_weight(d, b, s, original_len, beta_fast, beta_slow, weight_of_turns, temperature=True):
    """YaRN with a given map from turns-in-L to 'keep' weight (for the mistakes)."""
    inv_freq = default_inv_freq(d, b).double()
    turns = original_len * inv_freq / (2 * math.pi)
    keep = weight_of_turns(turns)
    scaled = (inv_freq / s) * (1 - keep) + inv_freq * keep
    factor = 0.1 * math.log(s) + 1.0 if (temperature and s > 1) else 1.0
    return scaled.float(), factor


def check_yarn_frequencies(
    fn: Callable[..., tuple[torch.Tensor, float]], *, hidden: bool = False, device=None
) -> None:
    """``fn(head_dim, base, factor, original_len, beta_fast=32.0, beta_slow=1.0)`` -> ``(inv_freq, attention
    factor)``: YaRN (arXiv 2309.00071 §3.2-3.4). A pair making ``r`` turns in ``original_len`` tokens keeps its
    frequency if ``r >= beta_fast``, is divided by ``factor`` if ``r <= beta_slow``, and is blended linearly in
    ``r`` in between; the attention factor (multiplying cos and sin) is ``0.1 ln(factor) + 1``.

    The paper's ramp is linear in turns; the transformers library's is linear in the pair index (with floor and
    ceil at the edges). Both are accepted.
    """
    draw = Draw(hidden=hidden, device=device)
    if hidden:
        cases = []
        for _ in range(16):
            d, b, s = _draw_rope(draw)
            betas = draw.choice(((32.0, 1.0), (4.0, 1.0), (16.0, 2.0), (round(draw.uniform(2, 40), 2), 1.0)))
            cases.append(_freq_case((d, b, s, draw.choice((64, 256, 4096, 8192)), *betas)))
    else:
        cases = [
            _freq_case((16, 50.0, 4.0, 64), {}, "default betas"),
            _freq_case((16, 50.0, 4.0, 64, 4.0, 1.0)),
        ]

    def library_ramp(*args, **kwargs):
        return (_yarn(*args, **kwargs, ramp="index"),)

    def ramp(lo, hi):
        return lambda turns: ((turns - lo) / (hi - lo)).clamp(0, 1)

    def inverted(d, b, s, L, bf=32.0, bs=1.0):
        return _yarn_by_weight(d, b, s, L, bf, bs, lambda r: 1 - ramp(bs, bf)(r))

    def no_temperature(d, b, s, L, bf=32.0, bs=1.0):
        return _yarn_by_weight(d, b, s, L, bf, bs, ramp(bs, bf), temperature=False)

    def squared_temperature(d, b, s, L, bf=32.0, bs=1.0):
        inv_freq, factor = _yarn(d, b, s, L, bf, bs)
        return inv_freq, factor**2

    def wavelength_ramp(d, b, s, L, bf=32.0, bs=1.0):
        # beta compared with the wavelength in tokens instead of the number of turns in L
        return _yarn_by_weight(d, b, s, L, bf, bs, lambda r: ramp(bs, bf)(L / r))

    mistakes = {
        "the ramp is the wrong way round: FAST pairs (many turns in L, r >= beta_fast) keep their frequency and "
        "SLOW pairs (r <= beta_slow) are divided by the factor": inverted,
        "the attention factor is missing: YaRN returns 0.1 * ln(factor) + 1 (it multiplies cos and sin)": no_temperature,
        "return the factor that multiplies cos and sin, 0.1 ln(s) + 1, not its square (the square is what the "
        "logits get)": squared_temperature,
        "compare the betas with the number of turns r = L / wavelength that a pair makes in the original length, "
        "not with the wavelength itself": wavelength_ramp,
    }
    first_difference(
        "yarn_frequencies",
        fn,
        _yarn,
        cases,
        mistakes=mistakes,
        match_dtype=False,
        accept=library_ramp,
        seed=draw.seed if hidden else None,
    )


def check_llama3_inv_freq(fn: Callable[..., torch.Tensor], *, hidden: bool = False, device=None) -> None:
    """``fn(head_dim, base, factor, low_freq_factor, high_freq_factor, original_len)`` -> ``(head_dim/2,)``: Llama
    3.1's bands. Wavelengths below ``original_len / high_freq_factor`` keep their frequency, above
    ``original_len / low_freq_factor`` are divided by ``factor``, and in between the two are blended with
    ``smooth = (original_len / wavelength - low) / (high - low)``."""
    draw = Draw(hidden=hidden, device=device)
    if hidden:
        cases = []
        for _ in range(16):
            d, b, s = _draw_rope(draw)
            low, high = draw.choice(((1.0, 4.0), (1.0, 2.0), (0.5, 4.0), (2.0, 8.0)))
            cases.append(_freq_case((d, b, s, low, high, draw.choice((64, 256, 8192)))))
    else:
        cases = [_freq_case((128, 500000.0, 8.0, 1.0, 4.0, 8192)), _freq_case((16, 50.0, 4.0, 1.0, 4.0, 64))]

    def reference(d, b, s, low, high, L):
        scaling = {
            "rope_type": "llama3",
            "factor": s,
            "low_freq_factor": low,
            "high_freq_factor": high,
            "original_max_position_embeddings": L,
        }
        return _frequencies(d, b, scaling)

    def banded(d, b, s, low, high, L, *, flip=False):
        inv_freq = default_inv_freq(d, b).double()
        smooth = ((L * inv_freq / (2 * math.pi) - low) / (high - low)).clamp(0, 1)
        if flip:
            smooth = 1 - smooth
        return (smooth * inv_freq + (1 - smooth) * inv_freq / s).float()

    mistakes = {
        "the bands are the wrong way round: SHORT wavelengths (fast pairs) are kept and LONG ones divided by the "
        "factor": lambda *a: banded(*a, flip=True),
        "every pair is divided by the factor (that is PI): pairs with wavelength < original_len / "
        "high_freq_factor keep their frequency": lambda d, b, s, low, high, L: default_inv_freq(d, b) / s,
    }
    _check_frequencies("llama3_inv_freq", fn, reference, cases, mistakes, draw)


# ---------------------------------------------------------------------------------------------------------------
# 08: what a causal head computes when it cannot tell keys apart


def _causal_uniform(v: torch.Tensor) -> torch.Tensor:
    zeros = torch.zeros(*v.shape[:-1], 1, dtype=v.dtype, device=v.device)  # equal scores for every key
    return scaled_dot_product_attention(zeros, zeros, v, causal=True)


def check_causal_mean(
    fn: Callable[[torch.Tensor], torch.Tensor], *, hidden: bool = False, device=None
) -> None:
    """``fn(v (..., T, D))`` -> ``(..., T, D)``: causal attention with all scores equal, i.e. row ``t`` is the
    mean of ``v[..., :t+1, :]``; like ``posref.scaled_dot_product_attention`` with zero queries and keys."""
    draw = Draw(hidden=hidden, device=device)
    cases = []
    for i in range(draw.n(2, 16)):
        lead = tuple(draw.int(1, 3) for _ in range(draw.int(0, 2))) if hidden else ((), (2,))[i]
        t, d = (draw.int(1, 80), draw.int(1, 16)) if hidden else ((4, 3), (5, 2))[i]
        dtype = draw.choice((torch.float32, torch.float32, torch.float64)) if hidden else torch.float32
        cases.append(Case((draw.randn(*lead, t, d, dtype=dtype),), atol=1e-5, rtol=1e-5))

    def counts(v, offset):
        n = torch.arange(1, v.shape[-2] + 1, device=v.device, dtype=v.dtype) + offset
        return n[:, None]

    mistakes = {
        "the mask is missing: position t may only average tokens 0..t, not the whole sequence": lambda v: (
            v.mean(-2, keepdim=True).expand_as(v)
        ),
        "a running SUM, not a mean: divide row t by the t + 1 tokens it sees": lambda v: v.cumsum(-2),
        "row t averages t + 1 tokens (0..t): divide by t + 1, not t": lambda v: (
            v.cumsum(-2) / counts(v, -1).clamp(min=1)
        ),
    }
    first_difference(
        "causal_mean", fn, _causal_uniform, cases, mistakes=mistakes, seed=draw.seed if hidden else None
    )


__all__ = [
    "check_causal_mean",
    "check_llama3_inv_freq",
    "check_ntk_inv_freq",
    "check_per_position_loss",
    "check_pi_inv_freq",
    "check_yarn_frequencies",
]
