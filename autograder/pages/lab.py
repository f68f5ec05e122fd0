"""``python -m autograder lab``: the instructor's JupyterLab, with the course's nbgrader configuration.

The server runs from the repository root with ``autograder/``, the folder of ``nbgrader_config.py``, first on
``JUPYTER_CONFIG_PATH``, where every nbgrader app of the server finds the course's configuration, so that
nbgrader's formgrader (Nbgrader → Formgrader) lists the assignments of ``solutions/`` and the students and
submissions of the course folder (``$POSREF_COURSE_DIR``), shows each autograded submission with its score of
record (``autograde`` writes it under the test cells) and takes the manual grades of the written answers.

Nothing is written into the repository: the gradebook and everything a class produces live in the course
folder, and JupyterLab's checkpoints of the files an instructor saves go to ``<course>/checkpoints``. Interactive
kernels run as they do for students: only nbgrader's own Execute step sets ``POSREF_GRADING`` (for its kernels).

The formgrader is the course's (``lab_server.py``, a server extension loaded in place of nbgrader's own): its
views are sanitised, every page has a Content-Security-Policy, the Autograde button runs the score of record,
each written answer is followed by its model answer; terminals are off; the class pages that ``python -m
autograder stats`` and ``similar`` wrote are listed at ``<the lab's URL>/posref/reports/`` (``reports.py``).

Formulas render offline: the formgrader's pages load MathJax from this server (the jupyter-server-mathjax
package) instead of a CDN, through the template ``autograder/pages/jupyter_data/.../formgrade/mathjax.html.j2``, which
the server finds first on ``JUPYTER_PATH`` (as it finds the view's template ``posref_formgrade``).
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from autograder import course
from posref import launch

# holds nbconvert/templates/formgrade/mathjax.html.j2 and nbconvert/templates/posref_formgrade
JUPYTER_DATA = Path(__file__).resolve().parent / "jupyter_data"


def lab_command(extra: Sequence[str] = ()) -> list[str]:
    """The JupyterLab command line for instructors; ``extra`` options are passed on as they are."""
    # the course's nbgrader_config.py is not the server's config file (nbgrader's apps, which inherit it, would
    # look for "nbgrader_config.py.py" and warn at each start): nbgrader finds it on JUPYTER_CONFIG_PATH (lab_env)
    options = [
        f"--FileCheckpoints.checkpoint_dir={course.course_dir() / 'checkpoints'}",
        # the formgrader loaded by the course's server extension (sanitised views, a CSP, the score of record
        # behind the Autograde button) instead of nbgrader's own
        "--ServerApp.jpserver_extensions=autograder.pages.lab_server=True",
        "--ServerApp.jpserver_extensions=nbgrader.server_extensions.formgrader=False",
        # grading needs no terminal: none to open, none to create
        "--ServerApp.jpserver_extensions=jupyter_server_terminals=False",
        "--ServerApp.terminals_enabled=False",
    ]
    return launch.lab_command(course.REPO, [*options, *extra])


def lab_env(env: Mapping[str, str] | None = None) -> dict[str, str]:
    """posref's lab environment with the instructor's tools; the course's Jupyter data folder (the formgrader's
    offline MathJax) first on ``JUPYTER_PATH``; and the folder of ``nbgrader_config.py`` first on
    ``JUPYTER_CONFIG_PATH``, where nbgrader's server extensions look for it at each request (the formgrader's API
    reloads it, the Validate button and the exchange's lists load it): without it each logged "No
    nbgrader_config.py file found"."""
    out = launch.lab_env(instructor_tools=True, env=env)
    out["JUPYTER_PATH"] = os.pathsep.join(filter(None, (str(JUPYTER_DATA), out.get("JUPYTER_PATH"))))
    folders = (str(course.CONFIG.parent), out.get("JUPYTER_CONFIG_PATH"))
    out["JUPYTER_CONFIG_PATH"] = os.pathsep.join(filter(None, folders))
    return out


def lab(extra: Sequence[str] = ()) -> int:
    """Run the instructor's JupyterLab until it is stopped; its exit status."""
    print(f"autograder lab: course folder {course.course_dir()}; the class pages of `stats` and `similar` at "
          "<the lab's URL>/posref/reports/", file=sys.stderr)  # fmt: skip
    return subprocess.call(lab_command(extra), cwd=course.REPO, env=lab_env())
