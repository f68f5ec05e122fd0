"""``python -m autograder autograde``: the score of record of every student, graded on a Dask cluster.

The instructor's process is the only one that writes: it sends each student's submission (its files, with the
source notebooks) to a worker as one Dask task (``worker.score_student``: the score of record, computed in
the worker's own sandboxes), and as each student's records come back it runs nbgrader's autograde through its
Python API (the notebook is not executed by nbgrader: ``PendingScores`` leaves every grade empty), writes the
scores into the gradebook and the autograded notebook, and writes the student's JSON record. The cluster is a
local one (``--workers`` processes on this machine) or the one at ``--scheduler ADDRESS``: one code path.

Faults: a worker that dies mid-student has that student regraded on another worker (Dask reschedules the
task; after ``distributed.scheduler.allowed-failures`` deaths the student is recorded "could not grade"); a
scheduler that goes away ends the run with a message, every record written so far kept; a run that has work
left and no worker for ``NO_WORKERS_WAIT`` seconds stops the same way. A student whose record is up to date
(same submission, same source notebooks, every notebook graded) is not graded again unless asked for by name
or with ``regrade``.
"""

from __future__ import annotations

import copy
import hashlib
import json
import logging
import os
import shutil
import sys
import time
import uuid
import warnings
from concurrent.futures import CancelledError
from contextlib import contextmanager
from pathlib import Path

from autograder.course import (
    CONFIG,
    NOTEBOOK_TIMEOUT,
    course_dir,
    printable,
    require_released,
    source_dir,
    tools_on_path,
)
from autograder.grading import gradebook, penalty, stand_in
from autograder.grading.cluster import dask_client
from autograder.grading.gradebook import PendingScores
from autograder.grading.worker import score_student
from autograder.intake import late
from autograder.intake.submission import Refused, Submission
from autograder.sandbox.sandbox import Sandbox
from posref.grading.child.plain_data import student_text

NO_WORKERS_WAIT = 120.0  # seconds a run with students left waits for a worker before it stops
POLL = 2.0  # seconds between looks at the cluster while waiting for results

_CONFIGS: dict[tuple[str, ...], object] = {}
_APIS: dict[tuple[str, ...], object] = {}


def _course_key() -> tuple[str, ...]:
    return tuple(
        os.environ.get(n, "") for n in ("POSREF_COURSE_DIR", "POSREF_SOURCE_DIR", "POSREF_RELEASE_DIR")
    )


def _course_config():
    """The course's nbgrader configuration (``nbgrader_config.py``), read once per course: the late penalty's
    plugin and settings for every student of a run."""
    key = _course_key()
    if key not in _CONFIGS:
        from traitlets.config.loader import PyFileConfigLoader

        _CONFIGS[key] = PyFileConfigLoader(str(CONFIG)).load_config()
    return _CONFIGS[key]


def _nbgrader_api():
    """nbgrader's Python API with the course configuration, built once per course (starting nbgrader's command
    line per student costs seconds). The notebook itself is never executed by nbgrader here: the score of
    record is computed in the sandbox (autograder/grading/record.py) and written in afterwards."""
    key = _course_key()
    if key not in _APIS:
        # nbgrader's own session bookkeeping warns on every autograde; it is not about the submission
        warnings.filterwarnings("ignore", message="Object of type <Submitted")
        from nbgrader.apps import NbGraderAPI
        from nbgrader.converters import Autograde
        from nbgrader.coursedir import CourseDirectory
        from nbgrader.preprocessors import SaveAutoGrades

        config = copy.deepcopy(_course_config())
        config.Execute.enabled = False
        config.Autograde.autograde_preprocessors = [
            PendingScores if step is SaveAutoGrades else step
            for step in Autograde.class_traits()["autograde_preprocessors"].default()
        ]
        _APIS[key] = NbGraderAPI(coursedir=CourseDirectory(config=config), config=config)
    return _APIS[key]


