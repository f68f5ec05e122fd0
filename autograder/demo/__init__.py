"""``python -m autograder demo``: the instructor's workflow end to end on an example course (``source/``, one
notebook) and twelve example submissions (``submissions.py``, written by ``build.py``); ``run.py`` runs it.
The benchmark grades the demo's submissions too.

Imports of the autograder: ``course``, ``intake``, ``release``, ``grading``, ``pages``.
"""
