"""The speed checks of 06 and 08 (``posref.grading.speed.lab``) and the links their rounds use: every call gets an
input no call had, a wrong output anywhere near the end of a round is caught after the clock stops, and a sane
solution passes where the classic slow one fails (both by a wide margin; no time is asserted)."""

from __future__ import annotations

import math

import pytest
import torch
from student_impls_speed import cm_loop_positions, cm_matrix, ppl_log_softmax

from posref.grading.cases import Draw
from posref.grading.report import CheckFailed
from posref.grading.speed import lab as lab_speed
from posref.grading.speed.links import LINKS, starts
from posref.grading.speed.timing import Chain, seal

CPU = torch.device("cpu")


def test_a_sealed_round_goes_through_every_offset_before_one_repeats():
    # the step b of the offsets (a + i b) mod K is coprime to K: with a step sharing a factor with K, a round's
    # noise and checksum weights came back after K / gcd(b, K) calls (18 in one fresh-clone run), and a chain's
    # inputs with them (the test below failed for that); each seal draws b anew, so 300 seals cover many steps
    for _ in range(300):
        chain = seal(lab_speed.causal_mean_chain(Draw(hidden=True, device=CPU), (1, 1, 16, 2)))
        k = starts(chain.weights.numel(), chain.start.numel())
        a, b = chain.offsets
        assert math.gcd(b, k) == 1, (b, k)
        assert len({(a + i * b) % k for i in range(k)}) == k


def test_a_chain_never_repeats_an_input_even_where_the_function_has_a_fixed_point():
    # causal_mean of causal means settles on row 0 everywhere; the link keeps every input new
    chain = seal(lab_speed.causal_mean_chain(Draw(hidden=True, device=CPU), (1, 1, 16, 2)))
    seen = []
    chain.run(lambda v: (seen.append(v.clone()), lab_speed.causal_mean(v))[1], 200)
    assert len({tuple(v.flatten().tolist()) for v in seen}) == 200


@pytest.mark.parametrize("link", sorted(LINKS))
def test_every_link_moves_the_next_input_when_the_output_is_wrong(link):
    y = {"losses_to_logits": torch.rand(8) + 3, "heads_to_tokens": torch.randn(1, 2, 8, 4),
         "table_to_base": torch.rand(8, 4), "bias_to_slopes": -torch.rand(2, 8, 8),
         "buckets_to_offsets": torch.randint(0, 32, (8, 8)), "bias_to_weight": torch.randn(2, 8, 8),
         "square_fold": torch.randn(8, 4), "toward_start": torch.randn(8, 4),
         "rope_turn": torch.randn(2, 8, 4)}[link]  # fmt: skip
    start = {"losses_to_logits": torch.randn(2, 8, 5), "heads_to_tokens": torch.randn(1, 8, 8),
             "table_to_base": 10000.0, "bias_to_slopes": torch.rand(2), "buckets_to_offsets": torch.randint(-50, 50, (8, 8)),
             "bias_to_weight": torch.randn(32, 2), "square_fold": torch.randn(8, 4), "toward_start": torch.randn(8, 4),
             "rope_turn": (torch.randn(2, 8, 4), torch.rand(8, 2), torch.rand(8, 2))}[link]  # fmt: skip
    chain = seal(Chain(start, out_shape=tuple(y.shape), out_dtype=y.dtype, out_device=CPU))
    right = LINKS[link](y.clone(), chain, 3)
    wrong = LINKS[link](torch.zeros_like(y) if y.dtype.is_floating_point else y // 2, chain, 3)
    right, wrong = (
        torch.cat([torch.as_tensor(t).double().flatten() for t in (v if isinstance(v, tuple) else (v,))])
        for v in (right, wrong)
    )
    assert not torch.allclose(right, wrong, atol=1e-3)


def test_a_function_that_goes_wrong_after_its_first_calls_is_caught_after_the_clock():
    calls = []

    def lazy(v):
        calls.append(1)
        return lab_speed.causal_mean(v) if len(calls) < 40 else v.clone()  # right while checked, then not

    with pytest.raises(CheckFailed, match="wrong result while being timed"):
        lab_speed.check_causal_mean_speed(lazy, device=CPU)


def test_sane_solutions_pass_and_the_classic_slow_one_fails():
    assert lab_speed.check_causal_mean_speed(cm_matrix, device=CPU) > 0
    assert lab_speed.check_per_position_loss_speed(ppl_log_softmax, device=CPU) > 0
    with pytest.raises(CheckFailed, match="causal_mean is too slow"):
        lab_speed.check_causal_mean_speed(cm_loop_positions, device=CPU)


def test_alibi_bias_speed_passes_broadcasting_and_fails_a_loop_over_queries():
    from student_impls_speed import ab_broadcast, ab_loop_queries

    from posref.grading.speed.relative import check_alibi_bias_speed

    assert check_alibi_bias_speed(ab_broadcast, device=CPU) > 0
    with pytest.raises(CheckFailed, match="alibi_bias is too slow"):
        check_alibi_bias_speed(ab_loop_queries, device=CPU)


def test_alibi_bias_speed_catches_a_wrong_bias_after_the_clock():
    from student_impls_speed import ab_broadcast

    from posref.grading.speed.relative import check_alibi_bias_speed

    calls = []

    def lazy(slopes, q, k):
        calls.append(1)
        return ab_broadcast(slopes, q, k) * (1 if len(calls) < 40 else 2)

    with pytest.raises(CheckFailed, match="wrong result while being timed"):
        check_alibi_bias_speed(lazy, device=CPU)
