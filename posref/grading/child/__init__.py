"""The score of record's child: where a submission's code runs, outside the grader (``autograder/`` uses it).

``remote`` holds both ends of the protocol (``serve`` in the child, ``Child`` and ``RemoteFunction`` in the
grader), ``plain_data`` what may cross between them, ``forkserver`` the server that forks children with torch
already imported, ``processes`` freezing and listing a child's processes, ``scratch`` its private folder.

Why in posref and not in autograder/: the child runs ``from posref.grading.child.remote import serve`` inside a
sandbox that mounts posref alone, read-only, so its end must be part of posref; the grader's end sits beside it so
that the two cannot drift apart. Students never need it: no notebook and no checker imports it.
"""
