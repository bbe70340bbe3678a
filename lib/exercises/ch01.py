"""Checkers for chapter 1, "From token IDs to vectors".

Each ``check_*`` function is registered with :func:`lib.exercises.exercise` and raises
:class:`lib.exercises.ExerciseFailed` with a hint when the reader's answer is wrong.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import torch

from lib.exercises import ExerciseFailed, exercise, record_prediction, require, require_function

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
    """(ids, table) pairs: ids of shapes ``[T]``, ``[B, T]``, ``[B, T, K]`` and ``[1, 1]``.

    Returns:
        Four ``(ids, table)`` pairs of finite tables with V != d, so a transpose shows up.
    """
    g = torch.Generator().manual_seed(1)
    table = torch.randn(11, 4, generator=g)  # [V, d]
    return [
        (torch.tensor([3, 0, 10, 3]), table),
        (torch.randint(0, 11, (2, 5), generator=g), table),
        (torch.randint(0, 11, (2, 3, 2), generator=g), table),
        (torch.tensor([[7]]), torch.randn(8, 6, generator=g)),
    ]


class _NoIndexing(Exception):
    """Raised when the reader's function reads rows of the table by indexing."""


#: The ways to read rows out of a table without a product: each one is refused on the table.
_ROW_READERS = {
    torch.Tensor.__getitem__,
    torch.Tensor.index_select,
    torch.index_select,
    torch.Tensor.gather,
    torch.gather,
    torch.Tensor.take,
    torch.take,
    torch.embedding,
    torch.nn.functional.embedding,
    torch.Tensor.unbind,
}


class _ProductOnlyTable(torch.Tensor):
    """A table that allows a product but refuses to be indexed (``E[ids]``, ``F.embedding``...)."""

    @classmethod
    def __torch_function__(
        cls,
        func: Callable[..., Any],
        types: Any,
        args: tuple[Any, ...] = (),
        kwargs: dict[str, Any] | None = None,
    ) -> Any:
        operands = [*args, *(kwargs or {}).values()]
        if func in _ROW_READERS and any(isinstance(a, _ProductOnlyTable) for a in operands):
            raise _NoIndexing(getattr(func, "__name__", str(func)))
        return super().__torch_function__(func, types, args, kwargs or {})


