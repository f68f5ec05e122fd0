"""Checkers for the lab notebooks 06 and 08 (07's frequency rules are checked by ``posref.grading.checks.scaling``).

* 06 length: ``per_position_loss(logits, targets)`` against ``posref.lab.evaluate.per_position_loss``; the
  student's RoPE, ALiBi and NoPE handlers, through one attention layer (``posref.lab.handler_attention``),
  against posref's handlers with the same weights;
* 08 nope: the NoPE handler pasted in from 06 (checked again, not graded again); DroPE's ``drop(model)`` through
  ``run_drop`` against ``TinyDecoder.with_positions("nope")``; ``causal_mean(v)``, what a causal head computes
  when its scores are all equal (the mechanism that lets NoPE count positions, arXiv 2305.19466 Theorem 1),
  against ``posref.scaled_dot_product_attention``.

The references are posref's; each recognised mistake is a computed variant.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import nn

from posref.attention import scaled_dot_product_attention
from posref.grading.cases import Draw
from posref.grading.difference import default_tolerance, difference
from posref.grading.failure import Cause
from posref.grading.report import Case, CheckFailed, call, first_difference
from posref.grading.rules import enforce_rules, watch_rules
from posref.i18n import N_, _
from posref.lab.evaluate import per_position_loss
from posref.lab.model import TinyDecoder, build_model
from posref.lab.positions import ALiBiPositions, NoPE, PositionHandler, RoPEPositions, handler_attention
from posref.lab.tasks import IGNORE_INDEX
from posref.relative import alibi_bias

# ---------------------------------------------------------------------------------------------------------------
# 06: loss at each position


class _Replay(nn.Module):
    """A 'model' that returns fixed logits, so that ``posref.lab.evaluate`` can score them as it scores a model."""

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


_HALF = (torch.float16, torch.bfloat16)


def _draw_lm_case(
    draw: Draw, b: int, t: int, v: int, ignore_share: float, dtype: torch.dtype = torch.float32
) -> Case:
    logits = draw.randn(b, t, v, scale=draw.choice((1.0, 3.0)), dtype=dtype)
    targets = torch.randint(0, v, (b, t), generator=draw.tensor_generator).to(draw.device)
    ignored = torch.rand(b, t, generator=draw.tensor_generator).to(draw.device) < ignore_share
    ignored[0] = False  # every position keeps at least one scored target (an all-ignored position is nan)
    if ignore_share > 0:  # and at least one target is ignored
        ignored[-1, draw.int(0, t - 1)] = True
    targets = targets.masked_fill(ignored, IGNORE_INDEX)
    # the tolerance is float32's whatever the logits: the reference upcasts them first, and so must the answer
    half = (
        ""
        if dtype == torch.float32
        else _(", {dtype} logits").format(dtype=str(dtype).removeprefix("torch."))
    )
    label = _("{n} targets ignored").format(n=int(ignored.sum())) + half
    return Case((logits, targets), label=label, atol=1e-5, rtol=1e-5)


def _half_precision_hint(fn: Callable[..., torch.Tensor], cases: list[Case]) -> str | None:
    """The hint for a loss computed in the logits' own half precision, or None: the first case ``fn`` misses has
    float16 or bfloat16 logits, and its output is off by no more than that precision's rounding."""
    for case in cases:
        expected = call(_per_position_reference, case)
        try:
            got = call(fn, case)
            missed = difference(expected, got, match_dtype=False, atol=case.atol, rtol=case.rtol) is not None
        except Exception:  # first_difference has reported what went wrong
            return None
        if not missed:
            continue
        dtype = case.args[0].dtype
        name = str(dtype).removeprefix("torch.")
        if dtype not in _HALF or not isinstance(got, torch.Tensor) or not got.is_floating_point():
            return None
        # a sum of B half-precision losses: a few times the rounding of one value, far below any wrong formula
        atol, rtol = (10 * tol for tol in default_tolerance(dtype))
        if difference(expected, got.double(), match_dtype=False, atol=atol, rtol=rtol) is not None:
            return None
        return _(_HALF_PRECISION).format(name=name)
    return None


