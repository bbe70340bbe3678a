"""Checkers for chapter 1, "From token IDs to vectors"."""

from __future__ import annotations

from collections.abc import Callable

import torch

from lib.embeddings import REAL_EMBEDDING_CONFIGS
from lib.exercises import exercise

CHAPTER = "01_token_ids_to_vectors"

#: The model of the "table bytes" exercise and the dtype its table is stored in.
BYTES_MODEL, BYTES_DTYPE = "Gemma-2-2B", "float32"

#: The batch of the "gradient rows" exercise: ``[B, T] = [2, 5]`` ids into a 10-row table.
GRAD_VOCAB_SIZE = 10
GRAD_BATCH_IDS = torch.tensor([[4, 1, 7, 1, 9], [3, 4, 4, 0, 7]])


def _embed_cases() -> list[tuple[torch.Tensor, torch.Tensor]]:
    """(ids, table) pairs with ids of several shapes: ``[T]``, ``[B, T]``, ``[B, T, K]``."""
    g = torch.Generator().manual_seed(1)
    table = torch.randn(11, 4, generator=g)  # [V, d] with V != d, so a transpose shows up
    return [
        (torch.tensor([3, 0, 10, 3]), table),
        (torch.randint(0, 11, (2, 5), generator=g), table),
        (torch.randint(0, 11, (2, 3, 2), generator=g), table),
        (torch.tensor([[7]]), torch.randn(8, 6, generator=g)),
    ]


@exercise(
    "ch01-one-hot-embed",
    chapter=CHAPTER,
    wrong_answers=lambda: [
        lambda ids, E: E[: ids.numel()],
        lambda ids, E: E[ids].sum(dim=-2),
        lambda ids, E: E.T[ids],
        lambda ids, E: torch.zeros(*ids.shape, E.shape[1]),
        "not a function",
    ],
)
def check_one_hot_embed(answer: Callable[[torch.Tensor, torch.Tensor], torch.Tensor]) -> None:
    """``answer(ids, E)`` must equal ``E[ids]`` exactly, for ids of any shape ``[...]``."""
    assert callable(answer), f"answer must be a function embed(ids, E), got {type(answer).__name__}"
    for ids, table in _embed_cases():
        expected = table[ids]  # [..., d]
        try:
            got = answer(ids.clone(), table.clone())
        except Exception as error:  # a reader's bug: explain it instead of crashing the check
            raise AssertionError(
                f"embed raised {type(error).__name__} for ids of shape {list(ids.shape)} and E of "
                f"shape {list(table.shape)}: {error}"
            ) from None
        assert isinstance(got, torch.Tensor), f"embed must return a tensor, got {type(got)}"
        assert got.shape == expected.shape, (
            f"for ids of shape {list(ids.shape)} and E of shape {list(table.shape)} the result "
            f"must be [..., d] = {list(expected.shape)}, got {list(got.shape)}: one_hot(ids, V) "
            "has shape [..., V], and [..., V] @ [V, d] gives [..., d]"
        )
        assert torch.equal(got.to(expected.dtype), expected), (
            f"for ids = {ids.tolist()} the rows are not those of E[ids]: the one-hot matrix "
            "must have V = E.shape[0] columns, and it multiplies E from the left"
        )


def _table_bytes() -> int:
    config = REAL_EMBEDDING_CONFIGS[BYTES_MODEL]
    return int(config["vocab_size"]) * int(config["hidden_size"]) * 4  # float32: 4 bytes


@exercise(
    "ch01-table-bytes",
    chapter=CHAPTER,
    wrong_answers=lambda: [
        _table_bytes() // 4,
        _table_bytes() // 2,
        round(_table_bytes() / 1e9, 2),
        _table_bytes() / 2**30,
        "2.36 GB",
    ],
)
def check_table_bytes(answer: int) -> None:
    """The bytes of Gemma 2 2B's input embedding table stored in float32."""
    assert isinstance(answer, int | float) and not isinstance(answer, bool), (
        f"answer must be a number of bytes (an int), got {type(answer).__name__} {answer!r}"
    )
    right = _table_bytes()
    config = REAL_EMBEDDING_CONFIGS[BYTES_MODEL]
    n_elements = int(config["vocab_size"]) * int(config["hidden_size"])
    if answer == n_elements:
        raise AssertionError(
            f"{answer:,} is the number of elements V × d; multiply by the bytes per element "
            f"({BYTES_DTYPE} takes 4)"
        )
    if answer == 2 * n_elements:
        raise AssertionError(f"{answer:,} B is the size in bfloat16 (2 B per element), not float32")
    if answer < 1e6:
        raise AssertionError(
            f"{answer} looks like gigabytes or gibibytes; the question asks for bytes"
        )
    assert answer == right, (
        f"{answer:,} is not it: the table has vocab_size × hidden_size elements "
        f"(REAL_EMBEDDING_CONFIGS[{BYTES_MODEL!r}]), each {BYTES_DTYPE} element takes 4 bytes"
    )


def _grad_rows() -> dict[int, float]:
    counts = torch.bincount(GRAD_BATCH_IDS.flatten(), minlength=GRAD_VOCAB_SIZE)  # [V]
    return {r: float(c) for r, c in enumerate(counts.tolist()) if c}


@exercise(
    "ch01-grad-rows",
    chapter=CHAPTER,
    wrong_answers=lambda: [
        {r: 1.0 for r in _grad_rows()},
        sorted(_grad_rows()),
        {r: 1.0 for r in range(GRAD_VOCAB_SIZE)},
        {r: float(c) for r, c in list(_grad_rows().items())[:-1]},
        {r: 2.0 * c for r, c in _grad_rows().items()},
    ],
)
def check_grad_rows(answer: dict[int, float]) -> None:
    """{row: value} for the rows of E with nonzero gradient of ``lookup(ids, E).sum()``."""
    assert isinstance(answer, dict), (
        f"answer must be a dict {{row: value}} such as {{4: 1.0}}, got {type(answer).__name__}"
    )
    right = _grad_rows()
    try:
        got = {int(r): float(v) for r, v in answer.items()}
    except (TypeError, ValueError):
        raise AssertionError("the keys must be row numbers and the values numbers") from None
    got = {r: v for r, v in got.items() if v != 0}  # a zero entry is allowed, it changes nothing
    extra, missing = sorted(set(got) - set(right)), sorted(set(right) - set(got))
    assert not extra, (
        f"rows {extra} are never looked up in GRAD_BATCH_IDS, so their gradient is exactly zero"
    )
    assert not missing, f"rows {missing} are looked up, so their gradient is not zero"
    wrong = {r: got[r] for r in right if got[r] != right[r]}
    assert not wrong, (
        f"the values of rows {sorted(wrong)} are off: a row's gradient adds up one 1 per time the "
        "row is looked up (the upstream gradient of .sum() is all ones), so count the repeats"
    )
