"""Build the character-level corpus shipped in data/: CPython 3.11's top-level standard-library modules.

The list is fixed: every ``*.py`` file directly in the standard-library directory, sorted by name, except
files that contain any non-ASCII character (so the vocabulary is printable ASCII plus newline and tab).
Every 10th kept file (indices 9, 19, ...) goes to validation, the rest to training; each split is the
files joined by one blank line, written gzip-compressed (mtime 0, so the bytes depend on the text only).

Run with the Python whose standard library you want (the shipped files came from CPython 3.11.7):

    python tools/make_stdlib_corpus.py [--stdlib DIR] [--out data]

The source is PSF-licensed (see data/README.md); the file list is written to ``stdlib_files.txt`` and the
standard library's ``LICENSE.txt`` is copied to ``stdlib_LICENSE.txt``.
"""

from __future__ import annotations

import argparse
import gzip
import sysconfig
from pathlib import Path


def select_files(stdlib: Path) -> list[Path]:
    """Sorted top-level ``*.py`` files of ``stdlib`` whose text is pure ASCII."""
    files = sorted(stdlib.glob("*.py"), key=lambda p: p.name)
    return [p for p in files if p.read_bytes().isascii()]


def write_gzip(path: Path, text: str) -> None:
    with (
        open(path, "wb") as raw,
        gzip.GzipFile(fileobj=raw, mode="wb", compresslevel=9, mtime=0, filename="") as f,
    ):
        f.write(text.encode("ascii"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stdlib", type=Path, default=Path(sysconfig.get_paths()["stdlib"]))
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parents[1] / "data")
    args = parser.parse_args()
    files = select_files(args.stdlib)
    if not files:
        raise SystemExit(f"no ASCII *.py files found in {args.stdlib}")
    splits: dict[str, list[str]] = {"train": [], "val": []}
    listing = []
    for i, path in enumerate(files):
        split = "val" if i % 10 == 9 else "train"
        splits[split].append(path.read_text(encoding="ascii"))
        listing.append(f"{split}\t{path.name}")
    for split, texts in splits.items():
        text = "\n\n".join(texts)
        write_gzip(args.out / f"stdlib_{split}.txt.gz", text)
        print(f"{split}: {len(texts)} files, {len(text):,} characters")
    (args.out / "stdlib_files.txt").write_text("\n".join(listing) + "\n")
    licence = args.stdlib / "LICENSE.txt"  # the PSF licence and copyright notice travel with the text
    if licence.exists():
        (args.out / "stdlib_LICENSE.txt").write_text(licence.read_text())


if __name__ == "__main__":
    main()
