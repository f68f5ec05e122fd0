"""What the formgrader shows of a notebook that nbgrader's autograde refused.

nbgrader's autograde stops on a notebook whose nbgrader cell metadata it cannot take (a grade, answer or locked cell
without a grade id, metadata that is not a mapping, points that are not a number, a schema version it does not
know: its ``DeduplicateIds`` and ``CheckCellMetadata``) and removes what it had written for that student. The
gradebook keeps the submission, so the formgrader lists it, and its page said "Submission notebook file not found".
The score of record does not need nbgrader's metadata (``record.py`` finds answers by grade id), so the student is
graded all the same; this module gives the instructor that student's page and says why nbgrader refused it.

``stand_in`` is the student's notebook as nbgrader's sanitising steps would have made it, made so that it cannot
fail: a cell keeps nbgrader's metadata only where its grade id is one of the source notebook's, on a cell of the
same type, the first time it comes (the metadata is then the source's, and a test or locked cell's text the
source's, as nbgrader's ``OverwriteCells`` restores them); all other metadata of the student's is dropped, outputs
are cleared (``ClearOutput``), and the notebook's metadata is the source's. Its first cell says that nbgrader
refused the notebook and why (``refusal``: each cell whose metadata nbgrader's own validator refuses, else
nbgrader's last error line), in the student's edition, the reasons in a code block: text, never markup. The
formgrader's page, manual grading and feedback then work as for any submission.
"""

from __future__ import annotations

import copy
from pathlib import Path

import nbformat

from autograder.editions.notebook import EDITIONS, ENGLISH
from posref import i18n
from posref.grading.child.plain_data import student_text
from posref.i18n import _

MAX_REASONS = 10  # lines of reasons on the page (then how many more)
MAX_REASON = 200  # characters of one


def _line(text: object) -> str:
    """One line of a reason: the first non-empty line of ``text``, at most ``MAX_REASON`` characters, control
    and line-separating characters shown as ``?`` (so that it stays one line of a code block)."""
    lines = [line.strip() for line in student_text(str(text)).splitlines() if line.strip()]
    line = lines[0] if lines else "?"
    return line if len(line) <= MAX_REASON else line[: MAX_REASON - 4] + " ..."


def _read(submitted: bytes):
    """The student's notebook from its file's bytes, as ``nbformat.read`` reads a file (UTF-8)."""
    return nbformat.reads(submitted.decode("utf-8"), as_version=4)


def refusal(submitted: bytes, nbgrader_log: str) -> list[str]:
    """Why nbgrader refused the notebook ``submitted`` (its file's bytes): a line for each cell whose nbgrader
    metadata nbgrader's own validator refuses (``cell N (type): reason``, N counting from 0), or that the notebook
    cannot be read; else the last error line of nbgrader's log (``nbgrader_log``: another notebook of the
    submission may have stopped it)."""
    from nbgrader.nbgraderformat import MetadataValidator

    try:
        nb = _read(submitted)
        cells = list(nb.cells)
    except Exception as err:  # not JSON, not a notebook, not there
        return [_line(f"the notebook cannot be read: {type(err).__name__}: {err}")]
    validator, found = MetadataValidator(), []
    for index, cell in enumerate(cells):
        kind = _line(cell.get("cell_type")) if isinstance(cell, dict) else "?"
        meta = cell.get("metadata") if isinstance(cell, dict) else None
        if not isinstance(meta, dict):
            found.append(f"cell {index} ({kind}): its metadata is a {type(meta).__name__}, not a mapping")
            continue
        if "nbgrader" not in meta:
            continue
        if not isinstance(meta["nbgrader"], dict):
            found.append(
                f"cell {index} ({kind}): its nbgrader metadata is a {type(meta['nbgrader']).__name__}, not a mapping"
            )
            continue
        try:
            checked = copy.deepcopy(cell)
            validator.upgrade_cell_metadata(checked)
            validator.validate_cell(checked)
        except Exception as err:  # whatever the metadata is, of whatever type
            found.append(_line(f"cell {index} ({kind}): {getattr(err, 'message', None) or err}"))
    if found:
        return found
    errors = [line for line in nbgrader_log.splitlines() if line.strip() and not line.startswith(" ")]
    return [_line(f"nbgrader stopped: {errors[-1] if errors else 'it gave no reason'}")]


def _text(cell) -> str:
    source = cell.get("source", "")
    if isinstance(source, list):
        return "".join(s for s in source if isinstance(s, str))
    return source if isinstance(source, str) else ""


def _banner(reasons: list[str], edition: str) -> str:
    """The first cell's markdown: what happened, in ``edition``'s language, and ``reasons`` as a code block."""
    shown = reasons[:MAX_REASONS] + (
        [f"... {len(reasons) - MAX_REASONS} more"] if len(reasons) > MAX_REASONS else []
    )
    i18n.set_language(edition)
    try:
        said = _(
            "**nbgrader could not take this notebook as it was handed in**: what its check found is below. The "
            "score of record does not read nbgrader's metadata (the test cells show it, where there are any). "
            "This page shows the student's cells with nbgrader's metadata only where a cell has one of the "
            "assignment's grade ids (then the source notebook's metadata), and no outputs."
        )
    finally:
        i18n.set_language(None)
    return said + "\n\n" + "\n".join("    " + line for line in shown)


def stand_in(submitted: bytes, source: Path, reasons: list[str], edition: str = ENGLISH):
    """The notebook the formgrader shows in place of the one nbgrader refused (``submitted``: its file's bytes; see
    the module's docstring), ``source`` the assignment's source notebook, ``reasons`` from ``refusal``, ``edition``
    the one the record says the student handed in (the first cell's language)."""
    edition = edition if edition in EDITIONS else ENGLISH
    source_nb = nbformat.read(source, as_version=4)
    known = {}
    for cell in source_nb.cells:
        grade_id = cell.metadata.get("nbgrader", {}).get("grade_id")
        if grade_id:
            known[grade_id] = cell
    try:
        cells = [c for c in _read(submitted).cells if isinstance(c, dict)]
    except Exception:  # refusal says why: the page shows the reasons and no cells
        cells = []
    out = nbformat.v4.new_notebook(metadata=copy.deepcopy(source_nb.metadata))
    if edition != ENGLISH:
        out.metadata["posref"] = {"edition": edition}
    out.cells.append(nbformat.v4.new_markdown_cell(_banner(reasons, edition)))
    make = {
        "code": nbformat.v4.new_code_cell,
        "markdown": nbformat.v4.new_markdown_cell,
        "raw": nbformat.v4.new_raw_cell,
    }
    seen = set()
    for cell in cells:
        kind = cell.get("cell_type")
        if not isinstance(kind, str) or kind not in make:
            continue
        meta = cell.get("metadata")
        nbgrader = meta.get("nbgrader") if isinstance(meta, dict) else None
        grade_id = nbgrader.get("grade_id") if isinstance(nbgrader, dict) else None
        theirs = known.get(grade_id) if isinstance(grade_id, str) and grade_id not in seen else None
        text, metadata = _text(cell), {}
        if theirs is not None and theirs.cell_type == kind:
            seen.add(grade_id)
            metadata = {"nbgrader": copy.deepcopy(theirs.metadata["nbgrader"])}
            if not metadata["nbgrader"].get("solution"):  # a test or locked cell: the instructor's text
                text = theirs.source
        out.cells.append(make[kind](text, metadata=metadata))
    return out
