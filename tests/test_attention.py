"""Tests for lib.attention: torch SDPA / nn.MultiheadAttention agreement, masks, equivariance."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from lib.alibi import alibi_bias
from lib.attention import SelfAttention, attention


def rand(*shape, seed=0, dtype=torch.float32):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=dtype)


def tensors(*shape: int):
    """Float32 tensors of ``shape`` whose values hypothesis draws (and shrinks) itself."""
    elements = st.floats(-4, 4, width=32, allow_subnormal=False)
    return hnp.arrays(np.float32, shape, elements=elements).map(torch.from_numpy)


# ---------------------------------------------------------------- attention vs SDPA


def test_pinned_tiny():
    # one query, two keys: scores = [1, 0] / sqrt(1) -> weights = [e/(e+1), 1/(e+1)]
    q = torch.tensor([[1.0]])
    k = torch.tensor([[1.0], [0.0]])
    v = torch.tensor([[10.0, 0.0], [0.0, 10.0]])
    out, w = attention(q, k, v, return_weights=True)
    e = math.e
    torch.testing.assert_close(w, torch.tensor([[e / (e + 1), 1 / (e + 1)]]))
    torch.testing.assert_close(out, torch.tensor([[10 * e / (e + 1), 10 / (e + 1)]]))


@given(
    b=st.integers(1, 3),
    h=st.integers(1, 4),
    t_q=st.integers(1, 9),
    t_k=st.integers(1, 9),
    d=st.integers(1, 16),
    d_v=st.integers(1, 8),
    data=st.data(),
)
def test_matches_sdpa(b, h, t_q, t_k, d, d_v, data):
    q = data.draw(tensors(b, h, t_q, d), label="q")
    k = data.draw(tensors(b, h, t_k, d), label="k")
    v = data.draw(tensors(b, h, t_k, d_v), label="v")
    torch.testing.assert_close(
        attention(q, k, v), F.scaled_dot_product_attention(q, k, v), atol=1e-5, rtol=1e-5
    )
    bias = data.draw(tensors(h, t_q, t_k), label="bias")
    torch.testing.assert_close(
        attention(q, k, v, bias=bias),
        F.scaled_dot_product_attention(q, k, v, attn_mask=bias),
        atol=1e-5,
        rtol=1e-5,
    )
    torch.testing.assert_close(
        attention(q, k, v, scale=0.3),
        F.scaled_dot_product_attention(q, k, v, scale=0.3),
        atol=1e-5,
        rtol=1e-5,
    )


@given(h=st.integers(1, 4), t=st.integers(1, 10), seed=st.integers(0, 2**16))
def test_causal_matches_sdpa(h, t, seed):
    q, k, v = (rand(2, h, t, 8, seed=seed + i) for i in range(3))
    torch.testing.assert_close(
        attention(q, k, v, causal=True),
        F.scaled_dot_product_attention(q, k, v, is_causal=True),
        atol=1e-5,
        rtol=1e-5,
    )
    # causal + ALiBi bias: SDPA takes both as one float mask
    bias = alibi_bias(h, t, causal=False)
    mask = bias.masked_fill(torch.ones(t, t, dtype=torch.bool).triu(1), float("-inf"))
    torch.testing.assert_close(
        attention(q, k, v, bias=bias, causal=True),
        F.scaled_dot_product_attention(q, k, v, attn_mask=mask),
        atol=1e-5,
        rtol=1e-5,
    )
    torch.testing.assert_close(
        attention(q, k, v, bias=alibi_bias(h, t)), attention(q, k, v, bias=bias, causal=True)
    )


def test_causal_weights_and_future_independence():
    q, k, v = rand(1, 6, 4, seed=1), rand(1, 6, 4, seed=2), rand(1, 6, 3, seed=3)
    out, w = attention(q, k, v, causal=True, return_weights=True)
    assert w.dtype == torch.float32
    torch.testing.assert_close(w.sum(-1), torch.ones(1, 6))
    future = torch.ones(6, 6, dtype=torch.bool).triu(1)
    assert torch.all(w[0][future] == 0)
    assert torch.all(w[0][~future] > 0)
    # changing key/value 4 changes only the outputs of queries 4 and 5
    k2, v2 = k.clone(), v.clone()
    k2[0, 4] += 5
    v2[0, 4] -= 5
    out2 = attention(q, k2, v2, causal=True)
    torch.testing.assert_close(out2[0, :4], out[0, :4], atol=0, rtol=0)
    assert not torch.allclose(out2[0, 4:], out[0, 4:])


def test_low_precision_inputs_computed_in_float32():
    # Compare with the exact (float64) attention of the same bf16 inputs. Computed in float32, the
    # weights are within float32 rounding (~1e-7) and `out` is that result rounded once to bf16:
    # within half a bf16 ulp (plus float32 noise). Computing in bf16 misses both by far (weights
    # off by ~3e-3, outputs by many ulps), and so does a bf16 product of float32 weights with v.
    q, k, v = (rand(2, 3, 7, 16, seed=i).bfloat16() for i in range(3))
    out, w = attention(q, k, v, causal=True, return_weights=True)
    assert out.dtype == torch.bfloat16 and w.dtype == torch.float32
    scores = (q.double() @ k.double().transpose(-2, -1)) / math.sqrt(16)  # [B, H, T, T]
    scores = scores.masked_fill(torch.ones(7, 7, dtype=torch.bool).triu(1), -math.inf)
    w_exact = torch.softmax(scores, dim=-1)
    out_exact = w_exact @ v.double()  # [B, H, T, d]
    torch.testing.assert_close(w.double(), w_exact, atol=1e-6, rtol=0)
    half_ulp = torch.finfo(torch.bfloat16).eps / 2
    error = (out.double() - out_exact).abs()
    bound = out_exact.abs() * (half_ulp + 1e-5) + 1e-6
    assert bool((error <= bound).all()), f"max error / bound = {(error / bound).max().item():.2f}"


# ---------------------------------------------------------------- attention errors


def test_attention_errors():
    q, k, v = rand(2, 5, 4), rand(2, 5, 4), rand(2, 5, 3)
    with pytest.raises(TypeError, match="q must be a floating-point tensor"):
        attention(q.long(), k, v)
    with pytest.raises(TypeError, match=r"v must be a torch\.Tensor"):
        attention(q, k, v.tolist())
    with pytest.raises(ValueError, match="k must have at least 2 dimension"):
        attention(q, k[0, 0], v)
    with pytest.raises(ValueError, match="same last dim d"):
        attention(q, rand(2, 5, 6), v)
    with pytest.raises(ValueError, match="number of keys T_k"):
        attention(q, k, rand(2, 4, 3))
    with pytest.raises(ValueError, match="leading dims"):
        attention(q, rand(1, 5, 4), rand(1, 5, 3))
    with pytest.raises(ValueError, match="share a dtype"):
        attention(q, k.double(), v)
    with pytest.raises(ValueError, match="causal=True needs T_q == T_k"):
        attention(rand(2, 3, 4), k, v, causal=True)
    with pytest.raises(TypeError, match="causal must be a bool"):
        attention(q, k, v, causal=1)
    with pytest.raises(TypeError, match="return_weights must be a bool"):
        attention(q, k, v, return_weights="yes")
    with pytest.raises(ValueError, match="scale"):
        attention(q, k, v, scale=0.0)
    with pytest.raises(TypeError, match="bias must be a floating-point tensor"):
        attention(q, k, v, bias=torch.zeros(5, 5, dtype=torch.bool))
    with pytest.raises(ValueError, match=r"bias must broadcast .* got shape \[5, 4\]"):
        attention(q, k, v, bias=torch.zeros(5, 4))
    with pytest.raises(ValueError, match=r"bias must broadcast .* got shape \[3, 2, 5, 5\]"):
        attention(q, k, v, bias=torch.zeros(3, 2, 5, 5))  # would enlarge the output
    fully_masked = torch.zeros(5, 5)
    fully_masked[2] = float("-inf")
    with pytest.raises(ValueError, match="every key is masked"):
        attention(q, k, v, bias=fully_masked)


# ---------------------------------------------------------------- SelfAttention


def test_self_attention_matches_multihead_attention():
    torch.manual_seed(0)
    d_model, n_heads, t = 12, 3, 5
    ours = SelfAttention(d_model, n_heads, bias=True)
    ref = torch.nn.MultiheadAttention(d_model, n_heads, bias=True, batch_first=True)
    with torch.no_grad():
        ref.in_proj_weight.copy_(
            torch.cat([ours.q_proj.weight, ours.k_proj.weight, ours.v_proj.weight])
        )
        ref.in_proj_bias.copy_(torch.cat([ours.q_proj.bias, ours.k_proj.bias, ours.v_proj.bias]))
        ref.out_proj.weight.copy_(ours.o_proj.weight)
        ref.out_proj.bias.copy_(ours.o_proj.bias)
    x = rand(2, t, d_model, seed=5)
    out, w = ours(x, return_weights=True)
    ref_out, ref_w = ref(x, x, x, average_attn_weights=False)
    assert out.shape == (2, t, d_model) and w.shape == (2, n_heads, t, t)
    torch.testing.assert_close(out, ref_out, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(w, ref_w, atol=1e-6, rtol=1e-5)
    mask = torch.ones(t, t, dtype=torch.bool).triu(
        1
    )  # True = not allowed, as in nn.MultiheadAttention
    ref_causal, _ = ref(x, x, x, attn_mask=mask)
    torch.testing.assert_close(ours(x, causal=True), ref_causal, atol=1e-5, rtol=1e-5)


@given(t=st.integers(2, 8), seed=st.integers(0, 2**16), data=st.data())
def test_self_attention_is_permutation_equivariant(t, seed, data):
    torch.manual_seed(seed)  # the layer's weights; the inputs and the permutation are drawn
    layer = SelfAttention(8, 2)
    x = data.draw(tensors(1, t, 8), label="x")
    perm = torch.tensor(data.draw(st.permutations(range(t)), label="perm"))
    torch.testing.assert_close(layer(x[:, perm]), layer(x)[:, perm], atol=1e-5, rtol=1e-5)


def test_positions_break_equivariance():
    torch.manual_seed(0)
    layer = SelfAttention(8, 2)
    x = rand(1, 6, 8, seed=3)
    perm = torch.tensor([2, 0, 5, 1, 4, 3])
    assert not torch.allclose(
        layer(x[:, perm], causal=True), layer(x, causal=True)[:, perm], atol=1e-4
    )
    bias = alibi_bias(2, 6, causal=False)
    assert not torch.allclose(
        layer(x[:, perm], attn_bias=bias), layer(x, attn_bias=bias)[:, perm], atol=1e-4
    )
    # ...but the symmetric (non-causal) ALiBi bias depends on |i - j| only, so reversing the
    # sequence, which keeps every |i - j|, is still a symmetry
    rev = torch.arange(5, -1, -1)
    torch.testing.assert_close(layer(x[:, rev], attn_bias=bias), layer(x, attn_bias=bias)[:, rev])


def test_rotary_hook_is_applied_to_q_and_k():
    torch.manual_seed(0)
    layer = SelfAttention(8, 2)
    x = rand(2, 4, 8, seed=1)
    seen = []

    def rotary(t):
        seen.append(tuple(t.shape))
        return 2.0 * t

    _, w_rot = layer(x, rotary=rotary, return_weights=True)
    assert seen == [(2, 2, 4, 4), (2, 2, 4, 4)]  # [B, H, T, d_head], once for q, once for k
    # doubling q and k multiplies the scores by 4: same as attention with scale 4/sqrt(d_head)
    q = layer.q_proj(x).view(2, 4, 2, 4).transpose(1, 2)
    k = layer.k_proj(x).view(2, 4, 2, 4).transpose(1, 2)
    v = layer.v_proj(x).view(2, 4, 2, 4).transpose(1, 2)
    _, w_ref = attention(q, k, v, scale=4 / math.sqrt(4), return_weights=True)
    torch.testing.assert_close(w_rot, w_ref)
    torch.testing.assert_close(layer(x, rotary=lambda t: t), layer(x))


def test_self_attention_errors():
    with pytest.raises(ValueError, match="d_model must be divisible by n_heads"):
        SelfAttention(10, 3)
    with pytest.raises(ValueError, match="n_heads"):
        SelfAttention(8, 0)
    with pytest.raises(TypeError, match="bias must be a bool"):
        SelfAttention(8, 2, bias=None)
    layer = SelfAttention(8, 2)
    with pytest.raises(ValueError, match=r"x must be \[B, T, d_model=8\]"):
        layer(rand(3, 8))
    with pytest.raises(ValueError, match=r"x must be \[B, T, d_model=8\]"):
        layer(rand(1, 3, 6))
    with pytest.raises(TypeError, match="x must be a floating-point tensor"):
        layer(torch.zeros(1, 3, 8, dtype=torch.long))
    with pytest.raises(TypeError, match="rotary must be a callable"):
        layer(rand(1, 3, 8), rotary=3)
    with pytest.raises(ValueError, match="rotary must return a tensor of the shape it gets"):
        layer(rand(1, 3, 8), rotary=lambda t: t[..., :2])
    with pytest.raises(ValueError, match="bias must broadcast"):
        layer(rand(1, 3, 8), attn_bias=torch.zeros(3, 3, 3))
    with pytest.raises(TypeError, match="return_weights must be a bool"):
        layer(rand(1, 3, 8), return_weights=None)


@given(t=st.integers(2, 8), seed=st.integers(0, 2**16), data=st.data())
def test_one_causal_layer_reads_its_prefix_as_a_set(t, seed, data):
    # Shuffling tokens 0..k-1 leaves the causal output at every position >= k unchanged (each
    # sees the same token and the same set before it); a second layer no longer has to.
    torch.manual_seed(seed)  # the layer's weights; the inputs and the shuffle are drawn
    layer = SelfAttention(8, 2)
    x = data.draw(tensors(1, t, 8), label="x")
    k = data.draw(st.integers(1, t), label="k")
    head = data.draw(st.permutations(range(k)), label="prefix perm")
    perm = torch.tensor(list(head) + list(range(k, t)))
    out, out_p = layer(x, causal=True), layer(x[:, perm], causal=True)
    torch.testing.assert_close(out_p[:, k:], out[:, k:], atol=1e-5, rtol=1e-5)
    # and the output at t is attention over the prefix alone, unmasked
    for pos in range(t):
        torch.testing.assert_close(
            out[:, pos], layer(x[:, : pos + 1])[:, pos], atol=1e-5, rtol=1e-5
        )


def test_a_second_causal_layer_sees_the_order_of_the_prefix():
    torch.manual_seed(0)
    first, second = SelfAttention(8, 2), SelfAttention(8, 2)
    x = rand(1, 6, 8, seed=3)
    perm = torch.tensor([3, 0, 4, 1, 2, 5])  # shuffle tokens 0..4, keep 5
    one, one_p = first(x, causal=True), first(x[:, perm], causal=True)
    torch.testing.assert_close(one_p[:, 5], one[:, 5], atol=1e-5, rtol=1e-5)
    two, two_p = second(one, causal=True), second(one_p, causal=True)
    assert (two_p[:, 5] - two[:, 5]).abs().max() > 1e-2
