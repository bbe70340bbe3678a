"""Tests for lib.viz.smollm: the pair-norm figure with its layer slider."""

from __future__ import annotations

import pytest
import torch

from lib.viz.smollm import pair_norm_figure

Q = torch.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])  # [L = 2, P = 3]
K = torch.tensor([[0.5, 0.25, 0.125], [1.5, 2.5, 3.5]])
WL = torch.tensor([6.2832, 100.0, 1000.0])


def test_traces_hold_the_norms_per_layer_and_the_slider_toggles_layers():
    fig = pair_norm_figure(Q, K, WL, caption="cap", alt="alt")
    assert len(fig.data) == 4  # (queries, keys) for each of 2 layers
    assert list(fig.data[0].y) == [1.0, 2.0, 3.0] and list(fig.data[1].y) == [0.5, 0.25, 0.125]
    assert list(fig.data[2].y) == [4.0, 5.0, 6.0] and list(fig.data[3].y) == [1.5, 2.5, 3.5]
    assert list(fig.data[0].x) == [6.283, 100.0, 1000.0]  # 4 significant digits
    assert [t.visible for t in fig.data] == [True, True, False, False]
    steps = fig.layout.sliders[0].steps
    assert [s.label for s in steps] == ["0", "1"]
    assert list(steps[1].args[0]["visible"]) == [False, False, True, True]
    assert fig.layout.xaxis.type == "log"
    assert "cap" in str(fig.to_dict()) and "alt" in str(fig.to_dict())


def test_bad_input_is_refused():
    with pytest.raises(TypeError, match="q_norms"):
        pair_norm_figure(torch.ones(2, 3, dtype=torch.long), K, WL)
    with pytest.raises(ValueError, match=r"must be \[L, P\]"):
        pair_norm_figure(Q, K[:, :2], WL)
    with pytest.raises(ValueError, match=r"must be \[L, P\]"):
        pair_norm_figure(Q, K, WL[:2])


def test_the_figure_can_start_on_any_layer_and_the_y_axis_follows_the_layer():
    fig = pair_norm_figure(Q, K, WL, layer=1)
    assert [t.visible for t in fig.data] == [False, False, True, True]
    assert fig.layout.sliders[0].active == 1
    assert fig.layout.yaxis.range is None and fig.layout.yaxis.rangemode == "tozero"
    assert fig.data[0].marker.color == fig.data[0].line.color  # markers match their line
    with pytest.raises(ValueError, match=r"layer must lie in \[0, 2\)"):
        pair_norm_figure(Q, K, WL, layer=2)
    with pytest.raises(TypeError, match="layer must be an int"):
        pair_norm_figure(Q, K, WL, layer=1.0)
