"""``python -m autograder similar`` (issue 40.3, 40.4, 40.5) on a class made for it, in every notebook: two disguised
copies of the published solution (names renamed, comments rewritten, blank lines moved, independent statements
reordered: ``disguise.py``), independent correct answers written the way students write them
(``tests/grading/student_impls*.py``, ``independent_answers.py``: up to seven to one cell, in the cells that are one
formula written out, where independent answers converge), a disguised copy of a classmate's, the untouched release,
and hostile notebooks (a huge cell, bytes that are not UTF-8, markup in the code, a notebook that is not one).
Nothing is graded: ``similar`` reads the notebooks as JSON and never runs them.

In every answer cell large enough to judge, disguised copies score at least 0.9 and independent answers at most 0.3
(with the solution and with each other), or the answer is listed as too small to judge; a cell that is too small to
judge (its solution holds under ``MIN_TOKENS`` tokens that no answer written apart from it also holds) scores no pair
but the release's 0; the untouched release scores 0; each hostile notebook costs only its own row. The separation
measured per notebook, and the cells too small to judge, are printed (``-s``).
"""

from __future__ import annotations

import csv
import json
import shutil
from itertools import combinations

import independent_answers as ia
import pytest
import synthetic_class as sc
from course_helpers import run_command
from disguise import disguised

from autograder.analysis.fingerprints import tokens
from autograder.analysis.similar import COMMON, CSV_FIELDS, SOLUTION, THRESHOLD, similar, summary
from autograder.course import REPO
from posref import grading
from posref.grading.checks.lab import check_alibi_handler

ASSIGNMENTS = sorted(p.name for p in (REPO / "solutions").iterdir() if p.is_dir())
s = sc.s
lab = sc.load_impls("student_impls_lab")
RoPEHandlerComplex = lab.RoPEComplex
# answer cell -> independent correct answers (their names are the notebook's once put in the cell)
INDEPENDENT = {
    "attention": [s.attention_loops, s.attention_einsum],
    "equivariance_error": [s.equivariance_error_einsum],
    "LearnedPositions": [s.LearnedPositionsChecked],
    "sinusoidal_pe": [s.sinusoidal_pe_exp_log, s.sinusoidal_pe_loops],
    "shift_matrix": [s.shift_matrix_from_tables],
    "alibi_bias": [s.alibi_bias_loops],
    "t5_bucket": [s.t5_bucket_hf_style],
    "t5_learned_bias": [s.t5_learned_bias_loops, s.t5_learned_bias_embedding],
    "rope_cos_sin": [s.rope_cos_sin_float64],
    "apply_rope": [s.apply_rope_complex, s.apply_rope_rotate_half],
    "rope_scores": [s.rope_scores_complex],
    "per_position_loss": [lab.per_position_loss_logsumexp, lab.per_position_loss_float32],
    "yarn_frequencies": [lab.yarn_paper_loop],
    "longrope_mutation": [s.longrope_mutation_loop],
    "causal_mean": [lab.causal_mean_tril],
    "alibi_slopes": [ia.alibi_slopes_halving, s.alibi_slopes_geometric],
    "rotations_from_step": [ia.rotations_from_step_powers],
    "score_by_distance": [ia.score_by_distance_rotated],
    "pair_norms": [
        ia.pair_norms_hypot,
        ia.pair_norms_vector_norm,
        ia.pair_norms_loop,
        ia.pair_norms_squares,
        ia.pair_norms_stacked,
        ia.pair_norms_one_line,
        ia.pair_norms_halves,
    ],
    "p_rope": [ia.p_rope_threshold],
    "ntk_by_parts_frequencies": [ia.ntk_by_parts_loop],
    "rope_handler": [RoPEHandlerComplex],
    "alibi_handler": [ia.ALiBiWithOwnSlopes],
}
# the checker of each answer written for this test (independent_answers.py): they are correct answers
CHECKED = [
    (grading.check_alibi_slopes, ia.alibi_slopes_halving),
    (grading.check_rotations_from_step, ia.rotations_from_step_powers),
    (grading.check_score_by_distance, ia.score_by_distance_rotated),
    *((grading.check_pair_norms, fn) for fn in INDEPENDENT["pair_norms"]),
    (grading.check_p_rope, ia.p_rope_threshold),
    (grading.check_rope_frequencies_ntk_by_parts, ia.ntk_by_parts_loop),
    (check_alibi_handler, lab.alibi_attention(ia.ALiBiWithOwnSlopes)),
]
# what an earlier answer cell of the notebook defines, which an answer calls instead of its own copy
GIVEN = {
    "t5_bucket_hf_style": "t5_bucket",
    "apply_rope_complex": "apply_rope",
}
# markup in a comment and in a string that is a whole statement: neither counts, both are shown as text
HOSTILE = "# <script>fetch('/pwned/1')</script>\n'<img src=x onerror=alert(1)>'\n"
# a line that is no Python (the quotes nest wrongly): the rest of the cell still counts as written
BROKEN = "'<img src=x onerror=\"fetch('/pwned/2')\">'\n"
# two answers of one author on one skeleton (the layouts' slicing): not independent of each other, each of the
# solution
SAME_AUTHOR = {"apply_rope"}


