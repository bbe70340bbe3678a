"""A static matplotlib picture of any figure the book makes, saved beside its interactive JSON.

Notebook viewers that run no JavaScript (a repository's web page, nbviewer, an editor's preview) show
nothing for ``application/vnd.plotly.v1+json``. This module draws the same figure with matplotlib, at
the state the figure opens in (its initial slider step or animation frame: the traces marked
visible), with the same title, axis titles, colour scales, legend entries and caption, and the
plotly renderer ``BookRenderer`` puts that PNG in the same display bundle as the plotly JSON.

Publishing tooling, not part of ``lib``: ``make execute`` (``scripts/nbtool.py execute``) registers
the renderer in its kernel before the first cell, so the committed notebooks carry the PNGs; a
reader's own kernel, the book build and nbval show the plotly JSON alone (JupyterLab, VS Code and
Colab draw it; the website draws it through ``bookext/plotly_mime.py``; nbval skips ``image/png``).
``bookext/social.py`` uses the saved PNG (or :func:`render_png`) as a chapter's social-card image.

The drawing is generic: it reads the plotly figure's JSON (traces ``scatter``, ``heatmap`` and
``bar``; axes from ``layout.xaxis*``/``yaxis*`` with their domains; annotations, shapes, legend)
and never holds per-figure code. A trace type it does not know raises :class:`ValueError`.

Pictures are deterministic: Agg at a fixed size and DPI, matplotlib's bundled DejaVu Sans, no
timestamps or software name in the PNG, a fixed 8-bit palette (no dithering).
"""

from __future__ import annotations

import base64
import contextlib
import io
import json
import logging
import re
import textwrap
import warnings
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import numpy as np
from plotly.io._base_renderers import PlotlyRenderer  # plotly's mime renderer, not exported

PLOTLY_MIME = "application/vnd.plotly.v1+json"
PNG_MIME = "image/png"
#: Name of the plotly renderer registered by :func:`use_book_renderer`.
RENDERER_NAME = "book_static"

#: Picture width in pixels (the height follows the figure) and resolution.
WIDTH_PX = 720
DPI = 100
#: Colours kept in the saved PNG (an adaptive octree palette: smooth cividis/RdBu colour bars).
PALETTE_COLOURS = 256

_PX = 72.0 / 96.0  # plotly sizes are CSS pixels; matplotlib's are points
_DASHES: dict[str, Any] = {
    "solid": "-",
    "dot": (0, (1, 2)),
    "dash": (0, (4, 2.5)),
    "longdash": (0, (7, 3)),
    "dashdot": (0, (4, 2, 1, 2)),
    "longdashdot": (0, (7, 2, 1, 2)),
}
_SYMBOLS = {
    "circle": "o",
    "square": "s",
    "diamond": "D",
    "cross": "P",
    "x": "X",
    "triangle-up": "^",
    "triangle-down": "v",
    "triangle-left": "<",
    "triangle-right": ">",
    "star": "*",
    "hexagon": "h",
    "pentagon": "p",
    "arrow": "^",
    "arrow-up": "^",
    "line-ns": "|",
    "line-ew": "_",
}
_HATCHES = {"/": "///", "\\": "\\\\\\", "x": "xxx", "-": "---", "|": "|||", "+": "+++", ".": ".."}
_FONT = {
    "font.family": ["DejaVu Sans"],
    "font.size": 9.0,
    "axes.titlesize": 9.0,
    "axes.labelsize": 9.0,
    "xtick.labelsize": 8.0,
    "ytick.labelsize": 8.0,
    "legend.fontsize": 8.0,
    "text.parse_math": False,
    "axes.unicode_minus": True,
    "svg.hashsalt": "book",
    "path.simplify": True,
    "agg.path.chunksize": 0,
    "axes.edgecolor": "#bbbbbb",
    "axes.linewidth": 0.6,
    "xtick.color": "#444444",
    "ytick.color": "#444444",
    "text.color": "#222222",
    "axes.labelcolor": "#222222",
}
_TEXT_COLOUR = "#222222"
_GRID = (0.5, 0.5, 0.5, 0.25)


# ----------------------------------------------------------------------------------------------
# Small conversions


def _text(value: Any) -> str:
    """Plotly's HTML-ish text (``<br>``, ``<b>``, ``<sup>``) as plain matplotlib text."""
    if value is None:
        return ""
    if isinstance(value, Mapping):
        value = value.get("text", "")
    text = str(value)
    text = re.sub(r"<br\s*/?>", "\n", text, flags=re.IGNORECASE)
    text = re.sub(r"<sup>(.*?)</sup>", lambda m: "^" + _bracket(m.group(1)), text)
    text = re.sub(r"<sub>(.*?)</sub>", lambda m: "_" + _bracket(m.group(1)), text)
    text = re.sub(r"<[^>]+>", "", text)
    return text.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")


_SUPERSCRIPT = str.maketrans("0123456789-−", "⁰¹²³⁴⁵⁶⁷⁸⁹⁻⁻")


def _log_label(value: float, _pos: Any = None) -> str:
    """A log-axis tick as plotly's ``exponentformat="power"`` writes it: 10³, 10⁻²."""
    if value <= 0 or not np.isfinite(value):
        return ""
    exponent = np.log10(value)
    if abs(exponent - round(exponent)) > 1e-9:
        return f"{value:g}"
    exponent = round(float(exponent))
    if 0 <= exponent <= 3:
        return f"{10**exponent:d}"
    return "10" + str(exponent).translate(_SUPERSCRIPT)


def _bracket(text: str) -> str:
    return text if re.fullmatch(r"[\w.−-]", text) else f"({text})"


