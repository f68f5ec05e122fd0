"""What a student reads when a notebook of an edition runs, and which of it is English the edition should have said
in its own language (the helpers of ``test_edition_text.py``).

``student_run`` runs an edition's solution at fast settings with, before each answer cell, the released answer
cell (its stub) and the checks after it: so one run shows every output of a finished notebook and, for every
exercise, what a student meets first (the stub's error as each check reports it). A cell put first (``CAPTURE``)
records in a file every text of every figure matplotlib draws (``Figure.draw``: an inline figure, an explorer's
picture, a saved file: titles, axes, ticks, legends, table cells) and every warning or matplotlib log record (a
missing glyph is one of those); the notebook's own cells run unchanged.

``english_words`` says which words of a line are English: everything but code, formulas and the words an edition
keeps in English (``kept_words``: the glossary's).
"""

from __future__ import annotations

import copy
import csv
import json
import re
from dataclasses import dataclass
from pathlib import Path

import nbformat
from nbclient import NotebookClient

REPO = Path(__file__).resolve().parents[2]
GLOSSARY = REPO / "locale" / "glossary.csv"

# Run in a namespace named like matplotlib's own modules, so that a warning matplotlib draws is reported at the
# notebook's line (``matplotlib._api.warn_external`` skips matplotlib's frames), as it is without this cell.
_SEEN = r"""
import json, logging, os, warnings
import matplotlib.figure, matplotlib.text

def seen(kind, text):
    with open(os.environ["POSREF_SEEN"], "a", encoding="utf-8") as f:
        f.write(json.dumps({"kind": kind, "text": str(text)}, ensure_ascii=False) + "\n")

draw = matplotlib.figure.Figure.draw
def drawn(self, renderer):
    for t in self.findobj(matplotlib.text.Text):
        if t.get_visible() and t.get_text().strip():
            seen("figure", t.get_text())
    return draw(self, renderer)
matplotlib.figure.Figure.draw = drawn

show = warnings.showwarning
def warned(message, category, *args, **kwargs):
    seen("warning", f"{category.__name__}: {message}")
    return show(message, category, *args, **kwargs)
warnings.showwarning = warned

class Logged(logging.Handler):
    def emit(self, record):
        seen("warning", f"{record.name}: {record.getMessage()}")
logging.getLogger("matplotlib").addHandler(Logged(logging.WARNING))
"""
CAPTURE = f"exec({_SEEN!r}, {{'__name__': 'matplotlib.posref_seen'}})"

GLYPH = re.compile(r"missing from font|does not have a glyph", re.IGNORECASE)  # matplotlib's warnings of one
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")  # a traceback's colours
_MARKUP = re.compile(r"<(style|script)\b.*?</\1>|<[^>]*>", re.DOTALL | re.IGNORECASE)


@dataclass(frozen=True)
class Seen:
    """One line a student reads: ``kind`` is ``output``, ``error`` (an error's message), ``figure`` or
    ``warning``; ``where`` names the notebook and the cell (a figure's or a warning's: the notebook)."""

    kind: str
    where: str
    text: str


def _nbgrader(cell) -> dict:
    meta = cell.get("metadata", {}).get("nbgrader", {})
    return meta if isinstance(meta, dict) else {}


def student_notebook(solution: Path, release: Path):
    """The solution, with before each answer cell of code the released one (its stub, which may raise where it
    stands: 08's pasted class) and the checks that follow it (``posref_stub`` in their metadata: "stub" and
    "check"): the checks must fail, every cell of the solution must not."""
    nb = nbformat.read(solution, as_version=4)
    released = {_nbgrader(c).get("grade_id"): c for c in nbformat.read(release, as_version=4).cells}
    cells = []
    for i, cell in enumerate(nb.cells):
        meta = _nbgrader(cell)
        if cell.cell_type == "code" and meta.get("solution") and meta.get("grade_id") in released:
            checks = []
            for after in nb.cells[i + 1 :]:
                if after.cell_type != "code" or not _nbgrader(after).get("grade"):
                    break
                checks.append(after)
            for kind, added in (("stub", released[meta["grade_id"]]), *(("check", c) for c in checks)):
                added = copy.deepcopy(added)
                added.metadata["posref_stub"] = kind
                cells.append(added)
        cells.append(cell)
    nb.cells = cells
    return nb


def _lines(output) -> tuple[str, str]:
    """(kind, text) of one output."""
    if output.output_type == "stream":
        return "output", output.text
    if output.output_type == "error":
        return "error", _error_text(output)
    data = output.get("data", {})
    if "text/html" in data:
        return "output", _MARKUP.sub(" ", data["text/html"])
    for kind in ("text/markdown", "text/plain"):
        if kind in data and not any(k.startswith("image/") for k in data):
            return "output", data[kind]
    return "output", ""


def _error_text(output) -> str:
    """What a student reads of an error. posref's failure (``CheckFailed._render_traceback_``: its message, a blank
    line, then a header and the student's frames) is read whole but for each frame's code and Python's marks under
    it (the lines indented four spaces after the blank line): each frame's place is read. Any other error shows
    IPython's traceback, whose frames' headers are IPython's: its message is read (``ename: evalue``)."""
    shown = [_ANSI.sub("", line) for line in output.get("traceback", [])]
    if not shown or not shown[0].startswith(f"{output.ename}: ") or "" not in shown:
        return f"{output.ename}: {output.evalue}"
    blank = shown.index("")
    frames = [line for line in "\n".join(shown[blank + 1 :]).splitlines() if not line.startswith("    ")]
    return "\n".join([*shown[:blank], *frames])


