"""Similarity and projection of vector tables: the analysis every chapter's figures draw.

One place for the mathematics that figures show (:mod:`lib.viz` only draws):

- :func:`cosine_matrix`: pairwise cosine similarities, ``[..., N, d] -> [..., N, N]``;
- :func:`mean_similarity_by_offset`: the mean cosine of rows ``k`` apart (position tables);
- :func:`principal_components` and :func:`pca_2d`: principal component scores of a table;
- :func:`rms_norm`: the root-mean-square length of a table's rows (how large vectors have grown);
- :func:`neighbour_class_share` and :func:`nearest_neighbour_accuracy`: neighbour queries.

:func:`neighbour_class_share` measures what kind of similarity a table encodes: for words whose
class is known (e.g. people, capitals, past-tense verbs), the share of each word's ``k`` nearest
neighbours by cosine that belong to the *same* class. Words of one class can replace each other in
a sentence ("substitutes"), so a high share means substitute-style similarity; a low one means the
neighbours are words that merely occur nearby ("related" words).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import torch
import torch.nn.functional as F

from lib._checks import (
    check_floating,
    check_index,
    check_int,
    check_positive_int,
    check_rows_and_vector,
)

__all__ = [
    "cosine_matrix",
    "cosine_neighbours",
    "cosine_with",
    "mean_similarity_by_offset",
    "nearest_neighbour_accuracy",
    "neighbour_class_share",
    "pair_retrieval",
    "pca_2d",
    "principal_components",
    "rms_norm",
]


def cosine_matrix(vectors: torch.Tensor) -> torch.Tensor:
    """Pairwise cosine similarities of the rows of ``vectors`` (in every leading batch), float64.

    A zero row has cosine 0 with every row (its norm is clamped away from zero, as in
    ``torch.nn.functional.normalize``). The similarity of Mikolov et al. 2013 (word vectors) and of
    position tables (learned or sinusoidal).

    Equation:
        S[..., i, j] = x_i · x_j / (‖x_i‖ ‖x_j‖)

    Args:
        vectors: floating tensor, at least 2-D.

    Returns:
        The similarities, symmetric, 1 on the diagonal (for nonzero rows).

    Raises:
        TypeError: ``vectors`` is not a floating tensor.
        ValueError: ``vectors`` has fewer than 2 dimensions.

    Shapes:
        vectors: [..., N, d] -> [..., N, N]

    References:
        Mikolov et al., Efficient Estimation of Word Representations, arXiv:1301.3781.
    """
    vectors = check_floating("vectors", vectors)
    if vectors.dim() < 2:
        raise ValueError(
            f"vectors must be at least 2-D [..., N, d], got shape {tuple(vectors.shape)}"
        )
    unit = F.normalize(vectors.detach().to(torch.float64), dim=-1)  # [..., N, d], rows of norm 1
    return unit @ unit.transpose(-1, -2)  # [..., N, N]


def _table(table: object) -> torch.Tensor:
    """A 2-D floating position table with >= 2 rows, as float64."""
    table = check_floating("table", table)
    if table.dim() != 2 or table.shape[0] < 2:
        raise ValueError(
            f"table must be 2-D [positions, d_model] with at least 2 rows, got shape "
            f"{list(table.shape)}"
        )
    return table.detach().to(torch.float64)


def mean_similarity_by_offset(
    table: torch.Tensor, max_offset: int, *, first: int = 0
) -> torch.Tensor:
    """Mean cosine similarity of the rows ``k`` apart, for every offset ``k = 0 … max_offset``.

    The mean runs over ``p = first … L − 1 − k`` (``first`` skips special rows such as BERT's
    position 0, which only ever holds ``[CLS]``); ``m[0] = 1``. For the sinusoidal table every
    term equals ``(2/d) Σ_i cos(k ω_i)``, whatever p.

    Equation:
        m[k] = mean_p cos(P[p], P[p + k])

    Args:
        table: a position table (learned or sinusoidal), floating.
        max_offset: the largest offset K, ``1 <= K < L - first``.
        first: the first row used, >= 0.

    Returns:
        ``m``, float64.

    Raises:
        TypeError: ``table`` is not floating, or an int argument is not an int.
        ValueError: ``table`` is not 2-D with >= 2 rows, or ``max_offset``/``first`` out of range.

    Shapes:
        table: [L, d] -> [max_offset + 1]

    References:
        Vaswani et al., Attention Is All You Need, arXiv:1706.03762.
        Devlin et al., BERT, arXiv:1810.04805.
    """
    sim = cosine_matrix(_table(table))  # [L, L]
    max_offset = check_positive_int("max_offset", max_offset)
    first = check_int("first", first, minimum=0)
    length = sim.shape[0]
    if first + max_offset >= length:
        raise ValueError(
            f"max_offset must be < L - first = {length - first} (table of L = {length} rows, "
            f"first = {first}), got {max_offset}"
        )
    block = sim[first:, first:]  # [L - first, L - first]
    return torch.stack([torch.diagonal(block, k).mean() for k in range(max_offset + 1)])


def _scores(rows: torch.Tensor, n: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Centre ``rows [N, d]`` (float64) and return the top-``n`` scores ``U Σ [N, n]`` and all Σ."""
    centred = rows - rows.mean(dim=0, keepdim=True)  # [N, d]
    u, s, _ = torch.linalg.svd(centred, full_matrices=False)  # u: [N, r], s: [r]
    return u[:, :n] * s[:n], s


