"""The course's Validate button (``posref_jupyter/validate.py``, ``posref_jupyter/labextension/``), outside a
browser: the committed bundle is the build of the committed source (``tools/labextension.py``), the student's
JupyterLab loads it in place of nbgrader's button and the instructor's keeps nbgrader's, and its words are posref's
catalogs' in the edition's language. In a browser: ``test_editions_lab.test_validate_speaks_the_editions_language``.
"""

from __future__ import annotations

import importlib.util
import json
import logging
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from autograder.pages import lab as instructor_lab
from posref import launch
from posref_jupyter import validate

REPO = Path(__file__).resolve().parents[2]
NBGRADERS = "@jupyter/nbgrader:validate-assignment"
OURS = "@posref/validate"


def _tool():
    spec = importlib.util.spec_from_file_location("labextension_tool", REPO / "tools" / "labextension.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_committed_bundle_is_the_build_of_the_committed_source():
    assert _tool().problems() == []


def test_a_source_changed_since_the_build_is_caught(tmp_path, monkeypatch):
    tool = _tool()
    source = tmp_path / "labextension"
    source.mkdir()
    for name in tool.INPUTS:
        if (tool.SOURCE / name).is_dir():
            shutil.copytree(tool.SOURCE / name, source / name)
        else:
            shutil.copy2(tool.SOURCE / name, source / name)
    monkeypatch.setattr(tool, "SOURCE", source)
    assert tool.problems() == []  # the copy is what was built
    script = source / "src" / "index.js"
    script.write_text(script.read_text().replace("'validate-button'", "'validate-button posref'"))
    assert tool.problems() == [
        "the source changed since the bundle was built: run `make labextension` and commit the bundle"
    ]


def _extensions(env: dict[str, str]) -> str:
    """What ``jupyter labextension list`` says in a server started with ``env``."""
    env = {**env, "PATH": os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])}
    done = subprocess.run(
        [sys.executable, "-m", "jupyter", "labextension", "list"],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    return re.sub(r"\x1b\[[0-9;]*m", "", done.stdout + done.stderr)


@pytest.mark.slow  # four `jupyter labextension list`: seconds each
def test_the_students_lab_shows_the_courses_button_and_the_instructors_nbgraders():
    clean = {k: v for k, v in os.environ.items() if k not in ("JUPYTER_CONFIG_PATH", "JUPYTER_PATH")}
    taiwan = launch.EDITIONS["zh-TW"]
    for who, env in {
        "posref lab": launch.lab_env(lang=taiwan, env=clean),
        "the hub's student": {**clean, **launch.hub_environment(taiwan)},
    }.items():
        said = _extensions(env)
        assert re.search(rf"{OURS} v\S+ enabled OK", said), f"{who}: {said}"
        disabled = said.split("Disabled extensions:")[1]
        assert NBGRADERS in disabled, f"{who}: {said}"
    for who, env in {
        "posref lab --instructor-tools": launch.lab_env(instructor_tools=True, env=clean),
        "python -m autograder lab": instructor_lab.lab_env(clean),
    }.items():
        said = _extensions(env)
        assert OURS not in said and NBGRADERS not in said, f"{who}: {said}"  # nbgrader's button, as before


def test_the_student_config_enables_the_words_where_it_disables_nbgraders_button():
    server = json.loads((launch.STUDENT_CONFIG / "jupyter_server_config.json").read_text())
    page = json.loads((launch.STUDENT_CONFIG / "labconfig" / "page_config.json").read_text())
    assert server["ServerApp"]["jpserver_extensions"]["posref_jupyter.validate"] is True
    assert page["disabledExtensions"][NBGRADERS] is True
    assert (launch.STUDENT_DATA / "labextensions" / OURS / "package.json").is_file()


def test_the_server_extension_puts_the_words_of_posref_lang_in_the_page(monkeypatch):
    monkeypatch.setenv("POSREF_LANG", "zh-CN")
    settings = {"page_config_data": {"other": 1}}
    app = SimpleNamespace(web_app=SimpleNamespace(settings=settings), log=logging.getLogger("test"))
    validate._load_jupyter_server_extension(app)
    said = settings["page_config_data"][validate.PAGE_OPTION]
    assert said == validate.words("zh-CN") and said["title"] == "验证结果"
    assert settings["page_config_data"]["other"] == 1


def test_the_words_are_the_catalogs_in_each_language():
    english = validate.words("en")
    assert {k: english[k] for k in validate.MESSAGES} == validate.MESSAGES  # English is the source
    taiwan = validate.words("zh-TW")
    assert taiwan["title"] == "驗證結果" and taiwan["ok"] == "確定" and taiwan["validate"] == "Validate"
    assert (
        taiwan["type_changed"]["code"]["markdown"]
        == "這個儲存格的類型從「程式碼」被改成了「Markdown」；請把它改回來："
    )
    assert (
        english["type_changed"]["raw"]["code"]
        == "This cell's type was changed from raw to code; change it back:"
    )
    assert taiwan["nbgrader"]["You did not provide a response."] == "你還沒有在這裡作答。"
    assert validate.words("zh-CN")["failed"].startswith("这本笔记本有 {count} 个检查没有通过")


def test_the_button_says_only_the_words_the_server_gives_it():
    """Every ``words.NAME`` the button reads is one the server extension gives, and every word given is read."""
    script = (REPO / "posref_jupyter" / "labextension" / "src" / "index.js").read_text()
    read = set(re.findall(r"\bwords\.(\w+)", script))
    assert read == set(validate.words("en")), read ^ set(validate.words("en"))


def test_the_words_load_without_torch():
    """A student's server loads the extension at every start: it must not import posref (torch)."""
    code = "import sys, posref_jupyter.validate as v; print(v.words()['title'], 'torch' in sys.modules)"
    env = {**os.environ, "POSREF_LANG": "zh-TW"}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["驗證結果", "False"], done.stdout
