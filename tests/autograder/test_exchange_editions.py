"""Each edition through nbgrader's exchange (autograder/release/exchange.py, posref_jupyter/exchange.py): the
instructor's ``nbgrader release_assignment`` releases the English release and every edition's beside it, only an
edition graded as the English one is; a student's Fetch, with the configuration a hub's student server has
(``launch.hub_environment``), takes the edition of their server's ``POSREF_LANG``, and the English one where the
exchange has no such edition. tests/notebooks/test_hub.py runs it on a real JupyterHub, a zh-TW student's hand-in
graded and fed back in zh-TW."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import nbformat
import pytest

from autograder.course import CONFIG, REPO
from autograder.editions.notebook import EDITIONS
from autograder.release.exchange import edition_problem, graded_cells, notebooks_in
from posref import launch
from posref_jupyter.exchange import released_edition

ASSIGNMENTS = sorted(p.name for p in (REPO / "notebooks").iterdir() if p.is_dir())


def _release_of(edition: str, name: str) -> Path:
    return (REPO if edition == "en" else REPO / "editions" / edition) / "notebooks" / name


@pytest.mark.parametrize("edition", sorted(EDITIONS))
def test_every_committed_edition_is_graded_as_the_english_release(edition):
    for name in ASSIGNMENTS:
        assert edition_problem(_release_of("en", name), _release_of(edition, name)) is None, (edition, name)
        assert graded_cells(_release_of("en", name) / f"{name}.ipynb"), name  # the check compares something


def _points(cells):
    next(c for c in cells if c.metadata.nbgrader.get("grade")).metadata.nbgrader["points"] += 1


def _grade_id(cells):
    cells[0].metadata.nbgrader["grade_id"] += "_renamed"


def _tests(cells):
    next(
        c for c in cells if c.metadata.nbgrader.get("grade") and c.cell_type == "code"
    ).source += "\nassert True"


def _order(cells):
    cells[0].metadata.nbgrader, cells[1].metadata.nbgrader = (
        cells[1].metadata.nbgrader,
        cells[0].metadata.nbgrader,
    )


def _dropped(cells):
    del cells[-1].metadata["nbgrader"]


@pytest.mark.parametrize("change", [_points, _grade_id, _tests, _order, _dropped])
def test_an_edition_not_graded_as_the_english_release_is_named(tmp_path, change):
    edition = tmp_path / "01_order"
    shutil.copytree(_release_of("zh-TW", "01_order"), edition)
    nb = nbformat.read(edition / "01_order.ipynb", as_version=4)
    change([c for c in nb.cells if c.metadata.get("nbgrader")])
    nbformat.write(nb, edition / "01_order.ipynb")
    problem = edition_problem(_release_of("en", "01_order"), edition)
    assert problem is not None and "01_order.ipynb differs" in problem, problem


def test_an_edition_with_other_notebooks_is_named_and_checkpoints_do_not_count(tmp_path):
    english, edition = tmp_path / "en", tmp_path / "zh-TW"
    shutil.copytree(_release_of("en", "01_order"), english)
    shutil.copytree(_release_of("zh-TW", "01_order"), edition)
    (english / ".ipynb_checkpoints").mkdir()
    shutil.copy(english / "01_order.ipynb", english / ".ipynb_checkpoints" / "01_order-checkpoint.ipynb")
    assert notebooks_in(english) == [Path("01_order.ipynb")] and edition_problem(english, edition) is None
    shutil.copy(edition / "01_order.ipynb", edition / "extra.ipynb")
    assert "its notebooks are ['01_order.ipynb', 'extra.ipynb']" in edition_problem(english, edition)
    (edition / "01_order.ipynb").unlink()
    (edition / "extra.ipynb").unlink()
    assert "its notebooks are []" in edition_problem(english, edition)


def test_only_an_edition_folder_the_exchange_holds_is_fetched(tmp_path):
    course = tmp_path / "posref"
    (course / "editions" / "zh-TW" / "01_order").mkdir(parents=True)
    (course / "editions" / "zh-CN").mkdir()
    (course / "editions" / "zh-CN" / "01_order").symlink_to(course / "editions" / "zh-TW" / "01_order")
    (course / "outbound" / "01_order").mkdir(parents=True)
    assert released_edition(course, "zh_tw", "01_order") == course / "editions" / "zh-TW" / "01_order"
    for wanted in ("en", "", "zh-CN", "fr", "../outbound", "zh-TW/../../outbound", "."):
        assert released_edition(course, wanted, "01_order") is None, wanted
    assert released_edition(course, "zh-TW", "02_absolute") is None


def _run(args: list[str], cwd: Path, env: dict[str, str], ok: bool = True) -> str:
    done = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=600)
    assert (done.returncode == 0) == ok, f"{' '.join(args)}:\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}"
    return done.stdout + done.stderr


@pytest.mark.slow
def test_each_student_fetches_the_edition_they_read(tmp_path, released_01_order):
    """Released once, as the instructor does; fetched by a student of each edition with the hub's student
    configuration: zh-TW (``zh_tw`` as a spawner may write it) and zh-CN get theirs byte for byte, English and an
    edition the course does not have the English release. A stale edition stops the release, naming it; an edition
    the instructor no longer has is withdrawn, and its student gets the English release, told so in their language."""
    exchange, course = tmp_path / "exchange", tmp_path / "course"
    exchange.mkdir()
    exchange.chmod(0o777)
    shutil.copytree(released_01_order, course)  # `python -m autograder release 01_order` done
    path = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])
    instructor = {**os.environ, "PATH": path, "POSREF_COURSE_DIR": str(course), "POSREF_FAST": "1",
                  "POSREF_EXCHANGE_DIR": str(exchange), "POSREF_RELEASE_DIR": str(course / "release")}  # fmt: skip
    release = [
        sys.executable,
        "-m",
        "nbgrader",
        "release_assignment",
        "01_order",
        f"--JupyterApp.config_file={CONFIG}",
    ]
    said = _run(release, REPO, instructor)
    assert "Released the zh-TW edition" in said and "Released the zh-CN edition" in said, said
    outbound = exchange / "posref" / "outbound" / "01_order" / "01_order.ipynb"
    assert outbound.read_bytes() == (course / "release" / "01_order" / "01_order.ipynb").read_bytes()
    for tag in EDITIONS:
        copy = exchange / "posref" / "editions" / tag / "01_order" / "01_order.ipynb"
        assert copy.read_bytes() == (_release_of(tag, "01_order") / "01_order.ipynb").read_bytes(), tag
        assert copy.stat().st_mode & 0o777 == 0o644 and copy.parent.stat().st_mode & 0o777 == 0o755

    def fetch(lang: str, expect: Path, ok: bool = True) -> str:
        home = Path(tempfile.mkdtemp(prefix="student-", dir=tmp_path))
        env = {**os.environ, "PATH": path, "HOME": str(home),
               **launch.hub_environment(launch.ENGLISH, str(exchange)), "POSREF_LANG": lang}  # fmt: skip
        out = _run([sys.executable, "-m", "nbgrader", "fetch_assignment", "01_order"], home, env, ok)
        if ok:
            assert (home / "01_order" / "01_order.ipynb").read_bytes() == expect.read_bytes(), (lang, out)
        return out

    english = course / "release" / "01_order" / "01_order.ipynb"
    fetch("zh_tw", _release_of("zh-TW", "01_order") / "01_order.ipynb")
    fetch("zh-CN", _release_of("zh-CN", "01_order") / "01_order.ipynb")
    assert "no " not in fetch("en", english)
    assert "the exchange has no fr edition" in fetch("fr", english)

    stale = tmp_path / "editions" / "zh-TW" / "notebooks" / "01_order"
    shutil.copytree(_release_of("zh-TW", "01_order"), stale)
    nb = nbformat.read(stale / "01_order.ipynb", as_version=4)
    _points([c for c in nb.cells if c.metadata.get("nbgrader")])
    nbformat.write(nb, stale / "01_order.ipynb")
    only_zh_tw = {**instructor, "POSREF_EDITIONS_DIR": str(tmp_path / "editions")}
    said = _run([*release, "--force"], REPO, only_zh_tw, ok=False)
    assert "the zh-TW edition of 01_order" in said and "release 01_order --lang zh-TW" in said, said
    assert (exchange / "posref" / "editions" / "zh-CN" / "01_order").is_dir()  # nothing was released
    # rebuilt, the zh-TW edition is released; zh-CN, which the instructor no longer has, is withdrawn: its student
    # gets the English release and is told so in zh-CN
    shutil.copy(_release_of("zh-TW", "01_order") / "01_order.ipynb", stale / "01_order.ipynb")
    said = _run([*release, "--force"], REPO, only_zh_tw)
    assert "its zh-CN students fetch the English release" in said and "Released the zh-TW edition" in said, (
        said
    )
    assert not (exchange / "posref" / "editions" / "zh-CN" / "01_order").exists()
    assert "作业交换区没有它的 zh-CN 版本" in fetch("zh-CN", english)
    fetch("zh-TW", _release_of("zh-TW", "01_order") / "01_order.ipynb")
    # the assignment withdrawn from outbound is fetched in no edition
    shutil.rmtree(exchange / "posref" / "outbound" / "01_order")
    fetch("zh-TW", english, ok=False)
