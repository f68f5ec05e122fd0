"""The instructor's Jupyter server: nbgrader's formgrader, with nothing a student wrote able to run in it.

``python -m autograder lab`` (``lab.py``) turns nbgrader's own formgrader extension off and loads this one,
which loads the formgrader itself and then:

1. **Sanitises what the formgrader renders.** nbgrader renders a submission with nbconvert, unsanitised, in
   the server's own origin: a ``<script>`` in a written answer ran as the instructor. ``SubmissionExporter``
   runs ``sanitize.StudentCellsSanitized`` over the notebook, cleans markdown once rendered, and escapes
   the student's id and names. nbgrader's other pages get Jinja's autoescaping (they printed a URL's
   assignment name into the page and into an inline script as it came).
2. **Sets a Content-Security-Policy on every response** (``PolicyTransform``). Scripts run only from this
   server's own static files and from the ``<script>`` elements written in the templates of the server,
   JupyterLab and nbgrader: ``NoncedScripts`` gives those a nonce drawn for each response, which nothing a
   student wrote can carry (it is not in the templates' source, and it changes with every page). Inline event
   handlers are refused except the few nbgrader's templates write themselves (by hash). A student's file is
   never a script: JavaScript is served as JavaScript only from the static folders (``STATIC``); from
   anywhere else (``/files/``, the formgrader's files of a submission, ``/nbconvert/``) it is text, and those
   routes get the CSP's ``sandbox`` (no scripts, an origin of their own). Images, fonts, frames and requests
   go to this server only.
3. **Runs the course's score of record from the Autograde button** (``CourseAutograde``): the formgrader's
   per-row button ran nbgrader's own autograde, which the course configuration refuses, after it had emptied
   ``autograded/<student>/<assignment>/``. It now runs ``python -m autograder autograde ASSIGNMENT --student
   ID``, one at a time, and the window it opens starts with the run's verdict (a refusal first).
4. **Serves the class pages** (``ClassPages``, ``reports.py``) at ``posref/reports/``: what ``stats`` and
   ``similar`` wrote, in the ``sandbox`` like every route that shows what students wrote.

Terminals are off (``lab.py``): grading needs none, and they were a shell for anyone able to run a script.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
import re
import secrets
import sys
from collections.abc import Callable
from contextvars import ContextVar
from pathlib import Path

import jinja2
from jupyter_server.base.handlers import JupyterHandler
from markupsafe import escape
from nbgrader.server_extensions.formgrader import apihandlers
from nbgrader.server_extensions.formgrader import formgrader as nbgrader_formgrader
from nbgrader.server_extensions.formgrader import handlers as nbgrader_handlers
from tornado import web

from autograder import course
from autograder.editions.catalogs import EDITIONS_DIR
from autograder.editions.notebook import ENGLISH, edition_of
from autograder.pages import reports
from autograder.pages.sanitize import CleanMarkdownExporter, StudentCellsSanitized
from posref_jupyter import offline_math

NONCE: ContextVar[str] = ContextVar("posref_csp_nonce", default="")
SCRIPT_TAG = re.compile(r"<script(?=[\s>])", re.IGNORECASE)
HANDLER_ATTRIBUTE = re.compile(r"""\son[a-z]+\s*=\s*"([^"]*)\"""", re.IGNORECASE)
# where this server's own scripts live (relative to its base URL): JupyterLab, its extensions, the MathJax of
# jupyter-server-mathjax, nbgrader's static files
STATIC = (
    "static/",
    "lab/extensions/",
    "formgrader/static/",
    "formgrader/submissions/components/",
    "posref/static/",
)
# and where its pages find images: a notebook's files, the kernels' logos, a submission's files in the formgrader
IMAGES = ("files/", "kernelspecs/", "formgrader/submissions/")
COURSE_STATIC = offline_math.STATIC  # the course's MathJax configuration
JAVASCRIPT = re.compile(r"(java|ecma)script|jscript|livescript", re.IGNORECASE)
# routes that serve what a student handed in (files, exports of notebooks): a sandbox of their own
STUDENT_FILES = re.compile(
    r"(files|view|nbconvert)/|posref/reports(/|$)|formgrader/submissions/[^/]+/(?!(next|prev)(_incorrect)?/?$)."
)
# the Autograde button's runs: one at a time (each grades with its own worker; the gradebook has one writer)
AUTOGRADE_LOCK = asyncio.Lock()


def content_security_policy(
    nonce: str, handler_hashes: list[str], *, server: str, sandbox: bool, evaluate: bool
) -> str:
    """The policy of one response: ``nonce`` for the templates' scripts, ``handler_hashes`` (CSP hash sources)
    for the event handlers the templates write, ``server`` the server's origin and base URL
    (``http://127.0.0.1:8888/``), ``sandbox`` for the routes of ``STUDENT_FILES``, ``evaluate`` for JupyterLab's
    pages (its settings are validated by code it compiles from the settings' schemas, ajv's ``new Function``:
    refused, no plugin starts; evaluating strings is for scripts that already run, none of a student's does, and
    JupyterLab runs no notebook's JavaScript until the notebook is trusted).

    Scripts, images, fonts and media load only from the server's folders of ``STATIC`` (and ``IMAGES``), never
    from any of its other routes: a student's CSS ``url()`` or ``<img>`` that JupyterLab's sanitiser keeps cannot
    send the instructor's browser to a route that acts on a GET (nbgrader's ``/formgrader?path=`` loaded the
    ``nbgrader_config.py`` of any folder named)."""
    handlers = " ".join(["'unsafe-hashes'", *handler_hashes]) if handler_hashes else "'none'"
    scripts = " ".join(server + prefix for prefix in STATIC)
    images = " ".join(server + prefix for prefix in (*STATIC, *IMAGES))
    directives = [
        "default-src 'self'",
        f"script-src {scripts} 'nonce-{nonce}'" + (" 'unsafe-eval'" if evaluate else ""),
        f"script-src-attr {handlers}",
        "style-src 'self' 'unsafe-inline'",
        f"img-src {images} data: blob:",
        f"font-src {scripts} data:",
        "connect-src 'self'",
        f"media-src {images} data: blob:",
        "worker-src 'self' blob:",
        "frame-src 'self'",
        "object-src 'none'",
        "base-uri 'self'",
        "form-action 'self'",
        "frame-ancestors 'self'",
    ]
    if sandbox:
        directives.append("sandbox")
    return "; ".join(directives)


def policy_transform(settings: dict, handler_hashes: list[str]) -> type:
    """The tornado output transform that sets the policy of every response of a server (``settings``: its
    tornado settings)."""
    base_url = settings["base_url"]

    class PolicyTransform(web.OutputTransform):
        """Draws the response's nonce (before the handler runs, so that its templates see it through
        ``NONCE``) and writes the policy over the server's own; JavaScript outside ``STATIC`` becomes text."""

        def __init__(self, request):
            super().__init__(request)
            self.path = request.path[len(base_url) :] if request.path.startswith(base_url) else request.path
            self.server = f"{request.protocol}://{request.host}{base_url}"
            self.nonce = secrets.token_urlsafe(18)
            NONCE.set(self.nonce)
            # the template environments of every extension (some are made after this one is loaded)
            for key, value in list(settings.items()):
                if key.endswith("jinja2_env") and isinstance(value, jinja2.Environment):
                    nonce_scripts(value)

        def transform_first_chunk(self, status_code, headers, chunk, finishing):
            sandbox = STUDENT_FILES.match(self.path) is not None
            headers["Content-Security-Policy"] = content_security_policy(
                self.nonce,
                handler_hashes,
                server=self.server,
                sandbox=sandbox,
                evaluate=not self.path.startswith("formgrader/"),
            )
            headers["X-Content-Type-Options"] = "nosniff"
            if JAVASCRIPT.search(headers.get("Content-Type", "")) and not self.path.startswith(STATIC):
                headers["Content-Type"] = "text/plain; charset=utf-8"
            if self.path.startswith("formgrader/api/") and finishing and status_code == 200:
                chunk = released_as_the_course_says(students_named(chunk), course.released_assignments())
                if "Content-Length" in headers:
                    headers["Content-Length"] = str(len(chunk))
            return status_code, headers, chunk

    return PolicyTransform


