"""Checkers for notebook 02 (absolute): the learned table, the sinusoidal table and its shift matrix ``M_k``."""

from __future__ import annotations

import re
from collections.abc import Callable

import torch

from posref.absolute import LearnedPositionalEmbedding, sinusoidal_pe, sinusoidal_shift_matrix
from posref.grading.cases import Draw
from posref.grading.failure import Cause
from posref.grading.report import Case, CheckFailed, error_text, first_difference, raised_a
from posref.grading.rules import enforce_rules
from posref.i18n import N_, _


def _pe_variant(
    n: int,
    dim: int,
    base: float,
    exponent: torch.Tensor,
    *,
    halves: bool = False,
    cos_first: bool = False,
    swap_pos_and_i: bool = False,
) -> torch.Tensor:
    """A sinusoidal table in float64 from the exponent ``e_i`` of each pair: ``angle = p * base**(-e_i)``.

    The flags build the classic wrong variants: ``halves`` puts all sines first then all cosines,
    ``cos_first`` swaps sin and cos, ``swap_pos_and_i`` computes ``i * base**(-2p/dim)``.
    """
    p = torch.arange(n, dtype=torch.float64)[:, None]
    i = torch.arange(dim // 2, dtype=torch.float64)[None, :]
    angles = p * float(base) ** (-exponent[None, :])
    if swap_pos_and_i:
        angles = i * float(base) ** (-2.0 * p / dim)
    first, second = (angles.cos(), angles.sin()) if cos_first else (angles.sin(), angles.cos())
    if halves:
        return torch.cat((first, second), dim=-1)
    return torch.stack((first, second), dim=-1).flatten(-2)


def _pe_mistakes(base_default: float = 10000.0) -> dict[str, Callable[..., torch.Tensor]]:
    def exponent(dim, kind):
        i = torch.arange(dim // 2, dtype=torch.float64)
        if kind == "intdiv":
            return 2 * i // dim
        if kind == "one_based":
            return 2 * (i + 1) / dim
        if kind == "column":
            return i / dim
        return 2 * i / dim

    def variant(kind="right", **flags):
        def build(n, dim, base=base_default):
            return _pe_variant(n, dim, base, exponent(dim, kind), **flags)

        return build

    return {
        _(
            "the exponent 2i/dim was computed with integer division (//), which makes it 0: divide as floats"
        ): variant("intdiv"),
        _(
            "pairs are numbered from 1: pair i = 0 (columns 0 and 1) must use exponent 0, i.e. frequency 1"
        ): variant("one_based"),
        _(
            "the exponent uses the pair index i where it should use 2i (the even column index): base**(-2i/dim)"
        ): variant("column"),
        _("sin and cos are swapped: even columns hold sin, odd columns hold cos"): variant(cos_first=True),
        _(
            "wrong layout: all sines then all cosines (the 'half' layout); this table interleaves them: "
            "column 2i is sin, column 2i+1 is cos of the same angle"
        ): variant(halves=True),
        _("position and pair index are swapped: the angle is position / base**(2i/dim)"): variant(
            swap_pos_and_i=True
        ),
    }


@enforce_rules
def check_sinusoidal_pe(fn: Callable[..., torch.Tensor], *, hidden: bool = False, device=None) -> None:
    """``fn(n_positions, dim, base=10000.0)`` -> ``(n_positions, dim)`` equals ``posref.sinusoidal_pe``.

    The output may be float32 or float64 (float16 and bfloat16 are refused by name: too coarse). Angles of float32
    tables are rounded at long positions, so the tolerance grows with the largest angle (about 8 float32 units in
    the last place of ``n_positions``). Hidden cases: first another base where it shows (3-200 positions, ``dim``
    4-256), then 1, 2, up to 200 and 1000-6000 positions, ``dim`` 2 and any even ``dim`` up to 256, the default base
    and another, each at least once in 15.
    """
    draw = Draw(hidden=hidden, device=device)
    cases = [Case((4, 6)), Case((50, 16)), Case((10, 8), {"base": 100.0})] if not hidden else []
    # hidden: first another base where it shows (several positions and pairs), then the classes
    axes = dict(length=(1, 2, "short", "long"), dim=(2, "any"), base=(None, "other"))
    first = dict(length="short", dim="any", base="other")
    for c in [first, *draw.cover(15, **axes)] if hidden else []:
        n = {"short": draw.int(3, 200), "long": draw.int(1000, 6000)}.get(c["length"], c["length"])
        kwargs = {} if c["base"] is None else {"base": draw.choice((500000.0, draw.uniform(50.0, 1e6)))}
        cases.append(Case((n, 2 if c["dim"] == 2 else draw.even(4, 256)), kwargs))
    for case in cases:
        case.atol = 2e-5 + 1e-6 * case.args[0]
        case.rtol = 0.0
    first_difference(
        "sinusoidal_pe",
        fn,
        _reference_pe,
        cases,
        mistakes=_pe_mistakes(),
        match_dtype=False,
        at_least_float32=True,
        seed=draw.quoted_seed,
    )


def _reference_pe(n, dim, base=10000.0):
    return sinusoidal_pe(n, dim, base=base)


@enforce_rules
def check_shift_matrix(fn: Callable[..., torch.Tensor], *, hidden: bool = False, device=None) -> None:
    """``fn(k, dim, base=10000.0)`` -> the ``(dim, dim)`` matrix with ``PE(p + k) = M_k @ PE(p)``.

    Compared with ``posref.sinusoidal_shift_matrix`` (block diagonal, one 2x2 rotation per interleaved pair); the
    output may be float32 or float64. Hidden cases: ``k`` = 0, negative, positive and far (100-5000), the default
    base and another, each at least once in 16 (a lost sign of ``k`` fails every draw).
    """
    draw = Draw(hidden=hidden, device=device)
    cases = [Case((1, 4)), Case((3, 8)), Case((-2, 6), {"base": 100.0})] if not hidden else []
    for c in draw.cover(16, k=(0, "negative", "positive", "far"), base=(None, "other")) if hidden else []:
        k = {"negative": -draw.int(1, 5000), "positive": draw.int(1, 50), "far": draw.int(100, 5000)}.get(
            c["k"], 0
        )
        kwargs = {} if c["base"] is None else {"base": draw.uniform(50.0, 1e5)}
        cases.append(Case((k, draw.even(2, 64)), kwargs))
    for case in cases:
        case.atol, case.rtol = 1e-5 + 1e-6 * abs(case.args[0]), 0.0
    mistakes = {
        _(
            "your matrix shifts the other way (it is M_{-k}, the transpose): check the sign of the sine entries; "
            "row 2i is [cos kw, sin kw] so that sin(a + b) = sin a cos b + cos a sin b"
        ): _backwards_for_positive_k,
        _(
            "for this negative k your matrix is M_{|k|}: either the sign of k is lost (abs(k)), or the sine "
            "entries' sign is flipped (then a positive k fails too)"
        ): _backwards_for_negative_k,
        _(
            "the 2x2 blocks must sit on the interleaved pairs (2i, 2i+1), the same columns as sin and cos in "
            "sinusoidal_pe"
        ): lambda k, dim, base=10000.0: _halves_shift(k, dim, base),
    }
    first_difference(
        "shift_matrix",
        fn,
        _reference_shift,
        cases,
        mistakes=mistakes,
        match_dtype=False,
        at_least_float32=True,
        seed=draw.quoted_seed,
    )


def _reference_shift(k, dim, base=10000.0):
    return sinusoidal_shift_matrix(k, dim, base=base, dtype=torch.float64)


def _backwards_for_positive_k(k, dim, base=10000.0):
    """M_{-k} for k > 0: a flipped sine sign. For k < 0, M_{-k} is also M_{|k|} (a lost sign of k): ambiguous."""
    if k <= 0:
        raise ValueError("this mistake is told apart from abs(k) only for k > 0")
    return _reference_shift(-k, dim, base)


def _backwards_for_negative_k(k, dim, base=10000.0):
    """M_{-k} = M_{|k|} for k < 0: a lost sign of k or a flipped sine sign, the hint names both."""
    if k >= 0:
        raise ValueError("this mistake shows only for k < 0")
    return _reference_shift(-k, dim, base)


def _halves_shift(k, dim, base):
    perm = torch.cat((torch.arange(0, dim, 2), torch.arange(1, dim, 2)))
    m = _reference_shift(k, dim, base)
    return m[perm][:, perm]


# ---------------------------------------------------------------------------------------------------------------
# the learned table, added to token embeddings


def _learned_reference(weight, x, positions):
    table = LearnedPositionalEmbedding(
        weight.shape[0], weight.shape[1], device=weight.device, dtype=weight.dtype
    )
    with torch.no_grad():
        table.weight.copy_(weight)
        return x + table(positions).to(x.dtype)


def _learned_case(
    draw: Draw,
    rows: int,
    dim: int,
    b: int,
    t: int,
    start: int,
    *,
    batched: bool,
    dtype,
    weight_dtype=torch.float32,
) -> Case:
    """A table of ``weight_dtype`` (float32, as the text asks, or float64) and token embeddings ``x`` of ``dtype``."""
    weight, x = draw.randn(rows, dim, dtype=weight_dtype), draw.randn(b, t, dim, dtype=dtype)
    positions = draw.positions(t, max_start=0) + start
    if batched:  # each sequence of the batch at its own offset (packed or left-padded batches)
        positions = torch.stack([positions + (i % 2) * min(1, rows - start - t) for i in range(b)])
    label = _("a table of {rows} rows, positions {start}..{end}").format(
        rows=rows, start=start, end=int(positions.max())
    )
    return Case((weight, x, positions), label=label)


def _names(text: str, number: int) -> bool:
    return re.search(rf"(?<![\d.]){number}(?!\d)", text) is not None


_DTYPES = (torch.float32, torch.float64, torch.bfloat16, torch.float16)


@enforce_rules
def check_learned_positions(fn: Callable[..., torch.Tensor], *, hidden: bool = False, device=None) -> None:
    """``fn(weight (P, C), x (B, T, C), positions (T,) or (B, T) int64)`` -> ``(B, T, C)``: the student's learned
    table holding ``weight`` added to the token embeddings ``x``, ``x + weight[positions]`` in ``x``'s dtype, like
    ``posref.LearnedPositionalEmbedding`` with the same weights.

    A position outside ``[0, P)`` (one past the last row, or negative, which Python indexing would silently read
    from the end) must raise an ``IndexError`` whose message names that position and the table's size.
    Hidden cases: positions shared ``(T,)`` and per sequence ``(B, T)``, starting at 0 and at an offset, ``x`` in
    float32, float64, bfloat16 and float16 (the table float32, or float64), each at least once.
    """
    draw = Draw(hidden=hidden, device=device)
    cases = []
    if hidden:
        for choice in draw.cover(16, batched=(False, True), offset=(False, True), dtype=_DTYPES):
            rows, dim = draw.int(2, 300), draw.int(1, 64)
            t = draw.int(1, rows - 1) if choice["offset"] else draw.int(1, rows)
            start = draw.int(1, rows - t) if choice["offset"] else 0
            weight_dtype = draw.choice((torch.float32, torch.float32, torch.float64))
            cases.append(_learned_case(draw, rows, dim, draw.int(1, 4), t, start, batched=choice["batched"],
                                       dtype=choice["dtype"], weight_dtype=weight_dtype))  # fmt: skip
    else:
        for rows, dim, b, t, start, batched, dtype in (
            (8, 4, 2, 8, 0, False, torch.float32),
            (10, 6, 1, 4, 5, False, torch.float32),
            (12, 3, 2, 5, 2, True, torch.bfloat16),  # the output keeps x's dtype
        ):
            cases.append(_learned_case(draw, rows, dim, b, t, start, batched=batched, dtype=dtype))

    def from_zero(weight, x, positions):
        return _learned_reference(weight, x, torch.arange(x.shape[1], device=x.device).expand_as(positions))

    def one_based(weight, x, positions):
        return _learned_reference(torch.cat((weight[1:], weight[:1])), x, positions)

    mistakes = {
        _(
            "look the rows up at the positions you are given (they need not start at 0), not at arange(T)"
        ): from_zero,
        _(
            "add the position vectors to the token embeddings: the output is x + weight[positions]"
        ): lambda w, x, p: w[p].to(x.dtype).expand_as(x).clone(),
        _("row p holds position p: position 0 reads row 0, not row 1"): one_based,
    }
    first_difference(
        "learned_positions", fn, _learned_reference, cases, mistakes=mistakes, seed=draw.quoted_seed
    )
    _check_refuses_missing_rows(fn, draw)


def _check_refuses_missing_rows(fn: Callable[..., torch.Tensor], draw: Draw) -> None:
    """Each call asks for one position the table has no row for; the call must raise and say which."""
    for i in range(draw.n(2, 6)):
        p = draw.int(10, 90)
        bad = (p, -draw.int(2, p - 1))[i % 2]  # -k in -(P - 1)..-2: plain indexing reads row P - k
        positions = torch.arange(p - 3, p, device=draw.device)
        positions[1] = bad
        weight, x = draw.randn(p, 4), draw.randn(1, 3, 4)
        where = (
            _("one past the last row")
            if bad == p
            else _("negative: weight[-k] would silently read row P - k")
        )
        head = _(
            "learned_positions must refuse a position it has no row for: a table of {rows} rows (positions "
            "0..{last}) was asked for position {bad} ({where}), with positions {positions}"
        ).format(rows=p, last=p - 1, bad=bad, where=where, positions=positions.tolist())
        example = (
            f"'position {bad} is outside the table: it has rows for 0..{p - 1}'"  # an error's text: code
        )
        try:
            fn(weight, x, positions.clone())
        except CheckFailed:
            raise
        except Exception as err:  # the expected outcome: now an IndexError whose message a student can act on
            text = getattr(err, "reported_as", None) or error_text(err)
            if not raised_a(err, IndexError):
                raise CheckFailed(
                    head + "\n  " + _(_NOT_AN_INDEX_ERROR).format(text=text[:300], example=example),
                    cause=Cause.mistake(_NOT_AN_INDEX_ERROR),
                ) from err
            if not (_names(text, bad) and (_names(text, p) or _names(text, p - 1))):
                raise CheckFailed(
                    head + "\n  " + _(_UNSAID_POSITION).format(text=text[:300], example=example),
                    cause=Cause.mistake(_UNSAID_POSITION),
                ) from err
            continue
        raise CheckFailed(head + "\n  " + _(_NOT_REFUSED), cause=Cause.mistake(_NOT_REFUSED))


# the named mistakes of refusing a missing row (their keys are the causes the score of record keeps)
_NOT_AN_INDEX_ERROR = N_(
    "your error: {text}\n  raise an IndexError (the exercise asks for one: code that reads a table catches "
    "IndexError for a position it has no row for), e.g. raise IndexError({example})"
)
_UNSAID_POSITION = N_(
    "your error says: {text}\n  say which position has no row and how many rows there are (e.g. {example}), so "
    "that whoever meets it knows what to change"
)
_NOT_REFUSED = N_(
    "your function returned a result instead of raising an error: check that every position is in "
    "0..max_positions - 1 before looking rows up, and raise an IndexError otherwise"
)
