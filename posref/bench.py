"""Speed of the reference as ratios to baselines measured in the same run, and the speed budgets' calibration.

    python -m posref.bench                 # apply_rope on CPU, one thread, the two reference shapes, fp32
    python -m posref.bench --suite budgets # every speed budget's calibration on this device
    python -m posref.bench --suite budgets --checks t5_bucket,causal_mean   # only these
    python -m posref.bench --suite explorers # a slider move of the heavy explorers vs a fresh figure
    python -m posref.bench --device cuda --json out.json
        # on a GPU: apply_rope's ratios with each backend (eager, Triton, torch.compile), the budget's
        # calibration, apply_rope's bandwidth as a fraction of a device copy (bf16 and fp32, >= 256 MB moved),
        # ALiBi/T5 through FlexAttention vs plain causal SDPA at 4096 and 16384 tokens, and every solution
        # notebook executed with POSREF_FAST=1; figures also written as JSON (after each part)

Each round times every contender once, in a fixed interleaved order, on the same inputs; the figure reported is
the median over rounds of (contender time / baseline time in that round). The baselines: cloning q and k (the
memory-copy floor: RoPE must read and write every element once) and the transformers library's
``apply_rotary_pos_emb`` (``rotate_half`` + ``cat``), when that library is installed.

The budgets suite is the speed budgets' calibration (``posref.bench_budgets``: the student-style implementations
timed as a notebook kernel times them, and the ``budgets.py`` line each budget's rule proposes).
"""

from __future__ import annotations

import argparse
import itertools
import json
import statistics
import time
from collections.abc import Callable

import torch

from posref.bench_budgets import CHECKS, bench_budgets
from posref.grading.speed.timing import synchronize
from posref.kernels import fused_backends
from posref.rope import apply_rope, apply_rope_qk, rope_cos_sin
from posref.scaling import rope_frequencies

SHAPES = ((1, 8, 2048, 128), (4, 16, 1024, 64))


def interleaved_times(
    contenders: dict[str, Callable[[], object]], *, rounds: int, warmup: int, device: torch.device
) -> dict[str, list[float]]:
    """Seconds per call of each contender, one list per contender, measured round by round in turn."""
    for fn in contenders.values():
        for _ in range(warmup):
            fn()
    synchronize(device)
    times: dict[str, list[float]] = {name: [] for name in contenders}
    for _ in range(rounds):
        for name, fn in contenders.items():
            synchronize(device)
            start = time.perf_counter()
            fn()
            synchronize(device)
            times[name].append(time.perf_counter() - start)
    return times


def median_ratio(times: dict[str, list[float]], name: str, baseline: str) -> float:
    return statistics.median(t / b for t, b in zip(times[name], times[baseline], strict=True))


def rope_backends(device: torch.device, *, fused: bool = True) -> dict[str, bool | str]:
    """``apply_rope``'s ``fused`` argument for each backend timed on ``device``, by label: eager always; on CUDA
    the Triton kernel (when Triton is installed) and ``torch.compile`` separately; elsewhere ``torch.compile``
    as "fused". ``fused=False`` keeps eager only."""
    backends: dict[str, bool | str] = {"eager": False}
    if fused:
        for name in fused_backends(device):
            backends[name if device.type == "cuda" else "fused"] = name
    return backends


def _transformers_rope() -> Callable | None:
    try:
        from transformers.models.llama.modeling_llama import apply_rotary_pos_emb
    except ImportError:
        return None
    return apply_rotary_pos_emb


