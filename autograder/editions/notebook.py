"""The course's editions: English `solutions/` is the one source; each other edition is that source plus one gettext
catalog per notebook (`locale/<lang>/<notebook>.po`, e.g. `locale/zh_TW/04_rope.po`).

What is translated is what a student reads in a notebook's markdown cells, a block at a time: a block is a run of
lines between blank lines, where a fenced code block or a `$$ ... $$` display formula never splits. A block with no
words outside its formulas and code spans (a formula on its own, a fence) is the same in every edition and is not a
message. A message's msgid is the block exactly as the source has it (line breaks included), so that putting an
edition together is replacing each block by its msgstr, and changing one English sentence makes exactly the message
of its block untranslated (`msgmerge` marks it fuzzy, with the old translation beside it, for the translator).

Graded code is never translated: test cells and grade ids are identical, byte for byte, in every edition, so one
gradebook grades a class whose students hand in different editions. In the other code cells, the notebook's
demonstrations, figures and runs and the answer cells (the student's to write, which nbgrader never restores: each
edition's release has its own stub, ``CODE_STUB``, and docstrings), a student reads comments and the sentences a
cell prints, draws or raises: each comment (``# ...``, pragmas such as ``# noqa`` and nbgrader's ``### BEGIN
SOLUTION`` markers aside), each docstring, and each string literal given straight to ``print``, to a figure's text
(a title, an axis label, ``label=``), to an exception it raises, to ``uses(...)`` (the exercise an unfinished cell
names) or to ``shown(...)`` (``posref.notebook.shown``: a sentence the code keeps in a variable, a list or a dict
before it shows it), including each branch of a conditional (``"on" if fast else "off"``), each side of an ``or``
and each string added to another, is a message, its msgid the literal as the source writes it (quotes, prefix and
``{...}`` fields included), so that the edition's cell is the English cell with those literals replaced and nothing
else. A string kept in a variable or used as a key is never one unless it is marked ``shown``: the code that reads
it stays the English code. The notebook's first cell says its edition, ``use_edition("en")``; an edition writes its
own tag there (``edition_tag``). An edition's notebook says which it is in its metadata
(``metadata.posref.edition``, e.g. ``"zh-TW"``); a notebook that says nothing known is English.
The catalogs are kept in step by ``catalogs.py`` and ``simplified.py``, the editions written by
``autograder/release/editions.py``.
"""

from __future__ import annotations

import ast
import copy
import io
import re
import tokenize
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path

import nbformat

LOCALE_DIR = Path(__file__).resolve().parents[2] / "locale"
ENGLISH = "en"
# each edition's tag (BCP 47, as posref.i18n and `posref lab --lang` spell it) -> its catalogs' folder in locale/
EDITIONS = {"zh-TW": "zh_TW", "zh-CN": "zh_CN"}
# the text a student replaces in a written answer's cell of an edition's release (nbgrader's: "YOUR ANSWER HERE")
TEXT_STUB = {"zh-TW": "請在這裡寫下你的答案", "zh-CN": "请在这里写下你的答案"}
# the lines an answer cell of code holds in an edition's release instead of the model answer (the English release's:
# autograder/nbgrader_config.py's); its message is what every check echoes in the first failure a student meets
CODE_STUB = {
    "zh-TW": '# 在這裡寫你的程式碼\nraise NotImplementedError("還沒完成：把這一行換成你的程式碼，再執行一次這個儲存格")',
    "zh-CN": '# 在这里写你的代码\nraise NotImplementedError("还没完成：把这一行换成你的代码，再运行一次这个单元格")',
}
# what an edition's student types or opens instead of the English one's (`posref lab --lang`, posref/workfolder.py):
# a code span of the English markdown -> the edition's ({tag}: its tag). A translation keeps the English span (it
# is a protected part); the edition's notebooks get this one.
EDITION_SPANS = {
    "`make lab`": "`make lab EDITION={tag}`",
    "`POSREF_FAST=1 make lab`": "`POSREF_FAST=1 make lab EDITION={tag}`",
    "`work/`": "`work-{tag}/`",
    "`notebooks/`": "`editions/{tag}/notebooks/`",
    "`.venv/bin/posref update`": "`.venv/bin/posref update --lang {tag}`",
}
# what the start page shows a student of an edition as their notebooks have it (a code span or a fence is kept as
# the English has it by a translation): the stub of code and the one line an unfinished exercise stops with
# (posref's message, as its catalogs say it)
EDITION_TEXT = {
    '# YOUR CODE HERE\nraise NotImplementedError("not done yet: ...")': {
        edition: re.sub(r'("[^"：]*：).*"', r'\1..."', stub) for edition, stub in CODE_STUB.items()
    },
    "`ExerciseNotDone: finish Exercise 2 (...) first: this cell uses its result`": {
        "zh-TW": "`ExerciseNotDone: 請先完成練習 2（...）：這個儲存格要用到它的結果`",
        "zh-CN": "`ExerciseNotDone: 请先完成练习 2（...）：这个单元格要用到它的结果`",
    },
}
_SPAN = re.compile("|".join(map(re.escape, sorted({**EDITION_SPANS, **EDITION_TEXT}, key=len, reverse=True))))


