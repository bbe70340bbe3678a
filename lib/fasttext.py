"""fastText: skip-gram word vectors built from character n-grams (chapter 2).

Bojanowski et al. (arXiv:1607.04606) represent a word by the bag of its character n-grams: the
word is wrapped in boundary markers ``<`` and ``>``, and every substring of n = 3..6 characters is
an n-gram (``"where"`` → ``<wh, whe, her, ere, re>, <whe, ..., <where>``); the word itself, when
it is in the vocabulary, adds one more row of its own. N-grams are not stored in a dictionary but
hashed into a fixed number of buckets, so any string, seen in training or not, has a vector.

The reference code (``src/dictionary.cc`` of facebookresearch/fastText) hashes with 32-bit FNV-1a
(offset basis 2166136261, prime 16777619), reading every byte as a *signed* char (a quirk kept for
compatibility with released models); n-gram ``g`` of a vocabulary of V words gets row
``V + hash(g) mod buckets`` of the input table. The paper writes a word's vector as the *sum* of
its n-gram vectors; the code averages them, in training (``Model::computeHidden``) and when it
returns a word vector (``FastText::getWordVector``). This module averages, as the code does.
The training itself is skip-gram with negative sampling, run by
:func:`lib.word2vec.fit_negative_sampling`; only the centre word's input vector changes.

Differences from the reference, besides those :mod:`lib.word2vec` lists for word2vec.c (a fixed
window where ``FastText::skipgram`` draws one in 1..ws per word; Adam on minibatches instead of
SGD): negatives are drawn in proportion to count^0.75, as in word2vec.c, where the reference
builds its table from ``pow(count, 0.5)`` (``NegativeSamplingLoss`` in ``src/loss.cc``); the
gradient of the average reaches each of the word's rows divided by len(G_w) (autograd of the
mean), where ``Model::update`` (``src/model.cc``) adds the undivided gradient to every input
row (it divides only for supervised models, ``normalizeGradient_``, set in ``src/fasttext.cc``);
a negative equal to the positive word is kept, where ``NegativeSamplingLoss::getNegative``
draws again (``while (target == negative)``).

Equation:
    v_w = (1/len(G_w)) Σ_{g ∈ G_w} z_g,   loss(c, o) = −log σ(u_o · v_c) − Σ_k log σ(−u_k · v_c)

References:
    Bojanowski et al., Enriching Word Vectors with Subword Information, arXiv:1607.04606.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn

from lib._checks import check_positive_int
from lib.vocab import TrainingHistory, Vocab
from lib.word2vec import ARCHITECTURES, SkipGramNS, fit_negative_sampling

__all__ = [
    "FastTextSkipGram",
    "character_ngrams",
    "fnv1a_32",
    "subword_rows",
    "train_fasttext",
]

_FNV_OFFSET, _FNV_PRIME, _MASK = 2166136261, 16777619, 0xFFFFFFFF


def fnv1a_32(text: str) -> int:
    """fastText's hash of a string: 32-bit FNV-1a over its UTF-8 bytes, read as signed chars.

    A byte b >= 128 enters as ``uint32(int8(b))`` = b + 0xFFFFFF00 (the reference's
    ``h ^ uint32_t(int8_t(str[i]))``), so non-ASCII strings hash differently from textbook FNV-1a.

    Equation:
        h_0 = 2166136261,   h_{i+1} = (h_i XOR byte_i) · 16777619  mod 2^32

    Args:
        text: the string.

    Returns:
        The hash, an int in ``[0, 2^32)``.

    Raises:
        TypeError: ``text`` is not a str.

    References:
        Bojanowski et al., arXiv:1607.04606; fastText ``Dictionary::hash`` in src/dictionary.cc.
    """
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    h = _FNV_OFFSET
    for byte in text.encode("utf-8"):
        signed = byte if byte < 128 else (byte - 256) & _MASK
        h = ((h ^ signed) * _FNV_PRIME) & _MASK
    return h


def _check_n_range(minn: int, maxn: int) -> tuple[int, int]:
    minn = check_positive_int("minn", minn)
    maxn = check_positive_int("maxn", maxn)
    if maxn < minn:
        raise ValueError(f"maxn must be >= minn = {minn}, got {maxn}")
    return minn, maxn


def character_ngrams(word: str, minn: int = 3, maxn: int = 6) -> list[str]:
    """The character n-grams of ``<word>`` with minn <= n <= maxn, in fastText's order.

    Ordered by start position, then length, as ``Dictionary::computeSubwords`` emits them; the
    whole ``<word>`` is among them when it is at most ``maxn`` characters long. A 1-gram made of a
    boundary marker alone is skipped (it matters only for minn = 1). Characters are Unicode code
    points, as the reference counts UTF-8 characters.

    Args:
        word: the word, without markers.
        minn: the shortest n-gram, >= 1 (3 in the paper).
        maxn: the longest n-gram, >= minn (6 in the paper).

    Returns:
        The n-grams, duplicates kept (a repeated n-gram counts twice, as in the reference).

    Raises:
        TypeError: ``word`` is not a str. ValueError: ``word`` is empty or the range is invalid.

    References:
        Bojanowski et al., Enriching Word Vectors with Subword Information, arXiv:1607.04606, §3.2.
    """
    if not isinstance(word, str):
        raise TypeError(f"word must be a str, got {type(word).__name__}")
    if not word:
        raise ValueError("word must not be empty")
    minn, maxn = _check_n_range(minn, maxn)
    marked = f"<{word}>"
    grams = []
    for i in range(len(marked)):
        for n in range(1, maxn + 1):
            j = i + n
            if j > len(marked):
                break
            if n >= minn and not (n == 1 and (i == 0 or j == len(marked))):
                grams.append(marked[i:j])
    return grams


def subword_rows(
    word: str, vocab: Vocab, *, buckets: int, minn: int = 3, maxn: int = 6
) -> list[int]:
    """The input-table rows whose average is ``word``'s vector: its own row, then its n-grams'.

    A vocabulary word has row ``vocab.id(word)``; an out-of-vocabulary word has none, only its
    n-grams (as ``Dictionary::getSubwords``). N-gram g has row ``V + fnv1a_32(g) mod buckets``.

    Args:
        word: any word.
        vocab: the :class:`lib.vocab.Vocab` (its size V offsets the n-gram rows).
        buckets: number of hash buckets, >= 1 (2,000,000 in the reference).
        minn, maxn: the n-gram lengths.

    Returns:
        Row ids in ``[0, V + buckets)``.

    Raises:
        ValueError: ``buckets`` < 1 or an invalid n range.

    References:
        Bojanowski et al., Enriching Word Vectors with Subword Information, arXiv:1607.04606.
    """
    buckets = check_positive_int("buckets", buckets)
    rows = [vocab.id(word)] if word in vocab else []
    rows += [len(vocab) + fnv1a_32(g) % buckets for g in character_ngrams(word, minn, maxn)]
    return rows


class FastTextSkipGram(SkipGramNS):
    """Skip-gram whose input vector of a word is the mean of its word and n-gram rows.

    The input table has ``V + buckets`` rows (words, then hash buckets), initialised uniform in
    (−1/d, 1/d) as in the reference; the output table has V rows, initialised to zero.
    ``forward(centre, context, negatives)`` is :class:`lib.word2vec.SkipGramNS`'s; only
    :meth:`input_vectors` differs.

    Equation:
        v_c = (1/len(G_c)) Σ_{g ∈ G_c} z_g,   loss = −log σ(u_o · v_c) − Σ_k log σ(−u_k · v_c)

    Args:
        vocab: the training vocabulary.
        dim: d >= 1.
        buckets: number of n-gram hash buckets, >= 1.
        minn, maxn: the n-gram lengths.
        generator: random generator for the initial input table.

    Raises:
        ValueError: an argument is out of range, or ids in ``forward`` are outside ``[0, V)``.

    Shapes:
        centre: [B], context: [B], negatives: [B, K] -> [B]

    References:
        Bojanowski et al., Enriching Word Vectors with Subword Information, arXiv:1607.04606.
    """

    subwords: torch.Tensor

    def __init__(
        self,
        vocab: Vocab,
        dim: int,
        *,
        buckets: int = 20_000,
        minn: int = 3,
        maxn: int = 6,
        generator: torch.Generator | None = None,
    ):
        nn.Module.__init__(self)  # tables of its own, not SkipGramNS's [V, d] pair
        dim = check_positive_int("dim", dim)
        self.buckets = check_positive_int("buckets", buckets)
        self.minn, self.maxn = _check_n_range(minn, maxn)
        self.vocab = vocab
        rows = [subword_rows(w, vocab, buckets=buckets, minn=minn, maxn=maxn) for w in vocab.words]
        width = max(len(r) for r in rows)
        padded = [r + [-1] * (width - len(r)) for r in rows]
        self.register_buffer("subwords", torch.tensor(padded, dtype=torch.long))  # [V, S]
        self.in_embed = nn.Embedding(len(vocab) + buckets, dim)  # z: words, then n-gram buckets
        self.out_embed = nn.Embedding(len(vocab), dim)  # u: the word as context
        with torch.no_grad():
            self.in_embed.weight.uniform_(-1.0 / dim, 1.0 / dim, generator=generator)
            self.out_embed.weight.zero_()

    def _mean_rows(self, rows: torch.Tensor) -> torch.Tensor:
        """Mean of the input rows listed in ``rows`` ([..., S], −1 = none): ``[..., d]``."""
        present = rows >= 0
        z = self.in_embed(torch.where(present, rows, 0)) * present[..., None]
        return z.sum(-2) / present.sum(-1, keepdim=True)

    def input_vectors(self, ids: torch.Tensor) -> torch.Tensor:
        """The input vectors v of the words ``ids``: the means of their word and n-gram rows.

        Equation:
            v_w = (1/len(G_w)) Σ_{g ∈ G_w} z_g

        Args:
            ids: vocabulary ids in ``[0, V)`` (``forward`` checks them).

        Returns:
            v_w for each id: the mean of the rows ``self.subwords[w]`` lists.

        Shapes:
            ids: [...] -> [..., d]
        """
        return self._mean_rows(self.subwords)[ids]  # every word once ([V, d]), then gather

    def vectors(self) -> torch.Tensor:
        """The vocabulary's word vectors, each the mean of its word and n-gram rows.

        Returns:
            A detached ``[V, d]`` tensor, row i for ``vocab.words[i]``.

        Shapes:
            -> [V, d]
        """
        with torch.no_grad():
            return self._mean_rows(self.subwords).detach().clone()

    def word_vector(self, word: str) -> torch.Tensor:
        """The vector of any word: for an out-of-vocabulary one, the mean of its n-gram rows.

        Args:
            word: any non-empty word.

        Returns:
            A detached ``[d]`` tensor.

        Shapes:
            -> [d]
        """
        rows = subword_rows(word, self.vocab, buckets=self.buckets, minn=self.minn, maxn=self.maxn)
        with torch.no_grad():
            return self._mean_rows(torch.tensor(rows)).detach().clone()


def train_fasttext(
    sentences: Sequence[Sequence[str]],
    *,
    dim: int = 32,
    window: int = 2,
    negatives: int = 5,
    epochs: int = 10,
    lr: float = 0.02,
    batch_size: int = 2048,
    buckets: int = 20_000,
    minn: int = 3,
    maxn: int = 6,
    min_count: int = 1,
    subsample: float | None = None,
    seed: int = 0,
) -> tuple[FastTextSkipGram, Vocab, TrainingHistory]:
    """Train fastText's skip-gram (n-gram input vectors, negative sampling); deterministic.

    The same loop, examples and noise distribution (count^0.75, word2vec.c's; the reference
    fastText uses count^0.5, see the module docstring) as :func:`lib.word2vec.train_skipgram`
    (:func:`lib.word2vec.fit_negative_sampling`); only the model differs. The default
    ``buckets`` is small for a small corpus (the reference uses 2,000,000).

    Args:
        sentences: tokenised sentences.
        dim, window, negatives, epochs, lr, batch_size, min_count, subsample, seed: as for
            :func:`lib.word2vec.train_word2vec`.
        buckets: number of n-gram hash buckets.
        minn, maxn: the n-gram lengths (3 and 6 in the paper).

    Returns:
        ``(model, vocab, history)``: the trained :class:`FastTextSkipGram`, its vocabulary and
        the mean loss per epoch.

    Raises:
        ValueError: an argument is out of range, or the corpus gives no pair.

    References:
        Bojanowski et al., Enriching Word Vectors with Subword Information, arXiv:1607.04606.
    """
    _, make_pairs = ARCHITECTURES["skipgram"]
    return fit_negative_sampling(
        sentences,
        lambda vocab, d, generator: FastTextSkipGram(
            vocab, d, buckets=buckets, minn=minn, maxn=maxn, generator=generator
        ),
        make_pairs,
        dim=dim,
        window=window,
        negatives=negatives,
        epochs=epochs,
        lr=lr,
        batch_size=batch_size,
        min_count=min_count,
        subsample=subsample,
        seed=seed,
    )
