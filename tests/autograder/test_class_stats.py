"""``python -m autograder stats`` on a class graded for real (issue 40.1, 40.2, 40.5): 33 students of 01_order and
02_absolute, 11 in each edition, whose answers carry the course's named mistakes in known numbers
(``synthetic_class``), beside each edition's untouched release, an answer that raises, one that never returns and a
notebook that is not JSON. The score of record (the sandbox, hidden cases drawn at grading) is run once for the
module; ``stats`` must count each injected mistake under its own catalog key, per edition and in total, exactly.
"""

from __future__ import annotations

import csv
import os
import shutil
import sys
from collections import Counter
from pathlib import Path

import pytest
import synthetic_class as sc
from conftest import released_assignment
from course_helpers import run_command

from autograder.analysis.stats import CSV_FIELDS, class_stats
from autograder.course import REPO
from autograder.sandbox.sandbox import Sandbox
from posref.grading.failure import Cause

pytestmark = [pytest.mark.slow, pytest.mark.timeout(3600), pytest.mark.xdist_group("sandbox")]
ASSIGNMENTS = ("01_order", "02_absolute")
# manual grades of 01_order's written answers: student index -> points (the rest are left for a grader)
MANUAL = {"q_two_layers": {0: 2.0, 1: 2.0, 2: 1.0, 3: 0.0, 4: 2.0}, "q_find_the_bug": {0: 1.0, 1: 1.0}}


@pytest.fixture(scope="module")
def course(request, tmp_path_factory):
    """The class, graded: the course folder, with the environment pointing at it. 01_order is the run's shared
    release (``conftest.released_assignment``), 02_absolute released into the copy."""
    problem = Sandbox().problem
    if problem is not None:
        pytest.skip(f"the score of record needs the sandbox: {problem}")
    folder = tmp_path_factory.mktemp("class")
    shutil.copytree(released_assignment(request, tmp_path_factory, "01_order"), folder, dirs_exist_ok=True)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("POSREF_COURSE_DIR", str(folder))
        mp.setenv("POSREF_RELEASE_DIR", str(folder / "release"))
        mp.setenv("POSREF_FAST", "1")
        mp.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])))
        mp.setenv("PATH", os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]))
        from autograder.grading.grade import autograde
        from autograder.release.assignment import release

        release("02_absolute")
        for assignment in ASSIGNMENTS:
            sc.hand_in(folder, assignment)
            autograde(assignment, workers=2, cell_timeout=10)
        _grade_by_hand(folder)
        yield folder


def _grade_by_hand(folder) -> None:
    from nbgrader.api import Gradebook

    students = sorted(sc.schedule("01_order"))
    with Gradebook(f"sqlite:///{folder / 'gradebook.db'}") as gb:
        for answer, grades in MANUAL.items():
            for i, points in grades.items():
                grade = gb.find_grade(answer, "01_order", "01_order", students[i])
                grade.manual_score = points
            gb.db.commit()


def _counted(stats) -> Counter:
    """(test cell, cause, edition) -> students, as stats counted them."""
    return Counter(
        {(c.grade_id, cause, edition): n for c in stats.cells for (cause, edition), n in c.causes.items()}
    )


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_every_injected_mistake_is_counted_under_its_name_per_edition_and_in_total(course, assignment):
    stats = class_stats(assignment)
    counted = _counted(stats)
    injected = sc.injected(assignment)
    named = {key: n for key, n in counted.items() if key[1].kind == "mistake"}
    # each injected hint is one catalog key, the same in the three editions
    keys = {}
    for cell, hint, _edition in injected:
        [key] = {c for (cl, c, _e) in named if cl == cell and hint in c.detail}
        keys[(cell, hint)] = key
    assert {(cell, keys[(cell, hint)], edition): n for (cell, hint, edition), n in injected.items()} == named
    for (cell, hint), key in keys.items():  # in total too
        total = sum(n for (cl, c, _e), n in named.items() if (cl, c) == (cell, key))
        assert total == sum(n for (cl, h, _e), n in injected.items() if (cl, h) == (cell, hint))
    # nearly every failed cell says why: a named mistake or a kind, never "unknown"
    assert stats.specific_share is not None and stats.specific_share >= 0.9, stats.specific_share
    assert not [key for key in counted if key[1].kind == "unknown"]


