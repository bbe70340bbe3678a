"""Checkers for chapter 12, "Positions in today's LLMs".

The expected answers are computed here from the formulas (θ_i = base^(−2i/d), R_Δ R_n = R_(n+Δ)),
not from the lib functions the chapter demonstrates.
"""

from __future__ import annotations

import math

import torch

from lib.exercises import exercise, require, require_int

CHAPTER = "12_positions_today"

#: Gemma 4's global layers in transformers' default configuration: head 512, base 1e6, 1/4 rotated.
G4_HEAD, G4_BASE, G4_FRACTION, G4_CONTEXT = 512, 1_000_000.0, 0.25, 131072

#: Exercise 2: a key cached at position CACHED_AT moves to NEW_POS.
CACHED_AT, NEW_POS, D_KEY = 100, 60, 8


def _gemma4_turning_pairs() -> int:
    k = int(G4_FRACTION * G4_HEAD // 2)
    return sum(2 * math.pi * G4_BASE ** (2 * i / G4_HEAD) <= G4_CONTEXT for i in range(k))


@exercise(
    "today-gemma4-turns",
    chapter=CHAPTER,
    wrong_answers=lambda: [256, 0, 32, _gemma4_turning_pairs() - 1, "64"],
    right_answer=_gemma4_turning_pairs,
)
def check_gemma4_turns(answer: int) -> None:
    """How many pairs of a Gemma 4 global layer complete a full turn within 131072 tokens.

    Args:
        answer: a count of pairs, an int.

    Raises:
        ExerciseFailed: the answer is wrong (the message says what to look at).
    """
    answer = require_int(answer, f"answer must be an int, got {type(answer).__name__} {answer!r}")
    require(answer != 256, "the head has 256 pairs, but the zeroed ones never turn (θ = 0)")
    require(answer != 0, "compute the slowest rotating pair's wavelength 2π/θ_63: is it > 131072?")
    require(
        answer == _gemma4_turning_pairs(),
        f"got {answer}: θ_i = 1e6^(-2i/512) for i < 64; count i with 2π/θ_i <= 131072",
    )


def _key() -> torch.Tensor:
    return torch.linspace(-1.0, 1.0, D_KEY, dtype=torch.float64)


def _rotate(x: torch.Tensor, pos: int) -> torch.Tensor:
    theta = 10000.0 ** (-torch.arange(0, D_KEY, 2, dtype=torch.float64) / D_KEY)
    a = pos * theta
    x1, x2 = x[: D_KEY // 2], x[D_KEY // 2 :]
    return torch.cat([x1 * a.cos() - x2 * a.sin(), x2 * a.cos() + x1 * a.sin()])


@exercise(
    "today-rerotate",
    chapter=CHAPTER,
    wrong_answers=lambda: [_rotate(_key(), CACHED_AT), _rotate(_key(), CACHED_AT + 40), _key()],
    right_answer=lambda: _rotate(_key(), NEW_POS),
)
def check_rerotate(answer: torch.Tensor) -> None:
    """The cached key of position 100 moved to position 60 by one more rotation.

    Args:
        answer: the moved key, a float tensor [8].

    Raises:
        ExerciseFailed: the answer is wrong (the message says what to look at).
    """
    require(
        isinstance(answer, torch.Tensor), f"answer must be a tensor, got {type(answer).__name__}"
    )
    require(
        answer.shape == (D_KEY,), f"answer must have shape [{D_KEY}], got {tuple(answer.shape)}"
    )
    expected = _rotate(_key(), NEW_POS)
    require(
        not torch.allclose(answer.double(), _rotate(_key(), CACHED_AT + 40), atol=1e-5),
        "that moved the key to 140: Δ is new position minus old, negative here",
    )
    require(
        torch.allclose(answer.double(), expected, atol=1e-5),
        "rotate the cached key by Δ = 60 - 100 = -40 (lib.rope_cache.rerotate_keys)",
    )
