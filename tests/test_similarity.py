"""Tests for lib.similarity: cosines, offset similarity, principal components, 2-D PCA, neighbours.

Expected values come from hand-made tables whose similarities are known exactly (orthogonal or
parallel rows, unit circles), closed forms (the sinusoidal table), torch's and transformers'
own cosines, never from the function under test.
"""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

from lib.similarity import (
    cosine_matrix,
    mean_similarity_by_offset,
    nearest_neighbour_accuracy,
    neighbour_class_share,
    pair_retrieval,
    pca_2d,
    principal_components,
    rms_norm,
)

WORDS = ["a1", "a2", "b1", "b2", "x"]
VECTORS = torch.tensor([[1.0, 0.0], [0.9, 0.1], [0.0, 1.0], [0.1, 0.9], [-1.0, -1.0]])


def test_class_share_by_hand() -> None:
    classes = {"a": ["a1", "a2"], "b": ["b1", "b2"]}
    assert neighbour_class_share(VECTORS, WORDS, classes, k=1) == 1.0
    # k = 2: each word's second neighbour is from the other class
    assert neighbour_class_share(VECTORS, WORDS, classes, k=2) == 0.5
    with pytest.raises(ValueError, match="not in words"):
        neighbour_class_share(VECTORS, WORDS, {"a": ["zz"]}, k=1)
    with pytest.raises(ValueError, match="two classes"):
        neighbour_class_share(VECTORS, WORDS, {"a": ["a1"], "b": ["a1"]}, k=1)
    with pytest.raises(ValueError, match="k"):
        neighbour_class_share(VECTORS, WORDS, classes, k=5)


def test_nearest_neighbour_accuracy_by_hand() -> None:
    labels = ["a", "a", "b", "b", "b"]
    assert nearest_neighbour_accuracy(VECTORS[:4], labels[:4], centre=False) == 1.0
    # x's nearest neighbour (by cosine) is none of the b's pointing up-right: it is wrong
    assert nearest_neighbour_accuracy(VECTORS, labels, centre=False) == pytest.approx(4 / 5)
    same = torch.ones(4, 3)
    assert nearest_neighbour_accuracy(same, ["a", "a", "b", "b"], centre=False) == 0.0  # all ties
    with pytest.raises(ValueError, match="distinct"):
        nearest_neighbour_accuracy(VECTORS, ["a"] * 5)


def test_cosine_neighbours_by_hand() -> None:
    from lib.similarity import cosine_neighbours

    # row 0 = (1, 0): a2 = (0.9, 0.1) is nearest, then b2 = (0.1, 0.9), then b1 = (0, 1)
    indices, cosines = cosine_neighbours(VECTORS, 0, k=3)
    assert indices.tolist() == [1, 3, 2]
    expected = [0.9 / 0.82**0.5, 0.1 / 0.82**0.5, 0.0]
    torch.testing.assert_close(cosines, torch.tensor(expected), rtol=0, atol=1e-6)
    # the query row is never its own neighbour, even with k = V - 1
    assert 4 not in cosine_neighbours(VECTORS, 4, k=4)[0].tolist()
    # cosine ignores the rows' lengths
    scaled = VECTORS * torch.tensor([[1.0], [7.0], [0.5], [3.0], [2.0]])
    assert cosine_neighbours(scaled, 0, k=3)[0].tolist() == [1, 3, 2]
    with pytest.raises(ValueError, match="k must be < V"):
        cosine_neighbours(VECTORS, 0, k=5)
    with pytest.raises(ValueError, match="index"):
        cosine_neighbours(VECTORS, 5, k=1)
    with pytest.raises(ValueError, match="table"):
        cosine_neighbours(VECTORS[0], 0, k=1)
    with pytest.raises(TypeError, match="table"):
        cosine_neighbours(torch.ones(3, 2, dtype=torch.long), 0, k=1)


# --- cosine_matrix, mean_similarity_by_offset, principal_components (position tables) ----------

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


# --- helpers ---------------------------------------------------------------------------------------


def test_position_cosine_pinned():
    sim = cosine_matrix(TABLE)
    assert sim.dtype == torch.float64
    torch.testing.assert_close(sim, torch.tensor(TABLE_COS, dtype=torch.float64))


def test_position_cosine_zero_row_is_zero_not_nan():
    sim = cosine_matrix(torch.tensor([[0.0, 0.0], [1.0, 1.0]]))
    assert sim[0, 1].item() == 0.0 and not torch.isnan(sim).any()


