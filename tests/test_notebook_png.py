"""The static matplotlib rendering saved beside every plotly figure (bookext.notebook_png).

Per trace type, the picture shows what the figure opens with (the colours of the visible traces
and none of the hidden ones); it is deterministic, small and free of metadata; the plotly renderer
puts it beside unchanged plotly JSON; and every figure saved in a chapter has its picture.
"""

from __future__ import annotations

import base64
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import plotly.graph_objects as go
import plotly.io as pio
import pytest
from PIL import Image

from bookext.notebook_png import (
    MAX_PNG_BYTES,
    PLOTLY_MIME,
    PNG_MIME,
    RENDERER_NAME,
    check_picture,
    png_chunks,
    render_png,
    use_book_renderer,
)
from lib.viz import OKABE_ITO, apply_theme, heatmap_slider, slider_figure

ROOT = Path(__file__).resolve().parents[1]
# The notebooks whose saved outputs are checked; BOOK_NOTEBOOKS points at re-executed copies.
NOTEBOOKS = Path(os.environ.get("BOOK_NOTEBOOKS", ROOT / "chapters"))
BLUE, ORANGE, GREEN, VERMILLION = (OKABE_ITO[0], OKABE_ITO[1], OKABE_ITO[2], OKABE_ITO[5])


def rgb(hex_colour: str) -> tuple[int, int, int]:
    return tuple(int(hex_colour[i : i + 2], 16) for i in (1, 3, 5))


def pixels_near(png: bytes, colour: str, tol: int = 12) -> int:
    """How many pixels of the picture are within ``tol`` (per channel) of ``colour``."""
    image = np.asarray(Image.open(io.BytesIO(png)).convert("RGB")).astype(int)
    return int((np.abs(image - np.array(rgb(colour))).max(axis=-1) <= tol).sum())


def scatter_figure() -> go.Figure:
    steps = [
        [
            go.Scatter(
                x=[0, 1, 2, 3],
                y=[0, k + 1, 0, k + 1],
                mode="lines+markers",
                name=f"s{k}",
                line={"color": colour, "width": 4},
            )
        ]
        for k, colour in enumerate([BLUE, VERMILLION])
    ]
    fig = slider_figure(steps, ["a", "b"], prefix="step = ")
    fig.add_trace(
        go.Scatter(
            x=[0, 3],
            y=[1, 1],
            mode="lines",
            name="reference",
            line={"color": ORANGE, "width": 4, "dash": "dash"},
        )
    )
    fig.update_xaxes(title="x title")
    fig.update_yaxes(title="y title")
    return apply_theme(fig, title="Scatter title", caption="A scatter caption.", alt="alt")


def test_scatter_shows_the_initial_step_only():
    png = render_png(scatter_figure())
    check_picture(png)
    assert pixels_near(png, BLUE) > 200, "the visible step's line is missing"
    assert pixels_near(png, ORANGE) > 100, "the always-visible reference line is missing"
    assert pixels_near(png, VERMILLION) == 0, "a hidden slider step was drawn"


def test_scatter_later_active_step():
    fig = slider_figure(
        [[go.Scatter(x=[0, 1], y=[0, 1], line={"color": c, "width": 4})] for c in (BLUE, GREEN)],
        ["a", "b"],
        active=1,
    )
    png = render_png(apply_theme(fig, caption="c"))
    assert pixels_near(png, GREEN) > 200
    assert pixels_near(png, BLUE) == 0


def test_heatmap_uses_the_figures_colour_scale():
    # Cividis from its lowest to its highest colour, as the figure's colour scale says.
    z = np.linspace(0, 1, 64).reshape(8, 8)
    fig = heatmap_slider(
        [z, 1 - z], ["one", "two"], colorscale="Cividis", zmid=None, x_title="column", y_title="row"
    )
    png = render_png(apply_theme(fig, caption="A heatmap caption."))
    check_picture(png)
    assert pixels_near(png, "#00224E", tol=20) > 300, "cividis's low end (dark blue) missing"
    assert pixels_near(png, "#FEE838", tol=20) > 300, "cividis's high end (yellow) missing"
    # RdBu_r for the same data: its red end appears, cividis's yellow does not.
    red = heatmap_slider([z * 2 - 1], ["one"], colorscale="RdBu_r", zmid=0.0)
    png_red = render_png(apply_theme(red, caption="c"))
    assert pixels_near(png_red, "#67001F", tol=25) > 300
    assert pixels_near(png_red, "#FEE838", tol=20) == 0


