"""Opening an edition of the course (issue 28.6): ``make lab EDITION=zh-TW`` / ``posref lab --lang zh-TW`` selects
everything a student of that edition sees: the edition's releases brought into a work folder of its own (which git
ignores), its start page, posref's messages in its language (``POSREF_LANG`` in the server's environment, which its
kernels inherit) and JupyterLab's own interface in its language (the language pack that the set-up installs for
that edition only, selected as a default of the course's own settings); ``make lab`` alone opens English.

One ``posref lab --lang zh-TW`` server (``zh_tw_lab``), on this checkout's zh-TW releases (``editions/zh-TW/notebooks/``,
generated from the catalogs), serves the API checks and the zh-TW screenshots of docs/: the zh-TW start page, a
failing check's message in a zh-TW notebook, a speed line and the Validate dialog; a ``posref lab --lang zh-CN``
server (``zh_cn_lab``) serves the zh-CN start page's screenshot and, with an English one (``en_lab``), the Validate
dialog in its language.
"""

from __future__ import annotations

import json
import logging
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import nbformat
import pytest
import student_text
from test_browser import (  # noqa: F401 (chromium is a fixture)
    HANG_S,
    LabServer,
    assert_names_what_jupyterlab_shows,
    browser_page,
    chromium,
    run_all,
)

from autograder.editions.notebook import EDITION_TEXT
from posref import explore, i18n, launch, workfolder
from posref_jupyter import lab_language, validate

REPO = Path(__file__).resolve().parents[2]
CHINESE = re.compile(r"[\u4e00-\u9fff]")


def _notebook(path: Path, *cells: str) -> None:
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell(c) for c in cells])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, path)


def _checkout(root: Path, *tags: str) -> Path:
    """A checkout's releases: the English ones and those of the editions ``tags``, each with its start page."""
    _notebook(root / "notebooks" / launch.START_PAGE, "# Start here")
    for tag in tags:
        _notebook(root / "editions" / tag / "notebooks" / launch.START_PAGE, f"# 從這裡開始 ({tag})")
    return root


def test_each_edition_names_its_folders_its_language_and_its_pack(monkeypatch, tmp_path):
    assert list(launch.EDITIONS) == ["en", "zh-TW", "zh-CN"]
    monkeypatch.setattr(launch, "CHECKOUT", _checkout(tmp_path, "zh-TW"))
    english, taiwan = launch.ENGLISH, launch.EDITIONS["zh-TW"]
    assert launch.course_folders() == (tmp_path / "work", tmp_path / "notebooks")  # make lab: as before
    assert launch.course_folders(lang=taiwan) == (
        tmp_path / "work-zh-TW",
        tmp_path / "editions/zh-TW/notebooks",
    )
    with pytest.raises(FileNotFoundError, match="no zh-CN edition .*git pull"):
        launch.course_folders(lang=launch.EDITIONS["zh-CN"])
    assert launch.course_folders(tmp_path, lang=taiwan) == (tmp_path, None)  # --folder alone: served as it is
    assert english.pack is None and english.pack_installed()
    for spelling in ("zh-TW", "zh_TW", "ZH-tw", " zh-tw "):
        assert launch.edition(spelling) is taiwan
    with pytest.raises(ValueError, match="no edition 'fr': the course's editions are en, zh-TW, zh-CN"):
        launch.edition("fr")


@pytest.mark.parametrize("tag", list(launch.EDITIONS))
def test_an_editions_server_gets_its_language(tag):
    """The edition's tag in POSREF_LANG, beside the student config (whose server extension reads it); the instructor's
    server is left as it was."""
    lang = launch.EDITIONS[tag]
    env = launch.lab_env(
        lang=lang, env={"JUPYTER_CONFIG_PATH": "/elsewhere", "POSREF_LANG": "fr", "PATH": "/bin"}
    )
    assert env["POSREF_LANG"] == tag
    assert env["JUPYTER_CONFIG_PATH"].split(os.pathsep) == [
        str(launch.STUDENT_CONFIG),
        str(launch.LANGUAGE_CONFIG),
        str(launch.COURSE_CONFIG),
        "/elsewhere",
    ]
    assert lab_language.requested_locale(env) == lang.locale
    assert _server_extensions(env) == {
        "posref_jupyter.lab_language": True,
        "nbgrader.server_extensions.formgrader": False,  # the student's JupyterLab hides the formgrader
        "nbgrader.server_extensions.assignment_list": False,
        "nbgrader.server_extensions.course_list": False,
        "posref_jupyter.validate": True,
    }
    bare = launch.lab_env(instructor_tools=True, env={"PATH": "/bin"})  # python -m autograder lab's
    assert "POSREF_LANG" not in bare and bare["JUPYTER_CONFIG_PATH"] == str(launch.COURSE_CONFIG)


