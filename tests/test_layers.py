"""design.md's dependency arrows, checked on the source: every import of posref/ and autograder/, the lazy ones
inside functions included, read with ``ast`` (nothing is imported to find them).

The layers: the core (the modules at the top of posref/) imports nothing of the course; the fast backends
(posref.kernels) import the core but never posref.rope, which calls them; the lab imports the core; the
grading package (posref.grading) never imports training, the explorers or the notebooks' flags (grading never
retrains), and shows three concerns over a shared base (cases, report, rules): the checkers of each notebook
(posref.grading.checks) import neither the speed machinery nor the score of record's child; the speed machinery
(posref.grading.speed) imports neither a notebook's checkers nor the child; the child (posref.grading.child)
imports no checker; the shared base imports none of the three. No posref module imports the autograder.

The autograder's rooms (autograder/__init__.py draws them) import only the rooms below them, ``AUTOGRADER_ARROWS``,
which each room's ``__init__`` states on its last line; what a grading worker runs imports nothing of the
instructor's side; nothing imports the autograder's command line but ``python -m autograder``. No import cycle
among the project's modules. The registry's conventions: every scaling method has a checker in posref.grading or
is listed below as having no exercise, and every speed checker has its reference.
"""

from __future__ import annotations

import ast
import importlib
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import pytest

import posref
import posref.grading

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("posref", "autograder")

# posref's top-level modules that are not the core: the package's re-exports, its tools and the notebooks' flags
NOT_CORE = {
    "posref",
    "posref.__main__",
    "posref.cli",
    "posref.bench",
    "posref.bench_budgets",
    "posref.notebook",
}
SUBPACKAGES = {"posref.kernels", "posref.lab", "posref.grading", "posref.explorers"}

# Scaling methods without a graded exercise of their own, and why. Adding a method to SCALING_METHODS means
# writing its checker (check_rope_frequencies_<name>) or adding it here.
NO_EXERCISE = {
    "default": "plain RoPE: notebook 04 grades rope_cos_sin and apply_rope",
    "longrope": "notebook 07 runs a piece of LongRoPE's search (posref.longrope_search); no frequency exercise",
    "dynamic": "notebook 07 gives its rule as code to read and run (test_checkers holds it to the library's)",
    "llama3": "notebook 07 gives its rule as code to read and run (test_checkers holds it to the library's)",
}


@dataclass(frozen=True)
class Import:
    source: str  # the importing module, e.g. "posref.rope"
    target: str  # the imported project module, e.g. "posref.kernels.rope_triton"
    where: str  # "posref/rope.py:133"
    lazy: bool  # inside a function

    def __str__(self) -> str:
        return (
            f"{self.where}: {self.source} imports {self.target}{' (inside a function)' if self.lazy else ''}"
        )


