"""The score of record: the graded answer cells run in a sandboxed child, the checkers run here.

For one submitted notebook: the program is the *source* notebook's code cells in order, with each answer
(solution) cell replaced by the student's cell of the same grade id and the test cells left out. The child
runs it; then every ``check_*(name, ...)`` call found in a test cell of the source notebook is run here,
in hidden mode, against the child's function through ``RemoteFunction``. A test cell earns its points when
all its checker calls pass. A cell whose code kills or hangs the child is left out and the child restarted,
so the student loses only what depended on that cell; the reason is recorded either way. Grading one notebook
takes at most ``budget`` seconds however slow the student's code is: the checks left when it runs out fail,
with that reason.
"""

from __future__ import annotations

import ast
import atexit
import functools
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

import nbformat

import posref.grading as checkers
from autograder.course import NOTEBOOK_TIMEOUT
from autograder.editions.notebook import ENGLISH, edition_of
from autograder.sandbox.sandbox import Sandbox, submission_files
from posref import i18n
from posref.grading import rules
from posref.grading.child.forkserver import ServerGone
from posref.grading.child.plain_data import student_text
from posref.grading.child.remote import BudgetSpent, Child, ChildFailed, RemoteFunction
from posref.grading.child.scratch import remove_tree
from posref.grading.failure import Cause, StudentError
from posref.i18n import N_, _

MAX_RESTARTS = 6
# starts of the reference child, and runs of a speed check whose reference child failed
REFERENCE_ATTEMPTS = 3
# a test cell whose check failed by a fault of the grader's: the student's message, and in English the record's reason
GRADER_ERROR = N_("grader error while checking {grade_id}: {error}")


class GraderFailed(Exception):
    """A process of the grader's own failed however often it was started again: the notebook is "could not grade"
    with this reason, never a student's lost point."""


@dataclass
class CellResult:
    """A test cell's score of record: its message (the student's, in their language) and the cause of each failed
    check in it (``posref.grading.failure.Cause``, the same in every edition: what ``stats`` counts)."""

    grade_id: str
    points: float
    score: float
    message: str = ""
    causes: list[Cause] = field(default_factory=list)


@dataclass(frozen=True)
class Verdict:
    """One check's outcome: passed (no message), or its message and cause."""

    message: str = ""
    cause: Cause | None = None


PASSED = Verdict()


@dataclass
class Record:
    notebook: str
    status: str  # "graded" or "could not grade"
    reason: str = ""
    cells: list[CellResult] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    sandbox: str = ""
    edition: str = ENGLISH  # the edition handed in, the language of the messages ("": unreadable)

    @property
    def score(self) -> float | None:
        return None if self.status != "graded" else sum(c.score for c in self.cells)

    @property
    def max_score(self) -> float:
        return sum(c.points for c in self.cells)

    def to_json(self) -> dict:
        return {**asdict(self), "score": self.score, "max_score": self.max_score}


def _meta(cell) -> dict:
    """The cell's nbgrader metadata; {} when a (student-edited) notebook has something else there."""
    meta = cell.get("metadata", {})
    meta = meta.get("nbgrader", {}) if isinstance(meta, dict) else {}
    return meta if isinstance(meta, dict) else {}


def _code(source: str) -> str:
    """Cell source without IPython magics and shell escapes (the child runs plain Python)."""
    return "\n".join("" if line.lstrip().startswith(("%", "!")) else line for line in source.splitlines())


def checker_calls(source: str) -> list[tuple[str, str]]:
    """``[(checker_name, function_name), ...]`` for each ``check_*(name, ...)`` call in a test cell."""
    calls: list[tuple[str, str]] = []
    for node in ast.walk(ast.parse(_code(source))):
        if not isinstance(node, ast.Call) or not node.args or not isinstance(node.args[0], ast.Name):
            continue
        func = node.func
        name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
        if name.startswith("check_") and hasattr(checkers, name) and (name, node.args[0].id) not in calls:
            calls.append((name, node.args[0].id))
    return calls


