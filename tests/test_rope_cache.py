"""lib.rope_cache: evict + re-rotate equals recomputing with transformers' Llama rotary code."""

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from transformers.models.llama.modeling_llama import apply_rotary_pos_emb

from lib.rope import apply_rope, rope_angles, rope_inv_freq
from lib.rope_cache import evict_and_rerotate, rerotate_keys, streaming_keep_indices


def _hf_rotate(k, positions, inv_freq):
    ang = rope_angles(positions, inv_freq)
    emb = torch.cat([ang, ang], -1)[None]
    _, out = apply_rotary_pos_emb(k, k, emb.cos(), emb.sin())
    return out


@given(st.integers(8, 200), st.integers(0, 4), st.integers(1, 16), st.sampled_from([1e4, 1e5]))
def test_evict_and_rerotate_equals_recompute(t, n_sink, n_recent, base):
    g = torch.Generator().manual_seed(t)
    raw = torch.randn(1, 2, t, 32, generator=g)
    inv = rope_inv_freq(32, base)
    cached = _hf_rotate(raw, torch.arange(t), inv)
    new, kept = evict_and_rerotate(cached, n_sink, n_recent, inv)
    expected = _hf_rotate(raw[..., kept, :], torch.arange(kept.shape[0]), inv)
    torch.testing.assert_close(new, expected, rtol=1e-5, atol=1e-5)


@given(st.integers(-50, 50), st.sampled_from(["half", "interleaved"]))
def test_rerotate_is_the_group_property(delta, pairing):
    g = torch.Generator().manual_seed(delta + 50)
    raw = torch.randn(5, 16, generator=g, dtype=torch.float64)
    inv = rope_inv_freq(16)
    pos = torch.arange(60, 65)
    ang = rope_angles(pos, inv).double()
    ang2 = rope_angles(pos + delta, inv).double()
    moved = rerotate_keys(
        apply_rope(raw, ang.cos(), ang.sin(), pairing=pairing), delta, inv, pairing=pairing
    )
    torch.testing.assert_close(
        moved, apply_rope(raw, ang2.cos(), ang2.sin(), pairing=pairing), rtol=1e-5, atol=1e-5
    )


def test_keep_indices():
    assert streaming_keep_indices(10, 2, 3).tolist() == [0, 1, 7, 8, 9]
    assert streaming_keep_indices(4, 2, 3).tolist() == [0, 1, 2, 3]


def test_bad_input():
    with pytest.raises(ValueError, match="inv_freq"):
        rerotate_keys(torch.ones(3, 8), 1, torch.ones(3))
    with pytest.raises(ValueError, match="delta"):
        rerotate_keys(torch.ones(3, 8), torch.ones(2), torch.ones(4))
    with pytest.raises(ValueError, match="n_sink"):
        streaming_keep_indices(5, -1, 2)
