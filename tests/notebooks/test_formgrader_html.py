"""The formgrader's view of a submission as HTML (no browser): nothing a student wrote becomes a script, an event
handler, a frame, a base URL or a link that runs; the templates' own scripts carry the response's nonce; the key
is shown beside the written answers. The browser's side is ``test_instructor_pages.py``."""

from __future__ import annotations

import json
from html.parser import HTMLParser
from pathlib import Path

import jinja2
import nbformat
import pytest
from nbgrader.server_extensions.formgrader import handlers as nbgrader_handlers
from xss_payloads import hostile_notebook, planted_ids

from autograder.pages import lab as instructor_lab
from autograder.pages import lab_server

REPO = Path(__file__).resolve().parents[2]
SOLUTION = REPO / "solutions" / "01_order" / "01_order.ipynb"
NONCE = "test-nonce-123"
REFUSED_TAGS = {"iframe", "object", "embed", "base", "meta", "form", "svg", "math", "video", "input", "link"}


class Elements(HTMLParser):
    """Every start tag of a page with its attributes."""

    def __init__(self):
        super().__init__()
        self.tags: list[tuple[str, dict[str, str]]] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, {name: value or "" for name, value in attrs}))


def _rendered(nb: nbformat.NotebookNode, monkeypatch, student: str = "mallory") -> list[tuple[str, dict]]:
    monkeypatch.setenv("JUPYTER_PATH", str(instructor_lab.JUPYTER_DATA))
    exporter = lab_server.SubmissionExporter(
        template_name="posref_formgrade",
        extra_template_basedirs=[nbgrader_handlers.template_path],
        extra_loaders=[jinja2.FileSystemLoader(nbgrader_handlers.template_path)],
    )
    resources = {
        "assignment_id": "01_order", "notebook_id": "01_order", "submission_id": "abc", "index": 0, "total": 1,
        "base_url": "", "student": student, "first_name": None, "last_name": None, "notebook_path": "x.ipynb",
    }  # fmt: skip
    token = lab_server.NONCE.set(NONCE)
    try:
        html, _ = exporter.from_notebook_node(nb, resources=resources)
    finally:
        lab_server.NONCE.reset(token)
    parser = Elements()
    parser.feed(html)
    return parser.tags, html


def test_nothing_a_student_wrote_becomes_markup_that_runs(monkeypatch):
    nb, _ = hostile_notebook(SOLUTION, "q_two_layers", "attention")
    # nbgrader metadata that would break out of the templates' attributes (nbgrader's autograde refuses such a
    # notebook; the view must not depend on it)
    nb.cells.append(nbformat.v4.new_markdown_cell("x", metadata={"nbgrader": {
        "grade_id": 'q"><script>fetch("/pwned/m")</script>', "solution": True, "grade": True, "points": 1}}))  # fmt: skip
    tags, html = _rendered(nb, monkeypatch, student='<img src=x onerror="fetch(`/pwned/id`)">')
    handlers = set(lab_server.HANDLER_ATTRIBUTE.findall(
        "".join(p.read_text() for p in Path(nbgrader_handlers.template_path).rglob("*.j2"))))  # fmt: skip
    scripts = [attrs for tag, attrs in tags if tag == "script"]
    assert scripts and all(attrs.get("nonce") == NONCE for attrs in scripts), scripts
    plain, _ = _rendered(nbformat.read(SOLUTION, as_version=4), monkeypatch)
    _assert_inert(tags, plain, handlers)
    assert "pwned/1" in html, "the payloads are not shown at all (as text)"
    assert "$i &lt; j$" in html  # a student's formula stays a formula


