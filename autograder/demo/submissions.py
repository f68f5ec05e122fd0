"""Example submissions for the demo assignment: correct, written differently, partly wrong, and hostile.

Each entry gives the student's code for the answer cells (by grade id), extra files placed beside the notebook,
and the score of record it should get with a one-line reason (the demo prints both; the tests assert them).
"""

from __future__ import annotations

PE = """def sinusoidal_pe(n_positions, dim, base=10000.0):
    freqs = base ** (-torch.arange(0, dim, 2, dtype=torch.float32) / dim)
    angles = torch.arange(n_positions, dtype=torch.float32)[:, None] * freqs
    return torch.stack((angles.sin(), angles.cos()), dim=-1).flatten(-2)
"""

ROPE = """def apply_rope(x, cos, sin, layout="half"):
    r = cos.shape[-1]
    xf, c, s = x.float(), cos.float(), sin.float()
    if layout == "half":
        a, b = xf[..., :r], xf[..., r : 2 * r]
        rot = torch.cat((a * c - b * s, b * c + a * s), -1)
    else:
        a, b = xf[..., 0 : 2 * r : 2], xf[..., 1 : 2 * r : 2]
        rot = torch.stack((a * c - b * s, b * c + a * s), -1).flatten(-2)
    return torch.cat((rot, xf[..., 2 * r :]), -1).to(x.dtype)
"""

PE_FLOAT64 = """import math


def sinusoidal_pe(n_positions, dim, base=10000.0):
    pos = torch.arange(n_positions, dtype=torch.float64).unsqueeze(1)
    div = torch.exp(torch.arange(0, dim, 2, dtype=torch.float64) * (-math.log(base) / dim))
    pe = torch.zeros(n_positions, dim, dtype=torch.float64)
    pe[:, 0::2], pe[:, 1::2] = torch.sin(pos * div), torch.cos(pos * div)
    return pe
"""

ROPE_COMPLEX = """def apply_rope(x, cos, sin, layout="half"):
    r = cos.shape[-1]
    xf = x.float()
    rot, rest = xf[..., : 2 * r], xf[..., 2 * r :]
    if layout == "half":
        z = torch.complex(rot[..., :r], rot[..., r:])
    else:
        z = torch.view_as_complex(rot.reshape(*rot.shape[:-1], r, 2).contiguous())
    z = z * torch.complex(cos.float(), sin.float())
    rot = torch.cat((z.real, z.imag), -1) if layout == "half" else torch.view_as_real(z).flatten(-2)
    return torch.cat((rot, rest), -1).to(x.dtype)
"""

ROPE_WRONG_LAYOUT = ROPE.replace('if layout == "half"', 'if layout != "half"')

WRONG_PE = "def sinusoidal_pe(n_positions, dim, base=10000.0):\n    return torch.zeros(n_positions, dim)\n"
WRONG_ROPE = 'def apply_rope(x, cos, sin, layout="half"):\n    return x.clone()\n'

PATCHER = (
    WRONG_PE
    + WRONG_ROPE
    + """
import builtins, time, torch.testing, posref, posref.rope, posref.grading, posref.grading.report as report
posref.apply_rope = posref.rope.apply_rope = apply_rope          # the reference now agrees with me
posref.sinusoidal_pe = sinusoidal_pe
report.difference = lambda *a, **k: None                        # every comparison passes
report.first_difference = lambda *a, **k: None
torch.testing.assert_close = lambda *a, **k: None
time.perf_counter = lambda: 0.0                                  # every timing is zero
_real_import = builtins.__import__
builtins.__import__ = lambda name, *a, **k: _real_import(name, *a, **k)
def check_sinusoidal_pe(*a, **k): pass                           # the test helpers do nothing
def check_apply_rope(*a, **k): pass
def check_apply_rope_speed(*a, **k): pass
try:
    get_ipython().showtraceback = lambda *a, **k: None          # and failures are not displayed
except NameError:
    pass
"""
)

