"""The sandbox that runs student code: ``sandbox.py`` (bubblewrap, resource limits, an unprivileged user, the
submission's files written into the child's own scratch), ``cgroup.py`` (a memory cgroup per child),
``seccomp.py`` (the system calls a child may not make). ``setup_sandbox.sh`` stays at ``autograder/``, where the
README's setup command names it.

Imports of the autograder: ``course``.
"""
