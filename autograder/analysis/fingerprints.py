"""An answer cell as tokens that renaming, comments and blank lines do not change, fingerprinted with copydetect.

``tokens`` reads a cell with Python's ``tokenize`` (what the language itself calls a token; never run, never
imported) and keeps one symbol per token: each name the cell binds (an assignment, a parameter, a function, a
class, a loop variable, ...) becomes ``BOUND``, whatever it is called; names it does not bind (``torch``,
``softmax`` after a dot, ``range``, a keyword argument of a library, a notebook's global ``V``) stay as written,
since a student does not choose them; every string literal becomes ``STRING`` (neither placeholder can be a
name); comments, docstrings (a string that is a whole statement), blank lines and layout are dropped; numbers,
operators and keywords stay, and each statement starts with its depth in the blocks (not the indentation's tokens,
which would tie a block's first statement to whatever line precedes it, so that swapping two independent statements
would change what is counted). Each symbol is one character of a document (``Tokens.doc``), so that copydetect's
k-grams are ``k`` tokens, and each keeps the place in the source it came from (``Tokens.spans``) for showing the
matching slices side by side.

``fingerprint`` hands the document to copydetect (winnowing, Schleimer, Wilkerson & Aiken, SIGMOD 2003), with the
released stub's fingerprints as boilerplate: what the release gave everyone matches nobody. The window is 1, so
every k-gram is a fingerprint: a cell is small, and a window over hashes would make the fingerprints chosen depend
on Python's per-process string hashing (the same class would score a little differently on every run). The
boilerplate is taken out here rather than by copydetect, whose removal (``np.intersect1d`` told the fingerprints are
unique, which they are not) also drops a fingerprint that a cell repeats.
"""

from __future__ import annotations

import ast
import builtins
import io
import keyword
import tokenize
from dataclasses import dataclass

import numpy as np
from copydetect import CodeFingerprint
from copydetect.utils import get_token_coverage

K = 12  # tokens per fingerprint: copydetect's noise threshold (shorter matches are not counted)
VOCABULARY_START, VOCABULARY_SIZE = (
    0xF0000,
    65_534,
)  # Supplementary Private Use Area-A: one character per symbol
STATEMENT_ENDS = 0x100000  # Supplementary Private Use Area-B: each statement's end a character of its own
SKIPPED = {tokenize.COMMENT, tokenize.NL, tokenize.ENCODING, tokenize.ENDMARKER}
BUILTINS = frozenset(dir(builtins))
# the symbols of a name the cell binds and of a string literal: no name is either
BOUND, STRING = "<bound>", "<string>"


@dataclass(frozen=True)
class Tokens:
    """A cell as symbols: ``doc[i]`` is the symbol of the source's ``source[spans[i][0]:spans[i][1]]``."""

    source: str
    doc: str
    spans: tuple[tuple[int, int], ...]


MAX_REPAIRS = 20  # lines of a cell left out, one at a time, to find what the rest of it binds


def _parsed(source: str) -> ast.Module | None:
    """``source`` parsed; where it does not parse, parsed with the line of each syntax error left blank (up to
    ``MAX_REPAIRS`` lines: a student's unfinished or broken line does not hide what the rest binds); else None."""
    lines = source.split("\n")
    for _ in range(MAX_REPAIRS + 1):
        try:
            return ast.parse("\n".join(lines))
        except SyntaxError as err:
            if not err.lineno or not 1 <= err.lineno <= len(lines) or not lines[err.lineno - 1].strip():
                return None
            lines[err.lineno - 1] = ""
        except (ValueError, RecursionError, MemoryError):
            return None
    return None


def bound_names(source: str) -> set[str] | None:
    """The names ``source`` binds (imports aside: a module's name is not the student's choice), its broken lines
    left out (``_parsed``); None where it cannot be parsed even so (every name that is no builtin is then taken as
    bound)."""
    tree = _parsed(source)
    if tree is None:
        return None
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store | ast.Del):
            names.add(node.id)
        elif isinstance(node, ast.arg):
            names.add(node.arg)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.ExceptHandler | ast.MatchAs | ast.MatchStar) and node.name:
            names.add(node.name)
        elif isinstance(node, ast.Global | ast.Nonlocal):
            names.update(node.names)
    return names


def _raw_tokens(source: str) -> list[tokenize.TokenInfo]:
    """The tokens of ``source`` up to the first place ``tokenize`` cannot read (a student's unfinished line): what
    comes before it still counts."""
    found = []
    try:
        for token in tokenize.generate_tokens(io.StringIO(source).readline):
            found.append(token)
    except (tokenize.TokenError, SyntaxError):  # IndentationError is a SyntaxError
        pass
    return found


