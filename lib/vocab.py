"""Word vocabularies and training records shared by the static-embedding trainers (chapter 2).

:class:`Vocab` maps words to ids ordered by count, as the word2vec C code orders its vocabulary;
:func:`build_vocab` counts a tokenised corpus; :func:`flatten` turns a corpus into one stream of
token ids with the sentence each token came from; :class:`TrainingHistory` is what a trainer
records. :mod:`lib.word2vec`, :mod:`lib.glove`, :mod:`lib.fasttext` and :mod:`lib.tiny_lm` use them.

References:
    Mikolov et al., Efficient Estimation of Word Representations in Vector Space,
    arXiv:1301.3781.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np
import torch

from lib._checks import check_positive_int

__all__ = ["TrainingHistory", "Vocab", "block_means", "build_vocab", "flatten"]


@dataclass(frozen=True)
class Vocab:
    """A word <-> id mapping with counts; ids follow decreasing count, ties alphabetically.

    Attributes:
        words: the V words, ``words[i]`` has id i.
        counts: the V counts, in the same order.
        index: word -> id.
    """

    words: tuple[str, ...]
    counts: tuple[int, ...]
    index: dict[str, int] = field(repr=False, compare=False)

    def __len__(self) -> int:
        return len(self.words)

    def __contains__(self, word: object) -> bool:
        return word in self.index

    def id(self, word: str) -> int:
        """Return the id of ``word``.

        Args:
            word: a word of the vocabulary.

        Returns:
            Its id, in ``0 .. V-1``.

        Raises:
            KeyError: ``word`` is not in the vocabulary (the message names it).
        """
        try:
            return self.index[word]
        except KeyError:
            raise KeyError(f"word {word!r} is not in the vocabulary ({len(self)} words)") from None

    def encode(self, sentence: Sequence[str]) -> list[int]:
        """Ids of the in-vocabulary words of ``sentence``; out-of-vocabulary words are dropped.

        Args:
            sentence: a tokenised sentence.

        Returns:
            The ids, in reading order.
        """
        return [self.index[w] for w in sentence if w in self.index]


def build_vocab(sentences: Iterable[Sequence[str]], min_count: int = 1) -> Vocab:
    """Count the words of ``sentences`` and keep those seen at least ``min_count`` times.

    Ids follow decreasing count (ties broken alphabetically), so id 0 is the most frequent word, as
    in the word2vec C code.

    Args:
        sentences: an iterable of tokenised sentences (``list[list[str]]``).
        min_count: minimum number of occurrences, >= 1.

    Returns:
        A :class:`Vocab` with ``words``, ``counts`` (both length V) and ``index`` (word -> id).

    Raises:
        TypeError: a sentence is a string rather than a list of tokens.
        ValueError: no word occurs ``min_count`` times, or ``min_count`` < 1.

    References:
        Mikolov et al., Efficient Estimation of Word Representations in Vector Space,
        arXiv:1301.3781.
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


def flatten(sentences: Iterable[Sequence[str]], vocab: Vocab) -> tuple[torch.Tensor, torch.Tensor]:
    """Token ids and sentence ids of every in-vocabulary token of ``sentences``, in reading order.

    Out-of-vocabulary words are dropped first, as the word2vec C code does before it applies a
    window, so two words around a dropped one become neighbours.

    Args:
        sentences: tokenised sentences.
        vocab: the :class:`Vocab` that gives the ids.

    Returns:
        ``(ids, sentence_ids)``: both long tensors; ``sentence_ids[t]`` is the index of the sentence
        token t came from.

    Raises:
        TypeError: ``vocab`` is not a :class:`Vocab`.

    Shapes:
        ids: [N], sentence_ids: [N] (N in-vocabulary tokens)
    """
    if not isinstance(vocab, Vocab):
        raise TypeError(f"vocab must be a lib.vocab.Vocab, got {type(vocab).__name__}")
    ids: list[int] = []
    sentence_ids: list[int] = []
    for s, sentence in enumerate(sentences):
        encoded = vocab.encode(sentence)
        ids.extend(encoded)
        sentence_ids.extend([s] * len(encoded))
    return torch.tensor(ids, dtype=torch.long), torch.tensor(sentence_ids, dtype=torch.long)


@dataclass
class TrainingHistory:
    """What a trainer records: the mean loss per epoch and optional snapshots of the vectors.

    Attributes:
        losses: one number per epoch.
        snapshot_epochs: the epochs at which ``snapshots`` were taken (0 = before training).
        snapshots: copies of the word vectors, each ``[V, d]``.
    """

    losses: list[float] = field(default_factory=list)
    snapshot_epochs: list[int] = field(default_factory=list)
    snapshots: list[torch.Tensor] = field(default_factory=list)


# --------------------------------------------------------------------------------------------------
# Loss curves in blocks of steps (what lib.viz.tying.loss_curves and lib.viz.lab.loss_figure draw)
# --------------------------------------------------------------------------------------------------


def block_means(values: Sequence[float] | np.ndarray, block: int) -> tuple[np.ndarray, np.ndarray]:
    """The mean of each full block of ``block`` consecutive values, and the step that ends it.

    A trailing part shorter than ``block`` is left out, so every point averages as many steps.

    Equation:
        mean_j = (1/b) Σ_{t = j·b}^{(j+1)·b − 1} values[t],  step_j = (j + 1)·b,
        for j = 0 … ⌊n/b⌋ − 1

    Args:
        values: one number per step (e.g. a training loss), ``n >= block`` of them.
        block: the steps ``b`` averaged per point, an int >= 1.

    Returns:
        ``(steps, means)``: int64 and float64 numpy arrays of ``⌊n/b⌋`` entries each.

    Raises:
        TypeError: ``block`` is not an int.
        ValueError: ``block`` < 1, ``values`` is not 1-D or holds fewer than ``block`` values.

    Shapes:
        values: [n]
        steps, means: [n // block]
    """
    block = check_positive_int("block", block)
    array = np.asarray(values, dtype=np.float64)
    if array.ndim != 1 or array.size < block:
        raise ValueError(
            f"values must be 1-D with at least block = {block} entries, got {array.shape}"
        )
    n_blocks = array.size // block
    means = array[: n_blocks * block].reshape(n_blocks, block).mean(axis=1)
    return (np.arange(n_blocks, dtype=np.int64) + 1) * block, means
