"""What a student wrote, made inert before a page shows it: the feedback pages and the formgrader's view.

Everything in a submitted notebook is the student's: markdown, outputs of any mimetype, output and cell
metadata, attachments. ``StudentCellsSanitized``, nbconvert's ``SanitizeHTML`` (which cleans the ``text/html``
and ``text/markdown`` outputs with bleach) made to what the course's pages need:

* outputs keep only ``text/plain``, PNG and JPEG (as base64: the templates put them in ``src="data:..."``),
  sanitised HTML and markdown; every other mimetype (``image/svg+xml``, ``application/javascript``,
  ``text/latex``, widget views, ...) is dropped, and output metadata keeps only a numeric width and height;
* a cell keeps nbgrader's metadata only where it is well formed (a grade id of letters, digits, ``_`` and ``-``,
  numeric points and score, true/false flags): the templates write the grade id into HTML attributes unescaped;
* cell attachments are dropped (a student's markdown may name them: an SVG with a script);
* markdown cells are left as written: ``CleanMarkdownExporter`` (the feedback pages, the formgrader's view)
  cleans them once rendered to HTML (``clean_rendered_html``). Markdown may build links and images that a pass
  over its source never sees as tags, and such a pass escapes every ``<``, which a formula or a code span then
  shows as ``&lt;`` (a student's ``$i < j$``, the instructor's ``$a < b$``).
"""

from __future__ import annotations

import binascii
import re

import bleach
import jinja2
from nbconvert.exporters import HTMLExporter
from nbconvert.preprocessors.sanitize import SanitizeHTML
from traitlets import Set

GRADE_ID = re.compile(r"[A-Za-z0-9_-]{1,200}")
BASE64 = re.compile(r"[A-Za-z0-9+/=\s]*")
NBGRADER_FLAGS = ("solution", "grade", "locked", "task")

RENDERED_TAGS = {
    *bleach.ALLOWED_TAGS,
    *("p", "br", "hr", "pre", "span", "div", "del", "sup", "sub", "img"),
    *("h1", "h2", "h3", "h4", "h5", "h6", "table", "thead", "tbody", "tr", "th", "td"),
}


def _safe_attribute(tag: str, name: str, value: str) -> bool:
    """Attributes kept in rendered markdown: links to the web, anchors and relative paths; images only inline
    (a PNG, JPEG or GIF) or relative; ``class``, ``id``, ``alt``, ``title`` and table alignment."""
    if name in ("class", "id", "alt", "title", "align"):
        return True
    if tag == "a" and name == "href":
        return value.startswith(("https://", "http://", "mailto:", "#")) or _relative(value)
    if tag == "img" and name == "src":
        return value.startswith(("data:image/png;", "data:image/jpeg;", "data:image/gif;")) or _relative(
            value
        )
    return False


def _relative(url: str) -> bool:
    """A path on the same site: no scheme (``javascript:``, ``data:``, ...) and no other host (``//host``)."""
    return ":" not in url.split("/", 1)[0] and not url.startswith(("//", "\\"))


def clean_rendered_html(html: str) -> str:
    """``html`` (markdown rendered by nbconvert) with only the tags and attributes of ``RENDERED_TAGS`` and
    ``_safe_attribute``; everything else escaped (a ``<script>`` shows as text, it never runs)."""
    return bleach.clean(html, tags=RENDERED_TAGS, attributes=_safe_attribute, strip_comments=True)


class CleanMarkdownExporter(HTMLExporter):
    """nbconvert's HTML exporter whose markdown filter cleans what it renders (``clean_rendered_html``): a
    student's ``$i < j$`` or `` `a < b` `` shows as written, a ``<script>`` as text."""

    @jinja2.pass_context
    def markdown2html(self, context, source):
        return clean_rendered_html(super().markdown2html(context, source))


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

    def preprocess_cell(self, cell, resources, index):
        meta = _nbgrader_metadata(cell.get("metadata", {}).get("nbgrader"))
        cell.metadata = {"nbgrader": meta} if meta else {}
        cell.pop("attachments", None)
        if cell.cell_type == "markdown":  # cleaned once rendered (CleanMarkdownExporter)
            return cell, resources
        return super().preprocess_cell(cell, resources, index)

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
