"""Figures for the relative-position-bias family: T5's bucket map and learned bias next to ALiBi.

Builders take tensors computed by :mod:`lib.relative` / :mod:`lib.alibi` and only draw them; every
figure has a plotly slider that works on the static site.
"""

from __future__ import annotations

from collections.abc import Sequence

import plotly.graph_objects as go
import torch

from lib._checks import check_floating, check_int, check_integer_tensor
from lib.viz.core import OKABE_ITO, apply_theme, rounded, slider_figure

__all__ = ["bias_vs_alibi_figure", "bucket_map_figure"]


def bucket_map_figure(
    offsets: torch.Tensor,
    buckets: Sequence[torch.Tensor],
    labels: Sequence[str],
    max_distances: Sequence[int],
    *,
    active: int = 0,
    caption: str | None = None,
    alt: str | None = None,
) -> go.Figure:
    """T5's map from offset ``j − i`` to bucket, one slider step per (num_buckets, max_distance).

    Raffel et al. 2020 (arXiv:1910.10683): offsets below ``num_buckets/2`` (per direction) get one
    bucket each, larger ones share log-spaced buckets up to ``max_distance``. Each step draws the
    bucket of every offset (a staircase) and dotted vertical lines at ``±max_distance``.

    Args:
        offsets: ``[N]`` integer offsets, increasing.
        buckets: one ``[N]`` integer tensor per step, e.g. from
            :func:`lib.relative.t5_relative_position_bucket`.
        labels: the slider label of each step.
        max_distances: the ``max_distance`` of each step (for the dotted lines).
        active: the step shown first.
        caption, alt: caption and alt text (defaults describe the figure).

    Returns:
        A figure with two traces per step (buckets, max-distance markers) and one slider.

    Raises:
        TypeError: a tensor not an integer tensor; a max distance not an int.
        ValueError: empty steps, mismatched lengths, ``offsets`` not 1-D increasing.
    """
    check_integer_tensor("offsets", offsets)
    if offsets.dim() != 1 or offsets.numel() < 2 or bool((offsets[1:] <= offsets[:-1]).any()):
        raise ValueError("offsets must be 1-D, at least 2 values, strictly increasing")
    if len(buckets) == 0 or len(buckets) != len(labels) or len(buckets) != len(max_distances):
        raise ValueError(
            "buckets, labels and max_distances must be non-empty and of equal length, got "
            f"{len(buckets)}, {len(labels)}, {len(max_distances)}"
        )
    x = offsets.tolist()
    checked = []
    for k, (b, md) in enumerate(zip(buckets, max_distances, strict=True)):
        check_integer_tensor(f"buckets[{k}]", b)
        if tuple(b.shape) != tuple(offsets.shape):
            raise ValueError(
                f"buckets[{k}] must have the shape of offsets {list(offsets.shape)}, "
                f"got {list(b.shape)}"
            )
        checked.append((b, check_int(f"max_distances[{k}]", md, minimum=1)))
    top = max(int(b.max()) for b, _ in checked)
    steps = []
    for b, md in checked:
        inside = [d for d in (-md, md) if x[0] <= d <= x[-1]]
        steps.append(
            [
                go.Scatter(
                    x=x,
                    y=b.tolist(),
                    mode="lines",
                    line={"shape": "hv", "color": OKABE_ITO[0], "width": 2},
                    name="bucket",
                    hovertemplate="offset j − i = %{x}<br>bucket %{y}<extra></extra>",
                ),
                go.Scatter(
                    x=[v for d in inside for v in (d, d, None)],
                    y=[v for _ in inside for v in (0, top + 1, None)],
                    mode="lines",
                    line={"color": OKABE_ITO[5], "dash": "dot", "width": 2},
                    name="± max_distance",
                    hoverinfo="skip",
                ),
            ]
        )
    fig = slider_figure(steps, list(labels), prefix="", active=active)
    fig.update_xaxes(title={"text": "offset j − i (key position − query position)"})
    fig.update_yaxes(title={"text": "bucket (row of the learned table)"}, range=[-0.5, top + 1.5])
    default = (
        "T5's relative-position buckets: for each offset j − i, the bucket whose learned scalar "
        "is added to the score. Small offsets get a bucket each, larger ones share wider and "
        "wider buckets, and every offset beyond ± max_distance (dotted) shares the last one. The "
        "slider changes num_buckets and max_distance."
    )
    apply_theme(fig, caption=caption, alt=alt, default=default, height=450)
    return fig