def _server_extensions(env: dict[str, str]) -> dict[str, bool]:
    """The server extensions that the config folders on ``env``'s JUPYTER_CONFIG_PATH enable or disable, merged as
    the Jupyter server merges them when it starts."""
    from jupyter_server.extension.config import ExtensionConfigManager

    folders = env.get("JUPYTER_CONFIG_PATH", "").split(os.pathsep)
    return ExtensionConfigManager(read_config_path=[f for f in folders if f]).get_jpserver_extensions()


def test_the_instructors_lab_follows_lang_too(monkeypatch, tmp_path):
    """``posref lab --instructor-tools --lang zh-TW``: the formgrader kept (no student config), and JupyterLab's
    interface in zh-TW as for a student (the language config's server extension reads POSREF_LANG)."""
    monkeypatch.setattr(launch, "CHECKOUT", _checkout(tmp_path, "zh-TW"))
    started = []
    monkeypatch.setattr(launch.subprocess, "call", lambda command, env: started.append((command, env)) or 0)
    parser = launch.argparse.ArgumentParser()
    launch.add_lab(parser.add_subparsers())
    args = parser.parse_args(["lab", "--instructor-tools", "--lang", "zh-TW", "--", "--no-browser"])
    assert args.handler(args) == 0
    ((command, env),) = started
    assert command[-1] == "--no-browser" and str(tmp_path / "work-zh-TW") in " ".join(command)
    assert env["POSREF_LANG"] == "zh-TW"
    assert env["JUPYTER_CONFIG_PATH"].split(os.pathsep)[0] == str(launch.LANGUAGE_CONFIG)
    assert str(launch.STUDENT_CONFIG) not in env["JUPYTER_CONFIG_PATH"]
    assert _server_extensions(env) == {"posref_jupyter.lab_language": True}  # the formgrader stays on
    taiwan = launch.EDITIONS["zh-TW"]
    assert lab_language.requested_locale(env) == (taiwan.locale if taiwan.pack_installed() else None)


def test_posref_update_speaks_the_editions_language(monkeypatch, tmp_path, capsys):
    """What ``posref update --lang zh-CN`` prints is in Simplified Chinese, and posref speaks as before afterwards
    (``posref lab`` says it the same way, in ``update_folder``)."""
    from posref import i18n

    monkeypatch.setattr(launch, "CHECKOUT", _checkout(tmp_path, "zh-CN"))
    parser = launch.argparse.ArgumentParser()
    launch.add_update(parser.add_subparsers())
    for _round in range(2):
        args = parser.parse_args(["update", "--lang", "zh-CN"])
        assert args.handler(args) == 0
    first, second = capsys.readouterr().err.strip().splitlines()[::2]
    assert (
        first == f"posref update: {tmp_path / 'work-zh-CN'}：来自 {tmp_path / 'editions/zh-CN/notebooks'}："
    ), first
    assert second.endswith("（没有复制任何文件，你的文件都没有改动）"), second
    assert i18n.get_language() == "en"
    with pytest.raises(FileNotFoundError, match="^這個 checkout 沒有 zh-TW 版本"):
        launch.run_update(parser.parse_args(["update", "--lang", "zh-TW"]))  # its errors: zh-TW
    assert i18n.get_language() == "en"