@given(n=st.integers(2, 40), d=st.integers(1, 16), seed=st.integers(0, 10_000))
def test_position_cosine_properties(n, d, seed):
    table = torch.randn(n, d, generator=torch.Generator().manual_seed(seed))
    sim = cosine_matrix(table)
    assert sim.shape == (n, n)
    torch.testing.assert_close(sim, sim.T)
    assert (sim.abs() <= 1 + 1e-12).all()
    i, j = 0, n - 1
    want = float(table[i] @ table[j]) / float(table[i].norm() * table[j].norm())
    assert sim[i, j].item() == pytest.approx(want, abs=1e-6)


def test_mean_similarity_by_offset_circle_is_cos_k_omega():
    omega = 0.3
    curve = mean_similarity_by_offset(circle(50, omega), 10)
    want = torch.tensor([math.cos(k * omega) for k in range(11)], dtype=torch.float64)
    torch.testing.assert_close(curve, want)


def test_mean_similarity_by_offset_skips_first_rows():
    # row 0 is an outlier: -e0 among e0s; with first=1 every pair is parallel
    table = torch.tensor([[-1.0, 0.0], [1.0, 0.0], [2.0, 0.0], [3.0, 0.0]])
    assert mean_similarity_by_offset(table, 2, first=1).tolist() == [1.0, 1.0, 1.0]
    # first=0: offset 1 averages cos(r0,r1)=-1, 1, 1 -> 1/3
    assert mean_similarity_by_offset(table, 1)[1].item() == pytest.approx(1 / 3)


def test_mean_similarity_by_offset_matches_sinusoidal_closed_form():
    d, n = 16, 60
    p = torch.arange(n, dtype=torch.float64)[:, None]
    w = 10000.0 ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)
    table = torch.empty(n, d, dtype=torch.float64)
    table[:, 0::2], table[:, 1::2] = torch.sin(p * w), torch.cos(p * w)
    curve = mean_similarity_by_offset(table, 20)
    want = torch.stack([torch.cos(k * w).sum() / (d / 2) for k in range(21)])
    torch.testing.assert_close(curve, want)


def test_principal_components_of_a_circle():
    n = 40
    omega = 2 * math.pi / 8  # period 8: exactly 5 turns, so the rows have mean zero
    table = torch.cat([circle(n, omega), torch.zeros(n, 3, dtype=torch.float64)], dim=1)
    scores, share = principal_components(table, 2)
    torch.testing.assert_close(share, torch.tensor([0.5, 0.5], dtype=torch.float64))
    assert (scores[0] >= 0).all()  # sign convention
    # the scores trace a circle of radius 1 (up to a rotation within the plane)
    torch.testing.assert_close(scores.norm(dim=-1), torch.ones(n, dtype=torch.float64))


def test_principal_components_one_direction_and_first():
    # rows 1..4 vary along (3, 4)/5 only: PC 1 holds all the variance; row 0 is skipped
    t = torch.tensor([-1.5, -0.5, 0.5, 1.5], dtype=torch.float64)
    rows = t[:, None] * torch.tensor([3.0, 4.0], dtype=torch.float64) / 5
    table = torch.cat([torch.tensor([[100.0, -100.0]], dtype=torch.float64), rows])
    scores, share = principal_components(table, 1, first=1)
    assert share.tolist() == pytest.approx([1.0])
    torch.testing.assert_close(scores[:, 0], -t)  # sign: first score >= 0


def test_helper_errors():
    with pytest.raises(TypeError, match="vectors"):
        cosine_matrix(torch.zeros(3, 2, dtype=torch.long))
    with pytest.raises(ValueError, match="vectors"):
        cosine_matrix(torch.zeros(5))
    with pytest.raises(ValueError, match="table"):
        mean_similarity_by_offset(torch.zeros(1, 4), 1)
    with pytest.raises(ValueError, match="max_offset"):
        mean_similarity_by_offset(TABLE, 4)
    with pytest.raises(ValueError, match="max_offset"):
        mean_similarity_by_offset(TABLE, 2, first=2)
    with pytest.raises(ValueError, match="max_offset"):
        mean_similarity_by_offset(TABLE, 0)
    with pytest.raises(ValueError, match="first"):
        mean_similarity_by_offset(TABLE, 1, first=-1)
    with pytest.raises(ValueError, match="n_components"):
        principal_components(TABLE, 3)
    with pytest.raises(ValueError, match="first"):
        principal_components(TABLE, 1, first=3)
    with pytest.raises(TypeError, match="n_components"):
        principal_components(TABLE, 1.0)


# --- cosine_matrix on word vectors, pca_2d ----------------------------------------------------


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
        cosine_matrix(torch.ones(4))


