"""Every number a notebook's text quotes from a run is what the notebook's own run prints, at its default sizes on
a CPU, whatever the graded checks before it drew from torch's global generator.

``QUOTED`` lists, per notebook, the markdown cells that quote a run (model answers included) and, for each, the
code cell whose printed output it quotes and the strings quoted: each string must appear in the markdown cell and
in that code cell's output. The run is the solution notebook at its defaults (no ``POSREF_FAST``, no GPU), with
torch's global generator re-seeded after every graded test cell to a state no earlier cell left: a checker may draw
any amount from it (02's Q2 key once quoted a spread of 22.7 that two runs printed as 19.1 and 25.8, because the
hidden check of ``LearnedPositions`` before it built a drawn number of modules, each drawing its table), so a cell
whose numbers the text quotes must seed its own draws. Text edited without its run, a run changed without its text,
or a quoted cell that depends on what a checker drew, fails here.

A string is matched as a substring, so a quote may drop trailing digits of a printed number ("5.587" in "+5.58706").
Differences at float32 rounding (1e-07 and below) are quoted as such, not digit by digit, and are not listed: their
digits depend on the CPU's summation order.
"""

from __future__ import annotations

import nbformat
import notebook_helpers as nh
import pytest
from nbclient import NotebookClient

# notebook -> markdown cell id -> (code cell id whose output it quotes, strings quoted)
QUOTED: dict[str, dict[str, tuple[str, tuple[str, ...]]]] = {
    "01_order": {
        "q_two_layers": ("cell-16", ("by 0.886", "by 1.53")),
    },
    "02_absolute": {
        "q_decomposition": ("cell-21", ("22.7",)),
        "q_find_the_bug": ("cell-13", ("1.990",)),
    },
    "03_relative": {
        "cell-00": ("cell-11", ("91", "113")),
        "cell-08": ("cell-11", ("91", "113")),
        "cell-21": ("cell-11", ("91", "113")),
        "q_alibi_not_nope": ("alibi-equivariance", ("1.22",)),
        "q_missing_clip": (
            "cell-18",
            ("0 offsets in the wrong bucket", "29", "768 offsets", "35", "bucket 17"),
        ),
    },
    "04_rope": {
        "q_keys_only": ("cell-22", ("5.587", "6.994", "-2.316", "4.487")),
    },
    "05_rope_analysis": {
        "q_decay": ("cell-06", ("0.805", "-0.040", "0.090", "0.088")),
        "cell-10b": ("cell-10", ("0.25", "0.19", "0.94")),
        "q_wrong_pairs": ("cell-16", ("0.55", "0.34", "0.37")),
    },
}
# the shares of section 3's trained heads, quoted by 05's Q2 key, come from another cell than its other numbers
QUOTED_TOO = {("05_rope_analysis", "q_decay"): ("cell-14", ("0.72", "1.00", "0.67"))}

RESEED = "import torch as _torch\n_torch.manual_seed({seed})\n_torch.randn({draws});"


def reseeded(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """A copy of ``nb`` with a cell after every graded test cell that re-seeds torch's generator (a different seed
    and number of draws each time): what a checker drawing any amount of it could leave."""
    nb = nbformat.from_dict(nb)
    cells = []
    for cell in nb.cells:
        cells.append(cell)
        if cell.cell_type == "code" and cell.metadata.get("nbgrader", {}).get("grade"):
            cells.append(nbformat.v4.new_code_cell(RESEED.format(seed=1000 + len(cells), draws=len(cells))))
    nb.cells = cells
    return nb


def printed(nb: nbformat.NotebookNode, tmp_path, monkeypatch) -> dict[str, str]:
    """Run ``nb`` at its defaults on the CPU -> the printed output (streams and results) of each code cell, by id."""
    env = nh.notebook_env(tmp_path, CUDA_VISIBLE_DEVICES="")
    env.pop("POSREF_FAST")
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("POSREF_FAST", raising=False)
    monkeypatch.delenv("POSREF_GRADING", raising=False)
    NotebookClient(
        nb, timeout=900, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
    ).execute()
    return {
        cell.get("id"): "".join(
            out.get("text", "") + out.get("data", {}).get("text/plain", "") for out in cell.get("outputs", [])
        )
        for cell in nb.cells
        if cell.cell_type == "code"
    }


def quotes(name: str):
    for text_id, (code_id, strings) in QUOTED[name].items():
        yield text_id, code_id, strings
        if (name, text_id) in QUOTED_TOO:
            yield text_id, *QUOTED_TOO[name, text_id]


@pytest.mark.parametrize("name", sorted(QUOTED))
def test_the_text_holds_what_it_quotes(name):
    """The table names cells that exist, and each quoted string is in the text cell (fast: no run)."""
    cells = {cell.get("id"): cell for cell in nbformat.read(nh.source(name), as_version=4).cells}
    for text_id, code_id, strings in quotes(name):
        assert cells[text_id].cell_type == "markdown" and cells[code_id].cell_type == "code", (
            text_id,
            code_id,
        )
        missing = [s for s in strings if s not in cells[text_id].source]
        assert not missing, f"{name} {text_id} no longer quotes {missing}: update QUOTED with the text"


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(QUOTED))
def test_quoted_numbers_are_what_the_run_prints(name, tmp_path, monkeypatch):
    outputs = printed(reseeded(nbformat.read(nh.source(name), as_version=4)), tmp_path, monkeypatch)
    drifted = [
        f"{text_id} quotes {s!r}, {code_id} printed:\n{outputs[code_id]}"
        for text_id, code_id, strings in quotes(name)
        for s in strings
        if s not in outputs[code_id]
    ]
    assert not drifted, f"{name}: quoted numbers the run does not print\n" + "\n".join(drifted)


@pytest.mark.slow
def test_a_cell_that_reads_what_a_checker_left_is_caught(tmp_path, monkeypatch):
    """The re-seeding is what makes the test above fail for a cell that depends on a checker's draws: the same
    notebook prints another number once a graded cell's draws are replaced."""
    graded = nbformat.v4.new_code_cell("torch.randn(5);")  # a check that draws from the global generator
    graded.metadata["nbgrader"] = {"grade": True, "grade_id": "test_draws", "points": 1, "solution": False}
    nb = nbformat.v4.new_notebook(
        cells=[
            nbformat.v4.new_code_cell("import torch\ntorch.manual_seed(0)"),
            graded,
            nbformat.v4.new_code_cell("print(f'{torch.randn(1).item():.6f}')", id="after"),
        ]
    )
    as_run = printed(nbformat.from_dict(nb), tmp_path, monkeypatch)["after"]
    assert printed(reseeded(nb), tmp_path, monkeypatch)["after"] != as_run
