"""Chapter 4's predict-then-measure exercise: the order rules that the generic checker tests
(tests/test_exercises.py, one fixed state per exercise) cannot reach."""

from __future__ import annotations

import pytest

from lib.exercises import ExerciseFailed, ch04, check


def test_measurement_without_a_prediction_is_refused_then_accepted_after_one(capsys):
    ch04._reset_log()
    right = ch04._share_distances()
    with pytest.raises(ExerciseFailed, match="prediction first"):
        check("ch04-data-sharing", dict(right))
    check("ch04-data-sharing-predict", dict.fromkeys(ch04.SHARE_OPTIMIZERS, True))
    check("ch04-data-sharing", dict(right))
    out = capsys.readouterr().out
    assert "Correct! (ch04-data-sharing)" in out
    # momentum passes for tying, weight decay and Adagrad do not: the prediction all-True
    # holds for exactly one optimizer
    assert out.count("not as predicted") == 2
    assert (
        right["SGD, momentum 0.9"]
        < 1e-6
        < 1e-3
        < min(right["SGD, weight decay 0.1"], right["Adagrad"])
    )
    with pytest.raises(ExerciseFailed, match="measured already"):  # too late to predict
        check("ch04-data-sharing-predict", dict.fromkeys(ch04.SHARE_OPTIMIZERS, False))
    ch04._reset_log()
