"""What a model's RoPE scaling does to each frequency pair: the function behind ``posref inspect``.

For a ``config.json`` (or one entry of ``data/model_configs.json``) it reports the method, base, factor, the
original and the claimed context, and sorts the rotated pairs by what the scaling did to them, using the
ratio ``rho_i = w_i / w'_i`` of plain to scaled frequency (``s`` = the method's factor; for dynamic NTK the
``alpha`` at the evaluated length):

* kept: ``rho = 1`` (the pair still turns as in training: local order is untouched);
* interpolated: ``rho = s`` (divided by the full factor, Position-Interpolation-style);
* blended: ``1 < rho < s`` (NTK's smooth change, YaRN's / Llama 3's ramp, LongRoPE's searched factors);
* beyond: ``rho > s`` (LongRoPE may interpolate a pair more than ``s``); faster: ``rho < 1``.

``wavelength_figure`` (saved by ``plot_wavelengths``) draws the wavelength ``2 pi / w`` of every pair before and
after, against the original and the claimed context: pairs whose wavelength exceeds the original context never
completed a turn in training, which is why they are the ones to interpolate.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from posref.config import RopeConfig, rope_from_config
from posref.i18n import N_, _, display_width
from posref.scaling import default_inv_freq, dynamic_ntk_alpha

PAIR_KINDS = ("kept", "blended", "interpolated", "beyond", "faster")
# each kind's name as a figure's legend says it, in the language of the moment (``_(PAIR_KIND_NAMES[kind])``)
PAIR_KIND_NAMES = {
    "kept": N_("kept"),
    "blended": N_("blended"),
    "interpolated": N_("interpolated"),
    "beyond": N_("beyond"),
    "faster": N_("faster"),
}
_RTOL = 1e-5


@dataclass(frozen=True)
class Inspection:
    """The per-pair picture of one RoPE setting; ``inv_freq_*`` are ``(rotary_dim/2,)`` float64."""

    name: str | None
    rope: RopeConfig
    seq_len: int | None
    factor: float | None
    inv_freq_plain: torch.Tensor
    inv_freq: torch.Tensor
    attention_factor: float

    @property
    def ratio(self) -> torch.Tensor:
        """``rho_i = plain / scaled`` per pair (1 = kept, ``s`` = interpolated by the full factor)."""
        return self.inv_freq_plain / self.inv_freq

    def kinds(self) -> list[str]:
        """The kind of each pair (see the module docstring)."""
        s = self.factor or 1.0
        out = []
        for rho in self.ratio.tolist():
            if math.isclose(rho, 1.0, rel_tol=_RTOL):
                out.append("kept")
            elif s > 1 and math.isclose(rho, s, rel_tol=_RTOL):
                out.append("interpolated")
            elif rho < 1:
                out.append("faster")
            elif rho > s:
                out.append("beyond")
            else:
                out.append("blended")
        return out

    def counts(self) -> dict[str, int]:
        kinds = self.kinds()
        return {kind: kinds.count(kind) for kind in PAIR_KINDS}

    def wavelengths(self) -> tuple[torch.Tensor, torch.Tensor]:
        """Wavelengths ``2 pi / w`` in tokens, before and after scaling."""
        return 2 * math.pi / self.inv_freq_plain, 2 * math.pi / self.inv_freq


def _effective_factor(rope: RopeConfig, seq_len: int | None) -> float | None:
    scaling = rope.scaling
    if scaling is None:
        return None
    if rope.rope_type == "dynamic":
        return dynamic_ntk_alpha(seq_len, scaling["original_max_position_embeddings"], scaling["factor"])
    return scaling.get("factor")


def inspect_rope(
    config: Mapping[str, Any] | RopeConfig, *, seq_len: int | None = None, name: str | None = None
) -> Inspection:
    """Inspect a config dict (read with ``rope_from_config``) or a ``RopeConfig``.

    ``seq_len`` is the length to evaluate length-dependent methods at (dynamic, longrope); by default the
    claimed context ``max_position_embeddings`` for those, None (initialisation) otherwise.
    """
    rope = config if isinstance(config, RopeConfig) else rope_from_config(config)
    if seq_len is None and rope.length_dependent:
        seq_len = rope.max_position_embeddings
    inv_freq, attention_factor = rope.frequencies(seq_len)
    plain = default_inv_freq(rope.rotary_dim, rope.base)
    return Inspection(
        name=name,
        rope=rope,
        seq_len=seq_len,
        factor=_effective_factor(rope, seq_len),
        inv_freq_plain=plain.double(),
        inv_freq=inv_freq.double(),
        attention_factor=attention_factor,
    )


def _tokens(n: float) -> str:
    if n < 1000:
        return f"{n:.3g}"
    return f"{n:,.0f}" if n < 1e7 else f"{n:.3g}"


# the report's labels, said in the language of the moment, with the values after them in one column
LABELS = {
    "model": N_("model:"),
    "model_type": N_("model_type:"),
    "method": N_("method:"),
    "base": N_("base (theta):"),
    "head_dim": N_("head dim:"),
    "factor": N_("factor:"),
    "alpha": N_("alpha at seq_len:"),
    "context": N_("context:"),
    "attention_factor": N_("attention factor:"),
    "evaluated_at": N_("evaluated at:"),
    "pairs": N_("pairs:"),
    "wavelengths": N_("wavelengths:"),
    "note": N_("note:"),
    "plot": N_("plot:"),
}


def _aligned(rows: list[tuple[str, str]]) -> list[str]:
    """``(label key, value)`` rows as lines whose values start in one column, one past the widest label, counted
    in display columns (``display_width``: a Chinese character takes two), so that they line up in a terminal in
    every language (English's column is 18)."""
    labels = [_(LABELS[key]) for key, _value in rows]
    column = max(map(display_width, labels)) + 1
    return [
        label + " " * (column - display_width(label)) + value
        for label, (_key, value) in zip(labels, rows, strict=True)
    ]


def _pair_counts(inspection: Inspection) -> str:
    counts, factor = inspection.counts(), inspection.factor
    described = {
        "kept": _("{n} kept"),
        "blended": _("{n} blended"),
        "interpolated": _("{n} interpolated (divided by {factor:g})") if factor else _("{n} interpolated"),
        "beyond": _("{n} divided by more than the factor"),
        "faster": _("{n} made faster"),
    }
    listed = _(", ").join(described[k].format(n=counts[k], factor=factor) for k in PAIR_KINDS if counts[k])
    return _("{counts} (of {pairs})").format(counts=listed, pairs=len(inspection.ratio))


def format_inspection(inspection: Inspection, *, plot: str | Path | None = None) -> str:
    """A short plain-text report, one fact per line, in the language posref speaks (``posref.i18n``), its values
    in one column; ``plot``, the path of the wavelength plot when one was saved, is its last line."""
    rope = inspection.rope
    before, after = inspection.wavelengths()
    original, claimed = rope.original_max_position_embeddings, rope.max_position_embeddings
    rows = [("model", inspection.name)] if inspection.name else []
    rows += [
        ("model_type", rope.model_type or _("(none)")),
        ("method", rope.rope_type),
        ("base", f"{rope.base:g}"),
        (
            "head_dim",
            _(
                "{head_dim} (rotary dim {rotary_dim} = {pairs} pairs, partial_rotary_factor {partial:g}, layout "
                "{layout})"
            ).format(
                head_dim=rope.head_dim,
                rotary_dim=rope.rotary_dim,
                pairs=rope.rotary_dim // 2,
                partial=rope.partial_rotary_factor,
                layout=rope.layout,
            ),
        ),
    ]
    if inspection.factor is not None:
        rows.append(("alpha" if rope.rope_type == "dynamic" else "factor", f"{inspection.factor:g}"))
    if original is not None and claimed is not None:
        if claimed != original:
            context = _("original {original}, claimed {claimed} (claimed / original = {ratio:g})")
        else:
            context = _("original {original}, claimed {claimed}")
        rows.append(
            (
                "context",
                context.format(
                    original=_tokens(original), claimed=_tokens(claimed), ratio=claimed / original
                ),
            )
        )
    rows.append(
        (
            "attention_factor",
            _("{factor:.5g} (multiplies cos and sin)").format(factor=inspection.attention_factor),
        )
    )
    if rope.length_dependent:
        rows.append(
            (
                "evaluated_at",
                _("seq_len {seq_len} (this method depends on the length)").format(seq_len=inspection.seq_len),
            )
        )
    rows.append(("pairs", _pair_counts(inspection)))
    wavelengths = _("{fast} .. {slow} tokens before, {fast_after} .. {slow_after} after")
    rows.append(
        (
            "wavelengths",
            wavelengths.format(
                fast=_tokens(float(before[0])),
                slow=_tokens(float(before[-1])),
                fast_after=_tokens(float(after[0])),
                slow_after=_tokens(float(after[-1])),
            ),
        )
    )
    lines = _aligned(rows + [("note", note) for note in rope.notes] + ([("plot", str(plot))] if plot else []))
    if original is not None:
        slower = _("pairs slower than one turn per original context: {before} before, {after} after")
        lines.insert(
            len(rows),
            slower.format(before=int((before > original).sum()), after=int((after > original).sum())),
        )
    return "\n".join(lines)


def wavelength_figure(inspection: Inspection):
    """A matplotlib ``Figure`` of each pair's wavelength before and after scaling (log scale), against the original
    and the claimed context, its text in the language posref speaks (``posref.i18n``). A Chinese text needs a font
    that draws it: ``posref.explorers.fonts.use_language_font()`` before this call (``posref inspect`` does)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    before, after = inspection.wavelengths()
    pairs = range(len(before))
    fig = Figure(figsize=(7.5, 4.5), dpi=110)
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    ax.semilogy(pairs, before.numpy(), "o-", ms=3, label=_("plain RoPE"))
    scaled = _("{method} (scaled)").format(method=inspection.rope.rope_type)
    ax.semilogy(pairs, after.numpy(), "s-", ms=3, label=scaled)
    original = inspection.rope.original_max_position_embeddings
    claimed = inspection.rope.max_position_embeddings
    if original is not None:
        label = _("original context {tokens:,}").format(tokens=original)
        ax.axhline(original, color="gray", ls="--", lw=1, label=label)
    if claimed is not None and claimed != original:
        label = _("claimed context {tokens:,}").format(tokens=claimed)
        ax.axhline(claimed, color="black", ls=":", lw=1, label=label)
    ax.set_xlabel(_("pair index i (fast -> slow)"))
    ax.set_ylabel(_("wavelength 2*pi / w_i (tokens)"))
    name = inspection.name or inspection.rope.model_type or "RoPE"
    ax.set_title(_("{name}: wavelength per pair").format(name=name))
    ax.legend(fontsize=8)
    ax.grid(True, which="major", alpha=0.3)
    fig.tight_layout()
    return fig


def plot_wavelengths(inspection: Inspection, path: str | Path) -> Path:
    """Save ``wavelength_figure(inspection)`` as a PNG at ``path`` -> the path written."""
    path = Path(path)
    wavelength_figure(inspection).savefig(path)
    return path


def load_config(path: str | Path, model: str | None = None) -> tuple[str, dict[str, Any]]:
    """Read a ``config.json``, or pick ``model`` from a collection like posref's ``data/model_configs.json``
    -> ``(name, config dict)``. ``model`` matches a name exactly (any case) or as a unique substring."""
    path = Path(path)
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        raise FileNotFoundError(_("no such file: {path}").format(path=path)) from None
    except json.JSONDecodeError as e:
        raise ValueError(_("{path} is not valid JSON: {error}").format(path=path, error=e)) from None
    if not isinstance(data, dict):
        raise ValueError(
            _("{path} must hold a JSON object (a config.json), got {kind}").format(
                path=path, kind=type(data).__name__
            )
        )
    if "models" not in data:
        if model is not None:
            raise ValueError(
                _("{path} is a single config.json; --model applies to a collection with 'models'").format(
                    path=path
                )
            )
        return path.stem, data
    entries = data["models"]
    names = [entry["name"] for entry in entries]
    if model is None:
        raise ValueError(
            _("{path} holds {n_names} configs; choose one with --model NAME: {names}").format(
                path=path, n_names=len(names), names=", ".join(names)
            )
        )
    exact = [e for e in entries if e["name"].lower() == model.lower()]
    found = exact or [e for e in entries if model.lower() in e["name"].lower()]
    if len(found) != 1:
        if found:
            message = _("--model {model!r} matches several of the configs in {path}: {candidates}")
        else:
            message = _("--model {model!r} matches none of the configs in {path}: {candidates}")
        candidates = [e["name"] for e in found] or names
        raise ValueError(message.format(model=model, path=path, candidates=", ".join(candidates)))
    return found[0]["name"], found[0]["config"]


def default_plot_path(name: str) -> Path:
    """``<name>-wavelengths.png`` with the name made file-safe."""
    return Path(re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("_") + "-wavelengths.png")


__all__ = [
    "Inspection",
    "format_inspection",
    "inspect_rope",
    "load_config",
    "plot_wavelengths",
    "wavelength_figure",
]
