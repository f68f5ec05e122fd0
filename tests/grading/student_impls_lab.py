"""Student-style implementations for the lab checkers (notebooks 06-08): correct ones written differently from
posref (no posref imports but the handler interface and its harness), and classic mistakes, each the way a student might write it."""

from __future__ import annotations

import copy
import math

import torch
import torch.nn.functional as F

from posref.grading.checks.lab import run_drop
from posref.lab import PositionHandler, handler_attention

# ---------------------------------------------------------------- 06: loss per position


def per_position_loss_logsumexp(logits, targets):
    """Correct: -logit[target] + logsumexp, masked sums divided by counts, in float64."""
    scored = targets != -100
    safe = torch.where(scored, targets, torch.zeros_like(targets))
    lse = torch.logsumexp(logits.double(), dim=-1)
    picked = logits.double().gather(-1, safe[..., None])[..., 0]
    loss = (lse - picked) * scored
    return (loss.sum(0) / scored.sum(0)).float()


def per_position_loss_divides_by_batch(logits, targets):
    loss = F.cross_entropy(logits.transpose(1, 2), targets, reduction="none")
    return loss.mean(0)


def per_position_loss_bits(logits, targets):
    return per_position_loss_logsumexp(logits, targets) / math.log(2)


def per_position_loss_float32(logits, targets):
    """Correct: upcast to float32 first, cross_entropy with ignore_index, counts per position."""
    loss = F.cross_entropy(logits.float().transpose(1, 2), targets, reduction="none", ignore_index=-100)
    scored = (targets != -100).float()
    return loss.sum(0) / scored.sum(0)


def per_position_loss_in_half(logits, targets):
    """Right formula in the logits' own precision (bfloat16/float16 in, float32 out): the text asks for float32."""
    scored = targets != -100
    log_probs = torch.log_softmax(
        logits, dim=-1
    )  # no upcast: bfloat16 logits give bfloat16 log-probabilities
    picked = log_probs.gather(-1, targets.clamp(min=0)[..., None])[..., 0]
    return (-(picked * scored).sum(0) / scored.sum(0)).float()


def per_position_loss_returns_half(logits, targets):
    """Right formula, cross_entropy on the logits as given: a bfloat16 result for bfloat16 logits."""
    loss = F.cross_entropy(logits.transpose(1, 2), targets, reduction="none", ignore_index=-100)
    return loss.sum(0) / (targets != -100).sum(0)


# ---------------------------------------------------------------- 07: YaRN with the paper's ramp


