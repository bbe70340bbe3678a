"""Tests for lib.viz.sinusoidal: heatmap slider, layout panels, dot-product curves, wavelength slider
and the shift-rotation figure.

Expected values are computed by hand here (math.sin / math.cos of p·base^(−2i/d)), never by calling
lib.sinusoidal, so a figure that drew the wrong data would fail.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from lib.viz.core import OKABE_ITO
from lib.viz.sinusoidal import (
    dot_product_curves,
    layout_heatmaps,
    pe_heatmap_slider,
    shift_rotation_slider,
    wavelength_slider,
)


def hand_table(max_len: int, d: int, base: float = 10000.0) -> torch.Tensor:
    """The paper's interleaved table, one entry at a time with the math module."""
    out = torch.empty(max_len, d, dtype=torch.float64)
    for p in range(max_len):
        for i in range(d // 2):
            angle = p / base ** (2 * i / d)
            out[p, 2 * i], out[p, 2 * i + 1] = math.sin(angle), math.cos(angle)
    return out


def visible(fig, step: int) -> list[bool]:
    return list(fig.layout.sliders[0].steps[step].args[0]["visible"])


# ------------------------------------------------------------------ heatmap slider


def test_heatmap_slider_one_trace_per_base_with_fixed_range():
    tables = [hand_table(5, 4, 100.0), hand_table(5, 4, 10000.0)]
    fig = pe_heatmap_slider(tables, ["100", "10,000"], active=1, caption="cap")
    assert len(fig.data) == 2
    assert [t.visible for t in fig.data] == [False, True]
    assert fig.layout.sliders[0].active == 1
    assert visible(fig, 0) == [True, False]
    for t in fig.data:
        assert (t.zmin, t.zmax) == (-1.0, 1.0)
    # row p = 1, base 100: sin(1), cos(1), sin(0.1), cos(0.1), rounded to 4 significant digits
    assert fig.data[0].z[1] == [0.8415, 0.5403, 0.09983, 0.995]
    assert fig.layout.yaxis.autorange == "reversed"  # position 0 at the top
    assert fig.layout.meta["caption"] == "cap"


def test_heatmap_slider_accepts_different_widths():
    fig = pe_heatmap_slider([hand_table(3, 4), hand_table(3, 8)], ["4", "8"], prefix="d = ")
    assert len(fig.data[0].z[0]) == 4 and len(fig.data[1].z[0]) == 8
    assert fig.layout.sliders[0].currentvalue.prefix == "d = "


def test_heatmap_slider_errors():
    with pytest.raises(ValueError, match="tables must hold at least one"):
        pe_heatmap_slider([], [])
    with pytest.raises(ValueError, match=r"tables\[0\] must be 2-D"):
        pe_heatmap_slider([torch.zeros(3)], ["a"])
    with pytest.raises(TypeError, match=r"tables\[0\] must be a torch.Tensor"):
        pe_heatmap_slider([[[0.0]]], ["a"])
    with pytest.raises(ValueError, match="labels must have 1 entries"):
        pe_heatmap_slider([hand_table(2, 2)], ["a", "b"])


# ------------------------------------------------------------------ layout panels


def test_layout_heatmaps_side_by_side_with_one_colourbar():
    inter = hand_table(4, 4)
    concat = inter[:, [0, 2, 1, 3]]  # a column reorder, by hand
    fig = layout_heatmaps({"interleaved": inter, "concat": concat})
    assert len(fig.data) == 2
    assert [a.text for a in fig.layout.annotations] == ["interleaved", "concat"]
    assert [t.showscale for t in fig.data] == [False, True]
    assert fig.data[1].z[3] == [0.1411, 0.03, -0.99, 0.9996]  # sin 3, sin .03, cos 3, cos .03
    assert fig.data[0].xaxis == "x" and fig.data[1].xaxis == "x2"


def test_layout_heatmaps_errors():
    with pytest.raises(TypeError, match="tables must be a mapping"):
        layout_heatmaps([hand_table(2, 2)])
    with pytest.raises(ValueError, match="tables must hold at least one"):
        layout_heatmaps({})
    with pytest.raises(ValueError, match="same shape"):
        layout_heatmaps({"a": hand_table(2, 2), "b": hand_table(3, 2)})


# ------------------------------------------------------------------ dot-product curves


def test_dot_product_curves_one_line_per_curve():
    k = torch.arange(-2, 3)
    closed = [sum(math.cos(kk / 100 ** (2 * i / 4)) for i in range(2)) for kk in range(-2, 3)]
    fig = dot_product_curves(k, {"closed form": closed, "p = 5": torch.tensor(closed)})
    assert [t.name for t in fig.data] == ["closed form", "p = 5"]
    assert list(fig.data[0].x) == [-2, -1, 0, 1, 2]
    assert fig.data[0].y[2] == 2.0  # k = 0: each pair contributes cos 0 = 1
    assert fig.data[0].y[0] == fig.data[0].y[4]  # symmetric in ±k
    assert fig.data[0].line.color == OKABE_ITO[0] and fig.data[1].line.dash == "dash"


def test_dot_product_curves_errors():
    with pytest.raises(ValueError, match=r"curves\['a'\] must have shape \[3\]"):
        dot_product_curves([0, 1, 2], {"a": [1.0, 2.0]})
    with pytest.raises(TypeError, match="curves must be a mapping"):
        dot_product_curves([0, 1], [[1.0, 2.0]])
    with pytest.raises(ValueError, match="curves must hold at least one"):
        dot_product_curves([0, 1], {})
    with pytest.raises(ValueError, match="offsets must have shape 1-D"):
        dot_product_curves(torch.zeros(2, 2), {"a": [1.0]})
    with pytest.raises(
        TypeError, match=r"offsets must be a torch\.Tensor or numpy array or sequence"
    ):
        dot_product_curves(3, {"a": [1.0]})


# ------------------------------------------------------------------ wavelength slider


def wavelengths(d: int, base: float = 10000.0) -> dict[str, list[float]]:
    h = d // 2
    return {
        "paper": [2 * math.pi * base ** (2 * i / d) for i in range(h)],
        "t2t": [2 * math.pi * base ** (i / (h - 1)) for i in range(h)],
    }


def test_wavelength_slider_steps_and_reference_lines():
    fig = wavelength_slider([4, 8], [wavelengths(4), wavelengths(8)], active=1)
    assert len(fig.data) == 4
    assert [t.visible for t in fig.data] == [False, False, True, True]
    assert [s.label for s in fig.layout.sliders[0].steps] == ["4", "8"]
    assert fig.data[0].y[0] == 6.283  # 2π
    assert fig.data[1].y[-1] == 62830.0  # t2t ends at exactly 2π·base
    assert fig.data[0].y[-1] == 628.3  # paper, d = 4: 2π·base^(2/4)
    assert fig.layout.yaxis.type == "log"
    assert sorted(s.y0 for s in fig.layout.shapes) == [6.283, 62830.0]
    # log axis: annotation positions are log10 of the value
    ys = sorted(a.y for a in fig.layout.annotations)
    assert ys == pytest.approx([math.log10(2 * math.pi), math.log10(2 * math.pi * 1e4)])


def test_wavelength_slider_errors():
    with pytest.raises(ValueError, match="d_models and wavelengths"):
        wavelength_slider([4], [])
    with pytest.raises(ValueError, match=r"wavelengths\[1\] must map the same layout names"):
        wavelength_slider([4, 8], [wavelengths(4), {"paper": wavelengths(8)["paper"]}])
    with pytest.raises(ValueError, match=r"wavelengths\[0\]\['paper'\] must have shape \[2\]"):
        wavelength_slider([4], [{"paper": [1.0, 2.0, 3.0]}])
    with pytest.raises(ValueError, match="base must be > 0"):
        wavelength_slider([4], [wavelengths(4)], base=0.0)


# ------------------------------------------------------------------ shift = rotation


def pair_points(n: int, w: float) -> torch.Tensor:
    return torch.tensor([[math.sin(p * w), math.cos(p * w)] for p in range(n)])


def test_shift_rotation_draws_arrows_from_p_to_p_plus_k():
    pts = pair_points(8, 0.5)
    fig = shift_rotation_slider(pts, [1, 3], starts=[0, 2])
    # static: circle + labelled points (8 − 3 = 5 of them); then 2 traces per step
    assert len(fig.data) == 2 + 4
    assert list(fig.data[1].text) == ["0", "1", "2", "3", "4"]
    lines_k3 = fig.data[4]
    assert list(lines_k3.x) == [
        0.0, pytest.approx(math.sin(1.5), abs=1e-4), None,
        pytest.approx(math.sin(1.0), abs=1e-4), pytest.approx(math.sin(2.5), abs=1e-4), None,
    ]  # fmt: skip
    assert visible(fig, 1) == [True, True, False, False, True, True]


# Each example builds a whole figure (~0.1 s, mostly plotly's template): 10 examples keep it fast.
@settings(max_examples=10)
@given(w=st.floats(0.05, 1.5), k=st.integers(1, 6))
def test_shift_rotation_every_arrow_spans_the_same_chord(w, k):
    pts = pair_points(20, w)
    fig = shift_rotation_slider(pts, [k], starts=[0, 4, 9])
    x, y = fig.data[2].x, fig.data[2].y
    chords = [math.hypot(x[j + 1] - x[j], y[j + 1] - y[j]) for j in range(0, len(x), 3)]
    want = 2 * abs(math.sin(k * w / 2))  # chord of the angle k·w on the unit circle
    assert chords == pytest.approx([want] * 3, abs=2e-3)
    # arrowheads point from tail to tip
    angles = np.radians(np.array(fig.data[3].marker.angle))
    for j, a in enumerate(angles):
        dx, dy = x[3 * j + 1] - x[3 * j], y[3 * j + 1] - y[3 * j]
        assert math.isclose(math.sin(a) * dy, math.cos(a) * dx, abs_tol=1e-2)


def test_shift_rotation_errors():
    pts = pair_points(6, 0.3)
    with pytest.raises(ValueError, match=r"points must be \[N, 2\]"):
        shift_rotation_slider(torch.zeros(6, 3), [1])
    with pytest.raises(ValueError, match="shifts must be a non-empty sequence of ints >= 0"):
        shift_rotation_slider(pts, [])
    with pytest.raises(ValueError, match=r"shifts\[0\] must be >= 0"):
        shift_rotation_slider(pts, [-1])
    with pytest.raises(ValueError, match="more rows"):
        shift_rotation_slider(pts, [6])
    with pytest.raises(ValueError, match=r"starts\[0\] must be in \[0, 3\]"):
        shift_rotation_slider(pts, [2], starts=[4])
    with pytest.raises(ValueError, match="starts must hold at least one"):
        shift_rotation_slider(pts, [2], starts=[])
    numpy_ints = shift_rotation_slider(pts, [np.int64(2)], starts=[np.int64(1)])
    assert (
        numpy_ints.to_plotly_json() == shift_rotation_slider(pts, [2], starts=[1]).to_plotly_json()
    )
