"""The catalogs follow the English source as msgmerge would (autograder/editions/catalogs.py, update.py): an unchanged
message keeps its translation, a changed one becomes fuzzy with its old English and translation, a vanished one
obsolete; the course's catalogs are up to date with solutions/ and their translations keep what they must."""

from __future__ import annotations

import shutil

import nbformat
import polib
import pytest

from autograder.editions import catalogs
from autograder.editions.catalogs import catalog_path, read_catalog, source_notebooks
from autograder.editions.notebook import EDITIONS, markdown_messages
from autograder.editions.update import report, update

NOTEBOOKS = list(source_notebooks())
LOCALES = list(EDITIONS.values())


def _notebook(path, *cells: tuple[str, str]):
    """A notebook of markdown cells (id, source) at ``path``."""
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell(source, id=cell_id) for cell_id, source in cells]
    nbformat.write(nb, path)
    return path


def _catalog(*entries: polib.POEntry) -> polib.POFile:
    po = catalogs.new_catalog("demo", "zh_TW")
    po.extend(entries)
    return po


def _entry(msgid: str, msgstr: str, cell: str) -> polib.POEntry:
    return polib.POEntry(msgid=msgid, msgstr=msgstr, occurrences=[(f"demo.ipynb:{cell}", "")])


def test_merge_keeps_unchanged_marks_changed_fuzzy_and_vanished_obsolete(tmp_path):
    source = _notebook(
        tmp_path / "demo.ipynb",
        ("a", "# Order\n\nTokens carry no position."),
        ("b", "A new paragraph here."),
        ("c", "The mask breaks the symmetry, as the causal mask does."),
    )
    old = _catalog(
        _entry("# Order", "# 順序", "a"),
        _entry("Tokens carry no position at all.", "token 完全不帶位置。", "a"),  # its English changed
        _entry("Gone for good.", "消失了。", "d"),  # its cell is gone
        _entry("Never translated.", "", "d"),
        _entry("The mask breaks the symmetry.", "遮罩打破對稱。", "c"),  # changed
    )
    new, done = catalogs.merge(old, catalogs.template(source))
    by_id = {e.msgid: e for e in new}
    assert by_id["# Order"].msgstr == "# 順序" and not by_id["# Order"].fuzzy
    changed = by_id["Tokens carry no position."]
    assert changed.fuzzy and changed.msgstr == "token 完全不帶位置。"
    assert changed.previous_msgid == "Tokens carry no position at all."
    assert by_id["The mask breaks the symmetry, as the causal mask does."].previous_msgid == (
        "The mask breaks the symmetry."
    )
    assert by_id["A new paragraph here."].msgstr == "" and not by_id["A new paragraph here."].fuzzy
    assert by_id["Gone for good."].obsolete and by_id["Gone for good."].msgstr == "消失了。"
    assert "Never translated." not in by_id
    assert done.fuzzy == [
        ("Tokens carry no position at all.", "Tokens carry no position.", ["demo.ipynb:a"]),
        (
            "The mask breaks the symmetry.",
            "The mask breaks the symmetry, as the causal mask does.",
            ["demo.ipynb:c"],
        ),
    ]
    assert done.new == ["A new paragraph here."] and done.obsolete == ["Gone for good."]
    # what stops the catalog from making an edition: the two fuzzy, the new one, the obsolete one
    assert len(catalogs.unfinished(new)) == 4
    assert catalogs.out_of_date(new, catalogs.template(source)) == []
    assert len(catalogs.out_of_date(old, catalogs.template(source))) == 7  # 3 missing, 4 gone


def test_an_obsolete_message_whose_english_is_back_is_revived(tmp_path):
    source = _notebook(tmp_path / "demo.ipynb", ("a", "Back again."))
    old = _catalog(polib.POEntry(msgid="Back again.", msgstr="又回來了。", obsolete=True))
    new, done = catalogs.merge(old, catalogs.template(source))
    (entry,) = new
    assert (entry.msgstr, entry.obsolete, entry.fuzzy, done.changed) == ("又回來了。", False, False, False)


def test_unfinished_and_broken_name_each_kind_of_entry():
    po = _catalog(
        _entry("Done with $x$ and `f`.", "完成 $x$ 與 `f`。", "a"),
        _entry("Empty.", "", "a"),
        _entry("Dropped `code` and 3 numbers.", "丟了程式碼和數字。", "b"),
    )
    po.append(polib.POEntry(msgid="Old.", msgstr="舊。", obsolete=True))
    fuzzy = _entry("Redo.", "重做。", "c")
    fuzzy.flags.append("fuzzy")
    po.append(fuzzy)
    lines = catalogs.unfinished(po)
    assert [line.split(" ")[0] for line in lines] == ["untranslated:", "obsolete", "fuzzy"]
    assert catalogs.broken_translations(po) == [
        "missing '3' in the translation of 'Dropped `code` and 3 numbers.'",
        "missing '`code`' in the translation of 'Dropped `code` and 3 numbers.'",
    ]


