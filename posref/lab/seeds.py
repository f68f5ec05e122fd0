"""Seed records: the comparisons of notebooks 07b and 08 repeated over training seeds, so that a notebook can print,
beside one run's numbers, how far they move from one seed to the next. Regenerate (about 15 minutes a seed on
one thread of a laptop CPU; see data/README.md) with::

    posref seed-records --seeds 0 1 2     # writes data/seed_records.json, keeping the seeds already there

Seed ``k`` trains the RoPE and NoPE checkpoints' recipe (``posref.lab.checkpoints``, 2000 steps) with
``TrainConfig(seed=k)``, both the initial weights and the batches; seed 0 *is* the shipped checkpoints, loaded,
not retrained, so its records are what notebooks 07b and 08 print at their CPU defaults. On each seed's models it
runs, with ``posref.lab.experiments`` and the notebooks' CPU settings (``SETTINGS``):

* every test-time scaling method at ``s = T / L`` (``loss``), and four of them with one factor ``s = 4`` at the
  longest length (``one_factor``);
* LongRoPE's search for ``4L`` on training text, and its list at every length;
* PI ``s = 4`` fine-tuned at ``4L`` and the plain-RoPE control, the same steps on the same batches;
* NoPE from scratch, and DroPE: the RoPE model without its rotation, recalibrated at ``L``.

Every loss is the whole-window loss on the validation windows the notebooks read (``lm_eval_batches``, seed 0).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

import torch

from posref._checks import check_choice
from posref.i18n import _
from posref.lab.checkpoints import BATCH_SIZE, CHECKPOINT_METHODS, MODEL_SIZES, TRAIN_LEN, load_checkpoint
from posref.lab.evaluate import evaluate_lengths
from posref.lab.experiments import (
    fine_tune,
    longrope_objective,
    longrope_scaling,
    recalibrate,
    toy_scaling,
    with_scaling,
)
from posref.lab.model import TinyDecoder, build_model
from posref.lab.tasks import DATA_DIR, CharCorpus, lm_batch, load_char_corpus
from posref.longrope_search import longrope_search, seed_factors

SEED_RECORDS = DATA_DIR / "seed_records.json"
SETTINGS = {
    "train_steps": 2000,  # the checkpoints' recipe (seeds other than 0)
    "lengths": [64, 128, 256, 512],
    "n_windows": 64,  # validation windows per length, as notebooks 07, 07b and 08 read on a CPU
    "fine_tune_steps": 200,
    "recalibration_steps": 600,
    "search": {"population": 12, "generations": 6, "n_windows": 32, "seed": 0},
}
SCALED = (
    "PI",
    "NTK-aware",
    "NTK-by-parts",
    "YaRN",
)  # the test-time methods recorded (Dynamic NTK and Llama 3
# are NTK-aware and NTK-by-parts here: notebook 07b checks it)
PLAIN, LONGROPE = "RoPE (no scaling)", "LongRoPE (searched for 4L)"
PI_TUNED, CONTROL = "PI s=4 + fine-tune at 4L", "RoPE + fine-tune at 4L"
NOPE, DROPE = "NoPE (from scratch)", "DroPE"


def trained(name: str, seed: int, corpus: CharCorpus) -> TinyDecoder:
    """Checkpoint ``name``'s model for ``seed``: the shipped one for seed 0, else the same recipe trained with
    ``seed`` for ``SETTINGS["train_steps"]`` steps and rounded to float16 as a saved checkpoint is. In eval mode,
    on the CPU."""
    from posref.lab.train import TrainConfig, train  # here: reading records never imports training

    check_choice("checkpoint", name, tuple(CHECKPOINT_METHODS))
    if seed == 0:
        return load_checkpoint(name)
    model = build_model(corpus.vocab.size, CHECKPOINT_METHODS[name], seed=seed, **MODEL_SIZES)
    train(
        model,
        lambda g: lm_batch(corpus.train, BATCH_SIZE, TRAIN_LEN, g),
        TrainConfig(steps=SETTINGS["train_steps"], seed=seed),
        progress=False,
    )
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(p.half().float())
    return model.eval()


def seed_record(seed: int, corpus: CharCorpus | None = None) -> dict[str, Any]:
    """Every comparison of the module docstring for one seed -> ``{"loss": {name: {T: loss}}, "one_factor":
    {name: loss at the longest length}, "seconds": ...}`` (lengths as strings, as JSON keeps them)."""
    start = time.perf_counter()
    corpus = corpus if corpus is not None else load_char_corpus()
    lengths, T_long, T_target = SETTINGS["lengths"], SETTINGS["lengths"][-1], 4 * TRAIN_LEN

    def losses(model_at) -> dict[str, float]:
        return {
            str(T): round(
                evaluate_lengths(model_at(T), corpus.val, [T], n_windows=SETTINGS["n_windows"])[T]["loss"], 4
            )
            for T in lengths
        }

    rope, nope = trained("rope", seed, corpus), trained("nope", seed, corpus)
    loss = {PLAIN: losses(lambda T: rope)}
    for name in SCALED:
        loss[name] = losses(lambda T, name=name: with_scaling(rope, toy_scaling(T / TRAIN_LEN)[name]))
    one_factor = {  # one factor s = 4 (a target of 4L) at the longest length
        name: round(
            evaluate_lengths(
                with_scaling(rope, toy_scaling(4.0)[name]),
                corpus.val,
                [T_long],
                n_windows=SETTINGS["n_windows"],
            )[T_long]["loss"],
            4,
        )
        for name in SCALED
    }
    search = SETTINGS["search"]
    objective = longrope_objective(rope, corpus.train, T_target, n_windows=search["n_windows"])
    starts = seed_factors(
        rope.d_model // rope.n_heads, rope.position_spec["rope_base"], T_target / TRAIN_LEN, TRAIN_LEN
    )
    found = longrope_search(
        objective,
        starts,
        max_factor=2 * T_target / TRAIN_LEN,
        population=search["population"],
        generations=search["generations"],
        seed=search["seed"],
    )
    loss[LONGROPE] = losses(
        lambda T: with_scaling(rope, longrope_scaling(found.factors, T_target / TRAIN_LEN))
    )
    steps = SETTINGS["fine_tune_steps"]
    pi_tuned = with_scaling(rope, toy_scaling(4.0)["PI"])
    fine_tune(pi_tuned, corpus.train, T_target, steps, progress=False)
    control = with_scaling(rope, None)
    fine_tune(control, corpus.train, T_target, steps, progress=False)
    loss[PI_TUNED], loss[CONTROL] = losses(lambda T: pi_tuned), losses(lambda T: control)
    dropped = rope.with_positions("nope")
    recalibrate(dropped, corpus.train, SETTINGS["recalibration_steps"], progress=False)
    loss[NOPE], loss[DROPE] = losses(lambda T: nope), losses(lambda T: dropped)
    return {
        "loss": loss,
        "one_factor": one_factor,
        "longrope_factors": [round(float(f), 4) for f in found.factors],
        "seconds": round(time.perf_counter() - start, 1),
        "threads": torch.get_num_threads(),
    }


def load_seed_records(path: str | Path = SEED_RECORDS) -> dict[str, Any]:
    """The seed records written by ``posref seed-records`` (``data/seed_records.json`` by default)."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(
            _("no seed records at {path}; make them with `posref seed-records --out {path}`").format(
                path=path
            )
        )
    return json.loads(path.read_text())


