"""The self-learner's route (issue 42.2): ``make explore`` / ``posref explore [--lang zh-TW]`` opens the course with
every exercise solved, so that Run All reaches each explorer of 02-08 (in a release it stops at the first
unfinished exercise above them).

The explore notebooks of every edition are checked against their release and solution cell by cell; in a browser,
one ``posref explore --lang zh-TW`` server (``explore_lab``) serves a self-learner's folder, where Run All of each
notebook with an explorer reaches it and a slider moved with the mouse redraws its figure.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from test_browser import (  # noqa: F401 (chromium is a fixture)
    LabServer,
    assert_figure_changed,
    browser_page,
    chromium,
    drag_slider,
    run_all,
    save_notebook,
    wait_for_new_image,
)

from posref import explore, i18n, launch, workfolder

REPO = Path(__file__).resolve().parents[2]
# each notebook that shows an explorer -> the explorer's name (its widget's class is posref-<name>-explorer)
EXPLORERS = {
    "02_absolute": "fingerprint",
    "03_relative": "bias-heatmap",
    "04_rope": "rope-pair",
    "05_rope_analysis": "decay",
    "06_length": "position-loss",
    "07b_longrope": "scaling",
    "08_nope": "position-loss",
}
STUB = "raise NotImplementedError("  # the stub's line in every edition (each says "not done yet" in its language)


def _in_git() -> bool:
    """Whether this checkout is a git repository (a tarball of it is not: nothing there is committed)."""
    return (
        shutil.which("git") is not None
        and subprocess.run(["git", "-C", str(REPO), "rev-parse"], capture_output=True).returncode == 0
    )


def _cells(data: bytes) -> list[dict]:
    return json.loads(data)["cells"]


def _source(cell: dict) -> str:
    return "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]


@pytest.mark.parametrize("tag", list(launch.EDITIONS))
def test_an_explore_notebook_is_its_release_with_the_exercises_solved(tag):
    """Cell for cell the release, but for each answer cell nbgrader restores (the solution's code, without its
    markers), no nbgrader marks, and the note after the title in the edition's language."""
    edition = launch.EDITIONS[tag]
    with i18n.speaking(tag):
        files, committed = explore.explore_files(edition.releases, edition.solutions)
        note = explore.note_cell()["source"]
    assert set(files) == set(workfolder.release_files(edition.releases))
    solved_cells = 0
    for rel, data in files.items():
        released = _cells((edition.releases / rel).read_bytes())
        solution = _cells((edition.solutions / rel).read_bytes())
        cells = _cells(data)
        assert cells[1]["id"] == explore.NOTE_ID and _source(cells[1]) == note, rel
        del cells[1]
        assert len(cells) == len(released), rel
        for cell, release, source in zip(cells, released, solution, strict=True):
            grading = release["metadata"].get("nbgrader", {})
            assert "nbgrader" not in cell["metadata"], rel
            if cell["cell_type"] == "code" and grading.get("solution") and not grading.get("grade"):
                markers = ("### BEGIN SOLUTION", "### END SOLUTION")  # nbgrader's, as the course writes them
                expected = [line for line in _source(source).split("\n") if line.strip() not in markers]
                assert _source(cell).split("\n") == expected, f"{rel}: {grading['grade_id']}"
                assert STUB in _source(release) and STUB not in _source(cell), rel
                solved_cells += 1
            else:
                assert cell["source"] == release["source"] and cell["cell_type"] == release["cell_type"], rel
    assert solved_cells >= 20, f"only {solved_cells} answer cells solved"
    if tag != "en":
        assert note != explore.note_cell()["source"], "the note is not translated"
    if _in_git():  # the course's own: both its sources as git has them (a checkout being edited has others)
        edited = subprocess.run(
            [
                "git",
                "-C",
                str(REPO),
                "status",
                "--porcelain",
                "--",
                str(edition.releases),
                str(edition.solutions),
            ],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        assert committed == {rel for rel in files if f"/{rel}" not in edited}, edited


def test_every_notebook_with_an_explorer_is_in_the_browser_test():
    files, _committed = explore.explore_files(launch.ENGLISH.releases, launch.ENGLISH.solutions)
    shown = {
        rel.split("/")[0]
        for rel, data in files.items()
        if re.search(
            r"\b\w+_explorer\(", "".join(_source(c) for c in _cells(data) if c["cell_type"] == "code")
        )
    }
    assert shown == set(EXPLORERS), "EXPLORERS names another set of notebooks than those showing an explorer"


def test_the_solution_markers_go_and_nothing_else():
    source = "def f(x):\n    ### BEGIN SOLUTION\n    y = x  # ### BEGIN SOLUTION stays in a comment\n    return y\n    ### END SOLUTION"
    assert (
        explore.solved_source(source)
        == "def f(x):\n    y = x  # ### BEGIN SOLUTION stays in a comment\n    return y"
    )
    assert explore.solved_source("x = 1\n") == "x = 1\n"


def test_a_release_made_from_another_source_says_so(tmp_path):
    edition = launch.ENGLISH
    name = "02_absolute/02_absolute.ipynb"
    release, solution = (
        json.loads((folder / name).read_text()) for folder in (edition.releases, edition.solutions)
    )
    with pytest.raises(ValueError, match=r"has \d+ cells and its solution \d+: release it again"):
        explore.explore_notebook(release, {**solution, "cells": solution["cells"][:-1]}, name)
    answer = next(
        i for i, c in enumerate(release["cells"]) if c["metadata"].get("nbgrader", {}).get("solution")
    )
    solution["cells"][answer]["metadata"]["nbgrader"]["grade_id"] = "another"
    with pytest.raises(ValueError, match=f"cell {answer} of its release is not the same exercise"):
        explore.explore_notebook(release, solution, name)
    with pytest.raises(FileNotFoundError, match="no folder .* to make the explore edition from"):
        explore.explore_files(tmp_path / "missing", edition.solutions)


def test_posref_explore_outside_a_checkout_says_what_it_needs(monkeypatch, tmp_path):
    monkeypatch.setattr(launch, "CHECKOUT", tmp_path)
    args = argparse.Namespace(lang=launch.EDITIONS["zh-TW"], folder=None, jupyter_args=[])
    with pytest.raises(FileNotFoundError, match="posref explore .*checkout.*make explore"):
        launch.run_explore(args)
    assert not (tmp_path / "explore-zh-TW").exists()


# ---------------------------------------------------------------------------------------------------------------
# in a browser: posref explore --lang zh-TW


@pytest.fixture(scope="module")
def explore_lab(tmp_path_factory) -> Iterator[LabServer]:
    """``posref explore --lang zh-TW`` as ``make explore EDITION=zh-TW`` runs it, on a self-learner's folder."""
    server = LabServer(tmp_path_factory.mktemp("explore"), launcher="explore", lab_args=("--lang", "zh-TW"))
    try:
        server.start()
        yield server
    finally:
        server.stop()


def _stop_kernels(server: LabServer) -> None:
    """Shut the notebooks' kernels down (each holds torch and a model), so that the next one has the memory."""
    for session in json.loads(server.api("GET", "/api/sessions")):
        server.api("DELETE", f"/api/sessions/{session['id']}")


@pytest.mark.browser
@pytest.mark.timeout(900)  # a hang guard (test_browser.HANG_S)
@pytest.mark.parametrize("name", list(EXPLORERS))
def test_run_all_reaches_the_explorer_and_its_slider_redraws_it(chromium, explore_lab, name, tmp_path):  # noqa: F811
    """Run → Run All Cells in the explore notebook runs every cell without an error, down to the explorer; the
    explorer's first slider dragged with the mouse redraws its figure. Saved by JupyterLab (outputs, the kernel's
    metadata), the notebook still counts as the course's: the next update would replace it."""
    server, relative = explore_lab, f"{name}/{name}.ipynb"
    explorer = f".posref-{EXPLORERS[name]}-explorer"
    image = f"{explorer} .widget-output img"
    with i18n.speaking("zh-TW"):  # what posref explore said on the terminal, in the edition's language
        added = workfolder.Change("added", relative).describe()
        note = explore.note_cell()["source"].split("**")[1]
    assert added in server.log_tail(10**6)
    with browser_page(chromium, server.home) as page:
        try:
            run_all(page, server, relative, image)
            page.locator(".jp-NotebookPanel:visible .jp-RenderedMarkdown", has_text=note).wait_for()
            saved = save_notebook(page, server.root / relative)
            code = [c for c in saved.cells if c.cell_type == "code" and c.source.strip()]
            errors = [f"{o.ename}: {o.evalue}" for c in code for o in c.outputs if o.output_type == "error"]
            assert not errors, f"{relative} raised: {errors}"
            assert all(c.execution_count is not None for c in code), f"a cell of {relative} did not run"

            before = page.get_attribute(image, "src")
            drag_slider(page, explorer)
            assert_figure_changed(before, wait_for_new_image(page, before, image))
        except Exception:
            page.screenshot(path=str(tmp_path / f"explore_{name}_failure.png"))
            print(f"\nJupyterLab log tail:\n{server.log_tail()}")
            raise
        finally:
            _stop_kernels(server)
    record = workfolder.read_manifest(server.root)[relative]
    edition = launch.EDITIONS["zh-TW"]
    assert record["committed"] == (relative in explore.explore_files(edition.releases, edition.solutions)[1])
    says = workfolder.content_key((server.root / relative).read_bytes(), relative)
    assert says == record["written"], "JupyterLab's save made the notebook the reader's"
