"""``python -m autograder lab``: the instructor's JupyterLab, with the course's nbgrader configuration.

The server runs from the repository root with ``autograder/nbgrader_config.py`` as its config file, so that
nbgrader's formgrader (Nbgrader → Formgrader) lists the assignments of ``solutions/`` and the students and
submissions of the course folder (``$POSREF_COURSE_DIR``), shows each autograded submission with its score of
record (``autograde`` writes it under the test cells) and takes the manual grades of the written answers.

Nothing is written into the repository: the gradebook and everything a class produces live in the course
folder, and JupyterLab's checkpoints of the files an instructor saves go to ``<course>/checkpoints``. Interactive
kernels run as they do for students: only nbgrader's own Execute step sets ``POSREF_GRADING`` (for its kernels).
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Sequence

from autograder import course
from posref import launch


def lab_command(extra: Sequence[str] = ()) -> list[str]:
    """The JupyterLab command line for instructors; ``extra`` options are passed on as they are."""
    options = [
        f"--JupyterApp.config_file={course.CONFIG}",
        f"--FileCheckpoints.checkpoint_dir={course.course_dir() / 'checkpoints'}",
    ]
    return launch.lab_command(course.REPO, [*options, *extra])


def lab(extra: Sequence[str] = ()) -> int:
    """Run the instructor's JupyterLab until it is stopped; its exit status."""
    print(f"autograder lab: course folder {course.course_dir()}", file=sys.stderr)
    return subprocess.call(lab_command(extra), cwd=course.REPO, env=launch.lab_env(instructor_tools=True))
