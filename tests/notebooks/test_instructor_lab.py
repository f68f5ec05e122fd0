"""The instructor's route: ``python -m autograder lab`` opens JupyterLab with the course's nbgrader
configuration. The formgrader lists the assignments and students and opens a submission with its score of
record; interactive kernels do not run in grading mode; nothing is written into the repository.

The course is a temporary one: 01_order released into it (not into ``notebooks/``), the solution notebook
imported as student ``alice`` and autograded (the score of record).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.parse
from pathlib import Path

import notebook_helpers as nh
import pytest
from nbgrader.api import Gradebook
from test_browser import HANG_S, LabServer, browser_page, chromium  # noqa: F401 (a fixture)

from autograder import lab as instructor_lab
from autograder.course import CONFIG
from posref import launch

REPO = Path(__file__).resolve().parents[2]


def _git_status() -> str:
    """Untracked and changed files of the checkout, ignored ones left out."""
    return subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=all"], cwd=REPO, capture_output=True, text=True
    ).stdout


def test_instructor_lab_command_uses_the_course_configuration(monkeypatch, tmp_path):
    monkeypatch.setenv("POSREF_COURSE_DIR", str(tmp_path))
    command = instructor_lab.lab_command(["--no-browser"])
    assert f"--ServerApp.root_dir={REPO}" in command
    assert f"--JupyterApp.config_file={CONFIG}" in command
    assert f"--FileCheckpoints.checkpoint_dir={tmp_path / 'checkpoints'}" in command  # not in the checkout
    assert command[-1] == "--no-browser"
    assert "JUPYTER_CONFIG_PATH" not in launch.lab_env(instructor_tools=True, env={})  # formgrader kept


def test_only_nbgraders_execute_kernels_run_in_grading_mode(tmp_path):
    """Loading the configuration (as the instructor's JupyterLab does) leaves the process's environment alone;
    the kernels of nbgrader's Execute step get POSREF_GRADING=1."""
    code = f"""
import asyncio, os, sys
from jupyter_client.asynchronous import AsyncKernelClient
from traitlets.config.loader import PyFileConfigLoader
config = PyFileConfigLoader({str(CONFIG)!r}).load_config()
assert "POSREF_GRADING" not in os.environ, "loading the nbgrader config set POSREF_GRADING in this process"
[execute] = [p for p in config.Autograde.autograde_preprocessors if p.__name__ == "ExecuteIfAllowed"]

async def main():
    km = execute().kernel_manager_class()
    await km.start_kernel()
    try:
        kc = km.client()
        kc.start_channels()
        await kc.wait_for_ready(timeout=300)
        reply = await kc.execute_interactive("import os; print(os.environ.get('POSREF_GRADING'))", timeout=300,
                                            output_hook=lambda m: m["msg_type"] == "stream" and print("kernel:", m["content"]["text"].strip()))
        kc.stop_channels()
    finally:
        await km.shutdown_kernel(now=True)

asyncio.run(main())
"""
    env = {**os.environ, "POSREF_COURSE_DIR": str(tmp_path), "PYTHONPATH": str(REPO)}
    env.pop("POSREF_GRADING", None)
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "kernel: 1" in done.stdout, done.stdout


def _kernel_env_value(server: LabServer, name: str) -> str:
    """``os.environ.get(name)`` in a fresh interactive kernel of ``server`` (started through its REST API)."""
    from jupyter_client import BlockingKernelClient

    kernel = json.loads(server.api("POST", "/api/kernels"))
    connection = server.home / "runtime" / f"kernel-{kernel['id']}.json"
    deadline = time.monotonic() + HANG_S
    while not connection.exists() and time.monotonic() < deadline:
        time.sleep(0.2)  # polling for the connection file, not waiting a fixed time
    client = BlockingKernelClient()
    client.load_connection_file(str(connection))
    client.start_channels()
    try:
        while True:  # a kernel still starting on a loaded machine misses heartbeats and reads as dead
            try:
                client.wait_for_ready(timeout=60)
                break
            except RuntimeError:
                assert time.monotonic() < deadline, f"the kernel did not start:\n{server.log_tail()}"
        out: list[str] = []

        def keep(msg):
            if msg["msg_type"] == "stream":
                out.append(msg["content"]["text"])

        client.execute_interactive(
            f"import os; print(os.environ.get({name!r}))", timeout=HANG_S, output_hook=keep
        )
        return "".join(out).strip()
    finally:
        client.stop_channels()
        server.api("DELETE", f"/api/kernels/{kernel['id']}")


@pytest.mark.browser
@pytest.mark.slow
@pytest.mark.timeout(900)  # a hang guard (test_browser.HANG_S)
def test_formgrader_lists_the_course_and_opens_a_submission_with_its_score_of_record(chromium, tmp_path):  # noqa: F811
    course = tmp_path / "course"
    env = {
        **os.environ,
        "POSREF_COURSE_DIR": str(course),
        "POSREF_RELEASE_DIR": str(tmp_path / "release"),  # not the checkout's notebooks/
        "POSREF_FAST": "1",
        "PYTHONPATH": str(REPO),
    }
    env.pop("POSREF_GRADING", None)
    nh.autograder("release", "01_order", env=env)
    submission = tmp_path / "downloads" / "alice" / "01_order"
    submission.mkdir(parents=True)
    (submission / "01_order.ipynb").write_bytes((REPO / "solutions/01_order/01_order.ipynb").read_bytes())
    nh.autograder("import", str(tmp_path / "downloads"), env=env)
    nh.autograder("autograde", "01_order", "--student", "alice", "--workers", "1", env=env)

    before = _git_status()
    (tmp_path / "lab").mkdir()
    server = LabServer(tmp_path / "lab", launcher="autograder", env={"POSREF_COURSE_DIR": str(course),
                       "POSREF_RELEASE_DIR": str(tmp_path / "release")})  # fmt: skip
    server.env.pop("POSREF_GRADING", None)
    shot_dir = Path(os.environ.get("POSREF_SCREENSHOT_DIR") or tmp_path)
    shot_dir.mkdir(parents=True, exist_ok=True)
    try:
        server.start()
        assert _kernel_env_value(server, "POSREF_GRADING") == "None", (
            "interactive kernels run in grading mode"
        )
        [notebook] = json.loads(server.api("GET", "/formgrader/api/submitted_notebooks/01_order/01_order"))
        with browser_page(chromium, server.home, width=1400) as page:
            # offline, as in a classroom without internet: every request that is not to this server fails
            blocked: list[str] = []

            def only_this_server(route):
                if urllib.parse.urlsplit(route.request.url).hostname in ("127.0.0.1", "localhost"):
                    return route.continue_()
                blocked.append(route.request.url)
                return route.abort()

            page.route("**/*", only_this_server)
            try:
                page.goto(f"{server.url}/formgrader/manage_assignments?token={server.token}")
                page.locator("table a", has_text="01_order").first.wait_for()
                page.goto(f"{server.url}/formgrader/manage_students")
                page.locator("table td", has_text="alice").first.wait_for()
                page.goto(f"{server.url}/formgrader/submissions/{notebook['id']}/")
                record = page.locator(".output_area pre", has_text="Score of record").first
                record.wait_for()
                # the notebook's formulas typeset by MathJax (from this server, the CDN being unreachable)
                page.locator(".text_cell_render .MathJax").first.wait_for()
                record.scroll_into_view_if_needed()
                page.screenshot(path=str(shot_dir / "formgrader_submission.png"))
                # manual grading: a score typed for a written answer is saved in the course's gradebook
                page.fill("input.score#q_two_layers", "1")
                page.keyboard.press("Tab")
                page.locator(".score-saved").first.wait_for(state="attached")
            except Exception:
                page.screenshot(path=str(shot_dir / "formgrader_failure.png"))
                print(f"\nJupyterLab log tail:\n{server.log_tail()}")
                raise
    finally:
        server.stop()
    assert _git_status() == before, "the instructor's lab wrote into the checkout"
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        deadline = time.monotonic() + 120  # a hang guard: the save was a request of a loaded machine's server
        while gb.find_grade("q_two_layers", "01_order", "01_order", "alice").manual_score != 1:
            assert time.monotonic() < deadline, "the manual grade did not reach the gradebook"
            time.sleep(0.2)  # polling the gradebook, not waiting a fixed time
            gb.db.expire_all()
    assert not (REPO / "gradebook.db").exists()
