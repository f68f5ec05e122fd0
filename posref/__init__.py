"""posref: reference implementations for the course "How does a Transformer know the order of its tokens?".

The public names below are what notebooks, tests and graders call; see each module for the paper it follows.
"""

from posref.absolute import (
    LearnedPositionalEmbedding,
    sinusoidal_frequencies,
    sinusoidal_pe,
    sinusoidal_shift_matrix,
)
from posref.attention import (
    attention_scores,
    causal_mask,
    equivariance_error,
    is_permutation_equivariant,
    permute_sequence,
    scaled_dot_product_attention,
)
from posref.positions import POSITION_METHODS, NoPE, PositionHandler, make_position_handler
from posref.relative import T5RelativeBias, alibi_bias, alibi_slopes, t5_relative_position_bucket
from posref.rope import LAYOUTS, RotaryEmbedding, apply_rope, layout_permutation, rope_cos_sin
from posref.rope_analysis import p_rope_inv_freq, pair_norms, rope_scores_by_distance
from posref.scaling import SCALING_METHODS, rope_frequencies

__version__ = "0.1.0"

__all__ = [
    "LAYOUTS",
    "POSITION_METHODS",
    "SCALING_METHODS",
    "LearnedPositionalEmbedding",
    "NoPE",
    "PositionHandler",
    "RotaryEmbedding",
    "T5RelativeBias",
    "alibi_bias",
    "alibi_slopes",
    "apply_rope",
    "attention_scores",
    "causal_mask",
    "equivariance_error",
    "is_permutation_equivariant",
    "layout_permutation",
    "make_position_handler",
    "p_rope_inv_freq",
    "pair_norms",
    "permute_sequence",
    "rope_cos_sin",
    "rope_frequencies",
    "rope_scores_by_distance",
    "scaled_dot_product_attention",
    "sinusoidal_frequencies",
    "sinusoidal_pe",
    "sinusoidal_shift_matrix",
    "t5_relative_position_bucket",
]