_HALF_PRECISION = N_(
    "the logits are {name}, and your loss carries {name}'s rounding errors: upcast them first "
    "(logits.float()) and compute log_softmax and the means in float32 or float64"
)


@enforce_rules
def check_per_position_loss(fn: Callable[..., torch.Tensor], *, hidden: bool = False, device=None) -> None:
    """``fn(logits (B, T, V), targets (B, T))`` -> ``(T,)``: mean cross-entropy (nats) at each position over the
    batch, targets equal to ``IGNORE_INDEX`` (-100) neither scored nor counted; like ``posref.lab.evaluate``.
    Hidden cases: no target ignored, some and half (at least one), each in float32 logits (12 cases) and in float16
    and bfloat16 (8)."""
    draw = Draw(hidden=hidden, device=device)
    # float32 logits first, so that a wrong formula fails there with its hint; then half-precision logits, on
    # which only a computation in float32 or better passes (the text asks for it)
    if hidden:  # every share of ignored targets in float32, then both half precisions
        shares = (0.0, 0.2, 0.5)
        classes = draw.cover(12, ignored=shares, dtype=(torch.float32,)) + draw.cover(
            8, ignored=shares, dtype=_HALF
        )
        cases = [
            _draw_lm_case(draw, draw.int(2, 8), draw.int(1, 70), draw.int(2, 100), c["ignored"], c["dtype"])
            for c in classes
        ]
    else:
        cases = [
            _draw_lm_case(draw, 3, 5, 4, 0.0),
            _draw_lm_case(draw, 4, 6, 7, 0.3),
            _draw_lm_case(draw, 4, 6, 7, 0.3, torch.bfloat16),
        ]

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
        _(
            "ignored targets (-100) were counted in the mean as a loss of 0: divide each position's sum by the "
            "number of targets scored there, not by the batch size"
        ): ignored_as_zero,
        _(
            "targets equal to -100 must not be scored at all (clamping them to 0 scores them as token 0)"
        ): ignored_scored,
        _(
            "cross-entropy is -log softmax(logits)[target], not -logits[target]: take log_softmax first"
        ): no_log_softmax,
        _("report the loss in nats (natural log), not bits"): bits,
    }
    try:
        first_difference(
            "per_position_loss",
            fn,
            _per_position_reference,
            cases,
            mistakes=mistakes,
            match_dtype=False,
            at_least_float32=True,
            seed=draw.quoted_seed,
        )
    except CheckFailed as failed:
        hinted = _("hint: {hint}").format(hint="") in str(failed)
        hint = None if hinted else _half_precision_hint(fn, cases)
        if hint is None:
            raise
        failed.args = (
            f"{failed}\n  " + _("hint: {hint}").format(hint=hint),
        )  # the same error, its traceback kept
        failed.cause = Cause.mistake(_HALF_PRECISION)
        raise


# ---------------------------------------------------------------------------------------------------------------
# 06: position handlers of the student's own, seen through one attention layer


