"""Where posref finds the course's data: inside the package in an installed wheel, the checkout's data/ otherwise."""

from __future__ import annotations

from pathlib import Path

import posref._data
from posref._data import find_data_dir
from posref.lab.checkpoints import CHECKPOINTS
from posref.lab.tasks import DATA_DIR

REPO = Path(__file__).resolve().parents[2]


def _package(root: Path) -> Path:
    package = root / "posref"
    package.mkdir(parents=True)
    return package


def test_an_installed_copy_inside_the_package_comes_first(tmp_path):
    package = _package(tmp_path)
    for folder in (package / "data", tmp_path / "data"):
        folder.mkdir()
        (folder / "model_configs.json").write_text("{}")
    assert find_data_dir(package) == package / "data"


def test_a_checkout_finds_data_beside_the_package(tmp_path):
    package = _package(tmp_path)
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "model_configs.json").write_text("{}")
    (package / "data").mkdir()  # a folder without the data (e.g. left by a tool) is not taken for it
    assert find_data_dir(package) == tmp_path / "data"


def test_with_no_data_anywhere_the_checkout_path_is_named(tmp_path):
    assert find_data_dir(_package(tmp_path)) == tmp_path / "data"


def test_this_checkout_reads_its_top_level_data_folder():
    # the editable install (or a plain checkout on sys.path) reads data/ at the top of the repository, which holds
    # what data/README.md lists
    assert Path(posref._data.__file__).resolve().parent == REPO / "posref"
    assert DATA_DIR == REPO / "data"
    assert {"model_configs.json", "stdlib_train.txt.gz", "stdlib_val.txt.gz", "README.md"} <= {
        p.name for p in DATA_DIR.iterdir()
    }
    shipped = {p.stem for p in (DATA_DIR / "checkpoints").glob("*.pt")}
    assert shipped == set(CHECKPOINTS), (
        f"checkpoints in data/ {sorted(shipped)}, posref lists {sorted(CHECKPOINTS)}"
    )
