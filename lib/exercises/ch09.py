"""Exercise checkers for chapter 9, extending context with RoPE scaling.

- ``ch09-llama3-inv-freq``: Llama 3.1's "llama3" inverse frequencies, written from scratch
  (Meta's released llama-models code and config; the model: Llama Team 2024, arXiv:2407.21783).
- ``ch09-broken-port``: which parameter a port of gpt-oss's YaRN setting got wrong (a diagnosis from
  the ported frequencies; OpenAI 2025, arXiv:2508.10925).
- ``ch09-ablation-predict`` then ``ch09-ablation-measure``: predict, before measuring, where two
  frequency ablations of the chapter's small model land (near PI or near plain RoPE), then measure
  them; the checker records the prediction first and compares it with the measurement (the
  pair-0 ablation of the chapter; Peng et al. 2023, arXiv:2309.00071; Chen et al. 2023,
  arXiv:2306.15595).
"""

from __future__ import annotations

import math
from typing import Any, TypedDict

import torch

from lib.exercises import ExerciseFailed, exercise, record_prediction, require, require_real
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


# ---------------------------------------------------------------- 3. predict, then measure

#: The chapter's small model and the ablations' factor: d_head 16 (8 pairs), base 10,000, s = 4.
ABLATION: dict[str, float] = {"d_head": 16, "base": 10000.0, "factor": 4.0}
#: The two ablations: stretch only pair 0 by s, or only the slower half of the pairs.
ABLATIONS = ("pair 0", "slow half")
#: What a prediction names for each ablation: which of the two it lands nearer (median at 4L).
NEIGHBOURS = ("PI", "plain")

#: The prediction log: the last prediction recorded before the first measurement, and whether a
#: measurement has been checked. Module state on purpose: it lives as long as the reader's kernel.
_LOG: dict[str, Any] = {"prediction": None, "measured": False}


def _reset_log() -> None:
    """Forget the recorded prediction and measurement (a fresh kernel; used by the tests)."""
    _LOG.update(prediction=None, measured=False)


def ablation_inv_freq(which: str) -> torch.Tensor:
    """The frequencies of one ablation: the default θ_i with some pairs divided by s.

    Args:
        which: ``"pair 0"`` (only pair 0 divided by s) or ``"slow half"`` (pairs d/4 … d/2 − 1).

    Returns:
        float32 inverse frequencies, shape [8].
    """
    theta = rope_inv_freq(int(ABLATION["d_head"]), ABLATION["base"])
    out = theta.clone()
    if which == "pair 0":
        out[0] = theta[0] / ABLATION["factor"]
    else:
        half = theta.numel() // 2
        out[half:] = theta[half:] / ABLATION["factor"]
    return out


def _check_prediction(answer: object) -> dict[str, str]:
    if not (isinstance(answer, dict) and set(answer) == set(ABLATIONS)):
        raise ExerciseFailed(
            f"expected a dict with the keys {list(ABLATIONS)}, each mapped to one of "
            f"{list(NEIGHBOURS)}"
        )
    for key in ABLATIONS:
        require(
            answer[key] in NEIGHBOURS,
            f"answer[{key!r}] must be one of {list(NEIGHBOURS)} (which it lands nearer), got "
            f"{answer[key]!r}",
        )
    return {key: str(answer[key]) for key in ABLATIONS}


_RIGHT_PREDICTION = {"pair 0": "PI", "slow half": "plain"}


def _predict_wrong() -> list[object]:
    _reset_log()  # a kernel that has already measured: a valid prediction now is refused
    _LOG.update(prediction={"pair 0": "plain", "slow half": "PI"}, measured=True)
    return [
        "PI",
        {"pair 0": "PI"},
        {"pair 0": "PI", "slow half": "yarn"},
        {"pair 0": "pi", "slow half": "plain"},
        {"pair 0": "PI", "slow half": "plain", "all": "PI"},
        dict(_RIGHT_PREDICTION),  # after measuring
    ]


def _predict_right() -> dict[str, str]:
    _reset_log()  # a fresh kernel: nothing measured yet
    return dict(_RIGHT_PREDICTION)


@exercise(
    "ch09-ablation-predict",
    chapter=CHAPTER,
    wrong_answers=_predict_wrong,
    right_answer=_predict_right,
)
def check_ablation_predict(answer: object) -> None:
    """Record a prediction for the two ablations, before any measurement is checked.

    Any well-formed prediction is accepted and recorded (a prediction is not right or wrong until
    it is measured); once a measurement has been checked, a new prediction is refused and the one
    recorded before it stands.

    Args:
        answer: ``{"pair 0": "PI" or "plain", "slow half": "PI" or "plain"}``: which of the two
            (position interpolation or plain RoPE, at 4L) each ablation's median accuracy lands
            nearer.

    Raises:
        ExerciseFailed: a malformed prediction, or a prediction made after measuring.
    """
    prediction = _check_prediction(answer)
    record_prediction(_LOG, prediction, "Now measure (next cell).")