def test_bar_draws_grouped_bars_in_their_colours():
    fig = go.Figure(
        [
            go.Bar(x=["a", "b", "c"], y=[3, 2, 1], name="first", marker={"color": BLUE}),
            go.Bar(x=["a", "b", "c"], y=[1, 2, 3], name="second", marker={"color": ORANGE}),
        ]
    )
    fig.update_layout(barmode="group")
    png = render_png(apply_theme(fig, caption="Bars."))
    check_picture(png)
    blue, orange = pixels_near(png, BLUE), pixels_near(png, ORANGE)
    assert blue > 2000 and orange > 2000
    # The same total height per trace: the two colours cover about the same area.
    assert abs(blue - orange) / max(blue, orange) < 0.1


def test_horizontal_and_stacked_bars():
    fig = go.Figure(
        [
            go.Bar(y=["a", "b"], x=[2, 1], orientation="h", marker={"color": GREEN}),
            go.Bar(y=["a", "b"], x=[1, 2], orientation="h", marker={"color": VERMILLION}),
        ]
    )
    fig.update_layout(barmode="stack")
    png = render_png(apply_theme(fig, caption="c"))
    assert pixels_near(png, GREEN) > 2000 and pixels_near(png, VERMILLION) > 2000


def test_text_title_and_caption_change_the_picture():
    base = render_png(scatter_figure())
    other = scatter_figure().update_layout(title={"text": "Another title entirely"})
    assert render_png(other) != base
    other = scatter_figure().update_layout(meta={"caption": "Another caption.", "alt": "alt"})
    assert render_png(other) != base


def test_subplots_annotations_shapes_and_log_axes():
    from plotly.subplots import make_subplots

    fig = make_subplots(rows=1, cols=2, subplot_titles=["left", "right"])
    fig.add_trace(go.Scatter(x=[1, 10, 100], y=[1, 2, 3], line={"color": BLUE}), 1, 1)
    fig.add_trace(go.Heatmap(z=[[0, 1], [1, 0]], colorscale="Cividis"), 1, 2)
    fig.update_xaxes(type="log", row=1, col=1)
    fig.add_shape(type="rect", x0=2, x1=5, y0=1, y1=2, fillcolor=GREEN, xref="x", yref="y")
    fig.add_annotation(x=10, y=2, text="note", showarrow=True, xref="x", yref="y")
    png = render_png(apply_theme(fig, caption="c"))
    check_picture(png)
    assert pixels_near(png, GREEN) > 300


def test_numpy_data_plotlys_typed_arrays_draw_as_lists_do():
    """plotly encodes numpy arrays as ``{"dtype", "bdata"}`` (with a shape for 2-D data)."""
    z = np.linspace(-1, 1, 12).reshape(3, 4)
    y = np.array([0.5, 2.0, 1.0])

    def figure(array):
        fig = go.Figure(go.Heatmap(z=array(z), colorscale="RdBu_r"))
        fig.add_trace(go.Scatter(y=array(y), line={"color": GREEN, "width": 4}))
        return apply_theme(fig, caption="c")

    encoded = json.loads(pio.to_json(figure(np.asarray)))
    assert "bdata" in encoded["data"][0]["z"] and "bdata" in encoded["data"][1]["y"]
    png = render_png(encoded)
    assert png == render_png(figure(lambda a: a.tolist()).to_plotly_json())
    assert pixels_near(png, GREEN) > 100


def test_png_is_small_deterministic_and_has_no_metadata():
    fig = scatter_figure()
    first, second = render_png(fig), render_png(fig)
    assert first == second
    assert len(first) <= MAX_PNG_BYTES
    chunks = png_chunks(first)
    assert chunks[0] == "IHDR" and chunks[-1] == "IEND"
    assert not {"tEXt", "zTXt", "iTXt", "tIME"} & set(chunks)
    assert Image.open(io.BytesIO(first)).size[0] == pytest.approx(720, abs=80)


def test_png_is_byte_identical_in_a_fresh_process():
    fig_json = pio.to_json(scatter_figure())
    code = (
        "import sys, json; from bookext.notebook_png import render_png; "
        "sys.stdout.buffer.write(render_png(json.loads(sys.stdin.read())))"
    )
    env = {**os.environ, "PYTHONHASHSEED": "123"}
    out = subprocess.run(
        [sys.executable, "-c", code],
        input=fig_json.encode(),
        capture_output=True,
        env=env,
        cwd=ROOT,
        check=True,
    ).stdout
    assert out == render_png(json.loads(fig_json))


