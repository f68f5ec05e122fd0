"""Every explorer's static figure where its widget cannot render (issue 17, item 5).

* An HTML export (``jupyter nbconvert --to html --execute``) with nbconvert's own template, which asks a CDN for
  the scripts that draw saved widgets, and with the course's (``posref_export``: what ``make setup`` installs for
  every shell of the environment, and a student's JupyterLab uses), which asks nothing from anywhere: the execution
  saves the widget state, so the export keeps each explorer as ``<script>`` tags that draw nothing offline; the
  static figure beside them must be in the HTML and show in a browser with no network.
* A notebook run and saved in JupyterLab, then opened again with a fresh kernel: the widget's model is gone
  ("Error displaying widget: model not found"); the static figure must show there, without that error above it,
  and be hidden while the explorer itself is live (one figure, not two).

The browser tests need Debian's ``chromium`` and Playwright (see test_browser.py); they skip without them. Their
screenshots go to ``POSREF_SCREENSHOT_DIR`` (default: the test's temporary directory).
"""

from __future__ import annotations

import base64
import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import nbformat
import numpy as np
import pytest
from test_browser import (  # noqa: F401 (chromium is a fixture)
    ALL_CELLS_DONE,
    KERNEL_READY,
    LabServer,
    browser_page,
    chromium,
    run_all,
    save_notebook,
)

from posref.explorers import figure_png, fingerprint_figure
from posref.explorers.base import STATIC_CLASS

REPO = Path(__file__).resolve().parents[2]

# every explorer, small: (CSS name, the cell that shows it)
EXPLORERS = {
    "fingerprint": "E.fingerprint_explorer(dim=16)",
    "bias-heatmap": "E.bias_heatmap_explorer(n_heads=4, length=12)",
    "rope-pair": "E.rope_pair_explorer(dim=8, max_position=20)",
    "decay": "E.decay_explorer(head_dim=32, max_distance=128)",
    "scaling": "E.scaling_explorer(16, 50.0, 64, betas=(4.0, 1.0))",
    "position-loss": 'E.position_loss_explorer(lengths=(16,), selected=("rope",), n_windows=1)',
}
STATIC_IMG = re.compile(rf'<figure class="{STATIC_CLASS}"[^>]*>\s*(<img [^>]*>)')


def _static_figures(page: str) -> dict[str, np.ndarray]:
    """The static figures of an HTML page: explorer name (from the img's alt) -> its decoded pixels."""
    figures = {}
    for img in STATIC_IMG.findall(page):  # nbconvert may write the img's attributes in another order
        (alt,) = re.findall(r'alt="([a-z_]+)_explorer\(\): static figure"', img)
        (data,) = re.findall(r'src="data:image/png;base64,([A-Za-z0-9+/=]+)"', img)
        figures[alt.replace("_", "-")] = _png(data)
    return figures


def _notebook(cells: dict[str, str]) -> nbformat.NotebookNode:
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.cells = [nbformat.v4.new_code_cell("import posref.explorers as E")]
    nb.cells += [nbformat.v4.new_code_cell(code) for code in cells.values()]
    return nb


def _shots(tmp_path: Path) -> Path:
    folder = Path(os.environ.get("POSREF_SCREENSHOT_DIR") or tmp_path)
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def _png(data: str) -> np.ndarray:
    from PIL import Image

    return np.asarray(Image.open(io.BytesIO(base64.b64decode(data))).convert("RGB"))


# nbconvert's lab template named on the command line, over the course's configuration where make setup installed it
TEMPLATES = {
    "lab": ["--HTMLExporter.template_name=lab", "--HTMLExporter.preprocessors=[]"],
    "posref_export": [
        "--config",
        str(REPO / "posref" / "jupyter_config" / "shell" / "jupyter_nbconvert_config.py"),
    ],
}


