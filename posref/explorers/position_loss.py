"""The length lab's explorer: the loss at each position of trained models, by evaluation length.

Notebooks 06 and 08 train (or load) tiny decoders at length ``L = 64`` and read them at longer lengths; a single
number per length hides *where* a model breaks, the curve of loss against position shows it. Two parts (this is
the one explorer that reads checkpoints and runs models, so the one that imports the lab):

* ``LossCurves``: the ``(T,)`` per-position validation loss of named models (by default the six shipped
  checkpoints of ``posref.lab.checkpoints``), computed with ``posref.lab.evaluate.evaluate_lengths`` on the
  first request and cached per ``(model, length)``; the shipped JSON records hold whole-window losses only;
* ``position_loss_figure`` (plain curves -> ``Figure``) and ``position_loss_explorer`` (an ``Explorer`` with a
  model list, a length menu and a smoothing slider).

Loss is cross-entropy in nats per character on fixed validation windows (``posref.lab.tasks.lm_eval_batches``).
Papers: ALiBi's "train short, test long" (Press et al. 2021, arXiv 2108.12409) and NoPE's length
generalisation study (Kazemnejad et al. 2023, arXiv 2305.19466).
"""

from __future__ import annotations

import numbers
from collections.abc import Callable, Mapping, Sequence

import ipywidgets as widgets
import numpy as np
import torch
from matplotlib.figure import Figure
from torch import nn

from posref._checks import check_positive_int, check_seed
from posref.explorers.base import Explorer, new_figure
from posref.i18n import _
from posref.lab.checkpoints import CHECKPOINT_METHODS, EVAL_LENGTHS, TRAIN_LEN, load_checkpoint
from posref.lab.evaluate import evaluate_lengths
from posref.lab.tasks import load_char_corpus

__all__ = ["LossCurves", "moving_average", "position_loss_explorer", "position_loss_figure"]

# a model, or a function of the evaluation length that returns one (e.g. a scaling whose factor is T / L)
ModelSource = nn.Module | Callable[[int], nn.Module]


def moving_average(curve: torch.Tensor | np.ndarray, width: int) -> tuple[np.ndarray, np.ndarray]:
    """Trailing moving average of a ``(T,)`` curve -> ``(positions, values)``, each ``(T - width + 1,)`` float64.

    ``values[k]`` is the mean of ``curve[p - width + 1 .. p]`` at position ``p = positions[k] = k + width - 1``,
    so a jump at position ``p`` starts at ``p`` in the average too (and is complete ``width - 1`` positions later).
    """
    values = np.asarray(curve, dtype=np.float64)
    if values.ndim != 1:
        raise ValueError(
            _("curve must be 1-D (one loss per position), got shape {shape}").format(shape=values.shape)
        )
    if isinstance(width, bool) or not isinstance(width, numbers.Integral) or not 1 <= width <= len(values):
        raise ValueError(
            _("width must be an int in [1, {n}] (the curve's length), got {width!r}").format(
                n=len(values), width=width
            )
        )
    sums = np.cumsum(np.concatenate(([0.0], values)))
    return np.arange(width - 1, len(values), dtype=np.float64), (sums[width:] - sums[:-width]) / width


