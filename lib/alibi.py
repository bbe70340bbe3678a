"""ALiBi: attention with linear biases.

Press, Smith & Lewis 2022, "Train Short, Test Long", arXiv:2108.12409.

ALiBi adds no position vectors at all. Each head ``h`` adds a penalty proportional to the distance
between query ``i`` and key ``j`` to the attention score::

    score[h, i, j] = q_i · k_j / sqrt(d_head) − m_h · (i − j)        (j <= i, causal)

with a fixed, head-specific slope ``m_h`` (:func:`alibi_slopes`). Two equivalent ways to build the
bias live here: the paper's relative form (:func:`alibi_bias`) and the key-only form that BLOOM,
Falcon and MPT use (:func:`alibi_bias_bloom`), which differs by ``m_h · i`` on each query row, a
constant that softmax ignores.
"""

from __future__ import annotations

import torch

from lib._checks import check_fits, check_positive_int

__all__ = ["alibi_bias", "alibi_bias_bloom", "alibi_slopes"]


#: Up to this many heads the slopes are computed one by one with Python floats (the values every
#: chapter uses); beyond it, vectorised in torch (same formula; may differ in the last float64 bit).
_SCALAR_SLOPES_UP_TO = 4096


def _slopes_power_of_two(n: int) -> torch.Tensor:
    """Slopes for ``n`` heads, ``n`` a power of two: ``2^(−8k/n)``, k = 1..n (float64, CPU)."""
    if n <= _SCALAR_SLOPES_UP_TO:
        return torch.tensor([2.0 ** (-8.0 * k / n) for k in range(1, n + 1)], dtype=torch.float64)
    return torch.pow(2.0, -8.0 * torch.arange(1, n + 1, dtype=torch.float64) / n)


def alibi_slopes(n_heads: int, *, device: torch.device | str | None = None) -> torch.Tensor:
    """ALiBi's per-head slopes ``m_1 … m_n``, a geometric sequence.

    Press et al. 2022 (arXiv:2108.12409), section 3. For ``n`` a power of two,
    ``m_k = 2^(−8k/n)``, k = 1..n (n = 8: 1/2, 1/4, …, 1/256). Otherwise, with ``c`` the largest
    power of two below ``n``: the ``c`` slopes for ``c`` heads, followed by the 1st, 3rd, 5th, …
    slopes for ``2c`` heads, ``n − c`` of them (the official repository's ``get_slopes``; the same
    values as Hugging Face BLOOM's ``_get_alibi_slopes`` and MPT's ``build_mpt_alibi_tensor``).
    Computed in float64, returned as float32.

    Equation:
        m_k = 2^(−8k/n),  k = 1 … n  (n a power of two; otherwise see above)

    Args:
        n_heads: number of attention heads, an int >= 1.
        device: where to create the tensor.

    Returns:
        ``slopes: [n_heads]`` float32, all in (0, 1), strictly decreasing for power-of-two ``n``.

    Raises:
        TypeError: ``n_heads`` is not an int.
        ValueError: ``n_heads < 1``, or so large that the slopes cannot fit in memory.

    References:
        Press et al., ALiBi (Train Short, Test Long), arXiv:2108.12409.
    """
    n_heads = check_positive_int("n_heads", n_heads)
    return _slopes_float64(n_heads, device).to(torch.float32)


def _slopes_float64(n_heads: int, device: torch.device | str | None) -> torch.Tensor:
    """The slopes of :func:`alibi_slopes` in float64, ``[n_heads]`` (``n_heads`` is checked)."""
    # computed on the CPU first (2 n_heads float64 values at most), so check the CPU too
    check_fits(f"n_heads={n_heads}", (2 * n_heads,), torch.float64, "cpu")
    check_fits(f"n_heads={n_heads}", (n_heads,), torch.float64, device)
    closest = 1 << (n_heads.bit_length() - 1)  # largest power of two <= n_heads
    slopes = _slopes_power_of_two(closest)
    if closest != n_heads:
        # 1st, 3rd, 5th, ... slopes of the 2c-head list: they fall between the c-head ones
        between = _slopes_power_of_two(2 * closest)[0::2][: n_heads - closest]
        slopes = torch.cat([slopes, between])
    return slopes if device is None else slopes.to(device)


#: Elements of float64 work space per block when a bias is built (a few MB beside the result).
_BLOCK_ELEMENTS = 2**18