def rope_inputs(
    shape: tuple[int, ...], *, device: torch.device, dtype: torch.dtype
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Seeded ``q``, ``k`` of ``shape`` ``(B, H, T, D)`` and plain RoPE's cos/sin ``(T, D/2)`` for them."""
    g = torch.Generator(device=device).manual_seed(0)
    q = torch.randn(shape, generator=g, device=device, dtype=dtype)
    k = torch.randn(shape, generator=g, device=device, dtype=dtype)
    cos, sin = rope_cos_sin(
        torch.arange(shape[-2], device=device), rope_frequencies(shape[-1], device=device)[0]
    )
    return q, k, cos, sin


def bench_apply_rope(
    shape: tuple[int, ...], *, device: torch.device, dtype: torch.dtype, rounds: int, fused: bool
) -> dict[str, float]:
    """Ratios (and on CUDA, bandwidth) for one ``(B, H, T, D)`` shape; q and k rotated together."""
    q, k, cos, sin = rope_inputs(shape, device=device, dtype=dtype)
    contenders: dict[str, Callable[[], object]] = {"copy floor": lambda: (q.clone(), k.clone())}
    for layout in ("half", "interleaved"):
        for label, backend in rope_backends(device, fused=fused).items():
            contenders[f"posref {layout} {label}"] = lambda layout=layout, backend=backend: (
                apply_rope(q, cos, sin, layout=layout, fused=backend),
                apply_rope(k, cos, sin, layout=layout, fused=backend),
            )
    hf = _transformers_rope()
    if hf is not None:
        full_cos, full_sin = (
            torch.cat((cos, cos), -1)[None].to(dtype),
            torch.cat((sin, sin), -1)[None].to(dtype),
        )
        contenders["transformers"] = lambda: hf(q, k, full_cos, full_sin)
    times = interleaved_times(contenders, rounds=rounds, warmup=3, device=device)
    result = {
        f"{name} / copy": median_ratio(times, name, "copy floor")
        for name in contenders
        if name != "copy floor"
    }
    if hf is not None:
        for name in contenders:
            if name.startswith("posref"):
                result[f"transformers / {name}"] = median_ratio(times, "transformers", name)
    if device.type == "cuda":
        moved = 4 * q.numel() * q.element_size()  # read q, k and write two outputs
        copy_s = statistics.median(times["copy floor"])
        result["copy GB/s"] = moved / copy_s / 1e9
        for name in contenders:
            if name.startswith("posref"):
                result[f"{name} fraction of copy bandwidth"] = copy_s / statistics.median(times[name])
    return result


def bench_bandwidth(shape: tuple[int, ...], *, device: torch.device, dtype: torch.dtype, rounds: int) -> dict:
    """``apply_rope`` on q and k with each backend (``rope_backends``) vs a device copy of the same bytes:
    achieved GB/s and the fraction of the copy's."""
    q, k, cos, sin = rope_inputs(shape, device=device, dtype=dtype)
    contenders = {"copy": lambda: (q.clone(), k.clone())}
    for layout in ("half", "interleaved"):
        for label, backend in rope_backends(device).items():
            contenders[f"{label} {layout}"] = lambda layout=layout, backend=backend: (
                apply_rope(q, cos, sin, layout=layout, fused=backend),
                apply_rope(k, cos, sin, layout=layout, fused=backend),
            )
        if "triton" in rope_backends(device):  # what RotaryEmbedding runs on CUDA: q and k in one launch
            contenders[f"triton q+k one launch {layout}"] = lambda layout=layout: apply_rope_qk(
                q, k, cos, sin, layout=layout, fused="triton"
            )
    times = interleaved_times(contenders, rounds=rounds, warmup=3, device=device)
    moved = 4 * q.numel() * q.element_size()  # read q and k, write two outputs
    result: dict[str, float] = {"MB moved": moved / 1e6}
    for name, t in times.items():
        result[f"{name} GB/s"] = moved / statistics.median(t) / 1e9
        if name != "copy":
            result[f"{name} / copy bandwidth"] = 1.0 / median_ratio(times, name, "copy")
    return result


def triton_configs(heads: int) -> dict[str, dict[str, int]]:
    """Tuning knobs of ``posref.kernels.rope_triton.apply_rope_triton`` to time against its defaults, by label."""
    configs: dict[str, dict[str, int]] = {"default": {}}
    for heads_per_program in sorted({1, min(4, heads), heads}):
        if heads % heads_per_program == 0:
            for block_t in (8, 16, 32):
                configs[f"{heads_per_program} heads, {block_t} positions"] = {
                    "heads_per_program": heads_per_program,
                    "block_t": block_t,
                }
    configs["default, 8 warps"] = {"num_warps": 8}
    return configs


def bench_triton_tuning(
    shape: tuple[int, ...], *, device: torch.device, dtype: torch.dtype, rounds: int
) -> dict:
    """The Triton RoPE kernel (q and k) with each of ``triton_configs``: fraction of a device copy's bandwidth.

    What the defaults of ``posref.kernels.rope_triton`` should be is read off this table (the best config is named).
    """
    from posref.kernels.rope_triton import apply_rope_triton

    q, k, cos, sin = rope_inputs(shape, device=device, dtype=dtype)
    contenders: dict[str, Callable[[], object]] = {"copy": lambda: (q.clone(), k.clone())}
    for layout in ("half", "interleaved"):
        for label, knobs in triton_configs(shape[-3]).items():
            contenders[f"{layout} {label}"] = lambda layout=layout, knobs=knobs: (
                apply_rope_triton(q, cos, sin, layout=layout, **knobs),
                apply_rope_triton(k, cos, sin, layout=layout, **knobs),
            )
    times = interleaved_times(contenders, rounds=rounds, warmup=2, device=device)
    result = {
        f"{name} / copy bandwidth": 1.0 / median_ratio(times, name, "copy")
        for name in contenders
        if name != "copy"
    }
    for layout in ("half", "interleaved"):
        mine = {name: value for name, value in result.items() if name.startswith(layout)}
        best = max(mine, key=mine.get)
        print(f"  triton tuning, {layout}: best {best.removesuffix(' / copy bandwidth')} ({mine[best]:.2f})")
    return result


def bench_biased_attention(
    seq_len: int,
    *,
    device: torch.device,
    dtype: torch.dtype,
    rounds: int,
    heads: int = 16,
    head_dim: int = 64,
) -> dict:
    """ALiBi and T5 biases through FlexAttention score_mods vs plain causal SDPA: median time ratios.

    Two diagnostics beside them: FlexAttention with no bias (what the score_mod itself costs is the difference)
    and, up to 4096 tokens, SDPA given the materialised ``(H, T, T)`` ALiBi bias (what FlexAttention saves).
    """
    from posref.kernels.flex import alibi_score_mod, flex_biased_attention, t5_score_mod
    from posref.relative import T5RelativeBias, alibi_bias, alibi_slopes

    g = torch.Generator(device=device).manual_seed(0)
    q, k, v = (
        torch.randn(1, heads, seq_len, head_dim, generator=g, device=device, dtype=dtype) for _ in range(3)
    )
    alibi = alibi_score_mod(alibi_slopes(heads, device=device))
    t5 = T5RelativeBias(heads, bidirectional=False).to(device)
    with torch.no_grad():
        t5_mod = t5_score_mod(t5, seq_len, seq_len)
        contenders = {
            "sdpa causal": lambda: torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True),
            "flex alibi": lambda: flex_biased_attention(q, k, v, alibi),
            "flex t5": lambda: flex_biased_attention(q, k, v, t5_mod),
            "flex no bias": lambda: flex_biased_attention(q, k, v, _no_bias),
        }
        if seq_len <= 4096:
            positions = torch.arange(seq_len, device=device)
            mask = alibi_bias(alibi_slopes(heads, device=device), positions, positions)
            mask = mask.masked_fill(positions[None, :] > positions[:, None], float("-inf")).to(dtype)
            contenders["sdpa materialised alibi"] = lambda: torch.nn.functional.scaled_dot_product_attention(
                q, k, v, attn_mask=mask
            )
        times = interleaved_times(contenders, rounds=rounds, warmup=2, device=device)
    result = {"sdpa causal ms": statistics.median(times["sdpa causal"]) * 1e3}
    for name in contenders:
        if name != "sdpa causal":
            result[f"{name} / sdpa"] = median_ratio(times, name, "sdpa causal")
    return result


