"""Speed of the reference as ratios to baselines measured in the same run.

    python -m posref.bench                 # apply_rope on CPU, one thread, the two reference shapes, fp32
    python -m posref.bench --device cuda --json out.json
        # on a GPU: apply_rope's bandwidth as a fraction of a device copy (bf16 and fp32, >= 256 MB moved),
        # ALiBi/T5 through FlexAttention vs plain causal SDPA at 4096 and 16384 tokens, and every solution
        # notebook executed with POSREF_FAST=1; figures also written as JSON

Each round times every contender once, in a fixed interleaved order, on the same inputs; the figure reported is
the median over rounds of (contender time / baseline time in that round). The baselines: cloning q and k (the
memory-copy floor: RoPE must read and write every element once) and the transformers library's
``apply_rotary_pos_emb`` (``rotate_half`` + ``cat``), when that library is installed.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable

import torch

from posref.grading.timing import synchronize
from posref.rope import apply_rope, rope_cos_sin
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


def _transformers_rope() -> Callable | None:
    try:
        from transformers.models.llama.modeling_llama import apply_rotary_pos_emb
    except ImportError:
        return None
    return apply_rotary_pos_emb


def bench_apply_rope(
    shape: tuple[int, ...], *, device: torch.device, dtype: torch.dtype, rounds: int, fused: bool
) -> dict[str, float]:
    """Ratios (and on CUDA, bandwidth) for one ``(B, H, T, D)`` shape; q and k rotated together."""
    g = torch.Generator(device=device).manual_seed(0)
    q = torch.randn(shape, generator=g, device=device, dtype=dtype)
    k = torch.randn(shape, generator=g, device=device, dtype=dtype)
    cos, sin = rope_cos_sin(
        torch.arange(shape[-2], device=device), rope_frequencies(shape[-1], device=device)[0]
    )
    contenders: dict[str, Callable[[], object]] = {"copy floor": lambda: (q.clone(), k.clone())}
    for layout in ("half", "interleaved"):
        contenders[f"posref {layout} eager"] = lambda layout=layout: (
            apply_rope(q, cos, sin, layout=layout, fused=False),
            apply_rope(k, cos, sin, layout=layout, fused=False),
        )
        if fused:
            contenders[f"posref {layout} fused"] = lambda layout=layout: (
                apply_rope(q, cos, sin, layout=layout, fused=True),
                apply_rope(k, cos, sin, layout=layout, fused=True),
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
    """Fused ``apply_rope`` on q and k vs a device copy of the same bytes: achieved GB/s and the fraction."""
    g = torch.Generator(device=device).manual_seed(0)
    q = torch.randn(shape, generator=g, device=device, dtype=dtype)
    k = torch.randn(shape, generator=g, device=device, dtype=dtype)
    cos, sin = rope_cos_sin(
        torch.arange(shape[-2], device=device), rope_frequencies(shape[-1], device=device)[0]
    )
    contenders = {"copy": lambda: (q.clone(), k.clone())}
    for layout in ("half", "interleaved"):
        contenders[f"fused {layout}"] = lambda layout=layout: (
            apply_rope(q, cos, sin, layout=layout, fused=True),
            apply_rope(k, cos, sin, layout=layout, fused=True),
        )
        contenders[f"eager {layout}"] = lambda layout=layout: (
            apply_rope(q, cos, sin, layout=layout, fused=False),
            apply_rope(k, cos, sin, layout=layout, fused=False),
        )
    times = interleaved_times(contenders, rounds=rounds, warmup=3, device=device)
    moved = 4 * q.numel() * q.element_size()  # read q and k, write two outputs
    result: dict[str, float] = {"MB moved": moved / 1e6}
    for name, t in times.items():
        result[f"{name} GB/s"] = moved / statistics.median(t) / 1e9
        if name != "copy":
            result[f"{name} / copy bandwidth"] = 1.0 / median_ratio(times, name, "copy")
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
    """ALiBi and T5 biases through FlexAttention score_mods vs plain causal SDPA: median time ratios."""
    from posref.flex import alibi_score_mod, flex_biased_attention, t5_score_mod
    from posref.relative import T5RelativeBias, alibi_slopes

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
        }
        times = interleaved_times(contenders, rounds=rounds, warmup=2, device=device)
    return {
        "sdpa causal ms": statistics.median(times["sdpa causal"]) * 1e3,
        "flex alibi / sdpa": median_ratio(times, "flex alibi", "sdpa causal"),
        "flex t5 / sdpa": median_ratio(times, "flex t5", "sdpa causal"),
    }


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
    attn_dtype = torch.bfloat16 if device.type == "cuda" else torch.float32
    for seq_len in (128, 256) if small else (4096, 16384):
        figures[f"biased attention T={seq_len}"] = bench_biased_attention(
            seq_len, device=device, dtype=attn_dtype, rounds=rounds
        )
    return figures


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
    parser.add_argument("--no-fused", action="store_true", help="skip the torch.compile path")
    parser.add_argument(
        "--suite",
        choices=("rope", "gpu", "all"),
        default=None,
        help="rope: apply_rope ratios; gpu: bandwidth, biased attention, notebooks "
        "(default: rope on CPU, all on CUDA)",
    )
    parser.add_argument("--small", action="store_true", help="tiny shapes (to check the gpu suite runs)")
    parser.add_argument(
        "--notebooks", action="store_true", help="with the gpu suite: also time every notebook"
    )
    parser.add_argument("--json", help="also write every figure to this JSON file")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    dtype = getattr(torch, args.dtype)
    suite = args.suite or ("all" if device.type == "cuda" else "rope")
    print(
        f"posref.bench on {device} ({args.threads} CPU thread(s), torch {torch.__version__}), "
        f"median over {args.rounds} interleaved rounds"
    )
    figures: dict[str, dict] = {}
    if suite in ("rope", "all"):
        for shape in SHAPES:
            figures[f"apply_rope {shape} {args.dtype} (q and k)"] = bench_apply_rope(
                shape, device=device, dtype=dtype, rounds=args.rounds, fused=not args.no_fused
            )
    if suite in ("gpu", "all"):
        figures.update(gpu_suite(device, rounds=args.rounds, small=args.small))
        if args.notebooks or device.type == "cuda":
            figures["notebook seconds (POSREF_FAST=1)"] = time_notebooks()
    for title, values in figures.items():
        print(f"\n{title}")
        for name, value in values.items():
            print(f"  {name:55s} {value:10.2f}")
    if args.json:
        meta = {
            "device": torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu",
            "torch": torch.__version__,
            "threads": args.threads,
            "rounds": args.rounds,
        }
        with open(args.json, "w") as f:
            json.dump({"meta": meta, "figures": figures}, f, indent=1)
        print(f"\nwrote {args.json}")


if __name__ == "__main__":
    main()
