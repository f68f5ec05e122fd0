"""Student-style implementations for the grading tests: correct ones written differently, and classic mistakes.

Each is written the way a student might write it, independently of posref (no posref imports), so that a
checker that passes them is known to accept other correct code and not just the reference's own arithmetic.
"""

from __future__ import annotations

import math

import torch

# ---------------------------------------------------------------- attention and equivariance


def attention_loops(q, k, v, causal=False):
    """Correct, written with an explicit loop over queries and float64 accumulation."""
    out = torch.empty(*q.shape[:-1], v.shape[-1], dtype=q.dtype)
    tq = q.shape[-2]
    for i in range(tq):
        s = (q[..., i : i + 1, :].double() @ k.double().transpose(-1, -2)) / math.sqrt(q.shape[-1])
        if causal:
            s[..., i + 1 :] = -math.inf
        out[..., i : i + 1, :] = (torch.softmax(s, -1) @ v.double()).to(q.dtype)
    return out


def attention_matmul(q, k, v, causal=False):
    """Correct: the formula as written, a boolean mask built at every call."""
    s = q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])
    if causal:
        s = s.masked_fill(torch.ones(s.shape[-2:], dtype=torch.bool).triu(1), -math.inf)
    return torch.softmax(s, -1) @ v


def attention_einsum(q, k, v, causal=False):
    """Correct: einsum for both products, an additive -inf mask."""
    s = torch.einsum("...qd,...kd->...qk", q, k) * q.shape[-1] ** -0.5
    if causal:
        s = s + torch.full(s.shape[-2:], -math.inf).triu(1)
    return torch.einsum("...qk,...kd->...qd", torch.softmax(s, -1), v)


def attention_float64_inside(q, k, v, causal=False):
    """Correct: everything in float64, the result back in q's dtype."""
    return attention_matmul(q.double(), k.double(), v.double(), causal).to(q.dtype)


def attention_head_query_loops(q, k, v, causal=False):
    """Correct and slow: a Python loop over heads, then over queries, each a softmax over its keys."""
    out = torch.empty(*q.shape[:-1], v.shape[-1], dtype=q.dtype)
    for h in range(q.shape[-3]):
        for i in range(q.shape[-2]):
            s = k[..., h, :, :] @ q[..., h, i, :].unsqueeze(-1) / math.sqrt(q.shape[-1])
            if causal:
                s[..., i + 1 :, :] = -math.inf
            out[..., h, i, :] = (torch.softmax(s, -2) * v[..., h, :, :]).sum(-2)
    return out


def attention_no_scale(q, k, v, causal=False):
    s = q @ k.transpose(-1, -2)
    if causal:
        s = s.masked_fill(torch.ones(s.shape[-2:], dtype=torch.bool).triu(1), -math.inf)
    return torch.softmax(s, -1) @ v


def attention_masks_past(q, k, v, causal=False):
    s = q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])
    if causal:
        s = s.masked_fill(torch.ones(s.shape[-2:], dtype=torch.bool).tril(-1), -math.inf)
    return torch.softmax(s, -1) @ v


def equivariance_error_einsum(f, x, perm):
    """Correct: the permutation as a matrix P with P x = x[perm]."""
    p = torch.eye(x.shape[-2], dtype=x.dtype)[perm]
    return float((f(p @ x) - p @ f(x)).abs().amax())


def equivariance_error_unpermuted_output(f, x, perm):
    return (f(x[..., perm, :]) - f(x)).abs().max().item()


# ---------------------------------------------------------------- sinusoidal


def sinusoidal_pe_exp_log(n_positions, dim, base=10000.0):
    """Correct, float64, frequencies via exp(-log(base) * 2i / dim) (the annotated-transformer form)."""
    pos = torch.arange(n_positions, dtype=torch.float64).unsqueeze(1)
    div = torch.exp(torch.arange(0, dim, 2, dtype=torch.float64) * (-math.log(base) / dim))
    pe = torch.zeros(n_positions, dim, dtype=torch.float64)
    pe[:, 0::2] = torch.sin(pos * div)
    pe[:, 1::2] = torch.cos(pos * div)
    return pe


