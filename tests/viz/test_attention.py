"""Tests for lib.viz.attention: the word-order slider and the output-shift bars.

Expected values are written by hand (small matrices, explicit permutations), so a figure that drew
the wrong data, the wrong labels or a slider that shows the wrong step would fail.
"""

from __future__ import annotations

import numpy as np
import plotly.colors
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from lib.viz.attention import output_shift_bars, permutation_slider
from lib.viz.core import DIVERGING, OKABE_ITO, SEQUENTIAL


def two_orders():
    """'a b c' and 'c a b' with hand-made weights/outputs that follow the permutation [2, 0, 1]."""
    w = torch.tensor([[0.5, 0.25, 0.25], [0.1, 0.8, 0.1], [0.2, 0.2, 0.6]])
    y = torch.tensor([[1.0, -1.0], [0.5, 0.0], [-2.0, 0.25]])
    perm = [2, 0, 1]
    w_p = w[perm][:, perm]
    y_p = y[perm]
    return [["a", "b", "c"], ["c", "a", "b"]], [w, w_p], [y, y_p]


def test_permutation_slider_draws_each_order_and_its_labels():
    sentences, weights, outputs = two_orders()
    fig = permutation_slider(sentences, weights, outputs, caption="cap", alt="alt text")
    assert len(fig.data) == 4  # (weights, outputs) per step
    assert list(fig.data[0].z[1]) == [0.1, 0.8, 0.1]
    assert list(fig.data[2].z[0]) == [0.6, 0.2, 0.2]  # 'c' row of the permuted weights
    assert list(fig.data[3].z[0]) == [-2.0, 0.25]  # 'c' moved to the first row
    assert list(fig.data[1].z[2]) == [-2.0, 0.25]
    assert [t.visible for t in fig.data] == [True, True, False, False]
    steps = fig.layout.sliders[0].steps
    assert [s.label for s in steps] == ["1", "2"]
    assert steps[1].args[1]["title.text"] == "“c a b”"
    assert fig.layout.title.text == "“a b c”"
    assert steps[1].args[0]["visible"] == [False, False, True, True]
    assert steps[1].args[1]["yaxis.ticktext"] == ["c (0)", "a (1)", "b (2)"]
    assert steps[1].args[1]["yaxis2.ticktext"] == ["c (0)", "a (1)", "b (2)"]
    assert list(fig.layout.xaxis.ticktext) == ["a (0)", "b (1)", "c (2)"]
    assert fig.layout.meta["caption"] == "cap" and fig.layout.meta["alt"] == "alt text"


def test_permutation_slider_colour_scales_are_shared_and_safe():
    sentences, weights, outputs = two_orders()
    fig = permutation_slider(sentences, weights, outputs, labels=["one", "two"])
    w_traces, y_traces = fig.data[0::2], fig.data[1::2]
    cividis = [c for _, c in plotly.colors.get_colorscale(SEQUENTIAL)]
    rdbu = [c for _, c in plotly.colors.get_colorscale(DIVERGING)]
    for t in w_traces:
        assert (t.zmin, t.zmax) == (0.0, 0.8)
        assert [c for _, c in t.colorscale] == cividis
    for t in y_traces:
        assert (t.zmin, t.zmax) == (-2.0, 2.0)  # symmetric around 0
        assert [c for _, c in t.colorscale] == rdbu
    assert [s.label for s in fig.layout.sliders[0].steps] == ["one", "two"]


def test_permutation_slider_repeated_words_get_distinct_tick_labels():
    words = ["the", "cat", "the"]
    w = torch.full((3, 3), 1 / 3)
    y = torch.zeros(3, 2)
    fig = permutation_slider([words], [w], [y])
    assert list(fig.layout.yaxis.ticktext) == ["the (0)", "cat (1)", "the (2)"]
    assert list(fig.layout.yaxis.tickvals) == [0, 1, 2]  # numeric axis: duplicates never merge


def test_permutation_slider_rounds_data():
    w = torch.tensor([[0.123456789]])
    y = torch.tensor([[1.23456789e-3, 98765.4321]])
    fig = permutation_slider([["x"]], [w], [y])
    assert fig.data[0].z[0][0] == 0.1235
    assert list(fig.data[1].z[0]) == [0.001235, 98770.0]


