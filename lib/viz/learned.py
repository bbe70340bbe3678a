"""Figures for chapter 7 (learned absolute positions): what a trained position table looks like.

A learned table ``P: [max_len, d_model]`` (GPT-2's ``wpe``, BERT's ``position_embeddings``;
Radford et al. 2019; Devlin et al. 2019, arXiv 1810.04805) starts as random noise and is shaped by
training alone. These helpers measure and draw that shape:

- :func:`position_cosine_similarity`: ``S[p, q] = cos(P[p], P[q])``, the similarity of two positions;
- :func:`mean_similarity_by_offset`: the mean of ``cos(P[p], P[p + k])`` over ``p``, per offset ``k``;
- :func:`principal_components`: the table's principal components, as functions of position;
- :func:`similarity_window_slider`: the similarity matrix as a heatmap, one slider step per window
  of positions (plus an optional strided overview of the whole table);
- :func:`offset_similarity_curves`: mean similarity against offset, one line per table;
- :func:`components_slider`: principal component ``j`` against position, one slider step per ``j``.

Everything is computed in float64 and rounded (:func:`lib.viz.core.rounded`), so the saved figures
do not depend on the CPU or thread count; sliders work in a static page with no kernel.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import plotly.graph_objects as go
import torch

from lib._checks import check_floating, check_int, check_positive_int
from lib.viz.core import DIVERGING, OKABE_ITO, apply_theme, rounded, slider_figure

__all__ = [
    "components_slider",
    "mean_similarity_by_offset",
    "offset_similarity_curves",
    "position_cosine_similarity",
    "principal_components",
    "similarity_window_slider",
]


def _table(name: str, table: object) -> torch.Tensor:
    table = check_floating(name, table)
    if table.dim() != 2 or table.shape[0] < 2:
        raise ValueError(
            f"{name} must be 2-D [positions, d_model] with at least 2 rows, got shape "
            f"{list(table.shape)}"
        )
    return table.detach().to(torch.float64)


def position_cosine_similarity(table: torch.Tensor) -> torch.Tensor:
    """Cosine similarity of every pair of positions: ``S[p, q] = P[p]·P[q] / (‖P[p]‖ ‖P[q]‖)``.

    ``P`` is a position table (learned, e.g. BERT's ``position_embeddings`` — Devlin et al. 2019,
    arXiv 1810.04805 — or sinusoidal). Computed in float64; a zero row has similarity 0 with every
    row (its norm is clamped away from zero).

    Shapes: ``table: [L, d]`` floating -> ``[L, L]`` float64, symmetric, 1 on the diagonal.

    Raises:
        TypeError: ``table`` is not a floating tensor. ValueError: it is not 2-D with >= 2 rows.
    """
    unit = torch.nn.functional.normalize(_table("table", table), dim=-1)  # [L, d], rows of norm 1
    return unit @ unit.T  # [L, L]


def mean_similarity_by_offset(
    table: torch.Tensor, max_offset: int, *, first: int = 0
) -> torch.Tensor:
    """Mean cosine similarity of positions ``k`` apart: ``m[k] = mean_p cos(P[p], P[p + k])``.

    The mean runs over ``p = first … L − 1 − k`` (``first`` skips special rows such as BERT's
    position 0, which only ever holds ``[CLS]``). ``m[0] = 1``. For the sinusoidal table of
    Vaswani et al. 2017 (arXiv 1706.03762) every term equals ``(2/d) Σ_i cos(k ω_i)``, whatever p.

    Shapes: ``table: [L, d]`` -> ``[max_offset + 1]`` float64.

    Raises:
        TypeError: wrong types. ValueError: ``max_offset < 1`` or ``first + max_offset >= L``.
    """
    sim = position_cosine_similarity(table)  # [L, L]
    max_offset = check_positive_int("max_offset", max_offset)
    first = check_int("first", first, minimum=0)
    length = sim.shape[0]
    if first + max_offset >= length:
        raise ValueError(
            f"max_offset must be < L - first = {length - first} (table of L = {length} rows, "
            f"first = {first}), got {max_offset}"
        )
    block = sim[first:, first:]  # [L - first, L - first]
    return torch.stack([torch.diagonal(block, k).mean() for k in range(max_offset + 1)])


def principal_components(
    table: torch.Tensor, n_components: int, *, first: int = 0
) -> tuple[torch.Tensor, torch.Tensor]:
    """The table's top principal components as functions of position, and their variance shares.

    Rows ``first … L − 1`` are centred (``X = P − mean``) and decomposed, ``X = U Σ Vᵀ``; the
    scores ``U[:, j] Σ_j`` say how much of direction ``V[:, j]`` position ``p`` holds. Each
    component's sign is fixed so that its score at position ``first`` is >= 0 (an SVD's signs are
    arbitrary). Computed in float64.

    Shapes: ``table: [L, d]`` -> ``(scores [L − first, n_components], share [n_components])``,
    ``share[j] = Σ_j² / Σ_k Σ_k²`` (fraction of the total variance).

    Raises:
        TypeError: wrong types. ValueError: ``n_components`` > min(L − first, d), or ``first`` >=
        L − 1.
    """
    table = _table("table", table)
    n_components = check_positive_int("n_components", n_components)
    first = check_int("first", first, minimum=0)
    if first >= table.shape[0] - 1:
        raise ValueError(f"first must be < L - 1 = {table.shape[0] - 1}, got {first}")
    rows = table[first:]  # [L', d]
    if n_components > min(rows.shape):
        raise ValueError(
            f"n_components must be <= min(L - first, d) = {min(rows.shape)}, got {n_components}"
        )
    centred = rows - rows.mean(dim=0)  # [L', d]
    u, s, _ = torch.linalg.svd(centred, full_matrices=False)  # u: [L', r], s: [r]
    scores = u[:, :n_components] * s[:n_components]  # [L', n]
    signs = torch.where(scores[0] < 0, -1.0, 1.0).to(scores.dtype)  # [n]
    share = s[:n_components] ** 2 / (s**2).sum()
    return scores * signs, share


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

    Shapes: ``table: [L, d]``; windows must satisfy ``0 <= start < stop <= L``.

    Raises:
        TypeError / ValueError: ``table`` not a 2-D floating tensor, an empty or out-of-range
        window, ``overview_stride < 1``, ``active`` out of range.
    """
    sim = position_cosine_similarity(table)  # [L, L] float64
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
    active = check_int("active", active, minimum=0)
    if active >= len(views):
        raise ValueError(f"active must be in [0, {len(views) - 1}], got {active}")

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

    ``curves[name]`` is ``[K + 1]`` (offsets 0 … K), e.g. from :func:`mean_similarity_by_offset`.
    Lines take Okabe–Ito colours in order; a dotted zero line marks "unrelated".

    Raises:
        ValueError: ``curves`` is empty or a curve is not 1-D.
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
                line={"color": OKABE_ITO[j % len(OKABE_ITO)], "width": 2.5},
                hovertemplate="k = %{x}<br>mean cos = %{y:.3f}<extra>" + name + "</extra>",
            )
        )
    fig.add_hline(y=0.0, line={"dash": "dot", "color": OKABE_ITO[7]})
    fig.update_xaxes(title="offset k (positions apart)")
    fig.update_yaxes(title="mean cos(P[p], P[p + k])")
    fig.update_layout(
        height=440,
        legend={"orientation": "h", "y": 1.02, "yanchor": "bottom", "x": 0, "xanchor": "left"},
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

    ``scores``/``share`` come from :func:`principal_components`; row ``r`` of ``scores`` is
    position ``first + r``. Each step's title gives the component's share of the variance and, if
    ``periods`` is given, its dominant period in positions. With ``zoom = m`` a right-hand panel
    repeats the first ``m`` positions, where fast waves are visible. One y-range serves every step
    and both panels.

    Shapes: ``scores: [L', n]``, ``share: [n]``, ``periods``: n numbers.

    Raises:
        TypeError / ValueError: shapes do not match, ``first < 0``, ``zoom < 2``, ``active`` out of
        range.
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