# --- cosine_matrix on hidden states, layer by layer ------------------------------------------


def test_cosine_matrix_matches_a_transformers_bert_layer_by_layer():
    """Batched cosines of BertModel's hidden_states equal torch's, pair by pair."""
    import transformers

    config = transformers.BertConfig(
        vocab_size=50, hidden_size=16, num_hidden_layers=3, num_attention_heads=2,
        intermediate_size=32, max_position_embeddings=32,
    )  # fmt: skip
    torch.manual_seed(0)
    model = transformers.BertModel(config).eval()
    ids = torch.tensor([[1, 7, 9, 7, 2]])
    with torch.no_grad():
        hidden = model(input_ids=ids, output_hidden_states=True).hidden_states
    states = torch.stack([h[0] for h in hidden])  # [L + 1, T, d]
    cos = cosine_matrix(states)
    for layer, h in enumerate(hidden):
        expected = torch.nn.functional.cosine_similarity(h[0][:, None], h[0][None, :], dim=-1)
        torch.testing.assert_close(cos[layer], expected.double(), atol=1e-6, rtol=0)
    # at layer 0 the two copies of token 7 differ only by position: close, not identical
    assert 0.0 < cos[0, 1, 3] < 1.0 - 1e-6


def test_batched_cosine_matrix_pinned():
    states = torch.tensor([[[1.0, 0.0], [0.0, 2.0], [1.0, 1.0]]])  # [1, 3, 2]
    r = 1 / math.sqrt(2)
    expected = torch.tensor([[[1, 0, r], [0, 1, r], [r, r, 1]]], dtype=torch.float64)
    torch.testing.assert_close(cosine_matrix(states), expected)


@given(layers=st.integers(1, 4), n_tokens=st.integers(1, 7), seed=st.integers(0, 10_000))
def test_batched_cosine_matrix_properties(layers, n_tokens, seed):
    g = torch.Generator().manual_seed(seed)
    states = torch.randn(layers, n_tokens, 5, generator=g)
    cos = cosine_matrix(states)
    assert cos.shape == (layers, n_tokens, n_tokens) and cos.dtype == torch.float64
    torch.testing.assert_close(cos, cos.transpose(1, 2))
    torch.testing.assert_close(
        cos.diagonal(dim1=1, dim2=2), torch.ones(layers, n_tokens, dtype=torch.float64)
    )
    scale = torch.rand(layers, n_tokens, 1, generator=g) + 0.1  # positive rescaling of each token
    torch.testing.assert_close(cosine_matrix(states * scale), cos)


def test_batched_cosine_matrix_errors():
    with pytest.raises(TypeError, match="vectors"):
        cosine_matrix(torch.ones(2, 3, 4, dtype=torch.long))


def test_cosine_with_matches_torch_and_rejects_bad_shapes():
    from lib.similarity import cosine_with  # appended by the chapter 2 work (lib.word2vec uses it)

    g = torch.Generator().manual_seed(3)
    table, query = torch.randn(6, 4, generator=g), torch.randn(4, generator=g)
    expected = torch.nn.functional.cosine_similarity(table.double(), query.double()[None], dim=-1)
    torch.testing.assert_close(cosine_with(table, query), expected, rtol=0, atol=1e-12)
    assert cosine_with(table, 3 * table[2])[2].item() == pytest.approx(1.0, abs=1e-12)
    with pytest.raises(ValueError, match="query"):
        cosine_with(table, torch.ones(5))
    with pytest.raises(TypeError, match="query"):
        cosine_with(table, torch.ones(4, dtype=torch.long))


def test_rms_norm_pinned_and_scales_with_the_vectors():
    vectors = torch.tensor([[3.0, 4.0], [0.0, 0.0], [1.0, 0.0], [0.0, 1.0]])  # norms 5, 0, 1, 1
    rms = rms_norm(vectors)
    assert rms.dtype == torch.float64 and rms.shape == ()
    assert rms.item() == pytest.approx(math.sqrt(27 / 4), rel=1e-15)
    assert rms_norm(2.5 * vectors).item() == pytest.approx(2.5 * rms.item(), rel=1e-15)
    # rows of one length r have RMS norm r, whatever their directions
    unit_rows = torch.tensor([[0.6, 0.8], [-0.8, 0.6], [0.0, -1.0]], dtype=torch.float64)
    assert rms_norm(unit_rows).item() == pytest.approx(1.0, rel=1e-15)
    assert rms_norm(torch.empty(5, 3, device="meta")).shape == ()
    with pytest.raises(ValueError, match="vectors"):
        rms_norm(torch.zeros(0, 3))
    with pytest.raises(ValueError, match="vectors"):
        rms_norm(torch.zeros(3))
    with pytest.raises(TypeError, match="vectors"):
        rms_norm(torch.tensor([[1, 2]]))


