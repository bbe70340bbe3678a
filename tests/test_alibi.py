"""Tests for lib.alibi: slopes for every n, bias forms, BLOOM/MPT agreement, softmax equivalence."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from lib.alibi import alibi_bias, alibi_bias_bloom, alibi_slopes


def official_get_slopes(n: int) -> list[float]:
    """get_slopes of the official ALiBi repository (ofirpress/attention_with_linear_biases)."""

    def get_slopes_power_of_2(n):
        start = 2 ** (-(2 ** -(math.log2(n) - 3)))
        ratio = start
        return [start * ratio**i for i in range(n)]

    if math.log2(n).is_integer():
        return get_slopes_power_of_2(n)
    closest_power_of_2 = 2 ** math.floor(math.log2(n))
    return (
        get_slopes_power_of_2(closest_power_of_2)
        + official_get_slopes(2 * closest_power_of_2)[0::2][: n - closest_power_of_2]
    )


# ---------------------------------------------------------------- slopes


@pytest.mark.parametrize("n", range(1, 65))
def test_slopes_follow_official_rule_for_every_n(n):
    slopes = alibi_slopes(n)
    assert slopes.shape == (n,) and slopes.dtype == torch.float32
    expected = torch.tensor(official_get_slopes(n), dtype=torch.float64)
    torch.testing.assert_close(slopes.double(), expected, rtol=1e-7, atol=0)
    assert torch.all((slopes > 0) & (slopes < 1))
    assert len(set(slopes.tolist())) == n  # no two heads share a slope


def test_slopes_pinned_power_of_two():
    assert alibi_slopes(8).tolist() == [
        1 / 2,
        1 / 4,
        1 / 8,
        1 / 16,
        1 / 32,
        1 / 64,
        1 / 128,
        1 / 256,
    ]
    assert alibi_slopes(1).tolist() == [1 / 256]
    assert alibi_slopes(2).tolist() == [1 / 16, 1 / 256]
    # n = 16: 2^(-k/2), k = 1..16
    torch.testing.assert_close(
        alibi_slopes(16), torch.tensor([2 ** (-k / 2) for k in range(1, 17)])
    )


def test_slopes_pinned_12():
    # c = 8: 2^-1 .. 2^-8, then 1st, 3rd, 5th, 7th of the 16-head list 2^(-k/2): k = 1, 3, 5, 7
    expected = [2.0**-k for k in range(1, 9)] + [2**-0.5, 2**-1.5, 2**-2.5, 2**-3.5]
    torch.testing.assert_close(alibi_slopes(12), torch.tensor(expected), rtol=0, atol=0)


@pytest.mark.parametrize("n", [1, 2, 3, 5, 6, 7, 8, 12, 16, 20, 24, 32, 40, 64, 71, 112])
def test_bloom_form_matches_transformers(n):
    from transformers.models.bloom.modeling_bloom import build_alibi_tensor

    seq_len = 7
    theirs = build_alibi_tensor(torch.ones(1, seq_len), n, torch.float32)  # [1 * n, 1, T]
    ours = alibi_bias_bloom(n, seq_len)
    assert ours.shape == theirs.shape == (n, 1, seq_len)
    torch.testing.assert_close(ours, theirs, rtol=1e-6, atol=0)
    torch.testing.assert_close(
        ours[:, 0, 1], alibi_slopes(n), rtol=0, atol=0
    )  # j = 1 column: slopes


@pytest.mark.parametrize("n", [3, 6, 8, 12, 24, 32, 48])
def test_relative_form_matches_transformers_mpt(n):
    from transformers.models.mpt.modeling_mpt import build_mpt_alibi_tensor

    seq_len = 9
    theirs = build_mpt_alibi_tensor(
        n, seq_len
    )  # [n, 1, T]: slope * (j - (T - 1)), the last query row
    ours = alibi_bias(n, seq_len, causal=True)[:, seq_len - 1 : seq_len, :]
    torch.testing.assert_close(ours, theirs, rtol=1e-6, atol=0)


# ---------------------------------------------------------------- bias


def test_bias_pinned_small():
    # n = 2: slopes 2^-4, 2^-8
    inf = float("inf")
    expected0 = torch.tensor([[0, -inf, -inf], [-1 / 16, 0, -inf], [-2 / 16, -1 / 16, 0]])
    expected1 = (
        torch.tensor([[0, 1 / 256, 2 / 256], [1 / 256, 0, 1 / 256], [2 / 256, 1 / 256, 0]]) * -1
    )
    bias = alibi_bias(2, 3)
    assert bias.shape == (2, 3, 3) and bias.dtype == torch.float32
    assert torch.equal(bias[0], expected0)
    assert torch.equal(alibi_bias(2, 3, causal=False)[1], expected1)


@given(n=st.integers(1, 20), t=st.integers(1, 24))
def test_bias_structure(n, t):
    slopes = alibi_slopes(n).double()
    causal = alibi_bias(n, t).double()
    full = alibi_bias(n, t, causal=False).double()
    i = torch.arange(t)[:, None]
    j = torch.arange(t)[None, :]
    lower = (j <= i).expand(n, t, t)
    assert torch.all(torch.isneginf(causal[~lower]))
    assert torch.all(causal[lower] <= 0)
    torch.testing.assert_close(causal[lower], full[lower])
    torch.testing.assert_close(full, full.transpose(1, 2))  # symmetric without the mask
    expected = -slopes[:, None, None] * (i - j).abs().double()  # [n, t, t]
    torch.testing.assert_close(full, expected, rtol=1e-6, atol=0)
    # Toeplitz: every diagonal is constant (depends only on i - j)
    for off in range(-t + 1, t):
        diag = torch.diagonal(full, offset=off, dim1=1, dim2=2)
        assert torch.all(diag == diag[:, :1])


@given(n=st.integers(1, 12), t=st.integers(1, 16), seed=st.integers(0, 2**16))
def test_key_only_form_equals_relative_form_after_causal_softmax(n, t, seed):
    gen = torch.Generator().manual_seed(seed)
    scores = torch.randn(2, n, t, t, generator=gen, dtype=torch.float64) * 3
    causal_mask = torch.ones(t, t, dtype=torch.bool).triu(1)
    relative = torch.softmax(scores + alibi_bias(n, t).double(), dim=-1)
    key_only = (scores + alibi_bias_bloom(n, t).double()).masked_fill(causal_mask, float("-inf"))
    torch.testing.assert_close(torch.softmax(key_only, dim=-1), relative, atol=1e-6, rtol=0)
    # the difference of the biases on the visible entries is slope * i, constant along each row
    diff = (alibi_bias_bloom(n, t) - alibi_bias(n, t)).double()  # [n, t, t]
    slopes = alibi_slopes(n).double()
    for i in range(t):
        torch.testing.assert_close(
            diff[:, i, : i + 1], (slopes * i)[:, None].expand(n, i + 1), rtol=1e-6, atol=1e-6
        )


def test_key_only_form_differs_without_causal_mask():
    scores = torch.zeros(1, 4, 6, 6)
    a = torch.softmax(scores + alibi_bias(4, 6, causal=False), dim=-1)
    b = torch.softmax(scores + alibi_bias_bloom(4, 6), dim=-1)
    assert not torch.allclose(a, b, atol=1e-3)


# ---------------------------------------------------------------- errors


@pytest.mark.parametrize(
    ("bad", "error"),
    [(0, ValueError), (-3, ValueError), (2.0, TypeError), (True, TypeError), ("8", TypeError)],
)
def test_slopes_errors(bad, error):
    with pytest.raises(error, match="n_heads"):
        alibi_slopes(bad)


def test_bias_errors():
    for fn in (alibi_bias, alibi_bias_bloom):
        with pytest.raises(ValueError, match="n_heads"):
            fn(0, 4)
        with pytest.raises(ValueError, match="seq_len"):
            fn(4, 0)
        with pytest.raises(TypeError, match="seq_len"):
            fn(4, 3.5)
    with pytest.raises(TypeError, match="causal"):
        alibi_bias(4, 4, causal="yes")


# ---------------------------------------------------------------- large inputs (blocked code paths)


@pytest.mark.parametrize("n", [4097, 6000, 8192])
def test_slopes_past_the_scalar_limit_follow_the_official_rule(n):
    # n > _SCALAR_SLOPES_UP_TO (4096) takes the vectorised torch branch: it must give the same
    # slopes (k = 1..n, not 0..n-1) as the official get_slopes, at float32 rounding
    import lib.alibi as alibi_module

    assert n > alibi_module._SCALAR_SLOPES_UP_TO
    slopes = alibi_slopes(n)
    expected = torch.tensor(official_get_slopes(n), dtype=torch.float64)
    # float32 rounding of the float64 value: half an ulp, 2^-24 relative (+ float64 noise)
    torch.testing.assert_close(slopes.double(), expected, rtol=2.0**-24 + 1e-15, atol=0)


def _relative_bias_reference(n_heads: int, seq_len: int, causal: bool) -> torch.Tensor:
    """−m_h·|i − j| (−inf above the diagonal if causal) for every entry at once, float64 -> float32."""
    slopes = torch.tensor(official_get_slopes(n_heads), dtype=torch.float64)
    i = torch.arange(seq_len, dtype=torch.float64)[:, None]
    j = torch.arange(seq_len, dtype=torch.float64)[None, :]
    bias = -slopes[:, None, None] * (i - j).abs()
    if causal:
        bias = bias.masked_fill(j > i, float("-inf"))
    return bias.to(torch.float32)


@pytest.mark.parametrize("causal", [True, False])
def test_bias_rows_past_the_block_size(causal):
    # alibi_bias builds 2^18-element row blocks: T = 1100 gives blocks of 238 rows (5 blocks), and
    # each block of R·T >= 2^18 elements is split into one head at a time; every row and head must
    # still hold −m_h·|i − j| of its own query i (a block restarting at query 0 fails here)
    import lib.alibi as alibi_module

    n_heads, seq_len = 3, 1100
    rows_per_block = alibi_module._BLOCK_ELEMENTS // seq_len
    assert seq_len > 4 * rows_per_block  # several row blocks, and the last one partial
    bias = alibi_bias(n_heads, seq_len, causal=causal)
    assert torch.equal(bias, _relative_bias_reference(n_heads, seq_len, causal))


def test_bloom_bias_heads_past_the_block_size():
    # alibi_bias_bloom builds 2^18 // T heads at a time: T = 2^17 gives blocks of 2 heads
    import lib.alibi as alibi_module

    n_heads, seq_len = 5, 2**17
    assert alibi_module._BLOCK_ELEMENTS // seq_len < n_heads
    bias = alibi_bias_bloom(n_heads, seq_len)
    slopes = torch.tensor(official_get_slopes(n_heads), dtype=torch.float64)
    keys = torch.arange(seq_len, dtype=torch.float64)
    expected = (slopes[:, None] * keys[None, :]).to(torch.float32)[:, None, :]
    assert torch.equal(bias, expected)


# ---------------------------------------------------------------- found by make mutation (docs/mutation.md)


def test_errors_name_the_argument_exactly():
    # r"\bname\b": the message names the argument itself, not a longer word that contains it
    with pytest.raises(ValueError, match=r"\bn_heads\b"):
        alibi_slopes(0)
    for fn in (alibi_bias, alibi_bias_bloom):
        with pytest.raises(ValueError, match=r"\bn_heads\b"):
            fn(0, 4)
        with pytest.raises(ValueError, match=r"\bseq_len\b"):
            fn(4, 0)
    with pytest.raises(TypeError, match=r"causal must be a bool, got str 'yes'"):
        alibi_bias(4, 4, causal="yes")


@pytest.mark.parametrize(
    ("call", "arguments"),
    [
        (lambda: alibi_slopes(2**62), "n_heads=4611686018427387904"),
        (lambda: alibi_bias(10**6, 10**6), "n_heads=1000000, seq_len=1000000"),
        (lambda: alibi_bias_bloom(10**6, 10**12), "n_heads=1000000, seq_len=1000000000000"),
    ],
)
def test_sizes_that_cannot_fit_are_refused_naming_the_arguments(call, arguments):
    with pytest.raises(ValueError, match=f"^{arguments}: the result would"):
        call()


def test_every_function_works_on_the_meta_device():
    # nothing may be made on the CPU behind the caller's back: the device reaches every tensor
    meta = torch.device("meta")
    assert alibi_slopes(12, device="meta").device == meta
    assert alibi_slopes(5000, device="meta").device == meta  # the vectorised branch too
    for causal in (True, False):
        bias = alibi_bias(12, 600, causal=causal, device="meta")  # several row blocks
        assert bias.device == meta and bias.shape == (12, 600, 600)
        assert bias.dtype == torch.float32
    bloom = alibi_bias_bloom(12, 2**17, device="meta")  # several head blocks
    assert bloom.device == meta and bloom.shape == (12, 1, 2**17) and bloom.dtype == torch.float32


def _rule_float64(n: int) -> torch.Tensor:
    """2^(−8k/n) in float64 for a power-of-two n (Press et al. 2022, section 3)."""
    return torch.tensor([2.0 ** (-8.0 * k / n) for k in range(1, n + 1)], dtype=torch.float64)


@pytest.mark.parametrize("n", [16, 8192])
def test_slopes_are_the_float64_rule_rounded_once(n):
    # computed in float64 and rounded once to float32: bit-equal to the rounded rule (slopes
    # computed in float32, e.g. a float32 exponent k/n, are off by an ulp for some k)
    assert torch.equal(alibi_slopes(n), _rule_float64(n).to(torch.float32))


@pytest.mark.parametrize("n_heads", [16, 8192])
def test_bias_multiplies_float64_slopes_and_rounds_once(n_heads):
    # −m·|i − j| is formed from the float64 slope and rounded once; a slope first rounded to
    # float32 gives products one ulp away for some distances (16 heads: slopes 2^(−k/2))
    seq_len = 64 if n_heads == 16 else 8
    slopes = _rule_float64(n_heads)
    i = torch.arange(seq_len, dtype=torch.float64)
    distance = (i[:, None] - i[None, :]).abs()
    expected = (-slopes[:, None, None] * distance).to(torch.float32)
    assert torch.equal(alibi_bias(n_heads, seq_len, causal=False), expected)
    bloom = (slopes[:, None] * i[None, :]).to(torch.float32)[:, None, :]
    assert torch.equal(alibi_bias_bloom(n_heads, seq_len), bloom)


def test_bias_many_heads_and_rows_in_blocks():
    # 2^18-element blocks over heads (R·T per head) and rows: 40 heads × T = 2^10 rows span
    # several head blocks and row blocks; every (head, row) holds its own −m_h·|i − j|
    import lib.alibi as alibi_module

    n_heads, seq_len = 40, 2**10
    assert alibi_module._BLOCK_ELEMENTS // seq_len < seq_len  # rows come in several blocks
    bias = alibi_bias(n_heads, seq_len, causal=False)
    assert torch.equal(bias, _relative_bias_reference(n_heads, seq_len, causal=False))