def _cells(nb: dict) -> dict[str, dict]:
    return {c["metadata"]["nbgrader"]["grade_id"]: c for c in nb["cells"]
            if c["cell_type"] == "code" and c.get("metadata", {}).get("nbgrader", {}).get("solution")}  # fmt: skip


def _name(cell: dict) -> str:
    """The function or class an answer cell defines last (what the notebook asks for)."""
    import ast

    return [n.name for n in ast.parse(cell["source"]).body if isinstance(n, ast.FunctionDef | ast.ClassDef)][
        -1
    ]


def _class(assignment: str) -> dict[str, dict | bytes]:
    """student -> notebook (JSON, or raw bytes) of ``assignment``."""
    solution, release = sc.solution(assignment, "en"), sc.release(assignment, "en")
    out = {}
    for student, salt in (("copy-a", "a"), ("copy-b", "bb")):
        nb = json.loads(json.dumps(solution))
        for cell in _cells(nb).values():
            cell["source"] = disguised(cell["source"], salt)
        out[student] = nb
    for k in range(max(len(answers) for answers in INDEPENDENT.values())):
        nb = json.loads(json.dumps(release))
        for grade_id, cell in _cells(nb).items():
            answers = INDEPENDENT.get(grade_id, [])
            if k < len(answers):
                cell["source"] = sc.answer(answers[k], _name(_cells(solution)[grade_id]), GIVEN)
        out[f"indep{k + 1}"] = nb
    classmate = json.loads(json.dumps(out["indep1"]))
    for cell in _cells(classmate).values():
        cell["source"] = disguised(cell["source"], "cm")
    out["classmate"] = classmate
    out["release"] = release
    huge = json.loads(json.dumps(solution))
    first = next(iter(_cells(huge).values()))
    first["source"] = "x = 1\n" * 20_000
    out["huge"] = huge
    marked = json.loads(json.dumps(solution))
    for cell in _cells(marked).values():
        cell["source"] = HOSTILE + cell["source"]
    out["markup"] = marked
    broken = json.loads(json.dumps(solution))
    for cell in _cells(broken).values():
        cell["source"] = BROKEN + cell["source"]
    out["broken"] = broken
    out["odd-bytes"] = json.dumps(solution).encode()[:5000] + b"\xff\xfe\x00<script>"
    out["not-a-notebook"] = json.dumps({"cells": {"<b>": 1}}).encode()
    return out


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    folder = tmp_path_factory.mktemp("similar")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("POSREF_COURSE_DIR", str(folder))
        mp.delenv("POSREF_RELEASE_DIR", raising=False)  # the checkout's notebooks/
        for assignment in ASSIGNMENTS:
            for student, nb in _class(assignment).items():
                target = folder / "submitted" / student / assignment / f"{assignment}.ipynb"
                target.parent.mkdir(parents=True)
                target.write_bytes(nb if isinstance(nb, bytes) else json.dumps(nb).encode())
        yield folder
        shutil.rmtree(folder, ignore_errors=True)


