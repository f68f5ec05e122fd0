"""The course's versioned JSON files (``autograder/intake/versioned.py``): a file that is not one is one ValueError
naming it and what to do; writers holding the lock lose none of each other's entries; a reader never sees half a
file."""

from __future__ import annotations

import json
import multiprocessing

import pytest

from autograder.intake.versioned import VersionedFile, locked

COUNTS = VersionedFile(
    what="the test's counts",
    field="counts",
    version=2,
    entry_ok=lambda entry: isinstance(entry, int) and entry >= 0,
    expected="counts of 0 or more",
    remedy="remove it",
)
WRITES = 40  # read-change-writes per writer


def test_no_file_is_no_entries_and_a_written_file_reads_back(tmp_path):
    path = tmp_path / "folder" / "counts.json"
    assert COUNTS.read(path) == {}
    with locked(path):  # makes the folder
        COUNTS.write(path, {"ålice": 1, "bob": 0})
    assert COUNTS.read(path) == {"ålice": 1, "bob": 0}
    assert json.loads(path.read_text(encoding="utf-8")) == {"version": 2, "counts": {"ålice": 1, "bob": 0}}
    assert sorted(p.name for p in path.parent.iterdir()) == [".counts.json.lock", "counts.json"]


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ('{"version": 2, "counts": {"a": 1', "JSONDecodeError: "),  # cut short
        ("\x89PNG", "JSONDecodeError: "),
        ('{"version": 1, "counts": {"a": 1}}', "ValueError: expected version 2 and counts of 0 or more"),
        ('{"counts": {"a": 1}}', "ValueError: expected version 2 and counts of 0 or more"),
        ('{"version": 2, "counts": {"a": -1}}', "ValueError: expected version 2 and counts of 0 or more"),
        ('{"version": 2, "counts": [1]}', "ValueError: expected version 2 and counts of 0 or more"),
        ('{"version": 2}', "KeyError: 'counts'"),
        ("[1, 2]", "TypeError: "),
    ],
)
def test_a_file_that_is_not_one_says_which_what_is_wrong_and_what_to_do(tmp_path, text, why):
    path = tmp_path / "counts.json"
    path.write_text(text, encoding="utf-8", errors="surrogateescape")
    with pytest.raises(ValueError) as raised:
        COUNTS.read(path)
    message = str(raised.value)
    assert message.startswith(f"the test's counts, {path}, cannot be read (") and why in message, message
    assert message.endswith("): remove it")


def test_an_unreadable_file_is_the_same_error(tmp_path):
    path = tmp_path / "counts.json"
    path.mkdir()  # a folder where the file should be: IsADirectoryError
    with pytest.raises(ValueError, match=r"cannot be read \(IsADirectoryError: .*\): remove it"):
        COUNTS.read(path)


def _count(path, name: str) -> None:
    """``WRITES`` times: add one to ``name``'s count and to the total, and write the file back, under the lock."""
    for _ in range(WRITES):
        with locked(path):
            counts = COUNTS.read(path)
            counts[name] = counts.get(name, 0) + 1
            counts["total"] = counts.get("total", 0) + 1
            COUNTS.write(path, counts)


def _read_while_written(path, reads: int, seen) -> None:
    """Reads without the lock while the writers write: each read is a whole file (``seen``: the totals read)."""
    for _ in range(reads):
        seen.append(COUNTS.read(path).get("total", 0))


def test_writers_holding_the_lock_lose_nothing_and_a_reader_sees_whole_files(tmp_path):
    path = tmp_path / "counts.json"
    context = multiprocessing.get_context("fork")
    with context.Manager() as manager:
        seen = manager.list()
        workers = [context.Process(target=_count, args=(path, name)) for name in ("a", "b", "c")]
        workers.append(context.Process(target=_read_while_written, args=(path, 200, seen)))
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join(timeout=120)
        assert [worker.exitcode for worker in workers] == [0, 0, 0, 0]  # a half file read: the reader raised
        assert COUNTS.read(path) == {"a": WRITES, "b": WRITES, "c": WRITES, "total": 3 * WRITES}
        assert list(seen) == sorted(seen) and all(0 <= total <= 3 * WRITES for total in seen)
    assert not [p.name for p in tmp_path.iterdir() if p.name.endswith(".new")]
