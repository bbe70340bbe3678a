"""Checkers for chapter 4, "Weight tying".

Each ``check_*`` function is registered with :func:`lib.exercises.exercise` and raises
:class:`lib.exercises.ExerciseFailed` with a hint when the reader's answer is wrong.
"""

from __future__ import annotations

import numbers
from collections.abc import Callable
from unittest import mock

import torch
from torch import nn

from lib.exercises import ExerciseFailed, exercise, require, require_function, require_int
from lib.tiny_lm import DECODER_CONFIGS, TinyLM, count_parameters, decoder_parameters

CHAPTER = "04_weight_tying"

#: The model of the "half the parameters" exercise.
HALF_MODEL = "Llama-3.2-1B"


def _half_vocab() -> int:
    """The vocabulary size V at which an untied embedding + head is half of HALF_MODEL's parameters.

    Equation:
        2·V·d / (body + 2·V·d) = 1/2  <=>  V = body / (2·d)
    """
    body = decoder_parameters(HALF_MODEL)["body"]
    d = DECODER_CONFIGS[HALF_MODEL]["hidden_size"]  # 2048 for Llama 3.2 1B
    return round(body / (2 * d))


@exercise(
    "ch04-half-vocab",
    chapter=CHAPTER,
    wrong_answers=lambda: [
        2 * _half_vocab(),  # tied: V·d = body
        _half_vocab() // 2,
        128256,
        0.5,
        "237,584",
    ],
    right_answer=_half_vocab,
)
def check_half_vocab(answer: int) -> None:
    """V at which an untied embedding + head would be half of Llama 3.2 1B's parameters.

    Args:
        answer: the reader's vocabulary size, an int.
    Raises:
        ExerciseFailed: the answer is wrong (the message says what to look at).
    """
    require_int(
        answer, f"answer must be an int (a vocabulary size), got {type(answer).__name__} {answer!r}"
    )
    right = _half_vocab()
    if abs(int(answer) - 2 * right) <= 1:
        raise ExerciseFailed(
            "that is the size at which a *tied* table (V·d) equals the body; the question is about "
            "an untied model, whose vocabulary costs 2·V·d"
        )
    require(
        abs(int(answer) - right) <= 1,
        f"{int(answer):,} is not it: the body (everything but embedding and head) does not depend "
        "on V; solve 2·V·d / (body + 2·V·d) = 1/2 for V, with body from decoder_parameters",
    )


def _equivalent(make_optimizer: Callable, steps: int = 5) -> bool:
    """Does a `.data`-shared pair train like true tying under this optimizer (to 1e-6)?

    Args:
        make_optimizer: builds the optimizer from an iterable of parameters.
        steps: training steps of the toy TinyLM(12, 8).

    Returns:
        True when the two tables end within 1e-6 of each other.
    """
    results = []
    for how in ("tied", ".data"):
        m = TinyLM(12, 8, tie_weights=False, seed=0)
        if how == "tied":
            m.lm_head.weight = m.embed.weight
        else:
            m.lm_head.weight.data = m.embed.weight.data
        optimizer = make_optimizer(m.parameters())
        batch = torch.tensor([[1, 2, 3, 4, 1, 5], [6, 7, 8, 9, 1, 10]])
        for _ in range(steps):
            optimizer.zero_grad()
            logits = m(batch[:, :-1])
            loss = nn.functional.cross_entropy(logits.reshape(-1, 12), batch[:, 1:].reshape(-1))
            loss.backward()
            optimizer.step()
        results.append(m.embed.weight.detach().clone())
    return bool((results[0] - results[1]).abs().max() < 1e-6)


#: The optimizers of the `.data` exercise.
SHARE_OPTIMIZERS: dict[str, Callable] = {
    "SGD, momentum 0.9": lambda p: torch.optim.SGD(p, lr=0.5, momentum=0.9),
    "SGD, weight decay 0.1": lambda p: torch.optim.SGD(p, lr=0.5, weight_decay=0.1),
    "Adagrad": lambda p: torch.optim.Adagrad(p, lr=0.1),
}


def _share_answers() -> dict[str, bool]:
    """The right answer: :func:`_equivalent` for every optimizer of SHARE_OPTIMIZERS."""
    return {name: _equivalent(make) for name, make in SHARE_OPTIMIZERS.items()}