@pytest.fixture(scope="module", params=sorted(TEMPLATES))
def exported(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A notebook of every explorer, exported by ``jupyter nbconvert --to html --execute`` with the template
    ``request.param`` (its own HTML folder's name)."""
    folder = tmp_path_factory.mktemp(f"export-{request.param}")
    nbformat.write(_notebook(EXPLORERS), folder / "explorers.ipynb")
    env = {
        **os.environ,
        "POSREF_FAST": "1",
        "PYTHONPATH": os.pathsep.join(filter(None, (str(REPO), os.environ.get("PYTHONPATH")))),
        "HOME": str(folder),  # nbconvert and the kernel write nothing into the real HOME
    }
    done = subprocess.run(
        [sys.executable, "-m", "jupyter", "nbconvert", *TEMPLATES[request.param], "--to", "html", "--execute"]
        + ["explorers.ipynb"],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return folder / "explorers.html"


def test_an_html_export_holds_each_explorers_static_figure(exported: Path) -> None:
    page = exported.read_text(encoding="utf-8")
    # the case that was empty: the widget state is saved, so the export keeps the views as scripts
    assert "application/vnd.jupyter.widget-state+json" in page
    assert page.count('<script type="application/vnd.jupyter.widget-view+json">') == len(EXPLORERS)
    figures = _static_figures(page)
    assert sorted(figures) == sorted(EXPLORERS)
    for name, image in figures.items():
        assert min(image.shape[:2]) > 200 and image.std() > 10, f"{name}: a blank or tiny picture"
    # the fingerprint's picture is the figure function's own at the explorer's starting position
    assert np.array_equal(
        figures["fingerprint"], _png(base64.b64encode(figure_png(fingerprint_figure(37, 16))))
    )


@pytest.mark.browser
@pytest.mark.timeout(900)  # a hang guard (test_browser.HANG_S)
def test_the_exported_figures_show_in_a_browser_offline(
    exported: Path,
    chromium: str,  # noqa: F811 (the fixture)
    tmp_path: Path,
) -> None:
    with browser_page(chromium, tmp_path) as page:
        requested: list[str] = []

        def offline(route) -> None:  # nothing from the network: the CDN scripts never arrive
            if route.request.url.startswith("file:"):
                route.continue_()
            else:
                requested.append(route.request.url)
                route.abort()

        page.route("**/*", offline)
        page.goto(exported.as_uri(), wait_until="load")
        shown = page.evaluate(
            """(cls) => [...document.querySelectorAll(`figure.${cls} img`)].map(img => {
                const box = img.getBoundingClientRect();
                return [img.alt, img.complete && img.naturalWidth > 0, box.width > 100 && box.height > 100,
                        getComputedStyle(img.closest('figure')).display];
            })""",
            STATIC_CLASS,
        )
        page.screenshot(path=str(_shots(tmp_path) / "static_export.png"), full_page=True)
    assert len(shown) == len(EXPLORERS), shown
    for alt, loaded, sized, display in shown:
        assert loaded and sized and display != "none", (
            f"{alt}: loaded={loaded}, sized={sized}, display={display}"
        )
    if exported.parent.name.startswith("export-lab"):
        assert requested, (
            "the export asked for no widget scripts: the test did not stand where a reader stands"
        )
    else:
        assert not requested, f"the course's export asked for {requested}"


@pytest.mark.browser
@pytest.mark.timeout(900)  # a hang guard (test_browser.HANG_S)
def test_a_saved_notebook_reopened_shows_the_static_figure(chromium: str, tmp_path: Path) -> None:  # noqa: F811
    lab = LabServer(tmp_path)
    relative = "fingerprint.ipynb"
    nbformat.write(_notebook({"fingerprint": EXPLORERS["fingerprint"]}), lab.root / relative)
    live = ".posref-fingerprint-explorer .widget-output img"
    static = f"figure.{STATIC_CLASS} img"
    try:
        lab.start()
        with browser_page(chromium, lab.home) as page:
            try:
                run_all(page, lab, relative, live)
                # live: the widget's own figure shows; its static figure is there but hidden
                page.wait_for_selector(static, state="attached")
                assert page.locator(live).is_visible() and not page.locator(static).is_visible()

                saved = save_notebook(page, lab.root / relative)
                html = [o["data"]["text/html"] for c in saved.cells for o in c.get("outputs", [])
                        if "text/html" in o.get("data", {})]  # fmt: skip
                assert len(html) == 1 and STATIC_CLASS in html[0]
                assert "widgets" not in saved.metadata  # JupyterLab's default: no widget state saved

                # closed and opened again: the old kernel (and with it the widget's model) is gone
                for session in json.loads(lab.api("GET", "/api/sessions")):
                    lab.api("DELETE", f"/api/sessions/{session['id']}")
                page.reload()
                lab.wait_for_idle_kernel(relative)
                page.wait_for_function(KERNEL_READY)
                # the view's error is there, hidden: the picture alone shows
                error = page.locator("text=Error displaying widget: model not found")
                error.wait_for(state="attached")
                page.wait_for_selector(static, state="visible")
                assert not error.is_visible(), "the failed widget view's error shows above the picture"
                assert page.locator(live).count() == 0
                figure = page.evaluate(
                    "(sel) => { const i = document.querySelector(sel); return [i.naturalWidth, i.src]; }",
                    static,
                )
                assert figure[0] > 100
                expected = figure_png(fingerprint_figure(37, 16))
                assert np.array_equal(_png(figure[1].split(",", 1)[1]), _png(base64.b64encode(expected)))
                page.screenshot(path=str(_shots(tmp_path) / "static_reopened.png"))
            except Exception:
                failed = _shots(tmp_path) / "static_reopened_failure.png"
                page.screenshot(path=str(failed))
                print(f"\nfailure screenshot: {failed}\nJupyterLab log tail:\n{lab.log_tail()}")
                raise
    finally:
        lab.stop()
