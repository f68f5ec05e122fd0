"""Speed budgets: the largest accepted ``student time / reference time`` (median of per-round ratios).

Every budget is a generous ratio, never an absolute time, measured on the same device in the same run
(``posref.grading.speed.timing.speed_ratio``). Each entry records the measurement that set it. A budget belongs to a
device type (a GPU launches kernels in microseconds and streams memory a hundred times faster than a CPU, so the
same code can sit at a very different ratio there) and to the input shape it was measured on.

The rule that turns measured ratios into a budget is ``propose_budget`` (``SANE_FACTOR`` and ``MARGIN``). A CPU
budget is the score of record's: ``python -m autograder.calibrate`` times the student-style implementations of the
tests as a graded speed cell times them (each in a sandboxed child, against the reference's child, every round
charged the CPU time of the child's processes pinned to one CPU), applies the rule and prints the line to paste here.
``python -m posref.bench --suite budgets`` does the same in its own process by wall clock, as a notebook kernel
times a check: how a GPU's budgets are to be measured, and a cross-check that the CPU budgets hold in a kernel too.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class Budget:
    """``max_ratio`` for inputs of ``shape``; ``provisional`` when it was not measured on its own device type."""

    max_ratio: float
    measured: str
    shape: tuple[int, ...] = (1, 8, 256, 64)
    provisional: bool = False


APPLY_ROPE_CPU = Budget(
    max_ratio=27.0,
    shape=(1, 8, 256, 64),
    measured=(
        "2-core shared CPU (load average 4-5: other sessions' tests), torch 2.13, 1 thread, x (1, 8, 256, 64) "
        "float32, against posref.apply_rope after its input checks stopped calling torch.broadcast_shapes (268 us "
        "per call; it was about 40% slower before, which flattered every student's ratio), timed as the check "
        "times it (11 rounds of chained calls on fresh inputs, about 50 ms of the reference per round), three "
        "medians each (python -m posref.bench --suite budgets): complex 3.0, 2.6, 2.7; rotate_half 3.5, 2.6, 3.0; "
        "einsum 8.9, 8.9, 11.3; float64 inside 7.3, 13.4, 8.8; matrix per position 228, 175, 205; loop over "
        "positions 132, 218, 136. ``propose_budget``: ceil(2 * 13.43) = 27, and the best slow median (132) is "
        "4.9x that. (Before: 20x, from sane medians up to 9.8 and slow ones from 93 against the slower reference.)"
    ),
)

# Not measured on a GPU yet: the CPU's ratio and shape, marked provisional (checker messages say so). At this
# shape a GPU mostly waits on kernel launches, so sane solutions stay well inside 12x, a Python loop over positions
# (hundreds of launches) fails, and a matrix per position may pass. Replace this one statement with the line that
# ``python -m posref.bench --device cuda --suite budgets`` prints.
APPLY_ROPE_CUDA = Budget(
    max_ratio=APPLY_ROPE_CPU.max_ratio,
    shape=APPLY_ROPE_CPU.shape,
    provisional=True,
    measured="not measured on CUDA: the CPU budget (ratio and shape) stands in until GPU figures exist",
)


def _for_device(cpu: Budget, cuda: Budget, device: torch.device | str) -> Budget:
    """``cpu`` or ``cuda`` by ``device``'s type; other types (``mps``, ...) have no measurement: they get the CPU
    budget marked provisional."""
    kind = torch.device(device).type
    if kind == "cpu":
        return cpu
    if kind == "cuda":
        return cuda
    return Budget(
        max_ratio=cpu.max_ratio,
        shape=cpu.shape,
        provisional=True,
        measured=f"not measured on {kind}: the CPU budget stands in",
    )


def apply_rope_budget(device: torch.device | str) -> Budget:
    """The ``apply_rope`` speed budget for ``device``'s type: measured on CPU; on CUDA see ``APPLY_ROPE_CUDA``."""
    return _for_device(APPLY_ROPE_CPU, APPLY_ROPE_CUDA, device)