def _docstrings(found: list[tokenize.TokenInfo]) -> set[int]:
    """Indexes of the tokens of each string that is a whole statement (a docstring) and of the line's end."""
    drop, start = set(), True  # start: the next token begins a logical line
    for i, token in enumerate(found):
        if token.type in SKIPPED:
            continue
        if start and token.type == tokenize.STRING:
            j = i + 1
            while j < len(found) and found[j].type in (tokenize.STRING, tokenize.COMMENT, tokenize.NL):
                j += 1  # implicitly joined strings, a comment after them
            if j == len(found) or found[j].type in (tokenize.NEWLINE, tokenize.ENDMARKER):
                drop.update(range(i, min(j + 1, len(found))))
        start = token.type in (tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT)
    return drop


def tokens(source: str, vocabulary: dict[str, str]) -> Tokens:
    """``source`` (one cell, never run) as ``Tokens``; ``vocabulary`` (symbol -> character) is shared by every
    cell compared with it, and grows as new symbols come (past ``VOCABULARY_SIZE``, new ones share one character)."""
    source = "\n".join("" if line.lstrip().startswith(("%", "!")) else line for line in source.split("\n"))
    starts = [0]
    for line in source.split("\n"):  # tokenize's lines (StringIO.readline ends a line at "\n" only)
        starts.append(starts[-1] + len(line) + 1)
    found = _raw_tokens(source)
    bound, drop = bound_names(source), _docstrings(found)
    doc, spans, previous = [], [], ""
    depth, starts_statement = 0, True
    for i, token in enumerate(found):
        if token.type in (tokenize.INDENT, tokenize.DEDENT):
            depth += 1 if token.type == tokenize.INDENT else -1
            continue
        if token.type in SKIPPED or i in drop:
            continue
        kind, text = token.type, token.string
        if starts_statement and kind != tokenize.NEWLINE:
            doc.append(_symbol(vocabulary, f"depth {depth}"))
            spans.append((0, 0))
        starts_statement = kind == tokenize.NEWLINE
        if kind == tokenize.NAME and not keyword.iskeyword(text) and previous != ".":
            unbound = text not in bound if bound is not None else text in BUILTINS
            symbol = text if unbound else BOUND
        elif kind == tokenize.STRING:
            symbol = STRING
        elif (
            kind == tokenize.NEWLINE
        ):  # a statement's end: unlike any other, so that no k-gram runs across it
            ends = vocabulary.setdefault("", 0) + 1
            vocabulary[""] = ends
            doc.append(chr(STATEMENT_ENDS + ends % VOCABULARY_SIZE))
            spans.append((0, 0))
            previous = ""
            continue
        else:
            symbol = text
        previous = text if kind == tokenize.OP else ""
        doc.append(_symbol(vocabulary, symbol))
        (row, col), (end_row, end_col) = token.start, token.end
        spans.append(
            (starts[row - 1] + col, starts[end_row - 1] + end_col) if row <= len(starts) - 1 else (0, 0)
        )
    return Tokens(source, "".join(doc), tuple(spans))


def _symbol(vocabulary: dict[str, str], symbol: str) -> str:
    """The character of ``symbol``, a new one while the vocabulary has room (past it, new symbols share one)."""
    if symbol not in vocabulary and len(vocabulary) < VOCABULARY_SIZE:
        vocabulary[symbol] = chr(VOCABULARY_START + len(vocabulary))
    return vocabulary.get(symbol, chr(VOCABULARY_START + VOCABULARY_SIZE))


def fingerprint(cell: Tokens, boilerplate: set[int] = frozenset()) -> CodeFingerprint:
    """copydetect's fingerprint of ``cell`` (every ``K``-gram of its symbols within one statement), less the
    ``boilerplate`` fingerprints (the released stub's); its ``token_coverage`` is then the number of the cell's own
    symbols that any fingerprint covers: 0 for a cell that is all stub."""
    found = CodeFingerprint("cell.py", K, 1, filter=False, fp=io.StringIO(cell.doc))
    ends = np.cumsum([0] + [ord(c) >= STATEMENT_ENDS for c in cell.doc])  # statement ends before each place
    across = {h for h, where in found.hash_idx.items() if any(ends[i + K] > ends[i] for i in where)}
    for dropped in (found.hashes & boilerplate) | across:
        del found.hash_idx[dropped]
    found.hashes -= boilerplate | across
    found.token_coverage = get_token_coverage(found.hash_idx, K, len(cell.doc))
    return found
