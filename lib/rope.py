"""Rotary position embedding (RoPE), in both pairing conventions.

RoPE (Su et al. 2021, *RoFormer*, arXiv:2104.09864) rotates each 2-D pair of a query or key vector by
an angle proportional to the token's position m::

    θ_i = base^(−2i/d_head),   i = 0 … d_head/2 − 1
    (y_a, y_b) = (x_a cos mθ_i − x_b sin mθ_i,  x_b cos mθ_i + x_a sin mθ_i)

so that the score ⟨R_m q, R_n k⟩ depends on the positions only through m − n.

Which two coordinates (a, b) form pair i is a convention, and two are in use:

- ``pairing="half"``: (i, i + d_head/2) — GPT-NeoX (Black et al. 2022, arXiv:2204.06745) and Hugging
  Face transformers' LLaMA (``rotate_half``).
- ``pairing="interleaved"``: (2i, 2i + 1) — RoFormer, Meta's LLaMA reference code (Touvron et al. 2023,
  arXiv:2302.13971), GPT-J.

They differ by a fixed permutation of the head dimensions (:func:`interleaved_to_half_permutation`);
checkpoints converted from Meta's layout to Hugging Face's have that permutation folded into the rows of
their query/key projections (:func:`permute_qk_weight_meta_to_hf`).

Precision: angles are computed in float32 (float64 if an input is float64) and the rotation itself in
float32 whatever the dtype of ``x``, then cast back. At position 131071 an angle computed in bfloat16
would be wrong by hundreds of radians; in float32 it is off by at most half a float32 ulp (< 0.004 rad).

Shapes are batch-first: ``x`` is ``[..., T, d_head]``, typically ``[B, H, T, d_head]``.
"""

from __future__ import annotations

import torch
from torch import nn

from lib._checks import (
    check_base,
    check_choice,
    check_even,
    check_finite,
    check_fits,
    check_floating,
    check_int,
    check_integer_tensor,
    check_ndim,
    check_positions,
    check_positive_int,
    check_tensor,
    values_checkable,
)

__all__ = [
    "PAIRINGS",
    "RotaryEmbedding",
    "apply_rope",
    "apply_rope_reference",
    "apply_rotary_emb_complex",
    "half_to_interleaved_permutation",
    "interleaved_to_half_permutation",
    "permute_qk_weight_hf_to_meta",
    "permute_qk_weight_meta_to_hf",
    "precompute_freqs_cis",
    "rope_angles",
    "rope_frequencies",
    "rope_inv_freq",
    "rope_max_angles",
    "rope_wavelengths",
    "rotate_half",
]

PAIRINGS: tuple[str, ...] = ("half", "interleaved")

# The fast path of apply_rope (CPU, no autograd) rotates about this many elements at a time (a block
# of positions), so that the float32 copies of bf16/fp16 input stay in cache.
_CPU_CHUNK_ELEMENTS = 1 << 19


# --------------------------------------------------------------------------------------------------
# Frequencies and angles
# --------------------------------------------------------------------------------------------------


def rope_inv_freq(d_head: int, base: float = 10000.0) -> torch.Tensor:
    """Inverse frequencies θ_i = base^(−2i/d_head) of RoPE, one per rotated pair.

    Computed in float64 and rounded once to float32, so each value is the float32 nearest to the
    exact θ_i. Hugging Face transformers (``LlamaRotaryEmbedding.compute_default_rope_parameters``,
    5.x) evaluates the same expression in float32; its values differ from these by at most a few
    float32 ulps (≤ 1 ulp for d_head = 64, 128, 256; up to ~4e-7 relative for d_head = 80, 96).

    Equation:
        θ_i = 1 / base^(2i / d_head),  i = 0 … d_head/2 − 1   (RoFormer, eq. 15)

    Args:
        d_head: head dimension, a positive even int.
        base: the frequency base, a finite number > 1.

    Returns:
        θ as float32.

    Raises:
        TypeError: ``d_head`` not an int or ``base`` not a real number.
        ValueError: ``d_head`` odd or < 2, ``base <= 1`` or not finite, or ``base`` so large that
            some θ_i is 0 in float32.

    Shapes:
        returns: [d_head // 2]

    References:
        Su et al., RoFormer, arXiv:2104.09864.
    """
    d_head = check_even("d_head", d_head)
    base = check_base("base", base)
    exponent = torch.arange(0, d_head, 2, dtype=torch.float64) / d_head  # [d_half]: 2i / d_head
    inv_freq = (1.0 / base**exponent).to(torch.float32)
    if values_checkable(inv_freq) and not bool((inv_freq > 0).all()):
        raise ValueError(
            f"base={base} is too large for d_head={d_head}: the slowest frequencies are 0 in "
            "float32 (those pairs would never turn)"
        )
    return inv_freq


