"""RoPE context extension: the inverse-frequency recipes of Hugging Face transformers, and more.

Every method is a function ``f(d_head, base, **params) -> (inv_freq, attention_factor)`` registered
in :data:`ROPE_SCALING` under the name transformers uses for it (its ``rope_type``; static NTK has
none), with transformers' parameter names (``transformers.modeling_rope_utils``, checked against
transformers 5.24):

- ``"default"``: θ_i = base^(−2i/d) (Su et al. 2021, arXiv:2104.09864).
- ``"linear"``: position interpolation, θ_i / factor (Chen et al. 2023, arXiv:2306.15595).
- ``"ntk"``: NTK-aware, static: base' = base · factor^(d/(d−2)) (bloc97, r/LocalLLaMA 2023; no
  transformers ``rope_type`` of this name).
- ``"dynamic"``: dynamic NTK, the NTK base recomputed for the current length (emozilla,
  r/LocalLLaMA 2023; transformers ``"dynamic"``).
- ``"yarn"``: YaRN, a per-pair blend of interpolation and extrapolation by a linear ramp, plus an
  attention temperature (Peng et al. 2023, arXiv:2309.00071).
- ``"longrope"``: LongRoPE, searched per-pair rescale factors (Ding et al. 2024, arXiv:2402.13753).
- ``"llama3"``: Llama 3.1's frequency-dependent scaling (Meta's released llama-models code).

The unscaled frequencies θ_i always come from :func:`lib.rope.rope_inv_freq` (the one place that
evaluates base^(−2i/d)); every method rescales them in float64 and rounds the result once to
float32. transformers computes in float32, so values agree to ~1e-6 relative. ``attention_factor``
is the number transformers multiplies cos and sin by (so q·k is scaled by its square); 1.0 where
the method has none.

``d_head`` is the rotated dimension: for partial rotary models (transformers'
``partial_rotary_factor``) pass ``int(head_dim * partial_rotary_factor)``.

Parameters are checked: every scaling ``factor`` must be ≥ 1 (transformers warns below 1), lengths
are positive ints, LongRoPE's factor lists must have d_head // 2 entries, Llama 3's
``low_freq_factor < high_freq_factor``. A missing or unknown parameter is Python's own ``TypeError``,
which names it.

:func:`critical_dimension` counts the dimensions whose pairs complete a full turn within a length
(Liu et al. 2023, arXiv:2310.05209), and :func:`wavelengths` gives each pair's turn length.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable, Iterator, Sequence

import torch

from lib._checks import (
    check_base,
    check_choice,
    check_even,
    check_finite,
    check_floating,
    check_int,
    check_positive_float,
    check_positive_int,
)
from lib.rope import rope_inv_freq, rope_wavelengths

__all__ = [
    "PAIR_REGIMES",
    "REAL_CONFIGS",
    "ROPE_SCALING",
    "YARN_RAMPS",
    "critical_dimension",
    "default_scaling",
    "dynamic_ntk_scaling",
    "linear_scaling",
    "llama3_scaling",
    "longrope_scaling",
    "ntk_scaling",
    "pair_regimes",
    "scaled_inv_freq",
    "stacked_rotary",
    "swapped_rotary",
    "wavelengths",
    "yarn_scaling",
    "yarn_softmax_scale",
]

ScalingResult = tuple[torch.Tensor, float]

YARN_RAMPS = ("index", "paper")
"""YaRN's two ramps: the reference code's, in pair index (clipped), and the paper's, in turns r."""


def _theta(d_head: int, base: float, params: str) -> torch.Tensor:
    """The unscaled θ_i of :func:`lib.rope.rope_inv_freq` as float64 ``[d_head // 2]``.

    ``params`` names the arguments that produced ``base`` (for the NTK methods a derived base),
    and is put in front of rope_inv_freq's error message if it refuses the base.
    """
    try:
        return rope_inv_freq(d_head, base).to(torch.float64)
    except ValueError as error:
        raise ValueError(f"{params}: {error}") from None


def _check_factor(name: str, value: object) -> float:
    value = check_positive_float(name, value)
    if value < 1.0:
        raise ValueError(f"{name} must be >= 1 (a context-extension factor), got {value}")
    return value


def _check_ntk_dim(d_head: int) -> int:
    d_head = check_even("d_head", d_head)
    if d_head < 4:
        raise ValueError(f"d_head must be >= 4 for NTK scaling (exponent d/(d-2)), got {d_head}")
    return d_head


def _result(inv_freq_f64: torch.Tensor, attention_factor: float, params: str) -> ScalingResult:
    """Round to float32, refusing frequencies that overflowed or underflowed (``params`` names
    the arguments that produced them)."""
    inv_freq = inv_freq_f64.to(torch.float32)
    if not bool((torch.isfinite(inv_freq) & (inv_freq > 0)).all()):
        raise ValueError(
            f"{params}: some scaled frequencies are not finite numbers > 0 in float32 (the factor "
            "or base overflows the formula, or divides a frequency down to 0); use a smaller one"
        )
    if not math.isfinite(attention_factor) or attention_factor <= 0:
        raise ValueError(
            f"{params}: attention_factor must be finite and > 0, got {attention_factor}"
        )
    return inv_freq, float(attention_factor)


def _power(name: str, value: float, exponent: float) -> float:
    """``value ** exponent`` for the NTK bases, with a ValueError naming ``name`` on overflow."""
    try:
        return value**exponent
    except OverflowError:
        raise ValueError(
            f"{name}={value} is too large: {name}^{exponent:.4g} overflows a float"
        ) from None


# --------------------------------------------------------------------------------------------------
# The methods
# --------------------------------------------------------------------------------------------------


def default_scaling(d_head: int, base: float) -> ScalingResult:
    """Unscaled RoPE frequencies.

    :func:`lib.rope.rope_inv_freq` with attention factor 1 (transformers
    ``compute_default_rope_parameters``).

    Equation:
        θ_i = base^(−2i/d_head),  i = 0 … d_head/2 − 1

    Args:
        d_head: rotated dimension, a positive even int.
        base: frequency base, a finite number > 1.

    Returns:
        ``(inv_freq, 1.0)``.

    Raises:
        TypeError: an argument has the wrong type.
        ValueError: ``d_head`` odd or < 2, ``base`` <= 1 or so large that a θ_i is 0 in float32.

    Shapes:
        inv_freq: [d_head // 2] float32

    References:
        Su et al., RoFormer, arXiv:2104.09864 (eq. 15).
    """
    return rope_inv_freq(d_head, base), 1.0


