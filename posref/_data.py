"""Where the course's shipped data is: the corpus, the trained checkpoints and the real models' configs.

In a checkout (and an editable install, and the grading sandbox's read-only copy of the checkout) they are the
top-level ``data/`` folder beside ``posref/``; the wheel's build maps that folder to ``posref/data/``
(``pyproject.toml``, ``force-include``), so an installed posref finds them inside itself, from any folder.
``data/README.md`` says what each file is and how it was made.
"""

from __future__ import annotations

from pathlib import Path

_PACKAGE = Path(__file__).resolve().parent
_MARKER = "model_configs.json"  # a file every copy of the data holds


def find_data_dir(package: Path = _PACKAGE) -> Path:
    """``package/data`` where the data was installed inside the package, else the checkout's ``data/`` beside the
    package (returned even when missing, so that a read names the path it expected)."""
    installed, checkout = package / "data", package.parent / "data"
    return installed if (installed / _MARKER).is_file() else checkout


DATA_DIR = find_data_dir()