def _colour(value: Any, default: Any = None) -> Any:
    """A plotly colour string (``#hex``, ``rgb()``, ``rgba()``, a CSS name) as an RGBA tuple."""
    from matplotlib import colors as mcolors

    if value is None:
        return default
    if isinstance(value, (tuple, list)) and len(value) in (3, 4):
        return tuple(value)
    text = str(value).strip()
    match = re.fullmatch(r"rgba?\(([^)]*)\)", text.replace(" ", ""))
    if match:
        parts = [float(p) for p in match.group(1).split(",")]
        alpha = parts[3] if len(parts) == 4 else 1.0
        return (parts[0] / 255, parts[1] / 255, parts[2] / 255, alpha)
    try:
        return mcolors.to_rgba(text)
    except ValueError:
        return default


def _colormap(scale: Any, name: str = "plotly"):
    """A plotly colour scale (``[[0, colour], ..., [1, colour]]`` or a name) as a colormap."""
    from matplotlib import colormaps
    from matplotlib.colors import LinearSegmentedColormap

    if isinstance(scale, str):
        import plotly.colors

        reverse = scale.endswith("_r")
        base = scale[:-2] if reverse else scale
        try:
            scale = plotly.colors.get_colorscale(base)
        except Exception:
            return colormaps[scale.lower()] if scale.lower() in colormaps else colormaps["cividis"]
        if reverse:
            scale = [[1 - p, c] for p, c in reversed(scale)]
    if not scale:
        return colormaps["cividis"]
    stops = [(float(p), _colour(c, (0.5, 0.5, 0.5, 1.0))) for p, c in scale]
    return LinearSegmentedColormap.from_list(name, stops, N=256)


def _numbers(values: Any) -> np.ndarray:
    """A plotly data list as float64 with ``None`` as NaN."""
    if values is None:
        return np.array([], dtype=np.float64)
    if isinstance(values, Mapping):  # plotly's typed-array encoding {"dtype", "bdata"}
        values = _typed_array(values)
    return np.array(
        [np.nan if v is None else v for v in np.asarray(values, dtype=object).ravel()],
        dtype=np.float64,
    )


def _typed_array(spec: Mapping) -> np.ndarray:
    data = np.frombuffer(base64.b64decode(spec["bdata"]), dtype=np.dtype(spec["dtype"]))
    shape = spec.get("shape")
    if shape:
        dims = [int(s) for s in str(shape).split(",")]
        data = data.reshape(dims)
    return data.astype(np.float64)


def _is_category(values: Any) -> bool:
    if values is None or isinstance(values, Mapping):
        return False
    return any(isinstance(v, str) for v in np.asarray(values, dtype=object).ravel())


def _per_point(value: Any, n: int) -> list:
    if isinstance(value, (list, tuple)):
        out = list(value)[:n]
        return out + [out[-1] if out else None] * (n - len(out))
    return [value] * n


def _visible(trace: Mapping) -> bool:
    return trace.get("visible", True) not in (False, "legendonly")


def _pair(trace: Mapping) -> tuple[str, str]:
    """The (x axis, y axis) references a trace is drawn on."""
    return trace.get("xaxis", "x"), trace.get("yaxis", "y")


def _opacity(spec: Mapping) -> float:
    """``spec["opacity"]``: 1 when absent or given per point."""
    value = spec.get("opacity", 1.0)
    return 1.0 if isinstance(value, list) else float(value)


def _font_size(font: Mapping, default: float) -> float:
    """A plotly font size (CSS pixels, possibly one per point: the first) in points."""
    return float(_per_point(font.get("size", default), 1)[0] or default) * _PX


# ----------------------------------------------------------------------------------------------
# Axes


class _Axes:
    """The matplotlib axes standing for plotly's subplots, and the paper-to-figure mapping."""

    def __init__(self, fig, layout: Mapping, traces: Sequence[Mapping], area: tuple):
        self.fig = fig
        self.layout = layout
        self.area = area  # (left, bottom, width, height) of plotly's "paper" in figure fraction
        self.axes: dict[tuple[str, str], Any] = {}
        self.categories: dict[str, list[str]] = {}
        self._collect_categories(traces)
        pairs = []
        for trace in traces:
            pair = _pair(trace)
            if pair not in pairs:
                pairs.append(pair)
        for key in layout:
            match = re.fullmatch(r"xaxis(\d*)", key)
            if match:
                anchor = layout[key].get("anchor", "y")
                pair = ("x" + match.group(1), anchor if anchor != "free" else "y")
                if pair not in pairs and f"yaxis{pair[1][1:]}" in layout:
                    pairs.append(pair)
        for pair in pairs or [("x", "y")]:
            self.get(pair)

    @staticmethod
    def _layout_key(ref: str) -> str:
        return ("xaxis" if ref[0] == "x" else "yaxis") + ref[1:]

    def axis(self, ref: str) -> Mapping:
        return self.layout.get(self._layout_key(ref)) or {}

    def _collect_categories(self, traces: Sequence[Mapping]) -> None:
        for trace in traces:
            for letter in ("x", "y"):
                ref = trace.get(f"{letter}axis", letter)
                values = trace.get(letter)
                if _is_category(values):
                    cats = self.categories.setdefault(ref, [])
                    for v in np.asarray(values, dtype=object).ravel():
                        if v is not None and str(v) not in cats:
                            cats.append(str(v))
        for ref in list(self.categories):
            order = self.axis(ref).get("categoryarray")
            if order:
                ordered = [str(c) for c in order]
                self.categories[ref] = ordered + [
                    c for c in self.categories[ref] if c not in ordered
                ]

    def coords(self, ref: str, values: Any) -> np.ndarray:
        """Data values on axis ``ref`` as numbers (categories become 0, 1, 2, ...)."""
        if ref in self.categories and _is_category(values):
            index = {c: i for i, c in enumerate(self.categories[ref])}
            return np.array(
                [
                    np.nan if v is None else index.get(str(v), np.nan)
                    for v in np.asarray(values, dtype=object).ravel()
                ],
                dtype=np.float64,
            )
        return _numbers(values)

    def positions(self, ref: str, values: Any, n: int) -> np.ndarray:
        """:meth:`coords` of ``values``, or 0, 1, ..., n - 1 when the trace gives none."""
        return np.arange(n, dtype=np.float64) if values is None else self.coords(ref, values)

    def on(self, ref: str, letter: str) -> Any:
        """The first axes drawn on axis ``ref`` (an x axis when ``letter`` is "x"), or None."""
        side = 0 if letter == "x" else 1
        return next((ax for pair, ax in self.axes.items() if pair[side] == ref), None)

    def rect(self, xref: str, yref: str) -> list[float]:
        xd = self.axis(xref).get("domain") or [0, 1]
        yd = self.axis(yref).get("domain") or [0, 1]
        left, bottom, width, height = self.area
        return [
            left + xd[0] * width,
            bottom + yd[0] * height,
            (xd[1] - xd[0]) * width,
            (yd[1] - yd[0]) * height,
        ]

    def get(self, pair: tuple[str, str]):
        if pair in self.axes:
            return self.axes[pair]
        xref, yref = pair
        over = self.axis(yref).get("overlaying")
        base = next((ax for (x, y), ax in self.axes.items() if x == xref and y == over), None)
        if over and base is not None:
            ax = base.twinx()
        else:
            ax = self.fig.add_axes(self.rect(xref, yref))
            ax.set_facecolor("none")
        self.axes[pair] = ax
        return ax

    def paper(self):
        """The transform from plotly's paper coordinates to the figure."""
        from matplotlib.transforms import Affine2D

        left, bottom, width, height = self.area
        return Affine2D().scale(width, height).translate(left, bottom) + self.fig.transFigure

    def transform(self, ref: str, letter: str):
        """The transform for one direction of an annotation or shape reference."""
        if not ref or ref == "paper":
            return self.paper()
        ax = self.on(ref.split()[0], letter)
        if ax is None:
            return self.paper()
        return ax.transAxes if ref.endswith("domain") else ax.transData

    def blend(self, xref: str, yref: str) -> Any:
        """The transform of a point given as (x on ``xref``, y on ``yref``)."""
        from matplotlib.transforms import blended_transform_factory

        return blended_transform_factory(self.transform(xref, "x"), self.transform(yref, "y"))

    def style(self) -> None:
        """Axis titles, scales, ranges, ticks and grids from the layout."""
        for (xref, yref), ax in self.axes.items():
            self._style_axis(ax, xref, "x")
            self._style_axis(ax, yref, "y")
            xa, ya = self.axis(xref), self.axis(yref)
            if ya.get("scaleanchor") == xref or xa.get("scaleanchor") == yref:
                ratio = ya.get("scaleratio") or xa.get("scaleratio") or 1
                ax.set_aspect(ratio, adjustable="box", anchor="C")
        for (xref, yref), ax in self.axes.items():
            for ref, letter in ((xref, "x"), (yref, "y")):
                other = self.on(self.axis(ref).get("matches"), letter)
                if other is not None:
                    getattr(ax, f"set_{letter}lim")(getattr(other, f"get_{letter}lim")())

    def _style_axis(self, ax, ref: str, letter: str) -> None:
        spec = self.axis(ref)
        set_lim = getattr(ax, f"set_{letter}lim")
        axis = getattr(ax, f"{letter}axis")
        title = _text(spec.get("title"))
        if title:
            getattr(ax, f"set_{letter}label")(title, fontsize=9)
        log = spec.get("type") == "log"
        if log:
            from matplotlib.ticker import FuncFormatter, NullFormatter

            getattr(ax, f"set_{letter}scale")("log")
            axis.set_major_formatter(FuncFormatter(_log_label))
            axis.set_minor_formatter(NullFormatter())
        if ref in self.categories:
            cats = self.categories[ref]
            if not spec.get("tickvals"):
                axis.set_ticks(range(len(cats)), [_text(c) for c in cats])
            set_lim(-0.5, len(cats) - 0.5)
        rng = spec.get("range")
        if rng and len(rng) == 2 and None not in rng:
            lo, hi = (10.0 ** float(rng[0]), 10.0 ** float(rng[1])) if log else rng
            set_lim(lo, hi)
        if spec.get("autorange") == "reversed":
            lo, hi = getattr(ax, f"get_{letter}lim")()
            if lo < hi:
                set_lim(hi, lo)
        if spec.get("tickvals") is not None:
            vals = self.coords(ref, spec["tickvals"])
            labels = spec.get("ticktext")
            if labels is not None:
                axis.set_ticks(vals, [_text(t) for t in labels])
            else:
                axis.set_ticks(vals)
        elif spec.get("tickformat") == ".0%":
            from matplotlib.ticker import PercentFormatter

            axis.set_major_formatter(PercentFormatter(1.0, decimals=0))
        if spec.get("showticklabels") is False:
            ax.tick_params(axis=letter, labelbottom=False, labelleft=False, labelright=False)
        angle = spec.get("tickangle")
        if angle is None and letter == "x" and ref in self.categories:
            cats = self.categories[ref]
            room = ax.get_position().width * WIDTH_PX / max(len(cats), 1)
            angle = -30 if max(len(c) for c in cats) * 5.5 > room else None
        if angle is not None and float(angle) != 0:
            for label in axis.get_ticklabels():
                label.set_rotation(-float(angle))
                label.set_rotation_mode("anchor")
                if letter == "x":
                    label.set_ha("right" if float(angle) < 0 else "left")
        if spec.get("side") == "right":
            ax.yaxis.set_label_position("right")
            ax.yaxis.tick_right()
        if spec.get("side") == "top":
            ax.xaxis.set_label_position("top")
            ax.xaxis.tick_top()
        if spec.get("showgrid", True) is not False and ref not in self.categories:
            axis.grid(True, color=_GRID, linewidth=0.6)
        ax.tick_params(axis=letter, length=2, pad=2)
        ax.set_axisbelow(True)
        for side in ("top", "right"):
            ax.spines[side].set_visible(False)


