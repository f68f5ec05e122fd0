"""The course's Validate button and Assignment List (``posref_jupyter/validate.py``,
``posref_jupyter/assignment_list.py``, ``posref_jupyter/labextension/``), outside a browser: the committed bundle is
the build of the committed source (``tools/labextension.py``), the student's JupyterLab loads the button in place of
nbgrader's, the hub's student the course's Assignment List in place of nbgrader's, and the instructor's keeps
nbgrader's both; their words are posref's catalogs' in the edition's language, and every word the code reads is one
the server gives. In a browser: ``test_editions_lab.test_validate_speaks_the_editions_language`` (the button) and
``test_hub`` (the Assignment List).
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
from posref_jupyter import assignment_list, validate

REPO = Path(__file__).resolve().parents[2]
NBGRADERS = "@jupyter/nbgrader:validate-assignment"
OURS = "@posref/validate"
NBGRADERS_LIST = ("@jupyter/nbgrader:assignment-list", "@jupyter/nbgrader:menu")  # the panel and its menu
OUR_LIST = "@posref/validate:assignment-list"
SOURCE = REPO / "posref_jupyter" / "labextension" / "src"


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
    script = source / "src" / "button.js"
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


def _disabled(said: str) -> set[str]:
    """The plugins ``jupyter labextension list`` says are disabled."""
    return set(said.split("Disabled extensions:")[1].split()) if "Disabled extensions:" in said else set()


@pytest.mark.slow  # five `jupyter labextension list`: seconds each
def test_each_lab_loads_the_courses_button_and_list_where_it_disables_nbgraders():
    """posref lab: the course's button, no Assignment List at all (no exchange); the hub's student: the course's
    button and Assignment List, nbgrader's neither; the instructor's labs: nbgrader's, none of the course's."""
    clean = {k: v for k, v in os.environ.items() if k not in ("JUPYTER_CONFIG_PATH", "JUPYTER_PATH")}
    taiwan = launch.EDITIONS["zh-TW"]
    for who, env, list_ours in (
        ("posref lab", launch.lab_env(lang=taiwan, env=clean), False),
        ("posref explore", launch.lab_env(env=clean), False),
        ("the hub's student", {**clean, **launch.hub_environment(taiwan)}, True),
    ):
        said = _extensions(env)
        assert re.search(rf"{OURS} v\S+ enabled OK", said), f"{who}: {said}"
        disabled = _disabled(said)
        assert NBGRADERS in disabled and set(NBGRADERS_LIST) <= disabled, f"{who}: {said}"
        assert (OUR_LIST not in disabled) == list_ours, f"{who}: {said}"
    for who, env in {
        "posref lab --instructor-tools": launch.lab_env(instructor_tools=True, env=clean),
        "python -m autograder lab": instructor_lab.lab_env(clean),
    }.items():
        said = _extensions(env)
        assert OURS not in said, f"{who}: {said}"
        assert not {NBGRADERS, *NBGRADERS_LIST} & _disabled(said), f"{who}: {said}"  # nbgrader's, as before


def test_the_student_config_enables_the_words_where_it_disables_nbgraders_button():
    server = json.loads((launch.STUDENT_CONFIG / "jupyter_server_config.json").read_text())
    page = json.loads((launch.STUDENT_CONFIG / "labconfig" / "page_config.json").read_text())
    assert server["ServerApp"]["jpserver_extensions"]["posref_jupyter.validate"] is True
    assert page["disabledExtensions"][NBGRADERS] is True
    assert (launch.STUDENT_DATA / "labextensions" / OURS / "package.json").is_file()


def test_the_hub_config_enables_the_lists_words_where_it_swaps_nbgraders_list_for_the_courses():
    server = json.loads((launch.HUB_CONFIG / "jupyter_server_config.json").read_text())
    page = json.loads((launch.HUB_CONFIG / "labconfig" / "page_config.json").read_text())
    extensions = server["ServerApp"]["jpserver_extensions"]
    assert extensions["posref_jupyter.assignment_list"] is True
    assert extensions["nbgrader.server_extensions.assignment_list"] is True  # the handlers the panel calls
    assert page["disabledExtensions"][OUR_LIST] is False
    assert all(page["disabledExtensions"][plugin] is True for plugin in NBGRADERS_LIST)


@pytest.mark.parametrize(
    ("extension", "lang", "key", "said"),
    [("validate", "zh-CN", "title", "验证结果"), ("assignment_list", "zh-TW", "released", "已發布的作業")],
)
def test_each_server_extension_puts_the_words_of_posref_lang_in_the_page(
    monkeypatch, extension, lang, key, said
):
    """The button's words (``validate``) and the list's (``assignment_list``), each under its own page option, the
    page's other options kept."""
    module = {"validate": validate, "assignment_list": assignment_list}[extension]
    monkeypatch.setenv("POSREF_LANG", lang)
    settings = {"page_config_data": {"other": 1}}
    app = SimpleNamespace(web_app=SimpleNamespace(settings=settings), log=logging.getLogger("test"))
    module._load_jupyter_server_extension(app)
    words = settings["page_config_data"][module.PAGE_OPTION]
    assert words == module.words(lang) and words[key] == said
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


