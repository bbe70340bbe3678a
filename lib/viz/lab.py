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

from lib._checks import check_positive_int, check_real_array
from lib.lab import seed_spread
from lib.viz.core import OKABE_ITO, palette, rounded, slider_figure
from lib.vocab import block_means

__all__ = [
    "SCHEME_STYLE",
    "comparison_markdown",
    "extrapolation_figure",
    "loss_figure",
    "pair_usage_figure",
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
    "t5": {"color": OKABE_ITO[3], "dash": "dashdot", "symbol": "star"},
    "rope+ntk": {"color": OKABE_ITO[1], "dash": "dash", "symbol": "diamond-open"},
    "rope+dynamic": {"color": OKABE_ITO[3], "dash": "dot", "symbol": "hexagon-open"},
    "rope+yarn": {"color": OKABE_ITO[2], "dash": "dash", "symbol": "triangle-up-open"},
    "rope+llama3": {"color": OKABE_ITO[5], "dash": "dashdot", "symbol": "square-open"},
    "rope+pi+ft": {"color": OKABE_ITO[4], "dash": "solid", "symbol": "circle-x"},
    "rope+ft": {"color": OKABE_ITO[0], "dash": "longdash", "symbol": "cross"},
}

#: A name outside the registry (e.g. chapter 9's "rope+yarn (no temp.)" ablation row): grey with its
#: own dash and marker, so it never looks like a registered scheme it is compared with.
_FALLBACK = {"color": OKABE_ITO[7], "dash": "longdashdot", "symbol": "star-open"}


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


