"""What students get: ``python -m autograder release`` (``assignment.py``: nbgrader's release into
``notebooks/``, the assignment and its due date in the gradebook), the editions' notebooks (``editions.py``:
``editions/<lang>/``, ``python -m autograder editions build``) and the course's start page (``start_page.py``).

Imports of the autograder: ``course``, ``editions``, ``intake``.
"""
