"""Chapter 2's predict-then-measure exercise: the prediction must come first, and the measurement
is compared with it (the generic checks of every exercise are in tests/test_exercises.py)."""

from __future__ import annotations

import pytest
import torch

from lib.exercises import ExerciseFailed, ch02, check

ACROSS, WITHIN = [0.950, 0.956, 0.939], [0.711, 0.639, 0.667]


def shares(values: list[float]) -> torch.Tensor:
    return torch.tensor(values, dtype=torch.float64)


@pytest.fixture(autouse=True)
def fresh_kernel():
    ch02._reset_glove_log()
    yield
    ch02._reset_glove_log()


def test_measuring_without_a_prediction_fails_and_closes_predictions(capsys):
    with pytest.raises(ExerciseFailed, match="no prediction was recorded"):
        check("ch02-glove-window-measure", {"across": shares(ACROSS), "within": shares(WITHIN)})
    with pytest.raises(ExerciseFailed, match="measured already"):
        check("ch02-glove-window-predict", "down")


def test_a_prediction_the_measurement_confirms_passes(capsys):
    check("ch02-glove-window-predict", "down")
    check("ch02-glove-window-measure", {"across": shares(ACROSS), "within": shares(WITHIN)})
    assert "Correct! (ch02-glove-window-measure)" in capsys.readouterr().out


@pytest.mark.parametrize("wrong", ["up", "same"])
def test_a_prediction_the_measurement_contradicts_fails(wrong, capsys):
    check("ch02-glove-window-predict", wrong)
    with pytest.raises(ExerciseFailed, match="contradicted"):
        check("ch02-glove-window-measure", {"across": shares(ACROSS), "within": shares(WITHIN)})


def test_the_last_prediction_before_measuring_counts(capsys):
    check("ch02-glove-window-predict", "up")
    check("ch02-glove-window-predict", "down")  # changed one's mind before measuring: allowed
    check("ch02-glove-window-measure", {"across": shares(ACROSS), "within": shares(WITHIN)})
    assert "Correct!" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("across", "within", "outcome"),
    [
        ([0.5, 0.6, 0.7], [0.71, 0.8, 0.9], "up"),
        ([0.5, 0.6, 0.7], [0.1, 0.2, 0.49], "down"),
        ([0.5, 0.6, 0.7], [0.7, 0.8, 0.9], "same"),  # touching ranges: not separated
        ([0.5, 0.6, 0.7], [0.1, 0.2, 0.5], "same"),
        ([0.5, 0.6, 0.7], [0.55, 0.65, 0.6], "same"),
    ],
)
def test_outcome_is_up_or_down_only_when_the_seed_ranges_are_separated(across, within, outcome):
    assert ch02.glove_window_outcome(shares(across), shares(within)) == outcome
