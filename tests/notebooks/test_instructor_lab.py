"""The instructor's route: ``python -m autograder lab`` opens JupyterLab with the course's nbgrader
configuration, and only nbgrader's Execute step runs kernels in grading mode. The formgrader in a browser (the
assignments and students listed, a submission opened with its score of record, interactive kernels not grading,
nothing written into the repository) is tested on test_instructor_pages.py's course and server, built once.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from autograder.course import CONFIG
from autograder.pages import lab as instructor_lab
from posref import launch

REPO = Path(__file__).resolve().parents[2]


def test_instructor_lab_command_uses_the_course_configuration(monkeypatch, tmp_path):
    monkeypatch.setenv("POSREF_COURSE_DIR", str(tmp_path))
    command = instructor_lab.lab_command(["--no-browser"])
    assert f"--ServerApp.root_dir={REPO}" in command
    assert not any("config_file" in option for option in command)  # nbgrader finds it on the config path
    assert instructor_lab.lab_env({})["JUPYTER_CONFIG_PATH"].split(os.pathsep)[0] == str(CONFIG.parent)
    assert f"--FileCheckpoints.checkpoint_dir={tmp_path / 'checkpoints'}" in command  # not in the checkout
    assert command[-1] == "--no-browser"
    # the formgrader kept (no student config), JupyterLab's news off
    assert launch.lab_env(instructor_tools=True, env={})["JUPYTER_CONFIG_PATH"] == str(launch.COURSE_CONFIG)


def test_nbgraders_extensions_find_the_course_configuration(tmp_path):
    """Each of nbgrader's server extensions loads ``nbgrader_config.py`` from the folders Jupyter searches (the
    formgrader's API at every request): the instructor's environment puts the course's there, so none logs "No
    nbgrader_config.py file found" (issue 42.4) and each gets the course's settings."""
    assert CONFIG.name == "nbgrader_config.py"
    code = (
        "import os; from jupyter_core.paths import jupyter_config_path; from nbgrader.apps import NbGrader\n"
        "app = NbGrader(); app.config_file_paths.append([os.getcwd(), *jupyter_config_path()])\n"
        "app.load_config_file(); print('course', app.config.CourseDirectory.course_id)"
    )
    env = instructor_lab.lab_env({**os.environ, "POSREF_COURSE_DIR": str(tmp_path)})
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "course posref" in done.stdout and "No nbgrader_config.py" not in done.stderr, done.stderr


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
