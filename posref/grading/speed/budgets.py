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


OF_RECORD = (
    "2-core CPU shared by six sessions, torch 2.13, 1 thread, measured as the score of record times a speed cell "
    "(python -m autograder.calibrate: each implementation in a sandboxed student's child against the reference "
    "child, every round charged the CPU time of the child's processes, pinned to one CPU), 11 rounds per median, "
    "two runs of three medians each (2026-12-02, main 6ebff36), "
)
"""What every CPU budget's ``measured`` begins with: how its medians were taken."""


APPLY_ROPE_CPU = Budget(
    max_ratio=12.0,
    shape=(1, 8, 256, 64),
    measured=OF_RECORD
    + (
        "x (1, 8, 256, 64) float32, against posref.apply_rope (1276 and 871 us per call with the round's "
        "link and checksum; load average 6.7 -> 7.1 and 11.7 -> 13.3): complex 2.03, 2.13, 1.76, 2.95, "
        "1.58, 1.62; rotate_half 1.65, 2.26, 1.95, 2.13, 1.61, 2.41; einsum 4.22, 4.46, 4.59, 5.53, 4.77, "
        "5.46; float64 inside 3.39, 4.29, 4.14, 3.96, 3.81, 3.52; matrix per position 62.14, 70.95, 85.95, "
        "69.69, 67.68, 80.75; loop over positions 48.39, 49.83, 51.99, 47.32, 53.69, 46.84. propose_budget: "
        "ceil(2 * 5.53) = 12, 1/3.9 of the best slow median (46.84). In a notebook kernel (python -m "
        "posref.bench --suite budgets, load 10.4 -> 8.8): sane up to 5.61 (einsum), slow from 33.6 (2.8x "
        "the budget). Before: 27x, measured in-process by wall clock before the rounds' link and checksum (sane "
        "up to 13.4, slow from 132): the link and checksum add to every call alike and dilute every ratio "
        "towards 1."
    ),
)

# Not measured on a GPU yet: the CPU's ratio and shape, marked provisional (checker messages say so). At this
# shape a GPU mostly waits on kernel launches, so sane solutions stay well inside the CPU budget, a Python loop over
# positions (hundreds of launches) fails, and a matrix per position may pass. Replace this one statement with the
# line that ``python -m posref.bench --device cuda --suite budgets`` prints.
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
    max_ratio=4.0,
    shape=(1, 2, 128, 16),
    measured=OF_RECORD
    + (
        "q, k, v (1, 2, 128, 16) float32, causal alternating, against posref.scaled_dot_product_attention "
        "(560 and 461 us per call; load 7.1 -> 7.9 and 13.5 -> 13.2): matmul 0.91, 0.71, 0.90, 0.92, 0.86, "
        "0.86; einsum 0.96, 0.94, 0.96, 1.00, 0.89, 0.91; float64 inside 1.70, 1.49, 1.56, 1.69, 1.61, "
        "1.48; loop over queries (float64) 32.54, 33.47, 35.63, 34.73, 31.00, 31.76; loop over heads and "
        "queries 56.05, 61.41, 60.03, 41.49, 44.81, 42.61. propose_budget: ceil(2 * 1.70) = 4, 1/7.8 of the "
        "best slow median (31.0). Kernel (load 8.8 -> 8.6): sane up to 1.76, slow from 32.5. Before: 5x. "
        "Why this small shape: at (1, 8, 256, 64) the loop over queries read 10.2 and 10.9 against float64 "
        "inside's 2.24 and 2.27 (in-process, earlier rounds): the products' own work hides the loop's per- "
        "query overhead."
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
    measured=OF_RECORD
    + (
        "logits (4, 256, 32) float32 with a fifth of the targets ignored, against "
        "posref.grading.speed.lab.per_position_loss (473 and 298 us per call; load 7.9 -> 10.4 and 13.2 -> "
        "12.2): log_softmax + gather 0.91, 0.99, 0.77, 0.89, 0.87, 0.88; float64 inside 1.09, 1.03, 1.08, "
        "1.07, 1.09, 1.00; one-hot product 1.31, 1.23, 1.18, 1.22, 1.30, 1.23; loop over positions 45.10, "
        "38.58, 40.17, 37.27, 36.77, 39.92; loop over (sequence, position) 87.98, 101.18, 92.36, 94.95, "
        "94.71, 94.25. propose_budget: ceil(2 * 1.31) = 3, 1/12.3 of the best slow median (36.77). Kernel "
        "(load 8.6 -> 8.9): sane up to 1.55, slow from 29.5. Unchanged."
    ),
)
PER_POSITION_LOSS_CUDA = _provisional_cuda(PER_POSITION_LOSS_CPU)


