"""Exercise checkers for chapter 9, extending context with RoPE scaling.

- ``ch09-llama3-inv-freq``: Llama 3.1's "llama3" inverse frequencies, written from scratch
  (Meta's released llama-models code and config; the model: Llama Team 2024, arXiv:2407.21783).
- ``ch09-broken-port``: which parameter a port of gpt-oss's YaRN setting got wrong (a diagnosis from
  the ported frequencies; OpenAI 2025, arXiv:2508.10925).
- ``ch09-yarn-logit-scale``: what YaRN's attention factor does to the attention logits when it is
  folded into both cos and sin (Peng et al. 2023, arXiv:2309.00071).
"""

from __future__ import annotations

import math
from typing import TypedDict

import torch

from lib.exercises import ExerciseFailed, exercise, require, require_real
from lib.rope import rope_inv_freq
from lib.rope_scaling import ROPE_SCALING

CHAPTER = "09_rope_scaling"


def _number(answer: object, what: str) -> float:
    """The answer as a float: a Python number or a one-element tensor.

    Args:
        answer: the reader's answer.
        what: what the number is, for the message.

    Returns:
        The answer as a finite float.

    Raises:
        ExerciseFailed: the answer is not a number (bools excluded) or not finite.
    """
    if isinstance(answer, torch.Tensor) and answer.numel() == 1:
        answer = answer.item()
    value = require_real(answer, f"expected {what} (a number), got {type(answer).__name__}")
    require(
        math.isfinite(value),
        f"expected a finite number, got {value}",
    )
    return value


# ---------------------------------------------------------------- 1. llama3 from scratch


class Llama3Setting(TypedDict):
    """Llama 3.1 8B's RoPE setting (config.json ``rope_scaling``, ``rope_theta``, head size)."""

    d_head: int
    base: float
    factor: float
    low_freq_factor: float
    high_freq_factor: float
    original_max_position_embeddings: int


LLAMA3: Llama3Setting = {
    "d_head": 128,
    "base": 500000.0,
    "factor": 8.0,
    "low_freq_factor": 1.0,
    "high_freq_factor": 4.0,
    "original_max_position_embeddings": 8192,
}


def _llama3_right() -> torch.Tensor:
    params = {k: v for k, v in LLAMA3.items() if k not in ("d_head", "base")}
    inv_freq, _ = ROPE_SCALING["llama3"](LLAMA3["d_head"], LLAMA3["base"], **params)
    return inv_freq.double()


def _llama3_wrong() -> list[object]:
    default = rope_inv_freq(LLAMA3["d_head"], LLAMA3["base"]).double()
    right = _llama3_right()
    flipped = default.clone()
    wavelength = 2 * math.pi / default
    mid = (wavelength >= 8192 / 4) & (wavelength <= 8192 / 1)
    smooth = (8192 / wavelength - 1.0) / (4.0 - 1.0)
    flipped[mid] = (smooth * default / 8 + (1 - smooth) * default)[mid]  # smooth factor inverted
    flipped[wavelength > 8192] = default[wavelength > 8192] / 8
    return [
        default.clone(),  # no scaling at all
        default / 8,  # position interpolation, every pair
        flipped,
        right[:32].clone(),  # wrong length
        "inv_freq",
    ]


@exercise(
    "ch09-llama3-inv-freq",
    chapter=CHAPTER,
    wrong_answers=_llama3_wrong,
    right_answer=_llama3_right,
)
def check_llama3_inv_freq(answer: object) -> None:
    """Check Llama 3.1's scaled inverse frequencies.

    Args:
        answer: a floating tensor, one inverse frequency per pair.

    Raises:
        ExerciseFailed: wrong type, shape or values (the message says which pairs are wrong).

    Shapes:
        answer: [64]

    References:
        Meta, llama-models ``apply_scaling`` (code); transformers ``_compute_llama3_parameters``.
    """
    if not (isinstance(answer, torch.Tensor) and answer.is_floating_point()):
        raise ExerciseFailed(f"expected a floating tensor [64], got {type(answer).__name__}")
    require(
        tuple(answer.shape) == (64,),
        f"expected one inverse frequency per pair, shape [64], got {list(answer.shape)}",
    )
    got = answer.detach().double().cpu()
    right = _llama3_right()
    default = rope_inv_freq(LLAMA3["d_head"], LLAMA3["base"]).double()
    if torch.allclose(got, right, rtol=1e-5, atol=0):
        return
    require(
        not torch.allclose(got, default, rtol=1e-5, atol=0),
        "these are the unscaled frequencies base^(-2i/d): pairs with a wavelength longer than "
        "original_max_position_embeddings / low_freq_factor = 8192 must be divided by the factor 8",
    )
    require(
        not torch.allclose(got, default / 8, rtol=1e-5, atol=0),
        "every pair divided by 8 is position interpolation; llama3 keeps the pairs with a "
        "wavelength below 8192 / high_freq_factor = 2048 unchanged",
    )
    wavelength = 2 * math.pi / default
    fast, slow = wavelength < 2048, wavelength > 8192
    require(
        torch.allclose(got[fast], default[fast], rtol=1e-5, atol=0),
        "pairs with a wavelength below 2048 tokens must keep their frequency",
    )
    require(
        torch.allclose(got[slow], default[slow] / 8, rtol=1e-5, atol=0),
        "pairs with a wavelength above 8192 tokens must be divided by the factor 8",
    )
    raise ExerciseFailed(
        "the fast and slow pairs are right but the band in between is not: with "
        "smooth = (8192/λ − low_freq_factor) / (high_freq_factor − low_freq_factor), the new "
        "frequency is (1 − smooth)·θ/8 + smooth·θ (smooth = 0 at λ = 8192, 1 at λ = 2048)"
    )