def seed_values(records: dict[str, Any], name: str, length: int, *, table: str = "loss") -> torch.Tensor:
    """One comparison's loss at ``length`` for every seed of ``records`` -> ``(n_seeds,)`` float64, in seed order
    (``table="one_factor"``: the methods with ``s = 4``, at the longest length only)."""
    seeds = sorted(records["seeds"], key=int)
    try:
        if table == "one_factor":
            values = [records["seeds"][k]["one_factor"][name] for k in seeds]
        else:
            values = [records["seeds"][k][table][name][str(length)] for k in seeds]
    except KeyError as missing:
        raise KeyError(
            _("the seed records hold no {missing} for {name!r} at {length}").format(
                missing=missing, name=name, length=length
            )
        ) from None
    return torch.tensor(values, dtype=torch.float64)


def add_seed_records(subparsers: argparse._SubParsersAction) -> None:
    """Register ``posref seed-records`` on ``posref.cli``'s subparsers."""
    parser = subparsers.add_parser(
        "seed-records", help="repeat notebooks 07b and 08's comparisons over training seeds"
    )
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument(
        "--out", type=Path, default=SEED_RECORDS, help="the JSON file (seeds already in it are kept)"
    )
    parser.add_argument("--threads", type=int, default=1, help="torch threads (default 1, as the notebooks)")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Write the record of every requested seed into ``args.out`` as soon as it is done; exit status 0."""
    torch.set_num_threads(args.threads)
    records = (
        load_seed_records(args.out)
        if args.out.exists()
        else {
            "description": "notebooks 07b and 08's comparisons for several training seeds (posref.lab.seeds)",
            "command": "posref seed-records --seeds ...",
            "settings": SETTINGS,
            "seeds": {},
        }
    )
    if records.get("settings") != SETTINGS:
        raise ValueError(
            _("{path} was made with other settings; write to a new file (--out) or remove it").format(
                path=args.out
            )
        )
    corpus = load_char_corpus()
    for seed in args.seeds:
        records["seeds"][str(seed)] = seed_record(seed, corpus)
        records["seeds"] = dict(sorted(records["seeds"].items(), key=lambda item: int(item[0])))
        args.out.write_text(json.dumps(records, indent=1) + "\n")
        yarn = records["seeds"][str(seed)]["loss"]["YaRN"]
        print(f"seed {seed}: {records['seeds'][str(seed)]['seconds']:.0f} s, YaRN {yarn}", flush=True)
    return 0
