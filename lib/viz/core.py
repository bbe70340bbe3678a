"""Shared pieces of every figure: palettes, theme, rounding, and a slider figure that needs no kernel.

Design rules (see the book's chapter template):

- colour-blind-safe colours only: the Okabe–Ito palette for lines and markers, ``cividis`` for
  sequential heatmaps and ``RdBu_r`` (blue negative, red positive) for
  signed data centred on zero;
- a transparent background and a neutral grey grid, so the figure reads in the site's light and dark
  themes (the site's plotly renderer also switches the font colour with the theme);
- every number rounded to a few significant digits, so a notebook's saved output is identical on
  another CPU, BLAS or thread count (nbval compares plotly JSON exactly);
- sliders built from ``layout.sliders`` steps that toggle trace visibility: they work in the static
  website, in JupyterLab and in VS Code alike.

A figure's caption and alt text travel in ``fig.layout.meta`` (``{"caption": ..., "alt": ...}``);
the site's renderer shows the caption under the figure and uses the alt text as its ``aria-label``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import plotly.graph_objects as go
import torch

from lib._checks import check_int, check_labels, check_real_array

#: Okabe & Ito (2008) qualitative palette, distinguishable with every common colour-vision deficiency.
OKABE_ITO = (
    "#0072B2",  # blue
    "#E69F00",  # orange
    "#009E73",  # bluish green
    "#CC79A7",  # reddish purple
    "#56B4E9",  # sky blue
    "#D55E00",  # vermillion
    "#F0E442",  # yellow
    "#999999",  # grey (stands in for Okabe-Ito black, which vanishes on a dark page)
)
#: Okabe–Ito yellow: unreadable as a line, marker or bar on a white page, so no figure picks it.
YELLOW = OKABE_ITO[6]
#: Line, marker and bar colours in the order figures use them: Okabe–Ito without yellow.
LINE_COLOURS = tuple(c for c in OKABE_ITO if c != YELLOW)


def palette(index: int) -> str:
    """The colour of a figure's ``index``-th line (or marker, or bar): the one palette rule.

    Cycles through :data:`LINE_COLOURS` (Okabe–Ito without yellow); past seven lines, colours
    repeat, so a figure with more lines also varies the dash or marker.

    Args:
        index: the line's index within its figure, >= 0.

    Returns:
        A ``#rrggbb`` colour.

    Raises:
        TypeError: ``index`` is not an int.
        ValueError: ``index`` is negative.
    """
    return LINE_COLOURS[check_int("index", index, minimum=0) % len(LINE_COLOURS)]


#: Sequential scale for non-negative data (perceptually uniform, colour-blind safe).
SEQUENTIAL = "Cividis"
#: Diverging scale for signed data centred on zero (blue negative, red positive).
DIVERGING = "RdBu_r"


def signed_scale(bound: float) -> dict[str, object]:
    """A heatmap's colour keywords for signed data: :data:`DIVERGING`, white at 0, range ±bound.

    Args:
        bound: the largest magnitude shown, > 0 (e.g. the data's max ``|z|``).

    Returns:
        ``{"colorscale": DIVERGING, "zmid": 0.0, "zmin": -bound, "zmax": bound}``, to pass as
        ``go.Heatmap(**signed_scale(bound), ...)``.
    """
    return {"colorscale": DIVERGING, "zmid": 0.0, "zmin": -bound, "zmax": bound}


#: A horizontal legend just above the plot area, left-aligned (``fig.update_layout(legend=...)``).
LEGEND_ABOVE = {"orientation": "h", "y": 1.02, "yanchor": "bottom", "x": 0, "xanchor": "left"}

#: Significant digits kept in figure data.
SIGNIFICANT_DIGITS = 4


def rounded(
    values: torch.Tensor | np.ndarray | Sequence[float],
    digits: int = SIGNIFICANT_DIGITS,
    *,
    decimals: int | None = None,
):
    """Round to ``digits`` significant digits and return a numpy array (float64).

    Rounding to significant digits (not decimals) keeps tiny and huge values meaningful; the result is
    what a figure stores, so two CPUs that differ in the last bits of a float32 give the same JSON.
    Non-finite values pass through unchanged. For a bounded quantity near zero (a cosine), pass
    ``decimals``: significant digits of -0.0004043 resolve 1e-7, finer than the float32 noise of
    a model's forward pass on two CPUs (seen in ch3: AVX-512 and AVX2 kernels).

    Equation:
        for finite v ≠ 0, with s = 10^(digits − 1 − ⌊log10 |v|⌋): round(v) = round(v · s) / s
        (with ``decimals``: s = 10^decimals)

    Args:
        values: a tensor (detached, moved to the CPU), array or sequence of numbers.
        digits: the significant digits kept (default :data:`SIGNIFICANT_DIGITS`).
        decimals: if given, the decimal places kept instead (an int >= 0); ``digits`` is ignored.

    Returns:
        A new float64 numpy array, shape of ``values``, with ``-0.0`` turned into ``0.0``.
    """
    if isinstance(values, torch.Tensor):
        array = values.detach().to(torch.float64).cpu().numpy()
    else:
        array = np.asarray(values, dtype=np.float64)
    out = array.copy()
    finite = np.isfinite(out) & (out != 0)
    if decimals is None:
        scale = 10.0 ** (digits - 1 - np.floor(np.log10(np.abs(out[finite]))))
    elif isinstance(decimals, bool) or not isinstance(decimals, int) or decimals < 0:
        raise ValueError(f"decimals must be an int >= 0 or None, got {decimals!r}")
    else:
        scale = 10.0**decimals
    out[finite] = np.round(out[finite] * scale) / scale
    out[out == 0] = 0.0  # turn -0.0 into 0.0 so the JSON does not flip sign between machines
    return out


def data_array(
    name: str,
    value: object,
    ndim: int,
    shape: str | None = None,
    *,
    length: int | None = None,
    sequences: bool = False,
    finite: bool = True,
    digits: int = SIGNIFICANT_DIGITS,
) -> np.ndarray:
    """A builder's data argument, checked and rounded with :func:`rounded`: what a figure draws.

    Args:
        name: the argument's name, for the message.
        value: a real tensor or numpy array (with ``sequences``, also a sequence of numbers).
        ndim: the dimensions it must have.
        shape: the shape named in the message (e.g. ``"[n_pairs, n_positions]"``).
        length: the size its first dimension must have, if given.
        sequences: also accept a sequence of numbers.
        finite: refuse NaN and ±inf.
        digits: significant digits kept (positions and distances keep more, to stay integers).

    Returns:
        A non-empty float64 numpy array with ``ndim`` dimensions.

    Raises:
        TypeError: ``value`` is of another kind (see :func:`lib._checks.check_real_array`).
        ValueError: a value is not finite (with ``finite``), or the shape is not as required.
    """
    array = rounded(check_real_array(name, value, sequences=sequences, finite=finite), digits)
    if array.ndim != ndim or array.size == 0 or (length is not None and array.shape[0] != length):
        want = f"[{length}]" if length is not None else shape or f"{ndim}-D and non-empty"
        raise ValueError(f"{name} must have shape {want}, got {list(array.shape)}")
    return array


def apply_theme(
    fig: go.Figure,
    *,
    title: str | None = None,
    caption: str | None = None,
    alt: str | None = None,
    height: int | None = None,
    default: str | None = None,
) -> go.Figure:
    """Give ``fig`` the book's look (transparent, neutral grid, Okabe–Ito colours) and its caption.

    ``caption`` and ``alt`` go into ``fig.layout.meta``; the website shows the caption under the
    figure and reads the alt text to screen readers.

    Args:
        fig: the figure, changed in place.
        title: optional figure title (left-aligned).
        caption: the caption; ``default`` where None.
        alt: the alt text; ``default`` where None, else the caption.
        height: optional height in pixels.
        default: a builder's own caption and alt text, used where ``caption``/``alt`` is None.

    Returns:
        ``fig``.
    """
    caption = default if caption is None else caption
    alt = default if alt is None else alt
    meta = dict(fig.layout.meta or {})
    if caption is not None:
        meta["caption"] = caption
    if alt is not None:
        meta["alt"] = alt
    elif caption is not None and "alt" not in meta:
        meta["alt"] = caption
    fig.update_layout(
        template="plotly_white",
        paper_bgcolor="rgba(0,0,0,0)",
        plot_bgcolor="rgba(0,0,0,0)",
        colorway=list(OKABE_ITO),
        font={"family": "system-ui, -apple-system, Segoe UI, Roboto, sans-serif", "size": 13},
        # A slider sits below the plot area, inside the bottom margin.
        margin={"l": 60, "r": 20, "t": 60 if title else 30, "b": 130 if fig.layout.sliders else 50},
        meta=meta or None,
    )
    grid = "rgba(128,128,128,0.3)"
    fig.update_xaxes(gridcolor=grid, zerolinecolor=grid, linecolor=grid)
    fig.update_yaxes(gridcolor=grid, zerolinecolor=grid, linecolor=grid)
    if title is not None:
        fig.update_layout(title={"text": title, "x": 0.02, "xanchor": "left"})
    if height is not None:
        fig.update_layout(height=height)
    return fig


def slider_figure(
    steps: Sequence[Sequence[go.BaseTraceType]],
    labels: Sequence[str],
    *,
    prefix: str = "",
    active: int = 0,
    step_titles: Sequence[str] | None = None,
    step_layouts: Sequence[Mapping[str, object]] | None = None,
    static_traces: Sequence[go.BaseTraceType] = (),
) -> go.Figure:
    """Build a figure whose slider shows one group of traces at a time (works with no kernel).

    Args:
        steps: one sequence of traces per slider position; every step must hold the same number of
            traces (their axes may differ).
        labels: the slider's label for each step.
        prefix: text shown before the current label (e.g. ``"position m = "``).
        active: the step shown first.
        step_titles: optional figure title for each step.
        step_layouts: optional layout updates for each step (see :func:`add_step_slider`).
        static_traces: traces shown at every step (e.g. a reference curve).

    Returns:
        A figure with ``len(steps) * traces_per_step + len(static_traces)`` traces and one slider.
    """
    if len(steps) == 0:
        raise ValueError("steps must hold at least one step")
    if len(labels) != len(steps):
        raise ValueError(f"labels must have one entry per step ({len(steps)}), got {len(labels)}")
    per_step = len(steps[0])
    if any(len(s) != per_step for s in steps):
        raise ValueError("every step must hold the same number of traces")
    if not 0 <= active < len(steps):
        raise ValueError(f"active must be in [0, {len(steps) - 1}], got {active}")

    fig = go.Figure()
    for trace in static_traces:
        fig.add_trace(trace)
    for group in steps:
        for trace in group:
            fig.add_trace(trace)
    return add_step_slider(
        fig,
        labels,
        n_static=len(static_traces),
        per_step=per_step,
        prefix=prefix,
        active=active,
        step_titles=step_titles,
        step_layouts=step_layouts,
    )


def add_slider(
    fig: go.Figure,
    labels: Sequence[str],
    args: Sequence[list],
    *,
    method: str = "update",
    prefix: str = "",
    active: int = 0,
    pad_t: int = 50,
    x: float | None = None,
    length: float | None = None,
    y: float = 0,
) -> go.Figure:
    """Append one plotly slider to ``fig``: the one place every slider of the book is made.

    Step k runs plotly.js's ``method`` (``"update"``, ``"restyle"`` or ``"animate"``) with
    ``args[k]`` in the page itself, so no kernel is needed. Several sliders can share a figure
    when they set different attributes (see :func:`lib.viz.rope.rotation_explorer`).

    Args:
        fig: the figure; sliders it already has are kept.
        labels: the label of each step.
        args: plotly's arguments of each step (e.g. ``[{"visible": [...]}, {"title.text": ...}]``).
        method: the plotly.js method the steps call.
        prefix: text shown before the current label (e.g. ``"position m = "``).
        active: the step shown first.
        pad_t: space in pixels above the slider (room for rotated tick labels).
        x: left end of the slider in paper coordinates (plotly's default if None).
        length: length of the slider as a fraction of the plot width (plotly's default if None).
        y: vertical position of the slider's top, in paper coordinates.

    Returns:
        ``fig``.

    Raises:
        ValueError: ``args`` and ``labels`` differ in length, or ``active`` is out of range.
    """
    n_steps = len(labels)
    if len(args) != n_steps:
        raise ValueError(f"args must have one entry per label ({n_steps}), got {len(args)}")
    if not 0 <= active < n_steps:
        raise ValueError(f"active must be in [0, {n_steps - 1}], got {active}")
    slider: dict = {"active": active, "currentvalue": {"prefix": prefix}, "pad": {"t": pad_t}}
    if x is not None:
        slider["x"] = x
    if length is not None:
        slider["len"] = length
    slider["y"] = y
    slider["yanchor"] = "top"
    slider["steps"] = [
        {"method": method, "label": str(label), "args": list(step_args)}
        for label, step_args in zip(labels, args, strict=True)
    ]
    fig.update_layout(sliders=[*fig.layout.sliders, slider])
    return fig


def add_step_slider(
    fig: go.Figure,
    labels: Sequence[str],
    *,
    n_static: int,
    per_step: int,
    prefix: str = "",
    active: int = 0,
    step_titles: Sequence[str] | None = None,
    step_layouts: Sequence[Mapping[str, object]] | None = None,
    legend_follows: bool = False,
    pad_t: int = 50,
    x: float | None = None,
    length: float | None = None,
) -> go.Figure:
    """Add a slider to ``fig`` (e.g. one built with subplots) that shows one group of traces a step.

    ``fig.data`` must be ``n_static`` always-visible traces followed by ``len(labels)`` groups of
    ``per_step`` traces, in slider order. Each step toggles trace visibility and, optionally, sets
    the title and other layout attributes, which plotly.js does in the page itself: no kernel
    needed.

    Args:
        fig: the figure, its traces in the order above.
        labels: the slider's label for each step.
        n_static: traces shown at every step (first in ``fig.data``).
        per_step: traces per step.
        prefix: text shown before the current label.
        active: the step shown first.
        step_titles: optional figure title for each step.
        step_layouts: optional layout updates for each step (e.g. ``{"yaxis.range": [0, 2]}``).
        legend_follows: also show only the current step's traces in the legend.
        pad_t: space in pixels above the slider (see :func:`add_slider`).
        x: left end of the slider in paper coordinates (see :func:`add_slider`).
        length: length of the slider (see :func:`add_slider`).

    Returns:
        ``fig``, with one more slider.

    Raises:
        ValueError: the trace count does not match, ``active`` is out of range, or a per-step
            sequence has the wrong length.
    """
    n_steps = len(labels)
    if len(fig.data) != n_static + n_steps * per_step:
        raise ValueError(
            f"fig holds {len(fig.data)} traces; expected n_static + len(labels) * per_step = "
            f"{n_static} + {n_steps} * {per_step}"
        )
    if not 0 <= active < n_steps:
        raise ValueError(f"active must be in [0, {n_steps - 1}], got {active}")
    for name, per in (("step_titles", step_titles), ("step_layouts", step_layouts)):
        if per is not None and len(per) != n_steps:
            raise ValueError(f"{name} must have one entry per step")
    for k, trace in enumerate(fig.data[n_static:]):
        trace.visible = k // per_step == active
    args = []
    for k in range(n_steps):
        visible = [True] * n_static + [j == k for j in range(n_steps) for _ in range(per_step)]
        data: dict[str, object] = {"visible": visible}
        if legend_follows:
            data["showlegend"] = visible
        layout: dict[str, object] = {} if step_titles is None else {"title.text": step_titles[k]}
        layout.update(step_layouts[k] if step_layouts is not None else {})
        args.append([data, layout])
    add_slider(fig, labels, args, prefix=prefix, active=active, pad_t=pad_t, x=x, length=length)
    if step_titles is not None:
        fig.update_layout(title={"text": step_titles[active]})
    return fig


def heatmap_slider(
    matrices: Sequence[torch.Tensor | np.ndarray],
    labels: Sequence[str],
    *,
    name: str = "matrices",
    prefix: str = "",
    x: Sequence[float] | None = None,
    y: Sequence[float] | None = None,
    x_title: str = "",
    y_title: str = "",
    colorscale: str = DIVERGING,
    zmid: float | None = 0.0,
    zmin: float | None = None,
    zmax: float | None = None,
    hover: str = "x=%{x}<br>y=%{y}<br>value=%{z:.3f}<extra></extra>",
    active: int = 0,
    square: bool = False,
    caption: str | None = None,
    alt: str | None = None,
    height: int | None = None,
) -> go.Figure:
    """A heatmap per slider step (e.g. one per head, layer or base), rows drawn top to bottom.

    ``matrices[k]`` is a 2-D array ``[rows, cols]``. One shared colour range (``zmin``/``zmax``, or
    symmetric about ``zmid``) keeps the steps comparable. The one heatmap slider of the book:
    :func:`lib.viz.rope.toeplitz_slider` and :func:`lib.viz.sinusoidal.pe_heatmap_slider` are it
    with their axis titles.

    Args:
        matrices: one 2-D matrix per slider step, tensors or arrays (rounded with
            :func:`rounded`; NaN and ±inf become gaps).
        labels: the slider's label for each step.
        name: the argument's name in error messages.
        prefix: text shown before the current label.
        x, y: column and row coordinates, or None for 0, 1, 2, ...
        x_title, y_title: the axis titles.
        colorscale: a plotly colour scale (default the book's diverging one).
        zmid: the centre of a symmetric colour range, used when ``zmin`` or ``zmax`` is None;
            None: the finite data's minimum and maximum.
        zmin, zmax: a fixed colour range (both must be given to be used).
        hover: the heatmaps' ``hovertemplate``.
        active: the step shown first.
        square: every matrix must be square; drawn with square cells, columns labelled on top.
        caption, alt, height: passed to :func:`apply_theme`.

    Returns:
        A figure with one heatmap per step and one slider, the y axis reversed.

    Raises:
        TypeError: ``matrices`` is not a sequence of tensors or arrays.
        ValueError: no matrix, a matrix that is not 2-D (or not square with ``square``), or
            ``labels`` and ``active`` that do not fit the steps.

    Shapes:
        matrices[k]: [rows, cols]
    """
    if isinstance(matrices, torch.Tensor | np.ndarray) or not isinstance(matrices, Sequence):
        raise TypeError(f"{name} must be a sequence of 2-D tensors (one per slider step)")
    if not matrices:
        raise ValueError(f"{name} must hold at least one 2-D matrix")
    arrays = [
        rounded(check_real_array(f"{name}[{k}]", m, finite=False)) for k, m in enumerate(matrices)
    ]
    for k, a in enumerate(arrays):
        if a.ndim != 2 or (square and a.shape[0] != a.shape[1]):
            want = "square [T, T]" if square else "2-D [rows, cols]"
            raise ValueError(f"{name}[{k}] must be {want}, got shape {list(a.shape)}")
    labels = check_labels("labels", labels, len(arrays))
    finite = np.concatenate([a[np.isfinite(a)].ravel() for a in arrays])
    if zmin is None or zmax is None:
        if zmid is not None and finite.size:
            bound = float(np.max(np.abs(finite - zmid)))
            zmin, zmax = zmid - bound, zmid + bound
        elif finite.size:
            zmin, zmax = float(finite.min()), float(finite.max())
    steps = [
        [
            go.Heatmap(
                z=np.asarray(np.where(np.isfinite(a), a, None)).tolist(),
                x=list(x) if x is not None else None,
                y=list(y) if y is not None else None,
                colorscale=colorscale,
                zmin=zmin,
                zmax=zmax,
                hovertemplate=hover,
            )
        ]
        for a in arrays
    ]
    fig = slider_figure(steps, labels, prefix=prefix, active=active)
    fig.update_xaxes(title=x_title)
    fig.update_yaxes(title=y_title, autorange="reversed")
    if square:
        fig.update_yaxes(scaleanchor="x", constrain="domain")
        fig.update_xaxes(constrain="domain", side="top")
    return apply_theme(fig, caption=caption, alt=alt, height=height)