def sources_of(assignment: str) -> dict[str, bytes]:
    """The source notebooks of an assignment (file name -> bytes): what each worker grades against."""
    return {p.name: p.read_bytes() for p in sorted((source_dir() / assignment).glob("*.ipynb"))}


def _digest(sources: dict[str, bytes]) -> str:
    digest = hashlib.sha256()
    for name, data in sorted(sources.items()):
        digest.update(f"{name}\0{len(data)}\0".encode() + data)
    return digest.hexdigest()


def _record_path(assignment: str, student: str) -> Path:
    return course_dir() / "records" / assignment / f"{student}.json"


def _write_record(out: dict) -> None:
    target = _record_path(out["assignment"], out["student"])
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps(out, indent=1))


def up_to_date(submission: Submission, source: str) -> bool:
    """Whether the student's record graded this very submission against these source notebooks (``source``:
    their digest), every notebook of it graded: a run that is not told otherwise leaves such a student be."""
    path = _record_path(submission.assignment, submission.student)
    if not path.exists():
        return False
    try:
        data = json.loads(path.read_text())
        return (
            not data.get("error")
            and data.get("source") == source
            and data.get("submission") == submission.fingerprint
            and bool(data.get("notebooks"))
            and all(nb.get("status") == "graded" for nb in data["notebooks"])
        )
    except (OSError, ValueError, AttributeError, TypeError):  # graded again: that says what is wrong
        return False


def record_student(submission: Submission, source: str, scored: dict) -> dict:
    """In the instructor's process, for one student's ``submission`` whose records came back
    (``worker.score_student``): nbgrader's autograde (without running the notebook), the scores into the gradebook
    and the autograded notebook, and the JSON record (with the digests of what was graded: the submission's
    fingerprint and ``source``, the source notebooks'). Returns it."""
    assignment, student, course = submission.assignment, submission.student, course_dir()
    # an earlier feedback page would outlive this grading where nbgrader cannot take the new submission
    shutil.rmtree(course / "feedback" / student / assignment, ignore_errors=True)
    with tools_on_path():
        nb_run = _nbgrader_api().autograde(assignment, student, force=True, create=True)
    in_gradebook = True
    for record in scored["notebooks"]:
        name = record["notebook"]
        autograded = course / "autograded" / student / assignment / name
        if not nb_run["success"] and not _stood_in(submission, record, autograded, nb_run):
            in_gradebook = False
            if record["status"] == "graded":
                record["problems"].append(
                    "nbgrader could not process this submission; scores are only in the record"
                )
            continue
        gradebook.write_scores(assignment, student, Path(name).stem, record, autograded)
    # nbgrader's autograde assigned its late penalty before the scores above were in: assigned again from them
    when = penalty.penalise(submission, scored["notebooks"], in_gradebook, _course_config())
    out = {
        "student": student,
        "assignment": assignment,
        "seconds": scored["seconds"],
        "worker": scored["worker"],
        "submission": submission.fingerprint,
        "source": source,
        **when,
        "notebooks": scored["notebooks"],
    }
    _write_record(out)
    return out


REFUSED = "nbgrader could not take this notebook"


def _stood_in(submission: Submission, record: dict, autograded: Path, nb_run: dict) -> bool:
    """Where nbgrader refused the submission but has it in the gradebook: ``autograded`` written with the
    stand-in for the notebook of ``record`` (``stand_in.py``: the student's notebook, as ``submission`` holds it,
    with the source's nbgrader metadata, and why nbgrader refused it), so that the formgrader shows that student,
    and the reason among the record's problems. False where the gradebook has no such notebook, or the source or
    the submission none (nothing written)."""
    from nbgrader.api import MissingEntry

    from autograder.course import gradebook as course_gradebook

    name = record["notebook"]
    source = source_dir() / submission.assignment / name
    submitted = submission.files.get(name)
    if not source.is_file() or submitted is None:
        return False
    try:
        with course_gradebook() as gb:
            gb.find_submission_notebook(Path(name).stem, submission.assignment, submission.student)
    except MissingEntry:
        return False
    log = f"{nb_run.get('error') or ''}\n{nb_run.get('log') or ''}"
    reasons = stand_in.refusal(submitted, log)
    nb = stand_in.stand_in(submitted, source, reasons, record.get("edition", ""))
    autograded.parent.mkdir(parents=True, exist_ok=True)
    gradebook.write_notebook(nb, autograded)
    record["problems"].append(
        f"{REFUSED} ({'; '.join(reasons)}): the formgrader's page of it says so, the student's cells shown with "
        "the assignment's nbgrader metadata"
    )
    return True


