"""Disguised copies of an answer cell, as a student hiding a copy would make them: every name the cell binds renamed,
every comment rewritten, blank lines moved, and independent statements put in another order. Written on the
cell's source with ``tokenize`` and ``ast`` (the copy is never run: the similarity check reads code, it runs none).
"""

from __future__ import annotations

import ast
import io
import keyword
import tokenize

from autograder.analysis.fingerprints import bound_names


def renamed(source: str, salt: str = "my") -> str:
    """Each name the cell binds (but the function and class names the notebook asks for, which a copy must keep)
    renamed ``<salt>_<name>_<n>``, each comment rewritten."""
    tree = ast.parse(source)
    kept = {n.name for n in tree.body if isinstance(n, ast.FunctionDef | ast.ClassDef)}
    bound = (bound_names(source) or set()) - kept
    # a keyword argument's name is the callee's, and self stays self
    bound -= {kw.arg for node in ast.walk(tree) if isinstance(node, ast.Call) for kw in node.keywords} | {
        "self"
    }
    names = {name: f"{salt}_{name[:3]}_{i}" for i, name in enumerate(sorted(bound))}
    out, previous = [], None
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        text = token.string
        if token.type == tokenize.NAME and text in names and not keyword.iskeyword(text) and previous != ".":
            text = names[text]
        elif token.type == tokenize.COMMENT:
            text = f"# {salt}: {' '.join(reversed(text[1:].split()))}"
        out.append(token._replace(string=text))
        previous = token.string if token.type == tokenize.OP else None
    return tokenize.untokenize(out)


def _uses(node: ast.stmt) -> tuple[set[str], set[str]]:
    """The names a statement reads and those it writes."""
    reads = {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    writes = {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    return reads, writes


def reordered(source: str) -> str:
    """The first two neighbouring one-line statements of any block that neither read nor write what the other
    writes, swapped (the same program); the source unchanged where no block has such a pair."""
    tree = ast.parse(source)
    lines = source.split("\n")
    for block in ast.walk(tree):
        body = getattr(block, "body", None)
        if not isinstance(body, list):
            continue
        for a, b in zip(body, body[1:], strict=False):
            one_line = a.lineno == a.end_lineno and b.lineno == b.end_lineno == a.lineno + 1
            if not one_line or isinstance(a, ast.Return | ast.Expr) or isinstance(b, ast.Return | ast.Expr):
                continue
            (ra, wa), (rb, wb) = _uses(a), _uses(b)
            if not (wa & (rb | wb)) and not (wb & ra):
                lines[a.lineno - 1], lines[b.lineno - 1] = lines[b.lineno - 1], lines[a.lineno - 1]
                return "\n".join(lines)
    return source


def blank_lines_moved(source: str) -> str:
    """Every blank line removed, and one put after each line that ends a statement with ``:`` or ``)``."""
    lines = [line for line in source.split("\n") if line.strip()]
    out = []
    for line in lines:
        out.append(line)
        if line.rstrip().endswith((":", ")")):
            out.append("")
    return "\n".join(out)


def disguised(source: str, salt: str = "my") -> str:
    """All four disguises at once."""
    return blank_lines_moved(reordered(renamed(source, salt)))
