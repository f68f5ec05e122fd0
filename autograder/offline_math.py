"""Formulas in the course's HTML pages render offline: MathJax 2 from the jupyter-server-mathjax package.

The formgrader loads it from the instructor's server (``jupyter_data/nbconvert/templates/formgrade``). A feedback
page is a file a student opens anywhere, so ``MathJaxBeside`` (one of ``GenerateFeedback``'s preprocessors) has
nbconvert's writer put the part of MathJax that a page of the course uses into ``mathjax/`` beside it (about
2 MB: the TeX input, the HTML-CSS output with its STIX-Web fonts, the Safe extension that refuses
``\\href{javascript:...}``) and the course's configuration (``static/mathjax_config.js``), which
``jupyter_data/nbconvert/templates/feedback/mathjax.html.j2`` names.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

import jupyter_server_mathjax
from nbconvert.preprocessors import Preprocessor

MATHJAX = Path(jupyter_server_mathjax.__file__).resolve().parent / "static"
CONFIG = Path(__file__).resolve().parent / "static" / "mathjax_config.js"
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


class MathJaxBeside(Preprocessor):
    """Adds MathJax to the files written beside the page (``resources["outputs"]``, which nbconvert's
    ``FilesWriter`` writes relative to the page's folder)."""

    def preprocess(self, nb, resources):
        resources.setdefault("outputs", {}).update(mathjax_files())
        return nb, resources
