"""Tests for lib.viz.static_embeddings: PCA projection, training slider, offsets, heatmaps, GloVe's f."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from lib.viz.static_embeddings import (
    cosine_matrix,
    glove_weight_figure,
    offset_pairs_figure,
    pca_2d,
    similarity_heatmaps,
    training_projection_slider,
)


def _rotation(theta: float) -> torch.Tensor:
    c, s = math.cos(theta), math.sin(theta)
    return torch.tensor([[c, -s], [s, c]], dtype=torch.float64)


def _random_orthogonal(d: int, seed: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    q, _ = torch.linalg.qr(torch.randn(d, d, generator=g, dtype=torch.float64))
    return q


# --- pca_2d ----------------------------------------------------------------------------------------

# Centred, uncorrelated data: x has variance 14, y has variance 1.02, so the principal axes are x, y.
_X = [3.0, -1.0, -2.0, 0.0, 0.0]
_Y = [0.2, 0.2, 0.2, 0.3, -0.9]


def test_pca_2d_pinned_axes_and_signs():
    base = torch.tensor([[x, y, 0.0] for x, y in zip(_X, _Y, strict=True)], dtype=torch.float64)
    # rotate the 3-D feature space and shift it: the PCA coordinates must not change
    vectors = base @ _random_orthogonal(3, seed=0) + torch.tensor(
        [5.0, -2.0, 1.0], dtype=torch.float64
    )
    coords = pca_2d(vectors)
    # axis 1 is x, its largest |value| (3) positive; axis 2 is y, its largest |value| (-0.9) made
    # positive by flipping the sign of the whole column
    expected = torch.tensor([[x, -y] for x, y in zip(_X, _Y, strict=True)], dtype=torch.float64)
    torch.testing.assert_close(coords, expected, atol=1e-10, rtol=0)
    assert coords.dtype == torch.float64


def test_pca_2d_float32_input_is_computed_in_float64():
    base = torch.tensor([[x, y] for x, y in zip(_X, _Y, strict=True)], dtype=torch.float32)
    assert pca_2d(base).dtype == torch.float64


@given(n=st.integers(4, 12), d=st.integers(2, 6), seed=st.integers(0, 10_000))
def test_pca_2d_properties(n, d, seed):
    g = torch.Generator().manual_seed(seed)
    vectors = torch.randn(n, d, generator=g, dtype=torch.float64) * torch.linspace(
        3, 1, d, dtype=torch.float64
    )
    coords = pca_2d(vectors)
    assert coords.shape == (n, 2)
    torch.testing.assert_close(
        coords.mean(0), torch.zeros(2, dtype=torch.float64), atol=1e-10, rtol=0
    )
    # uncorrelated axes, variance non-increasing
    assert abs(float(coords[:, 0] @ coords[:, 1])) < 1e-8 * float((coords**2).sum())
    assert float((coords[:, 0] ** 2).sum()) >= float((coords[:, 1] ** 2).sum()) - 1e-10
    # the variance kept equals the top two eigenvalues of the scatter matrix
    centred = vectors - vectors.mean(0)
    eig = torch.linalg.eigvalsh(centred.T @ centred)  # ascending
    assert math.isclose(float((coords**2).sum()), float(eig[-2:].sum()), rel_tol=1e-9)
    # invariant to a rotation of the feature space and a shift (the sign rule makes it exact)
    moved = vectors @ _random_orthogonal(d, seed) + 7.0
    torch.testing.assert_close(pca_2d(moved), coords, atol=1e-8, rtol=0)


@given(seed=st.integers(0, 10_000), theta=st.floats(-math.pi, math.pi), reflect=st.booleans())
def test_pca_2d_reference_undoes_a_rotation_or_reflection(seed, theta, reflect):
    g = torch.Generator().manual_seed(seed)
    vectors = torch.randn(9, 5, generator=g, dtype=torch.float64)
    coords = pca_2d(vectors)
    turn = _rotation(theta)
    if reflect:
        turn = turn @ torch.diag(torch.tensor([1.0, -1.0], dtype=torch.float64))
    reference = 3.0 * coords @ turn  # scale does not matter to the alignment
    aligned = pca_2d(vectors, reference=reference)
    torch.testing.assert_close(aligned, coords @ turn, atol=1e-9, rtol=0)


def test_pca_2d_errors():
    with pytest.raises(TypeError, match="vectors"):
        pca_2d(torch.ones(4, 3, dtype=torch.long))
    with pytest.raises(ValueError, match="vectors"):
        pca_2d(torch.ones(4))
    with pytest.raises(ValueError, match="vectors"):
        pca_2d(torch.ones(1, 3))
    with pytest.raises(ValueError, match="reference"):
        pca_2d(torch.randn(4, 3), reference=torch.randn(3, 2))
    with pytest.raises(TypeError, match="reference"):
        pca_2d(torch.randn(4, 3), reference=[[0, 0]] * 4)


# --- cosine_matrix ---------------------------------------------------------------------------------


def test_cosine_matrix_pinned():
    vectors = torch.tensor([[1.0, 0.0], [1.0, 1.0], [0.0, -2.0]])
    r = 1 / math.sqrt(2)
    expected = torch.tensor([[1, r, 0], [r, 1, -r], [0, -r, 1]], dtype=torch.float64)
    torch.testing.assert_close(cosine_matrix(vectors), expected)


@given(n=st.integers(1, 8), d=st.integers(1, 6), seed=st.integers(0, 10_000))
def test_cosine_matrix_matches_torch(n, d, seed):
    vectors = torch.randn(n, d, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)
    expected = torch.nn.functional.cosine_similarity(vectors[:, None], vectors[None, :], dim=-1)
    torch.testing.assert_close(cosine_matrix(vectors), expected)


def test_cosine_matrix_errors():
    with pytest.raises(TypeError, match="vectors"):
        cosine_matrix(torch.ones(3, 2, dtype=torch.int32))
    with pytest.raises(ValueError, match="vectors"):
        cosine_matrix(torch.ones(2, 3, 4))


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
