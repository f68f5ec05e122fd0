"""A small, explicit training loop: AdamW, linear warm-up then cosine decay, weight decay, gradient clipping.

The defaults are the toy setting of the length-generalisation lab (a 2-layer, d_model 64 decoder trained on
characters at context 64): lr 1e-3, 5% warm-up, cosine to 0.1 x lr, weight decay 0.1 on matrices and
embeddings only, gradient norm clipped to 1.0 (the usual GPT recipe, e.g. nanoGPT and arXiv 2005.14165).

Nothing global is changed: batches come from a ``torch.Generator`` seeded with ``seed``, the model is trained on
whatever device it lives on, and the thread count is left to the caller.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass

import torch
import torch.nn.functional as F
from torch import nn
from tqdm.auto import tqdm

from posref._checks import check_positive_int
from posref.i18n import _
from posref.lab.tasks import IGNORE_INDEX

BatchFn = Callable[[torch.Generator], "tuple[torch.Tensor, torch.Tensor]"]


@dataclass(frozen=True)
class TrainConfig:
    """Optimisation settings; the batch shape belongs to the batch function."""

    steps: int = 2000
    lr: float = 1e-3
    warmup_frac: float = 0.05
    min_lr_ratio: float = 0.1
    weight_decay: float = 0.1
    grad_clip: float = 1.0
    betas: tuple[float, float] = (0.9, 0.95)
    seed: int = 0

    def as_dict(self) -> dict[str, float | int | list[float]]:
        return {
            key: list(value) if isinstance(value, tuple) else value for key, value in asdict(self).items()
        }


def lr_at(step: int, cfg: TrainConfig) -> float:
    """Learning rate of ``step`` (0-based): linear warm-up to ``lr``, then cosine down to ``min_lr_ratio * lr``."""
    warmup = max(1, round(cfg.warmup_frac * cfg.steps))
    if step < warmup:
        return cfg.lr * (step + 1) / warmup
    progress = (step - warmup) / max(1, cfg.steps - 1 - warmup)  # 0 after warm-up, 1 at the last step
    cosine = 0.5 * (1.0 + math.cos(math.pi * min(progress, 1.0)))
    return cfg.lr * (cfg.min_lr_ratio + (1.0 - cfg.min_lr_ratio) * cosine)


def make_optimizer(model: nn.Module, cfg: TrainConfig) -> torch.optim.AdamW:
    """AdamW with weight decay on parameters of 2 or more dims (matrices, embeddings); none on norms/biases."""
    params = [p for p in model.parameters() if p.requires_grad]
    decay = [p for p in params if p.ndim >= 2]
    no_decay = [p for p in params if p.ndim < 2]
    groups = [{"params": decay, "weight_decay": cfg.weight_decay}, {"params": no_decay, "weight_decay": 0.0}]
    return torch.optim.AdamW(groups, lr=cfg.lr, betas=cfg.betas)


def lm_loss(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Mean cross-entropy over scored positions: ``logits (B, T, V)``, ``targets (B, T)`` -> scalar (float32)."""
    return F.cross_entropy(logits.flatten(0, 1).float(), targets.flatten(), ignore_index=IGNORE_INDEX)


def train(
    model: nn.Module,
    get_batch: BatchFn,
    cfg: TrainConfig | None = None,
    *,
    progress: bool = True,
) -> dict[str, list[float] | float]:
    """Train ``model`` in place for ``cfg.steps`` steps on batches from ``get_batch(generator)``.

    ``get_batch`` returns ``(x, y)`` of shape ``(B, T)`` (e.g. ``lambda g: lm_batch(train_data, 32, 64, g)``);
    they are moved to the model's device. Returns a log: ``{"loss": [...], "lr": [...], "seconds": s}``, one
    loss per step (before that step's update).
    """
    cfg = cfg if cfg is not None else TrainConfig()
    check_positive_int("steps", cfg.steps)
    device = next(model.parameters()).device
    generator = torch.Generator().manual_seed(cfg.seed)
    optimizer = make_optimizer(model, cfg)
    log: dict[str, list[float] | float] = {"loss": [], "lr": []}
    was_training = model.training
    model.train()
    start = time.perf_counter()
    bar = tqdm(range(cfg.steps), disable=not progress, desc=_("train"), leave=False)
    for step in bar:
        lr = lr_at(step, cfg)
        for group in optimizer.param_groups:
            group["lr"] = lr
        x, y = (t.to(device) for t in get_batch(generator))
        loss = lm_loss(model(x), y)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), cfg.grad_clip)
        optimizer.step()
        log["loss"].append(loss.item())
        log["lr"].append(lr)
        if step % 50 == 0 or step == cfg.steps - 1:
            bar.set_postfix(loss=f"{loss.item():.3f}")
    bar.close()
    model.train(was_training)
    log["seconds"] = time.perf_counter() - start
    return log
