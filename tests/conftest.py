"""Shared test helpers: one assertion helper that reports the largest error, and device parametrisation.

The only conftest.py of the tests: test files import helpers from it (``from conftest import assert_close``),
and a second conftest.py in a sub-folder would be imported under the same name and shadow this one for every
test collected after it (pytest's default import mode; tests/test_layers.py checks there is one).

How ``make test`` spreads the suite over the CPUs (``pytest -n auto``, pytest-xdist with ``--dist loadgroup``, set
in pyproject.toml), decided here (``pytest_collection_modifyitems``):

- A test file is one unit of work: all its tests run in one worker process, one after the other, so a
  module-scoped fixture (a graded class, a server) is made once. A file marked ``spread`` (``pytestmark =
  pytest.mark.spread``: its tests share nothing costly) hands out each test on its own instead.
- Files that must not run beside each other share a named group (``pytest.mark.xdist_group("sandbox")``): one
  worker runs the whole group, one test at a time. ``sandbox``: children as ``Sandbox()``'s default uid (one
  uid's process limit and keyring are shared by every process of that uid); ``browser``: every file with a test
  marked ``browser`` (a JupyterLab server and Chromium each: two at once starve a 2-core machine's pages).
- The longest units are handed out first, by the seconds ``tests/durations.json`` gives each (what a run with
  ``--store-durations`` measured: a unit's setups, calls and teardowns), so that no long unit starts late and the
  short ones fill the end (two workers finish together). A unit it does not list yet counts as
  ``UNLISTED_SLOW_UNIT`` seconds when it has a ``slow`` test, as none otherwise. Refresh the file after adding or
  changing a long test: ``.venv/bin/python -m pytest -q -n auto --store-durations [FILES]`` (the units run are
  updated, the others kept). Only the order depends on it, never an outcome.
- Each worker runs torch on one thread: as many workers as CPUs, each on its own.
"""

from __future__ import annotations

import fcntl
import importlib
import json
import os
import shutil
import stat
import subprocess
import sys
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType

import pytest
import torch

from posref.grading.speed.timing import single_thread

DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
DURATIONS = Path(__file__).with_name("durations.json")
UNLISTED_SLOW_UNIT = 60.0


def _in_a_worker(config: pytest.Config) -> bool:
    """Whether this process is one of pytest-xdist's workers (not a plain run, not the controller)."""
    return hasattr(config, "workerinput")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--store-durations",
        action="store_true",
        help="with -n: write each unit's seconds to tests/durations.json, the order of later runs (tests/conftest.py)",
    )