def _program(source_nb, submitted_nb) -> tuple[list[tuple[int, str]], list]:
    answers = {
        _meta(c)["grade_id"]: c.source
        for c in submitted_nb.cells
        if _meta(c).get("solution") and isinstance(_meta(c).get("grade_id"), str)
    }
    program, tests = [], []
    for index, cell in enumerate(source_nb.cells):
        meta = _meta(cell)
        if cell.cell_type != "code":
            continue
        if meta.get("grade") and not meta.get("solution"):
            tests.append(cell)
        elif meta.get("solution"):
            program.append((index, _code(answers.get(meta.get("grade_id"), ""))))
        else:
            program.append((index, _code(cell.source)))
    return program, tests


class _Children:
    """The student's child (restarted without a cell that killed it) and, for speed checks, a reference child."""

    def __init__(
        self,
        program,
        sandbox: Sandbox,
        scratch: Path,
        problems: list[str],
        timeout: float,
        budget: float,
        files: Sequence = (),
    ) -> None:
        self.program, self.sandbox, self.scratch, self.problems = list(program), sandbox, scratch, problems
        self.timeout, self.budget, self.files = timeout, budget, files
        self.deadline = time.monotonic() + budget
        self.student: Child | None = None

    def _start(
        self,
        cells,
        deadline: float | None,
        files: Sequence = (),
        *,
        fork: bool = True,
        sandbox: Sandbox | None = None,
    ) -> Child:
        """A child running ``cells`` in ``sandbox`` (default: the students'): a fork of the worker's fork server
        where there is one (``fork``), else a freshly started sandbox."""
        sandbox = sandbox or self.sandbox
        command, cwd, python_path = sandbox.python_command(self.scratch)
        server = sandbox.fork_server() if fork else None
        groups = sandbox.groups()
        launch = functools.partial(server.fork, join=groups.add) if server is not None else None
        cpu_clock = groups.cpu.seconds if groups.cpu is not None else None
        try:
            return Child(command, cells, env=sandbox.env(), cwd=cwd, python_path=python_path,
                         preexec_fn=functools.partial(sandbox.set_limits, groups), cell_timeout=self.timeout,
                         call_timeout=self.timeout, log_path=str(self.scratch.parent / "child.log"),
                         deadline=deadline, files=files, on_close=groups.remove, launch=launch,
                         cpu_clock=cpu_clock)  # fmt: skip
        except ServerGone:  # a server that a child of an earlier student ended: start this one afresh
            return self._start(cells, deadline, files, fork=False, sandbox=sandbox)

    @property
    def out_of_time(self) -> str:
        """'' while the notebook's budget lasts, else the reason the checks left are not run."""
        if time.monotonic() < self.deadline:
            return ""
        return _("not checked: the time for grading this notebook ({budget} s) ran out").format(
            budget=f"{self.budget:g}"
        )

    def get(self) -> Child:
        if self.student is not None and self.student.alive:
            return self.student
        self.close()  # a child killed by a check: its pipes and memory cgroup go first
        if self.out_of_time:
            raise BudgetSpent(self.out_of_time)
        for _attempt in range(MAX_RESTARTS):
            try:
                self.student = self._start(self.program, self.deadline, self.files)
                return self.student
            except ChildFailed as failure:
                bad = getattr(failure, "cell", None)
                if bad is None:
                    raise
                self.problems.append(f"cell {bad} was left out: {failure.reason}")
                self.program = [(i, src) for i, src in self.program if i != bad]
        raise ChildFailed(f"the answer cells could not be run after {MAX_RESTARTS} attempts")

    def reference_fn(self, path: str) -> RemoteFunction:
        """The reference function ``"module:name"`` in a child like the student's (same sandbox, same pipes),
        kept for the worker's lifetime: it runs only posref, never student code. One child holds every speed
        checker's reference (``reference_paths()``: one start per worker, not one per reference, 1.5-2.6 s each
        on the loaded 2-core machine); any other path gets a child of its own. A child that ended, or that has used
        ``RENEW_AFTER`` of its CPU limit (a limit per process, which would end it in the middle of a check after a
        few thousand checks), is started afresh; a start that fails is tried again, ``REFERENCE_ATTEMPTS`` times
        in all, and then raises ``GraderFailed``: the grader's failure, never the student's."""
        shared = reference_paths()
        key = "*" if path in shared else path
        child = _REFERENCE_CHILDREN.pop(key, None)
        if child is not None and child.alive and not self.sandbox.worn(child.processes()):
            _REFERENCE_CHILDREN[key] = child
            return RemoteFunction(child, path.split(":")[1])
        if child is not None:
            child.close()
        imports = "\n".join(
            f"from {module} import {name}" for module, name in (p.split(":") for p in (shared if key == "*" else [path]))
        )  # fmt: skip
        reason = ""
        for _attempt in range(REFERENCE_ATTEMPTS):
            try:
                # never a fork (the fork server's children are one student's at a time, and end each other), and
                # a uid of its own (``Sandbox.for_reference``)
                child = _REFERENCE_CHILDREN[key] = self._start(
                    [(0, imports)], None, fork=False, sandbox=self.sandbox.for_reference
                )
                return RemoteFunction(child, path.split(":")[1])
            except ChildFailed as failure:
                reason = failure.reason
        raise GraderFailed(
            f"the grader's reference process could not start ({REFERENCE_ATTEMPTS} attempts): {reason}"
        )

    def close(self) -> None:
        if self.student is not None:
            self.student.close()
            self.student = None