# ---------------------------------------------------------------- 2. a broken port of gpt-oss

#: gpt-oss's published YaRN setting (head size, rope_theta, rope_scaling)
GPT_OSS: dict[str, object] = {
    "d_head": 64,
    "base": 150000.0,
    "factor": 32.0,
    "original_max_position_embeddings": 4096,
    "beta_fast": 32.0,
    "beta_slow": 1.0,
    "truncate": False,
}
#: the parameters a reader may name
GPT_OSS_PARAMETERS = (
    "base",
    "factor",
    "original_max_position_embeddings",
    "beta_fast",
    "beta_slow",
    "truncate",
)


def ported_gpt_oss_inv_freq() -> torch.Tensor:
    """The inverse frequencies of a port of gpt-oss that got one parameter wrong.

    Returns:
        The port's inverse frequencies, float32, shape [32].
    """
    params = {k: v for k, v in GPT_OSS.items() if k not in ("d_head", "base")}
    params["truncate"] = True  # the port's mistake: transformers' default instead of the config
    inv, _ = ROPE_SCALING["yarn"](64, 150000.0, **params)  # GPT_OSS's d_head and base
    return inv


@exercise(
    "ch09-broken-port",
    chapter=CHAPTER,
    wrong_answers=lambda: [
        "factor",
        "beta_fast",
        "beta_slow",
        "base",
        "original_max_position_embeddings",
        3,
        "Truncate!",
    ],
    right_answer=lambda: "truncate",
)
def check_broken_port(answer: object) -> None:
    """Check the name of the one parameter a port of gpt-oss's YaRN setting got wrong.

    Args:
        answer: a parameter name, a str (one of :data:`GPT_OSS_PARAMETERS`).

    Raises:
        ExerciseFailed: not a str, not a parameter name, or not the wrong one.

    References:
        OpenAI, gpt-oss model card, arXiv:2508.10925; transformers ``GptOssConfig``
        (``truncate: False``); Peng et al., YaRN, arXiv:2309.00071.
    """
    if not isinstance(answer, str):
        raise ExerciseFailed(f"expected a parameter name (a str), got {type(answer).__name__}")
    require(
        answer in GPT_OSS_PARAMETERS,
        f"{answer!r} is not one of the parameters: {', '.join(GPT_OSS_PARAMETERS)}",
    )
    if answer == "truncate":
        return
    raise ExerciseFailed(
        f"changing {answer} alone does not reproduce the port's frequencies: compare the port's "
        "stretch θ/θ' with the published setting pair by pair; which pairs differ, and which "
        "parameter decides where the ramp starts and ends?"
    )


# ---------------------------------------------------------------- 3. YaRN's logit scale

YARN_FACTOR = 16.0


def _yarn_attention_factor() -> float:
    _, attention_factor = ROPE_SCALING["yarn"](
        128, 10000.0, factor=YARN_FACTOR, original_max_position_embeddings=4096
    )
    return float(attention_factor)


@exercise(
    "ch09-yarn-logit-scale",
    chapter=CHAPTER,
    wrong_answers=lambda: [
        0.1 * math.log(YARN_FACTOR) + 1.0,
        YARN_FACTOR,
        1.0,
        1.0 / (0.1 * math.log(YARN_FACTOR) + 1.0) ** 2,
    ],
    right_answer=lambda: _yarn_attention_factor() ** 2,
)
def check_yarn_logit_scale(answer: object) -> None:
    """Check the factor by which YaRN (factor 16) multiplies every attention logit q·k/√d.

    Equation:
        logit factor = (0.1 · ln s + 1)^2

    Args:
        answer: a number.

    Raises:
        ExerciseFailed: not a number, or not the logit factor.

    References:
        Peng et al., YaRN, arXiv:2309.00071 (§3.4).
    """
    value = _number(answer, "a multiplicative factor")
    per_side = _yarn_attention_factor()
    right = per_side**2
    if math.isclose(value, right, rel_tol=1e-4):
        return
    require(
        not math.isclose(value, per_side, rel_tol=1e-4),
        f"{per_side:.4f} is the factor on cos and sin; both the query and the key are rotated "
        "with the scaled tables, so their dot product picks it up twice",
    )
    require(
        not math.isclose(value, 1.0 / right, rel_tol=1e-4),
        "that is the temperature t itself; the logits are divided by t, i.e. multiplied by 1/t",
    )
    require(
        not math.isclose(value, 1.0, rel_tol=1e-4),
        "YaRN does change the logits: its attention factor 0.1·ln(s) + 1 is folded into cos and sin",
    )
    raise ExerciseFailed(
        f"{value:g} is not it: start from attention_factor = 0.1·ln(16) + 1 and follow it through "
        "q_rot · k_rot"
    )
