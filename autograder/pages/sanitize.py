"""What a student wrote, made inert before a page shows it: the feedback pages and the formgrader's view.

Everything in a submitted notebook is the student's: markdown, outputs of any mimetype, output and cell
metadata, attachments. ``StudentCellsSanitized``, nbconvert's ``SanitizeHTML`` (which cleans the ``text/html``
and ``text/markdown`` outputs with bleach) made to what the course's pages need:

* outputs keep only ``text/plain``, PNG and JPEG (as base64: the templates put them in ``src="data:..."``),
  sanitised HTML and markdown; every other mimetype (``image/svg+xml``, ``application/javascript``,
  ``text/latex``, widget views, ...) is dropped, and output metadata keeps only a numeric width and height;
* a cell keeps nbgrader's metadata only where it is well formed (a grade id of letters, digits, ``_`` and ``-``,
  numeric points and score, true/false flags): the templates write the grade id into HTML attributes unescaped;
* a cell's attachments (an image pasted into a written answer: JupyterLab keeps it in the cell) are shown when they
  are a PNG, JPEG or GIF in valid base64 (its line breaks taken out: the page's ``INLINE_IMAGE`` has none), at
  most ``MAX_ATTACHMENT`` characters each and ``MAX_ATTACHMENTS`` a cell;
  every other one (an SVG with a script, too large, not base64) and every ``attachment:`` the markdown names that
  the cell does not hold is left out with a note in its place (``_attachments``): nbconvert's renderer raised on a
  missing attachment, and the formgrader's page was an HTTP 500 and the student had no feedback page;
* nothing a student wrote keeps an id, a name, a class (but syntax highlighting's, ``SAFE_CLASSES``), a label's
  ``for``, a ``form``, an ``aria-*`` reference or a ``data-*`` attribute (``_safe_attribute``, for rendered markdown and
  HTML outputs alike): the formgrader's script binds each grade's controls by id and class, and a written answer's
  ``<span id="q_keys_only">`` once took the next answer's score input;
* the only URLs kept are an image inline (``INLINE_IMAGE``: a PNG, JPEG or GIF as nbconvert writes an attachment), a
  link to a place on the page (``ON_THE_PAGE``) and a link to a named web host (``ON_THE_WEB``); every other one,
  relative or absolute, in any attribute, is dropped and noted where it was (``PageUrls``): the instructor's browser
  sent ``<img src="/formgrader/...">`` or ``src="../../hub/..."`` in a written answer to the instructor's own
  server, with the instructor's cookies. The notes, like the attachments', speak the page's language (a student's
  feedback page: their edition's);
* markdown cells are left as written: ``CleanMarkdownExporter`` (the feedback pages, the formgrader's view)
  cleans them once rendered to HTML (``clean_rendered_html``). Markdown may build links and images that a pass
  over its source never sees as tags, and such a pass escapes every ``<``, which a formula or a code span then
  shows as ``&lt;`` (a student's ``$i < j$``, the instructor's ``$a < b$``).
"""

from __future__ import annotations

import binascii
import contextlib
import re

import bleach
import jinja2
from bleach.html5lib_shim import Filter
from nbconvert.exporters import HTMLExporter
from nbconvert.preprocessors.sanitize import SanitizeHTML
from pygments.token import STANDARD_TYPES
from traitlets import Set

from posref import i18n
from posref.i18n import _

GRADE_ID = re.compile(r"[A-Za-z0-9_-]{1,200}")
BASE64 = re.compile(r"[A-Za-z0-9+/=\s]*")
NBGRADER_FLAGS = ("solution", "grade", "locked", "task")

RENDERED_TAGS = {
    *bleach.ALLOWED_TAGS,
    *("p", "br", "hr", "pre", "span", "div", "del", "sup", "sub", "img"),
    *("h1", "h2", "h3", "h4", "h5", "h6", "table", "thead", "tbody", "tr", "th", "td"),
}


# the classes rendered markdown may keep: syntax highlighting's (Pygments' token classes) and the heading links'.
# Every other class, and every id, name, for, form, aria-* and data-* attribute, is dropped: the formgrader's script
# binds a grade's controls by id (``$("#" + grade_id)``) and finds them by class (.score, .comment, .nbgrader_cell),
# so a written answer's <span id="q_keys_only"> took the next answer's score input, and the score typed there was
# saved for both
SAFE_CLASSES = frozenset({*STANDARD_TYPES.values(), "highlight", "anchor-link"}) - {""}