class LossCurves:
    """Per-position validation loss of named models at any length, computed once per ``(name, length)``.

    ``models`` maps a name to a model, or to a function ``length -> model``; None means the six shipped
    checkpoints (``posref.lab.checkpoints.CHECKPOINT_METHODS``), loaded on first use onto ``device`` (default CPU).
    ``curve(name, T)`` -> ``(T,)`` float32 on the CPU: the mean over ``n_windows`` validation windows of ``T``
    characters (seeded by ``seed``; the same windows for every model) of the loss at each position. A model that
    cannot run at ``T`` (the learned table past its rows) raises ``IndexError`` there; ``curves`` turns that into
    a note. Models handed in must not change afterwards: their curves are cached.
    """

    def __init__(
        self,
        models: Mapping[str, ModelSource] | None = None,
        *,
        n_windows: int = 32,
        seed: int = 0,
        device: torch.device | str | None = None,
    ) -> None:
        self.n_windows = check_positive_int("n_windows", n_windows)
        self.seed = check_seed("seed", seed, means=_("it picks the validation windows"))
        self.device = device
        if models is None:
            self._sources: dict[str, ModelSource | None] = dict.fromkeys(CHECKPOINT_METHODS)  # loaded lazily
        else:
            if not isinstance(models, Mapping) or not models:
                raise ValueError(
                    _("models must be a non-empty dict name -> model, got {models!r}").format(models=models)
                )
            for name, source in models.items():
                if not isinstance(name, str) or not (isinstance(source, nn.Module) or callable(source)):
                    raise ValueError(
                        _(
                            "models must map names (str) to models or to functions length -> model; got {name!r}: {kind}"
                        ).format(name=name, kind=type(source).__name__)
                    )
            self._sources = dict(models)
        self._cache: dict[tuple[str, int], torch.Tensor] = {}

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(self._sources)

    def model(self, name: str, length: int) -> nn.Module:
        """The model ``name`` as evaluated at ``length`` (a shipped checkpoint is loaded on first use)."""
        if name not in self._sources:
            raise ValueError(
                _("unknown model {name!r}; this explorer has {models}").format(
                    name=name, models=list(self._sources)
                )
            )
        source = self._sources[name]
        if source is None:
            source = self._sources[name] = load_checkpoint(name, device=self.device)
        return source if isinstance(source, nn.Module) else source(length)

    def curve(self, name: str, length: int) -> torch.Tensor:
        """``(length,)`` loss at each position of model ``name`` (nats per character), cached."""
        check_positive_int("length", length)
        key = (name, length)
        if key not in self._cache:
            result = evaluate_lengths(
                self.model(name, length),
                load_char_corpus().val,
                [length],
                train_len=TRAIN_LEN,
                n_windows=self.n_windows,
                seed=self.seed,
            )
            self._cache[key] = result[length]["per_position"]
        return self._cache[key]

    def curves(self, names: Sequence[str], length: int) -> dict[str, torch.Tensor | str]:
        """``{name: curve}`` for ``names`` at ``length``; a model that cannot run there gets its error message."""
        out: dict[str, torch.Tensor | str] = {}
        for name in names:
            try:
                out[name] = self.curve(name, length)
            except IndexError as err:  # a learned table too short for this length
                out[name] = str(err)
        return out


def position_loss_figure(
    curves: Mapping[str, torch.Tensor | np.ndarray | str],
    *,
    train_len: int = TRAIN_LEN,
    smooth: int = 8,
    n_windows: int | None = None,
    colours: Mapping[str, str] | None = None,
) -> Figure:
    """Loss against position for each model in ``curves``, with the training length marked.

    ``curves`` maps a name to its ``(T,)`` per-position loss (all of one length ``T``), or to a message saying
    why it has none (listed under the axes). Each curve is drawn as its trailing moving average over ``smooth``
    positions (``moving_average``; gid = the model's name) and labelled with its raw mean loss before ``train_len``
    and from ``train_len`` on. The dashed vertical line (gid ``"train_len"``) is at position ``train_len``: the
    first position no model met in training. ``colours`` fixes a colour per name (default: matplotlib's cycle in
    the order of ``curves``); ``n_windows`` only goes into the title.
    """
    check_positive_int("train_len", train_len)
    check_positive_int("smooth", smooth)
    drawn = {name: np.asarray(c, dtype=np.float64) for name, c in curves.items() if not isinstance(c, str)}
    lengths = {len(c) for c in drawn.values()}
    if len(lengths) > 1:
        raise ValueError(
            _("all curves must have one length T, got lengths {lengths}").format(lengths=sorted(lengths))
        )
    length = lengths.pop() if lengths else None
    if length is not None and smooth > length:
        raise ValueError(
            _("smooth must be <= the curves' length {length}, got {smooth}").format(
                length=length, smooth=smooth
            )
        )

    fig = new_figure((11, 4.6))
    ax = fig.add_subplot()
    for i, (name, curve) in enumerate(drawn.items()):
        x, y = moving_average(curve, smooth)
        before = curve[:train_len].mean()
        label = _("{name}: {before:.2f} before {train_len}").format(
            name=name, before=before, train_len=train_len
        )
        if length > train_len:
            after = curve[train_len:].mean()
            label += _(", {after:.2f} from {train_len} on").format(after=after, train_len=train_len)
        colour = colours[name] if colours and name in colours else f"C{i % 10}"
        ax.plot(x, y, lw=1.3, color=colour, gid=name, label=label)
    ax.axvline(
        train_len,
        color="k",
        ls="--",
        lw=1,
        gid="train_len",
        label=_("training length {train_len}").format(train_len=train_len),
    )
    no_curve = _("{name}: no curve ({message})")
    notes = [no_curve.format(name=name, message=m) for name, m in curves.items() if isinstance(m, str)]
    if not curves:
        notes.append(_("no model selected: pick one or more in the list"))
    if notes:
        ax.text(0.01, 0.02, "\n".join(notes), transform=ax.transAxes, fontsize=7.5, color="0.3", va="bottom")
    ax.set_xlim(0, max(length or 0, train_len + 1) - 1)
    ax.set_xlabel(_("position in the window"))
    ax.set_ylabel(_("loss (nats / character)"))
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0)
    windows = _("{n} validation windows, ").format(n=n_windows) if n_windows else ""
    smoothing = (
        _("moving average of the last {smooth} positions").format(smooth=smooth)
        if smooth > 1
        else _("not smoothed")
    )
    ax.set_title(
        _(
            "loss at each position, T = {length} ({windows}{smoothing})\n"
            "labels: mean loss before position {train_len} and from it on"
        ).format(
            length=length if length is not None else "-",
            windows=windows,
            smoothing=smoothing,
            train_len=train_len,
        ),
        fontsize=9,
    )
    fig.subplots_adjust(left=0.06, right=0.7, bottom=0.11, top=0.87)
    return fig


