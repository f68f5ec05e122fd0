"""How one output differs from the expected one, said in words a student can act on (``difference``), and when
two tensors hold the same values (``same_values``).

Shape, then dtype, then device, then values: elementwise within ``atol + rtol * |expected|`` (by default the
tolerance of the output's dtype, ``default_tolerance``), each element also allowed to match another correct
output (``accept``). A difference in values is said with a few expected and obtained numbers (as many digits as it
takes to tell them apart), the largest error, where it is, and the input it was computed from where that says more.
Written with plain tensor arithmetic (no ``torch.testing``), so that it depends on no helper a notebook could
replace. ``report.first_difference`` runs it on every case of a check.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import torch

from posref.i18n import _

# atol, rtol for outputs of each dtype, so that a different but correct order of operations passes and a wrong
# formula (errors of order one) does not: a few units in the last place of values of order one in float16 and
# bfloat16; about 170 in float32 (sums of many terms in another order), which a float32 output computed in half
# precision still exceeds; 1e-7 relative in float64, which accepts a float32 computation returned as float64.
_TOLERANCES = {
    torch.float64: (1e-9, 1e-7),
    torch.float32: (2e-5, 2e-5),
    torch.float16: (4e-3, 4e-3),
    torch.bfloat16: (3e-2, 2e-2),
}


def default_tolerance(dtype: torch.dtype) -> tuple[float, float]:
    return _TOLERANCES.get(dtype, (0.0, 0.0))


def same_values(before: torch.Tensor, after: torch.Tensor) -> bool:
    """Whether ``after`` holds what ``before`` held: same shape and dtype, equal values (NaN where NaN was)."""
    if before.shape != after.shape or before.dtype != after.dtype:
        return False
    equal = before == after
    if before.is_floating_point() or before.is_complex():
        equal |= before.isnan() & after.isnan()
    return bool(equal.all())


def _fmt(x: float) -> str:
    return f"{x:.6g}"


def _fmt_apart(a: float, b: float) -> tuple[str, str]:
    """``a`` and ``b`` with 6 significant digits, or as many more (up to 17) as it takes to tell them apart: a
    difference beyond a float32's rounding must not read "expected 25.4782, got 25.4782"."""
    for digits in range(6, 18):
        shown = f"{a:.{digits}g}", f"{b:.{digits}g}"
        if shown[0] != shown[1] or a == b or (math.isnan(a) and math.isnan(b)):
            return shown
    return shown


def _sample(t: torch.Tensor, start: int = 0, n: int = 6) -> str:
    flat = t.reshape(-1)[start : start + n].tolist()
    more = ", ..." if t.numel() > start + n else ""
    return "[" + ("..., " if start else "") + ", ".join(_fmt(v) for v in flat) + more + "]"


def _index(flat: int, shape: torch.Size) -> tuple[int, ...]:
    return tuple(int(i) for i in torch.unravel_index(torch.tensor(flat), shape)) if len(shape) else ()


def difference(expected: Any, got: Any, **options: Any) -> str | None:
    """None if ``got`` matches ``expected``, else why not, in words (``differs``'s message)."""
    found = differs(expected, got, **options)
    return None if found is None else found[1]


def differs(
    expected: Any,
    got: Any,
    *,
    atol: float | None = None,
    rtol: float | None = None,
    match_dtype: bool = True,
    at_least_float32: bool = False,
    accept: Sequence[Any] = (),
    what: str | None = None,
    inputs: tuple[str, torch.Tensor] | None = None,
) -> tuple[str, str] | None:
    """None if ``got`` matches ``expected`` (elementwise, or any of the alternatives in ``accept``), else why not.

    ``expected`` may be a tensor, a float, or a tuple of them (compared item by item). ``accept`` holds other
    correct outputs (e.g. the same formula in another precision): each element may match any of them.
    ``at_least_float32`` (with ``match_dtype=False``): any float dtype is accepted except float16 and bfloat16,
    which are said to be too coarse instead of being reported as a list of rounding errors.
    ``inputs`` (name, tensor of the output's shape): the input each output element was computed from; the
    message quotes its value where the largest error is (a bucket is explained by its distance, not its index).
    ``what`` names the output in the message (default: "output", in the language spoken).
    Else ``(kind, message)``: the kind of the difference (``failure.KINDS``: type, shape, device, dtype, values).
    """
    what = _("output") if what is None else what
    if isinstance(expected, tuple):
        if not isinstance(got, (tuple, list)) or len(got) != len(expected):
            return "type", _("expected a tuple of {n} values, got {kind}").format(
                n=len(expected), kind=_kind(got)
            )
        for i, (e, g) in enumerate(zip(expected, got, strict=True)):
            alts = [a[i] for a in accept]
            problem = differs(
                e,
                g,
                atol=atol,
                rtol=rtol,
                match_dtype=match_dtype,
                at_least_float32=at_least_float32,
                accept=alts,
                what=f"{what}[{i}]",
            )
            if problem:
                return problem
        return None
    if isinstance(expected, float):
        return _scalar_difference(expected, got, atol=atol, rtol=rtol, what=what)
    return _tensor_difference(
        expected,
        got,
        atol=atol,
        rtol=rtol,
        match_dtype=match_dtype,
        at_least_float32=at_least_float32,
        accept=accept,
        what=what,
        inputs=inputs,
    )