def _safe_attribute(tag: str, name: str, value: str) -> bool:
    """Attributes kept in rendered markdown: ``alt``, ``title``, table alignment, ``SAFE_CLASSES``, and a link's
    ``href`` and an image's ``src`` for ``PageUrls`` to judge; every other attribute (``style``, ``srcset``,
    ``poster``, ``background``, ``formaction``, ``xlink:href``, an event handler, ...) is dropped."""
    if name in ("alt", "title", "align"):
        return True
    if name == "class":
        return bool(value.split()) and set(value.split()) <= SAFE_CLASSES
    return (tag, name) in (("a", "href"), ("img", "src"))


# The only URLs a student's content keeps, matched on the attribute's text as written (bleach leaves character
# references in it, and the browser decodes them after): an image inline, as nbconvert writes a PNG, JPEG or GIF
# attachment; a link to a place on the page itself (a heading's anchor); and a link to a named host of the web (a
# paper, as the course's own cells cite them), which the browser follows only when the reader clicks it, without
# the page as its referrer. Any other URL, relative or absolute, is a request the reader's browser makes with the
# reader's cookies: ``<img src="/formgrader/...">`` in a written answer was a GET to the instructor's own server,
# sent by the instructor's browser as the instructor; a link to a relative path, a bare address or a one-word host
# (``localhost``, ``hub``) leads there too, and is not kept.
INLINE_IMAGE = re.compile(r"data:image/(png|jpeg|gif);base64,[A-Za-z0-9+/]*={0,2}")
ON_THE_PAGE = re.compile(r"#[^\s\x00-\x1f\x7f]*")
ON_THE_WEB = re.compile(
    r"https?://(?P<host>[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+)(?::[0-9]{1,5})?(?:[/?#][^\s\x00-\x1f\x7f\\]*)?"
)
# a link of the course's own between its notebooks ("previous", "next"): dropped without a note (a page holds one
# notebook; the others are not beside it)
A_NOTEBOOK = re.compile(r"(\.\./)?[A-Za-z0-9_-]+(/[A-Za-z0-9_-]+)?\.ipynb")
NOT_SHOWN = "#attachment-not-shown"  # what _attachments makes of an attachment it leaves out (noted already)
SHOWN_URL = 120  # characters of a refused link's URL that its note shows


class PageUrls(Filter):
    """Each ``<img>`` whose ``src`` is not ``INLINE_IMAGE`` replaced by a note saying an image was removed, and
    each link whose ``href`` is neither ``ON_THE_PAGE`` nor ``ON_THE_WEB`` left as its text (no ``href``) with a note
    naming the URL (a link to the web is kept, ``rel="noopener noreferrer nofollow"``; one to another notebook,
    ``A_NOTEBOOK``, becomes its text without a note).
    Runs after bleach's sanitiser: the only URL attributes left are an ``<a>``'s ``href`` and an ``<img>``'s
    ``src``; the notes speak the language posref speaks (the page's, ``CleanMarkdownExporter``)."""

    def __iter__(self):
        refused_link = None
        for token in super().__iter__():
            name, attributes = token.get("name"), token.get("data")
            if name == "img" and token["type"] in ("StartTag", "EmptyTag"):
                src = attributes.get((None, "src"), "")
                if INLINE_IMAGE.fullmatch(src):
                    yield token
                elif src != NOT_SHOWN:
                    yield from _note(
                        _("(an image removed: a page shows only images pasted into the notebook)")
                    )
            elif name == "a" and token["type"] == "StartTag":
                href = attributes.pop((None, "href"), None)
                if href is not None and ON_THE_PAGE.fullmatch(href):
                    attributes[(None, "href")] = href
                elif href is not None and _on_the_web(href):
                    attributes[(None, "href")] = href
                    attributes[(None, "rel")] = "noopener noreferrer nofollow"
                elif href is not None and not A_NOTEBOOK.fullmatch(href):
                    refused_link = href if len(href) <= SHOWN_URL else href[:SHOWN_URL] + "…"
                yield token
            elif name == "a" and token["type"] == "EndTag" and refused_link is not None:
                yield token
                yield from _note(_("(link removed: {url})").format(url=refused_link))
                refused_link = None
            else:
                yield token