def principal_components(
    table: torch.Tensor, n_components: int, *, first: int = 0
) -> tuple[torch.Tensor, torch.Tensor]:
    """The top principal components of a table's rows, as functions of the row, and their shares.

    Rows ``first … L − 1`` are centred and decomposed; the scores say how much of direction
    ``V[:, j]`` row ``p`` holds. Each component's sign is fixed so that its score at row
    ``first`` is >= 0 (an SVD's signs are arbitrary). Computed in float64 by an exact SVD.

    Equation:
        X = P − mean(P) = U Σ Vᵀ,  scores = U[:, :n] Σ[:n],  share_j = Σ_j² / Σ_k Σ_k²

    Args:
        table: floating table, e.g. a position table.
        n_components: n, ``1 <= n <= min(L - first, d)``.
        first: the first row used, ``0 <= first < L - 1``.

    Returns:
        ``(scores, share)``: the scores and each component's fraction of the total variance.

    Raises:
        TypeError: ``table`` is not floating, or an int argument is not an int.
        ValueError: ``table`` is not 2-D with >= 2 rows, or an argument is out of range.

    Shapes:
        table: [L, d] -> scores [L − first, n], share [n]

    References:
        Pearson 1901, On lines and planes of closest fit (principal component analysis).
    """
    table = _table(table)
    n_components = check_positive_int("n_components", n_components)
    first = check_int("first", first, minimum=0)
    if first >= table.shape[0] - 1:
        raise ValueError(f"first must be < L - 1 = {table.shape[0] - 1}, got {first}")
    rows = table[first:]  # [L', d]
    if n_components > min(rows.shape):
        raise ValueError(
            f"n_components must be <= min(L - first, d) = {min(rows.shape)}, got {n_components}"
        )
    scores, s = _scores(rows, n_components)  # [L', n], [r]
    signs = torch.where(scores[0] < 0, -1.0, 1.0).to(scores.dtype)  # [n]
    share = s[:n_components] ** 2 / (s**2).sum()
    return scores * signs, share


def pca_2d(vectors: torch.Tensor, reference: torch.Tensor | None = None) -> torch.Tensor:
    """Project N vectors onto their first two principal components, with a deterministic sign.

    Computed in float64 by an exact SVD, so the result is the same on every run. A principal axis
    is only defined up to sign (and two axes of equal variance up to a rotation), so without
    ``reference`` each column is flipped so that its entry of largest magnitude is positive; with
    ``reference`` the coordinates are rotated (or reflected) onto it by the orthogonal R that
    minimises ‖Y R − reference‖ (orthogonal Procrustes, Schönemann 1966). This keeps the frames of
    an animation from spinning or flipping and changes no distance within a frame.

    Equation:
        X = vectors − mean = U S Vᵀ,  Y = U[:, :2] S[:2];  R = A Wᵀ from Yᵀ reference = A Σ Wᵀ

    Args:
        vectors: floating, N >= 2 rows, d >= 2 columns.
        reference: optional floating ``[N, 2]`` coordinates to align with.

    Returns:
        The 2-D coordinates, float64.

    Raises:
        TypeError: ``vectors`` or ``reference`` is not a floating tensor.
        ValueError: wrong shapes.

    Shapes:
        vectors: [N, d], reference: [N, 2] -> [N, 2]

    References:
        Pearson 1901 (principal components); Schönemann 1966 (orthogonal Procrustes).
    """
    vectors = check_floating("vectors", vectors)
    if vectors.dim() != 2:
        raise ValueError(f"vectors must be 2-D [N, d], got shape {tuple(vectors.shape)}")
    n, d = vectors.shape
    if n < 2 or d < 2:
        raise ValueError(f"vectors must have at least 2 rows and 2 columns, got {(n, d)}")
    if reference is not None:
        reference = check_floating("reference", reference)
        if tuple(reference.shape) != (n, 2):
            raise ValueError(f"reference must have shape {(n, 2)}, got {tuple(reference.shape)}")
    coords, _ = _scores(vectors.to(torch.float64), 2)  # [N, 2] = X V[:, :2]
    if reference is not None:
        u_r, _, w_h = torch.linalg.svd(coords.T @ reference.to(torch.float64))  # [2, 2] each
        return coords @ (u_r @ w_h)  # [N, 2], rotated/reflected onto the reference
    pivot = coords.abs().argmax(dim=0)  # [2]: row of the largest |coordinate| per axis
    signs = torch.sign(coords[pivot, torch.arange(2)])  # [2]
    signs[signs == 0] = 1.0
    return coords * signs


