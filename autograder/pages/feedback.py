"""``python -m autograder feedback``: each student's feedback page, from nbgrader's ``generate_feedback``.

What the page shows of the student's notebook is made inert by the course's nbgrader configuration
(``sanitize.py``'s preprocessors and exporter, named in ``nbgrader_config.py``); hidden tests are cleared from the
instructor's own cells only; formulas render offline.
"""

from __future__ import annotations

from autograder import course


def feedback(assignment: str) -> dict[str, str]:
    """nbgrader's ``generate_feedback`` (hidden tests cleared, what students wrote sanitised: nbgrader_config),
    one student at a time through its Python API: a student nbgrader cannot take is that student's failure, and
    every other student gets their page. Returns student -> why they got none (nbgrader's last error line)."""
    from nbgrader.apps import NbGraderAPI
    from nbgrader.coursedir import CourseDirectory

    course.require_assignment(assignment)
    settings = course.config()
    api = NbGraderAPI(coursedir=CourseDirectory(config=settings), config=settings)
    autograded = course.course_dir() / "autograded"
    students = sorted(p.parent.name for p in autograded.glob(f"*/{assignment}") if p.is_dir())
    failed = {}
    for student in students:
        if course.student_id_problem(student) is not None:  # nbgrader would read the id as a glob
            failed[student] = course.student_id_problem(student)
            continue
        try:
            with course.tools_on_path():
                result = api.generate_feedback(assignment, student, force=True)
            ok, why = result["success"], result.get("error") or result.get("log") or ""
        except Exception as err:  # nbgrader on this student's notebook: the others go on
            ok, why = False, f"{type(err).__name__}: {err}"
        if not ok:
            lines = [line for line in why.strip().splitlines() if line.strip()]
            failed[student] = lines[-1] if lines else "nbgrader gave no reason"
    return failed
