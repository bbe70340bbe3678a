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


# --- 1. the gradient of the skip-gram negative-sampling loss ------------------------------------


def _sgns_reference(v_c: torch.Tensor, u_o: torch.Tensor, u_n: torch.Tensor) -> torch.Tensor:
    """−log σ(u_o·v_c) − Σ_k log σ(−u_k·v_c), ``[B, d], [B, d], [B, K, d] -> [B]`` (float64)."""
    v_c, u_o, u_n = v_c.double(), u_o.double(), u_n.double()
    positive = F.logsigmoid((u_o * v_c).sum(-1))  # [B]
    scores = torch.einsum("bkd,bd->bk", u_n, v_c)  # [B, K]
    return -(positive + F.logsigmoid(-scores).sum(-1))


def _sgns_grad_autograd(v_c: torch.Tensor, u_o: torch.Tensor, u_n: torch.Tensor) -> torch.Tensor:
    """∂ℓ/∂v_c for every pair by autograd, ``[B, d]`` (float64): the checker's ground truth."""
    v = v_c.double().detach().requires_grad_(True)
    (grad,) = torch.autograd.grad(_sgns_reference(v, u_o, u_n).sum(), v)
    return grad


def _sgns_grad_closed_form(v_c: torch.Tensor, u_o: torch.Tensor, u_n: torch.Tensor) -> torch.Tensor:
    """(σ(u_o·v_c) − 1) u_o + Σ_k σ(u_k·v_c) u_k, ``[B, d]`` (float64)."""
    v_c, u_o, u_n = v_c.double(), u_o.double(), u_n.double()
    pull = (torch.sigmoid((u_o * v_c).sum(-1)) - 1)[:, None] * u_o  # [B, d]
    push = (torch.sigmoid(torch.einsum("bkd,bd->bk", u_n, v_c))[..., None] * u_n).sum(1)  # [B, d]
    return pull + push


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
        with torch.no_grad():  # a closed form needs no autograd
            return fn(*(a.clone() for a in args))
    except Exception as error:  # a reader's bug: explain it instead of crashing the check
        shapes = ", ".join(str(list(a.shape)) for a in args)
        raise ExerciseFailed(
            f"your function raised {type(error).__name__} for inputs of shapes {shapes}: {error}"
        ) from None


def _dot(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    return (x * y).sum(-1)


@exercise(
    "ch02-sgns-grad",
    chapter=CHAPTER,
    wrong_answers=lambda: [
        # the positive term's sign flipped: (1 − σ) u_o
        lambda v, u, n: (1 - torch.sigmoid(_dot(u, v)))[:, None] * u
        + (torch.sigmoid(n @ v[..., None]) * n).sum(1),
        # σ(−u_k·v) for the noise words instead of σ(u_k·v)
        lambda v, u, n: (torch.sigmoid(_dot(u, v)) - 1)[:, None] * u
        + (torch.sigmoid(-(n @ v[..., None])) * n).sum(1),
        # the noise words forgotten
        lambda v, u, n: (torch.sigmoid(_dot(u, v)) - 1)[:, None] * u,
        # the mean over the K noise words instead of the sum
        lambda v, u, n: (torch.sigmoid(_dot(u, v)) - 1)[:, None] * u
        + (torch.sigmoid(n @ v[..., None]) * n).mean(1),
        # the gradient of the log-likelihood (ascent direction) instead of the loss
        lambda v, u, n: -_sgns_grad_closed_form(v, u, n),
        # the loss itself
        _sgns_reference,
        "not a function",
    ],
    right_answer=lambda: _sgns_grad_closed_form,
)  # fmt: skip
def check_sgns_grad(
    answer: Callable[[torch.Tensor, torch.Tensor, torch.Tensor], torch.Tensor],
) -> None:
    """``answer(v_c [B, d], u_o [B, d], u_n [B, K, d])`` must be ∂ℓ/∂v_c per pair, ``[B, d]``.

    The reference is autograd on ℓ (float64), so the check does not depend on a closed form.

    Args:
        answer: the reader's function ``sgns_grad(v_c, u_o, u_n)``, closed form, no autograd.

    Raises:
        ExerciseFailed: the answer is wrong (the message says what to look at).
    """
    require_function(answer, "sgns_grad(v_c, u_o, u_n)")
    for v_c, u_o, u_n in _sgns_cases():
        b, k, d = u_n.shape
        want = _sgns_grad_autograd(v_c, u_o, u_n)  # [B, d]
        got = _call(answer, v_c, u_o, u_n)
        require(isinstance(got, torch.Tensor), f"sgns_grad must return a tensor, got {type(got)}")
        require(
            tuple(got.shape) == (b, d),
            f"for B = {b}, K = {k}, d = {d} the result must have shape [B, d] = [{b}, {d}] (one "
            f"gradient per pair, same shape as v_c), got {list(got.shape)}",
        )
        got = got.double()
        if torch.allclose(got, want, atol=1e-5, rtol=1e-5):
            continue
        if torch.allclose(got, -want, atol=1e-5, rtol=1e-5):
            raise ExerciseFailed(
                "the sign is flipped: that is the gradient of the log-likelihood; the loss's "
                "gradient points away from u_o, so gradient descent moves v_c towards it"
            )
        push = _sgns_grad_closed_form(v_c, u_o, u_n) - _sgns_grad_closed_form(
            v_c, u_o, torch.zeros_like(u_n)
        )  # the noise part alone (σ(0) u = 0 for zero rows)
        if torch.allclose(got, want - push, atol=1e-5, rtol=1e-5):
            raise ExerciseFailed("the noise words are missing: add Σ_k σ(u_k·v_c) u_k")
        raise ExerciseFailed(
            f"for B = {b}, K = {k}, d = {d} the gradients differ from autograd's: d/dx of "
            "−log σ(x) is σ(x) − 1 and of −log σ(−x) is σ(x); then the chain rule through "
            "x = u·v_c multiplies by u; sum (not average) over the K noise words"
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