def _on_the_web(href: str) -> bool:
    """``href`` is ``ON_THE_WEB``: a host name of two labels or more, not an IPv4 address as the browser reads one
    (WHATWG URL: a host whose last label is a number, decimal or ``0x`` hex, is an address: ``0x7f.1`` is 127.0.0.1)
    and not one of the reader's own machine (``localhost``, ``*.localhost``, ``localhost.localdomain``)."""
    match = ON_THE_WEB.fullmatch(href)
    if match is None:
        return False
    host = match["host"].lower()
    last = host.rsplit(".", 1)[-1]
    return not (
        re.fullmatch(r"[0-9]+|0x[0-9a-f]*", last)
        or last == "localhost"
        or re.fullmatch(r"localhost[46]?\.localdomain[46]?", host)
    )


def _note(text: str) -> list[dict]:
    """The tokens of ``text`` in ``<em>``, a space before it."""
    return [
        {"type": "Characters", "data": " "},
        {"type": "StartTag", "name": "em", "namespace": None, "data": {}},
        {"type": "Characters", "data": text},
        {"type": "EndTag", "name": "em", "namespace": None},
    ]


def clean_rendered_html(html: str) -> str:
    """``html`` (markdown rendered by nbconvert) with only the tags and attributes of ``RENDERED_TAGS`` and
    ``_safe_attribute``, and only the URLs ``PageUrls`` keeps; everything else escaped (a ``<script>`` shows as
    text, it never runs)."""
    # data: is a protocol bleach itself refuses: allowed here for PageUrls to judge (an image's src)
    return bleach.Cleaner(
        tags=RENDERED_TAGS,
        attributes=_safe_attribute,
        protocols={"http", "https", "mailto", "data"},
        strip_comments=True,
        filters=[PageUrls],
    ).clean(html)


class CleanMarkdownExporter(HTMLExporter):
    """nbconvert's HTML exporter whose markdown filter cleans what it renders (``clean_rendered_html``): a
    student's ``$i < j$`` or `` `a < b` `` shows as written, a ``<script>`` as text."""

    @jinja2.pass_context
    def markdown2html(self, context, source):
        with _speaking_the_page(context.get("resources")):
            return clean_rendered_html(super().markdown2html(context, source))


def _speaking_the_page(resources) -> contextlib.AbstractContextManager:
    """posref speaking the page's language (``resources["page"]["lang"]``, which ``EditionOfThePage`` sets for a
    student's feedback page: the notes on what was left out are the student's to read), else the language it
    speaks already (the formgrader's view, the instructor's)."""
    page = resources.get("page") if isinstance(resources, dict) else None
    lang = page.get("lang") if isinstance(page, dict) else None
    return i18n.speaking(lang) if lang in i18n.LANGUAGES else contextlib.nullcontext()


def _nbgrader_metadata(meta) -> dict | None:
    """nbgrader's cell metadata when it is well formed, else None (the cell is then shown as a plain cell)."""
    if not isinstance(meta, dict):
        return None
    grade_id = meta.get("grade_id")
    if grade_id is not None and not (isinstance(grade_id, str) and GRADE_ID.fullmatch(grade_id)):
        return None
    if any(type(meta.get(key, 0)) not in (int, float) for key in ("points", "score")):
        return None  # score: what nbgrader's GetGrades puts there for feedback
    if any(not isinstance(meta.get(flag, False), bool) for flag in NBGRADER_FLAGS):
        return None
    kept = {key: meta[key] for key in ("grade_id", "points", "score", *NBGRADER_FLAGS) if key in meta}
    if isinstance(meta.get("schema_version"), int):
        kept["schema_version"] = meta["schema_version"]
    return kept


def _is_base64(data) -> bool:
    if not isinstance(data, str) or not BASE64.fullmatch(data):
        return False
    try:
        binascii.a2b_base64(data)
    except binascii.Error:
        return False
    return True


IMAGES = ("image/png", "image/jpeg")
ATTACHED = ("image/png", "image/jpeg", "image/gif")  # the attachments a page shows (an <img> of a data: URL)
MAX_ATTACHMENT = 4 * 2**20  # base64 characters of one attachment shown (3 MiB of image)
MAX_ATTACHMENTS = 8  # attachments shown per cell
ATTACHMENT_REFERENCE = re.compile(r"attachment:([^\s)\]\"'<>]+)")


