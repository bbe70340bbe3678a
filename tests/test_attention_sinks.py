"""lib.attention_sinks against transformers' gpt-oss attention (eager) and pinned properties."""

from types import SimpleNamespace

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from transformers import GptOssConfig
from transformers.models.gpt_oss import modeling_gpt_oss
from transformers.models.gpt_oss.modeling_gpt_oss import GptOssAttention

from lib.attention_sinks import attention_with_sinks, sink_mass, sink_softmax


def _hf_weights(scores: torch.Tensor, sinks: torch.Tensor) -> torch.Tensor:
    """transformers' eager_attention_forward's weights for given logits: q = scores, k = I, scale 1."""
    b, h, _, s = scores.shape
    module = SimpleNamespace(sinks=sinks, num_key_value_groups=1, training=False)
    keys = torch.eye(s, dtype=scores.dtype).expand(b, h, s, s)
    _, w = modeling_gpt_oss.eager_attention_forward(
        module, scores, keys, keys, attention_mask=None, scaling=1.0
    )
    return w


@given(
    st.integers(1, 3),
    st.integers(1, 6),
    st.integers(1, 7),
    st.integers(0, 2**31 - 1),
)
def test_sink_softmax_equals_gpt_oss_eager_weights(h, t, s, seed):
    g = torch.Generator().manual_seed(seed)
    scores = torch.randn(2, h, t, s, generator=g, dtype=torch.float64) * 3
    sinks = torch.randn(h, generator=g, dtype=torch.float64) * 3
    torch.testing.assert_close(sink_softmax(scores, sinks), _hf_weights(scores, sinks))


def test_attention_with_sinks_equals_gpt_oss_attention_layer():
    """A whole GptOssAttention layer (GQA, sliding window, causal mask, learned sinks)."""
    torch.manual_seed(0)
    cfg = GptOssConfig(
        hidden_size=32, num_attention_heads=4, num_key_value_heads=2, head_dim=8,
        num_hidden_layers=2, sliding_window=3, attn_implementation="eager",
    )  # fmt: skip
    layer = GptOssAttention(cfg, layer_idx=0).eval()  # layer 0: sliding_attention
    assert cfg.layer_types[0] == "sliding_attention"
    with torch.no_grad():
        layer.sinks.normal_(0.0, 2.0)
    t = 7
    x = torch.randn(1, t, 32)
    cos = torch.randn(1, t, 4)
    sin = torch.randn(1, t, 4)  # any cos/sin: the same rotation goes to both sides
    q_pos = torch.arange(t)[:, None]
    k_pos = torch.arange(t)[None, :]
    allowed = (k_pos <= q_pos) & (k_pos > q_pos - 3)
    additive = torch.zeros(1, 1, t, t).masked_fill(~allowed, float("-inf"))
    with torch.no_grad():
        hf, _ = layer(x, position_embeddings=(cos, sin), attention_mask=additive)
        q = layer.q_proj(x).view(1, t, 4, 8).transpose(1, 2)
        k = layer.k_proj(x).view(1, t, 2, 8).transpose(1, 2)
        v = layer.v_proj(x).view(1, t, 2, 8).transpose(1, 2)
        q, k = modeling_gpt_oss.apply_rotary_pos_emb(q, k, cos, sin)
        out = attention_with_sinks(q, k, v, layer.sinks, scaling=8**-0.5, mask=allowed)
        ours = layer.o_proj(out.transpose(1, 2).reshape(1, t, 32))
    torch.testing.assert_close(ours, hf, rtol=1e-6, atol=1e-6)


def test_pinned_weights_and_mass():
    # one head, two keys with logits 0 and log 2, sink log 3: weights 1/6, 2/6, sink 3/6
    scores = torch.log(torch.tensor([[[[1.0, 2.0]]]], dtype=torch.float64))
    sinks = torch.log(torch.tensor([3.0], dtype=torch.float64))
    torch.testing.assert_close(
        sink_softmax(scores, sinks), torch.tensor([[[[1 / 6, 2 / 6]]]], dtype=torch.float64)
    )
    torch.testing.assert_close(
        sink_mass(scores, sinks), torch.tensor([[[0.5]]], dtype=torch.float64)
    )


@given(st.integers(1, 4), st.integers(1, 6), st.integers(0, 2**31 - 1))
def test_rows_sum_to_one_minus_sink_mass(h, s, seed):
    g = torch.Generator().manual_seed(seed)
    scores = torch.randn(h, 3, s, generator=g, dtype=torch.float64)
    sinks = torch.randn(h, generator=g, dtype=torch.float64)
    w = sink_softmax(scores, sinks)
    torch.testing.assert_close(
        w.sum(-1) + sink_mass(scores, sinks), torch.ones(h, 3, dtype=torch.float64)
    )
    assert (w.sum(-1) < 1).all()


def test_a_very_negative_sink_is_plain_softmax_and_a_masked_row_is_all_sink():
    scores = torch.randn(2, 4, 5, dtype=torch.float64)
    plain = sink_softmax(scores, torch.full((2,), -1e4, dtype=torch.float64))
    torch.testing.assert_close(plain, scores.softmax(-1))
    masked = torch.full((2, 1, 5), float("-inf"), dtype=torch.float64)
    assert torch.equal(
        sink_softmax(masked, torch.zeros(2, dtype=torch.float64)),
        torch.zeros(2, 1, 5, dtype=torch.float64),
    )


def test_bad_input_is_refused():
    with pytest.raises(ValueError, match="sinks"):
        sink_softmax(torch.randn(2, 3, 4), torch.zeros(3))
    with pytest.raises(TypeError, match="sinks"):
        sink_softmax(torch.randn(2, 3, 4), torch.zeros(2, dtype=torch.long))
    with pytest.raises(TypeError, match="scores"):
        sink_mass(torch.ones(2, 3, 4, dtype=torch.long), torch.zeros(2))
    q = torch.randn(1, 3, 4, 8)
    kv = torch.randn(1, 2, 4, 8)
    with pytest.raises(ValueError, match="multiple"):
        attention_with_sinks(q, kv, kv, torch.zeros(3), scaling=1.0)
    with pytest.raises(TypeError, match="mask"):
        attention_with_sinks(q, q, q, torch.zeros(3), scaling=1.0, mask=torch.ones(4, 4))


def test_works_on_meta():
    out = sink_softmax(torch.empty(2, 3, 4, device="meta"), torch.empty(2, device="meta"))
    assert out.shape == (2, 3, 4) and out.device.type == "meta"
