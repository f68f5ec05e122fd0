"""posref.lab.seeds: the seed records notebooks 07b and 08 print (data/seed_records.json) and their command."""

from __future__ import annotations

import argparse
import json

import pytest
import torch

from posref.lab import seeds
from posref.lab.checkpoints import load_checkpoint
from posref.lab.evaluate import evaluate_lengths
from posref.lab.tasks import load_char_corpus

NAMES = {
    seeds.PLAIN, "PI", "NTK-aware", "NTK-by-parts", "YaRN", seeds.LONGROPE, seeds.PI_TUNED, seeds.CONTROL,
    seeds.NOPE, seeds.DROPE,
}  # fmt: skip


@pytest.fixture(scope="module")
def shipped():
    return seeds.load_seed_records()


def test_the_shipped_records_hold_every_comparison_for_every_seed_at_the_settings_they_name(shipped):
    assert shipped["settings"] == seeds.SETTINGS
    assert len(shipped["seeds"]) >= 3 and "0" in shipped["seeds"]
    for seed, record in shipped["seeds"].items():
        assert set(record["loss"]) == NAMES, seed
        for name, by_T in record["loss"].items():
            assert list(by_T) == [str(T) for T in seeds.SETTINGS["lengths"]], (seed, name)
        assert set(record["one_factor"]) == set(seeds.SCALED)


def test_seed_0_is_the_shipped_checkpoint(shipped):
    # an independent evaluation of the shipped RoPE model at T = 64, as the notebooks read it
    loss = evaluate_lengths(load_checkpoint("rope"), load_char_corpus().val, [64], n_windows=64)[64]["loss"]
    assert seeds.seed_values(shipped, seeds.PLAIN, 64)[0].item() == pytest.approx(loss, abs=1e-4)


def test_seed_values_are_in_seed_order_and_a_missing_entry_is_named():
    records = {"seeds": {"10": {"loss": {"A": {"64": 3.0}}}, "2": {"loss": {"A": {"64": 1.0}}}}}
    assert seeds.seed_values(records, "A", 64).tolist() == [1.0, 3.0]  # 2 before 10: numeric order
    with pytest.raises(KeyError, match="no '128' for 'A' at 128"):
        seeds.seed_values(records, "A", 128)


def test_missing_records_say_how_to_make_them(tmp_path):
    with pytest.raises(FileNotFoundError, match="posref seed-records"):
        seeds.load_seed_records(tmp_path / "none.json")


@pytest.mark.slow  # two tiny seeds end to end: a few seconds of training each
def test_the_command_writes_each_seed_keeps_the_others_and_refuses_other_settings(
    tmp_path, monkeypatch, capsys
):
    tiny = {
        "train_steps": 3,
        "lengths": [64, 128],
        "n_windows": 2,
        "fine_tune_steps": 2,
        "recalibration_steps": 2,
        "search": {"population": 4, "generations": 1, "n_windows": 2, "seed": 0},
    }
    monkeypatch.setattr(seeds, "SETTINGS", tiny)
    # run() sets the process's threads: not in the test's process
    monkeypatch.setattr(torch, "set_num_threads", lambda n: None)
    out = tmp_path / "records.json"
    seeds.run(argparse.Namespace(seeds=[2], out=out, threads=1))
    seeds.run(argparse.Namespace(seeds=[1], out=out, threads=1))
    written = json.loads(out.read_text())
    assert list(written["seeds"]) == ["1", "2"] and written["settings"] == tiny
    for record in written["seeds"].values():
        assert set(record["loss"]) == NAMES and all(list(v) == ["64", "128"] for v in record["loss"].values())
    assert (
        written["seeds"]["1"]["loss"]["YaRN"] != written["seeds"]["2"]["loss"]["YaRN"]
    )  # another seed, another model
    assert "seed 1:" in capsys.readouterr().out
    monkeypatch.setattr(seeds, "SETTINGS", {**tiny, "n_windows": 3})
    with pytest.raises(ValueError, match="other settings"):
        seeds.run(argparse.Namespace(seeds=[3], out=out, threads=1))
