"""scripts/nbtool.py: outputs that re-execute cleanly, and the chapters' Colab cells."""

from __future__ import annotations

import ast
import contextlib
import importlib.util
import io
import itertools
import re
import sys
from pathlib import Path

import nbformat
import pytest
import tomllib

ROOT = Path(__file__).resolve().parents[1]
CHAPTERS = sorted((ROOT / "chapters").glob("*.ipynb"))

_spec = importlib.util.spec_from_file_location("nbtool", ROOT / "scripts" / "nbtool.py")
nbtool = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(nbtool)


def _stream(name: str, text):
    return nbformat.v4.new_output("stream", name=name, text=text)


def test_merge_streams_joins_consecutive_outputs_of_one_stream_only():
    outputs = [
        _stream("stdout", "a\n"),
        _stream("stdout", ["b", "\n"]),
        _stream("stderr", "warn\n"),
        _stream("stdout", "c\n"),
        nbformat.v4.new_output("display_data", data={"text/plain": "x"}),
        _stream("stdout", "d\n"),
        _stream("stdout", "e\n"),
    ]
    merged = nbtool.merge_streams(outputs)
    assert [(o.output_type, o.get("name"), o.get("text")) for o in merged] == [
        ("stream", "stdout", "a\nb\n"),
        ("stream", "stderr", "warn\n"),
        ("stream", "stdout", "c\n"),
        ("display_data", None, None),
        ("stream", "stdout", "d\ne\n"),
    ]


def _widget_notebook(ids: list[str]) -> nbformat.NotebookNode:
    cells = []
    for model_id in ids:
        cell = nbformat.v4.new_code_cell("w")
        view = {"model_id": model_id, "version_major": 2, "version_minor": 0}
        cell.outputs = [
            nbformat.v4.new_output(
                "execute_result", data={nbtool.WIDGET_MIME: view}, execution_count=1
            )
        ]
        cells.append(cell)
    return nbformat.v4.new_notebook(cells=cells)


def _ids(nb) -> list[str]:
    return [c.outputs[0]["data"][nbtool.WIDGET_MIME]["model_id"] for c in nb.cells]


def test_widget_ids_are_normalised_deterministically_and_stay_distinct():
    first, second = (
        _widget_notebook(["aa" * 16, "bb" * 16]),
        _widget_notebook(["cc" * 16, "dd" * 16]),
    )
    nbtool.normalise_widget_ids(first, "08_rope")
    nbtool.normalise_widget_ids(second, "08_rope")
    assert _ids(first) == _ids(second)  # random ids from two runs map to the same saved ids
    assert len(set(_ids(first))) == 2
    assert all(re.fullmatch(r"[0-9a-f]{32}", i) for i in _ids(first))
    other = _widget_notebook(["aa" * 16, "bb" * 16])
    nbtool.normalise_widget_ids(other, "10_mrope")
    assert set(_ids(other)).isdisjoint(_ids(first))  # two chapters never share an id


@pytest.mark.parametrize("name", ["06_sinusoidal", "08_rope"])
def test_re_executing_an_executed_chapter_changes_nothing(tmp_path, name):
    """Chapter 6 prints in several blocks (split run to run), chapter 8 has an ipywidgets control.

    Executing the saved chapter must give the saved file byte for byte, so `make execute` on an
    unchanged chapter leaves git clean (one execution compared with the committed outputs; the
    previous version executed twice and compared the runs, twice the time for the same check).
    """
    source = ROOT / "chapters" / f"{name}.ipynb"
    first = tmp_path / source.name
    nbtool.execute(source, dest=first, cwd=source.parent)
    assert first.read_text() == source.read_text()
    nb = nbformat.read(first, as_version=4)
    for cell in nb.cells:
        kinds = [o.output_type for o in cell.get("outputs", [])]
        pairs = zip(cell.get("outputs", []), cell.get("outputs", [])[1:], strict=False)
        assert not any(
            a.output_type == b.output_type == "stream" and a.name == b.name for a, b in pairs
        ), f"{name} {cell.id}: unmerged streams {kinds}"


