"""The course's record of its site users: which student id each Canvas or Moodle user was imported as, kept across
assignments and imports, so that one site user is always one student and two are never one.

``<course>/site_users.json`` maps a site user to the student id their first import gave them::

    {"version": 1, "users": {"Canvas 12345": {"student": "smithjane", "name": "smithjane",
                                               "assignment": "01_order", "since": "2026-10-06T08:00:00+00:00"}}}

A Canvas user is their user id, the same in every assignment of the course. A Moodle download names a participant id
that Moodle draws per assignment (``assign_user_mapping``), so a Moodle user is that id within its assignment
(``Moodle 01_order 123456``): the record keeps a re-download of one assignment on the same ids, and across assignments
Moodle gives nothing but the name to go by.

``lms.student_ids`` reads it before the roster: a user it holds keeps their student id (a changed name on the site
changes nothing), and a conflict is refused with both sides named, never merged: the record and the roster giving
one user two different ids, or a user coming to an id that the record gives another user (two Canvas users, or two
participants of one Moodle assignment). To settle one, edit the record (the instructor's file; JSON) and move the
student's earlier submissions in ``submitted/`` to match. ``import`` adds each site user it imported; it holds a
lock on the record while it runs, so two imports at once cannot lose each other's users.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from autograder.intake.versioned import VersionedFile, locked

FILE = "site_users.json"
VERSION = 1


def key(lms: str, user: str, assignment: str) -> str:
    """A site user's key in the record: ``Canvas <user id>``, ``Moodle <assignment> <participant id>``."""
    return f"Canvas {user}" if lms == "Canvas" else f"{lms} {assignment} {user}"


def _scope(user_key: str) -> str:
    """Within what a key is one user: a Canvas user in the whole course, a Moodle participant in one assignment."""
    site, *rest = user_key.split(" ")
    return site if site == "Canvas" else f"{site} {rest[0]}"


@dataclass
class SiteUsers:
    """The record (``users``: key -> its entry), read from ``path``; ``added`` since it was read."""

    path: Path
    users: dict[str, dict] = field(default_factory=dict)
    added: list[str] = field(default_factory=list)

    def student(self, user_key: str) -> str | None:
        """The student id the record gives this site user; None for one it does not hold."""
        entry = self.users.get(user_key)
        return None if entry is None else entry["student"]

    def holder(self, student: str, user_key: str) -> str | None:
        """Another site user to whom the record gives ``student`` and who cannot be the same person as
        ``user_key``'s (a Canvas user; a participant of the same Moodle assignment); None if there is none.
        Participants of two Moodle assignments may be one student: Moodle's ids say nothing about it."""
        for other, entry in self.users.items():
            if entry["student"] != student or other == user_key:
                continue
            if "Canvas" in (_scope(other), _scope(user_key)) or _scope(other) == _scope(user_key):
                return other
        return None

    def describe(self, user_key: str) -> str:
        """``user_key`` as a message names it: with its name on the site and when it was first imported."""
        entry = self.users[user_key]
        return f"{user_key} ({entry['name']!r}, first imported with {entry['assignment']} on {entry['since'][:10]})"

    def remember(self, user_key: str, name: str, student: str, assignment: str) -> None:
        """Add a site user imported as ``student`` (one the record holds already stays as it is)."""
        if user_key in self.users:
            return
        since = datetime.now(timezone.utc).isoformat(timespec="seconds")
        self.users[user_key] = {"student": student, "name": name, "assignment": assignment, "since": since}
        self.added.append(user_key)


FIELDS = ("student", "name", "assignment", "since")
SITE_USERS = VersionedFile(
    what="the course's record of site users",
    field="users",
    version=VERSION,
    entry_ok=lambda entry: isinstance(entry, dict) and all(isinstance(entry.get(f), str) for f in FIELDS),
    expected=f"users of {', '.join(FIELDS)} (strings)",
    remedy="fix it or restore it from a backup",
)


def recorded(course: Path) -> SiteUsers:
    """The course's record as it is now, read without the lock (``export`` reads it; only ``import`` writes it);
    ValueError, saying what is wrong, for a file that is not one."""
    return SiteUsers(course / FILE, SITE_USERS.read(course / FILE))


@contextmanager
def held(course: Path) -> Iterator[SiteUsers]:
    """The course's record, locked against another import for as long as it is held, and written back (whole,
    then renamed over the old one) with the users added meanwhile."""
    path = course / FILE
    with locked(path):
        try:
            record = SiteUsers(path, SITE_USERS.read(path))
        except ValueError as err:
            raise SystemExit(f"{err}; nothing was imported") from None
        try:
            yield record
        finally:  # the users imported before anything stopped the import are in the course: recorded too
            if record.added:
                SITE_USERS.write(path, record.users)
