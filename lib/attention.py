"""A minimal, readable scaled dot-product attention and a multi-head self-attention module.

Vaswani et al. 2017 ("Attention Is All You Need", arXiv:1706.03762), equation 1::

    Attention(Q, K, V) = softmax(Q Kᵀ / sqrt(d) + B) V

where ``B`` is an optional additive bias (ALiBi, a padding mask, ``−inf`` for masked keys).
Scores and softmax are computed in float32 whatever the input dtype. The chapters use these to
show effects (permutation equivariance, what a position scheme does to the score matrix); for
speed use ``torch.nn.functional.scaled_dot_product_attention``, which the tests compare against.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
from torch import nn

from lib._checks import (
    check_floating,
    check_ndim,
    check_positive_float,
    check_positive_int,
    values_checkable,
)

__all__ = ["SelfAttention", "attention"]


def _check_bias_shape(bias: torch.Tensor, scores_shape: tuple[int, ...]) -> None:
    """Raise ``ValueError`` unless ``bias`` broadcasts to ``scores_shape`` without enlarging it."""
    ok = bias.dim() <= len(scores_shape) and all(
        b in (1, s) for b, s in zip(reversed(bias.shape), reversed(scores_shape), strict=False)
    )
    if not ok:
        raise ValueError(
            f"bias must broadcast to the scores' shape [..., T_q, T_k] = {list(scores_shape)} "
            f"(each dimension 1 or equal, aligned from the right), got shape {list(bias.shape)}"
        )


def attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    *,
    bias: torch.Tensor | None = None,
    causal: bool = False,
    scale: float | None = None,
    return_weights: bool = False,
) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]:
    """Scaled dot-product attention, ``softmax(q kᵀ · scale + bias) v`` with ``scale = 1/sqrt(d)``.

    Vaswani et al. 2017 (arXiv:1706.03762), equation 1. ``bias`` is added to the scores before
    softmax (use ``−inf`` to mask a key). ``causal=True`` masks every key ``j > i`` for query
    ``i``; it requires ``T_q == T_k`` (for a query block at the end of a longer key sequence, as
    in KV-cached generation, pass the mask you mean as ``bias``: top-left and bottom-right
    alignment differ there). Scores, softmax and the weighted sum run in float32; ``out`` is
    returned in ``v``'s dtype. Matches ``torch.nn.functional.scaled_dot_product_attention`` with
    ``attn_mask=bias`` / ``is_causal=causal``.

    Equation:
        out = softmax(q kᵀ · scale + bias) v,  scale = 1/sqrt(d)

    Args:
        q: queries ``[..., T_q, d]``, floating point.
        k: keys ``[..., T_k, d]``, same leading dims, dtype and device as ``q``.
        v: values ``[..., T_k, d_v]``, same leading dims, dtype and device as ``q``.
        bias: optional float tensor broadcastable to the scores ``[..., T_q, T_k]`` without
            enlarging them (e.g. ``[H, T, T]`` for ``q: [B, H, T, d]``).
        causal: mask keys after the query (needs ``T_q == T_k``).
        scale: score scale, a real number > 0; default ``1 / sqrt(d)``.
        return_weights: also return the attention weights.

    Returns:
        ``out: [..., T_q, d_v]`` (dtype of ``v``), or ``(out, weights)`` with
        ``weights: [..., T_q, T_k]`` float32 (rows sum to 1) when ``return_weights=True``.

    Raises:
        TypeError: ``q``/``k``/``v``/``bias`` is not a floating tensor, or ``causal`` /
            ``return_weights`` is not a bool.
        ValueError: fewer than 2 dims; leading dims, ``d`` or ``T_k`` do not match; dtypes or
            devices differ; ``bias`` does not broadcast to ``[..., T_q, T_k]``; ``causal`` with
            ``T_q != T_k``; ``T_k = 0`` or ``d = 0``; or a query row has every key masked
            (softmax would give NaN; checked for CPU tensors only).

    References:
        Vaswani et al., Attention Is All You Need, arXiv:1706.03762.
    """
    for name, t in (("q", q), ("k", k), ("v", v)):
        check_floating(name, t)
        check_ndim(name, t, minimum=2)
    for name, flag in (("causal", causal), ("return_weights", return_weights)):
        if not isinstance(flag, bool):
            raise TypeError(f"{name} must be a bool, got {type(flag).__name__} {flag!r}")
    if not (q.dtype == k.dtype == v.dtype):
        raise ValueError(f"q, k, v must share a dtype, got {q.dtype}, {k.dtype}, {v.dtype}")
    if not (q.device == k.device == v.device):
        raise ValueError(f"q, k, v must be on one device, got {q.device}, {k.device}, {v.device}")
    if not (q.shape[:-2] == k.shape[:-2] == v.shape[:-2]):
        raise ValueError(
            "q, k, v must have the same leading dims [...] (no broadcasting), got "
            f"q {list(q.shape)}, k {list(k.shape)}, v {list(v.shape)}"
        )
    if q.shape[-1] != k.shape[-1]:
        raise ValueError(
            f"q and k must have the same last dim d, got q {list(q.shape)} and k {list(k.shape)}"
        )
    if k.shape[-2] != v.shape[-2]:
        raise ValueError(
            f"k and v must have the same number of keys T_k, got k {list(k.shape)} and "
            f"v {list(v.shape)}"
        )
    t_q, t_k = q.shape[-2], k.shape[-2]
    if t_k == 0:
        raise ValueError(
            f"k and v must hold at least one key (T_k >= 1), got k {list(k.shape)}: attention "
            "over no keys has no weights to normalise"
        )
    if q.shape[-1] == 0:
        raise ValueError(f"q and k must have a last dim d >= 1, got q {list(q.shape)}")
    if causal and t_q != t_k:
        raise ValueError(
            f"causal=True needs T_q == T_k, got T_q={t_q}, T_k={t_k}; pass an explicit bias instead"
        )
    scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else check_positive_float("scale", scale)

    scores = (q.float() @ k.float().transpose(-2, -1)) * scale  # [..., T_q, T_k]
    if bias is not None:
        check_floating("bias", bias)
        if bias.device != q.device:
            raise ValueError(f"bias must be on q's device {q.device}, got {bias.device}")
        _check_bias_shape(bias, tuple(scores.shape))
        scores = scores + bias.float()  # [..., T_q, T_k] (bias broadcast)
    if causal:
        future = torch.ones(t_q, t_k, dtype=torch.bool, device=q.device).triu(1)  # [T_q, T_k]
        scores = scores.masked_fill(future, float("-inf"))
    # A value check, so CPU only: no values on meta, no host sync per call on an accelerator
    # (lib._checks.values_checkable); there a fully masked row gives NaN, as in torch's SDPA.
    if scores.numel() and values_checkable(scores) and torch.isneginf(scores).all(dim=-1).any():
        raise ValueError(
            "every key is masked (-inf) for at least one query row: softmax would be NaN; "
            "check bias and causal"
        )
    weights = torch.softmax(scores, dim=-1)  # [..., T_q, T_k], float32
    out = (weights @ v.float()).to(v.dtype)  # [..., T_q, d_v]
    return (out, weights) if return_weights else out


class SelfAttention(nn.Module):
    """Multi-head self-attention, batch-first, with optional bias, causal mask and rotary hook.

    Vaswani et al. 2017 (arXiv:1706.03762), section 3.2.2::

        head_h = Attention(x W_q^h, x W_k^h, x W_v^h),   out = concat(head_1 … head_H) W_o

    Projection names follow Hugging Face LLaMA (``q_proj``, ``k_proj``, ``v_proj``, ``o_proj``).
    Nothing here knows about positions: with no bias and no rotary hook the module is permutation
    equivariant (permuting the tokens permutes the output the same way). Positions plug in through
    ``attn_bias`` (ALiBi: ``lib.alibi.alibi_bias``) or ``rotary``, a callable applied separately to
    ``q`` and to ``k`` of shape ``[B, H, T, d_head]`` that must return the same shape (RoPE:
    ``lambda t: lib.rope.apply_rope(t, cos, sin)``).

    Equation:
        head_h = Attention(x W_q^h, x W_k^h, x W_v^h),  out = concat(head_1 … head_H) W_o

    Args:
        d_model: model width, an int >= 1 divisible by ``n_heads``.
        n_heads: number of heads ``H``, an int >= 1; ``d_head = d_model / n_heads``.
        bias: whether the four projections have a bias term.

    Raises:
        TypeError: ``x`` is not a floating tensor; ``rotary`` is not callable.
        ValueError: ``d_model`` not divisible by ``n_heads``; ``x`` is not ``[B, T, d_model]``;
            ``rotary`` changes the shape; plus the errors of :func:`attention`.

    Shapes:
        ``x: [B, T, d_model]`` floating  →  ``[B, T, d_model]`` (plus weights ``[B, H, T, T]``
        float32 when ``return_weights=True``). ``attn_bias`` broadcastable to ``[B, H, T, T]``.

    References:
        Vaswani et al., Attention Is All You Need, arXiv:1706.03762.
    """

    def __init__(self, d_model: int, n_heads: int, *, bias: bool = False) -> None:
        super().__init__()
        self.d_model = check_positive_int("d_model", d_model)
        self.n_heads = check_positive_int("n_heads", n_heads)
        if not isinstance(bias, bool):
            raise TypeError(f"bias must be a bool, got {type(bias).__name__} {bias!r}")
        if self.d_model % self.n_heads:
            raise ValueError(
                f"d_model must be divisible by n_heads, got d_model={d_model}, n_heads={n_heads}"
            )
        self.d_head = self.d_model // self.n_heads
        self.q_proj = nn.Linear(self.d_model, self.d_model, bias=bias)
        self.k_proj = nn.Linear(self.d_model, self.d_model, bias=bias)
        self.v_proj = nn.Linear(self.d_model, self.d_model, bias=bias)
        self.o_proj = nn.Linear(self.d_model, self.d_model, bias=bias)

    def _split_heads(self, t: torch.Tensor) -> torch.Tensor:
        b, s, _ = t.shape
        t = t.view(b, s, self.n_heads, self.d_head)  # [B, T, D] -> [B, T, H, d_head]
        return t.transpose(1, 2)  # [B, T, H, d_head] -> [B, H, T, d_head]

    def forward(
        self,
        x: torch.Tensor,
        *,
        attn_bias: torch.Tensor | None = None,
        causal: bool = False,
        rotary: Callable[[torch.Tensor], torch.Tensor] | None = None,
        return_weights: bool = False,
    ) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]:
        """Attend ``x: [B, T, D]`` to itself → ``[B, T, D]`` (+ weights ``[B, H, T, T]``).

        Equation:
            out = concat_h(softmax(q_h k_hᵀ / √d_head + attn_bias_h, causal mask) v_h) W_o,
            with q = rotary(x W_q), k = rotary(x W_k) when ``rotary`` is given

        Args:
            x: the tokens, a floating tensor ``[B, T, d_model]``.
            attn_bias: added to the scores before the softmax (ALiBi, T5), broadcastable to
                ``[B, H, T, T]``, or None.
            causal: mask the future keys (``j > i``).
            rotary: applied separately to ``q`` and ``k`` of shape ``[B, H, T, d_head]``; must
                return that shape (RoPE), or None.
            return_weights: also return the attention weights.

        Returns:
            ``out``, or ``(out, weights)`` with ``return_weights=True``.

        Raises:
            TypeError: ``x`` is not a floating tensor; ``return_weights`` is not a bool;
                ``rotary`` is not callable.
            ValueError: ``x`` is not ``[B, T, d_model]``; ``rotary`` changes the shape; plus the
                errors of :func:`attention`.

        Shapes:
            x: [B, T, d_model] -> out: [B, T, d_model], weights: [B, H, T, T] float32
            attn_bias: broadcastable to [B, H, T, T]
        """
        check_floating("x", x)
        if x.dim() != 3 or x.shape[-1] != self.d_model:
            raise ValueError(f"x must be [B, T, d_model={self.d_model}], got {list(x.shape)}")
        if not isinstance(return_weights, bool):
            kind = type(return_weights).__name__
            raise TypeError(f"return_weights must be a bool, got {kind} {return_weights!r}")
        if rotary is not None and not callable(rotary):
            raise TypeError(f"rotary must be a callable or None, got {type(rotary).__name__}")
        b, s, _ = x.shape
        q = self._split_heads(self.q_proj(x))  # [B, H, T, d_head]
        k = self._split_heads(self.k_proj(x))  # [B, H, T, d_head]
        v = self._split_heads(self.v_proj(x))  # [B, H, T, d_head]
        if rotary is not None:
            q_rot, k_rot = rotary(q), rotary(k)
            for name, before, after in (("q", q, q_rot), ("k", k, k_rot)):
                if not isinstance(after, torch.Tensor) or after.shape != before.shape:
                    got = list(after.shape) if isinstance(after, torch.Tensor) else type(after)
                    raise ValueError(
                        f"rotary must return a tensor of the shape it gets, [B, H, T, d_head] = "
                        f"{list(before.shape)}, for {name}; got {got}"
                    )
            q, k = q_rot, k_rot
        out, weights = attention(q, k, v, bias=attn_bias, causal=causal, return_weights=True)
        out = out.transpose(1, 2).reshape(b, s, self.d_model)  # [B, H, T, d_head] -> [B, T, D]
        out = self.o_proj(out)  # [B, T, d_model]
        return (out, weights) if return_weights else out

    def extra_repr(self) -> str:
        return f"d_model={self.d_model}, n_heads={self.n_heads}, d_head={self.d_head}"