def test_the_server_extension_sets_jupyterlabs_default_locale(monkeypatch, tmp_path):
    """The server's default locale decides what a student who chose no language sees: the language pack the page
    loads and the menus' labels, which jupyterlab_server translates in the settings schemas (run here in this
    process, as its settings handler runs them); a language the student chose in their own settings wins."""
    from jupyterlab.commands import get_app_dir
    from jupyterlab_server import settings_utils, translations_handler
    from jupyterlab_server.translation_utils import translator

    for module in (settings_utils, translations_handler):
        monkeypatch.setattr(module, "SYS_LOCALE", "en")
    monkeypatch.setattr(translator, "_LOCALE", "en")
    monkeypatch.setattr(translator, "_TRANSLATORS", {})
    schemas = Path(get_app_dir()) / "schemas"
    handler = SimpleNamespace(  # what SchemaHandler.get_current_locale reads
        app_settings_dir=str(tmp_path / "app"),
        schemas_dir=str(schemas),
        settings_dir=str(tmp_path / "user-settings"),
        overrides={},
        labextensions_path=[],
        log=logging.getLogger("test"),
    )
    assert settings_utils.SchemaHandler.get_current_locale(handler) == "en"

    lab_language.set_default_locale("zh_CN")
    assert translations_handler.SYS_LOCALE == "zh_CN"  # the language pack of the page ("default")
    locale = settings_utils.SchemaHandler.get_current_locale(handler)
    assert locale == "zh_CN"
    translator.set_locale(locale)
    menus = json.loads((schemas / "@jupyterlab" / "mainmenu-extension" / "plugin.json").read_text())
    labels = {m["id"]: m["label"] for m in translator.translate_schema(menus)["jupyter.lab.menus"]["main"]}
    assert labels["jp-mainmenu-run"] == "运行" and labels["jp-mainmenu-file"] == "文件", labels

    chosen = (
        tmp_path / "user-settings" / "@jupyterlab" / "translation-extension" / "plugin.jupyterlab-settings"
    )
    chosen.parent.mkdir(parents=True)
    chosen.write_text('{"locale": "en"}')
    assert settings_utils.SchemaHandler.get_current_locale(handler) == "en"

    assert lab_language.requested_locale({"POSREF_LANG": "zh_cn"}) == "zh_CN"
    assert lab_language.requested_locale({"POSREF_LANG": "fr-FR"}) is None  # no pack for it
    assert lab_language.requested_locale({}) is None


@pytest.mark.parametrize("tag", ["zh-TW", "zh-CN"])
def test_an_editions_language_pack_is_its_extra_pinned_and_installed_for_the_tests(tag):
    lang = launch.EDITIONS[tag]
    (extra,) = re.findall(rf"^{tag.lower()} = \[(.*)\]$", (REPO / "pyproject.toml").read_text(), flags=re.M)
    assert f'"{lang.pack}>=' in extra and '"posref[course]"' in extra, (
        extra
    )  # make lab's set-up, and the pack
    assert re.search(rf"^{re.escape(lang.pack)}==", (REPO / "constraints.txt").read_text(), flags=re.M | re.I)
    assert lang.pack_installed(), f"{lang.pack} is not installed here: .[dev] holds it (make setup)"
    assert launch.missing_pack_note(lang) is None


def test_a_missing_language_pack_says_how_to_install_it(monkeypatch):
    monkeypatch.setattr(launch, "entry_points", lambda group: [])
    note = launch.missing_pack_note(launch.EDITIONS["zh-CN"])
    assert "menus stay in English" in note and "make lab EDITION=zh-CN" in note
    assert "jupyterlab-language-pack-zh-cn" in note and ".[zh-cn]" in note


def _make(*args: str) -> subprocess.CompletedProcess:
    """What ``make`` would run (``-n``), every rule as if out of date (``-B``): nothing is run."""
    if shutil.which("make") is None:
        pytest.skip("no make here: the Makefile's switch is checked where make is")
    return subprocess.run(["make", "-n", "-B", *args], cwd=REPO, capture_output=True, text=True, timeout=60)


def test_make_lab_edition_installs_that_editions_pack_and_opens_it():
    english = _make("lab")
    assert english.returncode == 0, english.stderr
    lab = [line.split() for line in english.stdout.splitlines() if "-m posref lab" in line]
    assert lab == [[".venv/bin/python", "-m", "posref", "lab"]], english.stdout
    assert "language-pack" not in english.stdout and ".installed-zh" not in english.stdout
    for tag in ("zh-TW", "zh-CN"):
        made = _make("lab", f"EDITION={tag}")
        assert made.returncode == 0, made.stderr
        assert f"-m pip install -q -c constraints.txt -e '.[{tag}]'" in made.stdout, made.stdout
        assert f"-m posref lab --lang {tag}\n" in made.stdout, made.stdout
        other = "zh-CN" if tag == "zh-TW" else "zh-TW"
        assert f".[{other}]" not in made.stdout  # only the edition's own pack
    wrong = _make("lab", "EDITION=fr")
    assert wrong.returncode != 0 and "EDITION=fr is not an edition of the course" in wrong.stderr