def _kind(value: Any) -> str:
    if isinstance(value, torch.Tensor):
        return _("a tensor of shape {shape}").format(shape=tuple(value.shape))
    return f"{type(value).__name__} {value!r}"[:200]


def _scalar_difference(
    expected: float, got: Any, *, atol: float | None, rtol: float | None, what: str
) -> tuple[str, str] | None:
    if isinstance(got, torch.Tensor) and got.numel() == 1:
        return "type", _(
            "{what}: expected a Python float, got a one-element tensor {got}; return tensor.item()"
        ).format(what=what, got=repr(got))
    if isinstance(got, bool) or not isinstance(got, (int, float)):
        return "type", _("{what}: expected a Python float, got {kind}").format(what=what, kind=_kind(got))
    a = 1e-6 if atol is None else atol
    r = 1e-5 if rtol is None else rtol
    err = abs(float(got) - expected)
    if not math.isfinite(expected):  # inf matches only itself (its band would hold every value); NaN nothing
        wrong = float(got) != expected
    else:
        wrong = math.isnan(float(got)) or err > a + r * abs(expected)
    if wrong:
        shown = _fmt_apart(expected, float(got))
        return "values", _(
            "{what}: expected {expected}, got {got} (|error| {error}, tolerance {tolerance})"
        ).format(
            what=what, expected=shown[0], got=shown[1], error=_fmt(err), tolerance=_fmt(a + r * abs(expected))
        )
    return None


