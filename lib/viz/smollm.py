"""Figures of SmolLM2-135M's RoPE at work: which frequency bands its queries and keys use.

The numbers come from :mod:`lib.smollm` (:func:`lib.smollm.rope_pair_norms`); this module only
draws them.
"""

from __future__ import annotations

import plotly.graph_objects as go
import torch

from lib._checks import check_floating
from lib.viz.core import add_step_slider, apply_theme, palette, rounded

__all__ = ["pair_norm_figure"]


def pair_norm_figure(
    q_norms: torch.Tensor,
    k_norms: torch.Tensor,
    wavelengths: torch.Tensor,
    *,
    layer: int = 0,
    caption: str | None = None,
    alt: str | None = None,
) -> go.Figure:
    """Mean query and key pair norm against each pair's wavelength, one slider step per layer.

    Args:
        q_norms: the queries' mean norm per pair and layer, floating ``[L, P]``.
        k_norms: the keys' mean norm per pair and layer, floating ``[L, P]``.
        wavelengths: each pair's wavelength 2π/θ_i in tokens, floating ``[P]`` (the x axis, log).
        layer: the layer shown first (the slider's starting step), in ``[0, L)``.
        caption, alt: passed to :func:`lib.viz.core.apply_theme`.

    Returns:
        A figure with two lines (queries, keys) per layer and a layer slider.

    Raises:
        TypeError: a non-floating input.
        ValueError: shapes that do not match ``[L, P]``, ``[L, P]``, ``[P]``, or ``layer``
            outside ``[0, L)``.

    Shapes:
        q_norms, k_norms: [L, P]; wavelengths: [P]

    References:
        Barbero et al., Round and Round We Go! What makes Rotary Positional Encodings useful?,
        arXiv:2410.06205.
    """
    q_norms = check_floating("q_norms", q_norms)
    k_norms = check_floating("k_norms", k_norms)
    wavelengths = check_floating("wavelengths", wavelengths)
    if (
        q_norms.ndim != 2
        or k_norms.shape != q_norms.shape
        or wavelengths.shape != q_norms.shape[1:]
    ):
        raise ValueError(
            "q_norms and k_norms must be [L, P] and wavelengths [P], got "
            f"{tuple(q_norms.shape)}, {tuple(k_norms.shape)}, {tuple(wavelengths.shape)}"
        )
    if isinstance(layer, bool) or not isinstance(layer, int):
        raise TypeError(f"layer must be an int, got {type(layer).__name__}")
    if not 0 <= layer < q_norms.shape[0]:
        raise ValueError(f"layer must lie in [0, {q_norms.shape[0]}), got {layer}")
    x = rounded(wavelengths.detach().cpu()).tolist()
    fig = go.Figure()
    for step in range(q_norms.shape[0]):
        for j, (name, norms) in enumerate((("queries", q_norms), ("keys", k_norms))):
            fig.add_trace(
                go.Scatter(
                    x=x,
                    y=rounded(norms[step].detach().cpu(), 3).tolist(),
                    mode="lines+markers",
                    name=name,
                    visible=step == layer,
                    line={"color": palette(j), "width": 2, "dash": "solid" if j == 0 else "dash"},
                    marker={
                        "size": 5,
                        "color": palette(j),
                        "symbol": "circle" if j == 0 else "square",
                    },
                    hovertemplate="wavelength %{x:.3g} tokens<br>norm %{y:.3f}<extra>"
                    + name
                    + "</extra>",
                )
            )
    labels = [str(step) for step in range(q_norms.shape[0])]
    add_step_slider(
        fig, labels, n_static=0, per_step=2, prefix="layer ", active=layer, legend_follows=True
    )
    fig.update_xaxes(type="log", title_text="wavelength 2π/θ_i of the pair (tokens, log scale)")
    fig.update_yaxes(title_text="mean pair norm", rangemode="tozero")  # autorange per layer
    return apply_theme(fig, caption=caption, alt=alt)
