"""The editions are in step with the English (issue 28.4): every catalog complete (no untranslated, fuzzy or obsolete
entry), the zh-CN catalogs what `python -m autograder editions update` makes of the zh-TW ones, and the committed
editions/ what `python -m autograder editions build` makes of the catalogs. (That each catalog holds the messages
solutions/ has now, and that each translation keeps its formulas, code spans and numbers: test_catalogs.py.)"""

from __future__ import annotations

import json

import pytest

from autograder.editions import catalogs
from autograder.editions.catalogs import catalog_path, read_catalog, source_notebooks
from autograder.editions.notebook import EDITIONS
from autograder.release.editions import EDITIONS_DIR, build

NOTEBOOKS = list(source_notebooks())


@pytest.mark.parametrize("locale", list(EDITIONS.values()))
@pytest.mark.parametrize("name", NOTEBOOKS)
def test_every_catalog_is_complete(name, locale):
    assert catalogs.unfinished(read_catalog(catalog_path(locale, name))) == []


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_the_zh_cn_catalogs_are_what_the_update_makes_of_zh_tw(name):
    """Run `python -m autograder editions update` after changing a zh-TW catalog or the glossary."""
    pytest.importorskip("opencc", reason="opencc is in the dev extra: pip install -e '.[dev]'")
    from autograder.editions.simplified import simplified

    path = catalog_path(EDITIONS["zh-CN"], name)
    made, _ = simplified(read_catalog(catalog_path(EDITIONS["zh-TW"], name)), read_catalog(path))
    assert str(made) == path.read_text(encoding="utf-8"), (
        f"{path}: run `python -m autograder editions update`"
    )


@pytest.mark.slow
def test_the_editions_are_what_the_catalogs_make(tmp_path):
    """Every file of editions/ equals a fresh build from solutions/ and locale/ (nbgrader for the releases), and
    editions/ holds nothing else. Run `python -m autograder editions build` after changing a catalog."""
    made = {p.relative_to(tmp_path) for p in build(out=tmp_path)}
    committed = {p.relative_to(EDITIONS_DIR) for p in EDITIONS_DIR.rglob("*") if p.is_file()}
    assert committed == made
    stale = [
        str(p)
        for p in sorted(made)
        if json.loads((tmp_path / p).read_text(encoding="utf-8"))
        != json.loads((EDITIONS_DIR / p).read_text(encoding="utf-8"))
    ]
    assert stale == [], "run `python -m autograder editions build`"
