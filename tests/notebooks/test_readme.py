"""The README's library example runs as printed and does what its comments say; its entry points, and the commands
the other editions' READMEs (README.zh-TW.md, README.zh-CN.md) quote, exist as written."""

import re
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest
import torch

REPO = Path(__file__).resolve().parents[2]
README = REPO / "README.md"


def test_the_library_example_runs_and_its_comments_hold():
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)
    assert blocks, "README.md has no python example"
    namespace: dict = {}
    for block in blocks:
        exec(compile(block, str(README), "exec"), namespace)
    # what the comments promise: plain RoPE tables for 4096 positions, q and k rotated with their own head counts,
    # an ALiBi bias of (heads, q, k)
    q, q_rot, k_rot = namespace["q"], namespace["q_rot"], namespace["k_rot"]
    assert namespace["cos"].shape == (4096, 64)
    assert q_rot.shape == q.shape and k_rot.shape == q.shape  # the module call rotates q and q
    torch.testing.assert_close(q_rot.norm(dim=-1), q.norm(dim=-1), rtol=1e-5, atol=1e-5)  # a rotation
    assert namespace["bias"].shape == (12, 16, 16)


def test_the_other_entry_points_run_as_written():
    """Each command of "Other entry points" is found as the README writes it, after `make lab` or `make setup`
    and without the venv activated (`make` does not activate it): run from the repository root with --help."""
    section = README.read_text().split("## Other entry points", 1)[1].split("\n## ", 1)[0]
    commands = [shlex.split(c) for c in re.findall(r"^\| `([^`]+)` \|", section, flags=re.M)]
    assert len(commands) >= 4, section
    venv = README.parent / ".venv" / "bin"
    for words in commands:
        assert words[0] in ("make", f".venv/bin/{Path(words[0]).name}"), (
            f"{shlex.join(words)}: after make, only make and the venv's .venv/bin/... are found as written"
        )
    if not venv.is_dir():
        pytest.skip(f"no {venv}: made by `make lab` or `make setup`, which this checkout has not run")
    for words in commands:
        if words[0] == "make":
            continue
        done = subprocess.run(
            [str(README.parent / words[0]), *words[1:], "--help"],
            cwd=README.parent,
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert done.returncode == 0 and "usage:" in done.stdout, (
            f"{shlex.join(words)}:\n{done.stderr[-2000:]}"
        )


def test_the_activated_venv_runs_the_commands_bare_from_any_folder(tmp_path):
    """What "Other entry points" promises: once ``source .venv/bin/activate`` ran, ``posref`` and ``python -m
    autograder`` (autograder/README.md's commands) are found as written, from any folder, with nothing else on PATH."""
    section = README.read_text().split("## Other entry points", 1)[1].split("\n## ", 1)[0]
    assert "`source .venv/bin/activate`" in section and "`posref ...`" in section, section
    instructors = (
        (REPO / "autograder" / "README.md").read_text().split("## Commands", 1)[1].split("\n| ", 1)[0]
    )
    assert "`source .venv/bin/activate`" in instructors, "autograder/README.md does not say where it runs"
    activate = REPO / ".venv" / "bin" / "activate"
    if not activate.is_file():
        pytest.skip(f"no {activate}: made by `make lab` or `make setup`, which this checkout has not run")
    if shutil.which("bash") is None:
        pytest.skip("no bash to source the activation script in")
    for command in ("posref --help", "python -m autograder --help"):
        done = subprocess.run(
            ["bash", "-c", f"source {shlex.quote(str(activate))} && {command}"],
            cwd=tmp_path,
            env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)},
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert done.returncode == 0 and "usage:" in done.stdout, f"{command}:\n{done.stderr[-2000:]}"


# ---------------------------------------------------------------------------------------------------------------
# the student's section in the other editions' languages: README.zh-TW.md, README.zh-CN.md

EDITION_READMES = {tag: REPO / f"README.{tag}.md" for tag in ("zh-TW", "zh-CN")}
COMMAND = re.compile(r"^(make|python|\.venv/bin/|git|source|POSREF_[A-Z_]+=)\s*\S")
SHELL_ONLY = (["git", "pull"], ["source", ".venv/bin/activate"])  # not the course's: git's, the shell's


def quoted_commands(text: str) -> list[list[str]]:
    """The commands a README quotes: each line of its ```bash blocks (comments dropped), and each inline code span
    that starts as a command does (``make ...``, ``python ...``, ``.venv/bin/...``, ``git ...``, ``VAR=value ...``)."""
    lines = [
        line for block in re.findall(r"```bash\n(.*?)```", text, flags=re.S) for line in block.splitlines()
    ]
    lines += [span for span in re.findall(r"`([^`\n]+)`", re.sub(r"```.*?```", "", text, flags=re.S))]
    commands = [shlex.split(line, comments=True) for line in lines if COMMAND.match(line)]
    return [words for words in commands if words]


