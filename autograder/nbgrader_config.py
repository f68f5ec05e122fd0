"""nbgrader configuration for the course, used from the repository root:

    nbgrader generate_assignment 01_order --JupyterApp.config_file=autograder/nbgrader_config.py --force

`solutions/` is the source directory and `notebooks/` the release directory; everything a class produces
(submissions, the gradebook, feedback) lives in a course folder outside the repository, set by the environment
variable POSREF_COURSE_DIR (default: ~/posref-course), created on first use.

`python -m autograder` (see autograder/README.md) wraps these commands; it sets POSREF_SOURCE_DIR and
POSREF_RELEASE_DIR for the demo assignment, which plain nbgrader use never needs.
"""

import os
import sys
from pathlib import Path

import nbgrader
from jupyter_client.manager import AsyncKernelManager
from nbgrader.converters import Autograde
from nbgrader.preprocessors import ClearHiddenTests, Execute

c = get_config()  # noqa: F821  (provided by traitlets when nbgrader loads this file)

# nbgrader's own autograde runs each submission in an ordinary kernel on this machine: a hostile notebook could
# read other students' work or write the gradebook, and its in-kernel scores would replace the score of record.
# Refuse it unless asked for knowingly (trusted notebooks only): typed as `nbgrader autograde` (stopped here, before
# anything runs) and through nbgrader's API, as the formgrader's autograde button does (stopped by the Execute
# step below; `python -m autograder autograde` turns that step off: it runs submissions in its sandbox).
ALLOWED = os.environ.get("POSREF_ALLOW_PLAIN_AUTOGRADE") == "1"
REFUSAL = (
    "posref: plain nbgrader autograde would run submissions unsandboxed and overwrite the score of record. "
    "Grade with `python -m autograder autograde ASSIGNMENT` (see autograder/README.md), or set "
    "POSREF_ALLOW_PLAIN_AUTOGRADE=1 to run plain nbgrader on notebooks you trust."
)
_launcher = Path(sys.argv[0])
if (
    (_launcher.name == "nbgrader" or _launcher.parts[-2:] == ("nbgrader", "__main__.py"))
    and sys.argv[1:2] == ["autograde"]
    and not ALLOWED
):
    raise SystemExit(REFUSAL)


class GradingKernelManager(AsyncKernelManager):
    """The kernel manager of nbgrader's Execute step: its kernels run with POSREF_GRADING=1, so that notebooks
    load shipped results instead of training. Only those kernels: the variable is never set in this process,
    which may be the instructor's JupyterLab, whose interactive kernels must not run in grading mode."""

    async def start_kernel(self, **kw):
        kw["env"] = {**(kw.get("env") or os.environ), "POSREF_GRADING": "1"}
        return await super().start_kernel(**kw)


class ExecuteIfAllowed(Execute):
    """nbgrader's Execute step of autograde, refused unless POSREF_ALLOW_PLAIN_AUTOGRADE=1 (see above)."""

    def __init__(self, *args, **kwargs):
        kwargs["kernel_manager_class"] = GradingKernelManager
        super().__init__(*args, **kwargs)

    def preprocess(self, nb, resources):
        if not ALLOWED:
            raise RuntimeError(REFUSAL)
        return super().preprocess(nb, resources)


c.Autograde.autograde_preprocessors = [
    ExecuteIfAllowed if step is Execute else step
    for step in Autograde.class_traits()["autograde_preprocessors"].default()
]

REPO = Path(__file__).resolve().parent.parent
# for nbgrader started from anywhere (a plain `nbgrader autograde` imports autograder.grading.penalty)
if str(REPO) not in sys.path:
    sys.path.append(str(REPO))
from autograder.course import groupshared, open_course_folder  # noqa: E402
from autograder.pages.feedback import EditionOfThePage  # noqa: E402
from autograder.pages.sanitize import CleanMarkdownExporter, StudentCellsSanitized  # noqa: E402

COURSE = Path(os.environ.get("POSREF_COURSE_DIR", Path.home() / "posref-course")).expanduser()
# A course graded by several people, each their own user in one Unix group: POSREF_GROUPSHARED=1 makes what
# nbgrader writes group-writable (its notebooks 664 instead of 444, its folders g+rws), and what the course's own
# commands write too (autograder/course.py, open_course_folder); the course folder is made 2770 then, else 0750.
c.CourseDirectory.groupshared = groupshared()
open_course_folder(COURSE)

c.CourseDirectory.root = str(REPO)
c.CourseDirectory.source_directory = os.environ.get("POSREF_SOURCE_DIR", "solutions")
c.CourseDirectory.release_directory = os.environ.get("POSREF_RELEASE_DIR", "notebooks")
c.CourseDirectory.submitted_directory = str(COURSE / "submitted")
c.CourseDirectory.autograded_directory = str(COURSE / "autograded")
c.CourseDirectory.feedback_directory = str(COURSE / "feedback")
# A JupyterHub course hands out and collects through nbgrader's exchange, a folder the instructor and students
# share (POSREF_EXCHANGE_DIR, e.g. /srv/nbgrader/exchange); without a hub it is unused, so it defaults to the
# course folder instead of nbgrader's /usr/local/share/nbgrader/exchange (the formgrader warned it was missing).
c.Exchange.root = os.environ.get("POSREF_EXCHANGE_DIR", str(COURSE / "exchange"))
if "POSREF_EXCHANGE_DIR" not in os.environ:
    (COURSE / "exchange").mkdir(exist_ok=True)  # else the formgrader warns that it "could not be created"
