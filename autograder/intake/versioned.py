"""A course's own JSON file of one kind: ``{"version": N, "<field>": {key: entry, ...}}``, the extensions
(``extensions.py``), the refused imports (``refusals.py``) and the site users (``site_users.py``).

``read`` checks the version and every entry, and says what is wrong with a file that is not one in a single
ValueError naming the file and what to do; ``locked`` keeps another writer out (an exclusive ``flock`` on a lock file
beside it) while a caller reads, changes and ``write``s it; ``write`` writes it whole beside the old one and
renames it over it (``course.replace_file``), so that a reader without the lock never sees half a file.
"""

from __future__ import annotations

import fcntl
import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from autograder import course


@dataclass(frozen=True)
class VersionedFile:
    """One kind of file: ``what`` it is (``the course's extensions``), the ``field`` holding its entries, its
    ``version``, ``entry_ok`` (an entry is well formed) and ``expected`` (what a well-formed file holds, after
    "expected version N and "), and ``remedy`` (what to do with one that is not)."""

    what: str
    field: str
    version: int
    entry_ok: Callable[[object], bool]
    expected: str
    remedy: str

    def read(self, path: Path) -> dict:
        """The file's entries (key -> entry; none where there is no file); ValueError, saying what is wrong and
        what to do, for a file that cannot be read, is not JSON, has another version or an entry not well formed."""
        if not path.exists():
            return {}
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            entries = data[self.field]
            if (
                data.get("version") != self.version
                or not isinstance(entries, dict)
                or not all(self.entry_ok(entry) for entry in entries.values())
            ):
                raise ValueError(f"expected version {self.version} and {self.expected}")
        except (OSError, ValueError, KeyError, TypeError) as err:
            raise ValueError(
                f"{self.what}, {path}, cannot be read ({type(err).__name__}: {err}): {self.remedy}"
            ) from None
        return entries

    def write(self, path: Path, entries: dict) -> None:
        """``path`` holds ``entries`` in this version, written whole and renamed over the old file (hold the
        lock: ``locked``)."""
        text = json.dumps({"version": self.version, self.field: entries}, indent=1, ensure_ascii=False)
        course.replace_file(path, text.encode("utf-8"))


@contextmanager
def locked(path: Path) -> Iterator[None]:
    """No other writer of ``path`` (one that holds it too) for as long as the block runs: an exclusive lock on
    ``.<name>.lock`` beside it (the folder made where it is missing)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.with_name(f".{path.name}.lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield
