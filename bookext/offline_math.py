"""Serve MathJax from the site itself, so math renders offline and no reader is sent to a CDN.

Sphinx loads MathJax from a CDN by default. This extension copies MathJax 3 (shipped inside the
PyPI package ``sphinx-mathjax-offline``) into the build's static files and points ``mathjax_path``
at its ``tex-svg.js`` component: TeX input, SVG output, whose glyphs come from JavaScript font data,
so no web-font file is fetched either. Sphinx's own MathJax 3 configuration stays in force.
"""

from __future__ import annotations

import importlib.util
import shutil
from pathlib import Path
from typing import Any

MATHJAX_COMPONENT = "tex-svg.js"


def _mathjax_source() -> Path:
    # The distribution's package folder has a hyphen in its name, so it cannot be imported normally.
    spec = importlib.util.find_spec("sphinx-mathjax-offline")
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError(
            "sphinx-mathjax-offline is not installed: `pip install -r requirements.txt`"
        )
    path = Path(next(iter(spec.submodule_search_locations))) / "static" / "mathjax"
    if not (path / MATHJAX_COMPONENT).is_file():
        raise FileNotFoundError(f"{MATHJAX_COMPONENT} not found in sphinx-mathjax-offline: {path}")
    return path


def _on_config(app: Any, config: Any) -> None:
    # Relative to _static/ in the built site.
    config.mathjax_path = f"mathjax/{MATHJAX_COMPONENT}"


def _on_builder_inited(app: Any) -> None:
    static = Path(app.doctreedir).parent / "bookext_mathjax"
    target = static / "mathjax"
    if not (target / MATHJAX_COMPONENT).is_file():
        shutil.copytree(_mathjax_source(), target, dirs_exist_ok=True)
    app.config.html_static_path.append(str(static))


def setup(app: Any) -> dict:
    app.connect("config-inited", _on_config, priority=900)
    app.connect("builder-inited", _on_builder_inited)
    return {"parallel_read_safe": True, "parallel_write_safe": True, "version": "1.0"}
