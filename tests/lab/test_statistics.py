"""Tests for lib/lab/statistics.py (the length-extrapolation lab)."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from lib.lab import (
    bootstrap_interval,
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


# ------------------------------------------------------------------------------------------------
# The two-level bootstrap: seeds, then sequences within each drawn seed
# ------------------------------------------------------------------------------------------------


@st.composite
def _lab_counts(draw, max_seeds: int = 5, max_sequences: int = 12):
    """``(correct [S, N], count [N])`` as an evaluation produces them: 0 <= correct <= count."""
    n_seeds = draw(st.integers(1, max_seeds))
    n_seqs = draw(st.integers(1, max_sequences))
    count = draw(st.lists(st.integers(1, 30), min_size=n_seqs, max_size=n_seqs))
    correct = [[draw(st.integers(0, c)) for c in count] for _ in range(n_seeds)]
    return torch.tensor(correct, dtype=torch.float64), torch.tensor(count, dtype=torch.float64)


def test_bootstrap_interval_pinned_estimate_and_interval():
    # seed 0: 3 of 6 right (0.5), seed 1: 6 of 6 (1.0): the estimate is their mean, 0.75
    result = bootstrap_interval([[1, 2], [2, 4]], [2, 4])
    assert result.estimate == 0.75
    assert (result.low, result.high) == (0.5, 1.0)  # both seeds drawn as 0.5 or as 1.0: the tails


@given(_lab_counts())
def test_bootstrap_interval_contains_the_point_estimate(data):
    correct, count = data
    result = bootstrap_interval(correct, count, n_resamples=400)
    # float64 sums in another order: the estimate may sit an ulp outside a degenerate interval
    assert result.low - 1e-12 <= result.estimate <= result.high + 1e-12
    assert 0.0 <= result.low <= result.high <= 1.0


@given(_lab_counts(max_seeds=3, max_sequences=6))
def test_more_seeds_and_sequences_narrow_the_interval(data):
    correct, count = data
    small = bootstrap_interval(correct, count, n_resamples=1000)
    # the same measurements four times over, at both levels: four times the seeds and sequences
    big = bootstrap_interval(correct.repeat(4, 4), count.repeat(4), n_resamples=1000)
    assert big.estimate == pytest.approx(small.estimate, abs=1e-12)
    if small.high > small.low:
        assert big.high - big.low < small.high - small.low


def test_disagreeing_seeds_widen_the_interval_when_every_sequence_agrees():
    """Resampling only the sequences would give a zero-width interval here (fails that mutant)."""
    count = torch.full((8,), 10.0)
    correct = torch.stack([count * 0.9, count * 0.5, count * 0.7])  # each seed's sequences agree
    result = bootstrap_interval(correct, count)
    assert result.estimate == pytest.approx(0.7, abs=1e-12)
    assert result.low < 0.6 and result.high > 0.8  # the seeds' spread, 0.5 .. 0.9


def test_disagreeing_sequences_widen_the_interval_when_every_seed_agrees():
    """Resampling only the seeds would give a zero-width interval here (fails that mutant)."""
    count = torch.full((8,), 10.0)
    one_seed = torch.tensor([10.0, 0, 10, 0, 10, 0, 10, 0])  # half the sequences right
    result = bootstrap_interval(one_seed.repeat(3, 1), count)
    assert result.estimate == 0.5
    assert result.low < 0.4 and result.high > 0.6


def test_bootstrap_interval_is_reproducible_and_count_may_be_per_seed():
    correct = torch.tensor([[3.0, 1, 4, 1, 5], [2, 6, 5, 3, 5]])
    count = torch.full((5,), 9.0)
    assert bootstrap_interval(correct, count) == bootstrap_interval(correct, count)
    assert bootstrap_interval(correct, count.expand(2, 5)) == bootstrap_interval(correct, count)


@pytest.mark.parametrize(
    ("args", "kwargs", "error", "match"),
    [
        (([1, 2], [2, 2]), {}, ValueError, "correct must be"),
        (([[1, 2]], [2, 2, 2]), {}, ValueError, "count must be"),
        (([[1, 2]], [0, 2]), {}, ValueError, "count must be >= 1"),
        (([[3, 2]], [2, 2]), {}, ValueError, "0 .. count"),
        (([[-1, 2]], [2, 2]), {}, ValueError, "0 .. count"),
        (([[1, 2]], [2, 2]), {"level": 1.0}, ValueError, "level"),
        (([[1, 2]], [2, 2]), {"level": 0}, ValueError, "level"),
        (([[1, 2]], [2, 2]), {"n_resamples": 0}, ValueError, "n_resamples"),
        (("ab", [2, 2]), {}, TypeError, "correct"),
    ],
)
def test_bootstrap_interval_refuses_bad_input(args, kwargs, error, match):
    with pytest.raises(error, match=match):
        bootstrap_interval(*args, **kwargs)