def test_git_ignores_every_editions_work_folder():
    for tag in launch.EDITIONS:
        rel = launch.EDITIONS[tag].work.relative_to(launch.CHECKOUT) / "01_order" / "01_order.ipynb"
        ignored = subprocess.run(
            ["git", "-C", str(REPO), "check-ignore", "-q", str(rel)], capture_output=True
        )
        if ignored.returncode == 128:
            pytest.skip("not a git checkout: nothing to ignore")
        assert ignored.returncode == 0, (
            f"git does not ignore {rel}: a student's answers would show in git status"
        )


# ---------------------------------------------------------------------------------------------------------------
# one zh-TW server, started as `make lab EDITION=zh-TW` starts it


def _edition_lab(tag: str, tmp_path_factory) -> Iterator[LabServer]:
    """A ``posref lab --lang <tag>`` server on this checkout's releases of that edition (generated from the
    catalogs), stopped after the module's tests."""
    base = tmp_path_factory.mktemp(tag)
    releases = launch.EDITIONS[tag].releases
    assert (releases / launch.START_PAGE).is_file(), f"no {tag} start page in {releases}"
    server = LabServer(base, launcher="posref", lab_args=("--lang", tag, "--releases", str(releases)))
    server.releases = releases
    try:
        server.start()
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def zh_tw_lab(tmp_path_factory) -> Iterator[LabServer]:
    yield from _edition_lab("zh-TW", tmp_path_factory)


@pytest.fixture(scope="module")
def en_lab(tmp_path_factory) -> Iterator[LabServer]:
    """The English edition's server (``make lab``), for the Validate dialog's English."""
    yield from _edition_lab("en", tmp_path_factory)


@pytest.fixture(scope="module")
def zh_cn_lab(tmp_path_factory) -> Iterator[LabServer]:
    """The zh-CN server, for its start page's screenshot and the Validate dialog."""
    yield from _edition_lab("zh-CN", tmp_path_factory)


def _server_process(server: LabServer):
    """The JupyterLab process that ``posref lab`` started (whose environment its kernels inherit)."""
    psutil = pytest.importorskip("psutil")
    (jupyterlab,) = [
        p for p in psutil.Process(server.proc.pid).children() if "jupyterlab" in " ".join(p.cmdline())
    ]
    return jupyterlab


@pytest.mark.slow  # starts the module's JupyterLab: 15-30 s
def test_posref_lab_lang_serves_the_editions_start_page_in_its_language(zh_tw_lab):
    server = zh_tw_lab
    log = server.log_tail(20_000)
    assert f"已加入 {launch.START_PAGE}" in log and "（zh-TW 版本）" in log, (
        log
    )  # posref lab speaks zh-TW too
    served = json.loads(server.api("GET", f"/api/contents/{launch.START_PAGE}"))["content"]
    released = nbformat.read(server.releases / launch.START_PAGE, as_version=4)
    assert [c["source"] for c in served["cells"]] == [c.source for c in released.cells]
    text = "\n".join(c.source for c in released.cells)  # and it sends the student to this edition's folder
    assert "`work-zh-TW/`" in text and "`make lab EDITION=zh-TW`" in text and "`work/`" not in text
    # the page loads the zh-TW pack (JupyterLab's "default" language is the server's), and the server translates
    # the settings schemas with it (the zh-TW pack has no labels of the main menu's own: Run stays Run there)
    assert "zh_TW" in json.loads(server.api("GET", "/lab/api/translations/"))["data"]
    pack = json.loads(server.api("GET", "/lab/api/translations/default"))["data"]["jupyterlab"]
    assert pack[""]["language"] == "zh-TW" and pack["Run All Cells"] == ["執行所有儲存格"]
    browser = "/lab/api/settings/@jupyterlab/filebrowser-extension:browser"
    assert json.loads(server.api("GET", browser))["schema"]["title"] == "檔案瀏覽器"
    env = _server_process(server).environ()
    assert env["POSREF_LANG"] == "zh-TW"
    assert env["JUPYTER_CONFIG_PATH"].split(os.pathsep)[0] == str(launch.STUDENT_CONFIG)
    assert "posref: JupyterLab's interface language is zh_TW (POSREF_LANG=zh-TW)" in server.log_tail(10**6)
    # the server imports nothing of posref's own (torch: seconds and hundreds of MB at every start)
    assert not [m.path for m in _server_process(server).memory_maps() if "libtorch" in m.path]