def module_names(root: Path, packages: Iterable[str] = PACKAGES) -> dict[str, Path]:
    """Every module of the given packages under ``root``: dotted name -> file."""
    modules = {}
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            parts = path.relative_to(root).with_suffix("").parts
            modules[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return modules


def _resolve(module: str, is_package: bool, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    base = module.split(".")
    base = base if is_package else base[:-1]
    base = base[: len(base) - node.level + 1]
    return ".".join(base + ([node.module] if node.module else []))


def _targets(node: ast.AST, module: str, is_package: bool, modules: dict[str, Path]) -> list[str]:
    """The project modules one AST node imports (a name imported from a package counts as its submodule)."""
    if isinstance(node, ast.Import):
        names = [alias.name for alias in node.names]
    elif isinstance(node, ast.ImportFrom):
        parent = _resolve(module, is_package, node)
        names = [f"{parent}.{a.name}" if f"{parent}.{a.name}" in modules else parent for a in node.names]
    elif (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute | ast.Name)
        and (node.func.attr if isinstance(node.func, ast.Attribute) else node.func.id) == "import_module"
        and node.args
        and isinstance(node.args[0], ast.Constant)
        and isinstance(node.args[0].value, str)
    ):
        names = [node.args[0].value]
    else:
        return []
    found = []
    for name in names:
        parts = name.split(".")
        prefixes = [".".join(parts[:i]) for i in range(len(parts), 0, -1)]
        found += [next(p for p in prefixes if p in modules)] if any(p in modules for p in prefixes) else []
    return found


def project_imports(root: Path = ROOT, packages: Iterable[str] = PACKAGES) -> list[Import]:
    """Every import of a project module by a project module, lazy ones included."""
    modules = module_names(root, packages)
    edges = []
    for module, path in modules.items():
        tree = ast.parse(path.read_text(), filename=str(path))
        lazy_nodes = {
            id(inner)
            for outer in ast.walk(tree)
            if isinstance(outer, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda)
            for inner in ast.walk(outer)
        }
        for node in ast.walk(tree):
            for target in dict.fromkeys(_targets(node, module, path.name == "__init__.py", modules)):
                where = f"{path.relative_to(root).as_posix()}:{getattr(node, 'lineno', 0)}"
                edges.append(Import(module, target, where, id(node) in lazy_nodes))
    return edges


def layer(module: str) -> str:
    """The layer of a project module: core, kernels, lab, grading, explorers, tools, autograder-cli, autograder."""
    parts = module.split(".")
    if parts[0] == "autograder":
        return "autograder-cli" if module == "autograder.cli" else "autograder"
    if module in NOT_CORE:
        return "tools"
    if len(parts) == 2 and module not in SUBPACKAGES:
        return "core"
    return parts[1]  # kernels, lab, grading, explorers


GRADING_PARTS = ("checks", "speed", "child")


def grading_part(module: str) -> str | None:
    """Within posref.grading: "checks", "speed" or "child" for their modules, "base" for the shared modules
    (cases, report, rules, ...), None for the package's re-exports and for modules outside it."""
    parts = module.split(".")
    if parts[:2] != ["posref", "grading"] or len(parts) == 2:
        return None
    return parts[2] if parts[2] in GRADING_PARTS else "base"


# The autograder's rooms -> the rooms each may import (besides its own modules and the empty package). The
# arrows go one way: test_the_autograders_arrows_go_one_way.
AUTOGRADER_ARROWS = {
    "package": set(),
    "course": set(),
    "intake": {"course"},
    "sandbox": {"course"},
    "editions": {"course"},
    "pages": {"course", "editions"},  # a page speaks the language of the edition a student handed in
    "release": {"course", "editions", "intake"},
    "grading": {"course", "intake", "sandbox", "editions"},
    "analysis": {"course", "editions", "grading"},
    "demo": {"course", "intake", "release", "grading", "pages"},
    "measuring": {"course", "intake", "sandbox", "release", "grading", "demo"},
    "cli": {"course", "intake", "editions", "release", "grading", "pages", "demo", "analysis"},
    "config": {"course", "pages"},
    "main": {"cli"},
}
# the autograder's modules at its top, by room; every other module lives in the folder of its room
AUTOGRADER_TOP = {
    "autograder": "package",
    "autograder.__main__": "main",
    "autograder.cli": "cli",
    "autograder.course": "course",
    "autograder.nbgrader_config": "config",
    "autograder.benchmark": "measuring",
    "autograder.calibrate": "measuring",
}
# what a grading worker runs (it never sees the course folder): of grading, only these modules
WORKER_SIDE = {"autograder.grading.worker", "autograder.grading.record"}


def autograder_room(module: str) -> str | None:
    """The room of an autograder module (its folder, or ``AUTOGRADER_TOP``'s name); None for a module at the top
    that has no room, and for modules outside the autograder."""
    parts = module.split(".")
    if parts[0] != "autograder":
        return None
    if module in AUTOGRADER_TOP:
        return AUTOGRADER_TOP[module]
    return parts[1] if len(parts) > 2 or parts[1] in AUTOGRADER_ARROWS else None


def arrow_violations(edges: Iterable[Import]) -> list[str]:
    """Each import against design.md's arrows, with the rule it breaks."""
    problems = []
    for edge in edges:
        source, target = layer(edge.source), layer(edge.target)
        part_of_source, part_of_target = grading_part(edge.source), grading_part(edge.target)
        room, target_room = autograder_room(edge.source), autograder_room(edge.target)
        rules = [
            (
                source == "core" and target not in ("core", "kernels"),
                "the core imports nothing of the course",
            ),
            (source == "kernels" and edge.target == "posref.rope", "the kernels never import posref.rope"),
            (source == "kernels" and target not in ("core", "kernels"), "the kernels import only the core"),
            (source == "lab" and target not in ("core", "kernels", "lab"), "the lab imports only the core"),
            (
                source == "grading"
                and (edge.target == "posref.lab.train" or target in ("explorers", "tools")),
                "grading never imports training, the explorers or the notebooks' flags",
            ),
            (
                part_of_source == "checks" and part_of_target in ("speed", "child"),
                "the checkers import neither the speed machinery nor the child",
            ),
            (
                part_of_source == "speed" and part_of_target in ("checks", "child"),
                "the speed machinery imports neither a notebook's checkers nor the child",
            ),
            (part_of_source == "child" and part_of_target == "checks", "the child imports no checker"),
            (
                part_of_source == "base" and part_of_target in GRADING_PARTS,
                "grading's shared base imports none of checks, speed and child",
            ),
            (
                source == "explorers" and target not in ("core", "kernels", "lab", "explorers"),
                "the explorers import only the core and the lab",
            ),
            (
                edge.source.startswith("posref") and edge.target.startswith("autograder"),
                "posref never imports the autograder",
            ),
            (
                target == "autograder-cli" and edge.source != "autograder.__main__",
                "nothing imports the autograder's command line",
            ),
            (
                room is not None
                and target_room is not None
                and target_room != room
                and target_room not in AUTOGRADER_ARROWS.get(room, set()) | {"package"},
                f"autograder's {room} imports only {', '.join(sorted(AUTOGRADER_ARROWS.get(room, ()))) or 'itself'}",
            ),
            (
                edge.source in WORKER_SIDE
                and (
                    target_room == "intake" or (target_room == "grading" and edge.target not in WORKER_SIDE)
                ),
                "what a grading worker runs imports nothing of the instructor's side (intake, the rest of grading)",
            ),
        ]
        problems += [f"{edge}: {rule}" for broken, rule in rules if broken]
    return problems


def import_cycles(edges: Iterable[Import]) -> list[list[str]]:
    """The strongly connected components with more than one module (or a module importing itself), by Tarjan."""
    graph: dict[str, set[str]] = {}
    for edge in edges:
        graph.setdefault(edge.source, set()).add(edge.target)
        graph.setdefault(edge.target, set())
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph[node]):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1 or node in graph[node]:
                cycles.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(cycles)


