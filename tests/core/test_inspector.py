"""The inspector (posref.inspector) and its command line, ``posref inspect``."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from posref.cli import main
from posref.inspector import format_inspection, inspect_rope, load_config

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "data" / "model_configs.json"


def run_cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "MPLBACKEND": "Agg"}
    return subprocess.run(
        [sys.executable, "-m", "posref", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=120
    )


@pytest.mark.slow  # a fresh interpreter importing torch and matplotlib: ~5-15 s on a busy 2-core machine
def test_cli_inspects_a_shipped_config_and_saves_the_plot(tmp_path):
    result = run_cli("inspect", str(DATA), "--model", "Llama-3.1-8B", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "method:           llama3" in out
    assert "base (theta):     500000" in out
    assert "context:          original 8,192, claimed 131,072" in out
    assert "29 kept, 6 blended, 29 interpolated (divided by 8) (of 64)" in out
    png = tmp_path / "meta-llama_Llama-3.1-8B-wavelengths.png"
    assert f"plot:             {png.name}" in out
    from matplotlib.image import imread

    image = imread(png)
    assert image.shape[0] > 300 and image.shape[1] > 500
    assert float(image[..., :3].std()) > 0.05  # something is drawn, not a blank canvas


def test_cli_on_a_single_config_json(tmp_path, capsys):
    entry = next(
        e for e in json.loads(DATA.read_text())["models"] if e["name"] == "microsoft/Phi-3.5-mini-instruct"
    )
    path = tmp_path / "config.json"
    path.write_text(json.dumps(entry["config"]))
    plot = tmp_path / "phi.png"
    assert main(["inspect", str(path), "--plot", str(plot), "--seq-len", "4096"]) == 0
    out = capsys.readouterr().out
    assert "method:           longrope" in out
    assert "attention factor: 1.1902" in out
    assert "seq_len 4096" in out and plot.stat().st_size > 1000


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((), "choose one with --model NAME: meta-llama/Llama-2-7b-hf"),
        (("--model", "llama-3.2"), "matches several"),
        (("--model", "no-such-model"), "matches none"),
        (("--model", "gpt2"), "has no RoPE"),
        (("--model", "gemma-3-1b"), "per-layer RoPE"),
    ],
)
def test_cli_errors_are_clear(capsys, args, message):
    assert main(["inspect", str(DATA), *args, "--no-plot"]) == 1
    assert message in capsys.readouterr().err


def test_cli_reads_the_shipped_collection_without_a_path(capsys):
    # from any folder (an installed posref has no checkout around it) the collection is the package's own file
    assert main(["inspect", "--model", "Llama-3.1-8B", "--no-plot"]) == 0
    without = capsys.readouterr().out
    assert main(["inspect", str(DATA), "--model", "Llama-3.1-8B", "--no-plot"]) == 0
    assert without == capsys.readouterr().out
    assert "method:           llama3" in without


def test_cli_missing_file(capsys, tmp_path):
    assert main(["inspect", str(tmp_path / "nope.json")]) == 1
    assert "no such file" in capsys.readouterr().err


def test_ntk_keeps_one_pair_and_interpolates_one_by_the_full_factor():
    config = {
        "hidden_size": 256,
        "num_attention_heads": 4,
        "rope_scaling": {"rope_type": "ntk", "factor": 4.0},
    }
    counts = inspect_rope(config).counts()
    assert counts == {"kept": 1, "blended": 30, "interpolated": 1, "beyond": 0, "faster": 0}


def test_dynamic_is_evaluated_at_the_requested_length():
    config = {
        "hidden_size": 256,
        "num_attention_heads": 4,
        "max_position_embeddings": 2048,
        "rope_scaling": {"type": "dynamic", "factor": 2.0},
    }
    at_claimed = inspect_rope(config)
    assert at_claimed.seq_len == 2048 and at_claimed.counts()["kept"] == 32
    longer = inspect_rope(config, seq_len=4096)
    assert longer.factor == 3.0  # 2 * 4096 / 2048 - 1
    assert longer.counts() == {"kept": 1, "blended": 30, "interpolated": 1, "beyond": 0, "faster": 0}
    assert "alpha at seq_len: 3" in format_inspection(longer)


def test_load_config_prefers_an_exact_name():
    name, config = load_config(DATA, "meta-llama/llama-3.2-1b")
    assert name == "meta-llama/Llama-3.2-1B" and config["head_dim"] == 64


def test_every_pair_kind_and_the_turn_counts():
    # LongRoPE's searched factors can make a pair faster (rho < 1) or divide it by more than the factor:
    # rho = 0.5, 1, 2, 4, 8 with factor 4 are faster, kept, blended, interpolated, beyond
    config = {
        "model_type": "phi3",
        "head_dim": 10,
        "rope_theta": 10000.0,
        "max_position_embeddings": 256,
        "original_max_position_embeddings": 64,
        "rope_scaling": {
            "rope_type": "longrope",
            "short_factor": [0.5, 1.0, 2.0, 4.0, 8.0],
            "long_factor": [0.5, 1.0, 2.0, 4.0, 8.0],
            "factor": 4.0,
        },
    }
    inspection = inspect_rope(config)
    assert inspection.kinds() == ["faster", "kept", "blended", "interpolated", "beyond"]
    # plain wavelengths 2 pi * 10000**(2i/10) = 6.3, 40, 250, 1578, 9958: 3 exceed the original 64 tokens;
    # after dividing by 0.5, 1, 2, 4, 8 they are 3.1, 40, 500, 6310, 79660: still 3
    assert "pairs slower than one turn per original context: 3 before, 3 after" in format_inspection(
        inspection
    )


def test_partial_rotary_pairs_are_compared_with_the_rotated_dims_own_frequencies():
    # head_dim 16 with half of it rotated: the 4 pairs turn at 10000**(-2i/8), and plain RoPE keeps them all
    config = {
        "head_dim": 16,
        "partial_rotary_factor": 0.5,
        "rope_theta": 10000.0,
        "max_position_embeddings": 64,
    }
    inspection = inspect_rope(config)
    assert inspection.counts()["kept"] == 4
    before, _ = inspection.wavelengths()
    expected = [2 * 3.141592653589793 * 10000.0 ** (2 * i / 8) for i in range(4)]
    assert before.tolist() == pytest.approx(expected, rel=1e-6)


# ---------------------------------------------------------------------------------------------------------------
# the report in the student's language, its values in one column


LLAMA_31_REPORT = """\
model:            meta-llama/Llama-3.1-8B
model_type:       llama
method:           llama3
base (theta):     500000
head dim:         128 (rotary dim 128 = 64 pairs, partial_rotary_factor 1, layout half)
factor:           8
context:          original 8,192, claimed 131,072 (claimed / original = 16)
attention factor: 1 (multiplies cos and sin)
pairs:            29 kept, 6 blended, 29 interpolated (divided by 8) (of 64)
wavelengths:      6.28 .. 2,559,196 tokens before, 6.28 .. 2.05e+07 after
pairs slower than one turn per original context: 29 before, 32 after
plot:             llama.png"""  # what the English report said before it was translated


def _report(language: str, model: str) -> str:
    from posref import i18n

    i18n.set_language(language)
    try:
        name, config = load_config(DATA, model)
        return format_inspection(inspect_rope(config, name=name), plot="llama.png")
    finally:
        i18n.set_language(None)


def test_display_width_counts_a_chinese_character_as_two_columns():
    from posref.i18n import display_width

    assert display_width("head dim:") == 9
    assert display_width("模型：") == 6  # two ideographs and a full-width colon
    assert display_width("基底（theta）：") == 2 * 2 + 2 + 5 + 2 + 2
    assert display_width("é ½") == 3  # "ambiguous" and narrow characters take one


def test_the_english_report_is_as_before():
    assert _report("en", "Llama-3.1-8B") == LLAMA_31_REPORT


@pytest.mark.parametrize("language", ["zh-TW", "zh-CN"])
def test_the_report_speaks_the_students_language_in_aligned_columns(language):
    """Every labelled line's value starts in one terminal column (Chinese characters two columns wide), one space
    at least after the widest label; the line of slow pairs is a sentence of its own. DeepSeek-V3's report has
    notes, in the student's language too."""
    from posref import i18n
    from posref.i18n import display_width
    from posref.inspector import LABELS

    said = [i18n.translations(language)[label] for label in LABELS.values()]
    assert all(label.endswith("：") for label in said)
    for model in ("Llama-3.1-8B", "DeepSeek-V3"):
        lines = _report(language, model).splitlines()
        labelled = [(label, line) for line in lines for label in said if line.startswith(label)]
        assert len(labelled) == len(lines) - 1, lines  # all but the sentence
        columns = set()
        for label, line in labelled:
            value = line[len(label) :].lstrip(" ")
            assert line[len(label)] == " " and value, line
            columns.add(display_width(line[: len(line) - len(value)]))
        assert len(columns) == 1, lines  # one column, counted in display width
        characters = {len(line) - len(line[len(label) :].lstrip(" ")) for label, line in labelled}
        assert len(characters) > 1  # counting characters would not have aligned them
        english = r"\b(kept|blended|interpolated|tokens|claimed|original|before|after|pairs|note|plot)\b"
        assert not re.search(english, "\n".join(lines)), lines