GRADEBOOK_WRITER = (
    PE
    + """
import glob, os, sqlite3
for db in glob.glob(os.path.expanduser("~/posref-course/gradebook.db")) + glob.glob("/*/*/gradebook.db") + glob.glob("../../*.db"):
    try:
        with sqlite3.connect(db) as con:
            con.execute("UPDATE grade SET auto_score = 100")
    except Exception:
        pass
"""
)

READER = """import glob
stolen = ""
guesses = ["/tmp/*/submitted/*/positions/*.ipynb", "/root/posref-course/submitted/*/positions/*.ipynb",
           "../*/positions/*.ipynb", "../../*/positions/*.ipynb", "/work/*/submitted/*/*/*.ipynb"]
for path in [p for g in guesses for p in glob.glob(g)]:
    stolen += open(path).read()
def sinusoidal_pe(n_positions, dim, base=10000.0):
    if not stolen:
        raise RuntimeError("nothing to copy")
"""

LOOP = (
    """while True:   # an infinite loop that swallows KeyboardInterrupt
    try:
        pass
    except KeyboardInterrupt:
        pass
"""
    + ROPE
)

EXIT = "import os\nos._exit(0)\n" + PE
MEMORY_BOMB = ROPE.replace(
    "    r = cos.shape[-1]\n", "    hog = [bytearray(2**30) for _ in range(64)]\n    r = cos.shape[-1]\n"
)
FORK_BOMB = "import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass\n" + PE

SHADOW_POSREF = """def apply_rope(x, cos, sin, layout="half"):
    return x.clone()
def sinusoidal_pe(n, dim, base=10000.0):
    import torch
    return torch.zeros(n, dim)
"""

# name: (answers by grade id, extra files, expected score of record, why)
SUBMISSIONS: dict[str, tuple[dict[str, str], dict[str, str], float | None, str]] = {
    "correct": ({"sinusoidal_pe": PE, "apply_rope": ROPE}, {}, 6, "correct"),
    "different": (
        {"sinusoidal_pe": PE_FLOAT64, "apply_rope": ROPE_COMPLEX},
        {},
        6,
        "correct: float64 table, complex rotation",
    ),
    "partial": (
        {"sinusoidal_pe": PE, "apply_rope": ROPE_WRONG_LAYOUT},
        {},
        2,
        "apply_rope swaps the layouts",
    ),
    "patcher": (
        {"sinusoidal_pe": PATCHER, "apply_rope": WRONG_ROPE},
        {},
        0,
        "wrong functions; patches posref, the checkers, torch.testing, the clock, __import__, traceback display",
    ),
    "shadow": (
        {"sinusoidal_pe": WRONG_PE, "apply_rope": WRONG_ROPE},
        {"posref.py": SHADOW_POSREF},
        0,
        "a posref.py beside the notebook that fakes the reference",
    ),
    "gradebook": (
        {"sinusoidal_pe": GRADEBOOK_WRITER, "apply_rope": ROPE},
        {},
        6,
        "correct, and tries to write 100 into every grade of the gradebook",
    ),
    "reader": (
        {"sinusoidal_pe": READER, "apply_rope": ROPE},
        {},
        4,
        "tries to read other students' notebooks",
    ),
    "loop": (
        {"sinusoidal_pe": PE, "apply_rope": LOOP},
        {},
        2,
        "an infinite loop that swallows KeyboardInterrupt",
    ),
    "exit": ({"sinusoidal_pe": EXIT, "apply_rope": ROPE}, {}, 4, "os._exit in the sinusoidal_pe cell"),
    "memory": ({"sinusoidal_pe": PE, "apply_rope": MEMORY_BOMB}, {}, 2, "apply_rope allocates 64 GiB"),
    "forkbomb": (
        {"sinusoidal_pe": FORK_BOMB, "apply_rope": ROPE},
        {},
        4,
        "a fork bomb in the sinusoidal_pe cell",
    ),
    "corrupt": ({}, {"positions.ipynb": "{ this is not a notebook"}, None, "the notebook file is not JSON"),
}
