"""Checkers for chapter 6, "Sinusoidal positional encoding"."""

from __future__ import annotations

import inspect
import math
import sys
import types
from collections.abc import Callable
from typing import TypeVar

import torch

from lib.exercises import ExerciseFailed, exercise, require, require_function, require_real
from lib.sinusoidal import relative_rotation, sinusoidal_pe, sinusoidal_pe_concat

CHAPTER = "06_sinusoidal"


D_EXERCISE = 256  # not a width the chapter prints, so the answer must be computed


def _slowest_wavelength(d_model: int = D_EXERCISE, base: float = 10000.0) -> float:
    """Paper layout: the last pair i = d/2 − 1 has w = base^(−(d−2)/d), wavelength 2π/w."""
    return 2 * math.pi * base ** ((d_model - 2) / d_model)


@exercise(
    "ch06-wavelength",
    chapter=CHAPTER,
    wrong_answers=lambda: [
        2 * math.pi * 10000.0,
        10000.0 ** (254 / 256),
        2 * math.pi * 10000.0 ** (255 / 256),
        2 * math.pi * 10000.0 ** (510 / 512),  # the chapter's d_model = 512
        2 * math.pi,
        "62000",
    ],
    right_answer=lambda: round(_slowest_wavelength()),
)
def check_wavelength(answer: float) -> None:
    """Slowest wavelength (in tokens) of the paper's encoding for d_model = 256, base = 10000.

    Args:
        answer: the wavelength in tokens, a real number.

    Raises:
        ExerciseFailed: the answer is wrong (the message says what to look at).
    """
    answer = require_real(answer, f"answer must be a number (tokens), got {type(answer).__name__}")
    right = _slowest_wavelength()
    if math.isclose(answer, right, rel_tol=1e-5):  # the nearest token is accepted
        return
    if math.isclose(answer, 2 * math.pi * 10000.0, rel_tol=1e-6):
        raise ExerciseFailed(
            "2π·10000 would need the exponent 2i/d_model to reach 1; but the last pair is "
            "i = d_model/2 − 1, so 2i = d_model − 2 (2π·10000 is the concat layout's value)"
        )
    if math.isclose(answer, right / (2 * math.pi), rel_tol=1e-6):
        raise ExerciseFailed("that is 1/w, in radians; a full turn takes 2π radians")
    if math.isclose(answer, 2 * math.pi * 10000.0 ** (255 / 256), rel_tol=1e-6):
        raise ExerciseFailed(
            "i counts pairs, not dimensions: the slowest pair is i = 127, so 2i = 254"
        )
    if math.isclose(answer, _slowest_wavelength(512), rel_tol=1e-5):
        raise ExerciseFailed("that is the value for d_model = 512; this exercise uses 256")
    raise ExerciseFailed(
        f"{answer:.6g} tokens is not it; the slowest pair turns by w = base^(−2i/d_model) "
        "radians per token, and a full turn is 2π radians"
    )


def _shift_cases() -> list[tuple[int, int, int]]:
    """(d_model, p, k) triples; k covers backwards, zero, small and large shifts."""
    return [
        (d, p, k) for d in (8, 64) for p in (0, 3, 250) for k in (-3, 0, 1, 5, 100) if p + k >= 0
    ]


def _shift_by_angle_addition(row: torch.Tensor, k: int) -> torch.Tensor:
    """PE(p + k) from PE(p): sin/cos of (p + k) w_i by the angle-addition formulas."""
    d = row.shape[-1]
    w = 10000.0 ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)
    s, c = row[0::2].double(), row[1::2].double()
    ck, sk = torch.cos(k * w), torch.sin(k * w)
    out = torch.empty(d, dtype=torch.float64)
    out[0::2] = s * ck + c * sk
    out[1::2] = c * ck - s * sk
    return out.to(row.dtype)


_SINUSOIDAL_FILE = inspect.getsourcefile(relative_rotation)
_R = TypeVar("_R")


def _calls_lib_sinusoidal(fn: Callable[..., _R], *args: object) -> tuple[_R, bool]:
    """Run ``fn(*args)``; also say whether any Python function of ``lib/sinusoidal.py`` ran."""
    seen = False

    def profile(frame: types.FrameType, event: str, arg: object) -> None:
        nonlocal seen
        if event == "call" and frame.f_code.co_filename == _SINUSOIDAL_FILE:
            seen = True

    previous = sys.getprofile()
    sys.setprofile(profile)
    try:
        result = fn(*args)
    finally:
        sys.setprofile(previous)
    return result, seen


