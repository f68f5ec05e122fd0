"""Shortcuts through a timed round (issue 26.1), for the battery of ``test_speed_of_record.py``: slow functions that
try not to do every call of a round, and ones that try to buy speed with threads. The file is one answer cell, run
in the grader's child after ``tests/grading/student_impls.py`` and ``student_impls_speed.py`` (whose functions it
uses), as the student's code: it may change the child's own copy of the grading modules, as a student's cell can.

How each one learns where it is in a round: it replaces the child's side of the timed protocol
(``rounds.run_chain_here``) with one that notes when each round starts and what it was asked; with the call count that
the request named before issue 26 it computed exactly the last calls, and now (no count) it guesses from the
round's time (``ROUND_S``, public in posref's source) that it is near the end.
"""

import time

import torch

import posref.grading.child.rounds as _remote
from posref.grading.speed.timing import ROUND_S

_round = {"active": False, "ppl": None, "cm": None}
_honest = _remote.run_chain_here


def _note_the_round(fn, request, shared):
    _round.update(active=True, started=time.perf_counter(), calls=request.get("calls"), first=True, made=0)
    try:
        return _honest(fn, request, shared)
    finally:
        _round.update(active=False, ppl=None, cm=None)


_remote.run_chain_here = _note_the_round


def _near_the_end(last=4):
    """True for the last ``last`` calls when the request names a count, else for the last 10 ms of the round."""
    _round["made"] = _round.get("made", 0) + 1
    if _round["calls"] is not None:
        return _round["calls"] - _round["made"] < last
    return time.perf_counter() - _round["started"] > ROUND_S - 0.01


def ppl_last_calls(logits, targets):
    """A Python loop over positions, run only near the end of a round; the other calls answer the last output."""
    if not _round["active"] or _near_the_end() or _round["ppl"] is None:
        _round["ppl"] = ppl_loop_positions(logits, targets)  # noqa: F821  (student_impls_speed.py)
    return _round["ppl"].clone()


def causal_mean_last_calls(v):
    """A Python loop over positions, run only near the end of a round; the other calls copy their input (the
    red team's 51x loop that earned the point against the contracting links)."""
    return cm_loop_positions(v) if not _round["active"] or _near_the_end() else v.clone()  # noqa: F821


_every_other = [0]


def causal_mean_every_other(v):
    """A Python loop over positions on every other call; the calls between answer the previous output."""
    _every_other[0] += 1
    if not _round["active"] or _every_other[0] % 2 or _round["cm"] is None:
        _round["cm"] = cm_loop_positions(v)  # noqa: F821
    return _round["cm"].clone()


def apply_rope_one_fixed_map(x, cos, sin, layout="half"):
    """The red team's dense answer (82x) took a round of apply_rope as one linear map (it kept cos/sin and alternated
    the layouts) and raised it to the n-th power by squaring. Any such shortcut rests on every call of a round
    rotating by the round's first cos/sin: this one does exactly that, fast (the vectorised rotation)."""
    if _round["active"]:
        if _round["first"]:
            _round.update(first=False, angles=(cos, sin))
        cos, sin = _round["angles"]
    return apply_rope_rotate_half(x, cos, sin, layout)  # noqa: F821  (student_impls.py)


def apply_rope_many_threads(x, cos, sin, layout="half"):
    """The dense matrix per position (slow on one CPU), with 16 threads for torch's batched products."""
    before = torch.get_num_threads()
    torch.set_num_threads(16)
    try:
        return apply_rope_matrix_per_position(x, cos, sin, layout)  # noqa: F821  (student_impls.py)
    finally:
        torch.set_num_threads(before)