def test_execute_saves_a_png_beside_each_figure_and_leaves_no_trace(tmp_path):
    """`make execute`'s kernel registers bookext.notebook_png before the first cell: the saved
    figure carries the PNG render_png draws of its JSON, and the chapter sees no extra cell,
    execution count or name."""
    import base64

    from bookext.notebook_png import render_png

    nb = nbformat.v4.new_notebook(
        cells=[
            nbformat.v4.new_code_cell(
                "import plotly.graph_objects as go\ngo.Figure(go.Scatter(x=[0, 1, 2], y=[0, 2, 1]))"
            ),
            nbformat.v4.new_code_cell(
                "print(sorted(k for k in dir() if not k.startswith('_')), '_u' in dir())"
            ),
        ]
    )
    path = tmp_path / "toy.ipynb"
    nbformat.write(nb, path)
    nbtool.execute(path, cwd=ROOT / "chapters")
    saved = nbformat.read(path, as_version=4)
    (figure,) = saved.cells[0].outputs
    assert [c.execution_count for c in saved.cells] == [1, 2]
    png = base64.b64decode(figure.data[nbtool.PNG_MIME])
    assert png == render_png(figure.data[nbtool.PLOTLY_MIME])
    names = saved.cells[1].outputs[0].text
    assert names.strip() == "['In', 'Out', 'exit', 'get_ipython', 'go', 'open', 'quit'] False"


def test_figures_without_png_names_their_cells():
    plotly = {nbtool.PLOTLY_MIME: {"data": [], "layout": {}}}
    cells = [nbformat.v4.new_code_cell("x") for _ in range(3)]
    cells[0].outputs = [nbformat.v4.new_output("display_data", data=plotly)]
    cells[1].outputs = [nbformat.v4.new_output("stream", name="stdout", text="a")]
    cells[2].outputs = [
        nbformat.v4.new_output("display_data", data={**plotly, nbtool.PNG_MIME: "iVBO"})
    ]
    assert nbtool.figures_without_png(nbformat.v4.new_notebook(cells=cells)) == [0]


# --------------------------------------------------------------------------------------------------
# Colab cells


def _toy_notebook(code: str) -> nbformat.NotebookNode:
    nb = nbformat.v4.new_notebook(
        cells=[nbformat.v4.new_markdown_cell("# Title"), nbformat.v4.new_code_cell(code)]
    )
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    return nb


