"""Position ids in practice: left-padded batches, and the offset learned tables such as OPT's add.

A learned position table (GPT-2, BERT, OPT) is indexed by ``position_ids``, and so are RoPE's
angles. With one unpadded sequence they are ``0, 1, …, T−1``; in a batch they are not always:

* **Left padding** (batched generation with a decoder puts the padding on the left, so that every
  row ends at its newest token). Each row's real tokens must still count from 0, so the ids come
  from the attention mask, ``position_ids = attention_mask.cumsum(-1) − 1``, with the padded slots
  set to a harmless value (transformers, ``GenerationMixin._prepare_position_ids_for_generation``;
  Wolf et al. 2020, arXiv:1910.03771).
* **A fixed offset.** OPT (Zhang et al. 2022, arXiv:2205.01068) and fairseq-derived models such as
  RoBERTa (Liu et al. 2019, arXiv:1907.11692) reserve the first rows of the table, so position ``t``
  reads row ``t + 2``; their tables have ``max_positions + 2`` rows (transformers'
  ``OPTLearnedPositionalEmbedding``: ``offset = 2``).
"""

from __future__ import annotations

import torch

from lib._checks import (
    check_int,
    check_integer_tensor,
    check_ndim,
    check_tensor,
    values_checkable,
)

__all__ = ["opt_position_ids", "position_ids_from_attention_mask"]


def _check_mask(attention_mask: object) -> torch.Tensor:
    """A bool or integer mask with >= 2 dims holding only 0 and 1 (values checked on the CPU)."""
    mask = check_tensor("attention_mask", attention_mask)
    if mask.dtype != torch.bool:
        check_integer_tensor("attention_mask", mask)
    check_ndim("attention_mask", mask, minimum=2)
    if mask.numel() > 0 and values_checkable(mask):
        bad = (mask != 0) & (mask != 1)
        if bool(bad.any()):
            raise ValueError("attention_mask must hold only 0 (padding) and 1 (a real token)")
    return mask


def position_ids_from_attention_mask(
    attention_mask: torch.Tensor, *, pad_position: int = 0
) -> torch.Tensor:
    """Position ids of a padded batch: every row's real tokens count 0, 1, 2, … from its first one.

    This is the rule transformers uses when it generates from a left-padded batch
    (``GenerationMixin._prepare_position_ids_for_generation``). For right padding the real tokens
    get ``0 … n−1`` as well.

    Equation:
        position_ids = cumsum(attention_mask, −1) − 1, and pad_position where attention_mask == 0

    Args:
        attention_mask: 1 for a real token, 0 for padding, along the last axis.
        pad_position: the id written at padded slots (they are masked out of attention anyway);
            an int >= 0.

    Returns:
        The position ids, int64.

    Raises:
        TypeError: ``attention_mask`` is not an integer or bool tensor, or ``pad_position`` is not
            an int.
        ValueError: ``attention_mask`` has fewer than 2 dimensions or values other than 0 and 1, or
            ``pad_position`` is negative.

    Shapes:
        ``attention_mask: [B, T]`` (or ``[..., T]``) of 0/1 integers or bools -> ``[..., T]``
        int64 on the same device.

    References:
        Wolf et al., HuggingFace's Transformers, arXiv:1910.03771.
    """
    _check_mask(attention_mask)
    pad_position = check_int("pad_position", pad_position, minimum=0)
    mask = attention_mask.long()
    return (mask.cumsum(-1) - 1).masked_fill(mask == 0, pad_position)


def opt_position_ids(attention_mask: torch.Tensor, *, offset: int = 2) -> torch.Tensor:
    """The table rows an OPT-style learned embedding reads: mask-derived ids plus a fixed offset.

    Real tokens read rows ``offset, offset+1, …``, padded slots read row ``offset − 1``
    (transformers' ``OPTLearnedPositionalEmbedding``, ``offset = 2``). The table therefore needs
    ``max_positions + offset`` rows.

    Equation:
        rows = cumsum(attention_mask, −1) · attention_mask − 1 + offset

    Args:
        attention_mask: 1 for a real token, 0 for padding, along the last axis.
        offset: rows reserved at the start of the table; an int >= 1.

    Returns:
        The row indices into the table, int64.

    Raises:
        TypeError: ``attention_mask`` is not an integer or bool tensor, or ``offset`` is not an
            int.
        ValueError: bad mask values or dimensions, or ``offset`` < 1.

    Shapes:
        ``attention_mask: [..., T]`` -> ``[..., T]`` int64.

    References:
        Zhang et al., OPT, arXiv:2205.01068.
    """
    _check_mask(attention_mask)
    offset = check_int("offset", offset, minimum=1)
    mask = attention_mask.long()
    return mask.cumsum(-1) * mask - 1 + offset
