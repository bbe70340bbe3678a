"""The print layout of every page (Sphinx extension): ``print.css``, loaded with ``media="print"``.

A printed page (a reader's Ctrl+P, or ``make pdf``, which prints every page with Chromium:
``scripts/book_pdf.py``) keeps the chapter's numbered title and drops what cannot work on paper:
slider tracks, play buttons and keyboard hints. The stylesheet lives in ``bookext/assets/``, which
:mod:`bookext.plotly_mime` copies into the site; ``media="print"`` keeps it off the screen's
critical path.
"""

from __future__ import annotations

from typing import Any

STYLESHEET = "print.css"


def setup(app: Any) -> dict:
    app.setup_extension("bookext.plotly_mime")
    app.add_css_file(STYLESHEET, media="print")
    return {"parallel_read_safe": True, "parallel_write_safe": True, "version": "1.0"}