def _edition_span(span: str, edition: str) -> str:
    """The edition's text for ``span`` (a key of ``EDITION_SPANS`` or ``EDITION_TEXT``)."""
    return EDITION_TEXT[span][edition] if span in EDITION_TEXT else EDITION_SPANS[span].format(tag=edition)


_FENCE = re.compile(r"^\s*(```|~~~)")
_DISPLAY_MATH = "$$"
_NOT_WORDS = re.compile(r"\$\$.*?\$\$|\$[^$\n]*\$|`[^`\n]*`|<[^>\n]*>|\]\([^)\n]*\)", re.DOTALL)
_WORD = re.compile(r"[A-Za-z]{2,}")


def split_blocks(text: str) -> list[tuple[str, str]]:
    """`text` as (block, separator) pairs whose concatenation is `text` again: blocks are runs of non-blank lines,
    except that a fenced code block or a display formula (`$$ ... $$` over several lines) stays inside one block
    even across blank lines. The separator is the run of newlines (and blank lines) after its block."""
    lines = text.split("\n")
    pieces: list[tuple[str, str]] = []
    current: list[str] = []
    blanks = 0
    in_fence = in_math = False
    for line in lines:
        blank = not line.strip()
        if blank and not (in_fence or in_math):
            if current:
                blanks += 1
            elif pieces:  # a blank run after a block: it belongs to that block's separator
                block, sep = pieces[-1]
                pieces[-1] = (block, sep + "\n")
            else:  # blank lines before the first block: an empty block carries them
                pieces.append(("", "\n"))
            continue
        if current and blanks:
            pieces.append(("\n".join(current), "\n" * (blanks + 1)))
            current, blanks = [], 0
        current.append(line)
        if _FENCE.match(line):
            in_fence = not in_fence
        elif not in_fence and line.count(_DISPLAY_MATH) % 2 == 1:
            in_math = not in_math
    if current:
        pieces.append(("\n".join(current), "\n" * blanks))
    elif pieces:  # the text ended in blank lines: the last separator holds one newline too many
        block, sep = pieces[-1]
        pieces[-1] = (block, sep[:-1])
    assert "".join(b + s for b, s in pieces) == text, "split_blocks lost text"
    return pieces


def is_message(block: str) -> bool:
    """Whether a block has words to translate outside its formulas, code spans, tags and link targets."""
    if _FENCE.match(block):
        return False
    return bool(_WORD.search(_NOT_WORDS.sub(" ", block)))


def markdown_messages(text: str) -> Iterator[str]:
    """The messages of one markdown cell's source, in order."""
    for block, _ in split_blocks(text):
        if is_message(block):
            yield block


def translate_markdown(text: str, translate: Callable[[str], str]) -> str:
    """`text` with each message block replaced by `translate(block)`; everything else as it was."""
    return "".join(
        (translate(block) if is_message(block) else block) + sep for block, sep in split_blocks(text)
    )


# comments that are code to a tool: linters' and formatters' pragmas, nbgrader's markers of a solution or hidden tests
_PRAGMA = re.compile(r"#\s*(noqa|fmt:|type:|pragma|pylint:|ruff:)|#+\s*(BEGIN|END) (SOLUTION|HIDDEN TESTS)")
# calls and keywords whose string argument is text on a figure, a printed line, or a message a student meets
_SHOWN_BY = {"print", "set_title", "set_xlabel", "set_ylabel", "suptitle", "text", "annotate", "set_label", "title",
             "xlabel", "ylabel", "shown", "uses"}  # fmt: skip
_SHOWN_AS = {"label", "title"}
# the call of a notebook's first cell that names its edition, and what the English source gives it
EDITION_CALL, EDITION_ARGUMENT = "use_edition", f'"{ENGLISH}"'


def is_translated_code(cell) -> bool:
    """Whether a cell is code whose comments and sentences an edition translates: code nbgrader neither grades nor
    restores (no ``grade`` or ``locked`` flag in its nbgrader metadata): the notebook's own cells and the answer
    cells, which are the student's."""
    if cell.get("cell_type") != "code":
        return False
    meta = cell.get("metadata", {}).get("nbgrader", {})
    return not (isinstance(meta, Mapping) and any(meta.get(flag) for flag in ("grade", "locked")))


