"""Fetching an assignment from nbgrader's exchange in the edition the student reads (English, zh-TW, zh-CN).

nbgrader's exchange holds one release of an assignment per course, ``<exchange>/<course>/outbound/<assignment>/``:
the English one, which the Assignment List lists. The course's release (``nbgrader release_assignment`` with the
course's configuration: ``autograder/release/exchange.py``) puts each edition's release beside it, in
``<exchange>/<course>/editions/<tag>/<assignment>/``: the same files, notebooks, grade ids and points, the text in
the edition's language, so that one collect, one gradebook and one export take every edition's hand-in.

``FetchEdition`` is nbgrader's fetch (``c.ExchangeFactory.fetch_assignment`` in the student's configuration on the
hub, ``posref/jupyter_config/hub/nbgrader_config.py``) from the release of the student's edition: ``POSREF_LANG``,
the language the hub's spawner gives the student's server (it also sets posref's messages and JupyterLab's menus).
Where the exchange has no release of that edition, the student gets the English one, and a warning says why.
Everything else is nbgrader's: the course and the student's access to it, the assignment released (one withdrawn from
``outbound/`` is fetched in no edition), what a second fetch replaces.
"""

from __future__ import annotations

import os
from pathlib import Path

from nbgrader.exchange.default.fetch_assignment import ExchangeFetchAssignment
from traitlets import Unicode, default

EDITIONS_FOLDER = "editions"  # in <exchange>/<course>/
ENGLISH = "en"


def edition_release(course_path: str | Path, tag: str, assignment: str) -> Path:
    """Where the exchange keeps edition ``tag``'s release of ``assignment``: ``<course_path>/editions/<tag>/<assignment>``."""
    return Path(course_path) / EDITIONS_FOLDER / tag / assignment


def tag_of(name: str) -> str:
    """An edition's tag as the course compares it: ``zh-TW``, ``zh_tw`` and ``ZH-tw`` are ``zh-tw``."""
    return name.strip().replace("_", "-").lower()


def released_edition(course_path: str | Path, wanted: str, assignment: str) -> Path | None:
    """The release of ``assignment`` in the edition ``wanted`` names (``zh-TW``, ``zh_tw``, ...: any case, ``-`` or
    ``_``) that the exchange holds, or None (English, or an edition it does not hold). Only a folder the course
    wrote is taken: ``wanted`` is matched against the names in ``<course_path>/editions/``, never joined to a path."""
    tag = tag_of(wanted)
    folder = Path(course_path) / EDITIONS_FOLDER
    if tag in ("", ENGLISH) or not folder.is_dir():
        return None
    for entry in os.scandir(folder):
        if entry.name.lower() == tag and entry.is_dir(follow_symlinks=False):
            release = edition_release(course_path, entry.name, assignment)
            return release if release.is_dir() and not release.is_symlink() else None
    return None


class FetchEdition(ExchangeFetchAssignment):
    """nbgrader's fetch, of the release of the edition ``edition`` where the exchange has it (see the module)."""

    edition = Unicode(help="The edition to fetch (a tag: zh-TW); default: $POSREF_LANG, else English").tag(
        config=True
    )

    @default("edition")
    def _edition_from_environment(self) -> str:
        return os.environ.get("POSREF_LANG", ENGLISH)

    def init_src(self):
        super().init_src()  # the course, the student's access, the assignment released
        if tag_of(self.edition) in ("", ENGLISH):
            return
        release = released_edition(self.course_path, self.edition, self.coursedir.assignment_id)
        if release is not None:
            self.src_path = str(release)
            return
        from posref.i18n import LANGUAGES, _, speaking  # posref imports torch: only where a message is said

        with speaking(next((lang for lang in LANGUAGES if tag_of(lang) == tag_of(self.edition)), ENGLISH)):
            self.log.warning(
                _(
                    "{assignment}: the exchange has no {edition} edition of it; fetching the English one"
                ).format(assignment=self.coursedir.assignment_id, edition=self.edition)
            )
