"""Figure builders: functions that take tensors and return plotly figures.

Every builder returns a :class:`plotly.graph_objects.Figure` and never calls ``show()``. Sliders are
plotly ``layout.sliders`` (or frames), so they work in the static website with no kernel. Figure data
is rounded (:func:`lib.viz.core.rounded`) so saved notebook outputs compare equal across CPUs.

Modules: :mod:`lib.viz.core` (theme, palettes, rounding, the generic slider figure) and one module
per topic (``lib.viz.rope``, ``lib.viz.sinusoidal``, ...).

Importing ``lib.viz`` changes no plotly setting: the static PNG saved beside each figure in the
committed notebooks is publishing tooling (``bookext/notebook_png.py``, registered by
``make execute``), not part of the figures.
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

__all__ = [
    "DIVERGING",
    "OKABE_ITO",
    "SEQUENTIAL",
    "add_step_slider",
    "apply_theme",
    "heatmap_slider",
    "rounded",
    "slider_figure",
]