def rope_angles(positions: torch.Tensor, inv_freq: torch.Tensor) -> torch.Tensor:
    """Rotation angles m·θ_i for every position m and pair i.

    ``positions`` may be an integer tensor or a float32/float64 tensor (fractional positions appear
    in position interpolation, Chen et al., arXiv:2306.15595). 16-bit float positions are refused:
    bfloat16 cannot even represent 257, so the damage is done before this function sees them.
    ``inv_freq`` of any floating dtype is upcast to float32 (a bfloat16 ``inv_freq`` has already lost
    its precision; pass float32). The product is formed in float32 (float64 if either input is
    float64) and returned as float32 — the same arithmetic as transformers' rotary embeddings
    (integer positions are exact in float32 up to 2^24 = 16,777,216).

    Equation:
        angles[..., t, i] = positions[..., t] · inv_freq[i]

    Args:
        positions: integer or float32/float64 positions, at least 1-D.
        inv_freq: θ, a non-empty 1-D floating tensor on the device of ``positions``.

    Returns:
        The angles, float32.

    Raises:
        TypeError: wrong dtypes (see above).
        ValueError: wrong shapes, an empty ``inv_freq``, different devices, or (CPU tensors only,
            see :func:`lib._checks.values_checkable`) NaN/inf in ``positions`` or ``inv_freq``.

    Shapes:
        positions: [..., T]
        inv_freq: [d_half]
        returns: [..., T, d_half]

    References:
        Su et al., RoFormer, arXiv:2104.09864. Chen et al., Position Interpolation, arXiv:2306.15595.
    """
    check_positions("positions", positions)
    check_ndim("positions", positions, minimum=1)
    check_floating("inv_freq", inv_freq)
    if inv_freq.dim() != 1:
        raise ValueError(f"inv_freq must be 1-D [d_head // 2], got shape {tuple(inv_freq.shape)}")
    if inv_freq.numel() == 0:
        raise ValueError("inv_freq must have at least one frequency (d_head // 2 >= 1), got 0")
    check_finite("inv_freq", inv_freq)
    check_finite("positions", positions)
    if inv_freq.device != positions.device:
        raise ValueError(
            f"inv_freq is on {inv_freq.device} but positions is on {positions.device}; "
            "move them to the same device"
        )
    compute = torch.float64 if torch.float64 in (positions.dtype, inv_freq.dtype) else torch.float32
    angles = positions.to(compute)[..., None] * inv_freq.to(compute)  # [..., T, d_half]
    return angles.to(torch.float32)


