"""Checkers for chapter 3, "Contextual embeddings".

Each ``check_*`` function is registered with :func:`lib.exercises.exercise` and raises
:class:`lib.exercises.ExerciseFailed` with a hint when the reader's answer is wrong.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import torch
import torch.nn.functional as F

from lib.exercises import ExerciseFailed, exercise, require, require_function, require_int
from lib.pretrained import hidden_states_for, load_minilm, smollm_states

CHAPTER = "03_contextual_embeddings"

#: The word, the reference position and the threshold of the "position offset" exercise.
POSITION_WORD, REFERENCE_POSITION, THRESHOLD = "bank", 1, 0.9

#: The sentences of the "echo embeddings" exercise: paraphrase pairs (0, 1), (2, 3), ...
ECHO_SENTENCES = (
    "the river flooded the fields.",
    "water from the stream covered the farmland.",
    "the children laughed at the clown.",
    "the kids found the entertainer funny.",
    "she could not sleep because of the noise.",
    "the loud sounds kept her awake.",
    "the soup was too salty to eat.",
    "there was far too much salt in the broth.",
)

#: The sentences of the "bat" exercise: two about the animal, two about the club.
BAT_SENTENCES = (
    "the bat flew out of the cave at night.",
    "a bat hung upside down from the branch.",
    "the bat cracked when he hit the ball.",
    "he swung the bat and hit a home run.",
)


# --- 1. how fast position changes layer 0 -------------------------------------------------


def _layer0_cosines(word: str = POSITION_WORD, reference: int = REFERENCE_POSITION) -> torch.Tensor:
    """cos(h0(word, reference), h0(word, q)) for every position q, in float64.

    h0(w, q) is the embedding layer's output for token w alone at position q, segment 0.

    Equation:
        h0(w, q) = LayerNorm(E[w] + P[q] + S[0])

    Shapes:
        -> [max_positions]

    References:
        Devlin et al., BERT, arXiv:1810.04805.
    """
    model, tokenizer = load_minilm()
    emb = model.embeddings
    with torch.no_grad():
        token = emb.word_embeddings.weight[tokenizer.convert_tokens_to_ids(word)]  # [d]
        summed = (
            token + emb.position_embeddings.weight + emb.token_type_embeddings.weight[0]
        )  # [P, d]
        h0 = emb.LayerNorm(summed).double()  # [P, d]
    return F.normalize(h0, dim=-1) @ F.normalize(h0[reference], dim=0)  # [P]


def _first_offset(cosines: torch.Tensor) -> int:
    """Smallest k >= 1 with cosines[REFERENCE_POSITION + k] < THRESHOLD (0 if there is none)."""
    below = torch.nonzero(cosines[REFERENCE_POSITION + 1 :] < THRESHOLD)
    return int(below[0]) + 1 if len(below) else 0


def _right_offset() -> int:
    """The exercise's answer: the first offset whose layer-0 cosine is below THRESHOLD."""
    return _first_offset(_layer0_cosines())


def _wrong_offsets() -> list[object]:
    """Near misses: off by one, a position for an offset, the position table alone, wrong types."""
    right = _right_offset()
    model, _ = load_minilm()
    positions = model.embeddings.position_embeddings.weight.detach().double()  # [P, d]
    raw = F.normalize(positions, dim=-1) @ F.normalize(positions[REFERENCE_POSITION], dim=0)
    candidates = [
        right - 1,  # off by one
        right + 1,
        right + REFERENCE_POSITION,  # a position, not an offset
        _first_offset(raw),  # the position table alone, without E and LayerNorm
        str(right),
        float(right),
    ]
    return [c for c in candidates if not (type(c) is int and c == right)]


@exercise(
    "ch03-position-offset",
    chapter=CHAPTER,
    wrong_answers=_wrong_offsets,
    right_answer=_right_offset,
)
def check_position_offset(answer: int) -> None:
    """The smallest k >= 1 with cos(h0(bank, 1), h0(bank, 1 + k)) < 0.9 at layer 0.

    Args:
        answer: the reader's offset, an int.
    Raises:
        ExerciseFailed: the answer is wrong (the message says what to look at).
    """
    answer = require_int(
        answer, f"answer must be an integer offset k, got {type(answer).__name__} {answer!r}"
    )
    require(answer >= 1, f"the offset k must be at least 1, got {answer}")
    right = _right_offset()
    if answer == right:
        return
    cosines = _layer0_cosines()
    if answer == right + REFERENCE_POSITION:
        raise ExerciseFailed(f"{answer} is the position 1 + k; the question asks for the offset k")
    if answer < right:
        raise ExerciseFailed(
            f"at offset {answer} the cosine is still "
            f"{float(cosines[REFERENCE_POSITION + answer]):.4f} (not below {THRESHOLD}); "
            "look for the first offset where it drops below"
        )
    raise ExerciseFailed(
        f"the cosine drops below {THRESHOLD} before offset {answer}: compute LayerNorm(E[bank] + "
        "P[q] + S[0]) for every position q with the model's own LayerNorm, and scan k = 1, 2, ... "
        "(mind the offset if you slice the positions)"
    )


