"""What may cross between the grader and a child (see ``posref.grading.child.remote``): plain data only.

The child is untrusted, so the grader reads nothing from it that it has not checked here first: ``stored_zip``
(a frame is a ``torch.save`` archive with uncompressed entries, never a zip bomb), ``unreadable`` (a result is
made of dense plain tensors, 64-bit numbers, strings, None and tuples/lists, at most ``MAX_ITEMS`` items), and
``student_text`` (the child's text cut to ``MAX_TEXT`` printable characters before it reaches a message, a
feedback page, a CSV or a terminal). ``to_wire`` / ``from_wire`` turn the grader's arguments into plain data and
back; ``plain`` is the child's side of the same rule, applied to what a student's function returned;
``write_changes`` writes what a call changed in place in the child into the grader's own arguments.
"""

from __future__ import annotations

import io
import zipfile
from typing import Any

import torch

from posref.grading.cases import Probe
from posref.grading.report import StudentError
from posref.i18n import _

# items (tensors, numbers, strings, containers) in one result, a shared reference counted each time it is met
MAX_ITEMS = 10_000
MAX_TEXT = 2000  # characters of the child's text (an error message, a cell error) kept in a message


def student_text(value: Any) -> str:
    """The child's text as it may appear in a message, a feedback page, a CSV or the instructor's terminal: at
    most ``MAX_TEXT`` characters, control characters (ANSI escapes, carriage returns, NUL) shown as ``?``."""
    text = (value if isinstance(value, str) else f"<a {type(value).__name__}>")[: MAX_TEXT + 1]
    text = "".join(c if c.isprintable() or c in "\n\t" else "?" for c in text)
    return text if len(text) <= MAX_TEXT else text[:MAX_TEXT] + " [...]"


def stored_zip(data: bytes) -> str | None:
    """None if ``data`` is a zip whose entries are all stored uncompressed (as ``torch.save`` writes them), else
    why not: a deflated entry could unpack to far more than ``MAX_FRAME`` in the grader (a zip bomb)."""
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            for info in archive.infolist():
                if info.compress_type != zipfile.ZIP_STORED or info.file_size != info.compress_size:
                    return _("a compressed entry {name}").format(name=repr(info.filename[:80]))
    except (zipfile.BadZipFile, ValueError, OSError) as err:
        return _("not a torch.save archive ({error})").format(error=type(err).__name__)
    return None


def unreadable(value: Any) -> str | None:
    """None if the grader can compare ``value`` (dense tensors, 64-bit numbers, strings, None, and tuples/lists of
    them, at most ``MAX_ITEMS`` items), else what it is, in words a student can act on."""
    budget = [MAX_ITEMS]

    def walk(v: Any, depth: int) -> str | None:
        budget[0] -= 1
        if budget[0] < 0 or depth > 32:
            return _("a structure of more than {most} items or 32 levels").format(most=MAX_ITEMS)
        if isinstance(v, torch.Tensor):
            if type(v) is not torch.Tensor:
                return _("a {kind} (a tensor subclass; return a plain tensor)").format(kind=type(v).__name__)
            if v.__dict__:  # attributes set on the tensor, which can replace its methods
                return _("a tensor carrying attributes ({names})").format(
                    names=", ".join(map(str, list(v.__dict__)[:3]))
                )
            if v.requires_grad or v._backward_hooks:
                return _("a tensor that requires grad (return .detach())")
            if v.is_nested:
                return _("a nested tensor")
            if v.layout != torch.strided:
                return _("a tensor with layout {layout} (return a dense tensor: .to_dense())").format(
                    layout=v.layout
                )
            if v.is_quantized:
                return _("a quantized tensor ({dtype}; return .dequantize())").format(dtype=v.dtype)
            if v.device.type == "meta":
                return _("a tensor on the meta device (it has no values)")
            return None
        if v is None or type(v) in (bool, float, str):
            return None
        if type(v) is int:
            return None if -(2**63) <= v < 2**63 else _("an integer that does not fit in 64 bits")
        if type(v) in (tuple, list):
            for item in v:
                problem = walk(item, depth + 1)
                if problem:
                    return problem
            return None
        return _("a {kind}").format(kind=type(v).__name__)

    return walk(value, 0)


def to_wire(value: Any) -> Any:
    """Arguments to plain data: tensors move to the CPU's format as they are; probes travel as their weights."""
    if hasattr(value, "to_wire"):
        return value.to_wire()
    if isinstance(value, tuple):
        return tuple(to_wire(v) for v in value)
    if isinstance(value, list):
        return [to_wire(v) for v in value]
    if isinstance(value, dict):
        return {k: to_wire(v) for k, v in value.items()}
    return value


def from_wire(value: Any) -> Any:
    if isinstance(value, dict) and "__probe__" in value:
        return Probe(value["__probe__"], value["weight"])
    if isinstance(value, tuple):
        return tuple(from_wire(v) for v in value)
    if isinstance(value, list):
        return [from_wire(v) for v in value]
    if isinstance(value, dict):
        return {k: from_wire(v) for k, v in value.items()}
    return value


def plain(value: Any) -> Any:
    """A result the grader can read: tensors (detached), numbers, strings, None, and tuples/lists of them."""
    if isinstance(value, torch.Tensor):
        value = value.detach()
        return value if type(value) is torch.Tensor else value.as_subclass(torch.Tensor)
    if isinstance(value, (tuple, list)):
        return (tuple if isinstance(value, tuple) else list)(plain(v) for v in value)
    if value is None or type(value) in (bool, int, float, str):
        return value
    for kind in (int, float, str):  # subclasses (numpy.float64 is a float) travel as the plain type
        if isinstance(value, kind):
            return kind(value)
    try:
        import numpy

        if isinstance(value, numpy.ndarray | numpy.generic):
            kind = type(value).__name__
            return {
                "__unreadable__": _("a numpy {kind}; return a torch tensor (or a float)").format(kind=kind)
            }
    except ImportError:
        pass
    return {"__unreadable__": _("a {kind}").format(kind=type(value).__name__)}


def tensor_arguments(args: tuple, kwargs: dict) -> list[tuple[int | str, torch.Tensor]]:
    """The call's tensor arguments with where they were given: a position in ``args`` or a name in ``kwargs``."""
    given = list(enumerate(args)) + list(kwargs.items())
    return [(where, value) for where, value in given if isinstance(value, torch.Tensor)]


def write_changes(args: tuple, kwargs: dict, changed: Any) -> None:
    """Write what the call changed in the child's copies of the arguments into the grader's own, so that a
    checker sees a function that modifies its input in place exactly as it would see it called locally."""
    given = dict(tensor_arguments(args, kwargs))
    if type(changed) is not dict or not set(changed) <= set(given) or unreadable(list(changed.values())):
        raise StudentError(_("reported changes to arguments the grader never sent"), raised=False)
    for where, value in changed.items():
        target = given[where]
        if not isinstance(value, torch.Tensor) or value.shape != target.shape or value.dtype != target.dtype:
            raise StudentError(
                _(
                    "changed the shape or dtype of argument {which} in place; work on new tensors instead"
                ).format(which=where if type(where) is str else where + 1),
                raised=False,
            )
        with torch.no_grad():
            target.copy_(value)