def linear_scaling(d_head: int, base: float, *, factor: float) -> ScalingResult:
    """Position interpolation: positions are divided by ``factor``, i.e. every θ_i is.

    Position m is rotated like m / factor was (transformers ``"linear"``; kaiokendev's SuperHOT
    did the same in 2023). attention_factor 1.

    Equation:
        θ'_i = θ_i / factor

    Args:
        d_head: rotated dimension, a positive even int.
        base: frequency base, a finite number > 1.
        factor: the scaling factor s >= 1 (new length / trained length).

    Returns:
        ``(inv_freq, 1.0)``.

    Raises:
        TypeError: an argument has the wrong type, or ``factor`` is missing.
        ValueError: ``factor < 1``, a bad ``d_head``/``base``, or a factor so large that a
            frequency is 0 in float32.

    Shapes:
        inv_freq: [d_head // 2] float32

    References:
        Chen et al., Extending Context Window of Large Language Models via Positional
        Interpolation, arXiv:2306.15595.
    """
    d_head = check_even("d_head", d_head)
    base = check_base("base", base)
    factor = _check_factor("factor", factor)
    params = f"linear: factor={factor}"
    return _result(_theta(d_head, base, params) / factor, 1.0, params)


def ntk_scaling(d_head: int, base: float, *, factor: float) -> ScalingResult:
    """NTK-aware scaled RoPE (static): raise the base so the lowest frequency is interpolated.

    Pair 0 is unchanged (extrapolated), the last pair is divided by exactly ``factor``
    (interpolated), the ones in between by factor^(2i/(d−2)). transformers has no static
    ``rope_type`` for it (its ``"dynamic"`` is the length-dependent version). attention_factor 1.

    Equation:
        base' = base · factor^(d/(d−2)),   θ'_i = base'^(−2i/d)

    Args:
        d_head: rotated dimension, an even int >= 4.
        base: frequency base, a finite number > 1.
        factor: the scaling factor s >= 1.

    Returns:
        ``(inv_freq, 1.0)``.

    Raises:
        TypeError: an argument has the wrong type, or ``factor`` is missing.
        ValueError: ``d_head < 4`` or odd, ``base <= 1``, ``factor < 1``, or a factor so large
            that the new base overflows.

    Shapes:
        inv_freq: [d_head // 2] float32

    References:
        bloc97, "NTK-Aware Scaled RoPE allows LLaMA models to have extended (8k+) context size
        without any fine-tuning", r/LocalLLaMA, June 2023.
        Peng et al., YaRN, arXiv:2309.00071 (§3.1).
    """
    d_head = _check_ntk_dim(d_head)
    base = check_base("base", base)
    factor = _check_factor("factor", factor)
    new_base = base * _power("factor", factor, d_head / (d_head - 2))
    params = f"ntk: factor={factor}, base={base}"
    return _result(_theta(d_head, new_base, params), 1.0, params)


def dynamic_ntk_scaling(
    d_head: int,
    base: float,
    *,
    factor: float,
    max_position_embeddings: int,
    seq_len: int | None = None,
) -> ScalingResult:
    """Dynamic NTK: the NTK-aware base, recomputed from the current sequence length.

    Up to ``max_position_embeddings`` the frequencies are the default ones (transformers
    ``_compute_dynamic_ntk_parameters``). attention_factor 1.

    Equation:
        L = max(seq_len, max_position_embeddings)
        base' = base · (factor · L / max_position_embeddings − (factor − 1))^(d/(d−2))
        θ'_i = base'^(−2i/d)

    Args:
        d_head: rotated dimension, an even int >= 4.
        base: frequency base, a finite number > 1.
        factor: the configured factor >= 1 (a slope: the effective factor grows with L).
        max_position_embeddings: the trained length, a positive int.
        seq_len: the current length; ``None`` means ``max_position_embeddings`` (what
            transformers uses at initialisation).

    Returns:
        ``(inv_freq, 1.0)``.

    Raises:
        TypeError: an argument has the wrong type, or a required one is missing.
        ValueError: bad sizes, ``factor < 1``, or a new base that overflows.

    Shapes:
        inv_freq: [d_head // 2] float32

    References:
        emozilla, "Dynamically Scaled RoPE further increases performance of long context LLaMA
        with zero fine-tuning", r/LocalLLaMA, 2023.
        Peng et al., YaRN, arXiv:2309.00071 (§3.3).
    """
    d_head = _check_ntk_dim(d_head)
    base = check_base("base", base)
    factor = _check_factor("factor", factor)
    max_position_embeddings = check_positive_int("max_position_embeddings", max_position_embeddings)
    if seq_len is None:
        seq_len = max_position_embeddings
    seq_len = max(check_positive_int("seq_len", seq_len), max_position_embeddings)
    stretch = factor * seq_len / max_position_embeddings - (factor - 1)
    new_base = base * _power(
        "factor * seq_len / max_position_embeddings - (factor - 1)", stretch, d_head / (d_head - 2)
    )
    params = f"dynamic: factor={factor}, seq_len={seq_len}, base={base}"
    return _result(_theta(d_head, new_base, params), 1.0, params)


def _yarn_mscale(scale: float, mscale: float = 1.0) -> float:
    """YaRN's temperature term ``0.1 · mscale · ln(scale) + 1`` (1 for scale ≤ 1), arXiv:2309.00071."""
    if scale <= 1.0:
        return 1.0
    return 0.1 * mscale * math.log(scale) + 1.0


def _yarn_correction_dim(
    num_rotations: float, d_head: int, base: float, original_max_position_embeddings: int
) -> float:
    """Pair index (fractional) whose wavelength fits ``num_rotations`` times in the original length.

    Equation:
        dim(r) = d · ln(L / (2π r)) / (2 ln base)

    References:
        Peng et al., YaRN, arXiv:2309.00071 (eq. 17).
    """
    ratio = original_max_position_embeddings / (num_rotations * 2 * math.pi)
    return d_head * math.log(ratio) / (2 * math.log(base))


