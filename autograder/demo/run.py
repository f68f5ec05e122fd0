"""``python -m autograder demo``: the instructor's workflow end to end on the example submissions."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from autograder.course import course_dir
from autograder.demo.build import write_submissions
from autograder.grading.export import export, print_table
from autograder.grading.grade import autograde
from autograder.intake.submissions import import_submissions
from autograder.pages.feedback import feedback
from autograder.release.assignment import release


def demo(workers: int = 2, cell_timeout: float = 15.0) -> list[dict]:
    """Release the demo assignment, submit the example submissions, autograde, feedback, export, print."""
    course = os.environ.get("POSREF_COURSE_DIR") or tempfile.mkdtemp(prefix="posref-demo-")
    demo_env = {
        "POSREF_COURSE_DIR": course,
        "POSREF_SOURCE_DIR": "autograder/demo/source",
        "POSREF_RELEASE_DIR": str(Path(course).expanduser().resolve() / "release"),
    }
    saved = {name: os.environ.get(name) for name in demo_env}
    os.environ.update(demo_env)  # read by nbgrader_config.py in this process and in the workers
    try:
        release("positions")
        with tempfile.TemporaryDirectory() as tmp:
            expected = write_submissions(
                course_dir() / "release" / "positions" / "positions.ipynb", Path(tmp)
            )
            import_submissions(Path(tmp), "positions")
        autograde("positions", workers=workers, cell_timeout=cell_timeout)
        feedback("positions")
        rows = export("positions")
        print_table(rows, expected)
        print(f"CSV: {course_dir() / 'positions-grades.csv'}   course folder: {course_dir()}")
        return rows
    finally:  # leave the caller's environment as it was: later nbgrader runs must see the real course again
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
