"""Argument checks shared by every public function of :mod:`lib`.

Each helper raises ``TypeError`` (wrong kind of value) or ``ValueError`` (right kind, wrong value)
with a message that names the argument and says what was expected, so that a reader who passes
bad input sees the problem at the call, not deep inside torch.
"""

from __future__ import annotations

import math
import numbers
import os
from collections.abc import Mapping, Sequence

import numpy as np
import torch


def check_int(name: str, value: object, *, minimum: int | None = None) -> int:
    """Return ``value`` as an int; it must be an integer (not bool) and at least ``minimum``.

    Args:
        name: the argument's name, for the message.
        value: the value to check; Python and numpy integers (:class:`numbers.Integral`) pass.
        minimum: the smallest allowed value, or None.

    Returns:
        ``int(value)``.

    Raises:
        TypeError: ``value`` is not an integer (or is a bool).
        ValueError: ``value < minimum``.
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an int, got {type(value).__name__} {value!r}")
    value = int(value)
    if minimum is not None and value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}")
    return value


def check_positive_int(name: str, value: object) -> int:
    """Return ``value`` as an int; it must be an integer >= 1 (a size, a count).

    Args:
        name: the argument's name, for the message.
        value: a Python or numpy integer, 1 or more.

    Returns:
        ``int(value)``, a Python int >= 1.

    Raises:
        TypeError: ``value`` is not an integer (or is a bool), as :func:`check_int`.
        ValueError: ``value < 1``.
    """
    return check_int(name, value, minimum=1)


def check_even(name: str, value: object) -> int:
    """Return ``value`` as an int; it must be a positive even integer (e.g. a head dimension).

    Args:
        name: the argument's name, for the message.
        value: a Python or numpy integer, positive and even.

    Returns:
        ``int(value)``, even and >= 2.

    Raises:
        TypeError: ``value`` is not an integer, as :func:`check_positive_int`.
        ValueError: ``value < 1``, or ``value`` is odd (dimensions are rotated in pairs).
    """
    value = check_positive_int(name, value)
    if value % 2:
        raise ValueError(f"{name} must be even (dimensions are rotated in pairs), got {value}")
    return value


def check_positive_float(name: str, value: object, *, allow_zero: bool = False) -> float:
    """Return ``value`` as a float; it must be a finite real number > 0 (or >= 0).

    Args:
        name: the argument's name, for the message.
        value: the value to check (Python or numpy real, not bool).
        allow_zero: accept 0 as well.

    Returns:
        ``float(value)``.

    Raises:
        TypeError: ``value`` is not a real number.
        ValueError: ``value`` is NaN, ±inf, negative, or 0 without ``allow_zero``.
    """
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
    """Return ``value`` if it is a ``torch.Tensor``.

    Args:
        name: the argument's name, for the message.
        value: the value to check.

    Returns:
        ``value``, unchanged.

    Raises:
        TypeError: ``value`` is not a tensor.
    """
    if not isinstance(value, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(value).__name__}")
    return value


def check_floating(name: str, value: object) -> torch.Tensor:
    """Return ``value`` if it is a floating-point tensor.

    Args:
        name: the argument's name, for the message.
        value: any object; a tensor of a floating dtype (bf16, fp16, fp32, fp64) passes.

    Returns:
        ``value``, now known to be a floating tensor.

    Raises:
        TypeError: ``value`` is not a tensor, or not floating.
    """
    value = check_tensor(name, value)
    if not value.is_floating_point():
        raise TypeError(f"{name} must be a floating-point tensor, got dtype {value.dtype}")
    return value


def check_integer_tensor(name: str, value: object) -> torch.Tensor:
    """Return ``value`` if it is an integer-dtype tensor (positions, token ids).

    Args:
        name: the argument's name, for the message.
        value: any object; a tensor of an integer dtype (uint8 … int64) passes, bool does not.

    Returns:
        ``value``, now known to be an integer tensor.

    Raises:
        TypeError: ``value`` is not a tensor, or floating, complex or bool.
    """
    value = check_tensor(name, value)
    if value.is_floating_point() or value.is_complex() or value.dtype == torch.bool:
        raise TypeError(
            f"{name} must be an integer tensor (e.g. torch.long), got dtype {value.dtype}"
        )
    return value


def check_positions(name: str, positions: object) -> torch.Tensor:
    """Return ``positions`` if it is a position tensor: integer, or float32/float64 (fractional).

    Fractional positions appear in position interpolation. 16-bit floats are refused: bfloat16
    cannot even represent 257, so the damage would be done before any rotary function sees the
    positions.

    Args:
        name: the argument's name, for the message.
        positions: any object; an integer, float32 or float64 tensor passes.

    Returns:
        ``positions``, now known to be a tensor of positions.

    Raises:
        TypeError: not a tensor, or a dtype other than an integer, float32 or float64.

    References:
        Chen et al., Position Interpolation, arXiv:2306.15595.
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
    """Return ``value`` if it has at least ``minimum`` dimensions.

    Args:
        name: the argument's name, for the message.
        value: a tensor.
        minimum: the fewest dimensions allowed.

    Returns:
        ``value``, unchanged.

    Raises:
        ValueError: ``value.dim() < minimum``.
    """
    if value.dim() < minimum:
        raise ValueError(
            f"{name} must have at least {minimum} dimension(s), got shape {tuple(value.shape)}"
        )
    return value


