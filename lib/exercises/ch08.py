"""Checkers for chapter 8, "Rotary position embedding (RoPE)".

The expected values are computed here from the formulas (θ_i = base^(−2i/d_head), rotations in
float64), independently of what the reader calls; :mod:`lib.rope` is used only to build wrong
answers and test inputs.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable

import torch

from lib.exercises import exercise
from lib.rope import (
    apply_rope,
    interleaved_to_half_permutation,
    permute_qk_weight_hf_to_meta,
    rope_angles,
    rope_inv_freq,
)

CHAPTER = "08_rope"


def _is_number(answer: object) -> bool:
    return isinstance(answer, numbers.Real) and not isinstance(answer, bool)


# --------------------------------------------------------------------------------------------------
# 1. The slowest wavelength of Llama 3 (d_head = 128, base 500,000)
# --------------------------------------------------------------------------------------------------


def _slowest_wavelength(d_head: int = 128, base: float = 500_000.0) -> float:
    """The last pair i = d/2 − 1 turns by base^(−(d−2)/d) per token; a turn is 2π radians."""
    return 2 * math.pi * base ** ((d_head - 2) / d_head)


@exercise(
    "ch08-wavelength",
    chapter=CHAPTER,
    wrong_answers=lambda: [
        2 * math.pi * 500_000.0,
        500_000.0 ** (126 / 128),
        2 * math.pi * 10_000.0 ** (126 / 128),
        2 * math.pi * 500_000.0 ** (127 / 128),
        2 * math.pi,
        "2.5e6",
    ],
)
def check_wavelength(answer: float) -> None:
    """Tokens per full turn of the slowest pair of a d_head = 128, base 500,000 head."""
    assert _is_number(answer), f"answer must be a number of tokens, got {type(answer).__name__}"
    answer = float(answer)
    right = _slowest_wavelength()
    if math.isclose(answer, right, rel_tol=1e-5):
        return
    hints = {
        2 * math.pi * 500_000.0: (
            "2π·base would need the exponent 2i/d_head to reach 1, but the last pair is "
            "i = 63, so the exponent is 126/128"
        ),
        right / (2 * math.pi): "that is 1/θ in tokens per radian; a full turn is 2π radians",
        _slowest_wavelength(128, 10_000.0): "that is base 10,000 (LLaMA); Llama 3 uses 500,000",
        2 * math.pi * 500_000.0 ** (127 / 128): (
            "i counts pairs, not dimensions: the slowest pair is i = 63, so 2i = 126"
        ),
    }
    for value, hint in hints.items():
        if math.isclose(answer, value, rel_tol=1e-5):
            raise AssertionError(hint)
    raise AssertionError(
        f"{answer:,.6g} tokens is not it; the slowest pair turns by θ = base^(−2i/d_head) "
        "radians per token with i = d_head/2 − 1, and a full turn is 2π radians"
    )


# --------------------------------------------------------------------------------------------------
# 2. A score from the offset alone
# --------------------------------------------------------------------------------------------------


def _rotate_half_pairs(x: torch.Tensor, position: int, base: float = 10000.0) -> torch.Tensor:
    """R_position x in the half pairing, from the definition, in float64: ``x: [d]`` -> ``[d]``."""
    d = x.shape[-1]
    half = d // 2
    theta = base ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)  # [d/2]
    c, s = torch.cos(position * theta), torch.sin(position * theta)
    xa, xb = x[:half].double(), x[half:].double()
    return torch.cat([xa * c - xb * s, xb * c + xa * s])


def _true_score(q: torch.Tensor, k: torch.Tensor, m: int, n: int) -> float:
    return float(_rotate_half_pairs(q, m) @ _rotate_half_pairs(k, n))


def _score_cases() -> list[tuple[torch.Tensor, torch.Tensor, int, int]]:
    g = torch.Generator().manual_seed(8)
    cases = []
    for d in (8, 64):
        q, k = torch.randn(2, d, generator=g)
        for m, n in ((0, 0), (5, 2), (2, 5), (1000, 7), (7, 1000), (4000, 3990)):
            cases.append((q, k, m, n))
    return cases


def _score_via_lib(q: torch.Tensor, k: torch.Tensor, delta: int, pairing: str) -> float:
    angles = rope_angles(torch.tensor([delta]), rope_inv_freq(q.shape[-1]))
    return (apply_rope(q[None], angles.cos(), angles.sin(), pairing=pairing)[0] @ k).item()


@exercise(
    "ch08-relative-score",
    chapter=CHAPTER,
    wrong_answers=lambda: [
        lambda q, k, delta: (q @ k).item(),
        lambda q, k, delta: _score_via_lib(q, k, -delta, "half"),
        lambda q, k, delta: _score_via_lib(q, k, delta, "interleaved"),
        lambda q, k, delta: _score_via_lib(q, k, abs(delta), "half"),
        3.0,
    ],
)
def check_relative_score(answer: Callable[[torch.Tensor, torch.Tensor, int], float]) -> None:
    """``answer(q, k, delta)`` must equal ⟨R_m q, R_n k⟩ (half pairing, base 10,000), m − n = delta."""
    assert callable(answer), (
        f"answer must be a function score(q, k, delta), got {type(answer).__name__}"
    )
    for q, k, m, n in _score_cases():
        got = answer(q.clone(), k.clone(), m - n)
        if isinstance(got, torch.Tensor) and got.numel() == 1:
            got = got.item()
        assert _is_number(got), f"score must return a float, got {type(got).__name__}"
        want = _true_score(q, k, m, n)
        if math.isclose(float(got), want, rel_tol=1e-4, abs_tol=1e-4):
            continue
        if math.isclose(float(got), _true_score(q, k, n, m), rel_tol=1e-4, abs_tol=1e-4):
            raise AssertionError(
                f"for delta = {m - n} you computed the score for delta = {n - m}: the rotation "
                "goes the wrong way (⟨R_m q, R_n k⟩ = ⟨R_(m−n) q, k⟩)"
            )
        if math.isclose(float(got), float(q.double() @ k.double()), rel_tol=1e-4, abs_tol=1e-4):
            raise AssertionError(
                f"for delta = {m - n} you returned q·k: the rotations do not cancel, only the "
                "common part R_n does"
            )
        raise AssertionError(
            f"score(q, k, {m - n}) = {float(got):.5f} for d = {q.shape[-1]}, but "
            f"⟨R_{m} q, R_{n} k⟩ = {want:.5f} (half pairing (i, i + d/2), base 10,000)"
        )


# --------------------------------------------------------------------------------------------------
# 3. Meta -> Hugging Face weight permutation
# --------------------------------------------------------------------------------------------------


def _expected_hf(w: torch.Tensor, n_heads: int) -> torch.Tensor:
    """Row 2i + j of each head moves to row j·d/2 + i, written as an explicit loop."""
    d_head = w.shape[0] // n_heads
    out = torch.empty_like(w)
    for h in range(n_heads):
        for i in range(d_head // 2):
            for j in (0, 1):
                out[h * d_head + j * d_head // 2 + i] = w[h * d_head + 2 * i + j]
    return out


def _whole_matrix_permutation(w: torch.Tensor, n_heads: int) -> torch.Tensor:
    """A realistic bug: one permutation over all rows, ignoring the heads."""
    return w[interleaved_to_half_permutation(w.shape[0])]


@exercise(
    "ch08-meta-to-hf",
    chapter=CHAPTER,
    wrong_answers=lambda: [
        lambda w, n_heads: w,
        lambda w, n_heads: permute_qk_weight_hf_to_meta(w, n_heads),
        _whole_matrix_permutation,
        lambda w, n_heads: w.flip(0),
        "w[perm]",
    ],
)
def check_meta_to_hf(answer: Callable[[torch.Tensor, int], torch.Tensor]) -> None:
    """``answer(w, n_heads)`` must reorder each head's rows from (2i, 2i+1) to (i, i + d/2)."""
    assert callable(answer), (
        f"answer must be a function convert(w, n_heads), got {type(answer).__name__}"
    )
    g = torch.Generator().manual_seed(3)
    for n_heads, d_head, d_in in ((1, 8, 3), (4, 16, 5), (3, 4, 2)):
        w = torch.randn(n_heads * d_head, d_in, generator=g)
        got = answer(w.clone(), n_heads)
        assert isinstance(got, torch.Tensor) and got.shape == w.shape, (
            f"convert must return a tensor of shape {list(w.shape)}, got "
            f"{list(got.shape) if isinstance(got, torch.Tensor) else type(got).__name__}"
        )
        want = _expected_hf(w, n_heads)
        if torch.equal(got, want):
            continue
        if torch.equal(got, w):
            raise AssertionError("the rows are unchanged: nothing was permuted")
        if n_heads > 1 and torch.equal(got, _whole_matrix_permutation(w, n_heads)):
            raise AssertionError(
                f"with n_heads = {n_heads} you permuted all {w.shape[0]} rows at once; the "
                "permutation must act inside each head's block of d_head rows"
            )
        if torch.equal(got, permute_qk_weight_hf_to_meta(w, n_heads)):
            raise AssertionError(
                "that is the inverse (Hugging Face -> Meta): in the result, row j·d/2 + i of a "
                "head must be Meta's row 2i + j"
            )
        raise AssertionError(
            f"for n_heads = {n_heads}, d_head = {d_head}: row j·d/2 + i of each head must be "
            "the Meta row 2i + j (j = 0, 1)"
        )