def _assert_inert(tags: list, plain: list, handlers: set[str]) -> None:
    """The elements a hostile notebook's page (``tags``) added to the page of a plain solution (``plain``) hold no
    refused tag; no event handler on the page is other than the template's (``handlers``), no URL runs code."""
    template = {(tag, tuple(sorted(attrs.items()))) for tag, attrs in plain}
    added = [(tag, attrs) for tag, attrs in tags if (tag, tuple(sorted(attrs.items()))) not in template]
    assert added, "the student's cells added nothing to the page"
    assert not [(tag, attrs) for tag, attrs in added if tag in REFUSED_TAGS]
    for tag, attrs in tags:
        for name, value in attrs.items():
            if name.startswith("on"):
                assert value in handlers, (tag, name, value)
            if name in ("href", "src", "action", "data", "srcdoc", "formaction"):
                assert not value.strip().lower().startswith(("javascript:", "data:text", "vbscript:")), (
                    tag,
                    value,
                )


def _feedback(nb: nbformat.NotebookNode) -> tuple[list, str]:
    """``nb`` through the feedback step's sanitiser and exporter as the course's nbgrader configuration sets
    them (in nbconvert's basic template: the markdown filter is the exporter's) -> (start tags, HTML)."""
    from traitlets.config.loader import PyFileConfigLoader

    from autograder.course import CONFIG

    config = PyFileConfigLoader(str(CONFIG)).load_config()
    [sanitise] = [
        p
        for p in config.GenerateFeedback.preprocessors
        if getattr(p, "__name__", "") == "StudentCellsSanitized"
    ]
    nb, _ = sanitise(config=config).preprocess(nb, {})
    html, _ = config.GenerateFeedback.exporter_class(template_name="basic").from_notebook_node(nb)
    parser = Elements()
    parser.feed(html)
    return parser.tags, html


def test_feedback_shows_a_students_markdown_as_written_and_runs_none_of_it(tmp_path, monkeypatch):
    """The feedback page bleached a student's markdown at its source, so their `$i < j$`, a code span and a code
    block read `&lt;` there; it is now cleaned once rendered, as the formgrader's view is, against the battery."""
    monkeypatch.setenv("POSREF_COURSE_DIR", str(tmp_path))
    nb, _ = hostile_notebook(SOLUTION, "q_two_layers", "attention")
    nb.cells.append(nbformat.v4.new_markdown_cell("mine: $i < j$ and `a < b`, a & b\n\n    x < y && z"))
    tags, html = _feedback(nb)
    plain, _ = _feedback(nbformat.read(SOLUTION, as_version=4))
    assert not [attrs for tag, attrs in plain for name in attrs if name.startswith("on")]
    _assert_inert(tags, plain, handlers=set())
    scripts = [sorted(attrs.items()) for tag, attrs in tags if tag == "script"]
    assert scripts == [sorted(attrs.items()) for tag, attrs in plain if tag == "script"]
    assert "pwned/1" in html, "the payloads are not shown at all (as text)"
    assert "mine: $i &lt; j$ and <code>a &lt; b</code>, a &amp; b" in html
    assert "<pre><code>x &lt; y &amp;&amp; z" in html


def test_outputs_keep_only_inert_mimetypes():
    nb, _ = hostile_notebook(SOLUTION, "q_two_layers", "attention")
    nb, _ = lab_server.StudentCellsSanitized(enabled=True).preprocess(nb, {})
    [cell] = [c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == "attention"]
    kept = {key for output in cell.outputs for key in output.get("data", {})}
    assert kept == {"text/plain", "text/html", "text/markdown"}, (
        kept
    )  # svg, js, latex, a PNG not base64: gone
    for output in cell.outputs:
        assert "<script" not in output.get("data", {}).get("text/html", "")
    assert cell.outputs[1].metadata == {}  # its width was "1 onerror=..."
    assert "tags" not in cell.metadata and cell.metadata["nbgrader"]["grade_id"] == "attention"


def test_the_templates_scripts_get_the_nonce_and_printed_values_never_do():
    env = jinja2.Environment(
        loader=jinja2.DictLoader({"t": "<script>a()</script><SCRIPT src=x></SCRIPT>{{ v }}"})
    )
    lab_server.nonce_scripts(env)
    token = lab_server.NONCE.set("n1")
    try:
        out = env.get_template("t").render(v="<script>b()</script>")
    finally:
        lab_server.NONCE.reset(token)
    assert out == '<script nonce="n1">a()</script><script nonce="n1" src=x></SCRIPT><script>b()</script>'