def _name(call: ast.Call) -> str:
    func = call.func
    return func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")


def _parts(node: ast.AST) -> Iterator[ast.AST]:
    """``node`` and, where it picks or joins strings, its strings: each branch of a conditional expression, each
    value of an ``or``/``and``, each side of a ``+``."""
    yield node
    if isinstance(node, ast.IfExp):
        yield from (*_parts(node.body), *_parts(node.orelse))
    elif isinstance(node, ast.BoolOp):
        yield from (part for value in node.values for part in _parts(value))
    elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        yield from (*_parts(node.left), *_parts(node.right))


def _shown(tree: ast.AST) -> Iterator[ast.AST]:
    """The expressions a student reads: docstrings, what is given to a call of ``_SHOWN_BY`` or as a ``_SHOWN_AS``
    keyword, and the arguments of an exception a ``raise`` makes (with ``_parts``)."""
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and ast.get_docstring(
            node
        ):
            yield node.body[0].value
        if isinstance(node, ast.Call):
            shown = node.args if _name(node) in _SHOWN_BY else []
            for value in (*shown, *(k.value for k in node.keywords if k.arg in _SHOWN_AS)):
                yield from _parts(value)
        if isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call):
            yield from (part for arg in node.exc.args for part in _parts(arg))


def _is_string(node: ast.AST) -> bool:
    """Whether ``node`` is a string literal, formatted or not."""
    return isinstance(node, ast.JoinedStr) or (isinstance(node, ast.Constant) and isinstance(node.value, str))


def _text_of(node: ast.AST) -> str:
    """The literal text of a string node (a formatted string's constant parts, its fields as spaces)."""
    if isinstance(node, ast.Constant):
        return node.value
    return " ".join(v.value for v in node.values if isinstance(v, ast.Constant))


def code_pieces(source: str) -> list[tuple[int, int]]:
    """The (start, end) character offsets in ``source`` of its messages (see the module's docstring), in order:
    comments and the string literals a student reads. Source that does not parse has none."""
    try:
        tree = ast.parse(source)
        tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
    except (SyntaxError, tokenize.TokenError, ValueError):
        return []
    lines = source.splitlines(keepends=True)
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))

    def offset(lineno: int, col: int, in_bytes: bool) -> int:
        line = lines[lineno - 1] if lineno <= len(lines) else ""
        column = len(line.encode()[:col].decode(errors="ignore")) if in_bytes else col
        return starts[lineno - 1] + column

    pieces = [
        (offset(*tok.start, False), offset(*tok.end, False))
        for tok in tokens
        if tok.type == tokenize.COMMENT and _WORD.search(tok.string) and not _PRAGMA.match(tok.string)
    ]
    pieces += [
        (offset(node.lineno, node.col_offset, True), offset(node.end_lineno, node.end_col_offset, True))
        for node in _shown(tree)
        if _is_string(node) and _WORD.search(_text_of(node))
    ]
    return sorted(set(pieces))


def code_messages(source: str) -> Iterator[str]:
    """The messages of one translated code cell's source, in order."""
    for start, end in code_pieces(source):
        yield source[start:end]


def translate_code(source: str, translate: Callable[[str], str]) -> str:
    """``source`` with each message replaced by ``translate(message)``; everything else as it was."""
    out, last = [], 0
    for start, end in code_pieces(source):
        out += [source[last:start], translate(source[start:end])]
        last = end
    return "".join(out) + source[last:]


