"""nbconvert's configuration for ``jupyter nbconvert`` in any shell that runs this checkout's environment: an HTML
export holds its MathJax (``posref_jupyter.offline_math``) and loads nothing from the internet, as the export of a
student's JupyterLab does (``posref/jupyter_config/student``, which only that server and its terminals read).

``make setup`` and ``make lab`` copy it into ``.venv/etc/jupyter/``, the environment's own Jupyter config folder,
which every Jupyter command of the environment reads (``<sys.prefix>/etc/jupyter``); elsewhere name it:
``jupyter nbconvert --config posref/jupyter_config/shell/jupyter_nbconvert_config.py --to html NOTEBOOK``.
"""

from pathlib import Path

import posref_jupyter

c = get_config()  # noqa: F821 (defined by traitlets when it loads this file)

c.HTMLExporter.extra_template_basedirs = [
    str(Path(posref_jupyter.__file__).resolve().parent / "jupyter_data" / "nbconvert" / "templates")
]
c.HTMLExporter.template_name = "posref_export"
c.HTMLExporter.preprocessors = ["posref_jupyter.offline_math.InlineMathJax"]
# slides are an HTMLExporter too: they keep their own template
c.SlidesExporter.template_name = "reveal"
c.SlidesExporter.preprocessors = []
