"""Figures for the ALiBi chapter: bias matrices per head, slope sets, and attention weights by distance.

ALiBi (Press, Smith & Lewis 2022, "Train Short, Test Long", arXiv:2108.12409) adds
``−m_h · (i − j)`` to the score of query ``i`` and key ``j`` in head ``h``. Every builder here takes
tensors computed by :mod:`lib.alibi` / :mod:`lib.attention` and returns a plotly figure (never
``show()``); sliders are ``layout.sliders`` steps, so they work on the static site with no kernel.
Masked entries (``−inf``) are drawn as gaps.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence

import numpy as np
import plotly.graph_objects as go
import torch

from lib._checks import check_floating, check_index, check_int, check_positive_int
from lib.viz.core import (
    DIVERGING,
    OKABE_ITO,
    SEQUENTIAL,
    apply_theme,
    palette,
    rounded,
    slider_figure,
)

__all__ = [
    "bias_heatmap_figure",
    "bias_panels_figure",
    "slopes_figure",
    "weights_by_distance_figure",
]

_MINUS = "\u2212"  # typographic minus sign for labels

#: Significant digits of the attention weights in :func:`weights_by_distance_figure`: float32
#: softmax weights differ in their last bits between CPUs (AVX-512 and AVX2 kernels), and at four
#: digits one of ch11's sat on a rounding boundary, so nbval failed on the other CPU.
WEIGHT_DIGITS = 3


def _check_slopes(slopes: torch.Tensor, n_heads: int | None = None) -> np.ndarray:
    """``slopes: [H]`` floating, all > 0 (and ``H == n_heads`` if given); returned as float64."""
    check_floating("slopes", slopes)
    if slopes.dim() != 1 or slopes.numel() == 0:
        raise ValueError(f"slopes must be 1-D [H] with H >= 1, got shape {list(slopes.shape)}")
    if n_heads is not None and slopes.numel() != n_heads:
        raise ValueError(
            f"slopes must have one entry per head ({n_heads}), got {slopes.numel()} entries"
        )
    values = slopes.detach().to(torch.float64).cpu().numpy()
    if not (np.isfinite(values).all() and (values > 0).all()):
        raise ValueError(f"slopes must all be finite and > 0, got {values.tolist()}")
    return values


def _check_bias(name: str, bias: torch.Tensor) -> torch.Tensor:
    """``bias: [H, T, T]`` floating (``−inf`` allowed for masked keys)."""
    check_floating(name, bias)
    if bias.dim() != 3 or bias.shape[1] != bias.shape[2] or bias.shape[0] == 0:
        raise ValueError(
            f"{name} must be [H, T, T] (one square matrix per head), got shape {list(bias.shape)}"
        )
    if torch.isnan(bias).any() or torch.isposinf(bias).any():
        raise ValueError(f"{name} must not hold NaN or +inf (use -inf for masked keys)")
    return bias


def _slope_label(m: float) -> str:
    """``m = 2^−x ≈ value`` as plotly HTML, e.g. ``m = 2<sup>−3</sup> = 0.125``."""
    exponent = -math.log2(m)
    return f"m = 2<sup>{_MINUS}{exponent:g}</sup> = {float(rounded([m])[0]):g}"


def bias_panels_figure(
    panels: Mapping[str, torch.Tensor],
    slopes: torch.Tensor,
    *,
    colorscale: str = DIVERGING,
    zmid: float | None = 0.0,
    active: int = 0,
    caption: str | None = None,
    alt: str | None = None,
) -> go.Figure:
    """Side-by-side heatmaps of per-head bias matrices, with one slider over the heads.

    Each panel is a bias ``[H, T, T]`` (e.g. ALiBi's ``−m_h · (i − j)``, Press et al. 2022,
    arXiv:2108.12409), drawn with query ``i`` down and key ``j`` across; ``−inf`` (masked) entries
    are gaps. All panels and heads share one colour range (symmetric about ``zmid``, or the data's
    min/max when ``zmid`` is None), so the slider compares heads honestly: a head with a small
    slope looks faint because its bias *is* small.

    Args:
        panels: panel title -> ``bias: [H, T, T]``; every panel the same shape.
        slopes: ``[H]``, the slope of each head (shown in the step title).
        colorscale: a plotly colour scale (the book's ``DIVERGING`` or ``SEQUENTIAL``).
        zmid: centre of a symmetric colour range, or None for the data's range.
        active: the head shown first (0-based).
        caption, alt: the figure's caption and alt text (defaults describe the figure).

    Returns:
        A figure with ``H × len(panels)`` heatmap traces and a slider of ``H`` steps.

    Raises:
        TypeError: a panel or ``slopes`` is not a floating tensor.
        ValueError: no panels, shapes that differ or are not ``[H, T, T]``, ``slopes`` not
            ``[H]`` of positive numbers, or ``active`` out of range.
    """
    if not isinstance(panels, Mapping) or len(panels) == 0:
        raise ValueError("panels must be a non-empty mapping {title: bias [H, T, T]}")
    biases = {str(title): _check_bias(f"panels[{title!r}]", b) for title, b in panels.items()}
    shapes = {tuple(b.shape) for b in biases.values()}
    if len(shapes) != 1:
        raise ValueError(f"every panel must have the same shape [H, T, T], got {sorted(shapes)}")
    n_heads, seq_len, _ = next(iter(shapes))
    slope_values = _check_slopes(slopes, n_heads)
    active = check_index("active", active, n_heads)

    arrays = {title: rounded(b) for title, b in biases.items()}  # each [H, T, T], float64
    finite = np.concatenate([a[np.isfinite(a)] for a in arrays.values()])
    if zmid is not None:
        bound = float(np.max(np.abs(finite - zmid))) if finite.size else 1.0
        zmin, zmax = zmid - bound, zmid + bound
    else:
        zmin, zmax = float(finite.min()), float(finite.max())
        if zmin == zmax:
            zmin, zmax = zmin - 1.0, zmax + 1.0

    n_panels = len(arrays)
    gap = 0.06
    width = (1.0 - gap * (n_panels - 1)) / n_panels
    positions = list(range(seq_len))
    steps = []
    for h in range(n_heads):
        group = []
        for p, (title, a) in enumerate(arrays.items()):
            suffix = "" if p == 0 else str(p + 1)
            z = np.asarray(
                np.where(np.isfinite(a[h]), a[h], None)
            ).tolist()  # [T, T], gaps where masked
            group.append(
                go.Heatmap(
                    z=z,
                    x=positions,
                    y=positions,
                    xaxis=f"x{suffix}",
                    yaxis=f"y{suffix}",
                    colorscale=colorscale,
                    zmin=zmin,
                    zmax=zmax,
                    showscale=p == n_panels - 1,
                    colorbar={"title": {"text": "bias"}},
                    name=title,
                    hovertemplate=(
                        f"{title}<br>query i=%{{y}}, key j=%{{x}}<br>bias=%{{z:.4g}}<extra></extra>"
                    ),
                )
            )
        steps.append(group)
    labels = [str(h + 1) for h in range(n_heads)]
    titles = [f"head {h + 1} of {n_heads}: {_slope_label(m)}" for h, m in enumerate(slope_values)]
    fig = slider_figure(steps, labels, prefix="head ", active=active, step_titles=titles)

    annotations = []
    for p, title in enumerate(arrays):
        suffix = "" if p == 0 else str(p + 1)
        left = p * (width + gap)
        fig.update_layout(
            {
                f"xaxis{suffix}": {
                    "domain": [left, left + width],
                    "title": {"text": "key position j"},
                    "anchor": f"y{suffix}",
                    "constrain": "domain",
                },
                f"yaxis{suffix}": {
                    "title": {"text": "query position i" if p == 0 else ""},
                    "autorange": "reversed",
                    "anchor": f"x{suffix}",
                    "scaleanchor": f"x{suffix}",
                    "constrain": "domain",
                },
            }
        )
        annotations.append(
            {
                "text": title,
                "x": left + width / 2,
                "y": 1.0,
                "xref": "paper",
                "yref": "paper",
                "xanchor": "center",
                "yanchor": "bottom",
                "showarrow": False,
            }
        )
    fig.update_layout(annotations=annotations)
    names = ", ".join(arrays)
    default = (
        f"Bias added to the attention scores, per head ({n_heads} heads, T = {seq_len}); "
        f"panels: {names}. Move the slider to change the head; gaps are masked keys."
    )
    apply_theme(fig, caption=caption, alt=alt, default=default, height=440 + 80 * (n_panels == 1))
    fig.update_layout(margin={"t": 90})  # room for the step title above the panel titles
    return fig


def bias_heatmap_figure(
    bias: torch.Tensor,
    slopes: torch.Tensor,
    *,
    active: int = 0,
    caption: str | None = None,
    alt: str | None = None,
) -> go.Figure:
    """One heatmap of ALiBi's bias per head, with a head slider (one panel of :func:`bias_panels_figure`).

    ``bias[h, i, j] = −m_h · (i − j)`` for ``j <= i`` and ``−inf`` above the diagonal in the causal
    form of Press et al. 2022 (arXiv:2108.12409), as built by :func:`lib.alibi.alibi_bias`.
    Sequential colour scale (``cividis``) from the most negative bias to 0, shared by all heads.

    Args:
        bias: ``[H, T, T]`` floating, ``−inf`` for masked keys.
        slopes: ``[H]``, each head's slope ``m_h`` (for the step titles).
        active: the head shown first (0-based).
        caption, alt: caption and alt text (defaults describe the figure).

    Returns:
        A figure with ``H`` heatmap traces and a slider of ``H`` steps.

    Raises:
        TypeError, ValueError: as :func:`bias_panels_figure`.
    """
    return bias_panels_figure(
        {"bias −m·(i − j)": bias},
        slopes,
        colorscale=SEQUENTIAL,
        zmid=None,
        active=active,
        caption=caption,
        alt=alt,
    )


def slopes_figure(
    slope_sets: Mapping[int, torch.Tensor],
    *,
    caption: str | None = None,
    alt: str | None = None,
) -> go.Figure:
    """Each head's slope on a log₂ axis, one row per head count (e.g. 8, 12 and 16 heads).

    Press et al. 2022 (arXiv:2108.12409): for ``n`` a power of two, ``m_k = 2^(−8k/n)``; otherwise the
    ``c`` slopes of the largest power of two ``c < n`` come first, then ``n − c`` slopes taken from
    the ``2c``-head set (its 1st, 3rd, 5th, …). This figure marks the first ``c`` heads of each row
    with circles and the remaining ``n − c`` with diamonds (colour and shape both differ), and writes
    each head's index above its marker.

    Args:
        slope_sets: ``n`` -> ``slopes: [n]`` (positive floats), e.g. ``{8: alibi_slopes(8), ...}``.
        caption, alt: caption and alt text (defaults describe the figure).

    Returns:
        A figure with one or two marker traces per row (legend: "first c heads", "added heads").

    Raises:
        TypeError: a key is not an int or a value not a floating tensor.
        ValueError: empty mapping, or a value not ``[n]`` positive numbers.
    """
    if not isinstance(slope_sets, Mapping) or len(slope_sets) == 0:
        raise ValueError("slope_sets must be a non-empty mapping {n_heads: slopes [n_heads]}")
    fig = go.Figure()
    all_slopes = []
    rows = []
    shown_legend = {"base": False, "added": False}
    for n, slopes in slope_sets.items():
        n = check_positive_int("slope_sets key", n)
        exact = _check_slopes(slopes, n)  # float64
        values = rounded(exact)
        exponent = rounded(-np.log2(exact))  # m = 2^(−exponent)
        all_slopes.append(values)
        base = 1 << (n.bit_length() - 1)  # largest power of two <= n
        row = f"{n} heads"
        rows.append(row)
        groups = [("base", slice(0, base)), ("added", slice(base, n))]
        for kind, part in groups:
            idx = np.arange(n)[part]
            if idx.size == 0:
                continue
            is_base = kind == "base"
            fig.add_trace(
                go.Scatter(
                    x=values[part].tolist(),
                    y=[row] * idx.size,
                    mode="markers+text",
                    text=[str(k + 1) for k in idx],
                    textposition="top center",
                    marker={
                        "symbol": "circle" if is_base else "diamond",
                        "size": 11 if is_base else 12,
                        "color": OKABE_ITO[0] if is_base else OKABE_ITO[1],
                    },
                    name="first c heads: 2^(−8k/c)" if is_base else "added heads (from 2c set)",
                    legendgroup=kind,
                    showlegend=not shown_legend[kind],
                    customdata=[
                        [int(k) + 1, f"{e:g}"] for k, e in zip(idx, exponent[part], strict=True)
                    ],
                    hovertemplate=(
                        f"{row}, head %{{customdata[0]}}<br>m = 2^−%{{customdata[1]}} = %{{x:.4g}}"
                        "<extra></extra>"
                    ),
                )
            )
            shown_legend[kind] = True
    smallest = float(np.min(np.concatenate(all_slopes)))
    largest = float(np.max(np.concatenate(all_slopes)))
    exponents = range(math.floor(-math.log2(largest)), math.ceil(-math.log2(smallest)) + 1)
    fig.update_xaxes(
        type="log",
        tickvals=[2.0**-e for e in exponents],
        ticktext=["1" if e == 0 else f"1/{2**e}" for e in exponents],
        title={"text": "slope m (log scale; larger = more local)"},
        autorange="reversed",
    )
    fig.update_yaxes(categoryorder="array", categoryarray=rows[::-1])  # first row on top
    fig.update_layout(legend={"orientation": "h", "y": -0.25, "x": 0})
    names = ", ".join(str(n) for n in slope_sets)
    default = (
        f"ALiBi slopes for {names} heads on a log scale. Circles: the geometric sequence of the "
        "largest power of two c; diamonds: the heads added from the 2c-head sequence, which fall "
        "halfway between (in log scale) the first c slopes."
    )
    apply_theme(fig, caption=caption, alt=alt, default=default, height=380)
    fig.update_layout(margin={"t": 50})  # room for the head indices above the top row
    return fig


def weights_by_distance_figure(
    weights: torch.Tensor,
    slopes: torch.Tensor,
    query_positions: Sequence[int],
    *,
    log_y: bool = True,
    y_min: float = 1e-6,
    active: int | None = None,
    caption: str | None = None,
    alt: str | None = None,
) -> go.Figure:
    """Attention weight of each key against its distance ``i − j`` from the query, one line per head.

    With equal raw scores, ALiBi's causal weights for query ``i`` are
    ``w_h(i, j) = exp(−m_h (i − j)) / Σ_{j' <= i} exp(−m_h (i − j'))`` (Press et al. 2022,
    arXiv:2108.12409): a straight line of slope ``−m_h / ln 10`` per head on a log axis. A slider
    moves the query position ``i`` through ``query_positions``.

    Args:
        weights: ``[H, T, T]`` attention weights (rows sum to 1), e.g. from
            ``lib.attention.attention(..., return_weights=True)``.
        slopes: ``[H]``, the slope of each head (legend); at most 8 heads (one Okabe–Ito colour each).
        query_positions: the slider's query positions, each in ``[0, T)``, increasing.
        log_y: draw the weights on a log axis.
        y_min: lower end of the log axis (a float in (0, 1)).
        active: the slider step shown first (default: the last).
        caption, alt: caption and alt text (defaults describe the figure).

    Returns:
        A figure with ``H`` line traces per slider step.

    Raises:
        TypeError: ``weights``/``slopes`` not floating tensors; a query position not an int.
        ValueError: ``weights`` not ``[H, T, T]``, more than 8 heads, ``slopes`` not ``[H]``,
            query positions empty, out of range or not increasing, ``y_min`` outside (0, 1).
    """
    check_floating("weights", weights)
    if weights.dim() != 3 or weights.shape[1] != weights.shape[2]:
        raise ValueError(f"weights must be [H, T, T], got shape {list(weights.shape)}")
    n_heads, seq_len, _ = weights.shape
    if n_heads > len(OKABE_ITO):
        raise ValueError(
            f"weights must have at most {len(OKABE_ITO)} heads (one colour-blind-safe colour "
            f"each), got {n_heads}"
        )
    slope_values = _check_slopes(slopes, n_heads)
    positions = [check_int("query_positions[k]", i, minimum=0) for i in query_positions]
    if not positions:
        raise ValueError("query_positions must hold at least one position")
    if positions[-1] >= seq_len or any(b <= a for a, b in itertools.pairwise(positions)):
        raise ValueError(
            f"query_positions must increase and lie in [0, {seq_len - 1}], got {positions}"
        )
    if not isinstance(log_y, bool):
        raise TypeError(f"log_y must be a bool, got {type(log_y).__name__} {log_y!r}")
    if not 0.0 < float(y_min) < 1.0:
        raise ValueError(f"y_min must be in (0, 1), got {y_min!r}")
    active = len(positions) - 1 if active is None else check_index("active", active, len(positions))

    w = rounded(weights, WEIGHT_DIGITS)  # [H, T, T]
    steps = []
    for i in positions:
        distance = np.arange(i + 1)  # key j = i − distance
        group = []
        for h in range(n_heads):
            row = w[h, i, i - distance]  # [i + 1], weight of the key at each distance
            group.append(
                go.Scatter(
                    x=distance.tolist(),
                    y=row.tolist(),
                    mode="lines+markers",
                    marker={"size": 4},
                    line={"color": palette(h), "width": 2, "dash": ("solid", "dash")[h // 7 % 2]},
                    name=f"head {h + 1}, m = 1/{rounded([1 / slope_values[h]])[0]:g}",
                    hovertemplate=(
                        f"head {h + 1}<br>distance i − j = %{{x}}<br>weight = %{{y:.3g}}"
                        "<extra></extra>"
                    ),
                )
            )
        steps.append(group)
    labels = [str(i) for i in positions]
    titles = [f"query i = {i}: weights over keys j = 0…{i}, equal raw scores" for i in positions]
    fig = slider_figure(steps, labels, prefix="query i = ", active=active, step_titles=titles)
    fig.update_xaxes(title={"text": "distance i − j (0 = the query's own position)"})
    fig.update_xaxes(range=[-0.5, positions[-1] + 0.5])
    if log_y:
        fig.update_yaxes(
            type="log",
            range=[math.log10(float(y_min)), 0.05],
            title={"text": "attention weight (log scale)"},
            exponentformat="power",
        )
    else:
        fig.update_yaxes(range=[0, 1.02], title={"text": "attention weight"})
    default = (
        f"Attention weights of one query over its keys, against the distance i − j, for {n_heads} "
        "ALiBi heads when every raw score is equal, so only the bias acts. Steep heads stay local "
        "whatever the query position; gentle heads spread out as the query moves right."
    )
    apply_theme(fig, caption=caption, alt=alt, default=default, height=480)
    fig.update_layout(margin={"t": 60})  # room for the step title
    return fig
