"""posref installed from a wheel, outside the checkout (a cloud notebook service, a student's laptop): its data
(corpus, checkpoints, model configs) comes with the package, and a notebook runs from a folder of its own.

The wheel is built from a copy of the package's sources (nothing is written into the checkout) and installed with
pip into a fresh virtual environment; torch, Jupyter and the rest come from this venv's site-packages through a
``.pth`` line, so nothing is downloaded or reinstalled, and this venv's editable posref is not seen (its ``.pth``
hook is not processed there). Everything then runs from a temporary folder with no checkout above it.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import nbformat
import pytest
import tomllib

REPO = Path(__file__).resolve().parents[2]
SHIPPED = REPO / "data"  # the course's data; the wheel carries it as posref/data/
SDIST = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["hatch"]["build"]["targets"]["sdist"][
    "only-include"
]  # what the wheel is built from
NOTEBOOK = "07b_longrope"  # reads the corpus, the RoPE checkpoint and model_configs.json

CHECK = """
import json, sys
from pathlib import Path
import posref
from posref.lab.checkpoints import CHECKPOINT_METHODS, checkpoint_info, load_checkpoint
from posref.lab.tasks import DATA_DIR, load_char_corpus
from posref.cli import main
from posref import i18n

corpus = load_char_corpus()
models = {name: sum(p.numel() for p in load_checkpoint(name).parameters()) for name in CHECKPOINT_METHODS}
assert main(["inspect", "--model", "Llama-3.1-8B", "--no-plot"]) == 0
print(json.dumps({
    "posref": posref.__file__, "data": str(DATA_DIR), "prefix": sys.prefix,
    "train": corpus.train.numel(), "val": corpus.val.numel(), "vocab": len(corpus.vocab.chars),
    "models": models, "rope_steps": checkpoint_info("rope")["train"]["steps"],
    "zh": [i18n.set_language(lang) or i18n._("your cell") for lang in ("zh-TW", "zh-CN")],
}))
"""

WHERE = """import json, sys, posref
from posref.lab.tasks import DATA_DIR
print("WHERE " + json.dumps({"posref": posref.__file__, "data": str(DATA_DIR), "prefix": sys.prefix}))"""


def build_wheel(tmp: Path) -> Path:
    """``pip wheel`` of a copy of what the wheel is built from (the checkout stays untouched) -> the wheel. What is
    copied is what pyproject.toml's sdist holds, so that a package added there is in the test's wheel too."""
    src = tmp / "src"
    src.mkdir()
    shutil.copy2(REPO / "pyproject.toml", src / "pyproject.toml")
    for name in SDIST:
        if (REPO / name).is_dir():
            shutil.copytree(
                REPO / name,
                src / name,
                ignore=shutil.ignore_patterns("__pycache__", "*.egg-info", "node_modules"),
            )
        else:
            shutil.copy2(REPO / name, src / name)
    pip_wheel = [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation"]
    done = subprocess.run(
        [*pip_wheel, "-w", str(tmp), "."], cwd=src, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stdout + done.stderr
    (wheel,) = tmp.glob("posref-*.whl")
    return wheel


def fresh_venv(tmp: Path, wheel: Path) -> Path:
    """A new venv with the wheel pip-installed and this venv's packages (not its posref) importable -> python."""
    venv = tmp / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=600)
    python = venv / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
    cmd = [sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--no-deps", "--no-index"]
    done = subprocess.run([*cmd, str(wheel)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    site = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
        timeout=600,
    ).stdout.strip()
    ours = dict.fromkeys([sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]])
    (Path(site) / "course_packages.pth").write_text("".join(f"{p}\n" for p in ours))
    return python


def env_outside(tmp: Path) -> dict[str, str]:
    """No PYTHONPATH (nothing of the checkout), fast sizes, Jupyter's own folders in ``tmp``."""
    drop = ("PYTHONPATH", "JUPYTER_PATH", "JUPYTER_CONFIG_DIR")
    env = {k: v for k, v in os.environ.items() if k not in drop}
    env.update(
        POSREF_FAST="1",
        MPLBACKEND="Agg",
        JUPYTER_DATA_DIR=str(tmp / "jupyter"),
        JUPYTER_CONFIG_DIR=str(tmp / "jupyter-config"),
        POSREF_COURSE_DIR=str(tmp / "course"),
    )
    return env


@pytest.mark.slow  # a wheel build, a venv, and one notebook in its fast setting: about 40 s on a busy machine
def test_an_installed_wheel_finds_its_data_and_runs_a_notebook_from_another_folder(tmp_path):
    wheel = build_wheel(tmp_path)
    shipped = {"posref/data/" + p.relative_to(SHIPPED).as_posix() for p in SHIPPED.rglob("*") if p.is_file()}
    with zipfile.ZipFile(wheel) as z:
        names = set(z.namelist())
    missing = shipped - names
    assert not missing, (
        f"the wheel leaves out the course's data (pyproject.toml's force-include): {sorted(missing)}"
    )
    # the course's Validate button, built (what a student's JupyterLab loads), without its source and build tools
    assert "posref_jupyter/jupyter_data/labextensions/@posref/validate/package.json" in names
    assert not [n for n in names if n.startswith("posref_jupyter/labextension/")]

    python = fresh_venv(tmp_path, wheel)
    work = tmp_path / "work"  # a folder of the user's, no checkout above it
    work.mkdir()
    env = env_outside(tmp_path)
    done = subprocess.run(
        [str(python), "-c", CHECK], cwd=work, env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
    found = json.loads(done.stdout.strip().splitlines()[-1])
    installed = Path(found["prefix"]).resolve()
    assert installed == python.parent.parent.resolve()
    assert Path(found["posref"]).resolve().is_relative_to(installed), found
    assert Path(found["data"]).resolve().is_relative_to(installed), found
    # the figures data/README.md states for the corpus, and six checkpoints of the same model size
    assert (found["train"], found["val"], found["vocab"]) == (3_699_289, 699_351, 96)
    assert set(found["models"]) == {"learned", "sinusoidal", "alibi", "t5", "rope", "nope"}
    assert found["rope_steps"] == 2000
    assert found["zh"] == ["你的儲存格", "你的单元格"], "the wheel leaves out posref/locale/*/posref.po"

    # the notebook as a student downloads it, alone in that folder, run by the fresh venv's kernel
    nb = nbformat.read(REPO / "solutions" / NOTEBOOK / f"{NOTEBOOK}.ipynb", as_version=4)
    nb.cells.append(nbformat.v4.new_code_cell(WHERE))
    path = work / f"{NOTEBOOK}.ipynb"
    nbformat.write(nb, path)
    runner = (
        "import sys, nbformat\nfrom nbclient import NotebookClient\n"
        "nb = nbformat.read(sys.argv[1], as_version=4)\n"
        "NotebookClient(nb, timeout=600, kernel_name='python3', resources={'metadata': {'path': '.'}}).execute()\n"
        "nbformat.write(nb, sys.argv[1])\n"
    )
    done = subprocess.run(
        [str(python), "-c", runner, path.name], cwd=work, env=env, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr[-3000:]
    out = nbformat.read(path, as_version=4).cells[-1].outputs
    text = "".join(o.get("text", "") for o in out)
    assert "WHERE " in text, out
    kernel = json.loads(text.split("WHERE ", 1)[1])
    assert Path(kernel["prefix"]).resolve() == installed, kernel
    assert Path(kernel["posref"]).resolve().is_relative_to(installed), kernel
    assert not Path(kernel["data"]).resolve().is_relative_to(REPO), kernel
