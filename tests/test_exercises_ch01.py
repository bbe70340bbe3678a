"""Chapter 1's exercise checkers beyond the registry's wrong/right answers (tests/test_exercises.py)."""

from __future__ import annotations

import pytest
import torch

from lib.embeddings import one_hot
from lib.exercises import ExerciseFailed, ch01, check


def test_one_hot_embed_accepts_a_product_and_refuses_every_row_reader() -> None:
    check("ch01-one-hot-embed", lambda ids, E: one_hot(ids, E.shape[0]) @ E)
    readers = [
        lambda ids, E: E[ids],
        lambda ids, E: torch.nn.functional.embedding(ids, E),
        lambda ids, E: torch.index_select(E, 0, ids.flatten()).reshape(*ids.shape, -1),
        lambda ids, E: torch.stack([E[i] for i in ids.flatten().tolist()]).reshape(*ids.shape, -1),
    ]
    for reader in readers:
        with pytest.raises(ExerciseFailed, match="read rows of E directly"):
            ch01.check_one_hot_embed(reader)


def test_grad_rows_loss_gradient_is_the_summed_position_weights() -> None:
    table = torch.randn(ch01.GRAD_VOCAB_SIZE, 4, dtype=torch.float64, requires_grad=True)
    ch01.grad_rows_loss(table).backward()
    assert table.grad is not None
    # pinned by hand: ids [[4,1,7,1,9],[3,4,4,0,7]], weights 1..5 by position
    expected = {0: 4.0, 1: 6.0, 3: 1.0, 4: 6.0, 7: 8.0, 9: 5.0}
    assert ch01._grad_rows() == expected
    for r in range(ch01.GRAD_VOCAB_SIZE):
        assert torch.equal(
            table.grad[r], torch.full((4,), expected.get(r, 0.0), dtype=torch.float64)
        )


def test_grad_rows_loss_rejects_a_wrong_table() -> None:
    with pytest.raises(ValueError, match=r"shape \[10, d\]"):
        ch01.grad_rows_loss(torch.zeros(9, 3))
    with pytest.raises(TypeError, match=r"torch\.Tensor"):
        ch01.grad_rows_loss([[0.0]])  # type: ignore[arg-type]
    assert ch01.grad_rows_loss(torch.zeros(10, 3, device="meta")).device.type == "meta"


def test_grad_measure_needs_a_prediction_recorded_before_it() -> None:
    ch01._reset_log()
    with pytest.raises(ExerciseFailed, match="no prediction was recorded"):
        ch01.check_grad_measure(ch01._right_grad())
    ch01.check_grad_predict(ch01._grad_rows())
    ch01.check_grad_measure(ch01._right_grad(5))
    with pytest.raises(ExerciseFailed, match="no longer a prediction"):
        ch01.check_grad_predict(ch01._grad_rows())
    ch01._reset_log()


def test_grad_measure_names_the_rows_a_wrong_prediction_got_wrong() -> None:
    ch01._reset_log()
    ch01.check_grad_predict({4: 6.0, 1: 6.0, 7: 8.0, 9: 5.0, 3: 1.0, 0: 4.0, 2: 1.0})
    with pytest.raises(ExerciseFailed, match=r"rows \[2\] are never looked up"):
        ch01.check_grad_measure(ch01._right_grad())
    ch01._reset_log()


def test_round_trip_drops_a_byte_without_a_token_and_keeps_ordinary_text() -> None:
    assert ch01.smol_round_trip("a\x04b") == "ab"
    assert ch01.smol_round_trip("Embeddings 🦜 naïve 12345") == "Embeddings 🦜 naïve 12345"
    with pytest.raises(TypeError, match="must be a str"):
        ch01.smol_round_trip(b"a")  # type: ignore[arg-type]
    with pytest.raises(ExerciseFailed, match="survives the round trip"):
        ch01.check_round_trip("hello")