def unchecked_scaling_methods(
    methods: Iterable[str], checkers: Iterable[str], no_exercise: dict
) -> list[str]:
    """A method with neither ``check_rope_frequencies_<name>`` nor a "no exercise" entry; a listed method that
    has a checker after all; a listed method that is not registered."""
    methods, listed = set(methods), set(no_exercise)
    graded = {name for name in methods if f"check_rope_frequencies_{name}" in set(checkers)}
    problems = [
        f"{name}: no checker check_rope_frequencies_{name} and not in NO_EXERCISE"
        for name in sorted(methods - graded - listed)
    ]
    problems += [f"{name}: in NO_EXERCISE but graded" for name in sorted(graded & listed)]
    problems += [f"{name}: in NO_EXERCISE but not in SCALING_METHODS" for name in sorted(listed - methods)]
    return problems


def speed_checkers_without_reference(checkers: Iterable[str], package, grading=None) -> list[str]:
    """A ``check_<name>_speed`` whose reference (its ``reference_path`` ``"module:name"`` where ``grading`` has it
    marked, else ``posref.<name>``) does not exist."""
    problems = []
    for checker in checkers:
        if not (m := re.fullmatch(r"check_(\w+)_speed", checker)):
            continue
        path = getattr(getattr(grading, checker, None), "reference_path", None)
        if path is None:
            if not callable(getattr(package, m.group(1), None)):
                problems.append(f"{checker}: no posref.{m.group(1)}")
            continue
        module, name = path.split(":")
        if not callable(getattr(importlib.import_module(module), name, None)):
            problems.append(f"{checker}: no {module}.{name}")
    return problems


# ---------------------------------------------------------------------------------------------------------------
# The project as it is.


@pytest.fixture(scope="module")
def edges():
    return project_imports()


def test_the_walk_sees_lazy_imports_and_every_layer(edges):
    # the walk itself: rope.py's backend import is lazy, each layer has modules, and there are many edges
    assert any(e.source == "posref.rope" and e.target.startswith("posref.kernels") and e.lazy for e in edges)
    assert {layer(m) for m in module_names(ROOT)} >= {
        "core",
        "kernels",
        "lab",
        "grading",
        "tools",
        "autograder",
    }


def test_imports_follow_the_arrows_of_design_md(edges):
    problems = arrow_violations(edges)
    assert not problems, "imports against design.md's arrows:\n" + "\n".join(problems)


