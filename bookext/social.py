"""Search and social metadata for the published site: a sitemap and OpenGraph tags (Sphinx extension).

- ``sitemap.xml`` in the site's root lists every page under ``html_baseurl`` (``html.baseurl`` in
  ``_config.yml``), written when the build finishes, with nothing fetched from the network;
- every page gets OpenGraph and Twitter-card ``<meta>`` tags: its title, a description (the page's
  first paragraph, shortened), its URL, and for a chapter an image: the static picture of the
  chapter's first figure, which ``make execute`` saves as ``image/png`` in the notebook
  (:mod:`bookext.notebook_png`). A notebook without those pictures (executed another way) falls
  back to drawing its first plotly figure with :func:`bookext.notebook_png.render_png` at build
  time; a page with neither gets no image tag.

Social images go to ``_static/social/<page>.png``: no page loads them, only link previews do.
"""

from __future__ import annotations

import base64
import html
import json
import re
from pathlib import Path
from typing import Any
from xml.sax.saxutils import escape

from docutils import nodes

PLOTLY_MIME = "application/vnd.plotly.v1+json"
PNG_MIME = "image/png"
SOCIAL_DIR = "social"
DESCRIPTION_CHARS = 200


def first_figure_png(notebook: Path) -> bytes | None:
    """The PNG of the first figure saved in ``notebook`` (a figure's ``image/png``, else a drawing
    of its first plotly figure), or None when it holds no figure or cannot be read."""
    try:
        nb = json.loads(Path(notebook).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    first_plotly = None
    for cell in nb.get("cells", []):
        for output in cell.get("outputs", []):
            data = output.get("data") or {}
            if PLOTLY_MIME in data and PNG_MIME in data:
                png = data[PNG_MIME]
                return base64.b64decode("".join(png) if isinstance(png, list) else png)
            if PLOTLY_MIME in data and first_plotly is None:
                first_plotly = data[PLOTLY_MIME]
    if first_plotly is None:
        return None
    try:
        from bookext.notebook_png import render_png

        return render_png(first_plotly)
    except Exception:  # no matplotlib, or a figure it cannot draw: no image
        return None


def describe(doctree: nodes.document | None, limit: int = DESCRIPTION_CHARS) -> str:
    """The page's first paragraph as plain text, cut at a word before ``limit`` characters."""
    if doctree is None:
        return ""
    for paragraph in doctree.findall(nodes.paragraph):
        text = re.sub(r"\s+", " ", paragraph.astext()).strip()
        if len(text) >= 40:
            if len(text) <= limit:
                return text
            return text[: limit - 1].rsplit(" ", 1)[0].rstrip(",;:") + "…"
    return ""


def page_url(baseurl: str, pagename: str, builder: str = "html") -> str:
    """The published URL of ``pagename`` (``dirhtml`` builds use folder URLs)."""
    base = baseurl if baseurl.endswith("/") else baseurl + "/"
    if builder == "dirhtml":
        return base + ("" if pagename == "index" else pagename.removesuffix("/index") + "/")
    return base + pagename + ".html"


def meta_tags(
    *, title: str, description: str, url: str, site_name: str, image_url: str | None
) -> str:
    """OpenGraph and Twitter-card ``<meta>`` elements for one page, one per line."""
    tags = [
        ("property", "og:type", "article"),
        ("property", "og:site_name", site_name),
        ("property", "og:title", title),
    ]
    if url:
        tags.append(("property", "og:url", url))
    if description:
        tags += [("property", "og:description", description), ("name", "description", description)]
    if image_url:
        tags += [
            ("property", "og:image", image_url),
            ("property", "og:image:alt", f"First figure of “{title}”"),
            ("name", "twitter:card", "summary_large_image"),
        ]
    else:
        tags.append(("name", "twitter:card", "summary"))
    return "\n".join(
        f'<meta {attr}="{name}" content="{html.escape(value, quote=True)}" />'
        for attr, name, value in tags
    )


def sitemap_xml(urls: list[str]) -> str:
    """A sitemaps.org ``<urlset>`` for ``urls`` (sorted, no dates: the file is reproducible)."""
    lines = ['<?xml version="1.0" encoding="UTF-8"?>']
    lines.append('<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">')
    lines += [f"  <url><loc>{escape(url)}</loc></url>" for url in sorted(set(urls))]
    lines.append("</urlset>")
    return "\n".join(lines) + "\n"


def _baseurl(app: Any) -> str:
    return (getattr(app.config, "html_baseurl", "") or "").strip()


def _title(context: dict) -> str:
    return html.unescape(re.sub(r"<[^>]+>", "", str(context.get("title") or ""))).strip()


def _on_page_context(app: Any, pagename: str, templatename: str, context: dict, doctree) -> None:
    if doctree is None or app.builder.format != "html":
        return
    base = _baseurl(app)
    site_name = str(app.config.html_title or app.config.project or "")
    url = page_url(base, pagename, app.builder.name) if base else ""
    image_url = None
    source = Path(app.env.doc2path(pagename))
    if source.suffix == ".ipynb":
        png = first_figure_png(source)
        if png is not None:
            folder = Path(app.outdir) / "_static" / SOCIAL_DIR
            folder.mkdir(parents=True, exist_ok=True)
            name = re.sub(r"[^A-Za-z0-9_-]+", "_", pagename) + ".png"
            (folder / name).write_bytes(png)
            image_url = (base.rstrip("/") + "/" if base else "/") + f"_static/{SOCIAL_DIR}/{name}"
    tags = meta_tags(
        title=_title(context) or site_name,
        description=describe(doctree),
        url=url,
        site_name=site_name,
        image_url=image_url,
    )
    context["metatags"] = (context.get("metatags") or "") + "\n" + tags + "\n"


def _on_build_finished(app: Any, exception: Exception | None) -> None:
    if exception is not None or app.builder.format != "html":
        return
    base = _baseurl(app)
    if not base:
        return
    urls = [page_url(base, doc, app.builder.name) for doc in app.env.found_docs]
    (Path(app.outdir) / "sitemap.xml").write_text(sitemap_xml(urls), encoding="utf-8")


def setup(app: Any) -> dict:
    app.connect("html-page-context", _on_page_context)
    app.connect("build-finished", _on_build_finished)
    return {"parallel_read_safe": True, "parallel_write_safe": True, "version": "1.0"}
