"""Tests for lib.viz.learned: the three figures (the similarity helpers: tests/test_similarity.py).

Expected values come from hand-made tables whose similarities are known exactly (orthogonal or
parallel rows, unit circles), and from the closed form of the sinusoidal table, never from the
function under test.
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
import pytest
import torch

from lib.similarity import mean_similarity_by_offset
from lib.viz.core import DIVERGING, OKABE_ITO
from lib.viz.learned import components_slider, offset_similarity_curves, similarity_window_slider

# rows: e0, 2·e0, e1, −e0  ->  known cosines
TABLE = torch.tensor([[1.0, 0.0], [2.0, 0.0], [0.0, 3.0], [-1.0, 0.0]])
TABLE_COS = [
    [1.0, 1.0, 0.0, -1.0],
    [1.0, 1.0, 0.0, -1.0],
    [0.0, 0.0, 1.0, 0.0],
    [-1.0, -1.0, 0.0, 1.0],
]


def circle(n: int, omega: float) -> torch.Tensor:
    """Row p = (cos pω, sin pω): cos(P[p], P[q]) = cos((p − q)ω) exactly."""
    p = torch.arange(n, dtype=torch.float64)
    return torch.stack([torch.cos(p * omega), torch.sin(p * omega)], dim=1)


# --- similarity_window_slider ------------------------------------------------------------------------


def test_similarity_window_slider_windows_and_overview():
    fig = similarity_window_slider(TABLE, [(0, 2), (1, 4)], overview_stride=2, caption="cap")
    assert len(fig.data) == 3
    assert [t.visible for t in fig.data] == [True, False, False]
    first, second, overview = fig.data
    assert list(first.x) == [0, 1] and list(first.y) == [0, 1]
    assert first.z == ([1.0, 1.0], [1.0, 1.0])
    assert list(second.x) == [1, 2, 3]
    assert second.z == ([1.0, 0.0, -1.0], [0.0, 1.0, 0.0], [-1.0, 0.0, 1.0])
    assert list(overview.x) == [0, 2]  # every 2nd position
    assert overview.z == ([1.0, 0.0], [0.0, 1.0])
    labels = [s.label for s in fig.layout.sliders[0].steps]
    assert labels == ["0–1", "1–3", "all, every 2th"]
    for t in fig.data:
        assert (t.zmin, t.zmax) == (-1.0, 1.0)
        assert t.colorscale == fig.data[0].colorscale
    assert fig.layout.yaxis.autorange == "reversed"
    assert fig.layout.meta["caption"] == "cap"


def test_similarity_window_slider_rounds_to_digits():
    table = circle(3, 0.1)  # cos(0.1) = 0.995004..., cos(0.2) = 0.980066...
    fig = similarity_window_slider(table, [(0, 3)], digits=2)
    assert list(fig.data[0].z[0]) == [1.0, 1.0, 0.98]
    fig = similarity_window_slider(table, [(0, 3)])
    assert list(fig.data[0].z[0]) == [1.0, 0.995, 0.98]


def test_similarity_window_slider_uses_diverging_scale():
    fig = similarity_window_slider(TABLE, [(0, 4)])
    assert fig.data[0].colorscale == go.Heatmap(colorscale=DIVERGING).colorscale


@pytest.mark.parametrize(
    ("windows", "kwargs", "match"),
    [
        ([], {}, "windows"),
        ("0-4", {}, "windows"),
        ([(0, 5)], {}, "windows"),
        ([(2, 2)], {}, "windows"),
        ([(0, 1, 2)], {}, "windows"),
        ([(0, 4)], {"overview_stride": 0}, "overview_stride"),
        ([(0, 4)], {"active": 1}, "active"),
        ([(0, 4)], {"digits": 0}, "digits"),
    ],
)
def test_similarity_window_slider_errors(windows, kwargs, match):
    with pytest.raises(ValueError, match=match):
        similarity_window_slider(TABLE, windows, **kwargs)


# --- offset_similarity_curves ----------------------------------------------------------------------


def test_offset_similarity_curves_lines_in_order():
    curves = {"a": torch.tensor([1.0, 0.5, 0.123456]), "b": torch.tensor([1.0, 0.0, 0.0])}
    fig = offset_similarity_curves(curves, caption="cap", alt="alt")
    a, b = fig.data
    assert list(a.x) == [0, 1, 2] and list(a.y) == [1.0, 0.5, 0.1235]
    assert (a.name, b.name) == ("a", "b")
    assert (a.line.color, b.line.color) == OKABE_ITO[:2]
    assert fig.layout.shapes[0].y0 == 0.0  # the zero line
    assert fig.layout.height == 440
    assert fig.layout.meta == {"caption": "cap", "alt": "alt"}


def test_offset_similarity_curves_errors():
    with pytest.raises(ValueError, match="curves"):
        offset_similarity_curves({})
    with pytest.raises(TypeError, match="curves"):
        offset_similarity_curves({"a": [1.0, 0.5]})
    with pytest.raises(ValueError, match="1-D"):
        offset_similarity_curves({"a": torch.ones(2, 2)})


# --- components_slider -----------------------------------------------------------------------------


def test_components_slider_steps_and_titles():
    scores = torch.tensor([[1.0, -2.0], [0.5, 0.25], [-1.0, 4.0]])
    share = torch.tensor([0.6, 0.25])
    fig = components_slider(scores, share, first=1, periods=[5.67, 170.0], zoom=None, caption="cap")
    assert len(fig.data) == 2
    assert list(fig.data[0].x) == [1, 2, 3]  # positions start at `first`
    assert list(fig.data[1].y) == [-2.0, 0.25, 4.0]
    titles = [s.args[1]["title.text"] for s in fig.layout.sliders[0].steps]
    assert titles == [
        "PC 1: 60.0 % of the variance, dominant period ≈ 5.7 positions",
        "PC 2: 25.0 % of the variance, dominant period ≈ 170.0 positions",
    ]
    assert fig.layout.title.text == titles[0]
    assert list(fig.layout.yaxis.range) == pytest.approx([-4.2, 4.2])  # shared range
    assert fig.layout.meta["caption"] == "cap"
    assert fig.layout.height == 500  # the site keeps the author's height


def test_components_slider_zoom_panel():
    scores = torch.arange(10.0).reshape(5, 2)  # positions 3..7, two components
    fig = components_slider(scores, torch.tensor([0.5, 0.5]), first=3, zoom=2)
    assert len(fig.data) == 4  # per step: full curve + zoomed curve
    full, zoomed = fig.data[2:4]  # step 2 (component 2)
    assert list(full.x) == [3, 4, 5, 6, 7] and list(full.y) == [1.0, 3.0, 5.0, 7.0, 9.0]
    assert list(zoomed.x) == [3, 4] and list(zoomed.y) == [1.0, 3.0]
    assert (zoomed.xaxis, zoomed.yaxis) == ("x2", "y2")
    assert fig.layout.xaxis2.title.text == "the first 2 positions"
    assert fig.layout.yaxis2.matches == "y"
    assert list(fig.layout.sliders[0].steps[1].args[0]["visible"]) == [False, False, True, True]
    # a zoom longer than the table shows the whole table
    fig = components_slider(scores, torch.tensor([0.5, 0.5]), zoom=100)
    assert len(fig.data[1].x) == 5


def test_components_slider_without_periods_and_active():
    fig = components_slider(torch.ones(4, 3), torch.tensor([0.5, 0.3, 0.2]), active=2)
    assert fig.layout.sliders[0].active == 2
    assert fig.layout.title.text == "PC 3: 20.0 % of the variance"


def test_components_slider_errors():
    with pytest.raises(ValueError, match="share"):
        components_slider(torch.ones(4, 2), torch.ones(3))
    with pytest.raises(ValueError, match="scores"):
        components_slider(torch.ones(4), torch.ones(4))
    with pytest.raises(ValueError, match="periods"):
        components_slider(torch.ones(4, 2), torch.ones(2), periods=[1.0])
    with pytest.raises(ValueError, match="first"):
        components_slider(torch.ones(4, 2), torch.ones(2), first=-1)
    with pytest.raises(ValueError, match="active"):
        components_slider(torch.ones(4, 2), torch.ones(2), active=2)
    with pytest.raises(TypeError, match="scores"):
        components_slider(np.ones((4, 2)), torch.ones(2))
    with pytest.raises(ValueError, match="zoom"):
        components_slider(torch.ones(4, 2), torch.ones(2), zoom=1)


# --- against the real table (transformers is installed; the weights come from a package) ----------


def test_real_minilm_table_neighbours_are_similar():
    from safetensors import safe_open

    from lib.pretrained import minilm_path

    with safe_open(str(minilm_path() / "model.safetensors"), "pt") as f:
        table = f.get_tensor("embeddings.position_embeddings.weight")  # [512, 384]
    assert table.shape == (512, 384)
    curve = mean_similarity_by_offset(table, 3, first=1)
    unit = table[1:] / table[1:].norm(dim=-1, keepdim=True)
    by_hand = (unit[:-1] * unit[1:]).sum(-1).double().mean()
    assert curve[1].item() == pytest.approx(by_hand.item(), abs=1e-6)
    assert curve[1] > 0.5  # trained: neighbours are alike (random rows would give ~0)
