"""No URL a student wrote makes the reader's browser send a request: a written answer's ``<img src="/formgrader/...">``
was a GET to the instructor's own server with the instructor's cookies. What a page keeps of a student's URLs is a
property, checked on every URL-bearing attribute of the page (as the browser reads it: character references
decoded): an image inline (a PNG, JPEG or GIF in base64), a link to a place on the page, or a link to a named host
of the web that the browser follows only on a click and without a referrer; a removed image or link is noted where
it was, in the page's language.
"""

from __future__ import annotations

import re
import string
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import urlsplit

import nbformat
import pytest

from autograder.pages.sanitize import CleanMarkdownExporter, StudentCellsSanitized, clean_rendered_html

PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGNgAAACAAEA//8DAAAGAAVXv6vUAAAAAElFTkSuQmCC"

# URLs that name the instructor's server or another host, each written a way a browser still follows
HOSTILE_URLS = {
    "the formgrader": "/formgrader/api/submission/abc",
    "the server's API": "/api/contents/secret.ipynb",
    "the hub": "/hub/api/users",
    "up two folders": "../../hub/logout",
    "relative": "x",
    "dot relative": "./api/sessions",
    "a query on the page": "?action=delete",
    "the page itself": "#attachment",  # an image's src of a fragment is a GET of the page
    "another host": "//evil.invalid/x.png",
    "slash backslash": "/\\evil.invalid/x.png",
    "backslashes": "\\\\evil.invalid\\x.png",
    "https": "https://evil.invalid/x.png",
    "http to localhost": "http://localhost:8888/formgrader",
    "mixed-case scheme": "HtTpS://evil.invalid/x.png",
    "leading space": "  /hub/api/users",
    "a tab inside": "/h\tub/api",
    "a newline inside": "/hub\n/api",
    "control characters": "\x01\x02/hub/api",
    "decimal references": "&#47;hub&#47;api",
    "hex references": "&#x2f;&#x2F;evil.invalid/x",
    "named references": "&sol;hub&sol;api",
    "no semicolon": "&#47hub&#47api",
    "percent-encoded slash": "%2Fhub%2Fapi",
    "percent-encoded dots": "/%2e%2e/%2E%2E/hub/api",
    "dot segments": "/formgrader/../hub/api/./users",
    "fullwidth solidus": "\uff0fhub\uff0fapi",
    "division slash": "\u2215\u2215evil.invalid",
    "javascript": "javascript:fetch('/pwned/1')",
    "javascript with a tab": "jav\tascript:fetch('/pwned/1')",
    "javascript by reference": "jav&#x09;ascript:fetch('/pwned/1')",
    "data html": "data:text/html,<script>fetch('/pwned/1')</script>",
    "data svg": "data:image/svg+xml;base64,PHN2ZyBvbmxvYWQ9ImZldGNoKDEpIi8+",
    "data png not base64": "data:image/png,%89PNG",
    "data png then a path": f"data:image/png;base64,{PNG} /hub/api",
    "data png by reference": f"data&#58;image/png;base64,{PNG}",
    "data upper case": f"DATA:IMAGE/PNG;BASE64,{PNG}",
    "a quote breaking out": f'data:image/png;base64,{PNG}" onerror="fetch(1)',
    "blob": "blob:http://localhost:8888/uuid",
    "file": "file:///etc/passwd",
    "mailto": "mailto:someone@example.com",
    "https to a bare address": "https://10.0.0.5/formgrader/api",
    "http to 127.0.0.1": "http://127.0.0.1:8888/hub/api/users",
    "a one-word host": "https://hub/api/users",
    "a localhost name": "http://grader.localhost:8888/formgrader",
    "one slash after the scheme": "https:/hub/api/users",
    "a user before the host": "https://evil.invalid@localhost:8888/hub",
    "a backslash before the host": "https://evil.invalid\\@localhost/hub",
    "https by reference": "&#104;ttps://localhost/hub",
    "an address in hex": "http://0x7f.1:8888/formgrader/api",
    "an address in hex, four parts": "http://0X7F.0.0.1/hub/api/users",
    "an address ending in 0x": "https://hub.0x/api",
    "localhost.localdomain": "http://localhost.localdomain:8888/hub/api",
}