def _score(result, a: str, b: str, cell: str) -> float | None:
    for p in result.pairs:
        if p.cell == cell and {p.a, p.b} == {a, b}:
            return p.similarity
    return None


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_disguised_copies_score_high_independent_answers_low_and_the_release_nothing(course, assignment):
    result = similar(assignment)
    small = {(nb, cell, who) for nb, cell, who, _own in result.too_small}
    copies, independent, unjudged = [], [], []
    for found in result.cells:
        nb, cell = found.notebook, found.cell
        if not found.judged:  # too small to judge: no pair scored, but with the release (0)
            unjudged.append(f"{cell} ({found.specific} tokens of its own)")
            assert all(p.similarity == 0.0 for p in result.pairs if p.cell == cell), cell
            continue
        assert INDEPENDENT.get(cell), f"{cell} is large enough to judge: it needs an independent answer here"
        answers = [f"indep{k + 1}" for k in range(len(INDEPENDENT[cell]))]
        others = [] if cell in SAME_AUTHOR else list(combinations(answers, 2))
        for kind, pairs in ((copies, [("copy-a", SOLUTION), ("copy-b", SOLUTION), ("copy-a", "copy-b"),
                                      ("classmate", "indep1")]),
                            (independent, [*((a, SOLUTION) for a in answers), *others])):  # fmt: skip
            for a, b in pairs:
                if (nb, cell, a) in small or (nb, cell, b) in small:
                    continue  # listed as too small to judge, never scored
                kind.append((_score(result, a, b, cell), cell, a, b))
        for p in result.pairs:
            if p.cell == cell and "release" in (p.a, p.b):
                assert p.similarity == 0.0, p
    assert copies and all(c[0] is not None for c in copies + independent), (copies, independent)
    low_copy, high_independent = min(copies), max(independent, default=(0.0,))
    print(f"{assignment}: {len(result.cells) - len(unjudged)} of {len(result.cells)} answer cells judged; disguised "
          f"copies >= {low_copy[0]:.2f} ({low_copy[1]}), independent answers <= {high_independent[0]:.2f} "
          f"({high_independent[1:]}); too small to judge: {', '.join(unjudged) or 'none'}")  # fmt: skip
    assert all(score >= 0.9 for score, *_ in copies), [c for c in copies if c[0] < 0.9]
    assert all(score <= 0.3 for score, *_ in independent), [c for c in independent if c[0] > 0.3]
    assert high_independent[0] < THRESHOLD <= low_copy[0]  # the page's default threshold separates them
    # the hostile notebooks cost their own rows only
    problems = {who: why for who, _nb, why in result.problems}
    assert "odd-bytes" in problems and "not-a-notebook" in problems, problems
    assert any(who == "huge" and "not compared" in why for who, _nb, why in result.problems)
    for found in result.cells:
        if found.judged:
            # the markup is a comment and a string; a broken line costs that line only
            assert _score(result, "markup", SOLUTION, found.cell) >= 0.9, found.cell
            assert _score(result, "broken", SOLUTION, found.cell) >= 0.9, found.cell


def test_a_small_class_counts_every_passage_and_says_so(course, tmp_path):
    """One student: no passage can be held by more than ``COMMON`` of a cell's answers (hers and the solution), so
    only the course's solutions to other cells set passages aside; the summary says so, and her disguised copy of the
    solution still scores at least 0.9 in every cell large enough to judge."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("POSREF_COURSE_DIR", str(tmp_path))
        shutil.copytree(course / "submitted" / "copy-a" / "05_rope_analysis",
                        tmp_path / "submitted" / "copy-a" / "05_rope_analysis")  # fmt: skip
        result = similar("05_rope_analysis")
    assert all(c.answers <= COMMON for c in result.cells)
    said = summary(result)[1]
    assert f"{len(result.cells)} cell(s) have {COMMON} answers or fewer" in said, said
    judged = [c.cell for c in result.cells if c.judged]
    assert judged and all(_score(result, "copy-a", SOLUTION, cell) >= 0.9 for cell in judged)


# code of a student's own, added to a copy (its names, strings and layout are nobody else's)
PADDING = """

