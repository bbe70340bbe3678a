"""Tests for lib.glove: co-occurrence counts, the weighting function, the loss, training."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from lib.corpus import generate_corpus
from lib.glove import (
    COOCCURRENCE_WEIGHTINGS,
    cooccurrence_matrix,
    count_histogram,
    glove_loss,
    glove_weight,
    train_glove,
    train_glove_tables,
)
from lib.word2vec import analogy, build_vocab

# --- co-occurrence -----------------------------------------------------------------------------


def test_cooccurrence_pinned_harmonic():
    sentences = [["a", "b", "c"], ["c", "a"]]
    vocab = build_vocab(sentences)  # a=0, c=1, b=2
    X = cooccurrence_matrix(sentences, vocab, window=2)
    a, c, b = vocab.id("a"), vocab.id("c"), vocab.id("b")
    expected = torch.zeros(3, 3, dtype=torch.float64)
    for i, j, w in [(a, b, 1.0), (b, c, 1.0), (a, c, 0.5), (c, a, 1.0)]:  # (a, c) at distance 2
        expected[i, j] += w
        expected[j, i] += w
    assert X.dtype == torch.float64
    torch.testing.assert_close(X, expected)


def test_cooccurrence_uniform_and_across_sentences():
    sentences = [["a", "b"], ["c"]]
    vocab = build_vocab(sentences)  # a, b, c
    within = cooccurrence_matrix(sentences, vocab, window=2, weighting="uniform")
    assert within.tolist() == [[0, 1, 0], [1, 0, 0], [0, 0, 0]]
    stream = cooccurrence_matrix(sentences, vocab, window=2, across_sentences=True)
    # one stream "a b c": (a, b) at 1, (b, c) at 1, (a, c) at 2 -> 1/2
    assert stream.tolist() == [[0, 1, 0.5], [1, 0, 1], [0.5, 1, 0]]


@given(
    lengths=st.lists(st.integers(1, 8), min_size=1, max_size=5),
    window=st.integers(1, 4),
    weighting=st.sampled_from(sorted(COOCCURRENCE_WEIGHTINGS)),
)
def test_cooccurrence_symmetric_with_the_right_total(lengths, window, weighting):
    sentences = [[f"w{(3 * i + n) % 4}" for i in range(n)] for n in lengths]
    X = cooccurrence_matrix(sentences, build_vocab(sentences), window, weighting)
    torch.testing.assert_close(X, X.T)
    weight = COOCCURRENCE_WEIGHTINGS[weighting]
    total = sum(2 * max(0, n - d) * weight(d) for n in lengths for d in range(1, window + 1))
    assert float(X.sum()) == pytest.approx(total)


def test_cooccurrence_errors():
    sentences = [["a", "b"]]
    vocab = build_vocab(sentences)
    with pytest.raises(ValueError, match="weighting"):
        cooccurrence_matrix(sentences, vocab, 2, weighting="gaussian")
    with pytest.raises(ValueError, match="window"):
        cooccurrence_matrix(sentences, vocab, 0)
    with pytest.raises(TypeError, match="vocab"):
        cooccurrence_matrix(sentences, {"a": 0}, 2)
    with pytest.raises(TypeError, match="across_sentences"):
        cooccurrence_matrix(sentences, vocab, 2, across_sentences=1)


# --- weighting function and loss ------------------------------------------------------------------


def test_glove_weight_pinned():
    x = torch.tensor([0.0, 1.0, 50.0, 100.0, 250.0], dtype=torch.float64)
    expected = [0.0, 0.01**0.75, 0.5**0.75, 1.0, 1.0]
    assert glove_weight(x).tolist() == pytest.approx(expected)
    assert glove_weight(torch.tensor([5.0]), x_max=10.0, alpha=1.0).item() == pytest.approx(0.5)


def test_glove_weight_errors():
    with pytest.raises(ValueError, match="x must be non-negative"):
        glove_weight(torch.tensor([-1.0]))
    with pytest.raises(TypeError, match="x must be"):
        glove_weight(torch.tensor([1]))
    with pytest.raises(ValueError, match="x_max"):
        glove_weight(torch.tensor([1.0]), x_max=0.0)


def test_glove_loss_zero_at_an_exact_solution():
    # Build X from chosen parameters so that w_i·w̃_j + b_i + b̃_j = log X_ij on the nonzero entries.
    g = torch.Generator().manual_seed(0)
    W, Wt = (
        torch.randn(5, 3, generator=g, dtype=torch.float64),
        torch.randn(5, 3, generator=g, dtype=torch.float64),
    )
    b, bt = (
        torch.randn(5, generator=g, dtype=torch.float64),
        torch.randn(5, generator=g, dtype=torch.float64),
    )
    X = torch.exp(W @ Wt.T + b[:, None] + bt[None, :])
    X[0, 1] = 0.0  # a zero entry is skipped, whatever the model predicts there
    assert glove_loss(W, Wt, b, bt, X).item() == pytest.approx(0.0, abs=1e-20)
    assert glove_loss(W + 0.1, Wt, b, bt, X).item() > 0


def test_glove_loss_pinned():
    W = torch.tensor([[1.0], [0.0]])
    Wt = torch.tensor([[2.0], [1.0]])
    b, bt = torch.zeros(2), torch.zeros(2)
    X = torch.tensor([[math.e, 0.0], [0.0, 200.0]])
    # entry (0,0): f(e) = (e/100)^0.75, residual 1*2 - 1 = 1; entry (1,1): f = 1, residual 0 - log 200
    expected = (math.e / 100) ** 0.75 * 1.0 + 1.0 * math.log(200) ** 2
    assert glove_loss(W, Wt, b, bt, X).item() == pytest.approx(expected, rel=1e-6)


def test_glove_loss_shape_errors():
    W, b, X = torch.zeros(3, 2), torch.zeros(3), torch.ones(3, 3)
    with pytest.raises(ValueError, match="W_tilde"):
        glove_loss(W, torch.zeros(3, 4), b, b, X)
    with pytest.raises(ValueError, match="b_tilde"):
        glove_loss(W, W, b, torch.zeros(2), X)
    with pytest.raises(ValueError, match="X must have shape"):
        glove_loss(W, W, b, b, torch.ones(3, 2))
    with pytest.raises(ValueError, match="W must be"):
        glove_loss(torch.zeros(3), W, b, b, X)
    with pytest.raises(TypeError, match="X"):
        glove_loss(W, W, b, b, torch.ones(3, 3, dtype=torch.long))


# --- training ----------------------------------------------------------------------------------


# Seeds of the training runs the analogy test checks. Measured (dim 32, 30 epochs, the 5,000-sentence
# corpus of seed 0), seeds 0-5: "queen" first for king - man + woman in all six (ahead of the runner-up
# by 0.037-0.069 cosine); "rome" for paris - france + italy first in four, second in one (seed 4) and
# third in one (seed 1). So the test asserts what holds for every seed (queen first, rome in the top
# three) and what holds for most (rome first), not one seed's ranking.
ANALOGY_SEEDS = (0, 1, 2)


@pytest.fixture(scope="module")
def fitted_by_seed():
    sentences = generate_corpus(5000, seed=0)
    vocab = build_vocab(sentences)
    X = cooccurrence_matrix(sentences, vocab, window=5, across_sentences=True)
    runs = {}
    for seed in ANALOGY_SEEDS:
        W, W_tilde, history = train_glove_tables(X, dim=32, epochs=30, seed=seed)
        runs[seed] = (W + W_tilde, history)  # the paper's word vectors
    return runs, vocab


@pytest.fixture(scope="module")
def fitted(fitted_by_seed):
    runs, vocab = fitted_by_seed
    vectors, history = runs[0]
    return vectors, history, vocab


def test_training_reduces_the_loss(fitted):
    vectors, history, vocab = fitted
    assert vectors.shape == (len(vocab), 32)
    assert len(history.losses) == 30
    assert history.losses[-1] < 0.2 * history.losses[0]
    assert all(b <= a * 1.05 for a, b in zip(history.losses, history.losses[1:], strict=False))


def test_analogies_hold_for_every_training_seed(fitted_by_seed):
    # fails for a fit of the raw counts instead of their log (residual w·w̃ + b + b̃ − X_ij):
    # queen is then first for no seed (ranks 4, 1, 1 for seeds 0, 1, 2)
    runs, vocab = fitted_by_seed

    def rank(vectors, a, b, c, want):
        words = [w for w, _ in analogy(vectors, vocab, a, b, c, k=10)]
        return words.index(want) if want in words else len(words)

    queen = [rank(v, "king", "man", "woman", "queen") for v, _ in runs.values()]
    rome = [rank(v, "paris", "france", "italy", "rome") for v, _ in runs.values()]
    assert queen == [0] * len(ANALOGY_SEEDS), queen
    assert max(rome) <= 2, rome
    assert sum(r == 0 for r in rome) >= 2, rome


def test_training_is_deterministic():
    X = cooccurrence_matrix(generate_corpus(200, 1), build_vocab(generate_corpus(200, 1)), 3)
    W1, Wt1, h1 = train_glove_tables(X, dim=4, epochs=2, seed=3)
    W2, Wt2, h2 = train_glove_tables(X, dim=4, epochs=2, seed=3)
    W3, _, _ = train_glove_tables(X, dim=4, epochs=2, seed=4)
    assert torch.equal(W1, W2) and torch.equal(Wt1, Wt2) and h1.losses == h2.losses
    assert not torch.equal(W1, W3)


def test_train_glove_is_the_sum_of_the_tables():
    X = cooccurrence_matrix(generate_corpus(200, 1), build_vocab(generate_corpus(200, 1)), 3)
    W, W_tilde, h1 = train_glove_tables(X, dim=4, epochs=2, seed=3, batch_size=64)
    vectors, h2 = train_glove(X, dim=4, epochs=2, seed=3, batch_size=64)
    assert torch.equal(vectors, W + W_tilde) and h1.losses == h2.losses
    with pytest.raises(TypeError, match="unexpected keyword argument 'window'"):
        train_glove(X, window=3)


def test_train_errors():
    with pytest.raises(ValueError, match="X must be a square"):
        train_glove_tables(torch.ones(2, 3))
    with pytest.raises(ValueError, match="X must be non-negative"):
        train_glove_tables(-torch.ones(2, 2))
    with pytest.raises(ValueError, match="positive entry"):
        train_glove_tables(torch.zeros(2, 2))
    with pytest.raises(ValueError, match="dim"):
        train_glove_tables(torch.ones(2, 2), dim=0)
    with pytest.raises(ValueError, match="lr"):
        train_glove_tables(torch.ones(2, 2), lr=0.0)


def test_count_histogram_pinned_on_decades():
    counts = torch.tensor([1.5, 2.0, 20.0, 30.0, 40.0, 500.0, 1000.0])
    hist = count_histogram(
        counts, low=1.0, high=1000.0, bins=3
    )  # bins [1, 10), [10, 100), [100, 1000]
    torch.testing.assert_close(
        hist.edges, torch.tensor([1.0, 10.0, 100.0, 1000.0], dtype=torch.float64)
    )
    assert hist.shares.tolist() == [2 / 7, 3 / 7, 2 / 7]  # 1000 is in the last, closed bin
    torch.testing.assert_close(hist.centres, hist.edges[1:].sqrt() * hist.edges[:-1].sqrt())
    default = count_histogram(counts, bins=3)  # edges from the smallest to the largest count
    assert default.edges[0].item() == pytest.approx(1.5, rel=1e-12)
    assert default.edges[-1].item() == pytest.approx(1000.0, rel=1e-12)


@given(st.lists(st.floats(0.01, 1e4), min_size=1, max_size=50), st.integers(1, 40))
def test_count_histogram_shares_sum_to_one_and_edges_are_log_spaced(values, bins):
    counts = torch.tensor(values, dtype=torch.float64)
    hist = count_histogram(counts, low=0.005, high=2e4, bins=bins)
    assert hist.shares.sum().item() == pytest.approx(1.0, rel=1e-12)
    ratios = hist.edges[1:] / hist.edges[:-1]
    torch.testing.assert_close(ratios, torch.full_like(ratios, ratios[0].item()))
    assert hist.centres.shape == hist.shares.shape == (bins,)


def test_count_histogram_refuses_bad_input():
    with pytest.raises(ValueError, match="counts"):
        count_histogram(torch.tensor([1.0, 0.0]))
    with pytest.raises(TypeError, match="counts"):
        count_histogram(torch.tensor([1, 2]))
    with pytest.raises(ValueError, match="high must be > low"):
        count_histogram(torch.tensor([1.0, 2.0]), low=3.0, high=2.0)
    with pytest.raises(ValueError, match="no count"):
        count_histogram(torch.tensor([1.0, 2.0]), low=5.0, high=10.0)
    with pytest.raises(ValueError, match="bins"):
        count_histogram(torch.tensor([1.0, 2.0]), bins=0)


# --- training options reach training ----------------------------------------------------------------


def _glove_by_hand(X, *, dim, epochs, lr, seed, x_max, alpha, batch_size):
    """train_glove_tables written out with the public glove_weight: same draws, same AdaGrad steps."""
    i, j = torch.nonzero(X > 0, as_tuple=True)
    x = X[i, j].to(torch.float32)
    generator = torch.Generator().manual_seed(seed)

    def init(*shape):
        return torch.nn.Parameter((torch.rand(*shape, generator=generator) - 0.5) / dim)

    V = X.shape[0]
    W, W_tilde, b, b_tilde = init(V, dim), init(V, dim), init(V), init(V)
    optimizer = torch.optim.Adagrad([W, W_tilde, b, b_tilde], lr=lr)
    for _ in range(epochs):
        order = torch.randperm(len(i), generator=generator)
        for start in range(0, len(i), batch_size):
            m = order[start : start + batch_size]
            residual = (W[i[m]] * W_tilde[j[m]]).sum(-1) + b[i[m]] + b_tilde[j[m]] - torch.log(x[m])
            loss = (glove_weight(x[m], x_max, alpha) * residual**2).sum()
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
    return W.detach(), W_tilde.detach()


@pytest.fixture(scope="module")
def small_counts():
    sentences = generate_corpus(200, seed=1)
    X = cooccurrence_matrix(sentences, build_vocab(sentences), window=3)
    positive = X[X > 0]
    assert positive.min() < 2.0 and positive.max() > 10.0  # counts on both sides of x_max = 4, 10
    return X


@pytest.mark.parametrize(("x_max", "alpha"), [(10.0, 0.5), (10.0, 1.0), (4.0, 0.75)])
def test_alpha_and_x_max_reach_training(small_counts, x_max, alpha):
    # the weighting f(x) = min(1, (x/x_max)^α) (Pennington et al. 2014, eq. 9) with the options
    # given, not the paper's defaults, must be the one every AdaGrad step minimises
    options = {"dim": 4, "epochs": 3, "lr": 0.05, "seed": 2, "batch_size": 128}
    W, W_tilde, _ = train_glove_tables(small_counts, x_max=x_max, alpha=alpha, **options)
    W_ref, W_tilde_ref = _glove_by_hand(small_counts, x_max=x_max, alpha=alpha, **options)
    torch.testing.assert_close(W, W_ref, rtol=1e-6, atol=1e-7)
    torch.testing.assert_close(W_tilde, W_tilde_ref, rtol=1e-6, atol=1e-7)
    # and the options change the result: the paper's (100, 3/4) gives other tables
    W_paper, _, _ = train_glove_tables(small_counts, **options)
    assert (W - W_paper).abs().max() > 1e-3


def test_alpha_is_irrelevant_once_every_count_reaches_x_max(small_counts):
    # x_max at or below the smallest count: f = 1 everywhere, whatever α (eq. 9)
    x_max = float(small_counts[small_counts > 0].min())
    options = {"dim": 4, "epochs": 2, "seed": 2, "batch_size": 128, "x_max": x_max}
    W1, _, h1 = train_glove_tables(small_counts, alpha=0.3, **options)
    W2, _, h2 = train_glove_tables(small_counts, alpha=2.0, **options)
    assert torch.equal(W1, W2) and h1.losses == h2.losses


# --- glove.c's AdaGrad (H7: accumulator starting at 1, gradient of ½J, clipping) ----------------


def _glove_c_reference_steps(X, dim, lr, seed, x_max, alpha, steps):
    """glove.c's update written out per parameter in float64, one full-batch step at a time."""
    i, j = torch.nonzero(X > 0, as_tuple=True)
    x = X[i, j].double()
    V = X.shape[0]
    g = torch.Generator().manual_seed(seed)
    W, Wt, b, bt = (((torch.rand(*s, generator=g) - 0.5) / dim).double() for s in
                    ((V, dim), (V, dim), (V,), (V,)))  # fmt: skip
    gsq = [torch.ones_like(p) for p in (W, Wt, b, bt)]
    for _ in range(steps):
        diff = (W[i] * Wt[j]).sum(-1) + b[i] + bt[j] - torch.log(x)
        fdiff = torch.where(x < x_max, (x / x_max) ** alpha, torch.ones_like(x)) * diff
        grads = [torch.zeros_like(p) for p in (W, Wt, b, bt)]
        grads[0].index_add_(0, i, fdiff[:, None] * Wt[j])
        grads[1].index_add_(0, j, fdiff[:, None] * W[i])
        grads[2].index_add_(0, i, fdiff)
        grads[3].index_add_(0, j, fdiff)
        for p, gr, acc in zip((W, Wt, b, bt), grads, gsq, strict=True):
            step = lr * gr.clamp(-100.0, 100.0)
            p -= step / acc.sqrt()
            acc += step**2
    return W, Wt


