"""Tests for lib.viz.relative: the bucket map and the T5-bias-versus-ALiBi figure.

Data are built by hand here, so a figure that drew the wrong data would fail.
"""

from __future__ import annotations

import pytest
import torch

from lib.viz.relative import bias_vs_alibi_figure, bucket_map_figure


def visible(fig, step):
    return list(fig.layout.sliders[0].steps[step].args[0]["visible"])


def test_bucket_map_draws_each_step_and_marks_max_distance():
    offsets = torch.arange(-5, 6)
    b1 = torch.tensor([3, 3, 3, 2, 1, 0, 4, 5, 6, 7, 7])
    b2 = torch.tensor([1, 1, 1, 1, 1, 0, 2, 3, 3, 3, 3])
    fig = bucket_map_figure(offsets, [b1, b2], ["a", "b"], [3, 20], active=1)
    assert len(fig.data) == 4  # two traces per step
    assert list(fig.data[0].y) == b1.tolist() and list(fig.data[2].y) == b2.tolist()
    assert list(fig.data[0].x) == offsets.tolist()
    assert list(fig.data[1].x) == [-3, -3, None, 3, 3, None]  # ±max_distance inside the range
    assert list(fig.data[3].x) == []  # 20 lies outside [-5, 5]: no line
    assert visible(fig, 0) == [True, True, False, False]
    assert [t.visible for t in fig.data] == [False, False, True, True]
    assert fig.layout.meta["caption"] and fig.layout.meta["alt"]


@pytest.mark.parametrize(
    ("args", "error"),
    [
        ((torch.arange(3.0), [torch.arange(3)], ["a"], [1]), TypeError),
        ((torch.tensor([0, 2, 1]), [torch.arange(3)], ["a"], [1]), ValueError),
        ((torch.arange(3), [torch.arange(3)], ["a", "b"], [1]), ValueError),
        ((torch.arange(3), [torch.arange(4)], ["a"], [1]), ValueError),
        ((torch.arange(3), [torch.arange(3.0)], ["a"], [1]), TypeError),
        ((torch.arange(3), [torch.arange(3)], ["a"], [0]), ValueError),
    ],
)
def test_bucket_map_rejects_bad_input(args, error):
    with pytest.raises(error):
        bucket_map_figure(*args)


def test_bias_vs_alibi_draws_both_curves_per_head():
    distance = torch.arange(4)
    t5 = torch.tensor([[0.0, -1.0, -1.0, -2.0], [0.0, 0.0, -0.5, -0.5]])
    alibi = torch.tensor([[0.0, -0.5, -1.0, -1.5], [0.0, -0.25, -0.5, -0.75]])
    fig = bias_vs_alibi_figure(distance, t5, alibi, torch.tensor([0.5, 0.25]), max_distance=2)
    assert len(fig.data) == 4
    assert list(fig.data[2].y) == [0.0, 0.0, -0.5, -0.5]
    assert list(fig.data[3].y) == [0.0, -0.25, -0.5, -0.75]
    assert "1/4" in fig.data[3].name
    assert visible(fig, 1) == [False, False, True, True]
    assert any(shape.x0 == 2 for shape in fig.layout.shapes)


def test_bias_vs_alibi_rejects_bad_shapes():
    d = torch.arange(4)
    good = torch.zeros(2, 4)
    with pytest.raises(ValueError, match="t5_bias"):
        bias_vs_alibi_figure(d, torch.zeros(2, 3), good, torch.ones(2))
    with pytest.raises(ValueError, match="alibi"):
        bias_vs_alibi_figure(d, good, torch.zeros(3, 4), torch.ones(2))
    with pytest.raises(ValueError, match="slopes"):
        bias_vs_alibi_figure(d, good, good, torch.ones(3))
    with pytest.raises(TypeError, match="distance"):
        bias_vs_alibi_figure([0, 1, 2, 3], good, good, torch.ones(2))
