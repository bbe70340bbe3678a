"""Checkers for chapter 4, "Weight tying"."""

from __future__ import annotations

import numbers
from collections.abc import Callable

import torch
from torch import nn

from lib.embeddings import REAL_EMBEDDING_CONFIGS, embedding_table_bytes
from lib.exercises import exercise
from lib.tiny_lm import TinyLM, count_parameters

CHAPTER = "04_weight_tying"


def _gemma_saved_bytes() -> int:
    """Bytes of the head Gemma 2 2B does not store: V · d · 2 B in bfloat16 (it ties)."""
    config = REAL_EMBEDDING_CONFIGS["Gemma-2-2B"]
    return embedding_table_bytes(config["vocab_size"], config["hidden_size"], "bfloat16")


def _gemma_params() -> int:
    config = REAL_EMBEDDING_CONFIGS["Gemma-2-2B"]
    return config["vocab_size"] * config["hidden_size"]


@exercise(
    "ch04-gemma-bytes",
    chapter=CHAPTER,
    wrong_answers=lambda: [
        _gemma_params(),
        2 * _gemma_saved_bytes(),
        _gemma_saved_bytes() // 2,
        _gemma_saved_bytes() / 2**30,
        "1179648000",
    ],
)
def check_gemma_bytes(answer: int) -> None:
    """Bytes that tying saves for Gemma 2 2B stored in bfloat16 (an exact int)."""
    assert isinstance(answer, numbers.Integral) and not isinstance(answer, bool), (
        f"answer must be an int (a number of bytes), got {type(answer).__name__} {answer!r}"
    )
    answer = int(answer)
    right, params = _gemma_saved_bytes(), _gemma_params()
    if answer == right:
        return
    if answer == params:
        raise AssertionError(
            "that is the number of parameters of the head, V·d; each one takes 2 bytes in bfloat16"
        )
    if answer == 2 * right:
        raise AssertionError(
            "tying saves one [V, d] matrix, not two: the embedding is still stored (or you used "
            "4 bytes per value, float32's size)"
        )
    if answer == right // 2:
        raise AssertionError("bfloat16 takes 2 bytes per value, not 1")
    raise AssertionError(
        f"{answer:,} bytes is not it: the head that tying removes is vocab_size × hidden_size "
        "values, each 2 bytes in bfloat16 (read both sizes from REAL_EMBEDDING_CONFIGS)"
    )


def _copy_values(model: TinyLM) -> None:
    with torch.no_grad():
        model.lm_head.weight.copy_(model.embed.weight)


def _new_parameter(model: TinyLM) -> None:
    model.lm_head.weight = nn.Parameter(model.embed.weight.detach().clone())


@exercise(
    "ch04-tie",
    chapter=CHAPTER,
    wrong_answers=lambda: [
        _copy_values,
        _new_parameter,
        lambda model: model,
        lambda model: setattr(model, "tie_weights", True),
        "model.lm_head.weight = model.embed.weight",
    ],
)
def check_tie(answer: Callable[[TinyLM], object]) -> None:
    """``answer(model)`` must tie an untied TinyLM in place: one Parameter serves both uses."""
    assert callable(answer), f"answer must be a function tie(model), got {type(answer).__name__}"
    model = TinyLM(11, 6, tie_weights=False, n_layers=1, seed=3)
    before = count_parameters(model)
    answer(model)
    embed, head = model.embed.weight, model.lm_head.weight
    assert isinstance(head, nn.Parameter) and isinstance(embed, nn.Parameter), (
        "both model.embed.weight and model.lm_head.weight must stay nn.Parameters"
    )
    if head is not embed:
        if head.data_ptr() == embed.data_ptr():
            raise AssertionError(
                "the two share storage but are two Parameter objects: the optimizer would see two "
                "parameters. Assign the Parameter itself: model.lm_head.weight = model.embed.weight"
            )
        if torch.equal(head.detach(), embed.detach()):
            raise AssertionError(
                "the head now holds a copy of the embedding's values, but it is still a separate "
                "matrix: the first optimizer step makes them differ again. Make both attributes "
                "the same Parameter object"
            )
        raise AssertionError(
            "model.lm_head.weight is not model.embed.weight: tying means one Parameter, used twice"
        )
    assert count_parameters(model) == before - 11 * 6, (
        "after tying, the model should count V·d fewer parameters"
    )
    ids = torch.tensor([[0, 3, 10, 7]])
    with torch.no_grad():
        torch.testing.assert_close(model(ids), model.hidden(ids) @ embed.T)


def _tiny_lm_cases() -> list[tuple[int, int, int, bool]]:
    return [(v, d, n, t) for v, d in ((7, 4), (50, 8)) for n in (0, 1, 3) for t in (True, False)]


def _formula_ignoring_tying(v: int, d: int, n: int, tied: bool) -> int:
    block = 2 * d + 8 * d * d + 5 * d
    return 2 * v * d + n * block + 2 * d


def _formula_without_biases(v: int, d: int, n: int, tied: bool) -> int:
    return v * d * (1 if tied else 2) + n * (2 * d + 8 * d * d) + 2 * d


@exercise(
    "ch04-count",
    chapter=CHAPTER,
    wrong_answers=lambda: [
        _formula_ignoring_tying,
        _formula_without_biases,
        lambda v, d, n, tied: v * d * (1 if tied else 2),
        lambda v, d, n, tied: count_parameters(
            TinyLM(v, d, tie_weights=tied, n_layers=n), count_shared_once=False
        ),
        12345,
    ],
)
def check_count(answer: Callable[[int, int, int, bool], int]) -> None:
    """``answer(V, d, n_layers, tied)`` must give TinyLM's parameter count (d_hidden = 4d)."""
    assert callable(answer), (
        f"answer must be a function n_params(V, d, n_layers, tied), got {type(answer).__name__}"
    )
    for v, d, n, tied in _tiny_lm_cases():
        got = answer(v, d, n, tied)
        want = count_parameters(TinyLM(v, d, tie_weights=tied, n_layers=n))
        assert isinstance(got, numbers.Integral) and not isinstance(got, bool), (
            f"n_params must return an int, got {type(got).__name__} for V={v}, d={d}"
        )
        if got == want:
            continue
        if tied and got == want + v * d:
            raise AssertionError(
                f"for a tied model (V={v}, d={d}) you counted the head's V·d = {v * d} as well; "
                "a tied head has no parameters of its own"
            )
        raise AssertionError(
            f"V={v}, d={d}, n_layers={n}, tied={tied}: got {got:,}, the model has {want:,}. "
            "Count every piece: embedding V·d; each block has a LayerNorm (2d), fc_in (d·4d + 4d) "
            "and fc_out (4d·d + d); the final LayerNorm 2d; the head V·d only if untied"
        )
