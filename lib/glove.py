"""GloVe: word vectors fitted to the logarithm of a co-occurrence matrix (chapter 2).

The model fits two tables ``W`` (words) and ``W̃`` (contexts) and two bias vectors to every pair
of words with a nonzero co-occurrence count X_ij, and uses the sum ``W + W̃`` as the final word
vectors (section 4.2 of the paper). Training here is AdaGrad, as in the paper, on shuffled
minibatches of the nonzero entries (the reference C code uses one entry at a time).

Equation:
    J = Σ_{i,j: X_ij > 0} f(X_ij) (w_i · w̃_j + b_i + b̃_j − log X_ij)²
    f(x) = (x / x_max)^α if x < x_max, else 1      (x_max = 100, α = 3/4 in the paper)

References:
    Pennington, Socher & Manning, GloVe: Global Vectors for Word Representation, EMNLP 2014
    (no arXiv id).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import numpy as np
import torch

from lib._checks import (
    check_choice,
    check_counts,
    check_floating,
    check_int,
    check_positive_float,
    check_positive_int,
)
from lib.vocab import TrainingHistory, Vocab, flatten

__all__ = [
    "COOCCURRENCE_WEIGHTINGS",
    "GLOVE_OPTIMIZERS",
    "CountHistogram",
    "cooccurrence_matrix",
    "count_histogram",
    "glove_loss",
    "glove_weight",
    "train_glove",
    "train_glove_tables",
]

#: How much a co-occurrence at distance d (1 <= d <= window) adds to X_ij.
#: ``"harmonic"``: 1/d, as in the GloVe paper (section 4.2) and code; ``"uniform"``: 1 (a plain count).
COOCCURRENCE_WEIGHTINGS: dict[str, Callable[[int], float]] = {
    "harmonic": lambda d: 1.0 / d,
    "uniform": lambda d: 1.0,
}


#: How :func:`train_glove_tables` updates the tables. ``"adagrad"``: ``torch.optim.Adagrad`` on the
#: summed loss J (accumulator starting at 0, so the first step of every coordinate is ±lr).
#: ``"glove.c"``: the update of GloVe's reference code (``src/glove.c``): the gradient of ½J, each
#: component clipped to ±100, scaled by η, divided by the square root of an accumulator of the
#: squared scaled steps that starts at 1 ("so initial value of eta is equal to initial learning
#: rate"), so the first step is plain SGD with rate η and later steps shrink as the steps add up.
GLOVE_OPTIMIZERS: tuple[str, ...] = ("adagrad", "glove.c")

#: glove.c's ``grad_clip_value``: each gradient component is clipped to ±100 before scaling by η.
GLOVE_C_GRAD_CLIP = 100.0


def cooccurrence_matrix(
    sentences: Sequence[Sequence[str]],
    vocab: Vocab,
    window: int = 5,
    weighting: str = "harmonic",
    *,
    across_sentences: bool = False,
) -> torch.Tensor:
    """The symmetric word-word co-occurrence matrix X, in float64.

    For every two in-vocabulary words at distance 1 <= d <= ``window`` in one sentence, X_ij and X_ji
    both grow by weight(d): 1/d for ``"harmonic"`` (Pennington et al. 2014, section 4.2), 1 for
    ``"uniform"``. Out-of-vocabulary words are removed before distances are measured. The diagonal
    counts a word next to another occurrence of itself.

    With ``across_sentences=True`` the sentences are read as one stream of text, so a window can
    span a sentence boundary, as in GloVe's demo on text8 (a corpus with no line breaks). On the
    small generated corpus of :mod:`lib.corpus` this matters: GloVe fits only the nonzero X_ij, and
    with windows cut at sentence ends most pairs (king/her, paris/pasta ...) never co-occur, leaving
    those directions unconstrained; the stream adds the weak background co-occurrences real text has.

    Equation:
        X_ij = Σ over pairs (i at t, j at t ± d), 1 <= d <= window, of weight(d)

    Args:
        sentences: tokenised sentences.
        vocab: a :class:`lib.vocab.Vocab` (row/column order).
        window: the largest distance counted, >= 1.
        weighting: a key of :data:`COOCCURRENCE_WEIGHTINGS`.
        across_sentences: let windows span sentence boundaries (default False).

    Returns:
        X, symmetric, X[i, j] for ``vocab.words[i]`` and ``vocab.words[j]``.

    Raises:
        TypeError: ``vocab`` is not a Vocab or ``across_sentences`` not a bool.
        ValueError: ``window`` < 1 or an unknown ``weighting``.

    Shapes:
        -> X: [V, V] float64

    References:
        Pennington et al., GloVe, EMNLP 2014, section 4.2.
    """
    window = check_positive_int("window", window)
    weighting = check_choice("weighting", weighting, tuple(COOCCURRENCE_WEIGHTINGS))
    if not isinstance(vocab, Vocab):
        raise TypeError(f"vocab must be a lib.vocab.Vocab, got {type(vocab).__name__}")
    if not isinstance(across_sentences, bool):
        raise TypeError(f"across_sentences must be a bool, got {type(across_sentences).__name__}")
    ids, sentence_ids = flatten(sentences, vocab)
    if across_sentences:
        sentence_ids = torch.zeros_like(sentence_ids)  # one stream: every token in "sentence 0"
    V = len(vocab)
    X = torch.zeros(V * V, dtype=torch.float64)  # flat [V*V], reshaped at the end
    for d in range(1, window + 1):
        same = sentence_ids[d:] == sentence_ids[:-d]  # [N - d]
        left, right = ids[:-d][same], ids[d:][same]
        weight = torch.full(left.shape, COOCCURRENCE_WEIGHTINGS[weighting](d), dtype=torch.float64)
        X.index_add_(0, left * V + right, weight)
        X.index_add_(0, right * V + left, weight)
    return X.reshape(V, V)


def glove_weight(x: torch.Tensor, x_max: float = 100.0, alpha: float = 0.75) -> torch.Tensor:
    """GloVe's weighting function: grows as a power of x up to x_max, then stays at 1.

    Equation:
        f(x) = (x / x_max)^α if x < x_max, else 1   (so f(0) = 0)

    Args:
        x: non-negative co-occurrence values.
        x_max: the cap, > 0 (100 in the paper).
        alpha: the exponent, > 0 (3/4 in the paper).

    Returns:
        The weights, same shape and dtype as ``x``.

    Raises:
        TypeError: ``x`` is not floating. ValueError: ``x`` has a negative entry.

    Shapes:
        x: [...] -> [...]

    References:
        Pennington et al., GloVe, EMNLP 2014, eq. 9.
    """
    x = check_counts("x", x)
    x_max = check_positive_float("x_max", x_max)
    alpha = check_positive_float("alpha", alpha)
    return torch.where(x < x_max, (x / x_max) ** alpha, torch.ones_like(x))


class CountHistogram(NamedTuple):
    """Co-occurrence counts binned on a log scale (see :func:`count_histogram`)."""

    #: The ``bins + 1`` bin edges, log-spaced, float64.
    edges: torch.Tensor
    #: Each bin's geometric centre ``sqrt(edges[k] · edges[k + 1])``, float64.
    centres: torch.Tensor
    #: The share of the counts in each bin (they sum to 1 when every count lies between the outer
    #: edges), float64.
    shares: torch.Tensor


def count_histogram(
    counts: torch.Tensor,
    *,
    low: float | None = None,
    high: float | None = None,
    bins: int = 30,
) -> CountHistogram:
    """The distribution of nonzero co-occurrence counts X_ij over log-spaced bins.

    GloVe weights each entry by f(X_ij) (:func:`glove_weight`); most nonzero counts are small, so
    the distribution is read on a log axis, with bins of equal width in log X. The last bin
    includes its right edge (``numpy.histogram``'s rule).

    Equation:
        edges_k = low · (high / low)^(k / bins),  k = 0 … bins
        share_k = #{(i, j) : edges_k ≤ X_ij < edges_{k+1}} / #{counts in [low, high]}

    Args:
        counts: the M nonzero counts, a 1-D floating tensor of values > 0.
        low: the first edge, > 0 (default: the smallest count).
        high: the last edge, > ``low`` (default: the largest count).
        bins: the number of bins, an int >= 1.

    Returns:
        A :class:`CountHistogram` (edges, centres, shares).

    Raises:
        TypeError: ``counts`` is not a floating tensor, or ``low``/``high``/``bins`` of the wrong
            type.
        ValueError: ``counts`` is not a non-empty 1-D tensor of positive values, ``low`` or
            ``high`` is not > 0, ``high <= low``, ``bins < 1``, or no count lies in [low, high].

    Shapes:
        counts: [M]
        returns: edges [bins + 1], centres [bins], shares [bins]

    References:
        Pennington et al., GloVe, EMNLP 2014, section 3 (no arXiv id).
    """
    counts = check_floating("counts", counts)
    if counts.dim() != 1 or counts.numel() == 0 or bool((counts <= 0).any()):
        raise ValueError("counts must be a 1-D tensor of positive co-occurrence values [M]")
    values = counts.detach().to(torch.float64).cpu().numpy()
    low = check_positive_float("low", float(values.min()) if low is None else low)
    high = check_positive_float("high", float(values.max()) if high is None else high)
    if high <= low:
        raise ValueError(f"high must be > low, got low = {low}, high = {high}")
    bins = check_positive_int("bins", bins)
    edges = np.logspace(np.log10(low), np.log10(high), bins + 1)
    hist, _ = np.histogram(values, bins=edges)
    if hist.sum() == 0:
        raise ValueError(f"no count lies in [low, high] = [{low}, {high}]")
    return CountHistogram(
        edges=torch.from_numpy(edges),
        centres=torch.from_numpy(np.sqrt(edges[:-1] * edges[1:])),
        shares=torch.from_numpy(hist / hist.sum()),
    )


def glove_loss(
    W: torch.Tensor,
    W_tilde: torch.Tensor,
    b: torch.Tensor,
    b_tilde: torch.Tensor,
    X: torch.Tensor,
    x_max: float = 100.0,
    alpha: float = 0.75,
) -> torch.Tensor:
    """The GloVe loss J of the tables, summed over the nonzero entries of X.

    Entries with X_ij = 0 do not contribute (log 0 is never taken).

    Equation:
        J = Σ_{X_ij > 0} f(X_ij) (w_i · w̃_j + b_i + b̃_j − log X_ij)²

    Args:
        W, W_tilde: the word and context tables.
        b, b_tilde: their biases.
        X: the co-occurrence matrix.
        x_max, alpha: the parameters of :func:`glove_weight`.

    Returns:
        A 0-d tensor in the dtype of ``W``.

    Raises:
        TypeError: an input is not floating. ValueError: the shapes disagree.

    Shapes:
        W, W_tilde: [V, d], b, b_tilde: [V], X: [V, V] -> []

    References:
        Pennington et al., GloVe, EMNLP 2014, eq. 8.
    """
    for name, t in (("W", W), ("W_tilde", W_tilde), ("b", b), ("b_tilde", b_tilde), ("X", X)):
        check_floating(name, t)
    if W.dim() != 2:
        raise ValueError(f"W must be [V, d], got shape {tuple(W.shape)}")
    V, d = W.shape
    for name, t, shape in (
        ("W_tilde", W_tilde, (V, d)),
        ("b", b, (V,)),
        ("b_tilde", b_tilde, (V,)),
        ("X", X, (V, V)),
    ):
        if tuple(t.shape) != shape:
            raise ValueError(
                f"{name} must have shape {shape} (from W: [V, d]), got {tuple(t.shape)}"
            )
    i, j = torch.nonzero(X > 0, as_tuple=True)  # the nonzero entries, each [M]
    x = X[i, j].to(W.dtype)
    return _loss_on_entries(W, W_tilde, b, b_tilde, i, j, x, x_max, alpha)


def _loss_on_entries(
    W: torch.Tensor,
    W_tilde: torch.Tensor,
    b: torch.Tensor,
    b_tilde: torch.Tensor,
    i: torch.Tensor,
    j: torch.Tensor,
    x: torch.Tensor,
    x_max: float,
    alpha: float,
) -> torch.Tensor:
    """The GloVe loss summed over the listed entries (i[m], j[m]) with counts x[m], each [M]."""
    dot = (W[i] * W_tilde[j]).sum(-1)  # [M]
    residual = dot + b[i] + b_tilde[j] - torch.log(x)
    return (glove_weight(x, x_max, alpha) * residual**2).sum()


def train_glove(X: torch.Tensor, **options: Any) -> tuple[torch.Tensor, TrainingHistory]:
    """Fit GloVe to a co-occurrence matrix and return the paper's word vectors W + W̃.

    :func:`train_glove_tables`, which also returns the two tables separately, summed.

    Equation:
        vectors = W + W̃, fitted to minimise J (see :func:`glove_loss`)

    Args:
        X: the co-occurrence matrix.
        **options: ``dim``, ``epochs``, ``lr``, ``seed``, ``x_max``, ``alpha``, ``batch_size``:
            the keyword arguments of :func:`train_glove_tables`, with its defaults.

    Returns:
        ``(W + W̃, history)``.

    Raises:
        ValueError / TypeError: as :func:`train_glove_tables`.

    Shapes:
        X: [V, V] -> [V, dim]

    References:
        Pennington et al., GloVe, EMNLP 2014, section 4.2.
    """
    W, W_tilde, history = train_glove_tables(X, **options)
    return W + W_tilde, history


def train_glove_tables(
    X: torch.Tensor,
    dim: int = 32,
    epochs: int = 30,
    lr: float = 0.05,
    seed: int = 0,
    *,
    x_max: float = 100.0,
    alpha: float = 0.75,
    batch_size: int = 2048,
    optimizer: str = "adagrad",
) -> tuple[torch.Tensor, torch.Tensor, TrainingHistory]:
    """Fit GloVe to a co-occurrence matrix with AdaGrad; return the two tables and the history.

    Every epoch shuffles the nonzero entries of X and takes one AdaGrad step (initial learning rate
    ``lr``, 0.05 in the paper) per minibatch of ``batch_size`` entries on the summed loss.
    Parameters start uniform in (−0.5/d, 0.5/d) as in the reference code. Deterministic given
    ``seed``.

    ``optimizer="glove.c"`` takes the reference code's step instead of ``torch.optim.Adagrad``'s
    (see :data:`GLOVE_OPTIMIZERS`): for every parameter θ with minibatch gradient g of ½J, the
    accumulator G starts at 1 and

        s = η · clip(g, ±100);   θ ← θ − s / √G;   G ← G + s²

    so the first step is η·g and the rate falls as squared steps accumulate. glove.c applies it
    one entry at a time (this applies it per minibatch of entries, summing the gradients of a row
    within the batch) and, since its commit 5b4e03c, updates the biases without η; here the
    biases take the same step as the vectors.

    Equation:
        J = Σ_{X_ij > 0} f(X_ij) (w_i · w̃_j + b_i + b̃_j − log X_ij)²

    Args:
        X: non-negative co-occurrence matrix.
        dim: d >= 1. epochs: passes >= 1. lr: AdaGrad's learning rate. seed: >= 0.
        x_max, alpha: the parameters of :func:`glove_weight`.
        batch_size: entries per step.
        optimizer: a name in :data:`GLOVE_OPTIMIZERS` (default ``"adagrad"``).

    Returns:
        ``(W, W̃, history)``: word and context vectors, float32 (the paper uses their sum), and a
        :class:`lib.vocab.TrainingHistory` whose ``losses`` hold the full J after each epoch.

    Raises:
        TypeError: ``X`` is not floating. ValueError: ``X`` is not square and non-negative, has
            no positive entry, an argument is out of range, or an unknown ``optimizer``.

    Shapes:
        X: [V, V] -> W: [V, dim], W̃: [V, dim]

    References:
        Pennington et al., GloVe, EMNLP 2014, section 4.2; the update of ``glove_thread`` in
        https://github.com/stanfordnlp/GloVe/blob/master/src/glove.c.
    """
    X = check_floating("X", X)
    if X.dim() != 2 or X.shape[0] != X.shape[1]:
        raise ValueError(f"X must be a square [V, V] matrix, got shape {tuple(X.shape)}")
    X = check_counts("X", X)
    dim = check_positive_int("dim", dim)
    epochs = check_positive_int("epochs", epochs)
    lr = check_positive_float("lr", lr)
    seed = check_int("seed", seed, minimum=0)
    x_max = check_positive_float("x_max", x_max)
    alpha = check_positive_float("alpha", alpha)
    batch_size = check_positive_int("batch_size", batch_size)
    optimizer = check_choice("optimizer", optimizer, GLOVE_OPTIMIZERS)
    i, j = torch.nonzero(X > 0, as_tuple=True)  # [M] each
    if len(i) == 0:
        raise ValueError("X has no positive entry to fit")
    x = X[i, j].to(torch.float32)

    V = X.shape[0]
    generator = torch.Generator().manual_seed(seed)

    def init(*shape: int) -> torch.nn.Parameter:
        return torch.nn.Parameter((torch.rand(*shape, generator=generator) - 0.5) / dim)

    W, W_tilde, b, b_tilde = init(V, dim), init(V, dim), init(V), init(V)
    params = [W, W_tilde, b, b_tilde]
    adagrad = torch.optim.Adagrad(params, lr=lr) if optimizer == "adagrad" else None
    accumulators = [torch.ones_like(p) for p in params]  # glove.c's gradsq, starting at 1
    history = TrainingHistory()
    for _ in range(epochs):
        order = torch.randperm(len(i), generator=generator)
        for start in range(0, len(i), batch_size):
            m = order[start : start + batch_size]
            loss = _loss_on_entries(W, W_tilde, b, b_tilde, i[m], j[m], x[m], x_max, alpha)
            if adagrad is not None:
                adagrad.zero_grad(set_to_none=True)
                loss.backward()
                adagrad.step()
                continue
            grads = torch.autograd.grad(0.5 * loss, params)  # glove.c: the gradient of ½J
            with torch.no_grad():
                for p, g, acc in zip(params, grads, accumulators, strict=True):
                    step = lr * g.clamp(-GLOVE_C_GRAD_CLIP, GLOVE_C_GRAD_CLIP)
                    p.sub_(step / acc.sqrt())
                    acc.add_(step**2)
        with torch.no_grad():
            history.losses.append(
                float(_loss_on_entries(W, W_tilde, b, b_tilde, i, j, x, x_max, alpha))
            )
    return W.detach(), W_tilde.detach(), history
