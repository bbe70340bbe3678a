"""Summaries over seeds and over the shared evaluation sequences."""

from __future__ import annotations

import math
from typing import NamedTuple

import torch

from lib._checks import check_float, check_positive_float, check_real_array


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
    """A point estimate and its interval (see :func:`seed_interval`)."""

    #: The mean over seeds of each seed's accuracy (or of the paired difference).
    estimate: float
    #: The lower end of the interval.
    low: float
    #: The upper end of the interval.
    high: float


def seed_interval(
    correct: object,
    count: object,
    *,
    baseline: object | None = None,
    baseline_count: object | None = None,
    level: float = 0.9,
) -> Interval:
    """Mean accuracy over seeds (or a paired difference) with a t-interval over the seeds.

    The lab's design is *crossed*: every seed's model is evaluated on the **same** ``N``
    sequences. A mean accuracy then has two sources of error, added as variances: the seed
    (another seed is another model), estimated from the spread of the ``S`` per-seed
    accuracies, and the shared evaluation sample (another set of sequences), estimated from the
    spread over sequences of the seed-averaged counts, the sequence being the cluster
    (predictions within a sequence are correlated; the clustered standard error of a ratio,
    Miller 2024, sec. 2). The interval is Student's ``t``, with the Welch–Satterthwaite
    degrees of freedom of the sum of the two variance estimates (``S − 1`` for the seed term,
    ``N − 1`` for the sequence term; Satterthwaite 1946): what a handful of seeds can honestly
    give. When the seed term dominates with ``S = 3``, the 90 % quantile is close to
    t₂ = 2.92 standard errors, not the normal 1.64; the old percentile bootstrap of three seeds
    covered about 63 %. The tests measure the coverage by simulation.

    With ``baseline`` (another variant's counts, seed by seed), the interval is for the
    *paired* difference ``acc(correct) − acc(baseline)``. The seeds are paired (seed ``s`` of
    every scheme starts from the same shared weights and sees the same batches), so the seed
    term is the spread of the per-seed differences. On the same sequences (``baseline_count``
    ``None``) the sequences are paired too and the sequence term is that of the per-sequence
    differences (Miller 2024, sec. 4); on another evaluation set (``baseline_count`` given)
    the two sets' sequence terms add.

    Equation:
        y[s, j] = correct[s, j] (− baseline[s, j] on shared sequences);  M = Σ_j count[j]
        a_s = Σ_j y[s, j] / M (− the baseline's accuracy of seed s on its own set)
        estimate = ā = (1/S) Σ_s a_s;  se_seed² = Σ_s (a_s − ā)² / (S (S − 1))
        r_j = (1/S) Σ_s y[s, j] − ȳ · count[j], ȳ = Σ_{s,j} y[s, j] / (S M)
        se_seq² = N / (N − 1) · Σ_j r_j² / M²  (+ the baseline set's own, if separate)
        ν = (Σ_k v_k)² / Σ_k v_k² / ν_k over the terms v_k (se_seed²: ν = S − 1; each se_seq²: N − 1)
        interval = ā ± t_{ν, (1 + level)/2} · √(se_seed² + se_seq²), clipped to [0, 1] ([−1, 1])

    Args:
        correct: ``[S, N]`` correct predictions of each seed's model in each sequence,
            non-negative, at most ``count``, with S >= 2 seeds and N >= 2 sequences.
        count: ``[N]`` scored predictions per sequence (the same for every seed), each >= 1.
        baseline: ``None``, or ``[S, N']`` correct predictions of another variant with the
            same seeds, on the same sequences (``N' = N``) or on its own set.
        baseline_count: ``None`` when ``baseline`` was scored on the same sequences, else its
            ``[N']`` counts (the same checks as ``count``).
        level: the interval's nominal coverage, a float in (0, 1).

    Returns:
        An :class:`Interval` ``(estimate, low, high)`` of Python floats, clipped to the range
        the truth lies in: [0, 1] for an accuracy, [−1, 1] for a difference.

    Raises:
        TypeError: ``correct``, ``count`` or ``baseline`` is not real numbers.
        ValueError: wrong shapes (fewer than 2 seeds or sequences, ``baseline`` with another
            number of seeds, or of sequences without ``baseline_count``), a count < 1, a
            correct count outside ``0 .. count``, or a level outside (0, 1).

    Shapes:
        correct: [S, N]; count: [N]; baseline: [S, N']; baseline_count: [N']

    References:
        Miller, Adding error bars to evals: a statistical approach to language model
        evaluations, arXiv:2411.00640 (2024).
        Satterthwaite, An approximate distribution of estimates of variance components,
        Biometrics Bulletin 2(6), 110–114 (1946), doi:10.2307/3002019.
    """
    hits = _seed_counts("correct", correct)
    counts = _sequence_counts("count", count, hits)
    level = check_float("level", level, minimum=0.0, maximum=1.0)
    if level in (0.0, 1.0):
        raise ValueError(f"level must be strictly between 0 and 1, got {level}")
    n_seeds = hits.shape[0]
    per_seed = hits.sum(1) / counts.sum()  # [S]
    if baseline is None:
        terms = [_sequence_term(hits, counts)]
    else:
        other = _seed_counts("baseline", baseline)
        if other.shape[0] != n_seeds:
            raise ValueError(f"baseline must have S={n_seeds} seeds, got {other.shape[0]}")
        if baseline_count is None:  # the same sequences: pair them, sequence by sequence
            if other.shape != hits.shape:
                raise ValueError(
                    f"baseline must have the shape of correct {list(hits.shape)} "
                    f"(or give baseline_count), got {list(other.shape)}"
                )
            _sequence_counts("count", count, other, name_hits="baseline")
            terms = [_sequence_term(hits - other, counts)]
            per_seed = per_seed - other.sum(1) / counts.sum()
        else:  # another evaluation set: its sampling error adds
            other_counts = _sequence_counts("baseline_count", baseline_count, other, "baseline")
            terms = [_sequence_term(hits, counts), _sequence_term(other, other_counts)]
            per_seed = per_seed - other.sum(1) / other_counts.sum()
    estimate = per_seed.mean()
    terms.append((float(per_seed.var(correction=1)) / n_seeds, n_seeds - 1))
    se2 = sum(v for v, _ in terms)
    # Welch–Satterthwaite: the degrees of freedom of a sum of independent variance estimates
    denominator = sum(v**2 / dof for v, dof in terms)
    dof = se2**2 / denominator if denominator > 0 else float(n_seeds - 1)
    half = student_t_quantile((1 + level) / 2, dof) * se2**0.5
    # the truth lies in [0, 1] (an accuracy) or [−1, 1] (a difference): clipping the interval
    # to that range never removes it, so the coverage is unchanged
    floor = 0.0 if baseline is None else -1.0
    centre = float(estimate)
    return Interval(centre, max(floor, centre - half), min(1.0, centre + half))


