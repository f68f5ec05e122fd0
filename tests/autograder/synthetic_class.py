"""A synthetic class made of the course's own named mistakes, injected in known numbers in all three editions, for
``stats`` (tests/autograder/test_class_stats.py).

Each wrong answer is a wrong implementation of ``tests/grading/student_impls.py`` (written the way a student writes
it, independently of posref), put into the answer cell of that edition's solution notebook under the notebook's
name; every other answer cell keeps the solution's. Which student gets which mistake follows a fixed schedule
(``schedule``), so that the test knows how many of each it injected, per edition.
"""

from __future__ import annotations

import importlib.util
import inspect
import json
import sys
from collections import Counter
from pathlib import Path

import nbformat

from autograder.course import REPO
from autograder.editions.notebook import EDITIONS, ENGLISH


def load_impls(name: str):
    """``tests/grading/<name>.py``, imported by path (another folder's helper), once per process."""
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, REPO / "tests" / "grading" / f"{name}.py")
        module = sys.modules[name] = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    return sys.modules[name]


s = load_impls("student_impls")
LearnedPositionsChecked = s.LearnedPositionsChecked

EDITION_LIST = (ENGLISH, *EDITIONS)
PER_EDITION = 11  # students of each edition with the schedule's answers (33 in all)


class TableOnly(LearnedPositionsChecked):
    """Mistake, as a student writes it: the position vectors alone, not added to the token embeddings."""

    def forward(self, x, positions):
        super().forward(x, positions)  # the range check
        return self.weight[positions].to(x.dtype).expand_as(x)


# answer cell -> (the function or class the notebook asks for, its wrong answers: (implementation, the hint's words))
MISTAKES = {
    "01_order": {
        "attention": ("attention", [(s.attention_no_scale, "sqrt(head_dim)"), (s.attention_masks_past, "hides the past")]),
        "equivariance_error": ("equivariance_error", [(s.equivariance_error_unpermuted_output, "output was not permuted")]),
    },
    "02_absolute": {
        "LearnedPositions": ("LearnedPositions", [
            (s.LearnedPositionsNoCheck, "returned a result instead of raising"),
            (s.LearnedPositionsTorchError, "say which position has no row"),
            (s.LearnedPositionsFromZero, "not at arange(T)"),
            (TableOnly, "x + weight[positions]"),
        ]),
        "sinusoidal_pe": ("sinusoidal_pe", [
            (s.sinusoidal_pe_intdiv, "integer division"), (s.sinusoidal_pe_one_based, "numbered from 1"),
            (s.sinusoidal_pe_halves, "wrong layout"), (s.sinusoidal_pe_cos_first, "sin and cos are swapped"),
            (s.sinusoidal_pe_swapped, "position and pair index are swapped"),
        ]),
        "shift_matrix": ("shift_matrix", [(s.shift_matrix_abs_k, "your matrix is M_{|k|}")]),
    },
}  # fmt: skip
# the test cell that checks each answer cell's function
TEST_CELL = {"attention": "test_attention", "equivariance_error": "test_equivariance_error",
             "LearnedPositions": "test_learned_positions", "sinusoidal_pe": "test_sinusoidal_pe",
             "shift_matrix": "test_shift_matrix"}  # fmt: skip


def answer(wrong, name: str, given: dict[str, str] | None = None) -> str:
    """The answer cell of a student who wrote ``wrong`` as ``name`` (its helpers and base class included, but those
    of ``given``, helper -> the notebook's name of the function an earlier cell defines, which it calls instead)."""
    given = given or {}
    parts = ["import math\n\nimport torch\n"]
    if inspect.isclass(wrong):
        for base in reversed(wrong.__mro__[1:-1]):
            if base.__module__ in (wrong.__module__, s.__name__, __name__):
                parts.append(inspect.getsource(base))
        source = inspect.getsource(wrong).replace(f"class {wrong.__name__}(", f"class {name}(", 1)
    else:
        parts += [inspect.getsource(helper) for helper in _helpers(wrong, set(given))]
        source = inspect.getsource(wrong).replace(f"def {wrong.__name__}(", f"def {name}(", 1)
    text = "\n".join([*parts, source])
    for helper, instead in given.items():
        text = text.replace(f"{helper}(", f"{instead}(")
    return text