def bias_vs_alibi_figure(
    distance: torch.Tensor,
    t5_bias: torch.Tensor,
    alibi: torch.Tensor,
    slopes: torch.Tensor,
    *,
    max_distance: int | None = None,
    active: int = 0,
    caption: str | None = None,
    alt: str | None = None,
) -> go.Figure:
    """A learned T5 bias per head next to ALiBi's line ``−m_h · d``, with a head slider.

    Args:
        distance: ``[D]`` distances ``i − j`` (x axis), increasing.
        t5_bias: ``[H, D]`` floating, the T5 bias of each head at each distance (e.g. shifted so
            that distance 0 is 0).
        alibi: ``[H, D]`` floating, ALiBi's bias ``−m_h · d`` at the same distances.
        slopes: ``[H]``, ALiBi's slopes (legend).
        max_distance: if given, a dotted line where T5's buckets stop growing.
        active: the head shown first.
        caption, alt: caption and alt text (defaults describe the figure).

    Returns:
        A figure with two traces per head and a slider of ``H`` steps.

    Raises:
        TypeError: tensors of the wrong kind.
        ValueError: shapes that do not match.
    """
    if not isinstance(distance, torch.Tensor):
        raise TypeError(f"distance must be a torch.Tensor, got {type(distance).__name__}")
    check_floating("t5_bias", t5_bias)
    check_floating("alibi", alibi)
    check_floating("slopes", slopes)
    if distance.dim() != 1:
        raise ValueError(f"distance must be 1-D, got shape {list(distance.shape)}")
    n_heads = t5_bias.shape[0] if t5_bias.dim() == 2 else -1
    if t5_bias.dim() != 2 or t5_bias.shape[1] != distance.numel():
        raise ValueError(f"t5_bias must be [H, D] with D = {distance.numel()}")
    if tuple(alibi.shape) != tuple(t5_bias.shape):
        raise ValueError(f"alibi must have t5_bias's shape {list(t5_bias.shape)}")
    if tuple(slopes.shape) != (n_heads,):
        raise ValueError(f"slopes must be [H] with H = {n_heads}, got {list(slopes.shape)}")
    x = rounded(distance).tolist()
    # Three significant digits: a table trained to match -m*d lands within float32 noise of
    # binary fractions such as -1/64 = -0.015625, a tie at four digits that two CPUs broke apart.
    t5 = rounded(t5_bias, 3)
    al = rounded(alibi)
    steps = []
    for h in range(n_heads):
        m = float(slopes[h])
        steps.append(
            [
                go.Scatter(
                    x=x,
                    y=t5[h].tolist(),
                    mode="lines",
                    line={"shape": "hv", "color": OKABE_ITO[0], "width": 2},
                    name="T5 bias (learned, bucketed)",
                    hovertemplate="d = %{x}<br>T5 bias %{y:.3f}<extra></extra>",
                ),
                go.Scatter(
                    x=x,
                    y=al[h].tolist(),
                    mode="lines",
                    line={"color": OKABE_ITO[1], "width": 2, "dash": "dash"},
                    name=f"ALiBi −m·d (fixed), m = 1/{1 / m:.4g}",
                    hovertemplate="d = %{x}<br>ALiBi %{y:.3f}<extra></extra>",
                ),
            ]
        )
    labels = [f"{h + 1}" for h in range(n_heads)]
    titles = [f"head {h + 1}: ALiBi slope m = 1/{1 / float(slopes[h]):.4g}" for h in range(n_heads)]
    fig = slider_figure(steps, labels, prefix="head ", active=active, step_titles=titles)
    if max_distance is not None:
        md = check_int("max_distance", max_distance, minimum=1)
        fig.add_vline(x=md, line={"dash": "dot", "color": OKABE_ITO[7]})
    fig.update_xaxes(title={"text": "distance i − j (tokens back)"})
    fig.update_yaxes(title={"text": "bias added to the score"})
    fig.update_layout(legend={"orientation": "h", "y": -0.25, "x": 0})
    default = (
        "For each head (slider), the bias T5 learned for each distance (a staircase, one step per "
        "bucket, flat beyond max_distance) and ALiBi's fixed line −m·d."
    )
    apply_theme(fig, caption=caption, alt=alt, default=default, height=460)
    fig.update_layout(margin={"t": 60})
    return fig