# ----------------------------------------------------------------------------------------------
# Traces


def _draw_scatter(axes: _Axes, trace: Mapping, ax, colour: Any, z: float) -> Any:
    xref, yref = _pair(trace)
    y = axes.coords(yref, trace.get("y"))
    x = axes.positions(xref, trace.get("x"), len(y))
    n = min(len(x), len(y))
    x, y = x[:n], y[:n]
    mode = trace.get("mode") or ("lines+markers" if n < 20 else "lines")
    line = trace.get("line") or {}
    marker = trace.get("marker") or {}
    opacity = _opacity(trace)
    line_colour = _colour(line.get("color"), colour)
    handle = None
    fill = trace.get("fill")
    if fill in ("toself", "tonext", "tozeroy", "tozerox") and n:
        fc = _colour(trace.get("fillcolor"), (*_colour(line_colour)[:3], 0.3))
        if fill == "tozeroy":
            ax.fill_between(x, 0, y, color=fc, linewidth=0, zorder=z - 0.5)
        elif fill == "tozerox":
            ax.fill_betweenx(y, 0, x, color=fc, linewidth=0, zorder=z - 0.5)
        else:
            ax.fill(x, y, color=fc, linewidth=0, zorder=z - 0.5)
    if "lines" in mode and n:
        width = float(line.get("width", 2)) * _PX
        style = _DASHES.get(line.get("dash", "solid"), "-")
        shape = line.get("shape", "linear")
        drawstyle = {"hv": "steps-post", "vh": "steps-pre", "hvh": "steps-mid"}.get(
            shape, "default"
        )
        (handle,) = ax.plot(
            x,
            y,
            color=line_colour,
            linewidth=width,
            linestyle=style,
            drawstyle=drawstyle,
            alpha=opacity,
            zorder=z,
            solid_capstyle="butt",
        )
    if "markers" in mode and n:
        handle = _draw_markers(ax, trace, marker, x, y, line_colour, opacity, z + 0.1) or handle
    if "text" in mode and n and trace.get("text") is not None:
        _draw_point_text(ax, trace, x, y, z + 0.2)
    return handle


def _draw_markers(ax, trace, marker, x, y, colour, opacity, z):
    n = len(x)
    sizes = _per_point(marker.get("size", 6), n)
    symbols = _per_point(marker.get("symbol", "circle"), n)
    angles = _per_point(marker.get("angle", 0), n)
    colours = marker.get("color", colour)
    if isinstance(colours, (list, tuple)) and colours and not isinstance(colours[0], str):
        cmap = _colormap(marker.get("colorscale") or "Cividis")
        values = _numbers(colours)
        lo = marker.get("cmin", np.nanmin(values) if values.size else 0)
        hi = marker.get("cmax", np.nanmax(values) if values.size else 1)
        span = (hi - lo) or 1.0
        colours = [cmap((v - lo) / span) if np.isfinite(v) else (0, 0, 0, 0) for v in values]
        colours = _per_point(colours, n)
    else:
        colours = [_colour(c, colour) for c in _per_point(colours, n)]
    edge = marker.get("line") or {}
    edge_colour = _colour(edge.get("color"), "none")
    edge_width = float(edge.get("width", 0) or 0) * _PX
    alpha = _opacity(marker)
    groups: dict[tuple, list[int]] = {}
    for i in range(n):
        if not (np.isfinite(x[i]) and np.isfinite(y[i])):
            continue
        symbol = str(symbols[i] or "circle")
        groups.setdefault((symbol, float(angles[i] or 0)), []).append(i)
    handle = None
    for (symbol, angle), idx in groups.items():
        from matplotlib.markers import MarkerStyle
        from matplotlib.transforms import Affine2D

        open_ = symbol.endswith("-open")
        base = symbol.removesuffix("-open").removesuffix("-dot")
        style = MarkerStyle(_SYMBOLS.get(base, "o"), transform=Affine2D().rotate_deg(-angle))
        face = [colours[i] for i in idx]
        handle = ax.scatter(
            x[idx],
            y[idx],
            s=[(float(sizes[i] or 6) * _PX) ** 2 for i in idx],
            marker=style,
            facecolors="none" if open_ else face,
            edgecolors=face if open_ else edge_colour,
            linewidths=max(edge_width, 1.0 if open_ else 0.0),
            alpha=alpha * opacity,
            zorder=z,
        )
    return handle


#: plotly's vertical text position -> (matplotlib's vertical alignment, offset in points).
_VERTICAL = {"top": ("bottom", 3), "bottom": ("top", -3), "middle": ("center", 0)}


def _draw_point_text(ax, trace, x, y, z):
    n = len(x)
    texts = _per_point(trace.get("text"), n)
    positions = _per_point(trace.get("textposition", "middle center"), n)
    font = trace.get("textfont") or {}
    size = _font_size(font, 12)
    colour = _colour(_per_point(font.get("color"), 1)[0], _TEXT_COLOUR)
    for i in range(n):
        if texts[i] in (None, "") or not (np.isfinite(x[i]) and np.isfinite(y[i])):
            continue
        pos = str(positions[i] or "middle center").split()
        va, dy = _VERTICAL.get(pos[0], _VERTICAL["middle"])
        horizontal = pos[-1] if pos[-1] in ("left", "right", "center") else "center"
        ha = {"left": "right", "right": "left", "center": "center"}[horizontal]
        dx = {"left": -3, "right": 3, "center": 0}[horizontal]
        ax.annotate(
            _text(texts[i]),
            (x[i], y[i]),
            xytext=(dx, dy),
            textcoords="offset points",
            ha=ha,
            va=va,
            fontsize=size,
            color=colour,
            zorder=z,
            annotation_clip=False,
        )


def _edges(centres: np.ndarray) -> np.ndarray:
    if centres.size == 1:
        return np.array([centres[0] - 0.5, centres[0] + 0.5])
    mid = (centres[:-1] + centres[1:]) / 2
    return np.concatenate(
        [[centres[0] - (mid[0] - centres[0])], mid, [centres[-1] + (centres[-1] - mid[-1])]]
    )


