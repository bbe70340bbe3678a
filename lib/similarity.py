"""Similarity queries over a table of word vectors that several chapters share.

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

from lib._checks import check_floating, check_positive_int

__all__ = ["nearest_neighbour_accuracy", "neighbour_class_share"]


def neighbour_class_share(
    vectors: torch.Tensor,
    words: Sequence[str],
    classes: Mapping[str, Sequence[str]],
    k: int = 5,
) -> float:
    """Share of the ``k`` cosine-nearest neighbours of every classed word that share its class.

    ``share = (1 / (N k)) Σ_w #{n ∈ NN_k(w) : class(n) = class(w)}``, over the N words of ``classes``
    (the query word itself is excluded from its neighbours).

    Args:
        vectors: ``[V, d]`` table, row i is ``words[i]``. words: the V words.
        classes: class name -> its words (each word in at most one class, all in ``words``).
        k: neighbours per word, 1 <= k < V.

    Returns:
        A float in [0, 1].

    Raises:
        ValueError: shapes disagree, a class word is unknown or in two classes, or k is out of range.
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
    """Leave-one-out 1-nearest-neighbour accuracy: how often a vector's nearest other vector
    (by cosine) has the same label.

    With ``centre=True`` the mean of all vectors is subtracted first: contextual hidden states share
    a large common direction (Ethayarajh 2019, arXiv 1909.00512) that inflates every raw cosine.
    Ties (identical vectors) count as wrong unless every tied vector has the same label.

    Args:
        vectors: ``[n, d]``. labels: n labels, at least two distinct.

    Returns:
        A float in [0, 1]; 1 / (number of labels) is roughly chance for balanced labels.

    Raises:
        ValueError: shapes disagree, n < 2, or there is a single label.
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