def test_the_policy_refuses_inline_scripts_and_hands_student_files_a_sandbox():
    server = "http://127.0.0.1:8888/"
    policy = lab_server.content_security_policy(
        "n", ["'sha256-x'"], server=server, sandbox=True, evaluate=False
    )
    directives = dict(d.split(" ", 1) for d in policy.split("; ") if " " in d)
    scripts = directives["script-src"].split()
    assert scripts[-1] == "'nonce-n'" and "'self'" not in scripts
    assert f"{server}static/" in scripts and f"{server}files/" not in scripts
    images = directives["img-src"].split()
    assert f"{server}files/" in images and "'self'" not in images and f"{server}formgrader/" not in images
    assert directives["script-src-attr"] == "'unsafe-hashes' 'sha256-x'"
    assert directives["object-src"] == "'none'" and directives["base-uri"] == "'self'"
    assert policy.endswith("; sandbox")
    assert "evil" not in policy and "unsafe-inline" not in policy.split("style-src")[0]
    for path in ["files/a/evil.html", "formgrader/submissions/abc/evil.js", "nbconvert/html/x.ipynb"]:
        assert lab_server.STUDENT_FILES.match(path), path
    for path in ["formgrader/submissions/abc/", "formgrader/submissions/abc/next", "lab", "static/lab/x.js"]:
        assert not lab_server.STUDENT_FILES.match(path), path


def test_the_key_of_each_written_answer_comes_from_the_source_notebook():
    answers = lab_server.model_answers("01_order", "01_order")
    assert set(answers) == {"q_two_layers", "q_find_the_bug"}
    assert all("Model answer" in text for text in answers.values())
    assert lab_server.model_answers("01_order", "no_such_notebook") == {}


@pytest.mark.parametrize(
    "log, first",
    [
        ("autograde 01_order: 0%\nno submission of 01_order for mallory (submitted: bob)\n",
         "no submission of 01_order for mallory (submitted: bob)"),
        ("Traceback (most recent call last):\n  File x\nRuntimeError: boom\n", "RuntimeError: boom"),
        ("bob: the grader failed: KilledWorker\ngraded 1 student(s); the scores: ...\n",
         "bob: the grader failed: KilledWorker"),
        ("", "autograde stopped without a message"),
    ],
)  # fmt: skip
def test_the_verdict_of_an_autograde_run_comes_first(log, first):
    assert lab_server.verdict(log).splitlines()[0] == first


def test_the_instructors_server_has_no_terminals_and_the_courses_formgrader(monkeypatch, tmp_path):
    monkeypatch.setenv("POSREF_COURSE_DIR", str(tmp_path))
    command = instructor_lab.lab_command()
    assert "--ServerApp.terminals_enabled=False" in command
    assert "--ServerApp.jpserver_extensions=autograder.pages.lab_server=True" in command
    assert "--ServerApp.jpserver_extensions=nbgrader.server_extensions.formgrader=False" in command


def test_students_without_a_roster_are_named_by_their_id():
    body = json.dumps([
        {"id": "sub1", "student": "bob", "first_name": None, "last_name": None, "score": 6.0},
        {"id": "alice", "first_name": "Alice", "last_name": "Liddell"},
        {"id": "carol", "first_name": None, "last_name": None, "nested": [{"id": "x", "first_name": None, "last_name": ""}]},
    ]).encode()  # fmt: skip
    bob, alice, carol = json.loads(lab_server.students_named(body))
    assert (bob["last_name"], bob["first_name"], bob["score"]) == ("bob", lab_server.NO_NAME, 6.0)
    assert (alice["last_name"], alice["first_name"]) == ("Liddell", "Alice")
    assert carol["last_name"] == "carol" and carol["nested"][0]["last_name"] == "x"
    assert lab_server.students_named(b"not json") == b"not json"