def _shot_dir(tmp_path: Path) -> Path:
    shots = Path(os.environ.get("POSREF_SCREENSHOT_DIR") or tmp_path)
    shots.mkdir(parents=True, exist_ok=True)
    return shots


def edition_pages(tag: str) -> dict[str, str]:
    """What a student of the edition ``tag`` reads about the interface: its README, its start page's markdown, and
    the pages posref writes in its language (the explore edition's note, the list of new versions waiting)."""
    start = nbformat.read(launch.EDITIONS[tag].releases / launch.START_PAGE, as_version=4)
    with i18n.speaking(tag):
        written = {
            "the explore note": explore.note_cell()["source"],
            workfolder.NEW_VERSIONS: workfolder.new_versions_page([("a.ipynb", "a.new.ipynb")]).decode(),
        }
    return {
        f"README.{tag}.md": (REPO / f"README.{tag}.md").read_text(encoding="utf-8"),
        f"editions/{tag}/notebooks/{launch.START_PAGE}": "\n".join(
            c.source for c in start.cells if c.cell_type == "markdown"
        ),
        **written,
    }


def _answer_stubs(releases: Path) -> set[str]:
    """The texts of the written answers' cells in the releases ``releases`` (what a student double-clicks)."""
    return {
        cell.source.strip()
        for path in releases.glob("*/*.ipynb")
        for cell in nbformat.read(path, as_version=4).cells
        if cell.cell_type == "markdown" and cell.metadata.get("nbgrader", {}).get("solution")
    }


@pytest.mark.parametrize("tag", list(launch.EDITIONS))
def test_the_pages_quote_the_stubs_the_editions_notebooks_hold(tag):
    """The answer cell's text the README and the start page quote is the one the edition's notebooks hold (zh-TW's
    read 請在這裡寫下你的答案, not nbgrader's English); the code stub they quote is the releases' too."""
    releases = launch.EDITIONS[tag].releases
    (stub,) = _answer_stubs(releases)
    start = "\n".join(c.source for c in nbformat.read(releases / launch.START_PAGE, as_version=4).cells)
    readme = (REPO / ("README.md" if tag == "en" else f"README.{tag}.md")).read_text(encoding="utf-8")
    for name, text in {"start page": start, "README": readme}.items():
        if name == "README" and tag == "en":
            continue  # the English README leaves the exercises to the start page
        assert stub in text, f"the {tag} {name} does not quote the answer cell's text {stub!r}"
        assert tag == "en" or "YOUR ANSWER HERE" not in text, (
            f"the {tag} {name} quotes nbgrader's English stub"
        )
        code = [c.source for p in releases.glob("*/*.ipynb") for c in nbformat.read(p, as_version=4).cells]
        english = '# YOUR CODE HERE\nraise NotImplementedError("not done yet: ...")'
        # the edition's own stub, as the page quotes it
        quoted = english if tag == "en" else EDITION_TEXT[english][tag]
        for line in (part.removesuffix('...")') for part in quoted.split("\n")):
            assert line in text and any(line in c for c in code), f"{tag} {name}: {line!r}"


# the file browser's "Name" column in each edition's language pack
NAME_COLUMN = {"zh-TW": "名稱", "zh-CN": "名称"}