# where a URL may sit in what a student writes: (markdown or HTML, the count of images and links it should note)
PLACES = [
    ('<img src="{u}">', "image"),
    ("<img src='{u}' alt=\"mine\">", "image"),
    ("<IMG SRC={u}>", "image"),
    ("![my figure]({u})", "image"),
    ("![my figure][ref]\n\n[ref]: {u}", "image"),
    ('<a href="{u}">my link</a>', "link"),
    ("[my link]({u})", "link"),
    ("<{u}>", None),  # an autolink, where markdown makes one
    ('<img srcset="{u} 2x, {u} 1x" alt="x">', "image"),
    ('<img src="data:image/png;base64,' + PNG + '" srcset="{u} 2x">', None),
    ('<video poster="{u}" src="{u}"></video>', None),
    ('<svg><image xlink:href="{u}" href="{u}"/></svg>', None),
    ("<div style=\"background:url('{u}')\">styled</div>", None),
    ("<span style='background-image: u\\rl({u})'>styled</span>", None),
    ('<table background="{u}"><tr><td>x</td></tr></table>', None),
    ('<button formaction="{u}">go</button>', None),
    ('<form action="{u}"><input type="image" src="{u}"></form>', None),
    ('<object data="{u}"></object><embed src="{u}"><iframe src="{u}"></iframe>', None),
    ('<blockquote cite="{u}">quoted</blockquote><q cite="{u}">q</q>', None),
    ('<link rel="prefetch" href="{u}"><a ping="{u}" href="#x">ping</a>', None),
    ('<body background="{u}"><input type="image" src="{u}">', None),
    ('<p><img src="{u}"></p><p><img src="{u}"></p>', "image"),
]

INLINE_IMAGE = re.compile(r"data:image/(png|jpeg|gif);base64,[A-Za-z0-9+/]*={0,2}")
# the attributes a page keeps of a student's: none of them a URL (href and src are checked on their own)
INERT = {"alt", "title", "align", "class", "id"}
BROWSER_STRIPS = "".join(map(chr, range(0x21))) + "\t\n\r"  # C0 controls and spaces, around a URL


class Attributes(HTMLParser):
    """Every start tag of a page with its attributes, as a browser reads them (references decoded)."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str]]] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, {name: value or "" for name, value in attrs}))


def _a_click_away(tag: str, attrs: dict[str, str], url: str) -> bool:
    """A link the browser follows only when clicked, without the page as referrer, to a host of the web named with
    two labels or more (not an address, not ``localhost``): nothing of the reader's own servers."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    return (
        tag == "a"
        and {"noopener", "noreferrer"} <= set(attrs.get("rel", "").split())
        and url.startswith(("http://", "https://"))
        and "\\" not in url
        and "@" not in parts.netloc
        and "." in host
        and not _an_address(host)
        and host != "localhost"
        and not host.endswith(".localhost")
        and not host.startswith("localhost.")
    )


def _an_address(host: str) -> bool:
    """The browser reads ``host`` as an IPv4 address (WHATWG URL's "ends in a number"): its last label is digits, or
    0x and hex digits (``0x7f.1`` is 127.0.0.1); a host that ends so but is no address is no URL at all."""
    last = host.split(".")[-1]
    if last[:2] == "0x":
        return all(c in string.hexdigits for c in last[2:])
    return last != "" and all(c in string.digits for c in last)


def _requests(html: str) -> list[tuple[str, str, str]]:
    """Each (tag, attribute, value) of ``html`` that could make the browser load or go somewhere but the page
    itself: an ``href`` other than a fragment or a link a click away (``_a_click_away``), a ``src`` other than an
    inline PNG, JPEG or GIF, any attribute other than ``INERT`` ones."""
    parser = Attributes()
    parser.feed(html)
    found = []
    for tag, attrs in parser.tags:
        for name, value in attrs.items():
            url = re.sub(r"[\t\n\r]", "", value.strip(BROWSER_STRIPS))
            if name == "href" and (url.startswith("#") or _a_click_away(tag, attrs, url)):
                continue
            if name == "rel" and tag == "a":
                continue
            if name == "src" and INLINE_IMAGE.fullmatch(url):
                continue
            if name in INERT and name != "href" and "url(" not in value.lower():
                continue
            found.append((tag, name, value))
    return found


