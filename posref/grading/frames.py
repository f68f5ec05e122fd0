"""The student's own frames in a traceback: where their code raised, said without a path of the machine it ran on
(``where_it_raised``), and which frames a notebook shows them (``students``; ``report.CheckFailed``)."""

from __future__ import annotations

import sysconfig
import traceback
from pathlib import Path

from posref.i18n import _

# frames in these folders are not the student's code: posref's own, the standard library's and installed packages'
# (IPython's, torch's)
_NOT_THEIRS = tuple(
    Path(p).resolve()
    for p in {
        str(Path(__file__).resolve().parents[1]),
        *(sysconfig.get_paths()[k] for k in ("stdlib", "purelib", "platlib")),
    }
)


def students(filename: str) -> bool:
    """Whether a frame's file is the student's code (a notebook cell, their own module)."""
    path = Path(filename).resolve()
    return not any(path.is_relative_to(folder) for folder in _NOT_THEIRS)


def where_it_raised(err: BaseException) -> str:
    """`` (line 3 of cell 5: `y = x @ w`)``: the student's own line where ``err`` was raised or passed through
    last (the innermost of their frames), never a path of the machine it ran on; '' when no frame is theirs.
    A cell run by the score of record's child is ``<cell N>`` (N counts the source notebook's cells from 0); a
    notebook cell in the student's kernel is "your cell"; a module of theirs is named by its file name. A stub's
    ``NotImplementedError`` gets none: what it says (or the stub hint) is what to do."""
    if isinstance(err, NotImplementedError):
        return ""
    tb = traceback.extract_tb(err.__traceback__)
    frames = [f for f in tb if students(f.filename) and not f.filename.startswith(("<frozen", "<string"))]
    if not frames:
        return ""
    frame = frames[-1]
    name = frame.filename
    if name.startswith("<cell ") and name.endswith(">"):
        place = _("cell {number}").format(number=name[len("<cell ") : -1])
    elif name.startswith("<") or "ipykernel_" in name or "ipython-input" in name:
        place = _("your cell")
    else:
        place = Path(name).name
    code = (frame.line or "").strip()
    if code:
        return _(" (line {line} of {place}: `{code}`)").format(
            line=frame.lineno, place=place, code=code[:160]
        )
    return _(" (line {line} of {place})").format(line=frame.lineno, place=place)
