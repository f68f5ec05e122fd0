"""A class's archive (``.zip``, ``.tar``, ``.tar.gz``) unpacked for ``import``, within bounds.

An archive comes from a course site or a colleague and holds what students uploaded: every name and size in it is
hostile. ``unpack`` writes regular files and folders only (no links, devices or fifos), each at a path that stays
inside the folder it unpacks into (no absolute paths, no ``..``, no NUL), at most ``MAX_DEPTH`` folders deep, each
file's bytes counted as they are written (a header's size is not trusted). An archive of more than ``MAX_ENTRIES``
entries or ``MAX_UNPACKED`` bytes is refused whole before anything is written. An entry it cannot take (a damaged
one, one larger than a submission may be, a link) is not unpacked: an empty file stands in its place when its
path is one, so that the student it belongs to is refused with the reason (``damaged``), and every other entry
is listed (``left_out``). Archives inside the archive stay files: nothing is unpacked twice.
"""

from __future__ import annotations

import os
import shutil
import struct
import tarfile
import time
import zipfile
import zlib
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

MAX_ENTRIES = 100_000  # entries of one archive: 1,000 students x 100 files
MAX_UNPACKED = 8 * 2**30  # bytes of one archive, unpacked (the sizes its headers declare)
MAX_DEPTH = 16  # folders above an entry
MAX_FILE = 32 * 2**20  # bytes of one entry (a submission holds at most that much: submission.MAX_SUBMISSION)


@dataclass
class Unpacked:
    """What ``unpack`` could not take: ``damaged`` (the stand-in file -> why), ``left_out`` (entry name -> why)."""

    damaged: dict[Path, str] = field(default_factory=dict)
    left_out: dict[str, str] = field(default_factory=dict)


def _zip_time(info: zipfile.ZipInfo) -> float:
    """An entry's modification time (seconds since the epoch): the extended-timestamp field's (UTC, written by
    Info-ZIP, macOS, 7-Zip) where it has one, else the DOS time, which is the local time of whoever made the
    zip, read as this machine's local time."""
    extra = info.extra
    while len(extra) >= 4:
        tag, size = struct.unpack("<HH", extra[:4])
        if tag == 0x5455 and size >= 5 and extra[4] & 1 and len(extra) >= 9:
            return float(struct.unpack("<I", extra[5:9])[0])
        extra = extra[4 + size :]
    try:
        return time.mktime((*info.date_time, 0, 0, -1))
    except (OverflowError, ValueError):
        return 0.0


def _target(into: Path, name: str) -> Path | str:
    """Where entry ``name`` goes under ``into``, or why it goes nowhere."""
    path = PurePosixPath(name.replace("\\", "/"))
    parts = [p for p in path.parts if p not in ("", ".")]
    if "\0" in name or path.is_absolute() or ".." in parts or not parts:
        return "a path that leaves the archive's folder"
    if len(parts) > MAX_DEPTH + 1:
        return f"more than {MAX_DEPTH} folders deep"
    return into.joinpath(*parts)


def _copy(source, target: Path, size: int) -> None:
    """At most ``size`` bytes of ``source`` into ``target``; more than that is an error (a header that lied)."""
    written = 0
    with open(target, "xb") as out:
        for block in iter(lambda: source.read(1 << 20), b""):
            written += len(block)
            if written > size:
                raise ValueError(f"holds more than the {size} bytes its header declares")
            out.write(block)


def _members(path: Path):
    """``(name, kind, size, mtime, open)`` for each entry of a zip or tar: kind "dir", "file" or what else it is."""
    if zipfile.is_zipfile(path):
        with zipfile.ZipFile(path) as archive:
            for info in archive.infolist():
                mode = info.external_attr >> 16
                kind = "dir" if info.is_dir() else "a link" if (mode & 0o170000) == 0o120000 else "file"
                yield info.filename, kind, info.file_size, _zip_time(info), lambda i=info: archive.open(i)
    elif tarfile.is_tarfile(path):
        with tarfile.open(path) as archive:
            for info in archive:
                link = info.issym() or info.islnk()
                kind = (
                    "dir"
                    if info.isdir()
                    else "file"
                    if info.isfile()
                    else "a link"
                    if link
                    else "a device or fifo"
                )
                yield info.name, kind, info.size, info.mtime, lambda i=info: archive.extractfile(i)
    else:
        raise SystemExit(f"cannot unpack {path}: it is not a zip or tar archive (.zip, .tar, .tar.gz)")


def _declared(path: Path) -> tuple[int, int]:
    """The number of entries and the bytes the archive's headers declare (read before anything is written)."""
    count = total = 0
    for _, _, size, _, _ in _members(path):
        count, total = count + 1, total + max(size, 0)
        if count > MAX_ENTRIES:
            break
    return count, total


def unpack(path: Path, into: Path) -> Unpacked:
    """The archive ``path`` into the folder ``into``, within the bounds above; entry times kept."""
    out = Unpacked()
    try:
        count, total = _declared(path)
        if count > MAX_ENTRIES or total > MAX_UNPACKED:
            raise SystemExit(
                f"{path} holds {count}{'+' if count > MAX_ENTRIES else ''} entries, {total / 2**20:.1f} MiB unpacked: "
                f"more than an import takes ({MAX_ENTRIES} entries, {MAX_UNPACKED / 2**20:g} MiB); nothing imported: "
                "import the class in parts"
            )
        for name, kind, size, mtime, opened in _members(path):
            target = _target(into, name)
            if isinstance(target, str):
                out.left_out[name] = target
                continue
            why = (
                kind if kind not in ("dir", "file")
                else f"{size / 2**20:.1f} MiB, more than a submission may hold ({MAX_FILE / 2**20:g} MiB)"
                if size > MAX_FILE else ""
            )  # fmt: skip
            try:
                if kind == "dir" and not why:
                    target.mkdir(parents=True, exist_ok=True)
                    continue
                target.parent.mkdir(parents=True, exist_ok=True)
                if not why:
                    with opened() as source:
                        _copy(source, target, size)
                    os.utime(target, (mtime, mtime))
                    continue
            except (zipfile.BadZipFile, tarfile.TarError, EOFError, ValueError, OSError, zlib.error) as err:
                why = f"damaged ({type(err).__name__}: {err})"
                if target.is_dir() and not target.is_symlink():
                    shutil.rmtree(target, ignore_errors=True)
                else:
                    target.unlink(missing_ok=True)
            try:
                target.touch(exist_ok=False)  # stands in for the entry: its student is refused with ``why``
                out.damaged[target] = why
            except OSError:
                out.left_out[name] = why
    except (zipfile.BadZipFile, tarfile.TarError, OSError, EOFError, struct.error, zlib.error) as err:
        raise SystemExit(f"cannot unpack {path}: {type(err).__name__}: {err}") from err
    return out
