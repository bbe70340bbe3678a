"""Figures for chapter 10 (M-RoPE: rotary positions for text, images and video).

M-RoPE (Wang et al. 2024, *Qwen2-VL*, arXiv:2409.12191) gives every token three position ids
``(t, h, w)`` and lets each RoPE frequency slot ``j`` read its position from one of the three rows:
the angle of slot j is ``position_ids[axis(j), token] · θ_j``. These builders draw the ids
(:func:`lib.mrope.mrope_position_ids`), the patch grids they come from, and which axis each slot
uses in a given layout (:func:`lib.mrope.mrope_slot_axes`: chunked sections in Qwen2-VL and
Qwen2.5-VL, interleaved slots in Qwen3-VL).

Sliders are ``layout.sliders`` steps that toggle trace visibility, so they work on the static site
with no kernel; numbers are rounded with :func:`lib.viz.core.rounded`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np
import plotly.graph_objects as go
import torch
from plotly.subplots import make_subplots

from lib._checks import check_index, check_int, check_integer_tensor, check_positive_float
from lib.mrope import SegmentSpan, segment_spans
from lib.rope import rope_wavelengths
from lib.viz.core import OKABE_ITO, add_step_slider, apply_theme, rounded

__all__ = [
    "AXIS_COLORS",
    "AXIS_NAMES",
    "position_ids_figure",
    "slot_frequencies_figure",
    "token_map_figure",
]

#: The three rows of M-RoPE position ids, in order.
AXIS_NAMES: tuple[str, str, str] = ("t", "h", "w")
#: One Okabe–Ito colour per axis: t (time) orange, h (height) blue, w (width) green.
AXIS_COLORS: tuple[str, str, str] = (OKABE_ITO[1], OKABE_ITO[0], OKABE_ITO[2])
_KIND_FILL = {
    "text": "rgba(153,153,153,0.30)",
    "image": "rgba(86,180,233,0.35)",
    "video": "rgba(0,158,115,0.30)",
}
_GUIDE = "rgba(128,128,128,0.8)"


def _check_ids(position_ids: torch.Tensor, n_tokens: int | None = None) -> np.ndarray:
    """``position_ids: [3, T]`` integer tensor -> int64 numpy array."""
    check_integer_tensor("position_ids", position_ids)
    if position_ids.dim() != 2 or position_ids.shape[0] != 3:
        raise ValueError(
            f"position_ids must be [3, T] (rows t, h, w), got shape {list(position_ids.shape)}"
        )
    if n_tokens is not None and position_ids.shape[1] != n_tokens:
        raise ValueError(
            f"position_ids has {position_ids.shape[1]} tokens but the segments hold {n_tokens}"
        )
    return position_ids.detach().to(torch.int64).cpu().numpy()


def _check_axes(name: str, value: object, d_half: int | None = None) -> np.ndarray:
    """``axes: [d_half]`` integer tensor with values in {0, 1, 2} (t, h, w)."""
    axes = check_integer_tensor(name, value)
    if axes.dim() != 1 or axes.numel() == 0:
        raise ValueError(f"{name} must be 1-D [d_head // 2], got shape {list(axes.shape)}")
    if d_half is not None and axes.numel() != d_half:
        raise ValueError(
            f"{name} must have {d_half} entries (one per frequency pair, also called slots), got {axes.numel()}"
        )
    array = axes.detach().to(torch.int64).cpu().numpy()
    if not np.isin(array, (0, 1, 2)).all():
        raise ValueError(f"{name} must hold axis numbers 0 (t), 1 (h), 2 (w)")
    return array


# --------------------------------------------------------------------------------------------------
# 1. the three id rows along the sequence
# --------------------------------------------------------------------------------------------------


def position_ids_figure(
    position_ids: torch.Tensor,
    segments: Sequence[tuple[str, int | tuple[int, int, int]]],
    *,
    spatial_merge_size: int = 2,
    caption: str | None = None,
    alt: str | None = None,
) -> go.Figure:
    """The t, h and w position ids of every token against its index in the sequence.

    Equation (Qwen2-VL, Wang et al. 2024, arXiv:2409.12191): text tokens get ``t = h = w``,
    counting up by one; a vision segment starting at id s gets ``(s + t_k, s + h_k, s + w_k)`` over
    its merged grid. Vision spans are shaded and labelled, so the plateaus (constant t within a
    frame) and the saw-teeth (h and w sweeping the grid) line up with the segments.

    Args:
        position_ids: ``[3, T]`` integer ids, rows t, h, w.
        segments: the segments that produced them (see :func:`lib.mrope.segment_spans`).
        spatial_merge_size: m, as for :func:`lib.mrope.segment_spans`.
        caption, alt: passed to :func:`lib.viz.core.apply_theme`.

    Returns:
        A figure with three line+marker traces (t, h, w) and one shaded rectangle per vision span.
    """
    spans = segment_spans(segments, spatial_merge_size=spatial_merge_size)
    ids = _check_ids(position_ids, spans[-1].stop)
    tokens = list(range(ids.shape[1]))
    fig = go.Figure()
    symbols = ("circle", "square", "diamond")
    for row, (name, color) in enumerate(zip(AXIS_NAMES, AXIS_COLORS, strict=True)):
        fig.add_trace(
            go.Scatter(
                x=tokens, y=ids[row].tolist(), mode="lines+markers", name=f"{name} id",
                line={"color": color, "width": 2, "dash": ("solid", "dash", "dot")[row]},
                marker={"symbol": symbols[row], "size": 7 - row},
                hovertemplate="token %{x}<br>" + name + " = %{y}<extra></extra>",
            )
        )  # fmt: skip
    for span in spans:
        if span.grid is None:  # text
            continue
        fig.add_vrect(
            x0=span.start - 0.5,
            x1=span.stop - 0.5,
            fillcolor=_KIND_FILL[span.kind],
            line_width=0,
            layer="below",
            annotation_text=f"{span.kind} {span.grid[0]}×{span.grid[1]}×{span.grid[2]}",
            annotation_position="top left",
            annotation_font_color=_GUIDE,
        )
    fig.update_xaxes(title="token index in the sequence")
    fig.update_yaxes(title="position id")
    fig.update_layout(legend={"orientation": "h", "y": 1.14, "x": 0})
    return apply_theme(fig, caption=caption, alt=alt, height=420)


# --------------------------------------------------------------------------------------------------
# 2. the patch grids with their ids, and what each frequency slot reads (slider over tokens)
# --------------------------------------------------------------------------------------------------


#: The strip's width in cells before it wraps to a new line: at this width a phone's ~300 px plot
#: area still gives every cell ~20 px, room for its two-digit ids (a wider strip crowded them).
STRIP_WIDTH = 14.0
#: Gaps in cells: between two segments, and between two frames of one video.
_SEGMENT_GAP, _FRAME_GAP = 0.6, 0.3


def _cell_layout(
    spans: Sequence[SegmentSpan], width: float = STRIP_WIDTH
) -> tuple[list[tuple[float, float]], list[tuple[float, float, str]]]:
    """Where to draw each token: text in a row, each image/frame as a grid, left to right, in lines
    at most ``width`` cells wide.

    A vision segment that does not fit on the current line starts the next one (it is never split;
    one wider than ``width`` gets a line of its own); a text segment fills the line and continues
    on the next. Each line is as tall as its tallest grid, and below it sit the segments' captions.

    Returns the (x, y) centre of every token's cell, in token order, and the (x, y, label) of each
    segment's caption (one per segment and line).
    """
    centres: list[tuple[float, float]] = []
    captions: list[tuple[float, float, str]] = []
    line: list[tuple[float, float, str]] = []  # the current line's captions (x, rows, label)
    cursor, top = 0.0, 0.0

    def new_line() -> None:
        nonlocal cursor, top, line
        rows = max(r for _, r, _ in line)
        captions.extend((x, top + rows - 1 + 0.75, label) for x, _, label in line)
        top += rows + 0.9
        cursor, line = 0.0, []

    for span in spans:
        if span.grid is None:  # text: as many cells as fit on each line
            left = span.stop - span.start
            while left:
                if cursor > 0 and cursor + 1 > width:
                    new_line()
                fit = min(left, max(1, math.floor(width - cursor + 1e-9)))
                centres.extend((cursor + k, top) for k in range(fit))
                line.append((cursor + (fit - 1) / 2, 1, "text"))
                cursor += fit + _SEGMENT_GAP
                left -= fit
            continue
        t, h, w = span.grid
        extent = t * w + (t - 1) * _FRAME_GAP
        if cursor > 0 and cursor + extent > width:
            new_line()
        first = cursor
        for frame in range(t):
            for row in range(h):
                for col in range(w):
                    centres.append((cursor + col, top + row))
            cursor += w + (_FRAME_GAP if frame < t - 1 else _SEGMENT_GAP)
        label = "image" if span.kind == "image" else f"video, {t} frames"
        line.append((first + (extent - 1) / 2, h, label))
    if line:
        new_line()
    return centres, captions


def token_map_figure(
    position_ids: torch.Tensor,
    segments: Sequence[tuple[str, int | tuple[int, int, int]]],
    layouts: Mapping[str, torch.Tensor],
    *,
    spatial_merge_size: int = 2,
    tokens: Sequence[int] | None = None,
    active: int = 0,
    caption: str | None = None,
    alt: str | None = None,
) -> go.Figure:
    """The sequence as a picture (text cells, image grid, video frames) with every token's ids,
    and, for the token chosen on the slider, the position each frequency slot reads.

    Equation:
        in M-RoPE slot j of token n turns by ``position_ids[axis(j), n] · θ_j``
        (Wang et al. 2024, arXiv:2409.12191); the bar of slot j shows ``position_ids[axis(j), n]``
        coloured by ``axis(j)``, for each layout (e.g. Qwen2-VL's chunked sections and Qwen3-VL's
        interleaved slots, from :func:`lib.mrope.mrope_slot_axes`).

    Args:
        position_ids: ``[3, T]`` integer ids (rows t, h, w).
        segments: the segments that produced them (see :func:`lib.mrope.segment_spans`).
        layouts: layout name -> ``axes [d_half]`` (0 = t, 1 = h, 2 = w), one bar panel each.
        spatial_merge_size: m, as for :func:`lib.mrope.segment_spans`.
        tokens: token indices offered on the slider (default: all).
        active: the slider step shown first (an index into ``tokens``).
        caption, alt: passed to :func:`lib.viz.core.apply_theme`.

    Returns:
        A figure with 1 static text trace (the ids in the cells) and
        ``1 + len(layouts)`` traces per slider step (the highlight and one bar trace per layout).
    """
    spans = segment_spans(segments, spatial_merge_size=spatial_merge_size)
    ids = _check_ids(position_ids, spans[-1].stop)
    n_tokens = ids.shape[1]
    if not isinstance(layouts, Mapping) or len(layouts) == 0:
        raise ValueError("layouts must be a non-empty mapping name -> axes [d_half]")
    first = next(iter(layouts.values()))
    d_half = first.numel() if isinstance(first, torch.Tensor) else None
    axes = {str(k): _check_axes(f"layouts[{k!r}]", v, d_half) for k, v in layouts.items()}
    chosen = list(range(n_tokens)) if tokens is None else list(tokens)
    if not chosen:
        raise ValueError("tokens must hold at least one token index")
    chosen = [check_int(f"tokens[{k}]", v, minimum=0) for k, v in enumerate(chosen)]
    if max(chosen) >= n_tokens:
        raise ValueError(f"tokens must lie in [0, {n_tokens - 1}], got {max(chosen)}")
    active = check_index("active", active, len(chosen))

    kinds = ["text"] * n_tokens
    for span in spans:
        kinds[span.start : span.stop] = [span.kind] * (span.stop - span.start)
    centres, captions = _cell_layout(spans)
    n_rows = 1 + len(axes)
    # the colour key in the first bar panel's title, not a legend: on a phone a legend beside the
    # slider's title (which wraps to two lines there) lay on top of it
    key = " · colour: " + " ".join(
        f'<span style="color:{color}">■ {name}</span>'
        for name, color in zip(AXIS_NAMES, AXIS_COLORS, strict=True)
    )
    strip_bottom = max(y for _, y, _ in captions) + 0.35  # below the last line's captions
    strip_px = 42 * (strip_bottom + 0.7)  # ~42 px per cell row, so three stacked ids fit
    bars_px = 150 * len(axes)
    fig = make_subplots(
        rows=n_rows, cols=1, vertical_spacing=0.09 * 700 / (strip_px + bars_px),
        row_heights=[strip_px] + [bars_px / len(axes)] * len(axes),
        subplot_titles=[""] + [str(name) + (key if r == 0 else "") for r, name in enumerate(axes)],
    )  # fmt: skip

    # static: the cells (shapes) and their ids (one text trace)
    for (x, y), kind in zip(centres, kinds, strict=True):
        fig.add_shape(
            type="rect", x0=x - 0.45, x1=x + 0.45, y0=y - 0.45, y1=y + 0.45,
            fillcolor=_KIND_FILL[kind], line={"width": 0}, layer="below", row=1, col=1,
        )  # fmt: skip
    labels = [  # text: one id (t = h = w); vision: t, h, w stacked, so narrow cells stay legible
        f"{ids[0, n]}" if kind == "text" else f"{ids[0, n]}<br>{ids[1, n]}<br>{ids[2, n]}"
        for n, kind in enumerate(kinds)
    ]
    fig.add_trace(
        go.Scatter(
            x=rounded([c[0] for c in centres]).tolist(),
            y=[c[1] for c in centres],
            mode="text",
            text=labels,
            textfont={"size": 9},
            showlegend=False,
            customdata=list(range(n_tokens)),
            hovertemplate="token %{customdata}<extra></extra>",
        ),
        row=1,
        col=1,
    )
    for x, y, label in captions:
        fig.add_annotation(
            x=float(rounded([x])[0]), y=y, text=label, showarrow=False,
            font={"color": _GUIDE, "size": 11}, yanchor="top", row=1, col=1,
        )  # fmt: skip

    # per step: the highlighted cell and one bar trace per layout
    top = int(ids.max())
    titles = []
    for n in chosen:
        x, y = centres[n]
        fig.add_trace(
            go.Scatter(
                x=rounded([x - 0.5, x + 0.5, x + 0.5, x - 0.5, x - 0.5]).tolist(),
                y=[y - 0.5, y - 0.5, y + 0.5, y + 0.5, y - 0.5],
                mode="lines", line={"color": OKABE_ITO[5], "width": 3},
                showlegend=False, hoverinfo="skip",
            ),
            row=1, col=1,
        )  # fmt: skip
        for r, (name, ax) in enumerate(axes.items(), start=2):
            read = ids[ax, n]  # [d_half]: the id row each slot reads
            fig.add_trace(
                go.Bar(
                    x=list(range(ax.size)), y=read.tolist(),
                    marker_color=[AXIS_COLORS[a] for a in ax.tolist()],
                    showlegend=False,
                    customdata=[AXIS_NAMES[a] for a in ax.tolist()],
                    hovertemplate="pair %{x} reads %{customdata} = %{y}<extra>" + name
                    + "</extra>",
                ),
                row=r, col=1,
            )  # fmt: skip
        # short enough for one line on a phone (a title wrapped to two lines lay on the strip)
        if kinds[n] == "text":
            titles.append(f"token {n} (text): t = h = w = {ids[0, n]}")
        else:
            titles.append(f"token {n} ({kinds[n]}): t {ids[0, n]}, h {ids[1, n]}, w {ids[2, n]}")
    add_step_slider(
        fig, [str(n) for n in chosen], n_static=1, per_step=1 + len(axes), prefix="token ",
        active=active, step_titles=titles, pad_t=40,
    )  # fmt: skip
    fig.update_layout(title={"x": 0.02, "xanchor": "left", "font": {"size": 14}}, barmode="overlay")
    xs = [c[0] for c in centres]
    fig.update_xaxes(
        range=[min(xs) - 0.7, max(xs) + 0.7], showticklabels=False, showgrid=False,
        zeroline=False, row=1, col=1,
    )  # fmt: skip
    fig.update_yaxes(
        range=[strip_bottom, -0.7], showticklabels=False, showgrid=False, zeroline=False,
        row=1, col=1,
    )  # fmt: skip
    for r in range(2, n_rows + 1):
        fig.update_yaxes(title="position read", range=[0, top * 1.08 + 1], row=r, col=1)
        fig.update_xaxes(
            title="frequency pair j (fast → slow)" if r == n_rows else None,
            row=r,
            col=1,
        )
    fig.update_layout(showlegend=False)
    fig = apply_theme(fig, caption=caption, alt=alt, height=round(200 + strip_px + bars_px + 60))
    fig.update_layout(margin={"t": 80, "b": 120})
    return fig


# --------------------------------------------------------------------------------------------------
# 3. which frequencies each axis gets
# --------------------------------------------------------------------------------------------------


def slot_frequencies_figure(
    layouts: Mapping[str, tuple[torch.Tensor, torch.Tensor]],
    *,
    context_length: float | None = None,
    caption: str | None = None,
    alt: str | None = None,
) -> go.Figure:
    """For each layout, the wavelengths ``2π/θ_j`` of the slots that each axis (t, h, w) uses.

    Equation:
        slot j turns by ``θ_j`` radians per unit of its axis' position, wavelength
        ``2π/θ_j`` (Su et al. 2021, arXiv:2104.09864). In Qwen2-VL's chunked sections
        (Wang et al. 2024, arXiv:2409.12191) each axis gets one contiguous band of wavelengths; with
        Qwen3-VL's interleaved slots each axis samples the whole range. One row per layout, one strip
        per axis; an axis with no slots says so.

    Args:
        layouts: name -> ``(axes [d_half], inv_freq [d_half])``: the axis of every slot (0 = t,
            1 = h, 2 = w) and the inverse frequency that slot turns at.
        context_length: optional length in tokens, drawn as a dotted vertical line.
        caption, alt: passed to :func:`lib.viz.core.apply_theme`.

    Returns:
        A figure with one subplot row per layout and one marker trace per axis and layout.
    """
    if not isinstance(layouts, Mapping) or len(layouts) == 0:
        raise ValueError("layouts must be a non-empty mapping name -> (axes, inv_freq)")
    names = [str(k) for k in layouts]
    fig = make_subplots(
        rows=len(names),
        cols=1,
        shared_xaxes=True,
        vertical_spacing=0.12,
        subplot_titles=names,
    )
    all_wavelengths = []
    in_legend: set[str] = set()  # each axis gets one legend entry, from its first non-empty trace
    for r, (name, value) in enumerate(layouts.items(), start=1):
        if not isinstance(value, tuple | list) or len(value) != 2:
            raise ValueError(f"layouts[{name!r}] must be a pair (axes, inv_freq)")
        axes_t, inv = value
        if not isinstance(inv, torch.Tensor) or not inv.is_floating_point():
            raise TypeError(f"layouts[{name!r}] inv_freq must be a floating-point tensor")
        if inv.dim() != 1:
            raise ValueError(f"layouts[{name!r}] inv_freq must be 1-D, got {list(inv.shape)}")
        ax = _check_axes(f"layouts[{name!r}] axes", axes_t, inv.numel())
        wavelength = rope_wavelengths(inv.detach().cpu()).numpy()  # [d_half], 2π/θ_j
        all_wavelengths.append(wavelength)
        for a, (axis, color) in enumerate(zip(AXIS_NAMES, AXIS_COLORS, strict=True)):
            slots = np.flatnonzero(ax == a)
            show = slots.size > 0 and axis not in in_legend
            if show:
                in_legend.add(axis)
            fig.add_trace(
                go.Scatter(
                    x=rounded(wavelength[slots]).tolist(), y=[axis] * slots.size,
                    mode="markers", name=f"{axis} pairs", legendgroup=axis, showlegend=show,
                    legendrank=a + 1,
                    marker={"color": color, "size": 9, "symbol": ("circle", "square", "diamond")[a],
                            "line": {"width": 0}},
                    customdata=slots.tolist(),
                    hovertemplate="pair %{customdata}<br>λ = %{x:,.4g}<extra>" + axis + "</extra>",
                ),
                row=r, col=1,
            )  # fmt: skip
            if slots.size == 0:
                fig.add_annotation(
                    x=0.5, xref=f"x{r if r > 1 else ''} domain", y=axis, yref=f"y{r if r > 1 else ''}",
                    text=f"no pairs for {axis}", showarrow=False, font={"color": _GUIDE},
                )  # fmt: skip
        fig.update_yaxes(
            categoryorder="array", categoryarray=list(reversed(AXIS_NAMES)), row=r, col=1,
            range=[-0.6, 2.6],
        )  # fmt: skip
    if context_length is not None:
        check_positive_float("context_length", context_length)
        for r in range(1, len(names) + 1):
            fig.add_trace(
                go.Scatter(
                    x=[float(context_length)] * 2, y=["w", "t"], mode="lines",
                    line={"color": _GUIDE, "dash": "dot", "width": 1.5},
                    name=f"{context_length:,.0f} positions", showlegend=r == 1, hoverinfo="skip",
                ),
                row=r, col=1,
            )  # fmt: skip
    lo = min(float(w.min()) for w in all_wavelengths)
    hi = max(float(w.max()) for w in all_wavelengths)
    if context_length is not None:
        hi = max(hi, float(context_length))
    fig.update_xaxes(
        type="log",
        exponentformat="power",
        range=[math.log10(lo) - 0.2, math.log10(hi) + 0.2],
    )
    fig.update_xaxes(title="wavelength 2π/θ_j (positions per turn)", row=len(names), col=1)
    fig.update_layout(legend={"orientation": "h", "y": 1.1, "x": 0})
    return apply_theme(fig, caption=caption, alt=alt, height=170 + 150 * len(names))
