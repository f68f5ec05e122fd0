"""The HTML page of ``python -m autograder similar`` (``similar.Similarity``): the pairs from the threshold, most
alike first, each with both cells side by side and their matching slices marked. The code is the students' and is
shown as escaped text in ``<pre>``: nothing of it runs, nothing of it is markup."""

from __future__ import annotations

from collections import Counter

from markupsafe import Markup

from autograder.analysis import plots
from autograder.analysis.items import histogram
from autograder.analysis.page import document, table, text
from autograder.analysis.similar import MAX_SHOWN, MIN_TOKENS, Pair, Similarity, common_knowledge

SHOWN_CHARACTERS = 20_000  # of one cell on the page (a cell is at most similar.MAX_CELL)


def marked(source: str, spans: list[tuple[int, int]]) -> Markup:
    """``source`` as escaped text with each of ``spans`` in ``<mark>``."""
    out, at = [], 0
    for start, end in sorted(spans):
        start, end = max(start, at), min(end, SHOWN_CHARACTERS)
        if start >= end:
            continue
        out += [text(source[at:start]), Markup("<mark>"), text(source[start:end]), Markup("</mark>")]
        at = end
    out.append(text(source[at:SHOWN_CHARACTERS]))
    if len(source) > SHOWN_CHARACTERS:
        out.append(text(f"\n[... {len(source) - SHOWN_CHARACTERS} more characters]"))
    return Markup("").join(out)


def _pair(result: Similarity, pair: Pair) -> Markup:
    """Both cells of ``pair`` side by side, its matching slices marked (none where the pair shares nothing: a
    threshold of 0 shows those pairs too)."""
    sides = []
    slices = pair.slices or ([], [])
    for who, spans, share, size in ((pair.a, slices[0], pair.share_a, pair.tokens_a),
                                    (pair.b, slices[1], pair.share_b, pair.tokens_b)):  # fmt: skip
        source = result.sources.get((pair.notebook, pair.cell, who), "")
        sides.append(Markup("<div><b>") + text(who) + Markup("</b> ") +
                     text(f"({100 * share:.0f}% of its {size} tokens matched)") +
                     Markup("<pre>") + marked(source, spans) + Markup("</pre></div>"))  # fmt: skip
    head = text(f"{pair.similarity:.2f}  {pair.cell}: {pair.a} ~ {pair.b}")
    return (
        Markup("<details open><summary>")
        + head
        + Markup("</summary><div class=pair>")
        + sides[0]
        + sides[1]
        + Markup("</div></details>")
    )


def page(result: Similarity) -> str:
    flagged = result.flagged
    body: list = [
        Markup(
            f"<p>{len(result.pairs)} pair(s) scored over {len(result.cells)} answer cell(s); "
            f"{len(flagged)} from the threshold {result.threshold:g}, most alike first"
            f"{f' (the first {MAX_SHOWN} shown)' if len(flagged) > MAX_SHOWN else ''}.</p>"
        ),  # fmt: skip
        Markup(
            "<p class=note>Similarity: the share of both cells' own tokens that the other holds too, from "
            "fingerprints of 12 tokens within a statement (copydetect's winnowing), with names, comments, "
            "docstrings and layout not counted. A cell's own tokens leave out the released stub and common "
            f"knowledge: a passage held by more than {result.common} answers written apart (the cell's answers, "
            "copies of one another counted once, and the course's solutions to its other cells), as MOSS leaves "
            "out a passage found in many programs. [solutions] is the published solution. An answer cell is too "
            f"small to judge where its solution has fewer than {MIN_TOKENS} tokens that no answer written apart "
            "from it holds too (one formula that every correct answer writes out alike); an answer is, where it has "
            f"fewer than {MIN_TOKENS} tokens of its own. Neither is scored. A high score is a reason to look, not a "
            "verdict.</p>"
        ),  # fmt: skip
        Markup("<p>") + text(common_knowledge(result)) + Markup(".</p>"),
    ]
    if result.pairs:
        body.append(plots.histogram(histogram([p.similarity for p in result.pairs], 1.0, 20),
                                    "every pair scored", "similarity", "pairs"))  # fmt: skip
    body.append(Markup("<h2>Answer cells</h2>"))
    by_cell = Counter((p.notebook, p.cell) for p in result.pairs)
    top = {}
    for p in result.pairs:
        top[(p.notebook, p.cell)] = max(top.get((p.notebook, p.cell), 0.0), p.similarity)
    rows = [[c.notebook, c.cell, c.answers, c.common, c.solution_tokens, c.specific, "yes" if c.judged else "no",
             by_cell[(c.notebook, c.cell)], f"{top.get((c.notebook, c.cell), 0.0):.2f}"]
            for c in result.cells]  # fmt: skip
    body.append(table(["notebook", "answer cell", "answers", "common fingerprints", "solution's own tokens",
                       "of them, held by no answer written apart", "judged", "pairs scored", "highest"], rows,
                      numeric=(2, 3, 4, 5, 7, 8)))  # fmt: skip
    body.append(Markup("<h2>Pairs from the threshold</h2>"))
    body += [_pair(result, p) for p in flagged[:MAX_SHOWN]] or [text("None.")]
    body.append(Markup("<h2>Not judged</h2>"))
    cells = [[f"{c.notebook}: {c.cell}", c.specific] for c in result.cells if not c.judged]
    body.append(
        Markup(f"<h3>Answer cells too small to judge (the solution's own under {MIN_TOKENS} tokens)</h3>")
    )
    body.append(table(["cell", "solution's tokens held by no answer written apart"], cells, numeric=(1,))
                if cells else text("None."))  # fmt: skip
    small = [[who, f"{nb}: {cell}", own] for nb, cell, who, own in result.too_small]
    body.append(Markup(f"<h3>Answers too small to judge (under {MIN_TOKENS} tokens of their own)</h3>"))
    body.append(table(["who", "cell", "own tokens"], small, numeric=(2,)) if small else text("None."))
    body.append(Markup("<h3>Not read or not compared</h3>"))
    body.append(table(["who", "notebook", "why"], result.problems) if result.problems else text("None."))
    unchanged = Counter((nb, cell) for nb, cell, who in result.unchanged if not who.startswith("["))
    body.append(Markup("<h3>Left as released (similarity 0 with everyone)</h3>"))
    body.append(table(["cell", "students"], [[f"{nb}: {c}", n] for (nb, c), n in unchanged.items()], numeric=(1,))
                if unchanged else text("None."))  # fmt: skip
    return document(f"{result.assignment}: similar answers", body)