def neighbour_class_share(
    vectors: torch.Tensor,
    words: Sequence[str],
    classes: Mapping[str, Sequence[str]],
    k: int = 5,
) -> float:
    """Share of the ``k`` cosine-nearest neighbours of every classed word that share its class.

    Over the N words of ``classes``; the query word itself is excluded from its neighbours.

    Equation:
        share = (1 / (N k)) Σ_w #{n ∈ NN_k(w) : class(n) = class(w)}

    Args:
        vectors: the table, row i is ``words[i]``.
        words: the V words.
        classes: class name -> its words (each word in at most one class, all in ``words``).
        k: neighbours per word, 1 <= k < V.

    Returns:
        A float in [0, 1].

    Raises:
        TypeError: ``vectors`` is not floating or ``k`` not an int.
        ValueError: shapes disagree, a class word is unknown or in two classes, or k is out of range.

    Shapes:
        vectors: [V, d]
    """
    vectors = check_floating("vectors", vectors)
    if vectors.dim() != 2 or vectors.shape[0] != len(words):
        raise ValueError(
            f"vectors must be [V, d] with V = len(words) = {len(words)}, got {tuple(vectors.shape)}"
        )
    k = check_positive_int("k", k)
    if k >= len(words):
        raise ValueError(f"k must be < V = {len(words)}, got {k}")
    index = {w: i for i, w in enumerate(words)}
    label: dict[int, str] = {}
    for name, members in classes.items():
        for w in members:
            if w not in index:
                raise ValueError(f"class {name!r} holds {w!r}, which is not in words")
            if index[w] in label:
                raise ValueError(f"{w!r} is in two classes")
            label[index[w]] = name
    if not label:
        raise ValueError("classes must hold at least one word")
    unit = F.normalize(vectors.double(), dim=-1)
    queries = torch.tensor(sorted(label))
    scores = unit[queries] @ unit.T  # [N, V]
    scores[torch.arange(len(queries)), queries] = -float("inf")  # not its own neighbour
    nearest = scores.topk(k, dim=-1).indices  # [N, k]
    hits = sum(
        label.get(int(n)) == label[int(q)]
        for q, row in zip(queries, nearest, strict=True)
        for n in row
    )
    return hits / (len(queries) * k)


