"""JupyterLab's own interface in the language of the course's edition: a Jupyter server extension of a student's
JupyterLab (enabled by ``posref/jupyter_config/student/jupyter_server_config.json``, which ``posref lab`` puts on
``JUPYTER_CONFIG_PATH``).

JupyterLab's language is its setting ``locale`` of ``@jupyterlab/translation-extension:plugin``, whose default,
``"default"``, means the server's default locale: the operating system's, read once when ``jupyterlab_server`` is
imported (``jupyterlab_server.translation_utils.SYS_LOCALE``). That default decides two things: the language pack the
page loads, and the language in which the server translates the settings schemas, which hold the main menu's labels
(File, Edit, Run, ...). A default set through the settings overrides reaches only the first (the server reads
only a user's own choice, then falls back to the operating system's), and setting the operating system's locale
needs that locale installed, which few machines have for ``zh_TW``. So this extension makes the server's default
locale the one of the edition ``POSREF_LANG`` names (``posref lab --lang`` sets it), with its language pack
installed: English for ``make lab``, Traditional Chinese for ``make lab EDITION=zh-TW``. A language the student
chose themselves (JupyterLab's Settings > Language, kept in their own settings) still wins.
"""

from __future__ import annotations

import os

from posref.launch import Edition, edition


def requested_edition(env: os._Environ | dict[str, str] = os.environ) -> Edition | None:
    """The edition ``POSREF_LANG`` names, or None when it names none (then the server's default stays as it is)."""
    try:
        return edition(env["POSREF_LANG"])
    except (KeyError, ValueError):
        return None


def set_default_locale(locale: str) -> None:
    """Make ``locale`` the default locale of this process's JupyterLab server (see the module's docstring)."""
    from jupyterlab_server import settings_utils, translations_handler

    settings_utils.SYS_LOCALE = translations_handler.SYS_LOCALE = locale


def _jupyter_server_extension_points() -> list[dict[str, str]]:
    return [{"module": "posref.lab_language"}]


def _load_jupyter_server_extension(serverapp) -> None:
    lang = requested_edition()
    if lang is None or not lang.pack_installed():  # posref lab said what to install
        return
    set_default_locale(lang.locale)
    serverapp.log.info("posref: JupyterLab's interface language is %s (%s edition)", lang.locale, lang.tag)