def _make_n(words: list[str]) -> None:
    if shutil.which("make") is None:
        pytest.skip("no make here: the Makefile's targets are checked where make is")
    done = subprocess.run(["make", "-n", *words[1:]], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, f"{shlex.join(words)}: {done.stderr[-1000:]}"


def _check_command(words: list[str]) -> None:
    """Fails unless ``words`` is a command of the course as written: a make target (and variables) the Makefile
    has, posref's command line with options it takes, pip's set-up with an extra pyproject.toml declares."""
    while "=" in words[0]:  # VAR=value before a command: a variable the course reads
        variable = words.pop(0).split("=", 1)[0]
        assert variable in (REPO / "posref" / "notebook.py").read_text(), f"posref reads no {variable}"
    python = words[:2] == ["python", "-m"] or words[:3] == [".venv/bin/python", "-m"]
    module = words[words.index("-m") + 1] if python else None
    if words in SHELL_ONLY:
        return
    if words[0] == "make":
        _make_n(words)
    elif module == "posref" or words[0] == ".venv/bin/posref":
        from posref.cli import build_parser

        build_parser().parse_args(
            words[words.index("posref") + 1 if python else 1 :]
        )  # exits on a bad option
    elif module == "venv":
        assert words[3:] == [".venv"], words
    elif module == "pip":
        extras = re.findall(r"^([a-z-]+) = \[", (REPO / "pyproject.toml").read_text(), flags=re.M)
        for word in words:
            for extra in re.findall(r"^\.\[([^\]]+)\]$", word):
                assert extra in extras, f"{shlex.join(words)}: pyproject.toml declares no extra {extra}"
        if "-c" in words:
            assert (REPO / words[words.index("-c") + 1]).is_file(), words
    else:
        raise AssertionError(f"the README quotes {shlex.join(words)}, which is not a command of the course")


@pytest.mark.parametrize("tag", list(EDITION_READMES))
def test_an_editions_readme_quotes_only_commands_that_exist(tag):
    text = EDITION_READMES[tag].read_text(encoding="utf-8")
    commands = quoted_commands(text)
    assert ["make", "lab", f"EDITION={tag}"] in commands, "the README does not say how to open its edition"
    assert ["python", "-m", "posref", "lab", "--lang", tag] in commands, "nor how to open it without make"
    assert [".venv/bin/posref", "update", "--lang", tag] in commands, "nor how to update it"
    for words in commands:
        _check_command(list(words))
    for target in re.findall(r"\]\(([^)\s]+)\)", text):  # links and pictures: the English README, docs/
        assert (REPO / target).is_file(), f"README.{tag}.md links to {target}, which does not exist"
    assert "](README.md)" in text, "no link back to the English README (the instructor's side)"
    assert f"](docs/{tag}_start_page.png)" in text, "no picture of the edition's start page"
    assert f"`work-{tag}/`" in text and "`work/`" not in text, "the student's folder of this edition"


def test_the_readme_check_refuses_what_the_course_lacks():
    for wrong in (
        ["make", "lab", "EDITION=fr"],
        ["python", "-m", "posref", "lab", "--lang", "fr"],
        [".venv/bin/posref", "update", "--language", "zh-TW"],
        ["python", "-m", "pip", "install", "-e", ".[zh-hk]"],
        ["POSREF_SLOW=1", "make", "lab"],
        ["rm", "-rf", "work"],
    ):
        with pytest.raises((AssertionError, SystemExit)):
            _check_command(list(wrong))


@pytest.mark.parametrize(
    ("readme", "editions"),
    [("README.md", ("zh-TW", "zh-CN")), ("README.zh-TW.md", ("zh-TW",)), ("README.zh-CN.md", ("zh-CN",))],
)
def test_each_readme_names_the_fonts_its_editions_figures_take_in_order(readme, editions):
    """An edition's figures take the first family of its script in its FONT_ORDER that the machine has: the README
    names its first family, and the families of its script it names in that order (issue 38.6)."""
    from posref.explorers import fonts

    text = (REPO / readme).read_text(encoding="utf-8")
    for edition in editions:
        script = fonts.FONT_ORDER[edition][
            : len(fonts._SIMPLIFIED if edition == "zh-CN" else fonts._TRADITIONAL)
        ]
        named = [family for family in script if family in text]
        assert script[0] in named and len(named) >= 3, (readme, edition, named)
        assert sorted(named, key=text.index) == named, (readme, edition)
