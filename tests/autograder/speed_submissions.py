"""``apply_rope`` answers for the battery of ``test_speed_of_record.py``: slow ones that cheat on the speed check.
The file is one answer cell, run after ``tests/grading/student_impls.py`` (whose functions it uses) in the grader's
child, as the student's code."""

import mmap
import os
import time

import torch


def _vectorised(x, cos, sin, layout):
    return apply_rope_rotate_half(x, cos, sin, layout)  # noqa: F821  (student_impls.py, the cell before)


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


import posref.grading.child.rounds as _remote  # noqa: E402  (the child's own copy, which student code can change)

_honest_chain = _remote.run_chain_here


def _claim_every_call(fn, request, shared):
    if fn is not apply_rope_claims_calls:
        return _honest_chain(fn, request, shared)
    _honest_chain(fn, {**request, "max_calls": 1}, shared)
    return {"done": request["max_calls"]}


_remote.run_chain_here = _claim_every_call

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
