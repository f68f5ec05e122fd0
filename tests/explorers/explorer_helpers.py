"""What the explorer tests share: decoded pixels, artists found by gid, the PNG an ``Output`` shows, and a run
in a fresh headless Python."""

from __future__ import annotations

import base64
import io
import os
import subprocess
import sys
from pathlib import Path

import matplotlib.image
import numpy as np

from posref.explorers.base import Explorer

REPO = Path(__file__).resolve().parents[2]
TWO_PI = 2 * np.pi


def pixels(png: bytes) -> np.ndarray:
    return matplotlib.image.imread(io.BytesIO(png), format="png")


def assert_pixels_differ(a: bytes, b: bytes, min_fraction: float = 1e-3) -> None:
    pa, pb = pixels(a), pixels(b)
    assert pa.shape == pb.shape, f"figure size changed: {pa.shape} -> {pb.shape}"
    fraction = np.any(pa != pb, axis=-1).mean()
    assert fraction > min_fraction, f"only {fraction:.2e} of the pixels differ"


def by_gid(fig, gid: str):
    found = [a for ax in fig.axes for a in (*ax.lines, *ax.collections, *ax.images) if a.get_gid() == gid]
    assert len(found) == 1, f"expected one artist with gid {gid!r}, found {len(found)}"
    return found[0]


def angle_error(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Distance between angles on the circle."""
    return np.abs(np.angle(np.exp(1j * (np.asarray(a) - np.asarray(b)))))


def shown_png(explorer: Explorer) -> bytes:
    (output,) = explorer.output.outputs
    return base64.b64decode(output["data"]["image/png"])


def run_headless(code: str) -> None:
    """Run ``code`` in a fresh Python with no display and the Agg backend; it must print "headless ok"."""
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY")}
    env.update(MPLBACKEND="Agg", PYTHONPATH=os.pathsep.join(filter(None, (str(REPO), env.get("PYTHONPATH")))))
    result = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=600, cwd=REPO
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert "headless ok" in result.stdout