def test_no_import_cycles(edges):
    cycles = import_cycles(edges)
    details = [
        " -> ".join(cycle)
        + "\n    "
        + "\n    ".join(str(e) for e in edges if e.source in cycle and e.target in cycle)
        for cycle in cycles
    ]
    assert not cycles, "import cycles:\n" + "\n".join(details)


def test_every_autograder_module_lives_in_a_room():
    # a new module at the autograder's top, or a new folder, must be given its room and arrows here
    homeless = [m for m in module_names(ROOT, ["autograder"]) if autograder_room(m) not in AUTOGRADER_ARROWS]
    assert not homeless, f"autograder modules without a room in AUTOGRADER_ARROWS: {homeless}"


def test_the_autograders_arrows_go_one_way():
    # the rules themselves: every room they name exists, and no two rooms may import each other, however far apart
    named = set().union(*AUTOGRADER_ARROWS.values())
    assert named <= set(AUTOGRADER_ARROWS), named - set(AUTOGRADER_ARROWS)
    rules = [
        Import(room, other, "AUTOGRADER_ARROWS", False)
        for room, to in AUTOGRADER_ARROWS.items()
        for other in to
    ]
    assert import_cycles(rules) == []


def test_each_room_says_what_it_may_import():
    # a room's folder says what it owns and, on its docstring's last line, what it imports: the rule above
    folders = sorted(p.parent for p in (ROOT / "autograder").glob("*/__init__.py"))
    assert {f.name for f in folders} == set(AUTOGRADER_ARROWS) - set(AUTOGRADER_TOP.values())
    for folder in folders:
        doc = ast.get_docstring(ast.parse((folder / "__init__.py").read_text())) or ""
        last = doc.strip().splitlines()[-1] if doc.strip() else ""
        stated = (
            set(re.findall(r"``(\w+)``", last)) if last.startswith("Imports of the autograder:") else None
        )
        assert stated == AUTOGRADER_ARROWS[folder.name], f"autograder/{folder.name}/__init__.py says {last!r}"


def test_every_scaling_method_has_a_checker_or_no_exercise():
    problems = unchecked_scaling_methods(posref.SCALING_METHODS, posref.grading.__all__, NO_EXERCISE)
    assert not problems, "\n".join(problems)


def test_each_scaling_checker_passes_the_registrys_own_method():
    # a checker that cannot grade the method it is named after (e.g. no cases drawn for it) would be a hollow one
    for name in sorted(set(posref.SCALING_METHODS) - set(NO_EXERCISE)):
        check = getattr(posref.grading, f"check_rope_frequencies_{name}")

        def reference(head_dim, base, params, seq_len=None, name=name):
            return posref.rope_frequencies(
                head_dim, base=base, scaling={"rope_type": name, **params}, seq_len=seq_len
            )

        check(reference)


def test_every_speed_checker_has_its_reference():
    assert any(name.endswith("_speed") for name in posref.grading.__all__)
    problems = speed_checkers_without_reference(posref.grading.__all__, posref, posref.grading)
    assert not problems, "\n".join(problems)


MAX_MODULE_LINES = 600


def test_no_module_of_the_project_is_over_600_lines():
    # a module that long holds several concerns (issue 12 split widgets.py, cli.py and remote.py for that)
    modules = [
        p for package in PACKAGES for p in (ROOT / package).rglob("*.py") if "__pycache__" not in p.parts
    ]
    assert len(modules) > 20
    long = {
        str(p.relative_to(ROOT)): n
        for p in modules
        if (n := len(p.read_text().splitlines())) > MAX_MODULE_LINES
    }
    assert not long, f"modules over {MAX_MODULE_LINES} lines: {long}"


def test_tests_have_unique_basenames_and_one_conftest():
    # pytest's default import mode imports a test folder's files by basename: two files of one name (two
    # conftest.py included) shadow each other when the whole suite runs, though each folder alone passes
    files = [p for p in (ROOT / "tests").rglob("*.py") if "__pycache__" not in p.parts]
    names = [p.name for p in files]
    repeated = sorted({str(p.relative_to(ROOT)) for p in files if names.count(p.name) > 1})
    assert not repeated, f"test files that share a basename: {repeated}"
    assert not list((ROOT / "tests").rglob("__init__.py"))


# ---------------------------------------------------------------------------------------------------------------
# The rules fail on planted violations (a checker of conventions that cannot fail would be no check).

