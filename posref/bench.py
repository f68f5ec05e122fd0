"""Speed of ``apply_rope`` as ratios to baselines measured in the same run.

    python -m posref.bench                 # CPU, one thread, the two reference shapes, fp32
    python -m posref.bench --device cuda   # also reports achieved bandwidth as a fraction of a device copy

Each round times every contender once, in a fixed interleaved order, on the same inputs; the figure reported is
the median over rounds of (contender time / baseline time in that round). The baselines: cloning q and k (the
memory-copy floor: RoPE must read and write every element once) and the transformers library's
``apply_rotary_pos_emb`` (``rotate_half`` + ``cat``), when that library is installed.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

import torch

from posref.rope import apply_rope, rope_cos_sin
from posref.scaling import rope_frequencies

SHAPES = ((1, 8, 2048, 128), (4, 16, 1024, 64))


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def interleaved_times(
    contenders: dict[str, Callable[[], object]], *, rounds: int, warmup: int, device: torch.device
) -> dict[str, list[float]]:
    """Seconds per call of each contender, one list per contender, measured round by round in turn."""
    for fn in contenders.values():
        for _ in range(warmup):
            fn()
    _sync(device)
    times: dict[str, list[float]] = {name: [] for name in contenders}
    for _ in range(rounds):
        for name, fn in contenders.items():
            _sync(device)
            start = time.perf_counter()
            fn()
            _sync(device)
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
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    dtype = getattr(torch, args.dtype)
    print(
        f"apply_rope on {device} ({args.dtype}, {args.threads} thread(s), torch {torch.__version__}), "
        f"median over {args.rounds} interleaved rounds"
    )
    for shape in SHAPES:
        print(f"\nshape {shape} (q and k)")
        for name, value in bench_apply_rope(
            shape, device=device, dtype=dtype, rounds=args.rounds, fused=not args.no_fused
        ).items():
            print(f"  {name:45s} {value:8.2f}")


if __name__ == "__main__":
    main()