def test_glove_c_optimizer_matches_the_reference_update():
    X = torch.tensor([[0.0, 3.0, 1.0], [3.0, 2.0, 0.5], [1.0, 0.5, 0.0]], dtype=torch.float64)
    # the first step: the accumulator starts at 1, so it is plain gradient descent at rate lr
    # (torch.optim.Adagrad's first step would be ±lr per coordinate)
    for epochs in (1, 3):
        W, Wt, _ = train_glove_tables(
            X, dim=4, epochs=epochs, lr=0.05, seed=3, x_max=2.0, batch_size=100,
            optimizer="glove.c",
        )  # fmt: skip
        W_ref, Wt_ref = _glove_c_reference_steps(X, 4, 0.05, 3, 2.0, 0.75, epochs)
        torch.testing.assert_close(W.double(), W_ref, rtol=1e-5, atol=1e-7)
        torch.testing.assert_close(Wt.double(), Wt_ref, rtol=1e-5, atol=1e-7)


def test_glove_c_optimizer_differs_from_torch_adagrad_and_learns():
    sentences = generate_corpus(300, seed=1)
    X = cooccurrence_matrix(sentences, build_vocab(sentences), window=3)
    runs = {
        opt: train_glove_tables(X, dim=8, epochs=6, seed=0, x_max=10.0, optimizer=opt)
        for opt in ("adagrad", "glove.c")
    }
    assert not torch.allclose(runs["adagrad"][0], runs["glove.c"][0])
    losses = runs["glove.c"][2].losses
    assert losses[-1] < 0.7 * losses[0]
    with pytest.raises(ValueError, match="optimizer"):
        train_glove_tables(X, dim=8, epochs=1, optimizer="adam")