def test_the_lists_words_are_the_catalogs_in_each_language():
    english = assignment_list.words("en")
    assert english == assignment_list.MESSAGES  # English is the source
    for tag, said in {"zh-TW": "已繳交的作業", "zh-CN": "已提交的作业"}.items():
        words = assignment_list.words(tag)
        assert words["submitted"] == said, words
        # the names the course's pages give (Nbgrader → Assignment List, Fetch, Submit) stay; the rest is Chinese
        kept = {"menu", "assignment_list", "fetch", "submit"}
        assert {k: words[k] for k in kept} == {k: english[k] for k in kept}, words
        assert all(re.search(r"[\u4e00-\u9fff]", words[k]) for k in set(words) - kept), words


def _read(name: str) -> dict[str, set[str]]:
    """Which names each source file reads from ``name`` (``words.title`` -> ``title``)."""
    return {p.name: set(re.findall(rf"\b{name}\.(\w+)", p.read_text())) for p in sorted(SOURCE.glob("*.js"))}


def test_the_code_says_only_the_words_the_server_gives_it():
    """Every ``words.NAME`` (the button's and the Validate dialog's) and ``texts.NAME`` (the Assignment List's) the
    code reads is one the server extensions give, and every word given is read."""
    for name, given in {"words": validate.words("en"), "texts": assignment_list.words("en")}.items():
        read = set().union(*_read(name).values())
        assert read == set(given), (name, read ^ set(given))
    # one Validate dialog: the toolbar's button and the list's Validate both show it, neither writes its own
    assert {"passed", "failed", "title"} <= _read("words")["validation.js"]
    for other in ("button.js", "assignments.js"):
        assert not {"passed", "failed", "title"} & _read("words")[other], other
        assert "validateAndShow" in (SOURCE / other).read_text()


def test_every_button_of_the_list_says_in_a_dialog_when_nbgrader_could_not():
    """Each route a button of the Assignment List POSTs has its own refusal (a title and a sentence): a failed Fetch
    once replaced the whole list with "The list of assignments could not be loaded", nbgrader's traceback under it."""
    code = (SOURCE / "assignments.js").read_text()
    posted = set(re.findall(r"this\.action\([^)]*'(assignments/\w+)'", code))
    table = code[code.index("function refusals(") :]
    refused = dict(
        re.findall(r"'(assignments/\w+)': \[texts\.(\w+), texts\.\w+\]", table[: table.index("\n}")])
    )
    assert posted == {"assignments/fetch", "assignments/submit", "assignments/fetch_feedback"}
    assert set(refused) == posted and len(set(refused.values())) == len(posted)
    assert (
        "{ refused }" in code and "finally" in code
    )  # every button's call, and its button always given back


def test_no_sentence_is_written_in_the_code():
    """The source and the bundle hold none of the sentences the server gives (nor nbgrader's panel's): each is
    said from the page's words only."""
    bundle = REPO / "posref_jupyter" / "jupyter_data" / "labextensions" / OURS / "static"
    comments = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)  # which name the panel as the course's pages do
    code = {p: comments.sub("", p.read_text()) for p in [*SOURCE.glob("*.js"), *bundle.glob("*.js")]}
    english = [*validate.MESSAGES.values(), *assignment_list.MESSAGES.values()]
    sentences = [max(re.split(r"\{\w+\}", m), key=len).strip() for m in english if " " in m] + [
        "Released assignments", "Success! Your notebook passes all the tests.", "Fetch Feedback"
    ]  # fmt: skip
    found = [f"{p.name}: {m!r}" for p, text in code.items() for m in sentences if m in text]
    assert not found, found


def test_the_words_load_without_torch():
    """A student's server loads the extension at every start: it must not import posref (torch)."""
    code = "import sys, posref_jupyter.validate as v; print(v.words()['title'], 'torch' in sys.modules)"
    env = {**os.environ, "POSREF_LANG": "zh-TW"}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["驗證結果", "False"], done.stdout