def _measurement(pair0: list[float], slow: list[float], **kw: list[float]) -> dict[str, Any]:
    """A stand-in measurement for the tests of the measure checker."""
    f64 = torch.float64
    return {
        "pair 0": torch.tensor(pair0, dtype=f64),
        "slow half": torch.tensor(slow, dtype=f64),
        "plain": torch.tensor(kw.get("plain", [0.36, 0.31, 0.27, 0.31, 0.32]), dtype=f64),
        "pi": torch.tensor(kw.get("pi", [0.07, 0.06, 0.07, 0.09, 0.06]), dtype=f64),
        "inv_freq": {k: ablation_inv_freq(k) for k in ABLATIONS},
    }


_MEASURED = ([0.09, 0.06, 0.06, 0.13, 0.07], [0.37, 0.32, 0.28, 0.31, 0.33])


def _measure_wrong() -> list[object]:
    swapped = _measurement(*_MEASURED)
    swapped["inv_freq"] = {
        "pair 0": ablation_inv_freq("slow half"),
        "slow half": ablation_inv_freq("pair 0"),
    }
    pi_freq = _measurement(*_MEASURED)
    pi_freq["inv_freq"]["pair 0"] = ablation_inv_freq("pair 0") / ABLATION["factor"]
    few = _measurement([0.07, 0.08], [0.3, 0.31], plain=[0.3, 0.31], pi=[0.07, 0.06])
    _reset_log()  # the last wrong answer: a real measurement against a recorded wrong prediction
    _LOG["prediction"] = {"pair 0": "plain", "slow half": "PI"}
    return [0.07, {"pair 0": 0.07}, swapped, pi_freq, few, _measurement(*_MEASURED)]


def _measure_right() -> dict[str, Any]:
    _reset_log()
    _LOG["prediction"] = dict(_RIGHT_PREDICTION)
    return _measurement(*_MEASURED)


@exercise(
    "ch09-ablation-measure",
    chapter=CHAPTER,
    wrong_answers=_measure_wrong,
    right_answer=_measure_right,
)
def check_ablation_measure(answer: object) -> None:
    """Compare the measured ablations with the prediction recorded before measuring.

    Each ablation lands "nearer PI" or "nearer plain" by its median accuracy over the seeds at 4L
    against the medians of position interpolation and plain RoPE on the same models.

    Args:
        answer: ``{"pair 0": acc, "slow half": acc, "plain": acc, "pi": acc, "inv_freq":
            {"pair 0": θ', "slow half": θ'}}``: per-seed accuracies at 4L (float tensors of one
            length, at least 5 seeds) and the frequencies each ablation was measured with.

    Raises:
        ExerciseFailed: a malformed answer, the wrong frequencies, fewer than 5 seeds, no prediction
            recorded before measuring, or a measurement that contradicts the prediction.

    Shapes:
        acc: [seeds]; θ': [8]
    """
    keys = (*ABLATIONS, "plain", "pi", "inv_freq")
    if not (isinstance(answer, dict) and set(answer) == set(keys)):
        raise ExerciseFailed(f"expected a dict with the keys {list(keys)}")
    freqs = answer["inv_freq"]
    require(
        isinstance(freqs, dict) and set(freqs) == set(ABLATIONS),
        f'answer["inv_freq"] must map {list(ABLATIONS)} to the frequencies you measured with',
    )
    for key in ABLATIONS:
        got = freqs[key]
        require(
            isinstance(got, torch.Tensor)
            and got.shape == (8,)
            and torch.allclose(got.double().cpu(), ablation_inv_freq(key).double(), rtol=1e-6),
            f"the frequencies of {key!r} are not the ablation's: start from "
            "rope_inv_freq(16, 10000.0) and divide "
            + ("pair 0 only" if key == "pair 0" else "pairs 4 to 7 only")
            + " by s = 4",
        )
    n_seeds = None
    for key in (*ABLATIONS, "plain", "pi"):
        acc = answer[key]
        require(
            isinstance(acc, torch.Tensor) and acc.is_floating_point() and acc.ndim == 1,
            f"answer[{key!r}] must be the per-seed accuracies, a 1-D float tensor",
        )
        n_seeds = acc.numel() if n_seeds is None else n_seeds
        require(
            acc.numel() == n_seeds,
            f"answer[{key!r}] has {acc.numel()} seeds, the others {n_seeds}: use the same models",
        )
    require(
        n_seeds is not None and n_seeds >= 5,
        f"{n_seeds} seed(s): measure the whole ensemble (at least 5 seeds)",
    )
    prediction = _LOG["prediction"]
    _LOG["measured"] = True
    require(
        prediction is not None,
        'no prediction was recorded before this measurement: run check("ch09-ablation-predict", '
        "...) first. (Restart the kernel to start over.)",
    )
    plain = float(answer["plain"].median())
    pi = float(answer["pi"].median())
    measured, report = {}, []
    for key in ABLATIONS:
        value = float(answer[key].median())
        measured[key] = "PI" if abs(value - pi) < abs(value - plain) else "plain"
        report.append(f"{key}: {value:.2f} (nearer {measured[key]})")
    wrong = [key for key in ABLATIONS if prediction[key] != measured[key]]
    require(
        not wrong,
        f"your prediction {prediction}, recorded before measuring, is contradicted for "
        f"{wrong}: medians at 4L {'; '.join(report)}, against PI {pi:.2f} and plain {plain:.2f}. "
        "Explain it from the frequencies: which pairs does each ablation change, how many turns "
        "do they make within L = 16, and which of the chapter's rows do they coincide with?",
    )