def _failed(assignment: str, student: str, error: str, *, submission: bool = False) -> dict:
    """The record of a student the grader failed on (``submission``: whose submission folder it could not take,
    ``error`` says why and what to do): "could not grade" in the export, never a 0, never the previous record
    (else export kept it, or left the student out)."""
    out = {"student": student, "assignment": assignment, "error": error, "notebooks": []}
    if submission:
        out["error_in"] = "submission"
    _write_record(out)
    return out


def _error_text(err: Exception) -> str:
    from distributed import KilledWorker

    if isinstance(err, KilledWorker):
        return f"every Dask worker that took this student died while grading it ({type(err).__name__})"
    return repr(err)


@contextmanager
def _quiet_reconnects():
    """Dask's client logs a traceback for each attempt to reach a scheduler that went away: the run's own
    message says so once, with what was kept."""
    logger = logging.getLogger("distributed.client")
    level = logger.level
    logger.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        logger.setLevel(level)


def _outcomes(client, futures: dict, where: str):
    """``(futures[f], result or exception)`` for each future as it finishes. Stops the run (SystemExit, with
    how many were done) when the scheduler goes away, or after ``NO_WORKERS_WAIT`` seconds without a worker."""
    from distributed import wait

    pending, idle_since, finished = set(futures), None, 0

    def stop(why: str) -> SystemExit:
        return SystemExit(
            f"{why}: {finished} of {len(futures)} student(s) sent there graded and recorded; run the same "
            "command again to grade the rest"
        )

    while pending:
        try:
            done, pending = wait(pending, timeout=POLL, return_when="FIRST_COMPLETED")
        except TimeoutError:
            done = set()
        except CancelledError:
            raise stop(f"{where} went away (or cancelled the work)") from None
        if done:
            idle_since = None
        elif not client.scheduler_info()["workers"]:
            idle_since = idle_since or time.monotonic()
            if time.monotonic() - idle_since > NO_WORKERS_WAIT:
                raise stop(f"no worker at {where} for {NO_WORKERS_WAIT:g} s")
        for future in done:
            try:
                outcome = future.result()
            except CancelledError:
                raise stop(f"{where} went away (or cancelled the work)") from None
            except Exception as err:
                outcome = err
            finished += 1
            yield futures[future], outcome


