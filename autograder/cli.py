"""The instructor's commands, each wrapping nbgrader (plain nbgrader commands keep working):

    python -m autograder release ASSIGNMENT
    python -m autograder import PATH [--assignment ASSIGNMENT]      (a folder or an archive of submissions)
    python -m autograder autograde ASSIGNMENT [--workers N] [--student ID ...] [--cell-timeout S] [--notebook-timeout S]
    python -m autograder feedback ASSIGNMENT
    python -m autograder export ASSIGNMENT [--csv FILE]
    python -m autograder demo [--workers N]

Course data lives in $POSREF_COURSE_DIR (default ~/posref-course), created on first use. See README.md.
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import warnings
import zipfile
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CONFIG = REPO / "autograder" / "nbgrader_config.py"
# seconds for grading one notebook of one student, answer cells and checks together (record.grade_notebook)
NOTEBOOK_TIMEOUT = 600.0
# nbgrader runs `alembic` from PATH: make the environment's own scripts findable
os.environ["PATH"] = os.pathsep.join([os.path.dirname(sys.executable), os.environ.get("PATH", "")])


def course_dir() -> Path:
    path = Path(os.environ.get("POSREF_COURSE_DIR", Path.home() / "posref-course")).expanduser().resolve()
    path.mkdir(parents=True, exist_ok=True)
    return path


def _source_dir() -> Path:
    return REPO / os.environ.get("POSREF_SOURCE_DIR", "solutions")


def nbgrader(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "nbgrader", *args, f"--JupyterApp.config_file={CONFIG}"]
    result = subprocess.run(command, cwd=REPO, capture_output=True, text=True)
    if check and result.returncode:
        raise SystemExit(f"nbgrader {' '.join(args)} failed:\n{result.stdout}\n{result.stderr}")
    return result


def release(assignment: str) -> None:
    _require_assignment(assignment)  # else nbgrader would add the misspelt name to the gradebook, then fail
    nbgrader("db", "assignment", "add", assignment)
    nbgrader("generate_assignment", assignment, "--force")


def assignments() -> list[str]:
    """The assignments of the course: folders of the source directory (``solutions/``) that hold a notebook."""
    return sorted({p.parent.name for p in _source_dir().glob("*/*.ipynb")})


def _require_assignment(assignment: str) -> None:
    if not any((_source_dir() / assignment).glob("*.ipynb")):
        known = ", ".join(assignments()) or "none"
        raise SystemExit(f"no assignment {assignment!r} in {_source_dir()} (the assignments: {known})")


def _require_released(assignment: str) -> None:
    """Grading needs the assignment's notebooks and test cells in the gradebook, which ``release`` puts there."""
    from nbgrader.api import Gradebook, MissingEntry

    _require_assignment(assignment)
    with Gradebook(f"sqlite:///{course_dir() / 'gradebook.db'}?timeout=30") as gb:
        try:
            released = bool(gb.find_assignment(assignment).notebooks)
        except MissingEntry:
            released = False
    if not released:
        raise SystemExit(
            f"{assignment} is not released in the course at {course_dir()}: "
            f"run `python -m autograder release {assignment}` first"
        )


def _folders(folder: Path) -> list[Path]:
    """Subfolders, without hidden ones and the ``__MACOSX`` folder a Mac adds to every zip it makes."""
    return sorted(p for p in folder.iterdir() if p.is_dir() and p.name[:1] != "." and p.name != "__MACOSX")


