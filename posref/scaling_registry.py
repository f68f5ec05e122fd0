"""The registry of RoPE scaling methods: posref's own (``SCALING_METHODS``) and those a user adds.

posref's methods register themselves in ``posref.scaling`` with ``register_scaling``. A notebook (or any user)
adds its own frequency function under a new ``rope_type`` with ``add_scaling_method``; a model built with
``{"rope_type": <that name>, ...}`` then runs it (``rope_frequencies``, ``RotaryEmbedding``, the lab's
``with_positions``), while posref's entries stay as they are: an added method lives in its own table, may not
take the name of one of posref's, and what it returns is checked at every call.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

import torch

from posref.i18n import _

FrequencyFn = Callable[[int, float, Mapping[str, Any], "int | None"], "tuple[torch.Tensor, float]"]

# the key that carries the training length L, in the transformers library's name
ORIGINAL_LEN_KEY = "original_max_position_embeddings"
# the rotary dim every registered ``example`` is written for (per-pair keys have EXAMPLE_DIM / 2 entries)
EXAMPLE_DIM = 128


@dataclass(frozen=True)
class ScalingMethod:
    """One entry of the registry: everything the rest of posref knows about a method.

    ``fn`` computes the frequencies; ``required`` and ``optional`` are the keys it accepts; ``length_dependent``
    says whether it reads ``seq_len``; ``title`` is its name in the literature (for menus and reports);
    ``example`` holds typical keys, a valid ``params`` for a rotary dim of ``EXAMPLE_DIM`` (a real model's
    where one uses the method). ``needs_original_len``: whether it reads the training length ``L``.
    """

    name: str
    fn: FrequencyFn
    required: frozenset[str]
    optional: frozenset[str]
    length_dependent: bool
    title: str
    # read-only; not part of equality or the hash (it holds lists)
    example: Mapping[str, Any] = field(compare=False)

    def __deepcopy__(self, memo: dict) -> ScalingMethod:
        """The entry itself: registry entries are frozen and shared, and a deep copy of a model that holds one
        (``copy.deepcopy(model)``, as DroPE's drop in notebook 08 does) failed on its read-only example."""
        return self

    @property
    def accepted(self) -> frozenset[str]:
        return self.required | self.optional

    @property
    def needs_original_len(self) -> bool:
        return ORIGINAL_LEN_KEY in self.required

    def validate(self, params: Mapping[str, Any]) -> dict[str, Any]:
        keys = set(params)
        unknown = keys - self.accepted
        missing = self.required - keys
        accepted = ", ".join(sorted(self.accepted)) or _("(no keys)")
        if unknown:
            raise ValueError(
                _("rope_type {name!r} does not accept key(s) {unknown}; it accepts: {accepted}").format(
                    name=self.name, unknown=", ".join(sorted(unknown)), accepted=accepted
                )
            )
        if missing:
            raise ValueError(
                _("rope_type {name!r} requires key(s) {missing}; it accepts: {accepted}").format(
                    name=self.name, missing=", ".join(sorted(missing)), accepted=accepted
                )
            )
        return dict(params)


SCALING_METHODS: dict[str, ScalingMethod] = {}


def register_scaling(
    name: str,
    *,
    title: str,
    example: Mapping[str, Any],
    required: tuple[str, ...] = (),
    optional: tuple[str, ...] = (),
    length_dependent: bool = False,
) -> Callable[[FrequencyFn], FrequencyFn]:
    """Decorator that adds a frequency function to ``SCALING_METHODS`` under ``name`` (see ``ScalingMethod``).

    The example's keys are checked here, so a registration whose example the method would reject fails at once.
    """

    def decorate(fn: FrequencyFn) -> FrequencyFn:
        if name in SCALING_METHODS:
            raise ValueError(_("scaling method {name!r} is registered twice").format(name=name))
        method = ScalingMethod(
            name,
            fn,
            frozenset(required),
            frozenset(optional),
            length_dependent,
            title,
            MappingProxyType(dict(example)),
        )
        method.validate(example)
        SCALING_METHODS[name] = method
        return fn

    return decorate


# methods added by users (a notebook's own functions), kept apart from posref's own
_ADDED: dict[str, ScalingMethod] = {}
ADDED_METHODS: Mapping[str, ScalingMethod] = MappingProxyType(_ADDED)


def _key_names(name: str, what: str, keys: Any) -> tuple[str, ...]:
    if isinstance(keys, (str, bytes)) or not all(isinstance(k, str) and k for k in keys):
        raise ValueError(
            _(
                "scaling method {name!r}: {what} must be a tuple of key names (strings), e.g. ('factor',); got {keys!r}"
            ).format(name=name, what=what, keys=keys)
        )
    return tuple(keys)


def _checked(name: str, fn: FrequencyFn) -> FrequencyFn:
    """``fn`` with its result checked: ``(inv_freq, attention_factor)`` with ``dim/2`` positive finite floats."""
    label = f"scaling method {name!r} ({getattr(fn, '__name__', 'your function')})"

    def frequencies(
        dim: int, base: float, params: Mapping[str, Any], seq_len: int | None
    ) -> tuple[torch.Tensor, float]:
        result = fn(dim, base, dict(params), seq_len)  # a copy: the function may not change the model's keys
        if not isinstance(result, tuple) or len(result) != 2:
            raise TypeError(
                _("{label} must return (inv_freq, attention_factor), got {kind}").format(
                    label=label, kind=type(result).__name__
                )
            )
        inv_freq, factor = result
        if not isinstance(inv_freq, torch.Tensor) or not inv_freq.is_floating_point():
            raise TypeError(
                _("{label}: inv_freq must be a float tensor, got {inv_freq!r:.80}").format(
                    label=label, inv_freq=inv_freq
                )
            )
        if inv_freq.shape != (dim // 2,):
            raise ValueError(
                _(
                    "{label}: inv_freq must have one entry per rotated pair, shape ({pairs},) for dim {dim}; got {inv_freq_shape}"
                ).format(label=label, pairs=dim // 2, dim=dim, inv_freq_shape=tuple(inv_freq.shape))
            )
        if not bool(torch.isfinite(inv_freq).all()) or bool((inv_freq <= 0).any()):
            raise ValueError(
                _("{label}: inv_freq must be positive and finite, got {inv_freq}").format(
                    label=label, inv_freq=inv_freq.tolist()
                )
            )
        if isinstance(factor, torch.Tensor) and factor.numel() == 1:
            factor = factor.item()
        if isinstance(factor, bool) or not isinstance(factor, (int, float)) or not 0 < factor < float("inf"):
            raise TypeError(
                _(
                    "{label}: attention_factor must be a positive number (1.0 for none), got {factor!r}"
                ).format(label=label, factor=factor)
            )
        return inv_freq.detach().to(torch.float32), float(factor)

    return frequencies


def add_scaling_method(
    name: str,
    fn: FrequencyFn,
    *,
    title: str,
    example: Mapping[str, Any],
    required: tuple[str, ...] = (),
    optional: tuple[str, ...] = (),
    length_dependent: bool = False,
) -> ScalingMethod:
    """Add your own frequency function as ``rope_type=name`` -> its ``ScalingMethod``; posref's stay untouched.

    ``fn(dim, base, params, seq_len)`` returns ``(inv_freq (dim/2,), attention_factor)`` (the registry's one
    signature); ``params`` holds the scaling dict's keys without ``rope_type``, checked against ``required`` and
    ``optional`` before ``fn`` sees them; ``seq_len`` is the current length, given only to a
    ``length_dependent`` method (re-evaluated at every length: no hysteresis, unlike posref's ``dynamic``).
    ``example`` is one valid ``params``: ``fn`` is called on it once here, so a function that fails (an unfinished
    exercise) fails at registration, with its own error. Adding a name again replaces your earlier function (a
    notebook cell run twice); a name of posref's own methods is an error.
    """
    if not isinstance(name, str) or not name or name != name.strip() or " " in name:
        raise ValueError(
            _("the name of a scaling method is a non-empty string without spaces, got {name!r}").format(
                name=name
            )
        )
    if name in SCALING_METHODS:
        raise ValueError(
            _(
                "{name!r} is one of posref's own scaling methods ({methods}); add yours under a name of its own, e.g. 'my_{name}'"
            ).format(name=name, methods=", ".join(sorted(SCALING_METHODS)))
        )
    if not callable(fn):
        raise TypeError(
            _("scaling method {name!r}: fn must be a function, got {kind}").format(
                name=name, kind=type(fn).__name__
            )
        )
    try:
        inspect.signature(fn).bind(EXAMPLE_DIM, 10000.0, {}, None)
    except TypeError:
        raise TypeError(
            _(
                "scaling method {name!r}: fn must take (head_dim, base, params, seq_len), got {fn}{signature}"
            ).format(name=name, fn=getattr(fn, "__name__", "fn"), signature=inspect.signature(fn))
        ) from None
    except ValueError:  # no signature to read (a builtin): the call below says whether it works
        pass
    if not isinstance(title, str) or not title.strip():
        raise ValueError(
            _("scaling method {name!r}: title must be a non-empty string, got {title!r}").format(
                name=name, title=title
            )
        )
    if not isinstance(example, Mapping) or "rope_type" in example:
        raise ValueError(
            _(
                "scaling method {name!r}: example must be a dict of the method's keys without 'rope_type', got {example!r}"
            ).format(name=name, example=example)
        )
    required, optional = _key_names(name, "required", required), _key_names(name, "optional", optional)
    if set(required) & set(optional) or "rope_type" in required + optional:
        raise ValueError(
            _(
                "scaling method {name!r}: a key is either required or optional, and 'rope_type' is neither; got required={required}, optional={optional}"
            ).format(name=name, required=required, optional=optional)
        )
    if not isinstance(length_dependent, bool):
        raise TypeError(
            _("scaling method {name!r}: length_dependent must be True or False").format(name=name)
        )
    if length_dependent and ORIGINAL_LEN_KEY not in required:
        raise ValueError(
            _(
                "scaling method {name!r}: a length-dependent method compares the length with the training length: add {key!r} to required"
            ).format(name=name, key=ORIGINAL_LEN_KEY)
        )
    method = ScalingMethod(
        name,
        _checked(name, fn),
        frozenset(required),
        frozenset(optional),
        length_dependent,
        title,
        MappingProxyType(dict(example)),
    )
    params = method.validate(example)
    method.fn(EXAMPLE_DIM, 10000.0, params, None)
    _ADDED[name] = method
    return method


def remove_scaling_method(name: str) -> None:
    """Remove a method added with ``add_scaling_method`` (posref's own cannot be removed)."""
    if name in SCALING_METHODS:
        raise ValueError(
            _("{name!r} is one of posref's own scaling methods: it cannot be removed").format(name=name)
        )
    if name not in _ADDED:
        raise ValueError(
            _("no added scaling method {name!r}; added: {added}").format(
                name=name, added=", ".join(sorted(_ADDED)) or _("(none)")
            )
        )
    del _ADDED[name]


def _known() -> str:
    known = ", ".join(sorted(SCALING_METHODS))
    if _ADDED:
        return _("one of {known}; added: {added}").format(known=known, added=", ".join(sorted(_ADDED)))
    return _("one of {known}").format(known=known)


def split_scaling(scaling: Mapping[str, Any] | None) -> tuple[ScalingMethod, dict[str, Any]]:
    """Look a ``rope_scaling`` dict up in the registry -> (method, validated params without ``rope_type``)."""
    if scaling is None:
        return SCALING_METHODS["default"], {}
    if not isinstance(scaling, Mapping):
        raise TypeError(
            _("scaling must be a dict with a 'rope_type' key or None, got {kind}").format(
                kind=type(scaling).__name__
            )
        )
    if "rope_type" not in scaling:
        raise ValueError(
            _("scaling dict needs a 'rope_type' key, {known}; got keys {keys}").format(
                known=_known(), keys=sorted(scaling)
            )
        )
    name = scaling["rope_type"]
    method = SCALING_METHODS.get(name) or _ADDED.get(name)
    if method is None:
        raise ValueError(_("unknown rope_type {name!r}; expected {known}").format(name=name, known=_known()))
    params = {k: v for k, v in scaling.items() if k != "rope_type"}
    return method, method.validate(params)