def _attachments(cell) -> dict:
    """The cell's attachments a page may show (see the module's docstring), and its markdown with every other
    ``attachment:`` it names pointing nowhere and a note for each after it."""
    given = cell.get("attachments")
    given = given if isinstance(given, dict) else {}
    kept, left_out = {}, {}
    for name, bundle in list(given.items())[:1000]:
        if not isinstance(name, str):
            continue
        shown = (
            {m: v for m, v in bundle.items() if m in ATTACHED and _is_base64(v)}
            if isinstance(bundle, dict)
            else {}
        )
        mimetype = next(iter(shown), None)
        if mimetype is None:
            left_out[name] = _("not a PNG, JPEG or GIF image")
        elif len(shown[mimetype]) > MAX_ATTACHMENT:
            left_out[name] = _("larger than {most} MiB").format(most=MAX_ATTACHMENT * 3 // 4 // 2**20)
        elif len(kept) >= MAX_ATTACHMENTS:
            left_out[name] = _("more than {most} images in one cell").format(most=MAX_ATTACHMENTS)
        else:
            kept[name] = {mimetype: "".join(shown[mimetype].split())}  # as INLINE_IMAGE: no whitespace
    if cell.get("cell_type") == "markdown" and isinstance(cell.get("source"), str):
        named = dict.fromkeys(m.group(1) for m in ATTACHMENT_REFERENCE.finditer(cell.source))
        for name in named:
            if name not in kept:
                left_out.setdefault(name, _("not in the notebook"))
        cell.source = ATTACHMENT_REFERENCE.sub(
            lambda m: m.group(0) if m.group(1) in kept else "#attachment-not-shown", cell.source
        )
        notes = [
            _("(an attached image not shown here: {name}, {why})").format(name=name, why=left_out[name])
            for name in named
            if name not in kept
        ]
        if notes:
            cell.source += "\n\n" + "\n\n".join(f"*{_markdown_text(note)}*" for note in notes)
    return kept


def _markdown_text(text: str) -> str:
    """``text`` as markdown that renders as that text (a student's attachment name may hold markup)."""
    return re.sub(r"([\\`*_{}\[\]()#+!<>|~-])", r"\\\1", text)


def _image_sizes(metadata) -> dict:
    """Output metadata reduced to a numeric width and height per image mimetype."""
    if not isinstance(metadata, dict):
        return {}
    kept = {}
    for mimetype in IMAGES:
        entry = metadata.get(mimetype)
        if isinstance(entry, dict):
            sizes = {
                name: value
                for name, value in entry.items()
                if name in ("width", "height") and type(value) in (int, float)
            }
            if sizes:
                kept[mimetype] = sizes
    return kept


class StudentCellsSanitized(SanitizeHTML):
    """nbconvert's SanitizeHTML for everything a student wrote (see the module's docstring)."""

    safe_output_keys = Set({"text/plain"}, config=True, help="Output mimetypes kept as they are")
    sanitized_output_types = Set(
        {"text/html", "text/markdown"}, config=True, help="Output mimetypes bleached"
    )

    def preprocess(self, nb, resources):
        with _speaking_the_page(resources):
            return super().preprocess(nb, resources)

    def preprocess_cell(self, cell, resources, index):
        meta = _nbgrader_metadata(cell.get("metadata", {}).get("nbgrader"))
        cell.metadata = {"nbgrader": meta} if meta else {}
        kept = _attachments(cell)
        cell.pop("attachments", None)
        if kept:
            cell["attachments"] = kept
        if cell.cell_type == "markdown":  # cleaned once rendered (CleanMarkdownExporter)
            return cell, resources
        return super().preprocess_cell(cell, resources, index)

    def sanitize_html_tags(self, html_str):
        """An HTML or markdown output, cleaned as rendered markdown is (``clean_rendered_html``: no id or class of
        the page's, no script)."""
        return clean_rendered_html(html_str)

    def sanitize_code_outputs(self, outputs):
        """Each output's data: text kept, HTML and markdown bleached, PNG and JPEG kept when they are base64,
        every other mimetype dropped; output metadata reduced to image sizes."""
        for output in outputs:
            if output.get("output_type") not in ("display_data", "execute_result"):
                continue
            data = output.get("data", {})
            for key in list(data):
                value = data[key]
                if key in self.sanitized_output_types and isinstance(value, str):
                    data[key] = self.sanitize_html_tags(value)
                elif not (key in self.safe_output_keys or (key in IMAGES and _is_base64(value))):
                    del data[key]
            output["metadata"] = _image_sizes(output.get("metadata"))
        return outputs
