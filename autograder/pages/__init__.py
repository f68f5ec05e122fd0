"""The pages made of what students wrote, and the instructor's server that shows them: ``lab.py`` (``python -m
autograder lab``: JupyterLab with the formgrader), ``lab_server.py`` (its hardened server extension),
``feedback.py`` (``python -m autograder feedback``: each student's page, in the language of their edition),
``reports.py`` (the class pages of ``stats`` and ``similar``, as the lab serves them), ``sanitize.py`` (what a
student wrote, made inert for both), ``jupyter_data/`` (the templates that render formulas offline and speak the
student's edition). The formgrader's Autograde button runs ``python -m autograder autograde``
as a command: nothing here imports grading; the editions say which edition a notebook is and where its translated
source lies.

Imports of the autograder: ``course``, ``editions``.
"""
