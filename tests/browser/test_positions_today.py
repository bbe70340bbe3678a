"""Chapter 12's layer × pair heatmap in a real browser: drawn with lib's data, and the model slider moves it.

The figure is found by its slider (steps labelled with the keys of ``lib.model_positions.MODELS``).
What the page shows is read from plotly's resolved ``_fullData`` and compared with
:func:`lib.viz.positions_today.wavelength_grid` and :func:`lib.model_positions.layer_table` for the
model the slider names, before and after a reader clicks the slider's rail.
"""

from __future__ import annotations

import numpy as np
import pytest

from lib.model_positions import MODELS, layer_table
from lib.viz.positions_today import wavelength_grid

from .conftest import SITE  # noqa: F401  (a missing site fails these tests with a clear message)
from .test_site import DRAW_ALL, ours

pytestmark = pytest.mark.browser

PAGE = "chapters/12_positions_today.html"

# The index of the heatmap figure: the one whose slider steps are model names.
FIND_FIGURE = """(models) => {
  const divs = Array.from(document.querySelectorAll('.bookplot-graph'));
  return divs.findIndex(d => {
    const s = (d.layout && d.layout.sliders) || [];
    return s.length === 1 && s[0].steps.every(st => models.includes(st.label.replace(/^model: /, '')));
  });
}"""

# What the figure shows: the active step's model, and the visible heatmap's z (NaN -> null) and y.
SHOWN = """(d) => {
  const s = d.layout.sliders[0];
  const active = s.active || 0;
  const visible = (d._fullData || []).filter(t => t.visible === true && t.type === 'heatmap');
  const rows = (a) => Array.from(a || []).map(r => Array.from(r).map(
      v => (typeof v === 'number' && Number.isFinite(v)) ? v : null));
  return {
    label: s.steps[active].label,
    prefix: (s.currentvalue && s.currentvalue.prefix) || '',
    n_visible: visible.length,
    z: visible.length ? rows(visible[0].z) : [],
    y: visible.length ? Array.from(visible[0].y || []) : [],
  };
}"""


def _model(shown: dict) -> str:
    label = shown["label"]
    return label.removeprefix("model: ")


def _assert_shows_lib_data(shown: dict) -> None:
    name = _model(shown)
    assert name in MODELS, f"slider label {shown['label']!r} names no model"
    assert shown["n_visible"] == 1, f"{name}: {shown['n_visible']} heatmaps visible, expected 1"
    expected = wavelength_grid(name)
    got = np.array([[np.nan if v is None else v for v in row] for row in shown["z"]], dtype=float)
    assert got.shape == expected.shape, f"{name}: drawn {got.shape}, lib {expected.shape}"
    assert np.isfinite(got).any(), f"{name}: the heatmap has no finite cell"
    np.testing.assert_array_equal(np.isnan(got), np.isnan(expected), err_msg=f"{name}: blanks")
    np.testing.assert_array_equal(got[~np.isnan(got)], expected[~np.isnan(expected)])
    table = layer_table(name)
    assert len(shown["y"]) == len(table)
    for label, row in zip(shown["y"], table, strict=True):
        assert label.endswith("no RoPE") == (row["rope"] is None), f"{name}: row label {label!r}"


def test_heatmap_draws_lib_data_and_the_slider_moves_it(recorder_factory, site_url):
    rec = recorder_factory()
    p = rec.page
    p.goto(f"{site_url}/{PAGE}", wait_until="load")
    assert p.evaluate(DRAW_ALL) > 0  # figures are drawn when they near the viewport
    index = p.evaluate(FIND_FIGURE, list(MODELS))
    assert index >= 0, f"{PAGE}: no figure with a model slider"
    fig = p.locator(".bookplot-graph").nth(index)
    fig.scroll_into_view_if_needed()
    drawn = fig.evaluate(
        "d => d.querySelectorAll('.main-svg .heatmaplayer image, .main-svg .hm image').length"
    )
    assert drawn > 0, f"{PAGE}: the heatmap drew no image"
    before = fig.evaluate(SHOWN)
    assert _model(before) == "Gemma 4", f"opens on {before['label']!r}, not Gemma 4"
    _assert_shows_lib_data(before)

    rail = fig.locator(".slider-rail-rect").first
    rail.scroll_into_view_if_needed()
    box = rail.bounding_box()
    assert box is not None
    p.mouse.click(box["x"] + box["width"] * 0.97, box["y"] + box["height"] / 2)
    p.wait_for_timeout(300)
    after = fig.evaluate(SHOWN)
    assert _model(after) != _model(before), "the slider did not move"
    assert after["z"] != before["z"], "the slider moved but the heatmap did not change"
    _assert_shows_lib_data(after)
    assert not ours(rec.console_errors), f"console errors: {ours(rec.console_errors)}"
