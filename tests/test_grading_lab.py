"""The lab checkers (notebooks 06-08) accept the reference and correct code written differently, and reject each
classic mistake with the hint that names it."""

from __future__ import annotations

import pytest
import torch

import posref
from posref.evaluate import per_position_loss
from posref.grading import CheckFailed, lab
from tests import student_impls_lab as s


def _reference_loss(logits, targets):
    """posref.evaluate's own function, reached through a module that replays the logits."""

    class Fixed(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.p = torch.nn.Parameter(torch.zeros(()))

        def forward(self, x):
            return logits

    return per_position_loss(Fixed(), [(targets, targets)])


def _posref_yarn(d, b, s_, L, beta_fast=32.0, beta_slow=1.0):
    scaling = {
        "rope_type": "yarn",
        "factor": s_,
        "original_max_position_embeddings": L,
        "beta_fast": beta_fast,
        "beta_slow": beta_slow,
    }
    return posref.rope_frequencies(d, base=b, scaling=scaling)


CORRECT = [
    (lab.check_per_position_loss, _reference_loss),
    (lab.check_per_position_loss, s.per_position_loss_logsumexp),
    (
        lab.check_pi_inv_freq,
        lambda d, b, f: posref.rope_frequencies(d, base=b, scaling={"rope_type": "linear", "factor": f})[0],
    ),
    (lab.check_pi_inv_freq, s.pi_inv_freq_float64),
    (lab.check_ntk_inv_freq, s.ntk_inv_freq_float64),
    (lab.check_yarn_frequencies, _posref_yarn),
    (lab.check_yarn_frequencies, s.yarn_loop),
    (lab.check_yarn_frequencies, s.yarn_library_style),
    (lab.check_llama3_inv_freq, s.llama3_loop),
    (lab.check_causal_mean, s.causal_mean_tril),
]


@pytest.mark.parametrize("hidden", [False, True], ids=["visible", "hidden"])
@pytest.mark.parametrize(("check", "fn"), CORRECT, ids=lambda v: getattr(v, "__name__", "")[:40])
def test_correct_implementations_pass(check, fn, hidden):
    check(fn, hidden=hidden)


MISTAKES = [
    (lab.check_per_position_loss, s.per_position_loss_divides_by_batch, "divide each position's sum"),
    (lab.check_per_position_loss, s.per_position_loss_bits, "nats"),
    (lab.check_pi_inv_freq, s.pi_inv_freq_multiplies, "multiplying speeds"),
    (lab.check_ntk_inv_freq, s.ntk_inv_freq_base_times_factor, "factor ** (d / (d - 2))"),
    (lab.check_ntk_inv_freq, s.pi_inv_freq_float64, "that is Position Interpolation"),
    (lab.check_yarn_frequencies, s.yarn_inverted, "wrong way round"),
    (lab.check_yarn_frequencies, s.yarn_no_temperature, "attention factor is missing"),
    (lab.check_llama3_inv_freq, s.llama3_swapped_bands, "wrong way round"),
    (lab.check_causal_mean, s.causal_mean_full, "mask is missing"),
    (lab.check_causal_mean, s.causal_mean_off_by_one, "not t"),
]


@pytest.mark.parametrize("hidden", [False, True], ids=["visible", "hidden"])
@pytest.mark.parametrize(("check", "fn", "hint"), MISTAKES, ids=lambda v: getattr(v, "__name__", "")[:40])
def test_mistakes_fail_with_their_hint(check, fn, hint, hidden):
    with pytest.raises(CheckFailed, match="hint:.*" + __import__("re").escape(hint)):
        check(fn, hidden=hidden)


def test_a_stub_fails_and_says_it_raised():
    def stub(*args):
        raise NotImplementedError()

    for check in (lab.check_per_position_loss, lab.check_pi_inv_freq, lab.check_causal_mean):
        with pytest.raises(CheckFailed, match="raised NotImplementedError"):
            check(stub)


def test_the_loss_reference_scores_only_real_targets():
    """Independent derivation: for uniform logits every scored target costs ln V, whatever is ignored."""
    logits = torch.zeros(3, 4, 5)
    targets = torch.tensor([[1, -100, 2, 3], [-100, -100, 0, 4], [2, 2, -100, 1]])
    curve = lab._per_position_reference(logits, targets)
    torch.testing.assert_close(curve, torch.full((4,), torch.log(torch.tensor(5.0)).item()))


def test_causal_mean_recovers_position_from_a_marker():
    """NoPE's counting trick: a value of 1 on the first token only gives 1 / (t + 1) at position t."""
    v = torch.zeros(6, 1)
    v[0] = 1.0
    out = lab._causal_uniform(v)[:, 0]
    torch.testing.assert_close(out, 1.0 / torch.arange(1, 7, dtype=torch.float32))
