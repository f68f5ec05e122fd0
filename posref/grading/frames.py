"""The student's own frames in a traceback: where their code raised, said without a path of the machine it ran on
(``where_it_raised``), which frames a notebook shows them (``students``) and how, in the student's language
(``shown``; ``failure.CheckFailed``)."""

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
REPEATS = 3  # a frame this many times in a row or more (a recursion) is shown once, with its count


def students(filename: str) -> bool:
    """Whether a frame's file is the student's code (a notebook cell, their own module)."""
    path = Path(filename).resolve()
    return not any(path.is_relative_to(folder) for folder in _NOT_THEIRS)


def where_it_raised(err: BaseException) -> str:
    """`` (line 3 of cell 5: `y = x @ w`)``: the student's own line where ``err`` was raised or passed through
    last (the innermost of their frames), named as ``_place`` names it, never by a path of the machine it ran on;
    '' when no frame is theirs. A stub's ``NotImplementedError`` gets none: what it says (or the stub hint) is what
    to do."""
    if isinstance(err, NotImplementedError):
        return ""
    tb = traceback.extract_tb(err.__traceback__)
    frames = [f for f in tb if students(f.filename) and not f.filename.startswith(("<frozen", "<string"))]
    if not frames:
        return ""
    frame = frames[-1]
    place = _place(frame.filename)
    code = (frame.line or "").strip()
    if code:
        return _(" (line {line} of {place}: `{code}`)").format(
            line=frame.lineno, place=place, code=code[:160]
        )
    return _(" (line {line} of {place})").format(line=frame.lineno, place=place)


def _place(filename: str) -> str:
    """The student's words for the file a frame ran in: a cell run by the score of record's child is ``<cell N>``
    ("cell N", N counting the source notebook's cells from 0), a notebook cell in the student's kernel "your cell",
    a module of theirs its file name."""
    if filename.startswith("<cell ") and filename.endswith(">"):
        return _("cell {number}").format(number=filename[len("<cell ") : -1])
    if filename.startswith("<") or "ipykernel_" in filename or "ipython-input" in filename:
        return _("your cell")
    return Path(filename).name


def shown(frames: list[traceback.FrameSummary]) -> list[str]:
    """``frames`` as a notebook shows them to the student, a frame a few lines: where it is, in the student's
    language and without a path of the machine (``line 3 of your cell, in attention``; the function's name as
    Python has it, ``<module>`` for a cell's own code), then its line of code and, where Python marks it, the part
    that raised (``traceback``'s lines, unchanged). A frame repeated ``REPEATS`` times in a row or more (a
    recursion) is shown once, with how many times it came."""
    lines: list[str] = []
    i = 0
    while i < len(frames):
        frame, run = frames[i], 1
        while i + run < len(frames) and _same(frames[i + run], frame):
            run += 1
        where = _("line {line} of {place}, in {function}").format(
            line=frame.lineno, place=_place(frame.filename), function=frame.name
        )
        lines.append("  " + where)
        text = traceback.StackSummary.from_list([frame]).format()[0]
        head = f'  File "{frame.filename}", line {frame.lineno}, in {frame.name}\n'
        code = text.removeprefix(head) if text.startswith(head) else text.partition("\n")[2]
        lines += code.rstrip("\n").split("\n") if code.strip() else []
        if run >= REPEATS:
            lines.append("  " + _("[the frame above, {count} times in a row]").format(count=run))
            i += run
        else:
            i += 1
    return lines


def _same(a: traceback.FrameSummary, b: traceback.FrameSummary) -> bool:
    return (a.filename, a.lineno, a.name) == (b.filename, b.lineno, b.name)
