"""One look per RoPE scaling method in every figure of notebooks 07 and 07b: colour, line style and marker, so that
curves differ by more than a shade and a method looks the same in both notebooks (plain RoPE black circles, LongRoPE
pink stars: never the same pair)."""

from __future__ import annotations

from posref.i18n import N_, _

__all__ = ["SCALING_STYLES", "scaling_label", "scaling_style"]

# method -> (matplotlib colour, line style, marker); a method's name is code (the notebooks' keys), said in the
# student's language by ``scaling_label`` where a figure or a table shows it
SCALING_STYLES: dict[str, tuple[str, str, str]] = {
    N_("RoPE (no scaling)"): ("k", "-", "o"),
    N_("PI"): ("C0", "--", "s"),
    N_("NTK-aware"): ("C1", "-.", "v"),
    N_("Dynamic NTK"): ("C5", ":", "<"),
    N_("Dynamic NTK (factor 1)"): ("C5", ":", "<"),
    N_("Dynamic NTK (factor 4)"): ("C8", "--", ">"),
    N_("NTK-by-parts"): ("C2", ":", "^"),
    N_("YaRN"): ("C3", "-", "D"),
    N_("YaRN (betas 32/1)"): ("C4", "--", "P"),
    N_("YaRN (no temperature)"): ("C3", ":", "x"),
    N_("Llama 3"): ("C9", "-.", "h"),
    N_("LongRoPE (searched for 4L)"): ("C6", "-", "*"),
    N_("PI s=4 + fine-tune at 4L"): ("C0", "-", "X"),
    N_("RoPE + fine-tune at 4L"): ("C7", "--", "d"),
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


def scaling_label(name: str) -> str:
    """The method ``name`` (a key of ``SCALING_STYLES``) as a legend or a table writes it, in the language posref
    speaks: the methods' names stay, what is said about them is translated ("RoPE (no scaling)" -> "RoPE（不縮放）").
    The keys a notebook looks its results up by stay the English names."""
    scaling_style(name)  # the same KeyError for a name without a style
    return _(name)