def _draw_heatmap(axes: _Axes, trace: Mapping, ax, z: float, colorbars: list) -> Any:
    from matplotlib.colors import Normalize

    raw = trace.get("z")
    if isinstance(raw, Mapping):
        values = _typed_array(raw)
    else:
        rows = [[np.nan if v is None else v for v in row] for row in raw or []]
        values = np.array(rows, dtype=np.float64)
    if values.ndim != 2 or values.size == 0:
        return None
    if trace.get("transpose"):
        values = values.T
    n_rows, n_cols = values.shape
    xref, yref = _pair(trace)
    x = axes.positions(xref, trace.get("x"), n_cols)
    y = axes.positions(yref, trace.get("y"), n_rows)
    x_edges = x if len(x) == n_cols + 1 else _edges(x[:n_cols])
    y_edges = y if len(y) == n_rows + 1 else _edges(y[:n_rows])
    finite = values[np.isfinite(values)]
    lo = trace.get("zmin", float(finite.min()) if finite.size else 0.0)
    hi = trace.get("zmax", float(finite.max()) if finite.size else 1.0)
    if trace.get("zmid") is not None and (trace.get("zmin") is None or trace.get("zmax") is None):
        bound = max(abs(lo - trace["zmid"]), abs(hi - trace["zmid"]))
        lo, hi = trace["zmid"] - bound, trace["zmid"] + bound
    cmap = _colormap(trace.get("colorscale") or "Cividis", name=str(trace.get("name", "z")))
    mesh = ax.pcolormesh(
        x_edges,
        y_edges,
        np.ma.masked_invalid(values),
        cmap=cmap,
        norm=Normalize(vmin=lo, vmax=hi if hi != lo else lo + 1),
        shading="flat",
        zorder=z,
        rasterized=False,
        linewidth=0,
        antialiased=False,
    )
    if trace.get("showscale", True) is not False:
        colorbars.append((mesh, trace.get("colorbar") or {}, ax))
    return mesh


def _draw_bars(axes: _Axes, bars: list[tuple[int, Mapping, Any, float]], barmode: str) -> dict:
    """All visible bar traces of one axes: grouped side by side, overlaid or stacked.

    ``bars`` holds (trace index, trace, colour, z order); returns {trace index: bar container}.
    """
    handles = {}
    groups: list[str] = []
    for _, trace, _, _ in bars:
        key = str(trace.get("offsetgroup", id(trace)))
        if key not in groups:
            groups.append(key)
    n_groups = len(groups) if barmode == "group" else 1
    stack: dict[float, float] = {}
    for index, trace, colour, z in bars:
        horizontal = trace.get("orientation") == "h"
        cat_letter, val_letter = ("y", "x") if horizontal else ("x", "y")
        cref = trace.get(f"{cat_letter}axis", cat_letter)
        vref = trace.get(f"{val_letter}axis", val_letter)
        ax = axes.get(_pair(trace))
        values = axes.coords(vref, trace.get(val_letter))
        pos = axes.positions(cref, trace.get(cat_letter), len(values))
        n = min(len(pos), len(values))
        pos, values = pos[:n], values[:n]
        finite = np.unique(pos[np.isfinite(pos)])
        spacing = float(np.min(np.diff(finite))) if finite.size > 1 else 1.0
        slot = 0.8 * spacing / n_groups
        width = trace.get("width")
        width_each = np.array(_per_point(width, n), dtype=float) if width is not None else None
        offset = 0.0
        if barmode == "group":
            k = groups.index(str(trace.get("offsetgroup", id(trace))))
            offset = (k - (n_groups - 1) / 2) * slot
        w = width_each if width_each is not None else np.full(n, slot)
        base = trace.get("base")
        bottoms = np.array(_per_point(base, n), dtype=float) if base is not None else np.zeros(n)
        if barmode in ("stack", "relative"):
            bottoms = np.array([stack.get(float(p), 0.0) for p in pos])
            for p, v in zip(pos, values, strict=True):
                stack[float(p)] = stack.get(float(p), 0.0) + (0.0 if np.isnan(v) else v)
        marker = trace.get("marker") or {}
        colours = [_colour(c, colour) for c in _per_point(marker.get("color", colour), n)]
        alpha = _opacity(marker)
        pattern = (marker.get("pattern") or {}).get("shape")
        hatch = _HATCHES.get(pattern) if isinstance(pattern, str) else None
        draw = ax.barh if horizontal else ax.bar
        kwargs = {
            "height" if horizontal else "width": w,
            "left" if horizontal else "bottom": bottoms,
        }
        handle = draw(
            pos + offset,
            np.nan_to_num(values),
            color=colours,
            alpha=alpha,
            hatch=hatch,
            edgecolor=(1, 1, 1, 0.8) if hatch else "none",
            linewidth=0.4 if hatch else 0,
            zorder=z,
            **kwargs,
        )
        handles[index] = handle
        texts = trace.get("text")
        if texts is not None and trace.get("textposition", "auto") != "none":
            font = trace.get("textfont") or {}
            size = _font_size(font, 10)
            for i, t in enumerate(_per_point(texts, n)):
                if t in (None, "") or not np.isfinite(values[i]):
                    continue
                end = bottoms[i] + values[i]
                xy = (end, pos[i] + offset) if horizontal else (pos[i] + offset, end)
                shift = (3, 0) if horizontal else (0, 2 if values[i] >= 0 else -2)
                ax.annotate(
                    _text(t),
                    xy,
                    xytext=shift,
                    textcoords="offset points",
                    fontsize=size,
                    ha="left" if horizontal else "center",
                    va="center" if horizontal else ("bottom" if values[i] >= 0 else "top"),
                    color=_TEXT_COLOUR,
                    annotation_clip=False,
                    zorder=z + 0.2,
                )
    return handles


