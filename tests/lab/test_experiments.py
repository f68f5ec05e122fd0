"""posref.lab.experiments: the length experiments of notebooks 07b and 08, shared with ``posref seed-records``."""

from __future__ import annotations

import pytest
import torch

import posref
from posref.lab.evaluate import per_position_loss
from posref.lab.experiments import (
    TOY_BETAS,
    fine_tune,
    longrope_objective,
    longrope_scaling,
    recalibrate,
    toy_scaling,
    with_scaling,
)
from posref.lab.model import build_model
from posref.lab.tasks import lm_eval_batches

STREAM = torch.arange(40_000) % 11  # a token stream any tiny model can read
SIZES = {"d_model": 16, "n_heads": 2, "n_layers": 1}


def rope_model(seed=0):
    return build_model(11, {"method": "rope", "rope_base": 50.0}, seed=seed, **SIZES).eval()


def test_toy_scaling_names_every_method_with_the_toy_betas_and_the_papers_ramp():
    family = toy_scaling(4.0)
    assert set(family) == {
        "PI",
        "NTK-aware",
        "Dynamic NTK",
        "NTK-by-parts",
        "YaRN",
        "YaRN (betas 32/1)",
        "Llama 3",
    }
    assert family["YaRN"]["ramp"] == family["YaRN (betas 32/1)"]["ramp"] == "ratio"
    assert {k: family["YaRN"][k] for k in TOY_BETAS} == TOY_BETAS == {"beta_fast": 4.0, "beta_slow": 1.0}
    plain = posref.rope_frequencies(16, base=50.0)[0]
    for name, scaling in family.items():  # every dict is one posref's registry accepts
        inv_freq, _ = posref.rope_frequencies(16, base=50.0, scaling=scaling, seq_len=256)
        assert inv_freq.shape == plain.shape and (inv_freq <= plain * (1 + 1e-6)).all(), name


def test_llama3_with_these_knobs_is_ntk_by_parts_and_yarn_is_it_with_a_temperature():
    family = toy_scaling(4.0)
    parts, parts_factor = posref.rope_frequencies(16, base=50.0, scaling=family["NTK-by-parts"])
    llama, _ = posref.rope_frequencies(16, base=50.0, scaling=family["Llama 3"])
    yarn, yarn_factor = posref.rope_frequencies(16, base=50.0, scaling=family["YaRN"])
    torch.testing.assert_close(llama, parts, rtol=1e-5, atol=1e-7)
    torch.testing.assert_close(yarn, parts, rtol=1e-5, atol=1e-7)
    assert parts_factor == 1.0 and yarn_factor == pytest.approx(1.1386, abs=1e-4)  # 0.1 ln 4 + 1


def test_with_scaling_keeps_the_weights_and_the_base_and_none_is_plain_rope():
    model, idx = rope_model(), torch.randint(0, 11, (2, 40), generator=torch.Generator().manual_seed(1))
    plain = with_scaling(model, None)
    assert plain.position_spec["rope_base"] == 50.0
    torch.testing.assert_close(plain(idx), model(idx))
    scaled = with_scaling(model, toy_scaling(2.0)["PI"])
    assert not torch.allclose(scaled(idx), model(idx))  # positions 1.. now turn at half the speed
    assert model.position_spec.get("rope_scaling") is None  # the model given is left alone


def test_longrope_scaling_uses_plain_rope_up_to_L_and_the_list_past_it():
    factors = torch.tensor([1.0, 1.5, 2.0, 3.0, 4.0, 5.0, 6.0, 8.0], dtype=torch.float64)
    scaling = longrope_scaling(factors, 4.0)
    assert scaling["short_factor"] == [1.0] * 8 and scaling["long_factor"] == factors.tolist()
    plain = posref.rope_frequencies(16, base=50.0)[0].double()
    short, attention = posref.rope_frequencies(16, base=50.0, scaling=scaling, seq_len=64)
    long, _ = posref.rope_frequencies(16, base=50.0, scaling=scaling, seq_len=65)
    torch.testing.assert_close(short.double(), plain, rtol=1e-6, atol=0)
    torch.testing.assert_close(long.double(), plain / factors, rtol=1e-6, atol=0)
    assert attention == pytest.approx(
        (1 + torch.log(torch.tensor(4.0)).item() / torch.log(torch.tensor(64.0)).item()) ** 0.5
    )


def test_longrope_objective_scores_the_given_text_at_the_target_length():
    model = rope_model()
    objective = longrope_objective(model, STREAM, 128, n_windows=4)
    ones = torch.ones(4, dtype=torch.float64)  # head dim 8: 4 pairs
    batches = lm_eval_batches(STREAM, 128, n_windows=4, batch_size=16, seed=1)
    expected = per_position_loss(with_scaling(model, longrope_scaling(ones, 2.0)), batches).mean().item()
    assert objective(ones) == pytest.approx(expected, rel=1e-6)
    other = longrope_objective(model, (STREAM * 7) % 11, 128, n_windows=4)
    assert other(ones) != pytest.approx(objective(ones))  # another text, another score


def test_fine_tune_is_seeded_leaves_eval_mode_and_recalibrate_is_it_at_the_training_length():
    a, b = rope_model(), rope_model()
    log_a = fine_tune(a, STREAM, 128, 3, progress=False)
    log_b = fine_tune(b, STREAM, 128, 3, progress=False)
    assert len(log_a) == 3 and log_a == log_b and not a.training
    for pa, pb in zip(a.parameters(), b.parameters(), strict=True):
        torch.testing.assert_close(pa, pb)
    c, d = rope_model(), rope_model()
    assert recalibrate(c, STREAM, 2, progress=False) == fine_tune(
        d, STREAM, 64, 2, lr=5e-4, seed=2, progress=False
    )


def test_fine_tune_without_progress_draws_no_progress_bar(capfd):
    """``progress=False`` reaches the training loop: ``posref seed-records`` asks for no bar (its log is one line a
    seed), and fine_tune drew one anyway."""
    fine_tune(rope_model(), STREAM, 128, 2, progress=False)
    assert capfd.readouterr().err == ""
    fine_tune(rope_model(), STREAM, 128, 2, progress=True)
    assert "0/2" in capfd.readouterr().err  # the bar, where asked for: what the first assertion would see