def _check_lengths(lengths: object) -> tuple[int, ...]:
    if isinstance(lengths, (str, bytes)) or not isinstance(lengths, Sequence) or not lengths:
        raise ValueError(
            _("lengths must be a non-empty list of ints >= 2, got {lengths!r}").format(lengths=lengths)
        )
    for T in lengths:
        if isinstance(T, bool) or not isinstance(T, numbers.Integral) or T < 2:
            raise ValueError(
                _("lengths must be ints >= 2 (evaluation lengths in characters), got {T!r}").format(T=T)
            )
    return tuple(int(T) for T in lengths)


def position_loss_explorer(
    models: Mapping[str, ModelSource] | None = None,
    *,
    lengths: Sequence[int] = EVAL_LENGTHS,
    length: int | None = None,
    selected: Sequence[str] | None = None,
    n_windows: int = 32,
    seed: int = 0,
    device: torch.device | str | None = None,
) -> Explorer:
    """Loss against position with a ``methods`` list (pick several), a ``length`` menu and a ``smooth`` slider.

    ``models``: see ``LossCurves`` (default: the six shipped checkpoints). ``lengths``: the evaluation lengths
    offered (default 64, 128, 256, 512); ``length``: the first one shown (default: the longest up to ``4 L``);
    ``selected``: the models shown first (default: all). Curves are computed for what is shown, when it is
    first shown, and cached in ``explorer.curves`` (a ``LossCurves``); ``n_windows`` windows per length.
    """
    source = LossCurves(models, n_windows=n_windows, seed=seed, device=device)
    lengths = _check_lengths(lengths)
    if length is None:
        length = max([T for T in lengths if T <= 4 * TRAIN_LEN] or [min(lengths)])
    if length not in lengths:
        raise ValueError(
            _("length must be one of lengths {lengths}, got {length!r}").format(
                lengths=list(lengths), length=length
            )
        )
    selected = source.names if selected is None else tuple(selected)
    unknown = [name for name in selected if name not in source.names]
    if unknown:
        raise ValueError(
            _("selected names {unknown} are not models of this explorer: {models}").format(
                unknown=unknown, models=list(source.names)
            )
        )

    colours = {name: f"C{i % 10}" for i, name in enumerate(source.names)}  # a model keeps its colour

    def draw(methods: tuple[str, ...], length: int, smooth: int) -> Figure:
        shown = [name for name in source.names if name in methods]  # in the list's order
        curves = source.curves(shown, length)
        return position_loss_figure(curves, smooth=smooth, n_windows=source.n_windows, colours=colours)

    controls = {
        "methods": widgets.SelectMultiple(
            options=list(source.names),
            value=selected,
            rows=min(len(source.names), 6),
            description=_("models"),
            layout=widgets.Layout(width="300px"),
        ),
        "length": widgets.Dropdown(
            options=list(lengths),
            value=length,
            description=_("length T"),
            layout=widgets.Layout(width="200px"),
        ),
        "smooth": widgets.IntSlider(
            value=min(8, min(lengths)),
            min=1,
            max=min(32, min(lengths)),
            description=_("moving average"),
            continuous_update=False,
            style={"description_width": "initial"},
            layout=widgets.Layout(width="320px"),
        ),
    }
    explorer = Explorer(draw, controls, name="position-loss")
    explorer.curves = source
    return explorer
