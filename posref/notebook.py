"""What a course notebook reads from its environment, read when asked (nothing happens at import).

* ``POSREF_FAST=1``: tiny sizes, same code (the tests, CI and the grader set it);
* ``POSREF_GRADING=1``: the autograder runs this process (it sets it wherever student code runs): train
  nothing, load the shipped checkpoints;
* ``POSREF_THREADS``: torch threads on a CPU (default 1: the lab's models are tiny, a second thread gains little
  alone and loses much on a shared machine);
* ``POSREF_RETRAIN=1``: notebook 06 trains its six models instead of loading them (never while grading).

A flag is on for ``1``, ``true``, ``yes`` or ``on`` (any case), off when unset or empty. A notebook's first
cell says which edition it is, ``use_edition("en")`` (an edition's build writes its own tag there), and calls
``setup()`` (01-05 read the flags themselves). A cell that needs an exercise's result wraps its body in
``with uses("Exercise N"):``; a sentence the code keeps before a figure or a print shows it (a legend's entry in a
dict, a table's row name) is marked ``shown("...")``, so that an edition translates it there.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from contextlib import contextmanager

import torch

from posref._env import flag as _flag
from posref.i18n import _, fill, get_language, set_language


def fast() -> bool:
    """True when tiny sizes are asked for (``POSREF_FAST=1``: tests, CI and grading)."""
    return _flag("POSREF_FAST")


def grading() -> bool:
    """True while the autograder runs this code (``POSREF_GRADING=1``): never train, load what is shipped."""
    return _flag("POSREF_GRADING")


def retrain() -> bool:
    """True when notebook 06 should train its models (``POSREF_RETRAIN=1``), never while grading."""
    return _flag("POSREF_RETRAIN") and not grading()


def threads() -> int:
    """The torch thread count for a CPU (``POSREF_THREADS``, default 1)."""
    value = os.environ.get("POSREF_THREADS", "").strip() or "1"
    if not value.isdigit() or int(value) < 1:
        raise ValueError(
            _("POSREF_THREADS={value}: expected a positive integer (torch threads on a CPU)").format(
                value=repr(value)
            )
        )
    return int(value)


def setup(*, seed: int = 0) -> tuple[str, bool, bool]:
    """Prepare a notebook's process and return ``(device, FAST, GRADING)``.

    ``device`` is ``"cuda"`` when torch sees a GPU, else ``"cpu"``, where torch then uses ``threads()``
    threads. Torch's global generator is seeded with ``seed``, so the notebook's random draws repeat.
    """
    device = "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cpu":
        torch.set_num_threads(threads())
    torch.manual_seed(seed)
    return device, fast(), grading()


def use_edition(edition: str) -> str | None:
    """A notebook's first cell: this notebook is the edition ``edition`` (``"en"``, ``"zh-TW"``, ``"zh-CN"``; the
    English source says ``"en"`` and each edition's build writes its own tag). posref speaks its language from now
    on in this kernel, whatever ``POSREF_LANG`` says (its checks, errors and figures follow the notebook the
    student reads), and in a Chinese edition matplotlib draws with a font of the edition's script
    (``posref.explorers.fonts.use_language_font``) -> that font's name; None in English (matplotlib is left alone).

    Raises ValueError for an edition posref has no language for."""
    set_language(edition)
    if get_language() == "en":
        return None
    from posref.explorers.fonts import use_language_font

    return use_language_font()


def shown(text: str) -> str:
    """``text``, unchanged: marks a sentence the notebook keeps in a variable, a list or a dict before a figure or
    a print shows it (``shown("random key")``), so that an edition's build translates it where it is written.
    Every place that writes the same sentence as a key to look it up marks it too: each edition writes the same
    translation at each of them."""
    return text


class ExerciseNotDone(RuntimeError):
    """A cell needs the result of an exercise that is not finished yet (see ``uses``). IPython shows it as its
    one line (``_render_traceback_``): the frames would all be this module's and the cell's ``with`` line."""

    def _render_traceback_(self) -> list[str]:
        return [f"{type(self).__name__}: {self}"]


@contextmanager
def uses(exercise: str) -> Iterator[None]:
    """Wrap a cell that builds on ``exercise`` (for example ``"Exercise 3 (the T5 bias)"``): when the exercise
    is unfinished, the cell stops with one line that says so instead of a traceback about names the student
    never wrote.

    Unfinished means one of two things seen inside the block: a ``NotImplementedError`` (the exercise's stub
    still raises), or a ``NameError`` (a name the exercise's cells define was never assigned, because they
    stopped early). The original error is named at the end of the message; every other error passes through
    unchanged, with its traceback.
    """
    if not isinstance(exercise, str) or not exercise.strip():
        raise TypeError(
            _("uses(exercise): expected the exercise's name as a non-empty str, got {exercise}").format(
                exercise=repr(exercise)
            )
        )
    try:
        yield
    except (NameError, NotImplementedError) as err:
        why = (
            _("its stub still raises NotImplementedError")
            if isinstance(err, NotImplementedError)
            else f"NameError: {err}"
        )
        raise ExerciseNotDone(
            fill(
                _("finish {exercise} first: this cell uses its result ({why})"),
                exercise=_exercise(exercise),
                why=why,
            )
        ) from None


_EXERCISES = re.compile(r"Exercises? (\d+)(?: (and|to) (\d+))?(.*)", re.DOTALL)


def _exercise(name: str) -> str:
    """``uses``' name of an exercise in the language spoken: "Exercise 3 (t5_bucket)", "Exercises 1 and 2 (...)",
    "Exercises 1 to 7" (what follows the numbers stays as written: the functions' names); any other name as is."""
    found = _EXERCISES.fullmatch(name)
    if found is None:
        return name
    first, joined, last, rest = found.groups()
    if joined is None:
        return _("Exercise {n}").format(n=first) + rest
    if joined == "and":
        return _("Exercises {first} and {last}").format(first=first, last=last) + rest
    return _("Exercises {first} to {last}").format(first=first, last=last) + rest
