"""Checkers for chapter 2, "One-hot and static embeddings"."""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn.functional as F

from lib.corpus import WORD_CLASSES, generate_corpus
from lib.count_vectors import ppmi, svd_vectors
from lib.exercises import ExerciseFailed, exercise, require, require_function, require_int
from lib.glove import cooccurrence_matrix
from lib.similarity import neighbour_class_share
from lib.vocab import build_vocab

CHAPTER = "02_static_embeddings"

#: The "window" exercise: the chapter's corpus, PPMI + SVD vectors of this size, this threshold,
#: windows 1..MAX_WINDOW running across sentence ends.
CORPUS_SENTENCES, CORPUS_SEED, SVD_DIM, SHARE_THRESHOLD, MAX_WINDOW = 5000, 0, 32, 0.5, 10


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
        raise ExerciseFailed(
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
    right_answer=lambda: _sgns_reference,
)  # fmt: skip
def check_sgns_loss(
    answer: Callable[[torch.Tensor, torch.Tensor, torch.Tensor], torch.Tensor],
) -> None:
    """``answer(v_c [B, d], u_o [B, d], u_n [B, K, d])`` must be ℓ per pair, ``[B]``.

    Args:
        answer: the reader's function ``sgns_loss(v_c, u_o, u_n)``, one loss per pair.

    Raises:
        ExerciseFailed: the answer is wrong (the message says what to look at).
    """
    require_function(answer, "sgns_loss(v_c, u_o, u_n)")
    for v_c, u_o, u_n in _sgns_cases():
        b, k, d = u_n.shape
        want = _sgns_reference(v_c, u_o, u_n)  # [B]
        got = _call(answer, v_c, u_o, u_n)
        require(isinstance(got, torch.Tensor), f"sgns_loss must return a tensor, got {type(got)}")
        require(
            tuple(got.shape) == (b,),
            f"for B = {b}, K = {k}, d = {d} the result must have shape [B] = [{b}] (one loss per "
            f"pair, no mean over the batch), got {list(got.shape)}",
        )
        got = got.double()
        if torch.allclose(got, want, atol=1e-5, rtol=1e-5):
            continue
        if torch.allclose(got, -want, atol=1e-5, rtol=1e-5):
            raise ExerciseFailed(
                "you returned the log-likelihood; the loss is its negative (it must be >= 0)"
            )
        positive_only = -torch.log(torch.sigmoid((u_o.double() * v_c.double()).sum(-1)))
        if torch.allclose(got, positive_only, atol=1e-5, rtol=1e-5):
            raise ExerciseFailed("the noise words are missing: add −Σ_k log σ(−u_k·v_c)")
        raise ExerciseFailed(
            f"for B = {b}, K = {k}, d = {d} the losses differ from −log σ(u_o·v_c) − "
            "Σ_k log σ(−u_k·v_c): check the minus sign inside σ for the noise words, and sum "
            "(not average) over the K of them"
        )


# --- 2. analogies by 3CosMul ----------------------------------------------------------------------


def _cos_mul(vectors: torch.Tensor, words: list[str], a: str, b: str, c: str) -> str:
    """3CosMul (Levy & Goldberg 2014): argmax_w cos'(w, a) cos'(w, c) / (cos'(w, b) + ε).

    cos' = (cos + 1) / 2 maps cosines to [0, 1]; ε = 0.001; a, b, c themselves are excluded.
    """
    unit = F.normalize(vectors.double(), dim=-1)
    index = {w: i for i, w in enumerate(words)}
    shifted = (unit @ unit[[index[a], index[b], index[c]]].T + 1) / 2  # [V, 3]
    scores = shifted[:, 0] * shifted[:, 2] / (shifted[:, 1] + 1e-3)
    scores[[index[a], index[b], index[c]]] = -float("inf")
    return words[int(scores.argmax())]


def _cos_add(vectors: torch.Tensor, words: list[str], a: str, b: str, c: str) -> str:
    unit = F.normalize(vectors.double(), dim=-1)
    index = {w: i for i, w in enumerate(words)}
    scores = unit @ F.normalize(unit[index[a]] - unit[index[b]] + unit[index[c]], dim=0)
    scores[[index[a], index[b], index[c]]] = -float("inf")
    return words[int(scores.argmax())]


def _analogy_cases() -> list[tuple[torch.Tensor, list[str], tuple[str, str, str]]]:
    """Random tables with queries on which 3CosMul and 3CosAdd disagree (found by search)."""
    cases = []
    for seed in range(200):
        g = torch.Generator().manual_seed(seed)
        vectors = torch.randn(12, 3, generator=g)
        words = [f"w{i}" for i in range(12)]
        query = ("w0", "w1", "w2")
        if _cos_mul(vectors, words, *query) != _cos_add(vectors, words, *query):
            cases.append((vectors, words, query))
        if len(cases) == 4:
            break
    return cases


@exercise(
    "ch02-cosmul",
    chapter=CHAPTER,
    wrong_answers=lambda: [_cos_add, lambda v, w, a, b, c: c, "3CosMul"],
    right_answer=lambda: _cos_mul,
)
def check_cosmul(answer: Callable[..., str]) -> None:
    """``answer(vectors, words, a, b, c)`` must return the 3CosMul answer to a − b + c.

    Args:
        answer: the reader's function of ``(vectors, words, a, b, c)`` that returns one word
            (a str), not ``a``, ``b`` or ``c``.

    Raises:
        ExerciseFailed: the answer is wrong (the message says what to look at).
    """
    require_function(answer)
    for vectors, words, (a, b, c) in _analogy_cases():
        try:
            got = answer(vectors.clone(), list(words), a, b, c)
        except Exception as error:  # a reader's bug: explain it instead of crashing the check
            raise ExerciseFailed(f"your function raised {type(error).__name__}: {error}") from None
        require(isinstance(got, str), f"it must return a word (a str), got {type(got).__name__}")
        want = _cos_mul(vectors, words, a, b, c)
        require(got not in (a, b, c), f"it returned {got!r}, a query word: exclude a, b and c")
        require(
            got == want,
            f"on a test table it returned {got!r}, 3CosMul gives {want!r}"
            + (" (that is the 3CosAdd answer)" if got == _cos_add(vectors, words, a, b, c) else "")
            + ": shift each cosine to (cos + 1) / 2, then score cos'(w, a)·cos'(w, c) / "
            "(cos'(w, b) + 0.001)",
        )


