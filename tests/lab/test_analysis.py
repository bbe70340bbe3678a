"""Tests for lib/lab/analysis.py (the length-extrapolation lab)."""

from __future__ import annotations

import pytest
import torch

from lib.lab import (
    DecoderEnsemble,
    head_scores,
    pair_norm_share,
)
from lib.rope import apply_rope, rope_angles, rope_inv_freq

from .helpers import TINY


def test_pair_norm_share_pinned_sums_to_one_and_ignores_rotation():
    q = torch.tensor([[3.0, 0.0, 4.0, 1.0]])  # pairs (0, 2) and (1, 3): norms 5 and 1
    k = torch.tensor([[1.0, 2.0, 0.0, 0.0]])  # norms 1 and 2
    torch.testing.assert_close(pair_norm_share(q, k), torch.tensor([5 / 7, 2 / 7]))
    x = torch.randn(2, 3, 10, 16, generator=torch.Generator().manual_seed(0))
    y = torch.randn(2, 3, 10, 16, generator=torch.Generator().manual_seed(1))
    share = pair_norm_share(x, y)
    assert share.shape == (2, 3, 8)
    torch.testing.assert_close(share.sum(-1), torch.ones(2, 3))
    angles = rope_angles(torch.arange(10), rope_inv_freq(16, 100.0))
    cos, sin = angles.cos(), angles.sin()
    rotated = pair_norm_share(apply_rope(x, cos, sin), apply_rope(y, cos, sin))
    torch.testing.assert_close(rotated, share, atol=1e-5, rtol=1e-5)
    with pytest.raises(ValueError, match="d even"):
        pair_norm_share(x[..., :3], y[..., :3])
    with pytest.raises(TypeError, match="q"):
        pair_norm_share(torch.ones(2, 4, dtype=torch.long), y)


def test_head_scores_shapes_and_ranges():
    ensemble = DecoderEnsemble("rope", TINY, (0, 1))
    scores, records = head_scores(ensemble, n_sequences=4)
    shape = (2, TINY.n_layers, TINY.n_heads)
    assert scores.previous_token.shape == scores.induction.shape == shape
    for values in (scores.previous_token, scores.induction):
        assert ((values >= 0) & (values <= 1 + 1e-6)).all()
    assert len(records) == TINY.n_layers
    torch.testing.assert_close(records[0].weights.sum(-1), torch.ones(2, 4, 2, 8))
