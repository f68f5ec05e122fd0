"""A class whose students hand in different editions of one assignment is graded as one class (issue 28.5): the same
grade ids and points for everyone, each edition's solution full marks and its untouched release 0 in the score of
record and the gradebook, and each student's feedback in the language of the edition they handed in (the edition is
read from the submitted notebook's metadata: autograder/grading/record.py).

The byte-identity of code across editions, which is what lets one gradebook grade them, is tested for every notebook
(tests/autograder/test_edition_release.py); this grades one assignment by default. ``POSREF_EDITION_ASSIGNMENTS``
names others (comma-separated, or ``all``) for the whole check, run by hand:

    POSREF_EDITION_ASSIGNMENTS=all .venv/bin/python -m pytest -q -s tests/notebooks/test_edition_class.py
"""

from __future__ import annotations

import os
import re
import shutil

import notebook_helpers as nh
import pytest
from conftest import released_assignment

from autograder.editions.notebook import EDITIONS, ENGLISH, TEXT_STUB

pytestmark = pytest.mark.slow

ALL = sorted(p.name for p in (nh.REPO / "solutions").iterdir() if p.is_dir())
_WANTED = os.environ.get("POSREF_EDITION_ASSIGNMENTS", "01_order")
ASSIGNMENTS = ALL if _WANTED == "all" else _WANTED.split(",")
CJK = re.compile(r"[\u3400-\u9fff]")


def _notebook(edition: str, kind: str, name: str):
    folder = nh.REPO if edition == ENGLISH else nh.REPO / "editions" / edition
    return folder / kind / name / f"{name}.ipynb"


def _in(edition: str, text: str) -> str:
    """``text`` (a message of posref's catalogs) in ``edition``'s language."""
    from posref import i18n

    i18n.set_language(edition)
    try:
        return i18n._(text)
    finally:
        i18n.set_language(None)


@pytest.fixture(scope="module", params=ASSIGNMENTS)
def graded(request, tmp_path_factory):
    """The assignment released (English, into the gradebook: a copy of the run's release of it,
    ``conftest.released_assignment``), then graded for six students: each edition's solution (``<edition>-solution``)
    and untouched release (``<edition>-release``) -> (name, course, records by student, students without feedback).
    The instructor's shell has ``POSREF_LANG=zh-CN``: the English students' messages must stay English all the same."""
    problem = nh.sandbox_problem()
    if problem is not None:
        pytest.skip(f"the score of record needs the sandbox: {problem}")
    name, course = request.param, tmp_path_factory.mktemp("editions")
    shutil.copytree(released_assignment(request, tmp_path_factory, name), course, dirs_exist_ok=True)
    with pytest.MonkeyPatch.context() as mp:
        for key, value in nh.notebook_env(
            course, POSREF_GRADING="1", POSREF_RELEASE_DIR=str(course / "release")
        ).items():
            mp.setenv(key, value)
        from autograder.grading.grade import autograde
        from autograder.pages.feedback import feedback

        mp.setenv("POSREF_LANG", "zh-CN")
        students = {}
        for edition in (ENGLISH, *EDITIONS):
            for kind, student in (("solutions", f"{edition}-solution"), ("notebooks", f"{edition}-release")):
                target = course / "submitted" / student / name
                target.mkdir(parents=True)
                shutil.copy(_notebook(edition, kind, name), target / f"{name}.ipynb")
                students[student] = edition
        for student, nb in _hostile(name).items():
            (course / "submitted" / student / name).mkdir(parents=True)
            (course / "submitted" / student / name / f"{name}.ipynb").write_text(nb)
        records = {r["student"]: r for r in autograde(name, workers=2)}
        failed = feedback(name)
    yield name, course, records, failed


# what a student can write where the edition is read: a formula, a list, a tag with a right-to-left override
HOSTILE_EDITIONS = ['=HYPERLINK("http://x","zh-TW")', ["zh-TW"], "zh-TW\u202e"]


def _hostile(name: str) -> dict[str, str]:
    """Students whose notebooks say no edition the course has (the zh-TW solution with each of ``HOSTILE_EDITIONS``
    in its metadata: graded in English), and one whose notebook is not JSON (no edition known) -> their files."""
    import nbformat

    out = {"not-json": "{"}
    for i, edition in enumerate(HOSTILE_EDITIONS):
        nb = nbformat.read(_notebook("zh-TW", "solutions", name), as_version=4)
        nb.metadata["posref"] = {"edition": edition}
        out[f"hostile-{i}"] = nbformat.writes(nb)
    return out


