"""The lab's shipped checkpoints: one tiny decoder per position method, trained on characters at context 64.

Regenerate them all with (see data/README.md for the time it takes)::

    posref train-checkpoints          # writes data/checkpoints (a checkout), where load_checkpoint reads

Each checkpoint is ``<name>.pt`` (the state dict in float16) and ``<name>.json`` (the model config, the
training settings, the loss of every step, and the evaluation at 64/128/256/512 of the saved weights on the
validation text). Notebooks and grading call ``load_checkpoint(name)`` instead of retraining.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch

from posref._checks import check_choice
from posref.i18n import _
from posref.lab.evaluate import evaluate_lengths
from posref.lab.model import TinyDecoder, build_model
from posref.lab.tasks import DATA_DIR, lm_batch, load_char_corpus

if TYPE_CHECKING:
    from posref.lab.train import TrainConfig

CHECKPOINT_DIR = DATA_DIR / "checkpoints"
TRAIN_LEN = 64
EVAL_LENGTHS = (64, 128, 256, 512)

# name -> position spec. The learned table has 512 rows but only rows 0..63 are ever trained: rows 64..511
# keep their initialisation (so the model can be *run* to 512 and its failure seen); past 512 it is an error.
# RoPE base 50 with head_dim 16: pairs 5..7 of 8 never complete a turn within 64 positions (3/8, close to
# Llama's share at its own length), so the scaling methods of notebook 07 behave differently from each other.
CHECKPOINT_METHODS: dict[str, dict[str, Any]] = {
    "learned": {"method": "learned", "max_positions": 512},
    "sinusoidal": {"method": "sinusoidal"},
    "alibi": {"method": "alibi"},
    "t5": {"method": "t5"},
    "rope": {"method": "rope", "rope_base": 50.0},
    "nope": {"method": "nope"},
}
# Two layouts of today's models at the toy's size (notebook 08, section 7), each the RoPE recipe above with its second
# (last) layer left without rotation, as a NoPE layer closes every group of four layers in SmolLM3 and Llama 4:
# SmolLM3's, every layer attending over the whole context; Llama 4's, the RoPE layer attending only within chunks of
# 32 positions (its attention_chunk_size), so that it never meets a distance of 32 or more; and the control of the
# latter, RoPE in both layers, both chunked so.
LAYER_CHECKPOINTS: dict[str, dict[str, Any]] = {
    "rope_nope": {"method": "rope", "rope_base": 50.0, "no_rope_layers": [1, 0]},
    "rope_nope_chunked": {
        "method": "rope",
        "rope_base": 50.0,
        "no_rope_layers": [1, 0],
        "attention_chunk_size": 32,
    },
    "rope_chunked": {"method": "rope", "rope_base": 50.0, "attention_chunk_size": 32},
}
CHECKPOINTS = {**CHECKPOINT_METHODS, **LAYER_CHECKPOINTS}  # every shipped checkpoint: name -> position spec
MODEL_SIZES = {"d_model": 64, "n_layers": 2, "n_heads": 4}
BATCH_SIZE = 32


def _paths(name: str, directory: str | Path | None) -> tuple[Path, Path]:
    directory = Path(directory) if directory is not None else CHECKPOINT_DIR
    return directory / f"{name}.pt", directory / f"{name}.json"


def checkpoint_info(name: str, directory: str | Path | None = None) -> dict[str, Any]:
    """The JSON record of checkpoint ``name``: ``config``, ``train`` settings, ``log`` and ``eval``."""
    _weights, meta_path = _paths(name, directory)
    if not meta_path.exists():
        raise FileNotFoundError(
            _(
                "no checkpoint {name!r} in {parent}; expected one of {methods} (regenerate with `posref train-checkpoints --out {parent}`)"
            ).format(name=name, parent=meta_path.parent, methods=", ".join(CHECKPOINTS))
        )
    return json.loads(meta_path.read_text())


def load_checkpoint(
    name: str, device: torch.device | str | None = None, directory: str | Path | None = None
) -> TinyDecoder:
    """The trained ``TinyDecoder`` saved as ``name`` (float32 weights, eval mode) on ``device`` (CPU if None)."""
    info = checkpoint_info(name, directory)
    weights_path, _ = _paths(name, directory)
    model = TinyDecoder(**info["config"])
    state = torch.load(weights_path, map_location="cpu", weights_only=True)
    model.load_state_dict(state)  # float16 values are copied into the float32 parameters
    return model.to(device).eval()


def save_checkpoint(model: TinyDecoder, name: str, record: dict[str, Any], directory: str | Path) -> None:
    """Write ``model``'s weights in float16 and ``record`` (with the model config added) as JSON."""
    weights_path, meta_path = _paths(name, directory)
    weights_path.parent.mkdir(parents=True, exist_ok=True)
    state = {key: value.detach().to("cpu", torch.float16) for key, value in model.state_dict().items()}
    torch.save(state, weights_path)
    meta_path.write_text(json.dumps({"config": model.config(), **record}, indent=1) + "\n")


