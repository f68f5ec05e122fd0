"""Correct answers written independently of the published solution, the way a student who did not copy writes them
(loops, another formula for the same thing, the paper's form), for the answer cells that
``tests/grading/student_impls*.py`` has none of. ``test_similar.py`` puts them into notebooks and checks that they
score low against the solution; it also checks that each passes its posref checker, so that "independent correct
answer" is a fact about them, not a label.
"""

from __future__ import annotations

import math

import torch

from posref.lab import PositionHandler


def alibi_slopes_halving(n_heads):
    """03: the slopes of the largest power of two of heads, then every other slope of twice as many."""
    n = 2 ** int(math.log2(n_heads))
    ratio = 2.0 ** (-8.0 / n)
    slopes = [ratio ** (i + 1) for i in range(n)]
    finer = 2.0 ** (-8.0 / (2 * n))
    extra = [finer ** (2 * j + 1) for j in range(n_heads - n)]
    return torch.tensor(slopes + extra, dtype=torch.float32)


def rotations_from_step_powers(step, positions):
    """04: step multiplied by itself, position by position (its inverse for negative positions)."""
    out = []
    for p in positions.tolist():
        m = torch.eye(2, dtype=step.dtype, device=step.device)
        factor = step if p >= 0 else step.T  # a rotation's inverse is its transpose
        for _ in range(abs(p)):
            m = m @ factor
        out.append(m)
    return torch.stack(out) if out else torch.empty(0, 2, 2, dtype=step.dtype, device=step.device)


def score_by_distance_rotated(q, k, inv_freq, distances):
    """05: q rotated by each distance as complex numbers, dotted with k (only the difference of positions counts)."""
    r = inv_freq.numel()
    zq = torch.complex(q[..., :r].double(), q[..., r : 2 * r].double())
    zk = torch.complex(k[..., :r].double(), k[..., r : 2 * r].double())
    turn = torch.polar(torch.ones(len(distances), r, dtype=torch.float64, device=q.device),
                       distances.double()[:, None] * inv_freq.double())  # fmt: skip
    products = (zq.unsqueeze(-2) * turn) * zk.conj().unsqueeze(-2)
    return products.real.sum(-1).to(q.dtype)


def pair_norms_hypot(x, layout="half"):
    """05: ``torch.hypot`` of each pair's two coordinates."""
    half = x.shape[-1] // 2
    if layout not in ("half", "interleaved"):
        raise ValueError(f"unknown layout {layout}")
    if layout == "interleaved":
        return torch.hypot(x[..., ::2], x[..., 1::2])
    return torch.hypot(x[..., :half], x[..., half:])


def pair_norms_vector_norm(x, layout="half"):
    """05: the pairs laid along a new last axis of two, then the vector norm over that axis."""
    if layout == "half":
        pairs = x.unflatten(-1, (2, -1)).transpose(-1, -2)
    elif layout == "interleaved":
        pairs = x.unflatten(-1, (-1, 2))
    else:
        raise ValueError(f"no layout called {layout!r}: use 'half' or 'interleaved'")
    return torch.linalg.vector_norm(pairs, dim=-1)


def pair_norms_loop(x, layout="half"):
    """05: one pair at a time, the square root of the sum of its two squares."""
    if layout not in ("half", "interleaved"):
        raise ValueError("layout is 'half' or 'interleaved'")
    d = x.shape[-1]
    norms = []
    for i in range(d // 2):
        if layout == "half":
            first, second = x[..., i], x[..., i + d // 2]
        else:
            first, second = x[..., 2 * i], x[..., 2 * i + 1]
        norms.append((first * first + second * second).sqrt())
    return torch.stack(norms, dim=-1)


def pair_norms_squares(x, layout="half"):
    """05: every coordinate squared first, then the two squares of each pair added."""
    sq = x.pow(2)
    n = x.size(-1) // 2
    if layout == "half":
        total = sq[..., :n] + sq[..., n:]
    elif layout == "interleaved":
        total = sq[..., ::2] + sq[..., 1::2]
    else:
        raise ValueError(f"unexpected layout: {layout}")
    return total.sqrt()


def pair_norms_stacked(x, layout="half"):
    """05: the two coordinates of each pair stacked on a last axis, then ``torch.linalg.norm`` over it."""
    half = x.shape[-1] // 2
    if layout == "half":
        u, v = x[..., :half], x[..., half:]
    elif layout == "interleaved":
        u, v = x[..., ::2], x[..., 1::2]
    else:
        raise ValueError(f"layout {layout!r} is neither 'half' nor 'interleaved'")
    return torch.linalg.norm(torch.stack((u, v), dim=-1), dim=-1)


def pair_norms_one_line(x, layout="half"):
    """05: both layouts' pairs in one conditional expression, then ``hypot``'s formula written out."""
    if layout not in {"half", "interleaved"}:
        raise ValueError(f"layout={layout!r}?")
    h = x.shape[-1] // 2
    left, right = (x[..., ::2], x[..., 1::2]) if layout == "interleaved" else (x[..., :h], x[..., h:])
    return (left.square() + right.square()).sqrt()


def pair_norms_halves(x, layout="half"):
    """05: the obvious way, the interleaved layout first: the two coordinates of each pair, then Pythagoras."""
    if layout == "interleaved":
        even, odd = x[..., 0::2], x[..., 1::2]
    elif layout == "half":
        mid = x.shape[-1] // 2
        even, odd = x[..., :mid], x[..., mid:]
    else:
        raise ValueError("layout must be half or interleaved")
    return torch.sqrt(even**2 + odd**2)


def p_rope_threshold(inv_freq, p):
    """05: the kept frequencies found by sorting, everything else multiplied by zero."""
    count = int(p * len(inv_freq))
    mask = torch.zeros(len(inv_freq), dtype=torch.bool, device=inv_freq.device)
    if count:
        order = sorted(range(len(inv_freq)), key=lambda i: -float(inv_freq[i]))
        mask[order[:count]] = True
    return inv_freq * mask


def ntk_by_parts_loop(head_dim, base, params, seq_len=None):
    """07: NTK-by-parts as the YaRN paper states it, by wavelength: a pair whose wavelength fits the original length
    often (above beta_fast turns) kept, one that does not complete beta_slow turns interpolated, a ramp between."""
    scale = params["factor"]
    length = params["original_max_position_embeddings"]
    fast, slow = params.get("beta_fast", 32.0), params.get("beta_slow", 1.0)
    freqs = []
    for i in range(0, head_dim, 2):
        theta = 1.0 / base ** (i / head_dim)
        wavelength = 2 * math.pi / theta
        ratio = length / wavelength
        if ratio > fast:
            freqs.append(theta)
        elif ratio < slow:
            freqs.append(theta / scale)
        else:
            w = (ratio - slow) / (fast - slow)
            freqs.append(theta * w + theta / scale * (1 - w))
    return torch.tensor(freqs, dtype=torch.float64), 1.0


class ALiBiWithOwnSlopes(PositionHandler):
    """06: ALiBi's bias from slopes it computes in its constructor, a penalty growing with the distance."""

    def __init__(self, n_heads):
        super().__init__()
        self.n_heads = n_heads
        self.m = alibi_slopes_halving(n_heads)

    def bias(self, q_positions, k_positions):
        gap = torch.abs(q_positions.unsqueeze(1) - k_positions.unsqueeze(0)).float()
        return -(self.m.to(gap.device).view(-1, 1, 1) * gap)