@pytest.mark.browser
@pytest.mark.slow
@pytest.mark.timeout(900)  # a hang guard (test_browser.HANG_S)
@pytest.mark.parametrize("tag", list(NAME_COLUMN))
def test_the_editions_start_page_opens_in_a_chinese_jupyterlab(chromium, tag, request, tmp_path):  # noqa: F811
    """What ``make lab EDITION=zh-TW`` (or zh-CN) shows first: the edition's start page, rendered, in a JupyterLab
    that speaks the edition's language pack (the file browser's columns read 名稱 / 名称); saved as
    <tag>_start_page.png."""
    server, shots = request.getfixturevalue(f"{tag.replace('-', '_').lower()}_lab"), _shot_dir(tmp_path)
    nb = nbformat.read(server.releases / launch.START_PAGE, as_version=4)
    heading = (
        next(c.source for c in nb.cells if c.cell_type == "markdown").splitlines()[0].lstrip("# ").strip()
    )
    assert CHINESE.search(heading), f"the {tag} start page's heading is not in Chinese: {heading!r}"
    with browser_page(chromium, server.home) as page:
        try:
            page.goto(f"{server.url}/?token={server.token}")  # the front door, as make lab opens it
            page.locator(".jp-RenderedMarkdown h1", has_text=heading[:12]).wait_for()
            page.locator(".jp-RenderedMarkdown table a").first.wait_for()
            headers = page.locator(".jp-DirListing-headerItemText").all_inner_texts()
            assert NAME_COLUMN[tag] in headers, f"the file browser's columns are not in {tag}: {headers}"
            page.screenshot(path=str(shots / f"{tag}_start_page.png"))
            # every menu item the edition's pages name is one this JupyterLab shows (issue 42.7)
            assert assert_names_what_jupyterlab_shows(page, edition_pages(tag)) >= 4
        except Exception:
            page.screenshot(path=str(shots / f"{tag}_start_page_failure.png"))
            print(f"\nJupyterLab log tail:\n{server.log_tail()}")
            raise


# a student's answer to 01's first exercise that forgets to scale the scores: the check names the mistake in a hint
WRONG_ATTENTION = """def attention(q, k, v, causal=False):
    scores = q @ k.transpose(-2, -1)  # not divided by sqrt(d)
    if causal:
        tq, tk = scores.shape[-2:]
        future = torch.ones(tq, tk, dtype=torch.bool, device=scores.device).triu(tk - tq + 1)
        scores = scores.masked_fill(future, float("-inf"))
    return torch.softmax(scores, dim=-1) @ v
"""


def _check_message(answer: str, tag: str = "zh-TW") -> str:
    """What posref's check says of ``answer`` in a process of its own started with POSREF_LANG=``tag``."""
    code = f"import torch\nfrom posref.grading import check_attention\n{answer}\ncheck_attention(attention)"
    env = {**os.environ, "POSREF_LANG": tag, "POSREF_FAST": "1"}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode != 0 and "CheckFailed" in done.stderr, done.stderr[-2000:]
    return done.stderr.split("CheckFailed: ", 1)[1]


@pytest.mark.browser
@pytest.mark.slow  # Run All of 01 up to its first check, and the same check in a process of its own
@pytest.mark.timeout(900)  # a hang guard (test_browser.HANG_S)
def test_a_failing_check_speaks_the_editions_language(chromium, zh_tw_lab, tmp_path):  # noqa: F811
    """A zh-TW student's wrong answer in 01, run with Run All in JupyterLab: the check's message, hint included, is
    the zh-TW one posref gives (the kernel inherited POSREF_LANG from the server); saved as
    zh-TW_checker_message.png."""
    server, shots = zh_tw_lab, _shot_dir(tmp_path)
    relative = "01_order/01_order.ipynb"
    nb = nbformat.read(server.root / relative, as_version=4)
    (stub,) = [c for c in nb.cells if c.cell_type == "code" and c.source.startswith("def attention(")]
    stub.source = WRONG_ATTENTION.rstrip()
    nbformat.write(nb, server.root / relative)
    expected = _check_message(WRONG_ATTENTION)
    first, hint = expected.splitlines()[0], next(line for line in expected.splitlines() if "提示" in line)
    assert CHINESE.search(first) and CHINESE.search(hint), expected
    error = ".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']"
    with browser_page(chromium, server.home, height=900) as page:
        try:
            run_all(page, server, relative, error)
            shown = page.locator(error).first
            text = shown.inner_text()
            assert first in text and hint.strip() in text, text
            assert "hint:" not in text and "differs from the reference" not in text, text
            page.locator(".jp-Cell", has=page.locator(error)).first.locator(
                ".jp-InputArea"
            ).scroll_into_view_if_needed()
            page.evaluate("document.querySelector('.jp-WindowedPanel-outer, .jp-Notebook').scrollBy(0, -250)")
            page.screenshot(path=str(shots / "zh-TW_checker_message.png"))
        except Exception:
            page.screenshot(path=str(shots / "zh-TW_checker_message_failure.png"))
            print(f"\nJupyterLab log tail:\n{server.log_tail()}")
            raise