def check_choice(name: str, value: object, choices: tuple[str, ...]) -> str:
    """Return ``value`` if it is one of ``choices``.

    Args:
        name: the argument's name, for the message.
        value: the value to check.
        choices: the allowed strings.

    Returns:
        ``value``, unchanged.

    Raises:
        ValueError: ``value`` is not in ``choices``.
    """
    if value not in choices:
        raise ValueError(f"{name} must be one of {choices}, got {value!r}")
    return value


def check_base(name: str, value: object) -> float:
    """Return ``value`` as a float; it must be a finite frequency base > 1 (RoPE, sinusoidal).

    Equation:
        θ_i = base^(−2i/d): base 1 gives every pair the same speed, and a base below 1 makes the
        speeds increase with i instead of falling.

    Args:
        name: the argument's name, for the message.
        value: the value to check (Python or numpy real).

    Returns:
        ``float(value)``.

    Raises:
        TypeError: ``value`` is not a real number.
        ValueError: ``value`` is not finite or ``<= 1``.
    """
    # Not check_positive_float: its "must be > 0" would name the wrong rule for base = -10000.
    value = check_float(name, value)
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

    Args:
        *tensors: the tensors whose values a check would read.

    Returns:
        True if every tensor is on the CPU.
    """
    return all(t.device.type == "cpu" for t in tensors)


def check_finite(name: str, value: torch.Tensor) -> torch.Tensor:
    """Return ``value`` unless it is a floating tensor with NaN or ±inf (checked on the CPU only).

    Args:
        name: the argument's name, for the message.
        value: a tensor; non-floating tensors pass unchecked.

    Returns:
        ``value``, unchanged.

    Raises:
        ValueError: a CPU floating tensor with a NaN or ±inf.
    """
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

    Args:
        arguments: the arguments that set the size, for the message (e.g.
            ``"n_heads=8, seq_len=10**6"``).
        shape: the shape of the tensor to be made.
        dtype: its dtype.
        device: where it would live (default: torch's default device).

    Raises:
        ValueError: the tensor would have more than :data:`MAX_NUMEL` elements, or more bytes than
            the device has memory (physical RAM on the CPU, total memory on CUDA; no limit on meta).
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


def check_mapping(name: str, value: object) -> Mapping:
    """Return ``value`` if it is a non-empty mapping (e.g. curve name -> values).

    Args:
        name: the argument's name, for the message.
        value: the value to check.

    Returns:
        ``value``.

    Raises:
        TypeError: ``value`` is not a mapping.
        ValueError: ``value`` is empty.
    """
    if not isinstance(value, Mapping):
        raise TypeError(f"{name} must be a mapping name -> values, got {type(value).__name__}")
    if not value:
        raise ValueError(f"{name} must hold at least one entry")
    return value


def check_labels(name: str, value: object, length: int) -> list[str]:
    """Return ``value`` as a list of ``length`` strings (panel titles, slider labels, colours).

    Args:
        name: the argument's name, for the message.
        value: a sequence (not a str) of ``length`` items, each turned into a str.
        length: the number of items expected.

    Returns:
        ``[str(v) for v in value]``.

    Raises:
        TypeError: ``value`` is a str or not a sequence.
        ValueError: ``value`` does not hold ``length`` items.
    """
    if isinstance(value, str) or not isinstance(value, Sequence):
        raise TypeError(
            f"{name} must be a sequence of {length} strings, got {type(value).__name__}"
        )
    if len(value) != length:
        raise ValueError(
            f"{name} must have {length} entries (one per panel/step), got {len(value)}"
        )
    return [str(v) for v in value]


def check_real_array(
    name: str, value: object, *, sequences: bool = False, finite: bool = True
) -> np.ndarray:
    """Return a real torch tensor or numpy array (with ``sequences``, also a sequence of numbers)
    as a float64 numpy copy: what a figure builder draws.

    Args:
        name: the argument's name, for the message.
        value: the data.
        sequences: also accept a (non-str) sequence of numbers.
        finite: require every value to be finite.

    Returns:
        A float64 numpy array (detached, on the CPU).

    Raises:
        TypeError: ``value`` is of another kind, or a complex or bool tensor.
        ValueError: ``finite`` and a value is NaN or ±inf.
    """
    kinds: tuple[type, ...] = (torch.Tensor, np.ndarray) + ((Sequence,) if sequences else ())
    if isinstance(value, str) or not isinstance(value, kinds):
        what = "a torch.Tensor or numpy array" + (" or sequence" if sequences else "")
        raise TypeError(f"{name} must be {what}, got {type(value).__name__}")
    if isinstance(value, torch.Tensor):
        if value.is_complex() or value.dtype == torch.bool:
            raise TypeError(f"{name} must hold real numbers, got dtype {value.dtype}")
        array = value.detach().to(torch.float64).cpu().numpy()
    else:
        array = np.asarray(value, dtype=np.float64)
    if finite and not np.isfinite(array).all():
        raise ValueError(f"{name} must be finite (no NaN or inf)")
    return array


def check_rows_and_vector(
    rows_name: str, rows: object, vector_name: str, vector: object
) -> tuple[torch.Tensor, torch.Tensor]:
    """Return a floating ``[n, d]`` table and a floating ``[d]`` vector of the same width.

    Args:
        rows_name: the table's argument name, for the message.
        rows: a floating tensor, one vector per row.
        vector_name: the vector's argument name, for the message.
        vector: a floating tensor as wide as a row.

    Returns:
        ``(rows, vector)``, unchanged.

    Raises:
        TypeError: ``rows`` or ``vector`` is not a floating tensor.
        ValueError: ``rows`` is not 2-D, ``vector`` not 1-D, or their widths differ.

    Shapes:
        rows: [n, d], vector: [d]
    """
    rows = check_floating(rows_name, rows)
    vector = check_floating(vector_name, vector)
    if rows.dim() != 2 or vector.dim() != 1 or rows.shape[1] != vector.shape[0]:
        raise ValueError(
            f"{rows_name} must be [n, d] and {vector_name} [d], got shapes "
            f"{tuple(rows.shape)} and {tuple(vector.shape)}"
        )
    return rows, vector


def check_counts(name: str, value: object) -> torch.Tensor:
    """Return a floating tensor of counts (co-occurrences); every value must be >= 0.

    Args:
        name: the argument's name, for the message.
        value: any object; a floating tensor with no negative entry passes (values are read on
            the CPU only, see :func:`values_checkable`).

    Returns:
        ``value``, now known to be a floating tensor of counts.

    Raises:
        TypeError: ``value`` is not a floating tensor.
        ValueError: an entry is negative.
    """
    counts = check_floating(name, value)
    if values_checkable(counts) and bool((counts < 0).any()):
        raise ValueError(f"{name} must be non-negative (co-occurrence counts)")
    return counts
