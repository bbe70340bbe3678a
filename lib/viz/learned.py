"""Figures for chapter 7 (learned absolute positions): what a trained position table looks like.

A learned table ``P: [max_len, d_model]`` (GPT-2's ``wpe``, BERT's ``position_embeddings``;
Radford et al. 2019; Devlin et al. 2019, arXiv:1810.04805) starts as random noise and is shaped by
training alone. :mod:`lib.similarity` measures that shape (:func:`lib.similarity.cosine_matrix`,
:func:`lib.similarity.mean_similarity_by_offset`, :func:`lib.similarity.principal_components`);
these builders draw it:

- :func:`similarity_window_slider`: the similarity matrix as a heatmap, one slider step per window
  of positions (plus an optional strided overview of the whole table);
- :func:`offset_similarity_curves`: mean similarity against offset, one line per table;
- :func:`components_slider`: principal component ``j`` against position, one slider step per ``j``.

Figure data is rounded (:func:`lib.viz.core.rounded`), so the saved figures
do not depend on the CPU or thread count; sliders work in a static page with no kernel.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import plotly.graph_objects as go
import torch

from lib._checks import check_floating, check_index, check_int, check_positive_int
from lib.similarity import cosine_matrix
from lib.viz.core import (
    DIVERGING,
    LEGEND_ABOVE,
    OKABE_ITO,
    apply_theme,
    palette,
    rounded,
    slider_figure,
)

__all__ = ["components_slider", "offset_similarity_curves", "similarity_window_slider"]


def similarity_window_slider(
    table: torch.Tensor,
    windows: Sequence[tuple[int, int]],
    *,
    overview_stride: int | None = None,
    active: int = 0,
    digits: int = 3,
    caption: str | None = None,
    alt: str | None = None,
) -> go.Figure:
    """Heatmaps of ``cos(P[p], P[q])``, one slider step per window of positions.

    Each window ``(start, stop)`` shows positions ``start … stop − 1`` against themselves. With
    ``overview_stride = s`` a last step shows the whole table at every s-th position (a zoomed-out
    view). The colour scale is fixed to [−1, 1], diverging around 0, so steps compare; axes carry
    the true positions (0 at the top). Values keep ``digits`` significant digits (default 3).

    Equation:
        cos(P[p], P[q]) = P[p]·P[q] / (‖P[p]‖ ‖P[q]‖)

    Args:
        table: the position table ``P``, one row per position.
        windows: ``(start, stop)`` pairs, one slider step each.
        overview_stride: the stride ``s`` of a last, zoomed-out step, or None for no such step.
        active: the step shown first.
        digits: significant digits the drawn cosines keep, >= 1.
        caption, alt: passed to :func:`lib.viz.core.apply_theme`.

    Returns:
        A figure with one heatmap per step and one slider.

    Raises:
        TypeError: ``table`` is not a floating tensor, or a window bound, ``overview_stride``,
            ``digits`` or ``active`` is not an int.
        ValueError: ``table`` is not 2-D, an empty or out-of-range window, ``overview_stride < 1``,
            ``digits < 1``, ``active`` out of range.

    Shapes:
        table: [L, d]
        windows: each 0 <= start < stop <= L
    """
    table = check_floating("table", table)
    if table.dim() != 2:
        raise ValueError(f"table must be 2-D [positions, d_model], got shape {list(table.shape)}")
    sim = cosine_matrix(table)  # [L, L] float64
    length = sim.shape[0]
    digits = check_positive_int("digits", digits)
    if isinstance(windows, str) or not isinstance(windows, Sequence) or not windows:
        raise ValueError(f"windows must be a non-empty list of (start, stop), got {windows!r}")
    views: list[tuple[list[int], str]] = []
    for window in windows:
        if not isinstance(window, Sequence) or len(window) != 2:
            raise ValueError(f"windows must hold (start, stop) pairs, got {window!r}")
        start = check_int("windows[...][0]", window[0], minimum=0)
        stop = check_int("windows[...][1]", window[1], minimum=0)
        if not start < stop <= length:
            raise ValueError(
                f"windows must satisfy 0 <= start < stop <= L = {length}, got ({start}, {stop})"
            )
        views.append((list(range(start, stop)), f"{start}–{stop - 1}"))
    if overview_stride is not None:
        stride = check_positive_int("overview_stride", overview_stride)
        views.append((list(range(0, length, stride)), f"all, every {stride}th"))
    active = check_index("active", active, len(views))

    steps = []
    for positions, _ in views:
        index = torch.tensor(positions)
        block = rounded(sim[index][:, index], digits)  # [n, n]
        steps.append(
            [
                go.Heatmap(
                    z=block.tolist(),
                    x=positions,
                    y=positions,
                    colorscale=DIVERGING,
                    zmin=-1.0,
                    zmax=1.0,
                    colorbar={"title": {"text": "cos"}},
                    hovertemplate="p = %{y}, q = %{x}<br>cos = %{z:.3f}<extra></extra>",
                )
            ]
        )
    fig = slider_figure(steps, [label for _, label in views], prefix="positions ", active=active)
    fig.update_xaxes(title="position q", constrain="domain")
    fig.update_yaxes(title="position p", autorange="reversed", scaleanchor="x")
    fig.update_layout(height=560)
    return apply_theme(fig, caption=caption, alt=alt)


def offset_similarity_curves(
    curves: Mapping[str, torch.Tensor],
    *,
    caption: str | None = None,
    alt: str | None = None,
) -> go.Figure:
    """Mean cosine similarity against offset ``k``, one line per table.

    ``curves[name]`` holds offsets 0 … K, e.g. from
    :func:`lib.similarity.mean_similarity_by_offset`. Lines take Okabe–Ito colours in order; a
    dotted zero line marks "unrelated".

    Args:
        curves: ``{table name: [K + 1] mean cosines}``, one line each.
        caption, alt: passed to :func:`lib.viz.core.apply_theme`.

    Returns:
        A figure with one line per curve and a dotted line at 0.

    Raises:
        TypeError: a curve is not a floating tensor.
        ValueError: ``curves`` is empty or a curve is not 1-D.

    Shapes:
        curves[name]: [K + 1]
    """
    if not isinstance(curves, Mapping) or not curves:
        raise ValueError(
            f"curves must be a non-empty mapping name -> [K + 1] tensor, got {curves!r}"
        )
    fig = go.Figure()
    for j, (name, curve) in enumerate(curves.items()):
        values = rounded(check_floating(f"curves[{name!r}]", curve))
        if values.ndim != 1:
            raise ValueError(
                f"curves[{name!r}] must be 1-D [K + 1], got shape {list(values.shape)}"
            )
        fig.add_trace(
            go.Scatter(
                x=list(range(len(values))),
                y=values.tolist(),
                mode="lines",
                name=name,
                line={"color": palette(j), "width": 2.5},
                hovertemplate="k = %{x}<br>mean cos = %{y:.3f}<extra>" + name + "</extra>",
            )
        )
    fig.add_hline(y=0.0, line={"dash": "dot", "color": OKABE_ITO[7]})
    fig.update_xaxes(title="offset k (positions apart)")
    fig.update_yaxes(title="mean cos(P[p], P[p + k])")
    fig.update_layout(
        height=440,
        legend=LEGEND_ABOVE,
    )
    return apply_theme(fig, caption=caption, alt=alt)


def components_slider(
    scores: torch.Tensor,
    share: torch.Tensor,
    *,
    first: int = 0,
    periods: Sequence[float] | None = None,
    zoom: int | None = 64,
    active: int = 0,
    caption: str | None = None,
    alt: str | None = None,
) -> go.Figure:
    """Principal component ``j`` of a position table against position, one slider step per ``j``.

    ``scores``/``share`` come from :func:`lib.similarity.principal_components`; row ``r`` of
    ``scores`` is position ``first + r``. Each step's title gives the component's share of the
    variance and, if ``periods`` is given, its dominant period in positions. With ``zoom = m`` a
    right-hand panel repeats the first ``m`` positions, where fast waves are visible. One y-range
    serves every step and both panels.

    Args:
        scores: the positions' coordinates on the principal components, one column per component.
        share: each component's share of the variance.
        first: the position of row 0 of ``scores``.
        periods: each component's dominant period in positions, or None to leave it out.
        zoom: the number ``m`` of first positions the right-hand panel repeats, or None for no panel.
        active: the component shown first.
        caption, alt: passed to :func:`lib.viz.core.apply_theme`.

    Returns:
        A figure with the traces of one component per step and one slider.

    Raises:
        TypeError: ``scores`` or ``share`` is not a floating tensor, or ``first``, ``zoom`` or
            ``active`` is not an int.
        ValueError: shapes do not match, ``first < 0``, ``zoom < 2``, ``active`` out of range.

    Shapes:
        scores: [L', n]
        share: [n]
        periods: n numbers
    """
    scores = check_floating("scores", scores)
    share = check_floating("share", share)
    if scores.dim() != 2 or share.shape != (scores.shape[1],):
        raise ValueError(
            "scores must be [L', n] and share [n], got shapes "
            f"{list(scores.shape)} and {list(share.shape)}"
        )
    first = check_int("first", first, minimum=0)
    if zoom is not None:
        zoom = min(check_int("zoom", zoom, minimum=2), scores.shape[0])
    n = scores.shape[1]
    if periods is not None and len(periods) != n:
        raise ValueError(f"periods must have one entry per component (n = {n}), got {periods!r}")
    values = rounded(scores)  # [L', n]
    positions = list(range(first, first + scores.shape[0]))
    bound = float(np.abs(values).max()) * 1.05
    line = {"color": OKABE_ITO[0], "width": 1.5}
    hover = "position %{x}<br>score %{y:.3f}<extra></extra>"
    steps, titles = [], []
    for j in range(n):
        traces = [
            go.Scatter(
                x=positions,
                y=values[:, j].tolist(),
                mode="lines",
                line=line,
                name=f"PC {j + 1}",
                hovertemplate=hover,
            )
        ]
        if zoom is not None:
            traces.append(
                go.Scatter(
                    x=positions[:zoom],
                    y=values[:zoom, j].tolist(),
                    mode="lines+markers",
                    line=line,
                    marker={"size": 4},
                    name=f"PC {j + 1}, zoomed",
                    hovertemplate=hover,
                    xaxis="x2",
                    yaxis="y2",
                )
            )
        steps.append(traces)
        title = f"PC {j + 1}: {100 * float(share[j]):.1f} % of the variance"
        if periods is not None:
            title += f", dominant period ≈ {float(periods[j]):.1f} positions"
        titles.append(title)
    fig = slider_figure(
        steps,
        [str(j + 1) for j in range(n)],
        prefix="component ",
        active=check_int("active", active, minimum=0),
        step_titles=titles,
    )
    fig.update_layout(
        showlegend=False,
        height=500,
        xaxis={"title": {"text": "position p"}, "domain": [0.0, 0.6 if zoom else 1.0]},
        yaxis={"title": {"text": "score"}, "range": [-bound, bound]},
    )
    if zoom is not None:
        fig.update_layout(
            xaxis2={
                "title": {"text": f"the first {zoom} positions"},
                "domain": [0.68, 1.0],
                "anchor": "y2",
            },
            yaxis2={"range": [-bound, bound], "anchor": "x2", "matches": "y"},
        )
    return apply_theme(fig, title=titles[fig.layout.sliders[0].active], caption=caption, alt=alt)