def notebook_messages(path: Path) -> Iterator[tuple[str, str]]:
    """(message, occurrence) for every message of a notebook's markdown cells and translated code cells
    (``is_translated_code``); the occurrence names the cell (`04_rope.ipynb:<cell id>`), which a translator's editor
    shows beside the message."""
    nb = nbformat.read(path, as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            messages = markdown_messages(cell.source)
        elif is_translated_code(cell):
            messages = code_messages(cell.source)
        else:
            continue
        for message in messages:
            yield message, f"{path.name}:{cell.get('id', '')}"


# an inline formula, code span, tag or link target may cross a line break (a block holds no blank line); a tag
# starts with a letter, / or ! (a comparison such as `positions < {L}: ... >= {L}` is text)
PROTECTED = re.compile(r"\$\$.*?\$\$|\$[^$]*\$|`[^`]*`|<[A-Za-z/!][^>]*>|\]\(([^)]*)\)", re.DOTALL)
_NUMBER = re.compile(r"(?<![\w.])\d+(?:\.\d+)?")


def protected_parts(text: str) -> list[str]:
    """What a translation keeps exactly as the English has it, sorted: formulas, code spans, HTML tags, link
    targets, and the numbers of the running text (a number quoted from a run stays that number)."""
    parts = [m.group(1) if m.group(1) is not None else m.group(0) for m in PROTECTED.finditer(text)]
    parts += _NUMBER.findall(PROTECTED.sub(" ", text))
    return sorted(parts)


def string_literal(text: str) -> ast.AST | None:
    """The string node ``text`` is when it is exactly one Python string literal (formatted or not; literals
    concatenated over several lines count as one, as in a call's parentheses), else None."""
    try:
        node = ast.parse(f"(\n{text}\n)", mode="eval").body
    except SyntaxError:
        return None
    return node if _is_string(node) else None


def _fields(node: ast.AST) -> list[str]:
    """A formatted string's fields as source (value, conversion and format), sorted; none for a plain string."""
    if not isinstance(node, ast.JoinedStr):
        return []
    return sorted(ast.unparse(ast.JoinedStr([v])) for v in node.values if isinstance(v, ast.FormattedValue))


def translation_problems(msgid: str, msgstr: str) -> list[str]:
    """Why `msgstr` cannot stand for `msgid` (empty when it can): each protected part missing or added; for a string
    literal of code, a translation that is not one string literal of the same kind with the same fields; for a
    comment, one that is not a one-line comment."""
    english = string_literal(msgid)
    if english is not None:
        translated = string_literal(msgstr)
        if translated is None or type(translated) is not type(english):
            return [f"not a {type(english).__name__} string literal like the English: {msgstr[:60]!r}"]
        if _fields(translated) != _fields(english):
            return [f"its fields {_fields(translated)} are not the English's {_fields(english)}"]
        msgid, msgstr = _text_of(english), _text_of(translated)
    elif msgid.startswith("#") and "\n" not in msgid and (not msgstr.startswith("#") or "\n" in msgstr):
        return [f"a comment's translation must be one line starting with '#': {msgstr[:60]!r}"]
    want, have = protected_parts(msgid), protected_parts(msgstr)
    problems = [f"missing {p!r}" for p in want if want.count(p) > have.count(p)]
    problems += [f"not in the English: {p!r}" for p in have if have.count(p) > want.count(p)]
    return sorted(set(problems))


def edition_of(nb) -> str:
    """The edition a notebook says it is (``metadata.posref.edition``), one of ``EDITIONS``; ``ENGLISH`` for
    anything else. A submitted notebook is hostile: any metadata, of any type, is read without failing."""
    meta = nb.get("metadata") if isinstance(nb, Mapping) else None
    posref = meta.get("posref") if isinstance(meta, Mapping) else None
    edition = posref.get("edition") if isinstance(posref, Mapping) else None
    return edition if isinstance(edition, str) and edition in EDITIONS else ENGLISH


def edition_tag(source: str, edition: str) -> str:
    """``source`` with the English argument of its ``use_edition("en")`` call (a notebook's first cell) replaced by
    ``edition``'s tag, so that the edition's notebook says which it is to posref; anything else as it was."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return source
    lines = source.splitlines(keepends=True)
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and _name(node) == EDITION_CALL and len(node.args) == 1:
            arg = node.args[0]
            line = lines[arg.lineno - 1].encode()
            if (
                arg.lineno == arg.end_lineno
                and line[arg.col_offset : arg.end_col_offset].decode() == EDITION_ARGUMENT
            ):
                before = sum(len(x) for x in lines[: arg.lineno - 1]) + len(line[: arg.col_offset].decode())
                return source[:before] + f'"{edition}"' + source[before + len(EDITION_ARGUMENT) :]
    return source


def edition_notebook(nb, translations: Mapping[str, str], edition: str):
    """A copy of the English notebook ``nb`` as ``edition``: each markdown message replaced by its translation
    (``translations``: msgid -> msgstr; a message without one stays English) and the spans of ``EDITION_SPANS``
    and ``EDITION_TEXT``
    by the edition's, each message of a translated code cell (``is_translated_code``) by its translation and its
    ``use_edition`` tag by the edition's (``edition_tag``), graded code as it is, and the edition in the notebook's
    metadata."""
    if edition not in EDITIONS:
        raise ValueError(f"no edition {edition!r}: the editions are {', '.join(EDITIONS)}")
    out = copy.deepcopy(nb)
    for cell in out.cells:
        if cell.cell_type == "markdown":
            text = translate_markdown(cell.source, lambda block: translations.get(block, block))
            cell.source = _SPAN.sub(lambda m: _edition_span(m.group(0), edition), text)
        elif is_translated_code(cell):
            cell.source = edition_tag(
                translate_code(cell.source, lambda piece: translations.get(piece, piece)), edition
            )
    out.metadata.setdefault("posref", {})["edition"] = edition
    return out
