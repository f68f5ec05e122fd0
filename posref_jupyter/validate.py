"""The words of the course's Validate button and its dialog, in the edition's language: a Jupyter server extension of
a student's JupyterLab (enabled by ``posref/jupyter_config/student/jupyter_server_config.json``).

nbgrader's own button (its JupyterLab plugin ``@jupyter/nbgrader:validate-assignment``) says everything around
posref's messages in English it holds in its built code ("Validation Results", "The following cell failed:"), with
no way to translate it. The student's JupyterLab disables that plugin (``posref/jupyter_config/student/labconfig``)
and loads the course's own (``jupyter_data/labextensions/@posref/validate``, built from ``labextension/src/`` by
``make labextension``: ``button.js``, and the dialog in ``validation.js``, which the course's Assignment List,
``posref_jupyter.assignment_list``, shows too), which calls the same handler of nbgrader's server extension
(``assignments/validate``) and shows what it answers with the words this extension puts in the page (the page
config's ``posrefValidate``): the messages below, said in the language of ``POSREF_LANG`` (the edition ``posref lab
--lang`` and the hub's spawner set) from posref's catalogs (``posref/locale/<lang>/posref.po``), as every other
sentence of posref.

The button's own label stays ``Validate`` in every edition: the course's pages name it so (as they name the hub's
Submit and Fetch), and the glossary keeps the word.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

PAGE_OPTION = "posrefValidate"  # the page config's key the button reads its words from


def _posref_i18n() -> ModuleType:
    """``posref.i18n`` (the one reader of posref's catalogs), loaded from its file: ``import posref.i18n`` would run
    ``posref/__init__.py``, which imports torch (see ``posref_jupyter``); ``posref.i18n`` itself imports none of
    posref."""
    origin = importlib.util.find_spec("posref").origin  # found, not imported
    spec = importlib.util.spec_from_file_location(
        "posref_jupyter._posref_i18n", Path(origin).with_name("i18n.py")
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


i18n = _posref_i18n()
N_ = i18n.N_

MESSAGES = {
    "validate": N_("Validate"),
    "tooltip": N_(
        "Run this notebook from the top in a fresh kernel, as the grader will, and list the checks that fail"
    ),
    "saving": N_("Saving…"),
    "validating": N_("Validating…"),
    "title": N_("Validation results"),
    "failed_title": N_("Validation failed"),
    "passed": N_("Every check of this notebook passed."),
    "failed": N_(
        "{count} of this notebook's checks failed: handed in as it is, it would not get full marks. Each cell "
        "that failed, and what it said:"
    ),
    "cell_failed": N_("This cell failed:"),
    "changed": N_("This test cell was changed, but it must stay as the course wrote it:"),
    "error": N_("Validate could not run; the error:"),
    "cannot_save": N_(
        "The notebook could not be saved, so it was not validated (Validate checks the saved file)."
    ),
    "cannot_validate": N_("Validate could not reach the server: {error}"),
    "ok": N_("OK"),
}
TYPE_CHANGED = N_("This cell's type was changed from {old_type} to {new_type}; change it back:")
CELL_TYPES = {"code": N_("code"), "markdown": N_("Markdown"), "raw": N_("raw")}
# what nbgrader's validator itself writes as a cell's error (nbgrader/validator.py, _extract_error), said instead
NBGRADER_SAYS = {
    "You did not provide a response.": N_("You have not answered here yet."),
    "Partial credit; passed some but not all of the tests": N_(
        "Some of this cell's tests passed, not all (partial credit)."
    ),
}


def words(lang: str | None = None) -> dict:
    """What the button and its dialog say, in ``lang`` (default: the language posref speaks now, ``POSREF_LANG``'s):
    ``MESSAGES`` said; ``type_changed[old][new]``, the sentence for a cell of type ``old`` (``CELL_TYPES``) turned
    into ``new``; ``nbgrader``, what to say instead of each error nbgrader words itself."""
    with i18n.speaking(lang or i18n.get_language()):
        _ = i18n._
        return {
            **{key: _(message) for key, message in MESSAGES.items()},
            "type_changed": {
                old: {
                    new: _(TYPE_CHANGED).format(old_type=_(CELL_TYPES[old]), new_type=_(CELL_TYPES[new]))
                    for new in CELL_TYPES
                    if new != old
                }
                for old in CELL_TYPES
            },
            "nbgrader": {english: _(said) for english, said in NBGRADER_SAYS.items()},
        }


def _jupyter_server_extension_points() -> list[dict[str, str]]:
    return [{"module": "posref_jupyter.validate"}]


def _load_jupyter_server_extension(serverapp) -> None:
    said = words()
    serverapp.web_app.settings.setdefault("page_config_data", {})[PAGE_OPTION] = said
    serverapp.log.info("posref: the Validate button speaks %s", i18n.get_language())
