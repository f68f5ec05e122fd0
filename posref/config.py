"""Read a model's ``config.json`` dict into posref's RoPE settings: ``rope_from_config``.

Real configs spell the same settings in several ways; this module knows the ones the transformers library
(5.x) reads, and turns each into ``(head_dim, base, scaling, partial_rotary_factor)`` so that
``RopeConfig.frequencies()`` equals what that library computes for the config:

* where the knobs live: legacy ``rope_scaling`` + top-level ``rope_theta`` / ``partial_rotary_factor``, or
  transformers 5's ``rope_parameters`` (which carries them all); ``type`` is an old name of ``rope_type``;
* the head size: ``head_dim``, else ``hidden_size // num_attention_heads`` (GPT-2-style ``n_embd / n_head``);
  DeepSeek-V2/V3 rotate only ``qk_rope_head_dim`` dims; ``rotary_pct`` / ``rotary_dim`` give the rotated part;
* the original length: for a method that reads it (``ScalingMethod.needs_original_len``: ``yarn``, ``llama3``,
  ``longrope``, ...) a missing ``original_max_position_embeddings`` is ``max_position_embeddings``; Phi-3's
  *top-level* ``original_max_position_embeddings`` (default 4096) overrides the one in the dict; ``dynamic``
  uses ``max_position_embeddings`` as its ``L`` (the library's rule for that type);
* aliases: Phi-3's ``"su"`` and ``"yarn"`` mean ``longrope``;
* ``null`` values: YaRN's ``factor: null`` is ``max_position_embeddings / original``; LongRoPE without
  ``factor`` uses that ratio for its attention factor.

What a single ``RopeConfig`` cannot represent is an error that says why: per-layer RoPE (Gemma 3's local and
global bases, dicts nested by layer type), multimodal RoPE (``mrope``, ``xdrope``), model-local variants
(HunYuan's ``alpha``), and models with no RoPE at all. Settings that sit outside the frequencies but change
the attention (DeepSeek's softmax scale, Llama 4's query scaling) are kept as ``notes``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import torch

from posref._checks import check_positive_int
from posref.i18n import N_, _
from posref.rope import LAYOUTS
from posref.scaling import ORIGINAL_LEN_KEY, SCALING_METHODS, rope_frequencies, rotary_dim, yarn_mscale

# model types without RoPE, and what they use instead
NON_ROPE_MODEL_TYPES = {
    "gpt2": "learned absolute positions",
    "bert": "learned absolute positions",
    "roberta": "learned absolute positions",
    "bloom": "ALiBi",
    "mpt": "ALiBi",
    "t5": "T5 relative position buckets",
}
# model types whose config class declares a top-level original_max_position_embeddings (default 4096) that
# overrides the one in the RoPE dict, and which read rope_type "su" / "yarn" as "longrope"
PHI3_MODEL_TYPES = ("phi3", "phi3_v", "phi4_multimodal")
PHI3_ALIASES = ("su", "yarn")
PHI3_DEFAULT_ORIGINAL = 4096
# pairing layout by model type (half-split otherwise)
INTERLEAVED_MODEL_TYPES = ("gptj", "codegen", "cohere", "cohere2", "glm")
DEEPSEEK_MODEL_TYPES = ("deepseek_v2", "deepseek_v3")
# base when the config has no rope_theta: the library's default_theta, which a few model types override
DEFAULT_THETA = 10000.0
DEFAULT_THETA_BY_MODEL_TYPE = {"gpt_oss": 150000.0, "cohere": 500000.0, "bitnet": 500000.0}
# keys some configs keep in the RoPE dict that are not part of the frequencies
NOT_FREQUENCY_KEYS = {
    "llama_4_scaling_beta": N_(
        "Llama-4-style position-dependent query scaling (applied to queries, not to RoPE)"
    ),
}


@dataclass(frozen=True)
class RopeConfig:
    """A model's RoPE settings in posref's terms.

    ``scaling`` is a posref scaling dict (``{"rope_type": ..., keys}``, every value resolved) or None for plain
    RoPE; ``frequencies(seq_len)`` -> ``(inv_freq (d/2,) float32, attention_factor)``. ``notes`` lists what was
    filled in or sits outside the frequencies, in the language posref spoke when the config was read.
    """

    head_dim: int
    base: float
    scaling: dict[str, Any] | None
    partial_rotary_factor: float = 1.0
    max_position_embeddings: int | None = None
    model_type: str | None = None
    layout: str = "half"
    notes: tuple[str, ...] = field(default=())

    def __post_init__(self) -> None:
        if self.layout not in LAYOUTS:
            raise ValueError(
                _("layout must be one of {layouts}, got {layout!r}").format(
                    layouts=LAYOUTS, layout=self.layout
                )
            )
        self.frequencies()  # a config that cannot give frequencies fails here, when it is read

    @property
    def rope_type(self) -> str:
        return "default" if self.scaling is None else self.scaling["rope_type"]

    @property
    def rotary_dim(self) -> int:
        """Rotated dims per head, ``int(head_dim * partial_rotary_factor)``."""
        return rotary_dim(self.head_dim, self.partial_rotary_factor)

    @property
    def original_max_position_embeddings(self) -> int | None:
        """The length the model was trained at before extension (``max_position_embeddings`` if unscaled)."""
        if self.scaling is not None and "original_max_position_embeddings" in self.scaling:
            return self.scaling["original_max_position_embeddings"]
        return self.max_position_embeddings

    @property
    def length_dependent(self) -> bool:
        return SCALING_METHODS[self.rope_type].length_dependent

    def frequencies(
        self, seq_len: int | None = None, *, device: torch.device | str | None = None
    ) -> tuple[torch.Tensor, float]:
        """``(inv_freq (rotary_dim/2,) float32, attention_factor)`` at length ``seq_len`` (None = at init)."""
        return rope_frequencies(
            self.head_dim,
            base=self.base,
            scaling=self.scaling,
            seq_len=seq_len,
            partial_rotary_factor=self.partial_rotary_factor,
            device=device,
        )


def _first(config: Mapping[str, Any], *keys: str) -> Any:
    for key in keys:
        if config.get(key) is not None:
            return config[key]
    return None


def _reject_unrepresentable(config: Mapping[str, Any], model_type: str | None) -> None:
    if model_type in NON_ROPE_MODEL_TYPES:
        raise ValueError(
            _("model_type {model_type!r} has no RoPE: it uses {method}").format(
                model_type=model_type, method=NON_ROPE_MODEL_TYPES[model_type]
            )
        )
    if model_type == "falcon" and config.get("alibi"):
        raise ValueError(_("this Falcon config sets alibi: true, so it uses ALiBi, not RoPE"))
    if config.get("position_embedding_type") not in (None, "rope", "rotary"):
        raise ValueError(
            _(
                "position_embedding_type {kind!r} is not RoPE; rope_from_config reads RoPE settings only"
            ).format(kind=config["position_embedding_type"])
        )
    if "rope_local_base_freq" in config or (model_type or "").startswith("gemma3"):
        raise ValueError(
            _(
                "this config has per-layer RoPE (Gemma 3: sliding-window layers use rope_local_base_freq, global layers rope_theta and any rope_scaling); one RopeConfig holds one setting - build each layer type's settings separately"
            )
        )


def _head_dim(config: Mapping[str, Any], model_type: str | None, notes: list[str]) -> int:
    if model_type in DEEPSEEK_MODEL_TYPES or "qk_rope_head_dim" in config:
        rope_dim = config.get("qk_rope_head_dim", 64)
        notes.append(
            _(
                "RoPE acts on the qk_rope_head_dim = {rope_dim} dims of each head (MLA); the rest of q/k is not rotated"
            ).format(rope_dim=rope_dim)
        )
        return rope_dim
    head_dim = config.get("head_dim")
    if head_dim is not None:
        return head_dim
    hidden = _first(config, "hidden_size", "n_embd", "d_model")
    heads = _first(config, "num_attention_heads", "n_head", "n_heads")
    if hidden is None or heads is None:
        raise ValueError(
            _(
                "cannot tell the head size: the config has no head_dim and no hidden_size / num_attention_heads (nor n_embd / n_head); keys present: {keys}"
            ).format(keys=sorted(config))
        )
    for name, value in (("hidden_size", hidden), ("num_attention_heads", heads)):
        check_positive_int(f"the config's {name}", value)
    return hidden // heads


def _raw_rope_dict(config: Mapping[str, Any]) -> dict[str, Any]:
    # the library reads `rope_scaling or rope_parameters`
    raw = config.get("rope_scaling") or config.get("rope_parameters") or {}
    if not isinstance(raw, Mapping):
        raise ValueError(
            _("rope_scaling / rope_parameters must be a dict or null, got {kind}").format(
                kind=type(raw).__name__
            )
        )
    nested = sorted(k for k, v in raw.items() if isinstance(v, Mapping))
    if nested:
        raise ValueError(
            _(
                "rope_parameters is nested by layer type ({nested}): per-layer RoPE cannot be one RopeConfig; read each layer type's dict separately"
            ).format(nested=", ".join(nested))
        )
    return dict(raw)


def _rope_type(params: dict[str, Any], model_type: str | None, notes: list[str]) -> str:
    rope_type, legacy = params.pop("rope_type", None), params.pop("type", None)
    if rope_type is not None and legacy is not None and rope_type != legacy:
        raise ValueError(
            _("the RoPE dict has rope_type {rope_type!r} and type {legacy!r}, which disagree").format(
                rope_type=rope_type, legacy=legacy
            )
        )
    rope_type = rope_type or legacy or "default"
    if model_type in ("gptj", "codegen") and rope_type == "gptj" and not params:
        # MLC's marker for GPT-J's pairing; the library ignores it (GPT-J hard-codes plain RoPE)
        notes.append(_("rope_type 'gptj' is a pairing marker (interleaved), not a scaling: plain RoPE"))
        rope_type = "default"
    if model_type in PHI3_MODEL_TYPES and rope_type in PHI3_ALIASES:
        notes.append(
            _("rope_type {rope_type!r} is Phi-3's old name for 'longrope'").format(rope_type=rope_type)
        )
        rope_type = "longrope"
    if rope_type in ("mrope", "xdrope") or "mrope_section" in params:
        raise ValueError(
            _(
                "rope_type {rope_type!r} / mrope_section: multimodal RoPE rotates sections of each head by different position axes (time, height, width); a RopeConfig has one position axis"
            ).format(rope_type=rope_type)
        )
    if rope_type == "dynamic" and "alpha" in params:
        raise ValueError(
            _(
                "rope_type 'dynamic' with an 'alpha' key is HunYuan's model-local static NTK; read it as {'rope_type': 'ntk', 'factor': alpha} if that is what you mean"
            )
        )
    return rope_type


def _theta(
    params: dict[str, Any], config: Mapping[str, Any], model_type: str | None, notes: list[str]
) -> float:
    base = params.pop("rope_theta", None)
    if base is None:
        base = _first(config, "rope_theta", "rotary_emb_base")
    if base is None:
        base = DEFAULT_THETA_BY_MODEL_TYPE.get(model_type or "", DEFAULT_THETA)
        notes.append(
            _(
                "no rope_theta in the config: base {base:g} (the library's default for this model type)"
            ).format(base=base)
        )
    return float(base)


def _partial(params: dict[str, Any], config: Mapping[str, Any], head_dim: int) -> float:
    prf = params.pop("partial_rotary_factor", None)
    if prf is None:
        prf = _first(config, "partial_rotary_factor", "rotary_pct")
    if prf is None and config.get("rotary_dim") is not None:
        prf = config["rotary_dim"] / head_dim
    return 1.0 if prf is None else float(prf)


def _fill_lengths(
    rope_type: str,
    params: dict[str, Any],
    config: Mapping[str, Any],
    model_type: str | None,
    max_len: int | None,
    notes: list[str],
) -> None:
    key = ORIGINAL_LEN_KEY
    if rope_type == "dynamic":
        if max_len is None:
            raise ValueError(
                _("rope_type 'dynamic' needs max_position_embeddings in the config (it is its L)")
            )
        if params.get(key) not in (None, max_len):
            notes.append(
                _(
                    "dynamic NTK's L is max_position_embeddings = {max_len}; the dict's {key} is ignored"
                ).format(max_len=max_len, key=key)
            )
        params[key] = max_len
    elif rope_type in SCALING_METHODS and SCALING_METHODS[rope_type].needs_original_len:
        if model_type in PHI3_MODEL_TYPES:
            top = config.get(key, PHI3_DEFAULT_ORIGINAL)
            if params.get(key) not in (None, top):
                notes.append(
                    _("top-level {key} = {top} overrides the dict's {value} (Phi-3 rule)").format(
                        key=key, top=top, value=params[key]
                    )
                )
            params[key] = top
        elif params.get(key) is None:
            if max_len is None:
                raise ValueError(
                    _("rope_type {rope_type!r} needs {key} or max_position_embeddings in the config").format(
                        rope_type=rope_type, key=key
                    )
                )
            params[key] = max_len
            notes.append(
                _("{key} missing: set to max_position_embeddings = {max_len}, as the library does").format(
                    key=key, max_len=max_len
                )
            )


def _resolve_factors(rope_type: str, params: dict[str, Any], max_len: int | None, notes: list[str]) -> None:
    original = params.get("original_max_position_embeddings")
    if rope_type == "yarn" and params.get("factor", 0) is None:
        if max_len is None:
            raise ValueError(
                _("yarn factor is null and the config has no max_position_embeddings to derive it")
            )
        params["factor"] = max_len / original
        notes.append(
            _("yarn factor null: max_position_embeddings / original = {max_len} / {original}").format(
                max_len=max_len, original=original
            )
        )
    if rope_type == "longrope" and params.get("factor") is None and params.get("attention_factor") is None:
        if max_len is None:
            raise ValueError(
                _("longrope needs factor, attention_factor or max_position_embeddings in the config")
            )
        params.pop("factor", None)
        ratio = max_len / original
        if ratio > 1:
            params["factor"] = ratio
            notes.append(
                _(
                    "longrope factor for the attention factor: max_position_embeddings / original = {ratio:g}"
                ).format(ratio=ratio)
            )
        else:
            params["attention_factor"] = 1.0
            notes.append(_("longrope with max_position_embeddings <= original: attention factor 1"))


def _deepseek_note(
    rope_type: str, params: Mapping[str, Any], model_type: str | None, notes: list[str]
) -> None:
    if model_type in DEEPSEEK_MODEL_TYPES and rope_type == "yarn" and params.get("mscale_all_dim"):
        s, k = params["factor"], params["mscale_all_dim"]
        notes.append(
            _(
                "DeepSeek applies YaRN's temperature to the softmax scale of the whole logit: qk_head_dim**-0.5 * (0.1 * {k} * ln {s:g} + 1)**2 = qk_head_dim**-0.5 * {scale:.4f}; the cos/sin factor here is the ratio mscale/mscale_all_dim"
            ).format(k=k, s=s, scale=yarn_mscale(s, k) ** 2)
        )


def _layout(config: Mapping[str, Any], model_type: str | None) -> str:
    if model_type in INTERLEAVED_MODEL_TYPES:
        return "interleaved"
    if model_type in DEEPSEEK_MODEL_TYPES and config.get("rope_interleave", True):
        return "interleaved"
    return "half"


def rope_from_config(config: Mapping[str, Any]) -> RopeConfig:
    """Read a ``config.json`` dict -> ``RopeConfig`` whose ``frequencies()`` equal the transformers library's.

    Raises ValueError, naming the reason, for configs one RoPE setting cannot represent (see the module
    docstring) and for values the scaling methods reject.
    """
    if not isinstance(config, Mapping):
        raise TypeError(
            _("config must be a dict (a parsed config.json), got {kind}").format(kind=type(config).__name__)
        )
    model_type = config.get("model_type")
    _reject_unrepresentable(config, model_type)
    notes: list[str] = []
    head_dim = _head_dim(config, model_type, notes)
    params = _raw_rope_dict(config)
    rope_type = _rope_type(params, model_type, notes)
    base = _theta(params, config, model_type, notes)
    prf = _partial(params, config, head_dim)
    for key, why in NOT_FREQUENCY_KEYS.items():
        if key in params:
            notes.append(
                _("{key} = {value} left out: {why}").format(key=key, value=params.pop(key), why=_(why))
            )
    max_len = _first(config, "max_position_embeddings", "n_positions", "max_seq_len")
    _fill_lengths(rope_type, params, config, model_type, max_len, notes)
    _resolve_factors(rope_type, params, max_len, notes)
    _deepseek_note(rope_type, params, model_type, notes)
    if rope_type == "default" and not params:
        scaling = None
    else:
        scaling = {"rope_type": rope_type, **params}
    return RopeConfig(
        head_dim=head_dim,
        base=base,
        scaling=scaling,
        partial_rotary_factor=prf,
        max_position_embeddings=max_len,
        model_type=model_type,
        layout=_layout(config, model_type),
        notes=tuple(notes),
    )


__all__ = ["RopeConfig", "rope_from_config"]