@exercise(
    "ch06-shift",
    chapter=CHAPTER,
    wrong_answers=lambda: [
        lambda row, k: row,
        lambda row, k: _shift_by_angle_addition(row, -k),
        lambda row, k: row + k,
        lambda row, k: torch.roll(row, 2 * k),
        lambda row, k: relative_rotation(k, row.shape[-1]) @ row,  # right, but the library's
        42,
    ],
    right_answer=lambda: _shift_by_angle_addition,
)
def check_shift(answer: Callable[[torch.Tensor, int], torch.Tensor]) -> None:
    """``answer(pe_row, k)`` must return PE(p + k) from PE(p) alone (paper layout, base 10000).

    Args:
        answer: the reader's function ``shift(pe_row, k)``, returning a tensor ``[d_model]``.

    Raises:
        ExerciseFailed: the answer is wrong (the message says what to look at).
    """
    require_function(answer, "shift(pe_row, k)")
    tables = {d: sinusoidal_pe(400, d) for d in (8, 64)}
    for d, p, k in _shift_cases():
        row = tables[d][p].clone()
        got, used_lib = _calls_lib_sinusoidal(answer, row, k)
        require(
            not used_lib,
            "shift called a function of lib.sinusoidal: derive PE(p + k) yourself from the "
            "angle-addition formulas, sin((p+k)w) = sin(pw)cos(kw) + cos(pw)sin(kw) and "
            "cos((p+k)w) = cos(pw)cos(kw) − sin(pw)sin(kw)",
        )
        require(
            isinstance(got, torch.Tensor) and got.shape == (d,),
            f"shift must return a tensor of shape [d_model] = [{d}], got "
            f"{list(got.shape) if isinstance(got, torch.Tensor) else type(got).__name__}",
        )
        want = tables[d][p + k]
        if torch.allclose(got.float(), want, atol=1e-4, rtol=0):
            continue
        backwards = relative_rotation(-k, d) @ row  # PE(p − k)
        if k != 0 and torch.allclose(got.float(), backwards, atol=1e-4, rtol=0):
            raise ExerciseFailed(
                f"for k = {k} you moved to position p − k: the rotation goes the wrong way "
                "(M_k is [[cos, sin], [−sin, cos]] per pair for the (sin, cos) order)"
            )
        raise ExerciseFailed(
            f"shift(PE({p}), {k}) is not PE({p + k}) for d_model = {d}; each (sin, cos) pair "
            "must turn by k·w_i (the angle-addition formulas)"
        )


def _interleave_perm(d_model: int) -> torch.Tensor:
    half = d_model // 2
    return torch.stack([torch.arange(half), torch.arange(half) + half], dim=1).flatten()


@exercise(
    "ch06-concat-perm",
    chapter=CHAPTER,
    wrong_answers=lambda: [
        list(range(8)),
        [0, 2, 4, 6, 1, 3, 5, 7],
        [4, 0, 5, 1, 6, 2, 7, 3],
        [0, 4, 1, 5, 2, 6, 3],
        "0 4 1 5 2 6 3 7",
    ],
    right_answer=lambda: [0, 4, 1, 5, 2, 6, 3, 7],
)
def check_concat_perm(answer: list[int] | torch.Tensor) -> None:
    """Column order ``perm`` (d_model = 8) such that ``concat[:, perm]`` is in (sin, cos) pairs.

    Args:
        answer: 8 column indices, a list or an integer tensor.

    Raises:
        ExerciseFailed: the answer is wrong (the message says what to look at).
    """
    require(
        isinstance(answer, list | tuple | torch.Tensor),
        f"answer must be a list or tensor of 8 column indices, got {type(answer).__name__}",
    )
    perm = torch.as_tensor(answer)
    require(
        perm.dtype in (torch.int64, torch.int32, torch.int16, torch.int8, torch.uint8),
        f"answer must hold integers (column indices), got dtype {perm.dtype}",
    )
    require(
        perm.shape == (8,),
        f"answer must have 8 entries (one per column), got {list(perm.shape)}",
    )
    require(
        sorted(perm.tolist()) == list(range(8)),
        f"answer must use every column 0..7 exactly once, got {perm.tolist()}",
    )
    want = _interleave_perm(8)
    if torch.equal(perm.long(), want):
        table = sinusoidal_pe_concat(20, 8)[:, want]  # [20, 8], now (sin_i, cos_i) pairs
        require(
            torch.allclose(table[:, 0::2] ** 2 + table[:, 1::2] ** 2, torch.ones(20, 4)),
            "internal check failed",
        )
        return
    if torch.equal(perm.long(), torch.argsort(want)):
        raise ExerciseFailed(
            "that is the inverse permutation: it turns the interleaved layout into the concat one. "
            "Column j of the result is column perm[j] of the concat table"
        )
    raise ExerciseFailed(
        f"concat[:, {perm.tolist()}] does not put sin_i and cos_i next to each other; "
        "in the concat table sin_i is column i and cos_i is column 4 + i"
    )