def _sequence_term(y: torch.Tensor, counts: torch.Tensor) -> tuple[float, int]:
    """Clustered variance of ``Σ_j ȳ_j / Σ_j count_j`` over the N sequences, and its N − 1 dof."""
    total = counts.sum()
    residual = y.mean(0) - y.sum(1).mean() / total * counts  # [N]
    n_seqs = counts.shape[0]
    return float(residual.square().sum() * n_seqs / (n_seqs - 1) / total**2), n_seqs - 1


def _sequence_counts(
    name: str, value: object, hits: torch.Tensor, name_hits: str = "correct"
) -> torch.Tensor:
    """``value`` as float64 ``[N]`` counts >= 1 bounding ``hits`` ``[S, N]``, else a ValueError."""
    counts = torch.from_numpy(check_real_array(name, value, sequences=True))
    if counts.shape != hits.shape[1:]:
        raise ValueError(
            f"{name} must be [N={hits.shape[1]}] (shared by every seed), got {list(counts.shape)}"
        )
    if bool((counts < 1).any()):
        raise ValueError(
            f"{name} must be >= 1 for every sequence (a sequence with no scored token)"
        )
    if bool((hits < 0).any()) or bool((hits > counts).any()):
        raise ValueError(f"{name_hits} must lie in 0 .. {name} for every sequence")
    return counts


def _seed_counts(name: str, value: object) -> torch.Tensor:
    """``value`` as a float64 ``[S >= 2, N >= 2]`` tensor, or a ValueError naming ``name``."""
    array = torch.from_numpy(check_real_array(name, value, sequences=True))
    if array.dim() != 2 or array.shape[0] < 2 or array.shape[1] < 2:
        raise ValueError(f"{name} must be [S >= 2, N >= 2], got shape {list(array.shape)}")
    return array


def student_t_quantile(probability: float, dof: float) -> float:
    """The ``probability`` quantile of Student's t distribution with ``dof`` degrees of freedom.

    Computed without scipy (not a dependency of the book's package): the density is integrated
    from 0 by Simpson's rule on 4,096 intervals in float64, and the quantile found by bisection;
    past 10⁶ degrees of freedom the normal density stands in. The tests compare it with
    ``scipy.stats.t.ppf`` (agreement to 1e-9 up to 10³ degrees of freedom, 1e-7 at 10⁵).

    Equation:
        f(x) = Γ((ν + 1)/2) / (√(νπ) Γ(ν/2)) · (1 + x²/ν)^(−(ν + 1)/2)
        F(q) = 1/2 + ∫_0^q f(x) dx;  the quantile is the q with F(q) = probability

    Args:
        probability: a float in [0.5, 1) (the upper half; the t distribution is symmetric).
        dof: the degrees of freedom ν, a float > 0 (need not be an integer).

    Returns:
        The quantile q >= 0, a Python float.

    Raises:
        TypeError: an argument is not a real number.
        ValueError: ``probability`` outside [0.5, 1) or ``dof`` <= 0.

    References:
        Student, The probable error of a mean, Biometrika 6(1), 1–25 (1908).
    """
    probability = check_float("probability", probability, minimum=0.5, maximum=1.0)
    if probability >= 1.0:
        raise ValueError(f"probability must be in [0.5, 1), got {probability}")
    dof = check_positive_float("dof", dof)
    normal = dof > 1e6  # lgamma differences lose digits there; t and normal agree to ~1e-6
    log_scale = (
        -0.5 * math.log(2 * math.pi)
        if normal
        else math.lgamma((dof + 1) / 2) - math.lgamma(dof / 2) - 0.5 * math.log(dof * math.pi)
    )

    def cdf(q: float) -> float:
        x = torch.linspace(0.0, q, 4097, dtype=torch.float64)
        if normal:
            f = torch.exp(log_scale - x.square() / 2)
        else:
            f = torch.exp(log_scale - (dof + 1) / 2 * torch.log1p(x.square() / dof))
        weights = torch.ones(4097, dtype=torch.float64)
        weights[1:-1:2], weights[2:-1:2] = 4.0, 2.0
        return 0.5 + float((f * weights).sum()) * q / 4096 / 3

    high = 1.0
    while cdf(high) < probability:
        high *= 2.0
    low = 0.0
    for _ in range(60):
        middle = (low + high) / 2
        low, high = (middle, high) if cdf(middle) < probability else (low, middle)
    return (low + high) / 2
