"""Every hand-graded question of ``solutions/`` carries a model answer and a rubric whose points add up to the
question's points, and neither reaches the student release.

A manually graded question is an nbgrader cell with ``grade`` and ``solution`` both set: the student writes in it
and an instructor scores it in the formgrader. Its source in ``solutions/`` holds what the instructor needs:

    **Model answer** ...
    **Rubric (N points)**
    - 1 point: ...
    - 1 point: ...
    **Usual wrong answers** ...

nbgrader replaces a solution cell without solution markers by "YOUR ANSWER HERE" in the release, so the release
must show exactly that.
"""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest

REPO = Path(__file__).resolve().parents[2]
ASSIGNMENTS = sorted(p.name for p in (REPO / "solutions").iterdir() if p.is_dir())
RUBRIC_ITEM = re.compile(r"^- (\d+(?:\.\d+)?) points?:", re.MULTILINE)
SECTIONS = ("**Model answer", "**Rubric", "**Usual wrong answers")


def manual_cells(path: Path) -> list:
    nb = nbformat.read(path, as_version=4)
    return [
        c
        for c in nb.cells
        if c.metadata.get("nbgrader", {}).get("grade") and c.metadata["nbgrader"].get("solution")
    ]


def rubric_points(source: str) -> float:
    """Sum of the ``- N point(s):`` items after the rubric heading, up to the next bold heading."""
    rubric = source.split("**Rubric", 1)[1].split("\n**", 1)[0]
    return sum(float(points) for points in RUBRIC_ITEM.findall(rubric))


QUESTIONS = [
    pytest.param(name, cell, id=f"{name}:{cell.metadata['nbgrader']['grade_id']}")
    for name in ASSIGNMENTS
    for cell in manual_cells(REPO / "solutions" / name / f"{name}.ipynb")
]


def test_the_course_has_hand_graded_questions():
    assert len(QUESTIONS) >= 15, f"only {len(QUESTIONS)} manually graded cells found in solutions/"


@pytest.mark.parametrize(("name", "cell"), QUESTIONS)
def test_model_answer_and_rubric(name, cell):
    grade_id, points = cell.metadata["nbgrader"]["grade_id"], cell.metadata["nbgrader"]["points"]
    for section in SECTIONS:
        assert section in cell.source, f"{name} {grade_id}: no {section.strip('*')!r} section"
    first, *rest = (cell.source.index(s) for s in SECTIONS)
    assert first < rest[0] < rest[1], f"{name} {grade_id}: sections out of order, expected {SECTIONS}"
    assert rubric_points(cell.source) == points, (
        f"{name} {grade_id}: the rubric's items give {rubric_points(cell.source):g} points, the cell is worth {points}"
    )


@pytest.mark.parametrize(("name", "cell"), QUESTIONS)
def test_release_hides_the_model_answer(name, cell):
    grade_id = cell.metadata["nbgrader"]["grade_id"]
    released = {
        c.metadata["nbgrader"]["grade_id"]: c
        for c in manual_cells(REPO / "notebooks" / name / f"{name}.ipynb")
    }
    assert grade_id in released, f"{name}: the release has no answer cell {grade_id}"
    assert released[grade_id].source.strip() == "YOUR ANSWER HERE", (
        f"{name} {grade_id}: the release shows more than the answer stub"
    )


def test_rubric_points_are_counted():
    source = "**Model answer** x\n\n**Rubric (3 points)**\n- 2 points: a\n- 1 point: b\n\n**Usual wrong answers** c"
    assert rubric_points(source) == 3
    assert rubric_points(source.replace("- 1 point: b", "- b")) == 2
