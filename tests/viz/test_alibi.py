"""Tests for lib.viz.alibi: the bias heatmaps, the slope strip plot and the weights-by-distance figure.

Expected values are built by hand here (−m·(i − j) with explicit slopes, softmax of hand-made rows),
never by calling lib.alibi, so a figure that drew the wrong data would fail.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from lib.viz.alibi import (
    WEIGHT_DIGITS,
    bias_heatmap_figure,
    bias_panels_figure,
    slopes_figure,
    weights_by_distance_figure,
)
from lib.viz.core import DIVERGING, OKABE_ITO, SEQUENTIAL


def hand_bias(slopes: list[float], seq_len: int, *, causal: bool = True) -> torch.Tensor:
    """−m·|i − j| per head, −inf above the diagonal when causal; [H, T, T] float32."""
    out = torch.empty(len(slopes), seq_len, seq_len)
    for h, m in enumerate(slopes):
        for i in range(seq_len):
            for j in range(seq_len):
                out[h, i, j] = float("-inf") if causal and j > i else -m * abs(i - j)
    return out


def z_of(trace) -> list[list[float | None]]:
    return [list(row) for row in trace.z]


def visible_flags(fig, step: int) -> list[bool]:
    return list(fig.layout.sliders[0].steps[step].args[0]["visible"])


# ------------------------------------------------------------------ bias heatmaps


def test_bias_heatmap_draws_minus_slope_times_distance_with_gaps_above_diagonal():
    slopes = [0.5, 0.25]
    fig = bias_heatmap_figure(hand_bias(slopes, 4), torch.tensor(slopes))
    assert len(fig.data) == 2
    head2 = z_of(fig.data[1])
    assert head2[3] == [-0.75, -0.5, -0.25, 0.0]  # row i = 3: −0.25·(3 − j)
    assert head2[0] == [0.0, None, None, None]  # keys after the query are gaps
    assert z_of(fig.data[0])[2][:3] == [-1.0, -0.5, 0.0]


def test_bias_heatmap_shares_one_sequential_range_from_min_to_zero():
    slopes = [0.5, 0.125]
    fig = bias_heatmap_figure(hand_bias(slopes, 5), torch.tensor(slopes))
    for trace in fig.data:
        assert trace.zmin == pytest.approx(-0.5 * 4) and trace.zmax == 0.0
        assert [c[1] for c in trace.colorscale] == [
            c[1] for c in __import__("plotly").colors.get_colorscale(SEQUENTIAL)
        ]


def test_bias_heatmap_slider_shows_one_head_per_step_and_titles_the_slope():
    slopes = [0.5, 0.25, 0.125]
    fig = bias_heatmap_figure(hand_bias(slopes, 3), torch.tensor(slopes), active=1)
    steps = fig.layout.sliders[0].steps
    assert [s.label for s in steps] == ["1", "2", "3"]
    assert fig.layout.sliders[0].active == 1
    for k in range(3):
        assert visible_flags(fig, k) == [h == k for h in range(3)]
    assert [t.visible for t in fig.data] == [False, True, False]
    title = steps[2].args[1]["title.text"]
    assert "head 3 of 3" in title and "2<sup>\u22123</sup>" in title and "0.125" in title
    meta = fig.layout.meta
    assert meta["caption"] and meta["alt"]


def test_bias_heatmap_rounds_to_four_significant_digits():
    slopes = [2.0 ** (-1.0 / 3.0)]  # 0.7937005259...
    fig = bias_heatmap_figure(hand_bias(slopes, 3), torch.tensor(slopes))
    assert z_of(fig.data[0])[1][0] == -0.7937
    assert z_of(fig.data[0])[2][0] == -1.587


def test_bias_panels_put_each_panel_on_its_own_axes_with_one_colour_bar():
    slopes = [0.5, 0.25]
    causal, symmetric = hand_bias(slopes, 4), hand_bias(slopes, 4, causal=False)
    fig = bias_panels_figure({"causal": causal, "symmetric": symmetric}, torch.tensor(slopes))
    assert len(fig.data) == 4  # 2 heads × 2 panels
    assert [t.xaxis for t in fig.data] == ["x", "x2", "x", "x2"]
    assert [bool(t.showscale) for t in fig.data] == [False, True, False, True]
    assert visible_flags(fig, 1) == [False, False, True, True]
    assert z_of(fig.data[1])[0] == [0.0, -0.5, -1.0, -1.5]  # symmetric: −m·|i − j|, no gaps
    # DIVERGING, symmetric about 0: the bound is the largest |bias| of all panels and heads.
    assert fig.data[0].zmin == -1.5 and fig.data[0].zmax == 1.5
    assert [c[1] for c in fig.data[0].colorscale] == [
        c[1] for c in __import__("plotly").colors.get_colorscale(DIVERGING)
    ]
    assert [a.text for a in fig.layout.annotations] == ["causal", "symmetric"]
    lo1, hi1 = fig.layout.xaxis.domain
    lo2, hi2 = fig.layout.xaxis2.domain
    assert 0 <= lo1 < hi1 < lo2 < hi2 <= 1


def test_bias_panels_data_range_when_zmid_is_none():
    slopes = [0.5]
    fig = bias_panels_figure(
        {"a": hand_bias(slopes, 3)}, torch.tensor(slopes), zmid=None, colorscale=SEQUENTIAL
    )
    assert fig.data[0].zmin == -1.0 and fig.data[0].zmax == 0.0


@given(
    exponents=st.lists(st.integers(1, 12), min_size=1, max_size=4),
    seq_len=st.integers(1, 6),
    causal=st.booleans(),
)
def test_bias_panels_data_equals_hand_bias(exponents, seq_len, causal):
    slopes = [2.0 ** (-e / 2) for e in exponents]
    bias = hand_bias(slopes, seq_len, causal=causal)
    fig = bias_panels_figure({"p": bias}, torch.tensor(slopes))
    assert len(fig.data) == len(slopes) == len(fig.layout.sliders[0].steps)
    for h, m in enumerate(slopes):
        z = z_of(fig.data[h])
        for i in range(seq_len):
            for j in range(seq_len):
                if causal and j > i:
                    assert z[i][j] is None
                else:
                    expected = -m * abs(i - j)
                    assert z[i][j] == pytest.approx(expected, rel=1e-3, abs=1e-12)


@pytest.mark.parametrize(
    ("panels", "slopes", "kwargs", "error", "match"),
    [
        ({}, [0.5], {}, ValueError, "panels"),
        ({"a": torch.zeros(1, 3, 4)}, [0.5], {}, ValueError, r"panels\['a'\]"),
        ({"a": torch.zeros(3, 3)}, [0.5], {}, ValueError, r"panels\['a'\]"),
        ({"a": torch.zeros(1, 3, 3, dtype=torch.long)}, [0.5], {}, TypeError, r"panels\['a'\]"),
        ({"a": torch.full((1, 2, 2), float("nan"))}, [0.5], {}, ValueError, "NaN"),
        ({"a": torch.zeros(1, 3, 3), "b": torch.zeros(1, 4, 4)}, [0.5], {}, ValueError, "same"),
        ({"a": torch.zeros(2, 3, 3)}, [0.5], {}, ValueError, "slopes"),
        ({"a": torch.zeros(1, 3, 3)}, [-0.5], {}, ValueError, "slopes"),
        ({"a": torch.zeros(1, 3, 3)}, [0.5], {"active": 1}, ValueError, "active"),
        ({"a": torch.zeros(1, 3, 3)}, [0.5], {"active": 0.5}, TypeError, "active"),
    ],
)
def test_bias_panels_errors(panels, slopes, kwargs, error, match):
    with pytest.raises(error, match=match):
        bias_panels_figure(panels, torch.tensor(slopes), **kwargs)


def test_bias_panels_slopes_must_be_a_float_tensor():
    with pytest.raises(TypeError, match="slopes"):
        bias_panels_figure({"a": torch.zeros(1, 2, 2)}, torch.tensor([1]))


# ------------------------------------------------------------------ slopes


def test_slopes_figure_marks_base_and_added_heads():
    eight = [2.0**-k for k in range(1, 9)]
    twelve = [*eight, 2.0**-0.5, 2.0**-1.5, 2.0**-2.5, 2.0**-3.5]
    fig = slopes_figure({8: torch.tensor(eight), 12: torch.tensor(twelve)})
    assert len(fig.data) == 3  # 8 heads: one trace; 12 heads: base + added
    base8, base12, added12 = fig.data
    assert list(base8.x) == pytest.approx(eight, rel=1e-3) and set(base8.y) == {"8 heads"}
    assert base8.x[5] == 0.01562  # 2^-6 = 0.015625, rounded to 4 significant digits
    assert [c[1] for c in added12.customdata] == ["0.5", "1.5", "2.5", "3.5"]  # m = 2^-e
    assert list(added12.x) == pytest.approx([0.7071, 0.3536, 0.1768, 0.08839])
    assert list(added12.text) == ["9", "10", "11", "12"]
    assert list(base12.text) == [str(k) for k in range(1, 9)]
    assert base8.marker.symbol == "circle" and added12.marker.symbol == "diamond"
    assert base8.marker.color == OKABE_ITO[0] and added12.marker.color == OKABE_ITO[1]
    assert [t.showlegend for t in fig.data] == [True, False, True]
    assert fig.layout.xaxis.type == "log"
    assert list(fig.layout.yaxis.categoryarray) == ["12 heads", "8 heads"]  # first row on top
    assert "1/256" in fig.layout.xaxis.ticktext and "1/2" in fig.layout.xaxis.ticktext
    assert fig.layout.meta["caption"]


@pytest.mark.parametrize(
    ("sets", "error", "match"),
    [
        ({}, ValueError, "slope_sets"),
        ({"8": torch.ones(8) / 2}, TypeError, "slope_sets key"),
        ({0: torch.ones(1) / 2}, ValueError, "slope_sets key"),
        ({4: torch.ones(3) / 2}, ValueError, "slopes"),
        ({2: torch.tensor([0.5, 0.0])}, ValueError, "slopes"),
        ({2: torch.tensor([1, 2])}, TypeError, "slopes"),
    ],
)
def test_slopes_figure_errors(sets, error, match):
    with pytest.raises(error, match=match):
        slopes_figure(sets)


# ------------------------------------------------------------------ weights by distance


def hand_weights(slopes: list[float], seq_len: int) -> torch.Tensor:
    """Causal softmax of −m·(i − j) over j <= i, by the closed form; [H, T, T] float64."""
    out = torch.zeros(len(slopes), seq_len, seq_len, dtype=torch.float64)
    for h, m in enumerate(slopes):
        for i in range(seq_len):
            terms = [math.exp(-m * (i - j)) for j in range(i + 1)]
            total = sum(terms)
            for j in range(i + 1):
                out[h, i, j] = terms[j] / total
    return out


def test_weights_figure_plots_each_keys_weight_against_distance():
    slopes = [0.5, 0.25]
    w = hand_weights(slopes, 6)
    fig = weights_by_distance_figure(w, torch.tensor(slopes), [2, 5])
    assert len(fig.data) == 4  # 2 steps × 2 heads
    head1_at_5 = fig.data[2]
    assert list(head1_at_5.x) == [0, 1, 2, 3, 4, 5]
    total = sum(math.exp(-0.5 * d) for d in range(6))
    expected = [
        float(
            np.format_float_positional(math.exp(-0.5 * d) / total, WEIGHT_DIGITS, fractional=False)
        )
        for d in range(6)
    ]
    assert list(head1_at_5.y) == pytest.approx(expected, rel=1e-12)
    assert list(fig.data[1].x) == [0, 1, 2]  # head 2 at query 2: three keys
    assert fig.layout.sliders[0].active == 1  # the last query position by default
    assert [t.visible for t in fig.data] == [False, False, True, True]
    assert [t.line.color for t in fig.data[:2]] == list(OKABE_ITO[:2])
    assert fig.data[0].name == "head 1, m = 1/2" and fig.data[1].name == "head 2, m = 1/4"
    assert fig.layout.yaxis.type == "log"
    assert tuple(fig.layout.yaxis.range) == pytest.approx((-6.0, 0.05))
    assert tuple(fig.layout.xaxis.range) == (-0.5, 5.5)


def test_weights_figure_linear_axis():
    slopes = [0.5]
    fig = weights_by_distance_figure(
        hand_weights(slopes, 3), torch.tensor(slopes), [0, 2], log_y=False, active=0
    )
    assert fig.layout.yaxis.type != "log" and tuple(fig.layout.yaxis.range) == (0, 1.02)
    assert list(fig.data[0].y) == [1.0]  # query 0 sees only itself
    assert fig.layout.sliders[0].active == 0


@pytest.mark.parametrize(
    ("n_heads", "positions", "kwargs", "error", "match"),
    [
        (9, [1], {}, ValueError, "at most 8 heads"),
        (1, [], {}, ValueError, "query_positions"),
        (1, [2, 1], {}, ValueError, "query_positions"),
        (1, [4], {}, ValueError, "query_positions"),
        (1, [1.5], {}, TypeError, "query_positions"),
        (1, [1], {"y_min": 0.0}, ValueError, "y_min"),
        (1, [1], {"log_y": 1}, TypeError, "log_y"),
        (1, [1], {"active": 3}, ValueError, "active"),
    ],
)
def test_weights_figure_errors(n_heads, positions, kwargs, error, match):
    w = torch.full((n_heads, 4, 4), 0.25)
    with pytest.raises(error, match=match):
        weights_by_distance_figure(w, torch.full((n_heads,), 0.5), positions, **kwargs)


def test_weights_figure_shape_errors():
    with pytest.raises(ValueError, match="weights"):
        weights_by_distance_figure(torch.zeros(1, 3, 4), torch.tensor([0.5]), [1])
    with pytest.raises(TypeError, match="weights"):
        weights_by_distance_figure(torch.zeros(1, 3, 3, dtype=torch.long), torch.tensor([0.5]), [1])
    with pytest.raises(ValueError, match="slopes"):
        weights_by_distance_figure(torch.zeros(2, 3, 3), torch.tensor([0.5]), [1])
