"""Shipped checkpoints: they load, reproduce their recorded evaluation, and the regeneration path works."""

import json

import pytest
import torch

from posref import cli
from posref.lab.checkpoints import (
    CHECKPOINT_DIR,
    CHECKPOINTS,
    EVAL_LENGTHS,
    checkpoint_info,
    load_checkpoint,
    save_checkpoint,
)
from posref.lab.evaluate import evaluate_lengths
from posref.lab.model import build_model
from posref.lab.tasks import load_char_corpus

pytestmark = pytest.mark.usefixtures("one_thread")  # see conftest


@pytest.mark.parametrize("name", list(CHECKPOINTS))
def test_shipped_checkpoint_reproduces_its_recorded_loss(name):
    info = checkpoint_info(name)
    model = load_checkpoint(name)
    assert info["config"]["positions"] == CHECKPOINTS[name]
    assert not model.training and next(model.parameters()).dtype == torch.float32
    log = info["log"]["loss"]
    assert len(log) == info["train"]["steps"] and sum(log[-50:]) < 0.8 * sum(log[:50])
    assert set(info["eval"]["lengths"]) == {str(T) for T in EVAL_LENGTHS}
    recorded = info["eval"]["lengths"]["64"]
    measured = evaluate_lengths(model, load_char_corpus().val, [64], train_len=64)[64]
    # same weights, same windows: equal up to kernel differences across machines
    assert measured["loss"] == pytest.approx(recorded["loss"], abs=0.01)
    assert measured["last_loss"] == pytest.approx(recorded["last_loss"], abs=0.01)
    assert recorded["loss"] < 2.6  # well below a unigram model of the text (3.11 nats/char on validation)


def test_shipped_learned_checkpoint_stops_at_its_table():
    model = load_checkpoint("learned")
    x = torch.zeros(1, 513, dtype=torch.long)
    with pytest.raises(IndexError, match="outside the learned table"):
        model(x)


def test_shipped_checkpoints_are_small():
    total = sum(p.stat().st_size for p in CHECKPOINT_DIR.iterdir())
    assert total < 4_000_000


def test_save_and_load_round_trip(tmp_path):
    model = build_model(96, {"method": "rope", "rope_base": 50.0}, seed=1)
    save_checkpoint(model, "mine", {"note": "test"}, tmp_path)
    loaded = load_checkpoint("mine", directory=tmp_path)
    assert json.loads((tmp_path / "mine.json").read_text())["note"] == "test"
    for (name, a), (_, b) in zip(model.state_dict().items(), loaded.state_dict().items(), strict=True):
        torch.testing.assert_close(b, a.half().float(), rtol=0, atol=0, msg=name)  # float16 storage
    with pytest.raises(FileNotFoundError, match="no checkpoint 'other'"):
        load_checkpoint("other", directory=tmp_path)


@pytest.mark.slow  # trains 3 steps and evaluates at 64..512: a few seconds on an idle 2-core machine
def test_regeneration_command_writes_a_reproducible_record(tmp_path, capsys):
    assert (
        cli.main(
            [
                "train-checkpoints",
                "--out",
                str(tmp_path),
                "--methods",
                "nope",
                "--steps",
                "3",
                "--threads",
                "1",
            ]
        )
        == 0
    )
    assert "nope" in capsys.readouterr().out
    info = checkpoint_info("nope", tmp_path)
    assert len(info["log"]["loss"]) == 3 and info["train"]["steps"] == 3
    loaded = load_checkpoint("nope", directory=tmp_path)
    measured = evaluate_lengths(loaded, load_char_corpus().val, [128])[128]["loss"]
    assert measured == pytest.approx(info["eval"]["lengths"]["128"]["loss"], abs=1e-4)


def test_loading_refuses_weights_that_do_not_match_the_config(tmp_path):
    # a JSON edited (or a .pt swapped) so that config and weights disagree must not load with random weights
    save_checkpoint(build_model(96, "rope", seed=1), "mine", {}, tmp_path)
    meta = tmp_path / "mine.json"
    record = json.loads(meta.read_text())
    for change in ({"positions": {"method": "t5"}}, {"n_layers": 3}):
        meta.write_text(json.dumps({**record, "config": {**record["config"], **change}}))
        with pytest.raises(RuntimeError, match="Missing key"):
            load_checkpoint("mine", directory=tmp_path)


def test_the_recorded_evaluation_is_of_the_float16_weights_saved(tmp_path, monkeypatch):
    # the record must be reproducible from the file, so train_checkpoint evaluates the reloaded float16-rounded
    # weights, not the float32 weights still in memory (after a few steps the two differ below the record's
    # 4-decimal rounding, so look at the model that is evaluated)
    import posref.lab.checkpoints as checkpoints
    from posref.lab.train import TrainConfig

    evaluated = []

    def spy(model, *args, **kwargs):
        evaluated.append(model)
        return {T: {"loss": 0.0, "last_loss": 0.0} for T in args[1]}

    monkeypatch.setattr(checkpoints, "evaluate_lengths", spy)
    checkpoints.train_checkpoint("nope", tmp_path, cfg=TrainConfig(steps=2, lr=1e-2), progress=False)
    (model,) = evaluated
    assert not model.training
    rounded = load_checkpoint("nope", directory=tmp_path)
    for (name, a), (_, b) in zip(model.state_dict().items(), rounded.state_dict().items(), strict=True):
        torch.testing.assert_close(a, b, rtol=0, atol=0, msg=name)