def nearest_neighbour_accuracy(
    vectors: torch.Tensor, labels: Sequence[str], *, centre: bool = True
) -> float:
    """Leave-one-out 1-nearest-neighbour accuracy by cosine: how often a vector's nearest other
    vector has the same label.

    With ``centre=True`` the mean of all vectors is subtracted first: contextual hidden states share
    a large common direction (Ethayarajh 2019) that inflates every raw cosine. Ties (identical
    vectors) count as wrong unless every tied vector has the same label.

    Equation:
        accuracy = (1/n) Σ_i [label(argmax_{j ≠ i} cos(x_i, x_j)) = label(i)]

    Args:
        vectors: the n vectors.
        labels: n labels, at least two distinct.
        centre: subtract the mean vector first.

    Returns:
        A float in [0, 1]; 1 / (number of labels) is roughly chance for balanced labels.

    Raises:
        TypeError: ``vectors`` is not floating.
        ValueError: shapes disagree, n < 2, or there is a single label.

    Shapes:
        vectors: [n, d]

    References:
        Ethayarajh, How Contextual are Contextualized Word Representations?, arXiv:1909.00512.
    """
    vectors = check_floating("vectors", vectors)
    if vectors.dim() != 2 or vectors.shape[0] != len(labels) or len(labels) < 2:
        raise ValueError(
            f"vectors must be [n, d] with n = len(labels) >= 2, got {tuple(vectors.shape)} and "
            f"{len(labels)} labels"
        )
    if len(set(labels)) < 2:
        raise ValueError("labels must hold at least two distinct labels")
    x = vectors.double()
    if centre:
        x = x - x.mean(0, keepdim=True)
    unit = F.normalize(x, dim=-1)
    scores = unit @ unit.T
    scores.fill_diagonal_(-float("inf"))
    right = 0
    for i in range(len(labels)):
        best = scores[i].max()
        tied = torch.nonzero(scores[i] >= best - 1e-12).flatten().tolist()
        right += all(labels[j] == labels[i] for j in tied)
    return right / len(labels)


def pair_retrieval(vectors: torch.Tensor, partner: Sequence[int]) -> tuple[float, float, float]:
    """How well cosine similarity finds each vector's partner: ``(found, gap, z_gap)``.

    Every vector i has one partner ``partner[i]`` (e.g. its paraphrase). ``found`` is the share of
    vectors whose most similar *other* vector is their partner (a tie with another vector counts as
    not found). ``gap`` is the mean cosine of the partner pairs minus the mean cosine of all other
    pairs (i ≠ j, j ≠ partner[i]). Raw gaps are not comparable across embedders: a common direction
    (anisotropy) squeezes every cosine towards 1 and shrinks the gap whatever the ranking. ``z_gap``
    divides the gap by the standard deviation of the other pairs' cosines, a scale-free margin (how
    many spreads of the unrelated pairs the partners stand out by).

    Equation:
        c_ij = x_i · x_j / (‖x_i‖ ‖x_j‖);  found = (1/n) Σ_i [c_{i,p(i)} > max_{j ∉ {i, p(i)}} c_ij]
        gap = mean_i c_{i,p(i)} − mean_{j ∉ {i, p(i)}} c_ij;  z_gap = gap / std_{j ∉ {i, p(i)}} c_ij
        (population standard deviation over the ordered unrelated pairs)

    Args:
        vectors: the n vectors (any scale; cosines are taken), n >= 3.
        partner: n ints, ``partner[i]`` in [0, n) and ≠ i.

    Returns:
        ``(found, gap, z_gap)``: a share in [0, 1] and two floats (computed in float64).

    Raises:
        TypeError: ``vectors`` is not floating, or a partner is not an int.
        ValueError: ``vectors`` is not [n, d] with n = len(partner) >= 3, a partner is out of range
            or equal to its own index, or the other pairs' cosines are all equal (no spread).

    Shapes:
        vectors: [n, d], partner: n -> three floats

    References:
        Reimers & Gurevych, Sentence-BERT, arXiv:1908.10084.
        Timkey & van Schijndel, All Bark and No Bite: Rogue Dimensions, arXiv:2109.04404.
    """
    vectors = check_floating("vectors", vectors)
    if isinstance(partner, (str, bytes)) or not isinstance(partner, Sequence):
        raise TypeError(f"partner must be a sequence of ints, got {type(partner).__name__}")
    n = len(partner)
    if vectors.dim() != 2 or vectors.shape[0] != n or n < 3:
        raise ValueError(
            f"vectors must be [n, d] with n = len(partner) >= 3, got {tuple(vectors.shape)} and "
            f"{n} partners"
        )
    index = [check_index(f"partner[{i}]", p, n) for i, p in enumerate(partner)]
    for i, p in enumerate(index):
        if p == i:
            raise ValueError(f"partner[{i}] must differ from {i} (a vector is not its own partner)")
    unit = F.normalize(vectors.double(), dim=-1)
    cos = unit @ unit.T  # [n, n]
    rows = torch.arange(n)
    cols = torch.tensor(index)
    other = torch.ones(n, n, dtype=torch.bool)
    other[rows, rows] = False
    other[rows, cols] = False  # [n, n]: True for the unrelated pairs
    pair = cos[rows, cols]  # [n]
    best_other = cos.masked_fill(~other, -float("inf")).amax(1)  # [n]
    found = (pair > best_other).double().mean().item()
    others = cos[other]
    spread = others.std(correction=0).item()  # population std: duplicates do not change it
    if not spread > 1e-12:  # exact ties can leave a rounding-level spread
        raise ValueError("the cosines of the unrelated pairs are all equal: z_gap is undefined")
    gap = (pair.mean() - others.mean()).item()
    return found, gap, gap / spread


