"""lib.viz.core: rounding, theme, and the kernel-free slider figure."""

from __future__ import annotations

import math

import numpy as np
import plotly.graph_objects as go
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from lib.viz.core import (
    OKABE_ITO,
    SIGNIFICANT_DIGITS,
    add_step_slider,
    apply_theme,
    data_array,
    heatmap_slider,
    rounded,
    slider_figure,
)


def test_rounded_keeps_significant_digits():
    out = rounded(torch.tensor([123456.0, 0.000123456, -1.23456, 0.0, -0.0]))
    np.testing.assert_array_equal(out, [123500.0, 0.0001235, -1.235, 0.0, 0.0])
    assert not np.signbit(out[-1]), "-0.0 must become 0.0 so JSON does not flip sign"


def test_rounded_passes_non_finite_values_through():
    out = rounded([math.inf, -math.inf, math.nan, 2.0])
    assert out[0] == math.inf and out[1] == -math.inf and math.isnan(out[2]) and out[3] == 2.0


@settings(max_examples=50)
@given(st.floats(min_value=-1e6, max_value=1e6, allow_nan=False).filter(lambda v: abs(v) > 1e-6))
def test_rounding_absorbs_float32_noise(value):
    """Two values a float32 ulp apart round to the same figure data (nbval stability).

    Both land on the decimal with SIGNIFICANT_DIGITS digits that Python's correctly rounded
    formatting gives (either one if a rounding boundary lies between them, or within a hair of
    them), and on the same one otherwise. The identity (no rounding) fails both.
    """
    a = float(np.float32(value))
    b = float(np.nextafter(np.float32(a), np.float32(np.inf)))  # one float32 ulp above a
    ra, rb = rounded([a, b])
    hair = 1e-9 * max(abs(a), abs(b))
    low, high = (float(f"{x:.{SIGNIFICANT_DIGITS}g}") for x in (a - hair, b + hair))
    for r in (ra, rb):
        assert math.isclose(r, low, rel_tol=1e-12) or math.isclose(r, high, rel_tol=1e-12), (
            f"{r!r} is not {a!r} or {b!r} rounded to {SIGNIFICANT_DIGITS} significant digits"
        )
    if low == high:
        assert ra == rb, f"{a!r} and {b!r} (one float32 ulp apart) round differently"


def test_rounded_to_decimals_for_bounded_quantities():
    # Significant digits would keep -0.0004043 vs -0.0004044 (float32 noise on two CPUs).
    out = rounded([-0.00040434, -0.00040436, 0.080175, -0.0004, 0.9996, math.nan], decimals=3)
    np.testing.assert_array_equal(out[:5], [0.0, 0.0, 0.08, 0.0, 1.0])
    assert math.isnan(out[5]) and not np.signbit(out[0])
    # The same values to significant digits differ, which is what decimals avoid.
    assert rounded([-0.00040434])[0] != rounded([-0.00040436])[0]
    for bad in (-1, 1.5, True, "3"):
        with pytest.raises(ValueError, match="decimals"):
            rounded([1.0], decimals=bad)


def test_rounded_accepts_bfloat16_tensors():
    out = rounded(torch.tensor([1.5, 2.25], dtype=torch.bfloat16))
    np.testing.assert_array_equal(out, [1.5, 2.25])


def _steps(n, per_step=2):
    return [[go.Scatter(x=[0, 1], y=[k, j]) for j in range(per_step)] for k in range(n)]


def test_slider_figure_toggles_one_group_at_a_time():
    fig = slider_figure(_steps(3), ["a", "b", "c"], prefix="k = ", active=1)
    assert len(fig.data) == 6
    assert [t.visible for t in fig.data] == [False, False, True, True, False, False]
    steps = fig.layout.sliders[0].steps
    assert [s.label for s in steps] == ["a", "b", "c"]
    assert steps[2].args[0]["visible"] == [False, False, False, False, True, True]
    assert fig.layout.sliders[0].active == 1


