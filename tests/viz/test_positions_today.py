"""lib.viz.positions_today: the figure's data equal the wavelengths computed by hand."""

import math

import numpy as np
import pytest

from lib.model_positions import MODELS
from lib.viz.positions_today import layer_wavelength_figure, wavelength_grid


def test_grid_matches_hand_wavelengths_gemma4_global():
    grid = wavelength_grid("Gemma 4")
    row = grid[5]  # first global layer: d_head 512, 64 rotating pairs of 256
    expected = [math.log10(2 * math.pi * 1e6 ** (2 * i / 512)) for i in range(64)]
    np.testing.assert_allclose(row[:64], expected, rtol=1e-3)
    assert np.isnan(row[64:]).all()


def test_nope_rows_are_blank():
    grid = wavelength_grid("SmolLM3")
    assert np.isnan(grid[3]).all() and not np.isnan(grid[0]).any()


def test_figure_has_one_step_per_model_and_caption():
    fig = layer_wavelength_figure()
    assert len(fig.data) == len(MODELS)
    assert len(fig.layout.sliders[0].steps) == len(MODELS)
    assert fig.layout.meta["caption"] and fig.layout.meta["alt"]
    with pytest.raises(ValueError, match="names"):
        layer_wavelength_figure(["nope"])
    with pytest.raises(ValueError, match="at least one"):
        layer_wavelength_figure([])