class _UnitSeconds:
    """The seconds of each unit of work run, summed from the reports the workers send, entered in ``DURATIONS``.

    A worker names a grouped test ``path::name@group`` (pytest-xdist's loadgroup) and a spread one by its id."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = defaultdict(float)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        self.seconds[report.nodeid.rsplit("@", 1)[-1]] += report.duration

    def pytest_sessionfinish(self) -> None:
        listed = {**json.loads(DURATIONS.read_text()), **self.seconds}
        longest_first = sorted(listed.items(), key=lambda unit: -unit[1])
        DURATIONS.write_text(json.dumps({unit: round(s, 1) for unit, s in longest_first}, indent=0) + "\n")


def _session_of_its_own() -> None:
    """Make this worker the leader of a new session (``setsid``), with everything it starts.

    Linux's autogroup scheduling (``kernel.sched_autogroup_enabled``, on in common distributions) shares a busy
    CPU between sessions, not processes: the workers of one ``pytest -n`` run, one session, shared a single share of
    a loaded machine, however many they were (two busy loops in one session got 0.5 s of CPU each in 19 s, one in a
    session of its own 3.9 s, beside the other helpers' runs at load 22). A session each makes ``-n`` workers
    ``-n`` shares. A worker ends with the run all the same (execnet closes its channel; Ctrl-C in the terminal
    stops the controller, which stops the workers)."""
    try:
        os.setsid()
    except OSError:  # already the leader of a process group (a worker started some other way)
        pass


def pytest_configure(config: pytest.Config) -> None:
    if _in_a_worker(config):
        torch.set_num_threads(1)
        _session_of_its_own()
    elif config.getoption("store_durations"):
        if not config.getoption("numprocesses", None):
            raise pytest.UsageError("--store-durations measures the units of a run with -n (pytest-xdist)")
        config.pluginmanager.register(_UnitSeconds())


def _file(item: pytest.Item) -> str:
    return item.nodeid.split("::")[0]


def _unit(item: pytest.Item) -> str:
    """The unit of work an item belongs to: its group, or (a test of a spread file) the test itself."""
    group = item.get_closest_marker("xdist_group")
    return group.args[0] if group else item.nodeid


@pytest.hookimpl(tryfirst=True)  # before xdist's own hook, which reads the groups
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if not _in_a_worker(config):
        return
    browser_files = {_file(item) for item in items if item.get_closest_marker("browser")}
    for item in items:
        if _file(item) in browser_files:
            item.add_marker(pytest.mark.xdist_group("browser"))
        elif item.get_closest_marker("xdist_group") is None and item.get_closest_marker("spread") is None:
            item.add_marker(pytest.mark.xdist_group(item.path.stem))  # the file (pytest needs unique names)
    slow = {_unit(item) for item in items if item.get_closest_marker("slow")}
    listed = json.loads(DURATIONS.read_text())

    def seconds(item: pytest.Item) -> float:
        unit = _unit(item)
        return listed.get(unit, UNLISTED_SLOW_UNIT if unit in slow else 0.0)

    items.sort(key=seconds, reverse=True)  # stable: the collected order among equals


def assert_close(
    actual: torch.Tensor, expected: torch.Tensor, *, atol: float, rtol: float = 0.0, what: str = ""
) -> None:
    """Assert ``|actual - expected| <= atol + rtol * |expected|`` elementwise, reporting the worst element."""
    assert actual.shape == expected.shape, f"{what}: shape {tuple(actual.shape)} != {tuple(expected.shape)}"
    a, e = actual.detach().double().cpu(), expected.detach().double().cpu()
    err = (a - e).abs()
    bound = atol + rtol * e.abs()
    if not bool((err <= bound).all()):
        idx = tuple(int(i) for i in torch.nonzero(err > bound)[0])
        raise AssertionError(
            f"{what}: max abs error {err.max().item():.3e}; first failure at {idx}: "
            f"got {a[idx].item():.8g}, expected {e[idx].item():.8g} (atol={atol}, rtol={rtol})"
        )


def _made_once_per_run(
    request: pytest.FixtureRequest, factory: pytest.TempPathFactory, name: str, make: Callable[[Path], None]
) -> Path:
    """The folder ``name``, made by ``make(folder)`` once for the whole run: the first of pytest-xdist's workers to
    ask makes it under a lock, the others wait and use it (their temporary folders are siblings). It is only read:
    a test copies it to change it."""
    base = factory.getbasetemp()
    root = base.parent if _in_a_worker(request.config) else base
    folder = root / name
    with open(root / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not folder.is_dir():
            scratch = root / f"{name}-{os.getpid()}"  # a make that fails half-way leaves no folder behind
            shutil.rmtree(scratch, ignore_errors=True)
            make(scratch)
            scratch.rename(folder)
    return folder


def demo_environment(monkeypatch: pytest.MonkeyPatch, course: Path) -> None:
    """The course folder ``course`` with the autograder's demo assignment (``autograder/demo/source``) as its source."""
    monkeypatch.setenv("POSREF_COURSE_DIR", str(course))
    monkeypatch.setenv("POSREF_SOURCE_DIR", "autograder/demo/source")
    monkeypatch.setenv("POSREF_RELEASE_DIR", str(course / "release"))


def _released_once(
    request: pytest.FixtureRequest, factory: pytest.TempPathFactory, assignment: str, source: str
) -> Path:
    """A course folder with ``assignment`` of the source folder ``source`` (relative to the repository) released
    into its ``release/`` by the course's ``release``, made once for the run (``_made_once_per_run``)."""

    def release_into(course: Path) -> None:
        from autograder.release.assignment import release

        with pytest.MonkeyPatch.context() as mp:
            demo_environment(mp, course)
            mp.setenv("POSREF_SOURCE_DIR", source)
            release(assignment)

    return _made_once_per_run(request, factory, f"released-{assignment}", release_into)


@pytest.fixture(scope="session")
def released_demo(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A course folder with the demo assignment (positions) released, made once for the run: copy it
    (``shutil.copytree``) to grade in it. nbgrader takes seconds of CPU to release, a minute on a loaded machine."""
    return _released_once(request, tmp_path_factory, "positions", "autograder/demo/source")


def released_assignment(
    request: pytest.FixtureRequest, factory: pytest.TempPathFactory, assignment: str
) -> Path:
    """A course folder with the course's ``assignment`` released from ``solutions/`` (its gradebook, ``release/``),
    made once for the run: copy it to use it. A release is 5 s of CPU in the test's process (nbgrader's in a child),
    7-8 s as ``python -m autograder release`` (a Python start more), half a minute at load 16."""
    return _released_once(request, factory, assignment, "solutions")


@pytest.fixture(scope="session")
def released_01_order(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``released_assignment`` of 01_order, the assignment most tests release."""
    return released_assignment(request, tmp_path_factory, "01_order")


@pytest.fixture(scope="session")
def empty_gradebook(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An empty nbgrader gradebook for the autograder's tests, made once: nbgrader takes seconds to make one
    (it runs alembic)."""
    from nbgrader.api import Gradebook

    from autograder.course import tools_on_path

    path = tmp_path_factory.mktemp("gradebook") / "gradebook.db"
    with tools_on_path(), Gradebook(f"sqlite:///{path}"):
        pass
    return path


@pytest.fixture
def one_thread() -> Iterator[None]:
    """Tiny models train and evaluate fastest on one thread; a second thread stalls on a busy machine."""
    with single_thread():
        yield


@pytest.fixture(params=DEVICES)
def device(request: pytest.FixtureRequest) -> str:
    return request.param


@contextmanager
def fresh_rope_triton(*, interpret: bool) -> Iterator[ModuleType]:
    """``posref.kernels.rope_triton`` imported afresh: kernels run by Triton's interpreter (on CPU tensors) when
    ``interpret``, compiled otherwise. Triton reads ``TRITON_INTERPRET`` when a kernel is decorated, i.e. at
    import; afterwards the module is forgotten and whatever was imported before is put back, so no other test
    meets an interpreted kernel."""
    import posref.kernels

    package = posref.kernels.__dict__
    saved = sys.modules.pop("posref.kernels.rope_triton", None), package.pop("rope_triton", None)
    saved_env = os.environ.get("TRITON_INTERPRET")
    try:
        if interpret:
            os.environ["TRITON_INTERPRET"] = "1"
        else:
            os.environ.pop("TRITON_INTERPRET", None)
        module = importlib.import_module("posref.kernels.rope_triton")
        yield module
    finally:
        if saved_env is None:
            os.environ.pop("TRITON_INTERPRET", None)
        else:
            os.environ["TRITON_INTERPRET"] = saved_env
        sys.modules.pop("posref.kernels.rope_triton", None)
        package.pop("rope_triton", None)
        if saved[0] is not None:
            sys.modules["posref.kernels.rope_triton"], package["rope_triton"] = saved


def python_shown_to(uid: int, also: tuple[Path, ...] = ()) -> list[str] | None:
    """As root: the command prefix (bubblewrap, as root, making a mount namespace) under which the user ``uid`` runs
    this environment's Python as it is, and reads the folders ``also`` (a checkout): each of them that sits in a
    folder others cannot enter (root's home, where the course's CI keeps pyenv's Python) shown on its own, that folder
    covered by an empty one. Put ``setpriv`` (dropping to ``uid``) after it. [] where they can run it as it is; None
    where that cannot be done here. (Where its folder is closed to them, a Python may still start, as another: the
    system's libpython and standard library; so the probe compares where it comes from.)"""
    drop = ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "--"]
    probe = [*drop, sys.executable, "-c", "import sys; print(sys.base_prefix)"]
    readable = [str(folder) for folder in also]

    def runs(prefix: list[str]) -> bool:
        out = subprocess.run([*prefix, *probe], capture_output=True, text=True)
        listed = subprocess.run([*prefix, *drop, "ls", *readable], capture_output=True) if readable else out
        return out.returncode == 0 and out.stdout.strip() == sys.base_prefix and listed.returncode == 0

    if runs([]):
        return []
    if shutil.which("bwrap") is None:
        return None
    prefix, covered, shown = ["bwrap", "--dev-bind", "/", "/"], set(), []
    for path in sorted({os.path.realpath(p) for p in (sys.base_prefix, sys.prefix, *also)}):
        closed = [p for p in reversed(Path(path).parents) if not os.stat(p).st_mode & stat.S_IXOTH]
        if not closed or any(Path(path).is_relative_to(folder) for folder in shown):
            continue
        top = closed[0]
        if top not in covered:
            prefix += ["--perms", "0755", "--tmpfs", str(top)]
            covered.add(top)
        for parent in [p for p in reversed(Path(path).parents) if top in p.parents]:
            prefix += ["--perms", "0755", "--dir", str(parent)]
        prefix += ["--ro-bind", path, path]
        shown.append(path)
    return prefix if runs(prefix) else None
