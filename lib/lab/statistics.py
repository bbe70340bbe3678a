"""Summaries over seeds (and, with the bootstrap, over evaluation sequences)."""

from __future__ import annotations

from typing import NamedTuple

import torch

from lib._checks import (
    check_real_array,
)


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
