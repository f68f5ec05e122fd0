"""Checkers for notebook 03 (relative): ALiBi slopes and bias, T5 buckets and T5's learned bias."""

from __future__ import annotations

import math
from collections.abc import Callable

import torch

from posref.grading.cases import Draw
from posref.grading.report import Case, first_difference
from posref.grading.rules import enforce_rules
from posref.i18n import _
from posref.relative import T5RelativeBias, alibi_bias, alibi_slopes, t5_relative_position_bucket


@enforce_rules
def check_alibi_slopes(fn: Callable[[int], torch.Tensor], *, hidden: bool = False, device=None) -> None:
    """``fn(n_heads)`` -> ``(n_heads,)`` equals ``posref.alibi_slopes`` (any head count, powers of two or not).
    Hidden cases: 1, 2, a power of two up to 64, 3, 5, 6, 7 and 11 counts drawn from 9 to 96."""
    draw = Draw(hidden=hidden, device=device)
    # hidden: 1, 2 and a power of two from 4 to 64, every count from 3 to 7 but 4, then counts drawn up to 96
    powers = [1, 2, draw.choice((4, 8, 16, 32, 64))]
    counts = [8, 4, 12] if not hidden else powers + [3, 5, 6, 7] + [draw.int(9, 96) for _ in range(11)]
    cases = [Case((n,), atol=1e-7, rtol=1e-5) for n in counts]
    mistakes = {
        _(
            "for a head count that is not a power of two, take the slopes of the largest power of two c < n and "
            "then every other slope of 2c (the paper's rule), not 2**(-8h/n)"
        ): lambda n: torch.tensor([2.0 ** (-8.0 * h / n) for h in range(1, n + 1)], dtype=torch.float64),
        _("heads are numbered from 1: the first slope is 2**(-8/n), not 1"): lambda n: torch.tensor(
            [2.0 ** (-8.0 * h / n) for h in range(n)], dtype=torch.float64
        ),
        _("slopes come largest first (head 1 has the steepest penalty)"): lambda n: alibi_slopes(n).flip(0),
    }
    first_difference(
        "alibi_slopes",
        fn,
        lambda n: alibi_slopes(n),
        cases,
        mistakes=mistakes,
        match_dtype=False,
        at_least_float32=True,
        seed=draw.quoted_seed,
    )


@enforce_rules
def check_alibi_bias(fn: Callable[..., torch.Tensor], *, hidden: bool = False, device=None) -> None:
    """``fn(slopes, q_positions, k_positions)`` -> ``(H, Tq, Tk)`` equals ``posref.alibi_bias``: ``-s_h |m - n|``
    (query ``m``, key ``n``).

    Hidden cases: as many queries as keys and fewer (a KV-cache step), positions from 0 and from an offset, float32
    and float64 slopes, each at least once in 20."""
    draw = Draw(hidden=hidden, device=device)
    cases = []
    if hidden:
        classes = draw.cover(
            20, queries=("all", "fewer"), start=(0, "offset"), dtype=(torch.float32, torch.float64)
        )
    else:  # the output keeps slopes' dtype
        visible = (("all", torch.float32), ("fewer", torch.float32), ("all", torch.float64))
        classes = [dict(queries=q, start=0, dtype=t) for q, t in visible]
    for i, c in enumerate(classes):
        h = draw.int(1, 16) if hidden else (2, 3, 4)[i]
        tk = draw.int(2, 40 if hidden else 5)
        tq = tk if c["queries"] == "all" else draw.int(1, tk - 1)
        k_pos = draw.positions(tk) + (draw.int(1, 5000) if c["start"] == "offset" else 0)
        q_pos = k_pos[tk - tq :]  # queries are the last tq tokens (as when decoding with a KV cache)
        slopes = alibi_slopes(h, device=draw.device, dtype=c["dtype"])
        cases.append(Case((slopes, q_pos, k_pos)))
    mistakes = {
        _("the bias must be a penalty: -slope * |m - n| is <= 0 and falls with distance"): lambda s, q, k: (
            -alibi_bias(s, q, k)
        ),
        _("use the distance |m - n| (absolute value), not m - n"): lambda s, q, k: (
            -s[:, None, None] * (q[:, None] - k[None, :]).to(s.dtype)
        ),
        _("use the distance |m - n| (absolute value), not n - m"): lambda s, q, k: (
            -s[:, None, None] * (k[None, :] - q[:, None]).to(s.dtype)
        ),
    }
    first_difference("alibi_bias", fn, alibi_bias, cases, mistakes=mistakes, seed=draw.quoted_seed)