def per_position_loss_budget(device: torch.device | str) -> Budget:
    """06's ``per_position_loss`` (logits of ``shape`` ``(B, T, V)``)."""
    return _for_device(PER_POSITION_LOSS_CPU, PER_POSITION_LOSS_CUDA, device)


HANDLER_CPU = Budget(
    max_ratio=3.0,
    shape=(1, 4, 128, 16),
    measured=OF_RECORD
    + (
        "tokens (1, 128, 64) = 4 heads of 16, every token a query, positions from a random offset, against "
        "the same layer through posref's handler (posref.grading.speed.lab; RoPE 3512 and 3391 us per call, "
        "ALiBi 1541 and 2039; load 10.4 -> 10.7, 12.4 -> 13.0, 10.7 -> 15.2, 13.0 -> 13.4). RoPE: posref- "
        "like 1.05, 0.97, 0.95, 0.90, 0.91, 0.91; einsum rotation 0.88, 0.99, 1.10, 0.97, 0.91, 0.91; loop "
        "over positions 25.60, 29.85, 24.41, 20.36, 23.52, 20.07. ALiBi: posref-like 1.14, 1.07, 1.14, "
        "0.95, 0.89, 0.87; float64 bias 0.88, 1.12, 1.24, 0.97, 0.74, 0.99; loop over pairs 199.61, 234.43, "
        "210.59, 167.68, 162.15, 166.51; loop over queries 3.37, 3.70, 3.35, 2.68, 2.97, 3.36. "
        "propose_budget over every sane median and the loops over positions and pairs: ceil(2 * 1.24) = 3, "
        "1/6.7 of the best slow median (20.07). Kernel (load 8.9 -> 10.0): sane up to 1.27, slow from 22.4. "
        "Unchanged. ALiBi's loop over queries (one row of the bias per query, 128 rows) is not separable: "
        "2.68-3.70 here (2.84-3.89 in the kernel), and no shape tried separates it (earlier, in-process: at "
        "(1, 2, 256, 8) 4.23, 4.52 against sane up to 1.28; at (1, 4, 64, 16) 3.40, 3.52 against 1.00): a "
        "row of the bias costs about what the attention it is added to costs. It passes or fails by the "
        "run."
    ),
)
HANDLER_CUDA = _provisional_cuda(HANDLER_CPU)


def handler_budget(device: torch.device | str) -> Budget:
    """06's handlers through one attention layer (``shape`` = ``(B, H, T, D)`` of q and k)."""
    return _for_device(HANDLER_CPU, HANDLER_CUDA, device)


