"""Checkers for chapter 2, "One-hot and static embeddings"."""

from __future__ import annotations

import numbers
from collections.abc import Callable

import torch
import torch.nn.functional as F

from lib.corpus import generate_corpus
from lib.exercises import exercise
from lib.glove import cooccurrence_matrix
from lib.word2vec import Vocab, analogy, build_vocab

CHAPTER = "02_static_embeddings"

#: The co-occurrence matrices of the "windows" exercise: the chapter's corpus and settings.
CORPUS_SENTENCES, CORPUS_SEED, GLOVE_WINDOW = 5000, 0, 5


# --- 1. the skip-gram negative-sampling loss ------------------------------------------------------


def _sgns_reference(v_c: torch.Tensor, u_o: torch.Tensor, u_n: torch.Tensor) -> torch.Tensor:
    """−log σ(u_o·v_c) − Σ_k log σ(−u_k·v_c), ``[B, d], [B, d], [B, K, d] -> [B]`` (float64)."""
    v_c, u_o, u_n = v_c.double(), u_o.double(), u_n.double()
    positive = torch.log(torch.sigmoid((u_o * v_c).sum(-1)))  # [B]
    scores = torch.einsum("bkd,bd->bk", u_n, v_c)  # [B, K]
    return -(positive + torch.log(torch.sigmoid(-scores)).sum(-1))


def _sgns_cases() -> list[tuple[torch.Tensor, torch.Tensor, torch.Tensor]]:
    g = torch.Generator().manual_seed(2)
    cases = []
    for b, k, d in ((1, 1, 3), (4, 5, 8), (3, 2, 16)):  # B, K, d all different, so shapes show
        scale = 0.7
        cases.append(
            (
                scale * torch.randn(b, d, generator=g),
                scale * torch.randn(b, d, generator=g),
                scale * torch.randn(b, k, d, generator=g),
            )
        )
    return cases


def _call(fn: Callable, *args: torch.Tensor):
    try:
        return fn(*(a.clone() for a in args))
    except Exception as error:  # a reader's bug: explain it instead of crashing the check
        shapes = ", ".join(str(list(a.shape)) for a in args)
        raise AssertionError(
            f"your function raised {type(error).__name__} for inputs of shapes {shapes}: {error}"
        ) from None


@exercise(
    "ch02-sgns-loss",
    chapter=CHAPTER,
    wrong_answers=lambda: [
        # the sign of the negative scores forgotten
        lambda v, u, n: -(F.logsigmoid((u * v).sum(-1)) + F.logsigmoid(n @ v[..., None])[..., 0].sum(-1)),
        # the mean over the K negatives instead of the sum
        lambda v, u, n: -(F.logsigmoid((u * v).sum(-1)) + F.logsigmoid(-(n @ v[..., None]))[..., 0].mean(-1)),
        # the log-likelihood (to maximise) instead of the loss
        lambda v, u, n: F.logsigmoid((u * v).sum(-1)) + F.logsigmoid(-(n @ v[..., None]))[..., 0].sum(-1),
        # only the positive term
        lambda v, u, n: -F.logsigmoid((u * v).sum(-1)),
        # the mean over the batch
        lambda v, u, n: -(F.logsigmoid((u * v).sum(-1)) + F.logsigmoid(-(n @ v[..., None]))[..., 0].sum(-1)).mean(),
        "not a function",
    ],
)  # fmt: skip
def check_sgns_loss(
    answer: Callable[[torch.Tensor, torch.Tensor, torch.Tensor], torch.Tensor],
) -> None:
    """``answer(v_c [B, d], u_o [B, d], u_n [B, K, d])`` must be ℓ per pair, ``[B]``."""
    assert callable(answer), (
        f"answer must be a function sgns_loss(v_c, u_o, u_n), got {type(answer).__name__}"
    )
    for v_c, u_o, u_n in _sgns_cases():
        b, k, d = u_n.shape
        want = _sgns_reference(v_c, u_o, u_n)  # [B]
        got = _call(answer, v_c, u_o, u_n)
        assert isinstance(got, torch.Tensor), f"sgns_loss must return a tensor, got {type(got)}"
        assert tuple(got.shape) == (b,), (
            f"for B = {b}, K = {k}, d = {d} the result must have shape [B] = [{b}] (one loss per "
            f"pair, no mean over the batch), got {list(got.shape)}"
        )
        got = got.double()
        if torch.allclose(got, want, atol=1e-5, rtol=1e-5):
            continue
        if torch.allclose(got, -want, atol=1e-5, rtol=1e-5):
            raise AssertionError(
                "you returned the log-likelihood; the loss is its negative (it must be >= 0)"
            )
        positive_only = -torch.log(torch.sigmoid((u_o.double() * v_c.double()).sum(-1)))
        if torch.allclose(got, positive_only, atol=1e-5, rtol=1e-5):
            raise AssertionError("the noise words are missing: add −Σ_k log σ(−u_k·v_c)")
        raise AssertionError(
            f"for B = {b}, K = {k}, d = {d} the losses differ from −log σ(u_o·v_c) − "
            "Σ_k log σ(−u_k·v_c): check the minus sign inside σ for the noise words, and sum "
            "(not average) over the K of them"
        )


