"""Figures for chapter 5 (attention cannot see order): weights and outputs move with their tokens.

Every builder takes tensors (and token strings) and returns a plotly figure whose slider works in a
static page. Figure data is rounded with :func:`lib.viz.core.rounded`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import plotly.graph_objects as go
import torch
from plotly.subplots import make_subplots

from lib.viz.core import (
    SEQUENTIAL,
    add_step_slider,
    apply_theme,
    data_array,
    palette,
    rounded,
    signed_scale,
)

__all__ = ["output_shift_bars", "permutation_slider"]


def _check_tokens(name: str, tokens: object) -> list[str]:
    if isinstance(tokens, str) or not isinstance(tokens, Sequence):
        raise TypeError(f"{name} must be a sequence of token strings, got {type(tokens).__name__}")
    if not tokens or not all(isinstance(t, str) for t in tokens):
        raise ValueError(f"{name} must be a non-empty sequence of strings, got {tokens!r}")
    return list(tokens)


def permutation_slider(
    sentences: Sequence[Sequence[str]],
    weights: Sequence[torch.Tensor],
    outputs: Sequence[torch.Tensor],
    *,
    labels: Sequence[str] | None = None,
    caption: str | None = None,
    alt: str | None = None,
) -> go.Figure:
    """One slider step per word order: attention weights (left) and output rows (right).

    For self-attention with no position signal, reordering the tokens by a permutation ``π``
    reorders the weights as ``W' = P W Pᵀ`` and the outputs as ``Y' = P Y`` (Vaswani et al. 2017,
    arXiv:1706.03762, eq. 1 has no position in it). Stepping through orders shows every row and
    column moving with its token while its values stay the same.

    Args:
        sentences: ``S`` word orders, each ``T`` token strings (the axis labels of that step).
        weights: ``S`` attention-weight matrices ``[T, T]`` (query rows, key columns), e.g. one
            head's or the mean over heads.
        outputs: ``S`` attention outputs ``[T, d]``, row ``t`` for token ``t`` of that step.
        labels: short slider label per step (default ``"1"``, ``"2"``, ...); the full sentence
            of the current step is the figure's title.
        caption, alt: passed to :func:`lib.viz.core.apply_theme`.

    Returns:
        A figure with ``2·S`` heatmap traces and one slider (a static page needs no kernel).

    Raises:
        TypeError: a sentence is not a sequence of strings, or a matrix is not a tensor/array.
        ValueError: the three sequences differ in length, or a matrix does not fit its sentence.
    """
    if not (len(sentences) == len(weights) == len(outputs)) or not sentences:
        raise ValueError(
            "sentences, weights and outputs must be non-empty and of one length (one per step), "
            f"got {len(sentences)}, {len(weights)}, {len(outputs)}"
        )
    steps = []
    for s, (sentence, w_in, y_in) in enumerate(zip(sentences, weights, outputs, strict=True)):
        tokens = _check_tokens(f"sentences[{s}]", sentence)
        w_arr = data_array(f"weights[{s}]", w_in, 2, "2-D [T, T]", finite=False)
        y_arr = data_array(f"outputs[{s}]", y_in, 2, "2-D [T, d]", finite=False)
        t = len(tokens)
        if w_arr.shape != (t, t):
            raise ValueError(f"weights[{s}] must be [T, T] = [{t}, {t}], got {list(w_arr.shape)}")
        if y_arr.shape[0] != t:
            raise ValueError(f"outputs[{s}] must be [T={t}, d], got {list(y_arr.shape)}")
        steps.append((tokens, w_arr, y_arr))
    d = steps[0][2].shape[1]
    if any(y.shape[1] != d for _, _, y in steps):
        raise ValueError("every outputs[s] must have the same width d")
    if labels is None:
        labels = [str(k + 1) for k in range(len(steps))]
    if len(labels) != len(steps):
        raise ValueError(f"labels must have one entry per step ({len(steps)}), got {len(labels)}")

    w_max = max(float(w.max()) for _, w, _ in steps)
    y_bound = max(float(np.abs(y).max()) for _, _, y in steps) or 1.0
    fig = make_subplots(
        rows=1,
        cols=2,
        column_widths=[0.4, 0.6],
        horizontal_spacing=0.2,
        subplot_titles=("attention weights", "output vectors"),
    )
    for k, (tokens, w, y) in enumerate(steps):
        fig.add_trace(
            go.Heatmap(
                z=w.tolist(),
                customdata=[[[q, key] for key in tokens] for q in tokens],
                colorscale=SEQUENTIAL,
                zmin=0.0,
                zmax=w_max,
                colorbar={"x": 0.335, "len": 0.9, "thickness": 12, "title": {"text": "weight"}},
                hovertemplate="query %{customdata[0]} (pos %{y})<br>key %{customdata[1]} "
                "(pos %{x})<br>weight %{z:.3f}<extra></extra>",
                visible=k == 0,
            ),
            row=1,
            col=1,
        )
        fig.add_trace(
            go.Heatmap(
                z=y.tolist(),
                customdata=[[tok] * y.shape[1] for tok in tokens],
                **signed_scale(y_bound),
                colorbar={"x": 1.01, "len": 0.9, "thickness": 12, "title": {"text": "value"}},
                hovertemplate="token %{customdata} (pos %{y})<br>dim %{x}<br>"
                "value %{z:.3f}<extra></extra>",
                visible=k == 0,
            ),
            row=1,
            col=2,
        )

    def step_layout(tokens: list[str]) -> dict:
        ticks = [f"{tok} ({i})" for i, tok in enumerate(tokens)]
        return {
            "title.text": "“" + " ".join(tokens) + "”",
            "xaxis.ticktext": ticks,
            "yaxis.ticktext": ticks,
            "yaxis2.ticktext": ticks,
        }

    tick_positions = list(range(max(len(tokens) for tokens, _, _ in steps)))
    first = step_layout(steps[0][0])
    fig.update_xaxes(
        row=1, col=1, title="key", tickmode="array", tickvals=tick_positions,
        ticktext=first["xaxis.ticktext"], tickangle=-45,
    )  # fmt: skip
    fig.update_yaxes(
        row=1, col=1, title="query", tickmode="array", tickvals=tick_positions,
        ticktext=first["yaxis.ticktext"], autorange="reversed",
    )  # fmt: skip
    fig.update_xaxes(row=1, col=2, title="output dimension")
    fig.update_yaxes(
        row=1, col=2, tickmode="array", tickvals=tick_positions,
        ticktext=first["yaxis2.ticktext"], autorange="reversed",
    )  # fmt: skip
    add_step_slider(
        fig, labels, n_static=0, per_step=2, prefix="word order: ", pad_t=90,
        step_layouts=[step_layout(tokens) for tokens, _, _ in steps],
    )  # fmt: skip
    fig.update_layout(height=540)
    return apply_theme(fig, title=first["title.text"], caption=caption, alt=alt)


def output_shift_bars(
    tokens: Sequence[str],
    shifts: Mapping[str, torch.Tensor | np.ndarray | Sequence[float]],
    *,
    y_title: str = "‖change of the token's output‖",
    caption: str | None = None,
    alt: str | None = None,
) -> go.Figure:
    """Grouped bars: how far each token's output moves when the sentence is reordered.

    One group per token and one bar colour per setting (e.g. ``"no position signal"`` versus
    ``"sinusoidal positions added"``). Without positions every bar is 0 (permutation
    equivariance); with a position signal the moved tokens' outputs change.

    Args:
        tokens: ``T`` bar-group labels (unique, e.g. ``"cat 1→5"``).
        shifts: setting name → ``[T]`` non-negative values.
        y_title: the y-axis title.
        caption, alt: passed to :func:`lib.viz.core.apply_theme`.

    Returns:
        A bar figure with one trace per setting.

    Raises:
        TypeError: ``tokens`` is not a sequence of strings or ``shifts`` not a mapping.
        ValueError: labels repeat, ``shifts`` is empty, or a series is not ``[T]``.
    """
    labels = _check_tokens("tokens", tokens)
    if len(set(labels)) != len(labels):
        raise ValueError(f"tokens must be unique bar labels, got {labels!r}")
    if not isinstance(shifts, Mapping):
        raise TypeError(f"shifts must be a mapping name -> values, got {type(shifts).__name__}")
    if not shifts:
        raise ValueError("shifts must hold at least one series")
    fig = go.Figure()
    for n, (name, values) in enumerate(shifts.items()):
        array = rounded(values)
        if array.shape != (len(labels),):
            raise ValueError(
                f"shifts[{name!r}] must have shape [T={len(labels)}], got {list(array.shape)}"
            )
        fig.add_trace(
            go.Bar(
                x=labels,
                y=array.tolist(),
                name=str(name),
                marker_color=palette(n),
                text=[f"{v:.2f}" for v in array],
                textposition="outside",
                hovertemplate="%{x}<br>%{y:.3g}<extra>" + str(name) + "</extra>",
            )
        )
    fig.update_layout(barmode="group", legend={"orientation": "h", "y": 1.12, "x": 0})
    fig.update_xaxes(title="token (position in sentence 1 → in sentence 2)")
    fig.update_yaxes(title=y_title, rangemode="tozero")
    return apply_theme(fig, caption=caption, alt=alt, height=380)
