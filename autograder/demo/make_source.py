"""Writes the demo assignment's source notebook (nbgrader format) from the cells below: run it after editing."""

from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook


def _cell(source, *, grade_id=None, solution=False, points=None, locked=False, markdown=False):
    cell = new_markdown_cell(source) if markdown else new_code_cell(source)
    if grade_id:
        meta = {"grade_id": grade_id, "solution": solution, "grade": points is not None, "locked": locked,
                "schema_version": 3}  # fmt: skip
        if points is not None:
            meta["points"] = points
        cell.metadata["nbgrader"] = meta
    return cell


CELLS = [
    _cell(
        "# Demo: sinusoidal positions and RoPE\nImplement the two functions; the tests below check them.",
        markdown=True,
        grade_id="intro",
        locked=True,
    ),  # fmt: skip
    _cell(
        "import torch\n\nfrom posref.grading import check_apply_rope, check_apply_rope_speed, "
        "check_sinusoidal_pe",
        grade_id="setup",
        locked=True,
    ),  # fmt: skip
    _cell(
        "def sinusoidal_pe(n_positions, dim, base=10000.0):\n"
        '    """(n_positions, dim): column 2i is sin(p / base**(2i/dim)), column 2i+1 its cos."""\n'
        "    ### BEGIN SOLUTION\n"
        "    freqs = base ** (-torch.arange(0, dim, 2, dtype=torch.float32) / dim)\n"
        "    angles = torch.arange(n_positions, dtype=torch.float32)[:, None] * freqs\n"
        "    return torch.stack((angles.sin(), angles.cos()), dim=-1).flatten(-2)\n"
        "    ### END SOLUTION",
        grade_id="sinusoidal_pe",
        solution=True,
    ),  # fmt: skip
    _cell(
        "check_sinusoidal_pe(sinusoidal_pe)\n### BEGIN HIDDEN TESTS\ncheck_sinusoidal_pe(sinusoidal_pe, hidden=True)\n"
        "### END HIDDEN TESTS",
        grade_id="test_sinusoidal_pe",
        points=2,
        locked=True,
    ),  # fmt: skip
    _cell(
        'def apply_rope(x, cos, sin, layout="half"):\n'
        '    """Rotate the first 2r dims of x (..., T, D) in pairs; r = cos.shape[-1]."""\n'
        "    ### BEGIN SOLUTION\n"
        "    r = cos.shape[-1]\n"
        "    xf, c, s = x.float(), cos.float(), sin.float()\n"
        '    if layout == "half":\n'
        "        a, b = xf[..., :r], xf[..., r : 2 * r]\n"
        "        rot = torch.cat((a * c - b * s, b * c + a * s), -1)\n"
        "    else:\n"
        "        a, b = xf[..., 0 : 2 * r : 2], xf[..., 1 : 2 * r : 2]\n"
        "        rot = torch.stack((a * c - b * s, b * c + a * s), -1).flatten(-2)\n"
        "    return torch.cat((rot, xf[..., 2 * r :]), -1).to(x.dtype)\n"
        "    ### END SOLUTION",
        grade_id="apply_rope",
        solution=True,
    ),  # fmt: skip
    _cell(
        "check_apply_rope(apply_rope)\n### BEGIN HIDDEN TESTS\ncheck_apply_rope(apply_rope, hidden=True)\n"
        "### END HIDDEN TESTS",
        grade_id="test_apply_rope",
        points=3,
        locked=True,
    ),  # fmt: skip
    _cell("check_apply_rope_speed(apply_rope)", grade_id="test_apply_rope_speed", points=1, locked=True),
]

if __name__ == "__main__":
    nb = new_notebook(cells=CELLS)
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, Path(__file__).parent / "source" / "positions" / "positions.ipynb")
