"""Tests for lib.learned: lookup, position ids, token + position sum, errors, gradients."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from lib.learned import (
    DEFAULT_INIT_STD,
    LearnedPositionalEmbedding,
    TokenAndPositionEmbedding,
    position_ids,
    position_probe_error,
    ridge_probe,
)

# ---------------------------------------------------------------- LearnedPositionalEmbedding


@pytest.mark.parametrize("shape", [(5,), (2, 5), (3, 2, 4)])
def test_shapes_and_values(shape):
    torch.manual_seed(0)
    emb = LearnedPositionalEmbedding(16, 8)
    positions = torch.randint(0, 16, shape)
    out = emb(positions)
    assert out.shape == (*shape, 8)
    # manual indexing, element by element
    flat_pos, flat_out = positions.reshape(-1), out.reshape(-1, 8)
    for n, p in enumerate(flat_pos.tolist()):
        assert torch.equal(flat_out[n], emb.weight[p])


def test_int32_positions_and_whole_table():
    emb = LearnedPositionalEmbedding(10, 4)
    out = emb(torch.arange(10, dtype=torch.int32))
    assert torch.equal(out, emb.weight)


def test_init_like_gpt2():
    torch.manual_seed(0)
    w = LearnedPositionalEmbedding(1024, 64).weight.detach()
    # 65536 samples of N(0, 0.02^2): the sample std is 0.02 to within ~1e-4
    assert abs(float(w.std()) - 0.02) < 1e-3
    assert abs(float(w.mean())) < 1e-3
    w2 = LearnedPositionalEmbedding(512, 64, init_std=0.5).weight.detach()
    assert abs(float(w2.std()) - 0.5) < 2e-2


def test_init_std_matches_transformers_configs():
    import transformers

    assert transformers.GPT2Config().initializer_range == DEFAULT_INIT_STD
    assert transformers.BertConfig().initializer_range == DEFAULT_INIT_STD


def test_gradient_reaches_only_used_rows():
    emb = LearnedPositionalEmbedding(12, 3)
    used = torch.tensor([[1, 4, 4], [7, 1, 0]])
    emb(used).sum().backward()
    grad_rows = emb.weight.grad.abs().sum(dim=1)  # [12]
    expected_used = torch.zeros(12, dtype=torch.bool)
    expected_used[[0, 1, 4, 7]] = True
    assert torch.all(grad_rows[expected_used] > 0)
    assert torch.all(grad_rows[~expected_used] == 0)
    # row 4 is used twice, row 1 twice: gradients add up (each use contributes 1 per dim)
    assert emb.weight.grad[4].tolist() == [2.0, 2.0, 2.0]
    assert emb.weight.grad[7].tolist() == [1.0, 1.0, 1.0]


def test_past_the_table_message():
    emb = LearnedPositionalEmbedding(2048, 4)
    with pytest.raises(
        ValueError,
        match=r"position 2048 is past the table: max_len=2048 \(valid positions 0\.\.2047\)",
    ):
        emb(torch.arange(2049))
    with pytest.raises(ValueError, match=r"positions: position -1 is negative: max_len=2048"):
        emb(torch.tensor([3, -1, 2]))


def test_forward_type_errors():
    emb = LearnedPositionalEmbedding(8, 4)
    with pytest.raises(TypeError, match="positions must be an integer tensor"):
        emb(torch.arange(4.0))
    with pytest.raises(TypeError, match="positions must be an integer tensor"):
        emb(torch.tensor([True, False]))
    with pytest.raises(TypeError, match=r"positions must be a torch\.Tensor"):
        emb([0, 1, 2])
    with pytest.raises(ValueError, match="positions must have at least 1 dimension"):
        emb(torch.tensor(3))


def test_constructor_errors():
    with pytest.raises(ValueError, match="max_len"):
        LearnedPositionalEmbedding(0, 4)
    with pytest.raises(ValueError, match="d_model"):
        LearnedPositionalEmbedding(8, 0)
    with pytest.raises(TypeError, match="max_len"):
        LearnedPositionalEmbedding(8.0, 4)
    with pytest.raises(ValueError, match="init_std"):
        LearnedPositionalEmbedding(8, 4, init_std=0.0)


@given(max_len=st.integers(1, 64), p=st.integers(-5, 80))
def test_valid_iff_in_range(max_len, p):
    emb = LearnedPositionalEmbedding(max_len, 2)
    if 0 <= p < max_len:
        assert torch.equal(emb(torch.tensor([p]))[0], emb.weight[p])
    else:
        with pytest.raises(ValueError, match=f"max_len={max_len}"):
            emb(torch.tensor([p]))


# ---------------------------------------------------------------- position_ids


def test_position_ids():
    ids = position_ids(2, 4, offset=3)
    assert ids.dtype == torch.long
    assert ids.tolist() == [[3, 4, 5, 6], [3, 4, 5, 6]]
    ids[0, 0] = 99  # rows are separate storage, not a broadcast view
    assert ids[1, 0] == 3
    assert position_ids(1, 1).tolist() == [[0]]


def test_position_ids_errors():
    with pytest.raises(ValueError, match="batch"):
        position_ids(0, 4)
    with pytest.raises(ValueError, match="seq_len"):
        position_ids(1, 0)
    with pytest.raises(ValueError, match="offset"):
        position_ids(1, 4, offset=-1)
    with pytest.raises(TypeError, match="seq_len"):
        position_ids(1, 4.0)


# ---------------------------------------------------------------- TokenAndPositionEmbedding


def test_token_and_position_sum():
    torch.manual_seed(1)
    layer = TokenAndPositionEmbedding(vocab_size=20, max_len=10, d_model=6)
    ids = torch.tensor([[3, 3, 19, 0], [5, 1, 2, 3]])
    out = layer(ids)
    assert out.shape == (2, 4, 6)
    for b in range(2):
        for t in range(4):
            expected = layer.wte.weight[ids[b, t]] + layer.wpe.weight[t]
            assert torch.equal(out[b, t], expected)
    # with an offset (tokens already in a cache), positions start there
    out_off = layer(ids, offset=6)
    assert torch.equal(out_off[1, 0], layer.wte.weight[5] + layer.wpe.weight[6])


def test_token_and_position_same_token_differs_by_position():
    layer = TokenAndPositionEmbedding(vocab_size=5, max_len=4, d_model=3)
    out = layer(torch.tensor([[2, 2]]))
    torch.testing.assert_close(out[0, 1] - out[0, 0], layer.wpe.weight[1] - layer.wpe.weight[0])


def test_token_and_position_matches_gpt2():
    import transformers

    config = transformers.GPT2Config(vocab_size=30, n_positions=12, n_embd=8, n_layer=1, n_head=2)
    gpt2 = transformers.GPT2Model(config).eval()
    layer = TokenAndPositionEmbedding(30, 12, 8)
    with torch.no_grad():
        layer.wte.weight.copy_(gpt2.wte.weight)
        layer.wpe.weight.copy_(gpt2.wpe.weight)
    ids = torch.tensor([[4, 7, 29, 0, 1]])
    seen = {}
    gpt2.drop.register_forward_hook(lambda module, args, out: seen.setdefault("h0", out))
    with torch.no_grad():
        gpt2(input_ids=ids)
        ours = layer(ids)
    # GPT-2's hidden state entering block 0 (after dropout, a no-op in eval) is wte + wpe
    torch.testing.assert_close(ours, seen["h0"])


def test_token_and_position_gradients_only_used_rows():
    layer = TokenAndPositionEmbedding(vocab_size=10, max_len=8, d_model=2)
    layer(torch.tensor([[1, 9, 1]])).sum().backward()
    tok_rows = layer.wte.weight.grad.abs().sum(1)
    pos_rows = layer.wpe.weight.grad.abs().sum(1)
    assert torch.nonzero(tok_rows).flatten().tolist() == [1, 9]
    assert torch.nonzero(pos_rows).flatten().tolist() == [0, 1, 2]


def test_token_and_position_errors():
    layer = TokenAndPositionEmbedding(vocab_size=10, max_len=4, d_model=2)
    with pytest.raises(
        ValueError, match=r"input_ids must lie in \[0, 9\] \(vocab_size = 10\), got id 10"
    ):
        layer(torch.tensor([[1, 10]]))
    with pytest.raises(ValueError, match=r"input_ids must lie in \[0, 9\] .*, got id -3"):
        layer(torch.tensor([[-3, 1]]))
    with pytest.raises(
        ValueError, match=r"input_ids: 5 tokens .* max_len=4 \(valid positions 0\.\.3\)"
    ):
        layer(torch.zeros(1, 5, dtype=torch.long))
    with pytest.raises(ValueError, match=r"input_ids: 2 tokens starting at offset 3 .* max_len=4"):
        layer(torch.zeros(1, 2, dtype=torch.long), offset=3)
    with pytest.raises(TypeError, match="input_ids must be an integer tensor"):
        layer(torch.zeros(1, 2))
    with pytest.raises(ValueError, match="offset"):
        layer(torch.zeros(1, 2, dtype=torch.long), offset=-1)
    with pytest.raises(ValueError, match="vocab_size"):
        TokenAndPositionEmbedding(0, 4, 2)


# --------------------------------------------------------------------------------------------------
# Linear position probe
# --------------------------------------------------------------------------------------------------


@given(st.integers(0, 10_000), st.integers(20, 200), st.integers(2, 40))
@settings(deadline=None, max_examples=25)
def test_probe_reads_a_linear_position_code_exactly(seed, n, d):
    g = torch.Generator().manual_seed(seed)
    direction, offset = torch.randn(d, generator=g), torch.randn(d, generator=g)
    table = torch.arange(n, dtype=torch.float64)[:, None] * direction.double() + offset.double()
    assert position_probe_error(table, seed=seed) < 0.01 * n  # held-out positions, read back


@given(st.integers(0, 10_000))
@settings(deadline=None, max_examples=10)
def test_probe_on_rows_independent_of_position_is_near_chance(seed):
    table = torch.randn(400, 64, generator=torch.Generator().manual_seed(seed))
    chance = (torch.arange(400.0) - 199.5).abs().mean().item()  # predicting the mean: L/4
    assert position_probe_error(table, seed=seed) > 0.75 * chance


def test_ridge_probe_equals_least_squares_on_the_augmented_system():
    """Ridge as plain least squares: stack sqrt(λ)·I under X̃ and zeros under y (numpy lstsq)."""
    import numpy as np

    g = torch.Generator().manual_seed(3)
    x = torch.randn(60, 12, generator=g, dtype=torch.float64)
    y = torch.randn(60, generator=g, dtype=torch.float64)
    train = torch.arange(60) % 3 != 0
    ours = ridge_probe(x, y, train, ridge=0.7)
    centred = (x - x[train].mean(0)).numpy()
    scaled = centred / np.sqrt((centred[train.numpy()] ** 2).sum(-1).mean())  # documented scaling
    target = (y[train] - y[train].mean()).double().numpy()
    stacked = np.vstack([scaled[train.numpy()], np.sqrt(0.7) * np.eye(12)])
    w = np.linalg.lstsq(stacked, np.concatenate([target, np.zeros(12)]), rcond=None)[0]
    reference = torch.from_numpy(scaled @ w) + y[train].double().mean()
    torch.testing.assert_close(ours, reference, rtol=1e-10, atol=1e-10)


def test_ridge_probe_never_sees_the_held_out_rows():
    g = torch.Generator().manual_seed(4)
    x, y = torch.randn(50, 8, generator=g), torch.randn(50, generator=g)
    train = torch.arange(50) < 35
    moved_x, moved_y = x.clone(), y.clone()
    moved_x[~train] += 100.0  # held-out features and targets changed
    moved_y[~train] -= 1000.0
    before, after = (
        ridge_probe(x, y, train, ridge=1.0),
        ridge_probe(moved_x, moved_y, train, ridge=1.0),
    )
    torch.testing.assert_close(after[train], before[train], rtol=0, atol=1e-12)


def test_probe_refuses_bad_input():
    x, y = torch.randn(20, 3), torch.arange(20.0)
    train = torch.ones(20, dtype=torch.bool)
    with pytest.raises(TypeError, match="features must be a floating-point tensor"):
        ridge_probe(torch.ones(20, 3, dtype=torch.long), y, train, ridge=1.0)
    with pytest.raises(ValueError, match=r"targets must have shape \(20,\)"):
        ridge_probe(x, y[:5], train, ridge=1.0)
    with pytest.raises(TypeError, match="train must be a bool tensor"):
        ridge_probe(x, y, train.long(), ridge=1.0)
    with pytest.raises(ValueError, match="train must select at least 2 rows"):
        ridge_probe(x, y, torch.arange(20) == 0, ridge=1.0)
    with pytest.raises(ValueError, match="ridge"):
        ridge_probe(x, y, train, ridge=0.0)
    with pytest.raises(ValueError, match="table must be 2-D"):
        position_probe_error(torch.randn(5, 3), seed=0)
    with pytest.raises(ValueError, match="held_out must be a float in"):
        position_probe_error(x, seed=0, held_out=0.9)
    with pytest.raises(ValueError, match="ridges must hold"):
        position_probe_error(x, seed=0, ridges=())
    with pytest.raises(TypeError, match="seed"):
        position_probe_error(x, seed=1.5)