# ----------------------------------------------------------------------------------------------
# Layout-level pieces


def _shown(items: Sequence[Mapping]) -> list[Mapping]:
    """The layout shapes or annotations not marked ``visible: false``."""
    return [item for item in items if item.get("visible", True) is not False]


def _draw_shapes(axes: _Axes, shapes: Sequence[Mapping]) -> None:
    from matplotlib.lines import Line2D
    from matplotlib.patches import Rectangle

    for shape in _shown(shapes):
        line = shape.get("line") or {}
        edge = _colour(line.get("color"), "none")
        width = float(line.get("width", 2 if shape.get("type") == "line" else 0) or 0) * _PX
        common = {
            "linewidth": width,
            "linestyle": _DASHES.get(line.get("dash", "solid"), "-"),
            "transform": axes.blend(shape.get("xref", "x"), shape.get("yref", "y")),
            "zorder": 0.5 if shape.get("layer") == "below" else 5,
        }
        x0, x1 = (float(shape.get(k, 0)) for k in ("x0", "x1"))
        y0, y1 = (float(shape.get(k, 0)) for k in ("y0", "y1"))
        kind = shape.get("type", "rect")
        if kind == "line":
            axes.fig.add_artist(Line2D([x0, x1], [y0, y1], color=edge, **common))
        elif kind == "rect":
            alpha = shape.get("opacity")
            face = _colour(shape.get("fillcolor"), "none")
            if alpha is not None and face != "none":
                face = (*face[:3], face[3] * float(alpha))
            axes.fig.add_artist(
                Rectangle((x0, y0), x1 - x0, y1 - y0, facecolor=face, edgecolor=edge, **common)
            )


def _draw_annotations(axes: _Axes, annotations: Sequence[Mapping]) -> None:
    from matplotlib.text import Annotation

    for note in _shown(annotations):
        text = _text(note.get("text"))
        xref, yref = note.get("xref", "x"), note.get("yref", "y")
        transform = axes.blend(xref, yref)
        font = note.get("font") or {}
        style = {
            "fontsize": _font_size(font, 12),
            "color": _colour(font.get("color"), _TEXT_COLOUR),
            "zorder": 6,
        }
        ha = {"left": "left", "right": "right"}.get(str(note.get("xanchor")), "center")
        va = {"top": "top", "bottom": "bottom"}.get(str(note.get("yanchor")), "center")
        x = float(axes.coords(xref, [note.get("x", 0.5)])[0]) if xref[0] == "x" else note.get("x")
        y = float(axes.coords(yref, [note.get("y", 0.5)])[0]) if yref[0] == "y" else note.get("y")
        if note.get("showarrow", True):
            arrow = {
                "arrowstyle": "-|>",
                "color": _colour(note.get("arrowcolor"), _TEXT_COLOUR),
                "linewidth": float(note.get("arrowwidth", 1)) * _PX,
                "shrinkA": 0,
                "shrinkB": float(note.get("standoff", 0)) * _PX,
            }
            axref, ayref = note.get("axref", "pixel"), note.get("ayref", "pixel")
            if axref != "pixel" and ayref != "pixel":
                xytext = (float(note.get("ax", x)), float(note.get("ay", y)))
                textcoords: Any = axes.blend(axref, ayref)
            else:
                xytext = (float(note.get("ax", -10)) * _PX, -float(note.get("ay", -30)) * _PX)
                textcoords = "offset points"
            axes.fig.add_artist(
                Annotation(
                    text,
                    (x, y),
                    xycoords=transform,
                    xytext=xytext,
                    textcoords=textcoords,
                    arrowprops=arrow,
                    ha="center",
                    va="center",
                    annotation_clip=False,
                    **style,
                )
            )
        else:
            axes.fig.text(x, y, text, transform=transform, ha=ha, va=va, **style)


def _slider_note(layout: Mapping) -> str:
    """The current value of each slider, e.g. ``position m = 0``, as plotly shows it."""
    notes = []
    for slider in layout.get("sliders") or []:
        steps = slider.get("steps") or []
        if not steps:
            continue
        active = int(slider.get("active", 0) or 0)
        active = min(max(active, 0), len(steps) - 1)
        prefix = _text((slider.get("currentvalue") or {}).get("prefix", ""))
        label = _text(steps[active].get("label", active))
        notes.append(f"{prefix}{label}" if prefix else f"slider: {label}")
    return "   ·   ".join(notes)


# ----------------------------------------------------------------------------------------------
# The picture


def figure_dict(figure: Any) -> dict:
    """A plotly figure (``go.Figure``, dict or JSON string) as plain JSON-compatible data.

    Args:
        figure: a :class:`plotly.graph_objects.Figure`, its ``to_plotly_json()`` dict or JSON text.

    Returns:
        A plain ``dict`` (``data``, ``layout``, ...), a shallow copy when ``figure`` is a mapping.

    Raises:
        TypeError: ``figure`` is not a plotly figure or its JSON.
    """
    if isinstance(figure, (str, bytes)):
        figure = json.loads(figure)
    if hasattr(figure, "to_plotly_json"):
        import plotly.io as pio

        figure = json.loads(pio.to_json(figure, validate=False))
    if not isinstance(figure, Mapping):
        raise TypeError(f"figure must be a plotly Figure or its JSON dict, got {type(figure)!r}")
    return dict(figure)