def test_every_edition_is_graded_with_the_same_grade_ids_and_points(graded):
    name, _, records, _ = graded
    records = {s: r for s, r in records.items() if s != "not-json"}
    cells = {}
    for student, record in records.items():
        assert "error" not in record, f"{name}, {student}: {record['error']}"
        (notebook,) = record["notebooks"]
        assert notebook["status"] == "graded", f"{name}, {student}: {notebook['reason']}"
        cells[student] = [(c["grade_id"], c["points"]) for c in notebook["cells"]]
    assert len(set(map(tuple, cells.values()))) == 1, cells
    assert {s: r["notebooks"][0]["edition"] for s, r in records.items()} == {
        **{f"{e}-{k}": e for e in (ENGLISH, *EDITIONS) for k in ("solution", "release")},
        **{f"hostile-{i}": ENGLISH for i in range(len(HOSTILE_EDITIONS))},
    }


def test_the_export_says_which_edition_each_student_was_graded_in(graded, tmp_path, monkeypatch):
    """The CSV's `edition` column: each student's edition, English for a notebook whose metadata names none of the
    course's (a formula there never reaches the CSV), empty for a notebook that could not be read."""
    import csv

    from autograder.grading.export import export

    name, course, _, _ = graded
    monkeypatch.setenv("POSREF_COURSE_DIR", str(course))
    export(name, tmp_path / "grades.csv")
    with open(tmp_path / "grades.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert {row["student"]: (row["edition"], row["status"]) for row in rows} == {
        **{f"{e}-{k}": (e, "graded") for e in (ENGLISH, *EDITIONS) for k in ("solution", "release")},
        **{f"hostile-{i}": (ENGLISH, "graded") for i in range(len(HOSTILE_EDITIONS))},
        "not-json": ("", "could not grade"),
    }
    hostile = {row["student"]: row for row in rows if row["student"].startswith("hostile")}
    assert all(row["score"] == row["max_score"] for row in hostile.values()), hostile


def test_each_editions_solution_earns_every_point_and_its_release_none(graded):
    from nbgrader.api import Gradebook

    name, course, records, _ = graded
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}", "posref") as gb:
        for edition in (ENGLISH, *EDITIONS):
            solved, untouched = (records[f"{edition}-{k}"]["notebooks"][0] for k in ("solution", "release"))
            assert solved["max_score"] > 0 and solved["score"] == solved["max_score"], (name, edition, solved)
            assert untouched["score"] == 0, (name, edition, untouched)
            solution, release = (gb.find_submission(name, f"{edition}-{k}") for k in ("solution", "release"))
            assert solution.code_score == solution.max_code_score > 0 and release.code_score == 0
            assert release.max_code_score == solution.max_code_score
            # every answer left as released is "No response.", the written answers of an edition too (whose stub is
            # not the English release's, which nbgrader compares with), and no answer of the solution is
            untouched = gb.find_submission_notebook(name, name, f"{edition}-release").comments
            assert untouched and {c.auto_comment for c in untouched} == {"No response."}, edition
            assert {
                c.auto_comment
                for c in gb.find_submission_notebook(name, name, f"{edition}-solution").comments
            } == {None}


def test_each_students_feedback_is_in_the_language_of_their_edition(graded):
    """The checkers' messages and the record's own words, in the record and in the feedback page: English for
    English, zh-TW for zh-TW, zh-CN for zh-CN (the same messages, as posref's catalogs give them)."""
    name, course, records, failed = graded
    assert not failed, failed
    messages = {s: [c["message"] for c in r["notebooks"][0]["cells"]] for s, r in records.items()}
    for edition in (ENGLISH, *EDITIONS):
        passed = _in(edition, "passed")
        assert set(messages[f"{edition}-solution"]) == {passed}
        for message in messages[f"{edition}-release"]:
            assert bool(CJK.search(message)) == (edition != ENGLISH), (edition, message)
        page = (course / "feedback" / f"{edition}-release" / name / f"{name}.html").read_text(
            encoding="utf-8"
        )
        header = _in(edition, "Score of record: {score} / {points}").split("{")[0].strip()
        assert header in page and (edition == ENGLISH or "Score of record" not in page), edition
        assert TEXT_STUB.get(edition, "YOUR ANSWER HERE") in page
    assert _in("zh-TW", "passed") != _in("zh-CN", "passed") != "passed"
    assert messages["zh-TW-release"] != messages["zh-CN-release"] != messages[f"{ENGLISH}-release"]
