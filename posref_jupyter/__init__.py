"""What the Jupyter processes of a student's JupyterLab load from the course, kept apart from ``posref`` so that
they never import torch (``import posref`` loads it: seconds and hundreds of MB that a server serving pages, or an
export of one notebook, has no use for): the server extension ``lab_language`` (JupyterLab's interface in the
edition's language), the course's Validate button (``validate``: the words of its dialog, from posref's catalogs)
and, on a JupyterHub, its Assignment List (``assignment_list``: its words; ``labextension``: the JavaScript of both,
built into ``jupyter_data/labextensions`` by ``make labextension``), ``offline_math`` (MathJax for the course's HTML
pages: the student's own exports, feedback, the formgrader), the export's template (``jupyter_data``) and MathJax's
configuration and loader (``static``).
"""
