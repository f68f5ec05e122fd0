"""The transformers library as an independent oracle for RoPE frequencies (tests only).

Two ways in: ``hf_init(...)`` calls one of ``transformers.modeling_rope_utils.ROPE_INIT_FUNCTIONS`` (or the
default init) on a small config object built for it; ``hf_rotary_for_model_config(config_dict)`` builds the
real config class of a model type and instantiates that model's own rotary module, which is what the model
uses at run time.
"""

from __future__ import annotations

import copy
import importlib
import logging
from collections.abc import Mapping
from typing import Any

from transformers import AutoConfig, LlamaConfig
from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS

# the library logs warnings for keys it does not know (e.g. posref's own) and for implicit factors
logging.getLogger("transformers").setLevel(logging.ERROR)


def hf_config(
    head_dim: int,
    *,
    base: float,
    scaling: Mapping[str, Any] | None,
    partial_rotary_factor: float = 1.0,
    max_position_embeddings: int = 4096,
) -> Any:
    """A LlamaConfig that carries the given RoPE settings in transformers-5 form (``rope_parameters``)."""
    params = dict(scaling or {"rope_type": "default"})
    params["rope_theta"] = base
    if partial_rotary_factor != 1.0:
        params["partial_rotary_factor"] = partial_rotary_factor
    n_heads = 4
    return LlamaConfig(
        hidden_size=head_dim * n_heads,
        num_attention_heads=n_heads,
        num_key_value_heads=n_heads,
        head_dim=head_dim,
        max_position_embeddings=max_position_embeddings,
        rope_parameters=params,
    )


def hf_init(config: Any, seq_len: int | None = None) -> tuple[Any, float]:
    """``(inv_freq, attention_factor)`` from the library's init function for ``config.rope_parameters``."""
    rope_type = config.rope_parameters["rope_type"]
    if rope_type == "default":
        from transformers.models.llama.modeling_llama import LlamaRotaryEmbedding

        return LlamaRotaryEmbedding.compute_default_rope_parameters(config)
    return ROPE_INIT_FUNCTIONS[rope_type](config, None, seq_len=seq_len)


def hf_model_config(config_dict: Mapping[str, Any]) -> Any:
    """The model type's own config class, filled from a ``config.json`` dict."""
    kwargs = copy.deepcopy(dict(config_dict))  # the library writes into the nested RoPE dict
    return AutoConfig.for_model(kwargs.pop("model_type"), **kwargs)


def hf_rotary_for_model_config(config_dict: Mapping[str, Any]) -> Any:
    """Instantiate the model's own ``*RotaryEmbedding`` module (``inv_freq``, ``attention_scaling``)."""
    config = hf_model_config(config_dict)
    module = importlib.import_module(type(config).__module__.replace(".configuration_", ".modeling_"))
    prefix = type(config).__name__.removesuffix("Config").removesuffix("Text")
    classes = [getattr(module, name) for name in dir(module) if name.endswith("RotaryEmbedding")]
    own = [c for c in classes if c.__name__.startswith(prefix)] or classes
    if len(own) != 1:
        raise LookupError(f"no unique rotary class in {module.__name__}: {[c.__name__ for c in classes]}")
    return own[0](config)