def train_checkpoint(
    name: str, directory: str | Path, *, cfg: TrainConfig | None = None, progress: bool = True
) -> dict[str, Any]:
    """Train, save, reload and evaluate the checkpoint ``name``; returns the record written to its JSON."""
    from posref.lab.train import (  # here, so that loading a checkpoint never imports training
        TrainConfig,
        train,
    )

    check_choice("checkpoint", name, tuple(CHECKPOINTS))
    cfg = cfg if cfg is not None else TrainConfig()
    corpus = load_char_corpus()
    model = build_model(corpus.vocab.size, CHECKPOINTS[name], seed=cfg.seed, **MODEL_SIZES)
    log = train(model, lambda g: lm_batch(corpus.train, BATCH_SIZE, TRAIN_LEN, g), cfg, progress=progress)
    record = {
        "train": {
            **cfg.as_dict(),
            "batch_size": BATCH_SIZE,
            "context": TRAIN_LEN,
            "corpus": "stdlib",
            "vocab": corpus.vocab.chars,
            "seconds": round(log["seconds"], 1),
            "threads": torch.get_num_threads(),
        },
        "log": {"loss": [round(v, 4) for v in log["loss"]]},
    }
    save_checkpoint(model, name, record, directory)
    # evaluate what was saved (float16-rounded weights), so the recorded numbers are reproducible from the file
    saved = load_checkpoint(name, directory=directory)
    results = evaluate_lengths(saved, corpus.val, EVAL_LENGTHS, train_len=TRAIN_LEN)
    record["eval"] = {
        "data": "validation split, 128 windows per length at seed 0 (posref.lab.tasks.lm_eval_batches)",
        "lengths": {
            str(T): {"loss": round(r["loss"], 4), "last_loss": round(r["last_loss"], 4)}
            for T, r in results.items()
        },
    }
    save_checkpoint(model, name, record, directory)
    return record


def add_train_checkpoints(subparsers: argparse._SubParsersAction) -> None:
    """Register ``posref train-checkpoints`` (the regeneration command) on ``posref.cli``'s subparsers."""
    parser = subparsers.add_parser("train-checkpoints", help="retrain the lab's shipped checkpoints")
    parser.add_argument("--out", type=Path, default=CHECKPOINT_DIR, help="directory to write <name>.pt/.json")
    parser.add_argument("--methods", nargs="+", default=list(CHECKPOINTS), choices=list(CHECKPOINTS))
    parser.add_argument("--steps", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--threads",
        type=int,
        default=1,
        help="torch threads (default 1: a second thread gains ~1.5x on an idle 2-core machine but loses "
        "several times that when the cores are shared)",
    )
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Train every requested checkpoint, printing one line per model; returns the exit status 0."""
    from posref.lab.train import TrainConfig

    torch.set_num_threads(args.threads)
    cfg = TrainConfig(steps=args.steps, seed=args.seed)
    start = time.perf_counter()
    for name in args.methods:
        record = train_checkpoint(name, args.out, cfg=cfg)
        losses = "  ".join(f"{T}: {r['loss']:.3f}" for T, r in record["eval"]["lengths"].items())
        print(f"{name:<11} {record['train']['seconds']:6.1f} s   loss {losses}", flush=True)
    print(f"total {time.perf_counter() - start:.0f} s")
    return 0
