"""Check the wheels carried to the GPU machine: one version per package, and every requirement met.

    python tools/wheelcheck.py .whl               # here: the wheels in .whl/ and .whl/fallback/ together meet
                                                  # every requirement of each other, for CPython 3.12 on x86-64
                                                  # Linux, and hold each package of tools/gpu-wheels.in
    python tools/wheelcheck.py .whl --installed   # there, after installing .whl/*.whl: every requirement of
                                                  # those wheels is met by what this Python imports; prints
                                                  # the fallback wheels that must be installed for the rest

``.whl/`` holds the wheels the image lacks; ``.whl/fallback/`` those of packages the image already has (carried
in case the image's version is too old for a requirement). Exit status 1, with each problem named, when
a check fails. Needs ``packaging`` (in pip's environment here, in the image there).
"""

from __future__ import annotations

import argparse
import importlib.metadata
import re
import sys
import zipfile
from dataclasses import dataclass
from email.parser import Parser
from pathlib import Path

from packaging.markers import default_environment
from packaging.requirements import Requirement
from packaging.version import Version

# The GPU image's interpreter: markers are evaluated for it, not for the Python running this check.
IMAGE_ENV = {
    "implementation_name": "cpython",
    "implementation_version": "3.12.3",
    "os_name": "posix",
    "platform_machine": "x86_64",
    "platform_python_implementation": "CPython",
    "platform_system": "Linux",
    "python_full_version": "3.12.3",
    "python_version": "3.12",
    "sys_platform": "linux",
    "extra": "",
}


def normalise(name: str) -> str:
    """PEP 503 name: lower case, runs of ``-_.`` as one ``-``."""
    return re.sub(r"[-_.]+", "-", name).lower()


@dataclass(frozen=True)
class Wheel:
    path: Path
    name: str
    version: Version
    requires: tuple[Requirement, ...]


def read_wheel(path: Path) -> Wheel:
    """Name, version and ``Requires-Dist`` of a wheel, from its ``*.dist-info/METADATA``."""
    with zipfile.ZipFile(path) as zf:
        meta_name = next(n for n in zf.namelist() if n.count("/") == 1 and n.endswith(".dist-info/METADATA"))
        meta = Parser().parsestr(zf.read(meta_name).decode("utf-8"))
    requires = tuple(Requirement(r) for r in meta.get_all("Requires-Dist") or ())
    return Wheel(path, normalise(meta["Name"]), Version(meta["Version"]), requires)


def needed(wheel: Wheel, env: dict[str, str]) -> list[Requirement]:
    """The requirements of ``wheel`` that apply in ``env`` with no extra asked for."""
    return [r for r in wheel.requires if r.marker is None or r.marker.evaluate(env)]


def check_carried(folder: Path, top_level: list[Requirement]) -> list[str]:
    """Problems with the wheels in ``folder`` and ``folder/fallback`` as one set (empty list: none)."""
    wheels = [read_wheel(p) for p in sorted(folder.glob("*.whl")) + sorted(folder.glob("fallback/*.whl"))]
    problems, by_name = [], {}
    for w in wheels:
        if w.name in by_name:
            problems.append(f"two versions of {w.name}: {by_name[w.name].path.name} and {w.path.name}")
        by_name[w.name] = w
    for req in top_level:
        if normalise(req.name) not in by_name:
            problems.append(f"{req} is asked for in tools/gpu-wheels.in but no wheel of it is in {folder}")
    for w in wheels:
        for req in needed(w, IMAGE_ENV):
            have = by_name.get(normalise(req.name))
            if have is None:
                problems.append(f"{w.name} {w.version} needs {req}: no wheel of it in {folder}")
            elif not req.specifier.contains(have.version, prereleases=True):
                problems.append(f"{w.name} {w.version} needs {req}, the wheel is {have.version}")
    return problems


def installed_version(name: str) -> Version | None:
    """The version of ``name`` that this Python imports, or None."""
    try:
        return Version(importlib.metadata.version(name))
    except importlib.metadata.PackageNotFoundError:
        return None


def check_installed(folder: Path) -> tuple[list[str], list[Path]]:
    """Unmet requirements of the wheels in ``folder`` against this Python's packages, and the fallback wheels
    that meet some of them (those are not problems: install them and check again)."""
    env = {**default_environment(), "extra": ""}
    fallback = {w.name: w for w in map(read_wheel, sorted(folder.glob("fallback/*.whl")))}
    problems, to_install, checked = [], [], []
    for w in map(read_wheel, sorted(folder.glob("*.whl"))):
        if installed_version(w.name) != w.version:
            problems.append(
                f"{w.name}: the carried wheel is {w.version}, this Python imports "
                f"{installed_version(w.name) or 'none'}"
            )
        checked.append(w)
    # a fallback wheel already installed (by an earlier round) brings requirements of its own
    checked += [w for w in fallback.values() if installed_version(w.name) == w.version]
    for w in checked:
        for req in needed(w, env):
            have = installed_version(req.name)
            if have is not None and req.specifier.contains(have, prereleases=True):
                continue
            spare = fallback.get(normalise(req.name))
            if spare is not None and req.specifier.contains(spare.version, prereleases=True):
                if spare.path not in to_install:
                    to_install.append(spare.path)
            else:
                problems.append(f"{w.name} {w.version} needs {req}, this Python has {have or 'none'}")
    return problems, to_install


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("folder", type=Path, help="the wheel folder (.whl)")
    parser.add_argument("--installed", action="store_true", help="check against this Python's packages")
    parser.add_argument("--requirements", type=Path, default=Path(__file__).with_name("gpu-wheels.in"))
    args = parser.parse_args(argv)
    if not any(args.folder.glob("*.whl")):
        print(f"no wheels in {args.folder}: run `make gpu-wheels` first", file=sys.stderr)
        return 1
    if args.installed:
        problems, to_install = check_installed(args.folder)
        for path in to_install:
            print(path)
    else:
        lines = [ln.split("#")[0].strip() for ln in args.requirements.read_text().splitlines()]
        problems = check_carried(args.folder, [Requirement(ln) for ln in lines if ln])
    for problem in problems:
        print(f"wheelcheck: {problem}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
