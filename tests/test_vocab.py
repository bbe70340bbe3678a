"""Tests for lib.vocab: the shared vocabulary, flattening, and training history."""

from __future__ import annotations

import pytest
import torch
from hypothesis import assume, given
from hypothesis import strategies as st

from lib.vocab import TrainingHistory, Vocab, build_vocab, flatten


def test_build_vocab_orders_by_count_then_alphabet():
    vocab = build_vocab([["b", "a", "c"], ["a", "b", "a"], ["d"]], min_count=1)
    assert vocab.words == ("a", "b", "c", "d") and vocab.counts == (3, 2, 1, 1)
    assert isinstance(vocab, Vocab) and vocab.id("d") == 3
    with pytest.raises(KeyError, match="zzz"):
        vocab.id("zzz")
    with pytest.raises(TypeError, match="sentences"):
        build_vocab(["not tokenised"])
    with pytest.raises(ValueError, match="min_count"):
        build_vocab([["a"]], min_count=2)


def test_flatten_pinned():
    vocab = build_vocab([["x", "y"], ["y"]])
    ids, sentence_ids = flatten([["x", "oov", "y"], [], ["y"]], vocab)
    assert ids.tolist() == [vocab.id("x"), vocab.id("y"), vocab.id("y")]
    assert sentence_ids.tolist() == [0, 0, 2]
    assert ids.dtype == sentence_ids.dtype == torch.long
    with pytest.raises(TypeError, match="vocab"):
        flatten([["x"]], {"x": 0})  # type: ignore[arg-type]


@given(st.lists(st.lists(st.sampled_from("abcde"), max_size=6), min_size=1, max_size=6))
def test_flatten_keeps_every_in_vocabulary_token(sentences):
    assume(any(sentences))
    vocab = build_vocab(sentences)
    ids, sentence_ids = flatten(sentences, vocab)
    assert len(ids) == sum(len(s) for s in sentences)
    assert [vocab.words[i] for i in ids.tolist()] == [w for s in sentences for w in s]
    assert torch.all(sentence_ids[1:] >= sentence_ids[:-1])


def test_training_history_starts_empty():
    h = TrainingHistory()
    assert h.losses == [] and h.snapshots == [] and h.snapshot_epochs == []
