"""``posref lab``: open the course in JupyterLab on its start page (``make lab`` runs it).

A student's JupyterLab keeps nbgrader's Validate button (with an ``nbgrader_config.py`` of its own) and hides the
rest of nbgrader: the instructor's tools (the formgrader, the create-assignment sidebar) and the exchange's
Assignment List and Course List, which only a JupyterHub course has something behind (its hub serves its own
JupyterLab; here they could only say "Error fetching courses!"), and JupyterLab's news pop-up. The Jupyter config
folder ``posref/jupyter_config/student`` does it, put first on ``JUPYTER_CONFIG_PATH`` of this one server (nothing
is written to the user's Jupyter settings). ``--instructor-tools`` leaves out that folder. Run as root
(containers, cloud notebooks), the server gets ``--allow-root``, without which JupyterLab refuses to start.
The instructor's JupyterLab, with the course's nbgrader configuration, is ``python -m autograder lab``.

In a checkout the student works in ``work/`` (git ignores it), never in the releases (``notebooks/``, which a
``git pull`` or ``python -m autograder release`` rewrites): each start first brings the releases into ``work/`` by
the rules of ``posref.workfolder`` (new notebooks added, the student's own never written over) and prints what
it did; ``posref update`` does only that.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from posref import workfolder

START_PAGE = "00_start.ipynb"
STUDENT_CONFIG = Path(__file__).resolve().parent / "jupyter_config" / "student"
CHECKOUT = Path(__file__).resolve().parent.parent
CHECKOUT_NOTEBOOKS = CHECKOUT / "notebooks"  # the releases, tracked by git
CHECKOUT_WORK = CHECKOUT / "work"  # the student's copy, ignored by git (.gitignore)


def in_checkout() -> bool:
    """Whether posref runs from a checkout of the course (an editable install), with its releases."""
    return (CHECKOUT_NOTEBOOKS / START_PAGE).is_file()


def course_folders(
    folder: str | Path | None = None, releases: str | Path | None = None
) -> tuple[Path, Path | None]:
    """``(the folder JupyterLab serves, the releases to bring into it first, or None)``.

    Without ``folder``: in a checkout, its ``work/``, updated from ``releases`` (default the checkout's
    ``notebooks/``); elsewhere (notebooks copied out of a checkout, or fetched from a hub) the current folder,
    updated only from ``releases`` when given. ``folder`` is served as it is unless ``releases`` is given too.
    """
    if releases is not None:
        releases = Path(releases).expanduser().resolve()
        if not releases.is_dir():
            raise FileNotFoundError(f"no folder {releases} of released notebooks to copy from")
    if folder is None:
        if in_checkout():
            return CHECKOUT_WORK, releases or CHECKOUT_NOTEBOOKS
        return Path.cwd(), releases
    path = Path(folder).expanduser().resolve()
    if releases is None and not path.is_dir():
        raise FileNotFoundError(f"no folder {path} to open in JupyterLab")
    return path, releases


def update_folder(folder: Path, releases: Path | None, command: str) -> None:
    """Bring ``releases`` into ``folder`` (``posref.workfolder.update``), saying what was done on stderr."""
    if releases is not None:
        changes = workfolder.update(releases, folder)
        print(f"posref {command}: {workfolder.summary(changes, releases, folder)}", file=sys.stderr)


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
    folder, releases = course_folders(args.folder, args.releases)
    update_folder(folder, releases, "lab")
    command = lab_command(folder, passed_on(args.jupyter_args))
    print(f"posref lab: serving {folder}", file=sys.stderr)
    return subprocess.call(command, env=lab_env(instructor_tools=args.instructor_tools))


def run_update(args: argparse.Namespace) -> int:
    folder, releases = course_folders(args.folder, args.releases)
    if releases is None:
        raise FileNotFoundError(
            "posref runs outside a checkout of the course: say where the released notebooks are (--releases DIR)"
        )
    update_folder(folder, releases, "update")
    return 0


def _add_folders(parser: argparse.ArgumentParser, folder_help: str) -> None:
    parser.add_argument("--folder", help=folder_help)
    parser.add_argument(
        "--releases",
        help="the released notebooks to bring into the folder first (default in a checkout: its notebooks/)",
    )


def add_lab(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "lab",
        help="open the course in JupyterLab on its start page",
        description="Start JupyterLab on the course's notebooks, opened on 00_start.ipynb, with nbgrader's "
        "Validate button and without its instructor tools or its exchange (Assignment List). In a checkout, "
        "your copy of the course is work/ (git ignores it), filled and updated from notebooks/ first: new "
        "notebooks are added, a notebook you changed is never written over (a new version lands beside it "
        "as NAME.new.ipynb). Works as root too.",
    )
    _add_folders(
        parser,
        "the folder to serve as it is (default: the checkout's work/, updated from notebooks/; outside a "
        "checkout, the current folder)",
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


def add_update(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "update",
        help="bring the course's notebooks into your work/ folder without touching your answers",
        description="What `posref lab` does before it starts: copy into your folder (default: the checkout's "
        "work/) the released notebooks it lacks; a notebook you have not changed is replaced by a new version, "
        "one you changed stays as it is and the new version is written beside it as NAME.new.ipynb. Prints "
        "what it did.",
    )
    _add_folders(parser, "your folder (default: the checkout's work/)")
    parser.set_defaults(handler=run_update)
