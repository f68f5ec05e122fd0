"""The pages made of what students wrote, and the instructor's server that shows them: ``lab.py`` (``python -m
autograder lab``: JupyterLab with the formgrader), ``lab_server.py`` (its hardened server extension),
``feedback.py`` (``python -m autograder feedback``: each student's page), ``sanitize.py`` (what a student wrote,
made inert for both), ``jupyter_data/`` (the templates that render formulas offline). The formgrader's Autograde
button runs ``python -m autograder autograde`` as a command: nothing here imports grading.

Imports of the autograder: ``course``.
"""