# --- pair_retrieval ---------------------------------------------------------------------------


def _pair_retrieval_by_loops(x: torch.Tensor, partner: list[int]) -> tuple[float, float, float]:
    n = len(partner)
    u = [v / v.norm() for v in x.double()]
    c = [[float(u[i] @ u[j]) for j in range(n)] for i in range(n)]
    found, pair, other = 0, [], []
    for i in range(n):
        rest = [c[i][j] for j in range(n) if j not in (i, partner[i])]
        found += c[i][partner[i]] > max(rest)
        pair.append(c[i][partner[i]])
        other.extend(rest)
    gap = sum(pair) / n - sum(other) / len(other)
    return found / n, gap, gap / float(torch.tensor(other, dtype=torch.float64).std(correction=0))


def test_pair_retrieval_by_hand() -> None:
    # 0 <-> 1 and 2 <-> 3, on two orthogonal axes, slightly spread: every partner is found
    x = torch.tensor([[1.0, 0.1], [1.0, -0.1], [0.1, 1.0], [-0.1, 1.0]])
    found, gap, z = pair_retrieval(x, [1, 0, 3, 2])
    assert found == 1.0
    c = F.normalize(x.double(), dim=-1) @ F.normalize(x.double(), dim=-1).T
    pair = (c[0, 1] + c[2, 3]) / 2  # each pair counted twice, same value
    others = torch.stack([c[0, 2], c[0, 3], c[1, 2], c[1, 3]])
    assert gap == pytest.approx(float(pair - others.mean()), abs=1e-12)
    assert z == pytest.approx(gap / float(others.std(correction=0)), abs=1e-12)
    # wrong partners: none found, negative gap
    found_w, gap_w, _ = pair_retrieval(x, [2, 3, 0, 1])
    assert found_w == 0.0 and gap_w < 0
    # a tie with an unrelated vector is not "found"
    tie = torch.tensor([[1.0, 0.0], [1.0, 0.0], [1.0, 0.0], [0.0, 1.0]])
    # rows 0, 1: the partner's cosine 1 ties row 2's; rows 2, 3: partner cos 0, ties or worse
    assert pair_retrieval(tie, [1, 0, 3, 2])[0] == 0.0
    assert pair_retrieval(tie, [1, 0, 3, 2]) == pytest.approx(
        _pair_retrieval_by_loops(tie, [1, 0, 3, 2])
    )


@settings(max_examples=40, deadline=None)
@given(
    n_pairs=st.integers(2, 5),
    d=st.integers(2, 6),
    seed=st.integers(0, 2**16),
    scale=st.floats(0.01, 100.0),
)
def test_pair_retrieval_matches_loops_and_ignores_row_scale(n_pairs, d, seed, scale) -> None:
    g = torch.Generator().manual_seed(seed)
    n = 2 * n_pairs
    x = torch.randn(n, d, generator=g, dtype=torch.float64)
    partner = [i + 1 if i % 2 == 0 else i - 1 for i in range(n)]
    got = pair_retrieval(x, partner)
    assert got == pytest.approx(_pair_retrieval_by_loops(x, partner), abs=1e-9)
    # cosines: a positive scale per row changes nothing
    w = torch.rand(n, 1, generator=g, dtype=torch.float64) * scale + 1e-3
    assert pair_retrieval(x * w, partner) == pytest.approx(got, abs=1e-9)


def test_pair_retrieval_refuses_bad_input() -> None:
    x = torch.randn(4, 3)
    with pytest.raises(ValueError, match="differ"):
        pair_retrieval(x, [0, 2, 1, 3])
    with pytest.raises(ValueError, match=r"partner\[1\]"):
        pair_retrieval(x, [1, 4, 3, 2])
    with pytest.raises(TypeError, match="partner"):
        pair_retrieval(x, [1, 0.0, 3, 2])
    with pytest.raises(TypeError, match="partner"):
        pair_retrieval(x, "1032")
    with pytest.raises(ValueError, match=r"\[n, d\]"):
        pair_retrieval(x, [1, 0, 2])
    with pytest.raises(TypeError, match="vectors"):
        pair_retrieval(x.long(), [1, 0, 3, 2])
    with pytest.raises(ValueError, match="all equal"):
        pair_retrieval(torch.ones(3, 2), [1, 0, 1])
