"""How one call of a timed chain gets its input from the previous call's output: the part of a timed round that the
grader, its local timing and the sandboxed child must do identically (``posref.grading.speed.timing`` explains rounds).

A chain without a link feeds each output straight into the next call (``apply_rope``, ``attention``,
``causal_mean``: the output is the input's shape). A function whose output is not its input's shape
(``sinusoidal_pe`` takes ints, ``per_position_loss`` maps logits to losses, a handler maps tokens to heads) names
a *link* from ``LINKS``: ``x_i = LINKS[link](y_{i-1}, start, i)`` for call ``i >= 1`` (call 0 gets ``start``),
passed as the call's first argument, or as its keyword ``into``. Every link here

* is cheap next to the function it links (a few elementwise operations, or one reduction to a few numbers);
* gives every call an input no call has had: ``start`` (drawn fresh each round) scaled by ``1 + i 2^-16``, exact
  in float32 and different for every call number ``i``, so that remembering answers cannot help, even where the
  chain would otherwise settle on a fixed point;
* makes the next input depend on all of the previous output, smoothly (a rounding difference in ``y`` moves the
  next input by a rounding difference, so a correct function's last output matches the grader's recomputation),
  while a wrong or unfilled output moves it by a lot, so that a wrong call anywhere in the last calls of a round
  shows in its last output.

Known limit: where a link (or the function) contracts, an error made many calls before the end fades; a child that
knew the call count and computed only a round's last calls properly would not be caught (it must rewrite the
grading loop inside its sandbox to do it). Links are kept close to non-contracting where that is cheap.

The child imports this module inside the sandbox; what a student patches there changes only the child's own
computation, which the grader verifies against its own copy.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

_STEP = 2.0**-16


def fresh_scale(i: int) -> float:
    """``1 + i 2^-16``: the factor that makes call ``i``'s input differ from every other call's."""
    return 1.0 + i * _STEP


def _heads_to_tokens(y: torch.Tensor, start: torch.Tensor, i: int) -> torch.Tensor:
    """A handler's ``(B, H, T, D)`` output -> the next ``(B, T, C)`` tokens: ``start * scale + tanh(y)`` with the
    heads concatenated per token (bounded, whatever the weights)."""
    b, t, c = start.shape
    return torch.add(y.tanh().transpose(1, 2).reshape(b, t, c), start, alpha=fresh_scale(i))


def _losses_to_logits(y: torch.Tensor, start: torch.Tensor, i: int) -> torch.Tensor:
    """``per_position_loss``'s ``(T,)`` losses -> the next ``(B, T, V)`` logits: ``start`` with each position's
    logits scaled by ``fresh_scale(i) + tanh(y_t - mean(y)) / 8`` (a temperature per position; a shift would leave
    the softmax unchanged). The 1/8 keeps the chain contracting: a loss moves by at most the spread of its
    position's logits (a few units for unit-normal logits) per unit of temperature, so with a full ``tanh`` a
    position could amplify rounding differences call after call (a sane float32 one-hot loss once ended a
    1024-call round 2.0 away from the reference's, at one position), while 1/8 of it shrinks them."""
    scale = (y - y.mean()).tanh_().div_(8).add_(fresh_scale(i))
    return start * scale[:, None]


def _table_to_base(y: torch.Tensor, start: float, i: int) -> float:
    """A sinusoidal table -> the next ``base``: ``start * fresh_scale(i) * 2 ** mean(y)`` (the table's mean is in
    [-1, 1], so the base stays within a factor 2 of the drawn one)."""
    return start * fresh_scale(i) * 2.0 ** float(y.mean())


def _bias_to_slopes(y: torch.Tensor, start: torch.Tensor, i: int) -> torch.Tensor:
    """An ALiBi bias ``(H, Tq, Tk)`` -> the next slopes ``(H,)``: ``start * fresh_scale(i) * (1.5 + tanh(mean_h /
    (1 + |mean_h|)))`` (each head's slope moved by that head's own bias, kept positive)."""
    m = y.mean((1, 2))
    return start * (m / (1 + m.abs())).tanh_().add_(1.5 * fresh_scale(i))


def _buckets_to_offsets(y: torch.Tensor, start: torch.Tensor, i: int) -> torch.Tensor:
    """T5 buckets -> the next relative positions: ``start + y + i`` (integers: exact; the call number keeps every
    input new, the buckets make it depend on the previous call)."""
    return torch.add(start, y, alpha=1).add_(i)


def _bias_to_weight(y: torch.Tensor, start: torch.Tensor, i: int) -> torch.Tensor:
    """A T5 bias ``(H, Tq, Tk)`` -> the next embedding ``(num_buckets, H)``: ``start * fresh_scale(i)`` plus each
    head's mean bias, squashed."""
    return torch.add(y.mean((1, 2)).tanh_(), start, alpha=fresh_scale(i))


def _plus_start(y: torch.Tensor, start: torch.Tensor, i: int) -> torch.Tensor:
    """Same-shape functions that would settle on a fixed point (``causal_mean``'s rows all become row 0's): the
    output plus ``start * fresh_scale(i)``, added in place (one pass, no new tensor)."""
    return y.add_(start, alpha=fresh_scale(i))


LINKS: dict[str, Callable[[Any, Any, int], Any]] = {
    "plus_start": _plus_start,
    "heads_to_tokens": _heads_to_tokens,
    "losses_to_logits": _losses_to_logits,
    "table_to_base": _table_to_base,
    "bias_to_slopes": _bias_to_slopes,
    "buckets_to_offsets": _buckets_to_offsets,
    "bias_to_weight": _bias_to_weight,
}


def next_input(link: str | None, y: Any, start: Any, i: int) -> Any:
    """Call ``i``'s linked input: ``start`` for call 0, then the previous output ``y`` itself (no link) or
    ``LINKS[link](y, start, i)``."""
    if i == 0:
        return start
    return y if link is None else LINKS[link](y, start, i)


def call(fn: Callable[..., Any], x: Any, args: tuple, kwargs: dict, into: str | None) -> Any:
    """One call of a chain: ``fn(x, *args, **kwargs)``, or ``fn(*args, **kwargs, into=x)`` when ``into`` names the
    keyword that carries the linked input."""
    if into is None:
        return fn(x, *args, **kwargs)
    return fn(*args, **{**kwargs, into: x})


def run_calls(fn: Callable[..., Any], chain: Any, calls: int, check: Callable[[Any], None] = lambda y: None,
              stop: Callable[[], bool] = lambda: False) -> tuple[Any, int]:  # fmt: skip
    """``calls`` calls of ``fn`` along ``chain`` (anything with ``start``, ``args``, ``kwargs``, ``link`` and
    ``into`` as ``timing.Chain`` has them), fewer once ``stop()`` says so; ``check(y)`` after each call. Returns
    (the last output, the calls made)."""
    y, done = None, 0
    while done < calls:
        x = next_input(chain.link, y, chain.start, done)
        y = call(fn, x, chain.args, chain.kwargs[done % len(chain.kwargs)], chain.into)
        done += 1
        check(y)
        if stop():
            break
    return y, done