def rope_frequencies(
    d_head: int, max_len: int = 8192, base: float = 10000.0
) -> tuple[torch.Tensor, torch.Tensor]:
    """Cosine and sine tables of the RoPE angles for positions 0 … max_len − 1.

    One column per pair, not duplicated to ``d_head`` the way transformers' ``LlamaRotaryEmbedding``
    returns them. The angles (float32 positions times float32 θ, as :func:`rope_angles`) are formed
    block by block in the ``sin`` table itself, so the peak memory stays close to the two tables.
    Callers slice the rows of their positions before :func:`apply_rope` (e.g. ``cos[:T]``).

    Equation:
        cos[m, i] = cos(m θ_i),  sin[m, i] = sin(m θ_i),  θ_i = base^(−2i/d_head)

    Args:
        d_head: head dimension, a positive even int.
        max_len: number of positions (rows), an int >= 1.
        base: the frequency base, a finite number > 1.

    Returns:
        ``(cos, sin)``, float32.

    Raises:
        TypeError: an argument of the wrong type.
        ValueError: see :func:`rope_inv_freq`; ``max_len < 1``; tables that cannot fit in memory.

    Shapes:
        returns: ([max_len, d_head // 2], [max_len, d_head // 2])

    References:
        Su et al., RoFormer, arXiv:2104.09864.
    """
    d_head = check_even("d_head", d_head)
    max_len = check_positive_int("max_len", max_len)
    inv_freq = rope_inv_freq(d_head, base)  # [d_half] float32
    d_half = d_head // 2
    check_fits(f"d_head={d_head}, max_len={max_len}", (2, max_len, d_half), torch.float32)
    sin = torch.empty(max_len, d_half, dtype=torch.float32, device=inv_freq.device)
    step = max(1, 2**18 // d_half)
    for start in range(0, max_len, step):
        stop = min(start + step, max_len)
        positions = torch.arange(start, stop, device=inv_freq.device).to(torch.float32)  # [R]
        torch.mul(positions[:, None], inv_freq, out=sin[start:stop])  # angles m·θ_i
    cos = torch.cos(sin)
    return cos, sin.sin_()


# --------------------------------------------------------------------------------------------------
# Applying the rotation
# --------------------------------------------------------------------------------------------------


def rotate_half(x: torch.Tensor) -> torch.Tensor:
    """Hugging Face's ``rotate_half``: ``[x1, x2] -> [−x2, x1]`` on the two halves of the last dim.

    With it, RoPE in the "half" pairing is written with tables of width d_head (transformers
    ``models/llama/modeling_llama.py``).

    Equation:
        rotate_half([x1, x2]) = [−x2, x1];  RoPE(x) = x · [cos, cos] + rotate_half(x) · [sin, sin]

    Args:
        x: a floating tensor with an even last dimension.

    Returns:
        The rotated halves, shape and dtype of ``x``.

    Raises:
        TypeError: ``x`` not floating.
        ValueError: ``x`` 0-d or with an odd last dimension.

    Shapes:
        x: [..., d] -> [..., d]

    References:
        Black et al., GPT-NeoX-20B, arXiv:2204.06745.
    """
    check_floating("x", x)
    check_ndim("x", x, minimum=1)
    check_even("x.shape[-1]", x.shape[-1])
    half = x.shape[-1] // 2
    x1, x2 = x[..., :half], x[..., half:]
    return torch.cat((-x2, x1), dim=-1)


def _split_pairs(x: torch.Tensor, pairing: str) -> tuple[torch.Tensor, torch.Tensor]:
    """Views (first, second) coordinates of every pair: ``[..., d] -> 2 × [..., d/2]``."""
    if pairing == "half":
        half = x.shape[-1] // 2
        return x[..., :half], x[..., half:]
    return x[..., 0::2], x[..., 1::2]


def _merge_pairs(first: torch.Tensor, second: torch.Tensor, pairing: str) -> torch.Tensor:
    """Inverse of :func:`_split_pairs`: ``2 × [..., d/2] -> [..., d]``."""
    if pairing == "half":
        return torch.cat((first, second), dim=-1)
    return torch.stack((first, second), dim=-1).flatten(-2)  # [..., d/2, 2] -> [..., d]


def _check_table(name: str, table: torch.Tensor, x: torch.Tensor) -> None:
    """Check that a cos/sin (or freqs_cis) table broadcasts to ``x``'s ``[..., T, d_head // 2]``.

    The one table contract of this module: the caller slices the rows of its positions (e.g.
    ``cos[:T]`` for positions 0 … T−1, ``cos[positions]`` when decoding), as Meta's LLaMA slices
    ``freqs_cis[start_pos : start_pos + seqlen]``; a table never enlarges ``x``.
    """
    check_tensor(name, table)
    if table.device != x.device:
        raise ValueError(f"{name} is on {table.device} but x is on {x.device}")
    if table.dim() == 0:
        raise ValueError(f"{name} must broadcast to [..., T, d_head // 2], got a 0-d tensor")
    d_half = x.shape[-1] // 2
    if table.shape[-1] != d_half:
        hint = ""
        if table.shape[-1] == 2 * d_half:
            hint = (
                f" (a table of width d_head = {2 * d_half}, such as transformers' duplicated "
                f"cat((freqs, freqs)), holds each value twice: pass {name}[..., :{d_half}])"
            )
        raise ValueError(
            f"{name}'s last dimension must be d_head // 2 = {d_half} (one angle per pair), "
            f"got {table.shape[-1]}{hint}"
        )
    target = (*x.shape[:-1], d_half)
    if table.dim() > len(target):
        raise ValueError(
            f"{name} of shape {tuple(table.shape)} has more dimensions than x's "
            f"[..., T, d_head // 2] = {target}"
        )
    n_pos = x.shape[-2]
    if table.dim() >= 2 and table.shape[-2] not in (1, n_pos):
        if x.dim() >= 3 and x.shape[-3] == table.shape[-2]:
            # The rows match dim -3 of x: x is most likely [B, T, H, d_head] (Meta's layout), and
            # slicing or extending the table would rotate heads by the wrong angles.
            raise ValueError(
                f"{name} has {table.shape[-2]} rows but x has {n_pos} positions in dim -2 and "
                f"{x.shape[-3]} in dim -3: x looks like [B, T, H, d_head] (heads after the "
                f"sequence axis); x must be [..., T, d_head], e.g. [B, H, T, d_head]: pass "
                f"x.transpose(-3, -2), and transpose the result back"
            )
        if table.shape[-2] < n_pos:
            raise ValueError(
                f"x has T = {n_pos} positions but {name} has only {table.shape[-2]} rows: "
                f"positions past the table (build it with max_len >= {n_pos})"
            )
        raise ValueError(
            f"{name} has {table.shape[-2]} rows (dim -2) but x has T = {n_pos} positions: slice "
            f"the rows of x's positions, e.g. {name}[:{n_pos}] for positions 0..{n_pos - 1}"
        )
    try:
        broadcast = torch.broadcast_shapes(table.shape, target)
    except RuntimeError:
        broadcast = None
    if broadcast != torch.Size(target):
        raise ValueError(
            f"{name} of shape {tuple(table.shape)} does not broadcast to x's "
            f"[..., T, d_head // 2] = {target}"
        )


def _check_rope_args(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, pairing: str) -> None:
    """Shared argument checks of :func:`apply_rope` and :func:`apply_rope_reference`."""
    check_floating("x", x)
    check_ndim("x", x, minimum=2)
    check_even("x.shape[-1] (d_head)", x.shape[-1])
    check_choice("pairing", pairing, PAIRINGS)
    check_floating("cos", cos)
    check_floating("sin", sin)
    if cos.shape != sin.shape:
        raise ValueError(
            f"cos and sin must have the same shape, got {tuple(cos.shape)} and {tuple(sin.shape)}"
        )
    _check_table("cos", cos, x)
    _check_table("sin", sin, x)


def _compute_dtype(x: torch.Tensor) -> torch.dtype:
    """float64 for float64 inputs, float32 for everything else (bf16, fp16, fp32)."""
    return torch.float64 if x.dtype == torch.float64 else torch.float32


def _rotate(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, pairing: str) -> torch.Tensor:
    """The rotation of :func:`apply_rope_reference`, without the checks."""
    compute = _compute_dtype(x)
    c, s = cos.to(compute), sin.to(compute)  # [..., T, d_half]
    x_a, x_b = _split_pairs(x.to(compute), pairing)  # each [..., T, d_half]
    y_a = x_a * c - x_b * s
    y_b = x_b * c + x_a * s
    return _merge_pairs(y_a, y_b, pairing).to(x.dtype)  # the one rounding to x's dtype


def apply_rope_reference(
    x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, *, pairing: str = "half"
) -> torch.Tensor:
    """Readable RoPE: split x into pairs, rotate each pair, put the pairs back.

    Same arguments, checks, equation and result as :func:`apply_rope`, which is tested equal to
    this and runs it everywhere except its one fast path (CPU, no autograd).

    Args:
        x: queries or keys, a floating tensor with an even last dimension.
        cos: cos(m θ_i), broadcastable to ``[..., T, d_head // 2]``.
        sin: sin(m θ_i), same shape as ``cos``.
        pairing: ``"half"`` or ``"interleaved"`` (see :data:`PAIRINGS`).

    Returns:
        The rotated tensor, shape and dtype of ``x``; computed in float32 (float64 for float64
        ``x``) and rounded once.

    Raises:
        TypeError, ValueError: as :func:`apply_rope`.

    References:
        Su et al., RoFormer, arXiv:2104.09864.
    """
    _check_rope_args(x, cos, sin, pairing)
    return _rotate(x, cos, sin, pairing)


def _position_rows(table: torch.Tensor, rows: slice, n_pos: int) -> torch.Tensor:
    """Rows ``rows`` of a table's position axis (dim −2), unless it broadcasts over positions."""
    return table[..., rows, :] if table.dim() >= 2 and table.shape[-2] == n_pos else table


def _apply_rope_cpu(
    x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, pairing: str
) -> torch.Tensor:
    """The fast path of :func:`apply_rope` (CPU, no autograd): a block of positions at a time.

    Rotates with four passes (two ``mul``, two ``addcmul``). float32/float64 x is one block,
    written straight into the output; bf16/fp16 x is upcast a block of about
    ``_CPU_CHUNK_ELEMENTS`` elements at a time into a float32 scratch block that is rounded once
    into the output, so the float32 copies stay in cache and no whole-size float32 temporary
    exists.
    """
    compute = _compute_dtype(x)
    c, s = cos.to(compute), sin.to(compute)
    out = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    n_pos = x.shape[-2]
    step = max(1, _CPU_CHUNK_ELEMENTS // max(1, x.numel() // max(1, n_pos)))
    if x.dtype == compute:
        step = max(1, n_pos)  # nothing to upcast: one block, straight into the output
    for start in range(0, n_pos, step):
        rows = slice(start, start + step)
        block = x[..., rows, :].to(compute)  # [..., t, d_head]; a view if x is float32/64
        target = out[..., rows, :] if x.dtype == compute else torch.empty_like(block)
        x_a, x_b = _split_pairs(block, pairing)
        y_a, y_b = _split_pairs(target, pairing)
        c_rows, s_rows = _position_rows(c, rows, n_pos), _position_rows(s, rows, n_pos)
        torch.mul(x_a, c_rows, out=y_a)
        y_a.addcmul_(x_b, s_rows, value=-1.0)  # x_a cos − x_b sin
        torch.mul(x_b, c_rows, out=y_b)
        y_b.addcmul_(x_a, s_rows)  # x_b cos + x_a sin
        if x.dtype != compute:
            out[..., rows, :] = target  # the one rounding to x's dtype
    return out


def apply_rope(
    x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, *, pairing: str = "half"
) -> torch.Tensor:
    """Rotate the pairs of ``x`` by the RoPE angles whose cosines and sines are given.

    ``pairing="half"`` takes (a, b) = (i, i + d/2) (GPT-NeoX, transformers' LLaMA);
    ``pairing="interleaved"`` takes (2i, 2i + 1) (RoFormer, Meta LLaMA, GPT-J).

    One table contract: ``cos`` and ``sin`` broadcast to ``[..., T, d_head // 2]``, one column per
    pair, and the caller slices the rows of x's positions (``cos[:T]`` for positions 0 … T−1,
    ``cos[positions]`` when decoding), as Meta's LLaMA slices ``freqs_cis[start_pos : start_pos +
    seqlen]``. ``[T, d/2]``, ``[B, 1, T, d/2]`` (per-sequence positions) and ``[d/2]`` (one
    rotation for every position) all broadcast.

    The rotation is computed in float32 (float64 for float64 x) whatever the dtype of x, cos, sin,
    with a single rounding to x's dtype at the end. ``cos``/``sin`` should be float32: a bf16 table
    has already lost precision that no upcast restores.

    This is :func:`apply_rope_reference` (tested equal to it) with one fast path: on the CPU and
    without autograd it rotates a block of positions at a time straight into the output
    (two ``mul``, two ``addcmul`` per block).

    Equation:
        For pair i of position m:

            y_a = x_a cos(m θ_i) − x_b sin(m θ_i)
            y_b = x_b cos(m θ_i) + x_a sin(m θ_i)

    Args:
        x: queries or keys, a floating tensor with an even last dimension.
        cos: cos(m θ_i), floating, broadcastable to ``[..., T, d_head // 2]``.
        sin: sin(m θ_i), same shape as ``cos``.
        pairing: ``"half"`` or ``"interleaved"`` (see :data:`PAIRINGS`).

    Returns:
        The rotated tensor, shape and dtype of ``x``.

    Raises:
        TypeError: a non-floating ``x``, ``cos`` or ``sin``.
        ValueError: ``x`` with fewer than 2 dims or an odd last dim; an unknown ``pairing``;
            ``cos``/``sin`` of different shapes, on another device, whose last dim is not
            d_head // 2, with fewer rows than T ("positions past the table") or more (slice
            them), or that do not broadcast to ``[..., T, d_head // 2]``.

    Shapes:
        x: [..., T, d_head]  (e.g. [B, H, T, d_head])
        cos, sin: broadcastable to [..., T, d_head // 2]  (e.g. [T, d/2] or [B, 1, T, d/2])
        returns: [..., T, d_head]

    References:
        Su et al., RoFormer, arXiv:2104.09864. Black et al., GPT-NeoX-20B, arXiv:2204.06745.
        Touvron et al., LLaMA, arXiv:2302.13971.
    """
    _check_rope_args(x, cos, sin, pairing)
    needs_grad = x.requires_grad or cos.requires_grad or sin.requires_grad
    if x.device.type == "cpu" and not (torch.is_grad_enabled() and needs_grad):
        return _apply_rope_cpu(x, cos, sin, pairing)
    return _rotate(x, cos, sin, pairing)


# --------------------------------------------------------------------------------------------------
# The permutation between the two pairings
# --------------------------------------------------------------------------------------------------


def interleaved_to_half_permutation(d_head: int) -> torch.Tensor:
    """Index ``perm`` that reorders an interleaved-pairing head into the half-pairing layout.

    ``y = x[..., perm]`` puts pair (2i, 2i+1) of x at (i, i + d/2) of y. This is the per-head row
    order of transformers' ``convert_llama_weights_to_hf.py`` ``permute`` (Meta LLaMA layout ->
    GPT-NeoX layout).

    Equation:
        perm = [0, 2, 4, …, d−2, 1, 3, …, d−1];
        apply_rope(x[..., perm], cos, sin, pairing="half")
            == apply_rope(x, cos, sin, pairing="interleaved")[..., perm]

    Args:
        d_head: head dimension, a positive even int.

    Returns:
        The permutation, a LongTensor.

    Raises:
        TypeError, ValueError: ``d_head`` not a positive even int.

    Shapes:
        returns: [d_head]

    References:
        Touvron et al., LLaMA, arXiv:2302.13971. Black et al., GPT-NeoX-20B, arXiv:2204.06745.
    """
    d_head = check_even("d_head", d_head)
    return torch.cat((torch.arange(0, d_head, 2), torch.arange(1, d_head, 2)))


def half_to_interleaved_permutation(d_head: int) -> torch.Tensor:
    """Inverse of :func:`interleaved_to_half_permutation`: half-pairing layout -> interleaved.

    Equation:
        inv[2i] = i,  inv[2i + 1] = i + d/2,  i.e. [0, d/2, 1, d/2 + 1, …];
        x[..., perm][..., inv] == x

    Args:
        d_head: as :func:`interleaved_to_half_permutation`.

    Returns:
        The inverse permutation, a LongTensor ``[d_head]``.

    Raises:
        TypeError, ValueError: as :func:`interleaved_to_half_permutation`.

    References:
        Su et al., RoFormer, arXiv:2104.09864. Black et al., GPT-NeoX-20B, arXiv:2204.06745.
    """
    d_head = check_even("d_head", d_head)
    half = d_head // 2
    first = torch.arange(half)
    return torch.stack((first, first + half), dim=-1).flatten()  # [d_half, 2] -> [d_head]


def _check_qk_weight(w: torch.Tensor, n_heads: int) -> tuple[int, int]:
    check_tensor("w", w)
    n_heads = check_positive_int("n_heads", n_heads)
    if w.dim() != 2:
        raise ValueError(f"w must be 2-D [n_heads * d_head, d_in], got shape {tuple(w.shape)}")
    rows = w.shape[0]
    if rows % n_heads:
        raise ValueError(f"w has {rows} rows, not divisible by n_heads = {n_heads}")
    d_head = rows // n_heads
    if d_head % 2:
        raise ValueError(f"w's head dimension {rows} // n_heads = {d_head} must be even")
    return n_heads, d_head


def permute_qk_weight_meta_to_hf(w: torch.Tensor, n_heads: int) -> torch.Tensor:
    """Reorder the rows of a Meta-layout q/k projection for transformers' half-pairing RoPE.

    Written as transformers' ``convert_llama_weights_to_hf.py`` does it. Since ``q = W x``, the
    converted model's q is the Meta q permuted, and half-pairing RoPE on it equals the permuted
    interleaved RoPE. For grouped-query attention pass the number of heads held in ``w``
    (``n_kv_heads`` for k).

    Equation:
        within each head, new row j·d/2 + i = old row 2i + j (j ∈ {0, 1}), i.e. rows [..., perm] with
        perm = interleaved_to_half_permutation(d_head):
        w.view(n_heads, d_head // 2, 2, d_in).transpose(1, 2).reshape(n_heads * d_head, d_in)

    Args:
        w: the projection weight, 2-D, ``n_heads`` heads of an even size stacked along dim 0.
        n_heads: the number of heads in ``w``, an int >= 1.

    Returns:
        The reordered weight, shape of ``w``.

    Raises:
        TypeError: ``w`` not a tensor or ``n_heads`` not an int.
        ValueError: ``w`` not 2-D, rows not divisible by ``n_heads``, or an odd head size.

    Shapes:
        w: [n_heads * d_head, d_in] -> [n_heads * d_head, d_in]

    References:
        Touvron et al., LLaMA, arXiv:2302.13971.
    """
    n_heads, d_head = _check_qk_weight(w, n_heads)
    d_in = w.shape[1]
    per_head = w.reshape(n_heads, d_head // 2, 2, d_in)  # [H, pair i, j, d_in]
    return per_head.transpose(1, 2).reshape(n_heads * d_head, d_in)  # [H, j, i, d_in] -> rows


def permute_qk_weight_hf_to_meta(w: torch.Tensor, n_heads: int) -> torch.Tensor:
    """Inverse of :func:`permute_qk_weight_meta_to_hf`: transformers layout -> Meta layout.

    Equation:
        within each head, new row 2i + j = old row j·d/2 + i

    Args:
        w: a transformers-layout q or k projection (see :func:`permute_qk_weight_meta_to_hf`).
        n_heads: the number of heads in ``w``.

    Returns:
        The weight in Meta's row order.

    Raises:
        TypeError, ValueError: as :func:`permute_qk_weight_meta_to_hf`.

    Shapes:
        w: [n_heads * d_head, d_in] -> [n_heads * d_head, d_in]

    References:
        Touvron et al., LLaMA, arXiv:2302.13971. Black et al., GPT-NeoX-20B, arXiv:2204.06745.
    """
    n_heads, d_head = _check_qk_weight(w, n_heads)
    d_in = w.shape[1]
    per_head = w.reshape(n_heads, 2, d_head // 2, d_in)  # [H, j, pair i, d_in]
    return per_head.transpose(1, 2).reshape(n_heads * d_head, d_in)  # [H, i, j, d_in] -> rows


# --------------------------------------------------------------------------------------------------
# Complex-number form (Meta LLaMA reference code)
# --------------------------------------------------------------------------------------------------


def precompute_freqs_cis(d_head: int, end: int, base: float = 10000.0) -> torch.Tensor:
    """Unit complex numbers e^(i m θ_k) for positions m = 0 … end − 1, as in Meta's LLaMA code.

    Equation:
        freqs_cis[m, k] = cos(m θ_k) + i sin(m θ_k) = polar(1, m θ_k),  θ_k = base^(−2k/d_head)

    Args:
        d_head: head dimension, a positive even int.
        end: number of positions (rows), an int >= 1.
        base: the frequency base, a finite number > 1.

    Returns:
        The rotors, complex64.

    Raises:
        TypeError, ValueError: see :func:`rope_inv_freq`; ``end < 1``.

    Shapes:
        returns: [end, d_head // 2]

    References:
        Su et al., RoFormer, arXiv:2104.09864 (§3.4.2).
        Touvron et al., LLaMA, arXiv:2302.13971 (``precompute_freqs_cis``).
    """
    d_head = check_even("d_head", d_head)
    end = check_positive_int("end", end)
    angles = rope_angles(torch.arange(end), rope_inv_freq(d_head, base))  # [end, d_half]
    return torch.polar(torch.ones_like(angles), angles)


def apply_rotary_emb_complex(x: torch.Tensor, freqs_cis: torch.Tensor) -> torch.Tensor:
    """RoPE as complex multiplication: pair (2k, 2k+1) is the complex number x_2k + i x_2k+1.

    The interleaved pairing, as Meta LLaMA's ``apply_rotary_emb``; equals ``apply_rope(x, cos, sin,
    pairing="interleaved")``. Computed in complex64 (float32 parts) and cast back to x's dtype.
    Same table contract as :func:`apply_rope`: ``freqs_cis`` broadcasts to ``[..., T, d_head // 2]``,
    the caller slices it (Meta: ``freqs_cis[start_pos : start_pos + seqlen]``). Meta's code is
    batch-first too, ``[B, T, H, d]``, with the heads after the sequence axis; this library puts
    them before it, ``[B, H, T, d]``.

    Equation:
        z_k = x_2k + i x_2k+1,  z'_k = z_k · e^(i m θ_k),  (y_2k, y_2k+1) = (Re z'_k, Im z'_k)

    Args:
        x: queries or keys, a floating tensor with an even last dimension.
        freqs_cis: e^(i m θ_k), a complex tensor broadcastable to ``[..., T, d_head // 2]``.

    Returns:
        The rotated tensor, shape and dtype of ``x``.

    Raises:
        TypeError: ``x`` not floating or ``freqs_cis`` not complex.
        ValueError: as for the tables of :func:`apply_rope`.

    Shapes:
        x: [..., T, d_head]
        freqs_cis: broadcastable to [..., T, d_head // 2]
        returns: [..., T, d_head]

    References:
        Su et al., RoFormer, arXiv:2104.09864 (§3.2). Touvron et al., LLaMA, arXiv:2302.13971.
    """
    check_floating("x", x)
    check_ndim("x", x, minimum=2)
    check_even("x.shape[-1] (d_head)", x.shape[-1])
    check_tensor("freqs_cis", freqs_cis)
    if not freqs_cis.is_complex():
        raise TypeError(f"freqs_cis must be a complex tensor, got dtype {freqs_cis.dtype}")
    _check_table("freqs_cis", freqs_cis, x)
    d_half = x.shape[-1] // 2
    freqs = freqs_cis.to(torch.complex64)
    pairs = x.to(torch.float32).reshape(*x.shape[:-1], d_half, 2)  # [..., T, d_half, 2]
    rotated = torch.view_as_complex(pairs) * freqs  # [..., T, d_half] complex64
    return torch.view_as_real(rotated).flatten(-2).to(x.dtype)  # [..., T, d_head]


# --------------------------------------------------------------------------------------------------
# nn.Module wrapper
# --------------------------------------------------------------------------------------------------


class RotaryEmbedding(nn.Module):
    """Rotates queries and keys by RoPE, with angles built in float32 for the positions given.

    Like transformers' ``LlamaRotaryEmbedding`` (5.x), the module stores only the frequencies, a
    non-persistent float32 buffer ``inv_freq`` that follows the module's device, and forms
    ``angles = positions · inv_freq`` in float32 in :meth:`forward`. ``module.to(torch.bfloat16)``
    casts that buffer as it casts every floating buffer; :meth:`forward` then rebuilds θ in
    float32 from ``d_head`` and ``base`` (the same values, see :func:`rope_inv_freq`), so the angles
    never see bfloat16.

    Equation:
        q'_m = R_m q_m,  k'_n = R_n k_n,  R_m the block rotation by the angles m θ_i,
        θ_i = base^(−2i/d_head), so that ⟨q'_m, k'_n⟩ depends on m − n only.

    Args:
        d_head: head dimension, a positive even int.
        max_len: the largest position + 1 accepted (positions must lie in ``[0, max_len)``), an
            int >= 1; nothing of size ``max_len`` is allocated.
        base: the frequency base, a finite number > 1.
        pairing: ``"half"`` or ``"interleaved"`` (see :data:`PAIRINGS`).

    Raises:
        TypeError: an argument of the wrong type.
        ValueError: an odd ``d_head``, ``max_len < 1``, ``base <= 1`` or an unknown ``pairing``.

    Shapes:
        forward(q, k, positions=None):
        q: [B, H, T, d_head];  k: [B, H_kv, T, d_head]
        positions: None (0 … T−1, each of q and k using its own T), [T] or [B, T] (the same
        positions for q and k; needed e.g. when decoding with a cache)
        returns: (q', k') with the shapes and dtypes of q and k

    References:
        Su et al., RoFormer, arXiv:2104.09864.
    """

    inv_freq: torch.Tensor

    def __init__(
        self, d_head: int, max_len: int = 8192, base: float = 10000.0, pairing: str = "half"
    ) -> None:
        super().__init__()
        self.d_head = check_even("d_head", d_head)
        self.max_len = check_positive_int("max_len", max_len)
        self.base = check_base("base", base)
        self.pairing = check_choice("pairing", pairing, PAIRINGS)
        # [d_half] float32; non-persistent: derived from d_head and base, not a weight
        self.register_buffer("inv_freq", rope_inv_freq(self.d_head, self.base), persistent=False)

    def extra_repr(self) -> str:
        return (
            f"d_head={self.d_head}, max_len={self.max_len}, base={self.base}, "
            f"pairing={self.pairing!r}"
        )

    def float32_inv_freq(self) -> torch.Tensor:
        """θ_i in float32 on the module's device: the buffer, rebuilt if a cast has rounded it.

        Returns:
            ``inv_freq`` as float32 (``rope_inv_freq(d_head, base)`` if the buffer is not
            float32, e.g. after ``module.to(torch.bfloat16)``).

        Shapes:
            returns: [d_head // 2]
        """
        if self.inv_freq.dtype == torch.float32:
            return self.inv_freq
        return rope_inv_freq(self.d_head, self.base).to(self.inv_freq.device)

    def _check_positions_in_range(self, positions: torch.Tensor) -> None:
        check_integer_tensor("positions", positions)
        if positions.dim() not in (1, 2):
            raise ValueError(f"positions must be [T] or [B, T], got shape {tuple(positions.shape)}")
        # A value check: CPU only (no values on meta, no host sync per call on an accelerator).
        if (
            positions.numel()
            and values_checkable(positions)
            and (positions.min() < 0 or positions.max() >= self.max_len)
        ):
            raise ValueError(
                f"positions must lie in [0, max_len) = [0, {self.max_len}), got values from "
                f"{int(positions.min())} to {int(positions.max())}: positions past the table"
            )

    def forward(
        self, q: torch.Tensor, k: torch.Tensor, positions: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Rotate ``q: [B, H, T, d_head]`` and ``k: [B, H_kv, T, d_head]``; see the class doc.

        Args:
            q: queries, floating, last dimension ``d_head``.
            k: keys, floating, last dimension ``d_head``.
            positions: None (positions 0 … T−1), or an integer tensor ``[T]`` or ``[B, T]``
                with values in ``[0, max_len)``.

        Returns:
            ``(q', k')``, the rotated queries and keys (shapes and dtypes of q and k).

        Raises:
            TypeError: non-floating q or k, non-integer positions.
            ValueError: a last dimension other than ``d_head``, T past ``max_len``, positions
                out of range, of the wrong shape or of another length than T.
        """
        check_floating("q", q)
        check_floating("k", k)
        for name, t in (("q", q), ("k", k)):
            check_ndim(name, t, minimum=2)
            if t.shape[-1] != self.d_head:
                raise ValueError(
                    f"{name}'s last dimension must be d_head = {self.d_head}, got {t.shape[-1]}"
                )
        if positions is None:
            for name, t in (("q", q), ("k", k)):
                if t.shape[-2] > self.max_len:
                    raise ValueError(
                        f"{name} has T = {t.shape[-2]} positions but max_len = {self.max_len}: "
                        "positions past the table"
                    )
            n_q, n_k = q.shape[-2], k.shape[-2]
            positions = torch.arange(max(n_q, n_k), device=q.device)  # [T]
            angles = rope_angles(positions, self.float32_inv_freq().to(q.device))  # [T, d_half]
            cos, sin = angles.cos(), angles.sin()
            return (
                apply_rope(q, cos[:n_q], sin[:n_q], pairing=self.pairing),
                apply_rope(k, cos[:n_k].to(k.device), sin[:n_k].to(k.device), pairing=self.pairing),
            )
        self._check_positions_in_range(positions)
        for name, t in (("q", q), ("k", k)):
            if t.shape[-2] != positions.shape[-1]:
                raise ValueError(
                    f"{name} has T = {t.shape[-2]} positions but positions has "
                    f"{positions.shape[-1]} entries"
                )
        positions = positions.to(q.device)
        angles = rope_angles(positions, self.float32_inv_freq().to(q.device))  # [(B,) T, d_half]
        if positions.dim() == 2:
            angles = angles[:, None]  # [B, 1, T, d_half]: the same for every head
        cos, sin = angles.cos(), angles.sin()
        return (
            apply_rope(q, cos, sin, pairing=self.pairing),
            apply_rope(k, cos.to(k.device), sin.to(k.device), pairing=self.pairing),
        )


def _positive_inv_freq(inv_freq: object) -> torch.Tensor:
    """``inv_freq`` if it is a floating tensor of finite values > 0 (values checked on the CPU)."""
    inv_freq = check_finite("inv_freq", check_floating("inv_freq", inv_freq))
    if values_checkable(inv_freq) and not bool((inv_freq > 0).all()):
        raise ValueError("inv_freq must be > 0 everywhere (θ_i = 2π / wavelength_i)")
    return inv_freq


def rope_wavelengths(inv_freq: torch.Tensor) -> torch.Tensor:
    """Wavelength of each RoPE pair in tokens: how far the position moves for one full turn.

    Computed in float64 from the unrounded inverse frequencies, so every chapter and figure shows
    the same wavelength for the same pair (round only for display).

    Equation:
        λ_i = 2π / θ_i

    Args:
        inv_freq: inverse frequencies θ_i > 0 (e.g. :func:`rope_inv_freq`), any floating dtype.

    Returns:
        The wavelengths, float64.

    Raises:
        TypeError: ``inv_freq`` is not a floating tensor.
        ValueError: a value is <= 0 or not finite (checked on the CPU).

    Shapes:
        inv_freq: [...] -> [...]

    References:
        Su et al., RoFormer, arXiv:2104.09864.
    """
    return 2.0 * torch.pi / _positive_inv_freq(inv_freq).to(torch.float64)


def rope_max_angles(inv_freq: torch.Tensor, seq_len: int) -> torch.Tensor:
    """Largest relative angle each RoPE pair takes within a sequence of ``seq_len`` tokens.

    A query and a key at most ``seq_len − 1`` positions apart are rotated relative to each other by
    ``(m − n)·θ_i`` with ``|m − n| ≤ seq_len − 1``. Where this stays below 2π, pair i never completes
    a turn at that length, and a longer input shows it angles it has never seen (the failure that
    position interpolation addresses). Computed in float64 from the unrounded θ_i.

    Equation:
        a_i(L) = (L − 1) · θ_i

    Args:
        inv_freq: inverse frequencies θ_i > 0 (e.g. :func:`rope_inv_freq`), any floating dtype.
        seq_len: the sequence length L, an int >= 1.

    Returns:
        The angles in radians, float64.

    Raises:
        TypeError: ``inv_freq`` is not a floating tensor, or ``seq_len`` not an int.
        ValueError: ``seq_len < 1``, or a θ_i is <= 0 or not finite (checked on the CPU).

    Shapes:
        inv_freq: [...] -> [...]

    References:
        Su et al., RoFormer, arXiv:2104.09864. Chen et al., Position Interpolation, arXiv:2306.15595.
    """
    inv_freq = _positive_inv_freq(inv_freq)
    seq_len = check_int("seq_len", seq_len, minimum=1)
    return (seq_len - 1) * inv_freq.to(torch.float64)