CAUSAL_MEAN_CPU = Budget(
    max_ratio=5.0,
    shape=(1, 8, 128, 16),
    measured=OF_RECORD
    + (
        "v (1, 8, 128, 16) float32, against posref.grading.speed.lab.causal_mean (196 and 232 us per call "
        "with the round's link and checksum; load 15.2 -> 12.3 and 13.4 -> 13.8): cumsum 1.00, 1.17, 1.02, "
        "1.08, 0.99, 1.19; float64 inside 1.28, 1.39, 1.27, 1.35, 1.73, 1.54; (T, T) averaging matrix 1.93, "
        "2.27, 1.96, 2.35, 1.98, 2.02; loop over positions (mean of each prefix) 19.20, 17.50, 19.81, "
        "17.36, 15.72, 19.15; running sum in a Python loop 18.46, 20.92, 19.68, 21.03, 20.03, 23.81. "
        "propose_budget: ceil(2 * 2.35) = 5, 1/3.1 of the best slow median (15.72). Kernel (load 10.0 -> "
        "10.5): sane up to 2.44, slow from 15.3. Before: 8x, from in-process wall-clock medians (matrix up "
        "to 3.63, loops from 30.0) measured before the link and checksum. Why this shape: at (1, 8, 256, "
        "16) the matrix's T^2 work grows faster than the loops' T steps (in-process: 6.15-7.04 against "
        "44.1-58.2)."
    ),
)
CAUSAL_MEAN_CUDA = _provisional_cuda(CAUSAL_MEAN_CPU)


def causal_mean_budget(device: torch.device | str) -> Budget:
    """08's ``causal_mean`` (``v`` of ``shape``)."""
    return _for_device(CAUSAL_MEAN_CPU, CAUSAL_MEAN_CUDA, device)


ALIBI_BIAS_CPU = Budget(
    max_ratio=4.0,
    shape=(4, 128, 128),
    measured=OF_RECORD
    + (
        "bias (4, 128, 128) float32, positions from random offsets, against "
        "posref.grading.speed.relative.alibi_bias (385 and 406 us per call; load 12.2 -> 11.7 and 13.8 -> "
        "11.7): broadcast 1.26, 0.98, 1.08, 0.96, 1.02, 0.99; float64 inside 1.13, 1.32, 1.37, 1.24, 1.38, "
        "1.28; cdist + einsum 1.48, 1.50, 1.63, 1.32, 1.26, 1.37; loop over queries 21.54, 16.32, 20.56, "
        "18.65, 19.28, 17.66; loop over query-key pairs 1071.64, 1063.58, 1180.37, 996.45, 1261.78, 1033.95 "
        "(cut short: lower bounds). propose_budget: ceil(2 * 1.63) = 4, 1/4.1 of the best slow median "
        "(16.32). Kernel (load 10.5 -> 12.1): sane up to 1.50, slow from 17.6. Unchanged. Why this shape: "
        "at (8, 256, 256) the loop over queries was only 12.9 against float64's 2.45 (in-process, earlier "
        "rounds)."
    ),
)
ALIBI_BIAS_CUDA = _provisional_cuda(ALIBI_BIAS_CPU)


def alibi_bias_budget(device: torch.device | str) -> Budget:
    """03's ``alibi_bias`` (the bias of ``shape`` ``(H, Tq, Tk)``)."""
    return _for_device(ALIBI_BIAS_CPU, ALIBI_BIAS_CUDA, device)


SINUSOIDAL_PE_CPU = Budget(
    max_ratio=7.0,
    shape=(512, 64),
    measured=OF_RECORD
    + (
        "the (512, 64) float32 table, base log-uniform in [100, 1e5], against "
        "posref.grading.speed.absolute.sinusoidal_pe (519 and 531 us per call; load 11.7 -> 10.7 and 11.7 "
        "-> 11.2): column slices (the notebook's) 0.78, 0.84, 0.85, 0.79, 0.78, 0.76; float64 inside 1.42, "
        "1.58, 1.89, 1.31, 1.34, 1.35; exp-log frequencies 1.05, 0.95, 1.02, 0.92, 0.81, 0.85; numpy 2.00, "
        "2.18, 1.92, 2.38, 2.05, 2.04; loop over the dim/2 column pairs 3.11, 3.16, 3.27, 2.84, 3.02, 2.95 "
        "(sane: 32 vectorised steps); loop over positions 45.30, 43.81, 51.27, 41.04, 43.96, 40.73; "
        "math.sin double loop 28.50, 26.03, 35.96, 29.38, 25.53, 28.18; element-wise double loop 349.21, "
        "300.66, 522.44, 374.20, 370.79, 405.49 (cut short: lower bounds). propose_budget: ceil(2 * 3.27) = "
        "7, 1/3.6 of the best slow median (25.53). Kernel (load 12.1 -> 12.5): sane up to 4.20, slow from "
        "23.2. Unchanged. Why this shape: at (256, 64) the loop over pairs read 3.7-4.7 and the math.sin "
        "loop 32.2 (in-process, earlier rounds)."
    ),
)


