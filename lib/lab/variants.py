"""The trained RoPE model's variants: zero-shot scalings and the two fine-tunes."""

from __future__ import annotations

import torch

from lib._checks import (
    check_choice,
    check_positive_int,
)
from lib.rope_scaling import ROPE_SCALING

ZERO_SHOT_SCALING: tuple[str, ...] = ("linear", "ntk", "dynamic", "yarn", "llama3")

#: Dynamic NTK's configured factor (transformers' ``rope_scaling["factor"]``) in the lab.
DYNAMIC_FACTOR = 2.0


def scaled_rope_frequencies(
    method: str, d_head: int, base: float, *, seq_len: int, train_len: int
) -> tuple[torch.Tensor, float]:
    """``(inv_freq, attention_factor)`` of a RoPE scaling method at length ``seq_len``.

    The factor is ``s = seq_len / train_len`` (the method is told the length it must reach); up
    to ``train_len`` every method gives the default frequencies. Settings: ``"linear"`` (PI) and
    ``"ntk"`` with factor ``s``; ``"dynamic"`` with the configured factor :data:`DYNAMIC_FACTOR` and
    the current length ``seq_len`` (its base grows with the length); ``"yarn"`` with factor ``s``,
    original length ``train_len`` and the default β's; ``"llama3"`` with factor ``s``, Llama 3.1's
    low/high frequency factors 1 and 4 and original length ``train_len``. All come from
    :data:`lib.rope_scaling.ROPE_SCALING`.

    Equation:
        s = seq_len / train_len  (methods other than "dynamic", seq_len > train_len)

    Args:
        method: ``"default"`` or one of :data:`ZERO_SHOT_SCALING`.
        d_head: the head width.
        base: the RoPE base.
        seq_len: the evaluation length, an int >= 1.
        train_len: the training length, an int >= 1.

    Returns:
        ``(inv_freq, attention_factor)``.

    Raises:
        ValueError: ``method`` is not ``"default"`` or one of :data:`ZERO_SHOT_SCALING`; a size
            is < 1.

    Shapes:
        inv_freq: [d_head/2]

    References:
        Chen et al., Extending Context Window of Large Language Models via Positional Interpolation,
        arXiv:2306.15595.
        Peng et al., YaRN, arXiv:2309.00071.
        Grattafiori et al., The Llama 3 Herd of Models, arXiv:2407.21783.
    """
    check_choice("method", method, ("default", *ZERO_SHOT_SCALING))
    seq_len = check_positive_int("seq_len", seq_len)
    train_len = check_positive_int("train_len", train_len)
    if method == "default" or seq_len <= train_len:
        return ROPE_SCALING["default"](d_head, base)
    factor = seq_len / train_len
    if method in ("linear", "ntk"):
        return ROPE_SCALING[method](d_head, base, factor=factor)
    if method == "dynamic":
        return ROPE_SCALING["dynamic"](
            d_head,
            base,
            factor=DYNAMIC_FACTOR,
            max_position_embeddings=train_len,
            seq_len=seq_len,
        )
    if method == "yarn":
        return ROPE_SCALING["yarn"](
            d_head, base, factor=factor, original_max_position_embeddings=train_len
        )
    return ROPE_SCALING["llama3"](
        d_head,
        base,
        factor=factor,
        low_freq_factor=1.0,
        high_freq_factor=4.0,
        original_max_position_embeddings=train_len,
    )


SCALED_VARIANTS: dict[str, str] = {
    f"rope+{m if m != 'linear' else 'pi'}": m for m in ZERO_SHOT_SCALING
}

#: The two fine-tuned variants: PI with a fixed factor 2 fine-tuned at 2L (Chen et al. 2023), and
#: the control, plain RoPE fine-tuned on the same data.
FINE_TUNED_VARIANTS: tuple[str, ...] = ("rope+pi+ft", "rope+ft")
