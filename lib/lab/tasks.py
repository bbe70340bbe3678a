"""The lab's task: induction sequences, the evaluation conditions and where an answer can come from."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch

from lib._checks import (
    check_int,
    check_integer_tensor,
    check_positive_int,
)

#: Target id that the loss and the accuracy skip (PyTorch's and Hugging Face's convention).
IGNORE_INDEX = -100


@dataclass(frozen=True)
class InductionBatch:
    """One batch of the induction task.

    Attributes:
        input_ids: ``[B, T]`` long, ``input_ids[b, t] = block_b[t mod periods[b]]``.
        targets: ``[B, T]`` long, the next token where it is predictable (``t >= periods[b]`` and
            ``t < T − 1``), :data:`IGNORE_INDEX` elsewhere.
        periods: ``[B]`` long, the block length ``n`` of each sequence.
    """

    input_ids: torch.Tensor
    targets: torch.Tensor
    periods: torch.Tensor


def induction_batch(
    batch_size: int,
    seq_len: int,
    vocab_size: int,
    *,
    generator: torch.Generator,
    period_range: tuple[int, int] | None = None,
) -> InductionBatch:
    """Sequences that repeat a random block of distinct tokens: ``x_t = a_{t mod n}``.

    For each sequence, a period ``n`` is drawn uniformly from ``ceil(T/4) .. floor(T/2)`` and a block
    ``a_0 … a_{n−1}`` of distinct token ids from ``0 .. vocab_size−1``; the sequence repeats the
    block until it has ``T`` tokens (2 to 4 copies). The target at position ``t`` is
    ``x_{t+1}`` for ``n <= t < T−1`` (predictable by induction: the token after the previous
    occurrence of ``x_t``, which is at ``t − n``) and :data:`IGNORE_INDEX` for the first block, whose
    next tokens are random. This is the "repeated random tokens" probe of induction heads (Olsson
    et al. 2022) with a random period, so that no fixed offset solves it.

    Equation:
        input_ids[b, t] = a_b[t mod n_b];  targets[b, t] = x_{t+1} if n_b <= t < T − 1, else −100

    Args:
        batch_size: ``B``, an int >= 1.
        seq_len: ``T``, an int >= 4 (so that a period ``n >= 1`` with ``2n <= T`` exists).
        vocab_size: number of token ids, an int >= ``T // 2`` (a block needs ``n`` distinct ids).
        generator: the ``torch.Generator`` every random draw uses (seed it for reproducibility).
        period_range: ``(n_min, n_max)``, the inclusive range of the period ``n``, with
            ``1 <= n_min <= n_max`` and ``2 · n_max <= T`` (every sequence shows at least one
            repeat); default ``(ceil(T/4), floor(T/2))``. Fixing it while ``T`` grows keeps the
            look-back distances of training ("seen distances").

    Returns:
        An :class:`InductionBatch` with ``input_ids``/``targets`` ``[B, T]`` and ``periods`` ``[B]``.

    Raises:
        TypeError: an argument has the wrong type (e.g. ``generator`` is not a torch.Generator).
        ValueError: ``batch_size < 1``, ``seq_len < 4``, ``vocab_size`` smaller than the longest
            period, or a ``period_range`` outside ``1 <= n_min <= n_max <= T / 2``.

    Shapes:
        input_ids, targets: [B, T]; periods: [B]

    References:
        Olsson et al., In-context Learning and Induction Heads, arXiv:2209.11895.
    """
    batch_size = check_positive_int("batch_size", batch_size)
    seq_len = check_int("seq_len", seq_len, minimum=4)
    vocab_size = check_positive_int("vocab_size", vocab_size)
    if period_range is None:
        low, high = -(-seq_len // 4), seq_len // 2  # ceil(T/4), floor(T/2)
    else:
        low, high = _check_period_range(period_range, seq_len)
    if vocab_size < high:
        raise ValueError(
            f"vocab_size must be >= the longest period {high} (a block holds up to that many "
            f"distinct tokens), got {vocab_size}"
        )
    if not isinstance(generator, torch.Generator):
        raise TypeError(f"generator must be a torch.Generator, got {type(generator).__name__}")
    periods = torch.randint(low, high + 1, (batch_size,), generator=generator)  # [B]
    # A random permutation of the vocabulary per row; its first n entries are the block.
    blocks = torch.rand(batch_size, vocab_size, generator=generator).argsort(dim=-1)  # [B, V]
    t = torch.arange(seq_len)  # [T]
    input_ids = blocks.gather(1, t[None, :] % periods[:, None])  # [B, T]
    next_ids = torch.roll(input_ids, shifts=-1, dims=1)  # [B, T], next_ids[:, t] = x_{t+1}
    predictable = (t[None, :] >= periods[:, None]) & (t[None, :] < seq_len - 1)  # [B, T]
    targets = torch.where(predictable, next_ids, torch.full_like(next_ids, IGNORE_INDEX))
    return InductionBatch(input_ids=input_ids, targets=targets, periods=periods)


def _check_period_range(period_range: object, seq_len: int) -> tuple[int, int]:
    if not isinstance(period_range, tuple) or len(period_range) != 2:
        raise TypeError(f"period_range must be a tuple (n_min, n_max), got {period_range!r}")
    low = check_positive_int("period_range[0]", period_range[0])
    high = check_positive_int("period_range[1]", period_range[1])
    if low > high or 2 * high > seq_len:
        raise ValueError(
            f"period_range must satisfy 1 <= n_min <= n_max <= seq_len / 2 = {seq_len / 2:g}, "
            f"got {period_range}"
        )
    return low, high


def earliest_answer_key(periods: torch.Tensor, seq_len: int) -> torch.Tensor:
    """Position of the earliest key an induction head can copy the answer from: ``(t mod n) + 1``.

    At query position ``t`` of a sequence with period ``n`` the answer is ``x_{t+1}``; a key ``j``
    holds it for an induction head when its previous token matches the query, ``x_{j−1} = x_t``,
    i.e. ``j ≡ t + 1 (mod n)`` with ``1 <= j <= t``. The earliest such key is ``(t mod n) + 1``
    (Olsson et al. 2022 describe the mechanism).

    Equation:
        key[b, t] = (t mod periods[b]) + 1

    Args:
        periods: the period ``n`` of each sequence, an integer tensor with values >= 1.
        seq_len: ``T``, an int >= 1.

    Returns:
        The earliest answer key of every query position, a long tensor.

    Raises:
        TypeError: ``periods`` is not an integer tensor.
        ValueError: ``periods`` is not 1-D or holds a value < 1; ``seq_len < 1``.

    Shapes:
        periods: [B] -> [B, T]

    References:
        Olsson et al., In-context Learning and Induction Heads, arXiv:2209.11895.
    """
    periods = check_integer_tensor("periods", periods)
    if periods.dim() != 1 or (periods.numel() and int(periods.min()) < 1):
        raise ValueError(f"periods must be 1-D with values >= 1, got shape {list(periods.shape)}")
    seq_len = check_positive_int("seq_len", seq_len)
    t = torch.arange(seq_len, device=periods.device)  # [T]
    return t[None, :] % periods[:, None] + 1  # [B, T]


#: The two evaluation conditions: the period range at evaluation length ``T`` for training length
#: ``L``. ``"seen"`` keeps training's periods (new positions, seen distances); ``"unseen"`` scales
#: them with ``T`` (new positions and new distances). At ``T = L`` both are training's range.
CONDITIONS: dict[str, Callable[[int, int], tuple[int, int]]] = {
    "seen": lambda seq_len, train_len: (-(-train_len // 4), train_len // 2),
    "unseen": lambda seq_len, train_len: (-(-seq_len // 4), seq_len // 2),
}
