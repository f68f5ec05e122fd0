"""Collecting from nbgrader's exchange on a JupyterHub: only what the exchange can vouch for, by whom and when.

A student hands in through the Assignment List (nbgrader's ``submit``): their own process copies the notebook into
the shared ``<exchange>/<course>/inbound/`` as a folder named ``<student id>+<assignment>+<time>+<random>``. The
name, the time in it and the ``timestamp.txt`` inside are written by the student's process: any student can claim
any id and any time. What they cannot choose is what the kernel keeps: the folder's owner (the Unix user whose
process made it) and each file's inode change time (``st_ctime``, which no one but the kernel sets, and only to the
present). nbgrader's own collect takes the name's id and time, and on a claimed id that is not the owner's only
logs "cheating attempt?": the submission goes in as the claimed student's, and where two submissions claim one id
the later one silently replaces the other.

``CollectOwnSubmissions`` (``c.ExchangeFactory.collect`` in ``nbgrader_config.py``: ``nbgrader collect`` and the
formgrader's Collect button) takes a submission only when

* it is a folder, not a link (``lstat``: a link named ``alice+...`` to a folder of Alice's would carry her as owner),
* its owner's user name is the student id it claims (where a hub runs every user's server as one Unix user, no
  claim can hold but that user's own: nothing is collected as another student's, and the refusal says why),
* the claimed id is one the course takes (``course.student_id_problem``), everything in it is the owner's, and it
  passes import's checks (``submission.check_submission``: no link, regular files, named in UTF-8, within bounds);

each other one is refused, logged ("could not collect ..."), and kept in the course's record of refused imports
(``refusals.py``) under the claim and its owner, so that ``export`` gives it a row. Of a student's submissions it
takes the latest by the kernel's clock (with ``--before-duedate``, the latest at or before the due date, where
there is one), and writes that time into ``timestamp.txt`` (late work, ``late.py``): the latest change time of
anything in the folder, which a student can only move later, never earlier.
"""

from __future__ import annotations

import os
import pwd
import shutil
import stat
from datetime import datetime, timezone
from pathlib import Path

from nbgrader.api import Gradebook, MissingEntry
from nbgrader.exchange.default.collect import ExchangeCollect
from nbgrader.utils import ignore_patterns

from autograder.course import course_dir, source_dir, student_id_problem, take_modes
from autograder.intake import late, refusals
from autograder.intake.refusals import Refusal
from autograder.intake.submission import Refused, check_submission
from autograder.intake.submissions import shown
from autograder.intake.unpack import MAX_DEPTH

SHARED_USER_HINT = (
    "the exchange knows who handed a submission in by the Unix user that owns it; where a hub runs several hub "
    "users' servers as one Unix user, it cannot tell them apart (autograder/README.md, 'On a JupyterHub')"
)


def owner_name(uid: int) -> str:
    """The user name of ``uid``, or ``uid N`` where the machine has no user of that number."""
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return f"uid {uid}"


def claimed_id(name: str, assignment: str) -> str | None:
    """The student id an inbound folder's name claims (``<id>+<assignment>+<time>[+<random>]``, split as nbgrader
    splits it), or None where the name is not one of ``assignment``."""
    parts = name.rsplit("+", 3)
    if len(parts) == 4 and parts[1] == assignment:
        return parts[0]
    if len(parts) >= 3 and parts[-2] == assignment:  # nbgrader's names without the random part
        return "+".join(parts[:-2])
    return None


def vouched_time(folder: Path) -> datetime:
    """The latest inode change time of ``folder`` and everything in it (UTC, naive as nbgrader's times): set by
    the kernel alone, so a student can make it later but never earlier than the hand-in."""
    times = [folder.lstat().st_ctime, *(p.lstat().st_ctime for p in folder.rglob("*"))]
    return datetime.fromtimestamp(max(times), timezone.utc).replace(tzinfo=None)


def check_inbound(folder: Path, claimed: str, expected: set[str]) -> None:
    """Refused (saying why) unless ``folder`` is a folder, owned by the Unix user whose name is ``claimed``, a
    valid student id, everything in it that user's, and a submission import would take."""
    info = folder.lstat()
    if not stat.S_ISDIR(info.st_mode):
        kind = "a link" if stat.S_ISLNK(info.st_mode) else "not a folder"
        raise Refused(f"it is {kind} in the exchange, not the folder nbgrader's submit makes")
    owner = owner_name(info.st_uid)
    if owner != claimed:
        raise Refused(
            f"it was handed in as {claimed!r} by the Unix user {owner!r}; only a student's own submission is "
            f"collected: {SHARED_USER_HINT}"
        )
    problem = student_id_problem(claimed)
    if problem is not None:
        raise Refused(problem)
    check_submission(folder, expected)  # first: bounded in depth and count, what the walk below is not
    strangers = sorted({owner_name(p.lstat().st_uid) for p in folder.rglob("*")} - {owner})
    if strangers:
        raise Refused(f"it holds files of other users ({', '.join(strangers)})")


