"""Tests for lib.word2vec: vocabulary, pairs, sampling, the SGNS loss, training, queries."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from lib.corpus import generate_corpus
from lib.word2vec import (
    SkipGramNS,
    analogy,
    build_vocab,
    nearest_neighbours,
    sample_negatives,
    skipgram_pairs,
    subsample_keep_probability,
    train_skipgram,
    unigram_distribution,
)


@pytest.fixture(scope="module")
def trained():
    """Skip-gram trained once on the generated corpus (shared by the slow tests)."""
    return train_skipgram(generate_corpus(5000, seed=0), seed=0, snapshot_every=5)


# --- vocabulary ------------------------------------------------------------------------------------


def test_build_vocab_order_and_counts():
    vocab = build_vocab([["b", "a", "c"], ["a", "b", "a"]])
    assert vocab.words == ("a", "b", "c")  # by count, ties alphabetical
    assert vocab.counts == (3, 2, 1)
    assert vocab.id("b") == 1 and "c" in vocab and len(vocab) == 3
    assert vocab.encode(["c", "zzz", "a"]) == [2, 0]


def test_build_vocab_min_count_and_errors():
    assert build_vocab([["a", "a", "b"]], min_count=2).words == ("a",)
    with pytest.raises(ValueError, match="min_count"):
        build_vocab([["a"]], min_count=2)
    with pytest.raises(ValueError, match="min_count"):
        build_vocab([["a"]], min_count=0)
    with pytest.raises(TypeError, match=r"sentences\[1\]"):
        build_vocab([["a"], "a sentence"])
    with pytest.raises(KeyError, match="'zebra'"):
        build_vocab([["a"]]).id("zebra")


# --- pairs and sampling ----------------------------------------------------------------------


def test_skipgram_pairs_pinned():
    sentences = [["a", "b", "c"], ["c", "a"]]
    vocab = build_vocab(sentences)  # a=0, c=1, b=2
    a, c, b = vocab.id("a"), vocab.id("c"), vocab.id("b")
    pairs = {tuple(p) for p in skipgram_pairs(sentences, vocab, window=1).tolist()}
    assert sorted(pairs) == sorted({(a, b), (b, a), (b, c), (c, b), (c, a), (a, c)})
    window2 = sorted(map(tuple, skipgram_pairs(sentences, vocab, window=2).tolist()))
    # window 2 adds (a, c) and (c, a) from the first sentence (no pair crosses the sentence end)
    assert window2 == sorted([(a, b), (b, a), (b, c), (c, b), (c, a), (a, c), (a, c), (c, a)])


@given(
    lengths=st.lists(st.integers(1, 9), min_size=1, max_size=6),
    window=st.integers(1, 4),
)
def test_skipgram_pair_count(lengths, window):
    sentences = [[f"w{i % 5}" for i in range(n)] for n in lengths]
    pairs = skipgram_pairs(sentences, build_vocab(sentences), window)
    expected = sum(2 * max(0, n - o) for n in lengths for o in range(1, window + 1))
    assert pairs.shape == (expected, 2)


def test_unigram_distribution_pinned():
    vocab = build_vocab([["a", "a", "a", "b"]])
    p = unigram_distribution(vocab)
    expected_a = 3**0.75 / (3**0.75 + 1)
    assert p.tolist() == pytest.approx([expected_a, 1 - expected_a], rel=1e-6)
    assert unigram_distribution(vocab, power=1.0).tolist() == pytest.approx([0.75, 0.25])


def test_sample_negatives_follow_the_distribution():
    p = torch.tensor([0.5, 0.3, 0.2])
    g = torch.Generator().manual_seed(0)
    draws = sample_negatives(p, (20_000, 5), g)
    assert draws.shape == (20_000, 5) and draws.dtype == torch.long
    freq = torch.bincount(draws.flatten(), minlength=3).float() / draws.numel()
    torch.testing.assert_close(freq, p, atol=0.01, rtol=0)
    with pytest.raises(ValueError, match="distribution"):
        sample_negatives(torch.ones(2, 2), (3,))
    with pytest.raises(TypeError, match="distribution"):
        sample_negatives(torch.tensor([1, 2]), (3,))


def test_subsample_keep_probability_pinned():
    vocab = build_vocab([["a"] * 99 + ["b"]])  # f(a) = 0.99, f(b) = 0.01
    keep = subsample_keep_probability(vocab, threshold=1e-3)
    assert keep.tolist() == pytest.approx(
        [math.sqrt(1e-3 / 0.99), math.sqrt(1e-3 / 0.01)], rel=1e-6
    )
    assert subsample_keep_probability(vocab, threshold=0.5).tolist() == pytest.approx(
        [0.5**0.5 / 0.99**0.5, 1.0]
    )
    with pytest.raises(ValueError, match="threshold"):
        subsample_keep_probability(vocab, threshold=0.0)


# --- the model ---------------------------------------------------------------------------------


def test_sgns_loss_pinned():
    model = SkipGramNS(3, 2)
    with torch.no_grad():
        model.in_embed.weight.copy_(torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]))
        model.out_embed.weight.copy_(torch.tensor([[0.5, 0.0], [0.0, -1.0], [2.0, 1.0]]))
    loss = model(torch.tensor([2]), torch.tensor([0]), torch.tensor([[1, 2]]))
    # v_c = (1, 1); u_o = (0.5, 0) -> 0.5; negatives u = (0, -1) -> -1 and (2, 1) -> 3
    sig = lambda x: 1 / (1 + math.exp(-x))  # noqa: E731
    expected = -math.log(sig(0.5)) - math.log(sig(1.0)) - math.log(sig(-3.0))
    assert loss.shape == (1,)
    assert loss.item() == pytest.approx(expected, rel=1e-6)


def test_init_follows_the_c_code():
    model = SkipGramNS(50, 8, generator=torch.Generator().manual_seed(0))
    assert model.in_embed.weight.abs().max() <= 0.5 / 8
    assert torch.count_nonzero(model.out_embed.weight) == 0


def test_training_loss_decreases_and_snapshots(trained):
    model, vocab, history = trained
    assert len(history.losses) == 10
    assert history.losses[-1] < 0.5 * history.losses[0]
    assert history.snapshot_epochs == [0, 5, 10]
    assert history.snapshots[0].shape == (len(vocab), 32)
    assert history.snapshots[0].abs().max() <= 0.5 / 32  # the initial noise
    torch.testing.assert_close(history.snapshots[-1], model.vectors())


def test_training_is_deterministic_given_the_seed():
    corpus = generate_corpus(300, seed=1)
    _, _, h1 = train_skipgram(corpus, dim=8, epochs=2, seed=5, snapshot_every=2)
    _, _, h2 = train_skipgram(corpus, dim=8, epochs=2, seed=5, snapshot_every=2)
    _, _, h3 = train_skipgram(corpus, dim=8, epochs=2, seed=6, snapshot_every=2)
    assert h1.losses == h2.losses
    assert torch.equal(h1.snapshots[-1], h2.snapshots[-1])
    assert not torch.equal(h1.snapshots[-1], h3.snapshots[-1])


def test_training_with_subsampling_runs():
    model, vocab, history = train_skipgram(generate_corpus(300, 2), dim=8, epochs=2, subsample=1e-2)
    assert len(history.losses) == 2 and model.vectors().shape == (len(vocab), 8)


def test_analogies_on_the_generated_corpus(trained):
    """The real test of the trainer: the corpus's structure must come out as vector offsets."""
    model, vocab, _ = trained
    vectors = model.vectors()
    assert analogy(vectors, vocab, "king", "man", "woman", k=3)[0][0] == "queen"
    assert analogy(vectors, vocab, "paris", "france", "italy", k=3)[0][0] == "rome"
    assert "played" in [w for w, _ in analogy(vectors, vocab, "walked", "walk", "play", k=3)]
    neighbours = [w for w, _ in nearest_neighbours(vectors, vocab, "bank", k=6)]
    assert "shore" in neighbours and "vault" in neighbours  # both senses in one vector


