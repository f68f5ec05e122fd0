"""The frames both ends of the child's protocol write and read: a length (8 bytes, little-endian) and a
``torch.save`` payload of that many bytes.

The child writes them with ``encode`` (``serve``), the grader reads them with ``read_exact`` and refuses a frame
announced over ``MAX_FRAME`` bytes before it reads it (``remote.Child``): the length is the child's to write, so
the grader never waits for, nor buffers, more than that.
"""

from __future__ import annotations

import io
import os
import select
import struct
import time
from typing import Any

import torch

MAX_FRAME = 256 * 2**20
HEADER = struct.Struct("<Q")


def encode(obj: Any) -> bytes:
    """``obj`` as one frame: its length, then its ``torch.save`` bytes."""
    buf = io.BytesIO()
    torch.save(obj, buf)
    data = buf.getvalue()
    return HEADER.pack(len(data)) + data


def read_exact(fd: int, n: int, deadline: float | None) -> bytes:
    """``n`` bytes from ``fd``; EOFError where it closes first, TimeoutError past ``deadline`` (monotonic
    seconds; None: no limit)."""
    chunks, got = [], 0
    while got < n:
        if deadline is not None:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                raise TimeoutError
        chunk = os.read(fd, min(n - got, 1 << 20))
        if not chunk:
            raise EOFError
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


def write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]
