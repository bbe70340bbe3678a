"""Exercise checkers for chapter 11, relative position biases and ALiBi (Press et al. 2022).

- ``alibi-slopes-24``: the slopes of a 24-head model (not a power of two).
- ``alibi-which-slopes``: diagnose which slope rule a port of a 12-head checkpoint used, from its
  bias tensor.
- ``alibi-bloom-to-relative``: turn BLOOM's key-only bias into the paper's causal relative bias.
- ``t5-buckets-by-hand``: T5's relative-position buckets (Raffel et al. 2020)
  without calling ``t5_relative_position_bucket``.

References:
    Press et al., Train Short, Test Long (ALiBi), arXiv:2108.12409.
    Raffel et al., Exploring the Limits of Transfer Learning (T5), arXiv:1910.10683.
"""

from __future__ import annotations

import torch

from lib.alibi import alibi_bias, alibi_bias_bloom, alibi_slopes
from lib.exercises import ExerciseFailed, exercise, require, require_tensor
from lib.relative import t5_relative_position_bucket

CHAPTER = "11_alibi"


def _as_float64_tensor(answer: object, what: str) -> torch.Tensor:
    """The answer as a float64 tensor, or an AssertionError that says what was expected."""
    try:
        tensor = torch.as_tensor(answer, dtype=torch.float64)
    except (TypeError, ValueError, RuntimeError):
        raise ExerciseFailed(
            f"expected {what} (a list of numbers or a tensor), got {type(answer).__name__}"
        ) from None
    return tensor


# ---------------------------------------------------------------- 1. slopes for 24 heads

N_HEADS_24 = 24


def _naive_slopes(n: int) -> torch.Tensor:
    return torch.tensor([2.0 ** (-8.0 * k / n) for k in range(1, n + 1)], dtype=torch.float64)


def _wrong_slopes_24() -> list:
    right = alibi_slopes(N_HEADS_24).double()
    return [
        _naive_slopes(N_HEADS_24).tolist(),  # the power-of-two formula applied to 24
        sorted(right.tolist(), reverse=True),  # right values, wrong head order
        alibi_slopes(16).tolist(),  # wrong count
        "slopes",
    ]


@exercise(
    "alibi-slopes-24",
    chapter=CHAPTER,
    wrong_answers=_wrong_slopes_24,
    right_answer=lambda: alibi_slopes(N_HEADS_24).tolist(),
)
def check_slopes_24(answer: object) -> None:
    """``answer``: the 24 slopes, head 1 first, as a list or a tensor ``[24]``.

    Args:
        answer: 24 slopes, a list of numbers or a tensor ``[24]``.

    Raises:
        ExerciseFailed: the answer is wrong (the message says what to look at).
    """
    slopes = _as_float64_tensor(answer, "24 slopes").flatten()
    require(
        slopes.numel() == N_HEADS_24,
        f"expected one slope per head, 24 numbers, got {slopes.numel()}",
    )
    right = alibi_slopes(N_HEADS_24).double()
    if torch.allclose(slopes, right, rtol=1e-5, atol=0):
        return
    require(
        not torch.allclose(slopes, _naive_slopes(N_HEADS_24), rtol=1e-5, atol=0),
        "these are 2^(-8k/24), the power-of-two formula applied to 24 heads. For a head count that "
        "is not a power of two, take the 16 slopes of a 16-head model first, then the 1st, 3rd, "
        "5th, ... slopes of a 32-head model, 8 of them.",
    )
    require(
        not torch.allclose(slopes.sort().values, right.sort().values, rtol=1e-5, atol=0),
        "the right 24 values, in the wrong order: the 16 slopes of the 16-head model come first "
        "(heads 1-16), then the 8 added ones (heads 17-24).",
    )
    worst = int((slopes - right).abs().argmax())
    raise ExerciseFailed(
        f"slope of head {worst + 1} is {slopes[worst].item():.6g}, expected "
        f"{right[worst].item():.6g}; check the rule for head counts that are not a power of two."
    )


# ---------------------------------------------------------------- 2. which slopes did a port use?

MYSTERY_HEADS = 12
MYSTERY_LEN = 8
#: the diagnoses a reader may give
MYSTERY_CHOICES = ("released-code", "paper-formula", "sorted", "key-only")