def test_an_assignment_released_by_the_course_reads_released():
    """nbgrader asks its exchange whether an assignment is released; a course without one read "draft" for all."""
    body = json.dumps([
        {"name": "01_order", "status": "draft", "releaseable": False, "duedate": None},
        {"name": "02_absolute", "status": "draft", "releaseable": False},
        {"name": "01_order", "status": "draft"},  # not an assignment's record: left alone
    ]).encode()  # fmt: skip
    released, draft, other = json.loads(lab_server.released_as_the_course_says(body, {"01_order"}))
    assert (released["status"], draft["status"], other["status"]) == ("released", "draft", "draft")
    assert lab_server.released_as_the_course_says(b"not json", {"01_order"}) == b"not json"


@pytest.mark.parametrize(
    ("edition", "words"),
    [
        ("en", ["01_order (Score: 3.0 / 4.0)", "Test cell", "Written response", "Student's answer"]),
        ("zh-TW", ["01_order（分數：3.0 / 4.0）", "測試儲存格", "文字作答", "學生的答案", "（回到頂端）"]),
        ("zh-CN", ["01_order（分数：3.0 / 4.0）", "测试单元格", "文字作答", "学生的答案", "（回到顶部）"]),
    ],
)
def test_the_feedback_page_speaks_the_edition_the_student_handed_in(edition, words, monkeypatch, tmp_path):
    """Its lang attribute and nbgrader's headings and labels (issue 38.10: "01_order (Score: 0.0 / 10.0)", "Test
    cell", "Written response" and lang="" on a zh-TW student's page); the student's cells as they were."""
    from nbgrader.converters import GenerateFeedback
    from traitlets.config.loader import PyFileConfigLoader

    from autograder.course import CONFIG
    from autograder.pages.feedback import EditionOfThePage

    monkeypatch.setenv("POSREF_COURSE_DIR", str(tmp_path))
    config = PyFileConfigLoader(str(CONFIG)).load_config()
    graded = {"grade_id": "test_attention", "grade": True, "locked": True, "points": 3, "score": 3}
    written = {"grade_id": "q_two_layers", "grade": True, "solution": True, "points": 1, "score": 0}
    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_code_cell("check_attention(attention)", metadata={"nbgrader": graded}),
        nbformat.v4.new_markdown_cell("My answer: Score: 5", metadata={"nbgrader": written}),
    ])  # fmt: skip
    nb.metadata["posref"] = {"edition": edition}
    resources = {"nbgrader": {"notebook": "01_order", "score": 3, "max_score": 4, "late_penalty": 0}}
    nb, resources = EditionOfThePage(enabled=True).preprocess(nb, resources)
    config.merge(GenerateFeedback(config=config).config)  # what nbgrader adds: where its bootstrap.css lies
    html, _ = config.GenerateFeedback.exporter_class(config=config).from_notebook_node(
        nb, resources=resources
    )
    assert f'<html lang="{edition}">' in html
    for word in words:
        assert word in html, word
    assert "My answer: Score: 5" in html  # what the student wrote is not translated
    if edition != "en":
        assert "Test cell" not in html and "Written response" not in html and "(Top)" not in html


@pytest.mark.parametrize("edition", ["zh-TW", "zh-CN"])
def test_a_grader_reads_the_key_in_the_students_edition_and_the_english_one_a_click_away(
    edition, monkeypatch
):
    """A zh-TW student's written answer is followed by the zh-TW model answer and rubric (the edition's source),
    the English key inside a <details> (issue 38.10: the English key followed every edition's answer)."""
    translated = REPO / "editions" / edition / "solutions" / "01_order" / "01_order.ipynb"
    english = lab_server.model_answers("01_order", "01_order")
    theirs = lab_server.model_answers("01_order", "01_order", edition)
    assert set(theirs) == set(english) and all(theirs[g] != english[g] for g in english)
    _, html = _rendered(nbformat.read(translated, as_version=4), monkeypatch)
    key = html.index("posref-model-answer")
    shown, hidden = (
        html.index("參考答案" if edition == "zh-TW" else "参考答案", key),
        html.index("<details", key),
    )
    assert shown < hidden < html.index("Model answer.", hidden)  # the edition's key first, then the English
    _, html = _rendered(nbformat.read(SOLUTION, as_version=4), monkeypatch)
    assert (
        "posref-model-answer" in html and "<details" not in html
    )  # an English answer: the English key alone