def test_check_picture_rejects_blank_and_one_colour_pictures():
    for colour in ("white", (0, 114, 178)):
        buffer = io.BytesIO()
        Image.new("RGB", (720, 400), colour).save(buffer, format="PNG")
        with pytest.raises(ValueError, match="blank or all one colour"):
            check_picture(buffer.getvalue())
    # Two colours only (a single flat line on white) is still "nothing to see".
    image = Image.new("RGB", (720, 400), "white")
    image.paste((0, 0, 0), (0, 200, 720, 202))
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    with pytest.raises(ValueError, match="blank or all one colour"):
        check_picture(buffer.getvalue())
    with pytest.raises(ValueError, match="must be the bytes of a PNG"):
        check_picture(b"not a png")


def test_check_picture_rejects_metadata_and_large_files():
    from PIL import PngImagePlugin

    good = render_png(scatter_figure())
    info = PngImagePlugin.PngInfo()
    info.add_text("Software", "matplotlib")
    buffer = io.BytesIO()
    Image.open(io.BytesIO(good)).save(buffer, format="PNG", pnginfo=info)
    with pytest.raises(ValueError, match="tEXt"):
        check_picture(buffer.getvalue())
    noise = np.random.default_rng(0).integers(0, 256, (400, 720, 3), dtype=np.uint8)
    buffer = io.BytesIO()
    Image.fromarray(noise).save(buffer, format="PNG")
    with pytest.raises(ValueError, match="limit"):
        check_picture(buffer.getvalue())


def test_bad_input_gets_a_clear_error():
    with pytest.raises(TypeError, match="figure must be"):
        render_png(42)
    with pytest.raises(ValueError, match="trace types"):
        render_png({"data": [{"type": "pie", "values": [1, 2]}], "layout": {}})


def test_renderer_adds_the_png_and_keeps_the_plotly_json():
    use_book_renderer()
    fig = scatter_figure()
    book = pio.renderers[RENDERER_NAME].to_mimebundle(fig.to_plotly_json())
    plain = pio.renderers["plotly_mimetype"].to_mimebundle(fig.to_plotly_json())
    assert set(book) == {PLOTLY_MIME, PNG_MIME}
    assert book[PLOTLY_MIME] == plain[PLOTLY_MIME]
    png = base64.b64decode(book[PNG_MIME])
    assert png == render_png(fig)


def test_renderer_is_the_default_in_a_jupyter_kernel():
    old = pio.renderers.default
    try:
        pio.renderers.default = "plotly_mimetype"  # what plotly picks in an ipykernel
        assert use_book_renderer()
        assert pio.renderers.default == RENDERER_NAME
        pio.renderers.default = "browser"  # anything else is left alone
        assert not use_book_renderer()
        assert pio.renderers.default == "browser"
    finally:
        pio.renderers.default = old


def test_importing_lib_viz_registers_no_renderer():
    """Only ``make execute`` saves PNGs: a reader's kernel importing lib.viz keeps plotly's own."""
    code = (
        "import plotly.io as pio; pio.renderers.default = 'plotly_mimetype'; import lib.viz; "
        "print(pio.renderers.default, RENDERER in pio.renderers)"
    ).replace("RENDERER", repr(RENDERER_NAME))
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True
    ).stdout
    assert out.split() == ["plotly_mimetype", "False"]


def saved_figures(notebook: Path) -> list[tuple[int, dict]]:
    nb = json.loads(notebook.read_text())
    return [
        (index, output["data"])
        for index, cell in enumerate(nb["cells"])
        for output in cell.get("outputs", [])
        if PLOTLY_MIME in output.get("data", {})
    ]


CHAPTERS = sorted(NOTEBOOKS.glob("*.ipynb"))


@pytest.mark.parametrize("notebook", CHAPTERS, ids=[p.stem for p in CHAPTERS])
def test_renderer_draws_every_figure_of_the_book(notebook):
    """Every plotly figure saved in the chapter renders to a picture worth showing."""
    for cell, data in saved_figures(notebook):
        try:
            check_picture(render_png(data[PLOTLY_MIME]))
        except ValueError as error:
            raise AssertionError(f"{notebook.name} cell {cell}: {error}") from error


@pytest.mark.parametrize("notebook", CHAPTERS, ids=[p.stem for p in CHAPTERS])
def test_every_saved_figure_has_its_png(notebook):
    """Each plotly output in the saved notebook carries its static picture (re-execute to add)."""
    figures = saved_figures(notebook)
    assert figures, f"{notebook.name} saves no plotly figure"
    missing = [cell for cell, data in figures if PNG_MIME not in data]
    assert not missing, (
        f"{notebook.name}: plotly outputs without image/png in cells {missing}; "
        f"re-execute the chapter (make execute NB={notebook.relative_to(NOTEBOOKS.parent)})"
    )
    for cell, data in figures:
        try:
            check_picture(base64.b64decode(data[PNG_MIME]))
        except ValueError as error:
            raise AssertionError(f"{notebook.name} cell {cell}: {error}") from error