def sinusoidal_pe_budget(device: torch.device | str) -> Budget:
    """02's ``sinusoidal_pe`` (the table of ``shape`` ``(n_positions, dim)``): built and timed on the CPU only
    (the exercise returns it there), whatever the device."""
    return SINUSOIDAL_PE_CPU


T5_BUCKET_CPU = Budget(
    max_ratio=4.0,
    shape=(128, 128),
    measured=OF_RECORD
    + (
        "(128, 128) int64 offsets k - q (queries up to 1000 after the keys' start), 32 buckets, "
        "max_distance 120, bidirectional and not alternating, against "
        "posref.grading.speed.relative.t5_bucket (640 and 622 us per call; load 10.5 -> 9.1 and 11.0 -> "
        "9.9): torch.where (the notebook's) 1.34, 1.24, 1.09, 1.04, 1.12, 1.09; float64 logarithm 1.35, "
        "1.37, 1.41, 1.06, 1.29, 1.49; lookup table 1.53, 1.09, 1.08, 1.05, 1.01, 1.10; loop over rows "
        "23.14, 29.80, 30.17, 26.63, 26.29, 26.83; loop over offsets with the scalar rule 41.18, 43.40, "
        "44.04, 46.10, 46.72, 42.83. propose_budget: ceil(2 * 1.53) = 4, 1/5.8 of the best slow median "
        "(23.14). Kernel (load 12.5 -> 11.9): sane up to 1.19, slow from 18.8. Before: 3x (sane up to 1.41 "
        "in-process)."
    ),
)
T5_BUCKET_CUDA = _provisional_cuda(T5_BUCKET_CPU)


def t5_bucket_budget(device: torch.device | str) -> Budget:
    """03's ``t5_bucket`` (relative positions of ``shape`` ``(Tq, Tk)``)."""
    return _for_device(T5_BUCKET_CPU, T5_BUCKET_CUDA, device)


T5_LEARNED_BIAS_CPU = Budget(
    max_ratio=7.0,
    shape=(4, 128, 32),
    measured=OF_RECORD
    + (
        "the bias (4, 128, 32) float32 from a (32, 4) table, positions from random offsets, max_distance "
        "120, bidirectional and not alternating, against posref.grading.speed.relative.t5_learned_bias (913 "
        "and 772 us per call; load 9.1 -> 7.4 and 9.9 -> 8.7): gather (the notebook's) 1.10, 1.09, 0.99, "
        "1.12, 1.12, 1.08; F.embedding 0.90, 0.90, 0.86, 1.04, 0.93, 0.87; one-hot product 2.56, 3.04, "
        "2.26, 2.19, 2.01, 2.07; loop over heads 1.22, 1.20, 1.00, 1.15, 1.09, 1.22; loop over heads with "
        "the buckets again per head 2.69, 2.57, 2.51, 2.68, 2.81, 2.58; loop over queries 33.87, 36.50, "
        "36.41, 42.07, 37.45, 36.32; loop over query-key pairs 77.63, 75.15, 76.12, 72.77, 81.83, 69.90. "
        "propose_budget: ceil(2 * 3.04) = 7, 1/4.8 of the best slow median (33.87). Kernel (load 11.9 -> "
        "11.3): sane up to 2.58, slow from 29.0. Before: 8x (one-hot up to 3.80 in-process). Why this "
        "shape: at (4, 64, 64) and (8, 128, 128) the loop over queries was only 3-7x the worst sane (in- "
        "process, earlier rounds): a loop over queries costs per query, the reference per pair, so many "
        "queries over few keys separate them. The student's t5_bucket runs inside their t5_learned_bias, so "
        "a slow t5_bucket fails this check too."
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
