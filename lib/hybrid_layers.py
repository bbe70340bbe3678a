"""Layers that differ: local/global patterns, windows, chunks, NoPE layers and their temperature.

Since 2024 a model's layers no longer all see positions the same way. Gemma 2 alternates
sliding-window and global layers; Gemma 3 and 4 run five local layers per global one and give the
two kinds different RoPE parameters; Llama 4 and SmolLM3 leave RoPE out of every fourth layer;
Cohere2 rotates only in its sliding-window layers. This module reproduces the rules with
transformers' names (``layer_types``, ``sliding_window``, ``attention_chunk_size``,
``no_rope_layers``, ``floor_scale``, ``attn_scale``); ``tests/test_hybrid_layers.py`` checks
each against the configuration classes and masking code of the pinned transformers.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from lib._checks import (
    check_floating,
    check_integer_tensor,
    check_positive_float,
    check_positive_int,
    values_checkable,
)

__all__ = [
    "LAYER_TYPES",
    "chunked_causal_mask",
    "layer_types_from_pattern",
    "nope_query_temperature",
    "rope_layer_flags",
    "scale_queries",
    "sliding_window_causal_mask",
]

#: The attention kinds transformers names in ``config.layer_types`` and this module draws.
LAYER_TYPES: tuple[str, ...] = ("full_attention", "sliding_attention", "chunked_attention")


def layer_types_from_pattern(num_hidden_layers: int, sliding_window_pattern: int) -> list[str]:
    """Gemma's rule: every ``sliding_window_pattern``-th layer is global, the others are local.

    Equation:
        layer i (0-based) is ``"full_attention"`` if (i + 1) mod p = 0, else ``"sliding_attention"``

    Args:
        num_hidden_layers: the number of layers, an int >= 1.
        sliding_window_pattern: p, an int >= 1 (Gemma 2: 2; Gemma 3 and 4: 6, i.e. 5 local : 1
            global; Cohere2: 4). p = 1 makes every layer global.

    Returns:
        A list of ``num_hidden_layers`` strings, transformers' ``config.layer_types``.

    Raises:
        ValueError: an argument that is not an int >= 1.

    References:
        Gemma Team, Gemma 2, arXiv:2408.00118; Gemma Team, Gemma 3 Technical Report, arXiv:2503.19786.
    """
    n = check_positive_int("num_hidden_layers", num_hidden_layers)
    p = check_positive_int("sliding_window_pattern", sliding_window_pattern)
    return ["full_attention" if (i + 1) % p == 0 else "sliding_attention" for i in range(n)]


def rope_layer_flags(num_hidden_layers: int, no_rope_layer_interval: int) -> list[int]:
    """Llama 4 / SmolLM3's ``no_rope_layers``: 1 where a layer applies RoPE, 0 where it is NoPE.

    The name reads backwards: transformers stores *use RoPE* flags under ``no_rope_layers``
    (``self.use_rope = config.no_rope_layers[layer_idx]``).

    Equation:
        flag_i = 0 if (i + 1) mod interval = 0, else 1

    Args:
        num_hidden_layers: the number of layers, an int >= 1.
        no_rope_layer_interval: every this-many-th layer is NoPE, an int >= 1 (both models: 4).

    Returns:
        A list of ``num_hidden_layers`` ints in {0, 1}.

    Raises:
        ValueError: an argument that is not an int >= 1.

    References:
        Yang et al., Rope to Nope and Back Again: A New Hybrid Attention Strategy, arXiv:2501.18795.
    """
    n = check_positive_int("num_hidden_layers", num_hidden_layers)
    k = check_positive_int("no_rope_layer_interval", no_rope_layer_interval)
    return [int((i + 1) % k != 0) for i in range(n)]


def _causal_mask(
    seq_len: int,
    size_name: str,
    size: int,
    rule: Callable[[torch.Tensor, torch.Tensor, int], torch.Tensor],
) -> torch.Tensor:
    """The causal mask [T, T] of both local rules, narrowed by ``rule(q, k, size)``.

    Checks ``seq_len`` and the rule's size (named ``size_name`` in the error), then builds query
    positions as a column and key positions as a row.
    """
    t = check_positive_int("seq_len", seq_len)
    n = check_positive_int(size_name, size)
    positions = torch.arange(t)
    q, k = positions[:, None], positions[None, :]
    return (k <= q) & rule(q, k, n)


def sliding_window_causal_mask(seq_len: int, sliding_window: int) -> torch.Tensor:
    """Which keys a query of a sliding-window layer sees: itself and the ``sliding_window − 1`` before.

    Equation:
        allowed[q, k] = (k <= q) and (k > q − W)

    Args:
        seq_len: T, an int >= 1.
        sliding_window: W, an int >= 1 (transformers' ``config.sliding_window``).

    Returns:
        A bool tensor [T, T], True where query q may attend to key k: a band of W diagonals, on
        and below the main one.

    Raises:
        ValueError: ``seq_len`` or ``sliding_window`` not an int >= 1.

    Shapes:
        out: [T, T]

    References:
        Beltagy et al., Longformer, arXiv:2004.05150.
    """
    return _causal_mask(seq_len, "sliding_window", sliding_window, lambda q, k, w: k > q - w)


def chunked_causal_mask(seq_len: int, attention_chunk_size: int) -> torch.Tensor:
    """Llama 4's chunked attention: a query sees the earlier keys of its own chunk only.

    Equation:
        allowed[q, k] = (k <= q) and (⌊k / C⌋ = ⌊q / C⌋)

    Args:
        seq_len: T, an int >= 1.
        attention_chunk_size: C, an int >= 1 (Llama 4: 8192).

    Returns:
        A bool tensor [T, T], True where query q may attend to key k: causal triangles of side C
        along the diagonal, nothing between chunks.

    Raises:
        ValueError: ``seq_len`` or ``attention_chunk_size`` not an int >= 1.

    Shapes:
        out: [T, T]
    """
    return _causal_mask(
        seq_len, "attention_chunk_size", attention_chunk_size, lambda q, k, c: k // c == q // c
    )


def nope_query_temperature(
    positions: torch.Tensor, *, floor_scale: float = 8192.0, attn_scale: float = 0.1
) -> torch.Tensor:
    """Llama 4's query temperature on its NoPE layers: a factor that grows with the log of position.

    Llama4TextAttention multiplies the queries of each NoPE layer by this factor (when
    ``attn_temperature_tuning`` is on), so a far query's softmax is sharper; it is 1 for the first
    ``floor_scale − 1`` positions.

    Equation:
        s(p) = 1 + attn_scale · log(1 + ⌊(p + 1) / floor_scale⌋)

    Args:
        positions: absolute positions p, an integer tensor of values >= 0.
        floor_scale: a float > 0 (Llama 4: 8192).
        attn_scale: a float > 0 (Llama 4: 0.1).

    Returns:
        A float32 tensor, shape of ``positions``.

    Raises:
        TypeError: ``positions`` is not an integer tensor.
        ValueError: a negative position, or ``floor_scale``/``attn_scale`` not > 0.

    Shapes:
        positions, out: [...]

    References:
        Nakanishi, Scalable-Softmax Is Superior for Attention, arXiv:2501.19399.
    """
    pos = check_integer_tensor("positions", positions)
    if values_checkable(pos) and pos.numel() and int(pos.min()) < 0:
        raise ValueError(f"positions must be >= 0, got {int(pos.min())}")
    fs = check_positive_float("floor_scale", floor_scale)
    scale = check_positive_float("attn_scale", attn_scale)
    return torch.log1p(torch.floor((pos.float() + 1.0) / fs)) * scale + 1.0


def scale_queries(queries: torch.Tensor, temperature: torch.Tensor) -> torch.Tensor:
    """Multiply each position's queries by its temperature (broadcast over heads and head dims).

    Args:
        queries: a floating tensor [..., T, d_head].
        temperature: a floating tensor [T] (from :func:`nope_query_temperature`).

    Returns:
        ``queries · temperature[:, None]``, shape and dtype of ``queries``.

    Raises:
        TypeError: a non-floating argument.
        ValueError: ``temperature`` is not one value per position.

    Shapes:
        queries, out: [..., T, d_head]
        temperature: [T]
    """
    q = check_floating("queries", queries)
    t = check_floating("temperature", temperature)
    if t.ndim != 1 or q.ndim < 2 or t.shape[0] != q.shape[-2]:
        raise ValueError(
            f"temperature must have shape [T] with T = queries.shape[-2]; "
            f"got {tuple(t.shape)} for queries {tuple(q.shape)}"
        )
    return (q * t[:, None]).to(q.dtype)