RIGHT_ATTENTION = """def attention(q, k, v, causal=False):
    scores = q @ k.transpose(-2, -1) / q.shape[-1] ** 0.5
    if causal:
        tq, tk = scores.shape[-2:]
        future = torch.ones(tq, tk, dtype=torch.bool, device=scores.device).triu(tk - tq + 1)
        scores = scores.masked_fill(future, float("-inf"))
    return torch.softmax(scores, dim=-1) @ v
"""


@pytest.mark.browser
@pytest.mark.slow  # Run All of 01 up to its second exercise: the check and the timed rounds of the first
@pytest.mark.timeout(900)  # a hang guard (test_browser.HANG_S)
def test_a_speed_cell_speaks_the_editions_language(chromium, zh_tw_lab, tmp_path):  # noqa: F811
    """A zh-TW student's right answer in 01, run with Run All in JupyterLab: the locked speed cell (the English
    cell, byte for byte) prints posref's line in zh-TW, its budget and shape with it (issue 38.1); saved as
    zh-TW_speed_line.png."""
    server, shots = zh_tw_lab, _shot_dir(tmp_path)
    relative = "01_order/01_order.ipynb"
    nb = nbformat.read(server.root / relative, as_version=4)
    (stub,) = [c for c in nb.cells if c.cell_type == "code" and c.source.startswith("def attention(")]
    stub.source = RIGHT_ATTENTION.rstrip()
    nbformat.write(nb, server.root / relative)
    stopped = ".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']"  # at the next stub
    printed = ".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stdout']"
    with browser_page(chromium, server.home, height=700) as page:
        try:
            run_all(page, server, relative, stopped)
            line = page.locator(printed, has_text="參考實作").first
            text = line.inner_text()
            assert re.fullmatch(
                r"你的 attention 花了參考實作 [\d.]+ 倍的時間（速度預算 [\d.]+ 倍，q, k, v 的形狀為 \([\d, ]+\)）\s*",
                text,
            ), text
            line.scroll_into_view_if_needed()
            page.evaluate("document.querySelector('.jp-WindowedPanel-outer, .jp-Notebook').scrollBy(0, -200)")
            page.screenshot(path=str(shots / "zh-TW_speed_line.png"))
        except Exception:
            page.screenshot(path=str(shots / "zh-TW_speed_line_failure.png"))
            print(f"\nJupyterLab log tail:\n{server.log_tail()}")
            raise


# ---------------------------------------------------------------------------------------------------------------
# the course's Validate button (posref_jupyter/validate.py): its dialog in the edition's language

# every text the toolbar's Validate button shows from the click on, recorded as it changes
RECORD_LABELS = """button => {
    window.posrefLabels = [];
    new MutationObserver(() => window.posrefLabels.push(button.textContent.trim()))
        .observe(button, {subtree: true, childList: true, characterData: true});
}"""


def _validate_notebook(server: LabServer, tag: str, answer: str, name: str, *, markdown: bool = False) -> str:
    """01 of the edition ``tag`` as released, up to its first check (its title, rules, set-up, the first exercise
    and its check), with ``answer`` in the answer cell (turned into a markdown cell with ``markdown``), written into
    the server's folder as ``name`` -> its path."""
    nb = nbformat.read(launch.EDITIONS[tag].releases / "01_order" / "01_order.ipynb", as_version=4)
    grade_ids = [c.metadata.get("nbgrader", {}).get("grade_id") for c in nb.cells]
    nb.cells = nb.cells[: grade_ids.index("test_attention") + 1]
    cell = nb.cells[grade_ids.index("attention")]
    cell.source = answer.rstrip()
    if markdown:
        nb.cells[grade_ids.index("attention")] = nbformat.v4.new_markdown_cell(
            cell.source, metadata=cell.metadata
        )
    relative = f"validate/{name}.ipynb"
    (server.root / "validate").mkdir(exist_ok=True)
    nbformat.write(nb, server.root / relative)
    return relative


