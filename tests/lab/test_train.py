"""Training loop: the learning-rate schedule, weight-decay groups, loss going down, determinism."""

import math

import pytest
import torch

from posref.lab.model import build_model
from posref.lab.tasks import associative_recall_batch, lm_batch
from posref.lab.train import TrainConfig, lm_loss, lr_at, make_optimizer, train

pytestmark = pytest.mark.usefixtures("one_thread")  # see conftest


def test_lr_schedule_warmup_then_cosine_to_the_floor():
    cfg = TrainConfig(steps=200, lr=1e-3, warmup_frac=0.05, min_lr_ratio=0.1)
    lrs = [lr_at(s, cfg) for s in range(cfg.steps)]
    # 10 warm-up steps: lr * 1/10, 2/10, ..., 10/10
    assert lrs[:10] == pytest.approx([1e-3 * (i + 1) / 10 for i in range(10)])
    assert lrs[-1] == pytest.approx(1e-4)  # min_lr_ratio * lr at the last step
    assert all(a >= b for a, b in zip(lrs[9:], lrs[10:], strict=False))  # never rises after warm-up
    # halfway through the cosine part the rate is halfway between peak and floor
    middle = 9 + (cfg.steps - 1 - 10) / 2
    assert lr_at(math.ceil(middle), cfg) == pytest.approx(0.55e-3, abs=1e-5)


def test_weight_decay_only_on_matrices():
    model = build_model(11, "t5", d_model=16, n_heads=2)
    opt = make_optimizer(model, TrainConfig(weight_decay=0.1))
    decayed, plain = opt.param_groups
    assert decayed["weight_decay"] == 0.1 and plain["weight_decay"] == 0.0
    assert all(p.ndim >= 2 for p in decayed["params"]) and all(p.ndim == 1 for p in plain["params"])
    assert len(decayed["params"]) + len(plain["params"]) == len(list(model.parameters()))


def test_lm_loss_ignores_unscored_targets():
    logits = torch.zeros(1, 3, 4)
    logits[0, 1, 2] = 100.0  # a confident, correct prediction at position 1
    y = torch.tensor([[-100, 2, -100]])
    assert lm_loss(logits, y).item() == pytest.approx(0.0, abs=1e-6)
    y_all = torch.tensor([[0, 2, 1]])  # positions 0 and 2 are uniform: ln 4 each
    assert lm_loss(logits, y_all).item() == pytest.approx(2 * math.log(4) / 3, rel=1e-5)


@pytest.mark.parametrize("method", ["alibi", "rope"])
def test_a_few_steps_lower_the_loss(method):
    data = torch.arange(20_000) % 7  # a periodic stream: next token = (token + 1) mod 7, learnable fast
    model = build_model(7, method, seed=0, d_model=16, n_heads=2)
    held_out = lm_batch(data, 16, 24, torch.Generator().manual_seed(99))
    with torch.no_grad():
        before = lm_loss(model(held_out[0]), held_out[1]).item()
    log = train(model, lambda g: lm_batch(data, 16, 24, g), TrainConfig(steps=40, lr=3e-3), progress=False)
    with torch.no_grad():
        after = lm_loss(model(held_out[0]), held_out[1]).item()
    assert len(log["loss"]) == 40 and log["seconds"] > 0
    assert before == pytest.approx(math.log(7), abs=0.05)
    assert after < 0.5 * before
    assert sum(log["loss"][-5:]) < sum(log["loss"][:5])


def test_training_is_deterministic_with_a_seed_and_keeps_global_rng():
    def run(seed):
        model = build_model(13, "nope", seed=0, d_model=16, n_heads=2)
        batches = lambda g: associative_recall_batch(8, 3, 6, 6, g)  # noqa: E731
        return train(model, batches, TrainConfig(steps=5, seed=seed), progress=False)["loss"], model

    torch.manual_seed(0)
    expected = torch.rand(2)
    torch.manual_seed(0)
    (a, model_a), (b, model_b) = run(1), run(1)
    assert torch.equal(torch.rand(2), expected)
    assert a == b and torch.equal(model_a.head.weight, model_b.head.weight)
    assert run(2)[0] != a


def test_train_clips_the_gradient_norm_uses_the_betas_and_restores_the_mode(monkeypatch):
    # Adam's first step barely depends on the gradient's scale, so a missing clip would not show in the loss:
    # look at the gradients the optimizer is handed. Their global norm must be at most grad_clip.
    seen = []
    original_step = torch.optim.AdamW.step

    def step(self, *args, **kwargs):
        grads = [p.grad for group in self.param_groups for p in group["params"] if p.grad is not None]
        seen.append(
            (torch.linalg.vector_norm(torch.stack([g.norm() for g in grads])).item(), self.param_groups)
        )
        return original_step(self, *args, **kwargs)

    monkeypatch.setattr(torch.optim.AdamW, "step", step)
    model = build_model(7, "nope", seed=0, d_model=16, n_heads=2).eval()
    data = torch.arange(2_000) % 7
    cfg = TrainConfig(steps=3, grad_clip=1e-3, betas=(0.8, 0.9))
    train(model, lambda g: lm_batch(data, 4, 12, g), cfg, progress=False)
    assert len(seen) == 3 and all(norm <= 1e-3 * (1 + 1e-5) for norm, _ in seen)
    assert all(group["betas"] == (0.8, 0.9) for group in seen[0][1])
    assert not model.training  # it was in eval mode before training: left as found
    # sanity: unclipped gradients at initialisation are far larger than 1e-3
    model = build_model(7, "nope", seed=0, d_model=16, n_heads=2)
    x, y = lm_batch(data, 4, 12, torch.Generator().manual_seed(0))
    lm_loss(model(x), y).backward()
    assert torch.linalg.vector_norm(torch.stack([p.grad.norm() for p in model.parameters()])) > 1e-2