def test_slider_figure_keeps_static_traces_visible():
    static = [go.Scatter(x=[0], y=[0], name="reference")]
    fig = slider_figure(_steps(2, per_step=1), ["0", "1"], static_traces=static)
    for step in fig.layout.sliders[0].steps:
        assert step.args[0]["visible"][0] is True


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"steps": [], "labels": []}, "at least one step"),
        ({"steps": _steps(2), "labels": ["a"]}, "one entry per step"),
        ({"steps": [[go.Scatter()], [go.Scatter(), go.Scatter()]], "labels": ["a", "b"]}, "same"),
        ({"steps": _steps(2), "labels": ["a", "b"], "active": 2}, "active"),
    ],
)
def test_slider_figure_errors(kwargs, message):
    with pytest.raises(ValueError, match=message):
        slider_figure(**kwargs)


def test_heatmap_slider_shares_a_symmetric_colour_range():
    mats = [torch.tensor([[1.0, -2.0], [0.5, 0.0]]), torch.tensor([[4.0, 0.0], [0.0, 0.0]])]
    fig = heatmap_slider(mats, ["one", "two"])
    assert all(t.zmin == -4.0 and t.zmax == 4.0 for t in fig.data)
    assert fig.layout.yaxis.autorange == "reversed"


def test_heatmap_slider_writes_minus_infinity_as_gaps():
    mats = [torch.tensor([[0.0, -math.inf], [1.0, 2.0]])]
    fig = heatmap_slider(mats, ["m"], zmid=None)
    assert fig.data[0].z[0][1] is None
    assert (fig.data[0].zmin, fig.data[0].zmax) == (0.0, 2.0)


def test_heatmap_slider_rejects_non_matrices():
    with pytest.raises(ValueError, match=r"matrices\[0\] must be 2-D"):
        heatmap_slider([torch.zeros(3)], ["v"])
    with pytest.raises(ValueError, match=r"m\[1\] must be square"):
        heatmap_slider([torch.zeros(2, 2), torch.zeros(2, 3)], ["a", "b"], name="m", square=True)
    with pytest.raises(TypeError, match="matrices must be a sequence"):
        heatmap_slider(torch.zeros(2, 2), ["a"])
    with pytest.raises(ValueError, match="at least one"):
        heatmap_slider([], [])


def test_heatmap_slider_square_cells_and_theme():
    fig = heatmap_slider([torch.eye(3)], ["a"], square=True, caption="c", height=300)
    assert fig.layout.yaxis.scaleanchor == "x" and fig.layout.xaxis.side == "top"
    assert fig.layout.meta["caption"] == "c" and fig.layout.height == 300


def test_apply_theme_sets_caption_alt_and_palette():
    fig = apply_theme(go.Figure(), title="T", caption="What it shows.")
    assert fig.layout.meta == {"caption": "What it shows.", "alt": "What it shows."}
    assert tuple(fig.layout.colorway) == OKABE_ITO
    assert fig.layout.paper_bgcolor == "rgba(0,0,0,0)"


def test_apply_theme_leaves_room_for_a_slider():
    fig = apply_theme(slider_figure(_steps(2), ["a", "b"]))
    assert fig.layout.margin.b >= 100


def test_add_step_slider_checks_the_trace_count():
    fig = go.Figure([go.Scatter(), go.Scatter(), go.Scatter()])
    with pytest.raises(ValueError, match="expected n_static"):
        add_step_slider(fig, ["a", "b"], n_static=0, per_step=2)
    add_step_slider(fig, ["a", "b"], n_static=1, per_step=1, active=1)
    assert [t.visible for t in fig.data] == [None, False, True]


def test_data_array_checks_rounds_and_names_the_argument():
    got = data_array("x", [1.234567, 2.0], 1, sequences=True)
    assert got.tolist() == [1.235, 2.0]
    assert data_array("p", torch.tensor([123456.0]), 1, digits=9).tolist() == [123456.0]
    with pytest.raises(ValueError, match=r"x must have shape \[3\], got \[2\]"):
        data_array("x", [1.0, 2.0], 1, length=3, sequences=True)
    with pytest.raises(ValueError, match=r"m must have shape \[rows, cols\]"):
        data_array("m", torch.zeros(3), 2, "[rows, cols]")
    with pytest.raises(ValueError, match="non-empty"):
        data_array("x", torch.zeros(0), 1)
    with pytest.raises(TypeError, match=r"x must be a torch\.Tensor or numpy array"):
        data_array("x", [1.0], 1)
    with pytest.raises(ValueError, match="finite"):
        data_array("x", torch.tensor([math.inf]), 1)
    assert data_array("x", torch.tensor([math.inf]), 1, finite=False).tolist() == [math.inf]