def _validate(page, server: LabServer, relative: str) -> dict:
    """Open ``relative``, click the toolbar's Validate and read the dialog: its title, paragraphs, failures (each
    error's text) and buttons, the labels the button showed meanwhile, and its label and tooltip."""
    page.goto(f"{server.url}/lab/tree/{relative}?reset&token={server.token}")
    button = page.locator(".jp-NotebookPanel:visible .jp-NotebookPanel-toolbar .validate-button")
    button.wait_for()
    label, tooltip = button.inner_text().strip(), button.get_attribute("title")
    button.evaluate(RECORD_LABELS)
    button.click()
    dialog = page.locator(".jp-Dialog-content")
    dialog.wait_for(timeout=HANG_S * 1000)
    return {
        "label": label,
        "tooltip": tooltip,
        "title": dialog.locator(".jp-Dialog-header").inner_text().strip(),
        "paragraphs": dialog.locator(".posref-validation > p").all_inner_texts(),
        "errors": dialog.locator(".posref-validation-error").all_inner_texts(),
        "buttons": [
            b.strip() for b in dialog.locator(".jp-Dialog-footer .jp-Dialog-button").all_inner_texts()
        ],
        "labels": list(dict.fromkeys(page.evaluate("window.posrefLabels"))),
    }


@pytest.mark.browser
@pytest.mark.slow  # nbgrader runs 01's first cells twice in a fresh kernel
@pytest.mark.timeout(900)  # a hang guard (test_browser.HANG_S)
@pytest.mark.parametrize("tag", list(launch.EDITIONS))
def test_validate_speaks_the_editions_language(chromium, tag, request, tmp_path):  # noqa: F811
    """A student of each edition clicks the toolbar's Validate on 01 with a wrong answer, then with a right one, then
    with the answer cell turned into markdown: the button, its tooltip, the labels it shows while it works, the
    dialog's title, sentences and button are the edition's (``posref_jupyter.validate.words``), with no English
    word in a Chinese edition, and the failure listed is posref's message in that language; saved as
    zh-TW_validate.png for zh-TW."""
    server, shots = request.getfixturevalue(f"{tag.replace('-', '_').lower()}_lab"), _shot_dir(tmp_path)
    words = validate.words(tag)
    expected = _check_message(WRONG_ATTENTION, tag)
    wrong = _validate_notebook(server, tag, WRONG_ATTENTION, "wrong")
    right = _validate_notebook(server, tag, RIGHT_ATTENTION, "right")
    retyped = _validate_notebook(server, tag, RIGHT_ATTENTION, "retyped", markdown=True)
    with browser_page(chromium, server.home, height=900) as page:
        try:
            failed = _validate(page, server, wrong)
            assert failed["title"] == words["title"] and failed["buttons"] == [words["ok"]], failed
            assert failed["paragraphs"] == [words["failed"].format(count=1), words["cell_failed"]], failed
            (error,) = failed["errors"]
            for line in filter(None, map(str.strip, expected.splitlines())):  # posref's message, whole
                assert line in error, (line, error)
            assert failed["label"] == words["validate"] and failed["tooltip"] == words["tooltip"], failed
            assert failed["labels"] == [words["saving"], words["validating"], words["validate"]], failed
            if tag == "zh-TW":
                page.screenshot(path=str(shots / "zh-TW_validate.png"))
            page.locator(".jp-Dialog-footer .jp-Dialog-button").click()

            passed = _validate(page, server, right)
            assert passed["title"] == words["title"] and passed["buttons"] == [words["ok"]], passed
            assert passed["paragraphs"] == [words["passed"]] and passed["errors"] == [], passed
            page.locator(".jp-Dialog-footer .jp-Dialog-button").click()

            changed = _validate(page, server, retyped)  # nbgrader refuses it before it runs anything
            assert changed["title"] == words["title"] and changed["errors"] == [], changed
            assert changed["paragraphs"] == [words["type_changed"]["code"]["markdown"]], changed
        except Exception:
            page.screenshot(path=str(shots / f"{tag}_validate_failure.png"))
            print(f"\nJupyterLab log tail:\n{server.log_tail()}")
            raise
    said = [failed[k] for k in ("label", "tooltip", "title")] + failed["paragraphs"] + failed["buttons"]
    said += failed["labels"] + passed["paragraphs"] + changed["paragraphs"]  # the failure is posref's message
    if tag == "en":  # the English of posref_jupyter/validate.py, which the catalogs translate
        assert failed["title"] == "Validation results", failed
        assert passed["paragraphs"] == ["Every check of this notebook passed."], passed
    else:
        assert not student_text.english_words_in(said, tag), student_text.english_words_in(said, tag)
        assert all(CHINESE.search(text) for text in said if text != words["validate"]), said