ATTENTION_CPU = Budget(
    max_ratio=5.0,
    shape=(1, 2, 128, 16),
    measured=(
        "2-core shared CPU (load average 15-19), torch 2.13, 1 thread, q, k, v (1, 2, 128, 16) float32, causal "
        "alternating, against posref.scaled_dot_product_attention of main 5d58dfa, timed as check_apply_rope_speed "
        "(11 rounds of chained calls on fresh inputs), two medians each: matmul 0.79, 0.89; einsum 0.94, 0.64; "
        "float64 inside 2.08, 1.64; loop over queries (float64) 37.0, 28.2; loop over heads and queries 50.9, "
        "64.6. propose_budget: ceil(2 * 2.08) = 5, and 3 * 5 = 15 is below the best slow median (28.2). At (1, 4, "
        "128, 32), one median each: matmul 0.89, einsum 0.90, float64 inside 2.29, loop over queries 19.4, heads "
        "and queries 56.0 (separable, 1/3.9). At (1, 8, 256, 64) the loop over queries read 10.2 and 10.9 against "
        "float64 inside's 2.24 and 2.27: not separable (at larger shapes the products' own work hides the loop's "
        "per-query overhead), hence the small shape."
    ),
)

# Not measured on a GPU yet (as APPLY_ROPE_CUDA): replace with the line ``python -m posref.bench --device cuda
# --suite budgets`` prints.
ATTENTION_CUDA = Budget(
    max_ratio=ATTENTION_CPU.max_ratio,
    shape=ATTENTION_CPU.shape,
    provisional=True,
    measured="not measured on CUDA: the CPU budget (ratio and shape) stands in until GPU figures exist",
)


def attention_budget(device: torch.device | str) -> Budget:
    """01's ``attention`` speed budget (q, k, v all of ``shape``) for ``device``'s type."""
    return _for_device(ATTENTION_CPU, ATTENTION_CUDA, device)


def _provisional_cuda(cpu: Budget) -> Budget:
    """Not measured on a GPU yet (as APPLY_ROPE_CUDA): the CPU budget (ratio and shape) stands in."""
    return Budget(max_ratio=cpu.max_ratio, shape=cpu.shape, provisional=True,
                  measured="not measured on CUDA: the CPU budget (ratio and shape) stands in until GPU figures exist")  # fmt: skip


PER_POSITION_LOSS_CPU = Budget(
    max_ratio=3.0,
    shape=(4, 256, 32),
    measured=(
        "2-core shared CPU, torch 2.13, 1 thread, logits (4, 256, 32) float32 with a fifth of the targets ignored, "
        "against posref.grading.speed.lab.per_position_loss (F.cross_entropy per element, summed over the batch) + "
        "the linked rounds (logits rescaled per position by the previous losses), 11 rounds per median. "
        "calibrate_speed_check (python -m posref.bench --suite budgets --checks per_position_loss, load average "
        "10.5 -> 7.6), three medians each: log_softmax + gather 1.06, 1.00, 0.98; float64 inside 1.15, 1.16, 1.04; "
        "one-hot product 1.33, 1.32, 1.42; loop over positions 57.3, 67.6, 59.1; loop over (sequence, position) "
        "253, 236, 133 (cut short: lower bounds). The first run (load 2.8-4.7, one median each): 0.84, 1.17, 1.45; "
        "62.5, 195.6. propose_budget over both: ceil(2 * 1.45) = 3, 1/19.1 of the best slow median (57.3)."
    ),
)
PER_POSITION_LOSS_CUDA = _provisional_cuda(PER_POSITION_LOSS_CPU)


def per_position_loss_budget(device: torch.device | str) -> Budget:
    """06's ``per_position_loss`` (logits of ``shape`` ``(B, T, V)``)."""
    return _for_device(PER_POSITION_LOSS_CPU, PER_POSITION_LOSS_CUDA, device)


HANDLER_CPU = Budget(
    max_ratio=3.0,
    shape=(1, 4, 128, 16),
    measured=(
        "2-core shared CPU, torch 2.13, 1 thread, tokens (1, 128, 64) = 4 heads of 16, every token a query, "
        "positions from a random offset, against the same layer through posref's handler (posref.grading."
        "lab_speed) + the linked rounds (tokens plus the previous heads), 11 rounds per median. calibrate_speed_check "
        "(python -m posref.bench --suite budgets, load average 7.6 -> 5.1), three medians each. RoPE: posref-like "
        "0.80, 0.97, 0.82; einsum rotation 1.01, 0.91, 0.98; loop over positions 18.1, 15.7, 17.1. ALiBi: "
        "posref-like 0.95, 0.89, 1.02; float64 bias 1.10, 1.08, 0.96; loop over query-key pairs 196, 234, 401 (cut "
        "short: lower bounds); loop over queries 3.38, 3.67, 3.54. The first run (load 2.3-4.7, one median each): "
        "RoPE 0.80, 0.98, 31.2; ALiBi 1.13, 0.96, 345.5, loop over queries 4.98. propose_budget over every sane "
        "median and the loops over positions and pairs: ceil(2 * 1.13) = 3, 1/5.2 of the best slow median (15.7). "
        "ALiBi's loop over queries (one row of the bias per query, 128 rows) is not separable: it fails 3x by only "
        "1.13-1.22x in these runs (1.7x in the first), and no shape tried separates it (two medians each, load "
        "1.4-1.9: at (1, 2, 256, 8) 4.23, 4.52 against sane up to 1.28; at (1, 4, 64, 16) 3.40, 3.52 against 1.00): "
        "a row of the bias costs about what the attention it is added to costs. It may pass on a quieter run."
    ),
)
HANDLER_CUDA = _provisional_cuda(HANDLER_CPU)


