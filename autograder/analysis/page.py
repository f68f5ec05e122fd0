"""The class pages' HTML: one self-contained file, no script, nothing loaded from anywhere (styles inline, plots as
inline SVG), every piece of text escaped where it is written.

What students handed in is data here, never markup: ids, reasons, exception types, code. ``text`` escapes it
(``markupsafe.escape``: ``<``, ``>``, ``&`` and both quotes), and the helpers below write only escaped text or HTML
made here. The page also carries its own Content-Security-Policy (``<meta>``): opened as a file, not only through the
instructor's lab (whose server adds its own, with the ``sandbox`` directive), it runs no script and loads nothing.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from markupsafe import Markup, escape

POLICY = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; form-action 'none'"
STYLE = """
body { font-family: system-ui, sans-serif; margin: 1.5em 2em; color: #222; max-width: 1400px; }
h1 { font-size: 1.5em; } h2 { font-size: 1.2em; margin-top: 1.6em; border-bottom: 1px solid #ccc; }
table { border-collapse: collapse; margin: 0.6em 0; } td, th { border: 1px solid #ddd; padding: 3px 8px; }
th { background: #f3f3f3; text-align: left; } td.n { text-align: right; font-variant-numeric: tabular-nums; }
.note { color: #555; font-size: 0.92em; } .plots { display: flex; flex-wrap: wrap; gap: 1em; }
pre { background: #f7f7f7; padding: 6px; overflow: auto; max-height: 32em; white-space: pre-wrap;
      word-break: break-all; font-size: 0.85em; margin: 0; }
mark { background: #ffe08a; } .pair { display: grid; grid-template-columns: 1fr 1fr; gap: 0.8em; }
details { margin: 0.4em 0; } summary { cursor: pointer; }
"""


def text(value: object) -> Markup:
    """``value`` as inert HTML text."""
    return escape(str(value))


def table(headers: Sequence[str], rows: Iterable[Sequence[object]], numeric: Sequence[int] = ()) -> Markup:
    """A table of escaped cells; a cell that is ``Markup`` (made here) is written as it is. ``numeric``: the
    columns aligned right."""
    head = "".join(f"<th>{text(h)}</th>" for h in headers)
    body = []
    for row in rows:
        cells = [
            f"<td{' class=n' if i in numeric else ''}>{value if isinstance(value, Markup) else text(value)}</td>"
            for i, value in enumerate(row)
        ]
        body.append("<tr>" + "".join(cells) + "</tr>")
    return Markup(f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>")


def document(title: str, body: Iterable[Markup | str]) -> str:
    """The whole page: ``body``'s pieces (``Markup`` written as made, anything else escaped) under ``title``."""
    parts = "\n".join(piece if isinstance(piece, Markup) else str(text(piece)) for piece in body)
    return (
        "<!DOCTYPE html>\n<html lang=en><head><meta charset=utf-8>"
        f'<meta http-equiv="Content-Security-Policy" content="{POLICY}">'
        f"<title>{text(title)}</title><style>{STYLE}</style></head>\n<body>\n<h1>{text(title)}</h1>\n{parts}\n"
        "</body></html>\n"
    )
