"""lib.partial_rope against transformers' ROPE_INIT_FUNCTIONS and GPT-NeoX's apply_rotary_pos_emb."""

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from transformers import GPTNeoXConfig
from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS
from transformers.models.gemma4.configuration_gemma4 import Gemma4TextConfig
from transformers.models.gpt_neox.modeling_gpt_neox import (
    GPTNeoXRotaryEmbedding,
    apply_rotary_pos_emb,
)

from lib.partial_rope import (
    apply_partial_rope,
    partial_rotary_inv_freq,
    proportional_inv_freq,
    rotary_dim,
)
from lib.rope import rope_angles


@pytest.mark.parametrize(("d", "f"), [(96, 0.25), (64, 0.5), (256, 0.25), (128, 1.0)])
def test_partial_inv_freq_equals_transformers_default(d, f):
    cfg = GPTNeoXConfig(
        hidden_size=d * 4,
        num_attention_heads=4,
        rope_parameters={"rope_type": "default", "rope_theta": 10000.0, "partial_rotary_factor": f},
    )
    hf, _ = GPTNeoXRotaryEmbedding.compute_default_rope_parameters(cfg)
    ours = partial_rotary_inv_freq(d, 10000.0, f)
    assert ours.shape == (rotary_dim(d, f) // 2,)
    torch.testing.assert_close(ours, hf, rtol=0, atol=0)


@pytest.mark.parametrize(
    ("d", "f", "theta"), [(512, 0.25, 1e6), (256, 0.25, 1e6), (128, 0.5, 1e4), (64, 1.0, 1e4)]
)
def test_proportional_equals_transformers(d, f, theta):
    cfg = Gemma4TextConfig(
        head_dim=d,
        rope_parameters={
            "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0},
            "full_attention": {
                "rope_type": "proportional",
                "partial_rotary_factor": f,
                "rope_theta": theta,
            },
        },
    )
    hf, _ = ROPE_INIT_FUNCTIONS["proportional"](cfg, layer_type="full_attention")
    ours = proportional_inv_freq(cfg.per_layer_config["full_attention"].head_dim, theta, f)
    torch.testing.assert_close(ours, hf, rtol=0, atol=0)
    assert int((ours == 0).sum()) == d_zero(cfg.per_layer_config["full_attention"].head_dim, f)


def d_zero(d, f):
    return d // 2 - int(f * d // 2)


@given(st.sampled_from([(96, 0.25), (64, 0.5), (128, 0.25)]), st.integers(1, 9))
def test_apply_partial_equals_gpt_neox(df, t):
    d, f = df
    torch.manual_seed(t)
    q, k = torch.randn(2, 1, 2, t, d).unbind(0)
    ang = rope_angles(torch.arange(t), partial_rotary_inv_freq(d, 10000.0, f))
    emb = torch.cat([ang, ang], dim=-1)[None]
    hq, hk = apply_rotary_pos_emb(q, k, emb.cos(), emb.sin())
    torch.testing.assert_close(
        apply_partial_rope(q, ang.cos(), ang.sin()), hq, rtol=1e-6, atol=1e-6
    )
    torch.testing.assert_close(
        apply_partial_rope(k, ang.cos(), ang.sin()), hk, rtol=1e-6, atol=1e-6
    )
    r = rotary_dim(d, f)
    assert torch.equal(apply_partial_rope(q, ang.cos(), ang.sin())[..., r:], q[..., r:])


def test_bad_input():
    with pytest.raises(ValueError, match="partial_rotary_factor"):
        partial_rotary_inv_freq(64, 1e4, 0.0)
    with pytest.raises(ValueError, match="rotary dim"):
        rotary_dim(64, 0.01)
    with pytest.raises(ValueError, match="pairs"):
        apply_partial_rope(torch.ones(1, 4), torch.ones(1, 3), torch.ones(1, 3))