_REFERENCE_CHILDREN: dict[str, Child] = {}


def reference_path(checker: str) -> str:
    """The ``"module:name"`` of the reference that the speed checker named ``checker`` (``check_<name>_speed``) is
    timed against in the reference child: its ``reference_path``, else ``posref:<name>``."""
    default = f"posref:{checker[len('check_') : -len('_speed')]}"
    return getattr(getattr(checkers, checker), "reference_path", default)


@functools.cache
def reference_paths() -> tuple[str, ...]:
    """The reference ``"module:name"`` of each speed checker of ``posref.grading`` (``reference_path``), those whose
    names no other one shares (they are imported into one namespace)."""
    speed = [n for n in dir(checkers) if n.startswith("check_") and n.endswith("_speed")]
    paths = sorted({reference_path(n) for n in speed})
    names = [p.split(":")[1] for p in paths]
    return tuple(p for p, name in zip(paths, names, strict=True) if names.count(name) == 1)


@atexit.register
def _close_reference_children() -> None:
    for child in _REFERENCE_CHILDREN.values():
        child.close()


def grade_notebook(
    source_path: Path,
    submitted_path: Path,
    *,
    sandbox: Sandbox,
    scratch_base: Path,
    timeout: float = 60.0,
    budget: float = NOTEBOOK_TIMEOUT,
) -> Record:
    """The score of record of one submitted notebook (``_grade_notebook``), its messages in the language of the
    edition the notebook says it is (``editions.edition_of``: the student's metadata, validated; English for anything
    else, set explicitly, so that no ``POSREF_LANG`` of the grader's speaks instead)."""
    edition = _edition(submitted_path)
    i18n.set_language(edition or ENGLISH)
    try:
        record = _grade_notebook(
            source_path,
            submitted_path,
            sandbox=sandbox,
            scratch_base=scratch_base,
            timeout=timeout,
            budget=budget,
        )
    finally:
        i18n.set_language(None)
    record.edition = edition
    return record


def _edition(path: Path) -> str:
    """The edition of the notebook at ``path``; "" where it cannot be read (``_grade_notebook`` says why, in
    English)."""
    try:
        return edition_of(nbformat.read(path, as_version=4))
    except Exception:  # a missing or corrupted notebook: no edition is known
        return ""