def _page(markdown: str, lang: str = "en") -> str:
    """``markdown`` as a written answer and as an HTML output, through the feedback page's sanitiser and exporter
    (nbconvert's basic template, which has no URL of its own)."""
    output = nbformat.v4.new_output("display_data", data={"text/html": markdown, "text/plain": "x"})
    nb = nbformat.v4.new_notebook(
        cells=[
            nbformat.v4.new_markdown_cell(f"My answer.\n\n{markdown}\n\nThe end."),
            nbformat.v4.new_code_cell("x", outputs=[output]),
        ]
    )
    resources = {"page": {"lang": lang}}
    nb, resources = StudentCellsSanitized(enabled=True).preprocess(nb, resources)
    html, _ = CleanMarkdownExporter(template_name="basic").from_notebook_node(nb, resources=resources)
    return html


def _written(template: str, url: str) -> str:
    return template.replace("{u}", url)


@pytest.mark.parametrize("place", [p for p, _ in PLACES])
@pytest.mark.parametrize("url", HOSTILE_URLS.values(), ids=HOSTILE_URLS.keys())
def test_no_url_of_a_students_asks_the_browser_for_anything(url, place):
    html = clean_rendered_html(_written(place, url))
    assert _requests(html) == [], html


@pytest.mark.parametrize("url", HOSTILE_URLS.values(), ids=HOSTILE_URLS.keys())
def test_a_removed_image_or_link_is_noted_where_it_was(url):
    """Every place at once, in a written answer and in an HTML output: the page holds no request, each ``<img>``
    (twice: the answer and the output) an inline image or a note, and each link's text."""
    html = _page("\n\n".join(_written(place, url) for place, _ in PLACES))
    assert _requests(html) == []
    assert "My answer." in html and "The end." in html
    images = sum(place.count("<img src") + place.count("<IMG") for place, kind in PLACES if kind == "image")
    parser = Attributes()
    parser.feed(html)
    # an image kept: a quote or a space that ended the URL early left an inline image
    kept = [attrs.get("src") for tag, attrs in parser.tags if tag == "img"]
    noted = html.count("(an image removed: a page shows only images pasted into the notebook)")
    assert all(INLINE_IMAGE.fullmatch(src or "") for src in kept) and noted + len(kept) >= 2 * images
    assert html.count("my link") >= 2


@pytest.mark.parametrize(
    "url", ["/formgrader/api/submission/abc", "../../hub/logout", "http://127.0.0.1:8888/formgrader"]
)
@pytest.mark.parametrize("place", ['<a href="{u}">my link</a>', "[my link]({u})", "![my figure]({u})"])
def test_a_link_or_image_to_anywhere_is_noted_with_its_url(url, place):
    html = _page(_written(place, url))
    note = "(an image removed:" if place.startswith("!") else f"(link removed: {url})"
    noted = 2 if place.startswith("<") else 1  # markdown is markup in the written answer only
    assert html.count(note) == noted and _requests(html) == []


def test_what_a_student_needs_is_kept():
    """An inline image, a pasted attachment, a heading's anchor and a link to it: shown as written, no note."""
    markdown = (
        f"# My heading\n\n![inline](data:image/png;base64,{PNG}) ![pasted](attachment:p.png)\n\n"
        f'[back up](#My-heading) <img src="data:image/gif;base64,{PNG}" alt="gif">'
    )
    nb = nbformat.v4.new_notebook(
        cells=[nbformat.v4.new_markdown_cell(markdown, attachments={"p.png": {"image/png": PNG}})]
    )
    nb, resources = StudentCellsSanitized(enabled=True).preprocess(nb, {})
    html, _ = CleanMarkdownExporter(template_name="basic").from_notebook_node(nb, resources=resources)
    parser = Attributes()
    parser.feed(html)
    sources = [attrs["src"] for tag, attrs in parser.tags if tag == "img"]
    assert sources == [f"data:image/png;base64,{PNG}"] * 2 + [f"data:image/gif;base64,{PNG}"]
    assert [attrs["href"] for tag, attrs in parser.tags if tag == "a"] == ["#My-heading", "#My-heading"]
    assert "removed" not in html and _requests(html) == []


def test_a_pasted_image_whose_base64_has_line_breaks_is_shown():
    """Base64 broken into lines (as ``base64.encodebytes`` and older tools write it, a newline at the end or every 76
    characters) is valid base64, and the attachment is the student's own pasted image: shown, without the line
    breaks a page's inline image may not hold, and no note that it was removed."""
    wrapped = "\n".join(PNG[i : i + 40] for i in range(0, len(PNG), 40)) + "\n"
    nb = nbformat.v4.new_notebook(
        cells=[
            nbformat.v4.new_markdown_cell(
                "![pasted](attachment:p.png)", attachments={"p.png": {"image/png": wrapped}}
            )
        ]
    )
    nb, resources = StudentCellsSanitized(enabled=True).preprocess(nb, {})
    html, _ = CleanMarkdownExporter(template_name="basic").from_notebook_node(nb, resources=resources)
    parser = Attributes()
    parser.feed(html)
    assert [attrs["src"] for tag, attrs in parser.tags if tag == "img"] == [f"data:image/png;base64,{PNG}"]
    assert "removed" not in html and "not shown" not in html


