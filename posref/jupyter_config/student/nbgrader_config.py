"""nbgrader's configuration in a student's JupyterLab (``posref lab``), found on ``JUPYTER_CONFIG_PATH``.

There nbgrader runs only the Validate button: the notebook from the top in a fresh kernel, then its checks. It
gets the instructor's per-cell time limit (``autograder/nbgrader_config.py``), so that Validate stops a cell for
time where the instructor's Validate would, not at nbgrader's default of 30 s. Having a configuration file at all
also keeps nbgrader from logging "No nbgrader_config.py file found" at each Validate.
"""

c = get_config()  # noqa: F821  (provided by traitlets when nbgrader loads this file)
c.Execute.timeout = 300
