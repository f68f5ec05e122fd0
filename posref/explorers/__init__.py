"""Explorers for the course: sliders and figures where a student would rather look than read.

Every explorer is a pure figure function and an ``Explorer`` widget over it (``posref.explorers.base``), one
module per explorer (figure function / explorer: what it shows, notebook):

* ``arcs``: ``draw_angle_arcs`` / ``unseen_share``: the relative angles one RoPE pair met in training and at a longer
  length, before and after scaling, and ``draw_neighbour_angles``: where the fastest pair puts the nearest keys
  (06, 07; figures on given axes, no explorer);
* ``styles``: ``SCALING_STYLES`` / ``scaling_style`` / ``scaling_label``: one look and one name per scaling method in 07's and 07b's figures;
* ``fingerprint``: ``fingerprint_figure`` / ``fingerprint_explorer``: sinusoidal PE as clocks (02);
* ``bias``: ``bias_heatmap_figure`` / ``bias_heatmap_explorer``: ALiBi and T5 biases by head (03);
* ``rope_pair``: ``rope_pair_figure`` / ``rope_pair_explorer``: one RoPE pair rotating, the score by
  ``(m, n)`` (04);
* ``decay``: ``decay_figure`` / ``decay_explorer``: score against distance, RoFormer's bound (05);
* ``scaling``: ``scaling_figure`` / ``scaling_explorer``: what a scaling method does to each frequency pair (07b);
* ``position_loss``: ``position_loss_figure`` / ``position_loss_explorer``: the loss at each position of trained
  models by evaluation length (06, 08; the one explorer that imports ``posref.lab``).

``fonts``: ``sentence_text(chinese, pinyin)``, what a figure writes for the lecture's Chinese examples (the
characters where a CJK font exists, pinyin otherwise), and ``cjk_font()``, the font found (01, 00_start).

An explorer's state is plain Python: ``explorer.controls`` maps names to sliders (each is also an attribute,
e.g. ``explorer.position``), ``explorer.figure`` is the last figure drawn and ``explorer.png`` its PNG bytes,
which is also exactly what its ``Output`` shows and its static figure.
"""

from posref.explorers.arcs import draw_angle_arcs, draw_neighbour_angles, unseen_share
from posref.explorers.base import Explorer, figure_png
from posref.explorers.bias import bias_heatmap_explorer, bias_heatmap_figure, t5_illustrative_table
from posref.explorers.decay import decay_curves, decay_explorer, decay_figure, roformer_bound
from posref.explorers.fingerprint import fingerprint_angles, fingerprint_explorer, fingerprint_figure
from posref.explorers.fonts import cjk_font, sentence_text
from posref.explorers.position_loss import (
    LossCurves,
    moving_average,
    position_loss_explorer,
    position_loss_figure,
)
from posref.explorers.rope_pair import rope_pair_explorer, rope_pair_figure
from posref.explorers.scaling import scaling_dict, scaling_explorer, scaling_figure, scaling_inspection
from posref.explorers.styles import SCALING_STYLES, scaling_label, scaling_style

__all__ = [
    "SCALING_STYLES",
    "Explorer",
    "LossCurves",
    "bias_heatmap_explorer",
    "bias_heatmap_figure",
    "cjk_font",
    "decay_curves",
    "decay_explorer",
    "decay_figure",
    "draw_angle_arcs",
    "draw_neighbour_angles",
    "figure_png",
    "fingerprint_angles",
    "fingerprint_explorer",
    "fingerprint_figure",
    "moving_average",
    "position_loss_explorer",
    "position_loss_figure",
    "roformer_bound",
    "rope_pair_explorer",
    "rope_pair_figure",
    "scaling_dict",
    "scaling_explorer",
    "scaling_figure",
    "scaling_inspection",
    "scaling_label",
    "scaling_style",
    "sentence_text",
    "t5_illustrative_table",
    "unseen_share",
]
