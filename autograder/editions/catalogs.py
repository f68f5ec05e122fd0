"""The translation catalogs of the course's notebooks kept in step with the English source, as ``msgmerge`` does.

One gettext catalog per notebook and language, ``locale/<locale>/<notebook>.po`` (``00_start`` is the start page
``solutions/00_start.ipynb``, every other one ``solutions/<name>/<name>.ipynb``). Its messages are the notebook's
markdown blocks (``editions.notebook_messages``), each with the cells it occurs in (``01_order.ipynb:cell-02``).

``merge`` brings a catalog up to the notebook as it is now:
* a message whose English is unchanged keeps its translation (and its flags);
* a new message of a cell that held a translated message which is gone (its English changed) gets that translation
  marked ``fuzzy``, with the old English beside it as ``#| msgid``: the translator sees what changed and redoes it;
* any other new message is untranslated;
* a translated message that is gone from the notebook becomes obsolete (``#~``), an untranslated one is dropped.

Each merge says what it did (``Merge``), so ``python -m autograder editions update`` can print exactly which messages
a translator has to redo.
"""

from __future__ import annotations

import difflib
import os
from dataclasses import dataclass, field
from pathlib import Path

import polib

from autograder.course import REPO
from autograder.editions.notebook import LOCALE_DIR, notebook_messages, translation_problems

SOURCE_DIR = REPO / "solutions"
# the editions' notebooks made from the source and the catalogs: <edition>/solutions/..., <edition>/notebooks/...
EDITIONS_DIR = REPO / "editions"
START_PAGE = "00_start"


def editions_dir() -> Path:
    """Where ``release --lang`` writes and the grader reads an edition's release: ``editions/``, or
    ``$POSREF_EDITIONS_DIR`` relative to the repository (as ``POSREF_RELEASE_DIR`` is for ``notebooks/``)."""
    return REPO / os.environ.get("POSREF_EDITIONS_DIR", "editions")


def source_notebooks(source_dir: Path = SOURCE_DIR) -> dict[str, Path]:
    """Notebook name -> its source: the start page and every assignment's notebook, sorted by name."""
    found = {p.stem: p for p in source_dir.glob("*/*.ipynb")}
    start = source_dir / f"{START_PAGE}.ipynb"
    if start.is_file():
        found[START_PAGE] = start
    return dict(sorted(found.items()))


def catalog_path(locale: str, name: str, locale_dir: Path = LOCALE_DIR) -> Path:
    """``locale/zh_TW/04_rope.po`` for ``("zh_TW", "04_rope")``."""
    return locale_dir / locale / f"{name}.po"


def template(source: Path) -> list[tuple[str, list[str]]]:
    """(msgid, occurrences) of a notebook's messages in the order they first occur; a block repeated in several
    cells is one message occurring in each."""
    found: dict[str, list[str]] = {}
    for message, where in notebook_messages(source):
        places = found.setdefault(message, [])
        if where not in places:
            places.append(where)
    return list(found.items())


def new_catalog(name: str, locale: str) -> polib.POFile:
    """An empty catalog of notebook ``name`` for ``locale``, with the course's header."""
    po = polib.POFile(wrapwidth=0)
    po.metadata = {
        "Project-Id-Version": f"posref course {name}",
        "Language": locale,
        "MIME-Version": "1.0",
        "Content-Type": "text/plain; charset=UTF-8",
        "Content-Transfer-Encoding": "8bit",
    }
    return po


def read_catalog(path: Path) -> polib.POFile:
    """The catalog at ``path`` (written back by ``write_catalog`` in the same form: one line per source line)."""
    return polib.pofile(str(path), wrapwidth=0)


def write_catalog(po: polib.POFile, path: Path) -> bool:
    """Write ``po`` to ``path`` unless it holds exactly that already -> whether the file changed."""
    text = str(po)
    if path.is_file() and path.read_text(encoding="utf-8") == text:
        return False
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return True


def cells(entry: polib.POEntry) -> set[str]:
    """The cells (``04_rope.ipynb:cell-07``) a message occurs in."""
    return {where for where, _ in entry.occurrences}


@dataclass
class Merge:
    """What ``merge`` did to one catalog: the messages to redo (fuzzy: (old msgid, new msgid, its cells)), the new
    untranslated ones, and those that became obsolete."""

    fuzzy: list[tuple[str, str, list[str]]] = field(default_factory=list)
    new: list[str] = field(default_factory=list)
    obsolete: list[str] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        return bool(self.fuzzy or self.new or self.obsolete)


