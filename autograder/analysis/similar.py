"""``python -m autograder similar ASSIGNMENT``: how alike each pair of students' answer cells are.

For every graded answer cell (a code cell nbgrader's release gives as a stub) of the assignment's notebooks, each
student's cell as handed in (``submitted/<student>/<assignment>/``; read as JSON, never run, never rendered) is
tokenised and fingerprinted (``fingerprints.py``: names, comments, docstrings and layout do not count; the release's
stub is boilerplate). Every pair of students is compared, and each student with the references: the published
solution (``solutions/``) and, when given, an earlier term's submissions (``--earlier FOLDER``, laid out as
``submitted/``).

A cell's own tokens are those of its fingerprints that are neither the release's (the stub) nor common knowledge,
as MOSS leaves out a passage found in more than ``-m`` programs (Schleimer, Wilkerson & Aiken, "Winnowing", SIGMOD
2003, and MOSS's documentation): a passage held by more than ``COMMON`` answers written apart is what the exercise,
or the course, makes everyone write, not a sign that one copied another. The answers counted are the cell's
(students', the solution's, an earlier term's), copies of one another counted once (``_copies``: one holds at least
``SAME_SOURCE`` of the other's tokens, the stub left out, so that a copy padded with code of its own or left
unfinished is a copy: however many students copy one answer, the published solution among them, its passages stay
evidence), and the course's published solutions to every other answer cell (each written for another exercise:
what recurs among them is the course's idiom, such as ``torch.arange(0, D, 2, ...)``). MOSS keeps its ``-m`` at 3
or 4 for short programs so as to still see 3- and 4-way copying; counting copies once sees any number, so
``COMMON`` is 2 (MOSS's ``-m 2``: a passage is evidence while only two answers written apart hold it).

An answer cell is too small to judge when its solution holds fewer than ``MIN_TOKENS`` tokens that no answer written
apart from it (no copy of it) holds too, common knowledge and the stub left out: it is one formula that every
correct answer writes out alike, and a copy of it cannot be told from an answer written alone. Its answers are
listed, never scored. In a cell large enough to judge, an answer with fewer than ``MIN_TOKENS`` tokens of its own is
too small to judge (listed, never scored); one with none but the stub's (as released) shares nothing with anyone
and scores 0. A pair's ``similarity`` is the share of both cells' own tokens that the other cell holds too (each
cell's matched tokens over its own tokens, ``share_a`` and ``share_b``, weighted by the cells' sizes: 0 shares
nothing, 1 is the same code however renamed, re-commented or reordered).

The class is the evidence of what is common: a cell with ``COMMON`` answers or fewer (the solution's included) can
learn it only from the course's solutions to other cells, and the summary says so; an earlier term's answers
(``--earlier``) count as answers here too. A notebook that cannot be read, or a cell over ``MAX_CELL`` characters,
costs that student's row only, and says why.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from itertools import combinations
from pathlib import Path

from copydetect import CodeFingerprint, compare_files

from autograder import course
from autograder.analysis.defaults import COMMON, THRESHOLD  # the command line's defaults too
from autograder.analysis.fingerprints import Tokens, fingerprint, tokens

MIN_TOKENS = (
    24  # own tokens (two fingerprints' worth) under which an answer, or a cell, is too small to judge
)
# two answers are copies of one another where either holds this share of the other's tokens (the stub left out)
SAME_SOURCE = THRESHOLD
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
class Cell:
    """One answer cell: the solution's own tokens (beyond the stub and common knowledge), those of them that no
    answer written apart from it holds too (``specific``: under ``MIN_TOKENS``, the cell is too small to judge), how
    many fingerprints were common knowledge, and how many answers (the references' included) hold a token more than
    the stub."""

    notebook: str
    cell: str
    solution_tokens: int
    specific: int
    common: int
    answers: int

    @property
    def judged(self) -> bool:
        return self.specific >= MIN_TOKENS


@dataclass
class Similarity:
    assignment: str
    threshold: float
    common: int = COMMON
    pairs: list[Pair] = field(default_factory=list)
    sources: dict[tuple[str, str, str], str] = field(
        default_factory=dict
    )  # (notebook, cell, who) -> code shown
    too_small: list[tuple[str, str, str, int]] = field(
        default_factory=list
    )  # (notebook, cell, who, own tokens)
    unchanged: list[tuple[str, str, str]] = field(default_factory=list)  # the stub as released
    problems: list[tuple[str, str, str]] = field(default_factory=list)  # (who, notebook, why)
    cells: list[Cell] = field(default_factory=list)

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


def similar(assignment: str, *, threshold: float = THRESHOLD, earlier: list[Path] = (),
            common: int = COMMON) -> Similarity:  # fmt: skip
    """The similarity of every pair of students (and each student with the references) for each graded answer cell
    of ``assignment`` (see the module docstring); ``threshold``: the pairs from which ``flagged`` holds; ``common``:
    how many answers may hold a passage before it is common knowledge."""
    course.require_assignment(assignment)
    if not 0 <= threshold <= 1:
        raise SystemExit(f"--threshold is a similarity from 0 to 1, not {threshold}")
    if isinstance(common, bool) or not isinstance(common, int) or common < 1:
        raise SystemExit(f"--common is a number of answers, at least 1, not {common!r}")
    result = Similarity(assignment, threshold, common)
    students = _students(course.course_dir() / "submitted", assignment)
    references = [
        (f"[earlier {i + 1}] {s}", p) for i, f in enumerate(earlier) for s, p in _students(f, assignment)
    ]
    elsewhere = _solutions()
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
            others = [
                code for (path, grade_id), code in elsewhere.items() if (path, grade_id) != (source, cell)
            ]
            _compare_cell(result, source.stem, cell, stubs[cell], solutions.get(cell, ""), handed,
                          {who for who, _ in students}, others)  # fmt: skip
    return result


def _solutions() -> dict[tuple[Path, str], str]:
    """(notebook, grade id) -> the published solution of every answer cell of the course (each written for its own
    exercise: what recurs among them is the course's idiom)."""
    return {(path, grade_id): code for path in sorted(course.source_dir().glob("*/*.ipynb"))
            for grade_id, code in _answer_cells(path).items()}  # fmt: skip


def _compare_cell(result: Similarity, notebook: str, cell: str, stub: str, solution: str,
                  handed: dict[str, dict[str, str]], students: set[str], elsewhere: list[str]) -> None:  # fmt: skip
    """Every pair of one answer cell: the ``students`` of ``handed`` with each other and with the references (the
    solution, then the rest of ``handed``: an earlier term's), each cell less the release's stub and the passages
    common to the cell's answers and the course's solutions of its other answer cells, ``elsewhere``
    (``_common``)."""
    vocabulary: dict = {}  # the stub and the course's solutions first: no student's cell can crowd them out of it
    boilerplate = fingerprint(tokens(stub, vocabulary)).hashes
    idioms = [fingerprint(tokens(code, vocabulary)).hashes for code in elsewhere]
    written: dict[str, tuple[Tokens, CodeFingerprint]] = {}  # the answers with a token of their own
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
        if found.token_coverage == 0:
            unchanged.add(who)
            result.unchanged.append((notebook, cell, who))
        else:
            written[who] = (cell_tokens, found)
    common = _common({who: found for who, (_, found) in written.items()}, idioms, result.common)
    own = {who: fingerprint(cell_tokens, boilerplate | common) if common & found.hashes else found
           for who, (cell_tokens, found) in written.items()}  # fmt: skip
    row = Cell(notebook, cell, 0, 0, len(common), len(written))
    if SOLUTION in own:
        row.solution_tokens = int(own[SOLUTION].token_coverage)
        row.specific = _specific(SOLUTION, written, boilerplate | common)
    result.cells.append(row)
    judged: dict[str, tuple[Tokens, CodeFingerprint]] = {}
    for who, found in own.items() if row.judged else ():
        if found.token_coverage < MIN_TOKENS:
            result.too_small.append((notebook, cell, who, int(found.token_coverage)))
        else:
            judged[who] = (written[who][0], found)
    current = [who for who in handed if who in students]
    references = [SOLUTION, *(who for who in handed if who not in students)]
    pairs = [*combinations(current, 2), *((s, r) for s in current for r in references)]
    for a, b in pairs:
        if a in judged and b in judged:
            result.pairs.append(_pair(notebook, cell, a, b, judged[a], judged[b], result))
        elif (a in unchanged and (b in judged or b in unchanged)) or (b in unchanged and a in judged):
            sizes = [int(judged[w][1].token_coverage) if w in judged else 0 for w in (a, b)]
            result.pairs.append(Pair(notebook, cell, a, b, 0.0, 0.0, 0.0, *sizes))


def _common(found: dict[str, CodeFingerprint], elsewhere: list[set[int]], limit: int) -> set[int]:
    """The fingerprints that more than ``limit`` answers written apart hold (MOSS's ``-m``; Schleimer, Wilkerson &
    Aiken 2003, section 5): a passage that many answers written apart hold is what the exercise, or the course, makes
    everyone write, not a sign of copying. The answers are those of the cell, ``found``, each group of copies counted
    once, and the fingerprints of the course's solutions to its other cells, ``elsewhere``, each counted (each was
    written for another exercise). Two answers to the cell are copies of one another as ``_copies`` says; the
    holders of a fingerprint are taken in the order of ``found`` (the solution first), each one counted unless
    it is a copy of one already counted: however many students copy one answer (the published solution among
    them), its passages stay theirs."""
    holders: dict[int, list[str]] = {}
    for who, fingerprints in found.items():
        for h in fingerprints.hashes:
            holders.setdefault(h, []).append(who)
    idioms: dict[int, int] = {}
    for hashes in elsewhere:
        for h in hashes:
            idioms[h] = idioms.get(h, 0) + 1
    alike: dict[tuple[str, str], bool] = {}

    def copies(a: str, b: str) -> bool:
        if (a, b) not in alike:
            alike[(a, b)] = _copies(found[a], found[b])
        return alike[(a, b)]

    common = set()
    for h, held in holders.items():
        needed = limit - idioms.get(h, 0)  # answers to the cell, written apart, beyond which h is common
        if len(held) <= needed:
            continue
        counted: list[str] = []
        for who in held:
            if not any(copies(other, who) for other in counted):
                counted.append(who)
                if len(counted) > needed:
                    common.add(h)
                    break
    return common


def _specific(solution: str, written: dict[str, tuple[Tokens, CodeFingerprint]], left_out: set[int]) -> int:
    """The tokens of the ``solution``'s cell that no answer written apart from it holds too: not ``left_out`` (the
    stub, common knowledge) and not in any answer of ``written`` that is no copy of it (``_copies``: a copy padded
    with code of its own, or left unfinished, is no answer written apart). What is left is what a copy of the
    solution shares with it and an answer written apart does not: a cell where it is under ``MIN_TOKENS`` is one
    formula that every correct answer writes out alike, too small to judge."""
    cell_tokens, found = written[solution]
    apart: set[int] = set()
    for who, (_, other) in written.items():
        if who != solution and found.hashes & other.hashes and not _copies(found, other):
            apart |= other.hashes
    return int(fingerprint(cell_tokens, left_out | (found.hashes & apart)).token_coverage)


def _copies(found_a: CodeFingerprint, found_b: CodeFingerprint) -> bool:
    """Whether one of two cells (fingerprinted less the stub only) is a copy of the other: it holds at least
    ``SAME_SOURCE`` of the other's tokens, or the other holds that much of its own (a copy padded with code of its
    own, a copy left unfinished)."""
    return max(_similarity(found_a, found_b)[1:3]) >= SAME_SOURCE


def _similarity(found_a: CodeFingerprint, found_b: CodeFingerprint) -> tuple[float, float, float, tuple]:
    """(similarity, share_a, share_b, copydetect's slices) of two fingerprinted cells with a token of their own."""
    size_a, size_b = found_a.token_coverage, found_b.token_coverage
    if not found_a.hashes & found_b.hashes:
        return 0.0, 0.0, 0.0, ()
    _overlap, (share_a, share_b), slices = compare_files(found_a, found_b)
    similarity = (share_a * size_a + share_b * size_b) / (size_a + size_b)
    return float(similarity), float(share_a), float(share_b), slices


def _pair(notebook: str, cell: str, a: str, b: str, first: tuple, second: tuple, result: Similarity) -> Pair:
    (tokens_a, found_a), (tokens_b, found_b) = first, second
    similarity, share_a, share_b, slices = _similarity(found_a, found_b)
    pair = Pair(notebook, cell, a, b, similarity, share_a, share_b, int(found_a.token_coverage),
                int(found_b.token_coverage))  # fmt: skip
    if slices and similarity >= result.threshold:  # kept for the page: the matching slices, in source offsets
        pair.slices = (_spans(tokens_a, slices[0]), _spans(tokens_b, slices[1]))
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
    small = [c.cell for c in result.cells if not c.judged]
    lines = [f"{result.assignment}: {len(result.pairs)} pair(s) scored, {len(flagged)} from {result.threshold:g}; "
             f"{len(small)} answer cell(s) too small to judge (their solution has under {MIN_TOKENS} tokens that no "
             f"answer written apart holds too){': ' if small else ''}{', '.join(small)}; {len(result.too_small)} "
             f"answer(s) too small to judge (under {MIN_TOKENS} tokens of their own), {len(result.unchanged)} "
             f"unchanged from the release"]  # fmt: skip
    lines.append(common_knowledge(result))
    for p in flagged[:20]:
        lines.append(course.printable(f"  {p.similarity:.2f}  {p.cell:<24} {p.a} ~ {p.b}"))
    for who, notebook, why in result.problems:
        lines.append(course.printable(f"not compared: {who} {notebook}: {why}")[:200])
    return lines


def common_knowledge(result: Similarity) -> str:
    """What was left out as common knowledge, and where the class was too small for it."""
    few = [c for c in result.cells if c.answers <= result.common]
    said = (f"common knowledge (a passage held by more than {result.common} answers, copies of one another counted "
            f"once): {sum(c.common for c in result.cells)} fingerprint(s) left out in "
            f"{sum(1 for c in result.cells if c.common)} of {len(result.cells)} answer cell(s)")  # fmt: skip
    if few:
        said += (f"; {len(few)} cell(s) have {result.common} answers or fewer (the solution's included): there only "
                 f"the course's solutions to other cells tell what is common (an earlier term's answers, --earlier, "
                 f"tell a small class more)")  # fmt: skip
    return said