def cosine_neighbours(table: torch.Tensor, index: int, k: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The ``k`` rows of ``table`` most cosine-similar to row ``index``, the row itself excluded.

    One row against all (no ``[V, V]`` matrix), in the table's own dtype; best first.

    Equation:
        cos(i, v) = t_i · t_v / (‖t_i‖ ‖t_v‖),  v ≠ i

    Args:
        table: floating tensor, one vector per row.
        index: the query row, ``0 <= index < V``.
        k: how many neighbours, ``1 <= k < V``.

    Returns:
        ``(indices, cosines)``: the neighbours' row numbers (long) and their cosines with the
        query row, in decreasing order of cosine.

    Raises:
        TypeError: ``table`` is not a floating tensor, or ``index`` or ``k`` is not an int.
        ValueError: ``table`` is not 2-D, ``index`` is out of range, or ``k`` is not in [1, V).

    Shapes:
        table: [V, d] -> indices: [k], cosines: [k]

    References:
        Mikolov et al., Efficient Estimation of Word Representations, arXiv:1301.3781.
    """
    table = check_floating("table", table)
    if table.dim() != 2:
        raise ValueError(f"table must be [V, d], got shape {tuple(table.shape)}")
    index = check_index("index", index, table.shape[0])
    k = check_positive_int("k", k)
    if k >= table.shape[0]:
        raise ValueError(f"k must be < V = {table.shape[0]}, got {k}")
    cosines = F.normalize(table, dim=-1) @ F.normalize(table[index], dim=-1)  # [V]
    cosines[index] = -float("inf")  # not its own neighbour
    top = torch.topk(cosines, k)
    return top.indices, top.values


def cosine_with(vectors: torch.Tensor, query: torch.Tensor) -> torch.Tensor:
    """Cosine similarity of every row of ``vectors`` with one ``query`` vector, in float64.

    For a query that is not a row of the table (an analogy's a − b + c, a vector built from
    n-grams); a zero row or query has cosine 0, as in :func:`cosine_matrix`.

    Equation:
        cos[i] = x_i · q / (‖x_i‖ ‖q‖)

    Args:
        vectors: floating tensor, one vector per row.
        query: floating tensor of the same width d.

    Returns:
        The cosines, one per row.

    Raises:
        TypeError: ``vectors`` or ``query`` is not a floating tensor.
        ValueError: ``vectors`` is not 2-D, ``query`` not 1-D, or their widths differ.

    Shapes:
        vectors: [V, d], query: [d] -> [V]

    References:
        Mikolov et al., Efficient Estimation of Word Representations, arXiv:1301.3781.
    """
    vectors, query = check_rows_and_vector("vectors", vectors, "query", query)
    unit = F.normalize(vectors.detach().to(torch.float64), dim=-1)  # [V, d]
    return unit @ F.normalize(query.detach().to(torch.float64), dim=-1)  # [V]


def rms_norm(vectors: torch.Tensor) -> torch.Tensor:
    """Root-mean-square Euclidean length of the rows of ``vectors``, in float64.

    A scale for a set of vectors that a projection rescaled for display (e.g. word vectors, which
    grow during training): the square root of the mean squared row norm.

    Equation:
        rms = sqrt( (1/N) Σ_i ‖x_i‖² )

    Args:
        vectors: a 2-D floating tensor with at least one row.

    Returns:
        The RMS norm, a 0-d float64 tensor (>= 0).

    Raises:
        TypeError: ``vectors`` is not a floating tensor.
        ValueError: ``vectors`` is not 2-D or has no rows.

    Shapes:
        vectors: [N, d] -> []
    """
    vectors = check_floating("vectors", vectors)
    if vectors.dim() != 2 or vectors.shape[0] == 0:
        raise ValueError(f"vectors must be 2-D [N >= 1, d], got shape {list(vectors.shape)}")
    return vectors.detach().to(torch.float64).pow(2).sum(-1).mean().sqrt()
