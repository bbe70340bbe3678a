"""Multi-panel figures on a narrow column (a phone): the panels stack instead of sitting side by side.

A figure made with ``make_subplots(rows=1, cols=n)`` puts its n panels side by side. In a 690 px
column each is a readable 200-300 px; on a 390 px phone each is 60-150 px, and its subplot titles
run into each other. :func:`stacked_update` computes, at build time, how the same figure looks with
its panels one above the other: each panel the full width and as tall as it was, a gap between
panels for the upper one's tick labels and axis title and the lower one's title, and everything
placed in "paper" coordinates (subplot titles and notes, the legend, sliders, menus, colour bars)
moved with its panel or kept at the same distance in pixels from the plot area. ``bookplot.js``
applies it before the first draw when the figure's column is narrower than :data:`NARROW_WIDTH`
(``plotly_mime`` writes it on the figure's div as ``data-narrow``, with the stacked height, which
the page reserves before the figure is drawn).

Nothing here changes the figure's data or the notebook: it is the site's layout for a phone.
"""

from __future__ import annotations

import itertools
import re
from typing import Any

# Below this column width (CSS px) a side-by-side figure is stacked (a phone's column is ~360 px;
# a 690 px desktop column keeps the author's layout).
NARROW_WIDTH = 560
# Each stacked panel's plot area: as tall as before, but never shorter than this (px).
MIN_PANEL_HEIGHT = 220
# Between two stacked panels: the upper one's tick labels and axis title, the lower one's title.
PANEL_GAP = 150
# plotly's default margins (layout.margin), used when the figure sets none.
_DEFAULT_MARGIN = {"t": 100, "b": 80}
_AXIS = re.compile(r"^([xy])axis(\d*)$")
_EPS = 0.03


def _domain(axis: dict | None) -> tuple[float, float]:
    dom = (axis or {}).get("domain") or [0.0, 1.0]
    return float(dom[0]), float(dom[1])


def _ref(name: str | None, letter: str) -> str:
    """A trace's axis reference (``"x2"``) as its layout key (``"xaxis2"``)."""
    return f"{letter}axis{(name or letter)[1:]}"


def panels(figure: dict) -> list[tuple[str, str]] | None:
    """The figure's (x-axis key, y-axis key) panels, left to right, if they sit side by side.

    Returns None unless there are at least two panels, every panel has the same vertical extent
    (one row) and their horizontal extents do not overlap.
    """
    layout = figure.get("layout") or {}
    pairs: list[tuple[str, str]] = []
    for trace in figure.get("data") or []:
        if trace.get("type") in ("pie", "table", "sunburst", "treemap"):
            return None
        pair = (_ref(trace.get("xaxis"), "x"), _ref(trace.get("yaxis"), "y"))
        if pair not in pairs:
            pairs.append(pair)
    # Axes with no trace (a panel of annotations only) still make a panel when anchored.
    for key, axis in layout.items():
        match = _AXIS.match(key)
        if match and match.group(1) == "x" and isinstance(axis, dict) and axis.get("anchor"):
            pair = (key, _ref(axis["anchor"], "y"))
            if pair not in pairs and axis["anchor"] != "free":
                pairs.append(pair)
    if len(pairs) < 2:
        return None
    # Overlaid axes (secondary y, matched overlays) share their panel's x axis: one panel each.
    by_x: dict[str, str] = {}
    for x, y in pairs:
        overlay = (layout.get(y) or {}).get("overlaying")
        by_x.setdefault(x, _ref(overlay, "y") if overlay else y)
    result = sorted(by_x.items(), key=lambda p: _domain(layout.get(p[0]))[0])
    if len(result) < 2:
        return None
    rows = {_domain(layout.get(y)) for _, y in result}
    if len(rows) != 1:
        return None
    xs = [_domain(layout.get(x)) for x, _ in result]
    if any(a[1] > b[0] + 1e-9 for a, b in itertools.pairwise(xs)):
        return None
    return result


def _margin(layout: dict, side: str) -> float:
    return float((layout.get("margin") or {}).get(side, _DEFAULT_MARGIN[side]))


