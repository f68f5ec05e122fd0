"""A notebook nbgrader's autograde refuses for its nbgrader cell metadata (autograder/grading/stand_in.py), through
the real commands on the demo assignment: the student is graded (the score of record does not read that metadata),
the gradebook holds the score, the formgrader has a page of that student that says why nbgrader refused it, and
nothing of the hostile metadata is markup there or in the feedback page. A correct classmate is graded after."""

from __future__ import annotations

import copy
import json
import re
import shutil
from pathlib import Path

import nbformat
import pytest
from course_helpers import assert_safe_csv, needs_bwrap, run_command

from autograder.demo.submissions import PE, ROPE

pytestmark = [pytest.mark.slow, needs_bwrap]

SCRIPT = '<script>fetch("/pwned/meta")</script>'
IMG = '<img src=x onerror="fetch(`/pwned/img`)">'


def _answered(released) -> dict:
    """The released demo notebook, as JSON, with correct answers."""
    nb = json.loads(released.read_text())
    for cell in nb["cells"]:
        grade_id = cell["metadata"].get("nbgrader", {}).get("grade_id")
        cell["source"] = {"sinusoidal_pe": PE, "apply_rope": ROPE}.get(grade_id, cell["source"])
    return nb


def _by_id(nb: dict, grade_id: str) -> dict:
    return next(c for c in nb["cells"] if c["metadata"].get("nbgrader", {}).get("grade_id") == grade_id)


def _hostile(released) -> dict[str, dict]:
    """Students whose correct notebooks carry metadata nbgrader refuses, each with markup in it."""
    trudy = _answered(
        released
    )  # a cell of her own claims a point without a grade id, an answer's flag is markup,
    twin = copy.deepcopy(_by_id(trudy, "test_apply_rope"))  # and a copy of a test cell without its id is hers
    twin["id"], twin["source"] = "twin", "print('mine')"
    twin["metadata"]["nbgrader"].pop("grade_id")
    trudy["cells"].append({"cell_type": "markdown", "id": "mine", "source": SCRIPT,
                           "metadata": {"nbgrader": {"grade": True, "solution": False, "points": 1}}})  # fmt: skip
    trudy["cells"].append(twin)
    _by_id(trudy, "sinusoidal_pe")["metadata"]["nbgrader"]["locked"] = IMG
    mona = _answered(released)  # nbgrader metadata that is markup itself, and a schema from the future
    _by_id(mona, "test_apply_rope_speed")["metadata"]["nbgrader"]["schema_version"] = 99
    mona["cells"][0]["metadata"]["nbgrader"] = IMG
    ivan = _answered(
        released
    )  # cell metadata that is no mapping: no notebook reader takes it (could not grade)
    ivan["cells"][1]["metadata"] = [SCRIPT]
    return {"trudy": trudy, "mona": mona, "ivan": ivan}


@pytest.fixture(scope="module")
def refused(released_demo, tmp_path_factory):
    """The demo course: the three students above, then zed (correct, graded last: ids in order), imported,
    graded, given feedback and exported -> (course, {step: result})."""
    tmp = tmp_path_factory.mktemp("refused")
    course = Path(shutil.copytree(released_demo, tmp / "course"))
    released = course / "release" / "positions" / "positions.ipynb"
    mp = pytest.MonkeyPatch()
    for name, value in [("POSREF_COURSE_DIR", course), ("POSREF_SOURCE_DIR", "autograder/demo/source"),
                        ("POSREF_RELEASE_DIR", course / "release"), ("POSREF_FAST", "1")]:  # fmt: skip
        mp.setenv(name, str(value))
    students = {**_hostile(released), "zed": _answered(released)}
    for student, nb in students.items():
        folder = tmp / "class" / student / "positions"
        folder.mkdir(parents=True)
        (folder / "positions.ipynb").write_text(json.dumps(nb))
    steps = {"import": run_command("import", str(tmp / "class"))}
    steps["autograde"] = run_command("autograde", "positions", "--workers", "1")
    steps["feedback"] = run_command("feedback", "positions")
    steps["export"] = run_command("export", "positions")
    yield course, steps
    mp.undo()


HOSTILE = ("trudy", "mona", "ivan")


