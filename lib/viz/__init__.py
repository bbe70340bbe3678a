"""Figure builders: functions that take tensors and return plotly figures.

Every builder returns a :class:`plotly.graph_objects.Figure` and never calls ``show()``. Sliders are
plotly ``layout.sliders`` (or frames), so they work in the static website with no kernel. Figure data
is rounded (:func:`lib.viz.core.rounded`) so saved notebook outputs compare equal across CPUs.

Modules: :mod:`lib.viz.core` (theme, palettes, rounding, the generic slider figure) and one module
per topic (``lib.viz.rope``, ``lib.viz.sinusoidal``, ...).

Importing ``lib.viz`` makes plotly's default renderer in a Jupyter kernel
:data:`lib.viz.static.RENDERER_NAME`: every figure a chapter shows carries a static matplotlib PNG
(:func:`lib.viz.static.render_png`) beside its plotly JSON, for notebook viewers without JavaScript.
"""

from lib.viz.core import (
    DIVERGING,
    OKABE_ITO,
    SEQUENTIAL,
    add_step_slider,
    apply_theme,
    heatmap_slider,
    rounded,
    slider_figure,
)
from lib.viz.static import render_png, use_book_renderer

use_book_renderer()

__all__ = [
    "DIVERGING",
    "OKABE_ITO",
    "SEQUENTIAL",
    "add_step_slider",
    "apply_theme",
    "heatmap_slider",
    "render_png",
    "rounded",
    "slider_figure",
    "use_book_renderer",
]