def _closest(msgid: str, candidates: list[polib.POEntry]) -> polib.POEntry | None:
    if not candidates:
        return None
    return max(candidates, key=lambda e: difflib.SequenceMatcher(None, e.msgid, msgid).ratio())


def merge(old: polib.POFile, messages: list[tuple[str, list[str]]]) -> tuple[polib.POFile, Merge]:
    """``old`` brought up to ``messages`` (``template``'s) as the module docstring says -> (new catalog, what changed)."""
    new = polib.POFile(wrapwidth=0)
    new.metadata = dict(old.metadata)
    new.header = old.header
    # an obsolete message whose English is back is revived with its translation (as msgmerge does)
    active = {e.msgid: e for e in sorted(old, key=lambda e: not e.obsolete)}
    wanted = {msgid for msgid, _ in messages}
    gone = [e for e in old if not e.obsolete and e.msgid not in wanted and e.msgstr]
    seeded: set[str] = set()
    done = Merge()
    for msgid, places in messages:
        entry = polib.POEntry(msgid=msgid, msgstr="", occurrences=[(p, "") for p in places])
        kept = active.get(msgid)
        if kept is not None:
            entry.msgstr, entry.flags, entry.tcomment, entry.comment = (
                kept.msgstr, list(kept.flags), kept.tcomment, kept.comment)  # fmt: skip
            entry.previous_msgid = kept.previous_msgid if kept.fuzzy else None
            entry.obsolete = False
        else:
            # the message of the same cell whose English changed: its translation, to be redone
            was = _closest(msgid, [e for e in gone if cells(e) & set(places)])
            if was is None:
                done.new.append(msgid)
            else:
                entry.msgstr, entry.tcomment, entry.flags = was.msgstr, was.tcomment, ["fuzzy"]
                entry.previous_msgid = was.msgid
                seeded.add(was.msgid)
                done.fuzzy.append((was.msgid, msgid, places))
        new.append(entry)
    for entry in gone:
        if entry.msgid not in seeded:
            new.append(
                polib.POEntry(msgid=entry.msgid, msgstr=entry.msgstr, tcomment=entry.tcomment, obsolete=True)
            )
            done.obsolete.append(entry.msgid)
    new.extend(e for e in old if e.obsolete and e.msgid not in wanted)
    return new, done


def _head(msgid: str) -> str:
    return repr(msgid.split("\n")[0][:70])


def unfinished(po: polib.POFile) -> list[str]:
    """Each entry that keeps the catalog from making a complete edition, one line each: untranslated, fuzzy (its
    English changed since it was translated) or obsolete (its English is gone)."""
    problems = []
    for entry in po:
        if entry.obsolete:
            problems.append(f"obsolete (its English is gone: delete it): {_head(entry.msgid)}")
        elif entry.fuzzy:
            problems.append(
                f"fuzzy (the English changed: redo it, then remove the fuzzy flag): {_head(entry.msgid)}"
            )
        elif not entry.msgstr:
            problems.append(f"untranslated: {_head(entry.msgid)}")
    return problems


def broken_translations(po: polib.POFile) -> list[str]:
    """Each translation that drops or adds a formula, code span, tag, link target or number of its English
    (``translation_problems``), one line each."""
    return [
        f"{problem} in the translation of {_head(entry.msgid)}"
        for entry in po
        if entry.msgstr and not entry.obsolete
        for problem in translation_problems(entry.msgid, entry.msgstr)
    ]


def out_of_date(po: polib.POFile, messages: list[tuple[str, list[str]]]) -> list[str]:
    """How the catalog differs from the notebook's ``messages`` (``template``): a message it lacks, one the notebook
    no longer has, or one whose cells moved; empty when ``merge`` would change nothing but fuzzy flags."""
    have = {e.msgid: cells(e) for e in po if not e.obsolete}
    wanted = dict(messages)
    problems = [f"not in the catalog: {_head(m)}" for m in wanted if m not in have]
    problems += [f"no longer in the notebook: {_head(m)}" for m in have if m not in wanted]
    problems += [
        f"now in cells {sorted(wanted[m])}, not {sorted(have[m])}: {_head(m)}"
        for m in wanted
        if m in have and set(wanted[m]) != have[m]
    ]
    return problems