def test_train_errors():
    corpus = [["a", "b"]]
    with pytest.raises(ValueError, match="dim"):
        train_skipgram(corpus, dim=0)
    with pytest.raises(TypeError, match="window"):
        train_skipgram(corpus, window=1.5)
    with pytest.raises(ValueError, match="lr"):
        train_skipgram(corpus, lr=-1.0)
    with pytest.raises(ValueError, match="seed"):
        train_skipgram(corpus, seed=-1)
    with pytest.raises(ValueError, match="snapshot_every"):
        train_skipgram(corpus, snapshot_every=0)
    with pytest.raises(ValueError, match="pair"):
        train_skipgram([["a"], ["b"]])


# --- queries on hand-made vectors --------------------------------------------------------------


@pytest.fixture
def toy():
    words = [["king", "queen", "man", "woman", "apple"]]
    vocab = build_vocab(words)  # all count 1: alphabetical ids
    rows = {  # axes: (royal, male, fruit)
        "king": [1.0, 1.0, 0.0],
        "queen": [1.0, -1.0, 0.0],
        "man": [0.0, 1.0, 0.0],
        "woman": [0.0, -1.0, 0.0],
        "apple": [0.0, 0.0, 1.0],
    }
    vectors = torch.tensor([rows[w] for w in vocab.words])
    return vectors, vocab


def test_nearest_neighbours_pinned(toy):
    vectors, vocab = toy
    result = nearest_neighbours(vectors, vocab, "king", k=4)
    # cos(king, man) = 1/sqrt(2); cos(king, queen) = 0; cos(king, apple) = 0; cos(king, woman) = -1/sqrt(2)
    assert result[0] == ("man", pytest.approx(1 / math.sqrt(2)))
    assert [w for w, _ in result[1:3]] == ["apple", "queen"]  # ties keep vocabulary order
    assert result[3] == ("woman", pytest.approx(-1 / math.sqrt(2)))


def test_analogy_pinned(toy):
    vectors, vocab = toy
    result = analogy(vectors, vocab, "king", "man", "woman", k=2)
    # unit(king) - unit(man) + unit(woman) = (1/sqrt2, 1/sqrt2 - 2, 0); its cosine with queen:
    x = torch.tensor([1 / math.sqrt(2), 1 / math.sqrt(2) - 2, 0.0], dtype=torch.float64)
    expected = float(
        x @ torch.tensor([1.0, -1.0, 0.0], dtype=torch.float64) / (x.norm() * math.sqrt(2))
    )
    assert result[0] == ("queen", pytest.approx(expected))
    assert result[1][0] == "apple"  # king, man, woman themselves are excluded
    assert len(analogy(vectors, vocab, "king", "man", "woman", k=10)) == 2


def test_query_errors(toy):
    vectors, vocab = toy
    with pytest.raises(KeyError, match="'prince'"):
        nearest_neighbours(vectors, vocab, "prince")
    with pytest.raises(KeyError, match="'duke'"):
        analogy(vectors, vocab, "king", "duke", "woman")
    with pytest.raises(ValueError, match="vectors must be"):
        nearest_neighbours(vectors[:3], vocab, "king")
    with pytest.raises(TypeError, match="vectors"):
        nearest_neighbours(vectors.long(), vocab, "king")
    with pytest.raises(ValueError, match="k must be"):
        analogy(vectors, vocab, "king", "man", "woman", k=0)
