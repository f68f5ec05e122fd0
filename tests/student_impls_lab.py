"""Student-style implementations for the lab checkers (notebooks 06-08): correct ones written differently from
posref (no posref imports), and classic mistakes, each the way a student might write it."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

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


# ---------------------------------------------------------------- 07: scaling rules


def _plain(head_dim, base):
    return 1.0 / base ** (torch.arange(0, head_dim, 2, dtype=torch.float64) / head_dim)


def pi_inv_freq_float64(head_dim, base, factor):
    return _plain(head_dim, base) / factor


def pi_inv_freq_multiplies(head_dim, base, factor):
    return _plain(head_dim, base) * factor


def ntk_inv_freq_float64(head_dim, base, factor):
    return _plain(head_dim, base * factor ** (head_dim / (head_dim - 2)))


def ntk_inv_freq_base_times_factor(head_dim, base, factor):
    return _plain(head_dim, base * factor)


def _yarn_weights(head_dim, base, original_len, beta_fast, beta_slow):
    freqs = _plain(head_dim, base)
    turns = original_len * freqs / (2 * math.pi)
    return freqs, torch.clamp((turns - beta_slow) / (beta_fast - beta_slow), 0, 1)


def yarn_loop(head_dim, base, factor, original_len, beta_fast=32.0, beta_slow=1.0):
    """Correct (the paper's ramp, linear in turns), with a Python loop over pairs."""
    out = []
    for i in range(head_dim // 2):
        freq = base ** (-2 * i / head_dim)
        turns = original_len * freq / (2 * math.pi)
        gamma = min(1.0, max(0.0, (turns - beta_slow) / (beta_fast - beta_slow)))
        out.append((1 - gamma) * freq / factor + gamma * freq)
    return torch.tensor(out), 0.1 * math.log(factor) + 1.0


def yarn_library_style(head_dim, base, factor, original_len, beta_fast=32.0, beta_slow=1.0):
    """Correct (the library's ramp, linear in the pair index between floor/ceil of the correction dims)."""

    def dim_of(turns):
        return head_dim * math.log(original_len / (turns * 2 * math.pi)) / (2 * math.log(base))

    low = max(math.floor(dim_of(beta_fast)), 0)
    high = min(math.ceil(dim_of(beta_slow)), head_dim - 1)
    if low == high:
        high += 0.001
    ramp = ((torch.arange(head_dim // 2, dtype=torch.float64) - low) / (high - low)).clamp(0, 1)
    freqs = _plain(head_dim, base)
    return freqs / factor * ramp + freqs * (1 - ramp), 0.1 * math.log(factor) + 1.0


def yarn_inverted(head_dim, base, factor, original_len, beta_fast=32.0, beta_slow=1.0):
    freqs, gamma = _yarn_weights(head_dim, base, original_len, beta_fast, beta_slow)
    return gamma * freqs / factor + (1 - gamma) * freqs, 0.1 * math.log(factor) + 1.0


def yarn_no_temperature(head_dim, base, factor, original_len, beta_fast=32.0, beta_slow=1.0):
    freqs, gamma = _yarn_weights(head_dim, base, original_len, beta_fast, beta_slow)
    return (1 - gamma) * freqs / factor + gamma * freqs, 1.0


def llama3_loop(head_dim, base, factor, low_freq_factor, high_freq_factor, original_len):
    """Correct, written as Meta's reference code (a loop with three branches)."""
    out = []
    for freq in _plain(head_dim, base).tolist():
        wavelength = 2 * math.pi / freq
        if wavelength < original_len / high_freq_factor:
            out.append(freq)
        elif wavelength > original_len / low_freq_factor:
            out.append(freq / factor)
        else:
            smooth = (original_len / wavelength - low_freq_factor) / (high_freq_factor - low_freq_factor)
            out.append((1 - smooth) * freq / factor + smooth * freq)
    return torch.tensor(out)


def llama3_swapped_bands(head_dim, base, factor, low_freq_factor, high_freq_factor, original_len):
    out = []
    for freq in _plain(head_dim, base).tolist():
        wavelength = 2 * math.pi / freq
        if wavelength < original_len / high_freq_factor:
            out.append(freq / factor)
        elif wavelength > original_len / low_freq_factor:
            out.append(freq)
        else:
            smooth = (original_len / wavelength - low_freq_factor) / (high_freq_factor - low_freq_factor)
            out.append(smooth * freq / factor + (1 - smooth) * freq)
    return torch.tensor(out)


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
