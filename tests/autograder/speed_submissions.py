"""``apply_rope`` answers for the battery of ``test_speed_of_record.py``: correct alternatives, and slow ones that
cheat on the speed check. The file is one answer cell: the grader's child runs it as the student's code."""

import mmap
import os
import time

import torch


def _pairs(x, r, layout):
    """x's rotated dims as (first, second) of each pair, and the dims passed through."""
    rot, rest = x[..., : 2 * r], x[..., 2 * r :]
    if layout == "half":
        return rot[..., :r], rot[..., r:], rest
    return rot[..., 0::2], rot[..., 1::2], rest


def _join(a, b, rest, layout):
    rot = torch.cat((a, b), -1) if layout == "half" else torch.stack((a, b), -1).flatten(-2)
    return torch.cat((rot, rest), -1)


def apply_rope_einsum(x, cos, sin, layout="half"):
    """Correct: each pair times its 2x2 rotation matrix, with einsum."""
    r = cos.shape[-1]
    a, b, rest = _pairs(x.float(), r, layout)
    rotation = torch.stack(
        (torch.stack((cos, -sin), -1), torch.stack((sin, cos), -1)), -2
    )  # (..., T, r, 2, 2)
    pairs = torch.stack((a, b), -1)
    out = torch.einsum("...ij,...j->...i", rotation, pairs)
    return _join(out[..., 0], out[..., 1], rest.float(), layout).to(x.dtype)


def apply_rope_float64_inside(x, cos, sin, layout="half"):
    """Correct: computed in float64, returned in x's dtype."""
    r = cos.shape[-1]
    a, b, rest = _pairs(x.double(), r, layout)
    c, s = cos.double(), sin.double()
    return _join(a * c - b * s, b * c + a * s, rest, layout).to(x.dtype)


def _vectorised(x, cos, sin, layout):
    r = cos.shape[-1]
    a, b, rest = _pairs(x.float(), r, layout)
    return _join(a * cos - b * sin, b * cos + a * sin, rest.float(), layout).to(x.dtype)


def _loop(x, cos, sin, layout):
    """Correct but slow: one position at a time."""
    out = torch.empty_like(x)
    for p in range(x.shape[-2]):
        out[..., p : p + 1, :] = _vectorised(
            x[..., p : p + 1, :], cos[..., p : p + 1, :], sin[..., p : p + 1, :], layout
        )
    return out


_answers = {}


def apply_rope_remembers(x, cos, sin, layout="half"):
    """Slow, and remembers its answers by a cheap fingerprint of the inputs (a hit costs nothing)."""
    key = (tuple(x.shape), float(x.flatten()[:8].sum()), float(cos.flatten()[-8:].sum()), layout)
    if key not in _answers:
        _answers[key] = _loop(x, cos, sin, layout)
    return _answers[key].clone()


_calls = {}


def apply_rope_then_uninitialised(x, cos, sin, layout="half"):
    """Right for its first 6 calls of a shape (enough for the checks before timing), then an unfilled tensor."""
    _calls[x.shape] = _calls.get(x.shape, 0) + 1
    return _vectorised(x, cos, sin, layout) if _calls[x.shape] <= 6 else torch.empty_like(x)


_last = []


def apply_rope_skips_chains(x, cos, sin, layout="half"):
    """Slow, and returns its input unchanged when the input is its own previous output (a timed chain)."""
    if _last and x is _last[0]:
        return x
    out = _loop(x, cos, sin, layout)
    _last[:] = [out]
    return out


def apply_rope_claims_calls(x, cos, sin, layout="half"):
    """Slow, and rewrites the child's side of the timed protocol: one call made, all of them claimed."""
    return _loop(x, cos, sin, layout)


import posref.grading.remote as _remote  # noqa: E402  (the child's own copy, which student code can change)

_honest_chain = _remote._run_chain_here


def _claim_every_call(fn, request, shared):
    if fn is not apply_rope_claims_calls:
        return _honest_chain(fn, request, shared)
    _honest_chain(fn, {**request, "calls": 1}, shared)
    return {"done": request["calls"]}


_remote._run_chain_here = _claim_every_call

# a flag in memory shared with the burners: 1 while the student's own function runs
_busy = mmap.mmap(-1, 1)


def _burn():
    while True:
        if _busy[0]:
            time.sleep(0.001)


def apply_rope_burns_when_idle(x, cos, sin, layout="half"):
    """Slow, and starts processes that burn the CPU whenever it is not running itself (while the reference runs)."""
    if not _burners:
        for _ in range(4):
            pid = os.fork()
            if pid == 0:
                _burn()
            _burners.append(pid)
    _busy[0] = 1
    try:
        return _loop(x, cos, sin, layout)
    finally:
        _busy[0] = 0


_burners = []