def student_run(nb, name: str, workdir: Path, env: dict[str, str], *, timeout: int = 600):
    """Run ``nb`` (``student_notebook``'s) in ``workdir`` -> (every ``Seen`` line, the cells that failed but
    should not have, the checks of a stub that did not fail, the notebook run)."""
    seen_file = workdir / f".{name}.seen.jsonl"
    seen_file.unlink(missing_ok=True)
    nb = copy.deepcopy(nb)
    nb.cells.insert(0, nbformat.v4.new_code_cell(CAPTURE))
    client = NotebookClient(nb, timeout=timeout, kernel_name="python3", allow_errors=True,
                            resources={"metadata": {"path": str(workdir)}})  # fmt: skip
    client.execute(env={**env, "POSREF_SEEN": str(seen_file)})
    seen, failed, passed_stubs = [], [], []
    for cell in nb.cells[1:]:
        where = f"{name}:{cell.get('id', '')}"
        errors = [o for o in cell.get("outputs", []) if o.output_type == "error"]
        if cell.metadata.get("posref_stub") == "check" and not errors:
            passed_stubs.append(where)
        elif errors and not cell.metadata.get("posref_stub"):
            failed.append(f"{where}: {errors[0].ename}: {errors[0].evalue}")
        for output in cell.get("outputs", []):
            kind, text = _lines(output)
            seen += [Seen(kind, where, line.strip()) for line in text.splitlines() if line.strip()]
    if seen_file.is_file():
        for line in seen_file.read_text(encoding="utf-8").splitlines():
            record = json.loads(line)
            seen += [Seen(record["kind"], name, t.strip()) for t in record["text"].splitlines() if t.strip()]
    return seen, failed, passed_stubs, nb


def missing_glyphs(seen: list[Seen]) -> list[str]:
    """The warnings of ``seen`` that say a figure drew a box for a missing glyph, each once, with where."""
    return sorted({f"{s.where}: {s.text}" for s in seen if s.kind == "warning" and GLYPH.search(s.text)})


# ---- which words are English ----------------------------------------------------------------------------------

_FORMULA = re.compile(r"\$[^$]*\$")
_CITATION = re.compile(r"\b[A-Z][A-Za-z-]+( and [A-Z][A-Za-z-]+)? et al\.?,?( \d{4})?|\barXiv \d{4}\.\d{4,5}")
_TOKEN = re.compile(r"[A-Za-z0-9_](?:[A-Za-z0-9_.\-/']*[A-Za-z0-9_])?")
_INNER_CAPITAL = re.compile(r"[a-z][A-Z]|[A-Z]{2}")  # RoPE, NTK, NoPEHandler, DeepSeek: names and acronyms
_CODE = re.compile(r"[_./\d]")  # d_model, torch.float32, meta-llama/Llama-3.1-8B, t5, 0.9x
_QUOTES = "'\"`"


def kept_words(edition: str, glossary: Path = GLOSSARY) -> set[str]:
    """The words the glossary keeps in English in ``edition`` (its column's Latin words, case as written)."""
    with open(glossary, encoding="utf-8", newline="") as f:
        return {w for row in csv.DictReader(f) for w in re.findall(r"[A-Za-z]+", row.get(edition) or "")}


def english_words(line: str, kept: set[str]) -> list[str]:
    """The words of ``line`` (two letters or more) that are English a translation should have replaced. Not
    counted: formulas (``$...$``), citations (``Barbero et al. 2024``, ``arXiv 2410.06205``); code: a token with ``_``, ``.``, ``/`` or a digit, one followed by ``(``, ``[``,
    ``=`` or ``^`` or following ``=``, a quoted token, a Python name in ``<...>`` (``<module>``); names and
    acronyms with a capital inside (``RoPE``, ``NoPEHandler``); and the words ``kept`` (a hyphenated word counts
    when each of its parts does)."""
    text = _CITATION.sub(" ", _FORMULA.sub(" ", line))
    found = []
    for m in _TOKEN.finditer(text):
        token = m.group(0)
        if not re.search(r"[A-Za-z]{2}", token):
            continue
        after = text[m.end() :].lstrip()[:1]
        before = text[: m.start()].rstrip()[-1:]
        quoted = m.start() > 0 and text[m.start() - 1] in _QUOTES and text[m.end() : m.end() + 1] in _QUOTES
        python_name = text[m.start() - 1 : m.start()] + text[m.end() : m.end() + 1] == "<>"  # <module>
        if (
            _CODE.search(token.strip("'"))
            or _INNER_CAPITAL.search(token)
            or after in ("(", "[", "=", "^")
            or before == "="
            or quoted
            or python_name
            or token in kept
        ):
            continue
        parts = [p for p in re.split(r"[-']", token) if len(p) > 1]
        if parts and all(p in kept or _INNER_CAPITAL.search(p) for p in parts):
            continue
        found.append(token)
    return found


def english_words_in(texts: list[str], edition: str) -> list[str]:
    """The English words of ``texts`` (an interface's labels and sentences) a student of ``edition`` should not read:
    ``english_words`` of each line, with the glossary's kept words of ``edition``."""
    kept = kept_words(edition)
    return [w for text in texts for line in text.splitlines() for w in english_words(line, kept)]
