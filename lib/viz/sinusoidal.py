"""Figures for chapter 6 (sinusoidal positional encoding).

The encoding itself is :mod:`lib.sinusoidal` (Vaswani et al. 2017, arXiv:1706.03762, section 3.5):
``pe[p, 2i] = sin(p·w_i)``, ``pe[p, 2i+1] = cos(p·w_i)``, ``w_i = base^(−2i/d_model)``. These
builders take its tables (tensors) and return plotly figures; sliders work in a static page with
no kernel, and all data is rounded with :func:`lib.viz.core.rounded`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np
import plotly.graph_objects as go
import torch
from plotly.subplots import make_subplots

from lib._checks import check_index, check_int, check_positive_float
from lib.viz.core import (
    DIVERGING,
    OKABE_ITO,
    apply_theme,
    data_array,
    heatmap_slider,
    palette,
    rounded,
    slider_figure,
)

__all__ = [
    "dot_product_curves",
    "layout_heatmaps",
    "pe_heatmap_slider",
    "shift_rotation_slider",
    "wavelength_slider",
]

_ArrayLike = torch.Tensor | np.ndarray


def pe_heatmap_slider(
    tables: Sequence[_ArrayLike],
    labels: Sequence[str],
    *,
    prefix: str = "base = ",
    active: int = 0,
    caption: str | None = None,
    alt: str | None = None,
) -> go.Figure:
    """Positions × dimensions heatmaps of sinusoidal tables, one per slider step.

    Each table is ``pe: [max_len, d_model]`` (e.g. :func:`lib.sinusoidal.sinusoidal_pe` for one
    base or width); rows are positions ``p`` (top to bottom), columns dimensions. The colour scale
    is fixed to [−1, 1] (sin and cos never leave it), diverging around 0.

    Args:
        tables: one ``[max_len, d_model]`` table per step (shapes may differ between steps).
        labels: the slider label of each step (e.g. the base).
        prefix: text before the current label.
        active: the step shown first.
        caption, alt: passed to :func:`lib.viz.core.apply_theme`.

    Returns:
        A figure with one heatmap per step and one slider.

    Raises:
        TypeError / ValueError: a table is not a 2-D tensor/array; ``labels`` or ``active`` do not
            fit ``tables``.
    """
    return heatmap_slider(
        tables, labels, name="tables", prefix=prefix,
        x_title="dimension (columns 2i = sin, 2i+1 = cos)", y_title="position p",
        zmid=None, zmin=-1.0, zmax=1.0, active=active, caption=caption, alt=alt, height=480,
        hover="position %{y}<br>dimension %{x}<br>value %{z:.3f}<extra></extra>",
    )  # fmt: skip


def layout_heatmaps(
    tables: Mapping[str, _ArrayLike],
    *,
    caption: str | None = None,
    alt: str | None = None,
) -> go.Figure:
    """Side-by-side heatmaps of the same positions in several layouts (e.g. interleaved, concat).

    Args:
        tables: panel title → ``[max_len, d_model]`` table; every table has the same shape.
        caption, alt: passed to :func:`lib.viz.core.apply_theme`.

    Returns:
        A figure with one heatmap panel per table, left to right, on one colour scale.

    Raises:
        TypeError: ``tables`` is not a mapping, or a table is not a tensor/array.
        ValueError: ``tables`` is empty or the shapes differ.
    """
    if not isinstance(tables, Mapping):
        raise TypeError(f"tables must be a mapping title -> table, got {type(tables).__name__}")
    if not tables:
        raise ValueError("tables must hold at least one table")
    arrays = {
        name: data_array(f"tables[{name!r}]", t, 2, "2-D [positions, d_model]", finite=False)
        for name, t in tables.items()
    }
    shapes = {a.shape for a in arrays.values()}
    if len(shapes) != 1:
        raise ValueError(f"every table must have the same shape, got {sorted(shapes)}")
    fig = make_subplots(
        rows=1, cols=len(arrays), subplot_titles=list(arrays), shared_yaxes=True,
        horizontal_spacing=0.06,
    )  # fmt: skip
    for col, array in enumerate(arrays.values(), start=1):
        fig.add_trace(
            go.Heatmap(
                z=array.tolist(),
                colorscale=DIVERGING,
                zmin=-1.0,
                zmax=1.0,
                showscale=col == len(arrays),
                hovertemplate="position %{y}<br>dimension %{x}<br>value %{z:.3f}<extra></extra>",
            ),
            row=1,
            col=col,
        )
        fig.update_xaxes(title="dimension", row=1, col=col)
    fig.update_yaxes(title="position p", autorange="reversed", row=1, col=1)
    fig.update_yaxes(autorange="reversed")
    return apply_theme(fig, caption=caption, alt=alt, height=420)


def dot_product_curves(
    offsets: _ArrayLike | Sequence[int],
    curves: Mapping[str, _ArrayLike],
    *,
    y_title: str = "PE(p) · PE(p + k)",
    caption: str | None = None,
    alt: str | None = None,
) -> go.Figure:
    """Lines of a similarity against the offset ``k``, one per named curve (e.g. one per ``p``).

    For the sinusoidal encoding ``PE(p)·PE(p+k) = Σ_i cos(k·w_i)`` does not depend on ``p``, so
    curves for different ``p`` lie on top of each other (later curves are drawn dashed so the ones
    underneath stay visible).

    Args:
        offsets: ``[K]`` offsets ``k`` (the x axis).
        curves: name → ``[K]`` values.
        y_title: the y-axis title.
        caption, alt: passed to :func:`lib.viz.core.apply_theme`.

    Returns:
        A figure with one line per curve.

    Raises:
        TypeError / ValueError: ``curves`` is not a non-empty mapping of ``[K]`` vectors.
    """
    x = data_array("offsets", offsets, 1, sequences=True, finite=False)
    if not isinstance(curves, Mapping):
        raise TypeError(f"curves must be a mapping name -> values, got {type(curves).__name__}")
    if not curves:
        raise ValueError("curves must hold at least one curve")
    fig = go.Figure()
    dashes = ("solid", "dash", "dot", "dashdot")
    for n, (name, values) in enumerate(curves.items()):
        y = data_array(f"curves[{name!r}]", values, 1, length=len(x), sequences=True, finite=False)
        fig.add_trace(
            go.Scatter(
                x=x.tolist(),
                y=y.tolist(),
                mode="lines",
                name=str(name),
                line={"color": palette(n), "dash": dashes[n % len(dashes)],
                      "width": 3 if n == 0 else 2},
                hovertemplate="k = %{x}<br>%{y:.3f}<extra>" + str(name) + "</extra>",
            )
        )  # fmt: skip
    fig.update_xaxes(title="offset k")
    fig.update_yaxes(title=y_title)
    fig.update_layout(legend={"orientation": "h", "y": 1.12, "x": 0})
    return apply_theme(fig, caption=caption, alt=alt, height=400)


def wavelength_slider(
    d_models: Sequence[int],
    wavelengths: Sequence[Mapping[str, _ArrayLike]],
    *,
    base: float = 10000.0,
    active: int = 0,
    caption: str | None = None,
    alt: str | None = None,
) -> go.Figure:
    """Wavelength ``2π/w_i`` (tokens, log scale) of every pair ``i``, one slider step per width.

    Each step shows one line per layout (e.g. the paper's ``w_i = base^(−2i/d)`` and tensor2tensor's
    ``w_i = base^(−i/(d/2−1))``), plus dotted reference lines at ``2π`` and ``2π·base``.

    Args:
        d_models: the width of each step (slider labels).
        wavelengths: per step, layout name → ``[d_model/2]`` wavelengths; the same names every step.
        base: the base, for the upper reference line; a real number > 0.
        active: the step shown first.
        caption, alt: passed to :func:`lib.viz.core.apply_theme`.

    Returns:
        A figure with one line per layout and step, one slider, and the two reference lines.

    Raises:
        TypeError / ValueError: lengths or names do not match, a series is not ``[d_model/2]``.
    """
    base = check_positive_float("base", base)
    if len(d_models) != len(wavelengths) or not d_models:
        raise ValueError(
            "d_models and wavelengths must be non-empty and of one length, "
            f"got {len(d_models)} and {len(wavelengths)}"
        )
    names = list(wavelengths[0])
    if not names:
        raise ValueError("wavelengths[0] must name at least one layout")
    steps = []
    for k, (d, series) in enumerate(zip(d_models, wavelengths, strict=True)):
        if not isinstance(series, Mapping) or list(series) != names:
            raise ValueError(f"wavelengths[{k}] must map the same layout names {names}")
        traces = []
        for n, name in enumerate(names):
            y = data_array(
                f"wavelengths[{k}][{name!r}]",
                series[name],
                1,
                length=int(d) // 2,
                sequences=True,
                finite=False,
            )
            traces.append(
                go.Scatter(
                    x=list(range(len(y))),
                    y=y.tolist(),
                    mode="lines+markers",
                    name=str(name),
                    line={"color": palette(n), "dash": ("solid", "dash")[n % 2]},
                    marker={"size": 5 if len(y) <= 64 else 2},
                    hovertemplate="pair i = %{x}<br>wavelength %{y:.4g} tokens<extra>"
                    + str(name) + "</extra>",
                )
            )  # fmt: skip
        steps.append(traces)
    fig = slider_figure(steps, [str(d) for d in d_models], prefix="d_model = ", active=active)
    ref = {"dash": "dot", "color": OKABE_ITO[7], "width": 1}
    for value, text, anchor in (
        (2 * math.pi, "2π", "top"),
        (2 * math.pi * base, f"2π·{base:g}", "bottom"),
    ):
        fig.add_hline(y=float(rounded([value])[0]), line=ref)
        # On a log axis an annotation's y is given in log10 units.
        fig.add_annotation(
            x=1,
            xref="paper",
            xanchor="right",
            y=math.log10(value),
            yref="y",
            yanchor=anchor,
            text=text,
            showarrow=False,
        )
    fig.update_xaxes(title="pair index i")
    fig.update_yaxes(title="wavelength (tokens)", type="log")
    fig.update_layout(legend={"orientation": "h", "y": 1.12, "x": 0})
    return apply_theme(fig, caption=caption, alt=alt, height=440)


def shift_rotation_slider(
    points: _ArrayLike,
    shifts: Sequence[int],
    *,
    starts: Sequence[int] | None = None,
    caption: str | None = None,
    alt: str | None = None,
) -> go.Figure:
    """One (sin, cos) pair of many positions on the unit circle, with arrows ``p → p + k``.

    ``points`` is ``[N, 2]``: row ``p`` holds ``(sin(p·w), cos(p·w))`` for one pair (columns ``2i``
    and ``2i+1`` of a sinusoidal table). The first ``N − max(shifts)`` points are drawn and
    labelled. The slider picks the offset ``k`` and draws an arrow from every start position ``p``
    to ``p + k``: all arrows turn by the same angle ``k·w``, whatever ``p``, because shifting by
    ``k`` is one fixed rotation (Vaswani et al. 2017, arXiv:1706.03762, section 3.5).

    Args:
        points: ``[N, 2]`` points, ``N > max(shifts)``.
        shifts: the offsets ``k >= 0`` of the slider steps.
        starts: the positions arrows start from (default: every ``p < N − max(shifts)``).
        caption, alt: passed to :func:`lib.viz.core.apply_theme`.

    Returns:
        A figure with the unit circle and the labelled points at every step, the arrows of one
        offset per step, and one slider.

    Raises:
        TypeError / ValueError: ``points`` is not ``[N, 2]``, ``shifts`` empty, negative or too big.
    """
    xy = data_array("points", points, 2, "2-D [positions, d_model]", finite=False)
    if xy.shape[1] != 2:
        raise ValueError(f"points must be [N, 2] (sin, cos), got {list(xy.shape)}")
    if not shifts:
        raise ValueError("shifts must be a non-empty sequence of ints >= 0")
    shifts = [check_int(f"shifts[{j}]", k, minimum=0) for j, k in enumerate(shifts)]
    n_from = xy.shape[0] - max(shifts)
    if n_from < 1:
        raise ValueError(
            f"points must have more rows ({xy.shape[0]}) than the largest shift ({max(shifts)})"
        )
    if starts is None:
        starts = range(n_from)
    starts = [check_index(f"starts[{j}]", p, n_from) for j, p in enumerate(starts)]
    if not starts:
        raise ValueError("starts must hold at least one position")
    circle = np.linspace(0, 2 * math.pi, 121)
    static = [
        go.Scatter(
            x=rounded(np.sin(circle)).tolist(), y=rounded(np.cos(circle)).tolist(), mode="lines",
            line={"color": OKABE_ITO[7], "width": 1}, hoverinfo="skip", showlegend=False,
        ),
        go.Scatter(
            x=xy[:n_from, 0].tolist(), y=xy[:n_from, 1].tolist(), mode="markers+text",
            text=[str(p) for p in range(n_from)], textposition="top center",
            marker={"color": OKABE_ITO[0], "size": 8}, name="PE pair at position p",
            hovertemplate="p = %{text}<br>(sin, cos) = (%{x:.3f}, %{y:.3f})<extra></extra>",
        ),
    ]  # fmt: skip
    steps = []
    for k in shifts:
        xs: list[float | None] = []
        ys: list[float | None] = []
        for p in starts:
            xs += [xy[p, 0], xy[p + k, 0], None]
            ys += [xy[p, 1], xy[p + k, 1], None]
        tails = xy[starts]  # [S, 2]
        heads = xy[[p + k for p in starts]]  # arrow tips, [S, 2]
        dx, dy = heads[:, 0] - tails[:, 0], heads[:, 1] - tails[:, 1]
        angle = rounded(np.degrees(np.arctan2(dx, dy)))  # clockwise from "up", plotly's convention
        colour = OKABE_ITO[5]
        steps.append(
            [
                go.Scatter(
                    x=xs, y=ys, mode="lines", name=f"p → p + {k}",
                    line={"color": colour, "width": 2}, hoverinfo="skip",
                ),
                go.Scatter(
                    x=heads[:, 0].tolist(), y=heads[:, 1].tolist(), mode="markers",
                    marker={"symbol": "arrow", "angle": angle.tolist(), "size": 12,
                            "color": colour},
                    showlegend=False, hoverinfo="skip",
                ),
            ]
        )  # fmt: skip
    fig = slider_figure(steps, [str(k) for k in shifts], prefix="offset k = ", static_traces=static)
    fig.update_xaxes(title="sin(p·w)  (dimension 2i)", range=[-1.3, 1.3], constrain="domain")
    fig.update_yaxes(title="cos(p·w)  (dimension 2i+1)", range=[-1.3, 1.3], scaleanchor="x")
    fig.update_layout(legend={"orientation": "h", "y": 1.1, "x": 0})
    return apply_theme(fig, caption=caption, alt=alt, height=520)