def _no_bias(score, b, h, q_idx, kv_idx):
    return score


def time_notebooks(pattern: str = "solutions/*/*.ipynb", *, timeout: int = 600) -> dict[str, float]:
    """Execute each notebook top to bottom with ``POSREF_FAST=1``; seconds per notebook (``nan`` on failure)."""
    import glob
    import os

    import nbformat
    from nbclient import NotebookClient

    os.environ["POSREF_FAST"] = "1"
    seconds: dict[str, float] = {}
    for path in sorted(glob.glob(pattern)):
        nb = nbformat.read(path, as_version=4)
        start = time.perf_counter()
        try:
            NotebookClient(
                nb, timeout=timeout, resources={"metadata": {"path": os.path.dirname(path)}}
            ).execute()
            seconds[path] = time.perf_counter() - start
        except Exception as error:  # report and go on: one broken notebook must not hide the others' figures
            print(f"  {path}: FAILED ({type(error).__name__}: {str(error).splitlines()[0][:200]})")
            seconds[path] = float("nan")
    return seconds


def gpu_suite(device: torch.device, *, rounds: int, small: bool = False) -> dict[str, dict]:
    """Everything issue-sized for a GPU session; ``small`` shrinks shapes so the code path runs anywhere."""
    figures: dict[str, dict] = {}
    big = (2, 8, 256, 64) if small else (8, 32, 4096, 128)  # bf16: 268 MB per tensor, > 1 GB moved in all
    for dtype in (torch.bfloat16, torch.float32):
        name = f"apply_rope bandwidth {tuple(big)} {str(dtype).removeprefix('torch.')}"
        figures[name] = bench_bandwidth(big, device=device, dtype=dtype, rounds=rounds)
    if "triton" in rope_backends(device):
        figures[f"triton tuning {tuple(big)} bfloat16"] = bench_triton_tuning(
            big, device=device, dtype=torch.bfloat16, rounds=rounds
        )
    attn_dtype = torch.bfloat16 if device.type == "cuda" else torch.float32
    for seq_len in (128, 256) if small else (4096, 16384):
        figures[f"biased attention T={seq_len}"] = bench_biased_attention(
            seq_len, device=device, dtype=attn_dtype, rounds=rounds
        )
    return figures