def import_submissions(path: Path, assignment: str | None = None) -> list[str]:
    """Copy ``PATH/<student>/<assignment>/*`` (or ``PATH/<student>/*`` with ``--assignment``) into the course.

    ``PATH`` is a folder or an archive, possibly with the class inside one more folder. A student folder holds a
    folder named after an assignment of the course (with ``assignment``: that folder, or the notebooks
    themselves); a student's earlier submission of an assignment is replaced. Returns the students imported."""
    if assignment is not None:
        _require_assignment(assignment)
    if not path.exists():
        raise SystemExit(f"nothing to import: {path} does not exist")
    wanted = [assignment] if assignment else assignments()

    def is_student(folder: Path) -> bool:
        return any((folder / a).is_dir() for a in wanted) or (
            assignment is not None and any(folder.glob("*.ipynb"))
        )

    with tempfile.TemporaryDirectory() as tmp:
        root = path
        if path.is_file():
            try:
                if zipfile.is_zipfile(path):  # zipfile drops absolute paths and ".." and makes no links
                    shutil.unpack_archive(path, tmp, format="zip")
                elif tarfile.is_tarfile(path):  # tar: no absolute paths, links out, devices
                    with tarfile.open(path) as archive:
                        archive.extractall(tmp, filter="data")
                else:
                    raise SystemExit(
                        f"cannot unpack {path}: it is not a zip or tar archive (.zip, .tar, .tar.gz)"
                    )
            except (zipfile.BadZipFile, tarfile.TarError, OSError, EOFError) as err:
                raise SystemExit(f"cannot unpack {path}: {err}") from err
            root = Path(tmp)
        # the class may sit in one folder of its own (an archive of the folder rather than of its contents)
        while (
            len(_folders(root)) == 1 and not is_student(_folders(root)[0]) and not any(root.glob("*.ipynb"))
        ):
            root = _folders(root)[0]
        students = [d for d in _folders(root) if is_student(d)]
        if not students:
            layout = (
                f"<student>/{assignment}/*.ipynb or <student>/*.ipynb"
                if assignment
                else f"<student>/<assignment>/*.ipynb, <assignment> one of {', '.join(wanted) or 'none'}"
            )
            found = ", ".join(p.name for p in sorted(root.iterdir())[:8]) or "nothing"
            raise SystemExit(f"no student folders in {path}: expected {layout} (found: {found})")
        skipped = [d.name for d in _folders(root) if not is_student(d)]
        if skipped:
            what = f"no {assignment} folder or notebook" if assignment else "no assignment folder"
            print(f"skipped, {what} inside: {', '.join(skipped)}", file=sys.stderr)
        by_case: dict[str, list[str]] = {}
        for student_dir in students:
            by_case.setdefault(student_dir.name.casefold(), []).append(student_dir.name)
            for a in wanted:
                if (student_dir / a).is_dir():
                    _copy_submission(student_dir / a, course_dir() / "submitted" / student_dir.name / a)
                elif a == assignment:
                    _copy_submission(student_dir, course_dir() / "submitted" / student_dir.name / a)
        for names in by_case.values():
            if len(names) > 1:
                print(
                    f"warning: {' and '.join(names)} differ only in case: two students here, but one folder on a "
                    "case-insensitive file system (macOS, Windows); check they are not the same student",
                    file=sys.stderr,
                )
    return [d.name for d in students]


def _copy_submission(source: Path, target: Path) -> None:
    if target.exists():
        shutil.rmtree(target)
    shutil.copytree(source, target, symlinks=True)


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

        from autograder.gradebook import PendingScores

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
    from autograder import gradebook
    from autograder.record import Record, grade_notebook
    from autograder.sandbox import Sandbox
    from posref.grading.remote import student_text

    started = time.perf_counter()
    course = course_dir()
    graded = fingerprint(course / "submitted" / student / assignment)
    # an earlier feedback page would outlive this grading where nbgrader cannot take the new submission
    shutil.rmtree(course / "feedback" / student / assignment, ignore_errors=True)
    sandbox = Sandbox(uid=61000 + int(os.environ.get("POSREF_WORKER", "0")))
    nb_run = _nbgrader_api().autograde(assignment, student, force=True, create=True)
    records = []
    for source_nb in sorted((_source_dir() / assignment).glob("*.ipynb")):
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


