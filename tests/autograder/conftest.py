"""Fixtures of the autograder's tests."""

from __future__ import annotations

from pathlib import Path

import pytest
from nbgrader.api import Gradebook

from autograder.course import tools_on_path


@pytest.fixture(scope="session")
def empty_gradebook(tmp_path_factory) -> Path:
    """An empty nbgrader gradebook, made once: nbgrader takes seconds to make one (it runs alembic)."""
    path = tmp_path_factory.mktemp("gradebook") / "gradebook.db"
    with tools_on_path(), Gradebook(f"sqlite:///{path}"):
        pass
    return path
