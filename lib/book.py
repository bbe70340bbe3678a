"""Bookkeeping for chapters: numbers glued into the prose, and nothing else.

A chapter computes every number its prose quotes and hands it to Jupyter Book's ``glue`` so the page
shows the computed value. Outside the book's build (Colab, a plain Jupyter kernel, a script) myst-nb
may not be installed; :func:`glue` then does nothing, so a chapter runs anywhere.
"""

from __future__ import annotations

from typing import Any

try:  # myst-nb is a build requirement, not a reader's one.
    from myst_nb import glue as _myst_glue
except ImportError:  # pragma: no cover - exercised by the Colab-path test
    _myst_glue = None


def glue(name: str, value: Any, display: bool = False) -> None:
    """Glue ``value`` under ``name`` for ``{glue:text}`name``` in the prose; a no-op without myst-nb.

    Args:
        name: the key the prose uses; a non-empty string.
        value: what the page shows (a formatted string, a number, or a figure).
        display: also show the value in the cell's output (myst-nb's ``display``).

    Raises:
        TypeError: ``name`` is not a string.
        ValueError: ``name`` is empty.
    """
    if not isinstance(name, str):
        raise TypeError(f"name must be a str, got {type(name).__name__}")
    if not name:
        raise ValueError("name must be a non-empty string")
    if _myst_glue is not None:
        _myst_glue(name, value, display=display)


def glue_all(values: dict[str, Any]) -> None:
    """Glue every ``name: value`` of ``values`` (one bookkeeping call per cell).

    Args:
        values: ``{name: value}``, each glued as :func:`glue` does.

    Raises:
        TypeError: ``values`` is not a dict.
    """
    if not isinstance(values, dict):
        raise TypeError(f"values must be a dict of name -> value, got {type(values).__name__}")
    for name, value in values.items():
        glue(name, value)
