"""Build the course's Validate button and Assignment List (``posref_jupyter/labextension/``: plain JavaScript) into
the prebuilt JupyterLab extension a student's JupyterLab loads
(``posref_jupyter/jupyter_data/labextensions/@posref/validate/``, committed, so that no student needs Node.js), and
say whether the committed bundle is the build of the committed source.

    make labextension                    # npm ci (the lock's versions), then: python tools/labextension.py build
    python tools/labextension.py check   # exit status 1, saying why, when the bundle is not the source's build

The build is @jupyterlab/builder's (pinned, with everything it uses, by ``package-lock.json``) against the shared
packages of the JupyterLab that ``constraints.txt`` pins (its ``staging/package.json``, the builder's core path),
not minified (``webpack.config.js``), so that the bundle reads as the source does. It writes ``build.json`` beside
the bundle: the digest of every file the build reads from the source (``INPUTS``) and JupyterLab's version.
``tests/notebooks/test_validate_button.py`` checks both against the checkout.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SOURCE = REPO / "posref_jupyter" / "labextension"
BUNDLE = REPO / "posref_jupyter" / "jupyter_data" / "labextensions" / "@posref" / "validate"
RECORD = BUNDLE / "build.json"
INPUTS = ("package.json", "package-lock.json", "webpack.config.js", "src")
BUILDER = SOURCE / "node_modules" / "@jupyterlab" / "builder" / "lib" / "build-labextension.js"


def source_files() -> list[Path]:
    """The files the build reads from the source, in a fixed order."""
    files = []
    for name in INPUTS:
        path = SOURCE / name
        files += sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]
    return files


def source_digest() -> str:
    """SHA-256 over each of ``source_files()``: its path relative to the source, then its bytes."""
    digest = hashlib.sha256()
    for path in source_files():
        digest.update(path.relative_to(SOURCE).as_posix().encode() + b"\0")
        digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()


def pinned_jupyterlab(constraints: Path = REPO / "constraints.txt") -> str:
    """The JupyterLab version ``constraints.txt`` pins (``jupyterlab==4.6.6``)."""
    (version,) = re.findall(r"^jupyterlab==(\S+)$", constraints.read_text(), flags=re.M)
    return version


def build() -> None:
    """The bundle, rebuilt from the source (``npm ci`` first: ``make labextension``), and its ``build.json``."""
    import jupyterlab

    if not BUILDER.is_file():
        sys.exit(f"no {BUILDER.relative_to(REPO)}: run `make labextension` (npm ci installs the builder)")
    if jupyterlab.__version__ != pinned_jupyterlab():
        sys.exit(f"this JupyterLab is {jupyterlab.__version__}, constraints.txt pins {pinned_jupyterlab()}")
    core = Path(jupyterlab.__file__).parent / "staging"
    shutil.rmtree(BUNDLE, ignore_errors=True)
    subprocess.run(["node", str(BUILDER), "--core-path", str(core), "."], cwd=SOURCE, check=True)
    record = {"source_sha256": source_digest(), "jupyterlab": jupyterlab.__version__}
    RECORD.write_text(json.dumps(record, indent=2) + "\n")


def problems() -> list[str]:
    """Why the committed bundle is not the build of the committed source (none when it is)."""
    if not RECORD.is_file():
        return [f"no {RECORD.relative_to(REPO)}: run `make labextension`"]
    record = json.loads(RECORD.read_text())
    found = []
    if record.get("source_sha256") != source_digest():
        found.append(
            "the source changed since the bundle was built: run `make labextension` and commit the bundle"
        )
    if record.get("jupyterlab") != pinned_jupyterlab():
        found.append(
            f"the bundle was built against JupyterLab {record.get('jupyterlab')}, constraints.txt pins "
            f"{pinned_jupyterlab()}: run `make labextension`"
        )
    built = json.loads((BUNDLE / "package.json").read_text())
    build_info = built["jupyterlab"].pop("_build", {})
    if built != json.loads((SOURCE / "package.json").read_text()):
        found.append("the bundle's package.json is not the source's: run `make labextension`")
    if not (BUNDLE / build_info.get("load", "?")).is_file():
        found.append(f"the bundle lacks its entry point {build_info.get('load')!r}: run `make labextension`")
    return found


if __name__ == "__main__":
    if sys.argv[1:] == ["build"]:
        build()
    elif sys.argv[1:] == ["check"]:
        said = problems()
        print("\n".join(said) or "the bundle is the build of the source")
        sys.exit(1 if said else 0)
    else:
        sys.exit("usage: python tools/labextension.py build | check")
