"""The hub's collect (``autograder/intake/exchange.py``) in this process: what one student's hand-in does to the
collect of the others. Each student's folder in the inbound is theirs to change, rename or remove while the
instructor collects; whatever they do, it stops their own submission only.

As root: each hand-in is owned by the Unix user it claims to be (``bin``, ``daemon``, ``nobody``), made so with
chown, as the exchange's owner check asks. tests/autograder/test_exchange.py runs nbgrader's command itself.
"""

from __future__ import annotations

import json
import os
import pwd
import shutil
from datetime import timezone
from pathlib import Path

import pytest

from autograder.intake import exchange, late, refusals

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0, reason="needs root: hand-ins of other Unix users are made with chown"
)
ASSIGNMENT = "01_order"


def _hand_in(inbound: Path, name: str | bytes, owner: str) -> Path:
    """A hand-in named ``name`` (bytes: a name that is not UTF-8) owned, with all it holds, by ``owner``."""
    folder = Path(os.fsdecode(os.path.join(os.fsencode(inbound), os.fsencode(name))))
    folder.mkdir()
    (folder / f"{ASSIGNMENT}.ipynb").write_text(f'{{"by": "{owner}"}}')
    user = pwd.getpwnam(owner)
    for path in (folder, *folder.iterdir()):
        os.chown(path, user.pw_uid, user.pw_gid)
    return folder


@pytest.fixture
def collect(tmp_path, monkeypatch, empty_gradebook):
    """-> (the inbound folder, a function that runs the course's collect of 01_order and returns the course)."""
    from nbgrader.coursedir import CourseDirectory
    from traitlets.config import Config

    course, root = tmp_path / "course", tmp_path / "exchange"
    course.mkdir()
    shutil.copy(empty_gradebook, course / "gradebook.db")
    inbound = root / "posref" / "inbound"
    inbound.mkdir(parents=True)
    monkeypatch.setenv("POSREF_COURSE_DIR", str(course))
    monkeypatch.delenv("POSREF_SOURCE_DIR", raising=False)
    config = Config()
    config.Exchange.root = str(root)
    config.CourseDirectory.root = str(course)
    config.CourseDirectory.course_id = "posref"
    config.CourseDirectory.assignment_id = ASSIGNMENT
    config.CourseDirectory.db_url = f"sqlite:///{course / 'gradebook.db'}"

    def run(before_duedate: bool = False) -> Path:
        config.ExchangeCollect.before_duedate = before_duedate  # nbgrader collect --before-duedate
        exchange.CollectOwnSubmissions(coursedir=CourseDirectory(config=config), config=config).start()
        return course

    return inbound, run


def _collected(course: Path) -> dict[str, str]:
    submitted = course / "submitted"
    return {p.parent.parent.name: p.read_text() for p in submitted.glob(f"*/{ASSIGNMENT}/{ASSIGNMENT}.ipynb")}


def test_a_hand_in_removed_while_it_is_collected_stops_nobody_else(collect, monkeypatch):
    """daemon removes their folder after the collect listed it: before, the collect's own report of that refusal
    read the folder's owner again and raised, and no one was collected."""
    inbound, run = collect
    for student in ("bin", "daemon", "nobody"):
        _hand_in(inbound, f"{student}+{ASSIGNMENT}+2026-10-01 10:00:00.000000 UTC+aaaa", student)
    checked = exchange.check_inbound

    def removed_meanwhile(folder, claimed, expected):
        if claimed == "daemon":
            shutil.rmtree(folder)  # the student's own folder: theirs to remove at any time
        return checked(folder, claimed, expected)

    monkeypatch.setattr(exchange, "check_inbound", removed_meanwhile)
    course = run()
    assert _collected(course) == {"bin": '{"by": "bin"}', "nobody": '{"by": "nobody"}'}
    (entry,) = refusals.read(course, ASSIGNMENT).values()
    assert entry["name"].startswith("daemon") and "FileNotFoundError" in entry["reason"], entry


