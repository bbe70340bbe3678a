"""Tests for lib/lab/schemes.py (the length-extrapolation lab)."""

from __future__ import annotations

import math

import pytest
import torch

from lib.lab import (
    POSITION_SCHEMES,
    ALiBiPositions,
    InterpolatedRotaryPositions,
    LearnedPositions,
    NoPositions,
    RotaryPositions,
    SinusoidalPositions,
)
from lib.relative import t5_relative_position_bucket

from .helpers import make_scheme, rotate_half_by_hand


def test_registry_names_classes_and_where_they_act():
    assert list(POSITION_SCHEMES) == [
        "none",
        "sinusoidal",
        "learned",
        "rope",
        "rope+pi",
        "alibi",
        "t5",
    ]
    acts = {name: cls.acts_on for name, cls in POSITION_SCHEMES.items()}
    assert acts == {
        "none": "nothing",
        "sinusoidal": "input",
        "learned": "input",
        "rope": "q/k",
        "rope+pi": "q/k",
        "alibi": "scores",
        "t5": "scores",
    }
    assert POSITION_SCHEMES["rope+pi"].shares_training_with == "rope"
    assert all(
        cls.shares_training_with is None for n, cls in POSITION_SCHEMES.items() if n != "rope+pi"
    )


def test_parameters_added_by_eachmake_scheme():
    counts = {n: sum(p.numel() for p in make_scheme(n).parameters()) for n in POSITION_SCHEMES}
    assert counts == {n: 0 for n in POSITION_SCHEMES} | {"learned": 32 * 16, "t5": 32 * 2}


def test_none_adds_nothing_and_hooks_are_empty():
    scheme = make_scheme("none")
    x = torch.randn(2, 5, 16)
    assert torch.equal(scheme.embed(x), x)
    assert scheme.rotary(5) is None and scheme.bias(5, dtype=torch.float32) is None


def test_sinusoidal_adds_the_papers_table():
    scheme = make_scheme("sinusoidal")
    x = torch.zeros(1, 6, 16)
    got = scheme.embed(x)[0].double()  # [6, 16]
    p = torch.arange(6, dtype=torch.float64)[:, None]
    w = 10000.0 ** (-torch.arange(0, 16, 2, dtype=torch.float64) / 16)
    expected = torch.stack([torch.sin(p * w), torch.cos(p * w)], dim=-1).reshape(6, 16)
    torch.testing.assert_close(got, expected, atol=1e-6, rtol=0)
    assert scheme.embed(x).shape == x.shape
    assert scheme.embed(torch.zeros(1, 40, 16)).shape == (1, 40, 16)  # any length runs


def test_learned_adds_table_rows_and_refuses_past_max_len():
    scheme = make_scheme("learned", max_len=12)
    x = torch.randn(3, 7, 16)
    torch.testing.assert_close(scheme.embed(x), x + scheme.table.weight[:7])
    with pytest.raises(ValueError, match="max_len=12"):
        scheme.embed(torch.zeros(1, 13, 16))


def test_rope_rotates_q_and_k_like_the_formula():
    x = torch.randn(2, 2, 9, 8, dtype=torch.float64)
    got = make_scheme("rope", base=100.0).rotary(9)(x.float())
    expected = rotate_half_by_hand(x, torch.arange(9), 100.0)
    torch.testing.assert_close(got.double(), expected, atol=1e-5, rtol=1e-5)


