"""Tests for lib.word2vec: vocabulary, pairs, sampling, the SGNS and CBOW losses, training,
queries, pseudo-words."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from lib.corpus import generate_corpus
from lib.vocab import build_vocab
from lib.word2vec import (
    CBOWNS,
    SkipGramNS,
    add_pseudowords,
    analogy,
    cbow_examples,
    mixture_weights,
    nearest_neighbours,
    nearest_to_vector,
    sample_negatives,
    skipgram_pairs,
    subsample_keep_probability,
    train_cbow,
    train_skipgram,
    train_word2vec,
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


# --- CBOW ------------------------------------------------------------------------------------------


def test_cbow_examples_pinned():
    # "a b c" and "d e": with window 1 every token has its neighbours inside its own sentence
    vocab = build_vocab([["a", "b", "c"], ["d", "e"], ["z"]])
    centres, contexts = cbow_examples([["a", "b", "c"], ["d", "e"], ["z"]], vocab, window=1)
    words = [vocab.words[i] for i in centres.tolist()]
    assert words == ["a", "b", "c", "d", "e"]  # "z" alone has no context: no example
    ctx = [[vocab.words[j] if j >= 0 else None for j in row] for row in contexts.tolist()]
    assert ctx == [[None, "b"], ["a", "c"], ["b", None], [None, "e"], ["d", None]]


@given(lengths=st.lists(st.integers(1, 6), min_size=1, max_size=5), window=st.integers(1, 3))
def test_cbow_example_counts(lengths, window):
    sentences = [[f"w{i}_{j}" for j in range(n)] for i, n in enumerate(lengths)]
    vocab = build_vocab(sentences)
    centres, contexts = cbow_examples(sentences, vocab, window=window)
    assert len(centres) == sum(n for n in lengths if n > 1)
    assert contexts.shape == (len(centres), 2 * window)
    # every context word present in the rows is exactly one skip-gram pair
    assert int((contexts >= 0).sum()) == len(skipgram_pairs(sentences, vocab, window=window))


def test_cbow_loss_against_a_hand_computation():
    g = torch.Generator().manual_seed(4)
    model = CBOWNS(6, 3, generator=g)
    with torch.no_grad():
        model.out_embed.weight.normal_(generator=g)
    v, u = model.in_embed.weight.detach(), model.out_embed.weight.detach()
    centre, contexts, negs = (
        torch.tensor([2]),
        torch.tensor([[0, -1, 4, 5]]),
        torch.tensor([[1, 3]]),
    )
    h = (v[0] + v[4] + v[5]) / 3  # the pad (-1) is not a word: mean of three
    by_hand = -math.log(1 / (1 + math.exp(-float(u[2] @ h)))) - sum(
        math.log(1 / (1 + math.exp(float(u[k] @ h)))) for k in (1, 3)
    )
    assert model(centre, contexts, negs).item() == pytest.approx(by_hand, rel=1e-6)


def test_cbow_gradient_reaches_each_context_word_as_one_over_count():
    model = CBOWNS(5, 2)
    with torch.no_grad():
        model.out_embed.weight.copy_(torch.arange(10.0).reshape(5, 2) / 10)
    loss = model(torch.tensor([1]), torch.tensor([[0, 3, -1, -1]]), torch.tensor([[4]]))
    loss.backward()
    grad = model.in_embed.weight.grad
    torch.testing.assert_close(grad[0], grad[3])  # the mean splits the gradient equally ...
    assert torch.all(grad[[1, 2, 4]] == 0)  # ... and only context words get one
    # d loss / d h, divided by the 2 context words
    h = model.in_embed.weight.detach()[[0, 3]].mean(0)
    u = model.out_embed.weight.detach()
    d_h = -(1 - torch.sigmoid(u[1] @ h)) * u[1] + torch.sigmoid(u[4] @ h) * u[4]
    torch.testing.assert_close(grad[0], d_h / 2)


def test_cbow_training_lowers_the_loss_and_is_deterministic():
    sentences = generate_corpus(600, seed=1)
    _, _, h1 = train_cbow(sentences, epochs=4, seed=3, lr=0.05)
    m2, _, h2 = train_cbow(sentences, epochs=4, seed=3, lr=0.05)
    assert h1.losses == h2.losses
    assert h1.losses[-1] < h1.losses[0] - 0.5
    assert isinstance(m2, CBOWNS)


def test_train_word2vec_skipgram_is_train_skipgram_and_errors():
    sentences = generate_corpus(200, seed=2)
    a, _, _ = train_word2vec(sentences, architecture="skipgram", epochs=1, seed=1)
    b, _, _ = train_skipgram(sentences, epochs=1, seed=1)
    assert torch.equal(a.vectors(), b.vectors())
    with pytest.raises(ValueError, match="architecture"):
        train_word2vec(sentences, architecture="glove")
    with pytest.raises(TypeError, match="architecture"):
        train_cbow(sentences, architecture="cbow")
    with pytest.raises(ValueError, match="context"):
        CBOWNS(3, 2)(torch.tensor([0]), torch.tensor([[-1, -1]]), torch.tensor([[1]]))
    with pytest.raises(ValueError, match="centre"):
        SkipGramNS(3, 2)(torch.tensor([3]), torch.tensor([0]), torch.tensor([[1]]))


# --- polysemy: pseudo-words ------------------------------------------------------------------------


def test_add_pseudowords_takes_exact_counts():
    sentences = [["x", "y", "a"]] * 10 + [["y", "b"]] * 5
    out, names = add_pseudowords(sentences, "x", "y", [(2, 6), (3, 1)], seed=0)
    flat = [w for s in out for w in s]
    assert names == ["x|y:2:6", "x|y:3:1"]
    assert flat.count("x|y:2:6") == 8 and flat.count("x|y:3:1") == 4
    assert flat.count("x") == 10 - 5 and flat.count("y") == 15 - 7
    assert flat.count("a") == 10 and flat.count("b") == 5  # nothing else moves
    assert [w for s in sentences for w in s].count("x") == 10  # input unchanged
    with pytest.raises(ValueError, match="occurrences"):
        add_pseudowords(sentences, "x", "y", [(11, 0)])
    with pytest.raises(ValueError, match="differ"):
        add_pseudowords(sentences, "x", "x", [(1, 1)])


def test_mixture_weights_recover_a_known_mix():
    g = torch.Generator().manual_seed(0)
    parts = torch.randn(2, 16, generator=g)
    weights, fit = mixture_weights(0.7 * parts[0] + 0.2 * parts[1], parts)
    torch.testing.assert_close(weights, torch.tensor([0.7, 0.2], dtype=torch.float64))
    assert fit == pytest.approx(1.0, abs=1e-9)
    orthogonal = torch.tensor([0.0, 0.0, 1.0])
    _, fit0 = mixture_weights(orthogonal, torch.eye(3)[:2])
    assert fit0 == 0.0  # nothing of the target lies in the parts' span
    with pytest.raises(ValueError, match="parts"):
        mixture_weights(torch.ones(3), torch.ones(2, 4))


def test_nearest_to_vector_ranks_by_cosine():
    vocab = build_vocab([["a", "b", "c"]])
    vectors = torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    found = nearest_to_vector(vectors, vocab, torch.tensor([2.0, 0.1]), k=2)
    assert [w for w, _ in found] == ["a", "c"]
    assert found[0][1] == pytest.approx(2 / math.hypot(2, 0.1))


# --- training options reach training ----------------------------------------------------------------


def _record_batches(monkeypatch, architecture: str) -> list[tuple[torch.Tensor, ...]]:
    """Swap the architecture's model for a subclass that records what each training step gets."""
    from lib.word2vec import ARCHITECTURES

    calls: list[tuple[torch.Tensor, ...]] = []
    model_class, make_examples = ARCHITECTURES[architecture]

    class Recording(model_class):  # type: ignore[misc, valid-type]
        def forward(self, centre, context, negatives):
            calls.append((centre.clone(), context.clone(), negatives.clone()))
            return super().forward(centre, context, negatives)

    monkeypatch.setitem(ARCHITECTURES, architecture, (Recording, make_examples))
    return calls


