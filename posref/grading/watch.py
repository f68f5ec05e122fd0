"""Watching what runs while a student's function is called on a checker's cases: posref's own implementation of
what the function is graded on, or a torch function the exercise forbids (``rules.RULES``).

Reading the answer's source (``rules.find_forbidden``) finds the one-line call and says so early; this module finds
what actually runs, however it was reached: a star import, a name spelled out in a string for ``getattr`` or
``importlib``, a private helper (``posref.rope._apply_half``), a method (``model.with_positions("nope")``), an
alias or a subclass of a forbidden class, a reloaded module. It identifies code, not names:

* posref's functions: the code objects of the rule's names (functions, every method a forbidden class defines,
  the functions a forbidden registry holds, as ``SCALING_METHODS`` holds ``_yarn``), their nested functions, and
  the private helpers of their modules that only they use; a code object compiled again from the same file (a
  reload) is matched by its file and qualified name;
* a forbidden class's inherited code: a method that posref's base classes define (or ``nn.Module.__init__``) runs
  with ``self`` an instance of the forbidden class (``NoPE`` defines no method of its own: its instances are what
  is forbidden);
* torch's functions (``scaled_dot_product_attention``): by identity, as ``sys.setprofile`` sees a call of a
  builtin and as a ``TorchFunctionMode`` sees a torch function called from anywhere (also from C, e.g. through
  ``functools.partial``);
* a call of ``sys.setprofile``/``sys.settrace`` (or ``threading``'s) while watched, and a watch found switched off
  after the call: the plain ways to blind it.

What the checker's harness runs for the student's function (08's ``run_drop`` builds the model it hands to
``drop``) is named by the rule's ``harness`` and left out of the watch. The rules themselves are
``posref.grading.rules``' (``rules.watch_target`` makes a rule's ``Target``). The watch is on only during the student's
calls: the checker's reference calls run outside it.

Where it runs, and what that guarantees. In the score of record the student's code runs in a sandboxed child and
the watch runs there too (``posref.grading.remote.serve``), armed from an index of posref built before any student code runs
(``index``), so that patching posref's module attributes later changes nothing. The child reports what ran as
plain data (names) beside each call's reply. The grader takes a report at its word, because it can only lower the
student's own score; it never needs the child's word that nothing ran. So: every run of watched code that the
child's own code does not deliberately hide (by switching the watch off by means other than the plain calls above,
e.g. through ``gc`` or ``ctypes``, or by running it in a thread started before the call or in another process)
costs the function's cells. Deliberately blinding the grader is tampering, not an answer: the honour code's
business, as copying posref's source under another name is.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import sys
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from types import CodeType, FunctionType
from typing import Any

import torch
from torch import nn
from torch.overrides import TorchFunctionMode

# the core of posref, where every rule's names live (a name is looked up in every loaded module of posref)
_MODULES = (
    "posref",
    "posref.absolute",
    "posref.relative",
    "posref.rope",
    "posref.scaling",
    "posref.config",
    "posref.attention",
    "posref.rope_analysis",
    "posref.longrope_search",
    "posref.lab.positions",
    "posref.lab.model",
    "posref.lab.evaluate",
    "posref.grading",
)
# the calls that switch a watch off: a call of one of them while watched is reported as such
_BLINDING = {
    sys.setprofile: "sys.setprofile",
    sys.settrace: "sys.settrace",
    threading.setprofile: "threading.setprofile",
    threading.settrace: "threading.settrace",
}
BLINDED = "the grader's watch of what runs (switched off)"


@dataclass(frozen=True)
class Target:
    """What one rule forbids to run, by identity: ``codes`` (id -> (code, name)), ``places`` ((file, qualified
    name) -> name, for code compiled again from posref's files), ``classes`` (forbidden classes) with ``inherited``
    (id -> code of the methods their instances run from base classes), ``builtins`` (id -> (object, name):
    torch's forbidden functions and the calls that blind the watch)."""

    codes: Mapping[int, tuple[CodeType, str]]
    places: Mapping[tuple[str, str], str]
    classes: tuple[type, ...]
    inherited: Mapping[int, CodeType]
    builtins: Mapping[int, tuple[Any, str]]
    torch_functions: Mapping[Any, str]


def _is_posref(obj: Any) -> bool:
    module = getattr(obj, "__module__", None) or ""
    return module == "posref" or module.startswith("posref.")


def _functions_of(cls: type) -> list[FunctionType]:
    """The functions ``cls`` itself defines (methods, static and class methods, properties)."""
    found = []
    for value in vars(cls).values():
        if isinstance(value, staticmethod | classmethod):
            value = value.__func__
        if isinstance(value, property):
            found += [f for f in (value.fget, value.fset, value.fdel) if isinstance(f, FunctionType)]
        elif isinstance(value, FunctionType):
            found.append(value)
    return found


def _nested(code: CodeType) -> Iterator[CodeType]:
    """``code`` and the code of every function, lambda and comprehension defined inside it."""
    yield code
    for const in code.co_consts:
        if isinstance(const, CodeType):
            yield from _nested(const)


def _registered(value: Any) -> list[FunctionType]:
    """The functions a posref registry (a mapping of dataclasses, as ``SCALING_METHODS``) holds."""
    if not isinstance(value, Mapping):
        return []
    entries = [e for e in value.values() if dataclasses.is_dataclass(e)]
    fields = [getattr(e, f.name) for e in entries for f in dataclasses.fields(e)]
    return [f for f in fields if isinstance(f, FunctionType) and _is_posref(f)]


class _Index:
    """posref as imported: each name's functions and classes (module attributes, methods of posref's classes,
    what a registry holds) and, for each private helper, the functions that read its name."""

    def __init__(self) -> None:
        for name in _MODULES:
            __import__(name)
        modules = [
            m for n, m in sorted(sys.modules.items()) if (n == "posref" or n.startswith("posref.")) and m
        ]
        self.functions: dict[str, dict[int, FunctionType]] = {}
        self.classes: dict[str, dict[int, type]] = {}
        everything: dict[int, FunctionType] = {}
        for module in modules:
            for name, value in list(vars(module).items()):
                if isinstance(value, FunctionType) and _is_posref(value):
                    self._add(self.functions, name, value)
                    everything[id(value)] = value
                elif inspect.isclass(value) and _is_posref(value):
                    self._add(self.classes, name, value)
                    for fn in _functions_of(value):
                        self._add(self.functions, fn.__name__, fn)
                        everything[id(fn)] = fn
                else:
                    for fn in _registered(value):
                        self._add(self.functions, name, fn)
        self.helpers: dict[int, FunctionType] = {}
        self.users: dict[
            int, set[int]
        ] = {}  # id of a private helper -> ids of the functions that read its name
        for fn in everything.values():
            for name in {n for code in _nested(fn.__code__) for n in code.co_names}:
                helper = fn.__globals__.get(name)
                if name.startswith("_") and isinstance(helper, FunctionType) and _is_posref(helper):
                    self.helpers[id(helper)] = helper
                    self.users.setdefault(id(helper), set()).add(id(fn))

    @staticmethod
    def _add(table: dict, name: str, value: Any) -> None:
        table.setdefault(name, {})[id(value)] = value

    def with_helpers(self, forbidden: dict[int, FunctionType]) -> None:
        """Add to ``forbidden`` (id -> function) the private helpers that only forbidden code calls
        (``_apply_half`` of ``apply_rope``), until none is left to add."""
        grown = True
        while grown:
            grown = False
            for key, helper in self.helpers.items():
                if key not in forbidden and self.users[key] <= forbidden.keys():
                    forbidden[key] = helper
                    grown = True


@functools.cache
def index() -> _Index:
    """posref's code as imported: build it before any student code runs (``remote.serve`` does), so that what a
    student's code later puts under posref's names changes nothing."""
    return _Index()


def _name(fn: FunctionType) -> str:
    return f"{fn.__module__}.{fn.__qualname__}"


def _torch_functions(name: str) -> list[Any]:
    """torch's objects called ``name``: ``torch.nn.functional``'s, ``torch``'s and the aten operator's overloads."""
    found = [getattr(m, name) for m in (torch.nn.functional, torch) if hasattr(m, name)]
    if hasattr(torch.ops.aten, name):
        packet = getattr(torch.ops.aten, name)
        found += [getattr(packet, "_op", None)] + [getattr(packet, o)._op for o in packet.overloads()]
    return [f for f in found if f is not None]


@functools.cache
def target(
    names: tuple[str, ...], torch_names: tuple[str, ...] = (), harness: tuple[str, ...] = ()
) -> Target:
    """What a rule forbids to run, from ``index()``: posref's ``names`` (see the module's docstring), torch's
    ``torch_names``, less the ``harness`` (names of posref's the checker's own harness runs)."""
    posref = index()
    forbidden: dict[int, FunctionType] = {}
    classes: dict[int, type] = {}
    for name in names:
        forbidden.update(posref.functions.get(name, {}))
        classes.update(posref.classes.get(name, {}))
    for cls in classes.values():
        forbidden.update((id(f), f) for f in _functions_of(cls))
    for name in harness:
        for key in posref.functions.get(name, {}):
            forbidden.pop(key, None)
    posref.with_helpers(forbidden)
    codes = {id(c): (c, _name(fn)) for fn in forbidden.values() for c in _nested(fn.__code__)}
    places = {(c.co_filename, c.co_qualname): name for c, name in codes.values()}
    inherited = {
        id(f.__code__): f.__code__
        for cls in classes.values()
        for base in cls.__mro__[1:]
        if _is_posref(base)
        for f in _functions_of(base)
    }
    inherited[id(nn.Module.__init__.__code__)] = nn.Module.__init__.__code__
    builtins = {id(f): (f, name) for f, name in _BLINDING.items()}
    torch_functions = {}
    for name in torch_names:
        for f in _torch_functions(name):
            builtins[id(f)] = (f, f"torch's {name}")
            torch_functions[f] = f"torch's {name}"
    return Target(codes, places, tuple(classes.values()), inherited, builtins, torch_functions)


class _TorchCalls(TorchFunctionMode):
    """Reports each call of a forbidden torch function, from Python or from C."""

    def __init__(self, forbidden: Mapping[Any, str], ran: list[str]) -> None:
        super().__init__()
        self.forbidden, self.ran = forbidden, ran

    def __torch_function__(self, func, types, args=(), kwargs=None):
        name = self.forbidden.get(func)
        if name is not None and name not in self.ran:
            self.ran.append(name)
        return func(*args, **(kwargs or {}))


@contextmanager
def watching(target: Target | None) -> Iterator[list[str]]:
    """While the block runs, the names of what ``target`` forbids that ran (each once, in order) collect in the list
    yielded; the watch found switched off when the block ends adds ``BLINDED``. ``None`` watches nothing."""
    ran: list[str] = []
    if target is None:
        yield ran
        return

    on = [True]  # off before the watch switches itself off (its own sys.setprofile is not the student's)

    def report(name: str) -> None:
        if name not in ran:  # each name once: a helper run in a loop must not fill the memory
            ran.append(name)

    def hook(frame, event, arg):
        if not on[0]:
            return
        if event == "call":
            code = frame.f_code
            hit = target.codes.get(id(code))
            if hit is not None and hit[0] is code:
                report(hit[1])
            elif (code.co_filename, code.co_qualname) in target.places:
                report(target.places[code.co_filename, code.co_qualname])
            elif id(code) in target.inherited and isinstance(frame.f_locals.get("self"), target.classes):
                cls = next(c for c in target.classes if isinstance(frame.f_locals["self"], c))
                report(f"{cls.__module__}.{cls.__qualname__}")
        elif event == "c_call":
            hit = target.builtins.get(id(arg))
            if hit is not None and hit[0] is arg:
                report(hit[1])

    mode = _TorchCalls(target.torch_functions, ran) if target.torch_functions else None
    previous = sys.getprofile(), threading.getprofile()
    threading.setprofile(hook)
    sys.setprofile(hook)
    try:
        if mode is None:
            yield ran
        else:
            with mode:
                yield ran
    finally:
        on[0] = False
        still = sys.getprofile() is hook
        sys.setprofile(previous[0])
        threading.setprofile(previous[1])
        if not still and BLINDED not in ran:
            ran.append(BLINDED)