def test_colab_cell_is_inserted_first_tagged_and_idempotent(tmp_path):
    path = tmp_path / "toy.ipynb"
    nbformat.write(_toy_notebook("from lib.pretrained import load_minilm"), path)
    assert nbtool.colab_cell(path) is True
    nb = nbformat.read(path, as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert nbtool.is_colab_cell(code[0]) and code[0].metadata["tags"] == ["remove-cell"]
    assert sum(nbtool.is_colab_cell(c) for c in nb.cells) == 1
    assert nb.cells[0].cell_type == "markdown"  # the title stays first
    assert (
        f"embeddings-book-lib[pretrained] @ git+{{_repo}}@{nbtool.release_tag()}" in code[0].source
    )
    before = path.read_text()
    assert nbtool.colab_cell(path) is False  # a second run changes nothing
    assert path.read_text() == before


def test_colab_cell_is_refreshed_when_stale(tmp_path):
    path = tmp_path / "toy.ipynb"
    nb = _toy_notebook("import torch")
    stale = nbformat.v4.new_code_cell(nbtool.colab_source(["pretrained"], tag="v0.0.1"))
    nb.cells.append(stale)  # stale and in the wrong place
    nbformat.write(nb, path)
    assert nbtool.colab_cell(path) is True
    nb = nbformat.read(path, as_version=4)
    colab = [c for c in nb.cells if nbtool.is_colab_cell(c)]
    assert len(colab) == 1 and nb.cells[1] is colab[0]
    assert colab[0].source == nbtool.colab_source([])


def test_chapter_colab_source_installs_the_no_deps_pins_only_where_lib_smollm_is_used():
    pins = nbtool.nodeps_pins()
    assert pins and all("==" in pin for pin in pins)
    uses = _toy_notebook("from lib.smollm import smollm_config")
    plain = _toy_notebook("import lib.rope")
    assert "--no-deps" in nbtool.chapter_colab_source(uses)
    assert all(repr(pin) in nbtool.chapter_colab_source(uses) for pin in pins)
    assert "--no-deps" not in nbtool.chapter_colab_source(plain)
    assert nbtool.chapter_colab_source(plain) == nbtool.colab_source(nbtool.chapter_extras(plain))


def test_colab_cell_does_nothing_and_prints_nothing_outside_colab():
    assert "google.colab" not in sys.modules
    namespace: dict = {}
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        exec(nbtool.colab_source(["pretrained"]), namespace)
    assert out.getvalue() == err.getvalue() == ""
    assert "_spec" not in namespace  # the install branch did not run
    assert all(line == "" or len(line) <= 88 for line in nbtool.colab_source(["hf"]).splitlines())


@pytest.mark.parametrize(
    ("code", "extras"),
    [
        ("import torch\nimport lib.rope", []),
        ("from lib.pretrained import load_minilm", ["pretrained"]),
        ("import lib.pretrained\nfrom transformers import AutoModel", ["pretrained"]),
        ("from safetensors.torch import save_file", ["hf"]),
        ('importlib.metadata.version("transformers")', ["hf"]),
        ("# transformers calls this rotate_half", []),  # a comment is not a use
    ],
)
def test_chapter_extras_come_from_the_code(code, extras):
    assert nbtool.chapter_extras(_toy_notebook(code)) == extras


def _imported(code: str) -> tuple[set[str], set[str]]:
    """(top-level modules imported, ``lib`` submodules used) by ``code``, read with ``ast``."""
    modules, lib_modules = set(), set()
    source = "\n".join(
        line for line in code.splitlines() if not line.lstrip().startswith(("%", "!"))
    )
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                modules.add(alias.name.split(".")[0])
                if alias.name.startswith("lib."):
                    lib_modules.add(alias.name.split(".")[1])
        elif isinstance(node, ast.ImportFrom) and node.module:
            modules.add(node.module.split(".")[0])
            if node.module == "lib":
                lib_modules |= {alias.name for alias in node.names}
            elif node.module.startswith("lib."):
                lib_modules.add(node.module.split(".")[1])
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "version"
            and node.args
            and isinstance(node.args[0], ast.Constant)
        ):
            modules.add(str(node.args[0].value))  # importlib.metadata.version("transformers")
    return modules, lib_modules


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_each_chapter_gets_the_extras_its_imports_need(path):
    """An oracle independent of nbtool's regexes: the chapter's imports, parsed with ``ast``.

    Every extra's distribution the chapter imports must be installed, and the whole extra named
    after a ``lib`` module it uses; and no more than the smallest set of extras that does so.
    """
    nb = nbformat.read(path, as_version=4)
    code = "\n".join(
        c.source for c in nb.cells if c.cell_type == "code" and not nbtool.is_colab_cell(c)
    )
    modules, lib_modules = _imported(code)
    extras = nbtool.package_extras()
    needed = {d for ds in extras.values() for d in ds if d.replace("-", "_") in modules}
    needed |= {d for name in lib_modules & set(extras) for d in extras[name]}
    chosen = nbtool.chapter_extras(nb)
    installed = {d for name in chosen for d in extras[name]}
    assert needed <= installed, f"{path.stem}: {sorted(needed - installed)} not installed"
    covering = [  # every set of extras that installs what the chapter needs
        {d for name in subset for d in extras[name]}
        for k in range(len(extras) + 1)
        for subset in itertools.combinations(sorted(extras), k)
        if needed <= {d for name in subset for d in extras[name]}
    ]
    smallest = min(len(c) for c in covering)
    assert len(installed) == smallest, f"{path.stem}: {chosen} installs more than needed"


def test_some_chapters_need_each_extra():
    """The oracle above must not pass vacuously: the book uses every extra of pyproject.toml."""
    used = {e for p in CHAPTERS for e in nbtool.chapter_extras(nbformat.read(p, as_version=4))}
    assert used == set(nbtool.package_extras())


def test_extras_pin_what_the_kernel_requirements_pin():
    kernel = {}
    for line in (ROOT / "requirements-kernel.txt").read_text().splitlines():
        name, _, version = line.partition("==")
        if version:
            kernel[name.strip().lower()] = version.strip()
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    for extra, reqs in project["optional-dependencies"].items():
        for req in reqs:
            name, _, version = req.partition("==")
            assert kernel.get(name.lower()) == version, (
                f"[{extra}] {req} vs requirements-kernel.txt"
            )
    assert project["dynamic"] == ["version"]


def test_the_release_tag_is_the_library_version():
    import lib

    assert nbtool.release_tag() == f"v{lib.__version__}"
    assert nbtool.repository_url() == "https://github.com/embeddings-book/embeddings-book"
