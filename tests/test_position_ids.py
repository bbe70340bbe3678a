"""lib.position_ids against transformers' own code paths, plus properties and argument checks."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from transformers.generation.utils import GenerationMixin
from transformers.models.opt.modeling_opt import OPTLearnedPositionalEmbedding

from lib.position_ids import opt_position_ids, position_ids_from_attention_mask


def _left_padded(lengths: list[int], width: int) -> torch.Tensor:
    """A left-padded attention mask [B, width] with ``lengths[b]`` real tokens in row b."""
    mask = torch.zeros(len(lengths), width, dtype=torch.long)
    for row, n in enumerate(lengths):
        if n:
            mask[row, -n:] = 1
    return mask


masks = st.integers(1, 12).flatmap(
    lambda width: st.lists(st.integers(0, width), min_size=1, max_size=5).map(
        lambda lengths: _left_padded(lengths, width)
    )
)


@settings(max_examples=60, deadline=None)
@given(masks)
def test_matches_transformers_generation(mask):
    want = GenerationMixin._prepare_position_ids_for_generation(
        None, mask, {"attention_mask": mask}
    )
    assert torch.equal(position_ids_from_attention_mask(mask), want)


@settings(max_examples=60, deadline=None)
@given(masks)
def test_real_tokens_count_from_zero_in_every_row(mask):
    ids = position_ids_from_attention_mask(mask, pad_position=7)
    for row in range(mask.shape[0]):
        real = mask[row].bool()
        assert torch.equal(ids[row][real], torch.arange(int(real.sum())))
        assert bool((ids[row][~real] == 7).all())


def test_pinned_left_padded_batch():
    mask = torch.tensor([[0, 0, 1, 1, 1], [1, 1, 1, 1, 1]])
    assert position_ids_from_attention_mask(mask).tolist() == [[0, 0, 0, 1, 2], [0, 1, 2, 3, 4]]
    assert opt_position_ids(mask).tolist() == [[1, 1, 2, 3, 4], [2, 3, 4, 5, 6]]


@settings(max_examples=40, deadline=None)
@given(masks)
def test_opt_rows_match_transformers(mask):
    width = mask.shape[1]
    table = OPTLearnedPositionalEmbedding(width, 1)  # width + 2 rows
    with torch.no_grad():
        table.weight.copy_(torch.arange(width + 2, dtype=torch.float32)[:, None])  # row i holds i
    rows = table(mask)[..., 0].long()  # which row each slot read
    assert torch.equal(opt_position_ids(mask), rows)


def test_bool_mask_and_meta_device():
    mask = torch.tensor([[False, True, True]])
    assert position_ids_from_attention_mask(mask).tolist() == [[0, 0, 1]]
    meta = torch.ones(2, 4, dtype=torch.long, device="meta")
    assert position_ids_from_attention_mask(meta).device.type == "meta"
    assert opt_position_ids(meta).shape == (2, 4)


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (lambda: position_ids_from_attention_mask(torch.ones(2, 3)), TypeError, "attention_mask"),
        (
            lambda: position_ids_from_attention_mask(torch.ones(3, dtype=torch.long)),
            ValueError,
            "attention_mask",
        ),
        (lambda: position_ids_from_attention_mask(torch.tensor([[0, 2]])), ValueError, "0 .*1"),
        (
            lambda: position_ids_from_attention_mask(
                torch.ones(1, 2, dtype=torch.long), pad_position=-1
            ),
            ValueError,
            "pad_position",
        ),
        (
            lambda: opt_position_ids(torch.ones(1, 2, dtype=torch.long), offset=0),
            ValueError,
            "offset",
        ),
        (lambda: opt_position_ids([[1, 1]]), TypeError, "attention_mask"),
    ],
)
def test_bad_arguments(call, error, match):
    with pytest.raises(error, match=match):
        call()
