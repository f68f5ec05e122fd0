"""Formulas in the course's HTML pages render offline: MathJax 2 from the jupyter-server-mathjax package, with the
course's configuration (``static/mathjax_config.js``). Three kinds of page:

* the instructor's formgrader loads it from the instructor's server
  (``autograder/pages/jupyter_data/nbconvert/templates/formgrade``);
* a feedback page is a file a student opens anywhere: on a JupyterHub it reaches them through nbgrader's exchange,
  which copies the page alone (``release_feedback``, ``fetch_feedback``), so nothing beside it would arrive. The
  feedback template's ``mathjax()`` macro (``autograder/pages/jupyter_data/nbconvert/templates/feedback``) writes
  ``inline_mathjax()`` into the page through the Jinja filter ``posref_inline_mathjax``
  (``autograder/nbgrader_config.py`` registers it for the feedback exporter);
* a student's own HTML export of a notebook (JupyterLab's File > Save and Export Notebook As > HTML, or ``jupyter
  nbconvert --to html`` in a terminal of the student's JupyterLab) is one file: JupyterLab's download would put
  files beside it into a zip, flattened, which MathJax's folders do not survive. So ``InlineMathJax`` (the
  student config's exporter preprocessor, with the template ``posref_export``) writes the same files into the
  page itself (about 2.6 MB), as a feedback page has them: ``static/mathjax_inline.js`` runs MathJax from them,
  the fonts as data URLs.
"""

from __future__ import annotations

import base64
import json
from functools import cache
from pathlib import Path

import jupyter_server_mathjax
from nbconvert.preprocessors import Preprocessor
from traitlets import Bool

MATHJAX = Path(jupyter_server_mathjax.__file__).resolve().parent / "static"
STATIC = Path(__file__).resolve().parent / "static"
CONFIG = STATIC / "mathjax_config.js"
INLINE_LOADER = STATIC / "mathjax_inline.js"
# what MathJax.js?config=TeX-AMS-MML_HTMLorMML-full,Safe loads, relative to MATHJAX
PARTS = (
    "MathJax.js",
    "config/TeX-AMS-MML_HTMLorMML-full.js",
    "config/Safe.js",
    "extensions/Safe.js",
    "extensions/MathMenu.js",
    "extensions/MathZoom.js",
    "extensions/HTML-CSS",
    "jax/output/HTML-CSS",
    "fonts/HTML-CSS/STIX-Web/woff",
)


@cache
def mathjax_files() -> dict[str, bytes]:
    """``{"mathjax/<path>": content}`` for every file of ``PARTS``, and the course's configuration."""
    files = {"mathjax/mathjax_config.js": CONFIG.read_bytes()}
    for part in PARTS:
        path = MATHJAX / part
        for file in sorted(path.rglob("*")) if path.is_dir() else [path]:
            if file.is_file():
                files["mathjax/" + file.relative_to(MATHJAX).as_posix()] = file.read_bytes()
    if "mathjax/MathJax.js" not in files:
        raise FileNotFoundError(f"no MathJax.js in {MATHJAX}: is jupyter-server-mathjax installed?")
    return files


def _script(source: str) -> str:
    """``source`` as an inline ``<script>``; refuses a text that would end the element early."""
    if "</script" in source.lower() or "<!--" in source:
        raise ValueError(
            "a script to inline holds '</script' or '<!--', which would end or hide it in the page"
        )
    return f"<script>\n{source}\n</script>"


@cache
def inline_mathjax() -> str:
    """The ``<script>`` elements that typeset a page's formulas with no file but the page: the course's
    configuration, then ``static/mathjax_inline.js`` called with MathJax's scripts (by their MathJax name,
    ``[MathJax]/config/Safe.js``) and its web fonts (base64, by file name), as JSON with every ``<`` escaped."""
    scripts, fonts = {}, {}
    for name, content in mathjax_files().items():
        path = name.removeprefix("mathjax/")
        if path.endswith(".woff"):
            fonts[Path(path).name] = base64.b64encode(content).decode("ascii")
        elif path.endswith(".js") and name != "mathjax/mathjax_config.js":
            scripts[f"[MathJax]/{path}"] = content.decode("utf-8")
    table = json.dumps({"scripts": scripts, "fonts": fonts}, separators=(",", ":")).replace("<", "\\u003c")
    loader = INLINE_LOADER.read_text(encoding="utf-8").rstrip().removesuffix(";")
    return _script(CONFIG.read_text(encoding="utf-8")) + "\n" + _script(f"{loader}({table});")


class InlineMathJax(Preprocessor):
    """Puts ``inline_mathjax()`` into ``resources["posref_mathjax"]``, which the template ``posref_export`` writes
    into the page's head in place of a MathJax from a CDN."""

    enabled = Bool(True, help="On wherever it is listed (nbconvert's preprocessors are off by default)").tag(
        config=True
    )

    def preprocess(self, nb, resources):
        resources["posref_mathjax"] = inline_mathjax()
        return nb, resources


def inline_mathjax_filter(_ignored: str = "") -> str:
    """``inline_mathjax()`` as a Jinja filter (``{{ "" | posref_inline_mathjax }}``): a template macro, such as the
    feedback template's ``mathjax()``, sees the environment's filters but not the page's ``resources``."""
    return inline_mathjax()
