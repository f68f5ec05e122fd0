"""nbgrader's configuration in a student's server on the course's JupyterHub, found on ``JUPYTER_CONFIG_PATH`` before
``posref/jupyter_config/student`` (whose file gives Validate the instructor's time limit; this one adds the hub's).

The Assignment List fetches from and submits to nbgrader's exchange: the course is ``posref`` and the exchange is
the folder the hub shares with every user, ``$POSREF_EXCHANGE_DIR`` where the hub's spawner sets it, else nbgrader's
own default. What Submit sends is the assignment's folder less what nbgrader's ``CourseDirectory.ignore`` names,
written out here so that a site configuration cannot drop it: JupyterLab's checkpoints, Python's caches and the
feedback nbgrader fetches into the folder. Fetch takes the release of the student's edition (``POSREF_LANG``, which
the hub's spawner sets), where the course released one (``posref_jupyter/exchange.py``), else the English one.
"""

import os

c = get_config()  # noqa: F821  (provided by traitlets when nbgrader loads this file)
c.CourseDirectory.course_id = "posref"
c.Exchange.root = os.environ.get("POSREF_EXCHANGE_DIR", "/srv/nbgrader/exchange")
c.ExchangeFactory.fetch_assignment = "posref_jupyter.exchange.FetchEdition"
c.CourseDirectory.ignore = [".ipynb_checkpoints", "*.pyc", "__pycache__", "feedback"]
