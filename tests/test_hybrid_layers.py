"""lib.hybrid_layers against transformers' configuration classes, masks and Llama4TextAttention."""

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from transformers import (
    Cohere2Config,
    Gemma2Config,
    Gemma3TextConfig,
    Llama4TextConfig,
    SmolLM3Config,
)
from transformers.masking_utils import (
    chunked_causal_mask_function,
    sliding_window_causal_mask_function,
)
from transformers.models.llama4.modeling_llama4 import Llama4TextAttention

from lib.hybrid_layers import (
    chunked_causal_mask,
    layer_types_from_pattern,
    nope_query_temperature,
    rope_layer_flags,
    scale_queries,
    sliding_window_causal_mask,
)


@given(st.integers(1, 40), st.integers(1, 8))
def test_layer_types_equal_gemma3_config(n, p):
    cfg = Gemma3TextConfig(num_hidden_layers=n, sliding_window_pattern=p)
    expected = list(cfg.layer_types)
    assert layer_types_from_pattern(n, p) == expected


@pytest.mark.parametrize(("cls", "p"), [(Gemma2Config, 2), (Cohere2Config, 4)])
def test_layer_types_equal_other_families(cls, p):
    cfg = cls(num_hidden_layers=12)
    assert layer_types_from_pattern(12, p) == list(cfg.layer_types)


@given(st.integers(1, 60), st.integers(1, 6))
def test_rope_flags_equal_llama4_and_smollm3(n, k):
    flags = rope_layer_flags(n, k)
    assert flags == list(
        Llama4TextConfig(num_hidden_layers=n, no_rope_layer_interval=k).no_rope_layers
    )
    assert flags == list(
        SmolLM3Config(num_hidden_layers=n, no_rope_layer_interval=k).no_rope_layers
    )


def _hf_mask(fn, t):
    q = torch.arange(t)[:, None]
    k = torch.arange(t)[None, :]
    return fn(torch.tensor(0), torch.tensor(0), q, k).expand(t, t).bool()


@given(st.integers(1, 24), st.integers(1, 10))
def test_sliding_window_mask_equals_transformers(t, w):
    assert torch.equal(
        sliding_window_causal_mask(t, w), _hf_mask(sliding_window_causal_mask_function(w), t)
    )


@given(st.integers(1, 24), st.integers(1, 10))
def test_chunked_mask_equals_transformers(t, c):
    hf = _hf_mask(chunked_causal_mask_function(c, torch.zeros(1, dtype=torch.long)), t)
    assert torch.equal(chunked_causal_mask(t, c), hf)


def test_temperature_is_one_before_floor_scale_and_pinned_after():
    pos = torch.tensor([0, 8190, 8191, 16383, 100000])
    out = nope_query_temperature(pos)
    torch.testing.assert_close(out[:2], torch.ones(2))
    expected = torch.log1p(torch.tensor([1.0, 2.0, 12.0])) * 0.1 + 1.0  # floor((p+1)/8192)
    torch.testing.assert_close(out[2:], expected, rtol=0, atol=0)


def test_nope_layer_equals_llama4_text_attention():
    """A NoPE layer of Llama4TextAttention = plain attention on temperature-scaled queries."""
    torch.manual_seed(0)
    cfg = Llama4TextConfig(
        hidden_size=16, num_attention_heads=2, num_key_value_heads=2, head_dim=8,
        num_hidden_layers=4, floor_scale=4, attn_scale=0.5, attn_implementation="eager",
    )  # fmt: skip
    attn = Llama4TextAttention(cfg, layer_idx=3).eval()  # layer 3: NoPE
    assert not attn.use_rope
    t = 13
    x = torch.randn(1, t, 16)
    with torch.no_grad():
        hf, _ = attn(x, position_embeddings=None, attention_mask=None)
        q = attn.q_proj(x).view(1, t, 2, 8).transpose(1, 2)
        k = attn.k_proj(x).view(1, t, 2, 8).transpose(1, 2)
        v = attn.v_proj(x).view(1, t, 2, 8).transpose(1, 2)
        q = scale_queries(q, nope_query_temperature(torch.arange(t), floor_scale=4, attn_scale=0.5))
        w = (q @ k.transpose(-1, -2) * 8**-0.5).softmax(-1)
        ours = attn.o_proj((w @ v).transpose(1, 2).reshape(1, t, 16))
    torch.testing.assert_close(ours, hf, rtol=1e-6, atol=1e-6)


def test_bad_input_is_refused():
    with pytest.raises(ValueError, match="num_hidden_layers"):
        layer_types_from_pattern(0, 6)
    with pytest.raises(ValueError, match="sliding_window"):
        sliding_window_causal_mask(4, 0)
    with pytest.raises(ValueError, match="attention_chunk_size"):
        chunked_causal_mask(4, 0)
    for mask in (sliding_window_causal_mask, chunked_causal_mask):
        with pytest.raises(ValueError, match="seq_len"):
            mask(0, 2)
    with pytest.raises(TypeError, match="positions"):
        nope_query_temperature(torch.tensor([1.5]))
    with pytest.raises(ValueError, match="positions"):
        nope_query_temperature(torch.tensor([-1]))
    with pytest.raises(ValueError, match="temperature"):
        scale_queries(torch.ones(2, 3, 4), torch.ones(2))
