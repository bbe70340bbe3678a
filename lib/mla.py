"""DeepSeek's multi-head latent attention (MLA) and its decoupled RoPE.

MLA caches one small latent ``c_kv`` per token instead of per-head keys and values; each head's
key is ``k_h = W_UK,h c_kv``. Without positions, a query never needs ``k_h``: the score
``q_h · (W_UK,h c)`` equals ``(W_UK,hᵀ q_h) · c``, so ``W_UK`` can be *absorbed* into the query
side and attention runs on the cache directly. RoPE between the two factors,
``q_hᵀ R_mᵀ R_n W_UK,h c``, puts a position-dependent rotation between them, and the absorbed
matrix would change with n − m. DeepSeek-V2 therefore splits each head into a part without RoPE
(``qk_nope_head_dim``, absorbable) and a small rotated part (``qk_rope_head_dim``) whose key is
computed from the hidden state and shared by all heads (one extra cached vector per token).

``tests/test_mla.py`` checks these functions against transformers' ``DeepseekV3Attention``
(``yarn_apply_mscale``, ``apply_rotary_pos_emb_interleave``, ``eager_attention_forward``).
"""

from __future__ import annotations

import math

import torch

from lib._checks import check_floating, check_mapping, check_positive_int
from lib.rope import apply_rope, interleaved_to_half_permutation

__all__ = [
    "absorbed_nope_scores",
    "decoupled_scores",
    "interleave_rope_deepseek",
    "mla_softmax_scale",
    "yarn_get_mscale",
]


def yarn_get_mscale(scale: float, mscale: float = 1.0) -> float:
    """YaRN's attention-temperature factor as DeepSeek's code writes it.

    Equation:
        mscale(s, μ) = 1 if s <= 1, else 0.1 · μ · ln s + 1

    Args:
        scale: the context-extension factor s.
        mscale: μ, the multiplier of the log term.

    Returns:
        The factor, a float.

    References:
        Peng et al., YaRN, arXiv:2309.00071; DeepSeek-AI, DeepSeek-V2, arXiv:2405.04434.
    """
    s, mu = float(scale), float(mscale)
    if s <= 1:
        return 1.0
    return 0.1 * mu * math.log(s) + 1.0


def mla_softmax_scale(qk_head_dim: int, rope_parameters: dict) -> float:
    """The softmax scale of DeepSeek-V2/V3's attention: 1/√d, times mscale² under YaRN.

    DeepSeek multiplies the *score* scale by ``mscale(factor, mscale_all_dim)²`` (the same factor
    on q and on k), so every one of the ``qk_nope_head_dim + qk_rope_head_dim`` dimensions of the
    dot product is sharpened, not only the rotated ones whose frequencies YaRN changed.

    Equation:
        scale = d^(−1/2) · mscale(factor, mscale_all_dim)²  (rope type not "default" and
        mscale_all_dim ≠ 0); else d^(−1/2),  d = qk_nope_head_dim + qk_rope_head_dim

    Args:
        qk_head_dim: d, an int >= 1 (DeepSeek-V3: 128 + 64 = 192).
        rope_parameters: transformers' ``config.rope_parameters`` (a mapping with ``rope_type``
            and, for YaRN, ``factor`` and ``mscale_all_dim``).

    Returns:
        The scale, a float.

    Raises:
        ValueError: a bad ``qk_head_dim``.
        TypeError: ``rope_parameters`` is not a mapping.

    References:
        DeepSeek-AI, DeepSeek-V3 Technical Report, arXiv:2412.19437.
    """
    d = check_positive_int("qk_head_dim", qk_head_dim)
    params = check_mapping("rope_parameters", rope_parameters)
    scaling = d**-0.5
    if params.get("rope_type", "default") != "default":
        mscale_all_dim = params.get("mscale_all_dim", 0)
        if mscale_all_dim:
            m = yarn_get_mscale(params["factor"], mscale_all_dim)
            scaling = scaling * m * m
    return scaling