def stacked_update(figure: dict) -> dict | None:
    """The layout and trace updates that stack a side-by-side figure's panels, or None.

    Args:
        figure: a plotly figure as a dict (``data``, ``layout``), as in the notebook's JSON.

    Returns:
        ``{"height": px, "layout": {path: value}, "data": {trace index: {path: value}}}`` with
        relayout-style paths (``"yaxis2.domain"``, ``"annotations[3].y"``), or None for a figure
        whose panels are not side by side (it is left as it is).
    """
    layout = figure.get("layout") or {}
    found = panels(figure)
    if found is None:
        return None
    height = float(layout.get("height") or 450)
    top, bottom = _margin(layout, "t"), _margin(layout, "b")
    old_plot = max(height - top - bottom, 1.0)
    row = _domain(layout.get(found[0][1]))
    panel = max(round(old_plot * (row[1] - row[0])), MIN_PANEL_HEIGHT)
    n = len(found)
    new_plot = n * panel + (n - 1) * PANEL_GAP
    new_height = round(top + bottom + new_plot)

    def new_domain(i: int) -> list[float]:
        upper = i * (panel + PANEL_GAP)
        return [round(1 - (upper + panel) / new_plot, 4), round(1 - upper / new_plot, 4)]

    x_domains = [_domain(layout.get(x)) for x, _ in found]
    upd: dict[str, Any] = {"height": new_height}
    for i, (x, y) in enumerate(found):
        upd[f"{x}.domain"] = [0, 1]
        upd[f"{y}.domain"] = new_domain(i)
        # Overlaid axes of this panel (a secondary y) follow it.
        for key, axis in layout.items():
            if isinstance(axis, dict) and axis.get("overlaying") == y.replace("axis", ""):
                upd[f"{key}.domain"] = new_domain(i)

    def panel_of(x: float) -> int | None:
        for i, (lo, hi) in enumerate(x_domains):
            if lo - _EPS <= x <= hi + _EPS:
                return i
        return None

    def outside_y(y: float) -> float:
        # Above or below the plot area: the same distance in pixels from its edge.
        if y > 1:
            return round(1 + (y - 1) * old_plot / new_plot, 4)
        if y < 0:
            return round(y * old_plot / new_plot, 4)
        return y

    def place(i: int | None, x: float, y: float) -> tuple[float, float]:
        if i is None or not (row[0] - _EPS <= y <= row[1] + _EPS):
            return x, outside_y(y)
        lo, hi = x_domains[i]
        nx = (x - lo) / (hi - lo) if hi > lo else 0.5
        dom = new_domain(i)
        ny = dom[0] + (y - row[0]) / (row[1] - row[0]) * (dom[1] - dom[0])
        return round(min(max(nx, 0.0), 1.0), 4), round(ny, 4)

    for kind in ("annotations", "shapes", "images"):
        for j, item in enumerate(layout.get(kind) or []):
            xref, yref = item.get("xref", "paper"), item.get("yref", "paper")
            if kind == "shapes":
                continue  # none on the book's side-by-side figures; left where they are
            x, y = item.get("x", 0.5), item.get("y", 0.5)
            if not isinstance(x, (int, float)) or not isinstance(y, (int, float)):
                continue
            if xref == "paper" and yref == "paper":
                nx, ny = place(panel_of(float(x)), float(x), float(y))
                upd[f"{kind}[{j}].x"], upd[f"{kind}[{j}].y"] = nx, ny
            elif yref == "paper":
                upd[f"{kind}[{j}].y"] = outside_y(float(y))
    for kind in ("legend", "sliders", "updatemenus"):
        items = layout.get(kind)
        items = [items] if isinstance(items, dict) else (items or [])
        for j, item in enumerate(items):
            y = item.get("y")
            if isinstance(y, (int, float)) and (y > 1 or y < 0):
                path = kind if kind == "legend" else f"{kind}[{j}]"
                upd[f"{path}.y"] = outside_y(float(y))
    data: dict[int, dict[str, Any]] = {}
    by_y = {y: i for i, (_, y) in enumerate(found)}
    for t, trace in enumerate(figure.get("data") or []):
        scaled = "colorbar" in trace or trace.get("type") in ("heatmap", "contour")
        if not scaled or trace.get("showscale") is False:
            continue
        y = _ref(trace.get("yaxis"), "y")
        overlay = (layout.get(y) or {}).get("overlaying")
        i = by_y.get(_ref(overlay, "y") if overlay else y)
        if i is None:
            continue
        dom = new_domain(i)
        # Each panel's colour bar beside its own panel, as tall as it.
        data[t] = {
            "colorbar.x": 1.02,
            "colorbar.xanchor": "left",
            "colorbar.y": round((dom[0] + dom[1]) / 2, 4),
            "colorbar.yanchor": "middle",
            "colorbar.len": round(dom[1] - dom[0], 4),
            "colorbar.lenmode": "fraction",
        }
    return {"height": new_height, "layout": upd, "data": data}
