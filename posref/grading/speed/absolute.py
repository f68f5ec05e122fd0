"""Speed check of 02's ``sinusoidal_pe``, built as ``posref.grading.speed.check.SpeedCheck`` describes::

    from posref.grading.speed.absolute import check_sinusoidal_pe_speed
    check_sinusoidal_pe_speed(sinusoidal_pe)        # -> the ratio; CheckFailed if over budget

The exercise builds its table on the CPU, so the table is timed there whatever ``device`` says (``device=`` is
taken as the other checkers take it). The table is timed in float32, the dtype the exercise asks for: a function
that returns float64 (which the correctness check accepts) is told so before anything is timed. In the score of
record the reference runs in a child of its own (``reference_path``: ``sinusoidal_pe`` below, the student's
signature).
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from posref.grading.cases import Draw
from posref.grading.failure import Cause, CheckFailed
from posref.grading.rules import enforce_rules
from posref.grading.speed import budgets
from posref.grading.speed.check import SpeedCheck, speed_check
from posref.grading.speed.timing import Chain, Round
from posref.i18n import N_, _

CPU = torch.device("cpu")


def sinusoidal_pe(n_positions: int, dim: int, base: float = 10000.0) -> torch.Tensor:
    """02's ``sinusoidal_pe`` vectorised, on the CPU: ``(n_positions, dim)`` float32, ``sin(p w_i)`` in column
    ``2i`` and ``cos(p w_i)`` in column ``2i + 1``, ``w_i = base**(-2i/dim)``."""
    omega = base ** (-torch.arange(0, dim, 2, dtype=torch.float32) / dim)  # (dim/2,)
    angles = torch.arange(n_positions, dtype=torch.float32)[:, None] * omega  # (P, dim/2)
    return torch.stack((angles.sin(), angles.cos()), -1).flatten(-2)  # (P, dim/2, 2) -> (P, dim)


def _sinusoidal_pe64(n_positions, dim, base=10000.0):
    omega = base ** (-torch.arange(0, dim, 2, dtype=torch.float64) / dim)
    angles = torch.arange(n_positions, dtype=torch.float64)[:, None] * omega
    return torch.stack((angles.sin(), angles.cos()), -1).flatten(-2)


def sinusoidal_pe_chain(draw: Draw, shape: tuple[int, ...]) -> Chain:
    """``shape = (n_positions, dim)``; the base drawn log-uniform in [100, 100000] and passed as the keyword
    ``base``; each call's base is the round's moved by the previous call's table (``links.table_to_base``)."""
    n, dim = shape
    base = 10.0 ** draw.uniform(2.0, 5.0)
    return Chain(base, (n, dim), link="table_to_base", into="base", out_shape=(n, dim), out_dtype=torch.float32,
                 out_device=CPU)  # fmt: skip


def _table_atol(timed: Round) -> float:
    """Four times the correctness check's tolerance at this many positions (float32 angles are rounded by about
    ``p`` units in the last place): each call's base depends on the previous table's mean only, so the error does
    not grow with the calls."""
    return 4 * (2e-5 + 1e-6 * timed.chain.args[0])


SINUSOIDAL_PE = SpeedCheck(
    name="sinusoidal_pe",
    correctness="check_sinusoidal_pe",
    reference=sinusoidal_pe,
    step=_sinusoidal_pe64,
    chain=sinusoidal_pe_chain,
    atol=_table_atol,
    chained=N_("base moved by the previous table's mean"),
    budget=budgets.sinusoidal_pe_budget,
    inputs=N_("the table (n_positions, dim)"),
    advice=N_(
        "Form every angle at once: the positions as a column (arange(n)[:, None]) times the dim/2 frequencies "
        "as a row, then sin and cos of that (P, dim/2) matrix into the even and odd columns: no Python loop over "
        "positions or pairs, and no math.sin on single numbers."
    ),
)


def _float32_table(fn: Callable[..., torch.Tensor]) -> None:
    """``CheckFailed`` before any timing unless ``fn`` returns a float32 tensor on the CPU (the timed rounds need
    it, and a float64 table would be timed against a float32 one)."""
    try:
        out = fn(4, 6, base=10000.0)
    except Exception:  # reported by the check's own cases, as any function that raises is
        return
    if type(out) is torch.Tensor and (out.dtype != torch.float32 or out.device != CPU):
        raise CheckFailed(
            _(
                "sinusoidal_pe's speed is timed on the float32 table on the CPU, as the exercise asks for it; yours "
                "returned {dtype} on {device}. Build the angles in float32 (dtype=torch.float32), or add .float() "
                "at the end."
            ).format(dtype=out.dtype, device=out.device),
            cause=Cause("dtype" if out.dtype != torch.float32 else "device"),
        )


@speed_check("posref.grading.speed.absolute:sinusoidal_pe")
@enforce_rules
def check_sinusoidal_pe_speed(
    fn: Callable[..., torch.Tensor], *, device=None, reference=None, checked=False
) -> float:
    """``fn(n_positions, dim, base=...)`` within the CPU budget of a vectorised ``sinusoidal_pe``
    (``budgets.sinusoidal_pe_budget``); timed on the CPU whatever ``device`` is (the exercise's table lives there).
    Returns the ratio."""
    del device  # the table is the CPU's
    _float32_table(fn)
    return SINUSOIDAL_PE.check(fn, device=CPU, reference=reference, checked=checked)


__all__ = ["check_sinusoidal_pe_speed"]
