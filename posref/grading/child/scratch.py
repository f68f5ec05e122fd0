"""A child's working folder: filled with the submission's files, emptied between children, removed after.

All of it without recursion: a cell can leave thousands of nested folders (``shutil.rmtree`` raised
RecursionError on 3,000 on Python 3.11), with paths longer than the system takes.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any


def write_files(entries: Sequence[tuple[str, str, Any]]) -> None:
    """Write the submission folder's files into the working directory (the child does this before any cell;
    see ``autograder.sandbox.sandbox.submission_files``); one that cannot be written (a full tmpfs, a name too long) is
    left out."""
    for kind, path, data in entries:
        try:
            if kind == "dir":
                os.makedirs(path, exist_ok=True)
            elif kind == "link":
                os.symlink(data, path)
            else:
                with open(path, "wb") as f:
                    f.write(data.numpy().tobytes())
        except OSError:
            pass


def remove_tree(path: str | Path) -> None:
    """Remove the folder ``path`` and everything under it, without recursion: ``shutil.rmtree`` raises
    RecursionError on a few thousand nested folders on Python 3.11, and their paths are longer than the system
    takes, so the walk goes one folder at a time through file descriptors (down into a subfolder, back up through
    ``..``), whatever the child left there (folders it made unreadable, links: removed, never followed). Only for
    folders no running process writes to (the child is gone)."""
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW
    fd, names = os.open(path, flags), []  # names: the folders entered below ``path``
    try:
        while True:
            entries = list(os.scandir(fd))
            folder = next((e.name for e in entries if e.is_dir(follow_symlinks=False)), None)
            if folder is not None:
                os.chmod(folder, 0o700, dir_fd=fd)  # a folder the child made unreadable
                fd, parent = os.open(folder, flags, dir_fd=fd), fd
                os.close(parent)
                names.append(folder)
                continue
            for entry in entries:
                os.unlink(entry.name, dir_fd=fd)
            if not names:
                break
            fd, child = os.open("..", flags, dir_fd=fd), fd
            os.close(child)
            os.rmdir(names.pop(), dir_fd=fd)
    finally:
        os.close(fd)
    os.rmdir(path)


def empty(path: str | Path) -> None:
    """Remove everything in the folder ``path``, keeping the folder."""
    for entry in list(os.scandir(path)):
        if entry.is_dir(follow_symlinks=False):
            remove_tree(entry.path)
        else:
            os.unlink(entry.path)