def mystery_bias() -> torch.Tensor:
    """The causal bias a port of a 12-head ALiBi checkpoint adds to its scores.

    Returns:
        The bias, float32, shape [12, 8, 8], −inf above the diagonal.
    """
    slopes = torch.tensor([2.0 ** (-8 * k / MYSTERY_HEADS) for k in range(1, MYSTERY_HEADS + 1)])
    pos = torch.arange(MYSTERY_LEN)
    dist = (pos[:, None] - pos[None, :]).to(torch.float32)  # [T, T] i − j
    bias = -slopes[:, None, None] * dist  # [H, T, T]
    return bias.masked_fill(dist < 0, float("-inf"))


@exercise(
    "alibi-which-slopes",
    chapter=CHAPTER,
    wrong_answers=lambda: ["released-code", "sorted", "key-only", "paper", 12],
    right_answer=lambda: "paper-formula",
)
def check_which_slopes(answer: object) -> None:
    """``answer``: the diagnosis of :func:`mystery_bias`, one of :data:`MYSTERY_CHOICES`.

    Args:
        answer: a str.

    Raises:
        ExerciseFailed: the answer is wrong (the message says what to look at).

    References:
        Press et al., ALiBi, arXiv:2108.12409 (§3, the slopes); the authors' ``get_slopes``.
    """
    if not isinstance(answer, str):
        raise ExerciseFailed(
            f"expected one of {MYSTERY_CHOICES} (a str), got {type(answer).__name__}"
        )
    require(answer in MYSTERY_CHOICES, f"{answer!r} is not one of {MYSTERY_CHOICES}")
    require(
        answer != "key-only",
        "the diagonal of every head is 0 and row i starts at −m·i: that is the relative form "
        "−m(i − j), not BLOOM's m·j",
    )
    require(
        answer != "released-code",
        "read the slopes off the bias (−bias[:, 1, 0]) and compare them with alibi_slopes(12): "
        "head 1 differs already",
    )
    require(
        answer != "sorted",
        "the slopes are in decreasing order, but they are not the released code's values sorted: "
        "compare the sets, not only the order",
    )


# ---------------------------------------------------------------- 3. key-only -> relative

BLOOM_HEADS = 4
BLOOM_LEN = 6


def _wrong_relative() -> list:
    bloom = alibi_bias_bloom(BLOOM_HEADS, BLOOM_LEN)  # [H, 1, T]
    full = bloom.expand(BLOOM_HEADS, BLOOM_LEN, BLOOM_LEN)  # [H, T, T]
    future = torch.ones(BLOOM_LEN, BLOOM_LEN, dtype=torch.bool).triu(1)
    return [
        full.clone(),  # neither shifted nor masked
        full.masked_fill(future, float("-inf")),  # masked but not shifted
        alibi_bias(BLOOM_HEADS, BLOOM_LEN, causal=False),  # shifted but not masked
        (-alibi_bias(BLOOM_HEADS, BLOOM_LEN, causal=False)).masked_fill(future, float("-inf")),
        bloom.clone(),  # wrong shape
    ]


@exercise(
    "alibi-bloom-to-relative",
    chapter=CHAPTER,
    wrong_answers=_wrong_relative,
    right_answer=lambda: alibi_bias(BLOOM_HEADS, BLOOM_LEN),
)
def check_bloom_to_relative(answer: object) -> None:
    """``answer``: ``[4, 6, 6]``, the causal bias ``−m_h (i − j)`` (``−inf`` for ``j > i``).

    Args:
        answer: the bias, a floating tensor ``[4, 6, 6]``.

    Raises:
        ExerciseFailed: the answer is wrong (the message says what to look at).
    """
    answer = require_tensor(
        answer,
        f"expected a floating tensor [4, 6, 6], got {type(answer).__name__}",
        kind="floating",
    )
    shape = (BLOOM_HEADS, BLOOM_LEN, BLOOM_LEN)
    require(
        tuple(answer.shape) == shape,
        f"expected shape [4, 6, 6] (one [T, T] matrix per head), got {list(answer.shape)}; "
        "the key-only bias [4, 1, 6] broadcasts over the query axis, expand it",
    )
    right = alibi_bias(BLOOM_HEADS, BLOOM_LEN).double()
    got = answer.detach().double()
    future = torch.isinf(right)  # [T, T] per head, True above the diagonal
    require(
        torch.isneginf(got[future]).all(),
        "keys after the query (j > i) must be -inf: the key-only form is only ALiBi under the "
        "causal mask",
    )
    require(
        torch.isfinite(got[~future]).all(),
        "keys j <= i must have finite bias",
    )
    lower_got, lower_right = got[~future], right[~future]
    bloom = alibi_bias_bloom(BLOOM_HEADS, BLOOM_LEN).double().expand(shape)[~future]
    require(
        not torch.allclose(lower_got, bloom, atol=1e-6),
        "this is still the key-only bias m·j: subtract each row's constant m·i to get -m·(i - j)",
    )
    require(
        not torch.allclose(lower_got, -lower_right, atol=1e-6),
        "the sign is flipped: ALiBi penalises distance, so the bias is -m·(i - j) <= 0",
    )
    require(
        torch.allclose(lower_got, lower_right, atol=1e-6),
        "the entries j <= i should be -m_h·(i - j), with slopes from alibi_slopes(4)",
    )


