"""``posref lab``: open the course in JupyterLab on its start page (``make lab`` runs it).

A student's JupyterLab keeps nbgrader's Validate button and Assignment List (a JupyterHub course hands in through
them) and hides the instructor's tools, the formgrader and the create-assignment sidebar: the Jupyter config
folder ``posref/jupyter_config/student`` turns them off, put first on ``JUPYTER_CONFIG_PATH`` of this one server
(nothing is written to the user's Jupyter settings). ``--instructor-tools`` leaves them on. Run as root
(containers, cloud notebooks), the server gets ``--allow-root``, without which JupyterLab refuses to start.
The instructor's JupyterLab, with the course's nbgrader configuration, is ``python -m autograder lab``.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

START_PAGE = "00_start.ipynb"
STUDENT_CONFIG = Path(__file__).resolve().parent / "jupyter_config" / "student"
CHECKOUT_NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"


def course_folder(folder: str | Path | None = None) -> Path:
    """The folder JupyterLab serves: ``folder`` when given, else the checkout's ``notebooks/`` when posref runs
    from a checkout, else the current folder (notebooks copied out of a checkout, or fetched from a hub)."""
    if folder is not None:
        path = Path(folder).expanduser().resolve()
        if not path.is_dir():
            raise FileNotFoundError(f"no folder {path} to open in JupyterLab")
        return path
    if (CHECKOUT_NOTEBOOKS / START_PAGE).is_file():
        return CHECKOUT_NOTEBOOKS
    return Path.cwd()


def lab_command(folder: Path, extra: Sequence[str] = (), *, python: str = sys.executable) -> list[str]:
    """The JupyterLab command line serving ``folder``, opened on its start page when it has one."""
    command = [python, "-m", "jupyterlab", f"--ServerApp.root_dir={folder}"]
    if (folder / START_PAGE).is_file():
        command.append(f"--LabApp.default_url=/lab/tree/{START_PAGE}")
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        command.append("--allow-root")
    return command + list(extra)


def lab_env(*, instructor_tools: bool = False, env: Mapping[str, str] | None = None) -> dict[str, str]:
    """``env`` (default: this process's) for the server: the student config first on ``JUPYTER_CONFIG_PATH``
    unless ``instructor_tools``; this Python's scripts first on ``PATH`` (nbgrader runs ``alembic`` from it)."""
    out = dict(os.environ if env is None else env)
    out["PATH"] = os.pathsep.join(filter(None, (str(Path(sys.executable).parent), out.get("PATH"))))
    if not instructor_tools:
        out["JUPYTER_CONFIG_PATH"] = os.pathsep.join(
            filter(None, (str(STUDENT_CONFIG), out.get("JUPYTER_CONFIG_PATH")))
        )
    return out


def passed_on(remainder: Sequence[str]) -> list[str]:
    """The JupyterLab options of an ``argparse.REMAINDER`` argument, without the ``--`` that may lead them."""
    return list(remainder[1:] if remainder[:1] == ["--"] else remainder)


def run_lab(args: argparse.Namespace) -> int:
    folder = course_folder(args.folder)
    command = lab_command(folder, passed_on(args.jupyter_args))
    print(f"posref lab: serving {folder}", file=sys.stderr)
    return subprocess.call(command, env=lab_env(instructor_tools=args.instructor_tools))


def add_lab(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "lab",
        help="open the course in JupyterLab on its start page",
        description="Start JupyterLab on the course's notebooks, opened on 00_start.ipynb, with nbgrader's "
        "student tools (Validate, Assignment List) and without its instructor tools. Works as root too.",
    )
    parser.add_argument(
        "--folder", help="the folder to serve (default: the checkout's notebooks/, else the current folder)"
    )
    parser.add_argument(
        "--instructor-tools",
        action="store_true",
        help="also show nbgrader's formgrader and create-assignment sidebar (for grading, use "
        "`python -m autograder lab` from the checkout: it adds the course's nbgrader configuration)",
    )
    parser.add_argument(
        "jupyter_args", nargs=argparse.REMAINDER, help="options passed on to JupyterLab as they are"
    )
    parser.set_defaults(handler=run_lab)
