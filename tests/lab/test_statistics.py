"""Tests for lib/lab/statistics.py (the length-extrapolation lab)."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from scipy.stats import norm
from scipy.stats import t as scipy_t

from lib.lab import (
    seed_interval,
    seed_spread,
)
from lib.lab.statistics import student_t_quantile


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
# The t-interval over seeds on a shared (crossed) evaluation set, and paired differences
# ------------------------------------------------------------------------------------------------


def _simulate(n_experiments, n_seeds, n_seqs, seed_sd, seq_sd, *, generator, pair_shift=None):
    """Synthetic crossed lab data with a known true accuracy of 0.6 (or a known difference).

    Seed s and sequence j succeed with probability 0.6 + a_s + b_j (a_s ~ N(0, seed_sd²) clipped
    to ±0.15, b_j ~ U(−seq_sd, seq_sd), so p stays in (0, 1) and E[p] = 0.6 exactly); every
    sequence scores a random 8..24 predictions. With ``pair_shift``, a second variant on the same
    seeds and sequences succeeds with p − pair_shift + its own seed wobble: the true difference
    is ``pair_shift``.
    """
    a = (torch.randn(n_experiments, n_seeds, 1, generator=generator) * seed_sd).clamp(-0.15, 0.15)
    b = (torch.rand(n_experiments, 1, n_seqs, generator=generator) * 2 - 1) * seq_sd
    count = torch.randint(8, 25, (n_experiments, n_seqs), generator=generator).double()
    p = (0.6 + a + b).double()
    hits = torch.binomial(count[:, None].expand_as(p), p, generator=generator)
    if pair_shift is None:
        return hits, None, count
    wobble = (torch.randn(n_experiments, n_seeds, 1, generator=generator) * 0.02).clamp(-0.05, 0.05)
    q = (p - pair_shift + wobble.double()).clamp(0, 1)
    other = torch.binomial(count[:, None].expand_as(q), q, generator=generator)
    return hits, other, count


def _coverage(n_seeds, n_seqs, seed_sd, seq_sd, *, truth=0.6, pair_shift=None, n=800, seed=0):
    """Fraction of simulated experiments whose 90% interval holds the true value."""
    generator = torch.Generator().manual_seed(seed)
    hits, other, count = _simulate(
        n, n_seeds, n_seqs, seed_sd, seq_sd, generator=generator, pair_shift=pair_shift
    )
    inside = 0
    for e in range(n):
        kwargs = {} if other is None else {"baseline": other[e]}
        interval = seed_interval(hits[e], count[e], level=0.9, **kwargs)
        target = truth if pair_shift is None else pair_shift
        inside += interval.low <= target <= interval.high
    return inside / n


@pytest.mark.parametrize(
    ("n_seeds", "seed_sd", "seq_sd"),
    [
        (3, 0.06, 0.05),  # the lab's case: 3 seeds, the seed term dominates
        (5, 0.06, 0.05),
        (3, 0.0, 0.3),  # only the shared sequences vary: the sequence term carries it
        (3, 0.05, 0.3),  # both
    ],
)
def test_seed_interval_covers_the_truth_at_its_nominal_level(n_seeds, seed_sd, seq_sd):
    """Measured by simulation, not by construction: 800 synthetic crossed experiments each.

    Measured 0.889, 0.909, 0.919, 0.908. Mutants: the normal quantile instead of t, dropping
    the sequence term, dropping the seed term, or S − 1 degrees of freedom in every case (0.995
    in the third) each leave this band; the old two-level percentile bootstrap covered about
    0.63 with 3 seeds. Band: 0.86 .. 0.96 (binomial SE of an 800-run coverage at 0.9: 0.011).
    """
    coverage = _coverage(n_seeds, 64, seed_sd, seq_sd)
    assert 0.86 <= coverage <= 0.96, coverage


def test_paired_difference_covers_the_true_difference_and_is_narrower():
    """A shared seed effect of sd 0.06 and a sequence effect of 0.3 cancel in the pairing."""
    assert 0.86 <= _coverage(3, 64, 0.06, 0.3, pair_shift=0.1) <= 0.96  # measured 0.943
    generator = torch.Generator().manual_seed(5)
    hits, other, count = _simulate(1, 3, 64, 0.06, 0.3, generator=generator, pair_shift=0.1)
    paired = seed_interval(hits[0], count[0], baseline=other[0])
    # the same counts treated as two separate evaluation sets: both sets' errors add
    unpaired = seed_interval(hits[0], count[0], baseline=other[0], baseline_count=count[0])
    assert paired.estimate == pytest.approx(unpaired.estimate, abs=1e-12)
    assert paired.high - paired.low < 0.5 * (unpaired.high - unpaired.low)


def test_seed_interval_pinned_values():
    # per-seed accuracies 0.5, 0.6, 0.7 (of 10 predictions in two sequences of 5 each)
    correct = torch.tensor([[2.0, 3.0], [3.0, 3.0], [4.0, 3.0]])
    count = torch.tensor([5.0, 5.0])
    result = seed_interval(correct, count)
    assert result.estimate == pytest.approx(0.6, abs=1e-12)
    # se_seed² = 0.01 / 3; residuals r = (3 − 3, 3 − 3) = 0: no sequence term, ν = S − 1 = 2
    half = 2.9199855803537242 * (0.01 / 3) ** 0.5  # scipy.stats.t.ppf(0.95, 2)
    assert result.low == pytest.approx(0.6 - half, abs=1e-12)
    assert result.high == pytest.approx(0.6 + half, abs=1e-12)
    # every seed agrees, the sequences differ: sequence term only, N/(N−1)·Σr²/M²
    same = torch.tensor([[1.0, 5.0], [1.0, 5.0], [1.0, 5.0]])
    result = seed_interval(same, count)
    # ȳ = 0.6; r = (1 − 3, 5 − 3) = (−2, 2); se² = 2 · 8 / 100 = 0.16, ν = N − 1 = 1
    assert result.estimate == pytest.approx(0.6, abs=1e-12)
    # t with 1 dof: 6.31 · 0.4 at 90 % passes both ends (clipped); at 50 %, t = 1.0 exactly
    assert (result.low, result.high) == (0.0, 1.0)
    half = seed_interval(same, count, level=0.5)
    assert half.low == pytest.approx(0.6 - 0.4, abs=1e-12) and half.high == 1.0


def test_seed_interval_is_clipped_to_the_range_of_the_truth():
    # seeds at 0.9, 1.0, 1.0: mean 0.967, half-width 2.92 · 0.0333 = 0.097 would pass 1
    correct = torch.tensor([[4.0, 5.0], [5.0, 5.0], [5.0, 5.0]])
    count = torch.tensor([5.0, 5.0])
    result = seed_interval(correct, count)
    assert result.high == 1.0 and 0.0 < result.low < result.estimate < 1.0
    zero = seed_interval(torch.zeros(3, 2), count, baseline=correct)  # a difference near −1
    assert -1.0 <= zero.low < zero.estimate < zero.high < 0.0
    worst = seed_interval(correct.flip(0) * 0, count, baseline=correct)
    assert worst.low >= -1.0


def test_paired_difference_of_a_variant_with_itself_is_exactly_zero():
    correct = torch.tensor([[2.0, 3.0, 1.0], [3.0, 1.0, 0.0], [4.0, 3.0, 2.0]])
    count = torch.tensor([5.0, 4.0, 3.0])
    assert tuple(seed_interval(correct, count, baseline=correct)) == (0.0, 0.0, 0.0)


@given(
    st.integers(2, 5).flatmap(
        lambda s: st.integers(2, 10).flatmap(
            lambda n: st.tuples(
                st.just(s),
                st.lists(st.integers(1, 20), min_size=n, max_size=n),
                st.lists(st.floats(0, 1), min_size=s * n, max_size=s * n),
            )
        )
    )
)
def test_seed_interval_is_centred_on_the_mean_of_the_seeds(data):
    n_seeds, count, fractions = data
    count_t = torch.tensor(count, dtype=torch.float64)
    correct = (torch.tensor(fractions, dtype=torch.float64).view(n_seeds, -1) * count_t).round()
    result = seed_interval(correct, count_t)
    mean = (correct.sum(1) / count_t.sum()).mean().item()
    assert result.estimate == pytest.approx(mean, abs=1e-12)
    assert result.low <= result.estimate <= result.high
    if 0.0 < result.low and result.high < 1.0:  # symmetric unless clipped to [0, 1]
        assert result.high - result.estimate == pytest.approx(
            result.estimate - result.low, abs=1e-12
        )
    wider = seed_interval(correct, count_t, level=0.99)
    assert wider.low <= result.low + 1e-12 and wider.high >= result.high - 1e-12


@pytest.mark.parametrize(
    ("args", "kwargs", "error", "match"),
    [
        (([1, 2], [2, 2]), {}, ValueError, "correct must be"),
        (([[1, 2]], [2, 2]), {}, ValueError, "correct must be"),  # one seed: no spread
        (([[1], [1]], [2]), {}, ValueError, "correct must be"),  # one sequence
        (([[1, 2], [1, 2]], [2, 2, 2]), {}, ValueError, "count must be"),
        (([[1, 2], [1, 2]], [0, 2]), {}, ValueError, "count must be >= 1"),
        (([[3, 2], [1, 2]], [2, 2]), {}, ValueError, "0 .. count"),
        (([[-1, 2], [1, 2]], [2, 2]), {}, ValueError, "0 .. count"),
        (([[1, 2], [1, 2]], [2, 2]), {"level": 1.0}, ValueError, "level"),
        (([[1, 2], [1, 2]], [2, 2]), {"level": 0}, ValueError, "level"),
        (([[1, 2], [1, 2]], [2, 2]), {"baseline": [[1, 2, 1], [1, 2, 1]]}, ValueError, "baseline"),
        (([[1, 2], [1, 2]], [2, 2]), {"baseline": [[1, 2], [1, 2], [1, 2]]}, ValueError, "seeds"),
        (
            ([[1, 2], [1, 2]], [2, 2]),
            {"baseline": [[3, 2], [1, 2]]},
            ValueError,
            "baseline must lie",
        ),
        (
            ([[1, 2], [1, 2]], [2, 2]),
            {"baseline": [[1, 2, 1], [1, 2, 1]], "baseline_count": [2, 2]},
            ValueError,
            "baseline_count must be",
        ),
        (("ab", [2, 2]), {}, TypeError, "correct"),
    ],
)
def test_seed_interval_refuses_bad_input(args, kwargs, error, match):
    with pytest.raises(error, match=match):
        seed_interval(*args, **kwargs)


@pytest.mark.parametrize("dof", [1.0, 1.5, 2.0, 3.7, 10.0, 63.0, 1e3])
@pytest.mark.parametrize("probability", [0.5, 0.75, 0.95, 0.975, 0.999])
def test_student_t_quantile_equals_scipy(probability, dof):
    assert student_t_quantile(probability, dof) == pytest.approx(
        float(scipy_t.ppf(probability, dof)), abs=1e-9
    )


def test_student_t_quantile_becomes_the_normal_one_and_refuses_bad_input():
    assert student_t_quantile(0.95, 1e9) == pytest.approx(float(norm.ppf(0.95)), abs=1e-9)
    # at 1e5 dof the difference of two lgamma values of ~5e4 keeps ~1e-11 of absolute precision
    assert student_t_quantile(0.999, 1e5) == pytest.approx(float(scipy_t.ppf(0.999, 1e5)), abs=1e-7)
    for probability, dof in ((0.4, 2.0), (1.0, 2.0), (0.95, 0.0)):
        with pytest.raises(ValueError, match=r"probability|dof"):
            student_t_quantile(probability, dof)
