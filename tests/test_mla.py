"""lib.mla against transformers' DeepseekV3Attention pieces."""

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from transformers.models.deepseek_v3.modeling_deepseek_v3 import (
    apply_rotary_pos_emb_interleave,
    yarn_apply_mscale,
)

from lib.mla import (
    absorbed_nope_scores,
    decoupled_scores,
    interleave_rope_deepseek,
    mla_softmax_scale,
)
from lib.rope import apply_rope, rope_angles, rope_inv_freq


@pytest.mark.parametrize(
    "params",
    [
        {"rope_type": "default", "rope_theta": 10000.0},
        {"rope_type": "yarn", "factor": 40.0, "mscale_all_dim": 1.0, "mscale": 1.0},
        {"rope_type": "yarn", "factor": 4.0, "mscale_all_dim": 0.707},
        {"rope_type": "yarn", "factor": 8.0},
    ],
)
def test_softmax_scale_equals_transformers(params):
    assert mla_softmax_scale(192, params) == yarn_apply_mscale(params, 192**-0.5)


@given(st.integers(1, 8))
def test_interleave_equals_transformers(t):
    torch.manual_seed(t)
    q, k = torch.randn(2, 1, 2, t, 16).unbind(0)
    ang = rope_angles(torch.arange(t), rope_inv_freq(16))
    emb = torch.cat([ang, ang], -1)[None]
    hq, hk = apply_rotary_pos_emb_interleave(q, k, emb.cos(), emb.sin())
    torch.testing.assert_close(
        interleave_rope_deepseek(q, ang.cos(), ang.sin()), hq, rtol=1e-6, atol=1e-6
    )
    torch.testing.assert_close(
        interleave_rope_deepseek(k, ang.cos(), ang.sin()), hk, rtol=1e-6, atol=1e-6
    )


def test_decoupled_scores_equal_concatenated_heads():
    """transformers concatenates [q_nope, q_rope] and [k_nope, k_rope expanded]: same scores."""
    torch.manual_seed(0)
    qn, kn = torch.randn(2, 3, 5, 8).unbind(0)
    qr = torch.randn(3, 5, 4)
    kr = torch.randn(1, 5, 4)
    full = torch.cat([qn, qr], -1) @ torch.cat([kn, kr.expand(3, -1, -1)], -1).transpose(-1, -2)
    torch.testing.assert_close(
        decoupled_scores(qn, qr, kn, kr, 0.5), full * 0.5, rtol=1e-6, atol=1e-6
    )


def test_absorption_holds_without_rope_and_fails_with_it():
    torch.manual_seed(0)
    q = torch.randn(2, 4, 8, dtype=torch.float64)
    c = torch.randn(6, 5, dtype=torch.float64)
    w = torch.randn(2, 8, 5, dtype=torch.float64)
    keys = (w @ c.T).transpose(-1, -2)  # [H, S, d_nope]
    torch.testing.assert_close(absorbed_nope_scores(q, c, w), q @ keys.transpose(-1, -2))
    ang = rope_angles(torch.arange(6), rope_inv_freq(8)).double()
    rotated = apply_rope(keys, ang.cos(), ang.sin())
    assert (absorbed_nope_scores(q, c, w) - q @ rotated.transpose(-1, -2)).abs().max() > 0.1


def test_bad_input():
    with pytest.raises(ValueError, match="head dims"):
        decoupled_scores(
            torch.ones(1, 2, 3), torch.ones(1, 2, 2), torch.ones(1, 2, 4), torch.ones(1, 2, 2), 1.0
        )
    with pytest.raises(ValueError, match="w_uk"):
        absorbed_nope_scores(torch.ones(1, 2, 3), torch.ones(2, 5), torch.ones(1, 3, 4))
    with pytest.raises(TypeError, match="rope_parameters"):
        mla_softmax_scale(192, 3)
