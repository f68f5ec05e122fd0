"""posref.notebook: the flags a notebook reads, read when asked, and setup() for a notebook's first cell."""

import os
import subprocess
import sys

import pytest
import torch

from posref import notebook

FLAGS = ("POSREF_FAST", "POSREF_GRADING", "POSREF_RETRAIN", "POSREF_THREADS")


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch):
    for name in FLAGS:
        monkeypatch.delenv(name, raising=False)
    threads = torch.get_num_threads()
    yield
    torch.set_num_threads(threads)


@pytest.mark.parametrize(
    "value, on",
    [("1", True), ("TRUE", True), (" yes ", True), ("on", True), ("0", False), ("", False), ("off", False)],
)
def test_a_flag_reads_the_environment_when_asked(monkeypatch, value, on):
    assert not notebook.fast()
    monkeypatch.setenv("POSREF_FAST", value)
    assert notebook.fast() is on
    monkeypatch.setenv("POSREF_GRADING", value)
    assert notebook.grading() is on


def test_a_value_that_is_no_flag_is_an_error_naming_it(monkeypatch):
    monkeypatch.setenv("POSREF_GRADING", "2")
    with pytest.raises(ValueError, match=r"POSREF_GRADING='2'.*1/true/yes/on"):
        notebook.grading()


def test_retrain_is_off_while_grading(monkeypatch):
    monkeypatch.setenv("POSREF_RETRAIN", "1")
    assert notebook.retrain()
    monkeypatch.setenv("POSREF_GRADING", "1")
    assert not notebook.retrain()


@pytest.mark.parametrize("value", ["0", "-2", "two", "1.5"])
def test_threads_must_be_a_positive_integer(monkeypatch, value):
    assert notebook.threads() == 1
    monkeypatch.setenv("POSREF_THREADS", value)
    with pytest.raises(ValueError, match="POSREF_THREADS.*positive integer"):
        notebook.threads()


def test_setup_returns_the_device_and_flags_seeds_torch_and_sets_cpu_threads(monkeypatch):
    monkeypatch.setenv("POSREF_FAST", "1")
    monkeypatch.setenv("POSREF_THREADS", "2" if torch.get_num_threads() == 1 else "1")
    device, fast, grading = notebook.setup(seed=3)
    first = torch.rand(4)
    assert (device, fast, grading) == ("cuda" if torch.cuda.is_available() else "cpu", True, False)
    if device == "cpu":
        assert torch.get_num_threads() == int(os.environ["POSREF_THREADS"])
    notebook.setup(seed=3)
    assert torch.equal(torch.rand(4), first)
    notebook.setup(seed=4)
    assert not torch.equal(torch.rand(4), first)


@pytest.mark.parametrize("edition, picked", [("en", False), ("zh-TW", True), ("zh-CN", True)])
def test_use_edition_speaks_the_notebooks_language_whatever_posref_lang_says(monkeypatch, edition, picked):
    """A notebook's first cell names its edition: posref speaks its language from then on (an English notebook in
    a shell with POSREF_LANG=zh-CN too), and a Chinese edition's own figures get a font of its script (the
    explorers pick theirs); in English matplotlib is left alone."""
    from posref import i18n
    from posref.explorers import fonts

    asked = []
    monkeypatch.setattr(
        fonts, "use_language_font", lambda: asked.append(i18n.get_language()) or "Some CJK Font"
    )
    monkeypatch.setenv("POSREF_LANG", "zh-CN" if edition == "en" else "en")
    try:
        assert notebook.use_edition(edition) == ("Some CJK Font" if picked else None)
        assert i18n.get_language() == edition
        assert asked == ([edition] if picked else [])
        with pytest.raises(ValueError, match="posref speaks no language 'fr'"):
            notebook.use_edition("fr")
        assert i18n.get_language() == edition
    finally:
        i18n.set_language(None)


def test_shown_marks_a_sentence_and_returns_it_unchanged():
    label = "random key"
    assert notebook.shown(label) is label


def test_importing_posref_changes_no_environment_variable():
    # a fresh interpreter: every posref module imported, then the environment compared with the one before
    code = (
        "import os, pkgutil, importlib; before = dict(os.environ); import posref; "
        "[importlib.import_module(m.name) for m in pkgutil.walk_packages(posref.__path__, 'posref.') "
        "if m.name != 'posref.__main__']; "
        "changed = sorted(k for k in set(before) | set(os.environ) if before.get(k) != os.environ.get(k)); "
        "print(changed); assert not changed, changed"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=300)


def test_uses_turns_an_unfinished_exercise_into_one_line():
    with pytest.raises(notebook.ExerciseNotDone, match=r"^finish Exercise 3 first: .*NameError: name 't5'"):
        with notebook.uses("Exercise 3"):
            t5  # noqa: B018, F821 (the name an unfinished exercise never assigned)

    def stub():
        raise NotImplementedError("not done yet")

    with pytest.raises(
        notebook.ExerciseNotDone, match="finish Exercise 2 first: .*its stub still raises"
    ) as info:
        with notebook.uses("Exercise 2"):
            stub()
    assert info.value.__cause__ is None and info.value.__suppress_context__  # no chained traceback


def test_uses_lets_other_errors_through_and_refuses_a_bad_name():
    with pytest.raises(KeyError, match="512"):
        with notebook.uses("Exercise 1"):
            {}[512]
    with notebook.uses("Exercise 1"):
        done = 1
    assert done == 1
    with pytest.raises(TypeError, match="exercise's name as a non-empty str"):
        with notebook.uses(""):
            pass
