"""Watching what runs while a student's function is called on a checker's cases: posref's own implementation of
what the function is graded on, or a torch function the exercise forbids (``rules.RULES``).

Reading the answer's source (``rules.find_forbidden``) finds the one-line call and says so early; this module finds
what actually runs, however it was reached: a star import, a name spelled out in a string for ``getattr`` or
``importlib``, a private helper (``posref.rope._apply_half``), a method (``model.with_positions("nope")``), an
alias or a subclass of a forbidden class, a reloaded module, a copy. It identifies code, not names:

* posref's functions: the code objects of the rule's names (functions, every method a forbidden class defines,
  the functions a forbidden registry holds, as ``SCALING_METHODS`` holds ``_yarn``), their nested functions, and
  the private helpers of their modules that only they use; by identity, and by what they compute
  (``fingerprints``): the same code compiled again under another file or function name, rebuilt with
  ``code.replace``, without its docstrings or with its local variables renamed is still posref's;
* a forbidden class's inherited code: a method that posref's base classes define (or ``nn.Module.__init__``) runs
  with ``self`` an instance of the forbidden class (``NoPE`` defines no method of its own: its instances are what
  is forbidden);
* torch's functions (the family of attention operators, ``rules.torch_attention``): by identity, as
  ``sys.setprofile`` sees a call of a builtin or an operator and as a ``TorchFunctionMode`` sees a torch function
  called from anywhere (also from C, e.g. through ``functools.partial``), and torch's attention written in Python
  (``multi_head_attention_forward``, ``flex_attention``) as posref's code is;
* a call of ``sys.setprofile``/``sys.settrace`` while watched, a watch found switched off after the call
  (``BLINDED``), and a thread the watch could not follow (``UNFOLLOWED``): the plain ways to blind it.

Every thread the answer starts is watched (``threads``): one hook, installed in each thread that ``_thread`` or
``threading`` starts, reports to whichever watch is on. What ran is reported by name, and, where one of the student's
own functions (code of ``__main__``) other than the one checked called it, with that function's name
(``Ran.through``): an answer's rule covers what its earlier answers run for it, and the message says which did.

What the checker's harness runs for the student's function (08's ``run_drop`` builds the model it hands to
``drop``) is named by the rule's ``harness`` and left out of the watch. The rules themselves are
``posref.grading.rules``' (``rules.watch_target`` makes a rule's ``Target``). The watch is on only during the student's
calls: the checker's reference calls run outside it.

Where it runs, and what that guarantees. In the score of record the student's code runs in a sandboxed child and
the watch runs there too (``posref.grading.child.serve``), armed from an index of posref built before any
student code runs (``index``, which also covers threads), so that patching posref's module attributes later changes
nothing. The child reports what ran as plain data (names) beside each call's reply. The grader takes a report at its
word, because it can only lower the student's own score; it never needs the child's word that nothing ran. So: every
run of watched code that the child's own code does not deliberately hide (by switching the watch off by means other
than the plain calls above, e.g. through ``gc`` or ``ctypes``, or by running it in another process) costs the
function's cells. Deliberately blinding the grader is tampering, not an answer: the honour code's business.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
import inspect
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from types import CodeType, FrameType, FunctionType
from typing import Any

import torch
from torch import nn
from torch.overrides import TorchFunctionMode

from posref.grading import threads
from posref.grading.fingerprints import fingerprint, substantial

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
# where torch keeps what a rule's torch names name: functions, modules, and the operators of torch.ops.aten
_TORCH_PLACES = (
    "torch.nn.functional",
    "torch",
    "torch._C._nn",
    "torch.nn",
    "torch.nn.attention.flex_attention",
)
# the calls that switch a watch off: a call of one of them while watched is reported as such
_SET_PROFILE, _GET_PROFILE = sys.setprofile, sys.getprofile  # as they were: a student may rebind sys's names
_BLINDING = {_SET_PROFILE: "sys.setprofile", sys.settrace: "sys.settrace"}
BLINDED = "the grader's watch of what runs (switched off)"
UNFOLLOWED = "the grader's watch of what runs (a thread it could not follow)"


@dataclass(frozen=True)
class Target:
    """What one rule forbids to run: ``codes`` (id -> (code, name)) and ``contents`` (fingerprint -> name, for the
    same code made anew), ``classes`` (forbidden classes) with ``inherited`` (id -> code of the methods their
    instances run from base classes), ``builtins`` (id -> (object, name): torch's forbidden functions and operators
    and the calls that blind the watch) and ``torch_functions`` (object -> name, for the torch function mode)."""

    codes: Mapping[int, tuple[CodeType, str]]
    contents: Mapping[bytes, str]
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
    """posref's code as imported: build it before any student code runs (``serve`` does), so that what a
    student's code later puts under posref's names changes nothing; from then on every thread started is watched
    (``threads.cover``)."""
    threads.cover(_hook)
    return _Index()


def _name(fn: FunctionType) -> str:
    return f"{fn.__module__}.{fn.__qualname__}"


def _torch_objects(name: str) -> list[Any]:
    """torch's objects called ``name`` (``_TORCH_PLACES``), and the aten operator's packet and overloads with the
    builtins they call."""
    found = []
    for place in _TORCH_PLACES:
        try:
            module = importlib.import_module(place)
        except ImportError:  # flex_attention in an older torch
            continue
        if hasattr(module, name):
            found.append(getattr(module, name))
    if hasattr(torch.ops.aten, name):
        packet = getattr(torch.ops.aten, name)
        overloads = [getattr(packet, o) for o in packet.overloads()]
        found += [packet, packet._op, *overloads, *(o._op for o in overloads)]
    return found


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
        for found in _torch_objects(name):
            functions = _functions_of(found) if inspect.isclass(found) else [found]
            for f in functions:
                if isinstance(f, FunctionType):  # torch's attention written in Python
                    codes.update((id(c), (c, f"torch's {name}")) for c in _nested(f.__code__))
                else:
                    builtins[id(f)] = (f, f"torch's {name}")
                    torch_functions[f] = f"torch's {name}"
    # the grading package's own implementations (the speed checks' vectorised ones) are model answers by design: known
    # by identity only, so that an answer written as the model answer is not taken for them
    contents = {
        fingerprint(c): name
        for c, name in codes.values()
        if substantial(c) and not name.startswith("posref.grading.")
    }
    return Target(codes, contents, tuple(classes.values()), inherited, builtins, torch_functions)


class Ran(list):
    """The names of what a target forbids that ran while watched (each once, in order), and ``through``: name -> the
    student's own function that ran it, where that is not the function checked. The student's functions are those of
    ``answers`` (the answer cells' namespace): a frame of a function it names (under that name, wherever its code
    came from) or of code defined in it; the innermost of those that led to the forbidden code ran it, and if the
    outermost is another one, that one was checked (``rope_scores`` checked, its ``apply_rope`` ran posref's)."""

    def __init__(self, answers: Mapping[str, Any] | None = None) -> None:
        super().__init__()
        self.answers, self.through = answers, {}

    def note(self, name: str, frame: FrameType | None = None) -> None:
        """Add ``name`` (once), run in ``frame`` or by the code of ``frame``."""
        if name in self:  # each name once: a helper run in a loop must not fill the memory
            return
        self.append(name)
        if self.answers is None or frame is None:
            return
        named = {id(v.__code__): k for k, v in list(self.answers.items()) if isinstance(v, FunctionType)}
        theirs = []  # the student's functions that led to it, innermost first
        while frame is not None:
            code = frame.f_code
            if id(code) in named:
                theirs.append(named[id(code)])
            elif frame.f_globals is self.answers:
                theirs.append(code.co_qualname)
            frame = frame.f_back
        if len(theirs) > 1 and theirs[0] != theirs[-1]:
            self.through[name] = theirs[0]


@dataclass
class _Watch:
    target: Target
    ran: Ran


_on: list[_Watch | None] = [None]  # the watch in force, to which the hook reports from every thread


def _hook(frame: FrameType, event: str, arg: Any) -> None:
    """The profile function of every watched thread (see the module's docstring)."""
    if event == "c_call" and arg is _SET_PROFILE:
        threads.switched_off()  # a thread that set another profile is no longer watched
    watch = _on[0]
    if watch is None:
        return
    target = watch.target
    if event == "call":
        code = frame.f_code
        hit = target.codes.get(id(code))
        if hit is not None and hit[0] is code:
            watch.ran.note(hit[1], frame)
        elif (name := target.contents.get(fingerprint(code))) is not None:
            watch.ran.note(name, frame)  # a copy the student's namespace holds is their function
        elif id(code) in target.inherited and isinstance(frame.f_locals.get("self"), target.classes):
            cls = next(c for c in target.classes if isinstance(frame.f_locals["self"], c))
            watch.ran.note(f"{cls.__module__}.{cls.__qualname__}", frame)
    elif event == "c_call":
        hit = target.builtins.get(id(arg))
        if hit is not None and hit[0] is arg:
            watch.ran.note(hit[1], frame)


class _TorchCalls(TorchFunctionMode):
    """Reports each call of a forbidden torch function, from Python or from C."""

    def __init__(self, forbidden: Mapping[Any, str], ran: Ran) -> None:
        super().__init__()
        self.forbidden, self.ran = forbidden, ran

    def __torch_function__(self, func, types, args=(), kwargs=None):
        name = self.forbidden.get(func)
        if name is not None:
            self.ran.note(name, sys._getframe(1))
        return func(*args, **(kwargs or {}))


@contextmanager
def watching(target: Target | None, answers: Mapping[str, Any] | None = None) -> Iterator[Ran]:
    """While the block runs, in the calling thread and in every thread it starts or uses, the names of what
    ``target`` forbids that ran collect in the ``Ran`` yielded (with the functions of ``answers``, the answer cells'
    namespace, that ran them); the watch found switched off when the block ends adds ``BLINDED``, a thread it could
    not follow ``UNFOLLOWED``. ``None`` watches nothing."""
    ran = Ran(answers)
    if target is None:
        yield ran
        return
    threads.cover(_hook)
    count = threads.Count()
    outer, _on[0] = _on[0], _Watch(target, ran)
    previous = _GET_PROFILE()
    _SET_PROFILE(_hook)
    mode = _TorchCalls(target.torch_functions, ran) if target.torch_functions else None
    try:
        if mode is None:
            yield ran
        else:
            with mode:
                yield ran
    finally:
        _on[0] = outer
        still = _GET_PROFILE() is _hook
        _SET_PROFILE(previous)
        if not still:
            ran.note(BLINDED)
        if count.past():
            ran.note(UNFOLLOWED)
