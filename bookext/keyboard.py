"""Keyboard access to the figures and a page layout that fits code and math (Sphinx extension).

- ``keyboard_sliders.js`` (on pages with a plotly figure): a WAI-ARIA slider per plotly slider and a
  real button per play/pause button, so keyboard and screen-reader readers can work the book's main
  interaction (see the script's header);
- ``reading.css`` (every page): code cells wrap long lines instead of scrolling sideways, display
  math scales down to the content column, and the keyboard controls' look and visible focus.

Both files live in ``bookext/assets/``, which :mod:`bookext.plotly_mime` copies into the site.

It also overrides one theme component, ``search-button-field.html`` (``bookext/templates/``): the
theme's search button is labelled "Search" while it shows "Search Ctrl+K", which axe-core reports
as a serious fault (``label-content-name-mismatch``) on every page.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from docutils import nodes

from bookext.plotly_mime import MARKER_CLASS

SCRIPT = "keyboard_sliders.js"
STYLESHEET = "reading.css"
TEMPLATES = Path(__file__).parent / "templates"
# Two faults axe-core reports in HTML that myst-nb and sphinxcontrib-bibtex write, fixed in the page:
# - a hidden cell's <summary aria-label="Toggle hidden content"> shows "Show code cell source": the
#   label hides the visible text from the name (label-content-name-mismatch, serious);
# - the bibliography's <div role="list"> holds role="doc-biblioentry" children, not list items
#   (aria-required-children, critical).
_SUMMARY_LABEL = re.compile(r'(<summary\b[^>]*?)\s+aria-label="Toggle hidden content"')
_CITATION_LIST = re.compile(r'(<div\b[^>]*?)\s+role="list"(?=[^>]*class="citation-list")')
# An exercise's solution cell (tags solution + hide-cell) says so on its toggle, instead of
# myst-nb's generic "Show code cell content".
_SOLUTION_TOGGLE = re.compile(
    r'(<div class="cell tag_solution\b[^"]*">\s*<details class="[^"]*\bhide\b[^"]*">\s*<summary>\s*'
    r'<p class="collapsed admonition-title">)Show code cell content(</p>\s*'
    r'<p class="expanded admonition-title">)Hide code cell content(</p>)'
)


def page_has_figure(doctree: nodes.document | None) -> bool:
    """Whether the page holds a plotly figure rendered by :mod:`bookext.plotly_mime`."""
    if doctree is None:
        return False
    return any(MARKER_CLASS in node.get("classes", []) for node in doctree.findall(nodes.raw))


def fix_body(body: str) -> str:
    """The page body with the two axe-core faults above removed and solution toggles labelled."""
    body = _CITATION_LIST.sub(r"\1", _SUMMARY_LABEL.sub(r"\1", body))
    return _SOLUTION_TOGGLE.sub(r"\1Show the solution\2Hide the solution\3", body)


def _on_page_context(app: Any, pagename: str, templatename: str, context: dict, doctree) -> None:
    if isinstance(context.get("body"), str):
        context["body"] = fix_body(context["body"])
    if page_has_figure(doctree):
        # Deferred scripts run in order: after plotly.js and bookplot.js, which add theirs first.
        app.add_js_file(SCRIPT, loading_method="defer")


def _on_config_inited(app: Any, config: Any) -> None:
    # First in the search path, so this folder's components win over the theme's own.
    config.templates_path.insert(0, str(TEMPLATES))


def setup(app: Any) -> dict:
    app.setup_extension("bookext.plotly_mime")
    app.add_css_file(STYLESHEET)
    app.connect("config-inited", _on_config_inited)
    app.connect("html-page-context", _on_page_context)
    return {"parallel_read_safe": True, "parallel_write_safe": True, "version": "1.0"}