@pytest.mark.parametrize("architecture", ["skipgram", "cbow"])
@pytest.mark.parametrize("negatives", [1, 3, 8])
def test_negatives_option_reaches_training(monkeypatch, architecture, negatives):
    calls = _record_batches(monkeypatch, architecture)
    train_word2vec(generate_corpus(40, seed=3), architecture=architecture, dim=4, epochs=2,
                   negatives=negatives, batch_size=64)  # fmt: skip
    assert len(calls) > 2  # several steps in each of the two epochs
    assert all(negs.shape == (len(centre), negatives) for centre, _, negs in calls)


def _skewed_corpus() -> list[list[str]]:
    """600 tokens: "a" 400 times, "b" 150, "c" 50, in a fixed random order, 20 per sentence."""
    tokens = ["a"] * 400 + ["b"] * 150 + ["c"] * 50
    order = torch.randperm(len(tokens), generator=torch.Generator().manual_seed(0)).tolist()
    shuffled = [tokens[k] for k in order]
    return [shuffled[k : k + 20] for k in range(0, len(shuffled), 20)]


def test_noise_words_follow_unigram_to_the_three_quarters(monkeypatch):
    # the noise words training draws must follow count^0.75 (Mikolov et al. 2013, arXiv:1310.4546,
    # §2.2), not the unigram counts themselves: ~190k draws put the empirical frequencies within
    # 5 binomial standard deviations (<= 0.006) of the 3/4 law, 0.05-0.08 away from the power-1 law
    calls = _record_batches(monkeypatch, "skipgram")
    corpus = _skewed_corpus()
    vocab = build_vocab(corpus)
    train_word2vec(corpus, dim=4, epochs=2, negatives=40, batch_size=4096, seed=1)
    draws = torch.cat([negs.flatten() for _, _, negs in calls])
    freq = torch.bincount(draws, minlength=len(vocab)).double() / len(draws)
    expected = unigram_distribution(vocab, 0.75).double()
    sd = (expected * (1 - expected) / len(draws)).sqrt()
    assert torch.all((freq - expected).abs() <= 5 * sd)
    plain = unigram_distribution(vocab, 1.0).double()
    assert torch.all((freq - plain).abs() > 20 * sd)  # the test can tell the two laws apart