PLANTED = {
    "posref/__init__.py": "",
    "posref/_checks.py": "",
    "posref/rope.py": "def backend():\n    from posref.grading import cases\n",
    "posref/scaling.py": "from . import relative\n",
    "posref/relative.py": "import posref.scaling\n",
    "posref/kernels/__init__.py": "from posref._checks import x\n",
    "posref/kernels/fast.py": "from posref.rope import apply_rope\n",
    "posref/lab/__init__.py": "",
    "posref/lab/train.py": "import importlib\nmodule = importlib.import_module('posref.notebook')\n",
    "posref/notebook.py": "",
    "posref/grading/__init__.py": "",
    "posref/grading/cases.py": "def f():\n    from ..lab import train\n",
    "posref/grading/report.py": "from posref.grading.speed import timing\n",
    "posref/grading/checks/__init__.py": "",
    "posref/grading/checks/rope.py": "from posref.grading.speed.rope import APPLY_ROPE_SPEED\n",
    "posref/grading/checks/lab.py": "from ..child import scratch\n",
    "posref/grading/speed/__init__.py": "",
    "posref/grading/speed/rope.py": "from posref.grading.checks import lab\n",
    "posref/grading/speed/timing.py": "from posref.grading.child.forkserver import ForkServer\n",
    "posref/grading/child/__init__.py": "",
    "posref/grading/child/forkserver.py": "",
    "posref/grading/child/scratch.py": "from autograder.sandbox.sandbox import submission_files\n",
    "posref/grading/child/remote.py": "from posref.grading.speed.timing import Chain\nfrom posref.grading.checks import lab\n",
    "posref/explorers/__init__.py": "from posref.grading import cases\n",
    "autograder/__init__.py": "",
    "autograder/__main__.py": "from autograder.cli import main\n",
    "autograder/cli.py": "from autograder.grading import record\nfrom autograder.editions import notebook\n",
    "autograder/course.py": "def due():\n    from autograder.intake import late\n",
    "autograder/nbgrader_config.py": "from autograder.pages.sanitize import CleanMarkdownExporter\n",
    "autograder/benchmark.py": "from autograder.demo import build\n",
    "autograder/intake/__init__.py": "",
    "autograder/intake/late.py": "from autograder import course\n",
    "autograder/intake/submissions.py": "from autograder.grading.grade import autograde\nfrom . import late\n",
    "autograder/sandbox/__init__.py": "",
    "autograder/sandbox/sandbox.py": "def f():\n    from autograder.editions import notebook\n",
    "autograder/editions/__init__.py": "",
    "autograder/editions/notebook.py": "",
    "autograder/pages/__init__.py": "",
    "autograder/pages/sanitize.py": "",
    "autograder/pages/lab_server.py": "import importlib\nimportlib.import_module('autograder.grading.grade')\n",
    "autograder/release/__init__.py": "",
    "autograder/release/assignment.py": "from autograder.pages import sanitize\nfrom autograder.intake import late\n",
    "autograder/grading/__init__.py": "",
    "autograder/grading/grade.py": "from ..demo import build\nfrom autograder.grading import worker\n",
    "autograder/grading/gradebook.py": "",
    "autograder/grading/record.py": "import autograder.cli\nfrom autograder.sandbox import sandbox\n",
    "autograder/grading/worker.py": "from autograder.grading import gradebook\nfrom autograder.intake import late\n"
    "from autograder.grading import record\n",
    "autograder/demo/__init__.py": "",
    "autograder/demo/build.py": "from autograder import benchmark\n",
}


@pytest.fixture
def planted(tmp_path):
    for name, text in PLANTED.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return project_imports(tmp_path)


