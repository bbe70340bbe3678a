"""Re-rotating cached RoPE keys: moving a cached key to a new position without recomputing it.

A RoPE key cached at position n is ``R_n k``. Rotations of one pair compose by adding angles,
``R_Δ R_n = R_(n+Δ)``, so the cached key moves to position n + Δ by one more rotation by Δ, without
the hidden state that produced it. StreamingLLM keeps the first few tokens (attention sinks) and a
window of recent ones and gives the kept keys *consecutive* positions inside the cache; with RoPE
that means re-rotating every kept recent key by the same negative Δ after each eviction.

``tests/test_rope_cache.py`` checks that evicting and re-rotating equals recomputing the kept keys
at their new positions with transformers' Llama rotary code.
"""

from __future__ import annotations

import torch

from lib._checks import check_floating, check_int, check_positions
from lib.rope import PAIRINGS, apply_rope

__all__ = ["evict_and_rerotate", "rerotate_keys", "streaming_keep_indices"]


def rerotate_keys(
    keys: torch.Tensor, delta: torch.Tensor | int, inv_freq: torch.Tensor, *, pairing: str = "half"
) -> torch.Tensor:
    """Move RoPE-rotated keys by Δ positions: rotate each pair once more, by Δ·θ_i.

    Equation:
        R_Δ (R_n k) = R_(n+Δ) k   (rotations of one pair add their angles)

    Args:
        keys: cached, already rotated keys, floating [..., T, d_head].
        delta: the shift Δ, an int (every key) or an integer/float tensor [T] (one per key).
        inv_freq: θ_i, floating [d_head/2].
        pairing: ``"half"`` or ``"interleaved"``, the layout the keys were rotated in.

    Returns:
        The keys as if rotated at n + Δ; shape and dtype of ``keys``.

    Raises:
        TypeError: non-floating ``keys`` or ``inv_freq``; a ``delta`` of another type.
        ValueError: ``inv_freq`` not of length d_head/2; ``delta`` not scalar or [T].

    Shapes:
        keys, out: [..., T, d_head]; delta: [] or [T]; inv_freq: [d_head // 2]

    References:
        Su et al., RoFormer, arXiv:2104.09864; Xiao et al., Efficient Streaming Language Models
        with Attention Sinks, arXiv:2309.17453.
    """
    k = check_floating("keys", keys)
    freq = check_floating("inv_freq", inv_freq)
    if freq.ndim != 1 or 2 * freq.shape[0] != k.shape[-1]:
        raise ValueError(f"inv_freq must have shape [{k.shape[-1] // 2}], got {tuple(freq.shape)}")
    if pairing not in PAIRINGS:
        raise ValueError(f"pairing must be one of {PAIRINGS}, got {pairing!r}")
    if isinstance(delta, int) and not isinstance(delta, bool):
        d = torch.full((k.shape[-2],), float(delta), dtype=torch.float64)
    else:
        d = check_positions("delta", delta).to(torch.float64)
        if d.ndim == 0:
            d = d.expand(k.shape[-2])
        if d.shape != (k.shape[-2],):
            raise ValueError(
                f"delta must be an int or have shape [{k.shape[-2]}], got {tuple(d.shape)}"
            )
    angles = (d[:, None] * freq.to(torch.float64)[None, :]).to(torch.float32)
    return apply_rope(k, angles.cos(), angles.sin(), pairing=pairing)


def streaming_keep_indices(seq_len: int, n_sink: int, n_recent: int) -> torch.Tensor:
    """The cache slots StreamingLLM keeps: the first ``n_sink`` and the last ``n_recent``.

    Args:
        seq_len: T, the number of cached tokens, an int >= 1.
        n_sink: attention-sink tokens kept at the start, an int >= 0.
        n_recent: recent tokens kept at the end, an int >= 0.

    Returns:
        Sorted LongTensor of kept positions (all of 0 … T−1 if the two parts overlap).

    Raises:
        ValueError: a negative count or ``seq_len < 1``.

    Shapes:
        out: [min(T, n_sink + n_recent)]
    """
    t = check_int("seq_len", seq_len, minimum=1)
    s = check_int("n_sink", n_sink, minimum=0)
    r = check_int("n_recent", n_recent, minimum=0)
    if s + r >= t:
        return torch.arange(t)
    return torch.cat([torch.arange(s), torch.arange(t - r, t)])


def evict_and_rerotate(
    keys: torch.Tensor,
    n_sink: int,
    n_recent: int,
    inv_freq: torch.Tensor,
    *,
    pairing: str = "half",
) -> tuple[torch.Tensor, torch.Tensor]:
    """Evict the middle of a RoPE cache and give the kept keys consecutive positions 0 … K−1.

    The keys were rotated at positions 0 … T−1 (their cache slots). Sinks keep their positions;
    the recent keys move from n to n − (T − n_sink − n_recent), one shared Δ.

    Equation:
        kept = [0, n_sink) ∪ [T − n_recent, T);  new position of kept[j] = j;
        k'_j = R_(j − kept[j]) k_(kept[j])

    Args:
        keys: rotated keys at positions 0 … T−1, floating [..., T, d_head].
        n_sink: sink tokens kept, an int >= 0.
        n_recent: recent tokens kept, an int >= 0.
        inv_freq: θ_i, floating [d_head/2].
        pairing: ``"half"`` or ``"interleaved"``.

    Returns:
        ``(new_keys, kept)``: the kept keys at their new positions [..., K, d_head], and the
        kept old positions [K].

    Raises:
        TypeError, ValueError: see :func:`rerotate_keys` and :func:`streaming_keep_indices`.

    Shapes:
        keys: [..., T, d_head]; new_keys: [..., K, d_head]; kept: [K]

    References:
        Xiao et al., Efficient Streaming Language Models with Attention Sinks, arXiv:2309.17453.
    """
    k = check_floating("keys", keys)
    kept = streaming_keep_indices(k.shape[-2], n_sink, n_recent)
    delta = torch.arange(kept.shape[0]) - kept
    return rerotate_keys(k[..., kept, :], delta, inv_freq, pairing=pairing), kept