def test_rope_matches_transformers_apply_rotary_pos_emb():
    from transformers.models.llama import modeling_llama as llama

    q, k = torch.randn(2, 2, 10, 8), torch.randn(2, 2, 10, 8)
    theta = 10000.0 ** (-torch.arange(0, 8, 2, dtype=torch.float64) / 8)
    freqs = torch.arange(10, dtype=torch.float64)[:, None] * theta  # [T, d/2]
    emb = torch.cat([freqs, freqs], dim=-1)  # [T, d], Hugging Face's duplicated layout
    cos, sin = emb.cos().float()[None], emb.sin().float()[None]  # [1, T, d]
    hf_q, hf_k = llama.apply_rotary_pos_emb(q, k, cos, sin)
    rotate = make_scheme("rope").rotary(10)
    torch.testing.assert_close(rotate(q), hf_q, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(rotate(k), hf_k, atol=1e-5, rtol=1e-5)


def test_rope_pi_is_rope_up_to_train_len_and_squeezes_positions_past_it():
    rope, pi = make_scheme("rope"), make_scheme("rope+pi")
    x = torch.randn(1, 2, 8, 8)
    torch.testing.assert_close(pi.rotary(8)(x), rope.rotary(8)(x), atol=0, rtol=0)
    # At T = 32 = 4·train_len the factor is 4: position 4m is turned like position m of plain RoPE.
    const = torch.randn(1, 2, 1, 8).expand(1, 2, 32, 8).contiguous()
    squeezed = pi.rotary(32)(const)[:, :, 0::4]  # positions 0, 4, 8, ...
    plain = rope.rotary(8)(const[:, :, :8])  # positions 0 .. 7
    torch.testing.assert_close(squeezed, plain, atol=1e-5, rtol=1e-5)
    # ... and by hand: angles m·θ_i / 4
    expected = rotate_half_by_hand(const.double(), torch.arange(32) / 4, 10000.0)
    torch.testing.assert_close(pi.rotary(32)(const).double(), expected, atol=1e-5, rtol=1e-5)


def test_alibi_bias_is_minus_slope_times_distance_with_causal_mask():
    scheme = POSITION_SCHEMES["alibi"](16, 4, max_len=8, train_len=8)
    got = scheme.bias(5, dtype=torch.float32)  # [4, 5, 5]
    slopes = [1 / 4, 1 / 16, 1 / 64, 1 / 256]  # 2^(-8k/4), k = 1..4
    for h, m in enumerate(slopes):
        for i in range(5):
            for j in range(5):
                expected = -m * (i - j) if j <= i else -math.inf
                assert got[h, i, j].item() == pytest.approx(expected)
    assert scheme.embed(torch.ones(1, 5, 16)).equal(torch.ones(1, 5, 16))


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"d_model": 15}, ValueError, "d_model"),
        ({"n_heads": 0}, ValueError, "n_heads"),
        ({"max_len": 4}, ValueError, "train_len"),
        ({"train_len": 0}, ValueError, "train_len"),
        ({"base": 0.0}, ValueError, "base"),
        ({"max_len": 8.0}, TypeError, "max_len"),
    ],
)
def test_scheme_constructor_errors(kwargs, error, match):
    args = {"d_model": 16, "n_heads": 2, "max_len": 32, "train_len": 8} | kwargs
    with pytest.raises(error, match=match):
        NoPositions(args.pop("d_model"), args.pop("n_heads"), **args)


def test_odd_sizes_are_refused_where_pairs_are_needed():
    SinusoidalPositions(6, 2, max_len=8, train_len=8)  # d_model 6: fine
    with pytest.raises(ValueError, match="d_model must be even"):
        SinusoidalPositions(3, 3, max_len=8, train_len=8)
    RotaryPositions(8, 2, max_len=8, train_len=8)  # d_head 4: fine
    with pytest.raises(ValueError, match="d_head"):
        RotaryPositions(6, 2, max_len=8, train_len=8)  # d_head 3
    with pytest.raises(ValueError, match="d_head"):
        InterpolatedRotaryPositions(6, 2, max_len=8, train_len=8)
    LearnedPositions(3, 3, max_len=8, train_len=8)  # no pairs needed
    ALiBiPositions(3, 3, max_len=8, train_len=8)


def test_t5_bias_is_the_bucket_table_shared_by_layers_with_a_causal_mask():
    scheme = make_scheme("t5")
    bias = scheme.bias(40, dtype=torch.float32)  # [H, T, T]
    table = scheme.table.relative_attention_bias.weight  # [32, H]
    i, j = torch.tril_indices(40, 40)
    buckets = t5_relative_position_bucket(
        j - i, bidirectional=False, num_buckets=32, max_distance=128
    )
    assert torch.equal(bias[:, i, j], table[buckets].T)
    assert torch.isneginf(bias[:, 0, 1:]).all() and torch.isneginf(bias[:, 5, 6:]).all()
    # distances 0..15 get their own bucket; 128 and beyond share the last one
    assert buckets[(i - j) < 16].tolist() == (i - j)[(i - j) < 16].tolist()
    assert t5_relative_position_bucket(
        torch.tensor([-128, -500]), bidirectional=False, num_buckets=32, max_distance=128
    ).tolist() == [31, 31]
    # initialised as transformers' T5 (std d_model^-0.5), not nn.Embedding's N(0, 1)
    wide = POSITION_SCHEMES["t5"](256, 64, max_len=8, train_len=8)
    std = wide.table.relative_attention_bias.weight.std().item()
    assert abs(std - 256**-0.5) < 0.1 * 256**-0.5
