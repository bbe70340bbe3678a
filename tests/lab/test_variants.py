"""Tests for lib/lab/variants.py (the length-extrapolation lab)."""

from __future__ import annotations

import pytest
import torch

from lib.lab import (
    DYNAMIC_FACTOR,
    ZERO_SHOT_SCALING,
    scaled_rope_frequencies,
)
from lib.rope_scaling import ROPE_SCALING


def test_scaled_rope_frequencies_follow_the_registry():
    d, base, L = 16, 10000.0, 32
    theta, _ = ROPE_SCALING["default"](d, base)
    for method in ZERO_SHOT_SCALING:  # up to L every method is plain RoPE
        inv, factor = scaled_rope_frequencies(method, d, base, seq_len=L, train_len=L)
        assert torch.equal(inv, theta) and factor == 1.0
    inv, _ = scaled_rope_frequencies("linear", d, base, seq_len=4 * L, train_len=L)
    torch.testing.assert_close(inv, theta / 4)
    inv, factor = scaled_rope_frequencies("yarn", d, base, seq_len=4 * L, train_len=L)
    expected = ROPE_SCALING["yarn"](d, base, factor=4.0, original_max_position_embeddings=L)
    assert torch.equal(inv, expected[0]) and factor == expected[1]
    stretch = (theta / inv).tolist()  # YaRN at s = 4 with 8 pairs: pair 0 kept, 2+ interpolated
    assert stretch[0] == pytest.approx(1.0) and 1.0 < stretch[1] < 4.0
    assert stretch[2:] == pytest.approx([4.0] * 6)
    inv, _ = scaled_rope_frequencies("dynamic", d, base, seq_len=2 * L, train_len=L)
    new_base = base * (DYNAMIC_FACTOR * 2 - (DYNAMIC_FACTOR - 1)) ** (d / (d - 2))
    torch.testing.assert_close(inv, ROPE_SCALING["default"](d, new_base)[0])
    with pytest.raises(ValueError, match="method"):
        scaled_rope_frequencies("longrope", d, base, seq_len=64, train_len=L)