def handler_budget(device: torch.device | str) -> Budget:
    """06's handlers through one attention layer (``shape`` = ``(B, H, T, D)`` of q and k)."""
    return _for_device(HANDLER_CPU, HANDLER_CUDA, device)


CAUSAL_MEAN_CPU = Budget(
    max_ratio=8.0,
    shape=(1, 8, 128, 16),
    measured=(
        "2-core shared CPU, torch 2.13, 1 thread, v (1, 8, 128, 16) float32, against posref.grading.speed.lab."
        "causal_mean (cumsum / counts, 31 us per call) + the linked rounds (each call on the previous output plus "
        "the round's v, in place), 11 rounds per median, calibrate_speed_check (load average 2.2 -> 5.5), three "
        "medians each: cumsum 1.02, 1.11, 1.10; float64 inside 1.38, 1.67, 1.59; (T, T) averaging matrix 3.36, "
        "3.63, 3.32; loop over positions (mean of each prefix) 43.2, 30.0, 38.7; running sum in a Python loop "
        "42.7, 46.3, 45.0. propose_budget: ceil(2 * 3.63) = 8, 1/3.7 of the best slow median (30.0). Before: 10x "
        "at (1, 8, 256, 16), from one median each (matrix 4.78, loops 48.0 and 66.3); re-measured there with "
        "python -m posref.bench --suite budgets (load 5.1 -> 1.8, three medians each) the matrix read 6.15, 6.41, "
        "7.04 (its T^2 work grows faster than the loops' T steps) and the loops 44.1-58.2: the rule's 15x would "
        "have been 1/2.9 of them, not separable, hence the shorter sequence. The link (one in-place add) dilutes "
        "every ratio towards 1 a little."
    ),
)
CAUSAL_MEAN_CUDA = _provisional_cuda(CAUSAL_MEAN_CPU)


def causal_mean_budget(device: torch.device | str) -> Budget:
    """08's ``causal_mean`` (``v`` of ``shape``)."""
    return _for_device(CAUSAL_MEAN_CPU, CAUSAL_MEAN_CUDA, device)


ALIBI_BIAS_CPU = Budget(
    max_ratio=4.0,
    shape=(4, 128, 128),
    measured=(
        "2-core shared CPU, torch 2.13, 1 thread, bias (4, 128, 128) float32, positions from random offsets, "
        "against posref.grading.speed.relative.alibi_bias (broadcast |m - n| times the slopes, 85-228 us per call "
        "with the link) + the linked rounds (slopes moved by the previous bias), 11 rounds per median. "
        "calibrate_speed_check (python -m posref.bench --suite budgets --checks alibi_bias, load average 5.5 -> "
        "10.5), three medians each: broadcast 1.01, 0.94, 1.08; float64 inside 1.49, 1.72, 1.39; cdist + einsum "
        "1.41, 1.57, 1.34; loop over queries 36.8, 28.4, 29.6; loop over query-key pairs 2228, 2171, 2593 (cut "
        "short: lower bounds). The first run (one median each): 1.1, 1.45, 1.29; 28.1, 3264.7. propose_budget over "
        "both: ceil(2 * 1.72) = 4 (3x before, from the first run alone), 1/7.0 of the best slow median (28.1). At "
        "(8, 256, 256) the loop over queries was only 12.9 against float64's 2.45: not separable there."
    ),
)
ALIBI_BIAS_CUDA = _provisional_cuda(ALIBI_BIAS_CPU)


