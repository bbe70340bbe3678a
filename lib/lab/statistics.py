"""Summaries over seeds (and, with the bootstrap, over evaluation sequences)."""

from __future__ import annotations

from typing import NamedTuple

import torch

from lib._checks import check_float, check_int, check_positive_int, check_real_array


class SeedSpread(NamedTuple):
    """Summary over seeds of a measurement (see :func:`seed_spread`)."""

    #: The median over seeds (for an even count, the lower of the middle two), float64.
    median: torch.Tensor
    #: The worst (smallest) seed, float64.
    low: torch.Tensor
    #: The best (largest) seed, float64.
    high: torch.Tensor


def seed_spread(values: object) -> SeedSpread:
    """Median, minimum and maximum over the seeds (the first axis) of a measurement.

    The lab reports every measurement as its median over seeds with the range from the worst to
    the best seed. For an even count the median is the lower of the middle two values
    (``torch.median``'s rule, not the mean of the two), so it is always one seed's value; for an
    odd count it is the middle seed.

    Equation:
        with v_(1) ≤ … ≤ v_(S) the sorted values: median = v_(⌈S/2⌉), low = v_(1), high = v_(S)

    Args:
        values: ``[S, ...]`` finite real numbers, a tensor, numpy array or (nested) sequence, with
            S >= 1 seeds.

    Returns:
        A :class:`SeedSpread` (median, low, high), each of the shape ``values`` has without its
        first axis.

    Raises:
        TypeError: ``values`` is not real numbers.
        ValueError: a value is NaN or ±inf, ``values`` is 0-D, or there is no seed.

    Shapes:
        values: [S, ...]
        returns: each [...]
    """
    array = torch.from_numpy(check_real_array("values", values, sequences=True))
    if array.dim() == 0 or array.shape[0] == 0:
        raise ValueError(
            f"values must be [S >= 1, ...] (one row per seed), got {list(array.shape)}"
        )
    return SeedSpread(
        median=array.median(dim=0).values, low=array.min(dim=0).values, high=array.max(dim=0).values
    )


class Interval(NamedTuple):
    """A point estimate and its bootstrap interval (see :func:`bootstrap_interval`)."""

    #: The mean over seeds of each seed's accuracy.
    estimate: float
    #: The lower end of the interval.
    low: float
    #: The upper end of the interval.
    high: float


def bootstrap_interval(
    correct: object,
    count: object,
    *,
    level: float = 0.9,
    n_resamples: int = 2000,
    seed: int = 0,
) -> Interval:
    """Mean accuracy over seeds with a two-level bootstrap interval: seeds, then sequences.

    A lab accuracy has two sources of error: the *seed* (training is chaotic; another seed is
    another model) and the *evaluation sample* (a finite set of sequences, whose predictions are
    correlated within a sequence, so the sequence is the unit to resample, not the prediction).
    One resample draws ``S`` seeds with replacement, then for each drawn seed ``N`` of its
    sequences with replacement, and takes the mean over the drawn seeds of each one's accuracy
    on its drawn sequences: a two-level (cluster, then within-cluster) bootstrap of clustered
    data, the seeds being the clusters (Field & Welsh 2007 discuss such bootstraps and when
    they are consistent). The interval is the percentile interval of ``n_resamples`` such
    means. Resampling only one level would leave out the other's error: a single seed has no
    seed-to-seed spread to resample, and a large evaluation set of a few seeds has little
    sequence-to-sequence spread left in its mean.

    Equation:
        acc_s = Σ_j correct[s, j] / Σ_j count[s, j];  estimate = (1/S) Σ_s acc_s
        resample b: seeds s*_1..s*_S ~ U{1..S}; for each k, sequences j*_1..j*_N ~ U{1..N};
        m*_b = (1/S) Σ_k Σ_i correct[s*_k, j*_i] / Σ_i count[s*_k, j*_i]
        interval = the (1 − level)/2 and (1 + level)/2 quantiles of m*_1..m*_B

    Args:
        correct: ``[S, N]`` correct predictions of each seed's model in each sequence,
            non-negative, at most ``count``.
        count: ``[N]`` or ``[S, N]`` scored predictions per sequence, each >= 1.
        level: the interval's coverage, a float in (0, 1).
        n_resamples: bootstrap resamples ``B``, an int >= 1.
        seed: seeds the resampling (the same interval on every run), an int >= 0.

    Returns:
        An :class:`Interval` ``(estimate, low, high)`` of Python floats.

    Raises:
        TypeError: ``correct`` or ``count`` is not real numbers.
        ValueError: wrong shapes, a count < 1, a correct count outside ``0 .. count``, a level
            outside (0, 1), ``n_resamples < 1`` or ``seed < 0``.

    Shapes:
        correct: [S, N]; count: [N] or [S, N]

    References:
        Field & Welsh, Bootstrapping clustered data, J. R. Statist. Soc. B 69(3), 369–390 (2007).
    """
    hits = torch.from_numpy(check_real_array("correct", correct, sequences=True))
    if hits.dim() != 2 or hits.shape[0] < 1 or hits.shape[1] < 1:
        raise ValueError(f"correct must be [S >= 1, N >= 1], got shape {list(hits.shape)}")
    counts = torch.from_numpy(check_real_array("count", count, sequences=True))
    if counts.dim() == 1 and counts.shape[0] == hits.shape[1]:
        counts = counts.expand(hits.shape)
    if counts.shape != hits.shape:
        raise ValueError(
            f"count must be [N={hits.shape[1]}] or [S, N]={list(hits.shape)}, "
            f"got shape {list(counts.shape)}"
        )
    if bool((counts < 1).any()):
        raise ValueError("count must be >= 1 for every sequence (a sequence with no scored token)")
    if bool((hits < 0).any()) or bool((hits > counts).any()):
        raise ValueError("correct must lie in 0 .. count for every sequence")
    level = check_float("level", level, minimum=0.0, maximum=1.0)
    if level in (0.0, 1.0):
        raise ValueError(f"level must be strictly between 0 and 1, got {level}")
    n_resamples = check_positive_int("n_resamples", n_resamples)
    seed = check_int("seed", seed, minimum=0)
    n_seeds, n_seqs = hits.shape
    estimate = (hits.sum(1) / counts.sum(1)).mean()
    draw = torch.Generator().manual_seed(seed)
    seeds = torch.randint(0, n_seeds, (n_resamples, n_seeds, 1), generator=draw)  # [B, S, 1]
    seqs = torch.randint(0, n_seqs, (n_resamples, n_seeds, n_seqs), generator=draw)  # [B, S, N]
    means = (hits[seeds, seqs].sum(-1) / counts[seeds, seqs].sum(-1)).mean(-1)  # [B]
    tail = (1.0 - level) / 2
    low, high = torch.quantile(means, torch.tensor([tail, 1.0 - tail], dtype=means.dtype))
    return Interval(float(estimate), float(low), float(high))
