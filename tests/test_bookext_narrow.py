"""bookext.narrow: how a side-by-side figure stacks its panels on a phone (pure layout arithmetic)."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import plotly.graph_objects as go
import pytest
from plotly.subplots import make_subplots

from bookext.narrow import MIN_PANEL_HEIGHT, NARROW_WIDTH, PANEL_GAP, panels, stacked_update
from bookext.plotly_mime import PLOTLY_MIME, figure_html

ROOT = Path(__file__).resolve().parents[1]


def side_by_side(n: int = 3, height: int = 440, heatmap: bool = False) -> dict:
    fig = make_subplots(rows=1, cols=n, subplot_titles=[f"panel {i}" for i in range(n)])
    for i in range(n):
        trace = go.Heatmap(z=[[1, 2], [3, 4]]) if heatmap else go.Scatter(x=[0, 1], y=[i, i + 1])
        fig.add_trace(trace, row=1, col=i + 1)
    fig.update_layout(height=height, margin={"t": 60, "b": 50}, legend={"y": 1.2})
    return fig.to_plotly_json()


def test_side_by_side_panels_are_found_left_to_right():
    assert panels(side_by_side(3)) == [
        ("xaxis", "yaxis"),
        ("xaxis2", "yaxis2"),
        ("xaxis3", "yaxis3"),
    ]


def test_a_single_panel_or_stacked_rows_are_left_alone():
    one = go.Figure(go.Scatter(x=[0, 1], y=[0, 1])).to_plotly_json()
    rows = make_subplots(rows=2, cols=1)
    rows.add_trace(go.Scatter(x=[0], y=[0]), row=1, col=1)
    rows.add_trace(go.Scatter(x=[0], y=[0]), row=2, col=1)
    assert stacked_update(one) is None
    assert stacked_update(rows.to_plotly_json()) is None


def test_a_grid_of_two_rows_is_left_alone():
    grid = make_subplots(rows=2, cols=2)
    for r in (1, 2):
        for c in (1, 2):
            grid.add_trace(go.Scatter(x=[0], y=[0]), row=r, col=c)
    assert stacked_update(grid.to_plotly_json()) is None


def test_a_secondary_y_axis_is_one_panel_with_its_primary():
    fig = make_subplots(specs=[[{"secondary_y": True}]])
    fig.add_trace(go.Scatter(x=[0], y=[0]))
    fig.add_trace(go.Scatter(x=[0], y=[1]), secondary_y=True)
    assert stacked_update(fig.to_plotly_json()) is None


def test_stacked_panels_are_full_width_equal_height_top_to_bottom_with_gaps():
    fig = side_by_side(3, height=440)
    upd = stacked_update(fig)
    assert upd is not None
    lay = upd["layout"]
    old_plot = 440 - 60 - 50
    panel = max(old_plot, MIN_PANEL_HEIGHT)
    new_plot = 3 * panel + 2 * PANEL_GAP
    assert upd["height"] == lay["height"] == 60 + 50 + new_plot
    doms = [lay[f"yaxis{s}.domain"] for s in ("", "2", "3")]
    assert all(lay[f"xaxis{s}.domain"] == [0, 1] for s in ("", "2", "3"))
    # Top to bottom, each as tall as before (in px), a PANEL_GAP px gap between neighbours.
    assert doms[0][1] == 1 and doms[2][0] == 0
    for d in doms:
        assert (d[1] - d[0]) * new_plot == pytest.approx(panel, abs=0.1)
    for upper, lower in itertools.pairwise(doms):
        assert (upper[0] - lower[1]) * new_plot == pytest.approx(PANEL_GAP, abs=0.1)


def test_subplot_titles_move_to_the_top_of_their_own_panel_centred():
    fig = side_by_side(3)
    upd = stacked_update(fig)
    lay = upd["layout"]
    titles = [a["text"] for a in fig["layout"]["annotations"]]
    assert titles == ["panel 0", "panel 1", "panel 2"]
    for j, s in enumerate(("", "2", "3")):
        assert lay[f"annotations[{j}].x"] == pytest.approx(0.5, abs=1e-3)
        assert lay[f"annotations[{j}].y"] == pytest.approx(lay[f"yaxis{s}.domain"][1], abs=1e-3)


def test_things_above_the_plot_keep_their_distance_in_pixels():
    fig = side_by_side(3, height=440)
    upd = stacked_update(fig)
    old_plot = 440 - 60 - 50
    new_plot = upd["height"] - 60 - 50
    # The legend 0.2 of the old plot height above it: the same pixels above the new one.
    assert (upd["layout"]["legend.y"] - 1) * new_plot == pytest.approx(0.2 * old_plot, abs=0.1)


def test_each_heatmaps_colour_bar_sits_beside_its_own_panel():
    fig = side_by_side(2, heatmap=True)
    upd = stacked_update(fig)
    for t, s in ((0, ""), (1, "2")):
        dom = upd["layout"][f"yaxis{s}.domain"]
        bar = upd["data"][t]
        assert bar["colorbar.y"] == pytest.approx((dom[0] + dom[1]) / 2, abs=1e-3)
        assert bar["colorbar.len"] == pytest.approx(dom[1] - dom[0], abs=1e-3)
        assert bar["colorbar.x"] > 1


def test_figure_html_carries_the_stacked_layout_for_narrow_columns_only_when_side_by_side():
    html = figure_html(side_by_side(2), "f")
    start = html.index('data-narrow="') + len('data-narrow="')
    import html as html_lib

    plan = json.loads(html_lib.unescape(html[start : html.index('"', start)]))
    assert plan["below"] == NARROW_WIDTH
    assert plan["height"] == plan["layout"]["height"]
    single = go.Figure(go.Scatter(x=[0], y=[0])).to_plotly_json()
    assert "data-narrow" not in figure_html(single, "g")


def test_every_side_by_side_chapter_figure_gets_a_stacked_layout():
    # The book's multi-panel figures (ch1, ch2, ch5, ch6, ch7, ch8, ch9, ch11) are all found.
    found = 0
    for nb in sorted((ROOT / "chapters").glob("*.ipynb")):
        for cell in json.loads(nb.read_text(encoding="utf-8"))["cells"]:
            for out in cell.get("outputs", []):
                fig = out.get("data", {}).get(PLOTLY_MIME)
                if fig is None:
                    continue
                xs = {
                    tuple(v.get("domain") or (0, 1))
                    for k, v in fig["layout"].items()
                    if k.startswith("xaxis") and isinstance(v, dict)
                }
                if len(xs) > 1:
                    assert stacked_update(fig) is not None, (nb.name, xs)
                    found += 1
    assert found >= 15
