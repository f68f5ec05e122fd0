"""Student-style solutions of the functions with speed checks beyond apply_rope and attention (02's
``sinusoidal_pe``, 03's ``alibi_bias``, ``t5_bucket`` and ``t5_learned_bias``, 06's ``per_position_loss`` and
handlers, 08's ``causal_mean``): sane vectorised ones and the classic slow ones, by name -> (kind, function) in one
``<NAME>_IMPLS`` dict per function, for ``posref.bench --suite budgets`` and the speed tests. Each is correct."""

from __future__ import annotations

import math

import numpy as np
import torch
import torch.nn.functional as F

from posref.lab.positions import ALiBiPositions, RoPEPositions, handler_attention
from posref.relative import alibi_bias
from posref.rope import apply_rope

IGNORE = -100

# ---------------------------------------------------------------------------------------------- per_position_loss


def ppl_log_softmax(logits, targets):
    scored = targets != IGNORE
    picked = torch.log_softmax(logits.float(), -1).gather(-1, targets.clamp(min=0)[..., None])[..., 0]
    return -(picked * scored).sum(0) / scored.sum(0)


def ppl_float64(logits, targets):
    return ppl_log_softmax(logits.double(), targets).float()


def ppl_one_hot(logits, targets):
    logits = logits.float()
    scored = targets != IGNORE
    one_hot = F.one_hot(targets.clamp(min=0), logits.shape[-1]).to(logits.dtype)
    return -((torch.log_softmax(logits, -1) * one_hot).sum(-1) * scored).sum(0) / scored.sum(0)


def ppl_loop_positions(logits, targets):
    logits, out = logits.float(), []
    for t in range(logits.shape[1]):
        ce = F.cross_entropy(logits[:, t], targets[:, t], reduction="sum", ignore_index=IGNORE)
        out.append(ce / (targets[:, t] != IGNORE).sum())
    return torch.stack(out)


def ppl_loop_pairs(logits, targets):
    logits = logits.float()
    b, t, _ = logits.shape
    out = torch.zeros(t)
    for j in range(t):
        total, n = 0.0, 0
        for i in range(b):
            if targets[i, j] != IGNORE:
                total = total - torch.log_softmax(logits[i, j], -1)[targets[i, j]]
                n += 1
        out[j] = total / n
    return out


PER_POSITION_LOSS_IMPLS = {
    "log_softmax + gather": ("sane", ppl_log_softmax),
    "float64 inside": ("sane", ppl_float64),
    "one-hot product": ("sane", ppl_one_hot),
    "loop over positions": ("slow", ppl_loop_positions),
    "loop over (sequence, position)": ("slow", ppl_loop_pairs),
}

# ---------------------------------------------------------------------------------------------- handlers


class _LoopRoPE(RoPEPositions):
    """rotate() one position at a time."""

    def rotate(self, q, k, positions):
        inv = self.rotary.inv_freq.float()
        outs = []
        for x in (q, k):
            cols = []
            for i, p in enumerate(positions.tolist()):
                a = p * inv
                cols.append(apply_rope(x[..., i : i + 1, :], a.cos()[None], a.sin()[None]))
            outs.append(torch.cat(cols, -2))
        return outs[0], outs[1]