def _bucket_float64(rel, bidirectional=True, num_buckets=32, max_distance=128):
    """The T5 bucket rule in float64 (posref and T5 use float32): the two may differ where the log lands on an
    integer, and both answers are accepted there."""
    rel = rel.long()
    buckets = torch.zeros_like(rel)
    if bidirectional:
        num_buckets //= 2
        buckets = buckets + (rel > 0).long() * num_buckets
        n = rel.abs()
    else:
        n = (-rel).clamp(min=0)
    max_exact = num_buckets // 2
    log_ratio = torch.log(n.double().clamp(min=1) / max_exact) / math.log(max_distance / max_exact)
    large = (max_exact + (log_ratio * (num_buckets - max_exact)).long()).clamp(max=num_buckets - 1)
    return buckets + torch.where(n < max_exact, n, large)


def _bucket_unclipped(rel, bidirectional=True, num_buckets=32, max_distance=128):
    rel = rel.long()
    half = num_buckets // 2 if bidirectional else num_buckets
    offset = (rel > 0).long() * half if bidirectional else torch.zeros_like(rel)
    n = rel.abs() if bidirectional else (-rel).clamp(min=0)
    max_exact = half // 2
    log_ratio = torch.log(n.float().clamp(min=1) / max_exact) / math.log(max_distance / max_exact)
    return offset + torch.where(n < max_exact, n, max_exact + (log_ratio * (half - max_exact)).long())


@enforce_rules
def check_t5_bucket(fn: Callable[..., torch.Tensor], *, hidden: bool = False, device=None) -> None:
    """``fn(relative_position, bidirectional=True, num_buckets=32, max_distance=128)`` -> integer buckets in
    ``[0, num_buckets)``, equal to ``posref.t5_relative_position_bucket``; ``relative_position = key - query``.

    Hidden cases: every distance up to 20 or 300 on both sides, up to 5000 (past every max_distance), or a block of
    queries and keys (both signs);
    bidirectional and not; the default sizes and others; each at least once in 20."""
    draw = Draw(hidden=hidden, device=device)
    cases = []
    if hidden:
        classes = draw.cover(
            20, rel=("near", "far", "grid"), bidirectional=(True, False), sizes=("default", "other")
        )
    else:
        classes = [dict(rel="range", bidirectional=b, sizes=z) for b, z in ((True, "default"), (False, "default"),
                                                                             (True, "visible"))]  # fmt: skip
    for c in classes:
        if c["rel"] != "grid":  # every distance up to a limit, on both sides (far: past every max_distance)
            limit = 300 if not hidden else (draw.choice((20, 300)) if c["rel"] == "near" else 5000)
            rel = torch.arange(-limit, limit + 1, device=draw.device)
        else:  # key - query for a block of queries and one of keys that overlap: both signs in every case
            nq, nk = draw.int(2, 64), draw.int(2, 64)
            q = draw.positions(nq) + draw.int(0, 2000)
            k = draw.positions(nk) + int(q[0]) + draw.int(2 - nk, nq - 2)
            rel = k[None, :] - q[:, None]
        kwargs = {"bidirectional": c["bidirectional"]}
        if c["sizes"] == "other":
            kwargs["num_buckets"] = draw.choice((8, 16, 32, 64))
            kwargs["max_distance"] = draw.choice((kwargs["num_buckets"], 128, 500))
        elif c["sizes"] == "visible":
            kwargs.update(num_buckets=16, max_distance=64)
        cases.append(Case((rel,), kwargs))
    mistakes = {
        _(
            "distances beyond max_distance must all fall in the last bucket of their side: clip the logarithmic "
            "bucket to nb - 1, where nb = num_buckets // 2 when bidirectional (each direction has half the buckets) "
            "and nb = num_buckets otherwise"
        ): _bucket_unclipped,
        _(
            "relative_position is key_position - query_position: keys after the query (positive values) take the "
            "upper half of the buckets"
        ): lambda rel, **kw: t5_relative_position_bucket(-rel, **kw),
    }
    first_difference(
        "t5_bucket",
        fn,
        t5_relative_position_bucket,
        cases,
        mistakes=mistakes,
        accept=lambda rel, **kw: [_bucket_float64(rel, **kw)],
        seed=draw.quoted_seed,
        elementwise_in=(0, "relative_position"),
    )