def _tensor_difference(
    expected: torch.Tensor,
    got: Any,
    *,
    atol: float | None,
    rtol: float | None,
    match_dtype: bool,
    at_least_float32: bool = False,
    accept: Sequence[Any],
    what: str,
    inputs: tuple[str, torch.Tensor] | None = None,
) -> tuple[str, str] | None:
    if not isinstance(got, torch.Tensor):
        return "type", _("{what}: expected a torch.Tensor, got {kind}").format(what=what, kind=_kind(got))
    if tuple(got.shape) != tuple(expected.shape):
        message = _("{what}: expected shape {expected}, got shape {got}").format(
            what=what, expected=tuple(expected.shape), got=tuple(got.shape)
        )
        reshaped = got.numel() == expected.numel() and got.device == expected.device and not got.is_complex()
        if reshaped and not _mismatch(expected, got.detach().reshape(expected.shape), atol, rtol).any():
            message += _(" (the right values in the wrong shape: return them as {expected})").format(
                expected=tuple(expected.shape)
            )
        return "shape", message
    if got.device != expected.device:
        return "device", _(
            "{what}: expected a tensor on {expected} (the inputs' device), got one on {got}; "
            "create new tensors with device=<input>.device"
        ).format(what=what, expected=expected.device, got=got.device)
    exact = not expected.is_floating_point()
    if exact and (got.is_floating_point() or got.is_complex()):
        return "dtype", _("{what}: expected integer values (dtype {expected}), got dtype {got}").format(
            what=what, expected=expected.dtype, got=got.dtype
        )
    if match_dtype and not exact and got.dtype != expected.dtype:
        return "dtype", _(
            "{what}: expected dtype {expected} (the input's dtype), got {got}; "
            "compute in any precision you like but return .to(<input>.dtype)"
        ).format(what=what, expected=expected.dtype, got=got.dtype)
    if at_least_float32 and not exact and got.dtype in (torch.float16, torch.bfloat16):
        return "dtype", _(
            "{what}: expected float32 (or float64) values, got {got}: half precision keeps only 2-3 "
            "significant digits, too few for this output; return float32"
        ).format(what=what, got=got.dtype)
    if got.is_complex():
        return "type", _(
            "{what}: expected real values, got dtype {got}; take the real part or view_as_real"
        ).format(what=what, got=got.dtype)
    bad = _mismatch(expected, got, atol, rtol)
    for alt in accept:
        if isinstance(alt, torch.Tensor) and alt.shape == expected.shape:
            bad &= _mismatch(alt.to(expected.device), got, atol, rtol)
    if not bad.any():
        return None
    e64, g64 = expected.double(), got.detach().double()
    n_bad, n = int(bad.sum()), bad.numel()
    a, r = _tol(expected.dtype, atol, rtol)
    coarser = got.dtype.is_floating_point and torch.finfo(got.dtype).eps > torch.finfo(expected.dtype).eps
    if coarser and not _mismatch(expected, got, *default_tolerance(got.dtype)).any():
        # right to the precision of the dtype returned, which is not the one asked for: say so, not "25.4782, got
        # 25.4782"
        return "dtype", _(
            "{what}: expected {expected} values, got {got}: they agree with the reference to {got}'s precision "
            "(largest difference {error}), but {n_bad} of {n} are outside this output's tolerance (|got - "
            "expected| <= {atol} + {rtol} * |expected|); compute it in {expected} and return {expected}"
        ).format(
            what=what,
            expected=str(expected.dtype).removeprefix("torch."),
            got=str(got.dtype).removeprefix("torch."),
            error=_fmt(float((g64 - e64).abs().max())),
            n_bad=n_bad,
            n=n,
            atol=_fmt(a),
            rtol=_fmt(r),
        )
    err = (g64 - e64).abs().nan_to_num(nan=math.inf)
    err = torch.where(bad, err, torch.zeros_like(err))
    flat = int(err.reshape(-1).argmax())
    where = _index(flat, expected.shape)
    first = int(bad.reshape(-1).nonzero()[0])
    if inputs is not None and tuple(inputs[1].shape) == tuple(expected.shape):
        where = f"{where} ({inputs[0]} = {_fmt(inputs[1].reshape(-1)[flat].item())})"
    there = _fmt_apart(float(e64.reshape(-1)[flat]), float(g64.reshape(-1)[flat]))
    message = _(
        "{what}: {n_bad} of {n} values differ (tolerance |got - expected| <= {atol} + {rtol} * |expected|)\n"
        "    expected {expected}\n"
        "    got      {got}\n"
        "    largest error {error} at index {where}: expected {expected_there}, got {got_there}"
    ).format(
        what=what,
        n_bad=n_bad,
        n=n,
        atol=_fmt(a),
        rtol=_fmt(r),
        expected=_sample(e64, first),
        got=_sample(g64, first),
        error=_fmt(float(err.reshape(-1)[flat])),
        where=where,
        expected_there=there[0],
        got_there=there[1],
    )
    # the coarser grid first: a bfloat16 value is a float16 one too
    for low in (torch.bfloat16, torch.float16):
        # every value one of ``low``'s, and every difference within its rounding: computed in ``low`` (a wrong
        # formula's values are not all on its grid)
        rounded = got.dtype != low and not coarser and bool((got.detach().to(low).to(got.dtype) == got).all())
        if rounded and not _mismatch(expected, got, *default_tolerance(low)).any():
            message += "\n    " + _(
                "every difference is within {low}'s rounding (|got - expected| <= {atol} + {rtol} * |expected|): did a "
                "step of your computation run in {low}? keep every step in {dtype}"
            ).format(
                low=str(low).removeprefix("torch."),
                atol=_fmt(default_tolerance(low)[0]),
                rtol=_fmt(default_tolerance(low)[1]),
                dtype=str(got.dtype).removeprefix("torch."),
            )
            break
    if first:  # the values shown start where the first difference is
        message += "\n    " + _("(both lists from index {index}, the first value that differs)").format(
            index=_index(first, expected.shape)
        )
    broken = int((~torch.isfinite(g64) & torch.isfinite(e64)).sum())
    if broken:
        message += "\n    " + _(
            "{broken} of your values are NaN or infinite where the reference's are finite: look for an overflow "
            "(float16 holds at most 65504), a division by zero or the log of 0"
        ).format(broken=broken)
    return "values", message


def _tol(dtype: torch.dtype, atol: float | None, rtol: float | None) -> tuple[float, float]:
    a, r = default_tolerance(dtype)
    return (a if atol is None else atol), (r if rtol is None else rtol)


def _mismatch(
    expected: torch.Tensor, got: torch.Tensor, atol: float | None, rtol: float | None
) -> torch.Tensor:
    """Boolean tensor: True where ``got`` is outside the tolerance around ``expected`` (NaN never matches, an
    infinity only itself)."""
    a, r = _tol(expected.dtype, atol, rtol)
    e, g = expected.double(), got.detach().double()
    # an infinite expected value matches only itself: its band a + r * |e| would be infinite (any value inside)
    same_inf = torch.isinf(e) & (e == g)
    close = torch.isfinite(e) & ((g - e).abs() <= a + r * e.abs())
    return ~(close | same_inf)
