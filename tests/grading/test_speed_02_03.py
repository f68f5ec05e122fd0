"""The speed checks of 02's ``sinusoidal_pe`` and 03's ``t5_bucket`` and ``t5_learned_bias``
(``posref.grading.speed.absolute``, ``posref.grading.speed.relative``): the notebook's solution passes, a classic
slow one fails, a function that goes wrong once timed is caught after the clock. Verdicts come from the checkers
with their documented budgets; no time is asserted here."""

from __future__ import annotations

import pytest
import torch
from student_impls_speed import (
    pe_float64,
    pe_loop_positions,
    pe_slices,
    tb_float64,
    tb_loop_rows,
    tb_where,
    tlb_gather,
    tlb_loop_queries,
)

from posref import t5_relative_position_bucket
from posref.grading.report import CheckFailed
from posref.grading.speed.absolute import check_sinusoidal_pe_speed
from posref.grading.speed.absolute import sinusoidal_pe as reference_pe
from posref.grading.speed.relative import (
    T5_MAX_DISTANCE,
    check_t5_bucket_speed,
    check_t5_learned_bias_speed,
    t5_bucket,
    t5_learned_bias,
)

CPU = torch.device("cpu")


def test_the_references_are_posrefs_functions():
    assert torch.allclose(reference_pe(37, 18, 500.0), __import__("posref").sinusoidal_pe(37, 18, base=500.0))
    rel = torch.arange(-700, 700)
    for both in (True, False):
        for distance in (T5_MAX_DISTANCE, 128):
            expected = t5_relative_position_bucket(rel, bidirectional=both, max_distance=distance)
            assert torch.equal(t5_bucket(rel, both, 32, distance), expected)
    weight, q, k = torch.randn(32, 3), torch.arange(5) + 40, torch.arange(9) + 36
    module = __import__("posref").T5RelativeBias(3, bidirectional=False)
    with torch.no_grad():
        module.embedding.weight.copy_(weight)
        assert torch.equal(t5_learned_bias(weight, q, k, False), module(q, k))


@pytest.mark.parametrize("bidirectional", [True, False])
def test_at_the_timed_max_distance_a_float64_logarithm_gives_the_same_buckets(bidirectional):
    # why the rounds verify buckets exactly: no distance sits near a boundary of the logarithmic buckets there
    rel = torch.arange(-5000, 5000)
    got = tb_float64(rel, bidirectional, 32, T5_MAX_DISTANCE)
    assert torch.equal(got, t5_bucket(rel, bidirectional, 32, T5_MAX_DISTANCE))


def test_sinusoidal_pe_speed_passes_the_notebooks_table_and_fails_a_loop_over_positions():
    # the table is the CPU's: a device given is not where it is timed (no CUDA is needed for this call)
    assert check_sinusoidal_pe_speed(pe_slices, device="cuda") > 0
    with pytest.raises(CheckFailed, match="sinusoidal_pe is too slow"):
        check_sinusoidal_pe_speed(pe_loop_positions)


def test_sinusoidal_pe_speed_asks_for_float32_before_timing():
    def in_float64(n, dim, base=10000.0):
        return pe_float64(n, dim, base).double()

    with pytest.raises(CheckFailed, match="float32 table.*torch.float64"):
        check_sinusoidal_pe_speed(in_float64)


def test_t5_bucket_speed_passes_the_notebooks_rule_and_fails_a_loop_over_rows():
    assert check_t5_bucket_speed(tb_where, device=CPU) > 0
    with pytest.raises(CheckFailed, match="t5_bucket is too slow"):
        check_t5_bucket_speed(tb_loop_rows, device=CPU)


def test_t5_bucket_speed_catches_buckets_wrong_after_the_clock():
    calls = []

    def lazy(rel, bidirectional=True, num_buckets=32, max_distance=128):
        calls.append(1)
        right = tb_where(rel, bidirectional, num_buckets, max_distance)
        return right if len(calls) < 40 else (right + 1) % num_buckets

    with pytest.raises(CheckFailed, match="wrong result while being timed"):
        check_t5_bucket_speed(lazy, device=CPU)


def test_t5_learned_bias_speed_passes_one_lookup_and_fails_a_loop_over_queries():
    assert check_t5_learned_bias_speed(tlb_gather, device=CPU) > 0
    with pytest.raises(CheckFailed, match="t5_learned_bias is too slow"):
        check_t5_learned_bias_speed(tlb_loop_queries, device=CPU)
