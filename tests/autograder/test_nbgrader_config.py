"""nbgrader's own commands under the course configuration: plain autograde refused, feedback sanitised."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from autograder.course import CONFIG, REPO, tool_path


def test_feedback_pages_sanitise_what_the_student_wrote_and_keep_the_instructors_cells(tmp_path, monkeypatch):
    """A student's markdown cell with `<script>` or `onerror=` went verbatim into the feedback page (nbgrader's
    feedback template ignores HTMLExporter.sanitize_html)."""
    import nbformat
    from traitlets.config.loader import PyFileConfigLoader

    monkeypatch.setenv("POSREF_COURSE_DIR", str(tmp_path))
    config = PyFileConfigLoader(str(CONFIG)).load_config()
    [sanitise] = [
        p
        for p in config.GenerateFeedback.preprocessors
        if getattr(p, "__name__", "") == "StudentCellsSanitized"
    ]
    locked = {"nbgrader": {"grade_id": "intro", "locked": True}}
    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_markdown_cell("Positions $i < j$ <b>matter</b>", metadata=locked),
        nbformat.v4.new_markdown_cell("mine <script>alert(1)</script><img src=x onerror=alert(2)>"),
        nbformat.v4.new_markdown_cell("<script>x()</script>", metadata={"nbgrader": {"locked": True}}),
    ])  # fmt: skip
    nb, _ = sanitise(config=config)(nb, {})
    html, _ = config.GenerateFeedback.exporter_class(template_name="basic").from_notebook_node(nb)
    assert "Positions $i &lt; j$ <b>matter</b>" in html
    assert "<script" not in html and "onerror" not in html  # the last is locked but not a cell of the source
    assert "mine &lt;script&gt;alert(1)&lt;/script&gt;" in html


FORMGRADER_AUTOGRADE = """
import json, shutil, sys
from pathlib import Path
from nbgrader.apps import NbGraderAPI
from nbgrader.coursedir import CourseDirectory
from traitlets.config.loader import PyFileConfigLoader
config = PyFileConfigLoader(sys.argv[1]).load_config()
api = NbGraderAPI(coursedir=CourseDirectory(config=config), config=config)
assert api.generate_assignment("01_order", force=True)["success"]
submitted = Path(sys.argv[2]) / "submitted" / "alice" / "01_order"
shutil.copytree(Path("notebooks") / "01_order", submitted)
result = api.autograde("01_order", "alice", force=True, create=True)
print(json.dumps({"success": result["success"], "text": result.get("error", "") + result.get("log", "")}))
"""


@pytest.mark.slow
def test_the_formgraders_autograde_button_is_refused_unless_allowed(tmp_path):
    """The formgrader's button calls nbgrader's API, not its command line: its Execute step refuses to run
    submissions unsandboxed; allowed knowingly, nbgrader grades as usual."""
    env = {k: v for k, v in os.environ.items() if k != "POSREF_ALLOW_PLAIN_AUTOGRADE"}
    env["PATH"] = tool_path()  # as in an activated environment: nbgrader runs alembic from PATH
    env.update(POSREF_COURSE_DIR=str(tmp_path / "course"), POSREF_RELEASE_DIR=str(tmp_path / "release"))
    for allowed in (False, True):
        if allowed:
            env["POSREF_ALLOW_PLAIN_AUTOGRADE"] = "1"
        ran = subprocess.run(
            [sys.executable, "-c", FORMGRADER_AUTOGRADE, str(CONFIG), str(tmp_path / "course")],
            cwd=REPO, env=env, capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        assert ran.returncode == 0, ran.stderr[-3000:]
        result = json.loads(ran.stdout.strip().splitlines()[-1])
        assert result["success"] is allowed, result["text"][-3000:]
        assert ("python -m autograder autograde" in result["text"]) is not allowed, result["text"][-3000:]
        shutil.rmtree(tmp_path / "course")


@pytest.mark.parametrize("launcher", ["console script", "python -m nbgrader"])
def test_plain_nbgrader_autograde_is_refused_unless_allowed(tmp_path, launcher):
    """Typed by hand, `nbgrader autograde` would grade unsandboxed over the score of record: the config refuses it."""
    if launcher == "console script":  # what `nbgrader ...` runs: the environment's bin/nbgrader
        script = Path(sys.executable).parent / "nbgrader"
        if not script.is_file():
            pytest.skip(f"no nbgrader console script beside {sys.executable}")
        command = [str(script)]
    else:
        command = [sys.executable, "-m", "nbgrader"]
    env = {k: v for k, v in os.environ.items() if k != "POSREF_ALLOW_PLAIN_AUTOGRADE"}
    env["PATH"] = tool_path()  # as in an activated environment: nbgrader runs alembic from PATH
    env["POSREF_COURSE_DIR"] = str(tmp_path / "course")
    args = ["autograde", "01_order", f"--JupyterApp.config_file={CONFIG}"]
    refused = subprocess.run(
        [*command, *args], cwd=REPO, env=env, capture_output=True, text=True, timeout=600
    )
    assert refused.returncode != 0
    assert "python -m autograder autograde" in refused.stderr, refused.stderr[-2000:]
    # allowed knowingly, nbgrader itself runs (and finds nothing submitted in the empty course)
    env["POSREF_ALLOW_PLAIN_AUTOGRADE"] = "1"
    allowed = subprocess.run(
        [*command, *args], cwd=REPO, env=env, capture_output=True, text=True, timeout=600
    )
    assert "python -m autograder autograde" not in allowed.stderr, allowed.stderr[-2000:]
    # other nbgrader commands are untouched
    env.pop("POSREF_ALLOW_PLAIN_AUTOGRADE")
    listed = subprocess.run(
        [*command, "db", "student", "list", f"--JupyterApp.config_file={CONFIG}"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert listed.returncode == 0, listed.stderr[-2000:]
