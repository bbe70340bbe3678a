"""Tests for lib.relative: T5 buckets and bias against transformers, Shaw et al. against the paper."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from transformers import T5Config
from transformers.models.t5.modeling_t5 import T5Attention

from lib.attention import attention
from lib.relative import (
    ShawRelativeEmbeddings,
    T5RelativeBias,
    shaw_attention,
    shaw_relative_index,
    t5_relative_bias,
    t5_relative_position_bucket,
)

OFFSETS = torch.arange(-1000, 1001)

# ---------------------------------------------------------------- T5 buckets


@pytest.mark.parametrize("bidirectional", [True, False])
@pytest.mark.parametrize(
    ("num_buckets", "max_distance"),
    [(32, 128), (8, 16), (16, 64), (64, 256), (4, 3), (12, 40), (128, 1000), (32, 17)],
)
def test_buckets_equal_transformers_on_a_grid(bidirectional, num_buckets, max_distance):
    ours = t5_relative_position_bucket(
        OFFSETS, bidirectional=bidirectional, num_buckets=num_buckets, max_distance=max_distance
    )
    ref = T5Attention._relative_position_bucket(
        OFFSETS, bidirectional=bidirectional, num_buckets=num_buckets, max_distance=max_distance
    )
    assert ours.dtype == torch.int64 and ours.shape == OFFSETS.shape
    assert torch.equal(ours, ref)


@settings(max_examples=60)
@given(
    bidirectional=st.booleans(),
    half=st.integers(2, 40),
    extra=st.integers(1, 500),
    offsets=st.lists(st.integers(-5000, 5000), min_size=1, max_size=50),
)
def test_buckets_equal_transformers_property(bidirectional, half, extra, offsets):
    num_buckets = 2 * half
    max_exact = (half if bidirectional else num_buckets) // 2
    max_distance = max_exact + extra
    rel = torch.tensor(offsets)
    ours = t5_relative_position_bucket(
        rel, bidirectional=bidirectional, num_buckets=num_buckets, max_distance=max_distance
    )
    ref = T5Attention._relative_position_bucket(
        rel, bidirectional=bidirectional, num_buckets=num_buckets, max_distance=max_distance
    )
    assert torch.equal(ours, ref)
    assert int(ours.min()) >= 0 and int(ours.max()) < num_buckets


def test_buckets_pinned_t5_defaults():
    rel = torch.tensor([0, -1, -7, -8, -12, -16, -127, -128, -5000, 1, 8, 5000])
    got = t5_relative_position_bucket(rel, bidirectional=True, num_buckets=32, max_distance=128)
    # 16 buckets per side, 8 exact; keys after the query get +16
    assert got.tolist() == [0, 1, 7, 8, 9, 10, 15, 15, 15, 17, 24, 31]
    dec = t5_relative_position_bucket(rel, bidirectional=False, num_buckets=32, max_distance=128)
    # decoder: 16 exact, future keys all in bucket 0
    assert dec.tolist()[:9] == [0, 1, 7, 8, 12, 16, 31, 31, 31]
    assert dec.tolist()[9:] == [0, 0, 0]


def test_buckets_monotone_and_exact_near_zero():
    dist = torch.arange(0, 400)
    got = t5_relative_position_bucket(-dist, bidirectional=False, num_buckets=32, max_distance=128)
    assert torch.equal(got[:16], dist[:16])  # exact half
    assert torch.all(got[1:] >= got[:-1])  # never decreases with distance
    assert torch.all(got[128:] == 31)  # everything from max_distance on shares the last bucket


def test_buckets_on_meta_device_and_int32():
    rel = torch.arange(-50, 50, device="meta")
    out = t5_relative_position_bucket(rel)
    assert out.device.type == "meta" and out.shape == rel.shape
    small = torch.arange(-50, 50, dtype=torch.int32)
    assert torch.equal(
        t5_relative_position_bucket(small), t5_relative_position_bucket(small.long())
    )


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"relative_position": torch.zeros(3)}, TypeError, "relative_position"),
        ({"relative_position": [1, 2]}, TypeError, "relative_position"),
        ({"bidirectional": 1}, TypeError, "bidirectional"),
        ({"num_buckets": 31}, ValueError, "even"),
        ({"num_buckets": 2}, ValueError, "num_buckets"),
        ({"num_buckets": 1, "bidirectional": False}, ValueError, "num_buckets"),
        ({"num_buckets": 32.0}, TypeError, "num_buckets"),
        ({"max_distance": 8}, ValueError, "max_distance"),
        ({"max_distance": 0}, ValueError, "max_distance"),
    ],
)
def test_buckets_reject_bad_input(kwargs, error, match):
    args = {"relative_position": torch.arange(-3, 3)} | kwargs
    rel = args.pop("relative_position")
    with pytest.raises(error, match=match):
        t5_relative_position_bucket(rel, **args)


# ---------------------------------------------------------------- T5 bias


def _t5_attention(n_heads, num_buckets, max_distance, is_decoder):
    config = T5Config(
        d_model=16,
        d_kv=4,
        num_heads=n_heads,
        relative_attention_num_buckets=num_buckets,
        relative_attention_max_distance=max_distance,
        is_decoder=is_decoder,
    )
    torch.manual_seed(0)
    return T5Attention(config, has_relative_attention_bias=True)


@pytest.mark.parametrize("bidirectional", [True, False])
@pytest.mark.parametrize(("t_q", "t_k", "offset"), [(9, 9, 0), (1, 40, 39), (5, 300, 0), (3, 7, 4)])
def test_bias_equals_transformers_compute_bias(bidirectional, t_q, t_k, offset):
    ref_module = _t5_attention(4, 16, 50, is_decoder=not bidirectional)
    ours = T5RelativeBias(4, num_buckets=16, max_distance=50, bidirectional=bidirectional)
    ours.load_state_dict(
        {"relative_attention_bias.weight": ref_module.relative_attention_bias.weight}
    )
    with torch.no_grad():
        ref = ref_module.compute_bias(t_q, t_k, past_seen_tokens=offset)  # [1, H, T_q, T_k]
        got = ours(t_q, t_k, query_offset=offset)
    assert got.shape == (4, t_q, t_k)
    assert torch.equal(got, ref[0])


def test_bias_is_a_function_of_the_offset_only():
    table = torch.randn(32, 3, generator=torch.Generator().manual_seed(1))
    bias = t5_relative_bias(table, 60, 60, bidirectional=True, max_distance=128)
    for diag in (-40, -3, 0, 5, 30):
        values = torch.diagonal(bias, offset=diag, dim1=1, dim2=2)  # [H, T − |diag|]
        assert torch.all(values == values[:, :1])


def test_bias_pinned_lookup():
    table = torch.arange(8 * 2, dtype=torch.float32).reshape(8, 2)  # bucket b, head h -> 2b + h
    bias = t5_relative_bias(table, 3, 3, bidirectional=True, max_distance=8)
    # 4 buckets per side, 2 exact: offsets 0, −1, −2 -> 0, 1, 2; +1, +2 -> 5, 6
    assert bias[0].tolist() == [[0, 10, 12], [2, 0, 10], [4, 2, 0]]
    assert bias[1].tolist() == [[1, 11, 13], [3, 1, 11], [5, 3, 1]]


def test_bias_module_gradients_reach_only_used_buckets():
    module = T5RelativeBias(2, num_buckets=32, max_distance=128, bidirectional=False)
    module(4, 4).sum().backward()
    used = module.relative_attention_bias.weight.grad.abs().sum(dim=1) > 0
    assert used.tolist() == [True] * 4 + [False] * 28  # offsets 0..3, decoder: exact buckets


def test_bias_on_meta_device():
    module = T5RelativeBias(12, num_buckets=32, max_distance=128).to("meta")
    out = module(512, 512)
    assert out.device.type == "meta" and out.shape == (12, 512, 512)


@pytest.mark.parametrize(
    ("args", "kwargs", "error", "match"),
    [
        ((torch.zeros(32), 3, 3), {}, ValueError, "table"),
        ((torch.zeros(32, 2, dtype=torch.long), 3, 3), {}, TypeError, "table"),
        ((torch.zeros(32, 2), 0, 3), {}, ValueError, "query_length"),
        ((torch.zeros(32, 2), 3, 2.0), {}, TypeError, "key_length"),
        ((torch.zeros(32, 2), 3, 3), {"query_offset": -1}, ValueError, "query_offset"),
        ((torch.zeros(31, 2), 3, 3), {}, ValueError, "num_buckets"),
    ],
)
def test_bias_rejects_bad_input(args, kwargs, error, match):
    with pytest.raises(error, match=match):
        t5_relative_bias(*args, **kwargs)


def test_bias_module_rejects_bad_input():
    with pytest.raises(ValueError, match="n_heads"):
        T5RelativeBias(0)
    with pytest.raises(ValueError, match="max_distance"):
        T5RelativeBias(4, num_buckets=32, max_distance=4)


# ---------------------------------------------------------------- Shaw et al.


def test_shaw_index_pinned():
    index = shaw_relative_index(4, 4, 2)
    # clip(j − i, 2) + 2
    assert index.tolist() == [[2, 3, 4, 4], [1, 2, 3, 4], [0, 1, 2, 3], [0, 0, 1, 2]]
    assert shaw_relative_index(2, 5, 1).tolist() == [[1, 2, 2, 2, 2], [0, 1, 2, 2, 2]]


def _shaw_loop(q, k, v, w_k, w_v, causal):
    """Shaw et al. 2018, equations 3-4, one (i, j) pair at a time."""
    seq_len, d = q.shape
    kk = (w_k.shape[0] - 1) // 2
    out = torch.zeros(seq_len, d, dtype=torch.float64)
    for i in range(seq_len):
        e = torch.empty(seq_len, dtype=torch.float64)
        for j in range(seq_len):
            r = max(-kk, min(kk, j - i)) + kk
            e[j] = q[i] @ (k[j] + w_k[r]) / math.sqrt(d)
            if causal and j > i:
                e[j] = -math.inf
        alpha = e.softmax(0)
        for j in range(seq_len):
            value = v[j] if w_v is None else v[j] + w_v[max(-kk, min(kk, j - i)) + kk]
            out[i] += alpha[j] * value
    return out


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("with_values", [False, True])
def test_shaw_equals_the_papers_equations(causal, with_values):
    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(7, 4, generator=g, dtype=torch.float64) for _ in range(3))
    w_k = torch.randn(5, 4, generator=g, dtype=torch.float64)
    w_v = torch.randn(5, 4, generator=g, dtype=torch.float64) if with_values else None
    got = shaw_attention(q, k, v, w_k, w_v, causal=causal)
    ref = _shaw_loop(q, k, v, w_k, w_v, causal)
    torch.testing.assert_close(got, ref, rtol=1e-6, atol=1e-6)


def test_shaw_with_zero_tables_is_plain_attention():
    g = torch.Generator().manual_seed(2)
    q, k, v = (torch.randn(2, 3, 9, 8, generator=g) for _ in range(3))
    zeros = torch.zeros(7, 8)
    out, weights = shaw_attention(q, k, v, zeros, zeros, causal=True, return_weights=True)
    ref, ref_w = attention(q, k, v, causal=True, return_weights=True)
    torch.testing.assert_close(out, ref, rtol=1e-6, atol=1e-6)
    torch.testing.assert_close(weights, ref_w, rtol=1e-6, atol=1e-6)


def test_shaw_is_translation_invariant_and_clips():
    """Identical content: the scores' position part depends on clip(j − i, k) alone."""
    g = torch.Generator().manual_seed(3)
    x = torch.randn(1, 8, generator=g).expand(12, 8).contiguous()
    w_k = torch.randn(7, 8, generator=g)
    _, weights = shaw_attention(x, x, x, w_k, return_weights=True)
    logits = weights.log()
    logits = logits - logits[:, :1]  # remove each row's constant
    # two queries see the same offsets 1..3 to their right
    torch.testing.assert_close(logits[2, 3:6] - logits[2, 3], logits[6, 7:10] - logits[6, 7])
    # offsets beyond k = 3 share w_3: equal scores
    torch.testing.assert_close(logits[0, 4:], logits[0, 4].expand(8))