def test_a_hand_in_that_cannot_be_copied_stops_nobody_else(collect, monkeypatch):
    """An instructor who is not root reads a hand-in with the rights of any user: its owner can take them away
    (chmod 000 on a file, after the checks or before), and shutil.copytree then copies the rest and raises at the end.
    That error stopped nbgrader's collect at that student: those after them were not collected, and a partial copy
    stayed in submitted/. As root nothing is unreadable: the copy's error is made here, as copytree raises it."""
    inbound, run = collect
    for student in ("bin", "daemon", "nobody"):
        _hand_in(inbound, f"{student}+{ASSIGNMENT}+2026-10-01 10:00:00.000000 UTC+aaaa", student)
    copytree = shutil.copytree

    def unreadable_for_daemon(src, dst, **options):
        copied = copytree(src, dst, **options)
        if Path(src).name.startswith("daemon+"):
            raise shutil.Error([(f"{src}/secret.txt", f"{dst}/secret.txt", "[Errno 13] Permission denied")])
        return copied

    monkeypatch.setattr(shutil, "copytree", unreadable_for_daemon)
    course = run()
    assert _collected(course) == {"bin": '{"by": "bin"}', "nobody": '{"by": "nobody"}'}
    assert not (course / "submitted" / "daemon" / ASSIGNMENT).exists()  # no half a submission
    entry = refusals.read(course, ASSIGNMENT)["daemon"]
    assert entry["student"] == "daemon" and "Permission denied" in entry["reason"], entry


def test_a_hand_in_named_in_bytes_that_are_not_utf8_leaves_every_refusal_recorded(collect):
    """Any student can name a folder in the inbound as they like. One named with a byte that is not UTF-8 made the
    course's record of refused imports unwritable (its JSON is UTF-8): the collect only warned, and no refusal of
    that collect was recorded, the forged hand-in's beside it included, so the export had no row for them."""
    inbound, run = collect
    _hand_in(inbound, f"bin+{ASSIGNMENT}+2026-10-01 10:00:00.000000 UTC+aaaa", "daemon")  # a forged claim
    _hand_in(inbound, b"\xff+" + f"{ASSIGNMENT}+2026-10-01 10:00:00.000000 UTC+bbbb".encode(), "nobody")
    course = run()
    assert _collected(course) == {}
    recorded = refusals.read(course, ASSIGNMENT)
    assert "bin (handed in by daemon)" in recorded, recorded
    (odd,) = [entry for key, entry in recorded.items() if key != "bin (handed in by daemon)"]
    assert odd["name"] == "'\\udcff' (handed in by nobody)" and json.dumps(odd, ensure_ascii=False).encode()


def test_before_duedate_takes_the_latest_hand_in_the_kernel_dates_before_the_due_date(collect, tmp_path):
    """nbgrader collect --before-duedate: the latest hand-in at or before the due date, by the kernel's time (a
    student can move it later, never earlier). The course's collect took the latest whatever the flag said."""
    from nbgrader.api import Gradebook

    inbound, run = collect
    early = _hand_in(inbound, f"nobody+{ASSIGNMENT}+2026-10-01 10:00:00.000000 UTC+aaaa", "nobody")
    (early / f"{ASSIGNMENT}.ipynb").write_text("before the due date")
    late = _hand_in(inbound, f"nobody+{ASSIGNMENT}+2026-10-01 09:00:00.000000 UTC+bbbb", "nobody")
    (late / f"{ASSIGNMENT}.ipynb").write_text("after it")
    due = exchange.vouched_time(early)
    # within one tick of the kernel's clock both have one time: the later changed again until it is dated later
    while exchange.vouched_time(late) <= due:
        os.chmod(late / f"{ASSIGNMENT}.ipynb", 0o644)
    course = tmp_path / "course"
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}", "posref") as gb:
        gb.update_or_create_assignment(ASSIGNMENT, duedate=due)
    assert _collected(run(before_duedate=True)) == {"nobody": "before the due date"}
    shutil.rmtree(course / "submitted")
    assert _collected(run()) == {"nobody": "after it"}


