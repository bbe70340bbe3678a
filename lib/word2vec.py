"""Skip-gram word2vec with negative sampling, small enough to train in seconds on a CPU (chapter 2).

The model (Mikolov et al. 2013a, arXiv 1301.3781; negative sampling and subsampling from Mikolov et
al. 2013b, arXiv 1310.4546) keeps two tables, an *input* embedding ``v`` (the word as centre) and an
*output* embedding ``u`` (the word as context). For a centre word ``c``, an observed context word
``o`` and ``K`` negative words ``k`` drawn from the unigram distribution raised to the power 3/4,
the loss of one pair is::

    loss(c, o) = −log σ(u_o · v_c) − Σ_k log σ(−u_k · v_c)

The word vectors are the rows of the input table (``model.vectors()``).

Differences from the reference C implementation, all for speed and clarity on a tiny corpus: the
window is fixed (the C code samples a window size in 1..window for every centre word); updates are
Adam on minibatches of pairs instead of SGD with a linearly decaying learning rate on one pair at a
time; a negative that happens to equal the context word is kept rather than skipped.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F
from torch import nn

from lib._checks import (
    check_floating,
    check_int,
    check_ndim,
    check_positive_float,
    check_positive_int,
)

__all__ = [
    "SkipGramNS",
    "TrainingHistory",
    "Vocab",
    "analogy",
    "build_vocab",
    "nearest_neighbours",
    "sample_negatives",
    "skipgram_pairs",
    "subsample_keep_probability",
    "train_skipgram",
    "unigram_distribution",
]


# --- vocabulary ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Vocab:
    """A word <-> id mapping with counts; ids are ordered by count (descending), ties alphabetically."""

    words: tuple[str, ...]
    counts: tuple[int, ...]
    index: dict[str, int] = field(repr=False, compare=False)

    def __len__(self) -> int:
        return len(self.words)

    def __contains__(self, word: object) -> bool:
        return word in self.index

    def id(self, word: str) -> int:
        """Return the id of ``word``; ``KeyError`` naming the word if it is not in the vocabulary."""
        try:
            return self.index[word]
        except KeyError:
            raise KeyError(f"word {word!r} is not in the vocabulary ({len(self)} words)") from None

    def encode(self, sentence: Sequence[str]) -> list[int]:
        """Ids of the in-vocabulary words of ``sentence``; out-of-vocabulary words are dropped."""
        return [self.index[w] for w in sentence if w in self.index]


def build_vocab(sentences: Iterable[Sequence[str]], min_count: int = 1) -> Vocab:
    """Count the words of ``sentences`` and keep those seen at least ``min_count`` times.

    Ids follow decreasing count (ties broken alphabetically), so id 0 is the most frequent word, as
    in the word2vec C code (Mikolov et al. 2013, arXiv 1301.3781).

    Args:
        sentences: an iterable of tokenised sentences (``list[list[str]]``).
        min_count: minimum number of occurrences, >= 1.

    Returns:
        :class:`Vocab` with ``words``, ``counts`` (both length V) and ``index`` (word -> id).
    """
    min_count = check_positive_int("min_count", min_count)
    counter: Counter[str] = Counter()
    for i, sentence in enumerate(sentences):
        if isinstance(sentence, str):
            raise TypeError(
                f"sentences[{i}] must be a list of tokens, got the string {sentence[:30]!r}"
            )
        counter.update(sentence)
    kept = sorted(
        ((w, c) for w, c in counter.items() if c >= min_count), key=lambda x: (-x[1], x[0])
    )
    if not kept:
        raise ValueError(f"no word occurs at least min_count={min_count} times in sentences")
    words = tuple(w for w, _ in kept)
    counts = tuple(c for _, c in kept)
    return Vocab(words=words, counts=counts, index={w: i for i, w in enumerate(words)})


# --- training data ---------------------------------------------------------------------------------


def _flatten(sentences: Iterable[Sequence[str]], vocab: Vocab) -> tuple[torch.Tensor, torch.Tensor]:
    """Token ids and sentence ids of every in-vocabulary token, both ``[N]`` long tensors."""
    ids: list[int] = []
    sentence_ids: list[int] = []
    for s, sentence in enumerate(sentences):
        encoded = vocab.encode(sentence)
        ids.extend(encoded)
        sentence_ids.extend([s] * len(encoded))
    return torch.tensor(ids, dtype=torch.long), torch.tensor(sentence_ids, dtype=torch.long)


def _pairs_from_flat(ids: torch.Tensor, sentence_ids: torch.Tensor, window: int) -> torch.Tensor:
    """All (centre, context) pairs at distance 1..window inside one sentence: ``[P, 2]``."""
    chunks = []
    for offset in range(1, window + 1):
        same = sentence_ids[offset:] == sentence_ids[:-offset]  # [N - offset]
        left, right = ids[:-offset][same], ids[offset:][same]
        chunks.append(torch.stack([left, right], dim=1))  # left word as centre
        chunks.append(torch.stack([right, left], dim=1))  # right word as centre
    if not chunks:
        return torch.empty(0, 2, dtype=torch.long)
    return torch.cat(chunks)


def skipgram_pairs(
    sentences: Iterable[Sequence[str]], vocab: Vocab, window: int = 2
) -> torch.Tensor:
    """All skip-gram (centre, context) id pairs within ``window`` words, inside each sentence.

    For every token at position t and every offset ``1 <= abs(j) <= window`` with t + j inside the same
    sentence, the pair (w_t, w_{t+j}) is produced (Mikolov et al. 2013, arXiv 1301.3781).
    Out-of-vocabulary words are removed before the window is applied, as in the C code.

    Returns:
        ``LongTensor [P, 2]``: column 0 the centre id, column 1 the context id (grouped by offset,
        not in reading order).
    """
    window = check_positive_int("window", window)
    ids, sentence_ids = _flatten(sentences, vocab)
    return _pairs_from_flat(ids, sentence_ids, window)


def unigram_distribution(vocab: Vocab, power: float = 0.75) -> torch.Tensor:
    """The negative-sampling distribution P(w) ∝ count(w)^power (power 3/4 in the paper).

    Mikolov et al. 2013b (arXiv 1310.4546), section 2.2.

    Returns:
        ``[V]`` float32 probabilities summing to 1.
    """
    power = check_positive_float("power", power, allow_zero=True)
    counts = torch.tensor(vocab.counts, dtype=torch.float64)
    weights = counts**power
    return (weights / weights.sum()).to(torch.float32)


def sample_negatives(
    distribution: torch.Tensor, shape: tuple[int, ...], generator: torch.Generator | None = None
) -> torch.Tensor:
    """Draw negative word ids with replacement from ``distribution`` (``[V]``): ``LongTensor shape``."""
    distribution = check_floating("distribution", distribution)
    if distribution.dim() != 1:
        raise ValueError(f"distribution must be 1-D [V], got shape {tuple(distribution.shape)}")
    n = math.prod(shape)
    flat = torch.multinomial(distribution, n, replacement=True, generator=generator)
    return flat.reshape(shape)


def subsample_keep_probability(vocab: Vocab, threshold: float = 1e-3) -> torch.Tensor:
    """Probability of keeping each word under frequent-word subsampling: ``[V]`` float32.

    Mikolov et al. 2013b (arXiv 1310.4546), eq. 5, discards an occurrence of w with probability
    1 − sqrt(t / f(w)), where f(w) is the word's relative frequency and t the threshold; so the
    keep probability is min(1, sqrt(t / f(w))).
    """
    threshold = check_positive_float("threshold", threshold)
    counts = torch.tensor(vocab.counts, dtype=torch.float64)
    freq = counts / counts.sum()
    return torch.sqrt(threshold / freq).clamp(max=1.0).to(torch.float32)


# --- the model -------------------------------------------------------------------------------------


class SkipGramNS(nn.Module):
    """Skip-gram with negative sampling: an input table ``v`` and an output table ``u``, both [V, d].

    ``forward(centre, context, negatives)`` returns the per-pair loss
    −log σ(u_o·v_c) − Σ_k log σ(−u_k·v_c) (Mikolov et al. 2013b, arXiv 1310.4546, eq. 4).

    Shapes: ``centre: [B]``, ``context: [B]``, ``negatives: [B, K]`` (long) -> ``[B]`` float.

    Initialisation follows the C code: input rows uniform in (−0.5/d, 0.5/d), output rows zero.
    """

    def __init__(self, vocab_size: int, dim: int, *, generator: torch.Generator | None = None):
        super().__init__()
        vocab_size = check_positive_int("vocab_size", vocab_size)
        dim = check_positive_int("dim", dim)
        self.in_embed = nn.Embedding(vocab_size, dim)  # v: the word as centre
        self.out_embed = nn.Embedding(vocab_size, dim)  # u: the word as context
        with torch.no_grad():
            self.in_embed.weight.uniform_(-0.5 / dim, 0.5 / dim, generator=generator)
            self.out_embed.weight.zero_()

    def forward(
        self, centre: torch.Tensor, context: torch.Tensor, negatives: torch.Tensor
    ) -> torch.Tensor:
        v_c = self.in_embed(centre)  # [B, d]
        u_o = self.out_embed(context)  # [B, d]
        u_k = self.out_embed(negatives)  # [B, K, d]
        positive = F.logsigmoid((u_o * v_c).sum(-1))  # [B]
        negative = F.logsigmoid(-(u_k * v_c[:, None, :]).sum(-1)).sum(-1)  # [B, K] -> [B]
        return -(positive + negative)

    def vectors(self) -> torch.Tensor:
        """The word vectors: a detached copy of the input table, ``[V, d]``."""
        return self.in_embed.weight.detach().clone()


@dataclass
class TrainingHistory:
    """What a trainer records: mean loss per epoch and optional snapshots of the vectors."""

    losses: list[float] = field(default_factory=list)
    snapshot_epochs: list[int] = field(default_factory=list)
    snapshots: list[torch.Tensor] = field(default_factory=list)


def train_skipgram(
    sentences: Sequence[Sequence[str]],
    *,
    dim: int = 32,
    window: int = 2,
    negatives: int = 5,
    epochs: int = 10,
    lr: float = 0.02,
    batch_size: int = 2048,
    min_count: int = 1,
    subsample: float | None = None,
    seed: int = 0,
    snapshot_every: int | None = None,
) -> tuple[SkipGramNS, Vocab, TrainingHistory]:
    """Train skip-gram with negative sampling on tokenised ``sentences``; deterministic given ``seed``.

    Every epoch shuffles all (centre, context) pairs within ``window`` words, draws ``negatives``
    negatives per pair from the unigram^(3/4) distribution and takes one Adam step per minibatch of
    ``batch_size`` pairs on the mean of loss = −log σ(u_o·v_c) − Σ_k log σ(−u_k·v_c)
    (Mikolov et al. 2013a, arXiv 1301.3781; 2013b, arXiv 1310.4546). With ``subsample`` = t, each
    epoch first drops every token of word w with probability 1 − sqrt(t / f(w)) (2013b, eq. 5).

    All randomness comes from one ``torch.Generator`` seeded with ``seed``; torch's thread count is
    left alone.

    Args:
        sentences: tokenised sentences, ``list[list[str]]``.
        dim: vector size d. window: context half-width. negatives: K per positive pair.
        epochs: passes over the pairs. lr: Adam learning rate. batch_size: pairs per step.
        min_count: minimum count for a word to enter the vocabulary.
        subsample: threshold t for frequent-word subsampling, or None for none.
        seed: random seed (>= 0).
        snapshot_every: if set, store ``vectors()`` before training (epoch 0) and after every
            ``snapshot_every`` epochs (and after the last), for a figure that replays training.

    Returns:
        ``(model, vocab, history)``: the trained :class:`SkipGramNS`, its :class:`Vocab`, and a
        :class:`TrainingHistory` with the mean loss per epoch and the snapshots (each ``[V, dim]``).
    """
    dim = check_positive_int("dim", dim)
    window = check_positive_int("window", window)
    negatives = check_positive_int("negatives", negatives)
    epochs = check_positive_int("epochs", epochs)
    lr = check_positive_float("lr", lr)
    batch_size = check_positive_int("batch_size", batch_size)
    seed = check_int("seed", seed, minimum=0)
    if subsample is not None:
        subsample = check_positive_float("subsample", subsample)
    if snapshot_every is not None:
        snapshot_every = check_positive_int("snapshot_every", snapshot_every)

    vocab = build_vocab(sentences, min_count=min_count)
    ids, sentence_ids = _flatten(sentences, vocab)
    noise = unigram_distribution(vocab, 0.75)
    keep = subsample_keep_probability(vocab, subsample) if subsample is not None else None

    generator = torch.Generator().manual_seed(seed)
    model = SkipGramNS(len(vocab), dim, generator=generator)
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    history = TrainingHistory()

    def snapshot(epoch: int) -> None:
        history.snapshot_epochs.append(epoch)
        history.snapshots.append(model.vectors())

    if snapshot_every is not None:
        snapshot(0)
    for epoch in range(1, epochs + 1):
        if keep is not None:
            mask = torch.rand(ids.shape, generator=generator) < keep[ids]  # [N]
            pairs = _pairs_from_flat(ids[mask], sentence_ids[mask], window)
        else:
            pairs = _pairs_from_flat(ids, sentence_ids, window)
        if len(pairs) == 0:
            raise ValueError(
                "sentences give no (centre, context) pair: are they all one word long?"
            )
        pairs = pairs[torch.randperm(len(pairs), generator=generator)]  # [P, 2], shuffled
        negs = sample_negatives(noise, (len(pairs), negatives), generator)  # [P, K]
        total = 0.0
        for start in range(0, len(pairs), batch_size):
            batch = pairs[start : start + batch_size]
            loss = model(batch[:, 0], batch[:, 1], negs[start : start + batch_size]).mean()
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            total += loss.item() * len(batch)
        history.losses.append(total / len(pairs))
        if snapshot_every is not None and (epoch % snapshot_every == 0 or epoch == epochs):
            snapshot(epoch)
    return model, vocab, history


# --- queries -----------------------------------------------------------------------------------


def _check_vectors(vectors: torch.Tensor, vocab: Vocab) -> torch.Tensor:
    vectors = check_floating("vectors", vectors)
    check_ndim("vectors", vectors, minimum=2)
    if vectors.dim() != 2 or vectors.shape[0] != len(vocab):
        raise ValueError(
            f"vectors must be [V, d] with V = len(vocab) = {len(vocab)}, got shape "
            f"{tuple(vectors.shape)}"
        )
    return vectors


def _cosines(vectors: torch.Tensor, query: torch.Tensor) -> torch.Tensor:
    """Cosine of ``query`` ([d]) with every row of ``vectors`` ([V, d]), in float64: ``[V]``."""
    unit = F.normalize(vectors.to(torch.float64), dim=-1)
    return unit @ F.normalize(query.to(torch.float64), dim=-1)


def _top_k(
    cosines: torch.Tensor, vocab: Vocab, k: int, exclude: set[int]
) -> list[tuple[str, float]]:
    order = torch.argsort(cosines, descending=True, stable=True).tolist()
    result = [(vocab.words[i], float(cosines[i])) for i in order if i not in exclude]
    return result[:k]


def nearest_neighbours(
    vectors: torch.Tensor, vocab: Vocab, word: str, k: int = 5
) -> list[tuple[str, float]]:
    """The ``k`` words whose vectors have the highest cosine similarity with ``word``'s (itself excluded).

    cos(x, y) = x·y / (‖x‖ ‖y‖). Shapes: ``vectors: [V, d]`` with row i the vector of
    ``vocab.words[i]``.

    Returns:
        ``[(word, cosine), ...]``, best first, length min(k, V − 1).

    Raises:
        KeyError: ``word`` is not in the vocabulary (the message names it).
    """
    vectors = _check_vectors(vectors, vocab)
    k = check_positive_int("k", k)
    i = vocab.id(word)
    return _top_k(_cosines(vectors, vectors[i]), vocab, k, exclude={i})


def analogy(
    vectors: torch.Tensor, vocab: Vocab, a: str, b: str, c: str, k: int = 5
) -> list[tuple[str, float]]:
    """Answer "a − b + c ≈ ?" by cosine (3CosAdd): ``analogy(v, vocab, "king", "man", "woman")`` → queen.

    The query is x = â − b̂ + ĉ, with each word vector first scaled to unit length (as in Mikolov et
    al. 2013, arXiv 1301.3781 and the word2vec ``word-analogy`` tool); the answer is the word w,
    other than a, b and c, with the highest cos(x, w).

    Shapes: ``vectors: [V, d]`` with row i the vector of ``vocab.words[i]``.

    Returns:
        ``[(word, cosine), ...]``, best first, length min(k, V − 3).

    Raises:
        KeyError: one of the words is not in the vocabulary (the message names it).
    """
    vectors = _check_vectors(vectors, vocab)
    k = check_positive_int("k", k)
    ia, ib, ic = vocab.id(a), vocab.id(b), vocab.id(c)
    unit = F.normalize(vectors.to(torch.float64), dim=-1)  # [V, d]
    query = unit[ia] - unit[ib] + unit[ic]  # [d]
    return _top_k(_cosines(vectors, query), vocab, k, exclude={ia, ib, ic})
