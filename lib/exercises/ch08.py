"""Checkers for chapter 8, "Rotary position embedding (RoPE)".

The expected values are computed here from the formulas (θ_i = base^(−2i/d_head), rotations in
float64), independently of what the reader calls; :mod:`lib.rope` is used only to build wrong
answers and test inputs.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch

from lib.exercises import (
    ExerciseFailed,
    exercise,
    require,
    require_function,
    require_int,
    require_real,
)
from lib.rope import apply_rope, rope_angles, rope_inv_freq

CHAPTER = "08_rope"


# --------------------------------------------------------------------------------------------------
# 1. Partial rotary, GPT-NeoX style
# --------------------------------------------------------------------------------------------------


def _theta(width: int, base: float = 10000.0) -> torch.Tensor:
    """θ_i = base^(−2i/width) in float64, ``[width / 2]``."""
    return base ** (-torch.arange(0, width, 2, dtype=torch.float64) / width)


def _partial_reference(x: torch.Tensor, positions: torch.Tensor, rotary_dim: int) -> torch.Tensor:
    """Half-pairing RoPE on ``x[..., :rotary_dim]`` with frequencies for that width, in float64."""
    half = rotary_dim // 2
    angles = positions.double()[:, None] * _theta(rotary_dim)  # [T, rotary_dim / 2]
    c, s = angles.cos(), angles.sin()
    xa, xb = x[..., :half].double(), x[..., half:rotary_dim].double()
    return torch.cat([xa * c - xb * s, xb * c + xa * s, x[..., rotary_dim:].double()], dim=-1)


def _partial_via_lib(
    x: torch.Tensor,
    positions: torch.Tensor,
    rotary_dim: int,
    *,
    width: int | None = None,
    pairing: str = "half",
) -> torch.Tensor:
    theta = rope_inv_freq(width or rotary_dim)[: rotary_dim // 2]
    angles = rope_angles(positions, theta)
    rot = apply_rope(x[..., :rotary_dim], angles.cos(), angles.sin(), pairing=pairing)
    return torch.cat([rot, x[..., rotary_dim:]], dim=-1)


def _partial_cases() -> list[tuple[torch.Tensor, torch.Tensor, int]]:
    g = torch.Generator().manual_seed(12)
    x = torch.randn(2, 3, 5, 16, generator=g)  # [B, H, T, d_head]
    cases = []
    for rotary_dim in (4, 8, 16):
        cases.append((x, torch.arange(5) + 7, rotary_dim))
        cases.append((x, torch.tensor([0, 3, 100, 4, 9]), rotary_dim))
    return cases


def _partial_right(x: torch.Tensor, positions: torch.Tensor, rotary_dim: int) -> torch.Tensor:
    return _partial_via_lib(x, positions, rotary_dim)


@exercise(
    "ch08-partial-rotary",
    chapter=CHAPTER,
    wrong_answers=lambda: [
        lambda x, positions, rotary_dim: x,
        lambda x, positions, rotary_dim: _partial_via_lib(x, positions, rotary_dim, width=16),
        lambda x, positions, rotary_dim: _partial_via_lib(
            x, positions, rotary_dim, pairing="interleaved"
        ),
        lambda x, positions, rotary_dim: _partial_via_lib(
            x, torch.arange(len(positions)), rotary_dim
        ),
        lambda x, positions, rotary_dim: _partial_via_lib(x, positions, x.shape[-1]),
        "apply_rope",
    ],
    right_answer=lambda: _partial_right,
)
def check_partial_rotary(answer: Callable[[torch.Tensor, torch.Tensor, int], torch.Tensor]) -> None:
    """``answer(x, positions, rotary_dim)``: RoPE on the first ``rotary_dim`` dims, rest unchanged.

    Args:
        answer: the reader's function ``partial_rope(x, positions, rotary_dim)``,
            returning a tensor of ``x``'s shape and dtype.

    Raises:
        ExerciseFailed: the answer is wrong (the message says what to look at).
    """
    require_function(answer, "partial_rope(x, positions, rotary_dim)")
    for x, positions, rotary_dim in _partial_cases():
        got = answer(x.clone(), positions.clone(), rotary_dim)
        require(
            isinstance(got, torch.Tensor) and got.shape == x.shape and got.dtype == x.dtype,
            f"partial_rope must return a tensor of x's shape {list(x.shape)} and dtype {x.dtype}, "
            f"got {list(got.shape) if isinstance(got, torch.Tensor) else type(got).__name__}",
        )
        want = _partial_reference(x, positions, rotary_dim)
        if torch.allclose(got.double(), want, atol=1e-4, rtol=0):
            continue
        require(
            torch.equal(got[..., rotary_dim:], x[..., rotary_dim:]),
            f"with rotary_dim = {rotary_dim} the last {x.shape[-1] - rotary_dim} dimensions must "
            "pass through unchanged; rotate only x[..., :rotary_dim]",
        )
        wide = _partial_via_lib(x, positions, rotary_dim, width=x.shape[-1])
        require(
            rotary_dim == x.shape[-1] or not torch.allclose(got, wide, atol=1e-4),
            "the frequencies belong to the rotated width: θ_i = base^(−2i/rotary_dim), not "
            "base^(−2i/d_head) (GPT-NeoX computes inv_freq for rotary_ndims)",
        )
        inter = _partial_via_lib(x, positions, rotary_dim, pairing="interleaved")
        require(
            not torch.allclose(got, inter, atol=1e-4),
            "that is the interleaved pairing (2i, 2i+1); GPT-NeoX rotates halves (i, i + d/2) "
            "of the rotated part",
        )
        require(
            False,
            f"for rotary_dim = {rotary_dim} and positions {positions.tolist()} the rotated part is "
            "wrong: token t must turn by positions[t] · θ_i (not by its index t)",
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
    right_answer=lambda: lambda q, k, delta: _score_via_lib(q, k, delta, "half"),
)
def check_relative_score(answer: Callable[[torch.Tensor, torch.Tensor, int], float]) -> None:
    """``answer(q, k, delta)`` must equal ⟨R_m q, R_n k⟩ (half pairing, base 10,000), m − n = delta.

    Args:
        answer: the reader's function ``score(q, k, delta)``, returning a number.

    Raises:
        ExerciseFailed: the answer is wrong (the message says what to look at).
    """
    require_function(answer, "score(q, k, delta)")
    for q, k, m, n in _score_cases():
        got = answer(q.clone(), k.clone(), m - n)
        if isinstance(got, torch.Tensor) and got.numel() == 1:
            got = got.item()
        value = require_real(got, f"score must return a float, got {type(got).__name__}")
        want = _true_score(q, k, m, n)
        if math.isclose(value, want, rel_tol=1e-4, abs_tol=1e-4):
            continue
        if math.isclose(value, _true_score(q, k, n, m), rel_tol=1e-4, abs_tol=1e-4):
            raise ExerciseFailed(
                f"for delta = {m - n} you computed the score for delta = {n - m}: the rotation "
                "goes the wrong way (⟨R_m q, R_n k⟩ = ⟨R_(m−n) q, k⟩)"
            )
        if math.isclose(value, float(q.double() @ k.double()), rel_tol=1e-4, abs_tol=1e-4):
            raise ExerciseFailed(
                f"for delta = {m - n} you returned q·k: the rotations do not cancel, only the "
                "common part R_n does"
            )
        raise ExerciseFailed(
            f"score(q, k, {m - n}) = {value:.5f} for d = {q.shape[-1]}, but "
            f"⟨R_{m} q, R_{n} k⟩ = {want:.5f} (half pairing (i, i + d/2), base 10,000)"
        )


# --------------------------------------------------------------------------------------------------
# 3. One decoding step with a KV cache
# --------------------------------------------------------------------------------------------------


def _rotate_at(x: torch.Tensor, position: int) -> torch.Tensor:
    """Half-pairing RoPE (base 10,000) of ``x: [..., d]`` at one position, in float64."""
    return _partial_reference(x, torch.tensor([position]), x.shape[-1])


def _decode_reference(q, k, v, k_cache, v_cache):
    t = k_cache.shape[-2]
    keys = torch.cat([k_cache.double(), _rotate_at(k, t)], dim=-2)
    values = torch.cat([v_cache.double(), v.double()], dim=-2)
    scores = _rotate_at(q, t) @ keys.transpose(-1, -2) / q.shape[-1] ** 0.5
    return torch.softmax(scores, dim=-1) @ values, keys, values


def _decode_via_lib(q, k, v, k_cache, v_cache, *, position=None, rotate_k=True, scale=None):
    t = k_cache.shape[-2] if position is None else position
    angles = rope_angles(torch.tensor([t]), rope_inv_freq(q.shape[-1]))
    c, s = angles.cos(), angles.sin()
    k_new = apply_rope(k, c, s) if rotate_k else k
    keys = torch.cat([k_cache, k_new], dim=-2)
    values = torch.cat([v_cache, v], dim=-2)
    scale = q.shape[-1] ** -0.5 if scale is None else scale
    weights = torch.softmax(apply_rope(q, c, s) @ keys.transpose(-1, -2) * scale, dim=-1)
    return weights @ values, keys, values


def _decode_cases():
    g = torch.Generator().manual_seed(21)
    cases = []
    for b, h, t, d in ((1, 2, 5, 8), (2, 1, 12, 16), (1, 1, 0, 8), (2, 3, 40, 8)):
        q, k, v = torch.randn(3, b, h, 1, d, generator=g)
        raw = torch.randn(b, h, t, d, generator=g)
        k_cache = _partial_reference(raw, torch.arange(t), d).float()  # rotated at 0..t-1
        v_cache = torch.randn(b, h, t, d, generator=g)
        cases.append((q, k, v, k_cache, v_cache))
    return cases


@exercise(
    "ch08-decode-step",
    chapter=CHAPTER,
    wrong_answers=lambda: [
        lambda q, k, v, kc, vc: _decode_via_lib(q, k, v, kc, vc, position=0),
        lambda q, k, v, kc, vc: _decode_via_lib(q, k, v, kc, vc, position=kc.shape[-2] + 1),
        lambda q, k, v, kc, vc: _decode_via_lib(q, k, v, kc, vc, rotate_k=False),
        lambda q, k, v, kc, vc: _decode_via_lib(q, k, v, kc, vc, scale=1.0),
        lambda q, k, v, kc, vc: (_decode_via_lib(q, k, v, kc, vc)[0], kc, vc),
        "attention",
    ],
    right_answer=lambda: _decode_via_lib,
)
def check_decode_step(
    answer: Callable[..., tuple[torch.Tensor, torch.Tensor, torch.Tensor]],
) -> None:
    """``answer(q, k, v, k_cache, v_cache)`` -> (out, k_cache, v_cache) for one new token.

    Args:
        answer: the reader's function ``decode_step(q, k, v, k_cache, v_cache)``, returning
            ``(out, k_cache, v_cache)`` with the new key and value appended to the caches.

    Raises:
        ExerciseFailed: the answer is wrong (the message says what to look at).
    """
    require_function(answer, "decode_step(q, k, v, k_cache, v_cache)")
    for q, k, v, k_cache, v_cache in _decode_cases():
        t = k_cache.shape[-2]
        got = answer(q.clone(), k.clone(), v.clone(), k_cache.clone(), v_cache.clone())
        require(
            isinstance(got, tuple)
            and len(got) == 3
            and all(isinstance(x, torch.Tensor) for x in got),
            "decode_step must return a tuple (out, k_cache, v_cache) of three tensors",
        )
        out, keys, values = got
        want_out, want_keys, want_values = _decode_reference(q, k, v, k_cache, v_cache)
        require(
            keys.shape == want_keys.shape and values.shape == want_values.shape,
            f"with {t} cached tokens the new caches must hold {t + 1} positions: shapes "
            f"{list(want_keys.shape)}, got {list(keys.shape)} and {list(values.shape)}",
        )
        require(
            torch.allclose(values.double(), want_values, atol=1e-6),
            "the value cache must be the old values followed by v (values are not rotated)",
        )
        if not torch.allclose(keys.double(), want_keys, atol=1e-4):
            require(
                not torch.allclose(keys[..., -1:, :].double(), k.double(), atol=1e-6),
                "the new key is stored unrotated: the cache holds keys after RoPE, so rotate k "
                "at its position before appending it",
            )
            require(
                False,
                f"the new key must be rotated at position {t} (the cache holds positions "
                f"0 … {t - 1}) and appended after the cached keys",
            )
        require(
            out.shape == want_out.shape,
            f"out must have shape {list(want_out.shape)}, got {list(out.shape)}",
        )
        if torch.allclose(out.double(), want_out, atol=1e-4):
            continue
        unscaled = _decode_via_lib(q, k, v, k_cache, v_cache, scale=1.0)[0]
        require(
            not torch.allclose(out, unscaled, atol=1e-4),
            "scale the scores by 1/sqrt(d_head) before the softmax",
        )
        require(
            False,
            f"with {t} cached tokens the new query must be rotated at position {t}, like its "
            "key; then attend to every cached key and the new one",
        )


# --------------------------------------------------------------------------------------------------
# 4. The width of a bfloat16 step near 30,000
# --------------------------------------------------------------------------------------------------


@exercise(
    "ch08-bf16-step",
    chapter=CHAPTER,
    wrong_answers=lambda: [512, 256, 64, 1, 128.5, "128"],
    right_answer=lambda: 128,
)
def check_bf16_step(answer: int) -> None:
    """The spacing of bfloat16 numbers in [2^14, 2^15): 2^(14 − 7) = 128.

    Args:
        answer: the spacing, an int.

    Raises:
        ExerciseFailed: the answer is wrong (the message says what to look at).
    """
    require_int(answer, f"answer must be an int (tokens), got {type(answer).__name__}")
    right = 2 ** (14 - 7)  # 8 significant bits: 7 stored after the implicit leading one
    answer = int(answer)
    if answer == right:
        return
    if answer == 512:
        raise ExerciseFailed("512 is the step near 100,000; 30,000 lies between 2^14 and 2^15")
    if answer == 2 * right:
        raise ExerciseFailed("30,000 is below 2^15 = 32,768, so its exponent is 14, not 15")
    if answer == right // 2:
        raise ExerciseFailed(
            "8 significant bits include the implicit leading one: 7 bits follow it, so the step "
            "is 2^(exponent − 7)"
        )
    raise ExerciseFailed(
        f"{answer} is not it; a number in [2^e, 2^(e+1)) with 8 significant bits has steps of "
        "2^(e − 7)"
    )


# --------------------------------------------------------------------------------------------------
# 5. Read a released config
# --------------------------------------------------------------------------------------------------

#: Flat configs written the way released ``config.json`` files write them: a base, a partial
#: rotary factor, an explicit head_dim that is not hidden_size // heads, SmolLM2-135M's values
#: (chapter 8 reads them from its GGUF), and one with nothing but the required sizes.
_CONFIGS: list[dict[str, float | int]] = [
    {"hidden_size": 4096, "num_attention_heads": 32, "rope_theta": 500000.0},
    {"hidden_size": 2560, "num_attention_heads": 32, "partial_rotary_factor": 0.4},
    {"hidden_size": 3072, "num_attention_heads": 16, "head_dim": 256, "rope_theta": 10000.0},
    {"hidden_size": 6144, "num_attention_heads": 64, "partial_rotary_factor": 0.25},
    {"hidden_size": 576, "num_attention_heads": 9, "head_dim": 64, "rope_theta": 100000.0},
    {"hidden_size": 512, "num_attention_heads": 8},
]


def _config_inv_freq(config: dict[str, float | int]) -> torch.Tensor:
    """θ_i for the rotated width of a flat config, float64 (transformers' default RoPE)."""
    head_dim = int(config.get("head_dim") or config["hidden_size"] // config["num_attention_heads"])
    width = int(head_dim * float(config.get("partial_rotary_factor", 1.0)))
    return _theta(width, float(config.get("rope_theta", 10000.0)))


def _config_ignoring(key: str) -> Callable[[dict[str, float | int]], torch.Tensor]:
    def wrong(config: dict[str, float | int]) -> torch.Tensor:
        return _config_inv_freq({k: v for k, v in config.items() if k != key})

    return wrong


@exercise(
    "ch08-read-config",
    chapter=CHAPTER,
    wrong_answers=lambda: [
        _config_ignoring("partial_rotary_factor"),
        _config_ignoring("head_dim"),
        _config_ignoring("rope_theta"),
        lambda c: _config_inv_freq(c)[:-1],
        lambda c: 1.0 / _config_inv_freq(c),
        "rope_theta",
    ],
    right_answer=lambda: _config_inv_freq,
)
def check_read_config(answer: Callable[[dict[str, float | int]], torch.Tensor]) -> None:
    """``answer(config)`` must return the inverse frequencies a flat model config implies.

    Args:
        answer: the reader's function ``inv_freq_from_config(config)``, returning a 1-D tensor
            of ``rotary_dim // 2`` speeds θ_i.

    Raises:
        ExerciseFailed: the answer is wrong (the message says what to look at).
    """
    require_function(answer, "inv_freq_from_config(config)")
    for config in _CONFIGS:
        got = answer(dict(config))
        want = _config_inv_freq(config)
        require(
            isinstance(got, torch.Tensor) and got.ndim == 1,
            f"inv_freq_from_config must return a 1-D tensor, got {type(got).__name__}",
        )
        if got.shape != want.shape:
            hint = (
                "partial_rotary_factor: only that fraction of each head is rotated"
                if "partial_rotary_factor" in config
                else "an explicit head_dim wins over hidden_size // num_attention_heads"
                if "head_dim" in config
                else "one speed per rotated pair: rotary_dim // 2 of them"
            )
            raise ExerciseFailed(
                f"for {config} you returned {got.numel()} speeds, expected {want.numel()} ({hint})"
            )
        if torch.allclose(got.double(), want, rtol=1e-6, atol=0):
            continue
        require(
            "rope_theta" in config,
            f"for {config}: without rope_theta the default base is 10,000 (transformers' default)",
        )
        raise ExerciseFailed(
            f"for {config} the speeds are wrong: θ_i = rope_theta^(−2i / rotary_dim), "
            "rotary_dim = int(head_dim × partial_rotary_factor)"
        )


# --------------------------------------------------------------------------------------------------
# 6. The Meta -> Hugging Face permutation of W_q and W_k
# --------------------------------------------------------------------------------------------------


def _meta_to_hf_by_index(w: torch.Tensor, n_heads: int) -> torch.Tensor:
    """Row h·d + j·d/2 + i of the result is row h·d + 2i + j of ``w`` (j ∈ {0, 1}), by a loop."""
    d = w.shape[0] // n_heads
    rows = [h * d + 2 * i + j for h in range(n_heads) for j in (0, 1) for i in range(d // 2)]
    return w[torch.tensor(rows)]


def _meta_cases() -> list[tuple[torch.Tensor, int]]:
    g = torch.Generator().manual_seed(8)
    shapes = [(1, 8, 3), (2, 8, 5), (4, 6, 7), (3, 64, 16), (8, 4, 2)]  # (heads, d_head, d_in)
    return [
        (torch.randn(h * d, d_in, generator=g, dtype=torch.float64), h) for h, d, d_in in shapes
    ]


class _UsedLibPermutation(RuntimeError):
    """Raised when a reader's permutation calls lib's while the checker forbids it."""


def _forbid_lib(*_: object, **__: object) -> torch.Tensor:
    """Stand-in for lib.rope's permutations while a reader's answer runs."""
    raise _UsedLibPermutation("called lib.rope's permutation")


def _scores_agree(meta: torch.Tensor, hf: torch.Tensor, n_heads: int) -> bool:
    """Interleaved RoPE on W_meta x scores as half-pairing RoPE on W_hf x (float64, positions 0-9)."""
    d = meta.shape[0] // n_heads
    g = torch.Generator().manual_seed(80)
    x = torch.randn(10, meta.shape[1], generator=g, dtype=torch.float64)
    angles = rope_angles(torch.arange(10), _theta(d))  # [10, d/2]
    cos, sin = angles.cos(), angles.sin()
    scores = []
    for w, pairing in ((meta, "interleaved"), (hf, "half")):
        q = (x @ w.T).view(10, n_heads, d).transpose(0, 1)  # [H, T, d]
        rotated = apply_rope(q, cos, sin, pairing=pairing)
        scores.append(rotated @ rotated.transpose(-1, -2))  # [H, T, T]
    return torch.allclose(scores[0], scores[1], rtol=1e-10, atol=1e-10)


@exercise(
    "ch08-meta-to-hf",
    chapter=CHAPTER,
    wrong_answers=lambda: [
        lambda w, n_heads: w.clone(),
        lambda w, n_heads: _meta_to_hf_by_index(w, 1),  # one permutation over the whole matrix
        lambda w, n_heads: w[_meta_to_hf_by_index(torch.arange(w.shape[0]), n_heads).argsort()],
        lambda w, n_heads: w.flip(0),
        lambda w, n_heads: _permute_via_lib(w, n_heads),
        "permute",
    ],
    right_answer=lambda: _meta_to_hf_by_index,
)
def check_meta_to_hf(answer: Callable[[torch.Tensor, int], torch.Tensor]) -> None:
    """``answer(w, n_heads)`` must reorder a Meta-layout W_q or W_k for half-pairing RoPE.

    Args:
        answer: the reader's function ``meta_to_hf(w, n_heads)``, ``w: [n_heads * d_head, d_in]``.

    Raises:
        ExerciseFailed: the answer is wrong or calls lib's permutation (the message says which).
    """
    from unittest import mock

    import lib.rope

    require_function(answer, "meta_to_hf(w, n_heads)")
    for w, n_heads in _meta_cases():
        try:
            with (
                mock.patch.object(lib.rope, "permute_qk_weight_meta_to_hf", _forbid_lib),
                mock.patch.object(lib.rope, "permute_qk_weight_hf_to_meta", _forbid_lib),
            ):
                got = answer(w.clone(), n_heads)
        except _UsedLibPermutation:
            raise ExerciseFailed(
                "meta_to_hf called lib.rope's permutation; write it with view / transpose / reshape "
                "(or an index list), then compare with lib's outside the function"
            ) from None
        require(
            isinstance(got, torch.Tensor) and got.shape == w.shape,
            f"meta_to_hf must return a tensor of w's shape {tuple(w.shape)}, got {got!r:.60}",
        )
        if torch.equal(got, _meta_to_hf_by_index(w, n_heads)):
            continue
        d = w.shape[0] // n_heads
        require(
            not torch.equal(got, w),
            "the rows are unchanged: within each head, row 2i + j of Meta's W must move to "
            "row j·d/2 + i (j = 0, 1)",
        )
        require(
            n_heads == 1 or not torch.equal(got, _meta_to_hf_by_index(w, 1)),
            f"with {n_heads} heads you permuted the whole matrix at once: the permutation is per "
            "head (view the rows as [n_heads, d_head // 2, 2, d_in])",
        )
        scores = "scores differently from" if not _scores_agree(w, got, n_heads) else "scores as"
        raise ExerciseFailed(
            f"wrong row order for {n_heads} heads of size {d}: half-pairing RoPE on your W's "
            f"queries {scores} interleaved RoPE on Meta's; row 2i + j must become row j·d/2 + i"
        )


def _permute_via_lib(w: torch.Tensor, n_heads: int) -> torch.Tensor:
    """A wrong answer for the checker's test: calls the library's permutation."""
    import lib.rope

    return lib.rope.permute_qk_weight_meta_to_hf(w, n_heads)


# --------------------------------------------------------------------------------------------------
# 7. Detect a checkpoint's pairing
# --------------------------------------------------------------------------------------------------

#: SmolLM2's sizes, as its config states them (chapter 8 reads them from the GGUF).
_SMOLLM_SIZES: dict[str, int] = {"num_attention_heads": 9, "num_key_value_heads": 3, "head_dim": 64}

#: The layers whose W_q and W_k the pairing exercise hands out (of SmolLM2's 30).
_PAIRING_LAYERS: tuple[int, ...] = (0, 4, 9, 14, 19, 24, 29)


def _pairing_cases() -> list[tuple[torch.Tensor, str]]:
    """SmolLM2's W_q and W_k of a few layers in both layouts: (weight, its pairing)."""
    from lib.smollm import read_gguf, smollm_gguf_path
    from lib.tokenization import gguf_tensor

    contents = read_gguf(smollm_gguf_path())
    cases = []
    for layer in _PAIRING_LAYERS:
        for part, heads in (("attn_q", 9), ("attn_k", 3)):
            meta = gguf_tensor(contents, f"blk.{layer}.{part}.weight")  # llama.cpp: adjacent pairs
            cases.append((meta, "interleaved"))
            cases.append((_meta_to_hf_by_index(meta, heads), "half"))
    return cases


def _detect_by_index_correlation(w: torch.Tensor, config: dict[str, int]) -> str:
    """Which frequency index, i = row mod d/2 or i = row // 2, do the row norms follow more?"""
    d = int(config["head_dim"])
    norms = w.double().reshape(-1, d, w.shape[-1]).norm(dim=-1)  # [heads, d]
    rows = torch.arange(d, dtype=torch.float64)

    def fit(index: torch.Tensor) -> float:
        a = norms - norms.mean(-1, keepdim=True)
        b = index - index.mean()
        return ((a * b).sum(-1) / (a.norm(dim=-1) * b.norm())).abs().mean().item()

    return "half" if fit(rows % (d // 2)) > fit(rows // 2) else "interleaved"


def _detect_by_neighbour_norms(w: torch.Tensor, config: dict[str, int]) -> str:
    """A plausible wrong detector: partners have the closest row norms (fails on half layouts)."""
    d = int(config["head_dim"])
    norms = w.reshape(-1, d, w.shape[-1]).norm(dim=-1)
    half = (norms[:, : d // 2] - norms[:, d // 2 :]).abs().mean()
    adjacent = (norms[:, 0::2] - norms[:, 1::2]).abs().mean()
    return "half" if half < adjacent else "interleaved"


@exercise(
    "ch08-detect-pairing",
    chapter=CHAPTER,
    wrong_answers=lambda: [
        lambda w, config: "half",
        lambda w, config: "interleaved",
        _detect_by_neighbour_norms,
        lambda w, config: {"half": "interleaved", "interleaved": "half"}[
            _detect_by_index_correlation(w, config)
        ],
        "half",
    ],
    right_answer=lambda: _detect_by_index_correlation,
)
def check_detect_pairing(answer: Callable[[torch.Tensor, dict[str, int]], str]) -> None:
    """``answer(w, config)`` must say whether a trained W_q / W_k is laid out for half or interleaved pairs.

    The cases are SmolLM2's W_q and W_k of seven layers, each as the GGUF stores it (llama.cpp's
    layout: adjacent pairs, ``"interleaved"``) and as transformers runs it (``"half"``).

    Args:
        answer: the reader's function ``detect_pairing(w, config)`` -> ``"half"`` or
            ``"interleaved"``; ``config`` holds ``num_attention_heads``, ``num_key_value_heads``
            and ``head_dim``.

    Raises:
        ExerciseFailed: a wrong verdict on any case (the message says how many).
    """
    require_function(answer, "detect_pairing(w, config)")
    cases = _pairing_cases()
    wrong: dict[str, int] = {"half": 0, "interleaved": 0}
    for w, truth in cases:
        got = answer(w.clone(), dict(_SMOLLM_SIZES))
        require(
            got in ("half", "interleaved"),
            f"detect_pairing must return 'half' or 'interleaved', got {got!r:.40}",
        )
        wrong[truth] += got != truth
    if any(wrong.values()):
        raise ExerciseFailed(
            f"wrong on {wrong['half']} of {len(cases) // 2} half-layout matrices and "
            f"{wrong['interleaved']} of {len(cases) // 2} interleaved ones. A pair's two rows share "
            "one speed θ_i, and in this trained model the row norms trend with i: ask which index, "
            "row mod d/2 (half) or row // 2 (interleaved), the norms track better, over all heads"
        )
