"""Count-based word vectors: (shifted) positive PMI of a co-occurrence matrix, factorised by SVD.

PPMI keeps the positive part of the pointwise mutual information of a word ``i`` and a context
``j``. Levy & Goldberg 2014 showed that skip-gram with K negative samples implicitly factorises the
*shifted* PMI matrix PMI − log K; ``shift=K`` computes max(PMI − log K, 0). A truncated SVD then
gives d-dimensional word vectors (Levy, Goldberg & Dagan 2015 treat the exponent ``p`` of the
singular values as a hyper-parameter; p = 1/2 is symmetric).

Equation:
    PMI(i, j) = log( X_ij · Σ X / (X_i · X_j) ),   X_i = Σ_j X_ij,   X_j = Σ_i X_ij
    M ≈ U_d Σ_d V_dᵀ,   vectors = U_d Σ_d^p

References:
    Levy & Goldberg, Neural Word Embedding as Implicit Matrix Factorization, NIPS 2014.
    Levy, Goldberg & Dagan, Improving Distributional Similarity with Lessons Learned from Word
    Embeddings, TACL 3, 2015.
"""

from __future__ import annotations

import torch

from lib._checks import check_counts, check_floating, check_positive_float, check_positive_int

__all__ = ["ppmi", "svd_vectors"]


def ppmi(X: torch.Tensor, *, shift: float = 1.0, alpha: float = 1.0) -> torch.Tensor:
    """Shifted positive PMI of a co-occurrence matrix, with optional context-distribution smoothing.

    Equation:
        SPPMI(i, j) = max(PMI_α(i, j) − log shift, 0),  and 0 where X_ij = 0
        PMI_α(i, j) = log( P(i, j) / (P(i) P_α(j)) ),  P_α(j) = X_·j^α / Σ_j' X_·j'^α

    Args:
        X: non-negative co-occurrence counts (rows words, columns contexts).
        shift: K of Levy & Goldberg 2014 (>= 1); 1 gives plain PPMI.
        alpha: exponent of the context counts in P_α (0 < alpha <= 1); 1 (the default) is plain
            PMI, Levy, Goldberg & Dagan 2015 use 0.75 (word2vec's 3/4 for negatives), which raises
            the probability of rare contexts and so lowers their PMI.

    Returns:
        The float64 matrix.

    Raises:
        TypeError: X is not a floating tensor.
        ValueError: X is not 2-D, has a negative entry or sums to 0, shift < 1, or alpha not in
            (0, 1].

    Shapes:
        X: [V, C] -> [V, C]

    References:
        Levy & Goldberg, Neural Word Embedding as Implicit Matrix Factorization, NIPS 2014.
        Levy, Goldberg & Dagan, Improving Distributional Similarity with Lessons Learned from Word
        Embeddings, TACL 2015 (context-distribution smoothing, section 3.2).
    """
    X = check_floating("X", X)
    if X.dim() != 2:
        raise ValueError(f"X must be a [V, C] matrix, got shape {tuple(X.shape)}")
    X = check_counts("X", X)
    shift = check_positive_float("shift", shift)
    if shift < 1:
        raise ValueError(f"shift must be >= 1 (a number of negative samples), got {shift}")
    alpha = check_positive_float("alpha", alpha)
    if alpha > 1:
        raise ValueError(
            f"alpha must be in (0, 1] (1: no smoothing, 0.75: Levy et al. 2015), got {alpha}"
        )
    X = X.double()
    total = X.sum()
    if total <= 0:
        raise ValueError("X has no positive entry")
    row, col = X.sum(1, keepdim=True), X.sum(0, keepdim=True)  # [V, 1], [1, C]
    if alpha != 1:  # P_α(c) in place of col / total: log P(i,j) / (P(i) P_α(j))
        col = total * col**alpha / (col**alpha).sum()  # [1, C]
    positive = X > 0
    pmi = torch.zeros_like(X)
    pmi[positive] = torch.log(X * total / (row * col))[positive]
    return (pmi - torch.log(torch.tensor(shift, dtype=torch.float64))).clamp_min(0) * positive


def svd_vectors(M: torch.Tensor, dim: int, *, power: float = 0.5) -> torch.Tensor:
    """Word vectors from a truncated SVD of ``M``.

    Equation:
        M ≈ U_d Σ_d V_dᵀ,   vectors = U_d · diag(σ_d)^power

    Args:
        M: the matrix to factorise (e.g. :func:`ppmi`).
        dim: d <= min(V, C).
        power: exponent p of the singular values (0 drops them, 1 keeps them, 1/2 splits them
            between words and contexts).

    Returns:
        float64 vectors, the columns' signs fixed so that each column's largest-magnitude entry is
        positive (an SVD is unique only up to sign; this makes the result deterministic).

    Raises:
        TypeError: M is not a floating tensor. ValueError: M is not 2-D, or dim is out of range.

    Shapes:
        M: [V, C] -> [V, dim]

    References:
        Levy, Goldberg & Dagan, Improving Distributional Similarity, TACL 3, 2015.
    """
    M = check_floating("M", M)
    if M.dim() != 2:
        raise ValueError(f"M must be a [V, C] matrix, got shape {tuple(M.shape)}")
    dim = check_positive_int("dim", dim)
    if dim > min(M.shape):
        raise ValueError(f"dim must be <= min(V, C) = {min(M.shape)}, got {dim}")
    power = check_positive_float("power", power, allow_zero=True)
    U, S, _ = torch.linalg.svd(M.double(), full_matrices=False)
    U, S = U[:, :dim], S[:dim]
    signs = torch.sign(U.gather(0, U.abs().argmax(0, keepdim=True)))  # [1, dim]
    return U * signs * S**power
