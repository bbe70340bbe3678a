"""Checkers for chapter 7, "Learned absolute positions"."""

from __future__ import annotations

from collections.abc import Callable

import torch
from transformers.models.roberta.modeling_roberta import RobertaEmbeddings

from lib.exercises import exercise, require, require_function

CHAPTER = "07_learned_positions"


def _shape_text(got: object) -> str:
    return str(list(got.shape)) if isinstance(got, torch.Tensor) else type(got).__name__


# --------------------------------------------------------------------------------------------------
# 1. Position ids of packed sequences
# --------------------------------------------------------------------------------------------------


def _packed_reference(lengths: list[int]) -> torch.Tensor:
    return torch.cat([torch.arange(n) for n in lengths])


@exercise(
    "ch07-packed",
    chapter=CHAPTER,
    wrong_answers=lambda: [
        lambda lengths: torch.arange(sum(lengths)),
        lambda lengths: torch.cat([torch.arange(1, n + 1) for n in lengths]),
        lambda lengths: torch.cat([torch.arange(n) for n in lengths[:1]]),
        lambda lengths: [p for n in lengths for p in range(n)],
        "0, 1, 2, 0, 1",
    ],
    right_answer=lambda: _packed_reference,
)
def check_packed(answer: Callable[[list[int]], torch.Tensor]) -> None:
    """``answer(lengths)``: positions that restart at 0 at every packed document.

    Args:
        answer: the reader's function ``packed_position_ids(lengths)``, returning a 1-D tensor
            of ``sum(lengths)`` ids.

    Raises:
        ExerciseFailed: the answer is wrong (the message says what to look at).
    """
    require_function(answer, "packed_position_ids(lengths)")
    for lengths in ([3, 2], [1], [5], [1, 1, 1], [4, 1, 6, 2], [128, 3, 60]):
        got = answer(list(lengths))
        want = _packed_reference(lengths)
        require(
            isinstance(got, torch.Tensor) and got.shape == want.shape,
            f"for lengths {lengths} return a 1-D tensor of {sum(lengths)} ids, got "
            f"{_shape_text(got)}",
        )
        require(
            not got.is_floating_point(),
            f"position ids index a table: return an integer tensor, got {got.dtype}",
        )
        if torch.equal(got.long(), want):
            continue
        require(
            not torch.equal(got.long(), torch.arange(sum(lengths))),
            f"for lengths {lengths} the ids run straight through; they must restart at 0 where "
            "each new document begins",
        )
        require(
            False,
            f"for lengths {lengths} expected {want.tolist()[:12]}…, got {got.tolist()[:12]}…: "
            "every document counts 0, 1, 2, … on its own",
        )


# --------------------------------------------------------------------------------------------------
# 2. The next position of a left-padded batch
# --------------------------------------------------------------------------------------------------


def _left_padded(lengths: list[int], width: int) -> torch.Tensor:
    mask = torch.zeros(len(lengths), width, dtype=torch.long)
    for row, n in enumerate(lengths):
        mask[row, width - n :] = 1
    return mask


@exercise(
    "ch07-next-position",
    chapter=CHAPTER,
    wrong_answers=lambda: [
        lambda mask: torch.full((mask.shape[0], 1), mask.shape[1]),
        lambda mask: mask.long().sum(-1, keepdim=True) - 1,
        lambda mask: (mask.long().cumsum(-1) - 1)[:, -1:],
        lambda mask: mask.long().sum(-1),
        "T",
    ],
    right_answer=lambda: lambda mask: mask.long().sum(-1, keepdim=True),
)
def check_next_position(answer: Callable[[torch.Tensor], torch.Tensor]) -> None:
    """``answer(attention_mask)``: ``[B, 1]`` positions of each row's next generated token.

    Args:
        answer: the reader's function ``next_position_ids(attention_mask)`` of a
            left-padded ``[B, T]`` mask, returning ``[B, 1]``.

    Raises:
        ExerciseFailed: the answer is wrong (the message says what to look at).
    """
    require_function(answer, "next_position_ids(attention_mask)")
    for lengths, width in (([4, 6], 6), ([1, 3, 2], 5), ([7], 7), ([2, 9, 5, 1], 9)):
        mask = _left_padded(lengths, width)
        got = answer(mask.clone())
        want = torch.tensor(lengths)[:, None]
        require(
            isinstance(got, torch.Tensor) and got.shape == want.shape,
            f"return a [B, 1] = {list(want.shape)} tensor, got {_shape_text(got)}",
        )
        if torch.equal(got.long(), want):
            continue
        if torch.equal(got.long(), torch.full_like(want, width)):
            require(
                False,
                f"{width} is the width of the padded batch; a row with {min(lengths)} real tokens "
                f"continues at position {min(lengths)}",
            )
        require(
            not torch.equal(got.long(), want - 1),
            "that is the position of each row's last prompt token; the next token comes one "
            "after it",
        )
        require(
            False,
            f"for a left-padded batch with {lengths} real tokens expected {want.flatten().tolist()}"
            f", got {got.flatten().tolist()}",
        )


# --------------------------------------------------------------------------------------------------
# 3. RoBERTa's position ids (fairseq's convention)
# --------------------------------------------------------------------------------------------------


def _roberta_reference(input_ids: torch.Tensor, padding_idx: int) -> torch.Tensor:
    return RobertaEmbeddings.create_position_ids_from_input_ids(input_ids, padding_idx)


@exercise(
    "ch07-roberta-ids",
    chapter=CHAPTER,
    wrong_answers=lambda: [
        lambda ids, pad: torch.arange(ids.shape[1]).expand_as(ids) + pad + 1,
        lambda ids, pad: torch.cumsum((ids != pad).long(), -1) - 1,
        lambda ids, pad: torch.cumsum((ids != pad).long(), -1) + pad,
        lambda ids, pad: torch.arange(ids.shape[1]).expand_as(ids),
        "padding_idx + 1",
    ],
    right_answer=lambda: _roberta_reference,
)
def check_roberta_ids(answer: Callable[[torch.Tensor, int], torch.Tensor]) -> None:
    """``answer(input_ids, padding_idx)`` must equal transformers' RoBERTa position ids.

    Args:
        answer: the reader's function ``roberta_position_ids(input_ids, padding_idx)``,
            returning ids of ``input_ids``' shape.

    Raises:
        ExerciseFailed: the answer is wrong (the message says what to look at).
    """
    require_function(answer, "roberta_position_ids(input_ids, padding_idx)")
    g = torch.Generator().manual_seed(7)
    for padding_idx in (1, 0):
        ids = torch.randint(2, 50, (3, 9), generator=g)
        ids[0, 6:] = padding_idx  # right padding
        ids[1, :2] = padding_idx  # left padding
        ids[2, 4] = padding_idx  # a pad in the middle
        got = answer(ids.clone(), padding_idx)
        want = _roberta_reference(ids, padding_idx)
        require(
            isinstance(got, torch.Tensor) and got.shape == ids.shape,
            f"return a tensor of input_ids' shape {list(ids.shape)}, got {_shape_text(got)}",
        )
        if torch.equal(got.long(), want):
            continue
        pads = ids == padding_idx
        require(
            torch.equal(got.long()[pads], want[pads]),
            f"padding tokens must get position padding_idx = {padding_idx}",
        )
        require(
            False,
            f"with padding_idx = {padding_idx} the real tokens of a row count up from "
            f"padding_idx + 1 = {padding_idx + 1}, skipping the pads; expected {want[1].tolist()} "
            f"for the row {ids[1].tolist()}, got {got[1].tolist()}",
        )
