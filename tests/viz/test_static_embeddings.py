"""Tests for lib.viz.static_embeddings: PCA projection, training slider, offsets, heatmaps, GloVe's f."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from lib.viz.core import LINE_COLOURS
from lib.viz.static_embeddings import (
    glove_weight_figure,
    offset_pairs_figure,
    similarity_heatmaps,
    training_projection_slider,
)

# --- training_projection_slider --------------------------------------------------------------------

WORDS = ["a", "b", "c", "d", "e", "f"]
GROUPS = {"first": ["a", "b", "c"], "second": ["e", "f"]}


def _snapshots(n: int = 3, d: int = 2) -> list[torch.Tensor]:
    g = torch.Generator().manual_seed(4)
    return [torch.randn(len(WORDS), d, generator=g) * (k + 1) for k in range(n)]


def test_training_slider_structure_and_titles():
    snaps = _snapshots()
    fig = training_projection_slider(
        snaps, [0, 1, 2], WORDS, GROUPS, losses=[2.5, 1.25], caption="cap", alt="alt"
    )
    assert len(fig.data) == 3 * 2  # steps x groups
    steps = fig.layout.sliders[0].steps
    assert [s.label for s in steps] == ["0", "1", "2"]
    assert fig.layout.sliders[0].active == 2  # the trained vectors first
    assert [t.visible for t in fig.data] == [False, False, False, False, True, True]
    assert steps[0].args[0]["visible"] == [True, True, False, False, False, False]
    titles = [s.args[1]["title.text"] for s in steps]
    assert titles[0].startswith("epoch 0 · RMS vector norm")
    assert (
        titles[1].startswith("epoch 1 · mean loss 2.500")
        and "epoch 2 · mean loss 1.250" in titles[2]
    )
    assert list(fig.data[0].text) == ["a", "b", "c"] and list(fig.data[1].text) == ["e", "f"]
    assert fig.layout.meta == {"caption": "cap", "alt": "alt"}
    # the RMS norm in the title, computed by hand for the first snapshot (rows a, b, c, e, f)
    rows = snaps[0][[0, 1, 2, 4, 5]].double()
    assert f"{float(rows.pow(2).sum(1).mean().sqrt()):.3g}" in titles[0]


def test_training_slider_coordinates_are_a_scaled_isometry_of_2d_data():
    """With d = 2 the projection only rotates, shifts and scales: distance ratios survive."""
    snaps = _snapshots(n=2, d=2)
    fig = training_projection_slider(snaps, [0, 3], WORDS, GROUPS)
    for step, snapshot in enumerate(snaps):
        traces = fig.data[2 * step : 2 * step + 2]
        xy = np.array([[x, y] for t in traces for x, y in zip(t.x, t.y, strict=True)])
        assert np.isclose(np.abs(xy).max(), 1.0, atol=1e-3)  # scaled to fit
        original = snapshot[[0, 1, 2, 4, 5]].double().numpy()
        dist = np.linalg.norm(xy[:, None] - xy[None], axis=-1)
        dist0 = np.linalg.norm(original[:, None] - original[None], axis=-1)
        ratio = dist[dist0 > 0] / dist0[dist0 > 0]
        assert np.allclose(
            ratio, ratio[0], rtol=2e-3
        )  # one scale factor (data rounded to 4 digits)


def test_training_slider_never_colours_a_group_yellow():
    words = [f"w{k}" for k in range(8)]
    snaps = [torch.randn(8, 2, generator=torch.Generator().manual_seed(1))]
    seven = {f"g{k}": [words[k]] for k in range(7)}
    fig = training_projection_slider(snaps, [0], words, seven)
    assert [t.marker.color for t in fig.data] == list(LINE_COLOURS)  # no Okabe–Ito yellow
    with pytest.raises(ValueError, match="at most 7 groups"):
        training_projection_slider(snaps, [0], words, {f"g{k}": [words[k]] for k in range(8)})


def test_training_slider_errors():
    snaps = _snapshots()
    with pytest.raises(TypeError, match="snapshots"):
        training_projection_slider(snaps[0], [0], WORDS, GROUPS)
    with pytest.raises(ValueError, match="epochs"):
        training_projection_slider(snaps, [0, 1], WORDS, GROUPS)
    with pytest.raises(ValueError, match=r"snapshots\[1\]"):
        training_projection_slider([snaps[0], snaps[1][:4]], [0, 1], WORDS, GROUPS)
    with pytest.raises(KeyError, match="'zz'"):
        training_projection_slider(snaps, [0, 1, 2], WORDS, {"g": ["a", "zz"]})
    with pytest.raises(ValueError, match="groups"):
        training_projection_slider(snaps, [0, 1, 2], WORDS, {"g": ["a", "b"], "h": ["b", "c"]})
    with pytest.raises(TypeError, match="groups"):
        training_projection_slider(snaps, [0, 1, 2], WORDS, {})
    with pytest.raises(ValueError, match="losses"):
        training_projection_slider(snaps, [0, 1, 2], WORDS, GROUPS, losses=[1.0])
    with pytest.raises(ValueError, match="active"):
        training_projection_slider(snaps, [0, 1, 2], WORDS, GROUPS, active=3)
    with pytest.raises(TypeError, match="vocab_words"):
        training_projection_slider(snaps, [0, 1, 2], "abcdef", GROUPS)


# --- offset_pairs_figure ---------------------------------------------------------------------------


def test_offset_pairs_constant_offset_gives_parallel_equal_arrows():
    g = torch.Generator().manual_seed(5)
    starts = torch.randn(4, 3, generator=g)  # [4, d]
    offset = torch.tensor([0.8, -0.3, 0.5])
    vectors = torch.cat([starts, starts + offset])  # rows 0..3 and their partners 4..7
    words = [f"s{i}" for i in range(4)] + [f"t{i}" for i in range(4)]
    fig = offset_pairs_figure(vectors, words, {"rel": [(f"s{i}", f"t{i}") for i in range(4)]})
    arrows = np.array([[a.x - a.ax, a.y - a.ay] for a in fig.layout.annotations if a.showarrow])
    assert len(arrows) == 4
    assert np.allclose(arrows, arrows[0], atol=2e-3)  # the same arrow four times
    # arrow ends sit on the plotted words
    trace = fig.data[0]
    where = dict(zip(trace.text, zip(trace.x, trace.y, strict=True), strict=True))
    first = next(a for a in fig.layout.annotations if a.showarrow)
    assert (first.ax, first.ay) == where["s0"] and (first.x, first.y) == where["t0"]


def test_offset_pairs_two_panels_use_their_own_axes():
    vectors = torch.randn(6, 3, generator=torch.Generator().manual_seed(6))
    words = list("abcdef")
    fig = offset_pairs_figure(
        vectors, words, {"one": [("a", "b"), ("c", "d")], "two": [("e", "f"), ("a", "c")]}
    )
    refs = [(a.xref, a.axref) for a in fig.layout.annotations if a.showarrow]
    assert refs == [("x", "x"), ("x", "x"), ("x2", "x2"), ("x2", "x2")]


def test_offset_pairs_errors():
    vectors = torch.randn(4, 3)
    with pytest.raises(ValueError, match="vectors"):
        offset_pairs_figure(vectors, list("abc"), {"p": [("a", "b")]})
    with pytest.raises(TypeError, match="panels"):
        offset_pairs_figure(vectors, list("abcd"), {})
    with pytest.raises(ValueError, match="panels"):
        offset_pairs_figure(vectors, list("abcd"), {"p": [("a", "b", "c")]})
    with pytest.raises(KeyError, match="'z'"):
        offset_pairs_figure(vectors, list("abcd"), {"p": [("a", "z")]})


# --- similarity_heatmaps ---------------------------------------------------------------------------


def test_similarity_heatmaps_data_and_scale():
    eye = torch.eye(3)
    other = torch.tensor([[1.0, 0.5, -0.25], [0.5, 1.0, 0.125], [-0.25, 0.125, 1.0]])
    fig = similarity_heatmaps({"one-hot": eye, "trained": other}, ["x", "y", "z"], caption="c")
    assert len(fig.data) == 2
    assert np.array_equal(np.array(fig.data[0].z), np.eye(3))
    assert np.array_equal(np.array(fig.data[1].z), other.numpy())
    assert all(t.zmin == -1.0 and t.zmax == 1.0 for t in fig.data)
    assert [t.showscale for t in fig.data] == [False, True]
    assert list(fig.layout.xaxis.ticktext) == ["x", "y", "z"]


def test_similarity_heatmaps_errors():
    with pytest.raises(TypeError, match="matrices"):
        similarity_heatmaps({}, ["a"])
    with pytest.raises(ValueError, match="matrices"):
        similarity_heatmaps({"m": torch.eye(3)}, ["a", "b"])
    with pytest.raises(TypeError, match="labels"):
        similarity_heatmaps({"m": torch.eye(2)}, "ab")


# --- glove_weight_figure ---------------------------------------------------------------------------


def test_glove_weight_curves_follow_the_formula():
    fig = glove_weight_figure(x_max=10.0, alphas=(0.75, 1.0))
    assert len(fig.data) == 2
    for trace, alpha in zip(fig.data, (0.75, 1.0), strict=True):
        x, y = np.array(trace.x), np.array(trace.y)
        expected = np.where(x < 10.0, (x / 10.0) ** alpha, 1.0)  # Pennington et al. 2014, eq. 9
        assert np.allclose(y, expected, rtol=1e-3, atol=1e-6)
    assert fig.data[0].line.width > fig.data[1].line.width  # the paper's α = 3/4 stands out


def test_glove_weight_histogram_shares():
    counts = torch.tensor([0.5, 1.0, 1.0, 2.0, 150.0, 150.0, 300.0, 0.2])
    fig = glove_weight_figure(counts)
    bars = fig.data[0]
    assert bars.type == "bar"
    assert math.isclose(sum(bars.y), 1.0, rel_tol=1e-3)
    assert np.all(np.diff(np.log(np.array(bars.x))) > 0)  # log-spaced, increasing


def test_glove_weight_errors():
    with pytest.raises(ValueError, match="counts"):
        glove_weight_figure(torch.tensor([1.0, 0.0]))
    with pytest.raises(TypeError, match="counts"):
        glove_weight_figure(torch.tensor([1, 2]))
    with pytest.raises(ValueError, match="x_max"):
        glove_weight_figure(x_max=-1.0)
    with pytest.raises(ValueError, match="alphas"):
        glove_weight_figure(alphas=())