def comparison_markdown(rows: Sequence[Mapping[str, str]], columns: Sequence[str]) -> str:
    """A Markdown pipe table: one header row from ``columns``, one row per mapping in ``rows``.

    Each row must have a value for every column; ``|`` inside a value is escaped and newlines become
    spaces, so a cell can never break the table. Display it with ``IPython.display.Markdown``.

    Args:
        rows: one mapping ``{column: cell text}`` per table row.
        columns: the column names, in order; they make the header row.

    Returns:
        The table, lines joined with ``"\\n"``.

    Raises:
        TypeError: a cell is not a string.
        ValueError: ``columns`` is empty or a row lacks a column.
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
    train_len = check_positive_int("train_len", train_len)
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
    ranges = [{"xaxis.range": [-0.5, t - 0.5]} for t in lengths]
    fig = slider_figure(steps, labels, prefix="evaluation length T = ", step_layouts=ranges)
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
    window = check_positive_int("window", window)
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
        steps, means = block_means(values, window)  # [n // window], last step of each window
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


def _spread(values: Sequence[float]) -> tuple[float, float, float]:
    """``(median, min, max)`` of accuracies in [0, 1] (:func:`lib.lab.seed_spread`), to 2 decimals."""
    array = np.asarray(values, dtype=np.float64)
    if array.size == 0 or not np.all(np.isfinite(array)):
        raise ValueError(f"every value must be a finite accuracy, got {list(values)}")
    if np.any(array < 0) or np.any(array > 1):
        raise ValueError(f"accuracies must lie in [0, 1], got {list(values)}")
    median, low, high = (round(float(v), 2) + 0.0 for v in seed_spread(array))
    return median, low, high


def extrapolation_figure(
    accuracy: Mapping[str, Mapping[str, Mapping[int, Sequence[float]]]],
    groups: Mapping[str, Sequence[str]],
    train_len: int,
    *,
    condition_labels: Mapping[str, str] | None = None,
    intervals: Mapping[str, Mapping[str, Mapping[int, Sequence[float]]]] | None = None,
) -> go.Figure:
    """Accuracy against length with error bars; buttons and a menu switch views.

    With ``intervals`` each point is the given estimate with its interval (the lab's mean over
    seeds with its t-interval, :meth:`lib.lab.ExtrapolationLab.interval`); without, the
    median over seeds with the range from the worst to the best seed.

    One trace per variant; its point at length ``T`` is the median over seeds and its error bar
    runs from the worst to the best seed (:func:`lib.lab.seed_spread`; for an even number of seeds
    the median is the lower middle seed, as in :meth:`lib.lab.ExtrapolationLab.median`). Buttons
    (``layout.updatemenus[0]``) switch the condition by restyling every trace's ``y`` and
    ``error_y``; a dropdown (``layout.updatemenus[1]``) switches the group of variants by
    restyling ``visible``. The two act on different trace properties, so either can be changed
    without undoing the other, and neither needs a kernel.

    Args:
        accuracy: ``{variant: {condition: {T: per-seed accuracies}}}``; every variant must
            have the same conditions and lengths.
        groups: ``{label: variants shown}``, in menu order; every name must be in ``accuracy``.
        train_len: the training length ``L`` (the x axis is in multiples of it).
        condition_labels: button label per condition (default: the condition names).
        intervals: ``{variant: {condition: {T: (estimate, low, high)}}}`` for every point of
            ``accuracy``, with ``low <= estimate <= high`` in [0, 1]; drawn instead of the
            median and range over seeds.

    Returns:
        The figure, showing the first condition and the first group.

    Raises:
        ValueError: empty input, mismatched conditions or lengths, an unknown variant in a
            group, a non-finite accuracy or one outside [0, 1], an interval missing, out of
            order or outside [0, 1], or ``train_len < 1``.
    """
    train_len = check_positive_int("train_len", train_len)
    if not accuracy or not groups:
        raise ValueError("accuracy and groups must each hold at least one entry")
    names = list(accuracy)
    conditions = list(accuracy[names[0]])
    lengths = sorted(accuracy[names[0]][conditions[0]])
    for name in names:
        if list(accuracy[name]) != conditions:
            raise ValueError(f"{name!r} has conditions {list(accuracy[name])}, not {conditions}")
        for condition in conditions:
            if sorted(accuracy[name][condition]) != lengths:
                raise ValueError(f"{name!r}/{condition!r} does not have the lengths {lengths}")
    for label, members in groups.items():
        unknown = [m for m in members if m not in accuracy]
        if unknown:
            raise ValueError(f"group {label!r} names unknown variants {unknown}")
    labels = dict(condition_labels or {})
    stats = {
        (name, c): [_spread(accuracy[name][c][t]) for t in lengths]
        for name in names
        for c in conditions
    }
    what = "median accuracy"
    if intervals is not None:
        what = "mean accuracy"
        for name in names:
            for c in conditions:
                rows = []
                for t in lengths:
                    try:
                        given = intervals[name][c][t]
                    except KeyError:
                        raise ValueError(f"intervals has no entry for {name!r}/{c!r}/{t}") from None
                    where = f"intervals[{name!r}][{c!r}][{t}]"
                    values = check_real_array(where, given, sequences=True)
                    if values.shape != (3,):
                        raise ValueError(f"{where} must be (estimate, low, high), got {given!r}")
                    estimate, low, high = (float(v) for v in values)
                    if not 0.0 <= low <= estimate <= high <= 1.0:
                        raise ValueError(
                            f"intervals[{name!r}][{c!r}][{t}] must be (estimate, low, high) "
                            f"with 0 <= low <= estimate <= high <= 1, got {tuple(given)}"
                        )
                    rows.append((round(estimate, 2), round(low, 2), round(high, 2)))
                stats[(name, c)] = rows

    def y_and_error(condition: str) -> tuple[list[list[float]], list[dict]]:
        ys, errors = [], []
        for name in names:
            rows = stats[(name, condition)]
            ys.append([m for m, _, _ in rows])
            errors.append(
                {
                    "type": "data",
                    "symmetric": False,
                    "array": [round(hi - m, 2) + 0.0 for m, _, hi in rows],
                    "arrayminus": [round(m - lo, 2) + 0.0 for m, lo, _ in rows],
                    "thickness": 1.5,
                    "width": 4,
                }
            )
        return ys, errors

    first_group = set(groups[next(iter(groups))])
    ys, errors = y_and_error(conditions[0])
    fig = go.Figure()
    for k, name in enumerate(names):
        style = _style(name)
        fig.add_trace(
            go.Scatter(
                x=[t / train_len for t in lengths],
                y=ys[k],
                error_y=errors[k],
                name=name,
                mode="lines+markers",
                visible=name in first_group,
                line={"color": style["color"], "dash": style["dash"], "width": 2.5},
                marker={"symbol": style["symbol"], "size": 10},
                hovertemplate=(f"{name}<br>T = %{{x}}×L<br>{what} %{{y:.2f}}<extra></extra>"),
            )
        )
    condition_buttons = []
    for condition in conditions:
        ys, errors = y_and_error(condition)
        condition_buttons.append(
            {
                "label": labels.get(condition, condition),
                "method": "restyle",
                "args": [{"y": ys, "error_y": errors}],
            }
        )
    group_buttons = [
        {
            "label": label,
            "method": "restyle",
            "args": [{"visible": [name in set(members) for name in names]}],
        }
        for label, members in groups.items()
    ]
    fig.update_layout(
        updatemenus=[
            {
                "type": "buttons",
                "direction": "right",
                "buttons": condition_buttons,
                "active": 0,
                "showactive": True,
                "x": 0.0,
                "xanchor": "left",
                "y": 1.18,
                "yanchor": "bottom",
            },
            {
                "type": "dropdown",
                "buttons": group_buttons,
                "active": 0,
                "showactive": True,
                "x": 1.0,
                "xanchor": "right",
                "y": 1.18,
                "yanchor": "bottom",
            },
        ],
        margin={"t": 110},
    )
    fig.update_xaxes(
        title="evaluation length T (multiples of the training length L)",
        type="log",
        tickvals=[t / train_len for t in lengths],
        ticktext=[f"{t / train_len:g}×L ({t})" for t in lengths],
    )
    fig.update_yaxes(title="accuracy (median; bars: worst to best seed)", range=[-0.02, 1.05])
    return fig


def pair_usage_figure(
    shares: Mapping[str, Sequence[Sequence[float]]], wavelengths: Sequence[float]
) -> go.Figure:
    """Share of each rotary pair in a head's q·k magnitude: median bar, min–max error bar.

    The median and range over seeds are :func:`lib.lab.seed_spread`'s (for an even number of
    seeds, the lower of the middle two, as :meth:`lib.lab.ExtrapolationLab.median`).

    Args:
        shares: ``{head label: per-seed shares}``, each ``[S][pairs]`` with rows summing to 1.
        wavelengths: ``2π/θ_i`` of each pair in tokens (the x tick labels), one per pair.

    Returns:
        A grouped bar chart, one group per pair (fast pairs left), one colour per head label.

    Raises:
        ValueError: empty input, rows of the wrong length, or a share outside [0, 1].
    """
    if not shares:
        raise ValueError("shares must hold at least one head")
    n_pairs = len(wavelengths)
    fig = go.Figure()
    for k, (label, rows) in enumerate(shares.items()):
        array = np.asarray(rows, dtype=np.float64)
        if array.ndim != 2 or array.shape[1] != n_pairs or array.shape[0] == 0:
            raise ValueError(f"shares[{label!r}] must be [S >= 1][{n_pairs}] per-seed shares")
        if not np.all(np.isfinite(array)) or np.any(array < 0) or np.any(array > 1):
            raise ValueError(f"shares[{label!r}] must lie in [0, 1]")
        median, low, high = seed_spread(array)  # [pairs] each
        fig.add_trace(
            go.Bar(
                x=list(range(n_pairs)),
                y=rounded(median, digits=2).tolist(),
                error_y={
                    "type": "data",
                    "symmetric": False,
                    "array": rounded(high - median, digits=2).tolist(),
                    "arrayminus": rounded(median - low, digits=2).tolist(),
                },
                name=label,
                marker={"color": palette(k)},
                hovertemplate=f"{label}<br>pair %{{x}}<br>share %{{y:.2f}}<extra></extra>",
            )
        )
    fig.update_layout(barmode="group")
    fig.update_xaxes(
        title="rotary pair i (wavelength 2π/θ_i in tokens)",
        tickvals=list(range(n_pairs)),
        ticktext=[f"{i} ({w:.3g})" for i, w in enumerate(rounded(wavelengths, digits=3))],
    )
    fig.update_yaxes(title="share of ‖q_i‖·‖k_i‖ (median; bars: seed range)", rangemode="tozero")
    return fig