# Each example builds a whole figure (~0.1 s, mostly plotly's template): 10 examples keep it fast.
@settings(max_examples=10)
@given(t=st.integers(1, 6), d=st.integers(1, 5), seed=st.integers(0, 10_000))
def test_permutation_slider_moves_rows_with_their_tokens(t, d, seed):
    g = torch.Generator().manual_seed(seed)
    words = [f"w{i}" for i in range(t)]
    perm = torch.randperm(t, generator=g)
    w = torch.softmax(torch.randn(t, t, generator=g), dim=-1)
    y = torch.randn(t, d, generator=g)
    fig = permutation_slider([words, [words[j] for j in perm]], [w, w[perm][:, perm]], [y, y[perm]])
    assert len(fig.data) == 4
    z = [np.array(trace.z, dtype=float) for trace in fig.data]
    # the permuted step shows the original rows (and columns), moved with their tokens
    assert np.array_equal(z[3], z[1][perm.numpy()])
    assert np.array_equal(z[2], z[0][perm.numpy()][:, perm.numpy()])
    ticks = fig.layout.sliders[0].steps[1].args[1]["yaxis.ticktext"]
    assert ticks == [f"{words[j]} ({i})" for i, j in enumerate(perm.tolist())]


def test_permutation_slider_errors():
    sentences, weights, outputs = two_orders()
    with pytest.raises(ValueError, match="sentences, weights and outputs"):
        permutation_slider(sentences, weights[:1], outputs)
    with pytest.raises(ValueError, match="sentences, weights and outputs"):
        permutation_slider([], [], [])
    with pytest.raises(ValueError, match=r"weights\[0\] must be \[T, T\]"):
        permutation_slider(sentences, [torch.zeros(2, 2), weights[1]], outputs)
    with pytest.raises(ValueError, match=r"outputs\[1\] must be \[T=3, d\]"):
        permutation_slider(sentences, weights, [outputs[0], torch.zeros(2, 2)])
    with pytest.raises(ValueError, match=r"weights\[0\] must have shape 2-D"):
        permutation_slider(sentences, [torch.zeros(3), weights[1]], outputs)
    with pytest.raises(TypeError, match=r"outputs\[0\] must be a torch.Tensor"):
        permutation_slider(sentences, weights, [[[1.0]], outputs[1]])
    with pytest.raises(TypeError, match=r"sentences\[0\] must be a sequence"):
        permutation_slider(["a b c", sentences[1]], weights, outputs)
    with pytest.raises(ValueError, match=r"sentences\[0\] must be a non-empty sequence of str"):
        permutation_slider([[1, 2, 3], sentences[1]], weights, outputs)
    with pytest.raises(ValueError, match="same width d"):
        permutation_slider(sentences, weights, [outputs[0], torch.zeros(3, 5)])
    with pytest.raises(ValueError, match="labels must have one entry per step"):
        permutation_slider(sentences, weights, outputs, labels=["only one"])


def test_output_shift_bars_groups_series():
    fig = output_shift_bars(
        ["the 0→0", "cat 1→5"],
        {"none": torch.tensor([0.0, 0.0]), "with positions": [0.123456, 2.0]},
        caption="c",
    )
    assert [t.name for t in fig.data] == ["none", "with positions"]
    assert list(fig.data[0].x) == ["the 0→0", "cat 1→5"]
    assert list(fig.data[1].y) == [0.1235, 2.0]
    assert list(fig.data[1].text) == ["0.12", "2.00"]
    assert fig.data[0].marker.color == OKABE_ITO[0] and fig.data[1].marker.color == OKABE_ITO[1]
    assert fig.layout.barmode == "group"
    assert fig.layout.meta["caption"] == "c"


def test_output_shift_bars_errors():
    with pytest.raises(ValueError, match="tokens must be unique"):
        output_shift_bars(["a", "a"], {"s": [1.0, 2.0]})
    with pytest.raises(TypeError, match="shifts must be a mapping"):
        output_shift_bars(["a"], [1.0])
    with pytest.raises(ValueError, match="shifts must hold at least one"):
        output_shift_bars(["a"], {})
    with pytest.raises(ValueError, match=r"shifts\['s'\] must have shape \[T=2\]"):
        output_shift_bars(["a", "b"], {"s": [1.0]})
    with pytest.raises(TypeError, match="tokens must be a sequence"):
        output_shift_bars("ab", {"s": [1.0, 2.0]})