def _grade_notebook(
    source_path: Path,
    submitted_path: Path,
    *,
    sandbox: Sandbox,
    scratch_base: Path,
    timeout: float = 60.0,
    budget: float = NOTEBOOK_TIMEOUT,
) -> Record:
    """The score of record of one submitted notebook (see the module docstring). ``timeout``: seconds for each
    answer cell and each call of a student's function; ``budget``: seconds for the whole notebook."""
    record = Record(notebook=submitted_path.name, status="graded", sandbox=sandbox.mode)
    source_nb = nbformat.read(source_path, as_version=4)
    try:
        submitted_nb = nbformat.read(submitted_path, as_version=4)
    except FileNotFoundError:  # most often a renamed notebook: say what is there instead
        others = ", ".join(sorted(p.name for p in submitted_path.parent.glob("*.ipynb")))
        hint = (
            f" (it holds {student_text(others)}: rename it, then grade this student again)" if others else ""
        )
        record.status, record.reason = "could not grade", f"no {submitted_path.name} in the submission{hint}"
        submitted_nb = nbformat.v4.new_notebook()
    except Exception as err:  # a corrupted notebook is reported, never scored 0 silently
        record.status, record.reason = (
            "could not grade",
            f"the notebook could not be read: {type(err).__name__}: {student_text(str(err))}",
        )
        submitted_nb = nbformat.v4.new_notebook()
    program, tests = _program(source_nb, submitted_nb)
    if sandbox.refusal is not None and record.status == "graded":  # no student code runs without the sandbox
        record.status, record.reason = "could not grade", sandbox.refusal
    if record.status != "graded":
        record.cells = [
            CellResult(_meta(c).get("grade_id", "?"), float(_meta(c).get("points", 0)), 0.0) for c in tests
        ]
        return record
    answer_cells = {
        i for i, c in enumerate(source_nb.cells) if c.cell_type == "code" and _meta(c).get("solution")
    }
    files, note = submission_files(submitted_path.parent, sandbox.limits.scratch_size // 2)
    if note:
        record.problems.append(note)
    scratch = sandbox.scratch(scratch_base)
    children = _Children(program, sandbox, scratch, record.problems, timeout, budget, files)
    try:
        try:
            children.get()
        except ChildFailed as failure:
            record.status, record.reason = (
                "could not grade",
                f"the answer cells could not be run: {failure.reason}",
            )
            record.cells = [
                CellResult(_meta(c).get("grade_id", "?"), float(_meta(c).get("points", 0)), 0.0)
                for c in tests
            ]
            return record
        verdicts: dict[tuple[str, str], Verdict] = {}  # (checker, function) -> its verdict
        correctness = _correctness_checks(tests)

        def verdict(name: str, fn: str) -> Verdict:
            if (name, fn) not in verdicts:
                verdicts[(name, fn)] = _broken_rule(program, answer_cells, name, fn) or _run_check(
                    children, name, fn
                )
            return verdicts[(name, fn)]

        def speed_verdict(position: int, name: str, fn: str) -> Verdict:
            """A speed check runs only for a function that passed all its correctness checks (the same checks'
            verdicts, not another draw); else one line that says so."""
            if children.out_of_time:
                return Verdict(children.out_of_time, Cause("out-of-time"))
            failed = [
                (where, grade_id)
                for checker, where, grade_id in correctness.get(fn, [])
                if verdict(checker, fn).message
            ]
            if failed:
                where, grade_id = failed[0]
                if where < position:
                    said = _("not timed: {fn} fails its correctness check above").format(fn=fn)
                else:
                    said = _("not timed: {fn} fails its correctness check ({grade_id})").format(
                        fn=fn, grade_id=grade_id
                    )
                return Verdict(said, Cause("not-timed"))
            return _broken_rule(program, answer_cells, name, fn) or _run_check(
                children, name, fn, checked=fn in correctness
            )

        for position, cell in enumerate(tests):
            meta = _meta(cell)
            result = CellResult(meta.get("grade_id", "?"), float(meta.get("points", 0)), 0.0)
            record.cells.append(result)
            try:
                messages = [
                    speed_verdict(position, name, fn) if name.endswith("_speed") else verdict(name, fn)
                    for name, fn in checker_calls(cell.source)
                ]
            except BudgetSpent:
                result.message, result.causes = children.out_of_time, [Cause("out-of-time")]
                continue
            except ChildFailed as failure:
                result.message = _("could not run the answer cells: {reason}").format(reason=failure.reason)
                result.causes = [Cause("not-run")]
                continue
            except Exception as err:  # a fault of the grader's own: flagged for a person, never scored
                said = {
                    "grade_id": result.grade_id,
                    "error": f"{type(err).__name__}: {student_text(str(err))}",
                }
                result.message = _(GRADER_ERROR).format(**said)
                result.causes = [Cause("grader-error")]
                record.status, record.reason = "could not grade", record.reason or GRADER_ERROR.format(**said)
                continue
            failures = [m for m in messages if m.message]
            result.score = 0.0 if failures else result.points
            result.message = "\n".join(m.message for m in failures) or _("passed")
            result.causes = [m.cause or Cause("unknown") for m in failures]
        if children.out_of_time:
            record.problems.append(f"the time for grading this notebook ({budget:g} s) ran out")
        if children.student is not None:
            record.problems += [f"cell {i} raised {err}" for i, err in children.student.cell_errors.items()]
            if children.student.refused_errors:
                record.problems.append(
                    f"the grading process reported errors for {children.student.refused_errors} cell(s) it was "
                    "never sent: not recorded"
                )
    finally:
        children.close()
        remove_tree(scratch.parent)
    return _bounded(record)


MAX_MESSAGE = 8_000  # characters of one test cell's message in a record
MAX_PROBLEMS = (
    16_000  # characters of a notebook's problems in all (a CSV field holds 32,000: spreadsheet.MAX_FIELD)
)


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 30] + " [... cut: too long to keep]"