def _t5_reference(weight, q_positions, k_positions, bidirectional=True, max_distance=128):
    num_buckets, n_heads = weight.shape
    module = T5RelativeBias(
        n_heads,
        bidirectional=bidirectional,
        num_buckets=num_buckets,
        max_distance=max_distance,
        device=weight.device,
        dtype=weight.dtype,
    )
    with torch.no_grad():
        module.embedding.weight.copy_(weight)
        return module(q_positions, k_positions)


def _t5_bias_from(weight, rel, bidirectional, max_distance):
    """(H, Tq, Tk) from the bucket of each entry of ``rel`` (Tq, Tk)."""
    buckets = t5_relative_position_bucket(
        rel, bidirectional=bidirectional, num_buckets=weight.shape[0], max_distance=max_distance
    )
    return weight[buckets].permute(2, 0, 1)


@enforce_rules
def check_t5_learned_bias(fn: Callable[..., torch.Tensor], *, hidden: bool = False, device=None) -> None:
    """``fn(weight (num_buckets, H), q_positions (Tq,), k_positions (Tk,), bidirectional=True, max_distance=128)``
    -> ``(H, Tq, Tk)`` in ``weight``'s dtype: row ``bucket(k - q)`` of the table for each query-key pair, heads
    first; like ``posref.T5RelativeBias`` holding the same weights (its ``embedding.weight``). Hidden cases:
    bidirectional and not, as many queries as keys and fewer, positions from 0 and from an offset, float32 and
    float64 tables, each at least once in 16."""
    draw = Draw(hidden=hidden, device=device)
    cases = []
    classes = (
        draw.cover(16, bidirectional=(True, False), queries=("all", "fewer"), start=(0, "offset"),
                   dtype=(torch.float32, torch.float64))
        if hidden
        else [dict(bidirectional=b, queries=q, start=0) for b, q in ((True, "all"), (False, "fewer"), (True, "all"))]
    )  # fmt: skip
    for i, c in enumerate(classes):
        if hidden:
            num_buckets, h = draw.choice((8, 16, 32, 64)), draw.int(1, 12)
            tk = draw.int(2, 48)
            max_distance = draw.choice((num_buckets, 128, draw.int(num_buckets, 600)))
            dtype = c["dtype"]
        else:
            num_buckets, h, tk, max_distance, dtype = ((32, 2, 6, 128, torch.float32), (16, 3, 40, 20, torch.float32),
                                                       (8, 4, 9, 16, torch.float64))[i]  # fmt: skip
        tq = tk if c["queries"] == "all" else draw.int(1, tk - 1)
        k_pos = draw.positions(tk) + (draw.int(1, 3000) if c["start"] == "offset" else 0)
        q_pos = k_pos[tk - tq :]  # queries are the last tq tokens (a KV-cache step)
        kwargs = {"bidirectional": c["bidirectional"]}
        if max_distance != 128:
            kwargs["max_distance"] = max_distance
        weight = draw.randn(num_buckets, h, dtype=dtype)
        label = _("{num_buckets} buckets, {heads} heads").format(num_buckets=num_buckets, heads=h)
        cases.append(Case((weight, q_pos, k_pos), kwargs, label=label))

    def variant(rel_of, *, direction=None):
        def run(weight, q, k, bidirectional=True, max_distance=128):
            both = bidirectional if direction is None else direction
            return _t5_bias_from(weight, rel_of(q, k), both, max_distance)

        return run

    def from_zero(q, k):
        return (
            torch.arange(k.numel(), device=k.device)[None, :]
            - torch.arange(q.numel(), device=q.device)[:, None]
        )

    mistakes = {
        _(
            "relative_position is key - query (k_positions[None, :] - q_positions[:, None]), not query - key"
        ): variant(lambda q, k: q[:, None] - k[None, :]),
        _(
            "pass bidirectional on to your bucket function (a decoder's bias gives every later key bucket 0)"
        ): variant(lambda q, k: k[None, :] - q[:, None], direction=True),
        _(
            "use the positions you are given (at a KV-cache step the queries sit after the cached keys), not "
            "arange(Tq) and arange(Tk)"
        ): variant(from_zero),
    }

    def float64_buckets(weight, q, k, bidirectional=True, max_distance=128):
        rel = k[None, :] - q[:, None]
        buckets = _bucket_float64(rel, bidirectional, weight.shape[0], max_distance)
        return [weight[buckets].permute(2, 0, 1)]

    first_difference(
        "t5_learned_bias",
        fn,
        _t5_reference,
        cases,
        mistakes=mistakes,
        accept=float64_buckets,
        seed=draw.quoted_seed,
    )