def autograde(
    assignment: str,
    *,
    workers: int = 2,
    students: list[str] | None = None,
    cell_timeout: float = 60.0,
    notebook_timeout: float = NOTEBOOK_TIMEOUT,
    scheduler: str | None = None,
    regrade: bool = False,
    trusted: bool = False,
) -> list[dict]:
    """Grade every submitted student of ``assignment`` whose record is not up to date (all of them with
    ``regrade``; exactly ``students`` when given) on a local cluster of ``workers`` processes or on the Dask
    scheduler at ``scheduler``. ``trusted``: the class's code is trusted, graded even without the sandbox, by
    this call's local workers (``sandbox.TRUSTED`` in their environment, never in this process's: a later call
    is trusted only if it says so too); a remote scheduler's workers need it set there. Returns the records
    written, sorted by student."""
    from tqdm import tqdm

    if scheduler is None:  # this machine's workers: say now, once, if none of them may run student code
        refusal = Sandbox(trusted=trusted or None).refusal
        if refusal is not None:
            raise SystemExit(f"autograde {assignment}: {refusal}")
    require_released(assignment)
    due = late.enter_due_date(assignment)
    submitted = course_dir() / "submitted"
    found = (
        sorted(p.name for p in submitted.iterdir() if (p / assignment).is_dir()) if submitted.is_dir() else []
    )
    if not found:
        raise SystemExit(
            f"no submissions of {assignment} in {submitted}: import them first (python -m autograder import PATH)"
        )
    unknown = [s for s in students or [] if s not in found]
    if unknown:  # a typo would have graded a phantom student as "could not grade" and exported it
        raise SystemExit(
            f"no submission of {assignment} for {', '.join(unknown)} (submitted: {', '.join(found)})"
        )
    sources = sources_of(assignment)
    source = _digest(sources)
    todo, results = [], []
    for student in students or found:
        try:  # each submission read once, here; what one student's folder holds stops that student only
            submission = Submission.read(student, assignment, set(sources), due)
        except (Refused, ValueError, OSError) as err:
            why = (
                f"its folder cannot be read ({type(err).__name__}: {err})"
                if isinstance(err, OSError)
                else str(err)
            )
            results.append(_failed(assignment, student, why, submission=True))
            continue
        if students or regrade or not up_to_date(submission, source):
            todo.append(submission)
    if len(todo) + len(results) < len(found) and not students:
        print(
            f"{len(found) - len(todo) - len(results)} student(s) graded already, submission and notebooks "
            "unchanged: not graded again (--regrade grades them again)",
            file=sys.stderr,
        )
    if not todo:
        return sorted(results, key=lambda r: r["student"])
    where = f"the Dask scheduler at {scheduler}" if scheduler else "the local Dask cluster"
    with _quiet_reconnects(), dask_client(scheduler, min(workers, len(todo)), trusted=trusted) as client:
        futures = {}
        for submission in todo:
            # one task per student: the same student is never graded by two workers at once
            key = f"grade-{assignment}-{submission.student}-{uuid.uuid4().hex[:8]}"
            files = dict(submission.files)
            future = client.submit(score_student, sources, files, cell_timeout, notebook_timeout, key=key)
            futures[future] = submission
        with tqdm(
            total=len(todo) + len(results),
            initial=len(results),
            desc=f"autograde {assignment}",
            unit="student",
        ) as bar:
            for submission, outcome in _outcomes(client, futures, where):
                if isinstance(outcome, Exception):  # a grader failure is reported as such, never as a 0
                    results.append(_failed(assignment, submission.student, _error_text(outcome)))
                    bar.update()
                    continue
                try:
                    results.append(record_student(submission, source, outcome))
                except Exception as err:  # nbgrader or the gradebook on this student: the others go on
                    why = f"could not be recorded: {_error_text(err)}"
                    results.append(_failed(assignment, submission.student, why))
                bar.update()
    return sorted(results, key=lambda r: r["student"])


def print_summary(assignment: str, results: list[dict]) -> int:
    """What ``autograde`` did, for the terminal: each student the grader failed on and each notebook it could not
    grade, with the reason, then the count. Returns the exit status: 1 when someone needs a person, else 0."""
    failed = 0
    for result in results:
        problems = [result["error"]] if result.get("error") else []
        problems += [
            f"{nb['notebook']}: {nb['reason']}" for nb in result["notebooks"] if nb["status"] != "graded"
        ]
        for problem in problems:
            print(f"could not grade {printable(result['student'])}: {student_text(problem)}", file=sys.stderr)
        failed += bool(problems)
        refused = [f"{nb['notebook']}: {p}" for nb in result["notebooks"] for p in nb.get("problems", [])
                   if p.startswith(REFUSED)]  # fmt: skip
        for problem in refused:
            print(f"{printable(result['student'])}: {student_text(problem)}", file=sys.stderr)
    print(f"graded {len(results) - failed} student(s)" + (f", could not grade {failed}" if failed else "")
          + f"; the scores: `python -m autograder export {assignment}`")  # fmt: skip
    return 1 if failed else 0