def test_subsampling_option_reaches_training(monkeypatch):
    # "the" is half the corpus: with t = 1e-3 it is kept with probability sqrt(t / 0.5) ≈ 0.045 per
    # epoch, and each of the 1000 words seen once (f = 1/2000 < t) is always kept (arXiv:1310.4546,
    # eq. 5). CBOW makes one example per kept token with a context, so the centres count the kept
    # tokens: an inverted mask (keeping "the" 95% of the time and dropping the rare words) fails.
    calls = _record_batches(monkeypatch, "cbow")
    rare = [f"w{k}" for k in range(1000)]
    corpus = [[w for k in range(s, s + 25) for w in ("the", rare[k])] for s in range(0, 1000, 25)]
    vocab = build_vocab(corpus)
    epochs, threshold = 3, 1e-3
    train_word2vec(corpus, architecture="cbow", dim=4, epochs=epochs, subsample=threshold,
                   batch_size=4096)  # fmt: skip
    centres = torch.cat([centre for centre, _, _ in calls])
    keep = subsample_keep_probability(vocab, threshold)
    the = vocab.id("the")
    assert keep[the].item() == pytest.approx(math.sqrt(threshold / 0.5), rel=1e-6)
    n_the = epochs * 1000
    kept_the = int((centres == the).sum())
    p = keep[the].item()
    assert abs(kept_the - p * n_the) <= 5 * math.sqrt(n_the * p * (1 - p))  # about 134 ± 57
    # every rare token is kept and still has a neighbour in its 50-token sentence
    assert int((centres != the).sum()) == epochs * 1000


# --- subsampling rules (H7: the C tool's keep probability next to the paper's) ----------------------


def test_subsample_rules_pinned_against_word2vec_c():
    from lib.word2vec import SUBSAMPLE_RULES, subsample_keep_probability

    vocab = build_vocab([["a"] * 96 + ["b"] * 3 + ["c"]])  # f = 0.96, 0.03, 0.01
    t = 1e-2
    paper = subsample_keep_probability(vocab, t).tolist()
    c_tool = subsample_keep_probability(vocab, t, rule="word2vec.c").tolist()
    for word, f in (("a", 0.96), ("b", 0.03), ("c", 0.01)):
        i = vocab.id(word)
        # word2vec.c: ran = (sqrt(cn / (sample * train_words)) + 1) * (sample * train_words) / cn
        ran = (math.sqrt(f / t) + 1) * t / f
        assert c_tool[i] == pytest.approx(min(1.0, ran), rel=1e-6)
        assert paper[i] == pytest.approx(min(1.0, math.sqrt(t / f)), rel=1e-6)
    assert c_tool[vocab.id("a")] > paper[vocab.id("a")]  # the C tool keeps more
    assert set(SUBSAMPLE_RULES) == {"paper", "word2vec.c"}
    with pytest.raises(ValueError, match="rule"):
        subsample_keep_probability(vocab, t, rule="gensim")
