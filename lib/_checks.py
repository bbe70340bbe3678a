"""Argument checks shared by every public function of :mod:`lib`.

Each helper raises ``TypeError`` (wrong kind of value) or ``ValueError`` (right kind, wrong value)
with a message that names the argument and says what was expected, so that a reader who passes
bad input sees the problem at the call, not deep inside torch.
"""

from __future__ import annotations

import math
import numbers
import os

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


def check_float(
    name: str, value: object, *, minimum: float | None = None, maximum: float | None = None
) -> float:
    """Return ``value`` as a float; it must be a finite real number in ``[minimum, maximum]``.

    Accepts Python and numpy reals (anything registered as :class:`numbers.Real`), not bools.

    Args:
        name: the argument's name, for the message.
        value: the value to check.
        minimum: the smallest allowed value (inclusive), or None for no lower bound.
        maximum: the largest allowed value (inclusive), or None for no upper bound.

    Returns:
        ``float(value)``.

    Raises:
        TypeError: ``value`` is not a real number.
        ValueError: ``value`` is NaN or ±inf, or outside ``[minimum, maximum]``.
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__} {value!r}")
    value = float(value)
    if not math.isfinite(value):
        raise ValueError(f"{name} must be finite, got {value}")
    if minimum is not None and value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}")
    if maximum is not None and value > maximum:
        raise ValueError(f"{name} must be <= {maximum}, got {value}")
    return value


def check_index(name: str, value: object, size: int) -> int:
    """Return ``value`` as an int; it must be an integer index into ``size`` items, ``0 <= value < size``.

    Accepts Python and numpy integers (:class:`numbers.Integral`), not bools.

    Args:
        name: the argument's name, for the message.
        value: the value to check.
        size: the number of items indexed (``value`` must be below it).

    Returns:
        ``int(value)``.

    Raises:
        TypeError: ``value`` is not an integer.
        ValueError: ``value`` is outside ``[0, size - 1]``.
    """
    value = check_int(name, value)
    if not 0 <= value < size:
        raise ValueError(f"{name} must be in [0, {size - 1}], got {value}")
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


def check_positions(name: str, positions: object) -> torch.Tensor:
    """Return ``positions`` if it is a position tensor: integer, or float32/float64 (fractional).

    Fractional positions appear in position interpolation (Chen et al., arXiv:2306.15595). 16-bit
    floats are refused: bfloat16 cannot even represent 257, so the damage would be done before any
    rotary function sees the positions.

    Args:
        name: the argument's name, for the message.
        positions: the value to check.

    Returns:
        ``positions``, unchanged.

    Raises:
        TypeError: not a tensor, or a dtype other than an integer, float32 or float64.
    """
    positions = check_tensor(name, positions)
    if positions.is_floating_point():
        if positions.dtype not in (torch.float32, torch.float64):
            raise TypeError(
                f"{name} must be an integer tensor or float32/float64, got dtype "
                f"{positions.dtype} (16-bit floats cannot represent large positions exactly)"
            )
    else:
        check_integer_tensor(name, positions)
    return positions


def _first_out_of_range(index: torch.Tensor, size: int) -> int | None:
    """The lowest entry of ``index`` if it is negative, else the highest if it is ``>= size``, else
    None; None also where values are not read (empty, or not on the CPU: :func:`values_checkable`)."""
    if index.numel() == 0 or not values_checkable(index):
        return None
    lowest, highest = int(index.min()), int(index.max())
    if lowest < 0:
        return lowest
    return highest if highest >= size else None


def check_index_range(
    name: str, index: torch.Tensor, size: int, *, what: str = "index", size_name: str = "size"
) -> torch.Tensor:
    """Raise ``ValueError`` if an entry of the integer tensor ``index`` is outside ``0 .. size-1``.

    The range check for rows of a table other than a vocabulary (e.g. learned positions; token ids
    use :func:`check_token_ids`). A value check, so CPU only (:func:`values_checkable`): a meta
    tensor has no values, and reading a CUDA tensor's range would wait for the device on every call
    (there an index out of range still fails, inside ``F.embedding``).

    Args:
        name: the argument's name, for the message (e.g. ``"positions"``).
        index: an integer tensor of any shape.
        size: the number of rows of the table.
        what: what one entry is, for the message (e.g. ``"position"``).
        size_name: the name of ``size``, for the message (e.g. ``"max_len"``).

    Returns:
        ``index``, unchanged.

    Raises:
        ValueError: an entry is negative or ``>= size``; the message reads e.g.
            ``positions: position 512 is past the table: max_len=512 (valid positions 0..511)``.

    Shapes:
        index: [...] (any shape)
    """
    bad = _first_out_of_range(index, size)
    if bad is not None:
        why = "is negative" if bad < 0 else "is past the table"
        raise ValueError(
            f"{name}: {what} {bad} {why}: {size_name}={size} (valid {what}s 0..{size - 1})"
        )
    return index


def check_token_ids(ids: object, vocab_size: int, name: str = "ids") -> torch.Tensor:
    """Return ``ids`` if it is an integer tensor of token ids in ``[0, vocab_size)``.

    The one "ids in [0, V)" check of :mod:`lib`. The type check runs everywhere, the range check on
    the CPU only (:func:`values_checkable`: a meta tensor has no values, and on an accelerator an id
    out of range still fails inside the lookup).

    Args:
        ids: the token ids, an integer tensor of any shape.
        vocab_size: the number of token ids (rows of the embedding table), an int >= 1.
        name: the argument's name, for the message.

    Returns:
        ``ids``, unchanged.

    Raises:
        TypeError: ``ids`` is not an integer tensor, or ``vocab_size`` not an int.
        ValueError: ``vocab_size < 1``, or an id is negative or ``>= vocab_size``; the message reads
            e.g. ``ids must lie in [0, 30521] (vocab_size = 30522), got id 30522``.

    Shapes:
        ids: [...] (any shape)
    """
    ids = check_integer_tensor(name, ids)
    vocab_size = check_positive_int("vocab_size", vocab_size)
    bad = _first_out_of_range(ids, vocab_size)
    if bad is not None:
        raise ValueError(
            f"{name} must lie in [0, {vocab_size - 1}] (vocab_size = {vocab_size}), got id {bad}"
        )
    return ids


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
    return value


def check_base(name: str, value: object) -> float:
    """Return ``value`` as a float; it must be a finite frequency base > 1 (RoPE, sinusoidal).

    ``θ_i = base^(−2i/d)``: base 1 gives every pair the same speed, and a base below 1 makes the
    speeds increase with ``i`` instead of falling.
    """
    value = check_positive_float(name, value)
    if value <= 1.0:
        raise ValueError(
            f"{name} must be > 1 (the frequencies base^(-2i/d) must fall with i; base 1 gives "
            f"every pair the same speed, base < 1 makes them rise), got {value}"
        )
    return value


def values_checkable(*tensors: torch.Tensor) -> bool:
    """Whether checks that read tensor *values* should run: only when every tensor is on the CPU.

    On the meta device there are no values, and on an accelerator reading one (``.item()``,
    ``bool(t.any())``) waits for the device on every call. Public functions of :mod:`lib` therefore
    check values (ranges, NaN/inf, fully masked rows) on the CPU only and skip those checks
    elsewhere; shape, dtype and device checks run everywhere.
    """
    return all(t.device.type == "cpu" for t in tensors)


def check_finite(name: str, value: torch.Tensor) -> torch.Tensor:
    """Raise ``ValueError`` if a floating tensor holds NaN or ±inf (CPU only: see
    :func:`values_checkable`)."""
    if value.is_floating_point() and value.numel() and values_checkable(value):
        bad = ~torch.isfinite(value)
        if bool(bad.any()):
            raise ValueError(
                f"{name} must be finite (no NaN or inf), got {int(bad.sum())} non-finite "
                f"value(s) among {value.numel()}"
            )
    return value


#: The most elements one tensor may have (its sizes are int64).
MAX_NUMEL = 2**63 - 1


def _device_bytes(device: torch.device) -> int | None:
    """Memory of ``device`` in bytes (CPU: physical RAM), or None where it is not known/relevant."""
    if device.type == "cpu":
        try:
            return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
        except (ValueError, OSError, AttributeError):
            return None
    if device.type == "cuda" and torch.cuda.is_available():
        index = device.index if device.index is not None else torch.cuda.current_device()
        return torch.cuda.get_device_properties(index).total_memory
    return None  # meta allocates nothing; other backends: let torch decide


def check_fits(
    arguments: str,
    shape: tuple[int, ...],
    dtype: torch.dtype,
    device: torch.device | str | None = None,
) -> None:
    """Refuse, before allocating, a tensor of ``shape`` that cannot exist on ``device``.

    Raises ``ValueError`` naming ``arguments`` (e.g. ``"n_heads=8, seq_len=10**6"``) if the tensor
    would have more than :data:`MAX_NUMEL` elements or more bytes than the device has memory
    (physical RAM on the CPU, total memory on CUDA; no memory limit on meta).
    """
    numel = math.prod(int(s) for s in shape)
    element = torch.empty((), dtype=dtype, device="meta").element_size()
    if numel > MAX_NUMEL:
        raise ValueError(
            f"{arguments}: the result would have {numel:.3g} elements (shape {list(shape)}), more "
            f"than a tensor can hold ({MAX_NUMEL:.3g}); use smaller sizes"
        )
    if device is None:
        device = torch.get_default_device()
    device = torch.device(device)
    available = _device_bytes(device)
    needed = numel * element
    if available is not None and needed > available:
        raise ValueError(
            f"{arguments}: the result would need {needed / 2**30:.3g} GiB ({list(shape)} "
            f"{dtype}), more than the {available / 2**30:.3g} GiB of {device}; use smaller sizes"
        )