def _draw_attention_cases(draw: Draw, extra: Callable[[int], dict]) -> list[Case]:
    """Cases ``(x (B, T, C), w_qkv (3C, C), n_heads, start, n_new, **extra(head_dim))``: the visible ones a plain
    layer and a KV-cache step at an offset; the hidden ones a KV-cache step at an offset first, then positions from 0
    and from an offset, every token a query, the last one alone and several of the last (a KV-cache step), one
    head, a power of two and another count (ALiBi's rule), each at least once in 11, batch, head dim and length
    drawn."""
    cases = []
    if draw.hidden:
        # the first case has cached keys and several queries: on one query at the end, keys read in reverse order
        # (positions counted from 0 or 1) give the sign-flipped bias up to a constant, which the softmax drops, so
        # a first failure there could not tell the two mistakes apart
        first = dict(start="offset", queries="several of the last", heads=draw.choice((2, 4, 8)))
        heads = (1, draw.choice((2, 4, 8)), draw.choice((3, 5, 6)))  # one, a power of two, another count
        axes = dict(start=(0, "offset"), queries=("all", "the last", "several of the last"), heads=heads)
        classes = [first, *draw.cover(11, **axes)]
    else:
        classes = [dict(start=0, queries="all"), dict(start="offset", queries="several of the last")]
    for i, k in enumerate(classes):
        if draw.hidden:
            b, h, d = draw.int(1, 3), k["heads"], draw.even(2, 24)
            t = draw.int(1, 40) if k["queries"] != "several of the last" else draw.int(3, 40)
            start = draw.int(1, 200) if k["start"] == "offset" else 0
            n_new = {"all": t, "the last": 1}.get(k["queries"]) or draw.int(2, t - 1)
        else:
            b, h, d, t, start, n_new = ((2, 2, 8, 6, 0, 6), (1, 3, 4, 9, 5, 3))[i]
        c = h * d
        x, w_qkv = draw.randn(b, t, c), draw.randn(3 * c, c, scale=c**-0.5)
        label = _("{heads} heads of dim {d}, positions {start}..{end}, the last {n_new} as queries").format(
            heads=h, d=d, start=start, end=start + t - 1, n_new=n_new
        )
        cases.append(Case((x, w_qkv, h, start, n_new), extra(d), label=label, atol=1e-4, rtol=1e-4))
    return cases


def _through(handler: PositionHandler, x, w_qkv, n_heads, start, n_new) -> torch.Tensor:
    return handler_attention(handler.to(x.device), x, w_qkv, n_heads, start=start, n_new=n_new)


