"""Checkers for chapter 4, "Weight tying".

Each ``check_*`` function is registered with :func:`lib.exercises.exercise` and raises
:class:`lib.exercises.ExerciseFailed` with a hint when the reader's answer is wrong.
"""

from __future__ import annotations

import numbers
from collections.abc import Callable
from typing import Any
from unittest import mock

import torch
from torch import nn

from lib.exercises import (
    ExerciseFailed,
    exercise,
    record_prediction,
    require,
    require_function,
    require_int,
)
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


def _distance(make_optimizer: Callable, steps: int = 5) -> float:
    """How far a `.data`-shared pair ends from true tying under this optimizer.

    Args:
        make_optimizer: builds the optimizer from an iterable of parameters.
        steps: training steps of the toy TinyLM(12, 8), as in the chapter's ``train_shared``.

    Returns:
        max |E_.data − E_tied| after ``steps`` steps.
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
    return float((results[0] - results[1]).abs().max())


def _equivalent(make_optimizer: Callable, steps: int = 5) -> bool:
    """Does a `.data`-shared pair train like true tying under this optimizer (to 1e-6)?"""
    return _distance(make_optimizer, steps) < 1e-6


#: The optimizers of the `.data` exercise.
SHARE_OPTIMIZERS: dict[str, Callable] = {
    "SGD, momentum 0.9": lambda p: torch.optim.SGD(p, lr=0.5, momentum=0.9),
    "SGD, weight decay 0.1": lambda p: torch.optim.SGD(p, lr=0.5, weight_decay=0.1),
    "Adagrad": lambda p: torch.optim.Adagrad(p, lr=0.1),
}

#: Why each optimizer does or does not let `.data` sharing pass for tying (shown after measuring).
SHARE_REASONS: dict[str, str] = {
    "SGD, momentum 0.9": "momentum is a running sum of gradients, linear in the gradient, so the "
    "two buffers add up to the tied one",
    "SGD, weight decay 0.1": "the decay term λ·w is added once per Parameter, so the shared "
    "storage is decayed twice per step",
    "Adagrad": "each Parameter divides its gradient by the root of its own sum of squares, which "
    "is not linear in the gradient",
}

#: The prediction log: the prediction recorded before the first measurement, and whether a
#: measurement has been checked. Module state on purpose: it lives as long as the reader's kernel.
_LOG: dict[str, Any] = {"prediction": None, "measured": False}


def _reset_log() -> None:
    """Forget the recorded prediction and measurement (a fresh kernel; used by the tests)."""
    _LOG.update(prediction=None, measured=False)


def _share_answers() -> dict[str, bool]:
    """The right answer: :func:`_equivalent` for every optimizer of SHARE_OPTIMIZERS."""
    return {name: _equivalent(make) for name, make in SHARE_OPTIMIZERS.items()}


def _share_distances() -> dict[str, float]:
    """The measurement: :func:`_distance` for every optimizer of SHARE_OPTIMIZERS."""
    return {name: _distance(make) for name, make in SHARE_OPTIMIZERS.items()}


def _predict_wrong() -> list[object]:
    _reset_log()  # a kernel that has already measured: a valid prediction now is refused
    _LOG.update(prediction=dict.fromkeys(SHARE_OPTIMIZERS, True), measured=True)
    return [
        True,
        list(_share_answers().values()),
        {"Adagrad": True},
        {**dict.fromkeys(SHARE_OPTIMIZERS, True), "Adagrad": "yes"},
        dict.fromkeys(SHARE_OPTIMIZERS, False),  # well formed, but after measuring
    ]


def _predict_right() -> dict[str, bool]:
    _reset_log()  # a fresh kernel: nothing measured yet
    return dict.fromkeys(SHARE_OPTIMIZERS, False)  # any well-formed prediction is recorded


@exercise(
    "ch04-data-sharing-predict",
    chapter=CHAPTER,
    wrong_answers=_predict_wrong,
    right_answer=_predict_right,
)
def check_data_sharing_predict(answer: object) -> None:
    """Record, before measuring, whether `.data` sharing will train like true tying.

    Any well-formed prediction is recorded (it is not right or wrong until it is measured); once
    a measurement has been checked, a new prediction is refused and the recorded one stands.

    Args:
        answer: the reader's dict ``{optimizer name: bool}`` over SHARE_OPTIMIZERS: True where
            the `.data` version will end within 1e-6 of true tying after five steps.

    Raises:
        ExerciseFailed: a malformed prediction, or a prediction made after measuring.
    """
    if not (isinstance(answer, dict) and set(answer) == set(SHARE_OPTIMIZERS)):
        raise ExerciseFailed(
            f"answer must be a dict with the keys {sorted(SHARE_OPTIMIZERS)} and bool values"
        )
    require(all(isinstance(v, bool) for v in answer.values()), "every value must be True or False")
    record_prediction(_LOG, dict(answer), "Now measure (next exercise cell).")


def _measure_wrong() -> list[object]:
    """Wrong measurements, with a prediction recorded (so only the measurement can reject them).

    The refusal of a right measurement made without a prediction is tested on its own in
    tests/test_exercises_ch04.py.
    """
    right = _share_distances()
    _reset_log()
    _LOG["prediction"] = dict.fromkeys(SHARE_OPTIMIZERS, True)
    return [
        _share_answers(),  # booleans, not the measurement
        {name: 0.0 for name in right},  # a guess, not a measurement
        {name: right[name] * 10 + 1e-3 for name in right},
        {name: right[name] * 1.01 + 2e-6 for name in right},  # off by more than the tolerance
        {"Adagrad": right["Adagrad"]},
    ]


def _measure_right() -> dict[str, float]:
    _reset_log()
    _LOG["prediction"] = dict.fromkeys(SHARE_OPTIMIZERS, True)  # a wrong prediction still passes
    return _share_distances()


@exercise(
    "ch04-data-sharing",
    chapter=CHAPTER,
    wrong_answers=_measure_wrong,
    right_answer=_measure_right,
)
def check_data_sharing(answer: object) -> None:
    """The measured distance of `.data` sharing from true tying, compared with the prediction.

    Args:
        answer: the reader's dict ``{optimizer name: float}``: max |E_.data − E_tied| after five
            steps of the chapter's ``train_shared``, for every optimizer of SHARE_OPTIMIZERS.

    Raises:
        ExerciseFailed: a malformed answer, no prediction recorded before measuring, or a number
            that is not the measurement (within 1e-6 + 0.1 % of the checker's own run).
    """
    if not (isinstance(answer, dict) and set(answer) == set(SHARE_OPTIMIZERS)):
        raise ExerciseFailed(
            f"answer must be a dict with the keys {sorted(SHARE_OPTIMIZERS)} and float values "
            "(the measured max |E_.data - E_tied|)"
        )
    require(
        all(isinstance(v, numbers.Real) and not isinstance(v, bool) for v in answer.values()),
        "every value must be a float: the measured max |E_.data - E_tied|, not a True/False",
    )
    require(
        _LOG["prediction"] is not None,
        "record your prediction first (the exercise cell before this one), then measure",
    )
    right = _share_distances()
    off = sorted(n for n in right if abs(float(answer[n]) - right[n]) > 1e-6 + 1e-3 * right[n])
    require(
        not off,
        f"not the measurement for {off}: run train_shared('tied', make) and "
        "train_shared('.data', make) for each optimizer and take (E_tied - E_data).abs().max()",
    )
    _LOG["measured"] = True
    for name, dist in right.items():
        equal = dist < 1e-6
        held = _LOG["prediction"][name] == equal
        verdict = "as predicted" if held else "not as predicted"
        shown = "< 1e-6" if equal else f"{dist:.2f}"  # rounding noise below 1e-6 not shown
        print(f"{name}: max |E_.data - E_tied| {shown}, {verdict}: {SHARE_REASONS[name]}")


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
