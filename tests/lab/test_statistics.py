"""Tests for lib/lab/statistics.py (the length-extrapolation lab)."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from lib.lab import (
    seed_spread,
)


def test_seed_spread_takes_the_lower_middle_seed_for_an_even_count():
    odd = seed_spread([0.3, 0.9, 0.5])
    assert (odd.median.item(), odd.low.item(), odd.high.item()) == (0.5, 0.3, 0.9)
    even = seed_spread(torch.tensor([0.9, 0.2, 0.6, 0.4], dtype=torch.float64))
    assert even.median.item() == 0.4  # a seed's value, not numpy's mean of the middle two (0.5)
    assert (even.low.item(), even.high.item()) == (0.2, 0.9)
    # over the first axis: per column of [S, n]
    rows = seed_spread([[0.7, 0.2, 0.1], [0.5, 0.3, 0.2], [0.6, 0.3, 0.1], [0.4, 0.1, 0.5]])
    assert rows.median.tolist() == [0.5, 0.2, 0.1]
    assert rows.low.tolist() == [0.4, 0.1, 0.1] and rows.high.tolist() == [0.7, 0.3, 0.5]
    assert rows.median.dtype == torch.float64


@given(st.lists(st.floats(-1e6, 1e6), min_size=1, max_size=20))
def test_seed_spread_median_is_a_seed_between_low_and_high(values):
    spread = seed_spread(values)
    assert spread.median.item() in values
    assert spread.low.item() == min(values) and spread.high.item() == max(values)
    below = sum(v <= spread.median.item() for v in values)
    assert below >= (len(values) + 1) // 2  # at least half the seeds at or below it


def test_seed_spread_refuses_bad_input():
    with pytest.raises(ValueError, match="values"):
        seed_spread([])
    with pytest.raises(ValueError, match="values"):
        seed_spread(torch.tensor(0.5))
    with pytest.raises(ValueError, match="finite"):
        seed_spread([0.5, float("nan")])
    with pytest.raises(TypeError, match="values"):
        seed_spread("0.5")
