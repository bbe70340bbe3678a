"""Figures for chapter 8 (rotary position embedding, RoPE).

RoPE itself is :mod:`lib.rope` (Su et al. 2021, *RoFormer*, arXiv:2104.09864): pair i of a query or
key at position m is turned by the angle ``m·θ_i``, ``θ_i = base^(−2i/d_head)``::

    (x_a, x_b) -> (x_a cos mθ_i − x_b sin mθ_i,  x_b cos mθ_i + x_a sin mθ_i)

These builders take tensors that the chapter computes with :mod:`lib.rope` and return plotly
figures. Sliders are plotly ``layout.sliders`` (and frames for the play button), so they work on the
static website with no kernel; every number is rounded with :func:`lib.viz.core.rounded`.

In every unit-circle picture the pair's first coordinate ``x_a`` is the horizontal axis and its
second ``x_b`` the vertical one, so RoPE turns the arrow counter-clockwise as m grows.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np
import plotly.graph_objects as go
import torch
from plotly.colors import sample_colorscale
from plotly.subplots import make_subplots

from lib._checks import check_index, check_labels, check_mapping, check_positive_int
from lib.viz.core import (
    OKABE_ITO,
    SEQUENTIAL,
    add_slider,
    apply_theme,
    data_array,
    heatmap_slider,
    palette,
    rounded,
)
from lib.viz.rope_scaling import wavelength_figure as scaling_wavelengths

__all__ = [
    "BAND_COLOURS",
    "decay_figure",
    "pairing_diagram",
    "position_precision_figure",
    "rotation_diagram",
    "rotation_explorer",
    "rotation_snapshot",
    "toeplitz_slider",
    "wavelength_figure",
]

_ArrayLike = torch.Tensor | np.ndarray

#: Colours of the fast, medium and slow panels of the rotation diagram (Okabe–Ito).
BAND_COLOURS = (OKABE_ITO[5], OKABE_ITO[1], OKABE_ITO[0])

_GREY = OKABE_ITO[7]
_CIRCLE = np.linspace(0.0, 2.0 * math.pi, 121)
_AXIS_RANGE = 1.3
_LABEL_Y = -1.6  # where the angle read-out (two lines) sits, below the unit circle


# --------------------------------------------------------------------------------------------------
# Argument checks
# --------------------------------------------------------------------------------------------------


def _tracks(points: object, angles: object) -> tuple[np.ndarray, np.ndarray]:
    """Check ``points: [P, M, 2]`` and ``angles: [P, M]`` and return them rounded."""
    xy = data_array("points", points, 3, "[n_pairs, n_positions, 2]")
    if xy.shape[2] != 2 or xy.shape[0] == 0 or xy.shape[1] == 0:
        raise ValueError(f"points must be [n_pairs, n_positions, 2], got shape {list(xy.shape)}")
    theta = data_array("angles", angles, 2, "[n_pairs, n_positions]")
    if theta.shape != xy.shape[:2]:
        raise ValueError(
            f"angles must be [n_pairs, n_positions] = {list(xy.shape[:2])} to match points, "
            f"got {list(theta.shape)}"
        )
    return xy, theta


# --------------------------------------------------------------------------------------------------
# Wavelengths
# --------------------------------------------------------------------------------------------------


def wavelength_figure(
    inv_freqs: Mapping[str, torch.Tensor],
    *,
    context_lengths: Mapping[str, int] | None = None,
    caption: str | None = None,
    alt: str | None = None,
) -> go.Figure:
    """RoPE's per-pair speed θ_i (left) and wavelength 2π/θ_i in tokens (right), log scales.

    Chapter 8's view of the one wavelength figure, :func:`lib.viz.rope_scaling.wavelength_figure`
    with ``speeds=True``: one line per entry of ``inv_freqs`` (e.g. base 10,000 and 500,000),
    ``context_lengths`` as dotted lines on the wavelength panel.

    Equation:
        θ_i = base^(−2i/d_head) radians per token, λ_i = 2π/θ_i tokens per full turn,
        for i = 0 … d_head/2 − 1

    Args:
        inv_freqs: ``{name: θ}``, the inverse frequencies of one RoPE each (e.g.
            :func:`lib.rope.rope_inv_freq`).
        context_lengths: ``{label: tokens}``, one dotted line each on the wavelength panel.
        caption, alt: passed to :func:`lib.viz.core.apply_theme`.

    Returns:
        A two-panel figure with one line per entry of ``inv_freqs`` in each panel.

    Raises:
        TypeError / ValueError: see :func:`lib.viz.rope_scaling.wavelength_figure`.

    Shapes:
        inv_freqs[name]: [d_head // 2], values > 0

    References:
        Su et al., RoFormer, arXiv:2104.09864, eq. 15.
    """
    return scaling_wavelengths(inv_freqs, context_lengths, speeds=True, caption=caption, alt=alt)


# --------------------------------------------------------------------------------------------------
# The rotation diagram
# --------------------------------------------------------------------------------------------------


_DOT_OPACITY = 0.45  # earlier positions: faint dots


def _circle_trace(xaxis: str, yaxis: str) -> go.Scatter:
    return go.Scatter(
        x=rounded(np.cos(_CIRCLE)).tolist(), y=rounded(np.sin(_CIRCLE)).tolist(), mode="lines",
        line={"color": _GREY, "width": 1}, hoverinfo="skip", showlegend=False,
        xaxis=xaxis, yaxis=yaxis,
    )  # fmt: skip


def _start_arrow(xy0: np.ndarray, xaxis: str, yaxis: str) -> go.Scatter:
    """The pair at position 0, drawn faint and dashed so the turned angle is visible."""
    return go.Scatter(
        x=[0.0, float(xy0[0])], y=[0.0, float(xy0[1])], mode="lines",
        line={"color": _GREY, "width": 2, "dash": "dash"}, hoverinfo="skip", showlegend=False,
        xaxis=xaxis, yaxis=yaxis,
    )  # fmt: skip


def _angle_text(angle: float, position: int) -> str:
    """The read-out under a circle: the position and the angle turned, in radians and turns."""
    turns = angle / (2.0 * math.pi)
    return f"m = {position}: m·θ = {angle:.3g} rad<br>= {turns:.3g} turns"


def _dot_opacity(step: int, n_pos: int) -> list[float]:
    """Per-point opacity of the track: positions 0 … step shown, later ones hidden."""
    return [_DOT_OPACITY if j <= step else 0.0 for j in range(n_pos)]


def _arrow_xy(tip: np.ndarray) -> tuple[list[float], list[float]]:
    return [0.0, float(tip[0])], [0.0, float(tip[1])]


def _track_trace(xy: np.ndarray, step: int, colour: str, xaxis: str, yaxis: str) -> go.Scatter:
    """The pair at every position as dots; only positions 0 … step are opaque."""
    return go.Scatter(
        x=xy[:, 0].tolist(), y=xy[:, 1].tolist(), mode="markers",
        marker={"color": colour, "size": 6, "opacity": _dot_opacity(step, len(xy))},
        showlegend=False,
        hovertemplate="m = %{pointNumber}<br>(x_a, x_b) = (%{x:.3f}, %{y:.3f})<extra></extra>",
        xaxis=xaxis, yaxis=yaxis,
    )  # fmt: skip


def _arrow_trace(tip: np.ndarray, colour: str, xaxis: str, yaxis: str) -> go.Scatter:
    x, y = _arrow_xy(tip)
    return go.Scatter(
        x=x, y=y, mode="lines+markers", line={"color": colour, "width": 4},
        marker={"symbol": ["circle", "arrow"], "size": [0, 16], "angleref": "previous",
                "color": colour},
        showlegend=False, hoverinfo="skip", xaxis=xaxis, yaxis=yaxis,
    )  # fmt: skip


def _text_trace(text: str, xaxis: str, yaxis: str) -> go.Scatter:
    return go.Scatter(
        x=[0.0], y=[_LABEL_Y], mode="text", text=[text], textfont={"size": 12},
        showlegend=False, hoverinfo="skip", xaxis=xaxis, yaxis=yaxis,
    )  # fmt: skip


def _circle_axes(fig: go.Figure, n_panels: int) -> None:
    for k in range(1, n_panels + 1):
        suffix = "" if k == 1 else str(k)
        fig.update_layout(
            {
                f"xaxis{suffix}": {
                    "range": [-_AXIS_RANGE, _AXIS_RANGE], "showticklabels": False,
                    "showgrid": False, "constrain": "domain", "title": {"text": "x_a"},
                },
                f"yaxis{suffix}": {
                    "range": [_LABEL_Y - 0.45, _AXIS_RANGE], "showticklabels": False,
                    "showgrid": False, "scaleanchor": f"x{suffix}", "scaleratio": 1,
                    "constrain": "domain", "title": {"text": "x_b"} if k == 1 else {},
                },
            }
        )  # fmt: skip


def _axes_of(k: int) -> tuple[str, str]:
    return ("x", "y") if k == 0 else (f"x{k + 1}", f"y{k + 1}")


def _panels(
    points: _ArrayLike, angles: _ArrayLike, titles: Sequence[str], step: int,
    colours: Sequence[str] | None, step_name: str,
) -> tuple[go.Figure, np.ndarray, np.ndarray, list[str], list[int]]:  # fmt: skip
    """The side-by-side unit circles at one step; returns the figure and the dynamic trace ids."""
    xy, theta = _tracks(points, angles)
    n_panels, n_pos = theta.shape
    titles = check_labels("titles", titles, n_panels)
    step = check_index(step_name, step, n_pos)
    if colours is None:
        colours = [BAND_COLOURS[k % len(BAND_COLOURS)] for k in range(n_panels)]
    colours = check_labels("colours", colours, n_panels)
    fig = make_subplots(rows=1, cols=n_panels, subplot_titles=titles, horizontal_spacing=0.03)
    fig.update_annotations(font_size=13)  # the subplot titles
    dynamic: list[int] = []
    for k in range(n_panels):
        xa, ya = _axes_of(k)
        fig.add_trace(_circle_trace(xa, ya))
        fig.add_trace(_start_arrow(xy[k, 0], xa, ya))
        first = len(fig.data)
        fig.add_trace(_track_trace(xy[k], step, colours[k], xa, ya))
        fig.add_trace(_arrow_trace(xy[k, step], colours[k], xa, ya))
        fig.add_trace(_text_trace(_angle_text(theta[k, step], step), xa, ya))
        dynamic += [first, first + 1, first + 2]
    _circle_axes(fig, n_panels)
    return fig, xy, theta, colours, dynamic


def rotation_snapshot(
    points: _ArrayLike,
    angles: _ArrayLike,
    titles: Sequence[str],
    step: int,
    *,
    colours: Sequence[str] | None = None,
    caption: str | None = None,
    alt: str | None = None,
) -> go.Figure:
    """The rotation diagram frozen at position m = ``step``: one unit circle per pair, side by side.

    Each panel draws the pair at position m as an arrow, the pair at every earlier position as
    faint dots, position 0 as a dashed arrow, and the turned angle ``m·θ_i`` in radians and turns.
    This is the pure parameters -> figure builder that :func:`rotation_diagram` animates and that
    an ipywidgets control can call with any position.

    Equation:
        pair i of a query at position m is R(m θ_i) (x_a, x_b), a turn by m θ_i,
        θ_i = base^(−2i/d_head)

    Args:
        points: the rotated pair of each panel at every position (column m: position m, e.g.
            from :func:`lib.rope.apply_rope`).
        angles: the angles ``m·θ_i`` (e.g. from :func:`lib.rope.rope_angles`).
        titles: one panel title per pair.
        step: the position m drawn.
        colours: one colour per pair (default :data:`BAND_COLOURS`, in turn).
        caption, alt: passed to :func:`lib.viz.core.apply_theme`.

    Returns:
        A figure with one unit-circle panel per pair.

    Raises:
        TypeError / ValueError: shapes do not match, ``step`` out of range, wrong label counts.

    Shapes:
        points: [n_pairs, n_positions, 2]
        angles: [n_pairs, n_positions]
        titles, colours: n_pairs labels
        step: 0 <= step < n_positions

    References:
        Su et al., RoFormer, arXiv:2104.09864, eq. 13–15.
    """
    fig, *_ = _panels(points, angles, titles, step, colours, "step")
    fig = apply_theme(fig, caption=caption, alt=alt, height=420)
    fig.update_layout(margin={"t": 90})  # room for multi-line panel titles
    return fig


def rotation_diagram(
    points: _ArrayLike,
    angles: _ArrayLike,
    titles: Sequence[str],
    *,
    active: int = 0,
    frame_ms: int = 150,
    colours: Sequence[str] | None = None,
    caption: str | None = None,
    alt: str | None = None,
) -> go.Figure:
    """THE rotation diagram: pairs turning at their own speeds, with a position slider and Play.

    Typically three panels, a fast, a medium and a slow pair ("frequency bands"). The slider picks
    the position m: one plotly frame per position, so the Play button animates it and the slider
    works on a static page. Every frame shows exactly what :func:`rotation_snapshot` draws at that
    step (it only restyles the dots' opacity, the arrow and the read-out).

    Equation:
        pair i at position m is turned by m θ_i, θ_i = base^(−2i/d_head)

    Args:
        points: as :func:`rotation_snapshot`.
        angles: as :func:`rotation_snapshot`.
        titles: one panel title per pair.
        active: the position shown first.
        frame_ms: milliseconds per frame when playing, a positive int.
        colours: one colour per pair (default :data:`BAND_COLOURS`, in turn).
        caption, alt: passed to :func:`lib.viz.core.apply_theme`.

    Returns:
        The figure of :func:`rotation_snapshot` at ``active`` with one frame per position, a
        position slider and Play/Pause buttons.

    Raises:
        TypeError / ValueError: as :func:`rotation_snapshot`; ``frame_ms`` not a positive int.

    Shapes:
        points: [n_pairs, n_positions, 2]
        angles: [n_pairs, n_positions]; positions are 0 … n_positions − 1

    References:
        Su et al., RoFormer, arXiv:2104.09864, eq. 13–15.
    """
    frame_ms = check_positive_int("frame_ms", frame_ms)
    fig, xy, theta, _, dynamic = _panels(points, angles, titles, active, colours, "active")
    n_panels, n_pos = theta.shape

    frames = []
    for step in range(n_pos):
        data = []
        for k in range(n_panels):  # only what changes: dot opacity, arrow, read-out
            x, y = _arrow_xy(xy[k, step])
            data += [
                go.Scatter(marker={"opacity": _dot_opacity(step, n_pos)}),
                go.Scatter(x=x, y=y),
                go.Scatter(text=[_angle_text(theta[k, step], step)]),
            ]
        frames.append(go.Frame(name=str(step), data=data, traces=dynamic))
    fig.frames = frames

    def animate(frame_names: list[str | None] | None, duration: int) -> list:
        options: dict[str, object] = {
            "mode": "immediate",
            "frame": {"duration": duration, "redraw": True},
            "transition": {"duration": 0},
        }
        if frame_names is None:
            options["fromcurrent"] = True
        return [frame_names, options]

    add_slider(
        fig, [str(s) for s in range(n_pos)], [animate([str(s)], 0) for s in range(n_pos)],
        method="animate", prefix="position m = ", active=active, pad_t=45, x=0.12, length=0.88,
    )  # fmt: skip
    fig.update_layout(
        updatemenus=[
            {
                "type": "buttons",
                "direction": "left",
                "showactive": False,
                "x": 0.11,
                "xanchor": "right",
                "y": 0,
                "yanchor": "top",
                "pad": {"t": 52, "r": 8},
                # light buttons with dark symbols read on the light and the dark page alike
                "bgcolor": "#e8e8e8",
                "bordercolor": _GREY,
                "font": {"color": "#222222"},
                "buttons": [
                    {"label": "▶", "method": "animate", "args": animate(None, frame_ms)},
                    {"label": "❚❚", "method": "animate", "args": animate([None], 0)},
                ],
            }
        ],
    )
    fig = apply_theme(fig, caption=caption, alt=alt, height=500)
    fig.update_layout(margin={"t": 90})  # room for multi-line panel titles
    return fig


def rotation_explorer(
    points: _ArrayLike,
    angles: _ArrayLike,
    pair_labels: Sequence[str],
    *,
    pair_titles: Sequence[str] | None = None,
    active_pair: int = 0,
    active_position: int = 0,
    caption: str | None = None,
    alt: str | None = None,
) -> go.Figure:
    """One unit circle with two independent sliders: the position m and the pair index i.

    How two sliders coexist on a static page: plotly sliders do not combine, each step just applies
    its ``args``. So the two sliders set *different* attributes. The position slider sets which
    position's arrow and read-out are ``visible`` and the per-point opacity of the dots; the pair
    slider restyles the ``x``/``y``/``text`` data (and the title) to the chosen pair. Any order of
    moves shows pair i at position m.

    Equation:
        pair i at position m is turned by m θ_i, θ_i = base^(−2i/d_head)

    Args:
        points: the rotated pair i at every position m.
        angles: the angles ``m·θ_i``.
        pair_labels: one per pair, the pair slider's labels.
        pair_titles: the figure title for each pair (default ``"pair i = <label>"``).
        active_pair: the pair shown first.
        active_position: the position shown first.
        caption, alt: passed to :func:`lib.viz.core.apply_theme`.

    Returns:
        A one-circle figure with a position slider and a pair slider.

    Raises:
        TypeError / ValueError: shapes or label counts do not match; an active index out of range.

    Shapes:
        points: [n_pairs, n_positions, 2]
        angles: [n_pairs, n_positions] (positions 0 … n_positions − 1)
        pair_labels, pair_titles: n_pairs labels

    References:
        Su et al., RoFormer, arXiv:2104.09864.
    """
    xy, theta = _tracks(points, angles)
    n_pairs, n_pos = theta.shape
    pair_labels = check_labels("pair_labels", pair_labels, n_pairs)
    if pair_titles is None:
        pair_titles = [f"pair i = {label}" for label in pair_labels]
    pair_titles = check_labels("pair_titles", pair_titles, n_pairs)
    active_pair = check_index("active_pair", active_pair, n_pairs)
    active_position = check_index("active_position", active_position, n_pos)
    colour = OKABE_ITO[0]
    p0 = active_pair

    # Trace order: 0 circle, 1 start arrow, 2 dots, then n_pos arrows, then n_pos read-outs.
    fig = go.Figure()
    fig.add_trace(_circle_trace("x", "y"))
    fig.add_trace(_start_arrow(xy[p0, 0], "x", "y"))
    fig.add_trace(_track_trace(xy[p0], active_position, colour, "x", "y"))
    for step in range(n_pos):
        fig.add_trace(_arrow_trace(xy[p0, step], colour, "x", "y"))
    for step in range(n_pos):
        fig.add_trace(_text_trace(_angle_text(theta[p0, step], step), "x", "y"))
    for j in range(n_pos):
        fig.data[3 + j].visible = j == active_position
        fig.data[3 + n_pos + j].visible = j == active_position

    def position_args(step: int) -> list:
        shown = [j == step for j in range(n_pos)]
        return [{"visible": [True, *shown, *shown],
                 "marker.opacity": [_dot_opacity(step, n_pos)] + [None] * (2 * n_pos)},
                [2, *range(3, 3 + 2 * n_pos)]]  # fmt: skip

    def pair_args(p: int) -> list:
        arrows = [_arrow_xy(xy[p, step]) for step in range(n_pos)]
        start_x, start_y = _arrow_xy(xy[p, 0])
        data = {
            "x": [start_x, xy[p, :, 0].tolist()] + [a[0] for a in arrows] + [[0.0]] * n_pos,
            "y": [start_y, xy[p, :, 1].tolist()] + [a[1] for a in arrows] + [[_LABEL_Y]] * n_pos,
            "text": [None, None] + [None] * n_pos
            + [[_angle_text(theta[p, step], step)] for step in range(n_pos)],
        }  # fmt: skip
        return [data, {"title.text": pair_titles[p]}, list(range(1, 3 + 2 * n_pos))]

    fig.update_layout(title={"text": pair_titles[p0], "x": 0.02, "xanchor": "left"})
    add_slider(
        fig, [str(s) for s in range(n_pos)], [position_args(s) for s in range(n_pos)],
        method="restyle", prefix="position m = ", active=active_position, pad_t=40,
    )  # fmt: skip
    add_slider(
        fig, pair_labels, [pair_args(p) for p in range(n_pairs)], prefix="pair i = ", active=p0,
        pad_t=40, y=-0.3,
    )  # fmt: skip
    _circle_axes(fig, 1)
    fig = apply_theme(fig, caption=caption, alt=alt, height=640)
    fig.update_layout(margin={"l": 40, "r": 20, "t": 60, "b": 220})
    return fig


# --------------------------------------------------------------------------------------------------
# Relative position: the score matrix
# --------------------------------------------------------------------------------------------------


def toeplitz_slider(
    matrices: Sequence[_ArrayLike],
    labels: Sequence[str],
    *,
    prefix: str = "base = ",
    active: int = 0,
    caption: str | None = None,
    alt: str | None = None,
) -> go.Figure:
    """Heatmaps of RoPE scores ``S[m, n] = ⟨R_m q, R_n k⟩`` for one fixed q, k, one per step.

    The score depends on m − n only, so every diagonal is constant: S is a Toeplitz matrix. Rows
    are the query position m (top to bottom), columns the key position n; a diverging scale
    centred on 0, shared by all steps (e.g. one step per base).

    Equation:
        ⟨R_m q, R_n k⟩ = qᵀ R_(n−m) k

    Args:
        matrices: one score matrix per step.
        labels: the slider label of each step (e.g. the base).
        prefix: text before the current label.
        active: the step shown first.
        caption, alt: passed to :func:`lib.viz.core.apply_theme`.

    Returns:
        A figure with one heatmap per step and one slider.

    Raises:
        TypeError / ValueError: a matrix is not a square 2-D tensor/array; labels do not match.

    Shapes:
        matrices[k]: [T, T]

    References:
        Su et al., RoFormer, arXiv:2104.09864, eq. 16.
    """
    return heatmap_slider(
        matrices, labels, prefix=prefix, x_title="key position n", y_title="query position m",
        hover="query m = %{y}<br>key n = %{x}<br>score %{z:.3f}<extra></extra>",
        active=active, square=True, caption=caption, alt=alt, height=560,
    )  # fmt: skip


# --------------------------------------------------------------------------------------------------
# Long-range decay
# --------------------------------------------------------------------------------------------------


def decay_figure(
    distances: _ArrayLike,
    bounds: Mapping[str, _ArrayLike],
    same_content: Mapping[str, _ArrayLike] | None = None,
    *,
    caption: str | None = None,
    alt: str | None = None,
) -> go.Figure:
    """RoFormer's long-range decay: the relative upper bound against distance (log distance axis).

    The figure plots the relative upper bound of RoFormer §3.4.3 (their Fig. 2). The optional right
    panel plots, e.g., the score of a query and key with the same content.

    Equation:
        with S_j = Σ_{k<j} e^{i Δ θ_k} for a distance Δ = m − n,
            |⟨R_m q, R_n k⟩| ≤ (max_i |h_{i+1} − h_i|) Σ_{j=1}^{d/2} |S_j|
        relative upper bound: (1/(d/2)) Σ_j |S_j|; same content: (1/(d/2)) Σ_i cos(Δ θ_i)

    Args:
        distances: the distances Δ (the x axis), > 0.
        bounds: ``{name: [K] relative upper bounds}``, one line each in the left panel.
        same_content: ``{name: [K] scores}`` for a right panel, or None for none.
        caption, alt: passed to :func:`lib.viz.core.apply_theme`.

    Returns:
        A figure with one panel (two with ``same_content``), one line per curve.

    Raises:
        TypeError / ValueError: not a non-empty mapping of ``[K]`` vectors; distances ≤ 0.

    Shapes:
        distances: [K] (> 0: the axis is logarithmic)
        bounds[name], same_content[name]: [K]

    References:
        Su et al., RoFormer, arXiv:2104.09864, §3.4.3 and Fig. 2.
    """
    x = data_array("distances", distances, 1, "1-D [K]", digits=9)  # integer distances, exactly
    if x.size == 0 or np.any(x <= 0):
        raise ValueError("distances must be non-empty and > 0 (the distance axis is logarithmic)")
    panels = [("relative upper bound (1/(d/2))·Σ|S_j|", check_mapping("bounds", bounds))]
    if same_content is not None:
        panels.append(
            ("score of q = k, (1/(d/2))·Σ cos(Δθ_i)", check_mapping("same_content", same_content))
        )
    fig = make_subplots(
        rows=1, cols=len(panels), subplot_titles=[t for t, _ in panels], horizontal_spacing=0.1
    )
    dashes = ("solid", "dash", "dot", "dashdot")
    for col, (_title, curves) in enumerate(panels, start=1):
        for n, (name, values) in enumerate(curves.items()):
            y = data_array(f"curve {name!r}", values, 1, "1-D [K]")
            if y.shape != x.shape:
                raise ValueError(f"curve {name!r} must have {x.size} values, got {y.size}")
            fig.add_trace(
                go.Scatter(
                    x=x.tolist(), y=y.tolist(), mode="lines", name=str(name),
                    legendgroup=str(name), showlegend=col == 1 or name not in panels[0][1],
                    line={"color": palette(n), "dash": dashes[n % len(dashes)]},
                    hovertemplate="distance %{x:,}<br>%{y:.3f}<extra>" + str(name) + "</extra>",
                ),
                row=1, col=col,
            )  # fmt: skip
    fig.update_xaxes(type="log", title="relative distance |m − n| (tokens)", exponentformat="power")
    fig.update_layout(legend={"orientation": "h", "y": 1.2, "x": 0})
    return apply_theme(fig, caption=caption, alt=alt, height=440)


# --------------------------------------------------------------------------------------------------
# The two pairings
# --------------------------------------------------------------------------------------------------


def pairing_diagram(
    perm: torch.Tensor,
    *,
    top_label: str = "interleaved: pairs (2i, 2i+1)",
    bottom_label: str = "half: pairs (i, i + d/2)",
    caption: str | None = None,
    alt: str | None = None,
) -> go.Figure:
    """Which dimensions RoPE rotates together in each layout, and where each one moves.

    ``y = x[..., perm]`` moves interleaved dimension ``perm[k]`` to half-layout dimension k; the
    figure draws that as a line from ``perm[k]`` (top row) to ``k`` (bottom row). Squares are a
    pair's first coordinate, circles its second; the colour is the pair index i (fast → slow).

    Equation:
        interleaved (RoFormer, Meta LLaMA): dimension j belongs to pair j // 2
        half (GPT-NeoX): dimension k belongs to pair k mod d/2

    Args:
        perm: the permutation from the interleaved to the half layout (e.g.
            :func:`lib.rope.interleaved_to_half_permutation`).
        top_label: the label of the top row (the interleaved layout).
        bottom_label: the label of the bottom row (the half layout).
        caption, alt: passed to :func:`lib.viz.core.apply_theme`.

    Returns:
        A figure with one line trace per pair (from each of its dimensions' top place to its
        bottom place) and the two rows of dimensions as markers.

    Raises:
        TypeError: ``perm`` is not an integer tensor.
        ValueError: not a 1-D permutation of even length.

    Shapes:
        perm: [d_head] integer, a permutation of 0 … d_head − 1, d_head even

    References:
        Su et al., RoFormer, arXiv:2104.09864.
        Touvron et al., LLaMA, arXiv:2302.13971.
        Black et al., GPT-NeoX-20B, arXiv:2204.06745.
    """
    if not isinstance(perm, torch.Tensor) or perm.is_floating_point() or perm.is_complex():
        raise TypeError(f"perm must be an integer torch.Tensor, got {type(perm).__name__}")
    if perm.dim() != 1 or perm.numel() == 0 or perm.numel() % 2:
        raise ValueError(f"perm must be 1-D of even length d_head, got shape {list(perm.shape)}")
    d = perm.numel()
    order = perm.tolist()
    if sorted(order) != list(range(d)):
        raise ValueError(f"perm must be a permutation of 0 … {d - 1}, got {order}")
    half = d // 2
    # Cividis without its darkest fifth, so pair 0's lines stay visible on a dark page too.
    stops = [min(1.0, 0.2 + 0.8 * i / max(1, half - 1)) for i in range(half)]
    colours = sample_colorscale(SEQUENTIAL, stops)
    scale = [[i / max(1, half - 1), colour] for i, colour in enumerate(colours)]
    if half == 1:  # a colour scale needs both ends
        scale.append([1.0, colours[0]])

    fig = go.Figure()
    for i in range(half):  # one coloured pair of lines per pair i
        xs: list[float | None] = []
        ys: list[float | None] = []
        for k in (i, i + half):  # the half-layout dimensions of pair i
            xs += [order[k], k, None]
            ys += [1, 0, None]
        fig.add_trace(
            go.Scatter(x=xs, y=ys, mode="lines", line={"color": colours[i], "width": 2},
                       hoverinfo="skip", showlegend=False)
        )  # fmt: skip
    rows = (
        (1, list(range(d)), [j // 2 for j in range(d)], [j % 2 for j in range(d)]),
        (0, list(range(d)), [k % half for k in range(d)], [k // half for k in range(d)]),
    )
    for y, dims, pair, second in rows:
        fig.add_trace(
            go.Scatter(
                x=dims, y=[y] * d, mode="markers+text", text=[str(i) for i in pair],
                textfont={"color": ["white" if i < half / 2 else "black" for i in pair],
                          "size": 11},
                marker={"size": 26, "color": pair, "colorscale": scale, "cmin": 0,
                        "cmax": half - 1, "symbol": ["circle" if s else "square" for s in second],
                        "line": {"width": 1, "color": _GREY},
                        "showscale": y == 1,
                        "colorbar": {"title": {"text": "pair i"}, "len": 0.8}},
                customdata=[[i, "second" if s else "first"] for i, s in zip(pair, second, strict=True)],
                hovertemplate="dimension %{x}<br>pair i = %{customdata[0]}, %{customdata[1]} "
                "coordinate<extra></extra>",
                showlegend=False,
            )
        )  # fmt: skip
    fig.update_xaxes(title="dimension within the head", range=[-0.8, d - 0.2], dtick=1)
    fig.update_yaxes(
        tickvals=[0, 1], ticktext=[bottom_label, top_label], range=[-0.4, 1.4], showgrid=False,
        zeroline=False,
    )  # fmt: skip
    return apply_theme(fig, caption=caption, alt=alt, height=320)


# --------------------------------------------------------------------------------------------------
# Precision of the angles
# --------------------------------------------------------------------------------------------------


def position_precision_figure(
    positions: _ArrayLike,
    seen: Mapping[str, _ArrayLike],
    *,
    caption: str | None = None,
    alt: str | None = None,
) -> go.Figure:
    """The position a rotation encodes, against the true position, one line per number format.

    Exact arithmetic gives the diagonal; a format that cannot represent every integer (bfloat16
    keeps 8 significant bits) gives a staircase.

    Equation:
        seen position = angle_0 / θ_0, the angle of pair 0 divided by θ_0 = 1

    Args:
        positions: the true positions (the x axis).
        seen: ``{format name: [K] positions the rotation encodes}``, one line each.
        caption, alt: passed to :func:`lib.viz.core.apply_theme`.

    Returns:
        A figure with one line per number format.

    Raises:
        TypeError / ValueError: not a non-empty mapping of ``[K]`` vectors.

    Shapes:
        positions: [K]
        seen[name]: [K]

    References:
        Su et al., RoFormer, arXiv:2104.09864.
    """
    x = data_array("positions", positions, 1, "1-D [K]", digits=9)  # positions: keep every digit
    fig = go.Figure()
    dashes = ("solid", "dash", "dot")
    for n, (name, values) in enumerate(check_mapping("seen", seen).items()):
        y = data_array(f"seen[{name!r}]", values, 1, "1-D [K]", digits=9)
        if y.shape != x.shape:
            raise ValueError(f"seen[{name!r}] must have {x.size} values, got {y.size}")
        fig.add_trace(
            go.Scatter(
                x=x.tolist(), y=y.tolist(), mode="lines", name=str(name),
                line={"color": OKABE_ITO[(0, 5, 2)[n % 3]], "dash": dashes[n % 3],
                      "width": 3 if n == 0 else 2, "shape": "linear"},
                hovertemplate="true position %{x:,}<br>seen as %{y:,.1f}<extra>"
                + str(name) + "</extra>",
            )
        )  # fmt: skip
    fig.update_xaxes(title="true position m", tickformat=",d")
    fig.update_yaxes(title="position encoded by the angles", tickformat=",d")
    fig.update_layout(legend={"orientation": "h", "y": 1.12, "x": 0})
    return apply_theme(fig, caption=caption, alt=alt, height=420)
