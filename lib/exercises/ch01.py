"""Checkers for chapter 1, "From token IDs to vectors".

Each ``check_*`` function is registered with :func:`lib.exercises.exercise` and raises
:class:`lib.exercises.ExerciseFailed` with a hint when the reader's answer is wrong.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from lib.exercises import ExerciseFailed, exercise, require, require_function

CHAPTER = "01_token_ids_to_vectors"

#: The batch of the "gradient rows" exercise: ``[B, T] = [2, 5]`` ids into a 10-row table.
GRAD_VOCAB_SIZE = 10
GRAD_BATCH_IDS = torch.tensor([[4, 1, 7, 1, 9], [3, 4, 4, 0, 7]])


def _one_hot_product(ids: torch.Tensor, table: torch.Tensor) -> torch.Tensor:
    """The reference: one-hot rows times the table.

    Equation:
        embed(ids, E) = one_hot(ids, V) @ E

    Shapes:
        ids: [...], table: [V, d] -> [..., d]
    """
    return torch.nn.functional.one_hot(ids, table.shape[0]).to(table.dtype) @ table


def _embed_cases() -> list[tuple[torch.Tensor, torch.Tensor]]:
    """(ids, table) pairs: ids of shapes ``[T]``, ``[B, T]``, ``[B, T, K]``, and a table with inf.

    Returns:
        Five ``(ids, table)`` pairs; the last table holds an ``inf``, where only the product
        (not indexing) gives NaN in the other rows.
    """
    g = torch.Generator().manual_seed(1)
    table = torch.randn(11, 4, generator=g)  # [V, d] with V != d, so a transpose shows up
    with_inf = torch.randn(6, 3, generator=g)
    with_inf[2, 1] = float("inf")  # only the product turns this into NaN in other rows
    return [
        (torch.tensor([3, 0, 10, 3]), table),
        (torch.randint(0, 11, (2, 5), generator=g), table),
        (torch.randint(0, 11, (2, 3, 2), generator=g), table),
        (torch.tensor([[7]]), torch.randn(8, 6, generator=g)),
        (torch.tensor([[0, 2], [5, 2]]), with_inf),
    ]


def _same(got: torch.Tensor, expected: torch.Tensor) -> bool:
    """Equal bit for bit, NaN where the other has NaN."""
    nan = torch.isnan(expected)
    return bool(torch.equal(torch.isnan(got), nan) and torch.equal(got[~nan], expected[~nan]))


@exercise(
    "ch01-one-hot-embed",
    chapter=CHAPTER,
    wrong_answers=lambda: [
        lambda ids, E: E[: ids.numel()],
        lambda ids, E: E[ids].sum(dim=-2),
        lambda ids, E: E.T[ids],
        lambda ids, E: E[ids],  # indexing: right values on finite tables, not the product
        lambda ids, E: torch.zeros(*ids.shape, E.shape[1]),
        "not a function",
    ],
    right_answer=lambda: _one_hot_product,
)
def check_one_hot_embed(answer: Callable[[torch.Tensor, torch.Tensor], torch.Tensor]) -> None:
    """``answer(ids, E)`` must equal ``one_hot(ids, V) @ E`` exactly, for ids of any shape.

    Args:
        answer: the reader's function ``embed(ids, E)``.
    Raises:
        ExerciseFailed: the answer is wrong (the message says what to look at).
    """
    require_function(answer, "embed(ids, E)")
    for ids, table in _embed_cases():
        expected = _one_hot_product(ids, table)  # [..., d]
        try:
            got = answer(ids.clone(), table.clone())
        except ExerciseFailed:
            raise
        except Exception as error:  # a reader's bug: explain it instead of crashing the check
            raise ExerciseFailed(
                f"embed raised {type(error).__name__} for ids of shape {list(ids.shape)} and E of "
                f"shape {list(table.shape)}: {error}"
            ) from None
        require(isinstance(got, torch.Tensor), f"embed must return a tensor, got {type(got)}")
        require(
            got.shape == expected.shape,
            f"for ids of shape {list(ids.shape)} and E of shape {list(table.shape)} the result "
            f"must be [..., d] = {list(expected.shape)}, got {list(got.shape)}: one_hot(ids, V) "
            "has shape [..., V], and [..., V] @ [V, d] gives [..., d]",
        )
        if torch.isinf(table).any():
            require(
                _same(got.to(expected.dtype), expected),
                "on a table holding an inf, the one-hot product puts NaN (0 × inf) into that "
                "column of every row that did not look the bad row up; your function does not: "
                "compute one_hot(ids, V) @ E, not E[ids]",
            )
        else:
            require(
                torch.equal(got.to(expected.dtype), table[ids]),
                f"for ids = {ids.tolist()} the rows are not those of E[ids]: the one-hot matrix "
                "must have V = E.shape[0] columns, and it multiplies E from the left",
            )


def _short_rows() -> set[int]:
    """IDs of MiniLM's rows shorter than half the median row length.

    Equation:
        {i : ‖E[i]‖ < 0.5 · median_v ‖E[v]‖}

    References:
        Land & Bartolo, Fishing for Magikarp, arXiv:2405.05417.
    """
    from lib.pretrained import load_minilm

    model, _ = load_minilm()
    lengths = model.embeddings.word_embeddings.weight.detach().norm(dim=-1)  # [V]
    return set(torch.nonzero(lengths < 0.5 * lengths.median()).flatten().tolist())


@exercise(
    "ch01-short-rows",
    chapter=CHAPTER,
    wrong_answers=lambda: [
        sorted(_short_rows()),
        set(list(_short_rows())[:-1]),
        _short_rows() | {1000},
        set(range(1, 995)),
        len(_short_rows()),
    ],
    right_answer=_short_rows,
)
def check_short_rows(answer: set[int]) -> None:
    """The set of MiniLM token IDs whose row is shorter than half the median row length.

    Args:
        answer: the reader's set of token IDs.
    Raises:
        ExerciseFailed: the answer is wrong (the message says what to look at).
    """
    require(
        isinstance(answer, set | frozenset),
        f"answer must be a set of token IDs, such as {{1, 2}}, got {type(answer).__name__}",
    )
    require(all(isinstance(i, int) for i in answer), "the set must hold ints (token IDs)")
    right = _short_rows()
    extra, missing = sorted(answer - right), sorted(right - answer)
    require(
        not extra,
        f"{len(extra)} IDs (e.g. {extra[:3]}) have rows of at least half the median length; "
        "measure the length of every row with E.norm(dim=-1)",
    )
    require(
        not missing,
        f"{len(missing)} short rows are missing (e.g. {missing[:3]}); compare every row's length "
        "with 0.5 × the median of all lengths",
    )


def _grad_rows() -> dict[int, float]:
    """{row: value} of the gradient of ``lookup(GRAD_BATCH_IDS, E).sum()``: each row's count.

    Equation:
        dL/dE[r] = Σ_{t : id_t = r} 1  (all ones upstream)
    """
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
    right_answer=_grad_rows,
)
def check_grad_rows(answer: dict[int, float]) -> None:
    """{row: value} for the rows of E with nonzero gradient of ``lookup(ids, E).sum()``.

    Args:
        answer: the reader's dict ``{row: value}``.
    Raises:
        ExerciseFailed: the answer is wrong (the message says what to look at).
    """
    require(
        isinstance(answer, dict),
        f"answer must be a dict {{row: value}} such as {{4: 1.0}}, got {type(answer).__name__}",
    )
    right = _grad_rows()
    try:
        got = {int(r): float(v) for r, v in answer.items()}
    except (TypeError, ValueError):
        raise ExerciseFailed("the keys must be row numbers and the values numbers") from None
    got = {r: v for r, v in got.items() if v != 0}  # a zero entry is allowed, it changes nothing
    extra, missing = sorted(set(got) - set(right)), sorted(set(right) - set(got))
    require(
        not extra,
        f"rows {extra} are never looked up in GRAD_BATCH_IDS, so their gradient is exactly zero",
    )
    require(not missing, f"rows {missing} are looked up, so their gradient is not zero")
    wrong = {r: got[r] for r in right if got[r] != right[r]}
    require(
        not wrong,
        f"the values of rows {sorted(wrong)} are off: a row's gradient adds up one 1 per time the "
        "row is looked up (the upstream gradient of .sum() is all ones), so count the repeats",
    )