# --- 2. "bat" in four sentences --------------------------------------------------------------------


def _bat_cosines(layer: int = -1) -> torch.Tensor:
    """``[4, 4]`` cosines of the states of "bat" in :data:`BAT_SENTENCES` at ``layer``."""
    states = hidden_states_for(list(BAT_SENTENCES), "bat")[:, layer]  # [4, d]
    unit = F.normalize(states.double(), dim=-1)
    return unit @ unit.T  # [4, 4]


def _wrong_bat() -> list[object]:
    """Near misses: the wrong layer, dot products, the identity, a single row, a string."""
    states = hidden_states_for(list(BAT_SENTENCES), "bat")  # [4, L + 1, d]
    return [
        _bat_cosines(0),  # the embedding layer, not the last
        _bat_cosines(-2),  # one layer too early
        states[:, -1] @ states[:, -1].T,  # dot products, not cosines
        torch.eye(len(BAT_SENTENCES)),
        _bat_cosines(-1)[0],  # one row only
        "a matrix",
    ]


@exercise(
    "ch03-bat-cosines",
    chapter=CHAPTER,
    wrong_answers=_wrong_bat,
    right_answer=lambda: _bat_cosines(-1),
)
def check_bat_cosines(answer: torch.Tensor) -> None:
    """The ``[4, 4]`` cosine matrix of the last layer's states of "bat" in :data:`BAT_SENTENCES`.

    Args:
        answer: the reader's ``[4, 4]`` tensor.
    Raises:
        ExerciseFailed: the answer is wrong (the message says what to look at).
    """
    n = len(BAT_SENTENCES)
    require(
        isinstance(answer, torch.Tensor),
        f"answer must be a tensor [{n}, {n}], got {type(answer).__name__}",
    )
    require(
        tuple(answer.shape) == (n, n),
        f"answer must have shape [{n}, {n}] (one row and one column per sentence), got "
        f"{list(answer.shape)}",
    )
    answer = answer.detach().double()
    if torch.allclose(answer, _bat_cosines(-1), atol=1e-4, rtol=0):
        return
    require(
        torch.allclose(answer.diagonal(), torch.ones(n, dtype=torch.float64), atol=1e-4),
        "the diagonal must be 1 (every vector has cosine 1 with itself): normalise the states "
        "to unit length before taking dot products",
    )
    if torch.allclose(answer, _bat_cosines(0), atol=1e-4, rtol=0):
        raise ExerciseFailed(
            "that is layer 0, the embedding layer's output; the last layer is hidden_states[-1] "
            "(index 6 for MiniLM)"
        )
    raise ExerciseFailed(
        "the cosines differ from those of the last layer's states of the first 'bat' token in "
        "each sentence (hint: lib.pretrained.hidden_states_for(BAT_SENTENCES, 'bat')[:, -1])"
    )


# --- 3. mean pooling, the sentence embedding ------------------------------------------------------