def test_planted_arrow_violations_are_each_reported(planted):
    problems = "\n".join(arrow_violations(planted))
    expected = [
        "posref/rope.py:2: posref.rope imports posref.grading.cases (inside a function): the core imports nothing",
        "posref/kernels/fast.py:1: posref.kernels.fast imports posref.rope: the kernels never import posref.rope",
        "posref/lab/train.py:2: posref.lab.train imports posref.notebook: the lab imports only the core",
        "posref/grading/cases.py:2: posref.grading.cases imports posref.lab.train (inside a function): grading never",
        "posref/explorers/__init__.py:1: posref.explorers imports posref.grading.cases: the explorers import only",
        "posref/grading/checks/rope.py:1: posref.grading.checks.rope imports posref.grading.speed.rope: the checkers",
        "posref/grading/checks/lab.py:1: posref.grading.checks.lab imports posref.grading.child.scratch: the checkers",
        "posref/grading/speed/rope.py:1: posref.grading.speed.rope imports posref.grading.checks.lab: the speed",
        "posref/grading/speed/timing.py:1: posref.grading.speed.timing imports posref.grading.child.forkserver: the",
        "posref/grading/child/remote.py:2: posref.grading.child.remote imports posref.grading.checks.lab: the child",
        "posref/grading/report.py:1: posref.grading.report imports posref.grading.speed.timing: grading's shared",
        "posref/grading/child/scratch.py:1: posref.grading.child.scratch imports autograder.sandbox.sandbox: posref "
        "never imports the autograder",
        "autograder/grading/record.py:1: autograder.grading.record imports autograder.cli: nothing imports the",
        "autograder/grading/record.py:1: autograder.grading.record imports autograder.cli: autograder's grading",
        "autograder/course.py:2: autograder.course imports autograder.intake.late (inside a function): autograder's "
        "course imports only itself",
        "autograder/intake/submissions.py:1: autograder.intake.submissions imports autograder.grading.grade: "
        "autograder's intake imports only course",
        "autograder/sandbox/sandbox.py:2: autograder.sandbox.sandbox imports autograder.editions.notebook (inside a "
        "function): autograder's sandbox imports only course",
        "autograder/pages/lab_server.py:2: autograder.pages.lab_server imports autograder.grading.grade: autograder's "
        "pages imports only course, editions",
        "autograder/release/assignment.py:1: autograder.release.assignment imports autograder.pages.sanitize: "
        "autograder's release imports only course, editions, intake",
        "autograder/grading/grade.py:1: autograder.grading.grade imports autograder.demo.build: autograder's grading "
        "imports only course, editions, intake, sandbox",
        "autograder/grading/worker.py:1: autograder.grading.worker imports autograder.grading.gradebook: what a "
        "grading worker runs imports nothing of the instructor's side",
        "autograder/grading/worker.py:2: autograder.grading.worker imports autograder.intake.late: what a grading "
        "worker runs imports nothing of the instructor's side",
        "autograder/demo/build.py:1: autograder.demo.build imports autograder.benchmark: autograder's demo imports "
        "only course, grading, intake, pages, release",
    ]
    for line in expected:
        assert line in problems, f"not reported: {line}\nreported:\n{problems}"
    # what the rules allow is not reported: python -m autograder may import its command line, the command line the
    # rooms, the measuring tools the demo, the configuration the pages, a worker the record, a room its own modules
    allowed = [
        "autograder/__main__.py:",
        "autograder/cli.py:",
        "autograder/benchmark.py:",
        "autograder/nbgrader_config.py:",
        "autograder/intake/late.py:",
        "autograder/intake/submissions.py:2:",
        "autograder/release/assignment.py:2:",
        "autograder/grading/grade.py:2:",
        "autograder/grading/record.py:2:",
        "autograder/grading/worker.py:3:",
    ]
    reported = [line for line in problems.splitlines() if line.startswith(tuple(allowed))]
    assert not reported, "reported, though the rules allow it:\n" + "\n".join(reported)
    assert "posref/kernels/__init__.py" not in problems  # the kernels may import the core's _checks
    assert (
        "posref/grading/child/remote.py:1" not in problems
    )  # the child runs timed rounds: it may import speed


def test_planted_cycles_are_found_lazy_and_relative_imports_included(planted):
    assert import_cycles(planted) == [
        ["autograder.benchmark", "autograder.demo.build"],
        ["autograder.cli", "autograder.grading.record"],
        ["autograder.course", "autograder.intake.late"],
        ["posref.relative", "posref.scaling"],
    ]


def test_a_method_without_checker_or_listing_is_reported():
    checkers = ["check_rope_frequencies_linear", "check_apply_rope"]
    assert unchecked_scaling_methods(["linear", "default"], checkers, {"default": "why"}) == []
    assert unchecked_scaling_methods(["linear", "default", "new"], checkers, {"default": "why"}) == [
        "new: no checker check_rope_frequencies_new and not in NO_EXERCISE"
    ]
    assert unchecked_scaling_methods(["linear"], checkers, {"linear": "why", "gone": "why"}) == [
        "linear: in NO_EXERCISE but graded",
        "gone: in NO_EXERCISE but not in SCALING_METHODS",
    ]


def test_a_speed_checker_without_reference_is_reported():
    assert speed_checkers_without_reference(["check_apply_rope_speed", "check_alibi_bias"], posref) == []
    assert speed_checkers_without_reference(["check_rope_fast_speed"], posref) == [
        "check_rope_fast_speed: no posref.rope_fast"
    ]
