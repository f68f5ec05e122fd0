"""The import's check of student ids for look-alikes (autograder/intake/lookalike.py): Unicode's confusable
skeletons and scripts, and that what ``make lab`` installs (``.[course]``) is all the import needs (it needed PyICU,
which only ``.[dev]`` installed and which PyPI has as source alone: a compiler and ICU's headers)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
import textwrap
import zipfile
from importlib.metadata import PackageNotFoundError, distribution, packages_distributions
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from autograder.intake import lookalike

REPO = Path(__file__).resolve().parents[2]

# pairs UTS #39's data makes confusable (confusables.txt: each side's prototypes are the same) and pairs it does not,
# each as ICU's SpoofChecker (PyICU 2.17, Unicode 15.0) says of them too
ALIKE = [
    ("smith", "srnith"),  # m -> rn
    ("smithjane", "smithјane"),  # U+0458 CYRILLIC SMALL LETTER JE
    ("smithjane", "smithjаne"),  # U+0430 CYRILLIC SMALL LETTER A
    ("smithjane", "ѕmithjane"),  # U+0455 CYRILLIC SMALL LETTER DZE
    ("paypal", "pаypаl"),
    ("lee1", "Iee1"),  # capital I, small l and one are one prototype
    ("lee1", "1eel"),
    ("O0", "00"),  # capital O and zero
    ("li", "lı"),  # U+0131 LATIN SMALL LETTER DOTLESS I
    ("alpha", "αlpha"),  # U+03B1 GREEK SMALL LETTER ALPHA
    ("ѐ", "ѐ"),  # precomposed and decomposed (NFD first)
    # a prototype of several code points whose own code points have look-alikes (O and 0, l and 1 and I)
    ("COEUR", "CŒUR"),  # U+0152 LATIN CAPITAL LIGATURE OE -> "OE"
    ("llama", "ǁama"),  # U+01C1 LATIN LETTER LATERAL CLICK -> "ll"
    ("blake", "Ыake"),  # U+042B CYRILLIC CAPITAL LETTER YERU -> "bl"
]
UNLIKE = [
    ("bob", "b0b"),
    ("smith", "smyth"),
    ("alice", "alicia"),
    ("o0", "O0"),
    ("w", "vv"),
    ("cl", "d"),
    ("wei", "wel"),
]


@pytest.mark.parametrize(("a", "b"), ALIKE)
def test_ids_that_look_alike_have_one_skeleton(a, b):
    assert lookalike.skeleton(a) == lookalike.skeleton(b)


@pytest.mark.parametrize(("a", "b"), UNLIKE)
def test_ids_that_do_not_have_two(a, b):
    assert lookalike.skeleton(a) != lookalike.skeleton(b)


def test_a_skeleton_is_its_own_skeleton_and_the_scripts_leave_digits_and_marks_out():
    for a, _ in ALIKE:
        assert lookalike.skeleton(lookalike.skeleton(a)) == lookalike.skeleton(a)
    # each prototype stands for itself, as in Unicode's data: none of its code points is mapped to another
    prototypes = lookalike._prototypes()
    assert [p for p in prototypes.values() if "".join(prototypes.get(c, c) for c in p) != p] == []
    assert lookalike.scripts("smithјane") == {"LATIN", "CYRILLIC"}
    assert lookalike.scripts("wei_li-2.0@") == {"LATIN"}
    assert lookalike.scripts("王小明") == {"HAN"} and lookalike.scripts("e\u0301") == {"LATIN"}
    assert lookalike.scripts("") == set()


def _course_requirements() -> set[str]:
    """The distributions ``pip install -e '.[course]'`` installs: posref's requirements with the extra
    ``course``, and theirs, as installed here (their markers evaluated on this machine)."""
    todo, seen, names = [("posref", frozenset({"course"}))], set(), set()
    while todo:
        name, extras = todo.pop()
        if (name, extras) in seen:
            continue
        seen.add((name, extras))
        names.add(canonicalize_name(name))
        try:
            requires = distribution(name).requires or []
        except PackageNotFoundError:  # an optional dependency not installed here: not imported either
            continue
        for text in requires:
            requirement = Requirement(text)
            marker = requirement.marker
            if marker is None or any(marker.evaluate({"extra": extra}) for extra in {"", *extras}):
                todo.append((requirement.name, frozenset(requirement.extras)))
    return names


IMPORTED = """
import atexit, json, runpy, sys
before, written = set(sys.modules), sys.argv[1]
atexit.register(lambda: json.dump(
    {name: getattr(m, "__file__", None) for name, m in list(sys.modules.items()) if name not in before},
    open(written, "w"),
))
sys.argv = ["autograder", *sys.argv[2:]]
runpy.run_module("autograder", run_name="__main__")
"""


def test_the_instructors_import_needs_only_what_make_lab_installs(tmp_path):
    """``python -m autograder import`` of a Canvas download with a look-alike id (the check runs), as the
    instructor runs it: every module it imports is the standard library's, the course's, or a distribution that
    ``.[course]`` installs."""
    download = tmp_path / "download.zip"
    with zipfile.ZipFile(download, "w") as archive:
        for name in ("smithjane_111_1_02_absolute.ipynb", "smithјane_222_2_02_absolute.ipynb"):
            archive.writestr(name, json.dumps({"cells": []}))
    modules = tmp_path / "modules.json"
    env = {**os.environ, "POSREF_COURSE_DIR": str(tmp_path / "course")}
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(IMPORTED), str(modules), "import", str(download)],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert "looks like the student id 'smithjane' but is another" in done.stderr, done.stderr[-3000:]
    owners = packages_distributions()
    course = _course_requirements()
    stdlib = Path(sysconfig.get_paths()["stdlib"]).resolve()
    installed = [Path(p).resolve() for p in sys.path if p.endswith("site-packages")]
    outside = {}
    for module, file in json.loads(modules.read_text()).items():
        if file is None:  # built in, or a namespace package (its modules have files)
            continue
        path = Path(file).resolve()
        folder = next((f for f in installed if path.is_relative_to(f)), None)
        if folder is None:  # the standard library's, or the course's own (autograder, posref)
            assert path.is_relative_to(stdlib) or path.is_relative_to(REPO), (module, file)
            continue
        top = path.relative_to(folder).parts[0].split(".")[0]  # a package's folder, a module's file
        dists = {canonicalize_name(d) for d in owners.get(top, [])}
        if not dists & course:
            outside[module] = sorted(dists) or [str(path)]
    assert not outside, f"the import needs what make lab does not install: {outside}"