def test_the_other_failures_have_their_kind(course):
    stats = class_stats("01_order")
    counted = _counted(stats)
    for (
        edition
    ) in sc.EDITION_LIST:  # each edition's untouched release: the stub, and its speed cell not timed
        assert counted[("test_attention", Cause("stub"), edition)] >= 1
        assert counted[("test_attention_speed", Cause("not-timed"), edition)] >= 1
    assert counted[("test_attention", Cause("raised", "KeyError"), "en")] == 1
    assert counted[("test_attention", Cause("timeout"), "zh-TW")] == 1
    # the notebook that is not JSON is not in the counts: it could not be graded, and says why
    [row] = [r for r in stats.not_graded if r["student"] == "zhcn-broken"]
    assert row["status"] == "could not grade" and "could not be read" in row["reason"]
    assert sum(stats.editions.values()) == len(stats.totals) == 3 * sc.PER_EDITION + 5


def test_each_test_cell_has_its_pass_rate_points_and_discrimination(course):
    stats = class_stats("02_absolute")
    graded = len(stats.totals)
    for cell in stats.cells:
        item = cell.item
        assert item.graded == graded and sum(item.distribution.values()) == graded
        assert item.passed == item.distribution.get(item.points, 0)
        assert cell.failed == graded - item.passed
    sinusoidal = next(c for c in stats.cells if c.grade_id == "test_sinusoidal_pe")
    wrong = sum(n for (cell, _h, _e), n in sc.injected("02_absolute").items() if cell == "test_sinusoidal_pe")
    assert sinusoidal.item.passed == graded - wrong - 3  # the three untouched releases fail it too
    assert sinusoidal.item.item_total_r is not None and -1 <= sinusoidal.item.item_total_r <= 1
    assert sinusoidal.item.upper_lower_d is not None and -1 <= sinusoidal.item.upper_lower_d <= 1


def test_the_written_answers_show_their_manual_grades(course):
    answers = {a.grade_id: a for a in class_stats("01_order").answers}
    # every hand-in, the broken one too
    submissions = len(sc.schedule("01_order")) + len(sc.extras("01_order"))
    for answer, grades in MANUAL.items():
        assert answers[answer].grades == dict(sorted(Counter(grades.values()).items()))
        assert answers[answer].no_response == 3  # the untouched releases, one per edition
        assert sum(answers[answer].grades.values()) + answers[answer].waiting + 3 == submissions


def test_the_command_writes_the_csv_and_the_page(course, tmp_path):
    done = run_command("stats", "02_absolute", "--csv", str(tmp_path / "stats.csv"))
    assert done.returncode == 0, done.stderr
    assert "r_it (corrected item-total)" in done.stdout and "D (upper-lower 27%)" in done.stdout
    with open(tmp_path / "stats.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert list(rows[0]) == CSV_FIELDS
    assert CSV_FIELDS[:4] == ["cell", "cause", "edition", "count"]
    from_csv = Counter()
    for row in rows:
        if row["kind"] == "mistake":
            from_csv[(row["cell"], row["detail"], row["edition"])] += int(row["count"])
    for (cell, hint, edition), n in sc.injected("02_absolute").items():
        assert sum(v for (c, d, e), v in from_csv.items() if c == cell and hint in d and e == edition) == n
    page = (course / "reports" / "02_absolute-stats.html").read_text()
    assert "<script" not in page.lower() and 'http-equiv="Content-Security-Policy"' in page
    assert "corrected item-total correlation" in page and "<svg" in page
    assert "&lt;script&gt;" not in page or "<script>" not in page


def test_a_plot_draws_any_label_as_text():
    from autograder.analysis import plots

    # a label that mathtext cannot parse is drawn as written; markup in one is only in a comment, escaped
    svg = plots.bars(["$\\frac{a$", "x<b>&"], [1.0, 2.0], "what $x^2$ says", "students")
    assert svg.startswith("<svg") and "<b>" not in svg and "<!-- x&lt;b&gt;&amp; -->" in svg