NO_NAME = "no name in the roster"


def _each_record(body: bytes, fix: Callable[[dict], None]) -> bytes:
    """A formgrader API reply (JSON) with ``fix`` applied to each of its objects, inner ones first; anything that
    is not JSON is returned as it came."""
    try:
        data = json.loads(body)
    except ValueError:
        return body

    def walk(item):
        if isinstance(item, list):
            return [walk(x) for x in item]
        if not isinstance(item, dict):
            return item
        item = {key: walk(value) for key, value in item.items()}
        fix(item)
        return item

    return json.dumps(walk(data)).encode()


def students_named(body: bytes) -> bytes:
    """A formgrader API reply in which every student without a first and last name (imported without a roster:
    nbgrader's pages showed "None, None") is named by the id: last name the id, first name ``NO_NAME`` (nbgrader's
    pages write "last, first")."""

    def name(item: dict) -> None:
        student = item.get("student", item.get("id"))
        if {"first_name", "last_name"} <= item.keys() and not (item["first_name"] or item["last_name"]):
            item["last_name"], item["first_name"] = str(student), NO_NAME

    return _each_record(body, name)


def released_as_the_course_says(body: bytes, released: set[str]) -> bytes:
    """A formgrader API reply in which each assignment of ``released`` (released in this course: ``python -m
    autograder release`` entered it in the gradebook) has the status "released". nbgrader asks its exchange, which
    a course without a hub has not, so every assignment read "draft", released or not."""

    def status(item: dict) -> None:
        if {"name", "status", "releaseable"} <= item.keys() and item["name"] in released:
            item["status"] = "released"

    return _each_record(body, status)