# --------------------------------------------------------------------------------------------------
# 4. The width of a bfloat16 step near 30,000
# --------------------------------------------------------------------------------------------------


@exercise(
    "ch08-bf16-step",
    chapter=CHAPTER,
    wrong_answers=lambda: [512, 256, 64, 1, 128.5, "128"],
)
def check_bf16_step(answer: int) -> None:
    """The spacing of bfloat16 numbers in [2^14, 2^15): 2^(14 − 7) = 128."""
    assert isinstance(answer, numbers.Integral) and not isinstance(answer, bool), (
        f"answer must be an int (tokens), got {type(answer).__name__}"
    )
    right = 2 ** (14 - 7)  # 8 significant bits: 7 stored after the implicit leading one
    answer = int(answer)
    if answer == right:
        return
    if answer == 512:
        raise AssertionError("512 is the step near 100,000; 30,000 lies between 2^14 and 2^15")
    if answer == 2 * right:
        raise AssertionError("30,000 is below 2^15 = 32,768, so its exponent is 14, not 15")
    if answer == right // 2:
        raise AssertionError(
            "8 significant bits include the implicit leading one: 7 bits follow it, so the step "
            "is 2^(exponent − 7)"
        )
    raise AssertionError(
        f"{answer} is not it; a number in [2^e, 2^(e+1)) with 8 significant bits has steps of "
        "2^(e − 7)"
    )
