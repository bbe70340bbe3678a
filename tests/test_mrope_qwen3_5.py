"""Qwen3.5's text rotation is lib's interleaved M-RoPE on a partial rotary block.

transformers' ``Qwen3_5TextRotaryEmbedding`` builds frequencies over ``head_dim · partial_rotary_factor``
dims, recomposes t/h/w in the interleaved layout of Qwen3-VL, and ``apply_rotary_pos_emb`` rotates
only the first ``rotary_dim`` dims (split halves inside the block). These tests pin that the book's
pieces (:func:`lib.partial_rope.partial_rotary_inv_freq`, :func:`lib.mrope.mrope_angles` with
``layout="interleaved"``, :func:`lib.partial_rope.apply_partial_rope`) compose to exactly that.
"""

from __future__ import annotations

import pytest
import torch
from transformers.models.qwen3_5.configuration_qwen3_5 import Qwen3_5TextConfig
from transformers.models.qwen3_5.modeling_qwen3_5 import (
    Qwen3_5TextRotaryEmbedding,
    apply_rotary_pos_emb,
)

from lib.mrope import mrope_angles, mrope_position_ids
from lib.partial_rope import apply_partial_rope, partial_rotary_inv_freq, rotary_dim

# text, a 4x6 image (merged 2x3), text, a 2-frame 4x4 video (merged 2x2), text
SEGMENTS = [("text", 3), ("image", (1, 4, 6)), ("text", 2), ("video", (2, 4, 4)), ("text", 2)]


def _transformers_rotation(d_head, factor, sections, base, positions, q, k):
    config = Qwen3_5TextConfig(
        hidden_size=2 * d_head,
        num_attention_heads=2,
        num_key_value_heads=2,
        head_dim=d_head,
        num_hidden_layers=4,
        rope_parameters={"rope_type": "default", "rope_theta": base, "mrope_section": sections,
                         "mrope_interleaved": True, "partial_rotary_factor": factor},
    )  # fmt: skip
    rotary = Qwen3_5TextRotaryEmbedding(config)
    cos, sin = rotary(q, positions)
    return apply_rotary_pos_emb(q, k, cos, sin), cos


@pytest.mark.parametrize(
    ("d_head", "factor", "sections"),
    [(256, 0.25, [11, 11, 10]), (128, 0.5, [11, 11, 10]), (64, 0.5, [6, 5, 5])],
)
def test_lib_interleaved_partial_mrope_equals_transformers_qwen3_5(d_head, factor, sections):
    base = 1e7
    positions = mrope_position_ids(SEGMENTS)[:, None]  # [3, B=1, T]
    T = positions.shape[-1]
    torch.manual_seed(0)
    q = torch.randn(1, 2, T, d_head)  # [B, H, T, d_head]
    k = torch.randn(1, 2, T, d_head)
    (q_hf, k_hf), cos_hf = _transformers_rotation(d_head, factor, sections, base, positions, q, k)

    r = rotary_dim(d_head, factor)
    assert cos_hf.shape[-1] == r  # transformers rotates r dims, the rest pass through
    inv_freq = partial_rotary_inv_freq(d_head, base, factor)  # [r / 2]
    angles = mrope_angles(positions, inv_freq, sections, layout="interleaved")  # [1, T, r/2]
    cos, sin = angles.cos()[:, None], angles.sin()[:, None]  # [B, 1, T, r/2]
    torch.testing.assert_close(apply_partial_rope(q, cos, sin), q_hf, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(apply_partial_rope(k, cos, sin), k_hf, atol=1e-5, rtol=1e-5)
    # the pass-through block is untouched, bit for bit
    assert torch.equal(q_hf[..., r:], q[..., r:])


def test_chunked_layout_is_not_qwen3_5():
    """The layout matters: Qwen2-VL's chunked sections do not give Qwen3.5's rotation."""
    d_head, factor, sections, base = 256, 0.25, [11, 11, 10], 1e7
    positions = mrope_position_ids(SEGMENTS)[:, None]
    torch.manual_seed(0)
    q = torch.randn(1, 2, positions.shape[-1], d_head)
    (q_hf, _), _ = _transformers_rotation(d_head, factor, sections, base, positions, q, q)
    inv_freq = partial_rotary_inv_freq(d_head, base, factor)
    angles = mrope_angles(positions, inv_freq, sections, layout="chunked")
    q_lib = apply_partial_rope(q, angles.cos()[:, None], angles.sin()[:, None])
    assert (q_lib - q_hf).abs().max() > 0.1


def test_qwen3_5_defaults_read_from_transformers():
    """The facts chapter 10 states, read from the pinned transformers' config class and rotary."""
    config = Qwen3_5TextConfig()
    assert config.head_dim == 256
    assert config.rope_parameters["partial_rotary_factor"] == 0.25
    assert rotary_dim(config.head_dim, config.rope_parameters["partial_rotary_factor"]) == 64
    rotary = Qwen3_5TextRotaryEmbedding(config)
    assert rotary.mrope_section == [11, 11, 10]
    assert sum(rotary.mrope_section) == 64 // 2
    # three linear-attention (Gated DeltaNet) layers, then one full-attention layer, repeated
    assert config.layer_types[:4] == ["linear_attention"] * 3 + ["full_attention"]
    assert config.layer_types.count("full_attention") * 4 == config.num_hidden_layers