@pytest.mark.parametrize(
    ("lang", "image", "link"),
    [
        ("en", "(an image removed: a page shows only images", "(link removed: /hub/x)"),
        ("zh-TW", "（已移除一張圖片：", "（已移除連結：/hub/x）"),
        ("zh-CN", "（已移除一张图片：", "（已移除链接：/hub/x）"),
    ],
)
def test_the_notes_speak_the_language_of_the_page(lang, image, link):
    """A student's feedback page speaks their edition's language (``resources["page"]["lang"]``), its notes too."""
    html = _page("![x](/hub/api) [y](/hub/x)", lang)
    assert image in html and link in html


def test_the_feedback_page_notes_in_the_edition_the_student_handed_in(tmp_path, monkeypatch):
    """The course's nbgrader configuration: the page's language is known (``EditionOfThePage``) before the
    sanitiser writes its notes, an attachment's and a removed image's alike."""
    from traitlets.config.loader import PyFileConfigLoader

    from autograder.course import CONFIG

    monkeypatch.setenv("POSREF_COURSE_DIR", str(tmp_path))
    config = PyFileConfigLoader(str(CONFIG)).load_config()
    nb = nbformat.v4.new_notebook(
        cells=[nbformat.v4.new_markdown_cell("![a](attachment:gone.png) ![b](/hub/x)")]
    )
    nb.metadata["posref"] = {"edition": "zh-TW"}
    resources = {}
    for step in config.GenerateFeedback.preprocessors:  # in the configured order
        if getattr(step, "__name__", "") in ("EditionOfThePage", "StudentCellsSanitized"):
            nb, resources = step(config=config, enabled=True).preprocess(nb, resources)
    html, _ = config.GenerateFeedback.exporter_class(template_name="basic").from_notebook_node(
        nb, resources=resources
    )
    assert "（這裡不顯示一張附加的圖片：gone.png，不在筆記本裡）" in html
    assert "（已移除一張圖片：" in html and _requests(html) == []


@pytest.mark.parametrize(
    "url", ["https://arxiv.org/abs/2104.09864", "http://example.org:8080/a/b?c=d#e", "https://x.y/"]
)
def test_a_link_to_the_web_stays_a_link_a_click_away(url):
    """A paper cited in an answer (or in the course's own cells, which the same page shows): kept as a link, followed
    only on a click, without the page as referrer; no note."""
    html = _page(f"[the paper]({url}) and <a href='{url}'>again</a>")
    parser = Attributes()
    parser.feed(html)
    links = [attrs for tag, attrs in parser.tags if tag == "a" and attrs.get("href") == url]
    assert len(links) == 3 and all(attrs["rel"] == "noopener noreferrer nofollow" for attrs in links)
    assert "removed" not in html and _requests(html) == []


def test_the_courses_own_cells_lose_no_link_or_image():
    """Every markdown cell of every notebook of the course, as a feedback page shows it: nothing noted removed (the
    course cites its papers by links to the web, links its notebooks to each other, which a page showing one of
    them drops quietly, and shows no image but inline ones)."""
    repo = Path(__file__).resolve().parents[2]
    notebooks = sorted((repo / "solutions").glob("*/*.ipynb"))
    assert notebooks
    for path in notebooks:
        nb = nbformat.read(path, as_version=4)
        nb.cells = [cell for cell in nb.cells if cell.cell_type == "markdown"]
        html, _ = CleanMarkdownExporter(template_name="basic").from_notebook_node(nb)
        assert "(link removed:" not in html and "(an image removed:" not in html, path.name
        assert "arxiv.org" not in html or 'rel="noopener noreferrer nofollow"' in html, path.name


@pytest.mark.parametrize("url", ["../02_absolute/02_absolute.ipynb", "../00_start.ipynb", "08_nope.ipynb"])
def test_a_link_to_another_notebook_becomes_its_text_without_a_note(url):
    html = _page(f"next: [02 absolute]({url})")
    assert "02 absolute" in html and "removed" not in html and _requests(html) == []
