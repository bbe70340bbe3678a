"""Partial rotary and proportional RoPE: rotating only some pairs of each head.

GPT-NeoX rotated a quarter of each head (``rotary_pct`` 0.25), Phi a fraction set by
``partial_rotary_factor``; transformers 5 keeps that name for all of them. Two ways exist:

- **partial** (transformers' ``"default"`` rope type with ``partial_rotary_factor`` f): the first
  ``r = int(d_head · f)`` dimensions form a small RoPE head of its own, with frequencies
  ``base^(−2i/r)`` spanning the full range from 1 down to ~1/base; the rest pass unrotated.
- **proportional** (Gemma 4's ``"proportional"`` rope type): the frequencies are those of the *full*
  head, ``base^(−2i/d_head)``, and only the fastest ``int(f · d_head // 2)`` pairs keep them; the
  slowest pairs get frequency 0 (they never turn). This is p-RoPE of Barbero et al.

``tests/test_partial_rope.py`` checks both against ``ROPE_INIT_FUNCTIONS`` of the pinned transformers
and :func:`apply_partial_rope` against GPT-NeoX's ``apply_rotary_pos_emb``.
"""

from __future__ import annotations

import torch

from lib._checks import check_base, check_even, check_float, check_floating, check_int
from lib.rope import apply_rope

__all__ = [
    "apply_partial_rope",
    "partial_rotary_inv_freq",
    "proportional_inv_freq",
    "rotary_dim",
]


def _check_fraction(value: object) -> float:
    f = check_float("partial_rotary_factor", value)
    if not 0.0 < f <= 1.0:
        raise ValueError(f"partial_rotary_factor must be in (0, 1], got {f}")
    return f


def rotary_dim(d_head: int, partial_rotary_factor: float) -> int:
    """How many dimensions of a head the partial scheme rotates: ``int(d_head · f)``.

    Equation:
        r = ⌊d_head · f⌋

    Args:
        d_head: head dimension, a positive even int.
        partial_rotary_factor: f, a float in (0, 1].

    Returns:
        r, an int (even for the published factors; the rotation needs it even).

    Raises:
        ValueError: ``d_head`` not a positive even int, f outside (0, 1], or an odd r.
    """
    d = check_even("d_head", d_head)
    f = _check_fraction(partial_rotary_factor)
    r = int(d * f)
    if r < 2 or r % 2:
        raise ValueError(
            f"d_head * partial_rotary_factor must give an even rotary dim >= 2, got {r} "
            f"(d_head={d}, partial_rotary_factor={f})"
        )
    return r


def partial_rotary_inv_freq(
    d_head: int, base: float, partial_rotary_factor: float = 1.0
) -> torch.Tensor:
    """Frequencies of partial rotary: a full RoPE ladder over the first ``r`` dims only.

    Equation:
        r = ⌊d_head · f⌋,  θ_i = base^(−2i / r),  i = 0 … r/2 − 1

    Args:
        d_head: head dimension, a positive even int.
        base: the RoPE base, a finite number > 1.
        partial_rotary_factor: f, a float in (0, 1] (GPT-NeoX 0.25, Phi 0.5 in transformers'
            ``PhiConfig`` default, Qwen3-Next 0.25).

    Returns:
        float32 tensor [r/2], the rotated pairs' θ_i (evaluated as transformers does: float32
        exponent, float32 power).

    Raises:
        ValueError: see :func:`rotary_dim`; a base that is not a finite number > 1.

    Shapes:
        out: [r // 2]

    References:
        Black et al., GPT-NeoX-20B, arXiv:2204.06745.
    """
    r = rotary_dim(d_head, partial_rotary_factor)
    b = check_base("base", base)
    exponent = torch.arange(0, r, 2, dtype=torch.int64).to(torch.float32) / r
    return 1.0 / (b**exponent)


def proportional_inv_freq(
    d_head: int, base: float, partial_rotary_factor: float = 1.0, *, factor: float = 1.0
) -> torch.Tensor:
    """Gemma 4's proportional RoPE (p-RoPE): full-head frequencies, the slowest pairs set to 0.

    Every pair keeps the frequency it would have in a full RoPE head of size ``d_head``; only the
    first (fastest) ``k = int(f · d_head // 2)`` pairs rotate, and the other ``d_head/2 − k`` have
    θ = 0: a zero angle is the identity rotation, so those dimensions carry no position at all.

    Equation:
        k = ⌊f · d_head / 2⌋ (as Python evaluates ``int(f * d_head // 2)``)
        θ_i = base^(−2i / d_head) / factor for i < k,  θ_i = 0 for k <= i < d_head/2

    Args:
        d_head: head dimension, a positive even int.
        base: the RoPE base, a finite number > 1.
        partial_rotary_factor: f, a float in (0, 1] (Gemma 4's global layers: 0.25).
        factor: linear scaling of the rotated frequencies, a float > 0 (default 1).

    Returns:
        float32 tensor [d_head/2] (always the whole head).

    Raises:
        ValueError: ``d_head`` not a positive even int, f outside (0, 1], a bad base or factor.

    Shapes:
        out: [d_head // 2]

    References:
        Barbero et al., Round and Round We Go! What makes Rotary Positional Encodings useful?,
        arXiv:2410.06205.
    """
    d = check_even("d_head", d_head)
    f = _check_fraction(partial_rotary_factor)
    b = check_base("base", base)
    s = check_float("factor", factor)
    if not s > 0:
        raise ValueError(f"factor must be > 0, got {s}")
    k = int(f * d // 2)
    exponent = torch.arange(0, 2 * k, 2, dtype=torch.int64).to(torch.float32) / d
    rotated = 1.0 / (b**exponent) / s
    return torch.cat([rotated, torch.zeros(d // 2 - k, dtype=torch.float32)])


def apply_partial_rope(
    x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, *, pairing: str = "half"
) -> torch.Tensor:
    """Rotate the first ``2 · cos.shape[-1]`` dims of x with RoPE; pass the rest through unchanged.

    The rotated block is itself a RoPE head of size r: with ``pairing="half"`` its pairs are
    (i, i + r/2), inside the block (GPT-NeoX, Phi, Qwen3-Next), not (i, i + d_head/2).

    Equation:
        y[..., :r] = RoPE(x[..., :r]),  y[..., r:] = x[..., r:]

    Args:
        x: queries or keys, a floating tensor [..., T, d_head].
        cos: cos(m θ_i) of the rotated pairs, [..., T, r/2] (as for :func:`lib.rope.apply_rope`).
        sin: same shape as ``cos``.
        pairing: ``"half"`` or ``"interleaved"``, inside the rotated block.

    Returns:
        Shape and dtype of ``x``.

    Raises:
        TypeError: a non-floating argument.
        ValueError: r larger than ``d_head``; see :func:`lib.rope.apply_rope`.

    Shapes:
        x, out: [..., T, d_head]
        cos, sin: broadcastable to [..., T, r // 2]
    """
    x = check_floating("x", x)
    check_floating("cos", cos)
    r = 2 * check_int("cos.shape[-1]", cos.shape[-1], minimum=1)
    if r > x.shape[-1]:
        raise ValueError(f"cos has {r // 2} pairs, more than x's d_head // 2 = {x.shape[-1] // 2}")
    rotated = apply_rope(x[..., :r], cos, sin, pairing=pairing)
    return torch.cat([rotated, x[..., r:]], dim=-1)
