"""One look per RoPE scaling method in every figure of notebooks 07 and 07b: colour, line style and marker, so that
curves differ by more than a shade and a method looks the same in both notebooks (plain RoPE black circles, LongRoPE
pink stars: never the same pair)."""

from __future__ import annotations

from posref.i18n import _

__all__ = ["SCALING_STYLES", "scaling_style"]

# method -> (matplotlib colour, line style, marker)
SCALING_STYLES: dict[str, tuple[str, str, str]] = {
    "RoPE (no scaling)": ("k", "-", "o"),
    "PI": ("C0", "--", "s"),
    "NTK-aware": ("C1", "-.", "v"),
    "Dynamic NTK": ("C5", ":", "<"),
    "Dynamic NTK (factor 1)": ("C5", ":", "<"),
    "Dynamic NTK (factor 4)": ("C8", "--", ">"),
    "NTK-by-parts": ("C2", ":", "^"),
    "YaRN": ("C3", "-", "D"),
    "YaRN (betas 32/1)": ("C4", "--", "P"),
    "Llama 3": ("C9", "-.", "h"),
    "LongRoPE (searched for 4L)": ("C6", "-", "*"),
    "PI s=4 + fine-tune at 4L": ("C0", "-", "X"),
    "RoPE + fine-tune at 4L": ("C7", "--", "d"),
}


def scaling_style(name: str) -> dict[str, str]:
    """Plot keywords (``color``, ``ls``, ``marker``) of the method ``name``, a key of ``SCALING_STYLES``."""
    if name not in SCALING_STYLES:
        raise KeyError(
            _("no style for {name!r}; the methods with one: {methods}").format(
                name=name, methods=", ".join(SCALING_STYLES)
            )
        )
    color, ls, marker = SCALING_STYLES[name]
    return {"color": color, "ls": ls, "marker": marker}
