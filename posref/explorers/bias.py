"""Notebook 03's explorer: ALiBi and T5 biases by head, as heatmaps over query x key positions.

ALiBi (Press et al. 2021, arXiv 2108.12409) adds ``-s_h |m - n|`` (query ``m``, key ``n``) with a fixed slope
``s_h`` per head; T5 (Raffel et al. 2019, arXiv 1910.10683) adds a learned value per bucket of ``n - m``. The T5 table drawn here is
illustrative (``t5_illustrative_table``), not learned. The figure is built once by the explorer and updated in
place when the head slider moves.
"""

from __future__ import annotations

import numpy as np
import torch
from matplotlib.figure import Figure

from posref._checks import check_positive_int
from posref.explorers.base import Explorer, check_index, int_slider, kept_view, new_figure
from posref.i18n import _
from posref.relative import T5RelativeBias, alibi_bias, alibi_slopes

__all__ = ["bias_heatmap_explorer", "bias_heatmap_figure", "t5_illustrative_table"]


def t5_illustrative_table(n_heads: int, num_buckets: int = 32) -> torch.Tensor:
    """An *illustrative* T5 bias table ``(num_buckets, n_heads)``: deterministic, not learned.

    Real T5 tables are learned; this one only looks the part. Bucket ``b`` of each direction (keys before the
    query: ``b < num_buckets/2``; after: the rest) has distance rank ``j = b mod (num_buckets/2)``; head ``h``
    adds ``-s_h * (j / (num_buckets/2 - 1))**p_h``, a little weaker (x0.7) for keys after the query. Strength
    ``s_h`` falls from 4 to 0.5 and curvature ``p_h`` grows from 0.5 to 2 across heads, so some heads look near
    and some far. Non-increasing in ``j`` on each side; 0 in the query's own bucket.
    """
    check_positive_int("n_heads", n_heads)
    check_positive_int("num_buckets", num_buckets)
    if num_buckets < 4 or num_buckets % 2:
        raise ValueError(
            _("num_buckets must be even and >= 4 (two directions), got {num_buckets}").format(
                num_buckets=num_buckets
            )
        )
    half = num_buckets // 2
    rank = torch.arange(num_buckets, dtype=torch.float64) % half / (half - 1)  # (B,) in [0, 1]
    after = (torch.arange(num_buckets) >= half).double()
    t = (
        torch.linspace(0.0, 1.0, n_heads, dtype=torch.float64)
        if n_heads > 1
        else torch.zeros(1, dtype=torch.float64)
    )
    strength = 4.0 * 0.125**t  # (H,): 4 -> 0.5
    curvature = 0.5 * 4.0**t  # (H,): 0.5 -> 2
    table = -strength * rank[:, None] ** curvature * (1.0 - 0.3 * after[:, None])  # (B, H)
    return table.float()


def _t5_bias(n_heads: int, length: int) -> torch.Tensor:
    """The bidirectional T5 bias ``(n_heads, length, length)`` with the illustrative table."""
    module = T5RelativeBias(n_heads, bidirectional=True)
    with torch.no_grad():
        module.embedding.weight.copy_(t5_illustrative_table(n_heads, module.num_buckets))
        return module(length, length)


