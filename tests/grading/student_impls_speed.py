"""Student-style solutions of the functions with speed checks beyond apply_rope and attention (06's
``per_position_loss`` and handlers, 08's ``causal_mean``): sane vectorised ones and the classic slow ones, by
name -> (kind, function), for ``posref.bench --suite budgets`` and the speed tests. Each is correct."""

from __future__ import annotations

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
