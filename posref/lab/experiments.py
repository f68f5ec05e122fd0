"""The length experiments of notebooks 07b and 08 as functions: the notebooks call them, and so does
``posref seed-records`` (``posref.lab.seeds``), which repeats them over training seeds.

* ``toy_scaling(s)``: every scaling method for the lab's RoPE model (base 50, trained at ``L = 64``) at a target
  of ``s * L`` tokens, as posref's registry names them, with the toy's betas 4/1 (notebook 07, section 2);
* ``fine_tune``: a short fine-tune at a longer length (07b, section 1: PI and its control);
* ``recalibrate``: DroPE's recalibration at the training length after the rotation is dropped (08, section 4);
* ``longrope_scaling`` / ``longrope_objective``: LongRoPE's factors as a scaling dict, and the loss its search
  minimises, on training text (07b, section 2).

Every function takes the model it changes or reads; none touches the global random state (training draws its
batches from a generator seeded by its own ``seed``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch
from torch import nn

from posref.lab.checkpoints import TRAIN_LEN
from posref.lab.evaluate import per_position_loss
from posref.lab.tasks import lm_batch, lm_eval_batches

ORIGINAL_LEN_KEY = "original_max_position_embeddings"
TOY_BETAS = {"beta_fast": 4.0, "beta_slow": 1.0}  # turns within 64 positions: notebook 07, section 2


def toy_scaling(s: float, original_len: int = TRAIN_LEN) -> dict[str, dict[str, Any]]:
    """Every scaling method for a target of ``s * original_len`` tokens -> ``{name: rope_scaling dict}``.

    YaRN and NTK-by-parts use the toy's betas 4/1 and the paper's ramp (linear in turns, ``ramp="ratio"``);
    Llama 3 with ``low_freq_factor`` 1 and ``high_freq_factor`` 4 is the same rule written in wavelengths.
    Dynamic NTK is given factor 1 (``alpha = max(1, T / L)``): it reads the length itself, not ``s``.
    """
    common = {"factor": s, ORIGINAL_LEN_KEY: original_len}
    return {
        "PI": {"rope_type": "linear", "factor": s},
        "NTK-aware": {"rope_type": "ntk", "factor": s},
        "Dynamic NTK": {"rope_type": "dynamic", "factor": 1.0, ORIGINAL_LEN_KEY: original_len},
        "NTK-by-parts": {"rope_type": "ntk_by_parts", **common, **TOY_BETAS},
        "YaRN": {"rope_type": "yarn", **common, **TOY_BETAS, "ramp": "ratio"},
        "YaRN (betas 32/1)": {"rope_type": "yarn", **common, "ramp": "ratio"},
        "Llama 3": {"rope_type": "llama3", **common, "low_freq_factor": 1.0, "high_freq_factor": 4.0},
    }


def with_scaling(model: nn.Module, scaling: dict[str, Any] | None) -> nn.Module:
    """A copy of a RoPE ``TinyDecoder`` (same weights, same base) whose rotation uses ``scaling`` (None: plain)."""
    return model.with_positions({**model.position_spec, "rope_scaling": scaling})


def fine_tune(
    model: nn.Module,
    data: torch.Tensor,
    length: int,
    steps: int,
    *,
    lr: float = 3e-4,
    seed: int = 1,
    progress: bool = True,
) -> list[float]:
    """Train ``model`` in place for ``steps`` steps on windows of ``length`` tokens of ``data`` -> the loss log.

    Each batch holds as many tokens as a training batch at the training length (``32 * 64 / length`` windows,
    at least one), so a step costs about what a training step cost; the same ``seed`` gives the same batches to
    every model (07b's PI and its control see the same text). The model is left in eval mode; ``progress``: a
    progress bar.
    """
    from posref.lab.train import TrainConfig, train  # here: importing the lab never imports training

    windows = max(1, 32 * TRAIN_LEN // length)
    log = train(
        model,
        lambda g: lm_batch(data, windows, length, g),
        TrainConfig(steps=steps, lr=lr, seed=seed),
        progress=progress,
    )
    model.eval()
    return log["loss"]


def recalibrate(
    model: nn.Module,
    data: torch.Tensor,
    steps: int,
    *,
    lr: float = 5e-4,
    seed: int = 2,
    progress: bool = True,
) -> list[float]:
    """DroPE's recalibration (arXiv 2512.12167): ``steps`` steps at the training length on ``data``, in place
    -> the loss log. The model is left in eval mode; ``progress``: a progress bar."""
    return fine_tune(model, data, TRAIN_LEN, steps, lr=lr, seed=seed, progress=progress)


def longrope_scaling(
    factors: Sequence[float] | torch.Tensor, s: float, original_len: int = TRAIN_LEN
) -> dict:
    """LongRoPE's scaling dict for ``factors`` (one per pair): the searched list past ``original_len``, plain
    RoPE (all ones) up to it, and ``factor`` ``s``, which sets the attention factor ``sqrt(1 + ln s / ln L)``."""
    factors = [float(f) for f in factors]
    return {
        "rope_type": "longrope",
        "short_factor": [1.0] * len(factors),
        "long_factor": factors,
        ORIGINAL_LEN_KEY: original_len,
        "factor": s,
    }


def longrope_objective(
    model: nn.Module, data: torch.Tensor, target_len: int, *, n_windows: int = 32, seed: int = 1
) -> Callable[[torch.Tensor], float]:
    """The loss LongRoPE's search minimises: ``factors -> `` the mean loss of ``model`` with those factors on
    ``n_windows`` fixed windows of ``target_len`` tokens of ``data`` (07b passes training text: choosing factors
    on the validation windows that are then reported would flatter the result)."""
    batches = lm_eval_batches(data, target_len, n_windows=n_windows, batch_size=16, seed=seed)
    s = target_len / TRAIN_LEN

    def objective(factors: torch.Tensor) -> float:
        return per_position_loss(with_scaling(model, longrope_scaling(factors, s)), batches).mean().item()

    return objective