def alibi_bias_budget(device: torch.device | str) -> Budget:
    """03's ``alibi_bias`` (the bias of ``shape`` ``(H, Tq, Tk)``)."""
    return _for_device(ALIBI_BIAS_CPU, ALIBI_BIAS_CUDA, device)


SINUSOIDAL_PE_CPU = Budget(
    max_ratio=7.0,
    shape=(512, 64),
    measured=(
        "2-core shared CPU (load average 7.4 -> 5.5, other sessions' tests and this session's), torch 2.13, 1 thread, "
        "the (512, 64) float32 table, base log-uniform in [100, 1e5], against posref.grading.speed.absolute."
        "sinusoidal_pe (arange x frequencies, stack of sin and cos) + the linked rounds (base moved by the previous "
        "table's mean), calibrate_speed_check with three medians each (11 rounds): column slices (the notebook's) "
        "0.68, 0.61, 0.75; float64 inside 1.48, 1.41, 1.52; exp-log frequencies 0.95, 0.90, 1.05; numpy 2.84, 3.23, "
        "2.70; loop over the dim/2 column pairs 2.86, 3.01, 3.02 (sane: 32 vectorised steps); loop over positions "
        "49.8, 49.0, 50.5; math.sin double loop 50.7, 57.4, 52.4; element-wise double loop 520, 1231, 595 (cut "
        "short: lower bounds). propose_budget: ceil(2 * 3.23) = 7, 1/7.0 of the best slow median. At (256, 64) "
        "(load 2.9 -> 6.1) the loop over pairs read 3.7-4.7 and the math.sin loop 32.2: ceil(2 * 4.68) = 10 would "
        "have been only 1/3.2 of it, hence the longer table."
    ),
)


def sinusoidal_pe_budget(device: torch.device | str) -> Budget:
    """02's ``sinusoidal_pe`` (the table of ``shape`` ``(n_positions, dim)``): built and timed on the CPU only
    (the exercise returns it there), whatever the device."""
    return SINUSOIDAL_PE_CPU


T5_BUCKET_CPU = Budget(
    max_ratio=3.0,
    shape=(128, 128),
    measured=(
        "2-core shared CPU (load average 6.1 -> 5.7), torch 2.13, 1 thread, (128, 128) int64 offsets k - q (queries "
        "up to 1000 after the keys' start), 32 buckets, max_distance 120, bidirectional and not alternating, "
        "against posref.grading.speed.relative.t5_bucket (178 us per call) + the linked rounds (offsets plus the "
        "previous buckets and the call number), calibrate_speed_check with three medians each (11 rounds): "
        "torch.where (the notebook's) 1.04, 1.14, 1.03; float64 logarithm 1.33, 1.26, 1.41; lookup table 1.07, 1.02, "
        "0.99; loop over rows 31.4, 41.6, 26.8; loop over offsets with the scalar rule 62.8, 71.2, 83.4. An earlier "
        "run (load 3.4 -> 4.7, one median each): 1.06, 1.35, 1.05; 33.1, 96.1. propose_budget over both: ceil(2 * "
        "1.41) = 3, 1/8.9 of the best slow median (26.8)."
    ),
)
T5_BUCKET_CUDA = _provisional_cuda(T5_BUCKET_CPU)


def t5_bucket_budget(device: torch.device | str) -> Budget:
    """03's ``t5_bucket`` (relative positions of ``shape`` ``(Tq, Tk)``)."""
    return _for_device(T5_BUCKET_CPU, T5_BUCKET_CUDA, device)


T5_LEARNED_BIAS_CPU = Budget(
    max_ratio=8.0,
    shape=(4, 128, 32),
    measured=(
        "2-core shared CPU (load average 13.2 -> 7.2), torch 2.13, 1 thread, the bias (4, 128, 32) float32 from a "
        "(32, 4) table, positions from random offsets, max_distance 120, bidirectional and not alternating, "
        "against posref.grading.speed.relative.t5_learned_bias (one bucket tensor, one lookup) + the linked rounds "
        "(table moved by the previous bias), calibrate_speed_check with three medians each (11 rounds): gather "
        "(the notebook's) 1.18, 1.27, 1.19; F.embedding 0.85, 0.81, 1.01; one-hot product 2.91, 2.58, 3.80; loop "
        "over heads 1.19, 1.34, 1.26; loop over heads with the buckets again per head 3.11, 2.69, 2.31; loop over "
        "queries 39.3, 44.4, 33.7; loop over query-key pairs 115, 121, 128 (cut short: lower bounds). "
        "propose_budget: ceil(2 * 3.80) = 8, 1/4.2 of the best slow median. Not at (4, 64, 64) (load 5.7 -> 5.5): "
        "one-hot 2.26-3.37 against the loop over queries' 19.1-23.0, the rule's 7x not 3x below; nor at (8, 128, "
        "128): the buckets again per head 4.71, the loop over queries 16.1. A loop over queries costs per query, "
        "the reference per pair: many queries over few keys separate them. The student's t5_bucket runs inside "
        "their t5_learned_bias, so a slow t5_bucket fails this check too."
    ),
)
T5_LEARNED_BIAS_CUDA = _provisional_cuda(T5_LEARNED_BIAS_CPU)