def test_shaw_module_and_gradients():
    torch.manual_seed(0)
    module = ShawRelativeEmbeddings(8, 2, values=False)
    assert module.rel_values is None and module.rel_keys.shape == (5, 8)
    q = torch.randn(6, 8)
    module(q, q, q, causal=True).sum().backward()
    assert module.rel_keys.grad is not None
    # causal: keys after the query are masked, so rows for offsets +1, +2 get no gradient
    assert module.rel_keys.grad[3:].abs().sum() == 0
    assert module.rel_keys.grad[:3].abs().sum() > 0


def test_shaw_on_meta_device():
    q = torch.empty(2, 4, 128, 16, device="meta")
    out = shaw_attention(q, q, q, torch.empty(9, 16, device="meta"))
    assert out.device.type == "meta" and out.shape == q.shape


@pytest.mark.parametrize(
    ("change", "error", "match"),
    [
        ({"q": torch.zeros(5, 4, dtype=torch.long)}, TypeError, "q"),
        ({"k": torch.zeros(6, 4)}, ValueError, "same shape"),
        ({"rel_keys": torch.zeros(4, 4)}, ValueError, "rel_keys"),
        ({"rel_keys": torch.zeros(5, 3)}, ValueError, "rel_keys"),
        ({"rel_keys": torch.zeros(5, 4, dtype=torch.float64)}, ValueError, "rel_keys"),
        ({"rel_values": torch.zeros(5, 2)}, ValueError, "rel_values"),
        ({"causal": 1}, TypeError, "causal"),
        ({"q": torch.zeros(4)}, ValueError, "q"),
    ],
)
def test_shaw_rejects_bad_input(change, error, match):
    args = {
        "q": torch.zeros(5, 4),
        "k": torch.zeros(5, 4),
        "v": torch.zeros(5, 4),
        "rel_keys": torch.zeros(5, 4),
        "rel_values": None,
        "causal": False,
    } | change
    causal = args.pop("causal")
    with pytest.raises(error, match=match):
        shaw_attention(**args, causal=causal)


def test_shaw_index_and_module_reject_bad_input():
    with pytest.raises(ValueError, match="max_relative_position"):
        shaw_relative_index(3, 3, 0)
    with pytest.raises(TypeError, match="query_length"):
        shaw_relative_index(3.0, 3, 1)
    with pytest.raises(TypeError, match="values"):
        ShawRelativeEmbeddings(8, 2, values="yes")