def yarn_scaling(
    d_head: int,
    base: float,
    *,
    factor: float,
    original_max_position_embeddings: int,
    beta_fast: float = 32.0,
    beta_slow: float = 1.0,
    truncate: bool = True,
    attention_factor: float | None = None,
    mscale: float | None = None,
    mscale_all_dim: float | None = None,
    ramp: str = "index",
) -> ScalingResult:
    """YaRN: interpolate the low-frequency pairs, keep the high-frequency ones, ramp in between.

    The ramp is "NTK-by-parts" (YaRN §3.2), the temperature §3.4. With ``ramp="index"`` (the
    default) it is the reference code's and transformers' ``_compute_yarn_parameters``: linear in
    the pair index between two bounds that are rounded and clipped to [0, d − 1]; pairs i ≤ low
    keep θ_i, pairs i ≥ high are divided by ``factor``. With ``ramp="paper"`` it is the paper's
    definition, linear in the number of turns r_i = L/λ_i that pair i makes within L, with no
    rounding and no clip. The two differ where the clip acts: at small L · θ_0, the index ramp's
    lower bound is negative and the clip keeps pair 0 as trained, while the paper's γ puts it on
    the ramp (jquesnelle/yarn issues #60 and #65).

    Equation:
        ramp="index":
        dim(r) = d · ln(L / (2π r)) / (2 ln base),  L = original_max_position_embeddings
        low = ⌊dim(β_fast)⌋, high = ⌈dim(β_slow)⌉, clipped to [0, d − 1]
            (no rounding if truncate=False; high += 0.001 if equal)
        ramp_i = clip((i − low) / (high − low), 0, 1)
        ramp="paper":
        r_i = L / λ_i = L · θ_i / (2π)
        ramp_i = 1 − γ(r_i),  γ(r) = clip((r − β_slow) / (β_fast − β_slow), 0, 1)
            (γ(r) = [r > β_fast] if β_fast = β_slow)
        both:
        θ'_i = (θ_i / factor) · ramp_i + θ_i · (1 − ramp_i)
        attention_factor = 0.1 · ln(factor) + 1   (1 when factor ≤ 1), or with DeepSeek's
            mscale, mscale_all_dim: (0.1·mscale·ln f + 1) / (0.1·mscale_all_dim·ln f + 1)

    Args:
        d_head: rotated dimension, a positive even int.
        base: frequency base, a finite number > 1.
        factor: the scaling factor s >= 1.
        original_max_position_embeddings: the trained length L, a positive int.
        beta_fast: β_fast, turns within L above which a pair is kept (default 32).
        beta_slow: β_slow <= β_fast, turns below which a pair is interpolated (default 1).
        truncate: round low/high to integers, as transformers does by default.
        attention_factor: an explicit attention factor > 0; wins over the formulas.
        mscale: DeepSeek's ``mscale`` (with ``mscale_all_dim``).
        mscale_all_dim: DeepSeek's ``mscale_all_dim`` (with ``mscale``).
        ramp: ``"index"`` (reference code, transformers; default) or ``"paper"`` (γ(r) of the
            paper; ``truncate`` does not apply to it). Not a transformers parameter.

    Returns:
        ``(inv_freq, attention_factor)``.

    Raises:
        TypeError: an argument has the wrong type (e.g. ``truncate`` not a bool, ``ramp`` not
            a str).
        ValueError: ``factor < 1``, ``beta_fast < beta_slow``, only one of ``mscale`` and
            ``mscale_all_dim``, a non-positive factor or length, ``ramp`` not one of
            ``"index"``, ``"paper"``.

    Shapes:
        inv_freq: [d_head // 2] float32

    References:
        Peng et al., YaRN: Efficient Context Window Extension of Large Language Models,
        arXiv:2309.00071 (§3.2–3.4; γ(r) and r(d) = L/λ_d in §3.2).
        jquesnelle/yarn, ``scaled_rope/LlamaYaRNScaledRotaryEmbedding.py``
        (``find_correction_range``, ``max(low, 0)``), and its issues #60 and #65 (index vs r ramp).
        transformers' DeepSeek-V3 model (``yarn_get_mscale``, ``mscale``/``mscale_all_dim``, code).
    """
    d_head = check_even("d_head", d_head)
    base = check_base("base", base)
    factor = _check_factor("factor", factor)
    original = check_positive_int(
        "original_max_position_embeddings", original_max_position_embeddings
    )
    beta_fast = check_positive_float("beta_fast", beta_fast)
    beta_slow = check_positive_float("beta_slow", beta_slow)
    if beta_fast < beta_slow:
        raise ValueError(
            f"beta_fast must be >= beta_slow, got beta_fast={beta_fast}, beta_slow={beta_slow}"
        )
    if not isinstance(truncate, bool):
        raise TypeError(f"truncate must be a bool, got {type(truncate).__name__} {truncate!r}")
    if not isinstance(ramp, str):
        raise TypeError(f"ramp must be a str, one of {YARN_RAMPS}, got {type(ramp).__name__}")
    check_choice("ramp", ramp, YARN_RAMPS)
    if (mscale is None) != (mscale_all_dim is None):
        raise ValueError(
            "mscale and mscale_all_dim must be given together (or neither), got "
            f"mscale={mscale}, mscale_all_dim={mscale_all_dim}"
        )

    if attention_factor is not None:
        attention_factor = check_positive_float("attention_factor", attention_factor)
    elif mscale is not None:
        mscale = check_positive_float("mscale", mscale)
        mscale_all_dim = check_positive_float("mscale_all_dim", mscale_all_dim)
        attention_factor = _yarn_mscale(factor, mscale) / _yarn_mscale(factor, mscale_all_dim)
    else:
        attention_factor = _yarn_mscale(factor)

    params = f"yarn: factor={factor}, base={base}"
    theta = _theta(d_head, base, params)
    if ramp == "paper":
        turns = original * theta / (2 * math.pi)  # r_i = L / λ_i
        if beta_fast == beta_slow:
            gamma = (turns > beta_fast).to(torch.float64)
        else:
            gamma = ((turns - beta_slow) / (beta_fast - beta_slow)).clamp(0.0, 1.0)
        mix = 1.0 - gamma  # 0: extrapolate, 1: interpolate
    else:
        low = _yarn_correction_dim(beta_fast, d_head, base, original)
        high = _yarn_correction_dim(beta_slow, d_head, base, original)
        if truncate:
            low, high = math.floor(low), math.ceil(high)
        low, high = max(low, 0), min(high, d_head - 1)
        if low == high:
            high += 0.001  # avoid dividing by zero, as transformers does
        pair = torch.arange(d_head // 2, dtype=torch.float64)
        mix = ((pair - low) / (high - low)).clamp(0.0, 1.0)  # 0: extrapolate, 1: interpolate
    inv_freq = (theta / factor) * mix + theta * (1.0 - mix)
    return _result(inv_freq, attention_factor, params)


def yarn_softmax_scale(qk_head_dim: int, *, factor: float, mscale_all_dim: float | None) -> float:
    """DeepSeek's softmax scale under YaRN: 1/√d_qk times the squared ``mscale_all_dim`` term.

    DeepSeek-V2/V3 (multi-head latent attention) do not only scale cos and sin: their attention
    code multiplies the softmax scale itself, so the temperature acts on the whole q·k, the
    non-rotary dimensions (``qk_nope_head_dim``) included, not only on the rotary ones. With
    ``mscale = mscale_all_dim`` the cos/sin factor of :func:`yarn_scaling` is 1 and this is the
    whole temperature. transformers' ``yarn_apply_mscale`` (DeepSeek-V2/V3 models).

    Equation:
        scale = d_qk^(−1/2) · (0.1 · mscale_all_dim · ln(factor) + 1)^2
        (d_qk^(−1/2) when factor ≤ 1 or mscale_all_dim is None or 0)

    Args:
        qk_head_dim: d_qk, the full query/key head size (DeepSeek: qk_nope_head_dim +
            qk_rope_head_dim), a positive int.
        factor: the YaRN factor s, a number >= 1.
        mscale_all_dim: DeepSeek's ``mscale_all_dim`` (a number >= 0), or None (plain softmax
            scale).

    Returns:
        The factor the attention code multiplies q·k by before the softmax.

    Raises:
        TypeError: a non-numeric argument.
        ValueError: ``qk_head_dim`` < 1, ``factor`` < 1 or ``mscale_all_dim`` < 0.

    References:
        DeepSeek-AI, DeepSeek-V2, arXiv:2405.04434 (YaRN for MLA); transformers
        ``models/deepseek_v3/modeling_deepseek_v3.py`` (``yarn_apply_mscale``).
    """
    qk_head_dim = check_positive_int("qk_head_dim", qk_head_dim)
    factor = _check_factor("factor", factor)
    scale = qk_head_dim**-0.5
    if mscale_all_dim is None:
        return scale
    if isinstance(mscale_all_dim, bool) or not isinstance(mscale_all_dim, (int, float)):
        raise TypeError(
            f"mscale_all_dim must be a number or None, got {type(mscale_all_dim).__name__}"
        )
    if not math.isfinite(mscale_all_dim) or mscale_all_dim < 0:
        raise ValueError(f"mscale_all_dim must be a finite number >= 0, got {mscale_all_dim}")
    if mscale_all_dim == 0:
        return scale  # transformers: a falsy mscale_all_dim leaves the scale alone
    term = _yarn_mscale(factor, float(mscale_all_dim))
    return scale * term * term


def _check_factor_list(name: str, values: object, d_half: int) -> torch.Tensor:
    if isinstance(values, torch.Tensor):
        values = values.tolist()
    if isinstance(values, (str, bytes)) or not isinstance(values, Sequence):
        raise TypeError(
            f"{name} must be a sequence of {d_half} numbers, got {type(values).__name__}"
        )
    if len(values) != d_half:
        raise ValueError(f"{name} must have d_head // 2 = {d_half} entries, got {len(values)}")
    for v in values:
        check_positive_float(f"each entry of {name}", v)
    return torch.tensor([float(v) for v in values], dtype=torch.float64)


def longrope_scaling(
    d_head: int,
    base: float,
    *,
    short_factor: Sequence[float],
    long_factor: Sequence[float],
    original_max_position_embeddings: int,
    max_position_embeddings: int | None = None,
    seq_len: int | None = None,
    factor: float | None = None,
    attention_factor: float | None = None,
) -> ScalingResult:
    """LongRoPE: divide each θ_i by its own searched factor, one set for short and one for long inputs.

    As Phi-3 and transformers ``_compute_longrope_parameters`` do; ``seq_len=None`` counts as
    short.

    Equation:
        θ'_i = θ_i / λ_i,  λ = long_factor if seq_len > original_max_position_embeddings
            else short_factor
        s = factor, else max_position_embeddings / original_max_position_embeddings
        attention_factor = sqrt(1 + ln s / ln original_max_position_embeddings)  (1 when s ≤ 1)

    Args:
        d_head: rotated dimension, a positive even int.
        base: frequency base, a finite number > 1.
        short_factor: d_head // 2 positive rescale factors for short inputs.
        long_factor: d_head // 2 positive rescale factors for long inputs.
        original_max_position_embeddings: the trained length, an int >= 2.
        max_position_embeddings: the target length (gives s if ``factor`` is not given).
        seq_len: the current length, or ``None``.
        factor: s >= 1, explicitly.
        attention_factor: an explicit attention factor > 0; wins over the formula.

    Returns:
        ``(inv_freq, attention_factor)``.

    Raises:
        TypeError: a factor list that is not a sequence, or another wrong type.
        ValueError: a factor list of the wrong length or with an entry <= 0, neither ``factor``
            nor ``max_position_embeddings``, s < 1, bad lengths.

    Shapes:
        short_factor, long_factor: [d_head // 2]
        inv_freq: [d_head // 2] float32

    References:
        Ding et al., LongRoPE, arXiv:2402.13753.
        transformers ``_compute_longrope_parameters`` (Phi-3's rule, code).
    """
    d_head = check_even("d_head", d_head)
    base = check_base("base", base)
    d_half = d_head // 2
    short = _check_factor_list("short_factor", short_factor, d_half)
    long = _check_factor_list("long_factor", long_factor, d_half)
    # >= 2: the attention factor divides by ln(original_max_position_embeddings)
    original = check_int(
        "original_max_position_embeddings", original_max_position_embeddings, minimum=2
    )
    if factor is not None:
        factor = _check_factor("factor", factor)
    elif max_position_embeddings is not None:
        max_position_embeddings = check_positive_int(
            "max_position_embeddings", max_position_embeddings
        )
        factor = _check_factor(
            "max_position_embeddings / original_max_position_embeddings",
            max_position_embeddings / original,
        )
    else:
        raise ValueError(
            "longrope needs factor or max_position_embeddings (factor defaults to "
            "max_position_embeddings / original_max_position_embeddings)"
        )
    if seq_len is not None:
        seq_len = check_positive_int("seq_len", seq_len)

    if attention_factor is not None:
        attention_factor = check_positive_float("attention_factor", attention_factor)
    elif factor <= 1.0:
        attention_factor = 1.0
    else:
        attention_factor = math.sqrt(1 + math.log(factor) / math.log(original))

    rescale = long if seq_len is not None and seq_len > original else short
    params = f"longrope: factor={factor}, base={base}"
    return _result(_theta(d_head, base, params) / rescale, attention_factor, params)


def llama3_scaling(
    d_head: int,
    base: float,
    *,
    factor: float,
    low_freq_factor: float,
    high_freq_factor: float,
    original_max_position_embeddings: int,
) -> ScalingResult:
    """Llama 3.1's scaling: long wavelengths interpolated, short ones kept, smooth in between.

    The equations are those of Meta's released Llama 3.1 reference code (``apply_scaling``,
    "values obtained from grid search"; GitHub meta-llama/llama-models) and transformers
    ``_compute_llama3_parameters``; the Llama 3 paper describes the long-context training but does
    not give them. attention_factor 1. Llama 3.1 uses factor 8, low/high 1 and 4, L = 8192 on
    base 500000.

    Equation:
        λ_i = 2π / θ_i,  L = original_max_position_embeddings
        λ_i < L / high_freq_factor:  θ'_i = θ_i
        λ_i > L / low_freq_factor:   θ'_i = θ_i / factor
        otherwise: s = (L/λ_i − low_freq_factor) / (high_freq_factor − low_freq_factor),
                   θ'_i = (1 − s) θ_i / factor + s θ_i

    Args:
        d_head: rotated dimension, a positive even int.
        base: frequency base, a finite number > 1.
        factor: the scaling factor >= 1.
        low_freq_factor: > 0, below ``high_freq_factor``.
        high_freq_factor: > ``low_freq_factor``.
        original_max_position_embeddings: L, a positive int.

    Returns:
        ``(inv_freq, 1.0)``.

    Raises:
        TypeError: an argument has the wrong type, or a required one is missing.
        ValueError: ``factor < 1``, ``low_freq_factor >= high_freq_factor``, a non-positive value.

    Shapes:
        inv_freq: [d_head // 2] float32

    References:
        Meta, llama-models, ``models/llama3/reference_impl/model.py`` ``apply_scaling`` (code).
        Llama Team, The Llama 3 Herd of Models, arXiv:2407.21783 (training, not the formula).
    """
    d_head = check_even("d_head", d_head)
    base = check_base("base", base)
    factor = _check_factor("factor", factor)
    low = check_positive_float("low_freq_factor", low_freq_factor)
    high = check_positive_float("high_freq_factor", high_freq_factor)
    if not low < high:
        raise ValueError(
            "low_freq_factor must be < high_freq_factor, got "
            f"low_freq_factor={low}, high_freq_factor={high}"
        )
    original = check_positive_int(
        "original_max_position_embeddings", original_max_position_embeddings
    )

    params = f"llama3: factor={factor}, base={base}"
    theta = _theta(d_head, base, params)
    wavelength = 2 * math.pi / theta
    low_freq_wavelength = original / low  # longer than this: interpolate fully
    high_freq_wavelength = original / high  # shorter than this: keep
    scaled = torch.where(wavelength > low_freq_wavelength, theta / factor, theta)
    smooth = (original / wavelength - low) / (high - low)
    smoothed = (1 - smooth) * scaled / factor + smooth * scaled
    is_medium = (wavelength >= high_freq_wavelength) & (wavelength <= low_freq_wavelength)
    return _result(torch.where(is_medium, smoothed, scaled), 1.0, params)


# --------------------------------------------------------------------------------------------------
# Registry and helpers
# --------------------------------------------------------------------------------------------------

ROPE_SCALING: dict[str, Callable[..., ScalingResult]] = {
    "default": default_scaling,
    "linear": linear_scaling,
    "ntk": ntk_scaling,
    "dynamic": dynamic_ntk_scaling,
    "yarn": yarn_scaling,
    "longrope": longrope_scaling,
    "llama3": llama3_scaling,
}


def scaled_inv_freq(name: str, d_head: int, base: float, **params: object) -> ScalingResult:
    """Look up a scaling method by its ``rope_type`` name and apply it.

    Equation:
        ROPE_SCALING[name](d_head, base, **params)  (see each method for its formula)

    Args:
        name: a key of :data:`ROPE_SCALING`.
        d_head: rotated dimension.
        base: frequency base.
        **params: the method's parameters, with transformers' names.

    Returns:
        ``(inv_freq, attention_factor)``.

    Raises:
        ValueError: an unknown ``name`` (the message lists the known ones), or the method's own
            errors.
        TypeError: the method's own type errors (a missing or unknown parameter).

    Shapes:
        inv_freq: [d_head // 2] float32

    References:
        Chen et al., arXiv:2306.15595 (PI); Peng et al., arXiv:2309.00071 (YaRN);
        Ding et al., arXiv:2402.13753 (LongRoPE); Meta's llama-models code (llama3).
    """
    check_choice("name", name, tuple(ROPE_SCALING))
    return ROPE_SCALING[name](d_head, base, **params)


def critical_dimension(d_head: int, base: float, train_len: int) -> int:
    """Liu et al.'s critical dimension: how many dimensions turn through a full period in training.

    RoPE dimensions come in pairs; pair n has period (wavelength) T_n = 2π · base^(2n/d). The
    first ``d_extra / 2`` pairs have T_n ≤ T_train, so training showed them every angle; the other
    ``d − d_extra`` dimensions saw only part of one period, and Liu et al. locate the
    extrapolation problem in them. For Llama 2 (d = 128, base 10,000, T_train = 4,096) the formula
    gives 92, as the authors report. The paper's RoPE has base 10,000 (θ_n = 10000^(−2n/d)), so it
    states the formula for that base (log_10000); the ``base`` argument here generalises it. The
    value is clipped to [0, d_head] (below 2π tokens the logarithm is negative; for a long enough
    T_train every pair turns).

    Equation:
        d_extra = 2 · ⌈(d/2) · log_base(T_train / (2π))⌉

    Args:
        d_head: rotated dimension d, a positive even int.
        base: frequency base, a finite number > 1.
        train_len: the training length T_train, a positive int.

    Returns:
        ``d_extra``, an even int in [0, d_head]: twice the number of pairs with T_n ≤ T_train
        (equal to it unless (d/2)·log_base(T_train/2π) is an integer, where the ceiling counts
        one pair fewer).

    Raises:
        TypeError: an argument has the wrong type.
        ValueError: ``d_head`` odd or < 2, ``base <= 1``, ``train_len < 1``.

    Shapes:
        scalars only.

    References:
        Liu et al., Scaling Laws of RoPE-based Extrapolation, arXiv:2310.05209 (critical
        dimension for extrapolation).
    """
    d_head = check_even("d_head", d_head)
    base = check_base("base", base)
    train_len = check_positive_int("train_len", train_len)
    pairs = math.ceil(d_head / 2 * math.log(train_len / (2 * math.pi)) / math.log(base))
    return 2 * min(max(pairs, 0), d_head // 2)


def wavelengths(inv_freq: torch.Tensor) -> torch.Tensor:
    """Wavelength of each pair in tokens: the distance over which its angle turns a full circle.

    The quantity YaRN and Llama 3.1 compare with the training length: :func:`lib.rope.rope_wavelengths`
    (computed in float64) returned in float32, the dtype of the scaled frequencies.

    Equation:
        λ_i = 2π / θ_i

    Args:
        inv_freq: the θ_i, a floating tensor, > 0 everywhere.

    Returns:
        The wavelengths, float32.

    Raises:
        TypeError: ``inv_freq`` is not a floating tensor.
        ValueError: an entry is <= 0 or not finite.

    Shapes:
        inv_freq: [d_half] (any shape) -> same shape

    References:
        Su et al., RoFormer, arXiv:2104.09864; Peng et al., YaRN, arXiv:2309.00071.
    """
    return rope_wavelengths(inv_freq).to(torch.float32)


#: What a scaling method does to one pair, by its stretch θ_i/θ'_i against the factor s (the keys
#: of :func:`pair_regimes`, in order of growing stretch).
PAIR_REGIMES: tuple[str, ...] = ("unchanged", "between", "interpolated", "beyond")


def pair_regimes(
    inv_freq: torch.Tensor, scaled: torch.Tensor, factor: float, *, rtol: float = 1e-6
) -> dict[str, int]:
    """Count the pairs a scaling method leaves unchanged, interpolates by ``factor``, or blends.

    The stretch of pair i is θ_i/θ'_i. A pair is ``"unchanged"`` (extrapolated: it keeps its
    trained frequency) when the stretch is 1, ``"interpolated"`` when it is ``factor`` (position
    interpolation for that pair), ``"between"`` when it lies strictly between (YaRN's ramp,
    llama3's band, NTK-aware's geometric blend), and ``"beyond"`` when it exceeds ``factor`` (dynamic
    NTK at a factor larger than s, LongRoPE's over-stretched pairs). "Is 1" and "is s" are decided
    with the relative tolerance ``rtol``: the methods round their result once to float32, so
    1e-6 separates float32 rounding from a real change. At a small ``d_head`` and training length
    these counts show why methods coincide: e.g. YaRN and llama3 on 8 pairs at L = 16 differ from
    position interpolation in pair 0 only.

    Equation:
        r_i = θ_i / θ'_i;  unchanged: |r_i − 1| ≤ rtol;  interpolated: |r_i − s| ≤ rtol·s;
        between: 1 < r_i < s otherwise;  beyond: r_i > s otherwise

    Args:
        inv_freq: the unscaled θ_i, a floating tensor of positive finite values.
        scaled: the method's θ'_i, a floating tensor of positive finite values, same shape.
        factor: the scaling factor s, a float >= 1.
        rtol: relative tolerance for "equal to 1" and "equal to s", a float in [0, 0.5).

    Returns:
        ``{regime: number of pairs}`` with the keys of :data:`PAIR_REGIMES` in that order, the
        counts summing to the number of pairs. With s = 1 a pair that is unchanged counts as
        ``"unchanged"`` (not also ``"interpolated"``).

    Raises:
        TypeError: a tensor is not floating, or ``factor``/``rtol`` is not a number.
        ValueError: shapes differ; a frequency is <= 0 or not finite; a meta tensor (no values to
            count); ``factor < 1``; ``rtol`` out of range; a pair is sped up (stretch below 1 beyond ``rtol``), which no method does.

    Shapes:
        inv_freq, scaled: [d_half] (any shape, the same)

    References:
        Peng et al., YaRN, arXiv:2309.00071 (§3.2, the three groups of NTK-by-parts);
        Grattafiori et al., The Llama 3 Herd of Models, arXiv:2407.21783.
    """
    inv_freq = check_finite("inv_freq", check_floating("inv_freq", inv_freq))
    scaled = check_finite("scaled", check_floating("scaled", scaled))
    if inv_freq.shape != scaled.shape:
        raise ValueError(
            f"scaled must have the shape of inv_freq {list(inv_freq.shape)}, got "
            f"{list(scaled.shape)}"
        )
    factor = check_positive_float("factor", factor)
    if factor < 1:
        raise ValueError(f"factor must be >= 1, got {factor}")
    rtol = check_positive_float("rtol", rtol, allow_zero=True)
    if rtol >= 0.5:
        raise ValueError(f"rtol must be in [0, 0.5), got {rtol}")
    for name, t in (("inv_freq", inv_freq), ("scaled", scaled)):
        if t.is_meta:
            raise ValueError(f"{name} must hold values (counting needs them), got a meta tensor")
        if bool((t.cpu() <= 0).any()):
            raise ValueError(f"{name} must be > 0 everywhere")
    stretch = inv_freq.double().cpu() / scaled.double().cpu()
    if bool((stretch < 1 - rtol).any()):
        raise ValueError(
            "scaled must not be faster than inv_freq (stretch θ/θ' >= 1 for every pair), got a "
            f"smallest stretch of {stretch.min().item():.6g}"
        )
    unchanged = (stretch - 1).abs() <= rtol
    interpolated = ~unchanged & ((stretch - factor).abs() <= rtol * factor)
    beyond = ~unchanged & ~interpolated & (stretch > factor)
    between = ~unchanged & ~interpolated & ~beyond
    counts = (unchanged, between, interpolated, beyond)
    return {name: int(mask.sum()) for name, mask in zip(PAIR_REGIMES, counts, strict=True)}


# --------------------------------------------------------------------------------------------------
# Real configurations (values copied from the models' published config.json / model cards)
# --------------------------------------------------------------------------------------------------

#: Published RoPE settings of real models, ready for
#: ``scaled_inv_freq(c["rope_type"], c["d_head"], c["base"], **c["params"])``.
#: ``context_length`` is the length the setting is meant to serve. LongRoPE (Phi-3-mini-128k) is
#: left out on purpose: its 48 short/long per-pair factors changed between checkpoint revisions and
#: are not reproduced here from memory.
REAL_CONFIGS: dict[str, dict[str, object]] = {
    "Llama-2-7B": {
        "rope_type": "default",
        "d_head": 128,  # hidden 4096 / 32 heads
        "base": 10000.0,
        "params": {},
        "context_length": 4096,
        "source": "meta-llama/Llama-2-7b-hf config.json; Touvron et al. 2023, arXiv:2307.09288",
    },
    "Llama-3-8B": {
        "rope_type": "default",
        "d_head": 128,
        "base": 500000.0,
        "params": {},
        "context_length": 8192,
        "source": "meta-llama/Meta-Llama-3-8B config.json (rope_theta 500000.0)",
    },
    "Llama-3.1-8B": {
        "rope_type": "llama3",
        "d_head": 128,
        "base": 500000.0,
        "params": {
            "factor": 8.0,
            "low_freq_factor": 1.0,
            "high_freq_factor": 4.0,
            "original_max_position_embeddings": 8192,
        },
        "context_length": 131072,
        "source": "meta-llama/Llama-3.1-8B config.json (rope_scaling, rope_theta 500000.0)",
    },
    "Qwen2.5-7B-Instruct (YaRN)": {
        "rope_type": "yarn",
        "d_head": 128,  # hidden 3584 / 28 heads
        "base": 1000000.0,
        "params": {"factor": 4.0, "original_max_position_embeddings": 32768},
        "context_length": 131072,
        "source": "Qwen/Qwen2.5-7B-Instruct model card (rope_scaling for long texts) and config.json",
    },
    "Gemma-3-4B (global layers)": {
        "rope_type": "linear",
        "d_head": 256,
        "base": 1000000.0,
        "params": {"factor": 8.0},
        "context_length": 131072,
        "source": (
            "google/gemma-3-4b-it config.json (rope_scaling linear, factor 8, on the global layers; "
            "local layers keep base 10,000); Gemma Team 2025, arXiv:2503.19786"
        ),
    },
    "gpt-oss-120b": {
        "rope_type": "yarn",
        "d_head": 64,
        "base": 150000.0,
        "params": {
            "factor": 32.0,
            "original_max_position_embeddings": 4096,
            "beta_fast": 32.0,
            "beta_slow": 1.0,
            "truncate": False,
        },
        "context_length": 131072,
        "source": (
            "openai/gpt-oss-120b config.json, transformers GptOssConfig defaults; OpenAI 2025, "
            "arXiv:2508.10925"
        ),
    },
    "DeepSeek-V3 (rotary part)": {
        "rope_type": "yarn",
        "d_head": 64,  # qk_rope_head_dim; the 128 qk_nope_head_dim dimensions are not rotated
        "base": 10000.0,
        "params": {
            "factor": 40.0,
            "original_max_position_embeddings": 4096,
            "beta_fast": 32.0,
            "beta_slow": 1.0,
            "mscale": 1.0,
            "mscale_all_dim": 1.0,
        },
        "context_length": 163840,
        "source": "deepseek-ai/DeepSeek-V3 config.json; DeepSeek-AI 2024, arXiv:2412.19437",
    },
    "Qwen3-8B (YaRN)": {
        "rope_type": "yarn",
        "d_head": 128,
        "base": 1000000.0,
        "params": {"factor": 4.0, "original_max_position_embeddings": 32768},
        "context_length": 131072,
        "source": "Qwen/Qwen3-8B model card (static YaRN for long texts) and config.json",
    },
}


@contextlib.contextmanager
def swapped_rotary(
    rotary: torch.nn.Module, inv_freq: torch.Tensor, attention_factor: float
) -> Iterator[torch.nn.Module]:
    """Run a transformers rotary embedding with other frequencies and attention factor, then restore.

    A transformers ``*RotaryEmbedding`` (e.g. ``LlamaRotaryEmbedding``, ``model.model.rotary_emb``)
    keeps the θ_i of its ``rope_type`` in the buffer ``inv_freq`` and the factor on cos and sin in
    ``attention_scaling``; its forward computes cos(mθ_i)·a and sin(mθ_i)·a from them. Inside this
    context both are replaced, e.g. by an entry of :data:`ROPE_SCALING`, so a trained model runs
    under any scaling method without rebuilding it; on exit (also after an error) the originals
    are put back.

    Equation:
        cos, sin = cos(m · θ'_i) · a', sin(m · θ'_i) · a'   (θ' = inv_freq, a' = attention_factor)

    Args:
        rotary: a module with a floating ``inv_freq`` buffer ``[d_head // 2]`` and a float
            ``attention_scaling`` attribute.
        inv_freq: the new θ'_i, a floating tensor of the buffer's shape, finite and > 0 (cast to
            the buffer's dtype and device).
        attention_factor: the new factor a' on cos and sin, a finite number > 0.

    Returns:
        A context manager yielding ``rotary``.

    Raises:
        TypeError: ``rotary`` has no ``inv_freq`` tensor or no ``attention_scaling``; ``inv_freq``
            is not a floating tensor.
        ValueError: ``inv_freq`` has another shape, is not finite and > 0; ``attention_factor``
            is not finite and > 0.

    Shapes:
        inv_freq: [d_head // 2]

    References:
        transformers, ``LlamaRotaryEmbedding`` (``inv_freq``, ``attention_scaling``) and
        ``modeling_rope_utils.ROPE_INIT_FUNCTIONS`` (code).
    """
    old = getattr(rotary, "inv_freq", None)
    if not isinstance(old, torch.Tensor) or not hasattr(rotary, "attention_scaling"):
        raise TypeError(
            "rotary must be a rotary embedding module with an inv_freq tensor and an "
            f"attention_scaling attribute, got {type(rotary).__name__}"
        )
    if not isinstance(inv_freq, torch.Tensor) or not inv_freq.is_floating_point():
        raise TypeError(f"inv_freq must be a floating torch.Tensor, got {inv_freq!r:.80}")
    if inv_freq.shape != old.shape:
        raise ValueError(
            f"inv_freq must have the buffer's shape {tuple(old.shape)}, got {tuple(inv_freq.shape)}"
        )
    if inv_freq.device.type != "meta" and not bool(
        (torch.isfinite(inv_freq) & (inv_freq > 0)).all()
    ):
        raise ValueError("inv_freq must be finite and > 0")
    factor = check_positive_float("attention_factor", attention_factor)
    old_scaling = rotary.attention_scaling
    rotary.inv_freq = inv_freq.detach().to(device=old.device, dtype=old.dtype)
    setattr(rotary, "attention_scaling", factor)  # noqa: B010 (an attribute, not a submodule)
    try:
        yield rotary
    finally:
        rotary.inv_freq = old
        setattr(rotary, "attention_scaling", old_scaling)  # noqa: B010


@contextlib.contextmanager
def stacked_rotary(
    rotary: torch.nn.Module,
    inv_freqs: torch.Tensor,
    attention_factors: Sequence[float],
    rows_per_table: int,
) -> Iterator[torch.nn.Module]:
    """Run several frequency tables in one forward pass: block k of the batch uses table k.

    Like :func:`swapped_rotary`, for K tables at once: the batch of the next forward pass must hold
    K blocks of ``rows_per_table`` sequences, block k rotated with ``inv_freqs[k]`` and scaled by
    ``attention_factors[k]``. One pass over K·n sequences replaces K passes over n (a model whose
    weights are dequantized at every call pays that once). It relies on the rotary forward of
    transformers' Llama-family models, ``position_ids[..., None] * inv_freq`` then
    ``cos(emb) * attention_scaling``, which broadcast over a ``[B, 1, d_head // 2]`` buffer and a
    ``[B, 1, 1]`` factor; each row's tables are then bit-identical to :func:`swapped_rotary`'s.

    Equation:
        cos_b, sin_b = cos(m · θ^(k)) · a_k, sin(m · θ^(k)) · a_k,  k = ⌊b / rows_per_table⌋

    Args:
        rotary: a module with a floating ``inv_freq`` buffer ``[d_head // 2]`` and an
            ``attention_scaling`` attribute.
        inv_freqs: K tables, a floating tensor ``[K, d_head // 2]``, finite and > 0.
        attention_factors: K factors on cos and sin, each finite and > 0.
        rows_per_table: n, the sequences per block, a positive int.

    Returns:
        A context manager yielding ``rotary``; the batch must have K·n rows.

    Raises:
        TypeError: as :func:`swapped_rotary`; ``attention_factors`` not a sequence of numbers.
        ValueError: ``inv_freqs`` not ``[K, d_head // 2]`` or not finite and > 0; K factors not
            given; a factor not finite and > 0; ``rows_per_table`` < 1.

    Shapes:
        inv_freqs: [K, d_head // 2]

    References:
        transformers, ``LlamaRotaryEmbedding.forward`` (code).
    """
    old = getattr(rotary, "inv_freq", None)
    if not isinstance(old, torch.Tensor) or not hasattr(rotary, "attention_scaling"):
        raise TypeError(
            "rotary must be a rotary embedding module with an inv_freq tensor and an "
            f"attention_scaling attribute, got {type(rotary).__name__}"
        )
    if not isinstance(inv_freqs, torch.Tensor) or not inv_freqs.is_floating_point():
        raise TypeError(f"inv_freqs must be a floating torch.Tensor, got {inv_freqs!r:.80}")
    if inv_freqs.dim() != 2 or inv_freqs.shape[1:] != old.shape:
        raise ValueError(
            f"inv_freqs must have shape [K, {old.shape[0]}], got {tuple(inv_freqs.shape)}"
        )
    if inv_freqs.device.type != "meta" and not bool(
        (torch.isfinite(inv_freqs) & (inv_freqs > 0)).all()
    ):
        raise ValueError("inv_freqs must be finite and > 0")
    if isinstance(attention_factors, (str, bytes)) or not isinstance(attention_factors, Sequence):
        raise TypeError(
            f"attention_factors must be a sequence of numbers, got {type(attention_factors).__name__}"
        )
    if len(attention_factors) != inv_freqs.shape[0]:
        raise ValueError(
            f"attention_factors must hold K = {inv_freqs.shape[0]} factors, got "
            f"{len(attention_factors)}"
        )
    factors = [check_positive_float("attention_factors", a) for a in attention_factors]
    n = check_positive_int("rows_per_table", rows_per_table)
    old_scaling = rotary.attention_scaling
    table = inv_freqs.detach().to(device=old.device, dtype=old.dtype)
    rotary.inv_freq = table.repeat_interleave(n, dim=0)[:, None, :]  # [K·n, 1, d_head // 2]
    scaling = torch.tensor(factors, dtype=torch.float32, device=old.device)
    setattr(rotary, "attention_scaling", scaling.repeat_interleave(n)[:, None, None])  # noqa: B010
    try:
        yield rotary
    finally:
        rotary.inv_freq = old
        setattr(rotary, "attention_scaling", old_scaling)  # noqa: B010