def test_a_hand_in_changed_after_it_was_checked_is_dated_by_its_change(collect, monkeypatch):
    """The kernel's time of a hand-in was read when the collect checked it, before nbgrader copied it: a student who
    changed their folder in between (a late notebook put in while the instructor collects) was collected with the
    new notebook and the earlier time. Now the time is read again once it is copied: the later one is written."""
    inbound, run = collect
    folder = _hand_in(inbound, f"nobody+{ASSIGNMENT}+2026-10-01 10:00:00.000000 UTC+aaaa", "nobody")
    checked_at = exchange.vouched_time(folder)
    copytree = shutil.copytree

    def changed_first(src, dst, **options):
        notebook = Path(src) / f"{ASSIGNMENT}.ipynb"
        notebook.write_text("put in after the check")
        while exchange.vouched_time(Path(src)) <= checked_at:  # one tick of the kernel's clock: again
            os.chmod(notebook, 0o644)
        return copytree(src, dst, **options)

    monkeypatch.setattr(shutil, "copytree", changed_first)
    course = run()
    assert _collected(course) == {"nobody": "put in after the check"}
    stamp = late.read_timestamp(course / "submitted" / "nobody" / ASSIGNMENT)
    assert (
        stamp == exchange.vouched_time(folder).replace(tzinfo=timezone.utc)
        and stamp.replace(tzinfo=None) > checked_at
    )


def _nested(top: Path, depth: int, owner: str) -> None:
    """``depth`` folders, each in the one before, under ``top``, owned by ``owner``: deeper than Python recurses."""
    user, path = pwd.getpwnam(owner), top
    for _ in range(depth):
        path = path / "d"
        path.mkdir()
        os.chown(path, user.pw_uid, user.pw_gid)


def _remove(top: Path) -> None:
    """``top`` and everything under it, one folder at a time (shutil.rmtree recurses: 1100 folders raise)."""
    order, todo = [], [top] if top.exists() else []
    while todo:
        order.append(todo.pop())
        for entry in os.scandir(order[-1]):
            todo.append(Path(entry.path)) if entry.is_dir(follow_symlinks=False) else os.unlink(entry.path)
    for folder in reversed(order):
        os.rmdir(folder)


def test_a_hand_in_nested_deeper_than_python_recurses_stops_nobody_else(collect, monkeypatch, request):
    """A student can nest 1100 folders in their hand-in, or move such a tree in once it was checked: pathlib's
    rglob (the check of its owners) and shutil.copytree recurse once a folder, and their RecursionError, which no
    handler caught, stopped the collect of the whole class. Now the bounded check of its depth comes first, and a
    tree that grows past it after the check is refused as one that could not be copied."""
    inbound, run = collect
    exchange_root, course = inbound.parent.parent, inbound.parent.parent.parent / "course"
    request.addfinalizer(
        lambda: [_remove(exchange_root), _remove(course / "submitted")]
    )  # not pytest's rmtree
    for student in ("bin", "daemon", "nobody"):
        _hand_in(inbound, f"{student}+{ASSIGNMENT}+2026-10-01 10:00:00.000000 UTC+aaaa", student)
    _nested(inbound / f"bin+{ASSIGNMENT}+2026-10-01 10:00:00.000000 UTC+aaaa", 1100, "bin")
    grown = inbound.parent / "grown"  # moved into daemon's hand-in between the check and the copy
    grown.mkdir()
    _nested(grown, 1100, "daemon")
    copytree = shutil.copytree

    def moved_in(src, dst, *args, **options):  # copytree calls itself for each folder, with its arguments
        if Path(src).name.startswith("daemon+"):
            grown.rename(Path(src) / "grown")
        return copytree(src, dst, *args, **options)

    monkeypatch.setattr(shutil, "copytree", moved_in)
    course = run()
    assert _collected(course) == {"nobody": '{"by": "nobody"}'}
    recorded = refusals.read(course, ASSIGNMENT)
    assert "more than 16 deep" in recorded["bin"]["reason"], recorded["bin"]
    assert "could not be copied" in recorded["daemon"]["reason"], recorded["daemon"]
    assert not (course / "submitted" / "daemon" / ASSIGNMENT).exists()