class _EinsumRoPE(RoPEPositions):
    """rotate() as a 2x2 rotation per pair, by einsum."""

    def rotate(self, q, k, positions):
        d = q.shape[-1]
        inv = self.rotary.inv_freq.float()
        a = positions.float()[:, None] * inv  # (T, D/2)
        rot = torch.stack((torch.stack((a.cos(), -a.sin()), -1), torch.stack((a.sin(), a.cos()), -1)), -2)

        def turn(x):
            pairs = torch.stack((x[..., : d // 2], x[..., d // 2 :]), -1)  # (..., T, D/2, 2)
            out = torch.einsum("tpij,...tpj->...tpi", rot, pairs)
            return torch.cat((out[..., 0], out[..., 1]), -1)

        return turn(q), turn(k)


def _rope_with(cls):
    def run(x, w_qkv, n_heads, start, n_new, base):
        handler = cls(x.shape[-1] // n_heads, base=base)
        return handler_attention(handler, x, w_qkv, n_heads, start=start, n_new=n_new)

    return run


class _PairLoopALiBi(ALiBiPositions):
    def bias(self, q_positions, k_positions):
        qs, ks = q_positions.tolist(), k_positions.tolist()
        out = torch.zeros(len(self.slopes), len(qs), len(ks))
        for i, m in enumerate(qs):
            for j, n in enumerate(ks):
                out[:, i, j] = -self.slopes * abs(m - n)
        return out


class _QueryLoopALiBi(ALiBiPositions):
    def bias(self, q_positions, k_positions):
        rows = [-self.slopes[:, None] * (k_positions - m).abs() for m in q_positions]
        return torch.stack(rows, 1)


class _Float64ALiBi(ALiBiPositions):
    def bias(self, q_positions, k_positions):
        return alibi_bias(self.slopes.double(), q_positions, k_positions).float()


def _alibi_with(cls):
    def run(x, w_qkv, n_heads, start, n_new):
        return handler_attention(cls(n_heads), x, w_qkv, n_heads, start=start, n_new=n_new)

    return run


ROPE_HANDLER_IMPLS = {
    "posref-like": ("sane", _rope_with(RoPEPositions)),
    "einsum rotation": ("sane", _rope_with(_EinsumRoPE)),
    "loop over positions": ("slow", _rope_with(_LoopRoPE)),
}

ALIBI_HANDLER_IMPLS = {
    "posref-like": ("sane", _alibi_with(ALiBiPositions)),
    "float64 bias": ("sane", _alibi_with(_Float64ALiBi)),
    "loop over queries": ("slow", _alibi_with(_QueryLoopALiBi)),
    "loop over pairs": ("slow", _alibi_with(_PairLoopALiBi)),
}

# ---------------------------------------------------------------------------------------------- causal_mean


def cm_cumsum(v):
    return v.cumsum(-2) / torch.arange(1, v.shape[-2] + 1, dtype=v.dtype)[:, None]


def cm_float64(v):
    return cm_cumsum(v.double()).to(v.dtype)


def cm_matrix(v):
    t = v.shape[-2]
    m = torch.tril(torch.ones(t, t, dtype=v.dtype))
    return (m / m.sum(-1, keepdim=True)) @ v


def cm_loop_positions(v):
    return torch.stack([v[..., : t + 1, :].mean(-2) for t in range(v.shape[-2])], -2)


def cm_running_loop(v):
    out, total = torch.empty_like(v), torch.zeros_like(v[..., 0, :])
    for t in range(v.shape[-2]):
        total = total + v[..., t, :]
        out[..., t, :] = total / (t + 1)
    return out


CAUSAL_MEAN_IMPLS = {
    "cumsum": ("sane", cm_cumsum),
    "float64 inside": ("sane", cm_float64),
    "(T, T) averaging matrix": ("sane", cm_matrix),
    "loop over positions (mean of a prefix)": ("slow", cm_loop_positions),
    "running sum in a Python loop": ("slow", cm_running_loop),
}


# 03's alibi_bias(slopes, q_positions, k_positions) -> (H, Tq, Tk)


def ab_broadcast(slopes, q, k):
    return -slopes[:, None, None] * (q[:, None] - k[None, :]).abs().to(slopes.dtype)


def ab_float64(slopes, q, k):
    return ab_broadcast(slopes.double(), q, k).to(slopes.dtype)


def ab_outer_abs(slopes, q, k):
    distance = torch.cdist(q[:, None].to(slopes.dtype), k[:, None].to(slopes.dtype), p=1)
    return torch.einsum("h,qk->hqk", -slopes, distance)


def ab_loop_queries(slopes, q, k):
    rows = [-slopes[:, None] * (q[i] - k).abs().to(slopes.dtype)[None, :] for i in range(q.shape[0])]
    return torch.stack(rows, 1)


def ab_loop_pairs(slopes, q, k):
    out = torch.empty(slopes.shape[0], q.shape[0], k.shape[0], dtype=slopes.dtype)
    for i in range(q.shape[0]):
        for j in range(k.shape[0]):
            out[:, i, j] = -slopes * abs(int(q[i]) - int(k[j]))
    return out


ALIBI_BIAS_IMPLS = {
    "broadcast": ("sane", ab_broadcast),
    "float64 inside": ("sane", ab_float64),
    "cdist + einsum": ("sane", ab_outer_abs),
    "loop over queries": ("slow", ab_loop_queries),
    "loop over query-key pairs": ("slow", ab_loop_pairs),
}


# 02's sinusoidal_pe(n_positions, dim, base=10000.0) -> (n_positions, dim) float32 on the CPU


def pe_slices(n, dim, base=10000.0):
    """The notebook's solution: an empty table filled by even and odd column slices."""
    omega = base ** (-2.0 * torch.arange(dim // 2, dtype=torch.float32) / dim)
    angles = torch.arange(n, dtype=torch.float32)[:, None] * omega
    pe = torch.empty(n, dim)
    pe[:, 0::2], pe[:, 1::2] = angles.sin(), angles.cos()
    return pe


def pe_float64(n, dim, base=10000.0):
    omega = base ** (-2.0 * torch.arange(dim // 2, dtype=torch.float64) / dim)
    angles = torch.outer(torch.arange(n, dtype=torch.float64), omega)
    return torch.stack((angles.sin(), angles.cos()), -1).flatten(-2).float()


def pe_exp_log(n, dim, base=10000.0):
    """The annotated Transformer's div_term: exp(2i * -log(base) / dim)."""
    div = torch.exp(torch.arange(0, dim, 2, dtype=torch.float32) * (-math.log(base) / dim))
    angles = torch.arange(n, dtype=torch.float32).unsqueeze(1) * div
    return torch.cat((angles.sin()[..., None], angles.cos()[..., None]), -1).reshape(n, dim)


def pe_numpy(n, dim, base=10000.0):
    angles = np.arange(n)[:, None] / base ** (np.arange(0, dim, 2) / dim)[None, :]
    pe = np.empty((n, dim))
    pe[:, 0::2], pe[:, 1::2] = np.sin(angles), np.cos(angles)
    return torch.from_numpy(pe).float()


def pe_loop_pairs(n, dim, base=10000.0):
    """One column pair at a time (dim / 2 iterations, each on every position)."""
    positions, pe = torch.arange(n, dtype=torch.float32), torch.empty(n, dim)
    for i in range(dim // 2):
        angle = positions * base ** (-2 * i / dim)
        pe[:, 2 * i], pe[:, 2 * i + 1] = angle.sin(), angle.cos()
    return pe


def pe_loop_positions(n, dim, base=10000.0):
    """One row at a time."""
    omega = base ** (-2.0 * torch.arange(dim // 2, dtype=torch.float32) / dim)
    rows = [torch.stack(((p * omega).sin(), (p * omega).cos()), -1).flatten() for p in range(n)]
    return torch.stack(rows)


def pe_math_loops(n, dim, base=10000.0):
    """The textbook double loop with math.sin and math.cos, into a nested list."""
    rows = []
    for p in range(n):
        row = []
        for i in range(dim // 2):
            angle = p / base ** (2 * i / dim)
            row += [math.sin(angle), math.cos(angle)]
        rows.append(row)
    return torch.tensor(rows, dtype=torch.float32)


def pe_element_loops(n, dim, base=10000.0):
    """The double loop writing each element into a tensor."""
    pe = torch.zeros(n, dim)
    for p in range(n):
        for i in range(dim // 2):
            angle = p / base ** (2 * i / dim)
            pe[p, 2 * i] = math.sin(angle)
            pe[p, 2 * i + 1] = math.cos(angle)
    return pe


SINUSOIDAL_PE_IMPLS = {
    "column slices (the notebook's)": ("sane", pe_slices),
    "float64 inside": ("sane", pe_float64),
    "exp-log frequencies": ("sane", pe_exp_log),
    "numpy": ("sane", pe_numpy),
    "loop over pairs (dim / 2 columns)": ("sane", pe_loop_pairs),
    "loop over positions": ("slow", pe_loop_positions),
    "math.sin double loop": ("slow", pe_math_loops),
    "element-wise double loop": ("slow", pe_element_loops),
}


# 03's t5_bucket(relative_position, bidirectional=True, num_buckets=32, max_distance=128) -> int64, same shape


def tb_where(rel, bidirectional=True, num_buckets=32, max_distance=128):
    """The notebook's solution."""
    rel = rel.long()
    bucket = torch.zeros_like(rel)
    if bidirectional:
        num_buckets //= 2
        bucket += (rel > 0).long() * num_buckets
        dist = rel.abs()
    else:
        dist = (-rel).clamp(min=0)
    max_exact = num_buckets // 2
    log_part = torch.log(dist.float().clamp(min=1) / max_exact) / math.log(max_distance / max_exact)
    far = (max_exact + (log_part * (num_buckets - max_exact)).long()).clamp(max=num_buckets - 1)
    return bucket + torch.where(dist < max_exact, dist, far)


def tb_float64(rel, bidirectional=True, num_buckets=32, max_distance=128):
    rel = rel.long()
    half = num_buckets // 2 if bidirectional else num_buckets
    offset = (rel > 0).long() * half if bidirectional else 0
    dist = rel.abs() if bidirectional else (-rel).clamp(min=0)
    exact = half // 2
    log_part = torch.log(dist.double().clamp(min=1) / exact) / math.log(max_distance / exact)
    far = torch.minimum(exact + (log_part * (half - exact)).long(), torch.tensor(half - 1))
    return offset + torch.where(dist < exact, dist, far)


def tb_bucketize(rel, bidirectional=True, num_buckets=32, max_distance=128):
    """The rule tabulated once for the distances 0 .. max_distance, then looked up."""
    rel = rel.long()
    half = num_buckets // 2 if bidirectional else num_buckets
    offset = (rel > 0).long() * half if bidirectional else 0
    dist = rel.abs() if bidirectional else (-rel).clamp(min=0)
    exact = half // 2
    # the bucket of every distance 0 .. max_distance, once; distances beyond share the last one
    d = torch.arange(max_distance + 1)
    rule = (
        exact
        + (torch.log(d.float().clamp(min=1) / exact) / math.log(max_distance / exact) * (half - exact)).long()
    )
    rule = torch.where(d < exact, d, rule.clamp(max=half - 1))
    return offset + rule[dist.clamp(max=max_distance)]


def _scalar_bucket(r, bidirectional, num_buckets, max_distance):
    bucket = 0
    if bidirectional:
        num_buckets //= 2
        bucket = num_buckets if r > 0 else 0
        n = abs(r)
    else:
        n = max(-r, 0)
    max_exact = num_buckets // 2
    if n < max_exact:
        return bucket + n
    far = max_exact + int(
        math.log(n / max_exact) / math.log(max_distance / max_exact) * (num_buckets - max_exact)
    )
    return bucket + min(far, num_buckets - 1)


def tb_loop_rows(rel, bidirectional=True, num_buckets=32, max_distance=128):
    """The vectorised rule one row (query) at a time."""
    return torch.stack([tb_where(row, bidirectional, num_buckets, max_distance) for row in rel])


def tb_loop_elements(rel, bidirectional=True, num_buckets=32, max_distance=128):
    """The scalar rule on every offset, through a nested list."""
    return torch.tensor([[_scalar_bucket(r, bidirectional, num_buckets, max_distance) for r in row]
                         for row in rel.tolist()])  # fmt: skip


T5_BUCKET_IMPLS = {
    "torch.where (the notebook's)": ("sane", tb_where),
    "float64 logarithm": ("sane", tb_float64),
    "lookup table": ("sane", tb_bucketize),
    "loop over rows": ("slow", tb_loop_rows),
    "loop over offsets (scalar rule)": ("slow", tb_loop_elements),
}


# 03's t5_learned_bias(weight, q_positions, k_positions, bidirectional=True, max_distance=128) -> (H, Tq, Tk)


def tlb_gather(weight, q, k, bidirectional=True, max_distance=128):
    """The notebook's solution."""
    buckets = tb_where(k[None, :] - q[:, None], bidirectional, weight.shape[0], max_distance)
    return weight[buckets].permute(2, 0, 1)


def tlb_embedding(weight, q, k, bidirectional=True, max_distance=128):
    buckets = tb_where(k[None, :] - q[:, None], bidirectional, weight.shape[0], max_distance)
    return F.embedding(buckets, weight).permute(2, 0, 1).contiguous()


def tlb_one_hot(weight, q, k, bidirectional=True, max_distance=128):
    """A (Tq, Tk, num_buckets) one-hot tensor times the table."""
    buckets = tb_where(k[None, :] - q[:, None], bidirectional, weight.shape[0], max_distance)
    return torch.einsum("qkb,bh->hqk", F.one_hot(buckets, weight.shape[0]).to(weight.dtype), weight)


def tlb_loop_heads(weight, q, k, bidirectional=True, max_distance=128):
    """The buckets once, then one head's lookup at a time."""
    buckets = tb_where(k[None, :] - q[:, None], bidirectional, weight.shape[0], max_distance)
    return torch.stack([weight[:, h][buckets] for h in range(weight.shape[1])])


def tlb_loop_heads_buckets(weight, q, k, bidirectional=True, max_distance=128):
    """One head at a time, the buckets computed again for each."""
    rows = []
    for h in range(weight.shape[1]):
        buckets = tb_where(k[None, :] - q[:, None], bidirectional, weight.shape[0], max_distance)
        rows.append(weight[:, h][buckets])
    return torch.stack(rows)


def tlb_loop_queries(weight, q, k, bidirectional=True, max_distance=128):
    """One query's row of buckets at a time."""
    rows = [weight[tb_where(k - m, bidirectional, weight.shape[0], max_distance)] for m in q]
    return torch.stack(rows).permute(2, 0, 1)


def tlb_loop_pairs(weight, q, k, bidirectional=True, max_distance=128):
    """The bucket of each query-key pair, one pair at a time."""
    out = torch.empty(weight.shape[1], q.shape[0], k.shape[0], dtype=weight.dtype)
    for i, m in enumerate(q.tolist()):
        for j, n in enumerate(k.tolist()):
            out[:, i, j] = weight[_scalar_bucket(n - m, bidirectional, weight.shape[0], max_distance)]
    return out


T5_LEARNED_BIAS_IMPLS = {
    "gather (the notebook's)": ("sane", tlb_gather),
    "F.embedding": ("sane", tlb_embedding),
    "one-hot product": ("sane", tlb_one_hot),
    "loop over heads": ("sane", tlb_loop_heads),
    "loop over heads, buckets per head": ("sane", tlb_loop_heads_buckets),
    "loop over queries": ("slow", tlb_loop_queries),
    "loop over query-key pairs": ("slow", tlb_loop_pairs),
}
