"""Evaluation per position and per length, on models whose loss is known in closed form."""

import math

import pytest
import torch
from torch import nn

from posref.lab.evaluate import attention_entropy, evaluate_lengths, per_position_accuracy, per_position_loss
from posref.lab.model import build_model
from posref.lab.tasks import copy_batch, lm_eval_batches

V = 10


class Uniform(nn.Module):
    """Zero logits everywhere: cross-entropy ln(V) at every position."""

    def __init__(self):
        super().__init__()
        self.dummy = nn.Parameter(torch.zeros(()))

    def forward(self, idx):
        return self.dummy + torch.zeros(*idx.shape, V)


class NextTokenOracle(nn.Module):
    """For the stream ``arange % V``: certain of the right next token from position ``start`` on, uniform before."""

    def __init__(self, start=0):
        super().__init__()
        self.start = start
        self.dummy = nn.Parameter(torch.zeros(()))

    def forward(self, idx):
        logits = torch.zeros(*idx.shape, V)
        right = torch.nn.functional.one_hot((idx + 1) % V, V).float() * 100.0
        logits[:, self.start :] = right[:, self.start :]
        return logits + self.dummy


STREAM = torch.arange(50_000) % V


def test_uniform_model_has_loss_ln_vocab_everywhere():
    curve = per_position_loss(Uniform(), lm_eval_batches(STREAM, 37, n_windows=5, batch_size=2))
    assert curve.shape == (37,)
    torch.testing.assert_close(curve, torch.full((37,), math.log(V)), rtol=1e-6, atol=1e-6)


def test_per_position_curve_finds_where_a_model_breaks():
    curve = per_position_loss(NextTokenOracle(start=20), lm_eval_batches(STREAM, 30, n_windows=4))
    torch.testing.assert_close(curve[:20], torch.full((20,), math.log(V)), rtol=1e-6, atol=1e-6)
    assert curve[20:].abs().max() < 1e-6
    accuracy = per_position_accuracy(NextTokenOracle(start=20), lm_eval_batches(STREAM, 30, n_windows=4))
    assert (accuracy[20:] == 1).all()


def test_evaluate_lengths_whole_window_and_last_positions():
    # loss ln V before position 64 and 0 after: at T the whole-window mean is ln V * 64 / T and the
    # last-64 mean is 0 (for T >= 128), ln V at T = 64
    results = evaluate_lengths(NextTokenOracle(start=64), STREAM, [64, 128, 256], train_len=64, n_windows=8)
    assert set(results) == {64, 128, 256}
    for T, r in results.items():
        assert r["loss"] == pytest.approx(math.log(V) * 64 / T, rel=1e-5)
        assert r["per_position"].shape == (T,)
    assert results[64]["last_loss"] == pytest.approx(math.log(V), rel=1e-5)
    assert results[128]["last_loss"] == pytest.approx(0.0, abs=1e-6)


def test_ignored_targets_are_not_scored():
    batches = [copy_batch(8, 5, V - 1, torch.Generator().manual_seed(s)) for s in range(3)]
    curve = per_position_loss(Uniform(), batches)
    assert curve[:5].isnan().all()  # the prompt is never scored
    torch.testing.assert_close(curve[5:], torch.full((5,), math.log(V)), rtol=1e-6, atol=1e-6)


def test_evaluation_restores_training_mode_and_rejects_bad_batches():
    model = Uniform().train()
    per_position_loss(model, lm_eval_batches(STREAM, 8, n_windows=2))
    assert model.training
    mixed = lm_eval_batches(STREAM, 8, n_windows=2) + lm_eval_batches(STREAM, 9, n_windows=2)
    with pytest.raises(ValueError, match="one length"):
        per_position_loss(model, mixed)
    with pytest.raises(ValueError, match="empty"):
        per_position_loss(model, [])


class DropoutUniform(Uniform):
    """Uniform logits plus dropout on a constant: loss ln V in eval mode, something else in training mode."""

    def __init__(self):
        super().__init__()
        self.drop = nn.Dropout(0.5)

    def forward(self, idx):
        return super().forward(idx) + self.drop(torch.ones(*idx.shape, V).cumsum(-1))


def test_evaluation_runs_in_eval_mode():
    model = DropoutUniform().train()
    curve = per_position_loss(model, lm_eval_batches(STREAM, 8, n_windows=4))
    # in eval mode dropout is the identity and the logits 1..V shift every position alike: softmax of
    # 1..V at target t gives log(sum_j e^j) - (t + 1)
    targets = torch.stack([y for _, y in lm_eval_batches(STREAM, 8, n_windows=4)]).flatten(0, 1)  # (4, 8)
    expected = (torch.logsumexp(torch.arange(1.0, V + 1), 0) - (targets + 1).float()).mean(0)
    torch.testing.assert_close(curve, expected, rtol=1e-5, atol=1e-5)
    assert model.training


def _uniform_attention_model(method="nope"):
    """A TinyDecoder whose queries and keys are zero: every score 0, every query weighs its keys alike."""
    model = build_model(V, method, seed=0, d_model=16, n_heads=2)
    with torch.no_grad():
        for block in model.blocks:
            block.attn.qkv.weight[: 2 * 16] = 0.0  # the query and key rows of the stacked projection
    return model


@pytest.mark.parametrize("method", ["nope", "rope"])  # a rotation of zero vectors is still zero
def test_uniform_attention_has_the_entropy_ln_t_plus_1(method):
    T, last = 12, 5
    entropy = attention_entropy(_uniform_attention_model(method), STREAM, [T], last=last, n_windows=3)[T]
    expected = torch.log(torch.arange(T - last + 1, T + 1, dtype=torch.float64)).mean().item()
    assert entropy.shape == (2, 2)  # (layers, heads)
    torch.testing.assert_close(
        entropy, torch.full((2, 2), expected, dtype=torch.float32), rtol=1e-5, atol=1e-5
    )


def test_attention_entropy_against_a_one_key_softmax_by_hand():
    # ALiBi alone on zero queries and keys: query t weighs key j as softmax(-s_h (t - j)), in closed form
    model = _uniform_attention_model("alibi")
    T = 6
    entropy = attention_entropy(model, STREAM, [T], last=1, n_windows=2)[T]  # the last query, t = 5
    slopes = model.positions.slopes.double()
    p = torch.softmax(-slopes[:, None] * torch.arange(T - 1, -1, -1, dtype=torch.float64), -1)  # (H, T)
    expected = -(p * p.log()).sum(-1)
    torch.testing.assert_close(entropy, expected.float().expand(2, -1), rtol=1e-5, atol=1e-5)


def test_attention_entropy_is_zero_for_a_query_that_sees_one_key_and_rejects_bad_arguments():
    model = build_model(V, "rope", seed=0, d_model=16, n_heads=2).train()
    assert attention_entropy(model, STREAM, [1], n_windows=2)[1].abs().max() < 1e-6  # position 0 sees itself
    assert model.training  # restored
    with pytest.raises(ValueError, match="last"):
        attention_entropy(model, STREAM, [8], last=0)
