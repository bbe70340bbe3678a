"""Sinusoidal positional encoding.

Vaswani et al. 2017, "Attention Is All You Need", arXiv:1706.03762, section 3.5.

Every position ``p`` gets a fixed vector made of ``d_model/2`` sine/cosine pairs whose angular
frequencies ``w_i = base^(-2i/d_model)`` fall geometrically from 1 to almost ``1/base``:

    pe[p, 2i]     = sin(p · w_i)
    pe[p, 2i + 1] = cos(p · w_i)          for i = 0 .. d_model/2 − 1.

Two layouts are in use and both live in :data:`SINUSOIDAL_LAYOUTS`:

- ``"interleaved"`` (:func:`sinusoidal_pe`): the paper's layout above, pairs at (2i, 2i+1);
- ``"concat"`` (:func:`sinusoidal_pe_concat`): tensor2tensor / fairseq / Hugging Face M2M100, all
  sines then all cosines, with a slightly different exponent (``i / (d_model/2 − 1)``).

Because each pair is a point on the unit circle turning at a fixed speed, moving ``k`` positions
is a fixed rotation that does not depend on ``p`` (:func:`relative_rotation`).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch

from lib._checks import check_base, check_even, check_fits, check_int, check_positive_int

__all__ = [
    "SINUSOIDAL_LAYOUTS",
    "relative_rotation",
    "sinusoidal_frequencies",
    "sinusoidal_pe",
    "sinusoidal_pe_concat",
]


def sinusoidal_frequencies(
    d_model: int, base: float = 10000.0, *, device: torch.device | str | None = None
) -> torch.Tensor:
    """Angular frequencies of the paper's sinusoidal encoding, ``w_i = base^(-2i/d_model)``.

    Vaswani et al. 2017 (arXiv:1706.03762), section 3.5. Pair ``i`` has wavelength ``2π / w_i``,
    from ``2π`` (i = 0) up to almost ``2π · base``.

    Equation:
        w_i = base^(−2i/d_model),  i = 0 … d_model/2 − 1;  wavelength 2π / w_i

    Args:
        d_model: embedding width, a positive even integer.
        base: the frequency base (10000 in the paper), a real number > 1.
        device: where to create the tensor.

    Returns:
        ``[d_model // 2]`` float64 tensor (float64 so that callers can build angles accurately).

    Raises:
        TypeError: ``d_model`` is not an int or ``base`` is not a real number.
        ValueError: ``d_model`` is not positive and even, or ``base`` is not > 1.

    References:
        Vaswani et al., Attention Is All You Need, arXiv:1706.03762.
    """
    d_model = check_even("d_model", d_model)
    base = check_base("base", base)
    two_i = torch.arange(0, d_model, 2, dtype=torch.float64, device=device)  # [d_model/2]
    return base ** (-two_i / d_model)


def sinusoidal_pe(
    max_len: int, d_model: int, base: float = 10000.0, *, device: torch.device | str | None = None
) -> torch.Tensor:
    """The original Transformer's sinusoidal positional encoding, interleaved layout.

    ``pe[p, 2i] = sin(p / base^(2i/d_model))`` and ``pe[p, 2i+1] = cos(p / base^(2i/d_model))``
    (Vaswani et al. 2017, "Attention Is All You Need", arXiv:1706.03762, section 3.5). Angles are
    computed in float64 and the table is returned as float32, so positions in the hundreds of
    thousands are still accurate to float32 rounding.

    Equation:
        pe[p, 2i] = sin(p · w_i),  pe[p, 2i+1] = cos(p · w_i),  w_i = base^(−2i/d_model)

    Args:
        max_len: number of positions (rows), ``p = 0 .. max_len − 1``; an int >= 1.
        d_model: embedding width, a positive even integer.
        base: the frequency base (10000 in the paper), a real number > 1.
        device: where to create the table.

    Returns:
        ``pe: [max_len, d_model]`` float32.

    Raises:
        TypeError: an argument has the wrong type (e.g. a float ``max_len``).
        ValueError: ``max_len < 1``, ``d_model`` odd or < 2, ``base <= 1``, or a table too
            large for the device.

    References:
        Vaswani et al., Attention Is All You Need, arXiv:1706.03762.
    """
    max_len = check_positive_int("max_len", max_len)
    inv_freq = sinusoidal_frequencies(d_model, base, device=device)  # [d_model/2], float64
    check_fits(f"max_len={max_len}, d_model={d_model}", (max_len, d_model), torch.float32, device)
    pe = torch.empty(max_len, d_model, dtype=torch.float32, device=device)
    for rows in _row_blocks(max_len, d_model // 2):
        positions = torch.arange(rows.start, rows.stop, dtype=torch.float64, device=device)  # [R]
        angles = positions[:, None] * inv_freq[None, :]  # [R, d_model/2] float64
        pe[rows, 0::2] = torch.sin(angles)  # even dims: sin, rounded once to float32
        pe[rows, 1::2] = torch.cos(angles)  # odd dims: cos
    return pe


#: Float64 angles per block when a table is built: the work space beside the float32 result stays
#: a few MB (a table of at most this many pairs is computed in one block).
_BLOCK_PAIRS = 2**18


def _row_blocks(n_rows: int, pairs_per_row: int):
    """Slices of rows covering ``0 .. n_rows``, each holding at most ``_BLOCK_PAIRS`` pairs (at
    least 64 rows; a multiple of 64 rows, so every block but the last is whole SIMD vectors)."""
    step = max(64, _BLOCK_PAIRS // max(pairs_per_row, 1) // 64 * 64)
    for start in range(0, n_rows, step):
        yield slice(start, min(start + step, n_rows))


def sinusoidal_pe_concat(
    max_len: int, d_model: int, base: float = 10000.0, *, device: torch.device | str | None = None
) -> torch.Tensor:
    """Sinusoidal encoding in the tensor2tensor / fairseq layout: ``[sin | cos]`` halves.

    With ``h = d_model / 2`` and ``w_i = exp(−ln(base) · i / (h − 1)) = base^(−i/(h−1))``,
    ``i = 0 .. h−1``::

        pe[p, i]     = sin(p · w_i)
        pe[p, h + i] = cos(p · w_i)

    This is tensor2tensor's ``get_timing_signal_1d`` and fairseq's
    ``SinusoidalPositionalEmbedding.get_embedding`` (``emb = math.log(10000) / (half_dim - 1)``),
    also used by Hugging Face's M2M100/FSMT/Kosmos-2. Besides the layout, it differs from the paper
    (Vaswani et al. 2017, arXiv:1706.03762) in the exponent: the slowest frequency is exactly
    ``1/base`` (the paper's is ``base^(−(d−2)/d)``). fairseq also offsets positions by
    ``padding_idx + 1`` and zeroes the padding row, and zero-pads an odd ``d_model``; neither is
    done here (build the table and index it with shifted positions instead).

    Equation:
        pe[p, i] = sin(p · w_i),  pe[p, h + i] = cos(p · w_i),  w_i = base^(−i/(h−1)),  h = d_model/2

    Args:
        max_len: number of positions, an int >= 1.
        d_model: embedding width, an even integer >= 4 (``h − 1`` must be > 0).
        base: the frequency base, a real number > 1.
        device: where to create the table.

    Returns:
        ``pe: [max_len, d_model]`` float32 (computed in float64).

    Raises:
        TypeError: an argument has the wrong type.
        ValueError: ``max_len < 1``, ``d_model`` odd or < 4, ``base <= 1``, or a table too
            large for the device.

    References:
        Vaswani et al., Attention Is All You Need, arXiv:1706.03762.
    """
    max_len = check_positive_int("max_len", max_len)
    d_model = check_even("d_model", d_model)
    if d_model < 4:
        raise ValueError(
            f"d_model must be >= 4 for the concat layout (its exponent divides by d_model/2 - 1), "
            f"got {d_model}"
        )
    base = check_base("base", base)
    check_fits(f"max_len={max_len}, d_model={d_model}", (max_len, d_model), torch.float32, device)
    half_dim = d_model // 2
    i = torch.arange(half_dim, dtype=torch.float64, device=device)  # [h]
    inv_timescales = torch.exp(-math.log(base) * i / (half_dim - 1))  # [h]
    pe = torch.empty(max_len, d_model, dtype=torch.float32, device=device)
    for rows in _row_blocks(max_len, half_dim):
        positions = torch.arange(rows.start, rows.stop, dtype=torch.float64, device=device)  # [R]
        angles = positions[:, None] * inv_timescales[None, :]  # [R, h] float64
        pe[rows, :half_dim] = torch.sin(angles)  # [sin | cos], rounded once to float32
        pe[rows, half_dim:] = torch.cos(angles)
    return pe


#: Sinusoidal layouts by name; each is ``f(max_len, d_model, base=10000.0) -> [max_len, d_model]``.
SINUSOIDAL_LAYOUTS: dict[str, Callable[..., torch.Tensor]] = {
    "interleaved": sinusoidal_pe,
    "concat": sinusoidal_pe_concat,
}


def relative_rotation(
    k: int, d_model: int, base: float = 10000.0, *, device: torch.device | str | None = None
) -> torch.Tensor:
    """The fixed matrix ``M_k`` with ``PE(p + k) = M_k @ PE(p)`` for every position ``p``.

    For the interleaved layout of :func:`sinusoidal_pe` (Vaswani et al. 2017, arXiv:1706.03762),
    pair ``i`` holds ``(sin(p·w_i), cos(p·w_i))``. The angle-addition formulas give::

        sin((p+k)w) =  cos(kw)·sin(pw) + sin(kw)·cos(pw)
        cos((p+k)w) = −sin(kw)·sin(pw) + cos(kw)·cos(pw)

    so ``M_k`` is block diagonal with 2×2 blocks
    ``[[cos(k w_i), sin(k w_i)], [−sin(k w_i), cos(k w_i)]]``.
    Note the sign: because the pair is ordered (sin, cos) rather than (cos, sin), the block is a
    rotation by ``−k·w_i`` in the (dim 2i, dim 2i+1) plane. ``M_k`` depends on ``k`` only, is
    orthogonal, and ``M_{−k} = M_kᵀ``.

    Equation:
        PE(p + k) = M_k PE(p),  M_k = blockdiag_i [[cos(k w_i), sin(k w_i)], [−sin(k w_i), cos(k w_i)]]

    Args:
        k: the offset, any int (negative moves backwards).
        d_model: embedding width, a positive even integer.
        base: the frequency base, a real number > 1.
        device: where to create the matrix.

    Returns:
        ``M_k: [d_model, d_model]`` float32 (computed in float64).

    Raises:
        TypeError: ``k`` or ``d_model`` is not an int, ``base`` not a real number.
        ValueError: ``d_model`` not positive and even, ``base <= 1``.

    References:
        Vaswani et al., Attention Is All You Need, arXiv:1706.03762.
    """
    k = check_int("k", k)
    inv_freq = sinusoidal_frequencies(d_model, base, device=device)  # [d_model/2], float64
    angle = k * inv_freq  # [d_model/2]
    cos, sin = torch.cos(angle), torch.sin(angle)
    m = torch.zeros(d_model, d_model, dtype=torch.float64, device=device)
    even = torch.arange(0, d_model, 2, device=device)  # rows/cols of the sin entries
    odd = even + 1  # rows/cols of the cos entries
    m[even, even] = cos
    m[even, odd] = sin
    m[odd, even] = -sin
    m[odd, odd] = cos
    return m.to(torch.float32)
