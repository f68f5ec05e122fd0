"""JupyterLab's own interface in the language of the course's edition: a Jupyter server extension of the JupyterLab
of ``posref lab`` (enabled by ``posref/jupyter_config/language/jupyter_server_config.d/posref_lab_language.json``,
which ``posref lab`` puts on ``JUPYTER_CONFIG_PATH``, for a student and with ``--instructor-tools`` alike).

JupyterLab's language is its setting ``locale`` of ``@jupyterlab/translation-extension:plugin``, whose default,
``"default"``, means the server's default locale: the operating system's, read once when ``jupyterlab_server`` is
imported (``jupyterlab_server.translation_utils.SYS_LOCALE``). That default decides two things: the language pack the
page loads, and the language in which the server translates the settings schemas, which hold the main menu's labels
(File, Edit, Run, ...). A default set through the settings overrides reaches only the first (the server reads
only a user's own choice, then falls back to the operating system's), and setting the operating system's locale
needs that locale installed, which few machines have for ``zh_TW``. So this extension makes the server's default
locale the one ``POSREF_LANG`` names (``posref lab --lang`` sets it to the edition's tag: ``en``, ``zh-TW``,
``zh-CN``), when JupyterLab has that language: English for ``make lab``, Traditional Chinese for ``make lab
EDITION=zh-TW``. A language the student chose themselves (JupyterLab's Settings > Language, kept in their own
settings) still wins.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from importlib.metadata import entry_points

LANGUAGE_PACKS = "jupyterlab.languagepack"  # the entry points by which JupyterLab finds its language packs


def requested_locale(env: Mapping[str, str] = os.environ) -> str | None:
    """JupyterLab's locale (``zh_TW``) for the language tag in ``POSREF_LANG`` (``zh-TW``, ``zh_tw``, ...): English,
    or a language whose pack is installed; None otherwise (then the server's default stays as it is)."""
    parts = env.get("POSREF_LANG", "").strip().replace("-", "_").split("_")
    locale = "_".join([parts[0].lower(), *(part.upper() for part in parts[1:])])
    if locale == "en" or any(e.name == locale for e in entry_points(group=LANGUAGE_PACKS)):
        return locale
    return None


def set_default_locale(locale: str) -> None:
    """Make ``locale`` the default locale of this process's JupyterLab server (see the module's docstring)."""
    from jupyterlab_server import settings_utils, translations_handler

    settings_utils.SYS_LOCALE = translations_handler.SYS_LOCALE = locale


def _jupyter_server_extension_points() -> list[dict[str, str]]:
    return [{"module": "posref_jupyter.lab_language"}]


def _load_jupyter_server_extension(serverapp) -> None:
    locale = requested_locale()
    if locale is None:  # posref lab said what to install
        return
    set_default_locale(locale)
    serverapp.log.info(
        "posref: JupyterLab's interface language is %s (POSREF_LANG=%s)", locale, os.environ["POSREF_LANG"]
    )
