"""A student's own HTML export of a notebook loads nothing from the internet (issue 24.3, its last piece): exported
the student's way, through the JupyterLab that ``make lab`` starts (File > Save and Export Notebook As > HTML is
its ``/nbconvert/html/...?download=true``) or with ``jupyter nbconvert --to html`` in that JupyterLab's terminal
(the server's environment), the page is one file that names no script, style sheet, image or frame of another
origin, and its formulas typeset in a browser that can reach nothing but the file itself.

Exported: notebook 04 as released (about a hundred formulas, inline and displayed).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path

import pytest
from test_browser import HANG_S, LabServer, browser_page, chromium  # noqa: F401 (chromium is a fixture)

from posref import launch
from posref_jupyter import offline_math

REPO = Path(__file__).resolve().parents[2]
NOTEBOOK = REPO / "notebooks" / "04_rope" / "04_rope.ipynb"
LOADING = {"script": "src", "link": "href", "img": "src", "iframe": "src", "source": "src", "embed": "src"}


class _Loads(HTMLParser):
    """The addresses a page's elements load (``src`` of scripts, images, frames; ``href`` of links)."""

    def __init__(self) -> None:
        super().__init__()
        self.urls: list[str] = []

    def handle_starttag(self, tag, attrs):
        wanted = LOADING.get(tag)
        self.urls += [value or "" for name, value in attrs if name == wanted]


def loaded_urls(page: str) -> list[str]:
    parser = _Loads()
    parser.feed(page)
    return parser.urls


def _assert_self_contained(page: str) -> None:
    """One page, offline: what it loads is in itself (data URLs) or nothing; no CDN named anywhere in it."""
    elsewhere = [url for url in loaded_urls(page) if not url.startswith("data:")]
    assert not elsewhere, f"the export loads {elsewhere[:5]}"
    for host in ("cdnjs", "unpkg.com", "cdn.jsdelivr"):
        assert host not in page, f"the export names {host}"
    assert '"[MathJax]/config/TeX-AMS-MML_HTMLorMML-full.js"' in page, "no MathJax in the page"
    assert page.count("$") > 50, "the notebook's formulas are not in the page"


def test_the_inline_mathjax_is_scripts_a_page_can_hold():
    page = offline_math.inline_mathjax()
    assert page.count("<script>") == 2 and page.count("</script>") == 2  # nothing inside ends a script early
    assert "window.MathJax = {" in page and '"STIXMathJax_Main-Regular.woff"' in page
    assert loaded_urls(page) == []
    with pytest.raises(ValueError, match="would end or hide it"):
        offline_math._script("var s = '</SCRIPT>';")


def _export_route(server: LabServer, name: str) -> urllib.request.Request:
    return urllib.request.Request(
        f"{server.url}/nbconvert/html/{name}?download=true",
        headers={"Authorization": f"token {server.token}"},
    )


@pytest.fixture(scope="module")
def exported(tmp_path_factory) -> Iterator[Path]:
    """Notebook 04 exported as JupyterLab's Save and Export Notebook As > HTML does, from the student's JupyterLab
    (``posref lab``), saved where the browser saves a download."""
    base = tmp_path_factory.mktemp("export")
    server = LabServer(base, launcher="posref")
    shutil.copy(NOTEBOOK, server.root / NOTEBOOK.name)
    try:
        server.start()
        with urllib.request.urlopen(_export_route(server, NOTEBOOK.name), timeout=120) as response:
            kind, disposition, body = (
                response.headers["Content-Type"],
                response.headers["Content-Disposition"],
                response.read(),
            )
    finally:
        server.stop()
    assert kind.startswith("text/html"), f"JupyterLab's export is {kind} ({disposition}), not one page"
    assert "04_rope.html" in disposition, disposition
    page = base / "downloads" / "04_rope.html"
    page.parent.mkdir()
    page.write_bytes(body)
    yield page


@pytest.mark.slow  # starts a JupyterLab and exports through it: 15-30 s
def test_jupyterlabs_html_export_loads_nothing_from_elsewhere(exported):
    _assert_self_contained(exported.read_text(encoding="utf-8"))


@pytest.mark.slow  # one nbconvert run: about 5 s
def test_nbconvert_in_the_students_terminal_exports_the_same_page(tmp_path):
    shutil.copy(NOTEBOOK, tmp_path / NOTEBOOK.name)
    env = launch.lab_env(
        env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    )  # a terminal of the student's lab
    done = subprocess.run(
        [sys.executable, "-m", "jupyter", "nbconvert", "--to", "html", NOTEBOOK.name],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "04_rope.html",
        "04_rope.ipynb",
    ]  # one file, nothing beside
    _assert_self_contained((tmp_path / "04_rope.html").read_text(encoding="utf-8"))


@pytest.mark.slow  # one nbconvert run: about 5 s
def test_nbconvert_from_a_plain_shell_exports_the_same_page(tmp_path):
    """`jupyter nbconvert --to html` of this environment run from a shell that is no JupyterLab's (no JUPYTER_*
    variable, another folder): the configuration `make setup` puts into the environment's Jupyter config folder
    (posref/jupyter_config/shell) makes the same one-file page; without it nbconvert named a CDN's MathJax."""
    installed = Path(sys.prefix) / "etc" / "jupyter" / "jupyter_nbconvert_config.py"
    shell = REPO / "posref" / "jupyter_config" / "shell" / "jupyter_nbconvert_config.py"
    assert installed.is_file(), f"{installed} is missing: run `make setup`"
    assert installed.read_text() == shell.read_text(), f"{installed} is not {shell}'s copy: run `make setup`"
    shutil.copy(NOTEBOOK, tmp_path / NOTEBOOK.name)
    done = subprocess.run(
        [sys.executable, "-m", "jupyter", "nbconvert", "--to", "html", NOTEBOOK.name],
        cwd=tmp_path, env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}, capture_output=True, text=True,
        timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["04_rope.html", "04_rope.ipynb"]
    _assert_self_contained((tmp_path / "04_rope.html").read_text(encoding="utf-8"))


TYPESET = """() => window.MathJax && MathJax.Hub && MathJax.Hub.queue.pending === 0 && MathJax.isReady === true
    && document.querySelectorAll('.MathJax_Processing').length === 0"""


@pytest.mark.browser
@pytest.mark.slow
@pytest.mark.timeout(900)  # a hang guard (test_browser.HANG_S)
def test_the_export_typesets_its_formulas_offline(chromium, exported, tmp_path):  # noqa: F811
    """Opened from disk in a browser that may load only files (anything else is refused and recorded): every formula
    is typeset, in MathJax's STIX web fonts from the page, with no error and no request but the page's own."""
    with browser_page(chromium, tmp_path) as page:
        requests: list[str] = []
        page.on("request", lambda request: requests.append(request.url))
        page.route(
            "**/*",
            lambda route: route.continue_() if route.request.url.startswith("file:") else route.abort(),
        )
        page.goto(exported.as_uri())
        page.wait_for_function(TYPESET, timeout=HANG_S * 1000)
        typeset = page.locator(".MathJax").count()
        assert typeset > 50, f"{typeset} formulas typeset"
        assert page.locator(".MathJax_Error, merror, .MathJax_Preview:not(:empty)").count() == 0
        fonts = page.evaluate("[...document.fonts].filter(f => f.status === 'loaded').map(f => f.family)")
        assert "STIXMathJax_Main" in fonts, fonts
    # about:blank: MathJax's own probe of a font it never loads
    assert [url for url in requests if not url.startswith(("file:", "data:", "about:"))] == [], requests
    assert [url for url in requests if url.startswith("file:")] == [exported.as_uri()], requests