# ---------------------------------------------------------------- a written answer's ids (issue 37.2)
GRADED = ["q_find_the_bug", "q_two_layers", "test_attention", "test_equivariance_error"]


def _planting(place: str) -> nbformat.NotebookNode:
    """01's solution with the ids of every graded cell planted in its first written answer, or in an HTML output."""
    nb = nbformat.read(SOLUTION, as_version=4)
    for cell in nb.cells:
        grade_id = cell.metadata.get("nbgrader", {}).get("grade_id")
        if place == "a written answer" and grade_id == "q_two_layers":
            cell.source = planted_ids(GRADED)
        if place == "an HTML output" and grade_id == "attention":
            html = planted_ids(GRADED).replace("\n## ", "\n<h2>")  # HTML has no markdown heading
            cell.outputs = [
                nbformat.v4.new_output("display_data", data={"text/html": html, "text/plain": "x"})
            ]
    return nb


@pytest.mark.parametrize("page", ["the formgrader", "the feedback"])
@pytest.mark.parametrize("place", ["a written answer", "an HTML output"])
def test_nothing_a_student_wrote_carries_an_id_name_or_class_of_the_page(monkeypatch, tmp_path, page, place):
    monkeypatch.setenv("POSREF_COURSE_DIR", str(tmp_path))
    nb = _planting(place)
    tags, html = _rendered(nb, monkeypatch) if page == "the formgrader" else _feedback(nb)
    plain, _ = (
        _rendered(nbformat.read(SOLUTION, as_version=4), monkeypatch)
        if page == "the formgrader"
        else (_feedback(nbformat.read(SOLUTION, as_version=4)))
    )

    def bindings(page: list) -> list:
        """What the page's script binds and finds controls by: ids, names, label targets, aria references, data-,
        and the classes of its controls."""
        found = []
        for _, attrs in page:
            for name, value in attrs.items():
                if name in ("id", "name", "for", "form") or name.startswith(("aria-", "data-")):
                    found.append((name, value))
                elif name == "class":
                    found += [("class", c) for c in value.split() if c in PAGE_CLASSES]
        return sorted(found)

    assert bindings(tags) == bindings(plain), (
        "the student's content carries ids, names or classes of the page"
    )
    assert "An answer of my own" in html, "the planted elements are not on the page at all"


# the classes the manual-grading page's script finds a grade's controls and cells by (nbgrader's formgrade.js)
PAGE_CLASSES = {"nbgrader_cell", "score", "tabbable", "extra-credit", "comment", "full-credit", "no-credit",
                "mark-graded", "score-saved", "comment-saved", "panel"}  # fmt: skip


# ---------------------------------------------------------------- pasted images (issue 37.3)
# JupyterLab keeps an image pasted into a markdown cell as the cell's attachment; the page raised on one it did not
# show (an HTTP 500 for the formgrader, no feedback page at all): now each is shown or noted, never an error
PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGNgAAACAAEA//8DAAAGAAVXv6vUAAAAAElFTkSuQmCC"
SVG = "PHN2ZyBvbmxvYWQ9ImZldGNoKCcvcHduZWQvYXR0YWNoJykiPjwvc3ZnPg=="  # <svg onload="fetch('/pwned/attach')"></svg>
ATTACHMENTS = {
    "a pasted screenshot": ({"image.png": {"image/png": PNG}}, "![image.png](attachment:image.png)", "shown"),
    "a JPEG and a GIF": ({"a.jpg": {"image/jpeg": PNG}, "b.gif": {"image/gif": PNG}},
                         "![a](attachment:a.jpg) ![b](attachment:b.gif)", "shown"),
    "an image by reference": ({"image.png": {"image/png": PNG}}, "![x][i]\n\n[i]: attachment:image.png", "shown"),
    "an SVG with a script": ({"x.svg": {"image/svg+xml": SVG}}, "![x](attachment:x.svg)", "not a PNG, JPEG or GIF"),
    "one the cell does not hold": ({}, "![y](attachment:gone.png)", "gone.png, not in the notebook"),
    "too large": ({"big.png": {"image/png": "A" * (5 * 2**20)}}, "![b](attachment:big.png)", "larger than 3 MiB"),
    "not base64": ({"bad.png": {"image/png": "%%%"}}, "![b](attachment:bad.png)", "not a PNG, JPEG or GIF"),
    "nine in one cell": ({f"{i}.png": {"image/png": PNG} for i in range(9)},
                         " ".join(f"![{i}](attachment:{i}.png)" for i in range(9)), "more than 8 images"),
    "a name with markup": ({'x"><img src=x onerror=fetch(1)>.svg': {"image/svg+xml": SVG}},
                           '![x](attachment:x"><img src=x onerror=fetch(1)>.svg)', "not shown here"),
    "not a mapping": ({"image.png": "oops"}, "![i](attachment:image.png)", "not a PNG, JPEG or GIF"),
}  # fmt: skip