def test_a_report_note_speaks_the_students_language():
    assert "DeepSeek 把 YaRN 的溫度套用在整個 logit 的 softmax 縮放上" in _report("zh-TW", "DeepSeek-V3")
    assert "RoPE 作用在每个头的 qk_rope_head_dim = 64 个维度上（MLA）" in _report("zh-CN", "DeepSeek-V3")


# the English words of the plot that an edition translates (zh-TW keeps "context", as its report does)
PLOT_ENGLISH = r"\b(plain|scaled|original|claimed|pair|index|fast|slow|wavelength|tokens|per)\b"


def _plot_texts(language: str) -> list[str]:
    """The title, axis labels and legend of Llama 3.1 8B's wavelength plot in ``language``."""
    import matplotlib

    from posref import i18n
    from posref.explorers.fonts import use_language_font
    from posref.inspector import wavelength_figure

    name, config = load_config(DATA, "Llama-3.1-8B")
    with matplotlib.rc_context(), i18n.speaking(language):
        use_language_font()
        ax = wavelength_figure(inspect_rope(config, name=name)).axes[0]
    legend = [text.get_text() for text in ax.get_legend().get_texts()]
    return [ax.get_title(), ax.get_xlabel(), ax.get_ylabel(), *legend]


def test_the_english_plot_names_its_curves_and_axes():
    texts = _plot_texts("en")
    assert texts[:3] == [
        "meta-llama/Llama-3.1-8B: wavelength per pair",
        "pair index i (fast -> slow)",
        "wavelength 2*pi / w_i (tokens)",
    ]
    assert texts[3:] == ["plain RoPE", "llama3 (scaled)", "original context 8,192", "claimed context 131,072"]


@pytest.mark.parametrize("language", ["zh-TW", "zh-CN"])
def test_the_plot_speaks_the_students_language(language):
    texts = _plot_texts(language)
    assert len(texts) == 7 and all(re.search(r"[\u4e00-\u9fff]", text) for text in texts), texts
    assert not re.search(PLOT_ENGLISH, "\n".join(texts)), texts
    assert "8,192" in texts[5] and "131,072" in texts[6]


def test_posref_inspect_lang_speaks_in_the_report_and_the_plot_and_then_no_more(
    tmp_path, capsys, monkeypatch
):
    import matplotlib

    from posref import i18n

    monkeypatch.delenv(i18n.ENV, raising=False)
    plot = tmp_path / "llama.png"
    with matplotlib.rc_context():
        assert (
            main(["inspect", str(DATA), "--model", "Llama-3.1-8B", "--lang", "zh-CN", "--plot", str(plot)])
            == 0
        )
    out = capsys.readouterr().out
    assert "上下文窗口：" in out and "llama.png" in out and plot.stat().st_size > 10_000
    assert i18n.get_language() == "en"
