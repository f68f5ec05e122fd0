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
from posref.config import RopeConfig, rope_from_config
from posref.inspector import format_inspection, inspect_rope
from posref.lab import (
    POSITION_METHODS,
    CharVocab,
    NoPE,
    PositionHandler,
    TinyDecoder,
    associative_recall_batch,
    build_model,
    checkpoint_info,
    copy_batch,
    evaluate_lengths,
    lm_batch,
    lm_eval_batches,
    load_char_corpus,
    load_checkpoint,
    make_position_handler,
    per_position_accuracy,
    per_position_loss,
)
from posref.longrope_search import longrope_search, seed_factors
from posref.relative import T5RelativeBias, alibi_bias, alibi_slopes, t5_relative_position_bucket
from posref.rope import LAYOUTS, RotaryEmbedding, apply_rope, apply_rope_qk, layout_permutation, rope_cos_sin
from posref.rope_analysis import p_rope_inv_freq, pair_norms, rope_scores_by_distance
from posref.scaling import SCALING_METHODS, dynamic_ntk_alpha, ntk_base, rope_frequencies, yarn_mscale

__version__ = "0.1.0"

__all__ = [
    "LAYOUTS",
    "POSITION_METHODS",
    "SCALING_METHODS",
    "LearnedPositionalEmbedding",
    "NoPE",
    "PositionHandler",
    "RopeConfig",
    "RotaryEmbedding",
    "T5RelativeBias",
    "alibi_bias",
    "alibi_slopes",
    "apply_rope",
    "apply_rope_qk",
    "attention_scores",
    "causal_mask",
    "dynamic_ntk_alpha",
    "equivariance_error",
    "format_inspection",
    "inspect_rope",
    "is_permutation_equivariant",
    "layout_permutation",
    "longrope_search",
    "make_position_handler",
    "ntk_base",
    "p_rope_inv_freq",
    "pair_norms",
    "permute_sequence",
    "rope_cos_sin",
    "rope_frequencies",
    "rope_from_config",
    "rope_scores_by_distance",
    "scaled_dot_product_attention",
    "seed_factors",
    "sinusoidal_frequencies",
    "sinusoidal_pe",
    "sinusoidal_shift_matrix",
    "t5_relative_position_bucket",
    "yarn_mscale",
    # the length-generalisation lab
    "CharVocab",
    "TinyDecoder",
    "associative_recall_batch",
    "build_model",
    "checkpoint_info",
    "copy_batch",
    "evaluate_lengths",
    "lm_batch",
    "lm_eval_batches",
    "load_char_corpus",
    "load_checkpoint",
    "per_position_accuracy",
    "per_position_loss",
]
