"""``stats``'s arithmetic on classes written out here (issue 40.2): the two discrimination indices against an
independent computation (numpy's correlation; Kelley's groups counted by hand), and the causes of a test cell that
a record lacks, counted under the student's edition and shown in columns that add up to the total."""

from __future__ import annotations

import numpy as np
import pytest

from autograder.analysis import stats, stats_page
from autograder.analysis.items import analyse
from posref.grading.failure import Cause

pytestmark = pytest.mark.spread

# eight students: a one-point cell and their totals of record (the cell included)
SCORES = [1.0, 0.0, 1.0, 1.0, 0.0, 1.0, 0.0, 0.0]
TOTALS = [9.0, 3.0, 7.0, 8.0, 5.0, 4.0, 6.0, 2.0]


def test_the_discrimination_indices_match_an_independent_computation():
    item = analyse(1.0, SCORES, TOTALS)
    rest = np.array(TOTALS) - np.array(SCORES)
    assert item.item_total_r == pytest.approx(np.corrcoef(SCORES, rest)[0, 1], abs=1e-12)
    # Kelley's 27% of 8 is 2 students: the top two by total (9 and 8) both earned the cell, of the bottom two
    # (2 and 3) neither
    assert item.upper_lower_d == 1.0
    assert (item.passed, item.graded, item.distribution) == (4, 8, {0.0: 4, 1.0: 4})
    # the top two earned it in one case of two, the bottom two in one of two: no separation
    assert analyse(1.0, [0.0, 1.0, 1.0, 0.0, 0.0, 1.0], [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]).upper_lower_d == 0.0


def _cell(grade_id: str, score: float, *causes: Cause) -> dict:
    return {"grade_id": grade_id, "points": 1.0, "score": score, "causes": list(causes)}


def test_a_cell_missing_from_a_record_counts_under_the_students_edition_and_the_columns_add_up():
    """A record made before a test cell was added lacks it: the cell failed for that student, cause unknown, in
    the edition the student handed in; a record whose edition is none of the course's counts under ``?``, a
    column of its own, so that each row's editions add up to its total."""
    graded = [
        ("ann", [{"notebook": "nb", "edition": "zh-TW", "cells": [_cell("t1", 1.0), _cell("t2", 1.0)]}]),
        ("ben", [{"notebook": "nb", "edition": "zh-TW", "cells": [_cell("t1", 1.0)]}]),
        ("cat", [{"notebook": "nb", "edition": "?", "cells": [_cell("t1", 0.0, Cause("values")),
                                                              _cell("t2", 0.0, Cause("values"))]}]),
    ]  # fmt: skip
    found = stats.ClassStats("nb")
    stats._test_cells(found, graded)
    t2 = next(c for c in found.cells if c.grade_id == "t2")
    assert t2.causes == {(Cause("unknown"), "zh-TW"): 1, (Cause("values"), "?"): 1}
    table = str(stats_page._causes(t2))
    heads = table.split("</thead>")[0]
    assert heads.endswith("<th>?</th><th>total</th></tr>"), heads
    for row in table.split("<tr>")[2:]:  # each cause's counts, by edition, then its total
        counts = [int(n) for n in row.split("<td class=n>")[1:] for n in [n.split("<")[0]]]
        assert sum(counts[:-1]) == counts[-1] == 1, row
