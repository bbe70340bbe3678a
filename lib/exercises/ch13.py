"""Checkers for chapter 13, "Comparison and a length-extrapolation lab".

The expected answers of the first three are computed here from the formulas (not from
:mod:`lib.lab`), with the lab's default sizes: training length 32, evaluation up to
4 × 32 = 128, width 64, 4 heads. The fourth is an experiment in two checks: the reader's
prediction is recorded first (``ch12-far-predict``), then the measurement is compared with it
(``ch12-far-experiment``); a prediction made after measuring is refused.
"""

from __future__ import annotations

import math
from typing import Any

import torch

from lib.exercises import (
    exercise,
    record_prediction,
    require,
    require_int,
    require_real,
)
from lib.lab import EnsembleEval

CHAPTER = "13_comparison_lab"

TRAIN_LEN, MAX_LEN, D_MODEL, N_HEADS = 32, 128, 64, 4
#: The length of the experiment in exercise 4: eight times the training length.
FAR_LEN = 8 * TRAIN_LEN


@exercise(
    "ch12-untrained-rows",
    chapter=CHAPTER,
    wrong_answers=lambda: [
        MAX_LEN * D_MODEL,
        TRAIN_LEN * D_MODEL,
        (MAX_LEN - TRAIN_LEN) * D_MODEL,
        MAX_LEN - TRAIN_LEN + 1,
        0,
        "6208",
    ],
    right_answer=lambda: (MAX_LEN - TRAIN_LEN + 1) * D_MODEL,
)
def check_untrained_rows(answer: int) -> None:
    """Parameters of the learned table that never get a gradient: ``(128 − 31) · 64``.

    Rows ``L .. 4L−1`` are never read at length ``L``; row ``L − 1`` is read, but only by the
    last position, whose prediction is never scored and which no later query attends to, so
    its gradient is zero.

    Args:
        answer: the number of parameters, an int.

    Raises:
        ExerciseFailed: the answer is wrong (the message says what to look at).
    """
    answer = require_int(
        answer,
        f"answer must be an int (a count of parameters), got {type(answer).__name__} {answer!r}",
    )
    expected = (MAX_LEN - TRAIN_LEN + 1) * D_MODEL
    require(answer != MAX_LEN * D_MODEL, "that is the whole table; most of rows 0 .. L-1 train")
    require(answer != TRAIN_LEN * D_MODEL, "that is the size of rows 0 .. L-1, which are read")
    require(
        answer != (MAX_LEN - TRAIN_LEN) * D_MODEL,
        "rows L .. 4L-1 are never read, right; but one row that is read gets no gradient either: "
        "which position's prediction is never scored, and who attends to it?",
    )
    require(
        answer != MAX_LEN - TRAIN_LEN + 1, "that counts rows; each row holds d_model parameters"
    )
    require(
        answer == expected,
        f"got {answer}: count the rows whose gradient is always zero (rows L-1 .. 4L-1) times the "
        "width d_model",
    )


@exercise(
    "ch12-pi-angles",
    chapter=CHAPTER,
    wrong_answers=lambda: [
        torch.arange(MAX_LEN, dtype=torch.float32),
        torch.arange(MAX_LEN, dtype=torch.float32) * 4,
        torch.arange(MAX_LEN, dtype=torch.float32)[:TRAIN_LEN] / 4,
        [0.25 * m for m in range(MAX_LEN)],
    ],
    right_answer=lambda: torch.arange(MAX_LEN, dtype=torch.float32) / 4,
)
def check_pi_angles(answer: torch.Tensor) -> None:
    """Angles of pair 0 (θ_0 = 1) under linear interpolation at T = 128: ``m / 4``.

    Args:
        answer: the angles, a tensor ``[128]``, one per position.

    Raises:
        ExerciseFailed: the answer is wrong (the message says what to look at).
    """
    require(
        isinstance(answer, torch.Tensor),
        f"answer must be a torch.Tensor of angles, got {type(answer).__name__}",
    )
    require(answer.is_floating_point(), f"angles are real numbers, got dtype {answer.dtype}")
    require(
        answer.shape == (MAX_LEN,),
        f"answer must hold one angle per position of the 4x evaluation, shape [{MAX_LEN}], "
        f"got {list(answer.shape)}",
    )
    factor = MAX_LEN / TRAIN_LEN
    expected = torch.arange(MAX_LEN, dtype=torch.float64) / factor  # [128]
    got = answer.detach().to(torch.float64).cpu()
    require(
        not torch.allclose(got, expected * factor, atol=1e-5),
        "these are the plain RoPE angles m·θ_0: divide by the factor 4",
    )
    require(
        not torch.allclose(got, expected * factor**2, atol=1e-4),
        "the factor divides the angles (squeezes positions), not multiplies",
    )
    require(
        torch.allclose(got, expected, atol=1e-5),
        "pair 0 has θ_0 = 1, so its angle at position m is m / factor with factor = 128 / 32; "
        f"got first values {got[:4].tolist()}",
    )


