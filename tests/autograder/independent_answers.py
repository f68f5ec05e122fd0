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


def p_rope_threshold(inv_freq, p):
    """05: the kept frequencies found by sorting, everything else multiplied by zero."""
    count = int(p * len(inv_freq))
    mask = torch.zeros(len(inv_freq), dtype=torch.bool, device=inv_freq.device)
    if count:
        order = sorted(range(len(inv_freq)), key=lambda i: -float(inv_freq[i]))
        mask[order[:count]] = True
    return inv_freq * mask


def ntk_pair_factor_loop(head_dim, factor):
    """07: the factor of pair i, s ** (-2i / (D - 2)), one pair at a time."""
    return torch.tensor([factor ** (-(2.0 * i) / (head_dim - 2)) for i in range(head_dim // 2)],
                        dtype=torch.float64)  # fmt: skip


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


def llama3_loop(head_dim, base, params, seq_len=None):
    """07: Llama 3.1's rule by wavelength, pair by pair: short wavelengths kept, long ones divided by the factor,
    a smooth blend between."""
    scale, length = params["factor"], params["original_max_position_embeddings"]
    lo, hi = params["low_freq_factor"], params["high_freq_factor"]
    result = []
    for j in range(head_dim // 2):
        f = base ** (-2.0 * j / head_dim)
        wave = 2 * math.pi / f
        if wave < length / hi:
            result.append(f)
        elif wave > length / lo:
            result.append(f / scale)
        else:
            t = (length / wave - lo) / (hi - lo)
            result.append((1 - t) * f / scale + t * f)
    return torch.tensor(result, dtype=torch.float64), 1.0


def dynamic_ntk_direct(head_dim, base, params, seq_len=None):
    """07: Dynamic NTK with the base grown from the current length (never below the original)."""
    scale, trained = params["factor"], params["original_max_position_embeddings"]
    length = trained if seq_len is None else max(trained, seq_len)
    grown = base * ((scale * length / trained) - (scale - 1)) ** (head_dim / (head_dim - 2))
    exponents = torch.arange(0, head_dim, 2, dtype=torch.float64) / head_dim
    return 1.0 / grown**exponents, 1.0


class ALiBiWithOwnSlopes(PositionHandler):
    """06: ALiBi's bias from slopes it computes in its constructor, a penalty growing with the distance."""

    def __init__(self, n_heads):
        super().__init__()
        self.n_heads = n_heads
        self.m = alibi_slopes_halving(n_heads)

    def bias(self, q_positions, k_positions):
        gap = torch.abs(q_positions.unsqueeze(1) - k_positions.unsqueeze(0)).float()
        return -(self.m.to(gap.device).view(-1, 1, 1) * gap)