class _RotatedTokens(RoPEPositions):
    """Mistake: the token vectors rotated (so the values too), queries and keys left alone."""

    def embed(self, x, positions):
        B, T, C = x.shape
        D = self.rotary.head_dim
        heads = x.view(B, T, C // D, D).transpose(1, 2)  # (B, H, T, D)
        return self.rotary(heads, heads, positions=positions)[0].transpose(1, 2).reshape(B, T, C)

    def rotate(self, q, k, positions):
        return q, k


class _RoPEAt(RoPEPositions):
    """Mistakes: rotate by ``where(positions)`` instead of ``positions``, the queries only, or backwards."""

    def __init__(self, head_dim, *, base, where=lambda p: p, keys=True, backwards=False):
        super().__init__(head_dim, base=base)
        self.where, self.keys, self.backwards = where, keys, backwards

    def _mirror(self, x):
        """Negate the second half of each pair (half layout): rotating the mirror image turns the other way."""
        if not self.backwards:
            return x
        r = self.rotary.head_dim // 2
        return torch.cat((x[..., :r], -x[..., r : 2 * r], x[..., 2 * r :]), dim=-1)

    def rotate(self, q, k, positions):
        q_rot, k_rot = super().rotate(self._mirror(q), self._mirror(k), self.where(positions))
        return self._mirror(q_rot), (self._mirror(k_rot) if self.keys else k)


class _ALiBiWith(ALiBiPositions):
    """Mistakes: ALiBi with its slopes or its positions changed by ``slopes`` and ``where``."""

    def __init__(self, n_heads, *, slopes=lambda s: s, where=lambda p: p):
        super().__init__(n_heads)
        self.change, self.where = slopes, where

    def bias(self, q_positions, k_positions):
        return alibi_bias(self.change(self.slopes), self.where(q_positions), self.where(k_positions))


def _from_zero(positions):
    return torch.arange(positions.numel(), device=positions.device)


@watch_rules
def check_rope_handler(fn: Callable[..., torch.Tensor], *, hidden: bool = False, device=None) -> None:
    """``fn(x, w_qkv, n_heads, start, n_new, base=...)`` -> ``(B, H, n_new, D)``: the student's RoPE handler (half
    layout) in ``posref.lab.handler_attention``, like ``RoPEPositions(D, base=base)`` with the same weights."""
    draw = Draw(hidden=hidden, device=device)
    cases = _draw_attention_cases(draw, lambda d: {"base": draw.choice((50.0, 10000.0)) if hidden else 50.0})

    def reference(x, w_qkv, n_heads, start, n_new, base):
        head_dim = x.shape[-1] // n_heads
        return _through(RoPEPositions(head_dim, base=base), x, w_qkv, n_heads, start, n_new)

    def variant(make):
        def run(x, w_qkv, n_heads, start, n_new, base):
            return _through(make(x.shape[-1] // n_heads, base), x, w_qkv, n_heads, start, n_new)

        return run

    mistakes = {
        _(
            "rotate() must rotate q and k and embed() return x unchanged: rotating the token vectors rotates the "
            "values as well, and the scores then depend on absolute positions"
        ): variant(lambda d, b: _RotatedTokens(d, base=b)),
        _(
            "rotate by the positions you are given (they start at the offset, and at a KV-cache step the queries sit "
            "after the cached keys), not by arange(T)"
        ): variant(lambda d, b: _RoPEAt(d, base=b, where=_from_zero)),
        _("rotate the keys too: rotate() returns (rotated q, rotated k)"): variant(
            lambda d, b: _RoPEAt(d, base=b, keys=False)
        ),
        _(
            "the rotation goes the wrong way (angle -m*theta): the half layout is (a cos - b sin, b cos + a sin)"
        ): variant(lambda d, b: _RoPEAt(d, base=b, backwards=True)),
        _("pairs are (dim i, dim i + D/2) in the half layout, not neighbours (2i, 2i + 1)"): variant(
            lambda d, b: RoPEPositions(d, base=b, layout="interleaved")
        ),
        _(
            "pair i turns at theta_i = base**(-2i/D), D the head dim: the exponent is 2i/D (you used i/D)"
        ): variant(lambda d, b: RoPEPositions(d, base=b**0.5)),
    }
    first_difference("rope_handler_attention", fn, reference, cases, mistakes=mistakes, seed=draw.quoted_seed)


@watch_rules
def check_alibi_handler(fn: Callable[..., torch.Tensor], *, hidden: bool = False, device=None) -> None:
    """``fn(x, w_qkv, n_heads, start, n_new)`` -> ``(B, H, n_new, D)``: the student's ALiBi handler in
    ``posref.lab.handler_attention``, like ``ALiBiPositions(n_heads)``."""
    draw = Draw(hidden=hidden, device=device)
    cases = _draw_attention_cases(draw, lambda d: {})

    def reference(x, w_qkv, n_heads, start, n_new):
        return _through(ALiBiPositions(n_heads), x, w_qkv, n_heads, start, n_new)

    def variant(**change):
        def run(x, w_qkv, n_heads, start, n_new):
            return _through(_ALiBiWith(n_heads, **change), x, w_qkv, n_heads, start, n_new)

        return run

    mistakes = {
        _("the bias is a penalty, -slope * |m - n|: far keys must get lower scores, not higher"): variant(
            slopes=lambda s: -s
        ),
        _(
            "the bias needs the positions it is given (at a KV-cache step the queries sit after the cached keys), "
            "not arange(Tq) and arange(Tk)"
        ): variant(where=_from_zero),
        _(
            "head h gets slope 2**(-8h/n) for h = 1..n, the steepest first: the slopes are in reverse order"
        ): variant(slopes=lambda s: s.flip(0)),
        _(
            "for a head count that is not a power of two, ALiBi takes the slopes of the largest power of two c < n, "
            "then every other slope of 2c (notebook 03's rule), not 2**(-8h/n) for h = 1..n"
        ): variant(
            slopes=lambda s: (
                2.0 ** (-8.0 * torch.arange(1, s.numel() + 1, dtype=s.dtype, device=s.device) / s.numel())
            )
        ),
    }
    first_difference(
        "alibi_handler_attention", fn, reference, cases, mistakes=mistakes, seed=draw.quoted_seed
    )


# ---------------------------------------------------------------------------------------------------------------
# 06 (graded) and 08 (checked): NoPE as a handler of the student's own; 08: DroPE's drop


@watch_rules
def check_nope_handler(fn: Callable[..., torch.Tensor], *, hidden: bool = False, device=None) -> None:
    """``fn(x, w_qkv, n_heads, start, n_new)`` -> ``(B, H, n_new, D)``: the student's NoPE handler in
    ``posref.lab.handler_attention``, like ``posref.NoPE()``: no position signal at any of the three hooks."""
    draw = Draw(hidden=hidden, device=device)
    cases = _draw_attention_cases(draw, lambda d: {})

    def reference(x, w_qkv, n_heads, start, n_new):
        return _through(NoPE(), x, w_qkv, n_heads, start, n_new)

    def rope_left_in(x, w_qkv, n_heads, start, n_new):
        return _through(RoPEPositions(x.shape[-1] // n_heads, base=50.0), x, w_qkv, n_heads, start, n_new)

    mistakes = {
        _("NoPE rotates nothing: rotate() returns q and k as they are"): rope_left_in,
    }
    first_difference("nope_handler_attention", fn, reference, cases, mistakes=mistakes, seed=draw.quoted_seed)


def _weights(model: TinyDecoder) -> torch.Tensor:
    """Every weight of ``model`` but its handler's, as one flat vector."""
    return torch.cat(
        [p.detach().flatten() for n, p in model.named_parameters() if not n.startswith("positions.")]
    )


@torch.no_grad()
def run_drop(
    drop: Callable[[TinyDecoder], TinyDecoder],
    weights: torch.Tensor,
    idx: torch.Tensor,
    vocab_size: int,
    d_model: int,
    n_layers: int,
    n_heads: int,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """A RoPE ``TinyDecoder`` (base 50) holding ``weights`` (flat, in ``parameters()`` order), dropped by
    ``drop`` -> (the dropped model's logits on ``idx``, the original's logits after the drop, the dropped model's
    weights but its handler's, flat): what ``check_drop`` compares."""
    model = build_model(
        vocab_size, {"method": "rope", "rope_base": 50.0}, d_model=d_model, n_layers=n_layers, n_heads=n_heads
    ).to(idx.device)
    torch.nn.utils.vector_to_parameters(weights, model.parameters())
    dropped = drop(model)
    return dropped(idx), model(idx), _weights(dropped)


@watch_rules
def check_drop(fn: Callable[..., tuple], *, hidden: bool = False, device=None) -> None:
    """``fn(weights, idx, vocab_size, d_model, n_layers, n_heads)`` -> ``run_drop(drop, ...)`` with the student's
    ``drop``: DroPE's first step (arXiv 2512.12167), a new model with every weight kept and no position signal,
    the trained model left as it was; like ``TinyDecoder.with_positions("nope")``. Hidden cases: one layer and
    several, one head and several, each at least once in 4."""
    draw = Draw(hidden=hidden, device=device)
    cases = []
    classes = draw.cover(4, layers=(1, "several"), heads=(1, "several")) if hidden else [{}]
    for k in classes:
        if hidden:
            v, h = draw.int(5, 40), 1 if k["heads"] == 1 else draw.choice((2, 4))
            c, layers, t = h * draw.even(2, 8), 1 if k["layers"] == 1 else draw.int(2, 3), draw.int(2, 30)
        else:
            v, h, c, layers, t = 11, 2, 8, 2, 7
        size = _weights(build_model(v, {"method": "rope"}, d_model=c, n_layers=layers, n_heads=h)).numel()
        idx = torch.randint(0, v, (draw.int(1, 3), t), generator=draw.tensor_generator).to(draw.device)
        label = _("vocabulary {v}, d_model {c}, {layers} layers, {heads} heads").format(
            v=v, c=c, layers=layers, heads=h
        )
        cases.append(
            Case((draw.randn(size, scale=0.3), idx, v, c, layers, h), label=label, atol=1e-4, rtol=1e-4)
        )

    def reference(*args):
        return run_drop(lambda m: m.with_positions("nope"), *args)

    def in_place(model):
        model.positions = NoPE()
        return model

    def fresh(model):
        return build_model(
            model.vocab_size,
            "nope",
            seed=1,
            d_model=model.d_model,
            n_layers=model.n_layers,
            n_heads=model.n_heads,
        ).to(next(model.parameters()).device)

    mistakes = {
        _(
            "drop() changed the model it was given: copy it first (copy.deepcopy), then swap the copy's handler"
        ): (lambda *args: run_drop(in_place, *args)),
        _("the copy still rotates its queries and keys: give it your NoPE handler (model.positions = ...)"): (
            lambda *args: run_drop(copy.deepcopy, *args)
        ),
        _("DroPE keeps every trained weight: only the position handler changes, nothing is re-initialised"): (
            lambda *args: run_drop(fresh, *args)
        ),
    }
    first_difference("drop_and_run", fn, reference, cases, mistakes=mistakes, seed=draw.quoted_seed)


# ---------------------------------------------------------------------------------------------------------------
# 08: what a causal head computes when it cannot tell keys apart


def _causal_uniform(v: torch.Tensor) -> torch.Tensor:
    zeros = torch.zeros(*v.shape[:-1], 1, dtype=v.dtype, device=v.device)  # equal scores for every key
    return scaled_dot_product_attention(zeros, zeros, v, causal=True)


@enforce_rules
def check_causal_mean(
    fn: Callable[[torch.Tensor], torch.Tensor], *, hidden: bool = False, device=None
) -> None:
    """``fn(v (..., T, D))`` -> ``(..., T, D)``: causal attention with all scores equal, i.e. row ``t`` is the
    mean of ``v[..., :t+1, :]``; like ``posref.scaled_dot_product_attention`` with zero queries and keys. Hidden
    cases: no leading dim, one and two, float32 and float64, one token and 3-80, each at least once in 16."""
    draw = Draw(hidden=hidden, device=device)
    cases = []
    # the visible cases include float64, so that 'in v's dtype' is checked where the student sees it
    visible = [dict(leads=0, dtype=torch.float32), dict(leads=1, dtype=torch.float64)]
    axes = dict(leads=(0, 1, 2), dtype=(torch.float32, torch.float64), length=(1, "more"))
    for i, c in enumerate(draw.cover(16, **axes) if hidden else visible):
        lead = tuple(draw.int(1, 3) if hidden else 2 for _ in range(c["leads"]))
        # no T = 2: there dividing row t by t gives the running sum, and the hint could name the wrong mistake
        t, d = (
            (1 if c["length"] == 1 else draw.int(3, 80), draw.int(1, 16)) if hidden else ((4, 3), (5, 2))[i]
        )
        dtype = c["dtype"]
        cases.append(Case((draw.randn(*lead, t, d, dtype=dtype),), atol=1e-5, rtol=1e-5))

    def counts(v, offset):
        n = torch.arange(1, v.shape[-2] + 1, device=v.device, dtype=v.dtype) + offset
        return n[:, None]

    mistakes = {
        _("the mask is missing: position t may only average tokens 0..t, not the whole sequence"): lambda v: (
            v.mean(-2, keepdim=True).expand_as(v)
        ),
        _("a running SUM, not a mean: divide row t by the t + 1 tokens it sees"): lambda v: v.cumsum(-2),
        _("row t averages t + 1 tokens (0..t): divide by t + 1, not t"): lambda v: (
            v.cumsum(-2) / counts(v, -1).clamp(min=1)
        ),
    }
    first_difference("causal_mean", fn, _causal_uniform, cases, mistakes=mistakes, seed=draw.quoted_seed)


__all__ = [
    "check_alibi_handler",
    "check_causal_mean",
    "check_drop",
    "check_nope_handler",
    "check_per_position_loss",
    "check_rope_handler",
    "run_drop",
]