def render_png(figure: Any) -> bytes:
    """Draw ``figure`` with matplotlib and return the PNG bytes (deterministic, ~20–40 kB).

    The picture shows the figure as it opens: the traces marked visible (the initial slider step
    or animation frame), the title, axis titles, colour bars, a legend of the named traces, the
    current slider value and the caption from ``layout.meta["caption"]``.

    Args:
        figure: a :class:`plotly.graph_objects.Figure`, its ``to_plotly_json()`` dict or JSON text.

    Returns:
        PNG file bytes, ``WIDTH_PX`` pixels wide, 8-bit palette, with no text chunks.

    Raises:
        TypeError: if ``figure`` is not a plotly figure or its JSON.
        ValueError: if the figure holds a trace type this renderer does not draw.
    """
    fig_json = figure_dict(figure)
    with _quiet():
        import matplotlib

        with matplotlib.rc_context(_FONT):  # type: ignore[arg-type]  # stubs want Literal rc keys
            return _render(fig_json)


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    """Silence matplotlib's font-cache notice and missing-glyph warnings (they would land in
    a notebook's saved stderr and break nbval)."""
    logger = logging.getLogger("matplotlib")
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:
        logger.setLevel(level)


def _render(fig_json: Mapping) -> bytes:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    layout = fig_json.get("layout") or {}
    traces = [t for t in fig_json.get("data") or [] if isinstance(t, Mapping)]
    known = {"scatter", "scattergl", "heatmap", "bar"}
    unknown = sorted({t.get("type", "scatter") for t in traces} - known)
    if unknown:
        raise ValueError(f"render_png draws trace types {sorted(known)}; got {unknown}")
    visible = [t for t in traces if _visible(t)]
    meta: Mapping = layout["meta"] if isinstance(layout.get("meta"), Mapping) else {}
    title = _text(layout.get("title"))
    caption = str(meta.get("caption") or "")
    slider = _slider_note(layout)

    caption_lines = textwrap.wrap(caption, 118) if caption else []
    plot_px = float(np.clip(float(layout.get("height") or 450) - 130, 220, 520))
    has_scale = any(
        t.get("type") == "heatmap" and t.get("showscale", True) is not False for t in visible
    ) or any((t.get("marker") or {}).get("showscale") for t in visible)
    legend_items = _legend_entries(traces, layout)
    # The figure holds the plot area only; title, slider value, legend and caption are placed
    # around what was drawn (measured) and the saved picture is cropped to everything.
    fig = Figure(figsize=(WIDTH_PX / DPI, plot_px / DPI), dpi=DPI, facecolor="white")
    canvas = FigureCanvasAgg(fig)
    left_px, right_px = 62, (95 if has_scale else 18)
    area = (left_px / WIDTH_PX, 0.0, (WIDTH_PX - left_px - right_px) / WIDTH_PX, 1.0)
    axes = _Axes(fig, layout, traces, area)
    colorway = list(layout.get("colorway") or []) or ["#0072B2", "#E69F00", "#009E73", "#CC79A7"]
    colorbars: list = []
    handles: dict[int, Any] = {}
    bars: dict[tuple, list] = {}
    for i, trace in enumerate(traces):
        colour = _colour(colorway[i % len(colorway)])
        if not _visible(trace):
            continue
        kind = trace.get("type", "scatter")
        pair = _pair(trace)
        ax = axes.get(pair)
        z = 2 + i * 0.001
        if kind in ("scatter", "scattergl"):
            handles[i] = _draw_scatter(axes, trace, ax, colour, z)
        elif kind == "heatmap":
            _draw_heatmap(axes, trace, ax, 1 + i * 0.001, colorbars)
        elif kind == "bar":
            bars.setdefault(pair, []).append((i, trace, colour, z))
    for group in bars.values():
        handles.update(_draw_bars(axes, group, layout.get("barmode", "group")))
    axes.style()
    _draw_shapes(axes, layout.get("shapes") or [])
    _draw_annotations(axes, layout.get("annotations") or [])
    _draw_colorbars(fig, axes, colorbars)

    renderer = canvas.get_renderer()
    box = fig.get_tightbbox(renderer)  # inches
    height_in = plot_px / DPI
    left_in = 8 / DPI
    if title:
        fig.text(
            left_in / fig.get_figwidth(),
            (box.y1 + 0.08) / height_in,
            title,
            ha="left",
            va="bottom",
            fontsize=10.5,
            fontweight="bold",
            color=_TEXT_COLOUR,
        )
    y_in = box.y0 - 0.06
    if slider:
        fig.text(
            left_px / WIDTH_PX,
            y_in / height_in,
            slider,
            ha="left",
            va="top",
            fontsize=8.5,
            color="#444444",
        )
        y_in -= 0.17
    entries = [(handles.get(i), label) for i, label in legend_items if handles.get(i) is not None]
    if entries:
        longest = max(len(label) for _, label in entries)
        ncols = int(np.clip(620 // (longest * 5.2 + 40), 1, 4))
        legend = fig.legend(
            [h for h, _ in entries],
            [label for _, label in entries],
            loc="upper left",
            bbox_to_anchor=(left_px / WIDTH_PX, y_in / height_in),
            ncols=ncols,
            frameon=False,
            fontsize=8,
            handlelength=2.2,
            columnspacing=1.4,
            borderaxespad=0,
            borderpad=0,
        )
        extent = legend.get_window_extent(renderer)
        y_in -= extent.height / DPI + 0.08
    if caption_lines:
        fig.text(
            left_in / fig.get_figwidth(),
            y_in / height_in,
            "\n".join(caption_lines),
            ha="left",
            va="top",
            fontsize=8,
            color="#333333",
            style="italic",
            linespacing=1.25,
        )
    return _png(fig)


def _legend_entries(traces: Sequence[Mapping], layout: Mapping) -> list[tuple[int, str]]:
    """(index in ``traces``, label) of the visible traces plotly lists in its legend."""
    if layout.get("showlegend") is False:
        return []
    candidates = [
        (i, t)
        for i, t in enumerate(traces)
        if _visible(t) and t.get("type", "scatter") != "heatmap"
    ]
    if len(candidates) < 2 and layout.get("showlegend") is not True:
        return []
    entries = []
    seen = set()
    for i, trace in candidates:
        name = _text(trace.get("name"))
        if not name or trace.get("showlegend") is False:
            continue
        key = (name, trace.get("legendgroup"))
        if key in seen:
            continue
        seen.add(key)
        entries.append((float(trace.get("legendrank", 1000)), i, name))
    entries.sort(key=lambda e: (e[0], e[1]))
    return [(i, name) for _, i, name in entries]


def _draw_colorbars(fig, axes: _Axes, colorbars: list) -> None:
    left, bottom, width, height = axes.area
    for mesh, spec, ax in colorbars:
        x = float(spec.get("x", 1.02))
        length = float(spec.get("len", 1.0))
        pos = ax.get_position()
        y_centre = float(spec.get("y", 0.5))
        if "y" not in spec:
            frac_bottom, frac_top = pos.y0, pos.y0 + pos.height
        else:
            centre = bottom + y_centre * height
            frac_bottom, frac_top = centre - length * height / 2, centre + length * height / 2
        if "len" in spec and "y" not in spec:
            mid = (frac_bottom + frac_top) / 2
            half = length * (frac_top - frac_bottom) / 2
            frac_bottom, frac_top = mid - half, mid + half
        thickness = float(spec.get("thickness", 30)) * 0.5 / WIDTH_PX
        x_fig = left + x * width + 4 / WIDTH_PX
        cax = fig.add_axes([x_fig, frac_bottom, thickness, frac_top - frac_bottom])
        bar = fig.colorbar(mesh, cax=cax)
        bar.outline.set_visible(False)
        bar.ax.tick_params(labelsize=7.5, length=2, pad=1)
        label = _text(spec.get("title"))
        if label:
            bar.ax.set_title(label, fontsize=7.5, loc="left", pad=3)


def _png(fig) -> bytes:
    from PIL import Image

    buffer = io.BytesIO()
    fig.savefig(
        buffer,
        format="png",
        dpi=DPI,
        metadata={"Software": None},
        bbox_inches="tight",
        pad_inches=0.08,
    )
    buffer.seek(0)
    with Image.open(buffer) as image:
        rgb = image.convert("RGB")
    small = rgb.quantize(
        colors=PALETTE_COLOURS, method=Image.Quantize.FASTOCTREE, dither=Image.Dither.NONE
    )
    out = io.BytesIO()
    small.save(out, format="PNG", optimize=True)
    return out.getvalue()


#: Largest PNG the book accepts (issue: ≤ 60 kB each).
MAX_PNG_BYTES = 60_000


def png_chunks(png: bytes) -> list[str]:
    """The chunk types of a PNG file, in order (e.g. ``["IHDR", "PLTE", "IDAT", "IEND"]``).

    Args:
        png: the bytes of a PNG file (its 8-byte signature first).

    Returns:
        The four-letter type of each chunk, in file order.
    """
    chunks, offset = [], 8
    while offset + 8 <= len(png):
        length = int.from_bytes(png[offset : offset + 4], "big")
        chunks.append(png[offset + 4 : offset + 8].decode("latin-1"))
        offset += 12 + length
    return chunks


def check_picture(png: bytes) -> None:
    """Raise :class:`ValueError` unless ``png`` is a picture worth showing.

    A picture fails when it is not a PNG, is larger than :data:`MAX_PNG_BYTES`, is blank or all one
    colour (grey-level spread under 5 or fewer than 4 distinct colours), or carries text chunks
    (software name, timestamps) that would make it differ from run to run.

    Args:
        png: the bytes to check.

    Raises:
        ValueError: naming what is wrong.
    """
    from PIL import Image, ImageStat

    if not isinstance(png, (bytes, bytearray)) or not png.startswith(b"\x89PNG\r\n\x1a\n"):
        raise ValueError("png must be the bytes of a PNG file")
    if len(png) > MAX_PNG_BYTES:
        raise ValueError(f"picture is {len(png)} bytes; the limit is {MAX_PNG_BYTES}")
    for chunk in png_chunks(png):
        if chunk in ("tEXt", "zTXt", "iTXt", "tIME"):
            raise ValueError(f"picture carries a {chunk} chunk (metadata must be stripped)")
    with Image.open(io.BytesIO(png)) as image:
        rgb = image.convert("RGB")
    spread = ImageStat.Stat(rgb.convert("L")).stddev[0]
    colours = rgb.getcolors(maxcolors=1 << 16)
    n_colours = len(colours) if colours is not None else 1 << 16
    if spread < 5 or n_colours < 4:
        raise ValueError(
            f"picture is blank or all one colour (grey-level spread {spread:.2f}, "
            f"{n_colours} colours)"
        )


# ----------------------------------------------------------------------------------------------
# The plotly renderer


class BookRenderer(PlotlyRenderer):
    """plotly's mime renderer plus a static PNG of the same figure in the same bundle.

    JupyterLab, VS Code and the website draw ``application/vnd.plotly.v1+json``; viewers without
    JavaScript show ``image/png``. If the picture cannot be drawn, the bundle holds the JSON alone
    (``make execute`` then stops on the missing PNG).
    """

    def to_mimebundle(self, fig_dict):
        bundle = super().to_mimebundle(fig_dict)
        try:
            png = render_png(bundle[PLOTLY_MIME])
        except Exception:
            return bundle
        bundle[PNG_MIME] = base64.b64encode(png).decode("ascii")
        return bundle


def use_book_renderer() -> bool:
    """Register :data:`RENDERER_NAME` and make it plotly's default over the plain mime renderer.

    The plain mime renderer is the default in a Jupyter kernel (JupyterLab, nbclient, nbval).
    Other defaults (Colab's, a browser outside Jupyter, ``$PLOTLY_RENDERER``) are left alone.

    Returns:
        Whether :data:`RENDERER_NAME` is now plotly's default renderer.
    """
    import plotly.io as pio

    if RENDERER_NAME not in pio.renderers:
        pio.renderers[RENDERER_NAME] = BookRenderer()
    if pio.renderers.default == "plotly_mimetype":
        pio.renderers.default = RENDERER_NAME
    return pio.renderers.default == RENDERER_NAME