def _mean_pool(states: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Mean of the token states over the real (mask = 1) tokens, then unit length.

    Equation:
        e_b = normalise(Σ_t m_bt h_bt / Σ_t m_bt)

    Shapes:
        states: [B, T, d], mask: [B, T] -> [B, d]

    References:
        Reimers & Gurevych, Sentence-BERT, arXiv:1908.10084.
    """
    weights = mask.unsqueeze(-1).to(states.dtype)  # [B, T, 1]
    pooled = (states * weights).sum(1) / weights.sum(1).clamp_min(1e-9)
    return F.normalize(pooled, dim=-1)


def _pool_cases() -> list[tuple[torch.Tensor, torch.Tensor]]:
    """(states ``[B, T, d]``, mask ``[B, T]``) pairs with 0, 2 and 4 padded positions."""
    g = torch.Generator().manual_seed(0)
    states = torch.randn(3, 5, 4, generator=g, dtype=torch.float64)  # [B, T, d]
    mask = torch.tensor([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0], [1, 0, 0, 0, 0]])
    return [(states, mask), (states[:1], mask[:1])]


@exercise(
    "ch03-mean-pool",
    chapter=CHAPTER,
    wrong_answers=lambda: [
        lambda states, mask: F.normalize(states.mean(1), dim=-1),  # padding included
        lambda states, mask: (states * mask.unsqueeze(-1)).sum(1) / mask.sum(1, keepdim=True),
        lambda states, mask: F.normalize(states[:, 0], dim=-1),  # the [CLS] state
        "mean",
    ],
    right_answer=lambda: _mean_pool,
)
def check_mean_pool(answer: Callable[[torch.Tensor, torch.Tensor], torch.Tensor]) -> None:
    """``answer(states [B, T, d], mask [B, T])`` must return unit-length masked means ``[B, d]``.

    Args:
        answer: the reader's function ``mean_pool(states, mask)``.
    Raises:
        ExerciseFailed: the answer is wrong (the message says what to look at).
    """
    require_function(answer)
    for states, mask in _pool_cases():
        try:
            got = answer(states.clone(), mask.clone())
        except Exception as error:  # a reader's bug: explain it instead of crashing the check
            raise ExerciseFailed(f"your function raised {type(error).__name__}: {error}") from None
        want = _mean_pool(states, mask)
        require(
            isinstance(got, torch.Tensor) and tuple(got.shape) == tuple(want.shape),
            f"the result must be a tensor of shape {list(want.shape)} ([B, d])",
        )
        got = got.double()
        require(
            torch.allclose(got.norm(dim=-1), torch.ones(len(got), dtype=got.dtype), atol=1e-6),
            "each sentence vector must have length 1 (all-MiniLM-L6-v2 normalises after pooling)",
        )
        require(
            torch.allclose(got, want, atol=1e-6, rtol=0),
            "the vectors differ from the mean over the *real* tokens: padded positions "
            "(mask = 0) must not enter the mean, neither in the sum nor in the count",
        )


# --- 4. echo embeddings (SmolLM2) -----------------------------------------------------------------


@functools.lru_cache(maxsize=1)
def _echo_parts() -> tuple[torch.Tensor, torch.Tensor, list[int]]:
    """SmolLM2's last states* for ``s + " " + s``, their mask, and each first copy's length."""
    from lib.smollm import load_smollm

    _, tokenizer = load_smollm()
    doubled = [s + " " + s for s in ECHO_SENTENCES]
    _, states, mask = smollm_states(doubled)  # [n, L + 1, T, d], [n, T]
    first = [len(tokenizer(s, add_special_tokens=False)["input_ids"]) for s in ECHO_SENTENCES]
    return states[:, -1], mask, first


def _echo(part: str = "second") -> torch.Tensor:
    """Unit-length mean of the last states* over the second copy (or ``"first"``, ``"both"``).

    Equation:
        e_i = normalise(mean_{t in the second copy} h_t),  h = hidden_states[-1] of s + " " + s

    Shapes:
        -> [len(ECHO_SENTENCES), 576]

    References:
        Springer et al., Repetition Improves Language Model Embeddings, arXiv:2402.15449.
    """
    last, mask, first = _echo_parts()
    keep = mask.clone().double()  # [n, T]
    for i, k in enumerate(first):
        if part == "second":
            keep[i, :k] = 0
        elif part == "first":
            keep[i, k:] = 0
    w = keep.unsqueeze(-1)  # [n, T, 1]
    return F.normalize((last.double() * w).sum(1) / w.sum(1), dim=-1)


@exercise(
    "ch03-echo",
    chapter=CHAPTER,
    wrong_answers=lambda: [
        _echo("first"),  # the first copy: the same as one copy alone
        _echo("both"),  # both copies
        _echo("second") * 2,  # not unit length
        _echo("second")[:4],  # some sentences only
        "echo",
    ],
    right_answer=lambda: _echo("second"),
)
def check_echo(answer: torch.Tensor) -> None:
    """Echo embeddings of :data:`ECHO_SENTENCES`: the unit-length mean of the second copy's states.

    Args:
        answer: the reader's ``[8, 576]`` tensor.
    Raises:
        ExerciseFailed: the answer is wrong (the message says what to look at).
    """
    want = _echo("second")
    require(
        isinstance(answer, torch.Tensor) and tuple(answer.shape) == tuple(want.shape),
        f"answer must be a tensor of shape {list(want.shape)}: one vector per sentence, got "
        f"{type(answer).__name__} {list(getattr(answer, 'shape', []))}",
    )
    answer = answer.detach().double()
    require(
        torch.allclose(answer.norm(dim=-1), torch.ones(len(want), dtype=torch.float64), atol=1e-5),
        "each vector must have length 1: normalise after pooling",
    )
    if torch.allclose(answer, want, atol=1e-4, rtol=0):
        return
    if torch.allclose(answer, _echo("first"), atol=1e-4, rtol=0):
        raise ExerciseFailed(
            "that is the mean of the *first* copy, identical to one copy alone (a causal model): "
            "pool the tokens after the first copy's last token"
        )
    if torch.allclose(answer, _echo("both"), atol=1e-4, rtol=0):
        raise ExerciseFailed("that pools both copies; pool only the second one")
    raise ExerciseFailed(
        "the vectors differ from the mean of the last hidden state over the second copy's tokens "
        "(the first copy has len(tokenizer(s, add_special_tokens=False)['input_ids']) tokens)"
    )
