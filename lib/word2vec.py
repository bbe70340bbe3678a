"""word2vec with negative sampling: skip-gram and CBOW, small enough to train in seconds (chapter 2).

Both architectures of Mikolov et al. (arXiv:1301.3781) keep two tables, an *input* embedding ``v``
and an *output* embedding ``u``, both ``[V, d]``, and are trained with negative sampling and
optional frequent-word subsampling (arXiv:1310.4546). Skip-gram predicts each context word ``o``
of a centre word ``c`` from ``v_c``; CBOW ("continuous bag of words") predicts the centre word
from the average ``h`` of the input vectors of its context words (the C tool divides the sum by
the number of context words, ``neu1[c] /= cw``). With ``K`` negatives ``n_k`` drawn from the
unigram distribution raised to the power 3/4, the loss of one training example is

    skip-gram:  loss(c, o) = −log σ(u_o · v_c) − Σ_k log σ(−u_{n_k} · v_c)
    CBOW:       loss(c, C) = −log σ(u_c · h) − Σ_k log σ(−u_{n_k} · h),  h = (1/len(C)) Σ_{o∈C} v_o

The word vectors are the rows of the input table (``model.vectors()``).

Differences from the reference C tool (they are hyper-parameters in the sense of Levy, Goldberg &
Dagan 2015, not details of speed): the window is fixed (the C tool draws a window size in
1..window for every centre word, which weights near contexts more); updates are Adam on minibatches
instead of SGD with a linearly decaying learning rate, one example at a time, which also changes the
lengths the vectors end up with; a negative that equals the positive word is kept, not skipped
(``if (target == word) continue;`` in word2vec.c). CBOW: the gradient of the mean ``h`` reaches
each context vector divided by len(C), as in kōan (İrsoy, Benton & Stratos, arXiv:2012.15332);
word2vec.c averages on the way in (``neu1[c] /= cw``) but adds the undivided gradient of ``h``
to every context vector on the way back (its "hidden -> in" loop, ``syn0[...] += neu1e[c]``),
an update İrsoy et al. call a bug. (The C tool also starts CBOW at ``alpha = 0.05``, twice
skip-gram's 0.025; here the learning rate is an argument, the same default for both.)

References:
    Mikolov et al., Efficient Estimation of Word Representations in Vector Space, arXiv:1301.3781.
    Mikolov et al., Distributed Representations of Words and Phrases and their Compositionality,
    arXiv:1310.4546.
    Arora et al., Linear Algebraic Structure of Word Senses, with Applications to Polysemy,
    arXiv:1601.03764 (:func:`add_pseudowords`, :func:`mixture_weights`).
    İrsoy, Benton & Stratos, Corrected CBOW Performs as well as Skip-gram, arXiv:2012.15332.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Iterable, Sequence
from typing import TypeVar

import torch
import torch.nn.functional as F
from torch import nn

from lib._checks import (
    check_choice,
    check_floating,
    check_int,
    check_ndim,
    check_positive_float,
    check_positive_int,
    check_rows_and_vector,
    check_token_ids,
)
from lib.similarity import cosine_with
from lib.vocab import TrainingHistory, Vocab, build_vocab, flatten

__all__ = [
    "ARCHITECTURES",
    "CBOWNS",
    "SUBSAMPLE_RULES",
    "SkipGramNS",
    "add_pseudowords",
    "analogy",
    "cbow_examples",
    "fit_negative_sampling",
    "mixture_weights",
    "nearest_neighbours",
    "nearest_to_vector",
    "negative_sampling_loss",
    "sample_negatives",
    "skipgram_pairs",
    "subsample_keep_probability",
    "train_cbow",
    "train_skipgram",
    "train_word2vec",
    "unigram_distribution",
]


# --- training data ---------------------------------------------------------------------------------


def _pairs_from_flat(
    ids: torch.Tensor, sentence_ids: torch.Tensor, window: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """All (centre, context) pairs at distance 1..window inside one sentence: ``[P]``, ``[P]``."""
    pairs = _pair_matrix(ids, sentence_ids, window)
    return pairs[:, 0], pairs[:, 1]


def _pair_matrix(ids: torch.Tensor, sentence_ids: torch.Tensor, window: int) -> torch.Tensor:
    chunks = []
    for offset in range(1, window + 1):
        same = sentence_ids[offset:] == sentence_ids[:-offset]  # [N - offset]
        left, right = ids[:-offset][same], ids[offset:][same]
        chunks.append(torch.stack([left, right], dim=1))  # left word as centre
        chunks.append(torch.stack([right, left], dim=1))  # right word as centre
    if not chunks:
        return torch.empty(0, 2, dtype=torch.long)
    return torch.cat(chunks)


def _cbow_from_flat(
    ids: torch.Tensor, sentence_ids: torch.Tensor, window: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """Every token with a non-empty context: centres ``[P]`` and contexts ``[P, 2·window]``, −1 pads."""
    n = len(ids)
    if n == 0:
        return ids, torch.empty(0, 2 * window, dtype=torch.long)
    columns = []
    for offset in [*range(-window, 0), *range(1, window + 1)]:
        source = torch.arange(n) + offset  # [N] position of this context slot
        clamped = source.clamp(0, n - 1)
        ok = (source == clamped) & (sentence_ids[clamped] == sentence_ids)  # [N]
        columns.append(torch.where(ok, ids[clamped], -1))
    contexts = torch.stack(columns, dim=1)  # [N, 2·window]
    has_context = (contexts >= 0).any(dim=1)  # a one-word sentence gives no CBOW example
    return ids[has_context], contexts[has_context]


def skipgram_pairs(
    sentences: Iterable[Sequence[str]], vocab: Vocab, window: int = 2
) -> torch.Tensor:
    """All skip-gram (centre, context) id pairs within ``window`` words, inside each sentence.

    For every token at position t and every offset ``1 <= |j| <= window`` with t + j inside the
    same sentence, the pair (w_t, w_{t+j}) is produced. Out-of-vocabulary words are removed before
    the window is applied, as in the C code.

    Args:
        sentences: tokenised sentences.
        vocab: the :class:`lib.vocab.Vocab` that gives the ids.
        window: the context half-width m, >= 1.

    Returns:
        Column 0 the centre id, column 1 the context id (grouped by offset, not in reading order).

    Raises:
        ValueError: ``window`` < 1.

    Shapes:
        -> [P, 2] long

    References:
        Mikolov et al., Efficient Estimation of Word Representations, arXiv:1301.3781.
    """
    window = check_positive_int("window", window)
    ids, sentence_ids = flatten(sentences, vocab)
    return _pair_matrix(ids, sentence_ids, window)


def cbow_examples(
    sentences: Iterable[Sequence[str]], vocab: Vocab, window: int = 2
) -> tuple[torch.Tensor, torch.Tensor]:
    """CBOW training examples: every token as a centre, with the ids of its context words.

    Slot j of a row holds the word at offset j − window (j < window) or j − window + 1 (j >=
    window) from the centre, or −1 where that position is outside the sentence. Tokens with no
    context word at all (one-word sentences) give no example, as in the C tool (``if (cw)``).

    Args:
        sentences: tokenised sentences.
        vocab: the :class:`lib.vocab.Vocab` that gives the ids.
        window: the context half-width m, >= 1.

    Returns:
        ``(centres, contexts)``, in reading order.

    Raises:
        ValueError: ``window`` < 1.

    Shapes:
        -> centres: [P] long, contexts: [P, 2·window] long (−1 = no word)

    References:
        Mikolov et al., Efficient Estimation of Word Representations, arXiv:1301.3781.
    """
    window = check_positive_int("window", window)
    ids, sentence_ids = flatten(sentences, vocab)
    return _cbow_from_flat(ids, sentence_ids, window)


def unigram_distribution(vocab: Vocab, power: float = 0.75) -> torch.Tensor:
    """The negative-sampling distribution, each word's count raised to ``power`` and normalised.

    Equation:
        P_n(w) = count(w)^power / Σ_w' count(w')^power   (power = 3/4 in the paper)

    Args:
        vocab: a :class:`lib.vocab.Vocab`.
        power: the exponent, >= 0.

    Returns:
        float32 probabilities summing to 1.

    Raises:
        ValueError: ``power`` < 0.

    Shapes:
        -> [V]

    References:
        Mikolov et al., Distributed Representations of Words and Phrases, arXiv:1310.4546, §2.2.
    """
    power = check_positive_float("power", power, allow_zero=True)
    counts = torch.tensor(vocab.counts, dtype=torch.float64)
    weights = counts**power
    return (weights / weights.sum()).to(torch.float32)


def sample_negatives(
    distribution: torch.Tensor, shape: tuple[int, ...], generator: torch.Generator | None = None
) -> torch.Tensor:
    """Draw negative word ids with replacement from ``distribution``.

    Args:
        distribution: probabilities over the vocabulary (e.g. :func:`unigram_distribution`).
        shape: the shape of the result.
        generator: the random generator (None: torch's global one).

    Returns:
        Long ids in ``0 .. V-1``.

    Raises:
        TypeError: ``distribution`` is not floating. ValueError: it is not 1-D.

    Shapes:
        distribution: [V] -> shape

    References:
        Mikolov et al., Distributed Representations of Words and Phrases, arXiv:1310.4546.
    """
    distribution = check_floating("distribution", distribution)
    if distribution.dim() != 1:
        raise ValueError(f"distribution must be 1-D [V], got shape {tuple(distribution.shape)}")
    n = math.prod(shape)
    flat = torch.multinomial(distribution, n, replacement=True, generator=generator)
    return flat.reshape(shape)


#: Frequent-word subsampling rules, keep probability as a function of t / f(w) (clamped to 1).
#: ``"paper"``: eq. 5 of arXiv:1310.4546 (discard with probability 1 − √(t/f)); ``"word2vec.c"``:
#: the C tool's ``ran = (sqrt(cn / (sample * train_words)) + 1) * (sample * train_words) / cn``,
#: that is √(t/f) + t/f.
SUBSAMPLE_RULES: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    "paper": lambda ratio: torch.sqrt(ratio),
    "word2vec.c": lambda ratio: torch.sqrt(ratio) + ratio,
}


def subsample_keep_probability(
    vocab: Vocab, threshold: float = 1e-3, *, rule: str = "paper"
) -> torch.Tensor:
    """Probability of keeping each word under frequent-word subsampling.

    With ``rule="paper"`` an occurrence of w is discarded with probability 1 − sqrt(t / f(w)),
    where f(w) is the word's relative frequency and t the threshold (the paper suggests t around
    1e-5). ``rule="word2vec.c"`` is the C tool's formula, which keeps more: sqrt(t / f) + t / f
    (its default t is 1e-3, ``sample = 1e-3`` in word2vec.c).

    Equation:
        keep(w) = min(1, sqrt(t / f(w)))               ("paper")
        keep(w) = min(1, sqrt(t / f(w)) + t / f(w))    ("word2vec.c")

    Args:
        vocab: a :class:`lib.vocab.Vocab`.
        threshold: t > 0.
        rule: a key of :data:`SUBSAMPLE_RULES` (default ``"paper"``).

    Returns:
        float32 probabilities.

    Raises:
        ValueError: ``threshold`` <= 0 or an unknown ``rule``.

    Shapes:
        -> [V]

    References:
        Mikolov et al., Distributed Representations of Words and Phrases, arXiv:1310.4546, eq. 5;
        ``TrainModelThread`` in https://github.com/tmikolov/word2vec/blob/master/word2vec.c.
    """
    threshold = check_positive_float("threshold", threshold)
    rule = check_choice("rule", rule, tuple(SUBSAMPLE_RULES))
    counts = torch.tensor(vocab.counts, dtype=torch.float64)
    freq = counts / counts.sum()
    return SUBSAMPLE_RULES[rule](threshold / freq).clamp(max=1.0).to(torch.float32)


# --- the models ------------------------------------------------------------------------------------


def negative_sampling_loss(
    hidden: torch.Tensor, positive: torch.Tensor, negatives: torch.Tensor
) -> torch.Tensor:
    """The negative-sampling loss of a batch: score the positive output vector against K noise ones.

    The one loss of skip-gram (``hidden`` = v_c), CBOW (``hidden`` = the context average) and
    fastText (``hidden`` = the centre word's n-gram average).

    Equation:
        loss = −log σ(u_pos · h) − Σ_k log σ(−u_k · h)

    Args:
        hidden: the input-side vectors h.
        positive: the output vectors u_pos of the true words.
        negatives: the output vectors u_k of the noise words.

    Returns:
        One loss per example.

    Shapes:
        hidden: [B, d], positive: [B, d], negatives: [B, K, d] -> [B]

    References:
        Mikolov et al., Distributed Representations of Words and Phrases, arXiv:1310.4546, eq. 4.
    """
    pos = F.logsigmoid((positive * hidden).sum(-1))  # [B]
    neg = F.logsigmoid(-(negatives * hidden[:, None, :]).sum(-1)).sum(-1)  # [B, K] -> [B]
    return -(pos + neg)


class SkipGramNS(nn.Module):
    """Skip-gram with negative sampling: an input table ``v`` and an output table ``u``.

    ``forward(centre, context, negatives)`` returns the loss of each (centre, context) pair.
    Initialisation follows the C code: input rows uniform in (−0.5/d, 0.5/d), output rows zero.

    Equation:
        loss(c, o) = −log σ(u_o · v_c) − Σ_k log σ(−u_{n_k} · v_c)

    Args:
        vocab_size: V >= 1.
        dim: d >= 1.
        generator: random generator for the initial input table.

    Raises:
        ValueError: ``vocab_size`` or ``dim`` < 1; ids out of ``[0, V)`` in ``forward``.

    Shapes:
        centre: [B], context: [B], negatives: [B, K] (long) -> [B] float

    References:
        Mikolov et al., Distributed Representations of Words and Phrases, arXiv:1310.4546, eq. 4.
    """

    def __init__(self, vocab_size: int, dim: int, *, generator: torch.Generator | None = None):
        super().__init__()
        vocab_size = check_positive_int("vocab_size", vocab_size)
        dim = check_positive_int("dim", dim)
        self.in_embed = nn.Embedding(vocab_size, dim)  # v: the word as input (centre / context)
        self.out_embed = nn.Embedding(vocab_size, dim)  # u: the word as output
        with torch.no_grad():
            self.in_embed.weight.uniform_(-0.5 / dim, 0.5 / dim, generator=generator)
            self.out_embed.weight.zero_()

    def _check(self, **ids: torch.Tensor) -> None:
        for name, t in ids.items():
            check_token_ids(t, self.out_embed.num_embeddings, name)

    def input_vectors(self, ids: torch.Tensor) -> torch.Tensor:
        """The input vectors v of the words ``ids``: rows of the input table.

        Args:
            ids: vocabulary ids in ``[0, V)`` (``forward`` checks them).

        Returns:
            v_w for each id, the input table's row w.

        Shapes:
            ids: [...] -> [..., d]
        """
        return self.in_embed(ids)

    def forward(
        self, centre: torch.Tensor, context: torch.Tensor, negatives: torch.Tensor
    ) -> torch.Tensor:
        """The negative-sampling loss of each (centre, context) pair against its K noise words.

        Equation:
            loss(c, o) = −log σ(u_o · v_c) − Σ_k log σ(−u_{n_k} · v_c)

        Args:
            centre: ids of the centre words c, in ``[0, V)``.
            context: ids of the context words o, in ``[0, V)``.
            negatives: ids of the K noise words of each pair, in ``[0, V)``.

        Returns:
            One loss per pair, float.

        Raises:
            TypeError: an id tensor is not an integer tensor.
            ValueError: an id is outside ``[0, V)``.

        Shapes:
            centre: [B], context: [B], negatives: [B, K] -> [B]
        """
        self._check(centre=centre, context=context, negatives=negatives)
        v_c = self.input_vectors(centre)  # [B, d]
        return negative_sampling_loss(v_c, self.out_embed(context), self.out_embed(negatives))

    def vectors(self) -> torch.Tensor:
        """The word vectors: a detached copy of the input table.

        Returns:
            One row per word.

        Shapes:
            -> [V, d]
        """
        return self.in_embed.weight.detach().clone()


class CBOWNS(SkipGramNS):
    """CBOW with negative sampling: predict the centre word from the mean of its context vectors.

    Same tables and initialisation as :class:`SkipGramNS`; ``forward(centre, contexts,
    negatives)`` takes every example's context ids padded with −1. Autograd of the mean gives each
    context vector 1/len(C) of the gradient of h (word2vec.c adds all of it to each; see the
    module docstring).

    Equation:
        h = (1/len(C)) Σ_{o∈C} v_o,   loss(c, C) = −log σ(u_c · h) − Σ_k log σ(−u_{n_k} · h)

    Args:
        vocab_size: V >= 1.
        dim: d >= 1.
        generator: random generator for the initial input table.

    Raises:
        ValueError: an example has no context word, or an id is out of ``[0, V)``.

    Shapes:
        centre: [B], contexts: [B, C] (−1 = no word), negatives: [B, K] -> [B]

    References:
        Mikolov et al., Efficient Estimation of Word Representations, arXiv:1301.3781, §3.1.
    """

    def forward(
        self, centre: torch.Tensor, contexts: torch.Tensor, negatives: torch.Tensor
    ) -> torch.Tensor:
        """The negative-sampling loss of predicting each centre word from its context average.

        Equation:
            h = (1/len(C)) Σ_{o∈C} v_o,   loss(c, C) = −log σ(u_c · h) − Σ_k log σ(−u_{n_k} · h)

        Args:
            centre: ids of the centre words c, in ``[0, V)``.
            contexts: every example's context ids in ``[0, V)``, padded with −1.
            negatives: ids of the K noise words of each example, in ``[0, V)``.

        Returns:
            One loss per example, float.

        Raises:
            TypeError: an id tensor is not an integer tensor.
            ValueError: ``contexts`` has fewer than 2 dimensions, an example has no context word,
                or an id is outside ``[0, V)``.

        Shapes:
            centre: [B], contexts: [B, C] (−1 = no word), negatives: [B, K] -> [B]
        """
        check_ndim("contexts", contexts, minimum=2)
        present = contexts >= 0  # [B, C]
        n_context = present.sum(-1, keepdim=True)  # [B, 1]
        if bool((n_context == 0).any()):
            raise ValueError("contexts: every example needs at least one context word (id >= 0)")
        filled = torch.where(present, contexts, 0)  # [B, C], pads point at row 0 ...
        self._check(centre=centre, contexts=filled, negatives=negatives)
        v = self.in_embed(filled) * present[..., None]  # ... and are zeroed here: [B, C, d]
        hidden = v.sum(1) / n_context  # [B, d]
        return negative_sampling_loss(hidden, self.out_embed(centre), self.out_embed(negatives))


#: Architecture name -> (model class, builder of one epoch's examples from the token stream).
ARCHITECTURES: dict[
    str,
    tuple[
        type[SkipGramNS],
        Callable[[torch.Tensor, torch.Tensor, int], tuple[torch.Tensor, torch.Tensor]],
    ],
] = {
    "skipgram": (SkipGramNS, _pairs_from_flat),
    "cbow": (CBOWNS, _cbow_from_flat),
}

#: The model :func:`fit_negative_sampling` trains and returns (a :class:`SkipGramNS` or subclass).
Model = TypeVar("Model", bound=SkipGramNS)


def fit_negative_sampling(
    sentences: Sequence[Sequence[str]],
    make_model: Callable[[Vocab, int, torch.Generator], Model],
    make_examples: Callable[[torch.Tensor, torch.Tensor, int], tuple[torch.Tensor, torch.Tensor]],
    *,
    dim: int,
    window: int,
    negatives: int,
    epochs: int,
    lr: float,
    batch_size: int,
    min_count: int,
    subsample: float | None,
    seed: int,
    snapshot_every: int | None = None,
) -> tuple[Model, Vocab, TrainingHistory]:
    """The training every negative-sampling model of :mod:`lib` shares (word2vec, fastText).

    Checks the options, builds the vocabulary and the token stream, seeds one generator and builds
    the model with ``make_model(vocab, dim, generator)``. Then, every epoch: optionally subsample
    the token stream, build the examples with ``make_examples`` (a (centre, context) pair per row
    for skip-gram, a centre and its contexts for CBOW), shuffle them, draw ``negatives`` noise
    words per example from the unigram^(3/4) distribution, and take one Adam step per minibatch
    on the mean of ``model(centres, contexts, noise)``.

    Args:
        sentences: tokenised sentences.
        make_model: ``(vocab, dim, generator) -> model``, a :class:`SkipGramNS` (or subclass)
            whose ``forward(centre, context, negatives)`` returns one loss per example.
        make_examples: ``(ids, sentence_ids, window) -> (centres, contexts)``.
        dim, window, negatives, epochs, lr, batch_size, min_count, subsample, seed: as for
            :func:`train_word2vec`.
        snapshot_every: as for :func:`train_word2vec`.

    Returns:
        ``(model, vocab, history)``: the trained model, its :class:`lib.vocab.Vocab` and a
        :class:`lib.vocab.TrainingHistory` (mean loss per epoch, the snapshots of
        ``model.vectors()``).

    Raises:
        ValueError: an option is out of range, or the corpus gives no training example.

    References:
        Mikolov et al., Distributed Representations of Words and Phrases, arXiv:1310.4546.
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
    ids, sentence_ids = flatten(sentences, vocab)  # [N], [N]
    generator = torch.Generator().manual_seed(seed)  # the only source of randomness
    model = make_model(vocab, dim, generator)
    noise = unigram_distribution(vocab, 0.75)
    keep = subsample_keep_probability(vocab, subsample) if subsample is not None else None
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    history = TrainingHistory()

    def take(epoch: int) -> None:
        history.snapshot_epochs.append(epoch)
        history.snapshots.append(model.vectors())

    if snapshot_every is not None:
        take(0)
    for epoch in range(1, epochs + 1):
        if keep is not None:
            mask = torch.rand(ids.shape, generator=generator) < keep[ids]  # [N]
            centres, contexts = make_examples(ids[mask], sentence_ids[mask], window)
        else:
            centres, contexts = make_examples(ids, sentence_ids, window)
        if len(centres) == 0:
            raise ValueError(
                "sentences give no training example (pair): are they all one word long?"
            )
        order = torch.randperm(len(centres), generator=generator)
        centres, contexts = centres[order], contexts[order]  # [P], [P] or [P, C], shuffled
        negs = sample_negatives(noise, (len(centres), negatives), generator)  # [P, K]
        total = 0.0
        for start in range(0, len(centres), batch_size):
            stop = start + batch_size
            loss = model(centres[start:stop], contexts[start:stop], negs[start:stop]).mean()
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            total += loss.item() * len(centres[start:stop])
        history.losses.append(total / len(centres))
        if snapshot_every is not None and (epoch % snapshot_every == 0 or epoch == epochs):
            take(epoch)
    return model, vocab, history


def train_word2vec(
    sentences: Sequence[Sequence[str]],
    *,
    architecture: str = "skipgram",
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
    """Train word2vec (skip-gram or CBOW) with negative sampling; deterministic given ``seed``.

    Every epoch builds the examples (skip-gram: every (centre, context) pair within ``window``
    words; CBOW: every token with its context words), shuffles them, draws ``negatives`` negatives
    per example from the unigram^(3/4) distribution and takes one Adam step per minibatch of
    ``batch_size`` examples (:func:`fit_negative_sampling`). With ``subsample`` = t, each epoch
    first drops every token of word w with probability 1 − sqrt(t / f(w)). All randomness comes
    from one ``torch.Generator`` seeded with ``seed``; torch's thread count is left alone.

    Equation:
        skip-gram: −log σ(u_o · v_c) − Σ_k log σ(−u_k · v_c)
        CBOW:      −log σ(u_c · h) − Σ_k log σ(−u_k · h),  h = mean of the context v_o

    Args:
        sentences: tokenised sentences, ``list[list[str]]``.
        architecture: a key of :data:`ARCHITECTURES`, ``"skipgram"`` or ``"cbow"``.
        dim: vector size d. window: context half-width. negatives: K per example.
        epochs: passes over the corpus. lr: Adam learning rate. batch_size: examples per step.
        min_count: minimum count for a word to enter the vocabulary.
        subsample: threshold t for frequent-word subsampling, or None for none.
        seed: random seed (>= 0).
        snapshot_every: if set, store ``vectors()`` before training (epoch 0) and after every
            ``snapshot_every`` epochs (and after the last), for a figure that replays training.

    Returns:
        ``(model, vocab, history)``: the trained :class:`SkipGramNS` or :class:`CBOWNS`, its
        :class:`lib.vocab.Vocab`, and a :class:`lib.vocab.TrainingHistory` with the mean loss
        per epoch and the snapshots (each ``[V, dim]``).

    Raises:
        ValueError: an argument is out of range, or the corpus gives no training example.

    References:
        Mikolov et al., Efficient Estimation of Word Representations, arXiv:1301.3781.
        Mikolov et al., Distributed Representations of Words and Phrases, arXiv:1310.4546.
    """
    architecture = check_choice("architecture", architecture, tuple(ARCHITECTURES))
    model_class, make_examples = ARCHITECTURES[architecture]
    return fit_negative_sampling(
        sentences,
        lambda vocab, d, generator: model_class(len(vocab), d, generator=generator),
        make_examples,
        dim=dim,
        window=window,
        negatives=negatives,
        epochs=epochs,
        lr=lr,
        batch_size=batch_size,
        min_count=min_count,
        subsample=subsample,
        seed=seed,
        snapshot_every=snapshot_every,
    )


def train_skipgram(
    sentences: Sequence[Sequence[str]], **kwargs: object
) -> tuple[SkipGramNS, Vocab, TrainingHistory]:
    """Train skip-gram with negative sampling: :func:`train_word2vec` with ``"skipgram"``.

    Args:
        sentences: tokenised sentences.
        **kwargs: the keyword arguments of :func:`train_word2vec` (not ``architecture``).

    Returns:
        ``(model, vocab, history)``, as :func:`train_word2vec`.

    Raises:
        TypeError: ``architecture`` is passed.

    References:
        Mikolov et al., Efficient Estimation of Word Representations, arXiv:1301.3781.
    """
    if "architecture" in kwargs:
        raise TypeError("train_skipgram() got architecture=; use train_word2vec for that")
    return train_word2vec(sentences, architecture="skipgram", **kwargs)  # type: ignore[arg-type]  # checked there


def train_cbow(
    sentences: Sequence[Sequence[str]], **kwargs: object
) -> tuple[SkipGramNS, Vocab, TrainingHistory]:
    """Train CBOW with negative sampling: :func:`train_word2vec` with ``"cbow"``.

    Args:
        sentences: tokenised sentences.
        **kwargs: the keyword arguments of :func:`train_word2vec` (not ``architecture``).

    Returns:
        ``(model, vocab, history)``, as :func:`train_word2vec` (the model a :class:`CBOWNS`).

    Raises:
        TypeError: ``architecture`` is passed.

    References:
        Mikolov et al., Efficient Estimation of Word Representations, arXiv:1301.3781.
    """
    if "architecture" in kwargs:
        raise TypeError("train_cbow() got architecture=; use train_word2vec for that")
    return train_word2vec(sentences, architecture="cbow", **kwargs)  # type: ignore[arg-type]  # checked there


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


def _top_k(
    cosines: torch.Tensor, vocab: Vocab, k: int, exclude: set[int]
) -> list[tuple[str, float]]:
    order = torch.argsort(cosines, descending=True, stable=True).tolist()
    result = [(vocab.words[i], float(cosines[i])) for i in order if i not in exclude]
    return result[:k]


def nearest_neighbours(
    vectors: torch.Tensor, vocab: Vocab, word: str, k: int = 5
) -> list[tuple[str, float]]:
    """The ``k`` words whose vectors have the highest cosine with ``word``'s, itself excluded.

    Equation:
        cos(x, y) = x · y / (‖x‖ ‖y‖)

    Args:
        vectors: the word vectors, row i for ``vocab.words[i]``.
        vocab: the :class:`lib.vocab.Vocab` of the rows.
        word: the query word.
        k: how many neighbours, >= 1.

    Returns:
        ``[(word, cosine), ...]``, best first, length min(k, V − 1).

    Raises:
        KeyError: ``word`` is not in the vocabulary (the message names it).
        ValueError: ``vectors`` is not ``[V, d]`` with V = len(vocab), or k < 1.

    Shapes:
        vectors: [V, d]
    """
    vectors = _check_vectors(vectors, vocab)
    k = check_positive_int("k", k)
    i = vocab.id(word)
    return _top_k(cosine_with(vectors, vectors[i]), vocab, k, exclude={i})


def nearest_to_vector(
    vectors: torch.Tensor, vocab: Vocab, query: torch.Tensor, k: int = 5
) -> list[tuple[str, float]]:
    """The ``k`` words whose vectors have the highest cosine with an arbitrary ``query`` vector.

    For vectors that are no row of the table, e.g. a fastText vector built for an
    out-of-vocabulary word from its character n-grams.

    Equation:
        cos(x_w, q) = x_w · q / (‖x_w‖ ‖q‖)

    Args:
        vectors: the word vectors, row i for ``vocab.words[i]``.
        vocab: the :class:`lib.vocab.Vocab` of the rows.
        query: the query vector.
        k: how many neighbours, >= 1.

    Returns:
        ``[(word, cosine), ...]``, best first, length min(k, V).

    Raises:
        ValueError: the shapes disagree, or k < 1.

    Shapes:
        vectors: [V, d], query: [d]
    """
    vectors = _check_vectors(vectors, vocab)
    k = check_positive_int("k", k)
    return _top_k(cosine_with(vectors, query), vocab, k, exclude=set())


def analogy(
    vectors: torch.Tensor, vocab: Vocab, a: str, b: str, c: str, k: int = 5
) -> list[tuple[str, float]]:
    """Answer "a − b + c ≈ ?" by cosine (3CosAdd), the query words excluded.

    ``analogy(v, vocab, "king", "man", "woman")`` → queen. Each word vector is first scaled to unit
    length, as in Mikolov et al. and the word2vec ``word-analogy`` tool; the answer is the word w,
    other than a, b and c, with the highest cos(x, w).

    Equation:
        x = â − b̂ + ĉ,   answer = argmax_{w ∉ {a, b, c}} cos(x, v_w)

    Args:
        vectors: the word vectors, row i for ``vocab.words[i]``.
        vocab: the :class:`lib.vocab.Vocab` of the rows.
        a, b, c: the query words.
        k: how many answers, >= 1.

    Returns:
        ``[(word, cosine), ...]``, best first, length min(k, V − 3).

    Raises:
        KeyError: one of the words is not in the vocabulary (the message names it).
        ValueError: ``vectors`` is not ``[V, d]`` with V = len(vocab), or k < 1.

    Shapes:
        vectors: [V, d]

    References:
        Mikolov et al., Efficient Estimation of Word Representations, arXiv:1301.3781.
    """
    vectors = _check_vectors(vectors, vocab)
    k = check_positive_int("k", k)
    ia, ib, ic = vocab.id(a), vocab.id(b), vocab.id(c)
    unit = F.normalize(vectors.to(torch.float64), dim=-1)  # [V, d]
    query = unit[ia] - unit[ib] + unit[ic]  # [d]
    return _top_k(cosine_with(vectors, query), vocab, k, exclude={ia, ib, ic})


# --- polysemy: pseudo-words -----------------------------------------------------------------------


def add_pseudowords(
    sentences: Sequence[Sequence[str]],
    w1: str,
    w2: str,
    takes: Sequence[tuple[int, int]],
    *,
    seed: int = 0,
) -> tuple[list[list[str]], list[str]]:
    """Make artificial polysemous words: replace some occurrences of ``w1`` and ``w2`` by pseudo-words.

    Pseudo-word i (written ``"w1|w2:n1:n2"``) takes ``takes[i] = (n1, n2)`` occurrences of ``w1``
    and of ``w2``, drawn at random without replacement; the other occurrences keep their word, so
    ``w1``, ``w2`` and the pseudo-words are trained together, in one vector space, and pseudo-word i
    has the frequency ratio n1 / n2 between its two "senses". Arora et al. merge *all*
    occurrences of two random words and compare the new vector with the old ones; keeping part of
    each word is the variant that needs no second training.

    Args:
        sentences: tokenised sentences (not modified).
        w1, w2: two different words of the corpus.
        takes: per pseudo-word, how many occurrences of w1 and of w2 it takes (each >= 0).
        seed: seed of the ``random.Random`` that picks the occurrences.

    Returns:
        ``(new_sentences, pseudowords)``: the corpus with the replacements and the names.

    Raises:
        ValueError: w1 == w2, ``takes`` is empty or negative, or asks for more occurrences of a
            word than the corpus has.

    References:
        Arora et al., Linear Algebraic Structure of Word Senses, arXiv:1601.03764.
    """
    if w1 == w2:
        raise ValueError(f"w1 and w2 must differ, got {w1!r} twice")
    if not takes:
        raise ValueError("takes must name at least one pseudo-word")
    wanted = [
        (check_int("takes", a, minimum=0), check_int("takes", b, minimum=0)) for a, b in takes
    ]
    seed = check_int("seed", seed, minimum=0)
    where: dict[str, list[tuple[int, int]]] = {w1: [], w2: []}
    for s, sentence in enumerate(sentences):
        for t, word in enumerate(sentence):
            if word in where:
                where[word].append((s, t))
    rng = random.Random(seed)
    out = [list(sentence) for sentence in sentences]
    names = [f"{w1}|{w2}:{a}:{b}" for a, b in wanted]
    for side, word in enumerate((w1, w2)):
        need = sum(pair[side] for pair in wanted)
        if need > len(where[word]):
            raise ValueError(
                f"takes asks for {need} occurrences of {word!r}; the corpus has {len(where[word])}"
            )
        chosen = rng.sample(where[word], need)
        start = 0
        for name, pair in zip(names, wanted, strict=True):
            for s, t in chosen[start : start + pair[side]]:
                out[s][t] = name
            start += pair[side]
    return out, names


def mixture_weights(target: torch.Tensor, parts: torch.Tensor) -> tuple[torch.Tensor, float]:
    """Least-squares weights that write ``target`` as a linear mix of the rows of ``parts``.

    Equation:
        w* = argmin_w ‖target − Σ_i w_i parts_i‖²,   fit cosine = cos(target, Σ_i w*_i parts_i)

    Args:
        target: the vector to explain (e.g. a pseudo-word's).
        parts: the vectors to mix (e.g. the two words it merges), one per row.

    Returns:
        ``(weights, fit_cosine)``: the weights (float64) and the cosine between ``target`` and the
        fitted mix (1 = exactly a mix).

    Raises:
        TypeError: an input is not floating. ValueError: the shapes disagree.

    Shapes:
        target: [d], parts: [k, d] (k <= d) -> weights: [k]

    References:
        Arora et al., Linear Algebraic Structure of Word Senses, arXiv:1601.03764.
    """
    parts, target = check_rows_and_vector("parts", parts, "target", target)
    if parts.shape[0] > parts.shape[1]:
        raise ValueError(f"parts must have at most d = {parts.shape[1]} rows, got {parts.shape[0]}")
    A = parts.detach().double().T  # [d, k]
    y = target.detach().double()  # [d]
    weights = torch.linalg.lstsq(A, y[:, None]).solution[:, 0]  # [k]
    fit = A @ weights  # [d]
    return weights, float(cosine_with(fit[None], y)[0])