def yarn_paper_loop(head_dim, base, params, seq_len=None):
    """Correct: the paper's ramp (linear in turns within L), a Python loop over pairs, registry signature."""
    s, original_len = params["factor"], params["original_max_position_embeddings"]
    beta_fast, beta_slow = params.get("beta_fast", 32.0), params.get("beta_slow", 1.0)
    out = []
    for i in range(head_dim // 2):
        freq = base ** (-2 * i / head_dim)
        turns = original_len * freq / (2 * math.pi)
        gamma = min(1.0, max(0.0, (turns - beta_slow) / (beta_fast - beta_slow)))
        out.append((1 - gamma) * freq / s + gamma * freq)
    return torch.tensor(out), 0.1 * math.log(s) + 1.0


def yarn_index_ramp_untruncated(head_dim, base, params, seq_len=None):
    """Correct: the library's ramp, linear in the pair index between the pairs that turn beta_fast and beta_slow
    times within L, with those ends not rounded to whole pairs (transformers' truncate=False)."""
    s, original_len = params["factor"], params["original_max_position_embeddings"]
    beta_fast, beta_slow = params.get("beta_fast", 32.0), params.get("beta_slow", 1.0)

    def pair_turning(turns):  # the (fractional) pair index i at which L * base**(-2i/d) / (2 pi) == turns
        return head_dim * math.log(original_len / (turns * 2 * math.pi)) / (2 * math.log(base))

    low, high = max(pair_turning(beta_fast), 0.0), min(pair_turning(beta_slow), head_dim - 1.0)
    if high == low:
        high += 0.001
    interpolate = ((torch.arange(head_dim // 2, dtype=torch.float64) - low) / (high - low)).clamp(0, 1)
    freqs = base ** (-torch.arange(0, head_dim, 2, dtype=torch.float64) / head_dim)
    return interpolate * freqs / s + (1 - interpolate) * freqs, 0.1 * math.log(s) + 1.0


def yarn_paper_default_betas(head_dim, base, params, seq_len=None):
    """Wrong: the paper's ramp with beta_fast 32 and beta_slow 1 always, whatever params holds."""
    kept = {key: value for key, value in params.items() if key not in ("beta_fast", "beta_slow")}
    return yarn_paper_loop(head_dim, base, kept)


def yarn_ramp_inverted(head_dim, base, params, seq_len=None):
    """Wrong: fast pairs interpolated, slow pairs kept."""
    s, original_len = params["factor"], params["original_max_position_embeddings"]
    freqs = base ** (-torch.arange(0, head_dim, 2, dtype=torch.float64) / head_dim)
    gamma = ((original_len * freqs / (2 * math.pi) - 1.0) / 31.0).clamp(0, 1)
    return gamma * freqs / s + (1 - gamma) * freqs, 0.1 * math.log(s) + 1.0


# ---------------------------------------------------------------- 08: causal mean


def causal_mean_tril(v):
    """Correct: a lower-triangular averaging matrix."""
    t = v.shape[-2]
    weights = torch.tril(torch.ones(t, t, dtype=v.dtype, device=v.device))
    return (weights / weights.sum(-1, keepdim=True)) @ v


def causal_mean_full(v):
    return v.mean(-2, keepdim=True).expand_as(v).clone()


def causal_mean_off_by_one(v):
    n = torch.arange(v.shape[-2], device=v.device, dtype=v.dtype).clamp(min=1)
    return v.cumsum(-2) / n[:, None]


# ---------------------------------------------------------------- 06: position handlers of one's own


class RoPEComplex(PositionHandler):
    """Correct: RoPE in the half layout as a complex product, angles in float64."""

    def __init__(self, head_dim, base=10000.0):
        super().__init__()
        self.head_dim, self.base = head_dim, base

    def _turn(self, x, positions):
        r = self.head_dim // 2
        theta = self.base ** (-2.0 * torch.arange(r, dtype=torch.float64) / self.head_dim)
        angle = positions.double()[:, None] * theta.to(positions.device)  # (T, r)
        z = torch.complex(x[..., :r].double(), x[..., r:].double()) * torch.polar(
            torch.ones_like(angle), angle
        )
        return torch.cat((z.real, z.imag), dim=-1).to(x.dtype)

    def rotate(self, q, k, positions):
        return self._turn(q, positions), self._turn(k, positions)


class RoPERotatesTheTokens(RoPEComplex):
    """Mistake: the token embeddings are rotated (head by head), so the values are rotated too."""

    def embed(self, x, positions):
        B, T, C = x.shape
        heads = x.view(B, T, C // self.head_dim, self.head_dim).transpose(1, 2)
        return self._turn(heads, positions).transpose(1, 2).reshape(B, T, C)

    def rotate(self, q, k, positions):
        return q, k


class RoPECountsFromOne(RoPEComplex):
    """Mistake: positions 1..T whatever the positions given (off by one, and blind to the offset)."""

    def rotate(self, q, k, positions):
        own = torch.arange(1, q.shape[-2] + 1, device=q.device)
        return self._turn(q, own), self._turn(k, own)


class RoPEBackwards(RoPEComplex):
    """Mistake: the angles negated (the sine's sign flipped)."""

    def rotate(self, q, k, positions):
        return self._turn(q, -positions), self._turn(k, -positions)


def _alibi_slopes_loop(n):
    c = 1
    while 2 * c <= n:
        c *= 2
    slopes = [2.0 ** (-8.0 * h / c) for h in range(1, c + 1)]
    slopes += [2.0 ** (-8.0 * h / (2 * c)) for h in range(1, 2 * c + 1, 2)][: n - c]
    return slopes


class ALiBiLoop(PositionHandler):
    """Correct: ALiBi's bias built head by head."""

    def __init__(self, n_heads, sign=-1.0):
        super().__init__()
        self.slopes, self.sign = _alibi_slopes_loop(n_heads), sign

    def bias(self, q_positions, k_positions):
        distance = (q_positions[:, None] - k_positions[None, :]).abs().float()
        return torch.stack([self.sign * m * distance for m in self.slopes])


class ALiBiSignFlipped(ALiBiLoop):
    """Mistake: +slope * |i - j|, a bonus for far keys."""

    def __init__(self, n_heads):
        super().__init__(n_heads, sign=1.0)


class ALiBiCountsFromOne(ALiBiLoop):
    """Mistake: positions 1..Tq and 1..Tk whatever the positions given."""

    def bias(self, q_positions, k_positions):
        own = [torch.arange(1, p.numel() + 1, device=p.device) for p in (q_positions, k_positions)]
        return super().bias(*own)


def rope_attention(make):
    """The notebook's ``rope_handler_attention`` for a handler class ``make(head_dim, base)``."""

    def fn(x, w_qkv, n_heads, start, n_new, base):
        handler = make(x.shape[-1] // n_heads, base).to(x.device)
        return handler_attention(handler, x, w_qkv, n_heads, start=start, n_new=n_new)

    fn.__name__ = f"rope_attention_{make.__name__}"
    return fn


def alibi_attention(make):
    """The notebook's ``alibi_handler_attention`` for a handler class ``make(n_heads)``."""

    def fn(x, w_qkv, n_heads, start, n_new):
        handler = make(n_heads).to(x.device)
        return handler_attention(handler, x, w_qkv, n_heads, start=start, n_new=n_new)

    fn.__name__ = f"alibi_attention_{make.__name__}"
    return fn


# ---------------------------------------------------------------- 08: NoPE as a handler, DroPE's drop


class NoPEExplicit(PositionHandler):
    """Correct: every hook written out, a zero bias instead of None."""

    def embed(self, x, positions):
        return x

    def rotate(self, q, k, positions):
        return q, k

    def bias(self, q_positions, k_positions):
        return torch.zeros(1, q_positions.numel(), k_positions.numel(), device=q_positions.device)


def nope_attention(make):
    """The notebook's ``nope_handler_attention`` for a handler class ``make()``."""

    def fn(x, w_qkv, n_heads, start, n_new):
        return handler_attention(make().to(x.device), x, w_qkv, n_heads, start=start, n_new=n_new)

    fn.__name__ = f"nope_attention_{make.__name__}"
    return fn


def drop_copy(model):
    """Correct: a deep copy whose handler is replaced."""
    new = copy.deepcopy(model)
    new.positions = NoPEExplicit()
    return new


def drop_in_place(model):
    model.positions = NoPEExplicit()
    return model


def drop_keeps_rope(model):
    return copy.deepcopy(model)


def drop_and_run(drop):
    """The notebook's ``drop_and_run`` for a student's ``drop``."""

    def fn(*args):
        return run_drop(drop, *args)

    fn.__name__ = f"drop_and_run_{drop.__name__}"
    return fn
