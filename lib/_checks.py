"""Argument checks shared by every public function of :mod:`lib`.

Each helper raises ``TypeError`` (wrong kind of value) or ``ValueError`` (right kind, wrong value)
with a message that names the argument and says what was expected, so that a reader who passes
bad input sees the problem at the call, not deep inside torch.
"""

from __future__ import annotations

import numbers

import torch


def check_int(name: str, value: object, *, minimum: int | None = None) -> int:
    """Return ``value`` as an int; it must be an integer (not bool) and at least ``minimum``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an int, got {type(value).__name__} {value!r}")
    value = int(value)
    if minimum is not None and value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}")
    return value


def check_positive_int(name: str, value: object) -> int:
    """Return ``value`` as an int; it must be an integer >= 1."""
    return check_int(name, value, minimum=1)


def check_even(name: str, value: object) -> int:
    """Return ``value`` as an int; it must be a positive even integer (e.g. a head dimension)."""
    value = check_positive_int(name, value)
    if value % 2:
        raise ValueError(f"{name} must be even (dimensions are rotated in pairs), got {value}")
    return value


def check_positive_float(name: str, value: object, *, allow_zero: bool = False) -> float:
    """Return ``value`` as a float; it must be a finite real number > 0 (or >= 0)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__} {value!r}")
    value = float(value)
    if value != value or value in (float("inf"), float("-inf")):
        raise ValueError(f"{name} must be finite, got {value}")
    if value < 0 or (value == 0 and not allow_zero):
        bound = ">= 0" if allow_zero else "> 0"
        raise ValueError(f"{name} must be {bound}, got {value}")
    return value


def check_tensor(name: str, value: object) -> torch.Tensor:
    """Return ``value`` if it is a ``torch.Tensor``; otherwise raise ``TypeError``."""
    if not isinstance(value, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(value).__name__}")
    return value


def check_floating(name: str, value: object) -> torch.Tensor:
    """Return ``value`` if it is a floating-point tensor."""
    value = check_tensor(name, value)
    if not value.is_floating_point():
        raise TypeError(f"{name} must be a floating-point tensor, got dtype {value.dtype}")
    return value


def check_integer_tensor(name: str, value: object) -> torch.Tensor:
    """Return ``value`` if it is an integer-dtype tensor (positions, token ids)."""
    value = check_tensor(name, value)
    if value.is_floating_point() or value.is_complex() or value.dtype == torch.bool:
        raise TypeError(
            f"{name} must be an integer tensor (e.g. torch.long), got dtype {value.dtype}"
        )
    return value


def check_ndim(name: str, value: torch.Tensor, *, minimum: int) -> torch.Tensor:
    """Raise ``ValueError`` unless ``value`` has at least ``minimum`` dimensions."""
    if value.dim() < minimum:
        raise ValueError(
            f"{name} must have at least {minimum} dimension(s), got shape {tuple(value.shape)}"
        )
    return value


def check_choice(name: str, value: object, choices: tuple[str, ...]) -> str:
    """Raise ``ValueError`` unless ``value`` is one of ``choices``."""
    if value not in choices:
        raise ValueError(f"{name} must be one of {choices}, got {value!r}")
    return value  # type: ignore[return-value]