def fingerprint(folder: Path) -> str:
    """What a submission folder holds (its files' names and contents): export tells from it a submission
    imported again after it was graded."""
    digest = hashlib.sha256()
    for path in sorted(p for p in folder.rglob("*") if p.is_file() and not p.is_symlink()):
        digest.update(f"{path.relative_to(folder)}\0{path.stat().st_size}\0".encode())
        with open(path, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                digest.update(block)
    return digest.hexdigest()


def autograde(
    assignment: str,
    *,
    workers: int = 2,
    students: list[str] | None = None,
    cell_timeout: float = 60.0,
    notebook_timeout: float = NOTEBOOK_TIMEOUT,
) -> list[dict]:
    import multiprocessing

    from tqdm import tqdm

    _require_released(assignment)
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


def feedback(assignment: str) -> None:
    nbgrader("generate_feedback", assignment, "--force")


def export(assignment: str, csv_path: Path | None = None) -> list[dict]:
    """One row per student and notebook: score (empty unless graded), status and reason. The students are those
    of the gradebook and of ``submitted/``; status ``not submitted`` for one without this assignment, ``not
    graded`` for a submission imported but not (or not since) autograded."""
    import nbformat
    from nbgrader.api import Gradebook

    _require_assignment(assignment)
    course = course_dir()
    points = {
        nb.name: sum(float(_cell_points(c)) for c in nbformat.read(nb, as_version=4).cells)
        for nb in sorted((_source_dir() / assignment).glob("*.ipynb"))
    }
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}?timeout=30") as gb:
        students = {s.id for s in gb.students}
    submitted = course / "submitted"
    students |= {p.name for p in submitted.iterdir() if p.is_dir()} if submitted.is_dir() else set()
    records = course / "records" / assignment
    students |= {p.stem for p in records.glob("*.json")}
    rows = []

    def without_score(student: str, status: str, reason: str) -> None:
        rows.extend({"student": student, "notebook": name, "score": "", "max_score": f"{top:g}",
                     "status": status, "reason": reason} for name, top in points.items())  # fmt: skip

    for student in sorted(students):
        folder, path = submitted / student / assignment, records / f"{student}.json"
        again = f"run `python -m autograder autograde {assignment} --student {student}`"
        if not path.exists():
            if folder.is_dir():
                without_score(student, "not graded", f"imported, not autograded yet: {again}")
            else:
                without_score(student, "not submitted", "")
            continue
        data = json.loads(path.read_text())
        if folder.is_dir() and data.get("submission") not in (None, fingerprint(folder)):
            without_score(student, "not graded", f"imported again after it was graded: {again}")
            continue
        if data.get("error"):
            rows.append({"student": data["student"], "notebook": "", "score": "", "max_score": "",
                         "status": "could not grade", "reason": f"grader error: {data['error']}"})  # fmt: skip
        for nb in data["notebooks"]:
            problems = "; ".join(nb["problems"])
            rows.append({
                "student": data["student"], "notebook": nb["notebook"],
                "score": "" if nb["score"] is None else f"{nb['score']:g}", "max_score": f"{nb['max_score']:g}",
                "status": nb["status"], "reason": nb["reason"] or problems,
            })  # fmt: skip
    csv_path = csv_path or course_dir() / f"{assignment}-grades.csv"
    csv_path.parent.mkdir(parents=True, exist_ok=True)
    with open(csv_path, "w", newline="") as f:
        writer = csv.DictWriter(
            f, fieldnames=["student", "notebook", "score", "max_score", "status", "reason"]
        )
        writer.writeheader()
        writer.writerows({k: _spreadsheet_safe(v) for k, v in row.items()} for row in rows)
    return rows


def _cell_points(cell) -> float:
    """A test cell's points (what the score of record grades: ``record.Record.max_score``), else 0."""
    meta = cell.get("metadata", {}).get("nbgrader", {})
    test = cell.get("cell_type") == "code" and meta.get("grade") and not meta.get("solution")
    return float(meta.get("points", 0)) if test else 0.0