def _move_over_fresh(explorer, figure_fn: Callable, values: list[dict], *, rounds: int) -> float:
    """Median over interleaved rounds of (one slider move of ``explorer`` / ``figure_fn`` built and rendered)."""
    from posref.explorers import figure_png

    moves, fresh = itertools.cycle(values), itertools.cycle(values)
    contenders = {
        "move": lambda: explorer.set(**next(moves)),
        "fresh": lambda: figure_png(figure_fn(**next(fresh))),
    }
    times = interleaved_times(contenders, rounds=rounds, warmup=1, device=torch.device("cpu"))
    return median_ratio(times, "move", "fresh")


def bench_explorers(*, rounds: int) -> dict[str, dict]:
    """The explorers that keep one figure between slider moves (``posref.explorers``): each move's time as a
    ratio to building and rendering the same figure afresh at the same values (matplotlib's Agg, on the CPU)."""
    from posref.explorers import (
        bias_heatmap_explorer,
        bias_heatmap_figure,
        rope_pair_explorer,
        rope_pair_figure,
        scaling_explorer,
        scaling_figure,
    )

    scaling_moves = [{"method": m, "factor": f} for m, f in (("yarn", 4.0), ("ntk", 8.0), ("linear", 16.0))]
    cases = {
        "rope pair": (rope_pair_explorer(), rope_pair_figure, [{"m": m, "n": m + 3} for m in (4, 9, 17, 30)]),
        "bias heatmap": (bias_heatmap_explorer(), bias_heatmap_figure, [{"head": h} for h in (1, 2, 3, 4)]),
        "scaling": (scaling_explorer(), scaling_figure, scaling_moves),
    }
    return {
        "explorers: slider move / fresh figure (CPU)": {
            name: _move_over_fresh(explorer, figure_fn, values, rounds=rounds)
            for name, (explorer, figure_fn, values) in cases.items()
        }
    }


