"""Render plotly figures on the static site, with plotly.js served by the site itself.

plotly 7 writes only ``application/vnd.plotly.v1+json`` into notebook outputs. myst-nb does not know
that mime type, so without help a figure is blank on the website. This module is both

- a myst-nb mime-renderer plugin (entry point ``myst_nb.mime_renderers`` in pyproject.toml) that turns
  the figure JSON into a ``<figure>``: a div with a deterministic id, the JSON in a
  ``<script type="application/json">``, and the caption from ``fig.layout.meta["caption"]``; and
- a Sphinx extension (listed in ``_config.yml``) that copies the installed package's ``plotly.min.js``
  into the site once, and adds it (and ``bookplot.js``, which draws the figures and follows the
  theme's light/dark switch) only to pages that hold a figure.

The notebooks keep plotly's own output, which JupyterLab, VS Code and nbval understand.
"""

from __future__ import annotations

import html
import json
import re
import shutil
from pathlib import Path
from typing import Any, ClassVar

from docutils import nodes

PLOTLY_MIME = "application/vnd.plotly.v1+json"
MARKER_CLASS = "bookplot-output"
ASSETS = Path(__file__).parent / "assets"


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "-", text).strip("-").lower() or "page"


def _docname(renderer: Any) -> str:
    try:
        return renderer.renderer.document.settings.env.docname
    except AttributeError:  # docutils-only build: no Sphinx environment
        return "page"


def figure_html(figure: dict, div_id: str) -> str:
    """The HTML for one figure: a div, its JSON (script-safe), and its caption."""
    meta = figure.get("layout", {}).get("meta") or {}
    if not isinstance(meta, dict):
        meta = {}
    caption = meta.get("caption")
    alt = meta.get("alt") or caption or "Interactive figure"
    payload = json.dumps(
        {
            "data": figure.get("data", []),
            "layout": figure.get("layout", {}),
            "frames": figure.get("frames", []),
        },
        separators=(",", ":"),
        sort_keys=True,
    )
    # Inside <script>, "</" would end the element early; "<\/" is the same string to JSON.
    payload = payload.replace("</", "<\\/")
    parts = [
        f'<figure class="bookplot" id="{div_id}-figure">',
        # role="figure" (not "img", whose children are presentational): the alt text stays the
        # figure's name and plotly's slider, buttons and the keyboard slider inside stay operable.
        f'<div class="bookplot-graph" id="{div_id}" role="figure" aria-label="{html.escape(alt)}"'
        + (f' aria-describedby="{div_id}-caption"' if caption else "")
        + ">"
        "</div>",
        f'<script type="application/json" class="bookplot-data" data-target="{div_id}">'
        f"{payload}</script>",
    ]
    if caption:
        parts.append(
            f'<figcaption class="bookplot-caption" id="{div_id}-caption">'
            f"{html.escape(caption)}</figcaption>"
        )
    parts.append("</figure>")
    return "\n".join(parts)


class PlotlyMimeRenderer:
    """myst-nb mime renderer: plotly JSON -> a self-contained ``<figure>`` on HTML pages."""

    # Prefer plotly's JSON over any text/html or image fallback in HTML builds.
    mime_priority_overrides: ClassVar[list[tuple[str, str, int]]] = [
        ("html", PLOTLY_MIME, 1),
        ("dirhtml", PLOTLY_MIME, 1),
    ]

    @staticmethod
    def handle_mime(renderer: Any, data: Any, inline: bool) -> list[nodes.Element] | None:
        if inline or data.mime_type != PLOTLY_MIME:
            return None
        figure = data.content
        if isinstance(figure, (str, bytes)):
            figure = json.loads(figure)
        div_id = f"bookplot-{_slug(_docname(renderer))}-{data.cell_index}-{data.output_index}"
        raw = nodes.raw("", figure_html(figure, div_id), format="html")
        raw["classes"].append(MARKER_CLASS)
        return [raw]


def _plotly_js_source() -> Path:
    import plotly

    path = Path(plotly.__file__).parent / "package_data" / "plotly.min.js"
    if not path.is_file():
        raise FileNotFoundError(f"plotly.min.js not found in the installed plotly package: {path}")
    return path


def _add_static(app: Any) -> None:
    """Put plotly.min.js and bookplot.js/css in a build-local static folder Sphinx copies once."""
    static = Path(app.doctreedir).parent / "bookext_static"
    static.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(_plotly_js_source(), static / "plotly.min.js")
    for asset in ASSETS.iterdir():
        if asset.is_file():
            shutil.copyfile(asset, static / asset.name)
    app.config.html_static_path.append(str(static))
    app.add_css_file("bookplot.css")


def _page_has_figure(doctree: nodes.document | None) -> bool:
    if doctree is None:
        return False
    return any(MARKER_CLASS in node.get("classes", []) for node in doctree.findall(nodes.raw))


def _on_page_context(app: Any, pagename: str, templatename: str, context: dict, doctree) -> None:
    if _page_has_figure(doctree):
        # Added in html-page-context, the scripts go on this page only; the file is shared and cached.
        app.add_js_file("plotly.min.js", loading_method="defer")
        app.add_js_file("bookplot.js", loading_method="defer")


def setup(app: Any) -> dict:
    app.connect("builder-inited", _add_static)
    app.connect("html-page-context", _on_page_context)
    return {"parallel_read_safe": True, "parallel_write_safe": True, "version": "1.0"}