def t5_learned_bias_budget(device: torch.device | str) -> Budget:
    """03's ``t5_learned_bias`` (the bias of ``shape`` ``(H, Tq, Tk)``, 32 buckets)."""
    return _for_device(T5_LEARNED_BIAS_CPU, T5_LEARNED_BIAS_CUDA, device)


BUDGETS: dict[str, Callable[[torch.device | str], Budget]] = {
    "attention": attention_budget,
    "sinusoidal_pe": sinusoidal_pe_budget,
    "alibi_bias": alibi_bias_budget,
    "t5_bucket": t5_bucket_budget,
    "t5_learned_bias": t5_learned_bias_budget,
    "apply_rope": apply_rope_budget,
    "per_position_loss": per_position_loss_budget,
    "rope_handler_attention": handler_budget,
    "alibi_handler_attention": handler_budget,
    "causal_mean": causal_mean_budget,
}
"""Each timed function (as its speed check names it) -> its budget for a device; every ``SpeedCheck`` takes its
``budget`` is the one named here (``tests/grading/test_budgets.py``)."""


def speed_budgets(device: torch.device | str) -> dict[str, Budget]:
    """Every timed function's budget on ``device``'s type, by the function's name: what a notebook cell prints, so
    that no text quotes a budget of its own (``for name, b in speed_budgets(device).items(): print(f"{name}: up to
    {b.max_ratio:g}x the reference's time on inputs of shape {b.shape}")``)."""
    return {name: budget(device) for name, budget in BUDGETS.items()}


SANE_FACTOR = 2.0
"""A budget is this many times the worst median ratio of a sane vectorised solution..."""
MARGIN = 3.0
"""...and must be at least this many times below the best median ratio of a classic slow solution."""


@dataclass(frozen=True)
class Proposal:
    """What ``propose_budget`` makes of one set of measurements; ``max_ratio`` is None when it cannot separate."""

    max_ratio: float | None
    worst_sane: float
    best_slow: float
    verdict: str


def propose_budget(sane: list[float], slow: list[float]) -> Proposal:
    """The rule behind every budget: ``ceil(SANE_FACTOR * worst sane median)``, if ``MARGIN`` times that is still
    at or below the best slow median; otherwise no budget (the two kinds of solution are too close to tell apart
    by time at the measured shape).

    Args:
        sane: median ratios (student / reference) of sane vectorised solutions, every repeat of every solution.
        slow: median ratios of the classic slow solutions (lower bounds are fine: they only understate the gap).
    """
    if not sane or not slow:
        raise ValueError(
            f"propose_budget needs ratios of both kinds, got {len(sane)} sane and {len(slow)} slow"
        )
    if not all(math.isfinite(r) and r > 0 for r in [*sane, *slow]):
        raise ValueError(f"ratios must be finite and positive, got sane {sane} and slow {slow}")
    worst_sane, best_slow = max(sane), min(slow)
    budget = float(math.ceil(SANE_FACTOR * worst_sane))
    if MARGIN * budget <= best_slow:
        verdict = (
            f"separable: {budget:g}x is {SANE_FACTOR:g}x the worst sane median ({worst_sane:.2f}, rounded up) and "
            f"1/{best_slow / budget:.1f} of the best slow median ({best_slow:.2f})"
        )
        return Proposal(budget, worst_sane, best_slow, verdict)
    verdict = (
        f"not separable: the rule's {budget:g}x ({SANE_FACTOR:g}x the worst sane median {worst_sane:.2f}, rounded "
        f"up) is not {MARGIN:g}x below the best slow median ({best_slow:.2f}); no budget at this shape"
    )
    return Proposal(None, worst_sane, best_slow, verdict)