class _BiasHeatmaps:
    """``bias_heatmap_figure`` as a figure kept between heads: ``view(head)`` updates it in place (two images, two
    lines, the titles). All heads share one colour scale per bias, so the head slider only changes data."""

    def __init__(self, n_heads: int = 8, length: int = 32) -> None:
        self.n_heads = check_positive_int("n_heads", n_heads)
        self.length = check_positive_int("length", length)
        self.slopes = alibi_slopes(n_heads)
        self.alibi = alibi_bias(self.slopes, length, length).numpy()  # (H, T, T)
        self.t5 = _t5_bias(n_heads, length).numpy()
        fig = self.figure = new_figure((13, 4.3))
        ax_a, ax_t, ax_r = fig.subplots(1, 3, gridspec_kw={"width_ratios": [1, 1, 1.1]})
        self.images, self.titles = [], []
        for ax, data, gid, label in (
            (ax_a, self.alibi, "alibi", _("ALiBi bias")),
            (ax_t, self.t5, "t5", _("T5 bias")),
        ):
            # one colour scale for all heads: a steep head goes dark within a few tokens, a gentle one barely
            # changes over the whole window (a scale per head would draw every ALiBi head the same)
            image = ax.imshow(
                data[0], cmap="viridis", gid=gid, origin="upper", vmin=float(data.min()), vmax=0.0
            )
            fig.colorbar(
                image, ax=ax, fraction=0.046, label=_("{bias} (one scale for all heads)").format(bias=label)
            )
            ax.set_xlabel(_("key position n"))
            ax.set_ylabel(_("query position m"))
            self.images.append(image)
            self.titles.append(ax.set_title("", fontsize=9))
        self.row = i = length // 2
        keys = np.arange(length)
        (self.alibi_row,) = ax_r.plot(
            keys, self.alibi[0, i], "o-", ms=3, label=_("ALiBi: a straight line in distance")
        )
        (self.t5_row,) = ax_r.step(
            keys, self.t5[0, i], where="mid", label=_("T5: one value per bucket (illustrative)")
        )
        low = min(float(self.alibi.min()), float(self.t5.min()))
        ax_r.set_ylim(1.05 * low, -0.05 * low if low < 0 else 1.0)  # the same for all heads, like the colours
        ax_r.axvline(i, color="0.7", lw=0.8, ls=":")
        ax_r.set_xlabel(_("key position n"))
        ax_r.set_ylabel(_("bias for query m = {m}").format(m=i))
        ax_r.legend(fontsize=8, loc="lower center")
        self.row_title = ax_r.set_title("", fontsize=9)
        fig.subplots_adjust(left=0.04, right=0.99, bottom=0.12, top=0.87, wspace=0.42)

    def __call__(self, head: int) -> Figure:
        head = check_index("head", head, self.n_heads, _("one of the {n} heads").format(n=self.n_heads))
        for image, data in zip(self.images, (self.alibi, self.t5), strict=True):
            image.set_data(data[head])
        self.alibi_row.set_ydata(self.alibi[head, self.row])
        self.t5_row.set_ydata(self.t5[head, self.row])
        self.titles[0].set_text(
            _("ALiBi, head {head}: slope s = {slope:.4g}\nbias = -s·|m - n|").format(
                head=head, slope=float(self.slopes[head])
            )
        )
        self.titles[1].set_text(
            _("T5 buckets, head {head}: ILLUSTRATIVE table\n(deterministic, not learned)").format(head=head)
        )
        self.row_title.set_text(_("head {head} of {n}: one row of each").format(head=head, n=self.n_heads))
        return self.figure


def bias_heatmap_figure(head: int, n_heads: int = 8, length: int = 32) -> Figure:
    """ALiBi and T5 biases of head ``head`` over ``length`` queries x keys, side by side, and one row of each.

    Left (gid ``"alibi"``): ``-s_h |m - n|`` with ALiBi's slope ``s_h`` (arXiv 2108.12409), in the symmetric
    form the core computes (a causal model masks the keys after the query). Middle (gid ``"t5"``): T5's
    bidirectional bucketed bias (arXiv 1910.10683, 32 buckets, max_distance 128) with an *illustrative* table
    (``t5_illustrative_table``), labelled as such. Right: both biases for the middle query against key position.
    Images have rows = query position ``m``, columns = key position ``n``. Colours (and the right panel's y axis)
    use one scale for all ``n_heads`` heads, so heads can be compared by eye.
    """
    n_heads = check_positive_int("n_heads", n_heads)
    check_index("head", head, n_heads, _("one of the {n} heads").format(n=n_heads))
    return _BiasHeatmaps(n_heads, length)(head)


def bias_heatmap_explorer(n_heads: int = 8, length: int = 32) -> Explorer:
    """ALiBi and T5 bias heatmaps with a ``head`` slider; see ``bias_heatmap_figure``. The figure is built once and
    updated in place when the slider moves."""
    check_positive_int("n_heads", n_heads)
    check_positive_int("length", length)
    head = int_slider(_("head"), 0, 0, n_heads - 1)
    return Explorer(kept_view(lambda: _BiasHeatmaps(n_heads, length)), {"head": head}, name="bias-heatmap")