def _helpers(fn, given: set[str] = frozenset()) -> list:
    """The functions of ``fn``'s module that it calls, and theirs, each once, callees first; not those ``given``."""
    found = []
    for name in fn.__code__.co_names:
        helper = getattr(sys.modules[fn.__module__], name, None)
        if inspect.isfunction(helper) and helper is not fn and name not in given:
            found += [h for h in [*_helpers(helper, given), helper] if h not in found]
    return found


def schedule(assignment: str) -> dict[str, dict[str, tuple | None]]:
    """student -> answer cell -> (wrong implementation, hint) or None (the solution's). Student ``i`` of edition
    ``e`` gets, for the cell of index ``c``, mistake ``(i + 2e + c) mod (n + 2)`` of its ``n`` mistakes (none past
    ``n``): every mistake in every edition, in counts that differ."""
    out = {}
    for e, edition in enumerate(EDITION_LIST):
        for i in range(PER_EDITION):
            student = f"{edition.lower().replace('-', '')}{i:02d}"
            out[student] = {}
            for c, (cell, (_name, wrong)) in enumerate(MISTAKES[assignment].items()):
                j = (i + 2 * e + c) % (len(wrong) + 2)
                out[student][cell] = wrong[j] if j < len(wrong) else None
    return out


def injected(assignment: str) -> Counter:
    """(test cell, hint, edition) -> students given that mistake."""
    counts = Counter()
    for student, cells in schedule(assignment).items():
        edition = EDITION_LIST[[e.lower().replace("-", "") for e in EDITION_LIST].index(student[:-2])]
        for cell, wrong in cells.items():
            if wrong is not None:
                counts[(TEST_CELL[cell], wrong[1], edition)] += 1
    return counts


def solution(assignment: str, edition: str) -> dict:
    """The edition's solution notebook as a dict (each cell's source one string)."""
    folder = REPO if edition == ENGLISH else REPO / "editions" / edition
    return json.loads(json.dumps(nbformat.read(folder / "solutions" / assignment / f"{assignment}.ipynb", 4)))


def release(assignment: str, edition: str) -> dict:
    """The edition's release as a dict (each cell's source one string)."""
    folder = REPO if edition == ENGLISH else REPO / "editions" / edition
    return json.loads(json.dumps(nbformat.read(folder / "notebooks" / assignment / f"{assignment}.ipynb", 4)))


def with_answers(nb: dict, answers: dict[str, str]) -> dict:
    """``nb`` with the answer cells of ``answers`` (grade id -> source) replaced."""
    for cell in nb["cells"]:
        grade_id = cell.get("metadata", {}).get("nbgrader", {}).get("grade_id")
        if grade_id in answers:
            cell["source"] = answers[grade_id]
    return nb


# the students beside the schedule's, and what stats must say of each: their notebook and the cause of each test cell
RAISES = "def attention(q, k, v, causal=False):\n    return {}['weights'] @ v\n"
HANGS = "def attention(q, k, v, causal=False):\n    while True:\n        pass\n"


def extras(assignment: str) -> dict[str, tuple[str, dict | str]]:
    """student -> (edition, notebook as JSON or text): each edition's untouched release; for 01_order a function
    that raises (en) and one that never returns (zh-TW); a notebook that is not JSON (zh-CN: could not grade)."""
    out = {f"{e.lower().replace('-', '')}-release": (e, release(assignment, e)) for e in EDITION_LIST}
    if assignment == "01_order":
        out["en-raises"] = (ENGLISH, with_answers(solution(assignment, ENGLISH), {"attention": RAISES}))
        out["zhtw-hangs"] = ("zh-TW", with_answers(solution(assignment, "zh-TW"), {"attention": HANGS}))
    out["zhcn-broken"] = ("zh-CN", '{"cells": [<script>alert(1)</script>')
    return out


def hand_in(course: Path, assignment: str) -> None:
    """Every student's notebook into the course's ``submitted/``."""
    notebooks = {}
    for student, cells in schedule(assignment).items():
        edition = EDITION_LIST[[e.lower().replace("-", "") for e in EDITION_LIST].index(student[:-2])]
        answers = {
            cell: answer(wrong[0], MISTAKES[assignment][cell][0])
            for cell, wrong in cells.items()
            if wrong is not None
        }
        notebooks[student] = with_answers(solution(assignment, edition), answers)
    notebooks.update({student: nb for student, (_edition, nb) in extras(assignment).items()})
    for student, nb in notebooks.items():
        folder = course / "submitted" / student / assignment
        folder.mkdir(parents=True)
        (folder / f"{assignment}.ipynb").write_text(nb if isinstance(nb, str) else json.dumps(nb))
