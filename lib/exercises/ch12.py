"""Checkers for chapter 12, "Positions in today's LLMs".

The expected answers are computed here from the formulas (θ_i = base^(−2i/d), R_Δ R_n = R_(n+Δ)),
not from the lib functions the chapter demonstrates.
"""

from __future__ import annotations

import math

import torch

from lib.exercises import exercise, require, require_int

CHAPTER = "12_positions_today"

#: Gemma 4 global layers (transformers default: head 512, base 1e6, 1/4 rotated); twice its context.
G4_HEAD, G4_BASE, G4_FRACTION, G4_CONTEXT = 512, 1_000_000.0, 0.25, 262144

#: Exercise 2: a key cached at position CACHED_AT moves to NEW_POS.
CACHED_AT, NEW_POS, D_KEY = 100, 60, 8


def _zeroed_pairs_that_would_turn() -> int:
    """Pairs p-RoPE zeroes (i >= fraction·d/2) whose full-head wavelength fits in the context."""
    k = int(G4_FRACTION * G4_HEAD // 2)
    return sum(
        2 * math.pi * G4_BASE ** (2 * i / G4_HEAD) <= G4_CONTEXT for i in range(k, G4_HEAD // 2)
    )


@exercise(
    "today-gemma4-turns",
    chapter=CHAPTER,
    wrong_answers=lambda: [192, 64, 0, _zeroed_pairs_that_would_turn() + 64, "134"],
    right_answer=_zeroed_pairs_that_would_turn,
)
def check_gemma4_turns(answer: int) -> None:
    """How many zeroed pairs of a Gemma 4 global layer would have turned within 262144 tokens.

    Args:
        answer: a count of pairs, an int.

    Raises:
        ExerciseFailed: the answer is wrong (the message says what to look at).
    """
    answer = require_int(answer, f"answer must be an int, got {type(answer).__name__} {answer!r}")
    require(answer != 192, "192 pairs are zeroed, but not all of them would turn: count them")
    require(answer != 64, "64 pairs rotate; the question asks about the zeroed ones (i >= 64)")
    require(
        answer != _zeroed_pairs_that_would_turn() + 64,
        "that counts every pair of the full head: leave out the 64 rotating ones",
    )
    require(
        answer == _zeroed_pairs_that_would_turn(),
        f"got {answer}: θ_i = 1e6^(-2i/512) for 64 <= i < 256; count i with 2π/θ_i <= 262144",
    )


def _key() -> torch.Tensor:
    return torch.linspace(-1.0, 1.0, D_KEY, dtype=torch.float64)


def cached_key() -> torch.Tensor:
    """Exercise 2's input: a key as a RoPE cache holds it, already rotated at position 100.

    Returns:
        R_100 k, float64 [8] (half pairing, base 10,000).
    """
    return _rotate(_key(), CACHED_AT)


def _rotate(x: torch.Tensor, pos: int) -> torch.Tensor:
    theta = 10000.0 ** (-torch.arange(0, D_KEY, 2, dtype=torch.float64) / D_KEY)
    a = pos * theta
    x1, x2 = x[: D_KEY // 2], x[D_KEY // 2 :]
    return torch.cat([x1 * a.cos() - x2 * a.sin(), x2 * a.cos() + x1 * a.sin()])


@exercise(
    "today-rerotate",
    chapter=CHAPTER,
    wrong_answers=lambda: [
        _rotate(_key(), CACHED_AT),
        _rotate(_key(), CACHED_AT + 40),
        _rotate(_rotate(_key(), CACHED_AT), NEW_POS),
        _key(),
    ],
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
        not torch.allclose(answer.double(), _rotate(_key(), CACHED_AT + NEW_POS), atol=1e-5),
        "that rotated the cached key by 60 more (to 160): it already carries R_100",
    )
    require(
        torch.allclose(answer.double(), expected, atol=1e-5),
        "rotate the cached key by Δ = 60 - 100 = -40 (lib.rope_cache.rerotate_keys)",
    )


#: Exercise 3: Llama 3.2 1B's released config (head 64, base 500,000; llama3 factor 32,
#: low_freq_factor 1, high_freq_factor 4, original 8,192 positions).
L32_HEAD, L32_BASE, L32_FACTOR, L32_ORIGINAL, L32_LOW, L32_HIGH = 64, 500_000.0, 32, 8192, 1.0, 4.0


def _llama3_wavelengths() -> list[float]:
    return [2 * math.pi * L32_BASE ** (2 * i / L32_HEAD) for i in range(L32_HEAD // 2)]


def _divided_by_factor() -> int:
    """Pairs whose wavelength exceeds original/low_freq_factor: llama3 divides them by the factor."""
    return sum(w > L32_ORIGINAL / L32_LOW for w in _llama3_wavelengths())


def _kept() -> int:
    """Pairs whose wavelength is below original/high_freq_factor: llama3 leaves them alone."""
    return sum(w < L32_ORIGINAL / L32_HIGH for w in _llama3_wavelengths())


@exercise(
    "today-llama3-divided",
    chapter=CHAPTER,
    wrong_answers=lambda: [_kept(), L32_HEAD // 2 - _kept(), 0, L32_HEAD // 2, "14"],
    right_answer=_divided_by_factor,
)
def check_llama3_divided(answer: int) -> None:
    """How many of Llama 3.2 1B's 32 pairs llama3 scaling divides by the full factor 32.

    Args:
        answer: a count of pairs, an int.

    Raises:
        ExerciseFailed: the answer is wrong (the message says what to look at).
    """
    answer = require_int(answer, f"answer must be an int, got {type(answer).__name__} {answer!r}")
    require(
        answer != _kept(),
        "that counts the pairs llama3 leaves alone (wavelength < 8192/4): the question asks for "
        "the ones divided by 32",
    )
    require(
        answer != L32_HEAD // 2 - _kept(),
        "that includes the band between 2,048 and 8,192 tokens, which is interpolated, not divided",
    )
    require(
        answer == _divided_by_factor(),
        f"got {answer}: θ_i = 500000^(-2i/64); count the pairs with 2π/θ_i > 8192/1",
    )
