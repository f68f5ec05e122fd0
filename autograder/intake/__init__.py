"""Taking submissions in: a class's folders, archives and course-site downloads into the course's ``submitted/``,
and the facts of each submission that the later steps read.

``submissions.py`` (``python -m autograder import``), ``submission.py`` (what a submission may hold, and its facts
read once for grading: files, fingerprint, hand-in time, the student's due date), ``unpack.py`` (an archive, within
bounds), ``lms.py`` (Canvas and Moodle downloads), ``site_users.py`` (site user -> student id, across imports),
``refusals.py`` (what import refused, for export), ``late.py`` (hand-in times, due dates), ``extensions.py`` (a
student's extension, the instructor's file).

Imports of the autograder: ``course``.
"""
