"""gpt-oss's learned attention sinks: one extra logit per head in the softmax's denominator.

StreamingLLM found that models park attention on the first tokens when nothing else needs it, and
kept those tokens in the cache as *sinks*. gpt-oss learns the sink instead: each head ``h`` has
one parameter ``s_h`` (transformers' ``GptOssAttention.sinks``) that joins the softmax as a logit
with no value behind it. A query can then give most of its weight to "nothing", and its weights
over the real keys sum to less than 1. The sink has no position: it is the same for every query
and key, so it does not depend on RoPE, the window or the context length.

``tests/test_attention_sinks.py`` checks :func:`sink_softmax` against ``eager_attention_forward``
of transformers' ``modeling_gpt_oss`` and :func:`attention_with_sinks` against a whole
``GptOssAttention`` layer.
"""

from __future__ import annotations

import torch

from lib._checks import check_floating

__all__ = ["attention_with_sinks", "sink_mass", "sink_softmax"]


def _check_sinks(scores: torch.Tensor, sinks: torch.Tensor) -> torch.Tensor:
    s = check_floating("sinks", sinks)
    if scores.ndim < 3 or s.ndim != 1 or s.shape[0] != scores.shape[-3]:
        raise ValueError(
            f"sinks must have shape [H] with H = scores.shape[-3] (scores [..., H, T, S]); "
            f"got sinks {tuple(s.shape)} for scores {tuple(scores.shape)}"
        )
    return s


def sink_softmax(scores: torch.Tensor, sinks: torch.Tensor) -> torch.Tensor:
    """Softmax over the keys with one learned sink logit per head added to the denominator.

    Equation:
        w_h[t, u] = exp(a_h[t, u]) / (exp(s_h) + Σ_u' exp(a_h[t, u']))

    Args:
        scores: scaled, masked attention logits a, floating [..., H, T, S] (masked entries −inf).
        sinks: the per-head sink logits s, floating [H] (transformers' ``GptOssAttention.sinks``).

    Returns:
        Weights of ``scores``' shape and dtype; each row sums to ``1 − sink_mass`` < 1. A fully
        masked row gets all-zero weights (the sink takes everything).

    Raises:
        TypeError: a non-floating argument.
        ValueError: ``sinks`` not one value per head.

    Shapes:
        scores, out: [..., H, T, S]
        sinks: [H]

    References:
        OpenAI, gpt-oss-120b & gpt-oss-20b Model Card, arXiv:2508.10925; Xiao et al., Efficient
        Streaming Language Models with Attention Sinks, arXiv:2309.17453.
    """
    a = check_floating("scores", scores)
    s = _check_sinks(a, sinks).to(a.dtype)
    sink_col = s[:, None, None].expand(*a.shape[:-1], 1)
    logits = torch.cat([a, sink_col], dim=-1)
    return torch.softmax(logits, dim=-1)[..., :-1]


def sink_mass(scores: torch.Tensor, sinks: torch.Tensor) -> torch.Tensor:
    """The weight each query gives to its head's sink: what :func:`sink_softmax` leaves out.

    Equation:
        m_h[t] = exp(s_h) / (exp(s_h) + Σ_u exp(a_h[t, u])) = σ(s_h − logsumexp_u a_h[t, u])

    Args:
        scores: scaled, masked attention logits, floating [..., H, T, S].
        sinks: per-head sink logits, floating [H].

    Returns:
        A tensor [..., H, T] of values in (0, 1], dtype of ``scores``.

    Raises:
        TypeError: a non-floating argument.
        ValueError: ``sinks`` not one value per head.

    Shapes:
        scores: [..., H, T, S]; sinks: [H]; out: [..., H, T]
    """
    a = check_floating("scores", scores)
    s = _check_sinks(a, sinks).to(a.dtype)
    return torch.sigmoid(s[:, None] - torch.logsumexp(a, dim=-1))


def attention_with_sinks(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    sinks: torch.Tensor,
    *,
    scaling: float,
    mask: torch.Tensor | None = None,
) -> torch.Tensor:
    """Attention as gpt-oss computes it: scaled scores, mask, sink softmax, weighted values.

    Keys and values with fewer heads than the queries (grouped-query attention) are repeated
    to the queries' heads, as transformers' ``repeat_kv`` does.

    Equation:
        out_h[t] = Σ_u w_h[t, u] v_h[u],  w = :func:`sink_softmax`(scaling · q kᵀ + mask, s)

    Args:
        q: queries (RoPE already applied), floating [B, H, T, d].
        k: keys, floating [B, H_kv, S, d], H a multiple of H_kv.
        v: values, floating [B, H_kv, S, d_v].
        sinks: per-head sink logits, floating [H].
        scaling: the score scale (gpt-oss: ``head_dim ** -0.5``).
        mask: optional bool tensor broadcastable to [B, H, T, S], True where a key may be seen.

    Returns:
        The attention output [B, H, T, d_v] (heads not yet merged).

    Raises:
        TypeError: a non-floating tensor or a non-bool mask.
        ValueError: heads that do not divide, or mismatched dims.

    Shapes:
        q: [B, H, T, d]; k: [B, H_kv, S, d]; v: [B, H_kv, S, d_v]; sinks: [H]
        mask: broadcastable to [B, H, T, S]; out: [B, H, T, d_v]

    References:
        OpenAI, gpt-oss-120b & gpt-oss-20b Model Card, arXiv:2508.10925.
    """
    for name, t in (("q", q), ("k", k), ("v", v)):
        check_floating(name, t)
        if t.ndim != 4:
            raise ValueError(f"{name} must be [B, heads, T, d], got shape {tuple(t.shape)}")
    h, h_kv = q.shape[1], k.shape[1]
    if v.shape[1] != h_kv or h % h_kv or q.shape[-1] != k.shape[-1] or k.shape[2] != v.shape[2]:
        raise ValueError(
            f"q {tuple(q.shape)}, k {tuple(k.shape)}, v {tuple(v.shape)}: k and v need the same "
            f"heads and length, q's heads a multiple of theirs and q's head dim equal to k's"
        )
    k = k.repeat_interleave(h // h_kv, dim=1)
    v = v.repeat_interleave(h // h_kv, dim=1)
    scores = (q @ k.transpose(-1, -2)) * float(scaling)
    if mask is not None:
        if not isinstance(mask, torch.Tensor) or mask.dtype != torch.bool:
            raise TypeError(f"mask must be a bool tensor, got {type(mask).__name__}")
        scores = scores.masked_fill(~mask, float("-inf"))
    return sink_softmax(scores, sinks) @ v
