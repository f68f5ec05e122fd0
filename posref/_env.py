"""Flags read from the environment, read when asked: shared by the notebooks' flags (``posref.notebook``) and the
explorers, which must not import them (the explorers import only the core and the lab)."""

from __future__ import annotations

import os

from posref.i18n import _

_ON = ("1", "true", "yes", "on")
_OFF = ("", "0", "false", "no", "off")


def flag(name: str) -> bool:
    """Whether the environment variable ``name`` is on (``1``, ``true``, ``yes``, ``on``, any case); off when unset,
    empty, ``0``, ``false``, ``no`` or ``off``; anything else is a ``ValueError`` naming it."""
    value = os.environ.get(name, "").strip().lower()
    if value not in _ON + _OFF:
        raise ValueError(
            _("{name}={value!r}: expected one of 1/true/yes/on or 0/false/no/off (or unset)").format(
                name=name, value=os.environ[name]
            )
        )
    return value in _ON