def test_nbgrader_refuses_these_notebooks_and_the_instructor_is_told_why(refused):
    course, steps = refused
    assert steps["import"].returncode == 0, steps["import"].stderr
    said = {
        "trudy": r"cell 2 \(code\): '<img .*' is not of type 'boolean'; cell 7 \(markdown\): nbgrader cell does "
        r"not have a grade_id: <script>.*; cell 8 \(code\): nbgrader cell does not have a grade_id: print\('mine'\)",
        "mona": r"cell 0 \(markdown\): its nbgrader metadata is a str, not a mapping; cell 6 \(code\): Schema "
        r"version is too new: 99",
        "ivan": r"the notebook cannot be read: TypeError",
    }
    step = steps["autograde"]
    assert step.returncode == 1 and "graded 3 student(s), could not grade 1" in step.stdout, step.stderr[
        -3000:
    ]
    assert re.search(r"could not grade ivan: positions.ipynb: .*could not be read", step.stderr), step.stderr[
        -3000:
    ]
    for student in HOSTILE:
        line = next(
            x for x in step.stderr.splitlines() if x.startswith(f"{student}: positions.ipynb: nbgrader")
        )
        assert re.search(said[student], line), (student, line)


def test_each_is_in_the_gradebook_with_a_page_of_their_own(refused):
    """The score of record in the gradebook (it was only in the record; ivan's: "could not grade", flagged for
    a person), and an autograded notebook that the formgrader shows: nbgrader's own validator takes it, it says
    why, and it holds no metadata of the student's."""
    from nbgrader.api import Gradebook
    from nbgrader.nbgraderformat import MetadataValidator

    course, _ = refused
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        for student in ("trudy", "mona", "zed"):
            assert gb.find_submission("positions", student).score == 6, student
            grades = gb.find_submission_notebook("positions", "positions", student).grades
            assert {g.name: g.needs_manual_grade for g in grades} == dict.fromkeys(
                ["test_sinusoidal_pe", "test_apply_rope", "test_apply_rope_speed"], False
            ), student
        ungraded = gb.find_submission_notebook("positions", "positions", "ivan").grades
        assert all(g.needs_manual_grade and g.auto_score is None for g in ungraded)  # never a silent 0
    for student in HOSTILE:
        nb = nbformat.read(course / "autograded" / student / "positions" / "positions.ipynb", as_version=4)
        nbformat.validate(nb)
        MetadataValidator().validate_nb(nb)
        banner = nb.cells[0].source
        assert banner.startswith("**nbgrader could not take this notebook as it was handed in**"), banner
        reasons = banner.split("\n\n", 1)[1].splitlines()
        assert reasons and all(line.startswith("    ") for line in reasons), banner  # a code block: text
        metadata = [json.dumps(c.metadata) for c in nb.cells]
        assert not [m for m in metadata if "script" in m or "onerror" in m], (student, metadata)
        if student == "ivan":  # nothing of it could be read: the reason alone
            assert len(nb.cells) == 1 and "the notebook cannot be read" in banner, banner
            continue
        ids = [c.metadata.get("nbgrader", {}).get("grade_id") for c in nb.cells]
        assert ids.count("test_apply_rope") == 1 and "sinusoidal_pe" in ids, (student, ids)
        tests = [c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == "test_apply_rope"]
        assert tests[0].outputs[0]["text"].startswith("Score of record: 3 / 3"), tests[0].outputs
    trudy = nbformat.read(course / "autograded" / "trudy" / "positions" / "positions.ipynb", as_version=4)
    assert (trudy.cells[-1].source, trudy.cells[-1].metadata) == ("print('mine')", {})  # her copy: her text


def test_the_hostile_metadata_is_text_in_the_feedback_and_the_export(refused):
    course, steps = refused
    assert steps["feedback"].returncode == 0, steps["feedback"].stderr[-3000:]
    for student in HOSTILE:
        page = (course / "feedback" / student / "positions" / "positions.html").read_text()
        assert "nbgrader could not take this notebook" in page, student
        assert not re.search(r"<script>fetch|<img[^>]*onerror", page), student
    rows = assert_safe_csv(course / "positions-grades.csv")
    header, *rows = rows
    by_student = {row[0]: dict(zip(header, row, strict=True)) for row in rows}
    for student in ("trudy", "mona", "zed"):
        assert (by_student[student]["status"], by_student[student]["score"]) == ("graded", "6"), student
    assert (by_student["ivan"]["status"], by_student["ivan"]["score"]) == ("could not grade", "")
    assert by_student["trudy"]["reason"].startswith("nbgrader could not take this notebook (cell 2")