@exercise(
    "ch04-data-sharing",
    chapter=CHAPTER,
    wrong_answers=lambda: [
        dict.fromkeys(SHARE_OPTIMIZERS, True),
        dict.fromkeys(SHARE_OPTIMIZERS, False),
        {name: not v for name, v in _share_answers().items()},
        list(_share_answers().values()),
    ],
    right_answer=_share_answers,
)
def check_data_sharing(answer: dict[str, bool]) -> None:
    """For each optimizer of SHARE_OPTIMIZERS: does `.data` sharing train like true tying?

    Args:
        answer: the reader's dict ``{optimizer name: bool}``.
    Raises:
        ExerciseFailed: the answer is wrong (the message says what to look at).
    """
    require(
        isinstance(answer, dict) and set(answer) == set(SHARE_OPTIMIZERS),
        f"answer must be a dict with the keys {sorted(SHARE_OPTIMIZERS)} and bool values",
    )
    require(all(isinstance(v, bool) for v in answer.values()), "every value must be True or False")
    right = _share_answers()
    wrong = sorted(name for name in right if answer[name] != right[name])
    require(
        not wrong,
        f"not right for {wrong}: run both versions (true tying and .data sharing) for a few steps "
        "with each optimizer and compare the tables; think about which updates are linear in the "
        "gradient and which apply something per parameter",
    )


def _tiny_lm_cases() -> list[tuple[int, int, int, bool]]:
    """(V, d, n_layers, tied) cases, with and without blocks, tied and untied."""
    return [(v, d, n, t) for v, d in ((7, 4), (50, 8)) for n in (0, 1, 3) for t in (True, False)]


def _formula(v: int, d: int, n: int, tied: bool) -> int:
    """TinyLM's parameter count: embedding, n MLP blocks, final LayerNorm, untied head."""
    block = 2 * d + (d * 4 * d + 4 * d) + (4 * d * d + d)  # LayerNorm, fc_in, fc_out
    return v * d * (1 if tied else 2) + n * block + 2 * d


def _formula_ignoring_tying(v: int, d: int, n: int, tied: bool) -> int:
    """A wrong formula: always counts the head."""
    block = 2 * d + 8 * d * d + 5 * d
    return 2 * v * d + n * block + 2 * d


def _formula_without_biases(v: int, d: int, n: int, tied: bool) -> int:
    """A wrong formula: forgets the biases of the MLP."""
    return v * d * (1 if tied else 2) + n * (2 * d + 8 * d * d) + 2 * d


class _BuiltAModule(RuntimeError):
    """Raised when a reader's formula builds a module while the checker forbids it."""


def _forbid(*_: object, **__: object) -> None:
    """Stand-in for module construction while a reader's formula runs."""
    raise _BuiltAModule("built a module")


@exercise(
    "ch04-count",
    chapter=CHAPTER,
    wrong_answers=lambda: [
        _formula_ignoring_tying,
        _formula_without_biases,
        lambda v, d, n, tied: v * d * (1 if tied else 2),
        lambda v, d, n, tied: count_parameters(TinyLM(v, d, tie_weights=tied, n_layers=n)),
        12345,
    ],
    right_answer=lambda: _formula,
)
def check_count(answer: Callable[[int, int, int, bool], int]) -> None:
    """``answer(V, d, n_layers, tied)`` must give TinyLM's parameter count without building it.

    Args:
        answer: the reader's function ``n_params(V, d, n_layers, tied)``.
    Raises:
        ExerciseFailed: the answer is wrong (the message says what to look at).
    """
    require_function(answer, "n_params(V, d, n_layers, tied)")
    for v, d, n, tied in _tiny_lm_cases():
        want = count_parameters(TinyLM(v, d, tie_weights=tied, n_layers=n))
        try:
            with mock.patch.object(nn.Module, "__init__", _forbid):
                got = answer(v, d, n, tied)
        except _BuiltAModule:
            raise ExerciseFailed(
                "n_params built a module (a TinyLM, a layer, ...); the exercise asks for a formula "
                "that needs no model: count the entries of each weight and bias by hand"
            ) from None
        require(
            isinstance(got, numbers.Integral) and not isinstance(got, bool),
            f"n_params must return an int, got {type(got).__name__} for V={v}, d={d}",
        )
        if got == want:
            continue
        if tied and got == want + v * d:
            raise ExerciseFailed(
                f"for a tied model (V={v}, d={d}) you counted the head's V·d = {v * d} as well; "
                "a tied head has no parameters of its own"
            )
        raise ExerciseFailed(
            f"V={v}, d={d}, n_layers={n}, tied={tied}: got {got:,}, the model has {want:,}. "
            "Count every piece: embedding V·d; each block has a LayerNorm (2d), fc_in (d·4d + 4d) "
            "and fc_out (4d·d + d); the final LayerNorm 2d; the head V·d only if untied"
        )