def _my_checks(values, limit=3):
    seen = {}
    for index, value in enumerate(values):
        if value in seen and index - seen[value] < limit:
            raise RuntimeError(f"repeat of {value!r} after {index - seen[value]} steps")
        seen[value] = index
    return sorted(seen, key=seen.get)


def _my_table(rows, width=10):
    lines = ["|".join(str(item).rjust(width) for item in row) for row in rows]
    rule = "-" * max((len(line) for line in lines), default=0)
    return "\\n".join([rule, *lines, rule]) if lines else rule
"""


def test_many_copies_of_one_answer_do_not_make_it_common(course, tmp_path):
    """MOSS's rule counts the programs that hold a passage: ten copies of the solution would make every passage of
    it common knowledge, and the copies unjudgeable. Here copies of one another are one answer, a copy with code of
    its own added among them (it holds the whole solution): ten disguised copies score as one, and the padded copy
    neither makes the solution's passages common nor its cells too small to judge."""
    solution = sc.solution("01_order", "en")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("POSREF_COURSE_DIR", str(tmp_path))
        for k in range(11):
            nb = json.loads(json.dumps(solution))
            for cell in _cells(nb).values():
                cell["source"] = disguised(cell["source"], f"c{k}") + (PADDING if k == 10 else "")
            target = tmp_path / "submitted" / f"c{k}" / "01_order" / "01_order.ipynb"
            target.parent.mkdir(parents=True)
            target.write_text(json.dumps(nb))
        result = similar("01_order")
    assert all(c.judged and c.common == 0 for c in result.cells), result.cells
    for p in result.pairs:
        padded = [share for who, share in ((p.a, p.share_a), (p.b, p.share_b)) if who == "c10"]
        if padded:  # all of the other cell is in the padded one, and its padding is not in the other
            assert max(p.share_a, p.share_b) == 1.0 and padded[0] < 0.9, p
        else:
            assert p.similarity >= 0.9, p


def test_unfinished_copies_of_the_solution_do_not_make_it_too_small_to_judge(course, tmp_path):
    """Two students hand in a part of the solution each (its first half, its second: copies left unfinished), a
    third all of it, disguised. A part is a copy of the solution (the solution holds all of it), not an answer written
    apart from it: were it one, the two parts together would hold all of the solution, and every cell would be too
    small to judge. Each cell is judged, the whole copy scores at least 0.9."""
    solution = sc.solution("01_order", "en")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("POSREF_COURSE_DIR", str(tmp_path))
        for student in ("first-half", "second-half", "whole"):
            nb = json.loads(json.dumps(solution))
            for cell in _cells(nb).values():
                lines = cell["source"].split("\n")
                half = len(lines) // 2
                cell["source"] = {"first-half": "\n".join(lines[:half]),
                                  "second-half": "\n".join(lines[:1] + lines[half:]),
                                  "whole": disguised(cell["source"], "w")}[student]  # fmt: skip
            target = tmp_path / "submitted" / student / "01_order" / "01_order.ipynb"
            target.parent.mkdir(parents=True)
            target.write_text(json.dumps(nb))
        result = similar("01_order")
    assert all(c.judged for c in result.cells), result.cells
    assert all(_score(result, "whole", SOLUTION, c.cell) >= 0.9 for c in result.cells)