@exercise(
    "ch12-alibi-far",
    chapter=CHAPTER,
    wrong_answers=lambda: [127 / 256, -127 / 4, -0.5, -128 / 256, -127 / 16, "-0.496"],
    right_answer=lambda: -127 / 256,
)
def check_alibi_far(answer: float) -> None:
    """Bias of the flattest of 4 ALiBi heads at distance 127: ``−2^(−8) · 127``.

    Args:
        answer: the bias, a number.

    Raises:
        ExerciseFailed: the answer is wrong (the message says what to look at).
    """
    require_real(answer, f"answer must be a number, got {type(answer).__name__} {answer!r}")
    slopes = [2.0 ** (-8.0 * k / N_HEADS) for k in range(1, N_HEADS + 1)]  # 1/4 … 1/256
    distance = MAX_LEN - 1
    expected = -min(slopes) * distance
    require(answer <= 0, "ALiBi subtracts: the bias is -slope * distance, a negative number")
    require(
        not math.isclose(answer, -max(slopes) * distance, abs_tol=1e-6),
        "that is the steepest head (slope 1/4); the question asks for the flattest",
    )
    require(
        not math.isclose(answer, -min(slopes) * MAX_LEN, abs_tol=1e-6),
        "the largest distance between a query and a key in 128 tokens is 127, not 128",
    )
    require(
        math.isclose(answer, expected, abs_tol=1e-6),
        f"got {answer}: the flattest head's slope is 2^(-8*4/4) = 1/256 for 4 heads; multiply by "
        "the largest query-key distance",
    )


def _fake_eval(seq_len: int, condition: str, accuracy: list[float]) -> EnsembleEval:
    """A stand-in measurement for the tests of the experiment checker."""
    acc = torch.tensor(accuracy, dtype=torch.float64)
    return EnsembleEval(
        seq_len=seq_len,
        condition=condition,
        accuracy=acc,
        key_below=acc,
        key_above=torch.full_like(acc, math.nan),
        n_below=1,
        n_above=0,
        per_position=acc[:, None].expand(-1, seq_len).clone(),
    )


#: The prediction log of exercise 4: the prediction recorded before the first measurement, and
#: whether a measurement has been checked. Module state on purpose: it lives as long as the
#: reader's kernel, so a prediction cannot be written after measuring.
_LOG: dict[str, Any] = {"prediction": None, "measured": False}
#: What exercise 4 predicts: which of the two scores higher at 8L (median over the seeds).
FAR_CHOICES = ("plain", "yarn")


def _reset_log() -> None:
    """Forget the recorded prediction and measurement (a fresh kernel; used by the tests)."""
    _LOG.update(prediction=None, measured=False)


def _predict_wrong() -> list[object]:
    _reset_log()  # a kernel that has already measured: a valid prediction now is refused
    _LOG.update(prediction="plain", measured=True)
    return ["both", "YaRN", 1, "yarn"]


def _predict_right() -> str:
    _reset_log()  # a fresh kernel: nothing measured yet
    return "yarn"


