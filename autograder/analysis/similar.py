"""``python -m autograder similar ASSIGNMENT``: how alike each pair of students' answer cells are.

For every graded answer cell (a code cell nbgrader's release gives as a stub) of the assignment's notebooks, each
student's cell as handed in (``submitted/<student>/<assignment>/``; read as JSON, never run, never rendered) is
tokenised and fingerprinted (``fingerprints.py``: names, comments, docstrings and layout do not count; the release's
stub is boilerplate). Every pair of students is compared, and each student with the references: the published
solution (``solutions/``) and, when given, an earlier term's submissions (``--earlier FOLDER``, laid out as
``submitted/``).

A pair's ``similarity`` is the share of both cells' own tokens that the other cell holds too (each cell's matched
tokens over its fingerprinted tokens, ``share_a`` and ``share_b``, weighted by the cells' sizes: 0 shares nothing,
1 is the same code however renamed, re-commented or reordered). A cell with fewer than ``MIN_TOKENS`` tokens of its
own is too small to judge (short answers are alike by necessity): it is listed, never scored; one with none of its
own (the stub as released) shares nothing with anyone and scores 0. A notebook that cannot be read, or a cell over
``MAX_CELL`` characters, costs that student's row only, and says why.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from itertools import combinations
from pathlib import Path

from copydetect import compare_files

from autograder import course
from autograder.analysis.fingerprints import Tokens, fingerprint, tokens

# the page's default: above what independent answers reached in the course's cells (test_similar)
THRESHOLD = 0.8
MIN_TOKENS = 24  # own tokens (two fingerprints' worth) below which a cell is too small to judge
MAX_CELL = 50_000  # characters of one answer cell; a larger one is not compared
MAX_NOTEBOOK = 32 * 2**20  # bytes of a notebook (what import takes)
MAX_SHOWN = 200  # pairs on the page
SOLUTION = "[solutions]"  # the reference of the published solution (no student id has brackets)
CSV_FIELDS = ["cell", "student_a", "student_b", "similarity", "notebook", "share_a", "share_b", "tokens_a",
              "tokens_b"]  # fmt: skip


@dataclass
class Pair:
    notebook: str
    cell: str
    a: str
    b: str
    similarity: float
    share_a: float
    share_b: float
    tokens_a: int
    tokens_b: int
    slices: tuple = ()  # the matching slices of each side, in source offsets: ([(start, end)], [(start, end)])


@dataclass
class Similarity:
    assignment: str
    threshold: float
    pairs: list[Pair] = field(default_factory=list)
    sources: dict[tuple[str, str, str], str] = field(
        default_factory=dict
    )  # (notebook, cell, who) -> code shown
    too_small: list[tuple[str, str, str, int]] = field(
        default_factory=list
    )  # (notebook, cell, who, own tokens)
    unchanged: list[tuple[str, str, str]] = field(default_factory=list)  # the stub as released
    problems: list[tuple[str, str, str]] = field(default_factory=list)  # (who, notebook, why)
    cells: list[tuple[str, str, int]] = field(
        default_factory=list
    )  # (notebook, cell, the solution's own tokens)

    @property
    def flagged(self) -> list[Pair]:
        return sorted((p for p in self.pairs if p.similarity >= self.threshold), key=lambda p: -p.similarity)


def _answer_cells(path: Path) -> dict[str, str]:
    """grade id -> source of each code answer cell of the notebook at ``path``, read as plain JSON whatever it holds:
    a cell whose metadata or source is not what nbgrader writes is not an answer; ValueError where the file is no
    notebook or too large."""
    if path.stat().st_size > MAX_NOTEBOOK:
        raise ValueError(f"{path.stat().st_size} bytes (at most {MAX_NOTEBOOK})")
    data = json.loads(path.read_bytes())
    cells = data.get("cells") if isinstance(data, dict) else None
    if not isinstance(cells, list):
        raise ValueError("no list of cells")
    found: dict[str, str] = {}
    for cell in cells:
        meta = cell.get("metadata") if isinstance(cell, dict) else None
        meta = meta.get("nbgrader") if isinstance(meta, dict) else None
        if not (isinstance(meta, dict) and meta.get("solution") is True and cell.get("cell_type") == "code"):
            continue
        grade_id, source = meta.get("grade_id"), cell.get("source")
        if isinstance(source, list) and all(isinstance(line, str) for line in source):
            source = "".join(source)
        if isinstance(grade_id, str) and isinstance(source, str):
            found.setdefault(grade_id, source)
    return found


def _students(folder: Path, assignment: str) -> list[tuple[str, Path]]:
    """(student, submission folder) of each valid student id of a ``submitted/``-like ``folder``."""
    if not folder.is_dir():
        return []
    return [(p.name, p / assignment) for p in sorted(folder.iterdir())
            if course.student_id_problem(p.name) is None and (p / assignment).is_dir()]  # fmt: skip


def similar(assignment: str, *, threshold: float = THRESHOLD, earlier: list[Path] = ()) -> Similarity:
    """The similarity of every pair of students (and each student with the references) for each graded answer cell
    of ``assignment`` (see the module docstring); ``threshold``: the pairs from which ``flagged`` holds."""
    course.require_assignment(assignment)
    if not 0 <= threshold <= 1:
        raise SystemExit(f"--threshold is a similarity from 0 to 1, not {threshold}")
    result = Similarity(assignment, threshold)
    students = _students(course.course_dir() / "submitted", assignment)
    references = [
        (f"[earlier {i + 1}] {s}", p) for i, f in enumerate(earlier) for s, p in _students(f, assignment)
    ]
    for source in sorted((course.source_dir() / assignment).glob("*.ipynb")):
        release = course.release_dir() / assignment / source.name
        if not release.is_file():
            raise SystemExit(
                f"no release of {assignment} at {release}: run `python -m autograder release {assignment}`"
            )
        stubs, solutions = _answer_cells(release), _answer_cells(source)
        handed: dict[str, dict[str, str]] = {}
        for who, folder in [*students, *references]:
            try:
                handed[who] = _answer_cells(folder / source.name)
            except FileNotFoundError:
                result.problems.append((who, source.name, "no such notebook in the submission"))
            except (OSError, ValueError, RecursionError, UnicodeError) as err:
                result.problems.append(
                    (who, source.name, f"cannot be read ({type(err).__name__}: {str(err)[:200]})")
                )
        for cell in stubs:
            _compare_cell(result, source.stem, cell, stubs[cell], solutions.get(cell, ""), handed,
                          {who for who, _ in students})  # fmt: skip
    return result


def _compare_cell(result: Similarity, notebook: str, cell: str, stub: str, solution: str,
                  handed: dict[str, dict[str, str]], students: set[str]) -> None:  # fmt: skip
    """Every pair of one answer cell: the ``students`` of ``handed`` with each other and with the references (the
    solution, then the rest of ``handed``: an earlier term's)."""
    vocabulary: dict = {}
    boilerplate = fingerprint(tokens(stub, vocabulary)).hashes
    judged: dict[str, tuple[Tokens, object]] = {}
    unchanged: set[str] = set()
    for who, source in [(SOLUTION, solution), *((w, cells.get(cell)) for w, cells in handed.items())]:
        if source is None:
            continue
        if len(source) > MAX_CELL:
            result.problems.append(
                (who, notebook, f"{cell}: {len(source)} characters (at most {MAX_CELL}): not compared")
            )
            continue
        cell_tokens = tokens(source, vocabulary)
        found = fingerprint(cell_tokens, boilerplate)
        own = int(found.token_coverage)
        if own == 0:
            unchanged.add(who)
            result.unchanged.append((notebook, cell, who))
        elif own < MIN_TOKENS:
            result.too_small.append((notebook, cell, who, own))
        else:
            judged[who] = (cell_tokens, found)
    result.cells.append(
        (notebook, cell, int(judged[SOLUTION][1].token_coverage) if SOLUTION in judged else 0)
    )
    current = [who for who in handed if who in students]
    references = [SOLUTION, *(who for who in handed if who not in students)]
    pairs = [*combinations(current, 2), *((s, r) for s in current for r in references)]
    for a, b in pairs:
        if a in judged and b in judged:
            result.pairs.append(_pair(notebook, cell, a, b, judged[a], judged[b], result))
        elif (a in unchanged and (b in judged or b in unchanged)) or (b in unchanged and a in judged):
            sizes = [int(judged[w][1].token_coverage) if w in judged else 0 for w in (a, b)]
            result.pairs.append(Pair(notebook, cell, a, b, 0.0, 0.0, 0.0, *sizes))


def _pair(notebook: str, cell: str, a: str, b: str, first: tuple, second: tuple, result: Similarity) -> Pair:
    (tokens_a, found_a), (tokens_b, found_b) = first, second
    size_a, size_b = int(found_a.token_coverage), int(found_b.token_coverage)
    if not found_a.hashes & found_b.hashes:
        return Pair(notebook, cell, a, b, 0.0, 0.0, 0.0, size_a, size_b)
    _overlap, (share_a, share_b), (slices_a, slices_b) = compare_files(found_a, found_b)
    similarity = (share_a * size_a + share_b * size_b) / (size_a + size_b)
    pair = Pair(notebook, cell, a, b, float(similarity), float(share_a), float(share_b), size_a, size_b)
    if similarity >= result.threshold:  # kept for the page: the matching slices, in the sources' own offsets
        pair.slices = (_spans(tokens_a, slices_a), _spans(tokens_b, slices_b))
        for who, cell_tokens in ((a, tokens_a), (b, tokens_b)):
            result.sources[(notebook, cell, who)] = cell_tokens.source
    return pair


def _spans(cell: Tokens, slices) -> list[tuple[int, int]]:
    """copydetect's slices (symbol ranges) as ranges of the cell's source."""
    spans = []
    for start, end in zip(*slices, strict=True):
        covered = [
            cell.spans[i] for i in range(int(start), min(int(end), len(cell.spans))) if cell.spans[i][1]
        ]
        if covered:
            spans.append((covered[0][0], covered[-1][1]))
    return spans


def csv_rows(result: Similarity) -> list[list[str]]:
    return [[p.cell, p.a, p.b, f"{p.similarity:.4f}", p.notebook, f"{p.share_a:.4f}", f"{p.share_b:.4f}",
             str(p.tokens_a), str(p.tokens_b)] for p in result.pairs]  # fmt: skip


def summary(result: Similarity) -> list[str]:
    flagged = result.flagged
    lines = [f"{result.assignment}: {len(result.pairs)} pair(s) scored, {len(flagged)} from {result.threshold:g}; "
             f"{len(result.too_small)} cell(s) too small to judge (under {MIN_TOKENS} tokens of their own), "
             f"{len(result.unchanged)} unchanged from the release"]  # fmt: skip
    for p in flagged[:20]:
        lines.append(course.printable(f"  {p.similarity:.2f}  {p.cell:<24} {p.a} ~ {p.b}"))
    for who, notebook, why in result.problems:
        lines.append(course.printable(f"not compared: {who} {notebook}: {why}")[:200])
    return lines