def _spreadsheet_safe(text: str) -> str:
    """A CSV field that a spreadsheet shows as text: one starting with = + - @ (a formula to Excel, LibreOffice
    and Google Sheets: a student id like ``=HYPERLINK(...)``) gets a leading apostrophe (OWASP's advice)."""
    return "'" + text if text[:1] in ("=", "+", "-", "@", "\t", "\r") else text


def _printable(text: str) -> str:
    return "".join(c if c.isprintable() else "?" for c in text)


def print_table(rows: list[dict], expected: dict | None = None) -> None:
    print(f"{'student':<11} {'score':>7}  {'status':<16} reason")
    for row in rows:
        score = f"{row['score'] or '-'}/{row['max_score']}"
        extra = f"  (expected {expected[row['student']]})" if expected and row["student"] in expected else ""
        student, reason = _printable(row["student"]), _printable(row["reason"][:110])
        print(f"{student:<11} {score:>7}  {row['status']:<16} {reason}{extra}")


def demo(workers: int = 2, cell_timeout: float = 15.0) -> list[dict]:
    """Release the demo assignment, submit the example submissions, autograde, feedback, export, print."""
    from autograder.demo.build import write_submissions

    course = os.environ.get("POSREF_COURSE_DIR") or tempfile.mkdtemp(prefix="posref-demo-")
    demo_env = {
        "POSREF_COURSE_DIR": course,
        "POSREF_SOURCE_DIR": "autograder/demo/source",
        "POSREF_RELEASE_DIR": str(Path(course).expanduser().resolve() / "release"),
    }
    saved = {name: os.environ.get(name) for name in demo_env}
    os.environ.update(demo_env)  # read by nbgrader_config.py in this process and in the workers
    try:
        release("positions")
        with tempfile.TemporaryDirectory() as tmp:
            expected = write_submissions(
                course_dir() / "release" / "positions" / "positions.ipynb", Path(tmp)
            )
            import_submissions(Path(tmp), "positions")
        autograde("positions", workers=workers, cell_timeout=cell_timeout)
        feedback("positions")
        rows = export("positions")
        print_table(rows, expected)
        print(f"CSV: {course_dir() / 'positions-grades.csv'}   course folder: {course_dir()}")
        return rows
    finally:  # leave the caller's environment as it was: later nbgrader runs must see the real course again
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def _positive_int(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"a number of workers is a whole number from 1, not {text!r}")
    return int(text)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m autograder", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("release").add_argument("assignment")
    p = sub.add_parser("import")
    p.add_argument("path", type=Path)
    p.add_argument("--assignment")
    p = sub.add_parser("autograde")
    p.add_argument("assignment")
    p.add_argument("--workers", type=_positive_int, default=os.cpu_count() or 1)
    p.add_argument("--student", action="append")
    p.add_argument("--cell-timeout", type=float, default=60.0, help="seconds for each answer cell and call")
    p.add_argument(
        "--notebook-timeout", type=float, default=NOTEBOOK_TIMEOUT, help="seconds for one notebook in all"
    )
    sub.add_parser("feedback").add_argument("assignment")
    p = sub.add_parser("export")
    p.add_argument("assignment")
    p.add_argument("--csv", type=Path)
    p = sub.add_parser("demo")
    p.add_argument("--workers", type=_positive_int, default=2)
    args = parser.parse_args(argv)
    if args.command == "release":
        release(args.assignment)
    elif args.command == "import":
        print("imported:", ", ".join(import_submissions(args.path, args.assignment)))
    elif args.command == "autograde":
        results = autograde(
            args.assignment,
            workers=args.workers,
            students=args.student,
            cell_timeout=args.cell_timeout,
            notebook_timeout=args.notebook_timeout,
        )
        for result in results:
            if result.get("error"):
                print(f"{result['student']}: the grader failed: {result['error']}", file=sys.stderr)
        print(
            f"graded {len(results)} student(s); the scores: `python -m autograder export {args.assignment}`"
        )
    elif args.command == "feedback":
        feedback(args.assignment)
    elif args.command == "export":
        print_table(export(args.assignment, args.csv))
    elif args.command == "demo":
        demo(args.workers)