# --- 2. analogies by 3CosAdd ----------------------------------------------------------------------


def _analogy_cases() -> list[tuple[torch.Tensor, list[str], tuple[str, str, str]]]:
    """Vectors where skipping the normalisation or the exclusion gives a different answer."""
    words = ["king", "man", "woman", "queen", "giant", "she"]
    # a huge "giant" vector wins without normalisation; "king" itself wins without the exclusion
    vectors = torch.tensor(
        [
            [1.0, 1.0, 0.0],  # king: male + royal
            [1.0, 0.0, 0.0],  # man
            [0.0, 0.0, 1.0],  # woman
            [0.1, 0.9, 0.9],  # queen: female + royal
            [0.0, 50.0, 30.0],  # giant: long, roughly in the queen direction
            [0.0, 0.2, 1.0],  # she
        ]
    )
    g = torch.Generator().manual_seed(3)
    random_words = [f"w{i}" for i in range(40)]
    random_vectors = torch.randn(40, 6, generator=g) * torch.rand(40, 1, generator=g) * 5
    return [
        (vectors, words, ("king", "man", "woman")),
        (random_vectors, random_words, ("w0", "w1", "w2")),
        (random_vectors, random_words, ("w5", "w9", "w30")),
    ]


def _vocab_of(words: list[str]) -> Vocab:
    return Vocab(
        words=tuple(words), counts=(1,) * len(words), index={w: i for i, w in enumerate(words)}
    )


@exercise(
    "ch02-analogy",
    chapter=CHAPTER,
    wrong_answers=lambda: [
        lambda v, w, a, b, c: w[int((v @ (v[w.index(a)] - v[w.index(b)] + v[w.index(c)])).argmax())],
        lambda v, w, a, b, c: w[int((F.normalize(v, dim=-1) @ F.normalize(v[w.index(a)] - v[w.index(b)] + v[w.index(c)], dim=0)).argmax())],
        lambda v, w, a, b, c: a,
        lambda v, w, a, b, c: analogy(v, _vocab_of(list(w)), b, a, c, k=1)[0][0],
        42,
    ],
)  # fmt: skip
def check_analogy(answer: Callable[..., str]) -> None:
    """``answer(vectors [V, d], words, a, b, c)`` must return the 3CosAdd answer (a word)."""
    assert callable(answer), (
        f"answer must be a function solve(vectors, words, a, b, c), got {type(answer).__name__}"
    )
    for vectors, words, (a, b, c) in _analogy_cases():
        want = analogy(vectors, _vocab_of(words), a, b, c, k=1)[0][0]
        try:
            got = answer(vectors.clone(), list(words), a, b, c)
        except Exception as error:
            raise AssertionError(
                f"solve raised {type(error).__name__} on {a} − {b} + {c}: {error}"
            ) from None
        assert isinstance(got, str), f"solve must return a word (a str), got {type(got).__name__}"
        if got == want:
            continue
        if got in (a, b, c):
            raise AssertionError(
                f"for {a} − {b} + {c} you returned {got!r}, one of the query words: exclude a, b "
                "and c from the candidates"
            )
        raise AssertionError(
            f"for {a} − {b} + {c} the answer is not {got!r}: normalise every row to unit length "
            "before forming x = â − b̂ + ĉ, and rank by cosine (not by dot product)"
        )


# --- 3. co-occurrence windows inside sentences ------------------------------------------------


def _matrices() -> tuple[torch.Tensor, torch.Tensor]:
    """The chapter's X (windows across sentences) and the exercise's (windows inside sentences)."""
    sentences = generate_corpus(CORPUS_SENTENCES, seed=CORPUS_SEED)
    vocab = build_vocab(sentences)
    across = cooccurrence_matrix(sentences, vocab, window=GLOVE_WINDOW, across_sentences=True)
    within = cooccurrence_matrix(sentences, vocab, window=GLOVE_WINDOW)
    return across, within


def _wrong_within() -> list[object]:
    across, within = _matrices()
    right = int((within > 0).sum())
    return [
        int((across > 0).sum()),  # the chapter's matrix, windows across sentences
        int(torch.triu(within > 0).sum()),  # one triangle only
        int((within == 0).sum()),  # the zeros
        right / within.numel(),  # a share, not a count
        str(right),
    ]


@exercise("ch02-glove-within-sentences", chapter=CHAPTER, wrong_answers=_wrong_within)
def check_within_sentences(answer: int) -> None:
    """Nonzero entries of X built with window 5 and windows cut at sentence ends."""
    assert isinstance(answer, numbers.Integral) and not isinstance(answer, bool), (
        f"answer must be an integer count of entries, got {type(answer).__name__} {answer!r}"
    )
    across, within = _matrices()
    right = int((within > 0).sum())
    if int(answer) == right:
        return
    if int(answer) == int((across > 0).sum()):
        raise AssertionError(
            "that is the chapter's X, whose windows run across sentences; build it again with "
            "across_sentences=False"
        )
    raise AssertionError(
        f"{int(answer):,} is not it: count every nonzero entry of the [V, V] matrix (both "
        "triangles and the diagonal), built from the chapter's sentences with window=5 and "
        "across_sentences=False"
    )
