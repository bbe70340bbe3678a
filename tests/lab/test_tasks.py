"""Tests for lib/lab/tasks.py (the length-extrapolation lab)."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from lib.lab import (
    CONDITIONS,
    IGNORE_INDEX,
    earliest_answer_key,
    induction_batch,
)


@given(
    batch=st.integers(1, 5),
    seq_len=st.integers(4, 40),
    extra_vocab=st.integers(0, 10),
    seed=st.integers(0, 10_000),
)
def test_induction_batch_is_a_repeated_block_with_next_token_targets(
    batch, seq_len, extra_vocab, seed
):
    vocab = seq_len // 2 + extra_vocab
    out = induction_batch(batch, seq_len, vocab, generator=torch.Generator().manual_seed(seed))
    assert out.input_ids.shape == out.targets.shape == (batch, seq_len)
    assert out.periods.shape == (batch,)
    for b in range(batch):
        n = int(out.periods[b])
        assert math.ceil(seq_len / 4) <= n <= seq_len // 2
        x = out.input_ids[b].tolist()
        block = x[:n]
        assert len(set(block)) == n, "a block holds distinct tokens"
        assert all(0 <= tok < vocab for tok in block)
        assert x == [block[t % n] for t in range(seq_len)]
        for t in range(seq_len):
            expected = x[t + 1] if n <= t < seq_len - 1 else IGNORE_INDEX
            assert int(out.targets[b, t]) == expected


def test_induction_batch_pinned_period_range_and_seed():
    # T = 4: periods can only be ceil(4/4) = 1 or floor(4/2) = 2.
    out = induction_batch(64, 4, 2, generator=torch.Generator().manual_seed(0))
    assert set(out.periods.tolist()) == {1, 2}
    # same seed, same batch; another seed, another batch
    a = induction_batch(3, 12, 20, generator=torch.Generator().manual_seed(5))
    b = induction_batch(3, 12, 20, generator=torch.Generator().manual_seed(5))
    c = induction_batch(3, 12, 20, generator=torch.Generator().manual_seed(6))
    assert torch.equal(a.input_ids, b.input_ids)
    assert not torch.equal(a.input_ids, c.input_ids)


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"batch_size": 0}, ValueError, "batch_size"),
        ({"seq_len": 3}, ValueError, "seq_len"),
        ({"seq_len": 8.0}, TypeError, "seq_len"),
        ({"vocab_size": 3}, ValueError, "vocab_size"),
        ({"generator": 0}, TypeError, "generator"),
    ],
)
def test_induction_batch_errors(kwargs, error, match):
    args = {"batch_size": 2, "seq_len": 8, "vocab_size": 8, "generator": torch.Generator()}
    args |= kwargs
    with pytest.raises(error, match=match):
        induction_batch(args.pop("batch_size"), args.pop("seq_len"), args.pop("vocab_size"), **args)


@given(seq_len=st.integers(8, 48), data=st.data(), seed=st.integers(0, 1000))
def test_period_range_bounds_every_period_and_keeps_the_repeat_structure(seq_len, data, seed):
    high = data.draw(st.integers(1, seq_len // 2))
    low = data.draw(st.integers(1, high))
    out = induction_batch(
        6,
        seq_len,
        high + 3,
        generator=torch.Generator().manual_seed(seed),
        period_range=(low, high),
    )
    assert ((out.periods >= low) & (out.periods <= high)).all()
    for b in range(6):
        n = int(out.periods[b])
        assert torch.equal(out.input_ids[b, n:], out.input_ids[b, :-n])


def test_conditions_keep_or_scale_the_training_periods():
    assert CONDITIONS["seen"](128, 32) == (8, 16) == CONDITIONS["seen"](32, 32)
    assert CONDITIONS["unseen"](128, 32) == (32, 64)
    assert CONDITIONS["unseen"](32, 32) == CONDITIONS["seen"](32, 32)
    # the default range of induction_batch is the unseen one
    a = induction_batch(50, 40, 20, generator=torch.Generator().manual_seed(1))
    b = induction_batch(
        50, 40, 20, generator=torch.Generator().manual_seed(1), period_range=(10, 20)
    )
    assert torch.equal(a.input_ids, b.input_ids)


@pytest.mark.parametrize(
    ("period_range", "error"),
    [((0, 4), ValueError), ((5, 4), ValueError), ((2, 9), ValueError), ([2, 4], TypeError)],
)
def test_period_range_errors(period_range, error):
    with pytest.raises(error, match="period_range"):
        induction_batch(2, 16, 16, generator=torch.Generator(), period_range=period_range)


@given(seq_len=st.integers(4, 40), seed=st.integers(0, 1000))
def test_earliest_answer_key_is_the_first_key_after_an_earlier_copy(seq_len, seed):
    batch = induction_batch(4, seq_len, seq_len, generator=torch.Generator().manual_seed(seed))
    keys = earliest_answer_key(batch.periods, seq_len)
    for b in range(4):
        x = batch.input_ids[b]
        for t in range(int(batch.periods[b]), seq_len - 1):
            holders = [j for j in range(1, t + 1) if x[j - 1] == x[t]]
            assert holders and int(keys[b, t]) == holders[0]
            assert x[holders[0]] == x[t + 1]  # it holds the answer


def test_earliest_answer_key_pinned_and_errors():
    assert earliest_answer_key(torch.tensor([3]), 7).tolist() == [[1, 2, 3, 1, 2, 3, 1]]
    with pytest.raises(TypeError, match="periods"):
        earliest_answer_key(torch.tensor([3.0]), 7)
    with pytest.raises(ValueError, match="periods"):
        earliest_answer_key(torch.tensor([0]), 7)