def test_changing_one_english_sentence_shows_exactly_the_message_to_redo(tmp_path):
    """The course's own notebook and catalogs (copied): one sentence of 01_order changed, the update marks that
    message fuzzy in zh-TW (its old English and translation beside it) and nothing else, and says so."""
    source_dir, locale_dir = tmp_path / "solutions", tmp_path / "locale"
    shutil.copytree(source_notebooks()["01_order"].parent, source_dir / "01_order")
    for locale in LOCALES:
        (locale_dir / locale).mkdir(parents=True)
        shutil.copy(catalog_path(locale, "01_order"), locale_dir / locale)
    path = source_dir / "01_order" / "01_order.ipynb"
    nb = nbformat.read(path, as_version=4)
    old_sentence = "They use the same three\ntokens and mean opposite things."
    cell = next(c for c in nb.cells if old_sentence in c.source)
    old_block = next(m for m in markdown_messages(cell.source) if old_sentence in m)
    cell.source = cell.source.replace(old_sentence, "They use the same three\ntokens and mean the opposite.")
    nbformat.write(nb, path)
    before = read_catalog(locale_dir / "zh_TW" / "01_order.po")
    assert len(catalogs.out_of_date(before, catalogs.template(path))) == 2  # the new block, and the old one

    (done,) = update(source_dir, locale_dir)
    new_block = old_block.replace("mean opposite things.", "mean the opposite.")
    assert (
        done.merge.fuzzy == [(old_block, new_block, [f"01_order.ipynb:{cell.id}"])]
        and not done.merge.new
        and not done.merge.obsolete
    )
    after = read_catalog(locale_dir / "zh_TW" / "01_order.po")
    (fuzzy,) = [e for e in after if e.fuzzy]
    assert (fuzzy.msgid, fuzzy.previous_msgid) == (new_block, old_block)
    assert fuzzy.msgstr == next(e.msgstr for e in before if e.msgid == old_block)
    assert [e.msgid for e in after if not e.fuzzy] == [e.msgid for e in before if e.msgid != old_block]
    text = report([done], locale_dir)
    print(text)
    assert "locale/zh_TW/01_order.po: 1 to redo (fuzzy), 0 new, 0 obsolete" in text
    assert f"redo the message of 01_order.ipynb:{cell.id} that begins 'Take the two Chinese sentences" in text
    assert "\n      - tokens and mean opposite things. A model" in text
    assert "\n      + tokens and mean the opposite. A model" in text
    # the zh-CN entry, reviewed, keeps its text under the new message, fuzzy, for its reviewer to redo
    cn_before = {e.msgid: e for e in read_catalog(catalog_path("zh_CN", "01_order"))}
    assert "reviewed" in cn_before[old_block].tcomment.split("\n")
    zh_cn = {e.msgid: e for e in read_catalog(locale_dir / "zh_CN" / "01_order.po")}
    cn = zh_cn[new_block]
    assert (cn.msgstr, cn.fuzzy, cn.previous_msgid) == (cn_before[old_block].msgstr, True, old_block)
    assert done.conversion.review == [new_block] and old_block not in zh_cn
    assert "locale/zh_CN/01_order.po: 1 reviewed entr(ies) to review again (fuzzy)" in text
    assert catalogs.unfinished(after)
    assert update(source_dir, locale_dir)[0].written == []  # a second run changes nothing


@pytest.mark.parametrize("locale", LOCALES)
@pytest.mark.parametrize("name", NOTEBOOKS)
def test_the_catalogs_hold_the_messages_solutions_has_now(name, locale):
    """Each catalog holds exactly the notebook's messages in their cells: an English cell changed since the catalog
    was merged fails here (run `python -m autograder editions update`)."""
    po = read_catalog(catalog_path(locale, name))
    assert catalogs.out_of_date(po, catalogs.template(source_notebooks()[name])) == []


@pytest.mark.parametrize("locale", LOCALES)
@pytest.mark.parametrize("name", NOTEBOOKS)
def test_translations_keep_formulas_code_spans_links_and_numbers(name, locale):
    assert catalogs.broken_translations(read_catalog(catalog_path(locale, name))) == []