# ---------------------------------------------------------------- 4. T5 buckets by hand

BUCKET_NUM = 16
BUCKET_MAX_DISTANCE = 40
BUCKET_OFFSETS = (-100, 100)


def _bucket_offsets() -> torch.Tensor:
    return torch.arange(BUCKET_OFFSETS[0], BUCKET_OFFSETS[1] + 1)


def _buckets_right() -> torch.Tensor:
    return t5_relative_position_bucket(
        _bucket_offsets(),
        bidirectional=True,
        num_buckets=BUCKET_NUM,
        max_distance=BUCKET_MAX_DISTANCE,
    )


def _buckets_wrong() -> list:
    rel = _bucket_offsets()
    return [
        rel.clamp(-7, 7) + 7,  # Shaw-style clipping, no log buckets
        t5_relative_position_bucket(  # decoder buckets
            rel, bidirectional=False, num_buckets=BUCKET_NUM, max_distance=BUCKET_MAX_DISTANCE
        ),
        t5_relative_position_bucket(-rel, num_buckets=BUCKET_NUM, max_distance=BUCKET_MAX_DISTANCE),
        _buckets_right()[:100].clone(),
        _buckets_right().float(),
    ]


@exercise(
    "t5-buckets-by-hand",
    chapter=CHAPTER,
    wrong_answers=_buckets_wrong,
    right_answer=_buckets_right,
)
def check_t5_buckets(answer: object) -> None:
    """``answer``: int tensor ``[201]``, T5 encoder buckets of offsets −100..100 (16 buckets, 40).

    Args:
        answer: the buckets, an integer tensor ``[201]``.

    Raises:
        ExerciseFailed: the answer is wrong (the message says what to look at).
    """
    answer = require_tensor(
        answer,
        f"expected an integer tensor of buckets, got {type(answer).__name__} "
        f"{getattr(answer, 'dtype', '')}",
        kind="integer",
    )
    right = _buckets_right()
    require(
        tuple(answer.shape) == tuple(right.shape),
        f"expected one bucket per offset, shape {list(right.shape)}, got {list(answer.shape)}",
    )
    got = answer.detach().to(torch.int64).cpu()
    if torch.equal(got, right):
        return
    rel = _bucket_offsets()
    decoder = t5_relative_position_bucket(
        rel, bidirectional=False, num_buckets=BUCKET_NUM, max_distance=BUCKET_MAX_DISTANCE
    )
    require(
        not torch.equal(got, decoder),
        "these are decoder buckets; an encoder gives half the buckets to each direction and "
        "adds num_buckets/2 for keys after the query (j − i > 0)",
    )
    flipped = t5_relative_position_bucket(
        -rel, num_buckets=BUCKET_NUM, max_distance=BUCKET_MAX_DISTANCE
    )
    require(
        not torch.equal(got, flipped),
        "the two directions are swapped: the upper half of the buckets is for j − i > 0",
    )
    near = rel.abs() < BUCKET_NUM // 4
    require(
        torch.equal(got[near], right[near]),
        "small offsets (|j − i| < num_buckets/4 = 4) get their own exact bucket each",
    )
    raise ExerciseFailed(
        "the exact buckets are right but the log-spaced ones are not: bucket = n/2 + "
        "⌊ln(r / (n/2)) / ln(max_distance / (n/2)) · n/2⌋, capped at n − 1, with n = 8"
    )