def test_the_command_writes_every_pair_and_a_page_that_is_text(course, tmp_path):
    done = run_command("similar", "02_absolute", "--csv", str(tmp_path / "similar.csv"), "--threshold", "0.5")
    assert done.returncode == 0, done.stderr
    with open(tmp_path / "similar.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert list(rows[0]) == CSV_FIELDS and CSV_FIELDS[:4] == ["cell", "student_a", "student_b", "similarity"]
    assert all(0 <= float(r["similarity"]) <= 1 for r in rows)
    pairs = {(r["cell"], r["student_a"], r["student_b"]) for r in rows}
    assert ("sinusoidal_pe", "copy-a", "copy-b") in pairs and ("sinusoidal_pe", "copy-a", SOLUTION) in pairs
    page = (course / "reports" / "02_absolute-similar.html").read_text()
    assert "<script" not in page.lower().replace("&lt;script", "")
    assert "&lt;script&gt;fetch(&#39;/pwned/1&#39;)&lt;/script&gt;" in page  # the student's markup, as text
    assert "<mark>" in page and "<pre>" in page


def test_a_threshold_of_0_shows_every_pair_those_that_share_nothing_too(course, tmp_path):
    """From 0, the page shows every pair scored, the release's (which shares nothing, so has no matching slice)
    among them."""
    html = tmp_path / "similar.html"
    done = run_command(
        "similar", "01_order", "--threshold", "0", "--csv", str(tmp_path / "s.csv"), "--html", str(html)
    )
    assert done.returncode == 0, done.stderr
    page = html.read_text()
    assert "0.00  attention: copy-a ~ release" in page and "(0% of its 0 tokens matched)" in page


def test_an_earlier_terms_submissions_are_references(course, tmp_path):
    earlier = tmp_path / "earlier"
    (earlier / "zoe" / "01_order").mkdir(parents=True)
    shutil.copy(course / "submitted" / "copy-a" / "01_order" / "01_order.ipynb", earlier / "zoe" / "01_order")
    result = similar("01_order", earlier=[earlier])
    score = _score(result, "copy-b", "[earlier 1] zoe", "attention")
    assert score is not None and score >= 0.9
    assert (
        _score(result, "[earlier 1] zoe", SOLUTION, "attention") is None
    )  # references are not compared together


@pytest.mark.parametrize(("check", "fn"), CHECKED, ids=[fn.__name__ for _, fn in CHECKED])
def test_the_answers_written_for_this_test_are_correct(check, fn):
    for hidden in (False, True):
        check(fn, hidden=hidden)


def _symbols(source: str) -> list[str]:
    """The symbols of ``source``'s last statement, as ``fingerprints.tokens`` reads them."""
    vocabulary: dict = {}
    doc = tokens(source, vocabulary).doc
    names = {char: symbol for symbol, char in vocabulary.items() if isinstance(char, str)}
    symbols = [names.get(c) for c in doc]  # None: a statement's end
    ends = [i for i, symbol in enumerate(symbols) if symbol is None]
    return symbols[ends[-2] + 1 : ends[-1]]


def test_a_global_named_like_a_placeholder_stays_as_written():
    """A notebook's global ``V`` (attention's values) or ``S`` is a name the cell does not choose: it stays as
    written, unlike a name the cell binds (any name) and a string literal (any string)."""
    assert _symbols("def f(q):\n    return q @ V\n") != _symbols("def f(q, k):\n    return q @ k\n")
    assert _symbols("def f(q):\n    return q + S\n") != _symbols("def f(q):\n    return q + 'S'\n")
    assert _symbols("def f(q):\n    return q @ V\n")[-1] == "V"


def test_the_commands_defaults_are_the_analysis_constants(monkeypatch, capsys):
    """The command line's --threshold and --common were 0.8 and 2 written again in cli.py: a change of the
    analysis's constants would have left the command on the old values."""
    from autograder import cli
    from autograder.analysis import defaults

    args = cli._parser().parse_args(["similar", "01_order"])
    assert (args.threshold, args.common) == (THRESHOLD, COMMON)
    monkeypatch.setattr(defaults, "THRESHOLD", 0.65)
    monkeypatch.setattr(defaults, "COMMON", 3)
    args = cli._parser().parse_args(["similar", "01_order"])
    assert (args.threshold, args.common) == (0.65, 3)
    with pytest.raises(SystemExit):
        cli._parser().parse_args(["similar", "--help"])
    said = " ".join(capsys.readouterr().out.split())
    assert "on the page (0.65)" in said and "not counted (3)" in said, said
