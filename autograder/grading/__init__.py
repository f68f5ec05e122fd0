"""Grading: the score of record of each submission, nbgrader's gradebook, and the CSV.

What a grading worker runs, which never sees the course folder: ``worker.py`` (one student's submission, from
the bytes it is sent) and ``record.py`` (the score of record of one notebook, in the sandbox's children). What the
instructor's process does, the only writer: ``grade.py`` (``python -m autograder autograde``), ``cluster.py`` (the
Dask client), ``gradebook.py`` (the scores into nbgrader's gradebook), ``stand_in.py`` (the formgrader's page of a
notebook nbgrader refused), ``penalty.py`` (nbgrader's late penalty), ``export.py`` (``python -m autograder
export``), ``site_files.py`` (the course sites' grade files), ``spreadsheet.py`` (CSV fields no spreadsheet reads as
a formula). The worker's modules import nothing of the instructor's (nor ``intake``).

Imports of the autograder: ``course``, ``intake``, ``sandbox``, ``editions``.
"""