@pytest.mark.parametrize("page", ["the formgrader", "the feedback"])
@pytest.mark.parametrize(
    ("attachments", "markdown", "expected"), ATTACHMENTS.values(), ids=ATTACHMENTS.keys()
)
def test_a_pasted_image_is_shown_or_noted_never_an_error(
    monkeypatch, tmp_path, page, attachments, markdown, expected
):
    monkeypatch.setenv("POSREF_COURSE_DIR", str(tmp_path))
    nb = nbformat.read(SOLUTION, as_version=4)
    [answer] = [c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == "q_two_layers"]
    answer.source, answer["attachments"] = f"my answer, with a picture: {markdown}", attachments
    tags, html = _rendered(nb, monkeypatch) if page == "the formgrader" else _feedback(nb)
    assert "my answer, with a picture" in html
    images = [attrs.get("src", "") for tag, attrs in tags if tag == "img"]
    if expected == "shown":
        assert images and all(src.startswith(("data:image/png;base64,", "data:image/jpeg;", "data:image/gif;"))
                              for src in images if "attachment" not in src), images  # fmt: skip
        assert "not shown here" not in html
    else:
        assert expected in html and "(an attached image not shown here:" in html, html[
            html.find("my answer") :
        ][:600]
    assert (
        "onerror" not in str(tags)
        and "svg" not in {tag for tag, _ in tags}
        and "/pwned/attach" not in str(images)
    )


def test_the_lab_serves_the_class_pages_only_by_their_names_and_in_a_sandbox(tmp_path, monkeypatch):
    from autograder.pages import reports

    monkeypatch.setenv("POSREF_COURSE_DIR", str(tmp_path))
    assert reports.listing() == [] and "None yet" in reports.index_page([])
    folder = tmp_path / "reports"
    folder.mkdir()
    (folder / "01_order-stats.html").write_text("<p>stats</p>")
    (folder / "01_order-similar.csv").write_text("cell,student_a\n")
    (folder / "notes.txt").write_text("not a class page")
    (tmp_path / "secret-stats.html").write_text("outside the folder")
    (folder / "linked-stats.html").symlink_to(tmp_path / "secret-stats.html")
    assert reports.listing() == ["01_order-similar.csv", "01_order-stats.html"]
    assert reports.report("01_order-stats.html") == (b"<p>stats</p>", "text/html; charset=utf-8")
    assert reports.report("01_order-similar.csv")[1].startswith("text/csv")
    for name in ["notes.txt", "linked-stats.html", "../secret-stats.html", "missing-stats.html", "-stats.html",
                 ".hidden-stats.html", "01_order-stats.html/x"]:  # fmt: skip
        assert reports.report(name) is None, name
    page = reports.index_page(['<img src=x onerror="fetch(1)">-stats.html', "01_order-stats.html"])
    assert "<img" not in page and 'href="01_order-stats.html"' in page and "Content-Security-Policy" in page
    for path in ["posref/reports/", "posref/reports/01_order-stats.html", "posref/reports"]:
        assert lab_server.STUDENT_FILES.match(path), path
    assert not lab_server.STUDENT_FILES.match("posref/static/mathjax.js")