class NoncedScripts(jinja2.BaseLoader):
    """A template loader that gives every ``<script`` written in a template's own source the response's
    nonce (``{{ csp_nonce() }}``); what templates print from variables never gets one."""

    def __init__(self, inner: jinja2.BaseLoader):
        self.inner = inner

    def get_source(self, environment, template):
        source, filename, uptodate = self.inner.get_source(environment, template)
        return SCRIPT_TAG.sub('<script nonce="{{ csp_nonce() }}"', source), filename, uptodate

    def list_templates(self):
        return self.inner.list_templates()


def nonce_scripts(env: jinja2.Environment) -> None:
    """Make ``env``'s templates write the response's nonce into their own ``<script>`` elements."""
    if not isinstance(env.loader, NoncedScripts):
        env.loader = NoncedScripts(env.loader)
        env.globals["csp_nonce"] = NONCE.get
        if env.cache is not None:
            env.cache.clear()


def template_handler_hashes(folder: Path) -> list[str]:
    """CSP hash sources of the inline event handlers (``onclick="..."``) written in the templates of
    ``folder`` (nbgrader's: its eye icon that shows and hides student names)."""
    bodies = {
        body
        for path in sorted(folder.rglob("*"))
        if path.suffix in (".tpl", ".j2") and path.is_file()
        for body in HANDLER_ATTRIBUTE.findall(path.read_text(encoding="utf-8"))
    }
    return sorted(
        "'sha256-" + base64.b64encode(hashlib.sha256(body.encode()).digest()).decode() + "'"
        for body in bodies
    )


def model_answers(assignment: str, notebook: str, edition: str = ENGLISH) -> dict[str, str]:
    """The source notebook's text of each written answer of ``assignment/notebook``, by grade id: the model
    answer, rubric and usual wrong answers the instructor wrote there (nbgrader releases these cells as
    "YOUR ANSWER HERE", and feedback shows the student's cell, so students never receive them); in ``edition``,
    the edition's source (``editions/<edition>/solutions/``, the same cells translated)."""
    import nbformat

    folder = course.source_dir() if edition == ENGLISH else EDITIONS_DIR / edition / "solutions"
    path = folder / assignment / f"{notebook}.ipynb"
    if not path.is_file():
        return {}
    answers = {}
    for cell in nbformat.read(path, as_version=4).cells:
        meta = cell.get("metadata", {}).get("nbgrader", {})
        if (
            cell.cell_type == "markdown"
            and meta.get("grade_id")
            and ((meta.get("solution") and meta.get("grade")) or meta.get("task"))
        ):
            answers[meta["grade_id"]] = cell.source
    return answers


class SubmissionExporter(CleanMarkdownExporter):
    """nbgrader's formgrade view of a submission (template ``posref_formgrade``, which extends nbgrader's
    ``formgrade``) with the student's cells sanitised, markdown cleaned once rendered, the student's id and
    names escaped, and each written answer followed by the source notebook's model answer in the language the
    student answered in (the edition their notebook says it is), the English one a click away."""

    def _create_environment(self):
        env = super()._create_environment()
        nonce_scripts(env)
        return env

    def from_notebook_node(self, nb, resources=None, **kw):
        resources = dict(resources or {})
        for key in ("student", "first_name", "last_name", "notebook_path"):
            if isinstance(resources.get(key), str):
                resources[key] = str(escape(resources[key]))
        if "assignment_id" in resources and "notebook_id" in resources:
            where, edition = (resources["assignment_id"], resources["notebook_id"]), edition_of(nb)
            resources["model_answers"] = model_answers(*where, edition)
            resources["english_answers"] = model_answers(*where) if edition != ENGLISH else {}
            resources["edition"] = edition
        nb, resources = StudentCellsSanitized(enabled=True).preprocess(nb, resources)
        return super().from_notebook_node(nb, resources, **kw)


