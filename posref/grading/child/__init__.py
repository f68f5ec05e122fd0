"""The score of record's child: where a submission's code runs, outside the grader (``autograder/`` uses it).

The protocol's two ends: ``serve`` runs in the child, ``remote`` in the grader (``Child``, ``RemoteFunction``),
both writing and reading ``framing``'s frames; ``plain_data`` what may cross between them, ``rounds`` the child's
side of a timed chain, ``forkserver`` the server that forks children with torch already imported, ``processes``
freezing and listing a child's processes, ``scratch`` its private folder.

Why in posref and not in autograder/: the child runs ``from posref.grading.child.serve import serve`` inside a
sandbox that mounts posref alone, read-only, so its end must be part of posref; the grader's end sits beside it so
that the two cannot drift apart. Students never need it: no notebook and no checker imports it.
"""
