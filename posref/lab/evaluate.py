"""Measure quality per position and per context length: where does a model trained at length L break?

Report three numbers per evaluation length T, as the lab does (the whole-window mean hides the cliff):

* ``loss``: mean over the whole window (positions ``0 .. T - 1``);
* ``last_loss``: mean over the last ``train_len`` positions only (the part that is new at length T);
* ``per_position``: the ``(T,)`` curve, mean over windows of the loss at each position.

Loss is cross-entropy in nats per token. Targets equal to ``IGNORE_INDEX`` are not scored.

``attention_entropy`` measures how spread out a model's attention is at each length (nats; ``ln(t + 1)`` for a
query at position ``t`` that weighs its ``t + 1`` keys alike): the quantity YaRN's temperature acts on
(arXiv 2309.00071, section 3.4).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import torch
import torch.nn.functional as F
from torch import nn

from posref._checks import check_positive_int
from posref.i18n import _
from posref.lab.tasks import IGNORE_INDEX, lm_eval_batches

Batches = Iterable["tuple[torch.Tensor, torch.Tensor]"]


def _device(model: nn.Module) -> torch.device:
    return next(model.parameters()).device


@torch.no_grad()
def _per_position_mean(model: nn.Module, batches: Batches, score) -> torch.Tensor:
    """Sum ``score(logits, y)`` (``(B, T)`` float32) over scored targets, per position -> ``(T,)`` means."""
    was_training = model.training
    model.eval()
    total = count = None
    try:
        for x, y in batches:
            x, y = x.to(_device(model)), y.to(_device(model))
            scored = y != IGNORE_INDEX  # (B, T)
            values = score(model(x).float(), y).masked_fill(~scored, 0.0)  # (B, T)
            if total is None:
                total, count = values.sum(0), scored.sum(0)
            elif values.shape[1] != total.shape[0]:
                raise ValueError(
                    _("all batches must have one length; got {first} and {other}").format(
                        first=total.shape[0], other=values.shape[1]
                    )
                )
            else:
                total, count = total + values.sum(0), count + scored.sum(0)
    finally:
        model.train(was_training)
    if total is None:
        raise ValueError(_("batches is empty"))
    return (total / count).cpu()  # positions never scored are nan


def per_position_loss(model: nn.Module, batches: Batches) -> torch.Tensor:
    """Mean cross-entropy (nats) at each position over ``batches`` of ``(x, y)`` -> ``(T,)`` float32 on the CPU.

    Every batch must have the same length ``T``; a position with no scored target gives nan.
    """

    def cross_entropy(logits: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        # (B, T, V) -> (B, V, T): cross_entropy wants classes in dim 1
        return F.cross_entropy(logits.transpose(1, 2), y.clamp(min=0), reduction="none")

    return _per_position_mean(model, batches, cross_entropy)


def per_position_accuracy(model: nn.Module, batches: Batches) -> torch.Tensor:
    """Fraction of correct greedy (argmax) predictions at each scored position -> ``(T,)`` float32 (nan where
    nothing is scored), e.g. for ``copy_batch`` or ``associative_recall_batch``."""
    return _per_position_mean(model, batches, lambda logits, y: (logits.argmax(-1) == y).float())


def evaluate_lengths(
    model: nn.Module,
    data: torch.Tensor,
    lengths: Sequence[int],
    *,
    train_len: int = 64,
    n_windows: int = 128,
    batch_size: int = 16,
    seed: int = 0,
) -> dict[int, dict[str, float | torch.Tensor]]:
    """Language-model loss of ``model`` on the token stream ``data`` at each context length in ``lengths``.

    For each ``T`` the model reads ``n_windows`` windows of ``T`` tokens at seeded offsets
    (``posref.lab.tasks.lm_eval_batches``; same seed, same windows for every model). Returns
    ``{T: {"loss": whole-window mean, "last_loss": mean of the last min(train_len, T) positions,
    "per_position": (T,) tensor}}``. A model that cannot run at ``T`` (a learned table too short) raises.
    """
    check_positive_int("train_len", train_len)
    results: dict[int, dict[str, float | torch.Tensor]] = {}
    for T in lengths:
        check_positive_int("length", T)
        batches = lm_eval_batches(data, T, n_windows=n_windows, batch_size=batch_size, seed=seed)
        curve = per_position_loss(model, batches)  # (T,)
        results[T] = {
            "loss": curve.mean().item(),
            "last_loss": curve[-train_len:].mean().item(),
            "per_position": curve,
        }
    return results


@torch.no_grad()
def attention_entropy(
    model: nn.Module,
    data: torch.Tensor,
    lengths: Sequence[int],
    *,
    last: int = 64,
    n_windows: int = 16,
    batch_size: int = 16,
    seed: int = 0,
) -> dict[int, torch.Tensor]:
    """Entropy of the attention weights of the last ``min(last, T)`` queries at each length -> ``{T: (n_layers,
    H)}`` float32 on the CPU, in nats, the mean over those queries and ``n_windows`` windows of ``data``.

    A query's entropy ``-sum_k p_k ln p_k`` over the keys it sees is 0 when it attends to one key and
    ``ln(t + 1)`` when it weighs all ``t + 1`` keys alike. ``model`` is a ``TinyDecoder`` (its forward fills
    ``attention_weights``); the windows are ``lm_eval_batches``', the same for every model.
    """
    check_positive_int("last", last)
    was_training = model.training
    model.eval()
    results: dict[int, torch.Tensor] = {}
    try:
        for T in lengths:
            check_positive_int("length", T)
            total, n = None, 0
            for x, _y in lm_eval_batches(data, T, n_windows=n_windows, batch_size=batch_size, seed=seed):
                layers: list[torch.Tensor] = []
                model(x.to(_device(model)), attention_weights=layers)
                p = torch.stack(layers)[..., -last:, :]  # (n_layers, B, H, q, T): the last queries
                entropy = -torch.special.xlogy(p, p).sum(-1)  # 0 ln 0 = 0 for the masked keys
                batch = entropy.mean(-1).sum(1)  # (n_layers, H), summed over the batch's windows
                total = batch if total is None else total + batch
                n += x.shape[0]
            results[T] = (total / n).cpu()
    finally:
        model.train(was_training)
    return results