class CourseFormgrader(nbgrader_handlers.FormgraderHandler):
    """The formgrader's entry page, without nbgrader's ``?path=`` (which loaded the nbgrader configuration of
    the folder named: its ``nbgrader_config.py`` ran, a GET request away): the course has one configuration."""

    @web.authenticated
    def get(self):
        self.redirect(f"{self.base_url}/formgrader/manage_assignments")


class CourseAutograde(apihandlers.AutogradeHandler):
    """The formgrader's Autograde button: the course's score of record for one student, as
        ``python -m autograder autograde ASSIGNMENT --student ID`` grades it. The reply is what nbgrader's page
        shows: ``success``, and a ``log`` that starts with the run's verdict (a refusal, a student the grader failed on,
    or its summary) before the whole output."""

    @web.authenticated
    async def post(self, assignment_id, student_id):
        _ = self.xsrf_token  # as nbgrader's handlers do (its check_xsrf)
        command = [sys.executable, "-m", "autograder", "autograde", assignment_id, "--student", student_id]
        async with AUTOGRADE_LOCK:
            process = await asyncio.create_subprocess_exec(
                *command, "--workers", "1", cwd=course.REPO,
                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
            )  # fmt: skip
            output, _ = await process.communicate()
        log = output.decode(errors="replace")
        said = verdict(log)
        success = process.returncode == 0 and "the grader failed" not in said
        shown = "python " + " ".join(command[2:])
        self.write(
            json.dumps(
                {"success": success, "log": f"{said}\n\n--- {shown} (exit {process.returncode}):\n{log}"}
            )
        )


class ClassPages(JupyterHandler):
    """``posref/reports/``: the list of the class pages; ``posref/reports/NAME``: one of them (``reports.py``)."""

    @web.authenticated
    def get(self, name: str = ""):
        if not name:
            self.set_header("Content-Type", "text/html; charset=utf-8")
            self.finish(reports.index_page(reports.listing()))
            return
        found = reports.report(name)
        if found is None:
            raise web.HTTPError(404, "no such class page")
        content, content_type = found
        self.set_header("Content-Type", content_type)
        if content_type.startswith("text/csv"):
            self.set_header("Content-Disposition", f'attachment; filename="{name}"')
        self.finish(content)


def verdict(log: str) -> str:
    """What an autograde run says in the end: each student the grader failed on, then its last line (the
    summary, the refusal, or the exception that ended it)."""
    lines = [line.strip() for line in log.splitlines() if line.strip()]
    if not lines:
        return "autograde stopped without a message"
    failed = [line for line in lines[:-1] if "the grader failed" in line]
    return "\n".join([*failed, lines[-1]])


def _load_jupyter_server_extension(serverapp) -> None:
    webapp = serverapp.web_app
    base_url = webapp.settings["base_url"]
    # before nbgrader's routes, so that this button's route is the one found
    webapp.add_handlers(
        ".*$",
        [
            (base_url.rstrip("/") + r"/formgrader/api/submission/([^/]+)/([^/]+)/autograde", CourseAutograde),
            (base_url.rstrip("/") + r"/formgrader/?", CourseFormgrader),
            (base_url.rstrip("/") + r"/posref/reports", web.RedirectHandler, {"url": "reports/"}),
            (base_url.rstrip("/") + r"/posref/reports/([^/]*)", ClassPages),
            (
                base_url.rstrip("/") + r"/posref/static/(.*)",
                web.StaticFileHandler,
                {"path": str(COURSE_STATIC)},
            ),
        ],
    )
    nbgrader_formgrader.load_jupyter_server_extension(serverapp)
    formgrader = webapp.settings["nbgrader_formgrader"]
    webapp.settings["nbgrader_exporter"] = SubmissionExporter(
        config=formgrader.config,
        template_name="posref_formgrade",
        extra_template_basedirs=[nbgrader_handlers.template_path],
        # for posref_formgrade's `extends 'formgrade/index.html.j2'`
        extra_loaders=[jinja2.FileSystemLoader(nbgrader_handlers.template_path)],
    )
    webapp.settings["nbgrader_jinja2_env"].autoescape = True
    hashes = template_handler_hashes(Path(nbgrader_handlers.template_path))
    webapp.add_transform(policy_transform(webapp.settings, hashes))
    serverapp.log.info("posref: formgrader loaded with the course's autograde, sanitised views and a CSP")


def _jupyter_server_extension_points():
    return [{"module": "autograder.pages.lab_server"}]
