"""Checkers for chapter 12, "Comparison and a length-extrapolation lab".

The expected answers are computed here from the formulas (not from :mod:`lib.lab`), with the
lab's default sizes: training length 32, evaluation up to 4 × 32 = 128, width 64, 4 heads.
"""

from __future__ import annotations

import math

import torch

from lib.exercises import exercise

CHAPTER = "12_comparison_lab"

TRAIN_LEN, MAX_LEN, D_MODEL, N_HEADS = 32, 128, 64, 4


@exercise(
    "ch12-untrained-rows",
    chapter=CHAPTER,
    wrong_answers=lambda: [MAX_LEN * D_MODEL, TRAIN_LEN * D_MODEL, MAX_LEN - TRAIN_LEN, 0, "6144"],
)
def check_untrained_rows(answer: int) -> None:
    """Parameters of the learned table that never get a gradient: ``(128 − 32) · 64``."""
    assert isinstance(answer, int) and not isinstance(answer, bool), (
        f"answer must be an int (a count of parameters), got {type(answer).__name__} {answer!r}"
    )
    expected = (MAX_LEN - TRAIN_LEN) * D_MODEL
    assert answer != MAX_LEN * D_MODEL, "that is the whole table; only rows >= L are never used"
    assert answer != TRAIN_LEN * D_MODEL, "that is the trained part of the table (rows 0 .. L-1)"
    assert answer != MAX_LEN - TRAIN_LEN, "that counts rows; each row holds d_model parameters"
    assert answer == expected, (
        f"got {answer}: count the rows the training never reads (positions L .. 4L-1) times the "
        "width d_model"
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
)
def check_pi_angles(answer: torch.Tensor) -> None:
    """Angles of pair 0 (θ_0 = 1) under linear interpolation at T = 128: ``m / 4``."""
    assert isinstance(answer, torch.Tensor), (
        f"answer must be a torch.Tensor of angles, got {type(answer).__name__}"
    )
    assert answer.is_floating_point(), f"angles are real numbers, got dtype {answer.dtype}"
    assert answer.shape == (MAX_LEN,), (
        f"answer must hold one angle per position of the 4x evaluation, shape [{MAX_LEN}], "
        f"got {list(answer.shape)}"
    )
    expected = torch.arange(MAX_LEN, dtype=torch.float64) / (MAX_LEN / TRAIN_LEN)  # [128]
    got = answer.detach().to(torch.float64).cpu()
    factor = MAX_LEN / TRAIN_LEN
    if torch.allclose(got, expected * factor, atol=1e-5):
        raise AssertionError("these are the plain RoPE angles m·θ_0: divide by the factor 4")
    if torch.allclose(got, expected * factor**2, atol=1e-4):
        raise AssertionError("the factor divides the angles (squeezes positions), not multiplies")
    assert torch.allclose(got, expected, atol=1e-5), (
        "pair 0 has θ_0 = 1, so its angle at position m is m / factor with factor = 128 / 32; "
        f"got first values {got[:4].tolist()}"
    )


@exercise(
    "ch12-alibi-far",
    chapter=CHAPTER,
    wrong_answers=lambda: [127 / 256, -127 / 4, -0.5, -128 / 256, -127 / 16, "-0.496"],
)
def check_alibi_far(answer: float) -> None:
    """Bias of the flattest of 4 ALiBi heads at distance 127: ``−2^(−8) · 127``."""
    assert isinstance(answer, (int, float)) and not isinstance(answer, bool), (
        f"answer must be a number, got {type(answer).__name__} {answer!r}"
    )
    slopes = [2.0 ** (-8.0 * k / N_HEADS) for k in range(1, N_HEADS + 1)]  # 1/4 … 1/256
    distance = MAX_LEN - 1
    expected = -min(slopes) * distance
    assert answer <= 0, "ALiBi subtracts: the bias is -slope * distance, a negative number"
    assert not math.isclose(answer, -max(slopes) * distance, abs_tol=1e-6), (
        "that is the steepest head (slope 1/4); the question asks for the flattest"
    )
    assert not math.isclose(answer, -min(slopes) * MAX_LEN, abs_tol=1e-6), (
        "the largest distance between a query and a key in 128 tokens is 127, not 128"
    )
    assert math.isclose(answer, expected, abs_tol=1e-6), (
        f"got {answer}: the flattest head's slope is 2^(-8*4/4) = 1/256 for 4 heads; multiply by "
        "the largest query-key distance"
    )
