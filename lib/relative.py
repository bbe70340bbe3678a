"""The relative-position family: Shaw et al.'s clipped embeddings and T5's bucketed bias.

Absolute schemes (chapters 6–7) add a vector per *position* to the input. The relative family changes
attention itself so that the score of query ``i`` and key ``j`` depends on the offset ``j − i``:

- Shaw, Uszkoreit & Vaswani 2018, "Self-Attention with Relative Position Representations",
  arXiv:1803.02155: learned vectors ``a^K_{ij} = w^K_{clip(j − i, k)}`` added to the keys (and
  optionally ``a^V_{ij}`` to the values), ``2k + 1`` of each (:func:`shaw_relative_index`,
  :func:`shaw_attention`, :class:`ShawRelativeEmbeddings`).
- Raffel et al. 2020, "Exploring the Limits of Transfer Learning with a Unified Text-to-Text
  Transformer" (T5), arXiv:1910.10683, section 2.1: one learned *scalar* per head and offset
  bucket, added to the logits; offsets up to ``num_buckets/2`` (per direction) get their own
  bucket, larger ones share logarithmically wider buckets up to ``max_distance``
  (:func:`t5_relative_position_bucket`, :func:`t5_relative_bias`, :class:`T5RelativeBias`).

Offsets follow transformers' convention: ``relative_position = key_position − query_position``
(``memory_position − context_position`` in ``T5Attention.compute_bias``), negative for keys in
the past.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from lib._checks import (
    check_floating,
    check_int,
    check_integer_tensor,
    check_ndim,
    check_positive_int,
)

__all__ = [
    "ShawRelativeEmbeddings",
    "T5RelativeBias",
    "shaw_attention",
    "shaw_relative_index",
    "t5_relative_bias",
    "t5_relative_position_bucket",
]


def _check_bool(name: str, value: object) -> bool:
    if not isinstance(value, bool):
        raise TypeError(f"{name} must be a bool, got {type(value).__name__} {value!r}")
    return value


def _check_bucket_args(bidirectional: object, num_buckets: object, max_distance: object) -> int:
    """Validate the bucket arguments; return the number of buckets per direction."""
    _check_bool("bidirectional", bidirectional)
    num_buckets = check_positive_int("num_buckets", num_buckets)
    max_distance = check_positive_int("max_distance", max_distance)
    if bidirectional and num_buckets % 2:
        raise ValueError(
            "num_buckets must be even when bidirectional=True (half the buckets per direction), "
            f"got {num_buckets}"
        )
    per_side = num_buckets // 2 if bidirectional else num_buckets
    if per_side < 2:
        raise ValueError(
            "num_buckets must give at least 2 buckets per direction (num_buckets >= 4 when "
            f"bidirectional, >= 2 otherwise), got num_buckets={num_buckets}"
        )
    max_exact = per_side // 2
    if max_distance <= max_exact:
        raise ValueError(
            f"max_distance must exceed the {max_exact} exact buckets (num_buckets"
            f"{'/4' if bidirectional else '/2'}), got max_distance={max_distance}"
        )
    return per_side


def t5_relative_position_bucket(
    relative_position: torch.Tensor,
    *,
    bidirectional: bool = True,
    num_buckets: int = 32,
    max_distance: int = 128,
) -> torch.Tensor:
    """Map offsets ``j − i`` to T5's relative-attention buckets.

    Raffel et al. 2020 (T5, arXiv:1910.10683), section 2.1; the same computation as transformers'
    ``T5Attention._relative_position_bucket`` (from Mesh TensorFlow). With ``n`` buckets per
    direction (``num_buckets/2`` when ``bidirectional``, keys after the query then get ``+n``;
    ``num_buckets`` otherwise, where keys after the query fall into bucket 0) and
    ``r = |j − i|`` (``max(i − j, 0)`` when not bidirectional)::

        bucket(r) = r                                                    if r < n/2
                  = min(n − 1, n/2 + ⌊ln(r / (n/2)) / ln(max_distance / (n/2)) · n/2⌋)  otherwise

    so the first ``n/2`` offsets are exact and the rest are log-spaced up to ``max_distance``,
    beyond which every offset shares the last bucket. The logarithm is taken in float32, as in
    transformers, so the bucket edges agree exactly.

    Equation:
        bucket(r) = r if r < n/2, else min(n − 1, n/2 + ⌊ln(r / (n/2)) / ln(max_distance / (n/2)) · n/2⌋)

    Args:
        relative_position: ``[...]`` integer tensor of offsets ``key_position − query_position``.
        bidirectional: encoder-style (both directions) or decoder-style (past keys only).
        num_buckets: total buckets, an int (even and >= 4 if bidirectional, >= 2 otherwise).
        max_distance: offset from which every larger offset shares the last bucket, an int
            larger than the number of exact buckets.

    Returns:
        ``buckets: [...]`` int64, same shape and device, values in ``[0, num_buckets)``.

    Raises:
        TypeError: ``relative_position`` not an integer tensor; other arguments of the wrong type.
        ValueError: ``num_buckets`` or ``max_distance`` out of range (see Args).

    References:
        Raffel et al., T5, arXiv:1910.10683.
    """
    check_integer_tensor("relative_position", relative_position)
    n = _check_bucket_args(bidirectional, num_buckets, max_distance)
    rel = relative_position.to(torch.int64)
    buckets = torch.zeros_like(rel)
    if bidirectional:
        buckets = buckets + (rel > 0).to(torch.int64) * n
        rel = rel.abs()
    else:
        rel = (-rel).clamp(min=0)
    max_exact = n // 2
    is_small = rel < max_exact
    # clamp before the log so that small offsets (which take the other branch) never give −inf
    large = max_exact + (
        torch.log(rel.clamp(min=max_exact).float() / max_exact)
        / math.log(max_distance / max_exact)
        * (n - max_exact)
    ).to(torch.int64)
    large = large.clamp(max=n - 1)
    return buckets + torch.where(is_small, rel, large)


def _relative_positions(
    query_length: int, key_length: int, query_offset: int, device: torch.device | str | None
) -> torch.Tensor:
    """``[T_q, T_k]`` int64 offsets ``j − (i + query_offset)``."""
    query = torch.arange(query_length, dtype=torch.int64, device=device)[:, None] + query_offset
    key = torch.arange(key_length, dtype=torch.int64, device=device)[None, :]
    return key - query


def t5_relative_bias(
    table: torch.Tensor,
    query_length: int,
    key_length: int,
    *,
    bidirectional: bool = True,
    max_distance: int = 128,
    query_offset: int = 0,
) -> torch.Tensor:
    """T5's learned relative bias ``b[h, i, j] = table[bucket(j − i), h]``, ready to add to scores.

    Raffel et al. 2020 (T5, arXiv:1910.10683), section 2.1: "each 'embedding' is simply a scalar
    that is added to the corresponding logit", one per head and bucket, shared across layers in T5.
    Equals transformers' ``T5Attention.compute_bias(query_length, key_length,
    past_seen_tokens=query_offset)[0]`` when ``table`` is its ``relative_attention_bias.weight``.
    ``num_buckets`` is ``table.shape[0]``.

    Equation:
        b[h, i, j] = table[bucket(j − i), h]

    Args:
        table: ``[num_buckets, n_heads]`` floating (the layout of ``nn.Embedding(num_buckets,
            n_heads).weight``).
        query_length: ``T_q``, an int >= 1.
        key_length: ``T_k``, an int >= 1.
        bidirectional: encoder (``True``) or decoder (``False``) buckets.
        max_distance: see :func:`t5_relative_position_bucket`.
        query_offset: position of the first query (cached tokens before it), an int >= 0.

    Returns:
        ``bias: [n_heads, T_q, T_k]`` in ``table``'s dtype and device (broadcasts against scores
        ``[B, n_heads, T_q, T_k]``).

    Raises:
        TypeError: ``table`` not a floating tensor; a length or offset not an int.
        ValueError: ``table`` not 2-D; lengths < 1; ``query_offset`` < 0; bucket arguments out of
            range.

    References:
        Raffel et al., T5, arXiv:1910.10683.
    """
    check_floating("table", table)
    if table.dim() != 2:
        raise ValueError(f"table must be [num_buckets, n_heads], got shape {list(table.shape)}")
    query_length = check_positive_int("query_length", query_length)
    key_length = check_positive_int("key_length", key_length)
    query_offset = check_int("query_offset", query_offset, minimum=0)
    rel = _relative_positions(query_length, key_length, query_offset, table.device)
    buckets = t5_relative_position_bucket(
        rel,
        bidirectional=bidirectional,
        num_buckets=table.shape[0],
        max_distance=max_distance,
    )  # [T_q, T_k]
    return table[buckets].permute(2, 0, 1)  # [T_q, T_k, H] -> [H, T_q, T_k]


class T5RelativeBias(nn.Module):
    """T5's relative position bias as a module: a learned ``[num_buckets, n_heads]`` table.

    Raffel et al. 2020 (arXiv:1910.10683), section 2.1. The table is
    ``self.relative_attention_bias``, an ``nn.Embedding(num_buckets, n_heads)`` named as in
    transformers' ``T5Attention``, so its weights load from a T5 checkpoint unchanged.
    ``forward(T_q, T_k)`` returns :func:`t5_relative_bias` of the table.

    Equation:
        b[h, i, j] = relative_attention_bias.weight[bucket(j − i), h]

    Args:
        n_heads: number of heads, an int >= 1.
        num_buckets: buckets (T5: 32).
        max_distance: offsets from this on share the last bucket (T5: 128).
        bidirectional: encoder (``True``) or decoder (``False``).

    Raises:
        TypeError, ValueError: as :func:`t5_relative_position_bucket`; ``n_heads`` < 1.

    References:
        Raffel et al., T5, arXiv:1910.10683.
    """

    def __init__(
        self,
        n_heads: int,
        *,
        num_buckets: int = 32,
        max_distance: int = 128,
        bidirectional: bool = True,
    ) -> None:
        super().__init__()
        n_heads = check_positive_int("n_heads", n_heads)
        _check_bucket_args(bidirectional, num_buckets, max_distance)
        self.n_heads = n_heads
        self.num_buckets = num_buckets
        self.max_distance = max_distance
        self.bidirectional = bidirectional
        self.relative_attention_bias = nn.Embedding(num_buckets, n_heads)

    def forward(self, query_length: int, key_length: int, *, query_offset: int = 0) -> torch.Tensor:
        """``bias: [n_heads, T_q, T_k]`` for ``T_q`` queries starting at ``query_offset``.

        Equation:
            b[h, i, j] = relative_attention_bias.weight[bucket(j − i), h],
            query i at position query_offset + i

        Args:
            query_length: ``T_q``, an int >= 1.
            key_length: ``T_k``, an int >= 1.
            query_offset: position of the first query (cached tokens before it), an int >= 0.

        Returns:
            :func:`t5_relative_bias` of the module's table, in its dtype and device.

        Raises:
            TypeError: a length or offset is not an int.
            ValueError: a length < 1 or ``query_offset`` < 0.

        Shapes:
            -> [n_heads, T_q, T_k]
        """
        return t5_relative_bias(
            self.relative_attention_bias.weight,
            query_length,
            key_length,
            bidirectional=self.bidirectional,
            max_distance=self.max_distance,
            query_offset=query_offset,
        )

    def extra_repr(self) -> str:
        return (
            f"n_heads={self.n_heads}, num_buckets={self.num_buckets}, "
            f"max_distance={self.max_distance}, bidirectional={self.bidirectional}"
        )


# ---------------------------------------------------------------- Shaw et al. 2018


def shaw_relative_index(
    query_length: int,
    key_length: int,
    max_relative_position: int,
    *,
    device: torch.device | str | None = None,
) -> torch.Tensor:
    """Row of Shaw et al.'s table used by each (query, key) pair: ``clip(j − i, k) + k``.

    Shaw et al. 2018 (arXiv:1803.02155), section 3.2: ``a_{ij} = w_{clip(j − i, k)}`` with
    ``clip(x, k) = max(−k, min(k, x))``, so ``2k + 1`` learned vectors ``w_{−k} … w_k``; row
    ``r`` of a ``[2k + 1, d]`` table holds ``w_{r − k}`` (the layout of tensor2tensor's
    ``_generate_relative_positions_matrix``).

    Equation:
        index[i, j] = clip(j − i, k) + k,  clip(x, k) = max(−k, min(k, x))

    Args:
        query_length: ``T_q``, an int >= 1.
        key_length: ``T_k``, an int >= 1.
        max_relative_position: ``k``, an int >= 1.
        device: where to create the tensor.

    Returns:
        ``index: [T_q, T_k]`` int64 in ``[0, 2k]``.

    Raises:
        TypeError: an argument not an int.
        ValueError: an argument < 1.

    References:
        Shaw et al., Self-Attention with Relative Position Representations, arXiv:1803.02155.
    """
    query_length = check_positive_int("query_length", query_length)
    key_length = check_positive_int("key_length", key_length)
    k = check_positive_int("max_relative_position", max_relative_position)
    return _relative_positions(query_length, key_length, 0, device).clamp(-k, k) + k


def _check_table(name: str, table: torch.Tensor, d: int, like: torch.Tensor) -> int:
    """Validate a ``[2k + 1, d]`` table; return ``k``."""
    check_floating(name, table)
    if table.dim() != 2 or table.shape[1] != d or table.shape[0] % 2 == 0:
        raise ValueError(
            f"{name} must be [2k + 1, d] with d = {d} (an odd number of rows), "
            f"got shape {list(table.shape)}"
        )
    if table.dtype != like.dtype or table.device != like.device:
        raise ValueError(
            f"{name} must have q's dtype and device ({like.dtype}, {like.device}), "
            f"got {table.dtype}, {table.device}"
        )
    return (table.shape[0] - 1) // 2


def shaw_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    rel_keys: torch.Tensor,
    rel_values: torch.Tensor | None = None,
    *,
    causal: bool = False,
    return_weights: bool = False,
) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]:
    """Self-attention with Shaw et al.'s clipped relative position representations.

    Shaw et al. 2018 (arXiv:1803.02155), equations 3–4, with ``a_{ij} = w_{clip(j − i, k)}``::

        e_ij = q_i · (k_j + a^K_ij) / sqrt(d)
        z_i  = Σ_j softmax_j(e_ij) · (v_j + a^V_ij)

    computed as in the paper's section 3.3 (``q kᵀ`` plus a second term ``q_i · a^K_ij``, without
    materialising ``k_j + a^K_ij``). ``k`` is read from the tables' ``2k + 1`` rows; one table is
    shared by every head, as in the paper. Scores and softmax in float32.

    Equation:
        e_ij = q_i · (k_j + a^K_ij) / sqrt(d),  z_i = Σ_j softmax_j(e_ij) · (v_j + a^V_ij),  a_ij = w_clip(j − i, k)

    Args:
        q, k, v: ``[..., T, d]`` floating, same shape, dtype and device.
        rel_keys: ``[2k + 1, d]``, row ``r`` = ``w^K_{r − k}`` (see :func:`shaw_relative_index`).
        rel_values: ``[2k' + 1, d]`` or ``None`` (keys only; the paper's ablation found values add
            little).
        causal: mask keys after the query.
        return_weights: also return the attention weights.

    Returns:
        ``out: [..., T, d]`` in ``v``'s dtype, and with ``return_weights`` the weights
        ``[..., T, T]`` (float32).

    Raises:
        TypeError: a tensor not floating; ``causal``/``return_weights`` not bools.
        ValueError: shapes, dtypes or devices that do not match (see Args).

    References:
        Shaw et al., Self-Attention with Relative Position Representations, arXiv:1803.02155.
    """
    for name, x in (("q", q), ("k", k), ("v", v)):
        check_floating(name, x)
        check_ndim(name, x, minimum=2)
    if k.shape != q.shape or v.shape != q.shape:
        raise ValueError(
            f"q, k and v must have the same shape [..., T, d], got {list(q.shape)}, "
            f"{list(k.shape)}, {list(v.shape)}"
        )
    _check_bool("causal", causal)
    _check_bool("return_weights", return_weights)
    seq_len, d = q.shape[-2], q.shape[-1]
    k_max = _check_table("rel_keys", rel_keys, d, q)
    a_k = rel_keys[shaw_relative_index(seq_len, seq_len, k_max, device=q.device)]  # [T, T, d]
    qf = q.float()
    scores = qf @ k.float().transpose(-2, -1)  # [..., T, T]
    scores = scores + torch.einsum("...id,ijd->...ij", qf, a_k.float())
    scores = scores / math.sqrt(d)
    if causal:
        future = torch.ones(seq_len, seq_len, dtype=torch.bool, device=q.device).triu(1)
        scores = scores.masked_fill(future, float("-inf"))
    weights = scores.softmax(dim=-1)
    out = weights @ v.float()
    if rel_values is not None:
        v_max = _check_table("rel_values", rel_values, d, q)
        a_v = rel_values[shaw_relative_index(seq_len, seq_len, v_max, device=q.device)]
        out = out + torch.einsum("...ij,ijd->...id", weights, a_v.float())
    out = out.to(v.dtype)
    return (out, weights) if return_weights else out


class ShawRelativeEmbeddings(nn.Module):
    """Shaw et al.'s learned tables ``w^K`` (and optionally ``w^V``), ``2k + 1`` rows of ``d``.

    Shaw et al. 2018 (arXiv:1803.02155). ``forward(q, k, v)`` is :func:`shaw_attention` with the
    module's tables. Initialised with ``nn.Embedding``'s default ``N(0, 1)``, scaled by
    ``1/sqrt(d)`` so that the relative term starts no larger than the content term.

    Equation:
        a^K_ij = w^K_clip(j − i, k),  a^V_ij = w^V_clip(j − i, k)

    Args:
        d_head: ``d``, the per-head dimension, an int >= 1.
        max_relative_position: ``k``, the clipping distance, an int >= 1.
        values: also learn ``w^V`` for the values.

    Raises:
        TypeError, ValueError: an argument of the wrong type or < 1.

    References:
        Shaw et al., Self-Attention with Relative Position Representations, arXiv:1803.02155.
    """

    def __init__(self, d_head: int, max_relative_position: int, *, values: bool = True) -> None:
        super().__init__()
        d_head = check_positive_int("d_head", d_head)
        k = check_positive_int("max_relative_position", max_relative_position)
        _check_bool("values", values)
        self.d_head = d_head
        self.max_relative_position = k
        scale = 1.0 / math.sqrt(d_head)
        self.rel_keys = nn.Parameter(torch.randn(2 * k + 1, d_head) * scale)
        self.rel_values = nn.Parameter(torch.randn(2 * k + 1, d_head) * scale) if values else None

    def forward(
        self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *, causal: bool = False
    ) -> torch.Tensor:
        """``out: [..., T, d]``, :func:`shaw_attention` with this module's tables.

        Equation:
            z_i = Σ_j softmax_j(q_i · (k_j + a^K_ij) / sqrt(d)) · (v_j + a^V_ij)

        Args:
            q: queries, ``[..., T, d_head]`` floating.
            k: keys, same shape, dtype and device as ``q``.
            v: values, same shape, dtype and device as ``q``.
            causal: mask keys after the query.

        Returns:
            ``out`` in ``v``'s dtype.

        Raises:
            TypeError, ValueError: as :func:`shaw_attention`.

        Shapes:
            q, k, v: [..., T, d_head] -> [..., T, d_head]
        """
        rel_keys, rel_values = self.rel_keys, self.rel_values
        out, _ = shaw_attention(q, k, v, rel_keys, rel_values, causal=causal, return_weights=True)
        return out

    def extra_repr(self) -> str:
        return (
            f"d_head={self.d_head}, max_relative_position={self.max_relative_position}, "
            f"values={self.rel_values is not None}"
        )
