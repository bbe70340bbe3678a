"""The per-layer picture of today's models: which pairs rotate, how fast, windows and NoPE layers."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from lib._checks import check_choice
from lib.model_positions import MODELS, layer_inv_freqs, layer_table
from lib.viz.core import SEQUENTIAL, apply_theme, rounded, slider_figure

__all__ = ["layer_wavelength_figure", "wavelength_grid"]


def wavelength_grid(name: str) -> np.ndarray:
    """log10 of each pair's wavelength 2π/θ_i in tokens, layers × pairs; NaN where θ_i = 0.

    Args:
        name: a key of :data:`lib.model_positions.MODELS`.

    Returns:
        A float64 array [layers, max pairs], rounded (NaN pads shorter layers and marks pairs
        that never rotate).

    Raises:
        ValueError: an unknown name.
    """
    check_choice("name", name, tuple(MODELS))
    freqs = layer_inv_freqs(name)
    width = max(int(f.shape[0]) for f in freqs)
    grid = np.full((len(freqs), width), np.nan)
    for i, f in enumerate(freqs):
        row = f.double().numpy()
        with np.errstate(divide="ignore"):
            vals = np.where(row > 0, np.log10(2 * math.pi / np.where(row > 0, row, 1.0)), np.nan)
        grid[i, : row.shape[0]] = vals
    return rounded(grid)


def layer_wavelength_figure(names: Sequence[str] | None = None) -> go.Figure:
    """A heatmap per model (slider): layers × pairs, colour = log10 wavelength, blank = no rotation.

    Hovering a row names its attention kind and window.

    Args:
        names: keys of :data:`lib.model_positions.MODELS` (default: all, in table order).

    Returns:
        A plotly figure with one heatmap per model and a slider over the models.

    Raises:
        ValueError: an unknown name or an empty list.
    """
    chosen = (
        list(MODELS) if names is None else [check_choice("names", n, tuple(MODELS)) for n in names]
    )
    if not chosen:
        raise ValueError("names must hold at least one model")
    steps = []
    for name in chosen:
        grid = wavelength_grid(name)
        rows = layer_table(name)
        # One label per layer row (its attention kind and window), not a hover string per cell:
        # per-cell text made the page 1.7 MB.
        labels = [
            f"{i}: {r['kind']}, window {r['window'] or 'all'}" + ("" if r["rope"] else ", no RoPE")
            for i, r in enumerate(rows)
        ]
        steps.append(
            [
                go.Heatmap(
                    z=grid,
                    y=labels,
                    colorscale=SEQUENTIAL,
                    zmin=0.0,
                    zmax=7.0,
                    hovertemplate="layer %{y}<br>pair %{x}, log10 wavelength %{z}<extra></extra>",
                    colorbar={"title": "log10 λ"},
                )
            ]
        )
    fig = slider_figure(steps, chosen, prefix="model: ")
    fig.update_xaxes(title_text="pair i (fast → slow)")
    fig.update_yaxes(title_text="layer", autorange="reversed")
    return apply_theme(
        fig,
        caption=(
            "Each model's layers (rows) and rotation pairs (columns), coloured by the pair's "
            "wavelength in tokens (log10); blank cells never rotate: NoPE layers, linear-attention "
            "layers, the pass-through part of partial rotary, the zeroed pairs of proportional RoPE, "
            "MLA's content dimensions. Read from transformers 5.24's default configurations."
        ),
        alt=(
            "Heatmap with a model slider: rows are layers, columns rotation pairs; colour shows "
            "log10 wavelength from fast (dark) to slow (light); blank rows mark NoPE layers."
        ),
        height=460,
    )
