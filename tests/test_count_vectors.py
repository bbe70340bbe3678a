"""Tests for lib.count_vectors: PPMI by hand, the Levy & Goldberg shift, and the SVD vectors."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from lib.count_vectors import ppmi, svd_vectors


def test_ppmi_matches_hand_computation() -> None:
    X = torch.tensor([[2.0, 0.0], [1.0, 1.0]])  # total 4; rows 2, 2; columns 3, 1
    M = ppmi(X)
    assert M[0, 0].item() == pytest.approx(math.log(2 * 4 / (2 * 3)))  # log 4/3 > 0
    assert M[0, 1].item() == 0.0  # zero count
    assert M[1, 0].item() == 0.0  # log(1·4 / (2·3)) < 0 -> clipped
    assert M[1, 1].item() == pytest.approx(math.log(1 * 4 / (2 * 1)))


@settings(max_examples=25, deadline=None)
@given(st.integers(1, 10), st.integers(0, 2**16))
def test_shift_subtracts_log_k_before_clipping(k: int, seed: int) -> None:
    X = torch.randint(0, 5, (6, 7), generator=torch.Generator().manual_seed(seed)).double()
    if X.sum() == 0:
        X[0, 0] = 1.0
    plain, shifted = ppmi(X), ppmi(X, shift=k)
    positive = X > 0
    total, row, col = X.sum(), X.sum(1, keepdim=True), X.sum(0, keepdim=True)
    pmi = torch.log(X * total / (row * col))
    expected = torch.where(positive, (pmi - math.log(k)).clamp_min(0), torch.zeros_like(X))
    torch.testing.assert_close(shifted, expected, rtol=0, atol=1e-12)
    assert bool((shifted <= plain + 1e-12).all())


def test_svd_vectors_reconstruct_and_are_deterministic() -> None:
    g = torch.Generator().manual_seed(0)
    M = torch.randn(8, 5, generator=g, dtype=torch.float64)
    full = svd_vectors(M, 5, power=1.0)  # U Σ, columns up to sign
    U, S, _ = torch.linalg.svd(M, full_matrices=False)
    torch.testing.assert_close(full.abs(), (U * S).abs())
    half = svd_vectors(M, 5)  # U Σ^(1/2)
    torch.testing.assert_close(half.abs(), (U * S.sqrt()).abs())
    assert torch.equal(svd_vectors(M, 3), svd_vectors(M.clone(), 3))
    column_max = svd_vectors(M, 3).gather(0, svd_vectors(M, 3).abs().argmax(0, keepdim=True))
    assert bool((column_max > 0).all())


def test_bad_input_raises() -> None:
    with pytest.raises(ValueError, match="non-negative"):
        ppmi(-torch.ones(2, 2))
    with pytest.raises(ValueError, match="shift"):
        ppmi(torch.ones(2, 2), shift=0.5)
    with pytest.raises(ValueError, match="dim"):
        svd_vectors(torch.ones(3, 2), 3)
    with pytest.raises(TypeError):
        ppmi(torch.ones(2, 2, dtype=torch.long))


def test_ppmi_context_smoothing_matches_levy_et_al_2015() -> None:
    """alpha = 0.75 uses P_α(c) = #c^α / Σ #c'^α (LGD 2015 §3.2); alpha = 1 is plain PPMI."""
    X = torch.tensor([[4.0, 1.0, 0.0], [2.0, 0.0, 1.0], [1.0, 3.0, 6.0]], dtype=torch.float64)
    smoothed = ppmi(X, alpha=0.75)
    total, row, col = X.sum(), X.sum(1, keepdim=True), X.sum(0, keepdim=True)
    p_alpha = col**0.75 / (col**0.75).sum()
    pmi = torch.log((X / total) / ((row / total) * p_alpha))
    expected = torch.where(X > 0, pmi.clamp_min(0), torch.zeros_like(X))
    torch.testing.assert_close(smoothed, expected, rtol=0, atol=1e-12)
    assert not torch.allclose(smoothed, ppmi(X))  # ignoring alpha fails here
    assert torch.equal(ppmi(X, alpha=1.0), ppmi(X))
    # rarest context (column 1, 4 counts vs 7 and 7) gets a larger P_α than P, so a lower PMI
    with pytest.raises(ValueError, match="alpha"):
        ppmi(X, alpha=1.5)
    with pytest.raises(ValueError, match="alpha"):
        ppmi(X, alpha=0.0)
