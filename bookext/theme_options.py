"""sphinx-book-theme options that Jupyter Book 1.x's ``_config.yml`` has no key for.

Setting ``html_theme_options`` under ``sphinx.config`` would replace the options Jupyter Book builds
from ``_config.yml`` (repository, launch and edit buttons), so this adds to them instead.
"""

from __future__ import annotations

from typing import Any

EXTRA_THEME_OPTIONS = {
    # A "view source" link (the notebook on the repository host) beside download and edit.
    "use_source_button": True,
}


def _on_config(app: Any, config: Any) -> None:
    config.html_theme_options = {**config.html_theme_options, **EXTRA_THEME_OPTIONS}


def setup(app: Any) -> dict:
    app.connect("config-inited", _on_config, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True, "version": "1.0"}
