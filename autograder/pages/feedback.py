"""``python -m autograder feedback``: each student's feedback page, from nbgrader's ``generate_feedback``.

What the page shows of the student's notebook is made inert by the course's nbgrader configuration
(``sanitize.py``'s preprocessors and exporter, named in ``nbgrader_config.py``); hidden tests are cleared from the
instructor's own cells only; formulas render offline. The page speaks the language of the edition the student
handed in (``EditionOfThePage``: its ``lang`` attribute, its headings and labels, in the course's template
``posref_feedback``, which is nbgrader's ``feedback`` with these words).
"""

from __future__ import annotations

from nbconvert.preprocessors import Preprocessor

from autograder import course
from autograder.editions.notebook import edition_of
from posref import i18n
from posref.i18n import N_, _

# what nbgrader's feedback page writes around the student's cells, in English
PAGE_WORDS = (
    N_("{notebook} (Score: {score} / {points})"),
    N_("Score: {score} / {points}"),
    N_("Test cell"),
    N_("Coding free-response"),
    N_("Written response"),
    N_("Task"),
    N_("Comment"),
    N_("Late submission penalty (Score: -{penalty})"),
    N_("Student's answer"),
    N_("Student's task"),
    N_("Grade cell:"),
    N_("Comments:"),
    N_("(Top)"),
)


class EditionOfThePage(Preprocessor):
    """``resources["page"]``: the language of the edition the notebook says it is (``edition_of``: English for
    anything else, whatever the metadata holds) and ``PAGE_WORDS`` in it, for the template ``posref_feedback``."""

    def preprocess(self, nb, resources):
        edition = edition_of(nb)
        with i18n.speaking(edition):
            resources["page"] = {"lang": edition, "words": {word: _(word) for word in PAGE_WORDS}}
        return nb, resources


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
