"""How the calls of a timed round follow one another, and what each call leaves to be verified: the part of a round
that the grader, its local timing and the sandboxed child must do identically (``timing`` explains rounds).

Call ``i`` (from 0) of a round gets ``x_0 = start``, then ``x_i = LINKS[link](y_{i-1}, chain, i)`` from the
previous call's output ``y_{i-1}`` (no link: ``y_{i-1}`` itself), passed as the call's first argument (the first
arguments, when a link gives a tuple), or as its keyword ``into``. Every link here

* gives every call an input far from every other call's: ``fresh(phase, i)`` is a factor in [1/2, 2), different for
  every call and spread evenly (``phase`` is drawn for each round), or ``noise`` the round's random numbers at an
  offset of the call's own, so consecutive outputs differ by far more than a rounding error: no call can be answered
  with an earlier call's output, and a chain never settles on a fixed point;
* makes the next input depend on the previous output, non-linearly, so that no run of calls is one map known ahead
  (``apply_rope``'s angles turn by the size of the previous output at each position: a round is not a power of one
  rotation) and no call can start before the previous one has finished;
* does not amplify a difference in the previous output (``apply_rope``'s rotation keeps its size and turns an angle
  by 1/64 of it; the other links shrink it: ``tests/grading/test_links.py``), so a correct function's rounding
  differences stay within the tolerance along a round, however long;
* costs a few elementwise passes at most.

What a round leaves to be verified is one number per call, ``checksum``: the output's dot product with weights drawn
for the round, at an offset that moves with the call number (so a checksum cannot be computed once for the round from
a few parameters of the output). The grader recomputes every call's checksum of a sampled round in float64: a call
that was skipped, answered from memory or answered wrongly shows where it happened, wherever it is in the round.

The child imports this module inside the sandbox; what a student patches there changes only the child's own
computation and the numbers it reports, which the grader verifies against its own copy.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import torch

_PHI = (math.sqrt(5.0) - 1.0) / 2.0
ALIGN = 16
"""Checksum weights start at multiples of this many elements (64 bytes: a misaligned float32 dot product was 8x
slower)."""


def fresh(phase: float, i: int) -> float:
    """``2 ** (2 frac(phase + i phi) - 1)`` in [1/2, 2): call ``i``'s factor, different for every call (``phi`` is
    irrational) and spread evenly over the range whatever the number of calls."""
    return 2.0 ** (2.0 * ((phase + i * _PHI) % 1.0) - 1.0)


def _toward(u: float) -> float:
    """The weight ``u / (1 + u)`` in [1/3, 2/3) with which a ``lerp`` link takes the start: the previous output
    keeps the rest, at most 2/3."""
    return u / (1.0 + u)


def _rope_turn(y: torch.Tensor, chain: Any, i: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """``apply_rope``'s ``(..., T, D)`` output -> the next ``(x, cos, sin)``: ``x`` is ``y`` itself (a rotation keeps
    a difference's size), the round's angles turned at every position by ``fresh(phase, i) - 1`` radians (different
    for every call: consecutive outputs differ by a rotation of up to a radian) plus, at position ``p``, ``mean
    |y_0[p, :]| / 64`` (``y_0``: the first of ``y``'s ``(T, D)`` slices; about 0.0125 for unit-normal inputs): what
    a call rotates by is known only once the previous call is done, so no run of calls is one map. A difference
    ``e`` in ``y`` turns an angle by at most ``e / 64``. The cost: a few operations on ``(T, D/2)``, none on ``x``."""
    _, cos0, sin0 = chain.start
    first = y.reshape(-1, *y.shape[-2:])[0]  # (T, D)
    turn = first.abs().mean(-1, keepdim=True).div_(64).add_(fresh(chain.phase, i) - 1.0)  # (T, 1)
    c, s = turn.cos(), turn.sin()
    return y, cos0 * c - sin0 * s, sin0 * c + cos0 * s  # (T, D/2): each angle plus its position's turn


def _toward_start(y: torch.Tensor, chain: Any, i: int) -> torch.Tensor:
    """Same-shape functions (attention's queries): ``lerp(y, start, u / (1 + u))``, ``u = fresh(phase, i)``."""
    return torch.lerp(y, chain.start.to(y.dtype), _toward(fresh(chain.phase, i)))


def _square_fold(y: torch.Tensor, chain: Any, i: int) -> torch.Tensor:
    """``causal_mean``'s output -> the next ``v``: ``noise(chain, i) - y^2 / 64`` in one pass (``noise``: the round's
    random numbers, new for every call; averages alone would settle on a fixed point, and averages of sums would
    make a round one linear map: the square makes it not). With noise within ``a`` every input stays within the ``M``
    of ``M = a + M^2 / 64`` (one exists for any ``a`` up to 16; unit-normal noise stays within 6, ``M = 6.7``), so a
    difference in ``y`` moves the next input by at most ``2 M / 64`` of itself (0.21)."""
    return torch.addcmul(noise(chain, i, y.shape).to(y.dtype), y, y, value=-1.0 / 64)


def _heads_to_tokens(y: torch.Tensor, chain: Any, i: int) -> torch.Tensor:
    """A handler's ``(B, H, T, D)`` output -> the next ``(B, T, C)`` tokens: ``u start + tanh(y)`` with the heads
    concatenated per token (bounded, whatever the weights)."""
    b, t, c = chain.start.shape
    return torch.add(y.tanh().transpose(1, 2).reshape(b, t, c), chain.start, alpha=fresh(chain.phase, i))


def _losses_to_logits(y: torch.Tensor, chain: Any, i: int) -> torch.Tensor:
    """``per_position_loss``'s ``(T,)`` losses -> the next ``(B, T, V)`` logits: ``start`` with each position's
    logits scaled by ``u + tanh(y_t - mean(y)) / 8`` (a temperature per position; a shift would leave the softmax
    unchanged). The 1/8 keeps the chain contracting: a loss moves by at most the spread of its position's logits per
    unit of temperature, so with a full ``tanh`` a position could amplify rounding differences call after call."""
    scale = (y - y.mean()).tanh_().div_(8).add_(fresh(chain.phase, i))
    return chain.start * scale[:, None]


def _table_to_base(y: torch.Tensor, chain: Any, i: int) -> float:
    """A sinusoidal table -> the next ``base``: ``start * (u_i / u_0) * 2 ** (mean(y) / 4)``, ``u_i`` call ``i``'s
    fresh factor. Call 0 ran at ``start`` itself (factor ``u_0 / u_0``), so consecutive bases' fresh parts differ by
    a factor 1.69 or more, call 1 included; the table's mean is in [-1, 1], so its term moves the base by at most
    ``2 ** 0.5`` between calls and can never cancel that (with ``u_i * 2 ** mean(y)``, it could, and at some phases
    a call's table was within one tolerance of the last one). The base stays within a factor 5 of the drawn one."""
    u = fresh(chain.phase, i) / fresh(chain.phase, 0)
    return chain.start * u * 2.0 ** (float(y.mean()) / 4.0)


def _bias_to_slopes(y: torch.Tensor, chain: Any, i: int) -> torch.Tensor:
    """An ALiBi bias ``(H, Tq, Tk)`` -> the next slopes ``(H,)``:
    ``start * (1 + u + tanh(mean_h / (1 + |mean_h|)) / 10)``: each head's slope moved by that head's own bias, kept
    positive, by less than consecutive fresh factors differ (``u`` moves by 0.35 or more, the bias's term by at
    most 0.16), so the previous bias never cancels the fresh factor."""
    m = y.mean((1, 2))
    return chain.start * (m / (1 + m.abs())).tanh_().mul_(0.1).add_(1.0 + fresh(chain.phase, i))


def _buckets_to_offsets(y: torch.Tensor, chain: Any, i: int) -> torch.Tensor:
    """T5 buckets -> the next relative positions: ``start + y + s`` with the shift ``s = int(64 (u - 1))`` in
    [-32, 64) (integers: exact; the shift moves every offset differently from call to call, within the round's
    range so that no direction runs out of negative offsets; the buckets make it depend on the previous call)."""
    return torch.add(chain.start, y).add_(int(64 * (fresh(chain.phase, i) - 1.0)))


def _bias_to_weight(y: torch.Tensor, chain: Any, i: int) -> torch.Tensor:
    """A T5 bias ``(H, Tq, Tk)`` -> the next embedding ``(num_buckets, H)``: ``u start`` plus each head's mean bias,
    squashed."""
    return torch.add(y.mean((1, 2)).tanh_(), chain.start, alpha=fresh(chain.phase, i))


LINKS: dict[str, Callable[[Any, Any, int], Any]] = {
    "rope_turn": _rope_turn,
    "toward_start": _toward_start,
    "square_fold": _square_fold,
    "heads_to_tokens": _heads_to_tokens,
    "losses_to_logits": _losses_to_logits,
    "table_to_base": _table_to_base,
    "bias_to_slopes": _bias_to_slopes,
    "buckets_to_offsets": _buckets_to_offsets,
    "bias_to_weight": _bias_to_weight,
}


def next_input(chain: Any, y: Any, i: int) -> Any:
    """Call ``i``'s input along ``chain``: its ``start`` for call 0, then the previous output ``y`` itself (no link)
    or ``LINKS[chain.link](y, chain, i)``."""
    if i == 0:
        return chain.start
    return y if chain.link is None else LINKS[chain.link](y, chain, i)


def call(fn: Callable[..., Any], x: Any, args: tuple, kwargs: dict, into: str | None) -> Any:
    """One call of a chain: ``fn(x, *args, **kwargs)`` (``fn(*x, *args, **kwargs)`` when ``x`` is a tuple), or
    ``fn(*args, **kwargs, into=x)`` when ``into`` names the keyword that carries the linked input."""
    if into is not None:
        return fn(*args, **{**kwargs, into: x})
    return fn(*x, *args, **kwargs) if isinstance(x, tuple) else fn(x, *args, **kwargs)


def starts(size: int, n: int) -> int:
    """How many aligned offsets leave ``n`` of ``size`` weights."""
    return (size - n) // ALIGN + 1


def weights_at(weights: torch.Tensor, offsets: tuple[int, int], i: int, n: int) -> torch.Tensor:
    """Call ``i``'s ``n`` checksum weights: ``weights[o : o + n]`` with ``o = ALIGN * ((a + i b) mod K)`` for
    ``offsets = (a, b)`` and ``K = starts(len(weights), n)`` (a view: no copy)."""
    o = ALIGN * ((offsets[0] + i * offsets[1]) % starts(weights.numel(), n))
    return weights[o : o + n]


def noise(chain: Any, i: int, shape: torch.Size) -> torch.Tensor:
    """Unit-normal random numbers of ``shape`` for call ``i``'s input: the round's weights half their offsets away
    from call ``i``'s checksum weights (a view: no copy)."""
    n = math.prod(shape)
    a, b = chain.offsets
    return weights_at(chain.weights, (a + starts(chain.weights.numel(), n) // 2, b), i, n).view(shape)


def checksum(y: torch.Tensor, weights: torch.Tensor, offsets: tuple[int, int], i: int) -> torch.Tensor:
    """Call ``i``'s checksum: ``y``'s dot product with its weights (``weights_at``), in float32 for a float32 output
    (one pass, as cheap as it gets) and in float64 otherwise (integers are then summed exactly). A 0-dim tensor."""
    w = weights_at(weights, offsets, i, y.numel())
    if y.dtype == torch.float32 and w.dtype == torch.float32:
        return torch.dot(y.reshape(-1), w)
    return torch.dot(y.reshape(-1).double(), w.double())


def run_calls(fn: Callable[..., Any], chain: Any, calls: int, check: Callable[[Any], None] = lambda y: None,
              stop: Callable[[], bool] = lambda: False,
              sums: torch.Tensor | None = None) -> tuple[Any, int]:  # fmt: skip
    """Up to ``calls`` calls of ``fn`` along ``chain`` (anything with ``start``, ``args``, ``kwargs``, ``link``,
    ``into``, ``phase``, ``weights`` and ``offsets`` as ``timing.Chain`` has them), fewer once ``stop()`` says so;
    ``check(y)`` after each call, then its checksum into ``sums[i]`` (when given). Returns (the last output, the calls
    made)."""
    y, done = None, 0
    while done < calls:
        x = next_input(chain, y, done)
        y = call(fn, x, chain.args, chain.kwargs[done % len(chain.kwargs)], chain.into)
        check(y)
        if sums is not None:
            sums[done] = checksum(y, chain.weights, chain.offsets, done)
        done += 1
        if stop():
            break
    return y, done
