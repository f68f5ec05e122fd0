"""``python -m autograder editions update``: every catalog brought up to the English source, and what is left to do.

For each notebook of ``solutions/``: its zh-TW catalog merged with the messages the notebook has now
(``catalogs.merge``: an unchanged message keeps its translation, a changed one becomes fuzzy with its old English
beside it, a vanished one obsolete), then its zh-CN catalog made again from the zh-TW one (``simplified``: reviewed
and edited entries kept). What it prints is the translators' list: each message to redo with the English that
changed (a line diff, ``-`` the old, ``+`` the new), each new message, each zh-CN entry to review again.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from pathlib import Path

from autograder.editions import catalogs
from autograder.editions.catalogs import (
    LOCALE_DIR,
    SOURCE_DIR,
    catalog_path,
    read_catalog,
    source_notebooks,
    write_catalog,
)
from autograder.editions.notebook import EDITIONS
from autograder.editions.simplified import Conversion, simplified

TRADITIONAL, SIMPLIFIED = EDITIONS["zh-TW"], EDITIONS["zh-CN"]


@dataclass
class Updated:
    """One notebook's update: the zh-TW merge, the zh-CN conversion, and the catalogs whose files changed."""

    name: str
    merge: catalogs.Merge
    conversion: Conversion
    written: list[Path] = field(default_factory=list)


def update(source_dir: Path = SOURCE_DIR, locale_dir: Path = LOCALE_DIR) -> list[Updated]:
    """Merge every notebook's zh-TW catalog and make its zh-CN one again; write the files that changed."""
    done = []
    for name, source in source_notebooks(source_dir).items():
        tw_path, cn_path = (
            catalog_path(TRADITIONAL, name, locale_dir),
            catalog_path(SIMPLIFIED, name, locale_dir),
        )
        old = read_catalog(tw_path) if tw_path.is_file() else catalogs.new_catalog(name, TRADITIONAL)
        tw, merged = catalogs.merge(old, catalogs.template(source))
        cn, converted = simplified(tw, read_catalog(cn_path) if cn_path.is_file() else None)
        written = [p for po, p in ((tw, tw_path), (cn, cn_path)) if write_catalog(po, p)]
        done.append(Updated(name, merged, converted, written))
    return done


def _diff(old: str, new: str) -> list[str]:
    lines = difflib.ndiff(old.split("\n"), new.split("\n"))
    return [f"      {line}" for line in lines if line[:1] in "+-"]


def report(done: list[Updated], locale_dir: Path = LOCALE_DIR) -> str:
    """The translators' list (see the module docstring)."""
    lines = []
    for u in done:
        tw = catalog_path(TRADITIONAL, u.name, locale_dir).relative_to(locale_dir.parent)
        cn = catalog_path(SIMPLIFIED, u.name, locale_dir).relative_to(locale_dir.parent)
        m = u.merge
        if m.changed:
            lines.append(
                f"{tw}: {len(m.fuzzy)} to redo (fuzzy), {len(m.new)} new, {len(m.obsolete)} obsolete"
            )
        for old, new, places in m.fuzzy:
            lines.append(
                f"  redo the message of {', '.join(places)} that begins {new.split(chr(10))[0][:60]!r}"
            )
            lines.append("    (its English changed as below; its old translation is kept, marked fuzzy):")
            lines += _diff(old, new)
        lines += [f"  new: {msgid.split(chr(10))[0][:100]!r}" for msgid in m.new]
        lines += [f"  obsolete: {msgid.split(chr(10))[0][:100]!r}" for msgid in m.obsolete]
        if u.conversion.review:
            lines.append(f"{cn}: {len(u.conversion.review)} reviewed entr(ies) to review again (fuzzy)")
            lines += [f"  review: {msgid.split(chr(10))[0][:100]!r}" for msgid in u.conversion.review]
    written = [str(p.relative_to(locale_dir.parent)) for u in done for p in u.written]
    lines.append(f"catalogs written: {', '.join(written)}" if written else "every catalog was up to date")
    return "\n".join(lines)