# --- 3. the window size, measured -------------------------------------------------------------------


def _share_by_window(windows: range = range(1, MAX_WINDOW + 1)) -> dict[int, float]:
    sentences = generate_corpus(CORPUS_SENTENCES, seed=CORPUS_SEED)
    vocab = build_vocab(sentences)
    shares = {}
    for m in windows:
        X = cooccurrence_matrix(
            sentences, vocab, window=m, weighting="uniform", across_sentences=True
        )
        vectors = svd_vectors(ppmi(X), SVD_DIM)
        shares[m] = neighbour_class_share(vectors, vocab.words, WORD_CLASSES, k=5)
    return shares


def _first_window_below() -> int:
    shares = _share_by_window()
    return min(m for m, share in shares.items() if share < SHARE_THRESHOLD)


@exercise(
    "ch02-window",
    chapter=CHAPTER,
    wrong_answers=lambda: [_first_window_below() - 1, _first_window_below() + 1, 0.5, "8", 5],
    right_answer=_first_window_below,
)
def check_window(answer: int) -> None:
    """The smallest window m (across sentences) whose PPMI + SVD share is below 0.5.

    Args:
        answer: the window half-width m, an int.

    Raises:
        ExerciseFailed: the answer is wrong (the message says what to look at).
    """
    require_int(
        answer,
        f"answer must be an int (a window half-width m), got {type(answer).__name__} {answer!r}",
    )
    shares = _share_by_window()
    right = _first_window_below()
    if int(answer) == right:
        return
    if int(answer) in shares:
        raise ExerciseFailed(
            f"at m = {int(answer)} the share is {shares[int(answer)]:.3f}; find the *smallest* m "
            f"with a share below {SHARE_THRESHOLD} (windows across sentences, uniform weighting, "
            f"PPMI, SVD to {SVD_DIM} dimensions, k = 5 neighbours)"
        )
    raise ExerciseFailed(
        f"try the windows m = 1, 2, ..., {MAX_WINDOW}; {int(answer)} is not among them"
    )


# --- 4. CBOW's hidden vector ------------------------------------------------------------------------


def _cbow_hidden_reference(v: torch.Tensor, contexts: torch.Tensor) -> torch.Tensor:
    """Mean of the rows ``v[o]`` over the ids o >= 0 of each row of ``contexts``: ``[B, d]``."""
    present = contexts >= 0  # [B, C]
    rows = v.double()[contexts.clamp_min(0)] * present[..., None]  # [B, C, d]
    return rows.sum(1) / present.sum(1, keepdim=True)


def _cbow_cases() -> list[tuple[torch.Tensor, torch.Tensor]]:
    g = torch.Generator().manual_seed(5)
    v = torch.randn(7, 3, generator=g)  # V = 7, d = 3
    edge = torch.tensor([[-1, 2, 3, 4], [1, 2, -1, -1], [6, -1, -1, -1]])  # pads at both ends
    full = torch.randint(0, 7, (5, 4), generator=g)  # no pads
    return [(v, edge), (v, full)]


@exercise(
    "ch02-cbow-hidden",
    chapter=CHAPTER,
    wrong_answers=lambda: [
        # the sum, not the mean
        lambda v, c: (v[c.clamp_min(0)] * (c >= 0)[..., None]).sum(1),
        # the pads counted as row 0 / divided by the full width
        lambda v, c: v[c.clamp_min(0)].mean(1),
        lambda v, c: (v[c.clamp_min(0)] * (c >= 0)[..., None]).mean(1),
        "not a function",
    ],
    right_answer=lambda: _cbow_hidden_reference,
)  # fmt: skip
def check_cbow_hidden(answer: Callable[[torch.Tensor, torch.Tensor], torch.Tensor]) -> None:
    """``answer(v [V, d], contexts [B, C])`` must be CBOW's h per example, ``[B, d]``.

    Args:
        answer: the reader's function ``cbow_hidden(v, contexts)``; ids of −1 in
            ``contexts`` are padding.

    Raises:
        ExerciseFailed: the answer is wrong (the message says what to look at).
    """
    require_function(answer, "cbow_hidden(v, contexts)")
    for v, contexts in _cbow_cases():
        want = _cbow_hidden_reference(v, contexts)
        got = _call(answer, v, contexts)
        require(isinstance(got, torch.Tensor), f"cbow_hidden must return a tensor, got {type(got)}")
        require(
            tuple(got.shape) == tuple(want.shape),
            f"the result must have shape [B, d] = {list(want.shape)}, got {list(got.shape)}",
        )
        got = got.double()
        if torch.allclose(got, want, atol=1e-6, rtol=1e-6):
            continue
        n = (contexts >= 0).sum(1, keepdim=True).double()
        if torch.allclose(got, want * n, atol=1e-6, rtol=1e-6):
            raise ExerciseFailed("that is the sum of the context vectors; CBOW averages them")
        raise ExerciseFailed(
            "h must average only the real context words: ids of -1 are padding, and the "
            "divisor is the number of real context words of that example, not the width C"
        )