# several grading workers share one SQLite gradebook: wait for its lock instead of failing
c.CourseDirectory.db_url = f"sqlite:///{COURSE / 'gradebook.db'}?timeout=30"
c.CourseDirectory.course_id = "posref"
# Collecting from the exchange takes each student's own submission only: its owner (the Unix user who handed it in)
# must be the student id its name claims, and its time is the kernel's (autograder/intake/exchange.py); nbgrader's
# own collect took any claimed id, logging "cheating attempt?", and the student's own claimed time
c.ExchangeFactory.collect = "autograder.intake.exchange.CollectOwnSubmissions"
# Releasing to the exchange releases every edition: the English release in outbound/ as nbgrader does, each edition's
# (checked to be graded as the English one) in <exchange>/posref/editions/<tag>/, which a student's Fetch takes in
# the student's edition (autograder/release/exchange.py, posref_jupyter/exchange.py)
c.ExchangeFactory.release_assignment = "autograder.release.exchange.ReleaseEditions"
# Stubs raise until the student fills them in; released notebooks never carry outputs.
STUB_MESSAGE = "not done yet: replace this line with your code and run its cell again"
c.ClearSolutions.code_stub = {"python": f'# YOUR CODE HERE\nraise NotImplementedError("{STUB_MESSAGE}")'}
c.ClearOutput.enabled = True
c.Execute.timeout = 300

# Late work (autograder/intake/late.py, the penalty autograder/grading/penalty.py). Each assignment's due date, a
# time with its zone; an assignment not listed keeps the due date of the gradebook (`nbgrader db assignment add
# NAME --duedate=...`) or has none (never late):
c.CourseDueDates.due_dates = {
    # "01_order": "2026-10-05 23:59:00 +02:00",
}
# The penalty: nbgrader's LateSubmissionPlugin API. This course's plugin takes 1% of a notebook's score per
# started hour late, and all of it from 72 hours late; nbgrader's own "nbgrader.plugins.LateSubmissionPlugin"
# with c.LateSubmissionPlugin.penalty_method = "zero" gives 0 to any late submission, "none" no penalty.
c.AssignLatePenalties.plugin_class = (
    "autograder.grading.penalty.PenaltyPerHour"  # a name: only autograde imports it
)
c.PenaltyPerHour.fraction_per_hour = 0.01
c.PenaltyPerHour.zero_after_hours = 72.0


class HiddenTestsOfTheSource(ClearHiddenTests):
    """nbgrader's ClearHiddenTests on the instructor's own cells only: those whose source is the source notebook's
    locked cell of the same grade id (nbgrader's autograde restored it). A student's text that holds a marker
    ("BEGIN HIDDEN TESTS" in a written answer or a comment) stays as written: nbgrader's own step cut it out of
    that student's feedback, or failed on it (no matching END) and wrote no feedback at all."""

    def preprocess(self, nb, resources):
        from nbgrader.api import Gradebook, MissingEntry

        info = resources["nbgrader"]
        with Gradebook(info["db_url"]) as gb:
            try:
                cells = gb.find_notebook(info["notebook"], info["assignment"]).source_cells
            except MissingEntry:
                cells = []
            self.instructor = {c.name: c.source for c in cells if c.locked}
        return super().preprocess(nb, resources)

    def preprocess_cell(self, cell, resources, index):
        meta = cell.get("metadata", {}).get("nbgrader", {})
        grade_id = meta.get("grade_id") if isinstance(meta, dict) else None
        if grade_id is None or self.instructor.get(grade_id) != cell.source:
            return cell, resources
        return super().preprocess_cell(cell, resources, index)


# Feedback never shows hidden-test source, nor runs what a student wrote: nbgrader's feedback template ignores
# HTMLExporter.sanitize_html, and a `<script>` or `onerror=` in a student's markdown cell ran in the browser of
# whoever opened the page.
c.GenerateFeedback.preprocessors = [
    "nbgrader.preprocessors.GetGrades",
    HiddenTestsOfTheSource,
    EditionOfThePage,  # first: the notes StudentCellsSanitized writes speak the page's language
    StudentCellsSanitized,
    "nbconvert.preprocessors.CSSHTMLHeaderPreprocessor",
]
c.StudentCellsSanitized.enabled = True  # nbconvert's preprocessors are off unless enabled
c.EditionOfThePage.enabled = True
# the page in the language of the student's edition: nbgrader's feedback template with the words EditionOfThePage
# gives it (pages/jupyter_data/nbconvert/templates/posref_feedback)
c.CleanMarkdownExporter.template_name = "posref_feedback"
# markdown is cleaned once rendered, not at its source: bleaching the source showed a student's `$i < j$` and
# `a < b` in code as `&lt;` (a formula's or a code span's text is escaped again when rendered)
c.GenerateFeedback.exporter_class = CleanMarkdownExporter
# Formulas render offline, from no other host: the feedback and formgrade templates' mathjax() macros are the
# course's (pages/jupyter_data/nbconvert/templates/{feedback,formgrade}/mathjax.html.j2, found first), then nbgrader's;
# a feedback page carries MathJax inside it (the filter its macro calls), since on a hub the page travels alone
c.HTMLExporter.extra_template_basedirs = [
    str(REPO / "autograder" / "pages" / "jupyter_data" / "nbconvert" / "templates"),
    str(Path(nbgrader.__file__).resolve().parent / "server_extensions" / "formgrader" / "templates"),
]
c.HTMLExporter.filters = {"posref_inline_mathjax": "posref_jupyter.offline_math.inline_mathjax_filter"}
