"""Every ipywidgets control still works after "Run All".

A chapter that builds a live control (a slider whose callback redraws a figure) must not rebind,
in a later cell, a name the callback uses: after Run All the callback would then fail the first
time a reader moves the control. This test runs each such chapter top to bottom in a fresh kernel
(as the book build does), then fires every ``value`` observer of every live widget once.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

CHAPTERS = Path(__file__).resolve().parents[1] / "chapters"

#: Runs after the chapter's last cell: calls every value observer with an unchanged value.
PROBE = """
from ipywidgets.widgets.widget import _instances as _live_widgets
from traitlets import Bunch as _Bunch

_fired = 0
for _w in list(_live_widgets.values()):
    for _handler in list(_w._trait_notifiers.get("value", {}).get("change", [])):
        _handler(_Bunch(name="value", old=_w.value, new=_w.value, owner=_w, type="change"))
        _fired += 1
print(f"fired {_fired} widget callbacks")
"""


def _chapters_with_widgets() -> list[Path]:
    found = []
    for path in sorted(CHAPTERS.glob("*.ipynb")):
        cells = json.loads(path.read_text())["cells"]
        code = "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "code")
        if re.search(r"^\s*import ipywidgets|^\s*from ipywidgets", code, re.MULTILINE):
            found.append(path)
    return found


def test_some_chapter_has_a_widget():
    """The test below must not pass vacuously: the book keeps at least one live control."""
    assert _chapters_with_widgets(), "no chapter imports ipywidgets any more"


@pytest.mark.parametrize("path", _chapters_with_widgets(), ids=lambda p: p.stem)
def test_widget_callbacks_work_after_run_all(path: Path):
    nb = nbformat.read(path, as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs = []
    nb.cells.append(nbformat.v4.new_code_cell(PROBE))
    client = NotebookClient(
        nb,
        timeout=600,
        kernel_name="python3",
        resources={"metadata": {"path": str(CHAPTERS)}},
        store_widget_state=False,
    )
    client.execute()  # raises CellExecutionError, naming the cell, if any callback fails
    printed = "".join(o.get("text", "") for o in nb.cells[-1].outputs)
    match = re.search(r"fired (\d+) widget callbacks", printed)
    assert match, f"the probe printed {printed!r}"
    assert int(match.group(1)) > 0, f"{path.name} imports ipywidgets but no callback was fired"
