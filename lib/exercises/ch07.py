"""Checkers for chapter 7, "Learned absolute positions"."""

from __future__ import annotations

import numbers
from collections.abc import Callable

import torch
import torch.nn.functional as F

from lib.exercises import exercise
from lib.learned import TokenAndPositionEmbedding

CHAPTER = "07_learned_positions"

#: GPT-2 small's config (openai-community/gpt2, config.json): n_positions and n_embd.
GPT2_N_POSITIONS, GPT2_N_EMBD = 1024, 768
#: The document length of the exercise.
DOCUMENT_TOKENS = 4096


def _extra_rows_params() -> int:
    return (DOCUMENT_TOKENS - GPT2_N_POSITIONS) * GPT2_N_EMBD


@exercise(
    "ch07-extra-rows",
    chapter=CHAPTER,
    wrong_answers=lambda: [
        DOCUMENT_TOKENS * GPT2_N_EMBD,
        (DOCUMENT_TOKENS - GPT2_N_POSITIONS) * GPT2_N_EMBD * 4,
        DOCUMENT_TOKENS - GPT2_N_POSITIONS,
        (DOCUMENT_TOKENS - GPT2_N_POSITIONS + 1) * GPT2_N_EMBD,
        float(_extra_rows_params()) + 0.5,
    ],
)
def check_extra_rows(answer: int) -> None:
    """New parameters GPT-2 small's position table needs to read 4,096 tokens at once."""
    assert isinstance(answer, numbers.Integral) and not isinstance(answer, bool), (
        f"answer must be an int (a number of parameters), got {type(answer).__name__} {answer!r}"
    )
    answer, right = int(answer), _extra_rows_params()
    if answer == right:
        return
    if answer == DOCUMENT_TOKENS * GPT2_N_EMBD:
        raise AssertionError(
            f"that is the whole {DOCUMENT_TOKENS}-row table; the first {GPT2_N_POSITIONS} rows "
            "already exist, only the missing ones are new"
        )
    if answer == right * 4:
        raise AssertionError("count parameters, not float32 bytes")
    if answer == DOCUMENT_TOKENS - GPT2_N_POSITIONS:
        raise AssertionError(f"that is the number of new rows; each row has n_embd = {GPT2_N_EMBD}")
    raise AssertionError(
        f"{answer:,} is not it: positions 0 … {DOCUMENT_TOKENS - 1} need {DOCUMENT_TOKENS} rows, "
        f"the table has n_positions = {GPT2_N_POSITIONS}, and every row holds n_embd = "
        f"{GPT2_N_EMBD} parameters"
    )


@exercise(
    "ch07-room",
    chapter=CHAPTER,
    wrong_answers=lambda: [
        lambda max_len, offset: max_len - offset - 1,
        lambda max_len, offset: max_len - offset + 1,
        lambda max_len, offset: max_len - offset,
        lambda max_len, offset: max_len,
        12,
    ],
)
def check_room(answer: Callable[[int, int], int]) -> None:
    """``answer(max_len, offset)``: the most tokens that can still be embedded after ``offset``."""
    assert callable(answer), (
        f"answer must be a function room(max_len, offset), got {type(answer).__name__}"
    )
    for max_len, offset in ((512, 500), (8, 0), (8, 7), (8, 8), (1024, 1000), (16, 20)):
        got = answer(max_len, offset)
        want = max(max_len - offset, 0)
        assert isinstance(got, numbers.Integral) and not isinstance(got, bool), (
            f"room must return an int, got {type(got).__name__} for ({max_len}, {offset})"
        )
        if got == want:
            continue
        if got == want - 1 and want > 0:
            raise AssertionError(
                f"room({max_len}, {offset}) = {got} is one short: positions {offset} … "
                f"{max_len - 1} all have rows, that is {want} tokens"
            )
        if got == want + 1:
            raise AssertionError(
                f"room({max_len}, {offset}) = {got} is one too many: the last row is position "
                f"{max_len - 1}, so position {offset + got - 1} does not exist"
            )
        if got < 0:
            raise AssertionError(
                f"room({max_len}, {offset}) = {got}: once the cache is past the table there is "
                "no room at all (0), not a negative amount"
            )
        raise AssertionError(
            f"room({max_len}, {offset}) should be {want}, got {got}; a chunk of T tokens at this "
            f"offset needs positions {offset} … {offset} + T − 1, all below max_len"
        )
    # the answer must agree with what the table accepts
    layer = TokenAndPositionEmbedding(vocab_size=5, max_len=8, d_model=2)
    fits = answer(8, 5)
    layer(torch.zeros(1, fits, dtype=torch.long), offset=5)


def _nearest(table: torch.Tensor, new_len: int) -> torch.Tensor:
    return F.interpolate(table.T[None], size=new_len, mode="nearest")[0].T


def _unaligned(table: torch.Tensor, new_len: int) -> torch.Tensor:
    return F.interpolate(table.T[None], size=new_len, mode="linear", align_corners=False)[0].T


def _zero_pad(table: torch.Tensor, new_len: int) -> torch.Tensor:
    return torch.cat([table, table.new_zeros(new_len - table.shape[0], table.shape[1])])


@exercise(
    "ch07-stretch",
    chapter=CHAPTER,
    wrong_answers=lambda: [
        _nearest,
        _unaligned,
        _zero_pad,
        lambda table, new_len: table,
        "F.interpolate",
    ],
)
def check_stretch(answer: Callable[[torch.Tensor, int], torch.Tensor]) -> None:
    """``answer(table, new_len)``: linear interpolation of ``[L, d]`` to ``[new_len, d]``, ends kept.

    Row ``j`` of the result sits at source position ``j · (L − 1) / (new_len − 1)``, between rows
    ``⌊x⌋`` and ``⌊x⌋ + 1``, weighted by the fractional part: ``align_corners=True``.
    """
    assert callable(answer), (
        f"answer must be a function stretch(table, new_len), got {type(answer).__name__}"
    )
    generator = torch.Generator().manual_seed(7)
    for length, d, new_len in ((4, 3, 7), (10, 2, 25), (6, 5, 6)):
        table = torch.randn(length, d, generator=generator)
        got = answer(table.clone(), new_len)
        assert isinstance(got, torch.Tensor) and got.shape == (new_len, d), (
            f"stretch must return a [new_len, d] = [{new_len}, {d}] tensor, got "
            f"{list(got.shape) if isinstance(got, torch.Tensor) else type(got).__name__}"
        )
        x = torch.arange(new_len, dtype=torch.float64) * (length - 1) / (new_len - 1)  # [new_len]
        low = x.floor().long().clamp(max=length - 2)
        frac = (x - low)[:, None]  # [new_len, 1]
        want = (1 - frac) * table.double()[low] + frac * table.double()[low + 1]
        if torch.allclose(got.double(), want, atol=1e-5, rtol=0):
            continue
        if not torch.allclose(got[0].double(), table[0].double(), atol=1e-6) or not torch.allclose(
            got[-1].double(), table[-1].double(), atol=1e-6
        ):
            raise AssertionError(
                "the first and last rows must stay exactly the old first and last rows "
                "(align_corners=True): the stretched table spans the same positions, more finely"
            )
        raise AssertionError(
            f"stretching a {length}-row table to {new_len} rows: row j must be the linear "
            f"interpolation at source position j·({length}−1)/({new_len}−1), not a copy of the "
            "nearest row"
        )