@exercise(
    "ch01-one-hot-embed",
    chapter=CHAPTER,
    wrong_answers=lambda: [
        lambda ids, E: E[: ids.numel()],
        lambda ids, E: E[ids].sum(dim=-2),
        lambda ids, E: E.T[ids],
        lambda ids, E: E[ids],  # indexing: right values, but not the product the exercise asks for
        lambda ids, E: torch.nn.functional.embedding(ids, E),
        lambda ids, E: E.index_select(0, ids.flatten()).reshape(*ids.shape, -1),
        lambda ids, E: torch.zeros(*ids.shape, E.shape[1]),
        "not a function",
    ],
    right_answer=lambda: _one_hot_product,
)
def check_one_hot_embed(answer: Callable[[torch.Tensor, torch.Tensor], torch.Tensor]) -> None:
    """``answer(ids, E)`` must equal ``E[ids]`` exactly, for ids of any shape, without indexing E.

    The table passed in refuses every way of reading its rows (``E[ids]``, ``F.embedding``,
    ``index_select``, ``gather``, ``take``), so only a product such as ``one_hot(ids, V) @ E``
    passes.

    Args:
        answer: the reader's function ``embed(ids, E)``.
    Raises:
        ExerciseFailed: the answer is wrong (the message says what to look at).
    """
    require_function(answer, "embed(ids, E)")
    for ids, table in _embed_cases():
        expected = table[ids]  # [..., d]: what the product must equal
        guarded = table.clone().as_subclass(_ProductOnlyTable)  # refuses E[ids], F.embedding, ...
        try:
            got = answer(ids.clone(), guarded)
        except ExerciseFailed:
            raise
        except _NoIndexing as refused:
            raise ExerciseFailed(
                f"embed read rows of E directly ({refused}): that is the lookup itself; build "
                "one_hot(ids, V) and multiply it by E with @"
            ) from None
        except Exception as error:  # a reader's bug: explain it instead of crashing the check
            raise ExerciseFailed(
                f"embed raised {type(error).__name__} for ids of shape {list(ids.shape)} and E of "
                f"shape {list(table.shape)}: {error}"
            ) from None
        require(isinstance(got, torch.Tensor), f"embed must return a tensor, got {type(got)}")
        got = got.as_subclass(torch.Tensor)
        require(
            got.shape == expected.shape,
            f"for ids of shape {list(ids.shape)} and E of shape {list(table.shape)} the result "
            f"must be [..., d] = {list(expected.shape)}, got {list(got.shape)}: one_hot(ids, V) "
            "has shape [..., V], and [..., V] @ [V, d] gives [..., d]",
        )
        require(
            torch.equal(got.to(expected.dtype), expected),
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


#: Exercise 3's loss weighs position t by GRAD_POSITION_WEIGHTS[t]:
#: ``L = (lookup(GRAD_BATCH_IDS, E) * GRAD_POSITION_WEIGHTS[:, None]).sum()``.
GRAD_POSITION_WEIGHTS = torch.tensor([1.0, 2.0, 3.0, 4.0, 5.0])

#: The prediction log of exercise 3: the prediction recorded before the first measurement, and
#: whether a measurement has been checked. Module state on purpose: it lives as long as the kernel.
_LOG: dict[str, Any] = {"prediction": None, "measured": False}


def _reset_log() -> None:
    """Forget the recorded prediction and measurement (a fresh kernel; used by the tests)."""
    _LOG.update(prediction=None, measured=False)


def grad_rows_loss(table: torch.Tensor) -> torch.Tensor:
    """Exercise 3's loss: the looked-up rows, each position weighted, summed.

    Equation:
        L = Σ_{b,t} w_t · Σ_j E[ids_{b,t}, j]

    Args:
        table: the table E, shape [GRAD_VOCAB_SIZE, d].

    Returns:
        The scalar loss L.

    Raises:
        ValueError: the table does not have shape [GRAD_VOCAB_SIZE, d].

    Shapes:
        table: [V, d] -> []
    """
    if not isinstance(table, torch.Tensor):
        raise TypeError(f"table must be a torch.Tensor, got {type(table).__name__}")
    if table.dim() != 2 or table.shape[0] != GRAD_VOCAB_SIZE:
        raise ValueError(f"table must have shape [{GRAD_VOCAB_SIZE}, d], got {list(table.shape)}")
    rows = table[GRAD_BATCH_IDS.to(table.device)]  # [B, T, d]
    weights = GRAD_POSITION_WEIGHTS.to(device=table.device, dtype=table.dtype)  # [T]
    return (rows * weights[:, None]).sum()


def _grad_rows() -> dict[int, float]:
    """{row: value} of the gradient of :func:`grad_rows_loss`: each row's summed weights.

    Equation:
        ∂L/∂E[r, j] = Σ_{(b,t) : ids_{b,t} = r} w_t  (the same in every column j)
    """
    grad = torch.zeros(GRAD_VOCAB_SIZE)
    weights = GRAD_POSITION_WEIGHTS.expand_as(GRAD_BATCH_IDS)  # [B, T]
    grad.index_add_(0, GRAD_BATCH_IDS.flatten(), weights.flatten())
    return {r: float(v) for r, v in enumerate(grad.tolist()) if v}


def _as_prediction(answer: object) -> dict[int, float]:
    """The reader's ``{row: value}`` with int keys and float values, zero entries dropped."""
    if not isinstance(answer, dict):
        raise ExerciseFailed(
            f"answer must be a dict {{row: value}} such as {{4: 1.0}}, got {type(answer).__name__}"
        )
    try:
        got = {int(r): float(v) for r, v in answer.items()}
    except (TypeError, ValueError):
        raise ExerciseFailed("the keys must be row numbers and the values numbers") from None
    return {r: v for r, v in got.items() if v != 0}  # a zero entry is allowed, it changes nothing


def _predict_wrong() -> list[object]:
    _reset_log()  # a kernel that has already measured: a valid prediction now is refused
    _LOG.update(prediction={4: 1.0}, measured=True)
    return [sorted(_grad_rows()), "6", {"row": 1.0}, dict(_grad_rows())]


def _predict_right() -> dict[int, float]:
    _reset_log()  # a fresh kernel: nothing measured yet
    return dict(_grad_rows())


@exercise(
    "ch01-grad-predict",
    chapter=CHAPTER,
    wrong_answers=_predict_wrong,
    right_answer=_predict_right,
)
def check_grad_predict(answer: object) -> None:
    """Record a by-hand prediction of the gradient rows, before any measurement is checked.

    Any well-formed prediction is recorded (it is judged only against the measurement); once a
    measurement has been checked, a new prediction is refused and the recorded one stands.

    Args:
        answer: the reader's dict ``{row: value}`` for ∂L/∂E of :func:`grad_rows_loss`.

    Raises:
        ExerciseFailed: a malformed prediction, or one made after measuring.
    """
    prediction = _as_prediction(answer)
    record_prediction(_LOG, prediction, "Now measure it with autograd (next cell).")


def _right_grad(d: int = 3) -> torch.Tensor:
    """The gradient of :func:`grad_rows_loss` for a table of width d, shape [V, d]."""
    grad = torch.zeros(GRAD_VOCAB_SIZE, d)
    for r, v in _grad_rows().items():
        grad[r] = v
    return grad


def _measure_wrong() -> list[object]:
    counts = torch.bincount(GRAD_BATCH_IDS.flatten(), minlength=GRAD_VOCAB_SIZE).float()
    plain_sum = counts[:, None].expand(GRAD_VOCAB_SIZE, 3).clone()  # the unweighted loss's
    _reset_log()
    _LOG["prediction"] = dict(_grad_rows())
    wrong: list[object] = [_right_grad()[:-1], plain_sum, _right_grad().T, {4: 6.0}]
    wrong.append(_right_grad() * 2)  # backward() called twice
    return wrong


def _measure_wrong_then_unpredicted() -> list[object]:
    wrong = _measure_wrong()
    _reset_log()  # the last: a right measurement against a wrong prediction recorded before it
    _LOG["prediction"] = {4: 3.0, 1: 2.0, 7: 2.0, 9: 1.0, 3: 1.0, 0: 1.0}  # counted, unweighted
    return [*wrong, _right_grad()]


def _measure_right() -> torch.Tensor:
    _reset_log()
    _LOG["prediction"] = dict(_grad_rows())
    return _right_grad()


@exercise(
    "ch01-grad-measure",
    chapter=CHAPTER,
    wrong_answers=_measure_wrong_then_unpredicted,
    right_answer=_measure_right,
)
def check_grad_measure(answer: object) -> None:
    """Check the measured gradient ``E.grad`` and compare it with the recorded prediction.

    Args:
        answer: ``E.grad`` after ``grad_rows_loss(E).backward()``, shape [GRAD_VOCAB_SIZE, d].

    Raises:
        ExerciseFailed: not the gradient of the exercise's loss, no prediction recorded before
            measuring, or a prediction that the measurement contradicts.

    Shapes:
        answer: [V, d]
    """
    if not (isinstance(answer, torch.Tensor) and answer.dim() == 2):
        raise ExerciseFailed(
            "answer must be the tensor E.grad, shape [V, d], after grad_rows_loss(E).backward()"
        )
    require(
        answer.shape[0] == GRAD_VOCAB_SIZE and answer.shape[1] >= 1,
        f"E.grad must have {GRAD_VOCAB_SIZE} rows (one per table row), got {list(answer.shape)}",
    )
    right = _right_grad(answer.shape[1]).to(answer.dtype)
    require(
        torch.equal(answer.detach().cpu(), right),
        "this is not the gradient of grad_rows_loss(E): build E with requires_grad=True, call "
        "grad_rows_loss(E).backward() once (a second call adds to E.grad) and pass E.grad",
    )
    prediction = _LOG["prediction"]
    require(
        prediction is not None,
        "no prediction was recorded before this measurement: run the prediction cell first "
        "(restart the kernel if you have measured already)",
    )
    _LOG["measured"] = True
    measured = _grad_rows()
    extra = sorted(set(prediction) - set(measured))
    missing = sorted(set(measured) - set(prediction))
    off = sorted(r for r in measured if r in prediction and prediction[r] != measured[r])
    require(
        not (extra or missing or off),
        f"the measurement contradicts your prediction {prediction}: "
        + (f"rows {extra} are never looked up, so their gradient is zero; " if extra else "")
        + (f"rows {missing} are looked up, so their gradient is not zero; " if missing else "")
        + (
            f"rows {off} are off: each time row r is looked up at position t, the upstream "
            "gradient w_t lands in row r, so a row adds up the weights of its positions"
            if off
            else ""
        ),
    )
    print(f"Your prediction matches the measurement: {measured}.")


# ---------------------------------------------------------------- 4. a string that does not survive


@functools.lru_cache(maxsize=1)
def _smol_tokenizer() -> Any:
    """SmolLM2's tokenizer, built from the GGUF header (no model weights are read)."""
    from lib.smollm import read_gguf, smollm_gguf_path, smollm_tokenizer

    return smollm_tokenizer(read_gguf(smollm_gguf_path()))


def smol_round_trip(text: str) -> str:
    """Encode ``text`` with SmolLM2's tokenizer (no special tokens added) and decode it again.

    Args:
        text: any string.

    Returns:
        ``decode(encode(text))``; equal to ``text`` unless the tokenizer dropped something.

    Raises:
        TypeError: ``text`` is not a string.
    """
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    smol = _smol_tokenizer()
    return str(smol.decode(smol(text, add_special_tokens=False)["input_ids"]))


@exercise(
    "ch01-round-trip",
    chapter=CHAPTER,
    wrong_answers=lambda: ["hello", "🦜 naïve", "", 42, "x" * 200],
    right_answer=lambda: "a\x04b",
)
def check_round_trip(answer: object) -> None:
    """A string of at most 100 characters that SmolLM2's tokenizer does not give back unchanged.

    Args:
        answer: the reader's string ``s`` with ``decode(encode(s)) != s``.

    Raises:
        ExerciseFailed: not a string, empty or too long, or a string that survives the round trip.
    """
    if not isinstance(answer, str):
        raise ExerciseFailed(f"answer must be a string, got {type(answer).__name__}")
    require(0 < len(answer) <= 100, "give a non-empty string of at most 100 characters")
    back = smol_round_trip(answer)
    require(
        back != answer,
        f"{answer!r} survives the round trip: every byte of it has a token. Look at the bytes the "
        "chapter found without a single-byte token",
    )
    print(f"{answer!r} comes back as {back!r}: the bytes without a token were dropped.")