def _bounded(record: Record) -> Record:
    """The record with at most ``MAX_MESSAGE`` characters per cell message and ``MAX_PROBLEMS`` of problems (the
    first ones kept whole, then a count of the rest): what a child says about itself is bounded in the record, the
    feedback and the CSV, however much it says."""
    record.reason = _cut(record.reason, MAX_MESSAGE)
    for cell in record.cells:
        cell.message = _cut(cell.message, MAX_MESSAGE)
    kept, size = [], 0
    for problem in record.problems:
        problem = _cut(problem, MAX_PROBLEMS // 4)
        if size + len(problem) > MAX_PROBLEMS:
            kept.append(f"... and {len(record.problems) - len(kept)} more problem(s), not recorded")
            break
        kept.append(problem)
        size += len(problem) + 2
    record.problems = kept
    return record


def _broken_rule(
    program: list[tuple[int, str]], answer_cells: set[int], checker: str, fn: str
) -> Verdict | None:
    """None unless the answer cell that defines ``fn`` (every answer cell, when none does) makes a call the rules
    forbid for ``checker`` (``posref.grading.rules``), or is too deep for the grader to parse; then the check's
    message, without running it. Read here, on the cell's source: nothing in the child can change it."""
    answers = [(i, src) for i, src in program if i in answer_cells]
    defining = [(i, src) for i, src in answers if rules.binds(src, fn)] or answers
    for index, source in defining:
        context = [src for i, src in program if i != index]
        problem = rules.find_forbidden(checker, source, context)
        if problem is not None:
            return Verdict(rules.broken_rule_message(fn, problem), Cause("rule"))
    return None


def _correctness_checks(tests: list) -> dict[str, list[tuple[str, int, str]]]:
    """function -> (checker, index among the test cells, grade id) of every correctness check (a ``check_*`` that is
    not a speed check) on it in the notebook's test cells: what its speed check depends on."""
    found: dict[str, list[tuple[str, int, str]]] = {}
    for position, cell in enumerate(tests):
        for name, fn in checker_calls(cell.source):
            if not name.endswith("_speed"):
                found.setdefault(fn, []).append((name, position, str(_meta(cell).get("grade_id", "?"))))
    return found


def _run_check(children: _Children, name: str, fn: str, *, checked: bool = False) -> Verdict:
    """``PASSED`` if the check passes, else what the student should read and its cause. The child watches what the function runs on the
    checker's cases (``posref.grading.watch``): what it reports as run that the rules forbid costs the check,
    whatever else happened (a report is taken as given: it can only cost the student). ``checked``: for a speed
    check, the function's correctness checks have passed in this grading (else the speed check runs their hidden
    cases itself)."""
    if children.out_of_time:
        return Verdict(children.out_of_time, Cause("out-of-time"))
    child = children.get()
    if fn not in child.names:
        said = _("{fn} is not defined: the cell that defines it did not run or does not define it")
        return Verdict(said.format(fn=fn), Cause("not-defined"))
    remote = RemoteFunction(child, fn, watch=name)
    try:
        outcome = _outcome(children, child, remote, name, fn, checked)
    except Exception:
        if not remote.ran:
            raise
        outcome = PASSED
    if remote.ran:
        return Verdict(rules.broken_rule_message(fn, rules.ran_problem(name, remote.ran)), Cause("rule"))
    return outcome


def _outcome(
    children: _Children, child: Child, remote: RemoteFunction, name: str, fn: str, checked: bool
) -> Verdict:
    check = getattr(checkers, name)
    try:
        if name.endswith("_speed"):
            _timed_against_reference(children, name, remote, checked)
        else:
            check(remote, hidden=True, device="cpu")
    except GraderFailed:
        raise
    except checkers.CheckFailed as failure:
        if isinstance(failure.__cause__, ChildFailed):
            child.kill()  # restarted for the next check
        return Verdict(str(failure), failure.cause)
    except StudentError as err:  # raised outside the checker's own cases (e.g. while being timed)
        return Verdict(f"{fn} {err.reported_as}", err.cause)
    except Exception as err:
        if not remote.answered:
            raise  # before the child gave anything back: a fault of the grader's own
        # the child's replies are checked to be plain data, but whatever in them the checker trips over is the
        # student's failure, never "could not grade" (that would send a wrong answer to manual grading)
        said = _("{fn} returned something the check could not compare ({error})").format(
            fn=fn, error=f"{type(err).__name__}: {student_text(str(err))}"
        )
        return Verdict(said, Cause("unreadable"))
    return PASSED


def _timed_against_reference(children: _Children, name: str, remote: RemoteFunction, checked: bool) -> None:
    """Run the speed checker ``name`` on the student's ``remote`` against the reference in the worker's reference
    child. When that child fails during the check (killed by its CPU limit, a hang, a kill from outside: whatever
    ends it is the grader's, not the student's, whose child is another), the check runs again with the child
    started afresh, ``REFERENCE_ATTEMPTS`` times in all, then ``GraderFailed``; the record says so (``problems``).
    A failure of the student's own child is raised as it comes, for ``_run_check``."""
    check, path = getattr(checkers, name), reference_path(name)
    for attempt in range(1, REFERENCE_ATTEMPTS + 1):
        reference = children.reference_fn(path)
        try:
            check(remote, device="cpu", reference=reference, checked=checked)
            return
        except (ChildFailed, checkers.CheckFailed) as failure:
            cause = failure if isinstance(failure, ChildFailed) else failure.__cause__
            if reference.child.alive or not isinstance(cause, ChildFailed):
                raise
            what = f"the grader's reference process failed during {name} ({cause.reason})"
            if attempt == REFERENCE_ATTEMPTS:
                raise GraderFailed(f"{what}, {REFERENCE_ATTEMPTS} times") from None
            children.problems.append(f"{what}: it was started again and the check run again")
