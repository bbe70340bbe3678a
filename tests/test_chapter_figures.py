"""Every figure a chapter builds is shown: a lib.viz builder called as a statement is the cell's last.

A figure builder returns a plotly figure and never calls ``show()`` (CONTRIBUTING.md), so the
notebook displays it only as the value of the cell's last expression. A builder call followed by
another statement (a ``glue_all`` merged into the cell, say) builds the figure and throws it away:
the page then says "move the slider" under nothing. Chapter 1's lookup figure was lost this way.
"""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CHAPTERS = sorted((ROOT / "chapters").glob("*.ipynb"))


def _viz_names(tree: ast.Module) -> set[str]:
    """Names a cell imports from lib.viz (``from lib.viz.rope import rotation_diagram``)."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("lib.viz"):
            names |= {alias.asname or alias.name for alias in node.names}
    return names


def _code_cells(path: Path) -> list[tuple[int, str, list]]:
    nb = json.loads(path.read_text(encoding="utf-8"))
    cells = []
    for index, cell in enumerate(nb["cells"]):
        if cell["cell_type"] != "code":
            continue
        source = "".join(cell["source"])
        lines = [line for line in source.split("\n") if not line.lstrip().startswith(("%", "!"))]
        cells.append((index, "\n".join(lines), cell.get("outputs", [])))
    return cells


def discarded_figures(path: Path) -> list[str]:
    """Cells of a notebook where a lib.viz call stands as a statement but is not the last one."""
    cells = _code_cells(path)
    viz: set[str] = set()
    for _, source, _ in cells:
        try:
            viz |= _viz_names(ast.parse(source))
        except SyntaxError:
            continue
    problems = []
    for index, source, _ in cells:
        try:
            body = ast.parse(source).body
        except SyntaxError:
            continue
        for position, statement in enumerate(body[:-1]):
            call = statement.value if isinstance(statement, ast.Expr) else None
            if (
                isinstance(call, ast.Call)
                and isinstance(call.func, ast.Name)
                and call.func.id in viz
            ):
                problems.append(
                    f"cell {index}: {call.func.id}(...) is statement {position + 1} of {len(body)}"
                )
    return problems


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_no_chapter_builds_a_figure_it_does_not_show(path):
    assert discarded_figures(path) == []


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_a_cell_ending_in_a_builder_call_saved_a_figure(path):
    cells = _code_cells(path)
    viz: set[str] = set()
    for _, source, _ in cells:
        viz |= _viz_names(ast.parse(source))
    for index, source, outputs in cells:
        body = ast.parse(source).body
        last = body[-1] if body else None
        if (
            isinstance(last, ast.Expr)
            and isinstance(last.value, ast.Call)
            and isinstance(last.value.func, ast.Name)
            and last.value.func.id in viz
            and last.value.func.id.endswith(("_figure", "_slider", "_diagram"))
        ):
            kinds = {k for o in outputs for k in o.get("data", {})}
            assert "application/vnd.plotly.v1+json" in kinds, f"cell {index}: no figure saved"


def test_the_check_finds_a_discarded_figure(tmp_path):
    nb = {
        "cells": [
            {
                "cell_type": "code",
                "source": "from lib.viz.rope import wavelength_figure\n",
                "outputs": [],
            },
            {"cell_type": "code", "source": "wavelength_figure(x)\nglue('a', 1)\n", "outputs": []},
            {"cell_type": "code", "source": "glue('a', 1)\nwavelength_figure(x)\n", "outputs": []},
        ]
    }
    path = tmp_path / "nb.ipynb"
    path.write_text(json.dumps(nb), encoding="utf-8")
    assert discarded_figures(path) == ["cell 1: wavelength_figure(...) is statement 1 of 2"]
