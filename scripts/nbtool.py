"""Authoring helper for the book's notebooks: create from a percent-format script, execute in place.

    python scripts/nbtool.py from-percent chapters/src.py chapters/08_rope.ipynb
    python scripts/nbtool.py execute chapters/08_rope.ipynb [more.ipynb ...]

``from-percent`` reads cells separated by ``# %%`` lines (``# %% [markdown]`` for prose, whose lines
start with ``# ``); ``# %% tags=["hide-input"]`` sets cell tags. ``execute`` runs a notebook top to
bottom in a fresh kernel started in ``chapters/`` (as the book build and nbval do) and saves outputs,
with execution timestamps removed so diffs show only real changes.
"""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

import nbformat

CELL_RE = re.compile(r"^# %%(?P<md> \[markdown\])?(?:\s+tags=(?P<tags>\[.*\]))?\s*$")


def from_percent(src: Path, dest: Path) -> None:
    cells: list = []
    kind, tags, lines = None, [], []

    def flush() -> None:
        if kind is None:
            return
        text = "\n".join(lines).strip("\n")
        if kind == "markdown":
            text = "\n".join(re.sub(r"^# ?", "", line) for line in text.splitlines())
            cell = nbformat.v4.new_markdown_cell(text)
        else:
            cell = nbformat.v4.new_code_cell(text)
        if tags:
            cell.metadata["tags"] = tags
        cells.append(cell)

    for line in src.read_text().splitlines():
        match = CELL_RE.match(line)
        if match:
            flush()
            kind = "markdown" if match.group("md") else "code"
            tags = ast.literal_eval(match.group("tags")) if match.group("tags") else []
            lines = []
        elif kind is not None:
            lines.append(line)
    flush()
    nb = nbformat.v4.new_notebook(cells=cells)
    nb.metadata = {
        "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
        "language_info": {"name": "python"},
    }
    for i, cell in enumerate(nb.cells):
        cell.id = f"cell-{i:03d}"
    nbformat.write(nb, dest)


def clean(nb: nbformat.NotebookNode) -> None:
    """Drop volatile metadata (timestamps, widget state) so saved notebooks diff cleanly."""
    nb.metadata.pop("widgets", None)
    nb.metadata["language_info"] = {"name": "python"}
    for i, cell in enumerate(nb.cells):
        cell.id = f"cell-{i:03d}"
        cell.metadata.pop("execution", None)


def execute(path: Path) -> None:
    from nbclient import NotebookClient

    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(
        nb,
        timeout=600,
        kernel_name="python3",
        resources={"metadata": {"path": str(path.parent)}},
        store_widget_state=False,
        record_timing=False,
    )
    client.execute()
    clean(nb)
    nbformat.write(nb, path)


def main(argv: list[str]) -> int:
    if len(argv) >= 3 and argv[0] == "from-percent":
        from_percent(Path(argv[1]), Path(argv[2]))
    elif len(argv) >= 2 and argv[0] == "execute":
        for name in argv[1:]:
            execute(Path(name))
            print(f"executed {name}")
    else:
        print(__doc__)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