class CollectOwnSubmissions(ExchangeCollect):
    """nbgrader's ``collect`` that takes each student's own latest submission only (see the module docstring)."""

    def init_src(self):
        if self.coursedir.course_id == "":
            self.fail("No course id specified. Re-run with --course flag.")
        assignment = self.coursedir.assignment_id
        self.course_path = os.path.join(self.root, self.coursedir.course_id)
        self.inbound_path = os.path.join(self.course_path, "inbound")
        if not os.path.isdir(self.inbound_path):
            self.fail(f"Course not found: {self.inbound_path}")
        with Gradebook(self.coursedir.db_url, self.coursedir.course_id) as gb:
            try:
                self.duedate = gb.find_assignment(assignment).duedate
            except MissingEntry:
                self.duedate = None
        wanted = self.coursedir.student_id if self.coursedir.student_id not in ("", "*") else None
        expected = {p.name for p in (source_dir() / assignment).glob("*.ipynb")}
        handed_in: dict[str, list[dict]] = {}
        refused: list[Refusal] = []
        for entry in sorted(os.scandir(self.inbound_path), key=lambda e: e.name):
            claimed = claimed_id(entry.name, assignment)
            if claimed is None or (wanted is not None and claimed != wanted):
                continue
            folder = Path(entry.path)
            try:
                check_inbound(folder, claimed, expected)
                when = vouched_time(folder)
            except (Refused, OSError, RecursionError) as err:  # deeper than Python recurses, after the check
                why = str(err) if isinstance(err, Refused) else f"{type(err).__name__}: {err}"
                try:
                    owner = owner_name(folder.lstat().st_uid)
                except OSError:  # gone since it was listed: its owner may remove it at any time
                    owner = None
                label = (  # the name's bytes that are not UTF-8 escaped: the record of refusals is UTF-8
                    shown(claimed)
                    if owner == claimed
                    else f"{shown(claimed)} (handed in by {owner})"
                    if owner
                    else f"{shown(claimed)} (removed from the exchange while it was collected)"
                )
                self.log.error("could not collect %s (%s): %s", label, shown(entry.name), why)
                valid = owner == claimed and student_id_problem(claimed) is None
                refused.append(Refusal(claimed if valid else None, None, label, why))
                continue
            handed_in.setdefault(claimed, []).append(
                {"username": claimed, "filename": entry.name, "timestamp": when}
            )
        self.src_records = sorted(map(self._chosen, handed_in.values()), key=lambda r: r["username"])
        try:
            taken = [(r["username"], None) for r in self.src_records]
            refusals.update(course_dir(), assignment, refused, taken)
        except ValueError as err:
            self.log.warning("%s", err)

    def _chosen(self, records: list[dict]) -> dict:
        """The hand-in taken of one student's ``records``: the latest by the kernel's time; with nbgrader's
        ``--before-duedate`` (``before_duedate``), the latest at or before the due date, where there is one."""
        if self.before_duedate and self.duedate is not None:
            records = [r for r in records if r["timestamp"] <= self.duedate] or records
        return max(records, key=lambda r: r["timestamp"])  # the first listed of equal times

    def do_copy(self, src, dest, log=None):
        """The submission copied as it is (a link stays a link, for autograde to refuse), within nbgrader's
        ignore, include and size settings; then the course's modes and the kernel's time in ``timestamp.txt``.
        A hand-in that cannot be copied (its owner took away what the instructor may read, or changed it meanwhile)
        is refused, and its partial copy removed: nbgrader's collect goes on to the next student. Its time is read
        again once it is copied, and the later one written: a change since it was checked (its owner's to make at
        any time) dates it, as a change before the check did."""
        [record] = [r for r in self.src_records if os.path.join(self.inbound_path, r["filename"]) == src]
        ignored = ignore_patterns(
            exclude=self.coursedir.ignore,
            include=self.coursedir.include,
            max_file_size=self.coursedir.max_file_size,
            log=self.log,
        )

        def bounded(folder: str, names: list[str]) -> set[str]:
            """nbgrader's ignore, and no deeper than a submission may be (copytree recurses a folder a level)."""
            if names and len(Path(folder).relative_to(src).parts) >= MAX_DEPTH:  # as check_submission counts
                raise OSError(f"it holds folders more than {MAX_DEPTH} deep (made so after it was checked)")
            return ignored(folder, names)

        try:
            shutil.copytree(src, dest, symlinks=True, ignore=bounded)
            when = max(record["timestamp"], vouched_time(Path(src)))
        except (OSError, RecursionError) as err:  # shutil.Error too: what it could not copy, after the rest
            shutil.rmtree(dest, ignore_errors=True)
            student = record["username"]
            why = f"it could not be copied ({type(err).__name__}: {str(err)[:500]})"
            self.log.error("could not collect %s (%s): %s", student, record["filename"], why)
            try:
                refusals.update(
                    course_dir(), self.coursedir.assignment_id, [Refusal(student, None, student, why)], []
                )
            except ValueError as problem:
                self.log.warning("%s", problem)
            return
        take_modes(Path(dest))
        late.write_timestamp(Path(dest), when.replace(tzinfo=timezone.utc))
