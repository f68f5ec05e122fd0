"""``python -m autograder autograde``: nbgrader's autograde and the score of record for each student.

``grade_student`` grades one student in one worker process: nbgrader's autograde through its Python API (the
notebook is not executed by nbgrader: ``PendingScores`` leaves every grade empty), then ``record.grade_notebook``
for each notebook of the assignment, written into the gradebook, the autograded notebook and a JSON record.
``autograde`` runs it for every submitted student (or the ones asked for) in a spawned process pool.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import shutil
import sys
import time
import warnings
from concurrent.futures import ProcessPoolExecutor, as_completed

from autograder import gradebook
from autograder.course import (
    CONFIG,
    NOTEBOOK_TIMEOUT,
    course_dir,
    require_released,
    source_dir,
    tools_on_path,
)
from autograder.gradebook import PendingScores
from autograder.record import Record, grade_notebook
from autograder.sandbox import Sandbox
from autograder.submissions import fingerprint
from posref.grading.remote import student_text

_API = None


def _nbgrader_api():
    """nbgrader's Python API with the course configuration, built once per worker process (starting nbgrader's
    command line per student costs seconds). The notebook itself is never executed by nbgrader here: the
    score of record is computed in the sandbox (autograder/record.py) and written in afterwards."""
    global _API
    if _API is None:
        # nbgrader's own session bookkeeping warns on every autograde; it is not about the submission
        warnings.filterwarnings("ignore", message="Object of type <Submitted")
        from nbgrader.apps import NbGraderAPI
        from nbgrader.converters import Autograde
        from nbgrader.coursedir import CourseDirectory
        from nbgrader.preprocessors import SaveAutoGrades
        from traitlets.config.loader import PyFileConfigLoader

        config = PyFileConfigLoader(str(CONFIG)).load_config()
        config.Execute.enabled = False
        config.Autograde.autograde_preprocessors = [
            PendingScores if step is SaveAutoGrades else step
            for step in Autograde.class_traits()["autograde_preprocessors"].default()
        ]
        _API = NbGraderAPI(coursedir=CourseDirectory(config=config), config=config)
    return _API


def _worker_init(counter) -> None:
    with counter.get_lock():
        counter.value += 1
        os.environ["POSREF_WORKER"] = str(counter.value)


def grade_student(
    assignment: str, student: str, cell_timeout: float, notebook_timeout: float = NOTEBOOK_TIMEOUT
) -> dict:
    """One student, in one worker process: nbgrader's autograde (without running the notebook), then the score
    of record for each notebook, written into the gradebook, the autograded notebook and a JSON record."""
    started = time.perf_counter()
    course = course_dir()
    graded = fingerprint(course / "submitted" / student / assignment)
    # an earlier feedback page would outlive this grading where nbgrader cannot take the new submission
    shutil.rmtree(course / "feedback" / student / assignment, ignore_errors=True)
    sandbox = Sandbox(uid=61000 + int(os.environ.get("POSREF_WORKER", "0")))
    with tools_on_path():
        nb_run = _nbgrader_api().autograde(assignment, student, force=True, create=True)
    records = []
    for source_nb in sorted((source_dir() / assignment).glob("*.ipynb")):
        submitted = course / "submitted" / student / assignment / source_nb.name
        try:
            record = grade_notebook(
                source_nb, submitted, sandbox=sandbox, scratch_base=course / "scratch", timeout=cell_timeout,
                budget=notebook_timeout,
            )  # fmt: skip
        except Exception as err:  # a fault of the grader's own: this notebook goes to a person, never scored
            reason = f"grader error: {type(err).__name__}: {student_text(str(err))}"
            record = Record(
                notebook=source_nb.name, status="could not grade", reason=reason, sandbox=sandbox.mode
            )
        if not nb_run["success"] and record.status == "graded":
            record.problems.append(
                "nbgrader could not process this submission; scores are only in the record"
            )
        records.append(record)
        autograded = course / "autograded" / student / assignment / source_nb.name
        if nb_run["success"]:
            gradebook.write_scores(assignment, student, source_nb.stem, record, autograded)
    out = {
        "student": student,
        "assignment": assignment,
        "seconds": time.perf_counter() - started,
        "submission": graded,
        "notebooks": [r.to_json() for r in records],
    }
    _write_record(out)
    return out


def _write_record(out: dict) -> None:
    target = course_dir() / "records" / out["assignment"] / f"{out['student']}.json"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps(out, indent=1))


def autograde(
    assignment: str,
    *,
    workers: int = 2,
    students: list[str] | None = None,
    cell_timeout: float = 60.0,
    notebook_timeout: float = NOTEBOOK_TIMEOUT,
) -> list[dict]:
    from tqdm import tqdm

    require_released(assignment)
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
    students = students or found
    # spawn, not fork: a forked worker inherits torch's OpenMP thread pool without its threads, and its first
    # parallel torch call then waits forever (seen here when the caller had already run torch)
    context = multiprocessing.get_context("spawn")
    counter = context.Value("i", 0)
    results = []
    # one task per student: the same student is never graded by two workers at once
    with ProcessPoolExecutor(
        max_workers=workers, mp_context=context, initializer=_worker_init, initargs=(counter,)
    ) as pool:
        futures = {
            pool.submit(grade_student, assignment, s, cell_timeout, notebook_timeout): s for s in students
        }
        for future in tqdm(
            as_completed(futures), total=len(futures), desc=f"autograde {assignment}", unit="student"
        ):
            try:
                results.append(future.result())
            except Exception as err:  # a grader failure is reported as such, never as a 0
                failed = {
                    "student": futures[future],
                    "assignment": assignment,
                    "error": repr(err),
                    "notebooks": [],
                }
                _write_record(failed)  # else export kept the previous record, or left the student out
                results.append(failed)
    return sorted(results, key=lambda r: r["student"])


def print_summary(assignment: str, results: list[dict]) -> None:
    """What ``autograde`` did, for the terminal: each student the grader failed on, then the count."""
    for result in results:
        if result.get("error"):
            print(f"{result['student']}: the grader failed: {result['error']}", file=sys.stderr)
    print(f"graded {len(results)} student(s); the scores: `python -m autograder export {assignment}`")
