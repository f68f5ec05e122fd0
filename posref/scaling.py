"""RoPE frequencies and the registry of scaling methods.

Every method has one signature, ``(dim, base, params, seq_len) -> (inv_freq, attention_factor)``, where ``dim``
is the rotary dimension (``int(head_dim * partial_rotary_factor)``), ``params`` the validated keys of a
``rope_scaling``-style dict (without ``rope_type``) and ``seq_len`` the current length for the methods that
depend on it. ``inv_freq`` is ``(dim/2,)`` float32; ``attention_factor`` multiplies cos and sin.

Each entry of ``SCALING_METHODS`` (a ``ScalingMethod``) also holds what the rest of posref needs to know of its
method (its keys, whether it reads ``seq_len`` or the training length, its title and typical keys), which
``rope_from_config``, the scaling explorer, the checkers and the tests look up instead of listing methods (a user's
own function joins them under a new name with ``add_scaling_method``, in ``posref.scaling_registry``). Keys
follow the transformers library's names; unlike that library, an unknown or missing key is an error, and so is a
value out of range (a factor below 1, a factor list of the wrong length). The methods, each below with its paper,
in the lecture's order:

=================  =====================================================  ==========================
rope_type          what it does to pair ``i``'s frequency ``w_i``           depends on the length?
=================  =====================================================  ==========================
``default``        ``w_i = b**(-2i/d)``                                    no
``linear``         ``w_i / s`` for every pair (Position Interpolation)     no
``ntk``            base ``b -> b * s**(d/(d-2))`` (NTK-aware)              no
``dynamic``        the NTK base change with ``s`` grown from the length    yes (``seq_len``)
``ntk_by_parts``   keep fast pairs, ``/ s`` slow pairs, ramp in between    no
``yarn``           ``ntk_by_parts`` (index ramp) + a temperature           no
``llama3``         keep / blend / ``/ s`` by wavelength bands              no
``longrope``       ``w_i / lambda_i`` with searched per-pair ``lambda``    yes (short vs long list)
=================  =====================================================  ==========================

Numerics follow transformers 5.24 for the types it has (same float32 formation, so equal to ~1 ulp);
``ntk`` and ``ntk_by_parts`` are not in that library and follow their papers. Where the papers and the library
differ, the library's behaviour is the default and the paper's is exposed:

* YaRN's ramp: linear in the pair index (library, ``ramp="index"``) vs linear in turns per ``L`` (paper,
  ``ramp="ratio"``, which is also ``ntk_by_parts``);
* Dynamic NTK's alpha: ``factor * l / L - (factor - 1)`` (library) vs ``max(1, l / L)`` (paper):
  ``dynamic_ntk_alpha(..., rule=...)``; and the library keeps a grown base until the length drops below ``L``
  (``RotaryEmbedding`` does the same);
* YaRN's temperature multiplies cos and sin (library), so with partial rotary only the rotated dims are
  tempered; the paper tempers the whole logit (DeepSeek does so via its softmax scale);
* LongRoPE's ``n_hat`` (first tokens left unscaled) is in the paper only.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping, Sequence
from typing import Any

import torch

from posref._checks import check_base, check_choice, check_even, check_positive_int

# the registry lives in posref.scaling_registry; its names are re-exported here, where the rest of posref looks
from posref.i18n import _
from posref.scaling_registry import (  # noqa: F401
    ADDED_METHODS,
    EXAMPLE_DIM,
    ORIGINAL_LEN_KEY,
    SCALING_METHODS,
    FrequencyFn,
    ScalingMethod,
    add_scaling_method,
    register_scaling,
    remove_scaling_method,
    split_scaling,
)


def default_inv_freq(dim: int, base: float, *, device: torch.device | str | None = None) -> torch.Tensor:
    """``base**(-2i/dim)`` for ``i = 0 .. dim/2 - 1`` -> ``(dim/2,)`` float32, formed as the transformers library
    forms it (integer exponents cast to float32, then ``1 / base**(2i/dim)``), so the two agree bit for bit."""
    exponents = torch.arange(0, dim, 2, dtype=torch.int64, device=device).to(torch.float32) / dim
    return 1.0 / (base**exponents)


@register_scaling("default", title="plain RoPE", example={})
def _default(
    dim: int, base: float, params: Mapping[str, Any], seq_len: int | None
) -> tuple[torch.Tensor, float]:
    """Plain RoPE (Su et al. 2021, RoFormer, arXiv 2104.09864): ``inv_freq[i] = base**(-2i/dim)``."""
    return default_inv_freq(dim, base), 1.0


# ---------------------------------------------------------------------------------------------------------------
# Value checks shared by the methods: each names the method, the key, what it got and what it expected.


def _real(method: str, key: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ValueError(
            _("rope_type {method!r}: {key} must be a finite number, got {value!r}").format(
                method=method, key=key, value=value
            )
        )
    return float(value)


def _factor(method: str, params: Mapping[str, Any], key: str = "factor") -> float:
    value = params[key]
    if value is None:
        raise ValueError(
            _("rope_type {method!r}: {key} is None; expected a number >= 1").format(method=method, key=key)
        )
    value = _real(method, key, value)
    if value < 1.0:
        raise ValueError(
            _(
                "rope_type {method!r}: {key} must be >= 1 (it stretches the context by that much), got {value}"
            ).format(method=method, key=key, value=value)
        )
    return value


def _positive(method: str, key: str, value: Any) -> float:
    value = _real(method, key, value)
    if value <= 0.0:
        raise ValueError(
            _("rope_type {method!r}: {key} must be > 0, got {value}").format(
                method=method, key=key, value=value
            )
        )
    return value


def _length(method: str, params: Mapping[str, Any], key: str = "original_max_position_embeddings") -> int:
    value = params[key]
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ValueError(
            _(
                "rope_type {method!r}: {key} must be a positive int (a number of tokens), got {value!r}"
            ).format(method=method, key=key, value=value)
        )
    return value


def _per_pair(method: str, key: str, value: Any, dim: int) -> list[float]:
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
        raise ValueError(
            _("rope_type {method!r}: {key} must be a list of {pairs} numbers, got {kind}").format(
                method=method, key=key, pairs=dim // 2, kind=type(value).__name__
            )
        )
    if len(value) != dim // 2:
        raise ValueError(
            _(
                "rope_type {method!r}: {key} must have one entry per rotated pair, rotary dim / 2 = {pairs}; got {n}"
            ).format(method=method, key=key, pairs=dim // 2, n=len(value))
        )
    return [_positive(method, f"{key}[{i}]", v) for i, v in enumerate(value)]


def _ntk_dim(method: str, dim: int) -> int:
    if dim < 4:
        raise ValueError(
            _("rope_type {method!r} needs a rotary dim >= 4 (the exponent is d/(d-2)), got {dim}").format(
                method=method, dim=dim
            )
        )
    return dim


# ---------------------------------------------------------------------------------------------------------------
# Position Interpolation and NTK-aware base changes.


@register_scaling("linear", title="Position Interpolation", example={"factor": 4.0}, required=("factor",))
def _linear(
    dim: int, base: float, params: Mapping[str, Any], seq_len: int | None
) -> tuple[torch.Tensor, float]:
    """Position Interpolation (Chen et al. 2023, arXiv 2306.15595): squeeze positions ``m -> m / s``.

    ``angle = (m / s) * w_i = m * (w_i / s)``, so every frequency is divided by ``s = factor``: a model trained
    on ``L`` tokens sees only angles it knows up to ``s * L``, at the price of crowding nearby positions.
    """
    s = _factor("linear", params)
    return default_inv_freq(dim, base) / s, 1.0


def ntk_base(base: float, alpha: float, dim: int) -> float:
    """NTK-aware base change (bloc97, 2023; YaRN paper arXiv 2309.00071 eq. 16): ``b * alpha**(d/(d-2))``.

    Chosen so that the fastest pair (``i = 0``) keeps its frequency and the slowest (``i = d/2 - 1``) is divided
    by exactly ``alpha``: ``(b')**(-(d-2)/d) = b**(-(d-2)/d) / alpha``.
    """
    return base * alpha ** (dim / (dim - 2))


@register_scaling("ntk", title="NTK-aware", example={"factor": 4.0}, required=("factor",))
def _ntk(dim: int, base: float, params: Mapping[str, Any], seq_len: int | None) -> tuple[torch.Tensor, float]:
    """Static NTK-aware scaling (bloc97, 2023; written up in YaRN, arXiv 2309.00071 §3.1): ``b' = b * s**(d/(d-2))``.

    Fast pairs (local order) are almost untouched, slow pairs are interpolated, the slowest by exactly ``s``.
    Not a transformers type (it has only the dynamic form); ``factor`` is the paper's ``alpha``.
    """
    s = _factor("ntk", params)
    return default_inv_freq(_ntk_dim("ntk", dim), ntk_base(base, s, dim)), 1.0


def dynamic_ntk_alpha(
    seq_len: int | None, original_len: int, factor: float, *, rule: str = "transformers"
) -> float:
    """The NTK ``alpha`` that Dynamic NTK uses at the current length ``seq_len`` (None = at initialisation).

    * ``rule="transformers"`` (what the library and ``rope_type="dynamic"`` compute):
      ``n = max(seq_len, L)``, ``alpha = factor * n / L - (factor - 1)``; ``alpha = 1`` up to ``L``.
    * ``rule="paper"`` (YaRN paper arXiv 2309.00071 §3.3, emozilla's Dynamic NTK): ``alpha = max(1, l / L)``.

    The two agree only when ``factor == 1``; with ``factor = 2`` the library's alpha grows twice as fast.
    """
    check_choice("rule", rule, ("transformers", "paper"))
    n = original_len if seq_len is None else max(seq_len, original_len)
    if rule == "paper":
        return max(1.0, n / original_len)
    return factor * n / original_len - (factor - 1)


@register_scaling(
    "dynamic",
    title="Dynamic NTK",
    example={"factor": 2.0, ORIGINAL_LEN_KEY: 4096},
    required=("factor", ORIGINAL_LEN_KEY),
    length_dependent=True,
)
def _dynamic(
    dim: int, base: float, params: Mapping[str, Any], seq_len: int | None
) -> tuple[torch.Tensor, float]:
    """Dynamic NTK (emozilla, 2023; YaRN paper arXiv 2309.00071 §3.3) as transformers computes it.

    The NTK base change with ``alpha = dynamic_ntk_alpha(seq_len, L, factor)``: plain RoPE up to ``L``, a base
    that grows with the length after. ``L = original_max_position_embeddings`` (transformers reads the model's
    ``max_position_embeddings`` instead). ``RotaryEmbedding`` applies the library's forward-time rule
    (recompute when the length grows; reset only below ``L``).
    """
    s = _factor("dynamic", params)
    original_len = _length("dynamic", params)
    alpha = dynamic_ntk_alpha(seq_len, original_len, s)
    return default_inv_freq(_ntk_dim("dynamic", dim), ntk_base(base, alpha, dim)), 1.0


# ---------------------------------------------------------------------------------------------------------------
# Frequency-dependent interpolation: NTK-by-parts, YaRN, Llama 3.


def yarn_correction_dim(num_rotations: float, dim: int, base: float, original_len: int) -> float:
    """The (fractional) pair index whose wavelength fits ``num_rotations`` full turns in ``original_len`` tokens:
    ``d * ln(L / (2 pi r)) / (2 ln b)`` (YaRN, arXiv 2309.00071, eq. 17 solved for the index)."""
    return dim * math.log(original_len / (num_rotations * 2 * math.pi)) / (2 * math.log(base))


def yarn_index_ramp(
    dim: int, base: float, original_len: int, beta_fast: float, beta_slow: float, *, truncate: bool = True
) -> torch.Tensor:
    """transformers' YaRN ramp -> ``(d/2,)`` float32 weights in ``[0, 1]``: 0 keeps a pair, 1 divides it by ``s``.

    Linear in the pair index between ``low = dim_of(beta_fast)`` and ``high = dim_of(beta_slow)``
    (``floor``/``ceil`` when ``truncate``; then clamped to ``[0, d - 1]`` - the library's bound, not ``d/2 - 1``).
    This is the authors' code; the paper's formula is ``ratio_ramp`` (linear in rotations, not index).
    """
    low = yarn_correction_dim(beta_fast, dim, base, original_len)
    high = yarn_correction_dim(beta_slow, dim, base, original_len)
    if truncate:
        low, high = math.floor(low), math.ceil(high)
    low, high = max(low, 0), min(high, dim - 1)
    if low == high:
        high += 0.001  # the library's guard against a zero-width ramp
    return ((torch.arange(dim // 2, dtype=torch.float32) - low) / (high - low)).clamp(0.0, 1.0)


def ratio_ramp(dim: int, base: float, original_len: int, beta_fast: float, beta_slow: float) -> torch.Tensor:
    """The YaRN paper's ramp (arXiv 2309.00071 §3.2, "NTK-by-parts") -> ``(d/2,)`` float32 weights in ``[0, 1]``.

    ``r_i = L / lambda_i`` counts the turns pair ``i`` makes in ``L`` tokens; ``gamma = clamp((r - beta_slow) /
    (beta_fast - beta_slow), 0, 1)`` (paper: ``alpha = 1``, ``beta = 32``) and the weight is ``1 - gamma``:
    pairs turning more than ``beta_fast`` times are kept, fewer than ``beta_slow`` times divided by ``s``.
    """
    wavelength = 2 * math.pi / default_inv_freq(dim, base).to(torch.float64)
    turns = original_len / wavelength
    gamma = ((turns - beta_slow) / (beta_fast - beta_slow)).clamp(0.0, 1.0)
    return (1.0 - gamma).to(torch.float32)


def _interpolate_by_weight(dim: int, base: float, factor: float, weight: torch.Tensor) -> torch.Tensor:
    """``w_i * (1 - weight_i) + (w_i / s) * weight_i``, formed as the library forms it."""
    pos_freqs = base ** (torch.arange(0, dim, 2).to(torch.float32) / dim)
    extrapolation, interpolation = 1.0 / pos_freqs, 1.0 / (factor * pos_freqs)
    keep = 1 - weight
    return interpolation * (1 - keep) + extrapolation * keep


def _betas(method: str, params: Mapping[str, Any]) -> tuple[float, float]:
    # the library's `or`: None (and 0) mean the paper's defaults 32 and 1
    beta_fast = _positive(method, "beta_fast", params.get("beta_fast") or 32)
    beta_slow = _positive(method, "beta_slow", params.get("beta_slow") or 1)
    if beta_fast <= beta_slow:
        raise ValueError(
            _(
                "rope_type {method!r}: beta_fast (turns in L above which a pair is kept) must exceed beta_slow, got beta_fast={beta_fast}, beta_slow={beta_slow}"
            ).format(method=method, beta_fast=beta_fast, beta_slow=beta_slow)
        )
    return beta_fast, beta_slow


@register_scaling(
    "ntk_by_parts",
    title="NTK-by-parts",
    example={"factor": 4.0, ORIGINAL_LEN_KEY: 4096},
    required=("factor", ORIGINAL_LEN_KEY),
    optional=("beta_fast", "beta_slow"),
)
def _ntk_by_parts(
    dim: int, base: float, params: Mapping[str, Any], seq_len: int | None
) -> tuple[torch.Tensor, float]:
    """NTK-by-parts (bloc97, 2023; YaRN paper arXiv 2309.00071 §3.2): the frequency-based ramp, no temperature.

    Pairs that turn more than ``beta_fast`` (32) times within ``L`` are kept, fewer than ``beta_slow`` (1) times
    are divided by ``s``, linearly in the number of turns between (``ratio_ramp``). Not a transformers type.
    """
    s = _factor("ntk_by_parts", params)
    original_len = _length("ntk_by_parts", params)
    beta_fast, beta_slow = _betas("ntk_by_parts", params)
    weight = ratio_ramp(dim, base, original_len, beta_fast, beta_slow)
    return _interpolate_by_weight(dim, base, s, weight), 1.0


def yarn_mscale(factor: float, mscale: float = 1.0) -> float:
    """YaRN's attention factor (arXiv 2309.00071 eq. 22): ``0.1 * mscale * ln(s) + 1`` (1 for ``s <= 1``).

    It multiplies cos and sin, so the rotary part of ``q . k`` is scaled by its square, the paper's ``1/t``.
    s = 4 -> 1.1386, s = 32 -> 1.3466, s = 40 -> 1.3689.
    """
    return 1.0 if factor <= 1 else 0.1 * mscale * math.log(factor) + 1.0


YARN_RAMPS = ("index", "ratio")


@register_scaling(
    "yarn",
    title="YaRN",
    # Qwen2.5's recipe for 128k tokens
    example={"factor": 4.0, ORIGINAL_LEN_KEY: 32768},
    required=("factor", ORIGINAL_LEN_KEY),
    optional=("attention_factor", "beta_fast", "beta_slow", "mscale", "mscale_all_dim", "truncate", "ramp"),
)
def _yarn(
    dim: int, base: float, params: Mapping[str, Any], seq_len: int | None
) -> tuple[torch.Tensor, float]:
    """YaRN (Peng et al. 2023, arXiv 2309.00071): NTK-by-parts interpolation plus an attention temperature.

    Keys (transformers' names; defaults in brackets): ``factor`` s, ``original_max_position_embeddings`` L,
    ``beta_fast`` [32], ``beta_slow`` [1], ``truncate`` [True], ``attention_factor`` [derived], ``mscale`` and
    ``mscale_all_dim`` [unset], and posref's ``ramp`` ["index"].

    * Frequencies: ``ramp="index"`` is transformers' (and the authors' code's) ramp, linear in the pair index
      (``yarn_index_ramp``); ``ramp="ratio"`` is the paper's formula, linear in turns per ``L``
      (``ratio_ramp``, then ``truncate`` does not apply). They agree outside the ramp and differ inside it.
    * Attention factor: ``attention_factor`` if given; else, if both ``mscale`` and ``mscale_all_dim`` are set
      (non-zero), ``yarn_mscale(s, mscale) / yarn_mscale(s, mscale_all_dim)`` (1.0 for DeepSeek, which applies
      the temperature to the softmax scale instead); else ``yarn_mscale(s)``. A lone ``mscale`` is ignored,
      as in the library. The factor multiplies cos and sin, so pass-through dims of a partial rotary are not
      tempered (the paper tempers the whole logit).

    ``factor: None`` (allowed in a model config, meaning ``max_position_embeddings / L``) cannot be resolved
    here without the model's length: ``rope_from_config`` resolves it; here it is an error.
    """
    if params["factor"] is None:
        raise ValueError(
            _(
                "rope_type 'yarn': factor is None; in a model config that means max_position_embeddings / original_max_position_embeddings - pass that number (rope_from_config resolves it for you)"
            )
        )
    s = _factor("yarn", params)
    original_len = _length("yarn", params)
    beta_fast, beta_slow = _betas("yarn", params)
    ramp = check_choice("yarn ramp", params.get("ramp", "index"), YARN_RAMPS)
    truncate = params.get("truncate", True)
    if not isinstance(truncate, bool):
        raise ValueError(
            _("rope_type 'yarn': truncate must be True or False, got {truncate!r}").format(truncate=truncate)
        )
    if ramp == "index":
        weight = yarn_index_ramp(dim, base, original_len, beta_fast, beta_slow, truncate=truncate)
    else:
        weight = ratio_ramp(dim, base, original_len, beta_fast, beta_slow)
    attention_factor = params.get("attention_factor")
    if attention_factor is not None:
        attention_factor = _positive("yarn", "attention_factor", attention_factor)
    elif params.get("mscale") and params.get("mscale_all_dim"):
        mscale = _positive("yarn", "mscale", params["mscale"])
        mscale_all_dim = _positive("yarn", "mscale_all_dim", params["mscale_all_dim"])
        attention_factor = yarn_mscale(s, mscale) / yarn_mscale(s, mscale_all_dim)
    else:
        attention_factor = yarn_mscale(s)
    return _interpolate_by_weight(dim, base, s, weight), attention_factor


@register_scaling(
    "llama3",
    title="Llama 3",
    # Llama 3.1's
    example={"factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0, ORIGINAL_LEN_KEY: 8192},
    required=("factor", "low_freq_factor", "high_freq_factor", ORIGINAL_LEN_KEY),
)
def _llama3(
    dim: int, base: float, params: Mapping[str, Any], seq_len: int | None
) -> tuple[torch.Tensor, float]:
    """Llama 3.1 scaling (Meta's reference code; the Llama 3 paper, arXiv 2407.21783, gives no formula).

    With wavelength ``lambda_i = 2 pi / w_i`` and ``L = original_max_position_embeddings``: pairs with
    ``lambda < L / high_freq_factor`` are kept, ``lambda > L / low_freq_factor`` divided by ``factor``, and in
    between blended with ``smooth = (L / lambda - low) / (high - low)``: ``(1 - smooth) w / s + smooth w``
    (continuous at both edges). Llama-3.1-8B (d = 128, b = 5e5, s = 8, 1, 4, L = 8192): 29 kept, 6 blended,
    29 divided.
    """
    s = _factor("llama3", params)
    original_len = _length("llama3", params)
    low = _positive("llama3", "low_freq_factor", params["low_freq_factor"])
    high = _positive("llama3", "high_freq_factor", params["high_freq_factor"])
    if high <= low:
        raise ValueError(
            _(
                "rope_type 'llama3': high_freq_factor must exceed low_freq_factor, got high={high}, low={low}"
            ).format(high=high, low=low)
        )
    inv_freq = default_inv_freq(dim, base)
    wavelength = 2 * math.pi / inv_freq
    low_band, high_band = original_len / low, original_len / high  # longest kept < high_band < low_band
    scaled = torch.where(wavelength > low_band, inv_freq / s, inv_freq)
    smooth = (original_len / wavelength - low) / (high - low)
    blended = (1 - smooth) * scaled / s + smooth * scaled
    in_between = (wavelength >= high_band) & (wavelength <= low_band)
    return torch.where(in_between, blended, scaled), 1.0


# ---------------------------------------------------------------------------------------------------------------
# LongRoPE: searched per-pair factors.


def longrope_attention_factor(factor: float, original_len: int) -> float:
    """LongRoPE / Phi-3's attention factor: ``sqrt(1 + ln s / ln L)`` (1 for ``s <= 1``); Phi-3.5: 1.19024."""
    return 1.0 if factor <= 1.0 else math.sqrt(1 + math.log(factor) / math.log(original_len))


@register_scaling(
    "longrope",
    title="LongRoPE",
    # Phi-3.5-mini's lengths and factor; its searched lists replaced by plain ones (1 for short texts, 1 to 32
    # from the fastest pair to the slowest for long ones)
    example={
        "short_factor": [1.0] * (EXAMPLE_DIM // 2),
        "long_factor": [1.0 + 31.0 * i / (EXAMPLE_DIM // 2 - 1) for i in range(EXAMPLE_DIM // 2)],
        ORIGINAL_LEN_KEY: 4096,
        "factor": 32.0,
    },
    required=("short_factor", "long_factor", ORIGINAL_LEN_KEY),
    optional=("factor", "attention_factor"),
    length_dependent=True,
)
def _longrope(
    dim: int, base: float, params: Mapping[str, Any], seq_len: int | None
) -> tuple[torch.Tensor, float]:
    """LongRoPE (Ding et al. 2024, arXiv 2402.13753), as Phi-3 and transformers use it.

    ``w_i / lambda_i`` with ``lambda = long_factor`` iff ``seq_len > original_max_position_embeddings``
    (strictly), else ``short_factor`` (also at initialisation, ``seq_len=None``). Both lists have ``d/2``
    entries. The attention factor is ``attention_factor`` if given, else ``longrope_attention_factor(factor, L)``
    - the same for short and long. ``factor`` is optional in the library, which then uses the model's
    ``max_position_embeddings / L``; here one of ``factor`` / ``attention_factor`` is needed
    (``rope_from_config`` fills ``factor`` in). The paper's ``n_hat`` (first tokens left unscaled) is not
    implemented by the library and not here.
    """
    original_len = _length("longrope", params)
    long = seq_len is not None and seq_len > original_len
    short_factor = _per_pair("longrope", "short_factor", params["short_factor"], dim)
    long_factor = _per_pair("longrope", "long_factor", params["long_factor"], dim)
    if params.get("attention_factor") is not None:
        attention_factor = _positive("longrope", "attention_factor", params["attention_factor"])
    elif params.get("factor") is not None:
        attention_factor = longrope_attention_factor(_factor("longrope", params), original_len)
    else:
        raise ValueError(
            _(
                "rope_type 'longrope' needs 'factor' or 'attention_factor' for its attention factor (the library uses max_position_embeddings / original_max_position_embeddings; rope_from_config fills it in)"
            )
        )
    rescale = torch.tensor(long_factor if long else short_factor, dtype=torch.float32)
    exponents = torch.arange(0, dim, 2, dtype=torch.int64).float() / dim
    return 1.0 / (rescale * base**exponents), attention_factor


def rotary_dim(head_dim: int, partial_rotary_factor: float = 1.0) -> int:
    """Number of rotated dims: ``int(head_dim * partial_rotary_factor)``, which must be even."""
    check_positive_int("head_dim", head_dim)
    if (
        isinstance(partial_rotary_factor, bool)
        or not isinstance(partial_rotary_factor, numbers.Real)
        or not 0.0 < partial_rotary_factor <= 1.0
    ):
        raise ValueError(
            _("partial_rotary_factor must be in (0, 1], got {partial_rotary_factor}").format(
                partial_rotary_factor=partial_rotary_factor
            )
        )
    dim = int(head_dim * partial_rotary_factor)
    check_even(
        f"rotary dim int(head_dim * partial_rotary_factor) = int({head_dim} * {partial_rotary_factor})", dim
    )
    return dim


def rope_frequencies(
    head_dim: int,
    *,
    base: float = 10000.0,
    scaling: Mapping[str, Any] | None = None,
    seq_len: int | None = None,
    partial_rotary_factor: float = 1.0,
    device: torch.device | str | None = None,
) -> tuple[torch.Tensor, float]:
    """RoPE inverse frequencies and attention factor -> ``(inv_freq (d/2,) float32, attention_factor)``.

    ``d = int(head_dim * partial_rotary_factor)`` is the rotary dimension. ``scaling`` is a ``rope_scaling``-
    style dict (``{"rope_type": ..., <that method's keys>}``) or None for plain RoPE; ``seq_len`` is the current
    sequence length for the methods that depend on it (None = at initialisation, as the library does).
    """
    base = check_base("base (rope_theta)", base)
    dim = rotary_dim(head_dim, partial_rotary_factor)
    method, params = split_scaling(scaling)
    if seq_len is not None:
        check_positive_int("seq_len", seq_len)
    inv_freq, attention_factor = method.fn(dim, base, params, seq_len)
    return inv_freq.to(device=device, dtype=torch.float32), float(attention_factor)
