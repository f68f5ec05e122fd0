"""Every thread an answer starts carries the watch's hook (``posref.grading.watch``), or the watch says it got past.

Python 3.11 gives a profile function to one thread at a time (``sys.setprofile``), and a new thread starts without
one: posref's code run in a thread that the answer starts would go unseen. ``cover`` replaces the functions that
start a thread (``_thread.start_new_thread``, its alias ``start_new``, and ``threading``'s own reference to it, through
which ``threading.Thread``, ``Timer``, thread pools and ``asyncio``'s executor start theirs) by one that gives the new
thread the hook before anything of the thread runs; the hook reports to whichever watch is on, so a thread started in
one call and used in the next is watched in both. The score of record's child covers before any student code runs
(``watch.index``), so a thread an answer cell starts is covered too; in a notebook the first watch covers.

What got past is found by counting (``past``): the interpreter numbers every thread state it makes, so a watch that
saw more made than ``cover``'s function started knows that a thread was started some other way (the function kept
from before, a fresh ``_thread`` module, C code); and a live thread that ``cover`` neither started nor found running
(a thread started that way before the call), or one whose hook was switched off (``switched_off``), is not watched.
"""

from __future__ import annotations

import _thread
import ctypes
import sys
import threading
from collections.abc import Callable
from typing import Any

_ORIGINAL = _thread.start_new_thread
_get_ident, _set_profile, _current_frames = (
    _thread.get_ident,
    sys.setprofile,
    sys._current_frames,
)  # as they were
_hook: list[Callable[..., Any] | None] = [None]
_started = [0]  # threads started through ``_start``
_covered: set[int] = set()  # idents of the live threads ``_start`` started that still carry the hook
_before: set[int] = set()  # idents of the threads that ran when ``cover`` was first called (the grader's own)


def _run_watched(function: Callable[..., Any], args: tuple, kwargs: dict) -> None:
    ident = _get_ident()
    _covered.add(ident)
    _set_profile(_hook[0])
    try:
        function(*args, **kwargs)
    finally:
        _covered.discard(ident)


def _start(function: Callable[..., Any], args: tuple, kwargs: dict | None = None) -> int:
    """``_thread.start_new_thread``, its new thread carrying the hook from its first instruction."""
    if not isinstance(args, tuple):
        raise TypeError("2nd arg must be a tuple")
    if kwargs is not None and not isinstance(kwargs, dict):
        raise TypeError("optional 3rd arg must be a dictionary")
    _started[0] += 1
    return _ORIGINAL(_run_watched, (function, args, kwargs or {}))


def cover(hook: Callable[..., Any]) -> None:
    """From now on every thread started through ``_thread`` or ``threading`` carries ``hook`` (see the module's
    docstring); the threads running now are the grader's own. Once per process: later calls change nothing."""
    if _hook[0] is not None:
        return
    _hook[0] = hook
    _before.update(_current_frames())
    _thread.start_new_thread = _thread.start_new = _start
    threading._start_new_thread = _start  # what threading.Thread.start calls


def switched_off() -> None:
    """The calling thread switched its hook off (the hook saw it call ``sys.setprofile``): it is no longer watched."""
    _covered.discard(_get_ident())


def _interpreter_api() -> Any:
    api = ctypes.pythonapi
    api.PyInterpreterState_Get.restype = ctypes.c_void_p
    api.PyThreadState_New.argtypes, api.PyThreadState_New.restype = [ctypes.c_void_p], ctypes.c_void_p
    api.PyThreadState_GetID.argtypes, api.PyThreadState_GetID.restype = [ctypes.c_void_p], ctypes.c_uint64
    api.PyThreadState_Clear.argtypes = api.PyThreadState_Delete.argtypes = [ctypes.c_void_p]
    return api


_API = _interpreter_api()


def made() -> int:
    """How many thread states the interpreter has made so far (their ids count up from 1): the id of one made and
    removed at once for the asking (it never runs)."""
    state = _API.PyThreadState_New(_API.PyInterpreterState_Get())
    number = _API.PyThreadState_GetID(state)
    _API.PyThreadState_Clear(state)
    _API.PyThreadState_Delete(state)
    return number


def _unwatched() -> bool:
    """Whether a live thread other than the calling one carries no hook: neither ``cover`` started it (or it switched
    the hook off) nor was it running when ``cover`` was first called."""
    live = set(_current_frames())
    _before.intersection_update(live)  # a thread of the grader's that ended: its ident may come back
    return bool(live - {_get_ident()} - _covered - _before)


class Count:
    """Thread states made and threads started through ``cover``'s function from now on, and whether a live thread
    carries no hook now (``past``)."""

    def __init__(self) -> None:
        self.made, self.started, self.unwatched = made(), _started[0], _unwatched()

    def past(self) -> bool:
        """Whether a thread got past the watch since: one made not through ``cover``'s function, or a live thread
        that carried no hook then or now (see the module's docstring)."""
        # ``made()`` made one itself: the thread states made in between are those beyond it
        unfollowed = made() - self.made - 1 > _started[0] - self.started
        return unfollowed or self.unwatched or _unwatched()
