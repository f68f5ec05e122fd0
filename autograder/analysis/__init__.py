"""What the class did, for the instructor: ``python -m autograder stats`` (``stats.py``: per test cell, its pass
rate, points, discrimination (``items.py``) and failures counted by cause and edition; the written answers' manual
grades; who could not be graded) and ``python -m autograder similar`` (``similar.py``: how alike each pair of
students' answer cells are, fingerprinted by ``fingerprints.py``; its options' defaults in ``defaults.py``). Each command (``commands.py``) writes a CSV and
a self-contained HTML page (``stats_page.py``, ``similar_page.py``, over ``page.py`` and ``plots.py``) into
``<course>/reports/``, where the instructor's lab lists them (``pages/reports.py``: ``<the lab's URL>/posref/reports/``). Read only: records, submissions and the gradebook are never changed here.

Imports of the autograder: ``course``, ``editions``, ``grading``.
"""
