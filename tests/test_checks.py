"""lib._checks: the argument checks behind every public function's errors."""

from __future__ import annotations

import pytest
import torch

from lib import _checks


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda: _checks.check_int("n", 1.5), TypeError, "n must be an int"),
        (lambda: _checks.check_int("n", True), TypeError, "n must be an int"),
        (lambda: _checks.check_positive_int("n_heads", 0), ValueError, "n_heads must be >= 1"),
        (lambda: _checks.check_even("d_head", 7), ValueError, "d_head must be even"),
        (lambda: _checks.check_positive_float("base", 0.0), ValueError, "base must be > 0"),
        (lambda: _checks.check_positive_float("base", "1"), TypeError, "base must be a real"),
        (lambda: _checks.check_positive_float("f", float("nan")), ValueError, "f must be finite"),
        (lambda: _checks.check_tensor("x", [1, 2]), TypeError, "x must be a torch.Tensor"),
        (
            lambda: _checks.check_floating("x", torch.ones(2, dtype=torch.long)),
            TypeError,
            "floating-point",
        ),
        (
            lambda: _checks.check_integer_tensor("positions", torch.ones(2)),
            TypeError,
            "positions must be an integer tensor",
        ),
        (
            lambda: _checks.check_ndim("x", torch.ones(2), minimum=2),
            ValueError,
            "at least 2 dimension",
        ),
        (
            lambda: _checks.check_choice("pairing", "odd", ("half", "interleaved")),
            ValueError,
            "pairing must be one of",
        ),
    ],
)
def test_errors_name_the_argument_and_the_expectation(call, error, message):
    with pytest.raises(error, match=message):
        call()


def test_valid_values_pass_through():
    assert _checks.check_even("d_head", 128) == 128
    assert _checks.check_positive_float("base", 10_000) == 10_000.0
    assert _checks.check_positive_float("f", 0, allow_zero=True) == 0.0
    x = torch.arange(3)
    assert _checks.check_integer_tensor("positions", x) is x
