"""Figures and the comparison table of the length-extrapolation lab (chapter 12).

Every builder takes plain numbers (what :mod:`lib.lab` measured) and returns a plotly figure whose
data is rounded: accuracies to 2 decimals (a change in the last bits of a trained weight cannot
move them), losses to 3 significant digits. Each scheme keeps one colour and one line style in
every figure (:data:`SCHEME_STYLE`), so colour is never the only cue.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np
import plotly.graph_objects as go

from lib.viz.core import OKABE_ITO, rounded, slider_figure

__all__ = [
    "SCHEME_STYLE",
    "accuracy_by_length_figure",
    "comparison_markdown",
    "loss_figure",
    "per_position_figure",
]

#: Colour, dash and marker per scheme name (Okabe–Ito colours; dashes tell the rope pair apart).
SCHEME_STYLE: dict[str, dict[str, str]] = {
    "none": {"color": OKABE_ITO[7], "dash": "dot", "symbol": "x"},
    "sinusoidal": {"color": OKABE_ITO[1], "dash": "solid", "symbol": "diamond"},
    "learned": {"color": OKABE_ITO[5], "dash": "solid", "symbol": "square"},
    "rope": {"color": OKABE_ITO[0], "dash": "solid", "symbol": "circle"},
    "rope+pi": {"color": OKABE_ITO[4], "dash": "dash", "symbol": "circle-open"},
    "alibi": {"color": OKABE_ITO[2], "dash": "solid", "symbol": "triangle-up"},
}

_FALLBACK = {"color": OKABE_ITO[3], "dash": "solid", "symbol": "circle"}


def _style(name: str) -> dict[str, str]:
    return SCHEME_STYLE.get(name, _FALLBACK)


def _accuracy_values(values: Sequence[float | None]) -> list[float | None]:
    """Accuracies rounded to 2 decimals; NaN / None become None (a gap in the line)."""
    out: list[float | None] = []
    for v in values:
        if v is None or (isinstance(v, float) and math.isnan(v)):
            out.append(None)
        else:
            value = float(v)
            if not 0.0 <= value <= 1.0:
                raise ValueError(f"accuracies must lie in [0, 1], got {value}")
            out.append(round(value, 2) + 0.0)  # + 0.0 turns -0.0 into 0.0
    return out


def _check_positive_int(name: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, got {type(value).__name__} {value!r}")
    if value < 1:
        raise ValueError(f"{name} must be >= 1, got {value}")
    return value


def comparison_markdown(rows: Sequence[Mapping[str, str]], columns: Sequence[str]) -> str:
    """A Markdown pipe table: one header row from ``columns``, one row per mapping in ``rows``.

    Each row must have a value for every column; ``|`` inside a value is escaped and newlines become
    spaces, so a cell can never break the table. Display it with ``IPython.display.Markdown``.

    Raises:
        ValueError: ``columns`` is empty or a row lacks a column.
        TypeError: a cell is not a string.
    """
    if not columns:
        raise ValueError("columns must name at least one column")

    def cell(text: object) -> str:
        if not isinstance(text, str):
            raise TypeError(f"every cell must be a str, got {type(text).__name__} {text!r}")
        return text.replace("|", "\\|").replace("\n", " ").strip()

    lines = [
        "| " + " | ".join(cell(c) for c in columns) + " |",
        "|" + "|".join("---" for _ in columns) + "|",
    ]
    for k, row in enumerate(rows):
        missing = [c for c in columns if c not in row]
        if missing:
            raise ValueError(f"rows[{k}] lacks the column(s) {missing}")
        lines.append("| " + " | ".join(cell(row[c]) for c in columns) + " |")
    return "\n".join(lines)


def accuracy_by_length_figure(
    accuracy: Mapping[str, Mapping[int, float | None]], train_len: int
) -> go.Figure:
    """Accuracy against evaluation length, one line per scheme (``None`` = could not run).

    Args:
        accuracy: ``{scheme: {eval_len: accuracy in [0, 1] or None}}``.
        train_len: the training length ``L``; the x axis labels lengths as multiples of it.

    Returns:
        A figure with one trace per scheme, the x axis in tokens (log scale) and in multiples of ``L``.

    Raises:
        ValueError: ``accuracy`` is empty, an accuracy is outside [0, 1], or ``train_len < 1``.
    """
    train_len = _check_positive_int("train_len", train_len)
    if not accuracy:
        raise ValueError("accuracy must hold at least one scheme")
    lengths = sorted({t for by_len in accuracy.values() for t in by_len})
    fig = go.Figure()
    for name, by_len in accuracy.items():
        style = _style(name)
        xs = sorted(by_len)
        fig.add_trace(
            go.Scatter(
                x=xs,
                y=_accuracy_values([by_len[t] for t in xs]),
                name=name,
                mode="lines+markers",
                line={"color": style["color"], "dash": style["dash"], "width": 2.5},
                marker={"symbol": style["symbol"], "size": 10},
                hovertemplate=f"{name}<br>length %{{x}}<br>accuracy %{{y:.2f}}<extra></extra>",
            )
        )
    fig.update_xaxes(
        title="evaluation length T (tokens)",
        type="log",
        tickvals=lengths,
        ticktext=[f"{t} ({t / train_len:g}×L)" for t in lengths],
    )
    fig.update_yaxes(title="next-token accuracy", range=[-0.02, 1.05])
    return fig


def per_position_figure(
    per_position: Mapping[str, Mapping[int, Sequence[float]]], train_len: int
) -> go.Figure:
    """Accuracy at each position, one line per scheme, with a slider over the evaluation length.

    Args:
        per_position: ``{scheme: {eval_len: accuracy per position [eval_len]}}`` (NaN where a
            position has no prediction); every scheme must have the same evaluation lengths.
        train_len: the training length ``L``, marked by a dotted vertical line.

    Returns:
        A figure whose slider (``layout.sliders``, no kernel needed) shows one evaluation length at a
        time and sets the x range to that length.

    Raises:
        ValueError: empty input, schemes with different lengths, a curve whose length is not its
            key, an accuracy outside [0, 1], or ``train_len < 1``.
    """
    train_len = _check_positive_int("train_len", train_len)
    if not per_position:
        raise ValueError("per_position must hold at least one scheme")
    names = list(per_position)
    lengths = sorted(per_position[names[0]])
    for name in names:
        if sorted(per_position[name]) != lengths:
            raise ValueError(
                f"every scheme needs the same evaluation lengths: {names[0]} has {lengths}, "
                f"{name} has {sorted(per_position[name])}"
            )
        for t, curve in per_position[name].items():
            if len(curve) != t:
                raise ValueError(
                    f"per_position[{name!r}][{t}] must have {t} entries, got {len(curve)}"
                )
    steps = []
    for t in lengths:
        group = []
        for name in names:
            style = _style(name)
            group.append(
                go.Scatter(
                    x=list(range(t)),
                    y=_accuracy_values(list(per_position[name][t])),
                    name=name,
                    mode="lines",
                    line={"color": style["color"], "dash": style["dash"], "width": 2},
                    hovertemplate=f"{name}<br>position %{{x}}<br>accuracy %{{y:.2f}}<extra></extra>",
                )
            )
        steps.append(group)
    labels = [f"{t} ({t // train_len}×L)" if t % train_len == 0 else str(t) for t in lengths]
    fig = slider_figure(steps, labels, prefix="evaluation length T = ")
    for step, t in zip(fig.layout.sliders[0].steps, lengths, strict=True):
        step.args = [step.args[0], {**step.args[1], "xaxis.range": [-0.5, t - 0.5]}]
    fig.update_xaxes(title="position t in the sequence", range=[-0.5, lengths[0] - 0.5])
    fig.update_yaxes(title="accuracy at position t", range=[-0.02, 1.05])
    fig.add_vline(
        x=train_len - 0.5,
        line={"dash": "dot", "color": "rgba(128,128,128,0.8)"},
        annotation_text="training length L",
        annotation_position="top left",
    )
    return fig


def loss_figure(losses: Mapping[str, Sequence[float]], *, window: int = 10) -> go.Figure:
    """Training loss against step (mean over windows of ``window`` steps), log scale, per scheme.

    Args:
        losses: ``{scheme: loss per step}``, all of one length, losses > 0.
        window: steps averaged per plotted point, an int >= 1.

    Returns:
        A figure with one line per scheme; values rounded to 3 significant digits.

    Raises:
        ValueError: empty input, curves of different lengths, a loss <= 0 or not finite, or
            ``window`` < 1 or longer than the curves.
    """
    window = _check_positive_int("window", window)
    if not losses:
        raise ValueError("losses must hold at least one scheme")
    n_steps = {len(v) for v in losses.values()}
    if len(n_steps) != 1:
        raise ValueError(f"every loss curve must have the same length, got {sorted(n_steps)}")
    (n,) = n_steps
    if window > n:
        raise ValueError(f"window must be <= the number of steps {n}, got {window}")
    fig = go.Figure()
    for name, curve in losses.items():
        values = np.asarray(curve, dtype=np.float64)
        if not np.all(np.isfinite(values)) or np.any(values <= 0):
            raise ValueError(f"losses[{name!r}] must be finite and > 0")
        usable = (n // window) * window
        means = values[:usable].reshape(-1, window).mean(axis=1)  # [n // window]
        steps = np.arange(usable // window) * window + window  # last step of each window
        style = _style(name)
        fig.add_trace(
            go.Scatter(
                x=steps.tolist(),
                y=rounded(means, digits=3).tolist(),
                name=name,
                mode="lines",
                line={"color": style["color"], "dash": style["dash"], "width": 2},
                hovertemplate=f"{name}<br>step %{{x}}<br>loss %{{y:.3g}}<extra></extra>",
            )
        )
    fig.update_xaxes(title="training step")
    fig.update_yaxes(title=f"cross-entropy (mean of {window} steps)", type="log")
    return fig
