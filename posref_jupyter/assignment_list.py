"""The words of the course's Assignment List, in the edition's language: a Jupyter server extension of a student's
JupyterLab on the course's JupyterHub (enabled by ``posref/jupyter_config/hub/jupyter_server_config.json``).

nbgrader's own panel (its JupyterLab plugin ``@jupyter/nbgrader:assignment-list``, opened from its plugin
``@jupyter/nbgrader:menu``) says everything in English it holds in its built code ("Released assignments",
"Success! Your notebook passes all the tests."), with no way to translate it. The hub's page config disables both
for students (``posref/jupyter_config/hub/labconfig``) and enables the course's own panel, a plugin of the course's
JupyterLab extension (``@posref/validate:assignment-list``, ``labextension/src/assignments.js``), which calls the same
handlers of nbgrader's server extension (list, fetch, submit, fetch feedback) and validates a notebook with the
course's Validate dialog (``posref_jupyter.validate``'s words). It shows the words this extension puts in the page
(the page config's ``posrefAssignments``): the messages below, said in the language of ``POSREF_LANG`` (which the
hub's spawner sets) from posref's catalogs, as every other sentence of posref.

The menu and the panel keep the names the course's pages give them in every edition (**Nbgrader → Assignment
List**), as the buttons Fetch and Submit keep theirs (the glossary keeps the words).
"""

from __future__ import annotations

from posref_jupyter.validate import i18n

N_ = i18n.N_
PAGE_OPTION = "posrefAssignments"  # the page config's key the panel reads its words from

MESSAGES = {
    "menu": N_("Nbgrader"),
    "assignment_list": N_("Assignment List"),
    "course": N_("Course:"),
    "refresh": N_("Refresh"),
    "loading": N_("Loading…"),
    "released": N_("Released assignments"),
    "fetched": N_("Downloaded assignments"),
    "submitted": N_("Submitted assignments"),
    "no_released": N_("There are no assignments to fetch."),
    "no_fetched": N_("There are no downloaded assignments."),
    "no_submitted": N_("There are no submitted assignments."),
    "no_courses": N_("No course was found."),
    "cannot_list": N_("The list of assignments could not be loaded; the error:"),
    "error_title": N_("No answer from the server"),
    "cannot_reach": N_("The server could not be reached: {error}"),
    "fetch": N_("Fetch"),
    "fetching": N_("Fetching…"),
    "submit": N_("Submit"),
    "submitting": N_("Submitting…"),
    "fetch_feedback": N_("Fetch feedback"),
    "fetching_feedback": N_("Fetching feedback…"),
    "view_feedback": N_("view feedback"),
    "feedback_ready": N_("feedback ready to fetch"),
    "not_submitted_title": N_("Not submitted"),
    "not_submitted": N_("nbgrader did not take the hand-in; its reason:"),
    "not_fetched_title": N_("Not fetched"),
    "not_fetched": N_("nbgrader could not fetch the assignment; its error:"),
    "no_feedback_title": N_("No feedback fetched"),
    "no_feedback": N_("nbgrader could not fetch the feedback; its error:"),
}


def words(lang: str | None = None) -> dict[str, str]:
    """What the panel says, in ``lang`` (default: the language posref speaks now, ``POSREF_LANG``'s)."""
    with i18n.speaking(lang or i18n.get_language()):
        return {key: i18n._(message) for key, message in MESSAGES.items()}


def _jupyter_server_extension_points() -> list[dict[str, str]]:
    return [{"module": "posref_jupyter.assignment_list"}]


def _load_jupyter_server_extension(serverapp) -> None:
    serverapp.web_app.settings.setdefault("page_config_data", {})[PAGE_OPTION] = words()
    serverapp.log.info("posref: the Assignment List speaks %s", i18n.get_language())