def decoupled_scores(
    q_nope: torch.Tensor,
    q_rope: torch.Tensor,
    k_nope: torch.Tensor,
    k_rope: torch.Tensor,
    scaling: float,
) -> torch.Tensor:
    """MLA's attention scores: a per-head content part plus a rotated part with one shared key.

    Equation:
        s_h[t, u] = scaling · (q_nope,h[t] · k_nope,h[u] + q_rope,h[t] · k_rope[u])

    Args:
        q_nope: queries without RoPE, floating [..., H, T, d_nope].
        q_rope: rotated queries, floating [..., H, T, d_rope].
        k_nope: keys without RoPE (``W_UK c_kv``), floating [..., H, S, d_nope].
        k_rope: the rotated key, one per token shared by all heads, floating [..., 1, S, d_rope].
        scaling: the softmax scale (:func:`mla_softmax_scale`).

    Returns:
        Scores [..., H, T, S] (before masking and softmax).

    Raises:
        TypeError: a non-floating tensor.
        ValueError: mismatched head dims.

    Shapes:
        q_nope: [..., H, T, d_nope]; q_rope: [..., H, T, d_rope]
        k_nope: [..., H, S, d_nope]; k_rope: [..., 1, S, d_rope]
        out: [..., H, T, S]

    References:
        DeepSeek-AI, DeepSeek-V2, arXiv:2405.04434 (section 2.1.3).
    """
    for name, t in (("q_nope", q_nope), ("q_rope", q_rope), ("k_nope", k_nope), ("k_rope", k_rope)):
        check_floating(name, t)
    if q_nope.shape[-1] != k_nope.shape[-1] or q_rope.shape[-1] != k_rope.shape[-1]:
        raise ValueError(
            f"head dims must match: q_nope {q_nope.shape[-1]} vs k_nope {k_nope.shape[-1]}, "
            f"q_rope {q_rope.shape[-1]} vs k_rope {k_rope.shape[-1]}"
        )
    content = q_nope @ k_nope.transpose(-1, -2)
    position = q_rope @ k_rope.transpose(-1, -2)
    return (content + position) * scaling


def absorbed_nope_scores(
    q_nope: torch.Tensor, c_kv: torch.Tensor, w_uk: torch.Tensor
) -> torch.Tensor:
    """The content scores computed on the latent cache: ``W_UK`` absorbed into the query.

    Equation:
        q_h · (W_UK,h c) = (W_UK,hᵀ q_h) · c

    Args:
        q_nope: queries without RoPE, floating [H, T, d_nope].
        c_kv: the cached latents, floating [S, d_c].
        w_uk: the key up-projection per head, floating [H, d_nope, d_c].

    Returns:
        ``(q_nope @ w_uk) @ c_kvᵀ``, [H, T, S]; equal to ``q_nope @ (w_uk @ c_kvᵀ)``.

    Raises:
        TypeError: a non-floating tensor.
        ValueError: shapes that do not chain.

    Shapes:
        q_nope: [H, T, d_nope]; c_kv: [S, d_c]; w_uk: [H, d_nope, d_c]; out: [H, T, S]
    """
    for name, t in (("q_nope", q_nope), ("c_kv", c_kv), ("w_uk", w_uk)):
        check_floating(name, t)
    if w_uk.ndim != 3 or q_nope.shape[-1] != w_uk.shape[1] or c_kv.shape[-1] != w_uk.shape[2]:
        raise ValueError(
            f"w_uk must be [H, d_nope, d_c] matching q_nope {tuple(q_nope.shape)} and c_kv "
            f"{tuple(c_kv.shape)}, got {tuple(w_uk.shape)}"
        )
    return (q_nope @ w_uk) @ c_kv.transpose(-1, -2)


def interleave_rope_deepseek(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """DeepSeek's ``rope_interleave``: rotate pairs (2i, 2i+1), write the result as two halves.

    DeepSeek's checkpoints lay the rotated dims out in interleaved pairs. transformers rotates them
    as such and returns ``[even parts…, odd parts…]``: the interleaved rotation followed by the
    permutation to the half layout. Queries and keys get the same permutation, so every dot
    product is unchanged; the weights need no permuting (as Meta → HF Llama conversion does).

    Equation:
        y = P · RoPE_interleaved(x),  P = :func:`lib.rope.interleaved_to_half_permutation`

    Args:
        x: rotated part of queries or keys, floating [..., T, d_rope].
        cos: cos(m θ_i), [..., T, d_rope/2].
        sin: same shape as ``cos``.

    Returns:
        Shape and dtype of ``x``.

    Raises:
        TypeError: a non-floating argument.
        ValueError: see :func:`lib.rope.apply_rope`.

    Shapes:
        x, out: [..., T, d_rope]; cos, sin: [..., T, d_rope // 2]
    """
    x = check_floating("x", x)
    y = apply_rope(x, cos, sin, pairing="interleaved")
    return y[..., interleaved_to_half_permutation(x.shape[-1])]
