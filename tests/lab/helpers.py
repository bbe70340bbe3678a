"""What the lab's tests share: a tiny configuration, scheme builders, reference models."""

from __future__ import annotations

import torch

from lib.lab import (
    POSITION_SCHEMES,
    LabConfig,
    TinyDecoder,
)

#: A lab small enough for unit tests (well under a second per training).
TINY = LabConfig(
    vocab_size=16,
    d_model=16,
    n_heads=2,
    n_layers=2,
    train_len=8,
    eval_multiples=(1, 2),
    steps=6,
    warmup_steps=2,
    batch_size=4,
    eval_sequences=6,
)


def make_scheme(name: str, **kwargs) -> torch.nn.Module:
    args = {"max_len": 32, "train_len": 8, "base": 10000.0} | kwargs
    return POSITION_SCHEMES[name](16, 2, **args)


def rotate_half_by_hand(x: torch.Tensor, positions: torch.Tensor, base: float) -> torch.Tensor:
    """RoPE in the "half" pairing from the formula, float64: pairs (i, i + d/2) turn by m·θ_i."""
    d = x.shape[-1]
    theta = base ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)  # [d/2]
    angle = positions.to(torch.float64)[:, None] * theta[None, :]  # [T, d/2]
    a, b = x[..., : d // 2].double(), x[..., d // 2 :].double()
    return torch.cat([a * angle.cos() - b * angle.sin(), b * angle.cos() + a * angle.sin()], -1)


class Oracle(TinyDecoder):
    """Predicts by the induction rule itself: the token after the previous occurrence."""

    def forward(self, input_ids):
        b, t = input_ids.shape
        logits = torch.zeros(b, t, self.vocab_size)
        for row in range(b):
            x = input_ids[row].tolist()
            n = next(j for j in range(1, t) if x[j] == x[0])
            for pos in range(n, t):
                logits[row, pos, x[pos - n + 1]] = 1.0
        return logits


class AlwaysZero(TinyDecoder):
    def forward(self, input_ids):
        logits = torch.zeros(*input_ids.shape, self.vocab_size)
        logits[..., 0] = 1.0
        return logits


TRAINABLE = ("none", "sinusoidal", "learned", "rope", "alibi", "t5")