def print_table(figures: dict[str, dict]) -> None:
    for title, values in figures.items():
        print(f"\n{title}")
        for name, value in values.items():
            shown = f"{value:10.2f}" if isinstance(value, float | int) else str(value)
            print(f"  {name:55s} {shown}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--dtype", default="float32", choices=("float32", "float16", "bfloat16"))
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument(
        "--threads", type=int, default=1, help="CPU threads (default 1, as the budgets assume)"
    )
    parser.add_argument(
        "--no-fused", action="store_true", help="skip the fused backends (Triton, torch.compile)"
    )
    parser.add_argument(
        "--suite",
        choices=("rope", "budgets", "gpu", "all", "explorers"),
        default=None,
        help="rope: apply_rope ratios; budgets: calibration of the speed budgets (see --checks); gpu: bandwidth, "
        "biased attention, notebooks; all: the three (default: rope on CPU, all on CUDA); explorers: a slider "
        "move of the explorers that keep their figure, against a fresh figure",
    )
    parser.add_argument("--small", action="store_true", help="tiny shapes (to check the gpu suite runs)")
    parser.add_argument(
        "--checks",
        help=f"with the budgets suite: comma-separated checks to calibrate, of {', '.join(CHECKS)} (default: all; "
        "apply_rope and attention with --small)",
    )
    parser.add_argument(
        "--notebooks", action="store_true", help="with the gpu suite: also time every notebook"
    )
    parser.add_argument(
        "--json", help="also write every figure to this JSON file (rewritten after each part)"
    )
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    dtype = getattr(torch, args.dtype)
    suite = args.suite or ("all" if device.type == "cuda" else "rope")
    print(
        f"posref.bench on {device} ({args.threads} CPU thread(s), torch {torch.__version__}), "
        f"median over {args.rounds} interleaved rounds"
    )
    from posref.grading.speed.calibration import device_name

    meta = {
        "device": device_name(device),
        "torch": torch.__version__,
        "threads": args.threads,
        "rounds": args.rounds,
        "suite": suite,
        "small": args.small,
    }
    figures: dict[str, dict] = {}

    def record(part: dict[str, dict]) -> None:
        """Print a part's table and rewrite the JSON, so a run cut short keeps what it measured."""
        figures.update(part)
        print_table(part)
        if args.json:
            with open(args.json, "w") as f:
                json.dump({"meta": meta, "figures": figures}, f, indent=1)

    if suite in ("rope", "all"):
        for shape in SHAPES:
            record(
                {
                    f"apply_rope {shape} {args.dtype} (q and k)": bench_apply_rope(
                        shape, device=device, dtype=dtype, rounds=args.rounds, fused=not args.no_fused
                    )
                }
            )
    if suite in ("budgets", "all"):
        checks = (
            None if args.checks is None else [name.strip() for name in args.checks.split(",") if name.strip()]
        )
        if checks is None:
            checks = ["apply_rope", "attention"] if args.small else list(CHECKS)
        for name in checks:  # one part each: a run cut short keeps the checks it finished
            record(bench_budgets(device, small=args.small, repeats=1 if args.small else 3, checks=[name]))
    if suite in ("gpu", "all"):
        record(gpu_suite(device, rounds=args.rounds, small=args.small))
        if args.notebooks or device.type == "cuda":
            try:
                record({"notebook seconds (POSREF_FAST=1)": time_notebooks()})
            except ImportError as error:  # the GPU image may lack nbclient: the other figures still count
                print(f"\nnotebooks not timed: {error}")
                record({"notebook seconds (POSREF_FAST=1)": {"skipped": f"not timed: {error}"}})
    if suite == "explorers":
        record(bench_explorers(rounds=args.rounds))
    if args.json:
        print(f"\nwrote {args.json}")


if __name__ == "__main__":
    main()
