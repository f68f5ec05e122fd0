"""Both ends of a timed round in the shared buffer (``Child.run_chain`` and the child's ``serve``): where the grader
lays a round's tensors out (``lay_out``), how the child finds them and runs the round (``run_chain_here``: calls until
the grader sets the stop byte, a checksum per call), and how the grader reads the child's results back
(``read_back``, ``calls_made``). The child is never told how many calls to make (``posref.grading.speed.timing``),
nor which call ends the round: the grader measures the round with the child stopped, counting the calls whose
checksums are written (``calls_made``, over checksums it set to NaN first: ``unwritten``), and only then sets the
stop byte."""

from __future__ import annotations

import fcntl
import math
import mmap
import os
from types import SimpleNamespace
from typing import Any

import torch

from posref.grading.report import StudentError
from posref.grading.speed.links import run_calls
from posref.grading.speed.timing import chain_output_problem
from posref.i18n import _

ALIGN = 64
"""Every tensor of a round starts at a multiple of this many bytes of the buffer."""


def shared_tensor(shared: mmap.mmap, spec: Any) -> Any:
    """A tensor argument of a timed round, as a view of the shared buffer (a list of them as a tuple); anything else
    as it came."""
    if isinstance(spec, list):
        return tuple(shared_tensor(shared, s) for s in spec)
    if not (isinstance(spec, dict) and "__shared__" in spec):
        return spec
    offset, shape, dtype = spec["__shared__"]
    count = math.prod(shape)
    return torch.frombuffer(shared, dtype=getattr(torch, dtype), count=count, offset=offset).view(shape)


def run_chain_here(fn: Any, request: dict, shared: mmap.mmap) -> dict:
    """A timed round in the child (see ``Child.run_chain``): the chain's calls (``links`` steps them as the grader
    does) until the grader sets the stop byte, each call's checksum and the last output written into the shared
    buffer, and the number of calls made."""
    args = tuple(shared_tensor(shared, a) for a in request["args"])
    kwargs = tuple({k: shared_tensor(shared, v) for k, v in kw.items()} for kw in request["kwargs"])
    out, sums = shared_tensor(shared, request["out"]), shared_tensor(shared, request["sums"])
    chain = SimpleNamespace(start=shared_tensor(shared, request["start"]), args=args, kwargs=kwargs,
                            link=request.get("link"), into=request.get("into"), phase=request["phase"],
                            weights=shared_tensor(shared, request["weights"]),
                            offsets=tuple(request["offsets"]))  # fmt: skip

    def check(y: Any) -> None:
        problem = chain_output_problem(y, out)
        if problem is not None:
            raise TypeError(_("{problem} while being timed").format(problem=problem))

    stop = request["stop"]
    y, done = run_calls(fn, chain, request["max_calls"], check, lambda: shared[stop] != 0, sums)
    out.copy_(y)
    return {"done": done}


def lay_out(
    name: str, chain: Any, max_calls: int, size: int
) -> tuple[dict, list, torch.Tensor, torch.Tensor]:
    """The request of a timed round of ``name`` along ``chain`` (a ``timing.Chain``), for a buffer of ``size`` bytes:
    (the request, the ``(offset, tensor)`` pairs to write once the clock runs, an empty tensor like the last output,
    one like the checksums). The request holds ``max_calls`` (the same for every round) and the offset of the stop
    byte, never a number of calls to make."""
    placed: list[tuple[int, torch.Tensor]] = []
    end = 0

    def place(value: Any, *, write: bool = True) -> Any:
        nonlocal end
        if isinstance(value, tuple):
            return [place(v, write=write) for v in value]
        if not isinstance(value, torch.Tensor):
            return value
        tensor, offset = value.detach().cpu().contiguous(), end
        end = -(-(offset + tensor.nbytes) // ALIGN) * ALIGN
        if write:
            placed.append((offset, tensor))
        return {"__shared__": [offset, list(tensor.shape), str(tensor.dtype).removeprefix("torch.")]}

    out = chain.output_like().cpu()
    sums = torch.zeros(max_calls, dtype=torch.float64)
    request = {
        "chain": name,
        "max_calls": int(max_calls),
        "start": place(chain.start),
        "args": [place(a) for a in chain.args],
        "kwargs": [{k: place(v) for k, v in kw.items()} for kw in chain.kwargs],
        "link": chain.link,
        "into": chain.into,
        "phase": float(chain.phase),
        "weights": place(chain.weights),
        "offsets": [int(o) for o in chain.offsets],
        "out": place(out, write=False),
        "sums": place(sums, write=False),
        "stop": end,
    }
    if end + ALIGN > size:
        raise ValueError(f"a timed round needs {end + ALIGN} bytes of shared buffer, more than {size}")
    return request, placed, out, sums


def unwritten(fd: int, spec: dict, max_calls: int) -> None:
    """Set the round's ``max_calls`` checksums in the buffer ``fd`` (``spec``: the request's ``sums``) to NaN: what
    no call of the round has written yet (a checksum is a finite dot product)."""
    os.pwrite(
        fd, torch.full((max_calls,), math.nan, dtype=torch.float64).numpy().tobytes(), spec["__shared__"][0]
    )


def calls_made(fd: int, spec: dict, max_calls: int) -> int:
    """How many calls of the round have written their checksum into the buffer ``fd`` so far: those before the first
    NaN (``unwritten``)."""
    left = read_back(fd, spec, torch.empty(max_calls, dtype=torch.float64)).isnan()
    return int(left.int().argmax()) if bool(left.any()) else max_calls


def read_back(fd: int, spec: dict, like: torch.Tensor) -> torch.Tensor:
    """The tensor the child left in the buffer ``fd`` where ``spec`` places one like ``like``."""
    data = bytearray(like.nbytes)
    if os.preadv(fd, [data], spec["__shared__"][0]) != len(data):
        raise StudentError(_("left the shared buffer unreadable"), raised=False, kind="timed-result")
    return torch.frombuffer(data, dtype=torch.uint8).view(like.dtype).view(like.shape)


def sealed_buffer(size: int) -> int:
    """A memfd of ``size`` bytes whose size is sealed: the child can neither grow it (memory the address-space limit
    would not see) nor shrink it under the grader's reads."""
    fd = os.memfd_create("posref-timed-round", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
    os.ftruncate(fd, size)
    fcntl.fcntl(fd, fcntl.F_ADD_SEALS, fcntl.F_SEAL_GROW | fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_SEAL)
    return fd
