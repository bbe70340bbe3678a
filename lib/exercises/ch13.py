"""Checkers for chapter 13, "Comparison and a length-extrapolation lab".

The expected answers of the first three are computed here from the formulas (not from
:mod:`lib.lab`), with the lab's default sizes: training length 32, evaluation up to
4 × 32 = 128, width 64, 4 heads. The fourth is an experiment: the reader predicts, measures,
and the checker compares the prediction with the measurement.
"""

from __future__ import annotations

import math

import torch

from lib.exercises import exercise, require, require_int, require_real
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


def _experiment(prediction: str, plain: list[float], yarn: list[float], **kw) -> dict:
    seq_len, condition = kw.get("seq_len", FAR_LEN), kw.get("condition", "seen")
    return {
        "prediction": prediction,
        "plain": _fake_eval(seq_len, condition, plain),
        "yarn": _fake_eval(seq_len, condition, yarn),
    }


@exercise(
    "ch12-far-experiment",
    chapter=CHAPTER,
    wrong_answers=lambda: [
        _experiment("plain", [0.5, 0.6, 0.4], [0.9, 0.8, 0.95]),  # prediction contradicted
        _experiment("yarn", [0.9, 0.8, 0.95], [0.5, 0.6, 0.4]),  # the other way round
        _experiment("yarn", [0.5, 0.6, 0.4], [0.9, 0.8, 0.95], seq_len=4 * TRAIN_LEN),
        _experiment("yarn", [0.5, 0.6, 0.4], [0.9, 0.8, 0.95], condition="unseen"),
        _experiment("yarn", [0.5], [0.9]),  # a single seed
        _experiment("both", [0.5, 0.6, 0.4], [0.9, 0.8, 0.95]),
        {"prediction": "yarn"},
        0.9,
    ],
    right_answer=lambda: _experiment("yarn", [0.5, 0.6, 0.4], [0.9, 0.8, 0.95]),
)
def check_far_experiment(answer: dict) -> None:
    """A prediction ("plain" or "yarn" scores higher at 8L, seen distances) and both measurements.

    The checker reads the two :class:`lib.lab.EnsembleEval` results, takes the median accuracy
    over the seeds of each, and accepts the answer when the prediction names the higher one.

    Args:
        answer: ``{"prediction": "plain" or "yarn", "plain": EnsembleEval,
            "yarn": EnsembleEval}``, the two results of :func:`lib.lab.evaluate_ensemble` at
            T = 8L, condition ``"seen"``.

    Raises:
        ExerciseFailed: the answer is wrong (the message says what to look at).
    """
    require(
        isinstance(answer, dict) and {"prediction", "plain", "yarn"} <= set(answer),
        'answer must be a dict with the keys "prediction", "plain" and "yarn"',
    )
    prediction = answer["prediction"]
    require(
        prediction in ("plain", "yarn"),
        f'"prediction" must be "plain" or "yarn" (which scores higher), got {prediction!r}',
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
            "periods, so only the positions are new)",
        )
        require(
            result.accuracy.numel() >= 3,
            f'answer["{key}"] holds {result.accuracy.numel()} model(s); evaluate the whole '
            "ensemble (at least 3 seeds) so that the median means something",
        )
    plain = float(answer["plain"].accuracy.median())
    yarn = float(answer["yarn"].accuracy.median())
    measured = "yarn" if yarn > plain else "plain"
    require(
        prediction == measured,
        f"your prediction {prediction!r} is contradicted by your own measurement: median "
        f"accuracy plain {plain:.2f}, yarn {yarn:.2f}. Which pairs does YaRN leave alone, and "
        "which does it interpolate? (Rerun, then change the prediction only if you can say why.)",
    )