def _row_blocks(n_rows: int, row_size: int):
    """Slices of at most ``_BLOCK_ELEMENTS // row_size`` rows (at least one) covering ``n_rows``."""
    step = max(1, _BLOCK_ELEMENTS // max(row_size, 1))
    for start in range(0, n_rows, step):
        yield slice(start, min(start + step, n_rows))


def alibi_bias(
    n_heads: int,
    seq_len: int,
    *,
    causal: bool = True,
    device: torch.device | str | None = None,
) -> torch.Tensor:
    """ALiBi's additive attention bias in the paper's relative form.

    ``bias[h, i, j] = −m_h · (i − j)`` for ``j <= i``; for ``j > i`` it is ``−inf`` when
    ``causal`` (the decoder setting of Press et al. 2022, arXiv:2108.12409) and the symmetric
    ``−m_h · (j − i)`` otherwise (a common bidirectional extension). Add it to the scores
    ``q kᵀ / sqrt(d_head)`` before softmax, e.g.
    ``lib.attention.attention(q, k, v, bias=alibi_bias(H, T))``. Computed in float64, returned as
    float32.

    Equation:
        bias[h, i, j] = −m_h · |i − j|  (−inf for j > i when causal)

    Args:
        n_heads: number of heads, an int >= 1.
        seq_len: ``T``, the number of queries and keys, an int >= 1.
        causal: whether keys after the query are masked with ``−inf``.
        device: where to create the tensor.

    Returns:
        ``bias: [n_heads, T, T]`` float32 (broadcasts against scores ``[B, n_heads, T, T]``).

    Raises:
        TypeError: ``n_heads``/``seq_len`` not an int, ``causal`` not a bool.
        ValueError: ``n_heads < 1`` or ``seq_len < 1``, or a bias too large for the device.

    References:
        Press et al., ALiBi (Train Short, Test Long), arXiv:2108.12409.
    """
    n_heads = check_positive_int("n_heads", n_heads)
    seq_len = check_positive_int("seq_len", seq_len)
    if not isinstance(causal, bool):
        raise TypeError(f"causal must be a bool, got {type(causal).__name__} {causal!r}")
    check_fits(
        f"n_heads={n_heads}, seq_len={seq_len}", (n_heads, seq_len, seq_len), torch.float32, device
    )
    slopes = _slopes_float64(n_heads, device)  # [H]
    pos = torch.arange(seq_len, dtype=torch.float64, device=device)  # [T]
    bias = torch.empty(n_heads, seq_len, seq_len, dtype=torch.float32, device=device)
    # Row blocks of float64 work space, so the peak stays close to the float32 result itself.
    for rows in _row_blocks(seq_len, seq_len):
        distance = pos[rows, None] - pos[None, :]  # [R, T], entry (i, j) = i − j
        penalty = distance.abs()  # [R, T] = |i − j|
        future = distance < 0  # [R, T], True where j > i
        for heads in _row_blocks(n_heads, penalty.numel()):
            block = -slopes[heads, None, None] * penalty  # [h, R, T] float64
            if causal:
                block.masked_fill_(future, float("-inf"))
            bias[heads, rows] = block  # rounded once to float32
    return bias


def alibi_bias_bloom(
    n_heads: int, seq_len: int, *, device: torch.device | str | None = None
) -> torch.Tensor:
    """ALiBi in the key-only form of BLOOM / Falcon: ``bias[h, 0, j] = m_h · j``.

    Hugging Face's ``build_alibi_tensor`` (transformers/models/bloom/modeling_bloom.py) builds
    ``slopes[h] · (cumsum(attention_mask) − 1)``, i.e. ``m_h · j`` when nothing is padded, with a
    query axis of size 1. Why this is ALiBi (Press et al. 2022, arXiv:2108.12409): for query ``i``,

        m_h · j = −m_h · (i − j) + m_h · i,

    and ``m_h · i`` is the same for every key ``j`` of row ``i``. Softmax over ``j`` is unchanged
    by adding a constant to a row, so after the causal mask (keys ``j <= i``) the attention weights
    equal those of :func:`alibi_bias` with ``causal=True``. (Without a causal mask the two differ:
    the relative form penalises ``|i − j|``, the key-only form favours later keys.)

    Equation:
        bias[h, 0, j] = m_h · j = −m_h · (i − j) + m_h · i  (the last term is constant in j)

    Args:
        n_heads: number of heads, an int >= 1.
        seq_len: ``T``, the number of keys, an int >= 1.
        device: where to create the tensor.

    Returns:
        ``bias: [n_heads, 1, T]`` float32 (broadcasts over the queries of ``[B, n_heads, T, T]``).

    Raises:
        TypeError: ``n_heads``/``seq_len`` not an int.
        ValueError: ``n_heads < 1`` or ``seq_len < 1``, or a bias too large for the device.

    References:
        Press et al., ALiBi (Train Short, Test Long), arXiv:2108.12409.
    """
    n_heads = check_positive_int("n_heads", n_heads)
    seq_len = check_positive_int("seq_len", seq_len)
    check_fits(
        f"n_heads={n_heads}, seq_len={seq_len}", (n_heads, 1, seq_len), torch.float32, device
    )
    slopes = _slopes_float64(n_heads, device)  # [H]
    keys = torch.arange(seq_len, dtype=torch.float64, device=device)  # [T]
    bias = torch.empty(n_heads, 1, seq_len, dtype=torch.float32, device=device)
    for heads in _row_blocks(n_heads, seq_len):
        bias[heads, 0] = slopes[heads, None] * keys[None, :]  # [h, T] float64 -> float32
    return bias  # [H, 1, T]
