"""Checkers for chapter 2, "One-hot and static embeddings".

- ``ch02-sgns-grad``: the gradient of the skip-gram negative-sampling loss, in closed form.
- ``ch02-cosmul``: 3CosMul analogies (Levy & Goldberg 2014).
- ``ch02-window``: the smallest window (across sentences) whose PPMI + SVD share falls below 0.5.
- ``ch02-cbow-hidden``: CBOW's hidden vector, the mean of the context rows.
- ``ch02-glove-window-predict`` then ``ch02-glove-window-measure``: predict, before measuring,
  whether GloVe's word table W becomes a better or worse substitute table when the windows stop at
  sentence ends (as glove.c's do at each line end), then measure it over three seeds; the checker
  records the prediction first and compares it with the measurement (Pennington et al. 2014).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
import torch.nn.functional as F

from lib.corpus import WORD_CLASSES, generate_corpus
from lib.count_vectors import ppmi, svd_vectors
from lib.exercises import (
    ExerciseFailed,
    exercise,
    record_prediction,
    require,
    require_function,
    require_int,
)
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


# --- 5. GloVe's window at sentence ends: predict, then measure ----------------------------------

#: The three outcomes a prediction names for the share of W with windows that stop at sentence
#: ends, against windows that run across them: every seed higher, every seed lower, or the two
#: ranges over the seeds overlapping.
GLOVE_WINDOW_OUTCOMES = ("up", "down", "same")
#: The measurement's settings: the chapter's GloVe fit (window 5, x_max 10) with these seeds.
GLOVE_WINDOW_SEEDS = 3

#: The prediction log: the last prediction recorded before the first measurement, and whether a
#: measurement has been checked. Module state on purpose: it lives as long as the reader's kernel.
_GLOVE_LOG: dict[str, Any] = {"prediction": None, "measured": False}


def _reset_glove_log() -> None:
    """Forget the recorded prediction and measurement (a fresh kernel; used by the tests)."""
    _GLOVE_LOG.update(prediction=None, measured=False)


def _glove_predict_wrong() -> list[object]:
    _reset_glove_log()  # a kernel that has already measured: a valid prediction now is refused
    _GLOVE_LOG.update(prediction="up", measured=True)
    return ["Down", 1, ["down"], "lower", "down"]  # the last: a valid one, after measuring


def _glove_predict_right() -> str:
    _reset_glove_log()  # a fresh kernel: nothing measured yet
    return "down"


@exercise(
    "ch02-glove-window-predict",
    chapter=CHAPTER,
    wrong_answers=_glove_predict_wrong,
    right_answer=_glove_predict_right,
)
def check_glove_window_predict(answer: object) -> None:
    """Record a prediction for GloVe's W with windows that stop at sentence ends.

    Any well-formed prediction is accepted and recorded (a prediction is not right or wrong until
    it is measured); once a measurement has been checked, a new prediction is refused and the one
    recorded before it stands.

    Args:
        answer: ``"up"``, ``"down"`` or ``"same"``: the same-class share of W's 5 nearest
            neighbours with windows within sentences, against windows across them, is higher in
            every seed, lower in every seed, or neither (the ranges over the seeds overlap).

    Raises:
        ExerciseFailed: a malformed prediction, or a prediction made after measuring.
    """
    require(
        isinstance(answer, str) and answer in GLOVE_WINDOW_OUTCOMES,
        f"answer must be one of {list(GLOVE_WINDOW_OUTCOMES)}, got {answer!r}",
    )
    record_prediction(_GLOVE_LOG, answer, "Now measure (next cell).", quote=True)


def glove_window_outcome(across: torch.Tensor, within: torch.Tensor) -> str:
    """Which way the share moved: separated ranges over the seeds, or not.

    Args:
        across: the per-seed shares with windows across sentence ends.
        within: the per-seed shares with windows that stop at them.

    Returns:
        ``"up"`` if every seed's share within sentences beats every seed's across, ``"down"`` if
        every one is below, else ``"same"`` (the two ranges overlap or touch).

    Shapes:
        across, within: [seeds]
    """
    if float(within.min()) > float(across.max()):
        return "up"
    if float(within.max()) < float(across.min()):
        return "down"
    return "same"


_GLOVE_MEASURED = ([0.950, 0.956, 0.939], [0.711, 0.639, 0.667])


def _glove_measurement(across: list[float], within: list[float]) -> dict[str, torch.Tensor]:
    """A stand-in measurement for the tests of the measure checker."""
    return {
        "across": torch.tensor(across, dtype=torch.float64),
        "within": torch.tensor(within, dtype=torch.float64),
    }


def _glove_measure_wrong() -> list[object]:
    answers: list[object] = [
        0.7,
        {"across": torch.tensor([0.95, 0.95, 0.94])},
        _glove_measurement([0.95, 0.96], [0.71, 0.64]),  # two seeds
        _glove_measurement([0.95, 0.96, 0.94], [0.71, 0.64]),  # unequal seeds
        _glove_measurement([95.0, 96.0, 94.0], [71.0, 64.0, 67.0]),  # percent, not a share
        {"across": [0.95, 0.96, 0.94], "within": [0.71, 0.64, 0.67]},  # lists, not tensors
    ]
    _reset_glove_log()  # the last wrong answer: a real measurement against a wrong prediction
    _GLOVE_LOG["prediction"] = "up"
    return [*answers, _glove_measurement(*_GLOVE_MEASURED)]


def _glove_measure_right() -> dict[str, torch.Tensor]:
    _reset_glove_log()
    _GLOVE_LOG["prediction"] = "down"
    return _glove_measurement(*_GLOVE_MEASURED)


@exercise(
    "ch02-glove-window-measure",
    chapter=CHAPTER,
    wrong_answers=_glove_measure_wrong,
    right_answer=_glove_measure_right,
)
def check_glove_window_measure(answer: object) -> None:
    """Compare the measured shares with the prediction recorded before measuring.

    Args:
        answer: ``{"across": shares, "within": shares}``: the same-class share of the 5 nearest
            neighbours of GloVe's word table W (:func:`lib.similarity.neighbour_class_share`), one
            per seed (at least 3, the same seeds for both), with the chapter's fit (window 5,
            x_max 10) on windows that run across sentence ends and on windows that stop at them.

    Raises:
        ExerciseFailed: a malformed answer, fewer than 3 seeds, no prediction recorded before
            measuring, or a measurement that contradicts the prediction.

    Shapes:
        shares: [seeds]
    """
    if not (isinstance(answer, dict) and set(answer.keys()) == {"across", "within"}):
        raise ExerciseFailed('expected a dict with the keys ["across", "within"]')
    n_seeds = None
    for key in ("across", "within"):
        shares = answer[key]
        require(
            isinstance(shares, torch.Tensor) and shares.is_floating_point() and shares.ndim == 1,
            f"answer[{key!r}] must be the per-seed shares, a 1-D float tensor",
        )
        require(
            bool(((shares >= 0) & (shares <= 1)).all()),
            f"answer[{key!r}] holds values outside [0, 1]: a share is a fraction, not a percent",
        )
        n_seeds = shares.numel() if n_seeds is None else n_seeds
        require(
            shares.numel() == n_seeds,
            f"answer[{key!r}] has {shares.numel()} seeds, the other {n_seeds}: use the same seeds",
        )
    require(
        n_seeds is not None and n_seeds >= GLOVE_WINDOW_SEEDS,
        f"{n_seeds} seed(s): train with at least {GLOVE_WINDOW_SEEDS} seeds, so the spread shows",
    )
    prediction = _GLOVE_LOG["prediction"]
    _GLOVE_LOG["measured"] = True
    require(
        prediction is not None,
        'no prediction was recorded before this measurement: run check("ch02-glove-window-'
        'predict", ...) first. (Restart the kernel to start over.)',
    )
    across, within = answer["across"], answer["within"]
    measured = glove_window_outcome(across, within)
    require(
        measured == prediction,
        f"your prediction {prediction!r}, recorded before measuring, is contradicted: across "
        f"sentences {float(across.min()):.2f}-{float(across.max()):.2f}, within "
        f"{float(within.min()):.2f}-{float(within.max()):.2f} ({measured!r}). Explain it from "
        "the corpus: which words does a window of 5 see past a sentence's end, and which does "
        "it stop seeing? Compare the chapter's PPMI sweep within and across sentences.",
    )