@exercise(
    "ch12-far-predict",
    chapter=CHAPTER,
    wrong_answers=_predict_wrong,
    right_answer=_predict_right,
)
def check_far_predict(answer: str) -> None:
    """Record, before measuring, which variant will score higher at 8L: ``"plain"`` or ``"yarn"``.

    Any well-formed prediction is recorded (it is not right or wrong until measured); once a
    measurement has been checked, a new prediction is refused and the recorded one stands.

    Args:
        answer: ``"plain"`` or ``"yarn"``.

    Raises:
        ExerciseFailed: a malformed prediction, or a prediction made after measuring.
    """
    require(
        answer in FAR_CHOICES,
        f"the prediction must be one of {list(FAR_CHOICES)} (which scores higher), got {answer!r}",
    )
    record_prediction(_LOG, answer, "Now measure (next cell).", quote=True)


def _experiment(plain: list[float], yarn: list[float], **kw) -> dict:
    seq_len, condition = kw.get("seq_len", FAR_LEN), kw.get("condition", "seen")
    return {
        "plain": _fake_eval(seq_len, condition, plain),
        "yarn": _fake_eval(seq_len, condition, yarn),
    }


def _measure_wrong() -> list[object]:
    low, high = [0.5, 0.6, 0.4], [0.9, 0.8, 0.95]
    answers: list[object] = [
        _experiment(low, high, seq_len=4 * TRAIN_LEN),
        _experiment(low, high, condition="unseen"),
        _experiment([0.5], [0.9]),  # a single seed
        {"plain": 0.5, "yarn": 0.9},
        0.9,
    ]
    _reset_log()  # then: measured without a prediction, and a prediction contradicted
    answers.append(_experiment(low, high))
    return answers


def _measure_right() -> dict:
    _reset_log()
    _LOG["prediction"] = "yarn"
    return _experiment([0.5, 0.6, 0.4], [0.9, 0.8, 0.95])


@exercise(
    "ch12-far-experiment",
    chapter=CHAPTER,
    wrong_answers=_measure_wrong,
    right_answer=_measure_right,
)
def check_far_experiment(answer: dict) -> None:
    """Compare the two measurements at 8L with the prediction recorded before measuring.

    The checker reads the two :class:`lib.lab.EnsembleEval` results, takes the median accuracy
    over the seeds of each, and accepts when the prediction recorded by ``ch12-far-predict``
    (before this check) names the higher one.

    Args:
        answer: ``{"plain": EnsembleEval, "yarn": EnsembleEval}``, the two results of
            :func:`lib.lab.evaluate_ensemble` at T = 8L, condition ``"seen"``.

    Raises:
        ExerciseFailed: a malformed answer, no prediction recorded first, or a measurement that
            contradicts the prediction (the message says what to look at).
    """
    require(
        isinstance(answer, dict) and {"plain", "yarn"} <= set(answer),
        'answer must be a dict with the keys "plain" and "yarn"',
    )
    for key in ("plain", "yarn"):
        result = answer[key]
        require(
            isinstance(result, EnsembleEval),
            f'answer["{key}"] must be what lib.lab.evaluate_ensemble returns, got '
            f"{type(result).__name__}",
        )
        require(
            result.seq_len == FAR_LEN,
            f'answer["{key}"] was measured at T = {result.seq_len}; the experiment is at '
            f"T = 8L = {FAR_LEN}",
        )
        require(
            result.condition == "seen",
            f'answer["{key}"] used condition {result.condition!r}; use "seen" (training\'s '
            "periods in a longer input)",
        )
        require(
            result.accuracy.numel() >= 3,
            f'answer["{key}"] holds {result.accuracy.numel()} model(s); evaluate the whole '
            "ensemble (at least 3 seeds) so that the median means something",
        )
    prediction = _LOG["prediction"]
    _LOG["measured"] = True
    require(
        prediction is not None,
        "no prediction was recorded before this measurement: run the prediction cell "
        "(check('ch12-far-predict', ...)) first. Your measurement now counts as seen.",
    )
    plain = float(answer["plain"].accuracy.median())
    yarn = float(answer["yarn"].accuracy.median())
    measured = "yarn" if yarn > plain else "plain"
    require(
        prediction == measured,
        f"your prediction {prediction!r} is contradicted by your measurement: median "
        f"accuracy plain {plain:.2f}, yarn {yarn:.2f}. Which pairs does YaRN leave alone, and "
        "which does it interpolate? Write down why before you look again.",
    )
