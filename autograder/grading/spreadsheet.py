"""CSV fields that no spreadsheet reads as a formula (OWASP's CSV injection advice): ``export``'s CSV and the course
sites' grade files hold what students control (ids, names, notebook names, the grader's messages about their code).
"""

from __future__ import annotations

import csv
import re
import unicodedata
from collections.abc import Callable
from pathlib import Path

# What could start a cell: a separator of any common locale (, ; tab |) or a line break, outside quotes or inside
# them for a reader that ignores them. A cell starting with = + - @ (or their full-width forms), after spaces
# and quotes, is a formula to Excel, LibreOffice or Google Sheets (OWASP: CSV injection).
_CELL_START = re.compile(r"""(^|[,;|\n])(?=[^\S\n]*"*[^\S\n]*[=+\-@\uff1d\uff0b\uff0d\uff20])""")
_LINE_BREAKS = re.compile("\r\n?|[\u0085\u2028\u2029]")
MAX_FIELD = 32_000  # characters of a field: a spreadsheet cell holds 32,767, Python's csv reads 131,072


def spreadsheet_safe(value: object) -> str:
    """A CSV field that no spreadsheet reads as a formula, however it splits the line: tabs and control
    characters become spaces, line breaks ``\\n``, and every place a separator could start a cell that begins
    with = + - @ gets an apostrophe there (a student id ``=HYPERLINK(...)``, a message ``see notes;=40+2``);
    at most ``MAX_FIELD`` characters (the record holds the rest)."""
    text = _LINE_BREAKS.sub("\n", str(value)[: MAX_FIELD + 1])
    text = "".join(c if c == "\n" or not unicodedata.category(c).startswith("C") else " " for c in text)
    text = _CELL_START.sub(r"\1'", text)
    return text if len(text) <= MAX_FIELD else text[: MAX_FIELD - 40] + " [...: the record holds the rest]"


def write_csv(
    path: Path, header: list[str], rows: list[list[object]], field: Callable[[object], str] = spreadsheet_safe
) -> None:
    """``path`` (UTF-8, no byte-order mark), every field quoted and made by ``field`` (``spreadsheet_safe`` or
    stricter); its folder made if missing."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f, quoting=csv.QUOTE_ALL)
        writer.writerows([field(v) for v in row] for row in [header, *rows])