def sinusoidal_pe_loops(n_positions, dim, base=10000.0):
    """Correct, Python loops as in the paper's formula, float32 result."""
    pe = torch.zeros(n_positions, dim)
    for p in range(n_positions):
        for i in range(dim // 2):
            angle = p / base ** (2 * i / dim)
            pe[p, 2 * i] = math.sin(angle)
            pe[p, 2 * i + 1] = math.cos(angle)
    return pe


def _pe(n, dim, base, exponent, *, halves=False, cos_first=False):
    pos = torch.arange(n, dtype=torch.float32)[:, None]
    angles = pos / base**exponent
    a, b = (angles.cos(), angles.sin()) if cos_first else (angles.sin(), angles.cos())
    return torch.cat((a, b), -1) if halves else torch.stack((a, b), -1).flatten(-2)


def sinusoidal_pe_intdiv(n, dim, base=10000.0):
    return _pe(n, dim, base, torch.arange(0, dim, 2) // dim)


def sinusoidal_pe_one_based(n, dim, base=10000.0):
    return _pe(n, dim, base, torch.arange(1, dim // 2 + 1) * 2 / dim)


def sinusoidal_pe_halves(n, dim, base=10000.0):
    return _pe(n, dim, base, torch.arange(0, dim, 2) / dim, halves=True)


def sinusoidal_pe_cos_first(n, dim, base=10000.0):
    return _pe(n, dim, base, torch.arange(0, dim, 2) / dim, cos_first=True)


def sinusoidal_pe_swapped(n, dim, base=10000.0):
    i = torch.arange(dim // 2, dtype=torch.float32)[None, :]
    pos = torch.arange(n, dtype=torch.float32)[:, None]
    angles = i / base ** (2 * pos / dim)
    return torch.stack((angles.sin(), angles.cos()), -1).flatten(-2)


def shift_matrix_from_tables(k, dim, base=10000.0):
    """Correct: solve M @ PE(p) = PE(p + k) pair by pair from the angle-addition formulas, in complex numbers."""
    w = base ** (-torch.arange(0, dim, 2, dtype=torch.float64) / dim)
    z = torch.exp(1j * k * w)  # rotation of each pair as a unit complex number
    m = torch.zeros(dim, dim, dtype=torch.float64)
    m[0::2, 0::2] = torch.diag(z.real)
    m[0::2, 1::2] = torch.diag(z.imag)
    m[1::2, 0::2] = torch.diag(-z.imag)
    m[1::2, 1::2] = torch.diag(z.real)
    return m


def shift_matrix_transposed(k, dim, base=10000.0):
    return shift_matrix_from_tables(k, dim, base).T


def shift_matrix_abs_k(k, dim, base=10000.0):
    """Signs of the sine entries right, but k's sign lost: M_{|k|} (wrong for negative k only)."""
    return shift_matrix_from_tables(abs(k), dim, base)


# ---------------------------------------------------------------- the learned table (notebook 02)


class LearnedPositionsChecked(torch.nn.Module):
    """Correct: an nn.Embedding behind an explicit range check."""

    def __init__(self, max_positions, dim):
        super().__init__()
        self.table = torch.nn.Embedding(max_positions, dim)
        self.weight = self.table.weight

    def forward(self, x, positions):
        bad = positions[(positions < 0) | (positions >= self.table.num_embeddings)]
        if bad.numel():
            raise IndexError(
                f"position {int(bad[0])} has no row: the table has {self.table.num_embeddings} rows"
            )
        return x + self.table(positions).to(x.dtype)


class LearnedPositionsNoCheck(LearnedPositionsChecked):
    """Mistake: plain indexing, which reads row P - k for position -k."""

    def forward(self, x, positions):
        return x + self.weight[positions].to(x.dtype)


class LearnedPositionsTorchError(LearnedPositionsChecked):
    """Mistake: nn.Embedding's own error ('index out of range in self'), which names neither the position nor
    the table's size."""

    def forward(self, x, positions):
        return x + self.table(positions).to(x.dtype)


class LearnedPositionsFromZero(LearnedPositionsChecked):
    """Mistake: the rows of arange(T), whatever positions were asked for."""

    def forward(self, x, positions):
        super().forward(x, positions)  # the range check
        return x + self.weight[: x.shape[1]].to(x.dtype)


class LearnedPositionsTableOnly(LearnedPositionsChecked):
    """Mistake: the position vectors alone, not added to the token embeddings."""

    def forward(self, x, positions):
        return (super().forward(x, positions) - x).expand_as(x).clone()


def through_learned_module(cls):
    """What the notebook's cell hands the checker: the student's module holding a given table."""

    def learned_positions(weight, x, positions):
        module = cls(*weight.shape).to(device=x.device, dtype=weight.dtype)
        with torch.no_grad():
            module.weight.copy_(weight)
            return module(x, positions)

    learned_positions.__name__ = f"learned_positions_{cls.__name__}"
    return learned_positions


# ---------------------------------------------------------------- ALiBi and T5


def alibi_slopes_geometric(n_heads):
    """Correct: the paper's code, a geometric sequence with start = ratio = 2**(-8/n)."""

    def power_of_two(n):
        start = 2 ** (-(2 ** -(math.log2(n) - 3)))
        return [start * start**i for i in range(n)]

    if math.log2(n_heads).is_integer():
        return torch.tensor(power_of_two(n_heads))
    c = 2 ** math.floor(math.log2(n_heads))
    return torch.tensor(power_of_two(c) + power_of_two(2 * c)[0::2][: n_heads - c])


def alibi_slopes_naive(n_heads):
    return torch.tensor([2 ** (-8 * h / n_heads) for h in range(1, n_heads + 1)])


def alibi_bias_loops(slopes, q_positions, k_positions):
    out = torch.empty(len(slopes), len(q_positions), len(k_positions), dtype=slopes.dtype)
    for a, i in enumerate(q_positions.tolist()):
        for b, j in enumerate(k_positions.tolist()):
            out[:, a, b] = -slopes * abs(i - j)
    return out


def alibi_bias_signed(slopes, q_positions, k_positions):
    return -slopes[:, None, None] * (q_positions[:, None] - k_positions[None, :])


def t5_bucket_hf_style(relative_position, bidirectional=True, num_buckets=32, max_distance=128):
    """Correct: the transformers library's formulation, with math.log in float64."""
    ret = 0
    n = relative_position
    if bidirectional:
        num_buckets //= 2
        ret = (n > 0).long() * num_buckets
        n = n.abs()
    else:
        n = -torch.min(n, torch.zeros_like(n))
    max_exact = num_buckets // 2
    is_small = n < max_exact
    val = (
        max_exact
        + (
            torch.log(n.double() / max_exact) / math.log(max_distance / max_exact) * (num_buckets - max_exact)
        ).long()
    )
    val = torch.min(val, torch.full_like(val, num_buckets - 1))
    return ret + torch.where(is_small, n, val)


def t5_learned_bias_loops(weight, q_positions, k_positions, bidirectional=True, max_distance=128):
    """Correct: one query-key pair at a time, on the transformers-style bucket function."""
    n_heads = weight.shape[1]
    out = torch.empty(n_heads, len(q_positions), len(k_positions), dtype=weight.dtype)
    for i, q in enumerate(q_positions.tolist()):
        for j, k in enumerate(k_positions.tolist()):
            b = t5_bucket_hf_style(torch.tensor(k - q), bidirectional, weight.shape[0], max_distance)
            out[:, i, j] = weight[int(b)]
    return out


def t5_learned_bias_embedding(weight, q_positions, k_positions, bidirectional=True, max_distance=128):
    """Correct: an nn.Embedding holding the table, looked up with the (Tq, Tk) buckets."""
    table = torch.nn.Embedding.from_pretrained(weight)
    rel = k_positions[None, :] - q_positions[:, None]
    return table(t5_bucket_hf_style(rel, bidirectional, weight.shape[0], max_distance)).permute(2, 0, 1)


def t5_learned_bias_query_minus_key(weight, q_positions, k_positions, bidirectional=True, max_distance=128):
    rel = q_positions[:, None] - k_positions[None, :]
    return weight[t5_bucket_hf_style(rel, bidirectional, weight.shape[0], max_distance)].permute(2, 0, 1)


def t5_learned_bias_always_bidirectional(
    weight, q_positions, k_positions, bidirectional=True, max_distance=128
):
    rel = k_positions[None, :] - q_positions[:, None]
    return weight[t5_bucket_hf_style(rel, True, weight.shape[0], max_distance)].permute(2, 0, 1)


def t5_bucket_unclipped(relative_position, bidirectional=True, num_buckets=32, max_distance=128):
    n = relative_position
    ret = 0
    if bidirectional:
        num_buckets //= 2
        ret = (n > 0).long() * num_buckets
        n = n.abs()
    else:
        n = -torch.min(n, torch.zeros_like(n))
    max_exact = num_buckets // 2
    val = (
        max_exact
        + (
            torch.log(n.float() / max_exact) / math.log(max_distance / max_exact) * (num_buckets - max_exact)
        ).long()
    )
    return ret + torch.where(n < max_exact, n, val)


# ---------------------------------------------------------------- RoPE


def rope_cos_sin_float64(positions, inv_freq):
    """Correct: angles in float64 (more precise than the reference), returned as float32."""
    angles = torch.outer(positions.reshape(-1).double(), inv_freq.double()).reshape(*positions.shape, -1)
    return angles.cos().float(), angles.sin().float()


def rope_cos_sin_half_precision(positions, inv_freq):
    angles = positions[..., None] * inv_freq
    return angles.cos().float(), angles.sin().float()


def apply_rope_complex(x, cos, sin, layout="half"):
    """Correct: rotation as multiplication by cos + i sin, via complex numbers, in float32."""
    r = cos.shape[-1]
    xf = x.float()
    rot, rest = xf[..., : 2 * r], xf[..., 2 * r :]
    if layout == "half":
        z = torch.complex(rot[..., :r], rot[..., r:])
    else:
        z = torch.view_as_complex(rot.reshape(*rot.shape[:-1], r, 2).contiguous())
    z = z * torch.polar(torch.ones_like(cos), torch.atan2(sin, cos))
    if layout == "half":
        rot = torch.cat((z.real, z.imag), -1)
    else:
        rot = torch.view_as_real(z).flatten(-2)
    return torch.cat((rot, rest), -1).to(x.dtype)


def apply_rope_rotate_half(x, cos, sin, layout="half"):
    """Correct: the Llama/NeoX style with rotate_half, computed in x's own dtype (no upcast)."""
    r = cos.shape[-1]
    rot, rest = x[..., : 2 * r], x[..., 2 * r :]
    if layout == "half":
        c, s = torch.cat((cos, cos), -1).to(x.dtype), torch.cat((sin, sin), -1).to(x.dtype)
        x1, x2 = rot[..., :r], rot[..., r:]
        rotated = torch.cat((-x2, x1), -1)
    else:
        c = cos.repeat_interleave(2, -1).to(x.dtype)
        s = sin.repeat_interleave(2, -1).to(x.dtype)
        rotated = torch.stack((-rot[..., 1::2], rot[..., 0::2]), -1).flatten(-2)
    return torch.cat((rot * c + rotated * s, rest), -1)


def apply_rope_wrong_layout(x, cos, sin, layout="half"):
    return apply_rope_rotate_half(x, cos, sin, layout="interleaved" if layout == "half" else "half")


def apply_rope_sin_cos_swapped(x, cos, sin, layout="half"):
    return apply_rope_rotate_half(x, sin, cos, layout=layout)


def apply_rope_full_width_half(x, cos, sin, layout="half"):
    """Wrong under partial rotary: rotate_half over the whole head dim."""
    if layout != "half":
        return apply_rope_rotate_half(x, cos, sin, layout)
    r, half = cos.shape[-1], x.shape[-1] // 2
    out = x.clone()
    x1, x2 = x[..., :r], x[..., half : half + r]
    out[..., :r] = x1 * cos.to(x.dtype) - x2 * sin.to(x.dtype)
    out[..., half : half + r] = x2 * cos.to(x.dtype) + x1 * sin.to(x.dtype)
    return out


def apply_rope_float32_out(x, cos, sin, layout="half"):
    return apply_rope_rotate_half(x.float(), cos, sin, layout)


def apply_rope_matrix_per_position(x, cos, sin, layout="half"):
    """Correct but slow: a (D, D) rotation matrix for every position (what the lecture warns against)."""
    d, r = x.shape[-1], cos.shape[-1]
    t = x.shape[-2]
    cos2 = cos.expand(*x.shape[:-1], r) if cos.ndim == x.ndim else cos.expand(t, r)
    mats = torch.eye(d, dtype=torch.float32, device=x.device).repeat(*cos2.shape[:-1], 1, 1)
    idx = torch.arange(r, device=x.device)
    a, b = (idx, idx + r) if layout == "half" else (2 * idx, 2 * idx + 1)
    sin2 = sin.expand_as(cos2)
    mats[..., a, a] = cos2
    mats[..., b, b] = cos2
    mats[..., a, b] = -sin2
    mats[..., b, a] = sin2
    return (mats @ x.float()[..., None])[..., 0].to(x.dtype)


def apply_rope_position_loop(x, cos, sin, layout="half"):
    """Correct but slow: a Python loop over positions."""
    out = torch.empty_like(x)
    for p in range(x.shape[-2]):
        c, s = cos[..., p : p + 1, :], sin[..., p : p + 1, :]
        out[..., p : p + 1, :] = apply_rope_rotate_half(x[..., p : p + 1, :], c, s, layout)
    return out


def rope_scores_keys_only(q, k, cos, sin, layout="half"):
    return q @ apply_rope_rotate_half(k, cos, sin, layout).transpose(-1, -2)


def rope_scores_complex(q, k, cos, sin, layout="half"):
    """Correct: rotate both with the complex implementation, then dot products."""
    return apply_rope_complex(q, cos, sin, layout) @ apply_rope_complex(k, cos, sin, layout).transpose(-1, -2)


def _pairs(x, r, layout):
    """x's rotated dims as (first, second) of each pair, and the dims passed through."""
    rot, rest = x[..., : 2 * r], x[..., 2 * r :]
    if layout == "half":
        return rot[..., :r], rot[..., r:], rest
    return rot[..., 0::2], rot[..., 1::2], rest


def _join(a, b, rest, layout):
    rot = torch.cat((a, b), -1) if layout == "half" else torch.stack((a, b), -1).flatten(-2)
    return torch.cat((rot, rest), -1)


def apply_rope_einsum(x, cos, sin, layout="half"):
    """Correct: each pair times its 2x2 rotation matrix, with einsum (sane, but several times the reference)."""
    r = cos.shape[-1]
    a, b, rest = _pairs(x.float(), r, layout)
    rotation = torch.stack(
        (torch.stack((cos, -sin), -1), torch.stack((sin, cos), -1)), -2
    )  # (..., T, r, 2, 2)
    pairs = torch.stack((a, b), -1)
    out = torch.einsum("...ij,...j->...i", rotation, pairs)
    return _join(out[..., 0], out[..., 1], rest.float(), layout).to(x.dtype)


def apply_rope_float64_inside(x, cos, sin, layout="half"):
    """Correct: computed in float64, returned in x's dtype."""
    r = cos.shape[-1]
    a, b, rest = _pairs(x.double(), r, layout)
    c, s = cos.double(), sin.double()
    return _join(a * c - b * s, b * c + a * s, rest, layout).to(x.dtype)


# the speed budgets' calibrations (``posref.bench --suite budgets``, ``autograder.calibrate``): name -> (kind, function)
APPLY_ROPE_IMPLS = {
    "apply_rope_complex": ("sane", apply_rope_complex),
    "apply_rope_rotate_half": ("sane", apply_rope_rotate_half),
    "apply_rope_einsum": ("sane", apply_rope_einsum),
    "apply_rope_float64_inside": ("sane", apply_rope_float64_inside),
    "apply_rope_matrix_per_position": ("slow", apply_rope_matrix_per_position),
    "apply_rope_position_loop": ("slow", apply_rope_position_loop),
}
ATTENTION_IMPLS = {
    "attention_matmul": ("sane", attention_matmul),
    "attention_einsum": ("sane", attention_einsum),
    "attention_float64_inside": ("sane", attention_float64_inside),
    "attention_loops": ("slow", attention_loops),
    "attention_head_query_loops": ("slow", attention_head_query_loops),
}


# ---------------------------------------------------------------- one step of LongRoPE's search (notebook 07)


def longrope_mutation_loop(parent, which, noise, low, high, monotone):
    """Correct: factor by factor, the running maximum kept by hand."""
    out, best = [], -math.inf
    for f, w, z in zip(parent.tolist(), which.tolist(), noise.tolist(), strict=True):
        f = min(max(f * math.exp(z) if w else f, low), high)
        best = max(best, f) if monotone else f
        out.append(best)
    return torch.tensor(out, dtype=torch.float64)


def longrope_mutation_additive(parent, which, noise, low, high, monotone):
    child = torch.where(which, parent + noise, parent).clamp(low, high)
    return child.cummax(0).values if monotone else child


def longrope_mutation_unbounded(parent, which, noise, low, high, monotone):
    child = torch.where(which, parent * noise.exp(), parent)
    return child.cummax(0).values if monotone else child
