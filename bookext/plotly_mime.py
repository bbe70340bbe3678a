"""Render plotly figures on the static site, with plotly.js served by the site itself.

plotly 7 writes only ``application/vnd.plotly.v1+json`` into notebook outputs. myst-nb does not know
that mime type, so without help a figure is blank on the website. This module is both

- a myst-nb mime-renderer plugin (entry point ``myst_nb.mime_renderers`` in pyproject.toml) that turns
  the figure JSON into a ``<figure>``: a div with a deterministic id, the JSON in a
  ``<script type="application/json">``, and the caption from ``fig.layout.meta["caption"]``; and
- a Sphinx extension (listed in ``_config.yml``) that copies plotly.js into the site once, and adds
  ``bookplot.js`` only to pages that hold a figure; that script loads plotly.js when it is first
  needed, draws each figure when it nears the viewport and follows the theme's light/dark switch.

The site ships a plotly.js built with only the trace types the book draws (scatter, bar, heatmap:
1.0 MB instead of plotly's 4.8 MB bundle), vendored in ``bookext/vendor/plotly.js-book/`` with its
licence and rebuilt reproducibly by ``scripts/plotly_bundle/`` (plotly.js and esbuild pinned by its
package-lock.json): the same plotly.js version as the pinned plotly package's own bundle (checked at
build time, with the file's SHA-256). A figure with a trace type the bundle lacks is a build warning
(an error under ``-W``), naming the page.

The notebooks keep plotly's own output, which JupyterLab, VS Code and nbval understand.
"""

from __future__ import annotations

import hashlib
import html
import json
import re
import shutil
from pathlib import Path
from typing import Any, ClassVar

from docutils import nodes
from sphinx.util import logging

from bookext.narrow import NARROW_WIDTH, stacked_update

LOGGER = logging.getLogger(__name__)

PLOTLY_MIME = "application/vnd.plotly.v1+json"
MARKER_CLASS = "bookplot-output"
ASSETS = Path(__file__).parent / "assets"
# plotly.js with only the book's trace types, built by scripts/plotly_bundle/ (npm ci && npm run
# build; see its README.md and bookext/vendor/README.md). The vendored file is what ships.
PLOTLY_BUNDLE_DIR = Path(__file__).parent / "vendor" / "plotly.js-book"
PLOTLY_BUNDLE_VERSION = "4.1.1"
PLOTLY_BUNDLE = PLOTLY_BUNDLE_DIR / f"plotly-book-{PLOTLY_BUNDLE_VERSION}.min.js"
PLOTLY_BUNDLE_SHA256 = "8a85de5945f144cca839e6078b9eda95b921910afd17c8ddb7066f5ca3dd5a99"
# The name the site serves it under: a new version is a new URL, so no reader keeps a stale copy.
PLOTLY_JS_NAME = PLOTLY_BUNDLE.name
# The trace modules the bundle registers: scatter (in plotly.js's core) and those that
# scripts/plotly_bundle/entry.js requires (tests/test_bookext.py checks the two agree; the browser
# test compares them with Plotly.PlotSchema in the page, so this list cannot drift from the file).
BUNDLE_TRACES = frozenset({"bar", "heatmap", "scatter"})
DEFAULT_HEIGHT = 450


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "-", text).strip("-").lower() or "page"


def _docname(renderer: Any) -> str:
    try:
        return renderer.renderer.document.settings.env.docname
    except AttributeError:  # docutils-only build: no Sphinx environment
        return "page"


def compact_numbers(obj: Any) -> Any:
    """``obj`` with every whole-number float written as an int: ``2.0`` -> ``2`` (same value).

    plotly writes the figures' numbers as floats (``0.0``, ``1.0``); JavaScript has one number type,
    so ``0`` is the same value to plotly.js and two characters shorter. Nothing else changes.
    """
    if isinstance(obj, float) and obj.is_integer() and abs(obj) < 2**53:
        return int(obj)
    if isinstance(obj, list):
        return [compact_numbers(x) for x in obj]
    if isinstance(obj, dict):
        return {k: compact_numbers(v) for k, v in obj.items()}
    return obj


def keyboard_summary(layout: dict) -> dict | None:
    """What keyboard_sliders.js needs before a figure is drawn; None for a figure without controls.

    For each slider its step labels, active step and current-value prefix; for each updatemenu of
    type "buttons" its index in ``layout.updatemenus`` and its button labels. The steps' and
    buttons' methods and args are not copied: the script reads them from the drawn figure
    (``div.layout``), so the page carries them once and no figure's whole JSON is parsed before
    the page is ready (on chapter 8 that parse was ~45 ms before DOMContentLoaded).

    Args:
        layout: a plotly figure's layout (a dict, as in the notebook's JSON).

    Returns:
        ``{"sliders": [{"labels", "active", "prefix"}, ...], "menus": [{"index", "labels"}, ...]}``,
        or None when the figure has no slider and no "buttons" updatemenu.
    """
    sliders = [
        {
            "labels": [step.get("label") for step in slider.get("steps") or []],
            "active": slider.get("active") or 0,
            "prefix": (slider.get("currentvalue") or {}).get("prefix") or "",
        }
        for slider in layout.get("sliders") or []
    ]
    menus = [
        {"index": i, "labels": [button.get("label") for button in menu["buttons"]]}
        for i, menu in enumerate(layout.get("updatemenus") or [])
        if menu.get("buttons") and menu.get("type") == "buttons"
    ]
    if not sliders and not menus:
        return None
    return {"sliders": sliders, "menus": menus}


def figure_html(figure: dict, div_id: str) -> str:
    """The HTML for one figure: a div, its JSON (script-safe), and its caption."""
    meta = figure.get("layout", {}).get("meta") or {}
    if not isinstance(meta, dict):
        meta = {}
    height = figure.get("layout", {}).get("height") or DEFAULT_HEIGHT
    caption = meta.get("caption")
    alt = meta.get("alt") or caption or "Interactive figure"
    payload = json.dumps(
        compact_numbers(
            {
                "data": figure.get("data", []),
                "layout": figure.get("layout", {}),
                "frames": figure.get("frames", []),
            }
        ),
        separators=(",", ":"),
        sort_keys=True,
        ensure_ascii=False,
    )
    keys = keyboard_summary(figure.get("layout", {}))
    keys_json = "" if keys is None else json.dumps(keys, separators=(",", ":"), ensure_ascii=False)
    keys_attr = f' data-keys="{html.escape(keys_json)}"' if keys_json else ""
    # Side-by-side panels stack on a narrow column (bookext/narrow.py, applied by bookplot.js).
    stacked = stacked_update(figure)
    if stacked is not None:
        stacked = {"below": NARROW_WIDTH, **compact_numbers(stacked)}
        keys_attr += f' data-narrow="{html.escape(json.dumps(stacked, separators=(",", ":")))}"'
    # Inside <script>, "</" would end the element early; "<\/" is the same string to JSON.
    payload = payload.replace("</", "<\\/")
    parts = [
        f'<figure class="bookplot" id="{div_id}-figure">',
        # The figure's height is reserved before it is drawn, so the page does not jump.
        # role="figure" (not "img", whose children are presentational): the alt text stays the
        # figure's name and plotly's slider, buttons and the keyboard slider inside stay operable.
        f'<div class="bookplot-graph" id="{div_id}" role="figure" aria-label="{html.escape(alt)}"'
        + (f' aria-describedby="{div_id}-caption"' if caption else "")
        + keys_attr
        + f' style="height:{int(height)}px">'
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
        docname = _docname(renderer)
        missing = unsupported_trace_types(figure)
        if missing:
            LOGGER.warning(
                "%s, cell %s: plotly trace type(s) %s are not in the site's plotly.js bundle "
                "(it draws %s; add them in scripts/plotly_bundle/entry.js and rebuild); the figure "
                "would stay blank on the website",
                docname,
                data.cell_index,
                sorted(missing),
                ", ".join(sorted(BUNDLE_TRACES)),
                type="bookext",
                subtype="plotly_trace",
            )
        div_id = f"bookplot-{_slug(docname)}-{data.cell_index}-{data.output_index}"
        raw = nodes.raw("", figure_html(figure, div_id), format="html")
        raw["classes"].append(MARKER_CLASS)
        return [raw]


def trace_types(figure: dict) -> set[str]:
    """Every trace type a figure draws, in its data and in its animation frames."""
    traces = list(figure.get("data") or [])
    for frame in figure.get("frames") or []:
        traces += list(frame.get("data") or [])
    return {trace.get("type") or "scatter" for trace in traces}


def unsupported_trace_types(figure: dict) -> set[str]:
    """The trace types of ``figure`` that the site's plotly.js bundle cannot draw."""
    return trace_types(figure) - BUNDLE_TRACES


def _plotly_js_source() -> Path:
    """The vendored bundle, after checking it is intact and matches the installed plotly."""
    import hashlib

    import plotly.offline

    if not PLOTLY_BUNDLE.is_file():
        raise FileNotFoundError(f"the vendored plotly.js bundle is missing: {PLOTLY_BUNDLE}")
    digest = hashlib.sha256(PLOTLY_BUNDLE.read_bytes()).hexdigest()
    if digest != PLOTLY_BUNDLE_SHA256:
        raise ValueError(
            f"{PLOTLY_BUNDLE} has SHA-256 {digest}, expected {PLOTLY_BUNDLE_SHA256}: "
            "rebuild it as scripts/plotly_bundle/README.md says"
        )
    installed = plotly.offline.get_plotlyjs_version()
    if installed != PLOTLY_BUNDLE_VERSION:
        raise ValueError(
            f"plotly ships plotly.js {installed} but the vendored bundle is "
            f"{PLOTLY_BUNDLE_VERSION}: rebuild it from plotly.js@{installed} "
            "(scripts/plotly_bundle/README.md) and update PLOTLY_BUNDLE_VERSION/SHA256"
        )
    return PLOTLY_BUNDLE


def _add_static(app: Any) -> None:
    """Put plotly.min.js and bookplot.js/css in a build-local static folder Sphinx copies once."""
    static = Path(app.doctreedir).parent / "bookext_static"
    static.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(_plotly_js_source(), static / PLOTLY_JS_NAME)
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
        # Added in html-page-context, the script goes on this page only. plotly.js is not a script
        # of the page: bookplot.js loads it (one URL for every page, so it is cached) once
        # DOMContentLoaded has fired, so it never holds up the text and math of the first screen.
        app.add_js_file("bookplot.js", loading_method="defer", **{"data-plotly": PLOTLY_JS_NAME})


# --------------------------------------------------------------------------- figure margins
# plotly's automargin draws a figure, measures its tick labels and titles, widens the margins and
# draws the whole figure again: on this site that second draw was more than half of every figure's
# cost. At the end of the build each page is opened in headless Chromium at these viewport widths
# (the benchmark's and the tests' first), every figure is drawn by the site's own bookplot.js, and
# the margins plotly settled on are written on its div as data-margins="column-width:l,r,t,b";
# bookplot.js starts from them when the reader's column has that width, so plotly draws once and
# arrives at the same figure. Without Chromium (or Playwright) the build skips this and the
# figures are drawn as before.
MARGIN_VIEWPORT_WIDTHS = (1280, 1920)
_GRAPH_DIV = re.compile(
    r'(<div class="bookplot-graph" id="(?P<id>[^"]+)")(?: data-margins="[^"]*")?'
)
_MEASURE_JS = """async () => {
  const out = {};
  for (const div of document.querySelectorAll(".bookplot-graph")) {
    div.scrollIntoView({block: "center"});
    // A figure not drawn within 30 s keeps no margins (drawn twice, as before), rather than
    // holding the build for ever (a build on a loaded machine waited here for 30 minutes).
    await new Promise((resolve) => {
      if (div.dataset.drawn) resolve();
      else div.addEventListener("bookplot:drawn", resolve, {once: true});
      setTimeout(resolve, 30000);
    });
    if (!div.dataset.drawn || !div._fullLayout) continue;
    const z = div._fullLayout._size;
    out[div.id] = [div.clientWidth, z.l, z.r, z.t, z.b].map(Math.round);
  }
  return out;
}"""


def with_margins(page_html: str, margins: dict[str, list[list[int]]]) -> str:
    """``page_html`` with each figure div's ``data-margins`` set from ``margins`` (id -> entries).

    Each entry is ``[column_width, l, r, t, b]``; entries of the same width are written once. A
    div not in ``margins`` loses any old ``data-margins`` (its figure may have changed).
    """

    def attr(match: re.Match) -> str:
        entries = margins.get(match.group("id")) or []
        seen: dict[int, list[int]] = {}
        for width, *sides in entries:
            seen.setdefault(int(width), [int(x) for x in sides])
        if not seen:
            return match.group(1)
        text = " ".join(f"{w}:{','.join(map(str, v))}" for w, v in sorted(seen.items()))
        return f'{match.group(1)} data-margins="{text}"'

    return _GRAPH_DIV.sub(attr, page_html)


def measure_margins(site: Path, pages: list[Path]) -> dict[Path, dict[str, list[list[int]]]]:
    """Every figure's settled margins, per page, at each of ``MARGIN_VIEWPORT_WIDTHS``."""
    from playwright.sync_api import sync_playwright

    from bookext.localsite import CHROMIUM_ARGS, VIEWPORT, find_chromium, serve_site

    chromium = find_chromium()
    if chromium is None:
        raise FileNotFoundError("no Chromium")
    found: dict[Path, dict[str, list[list[int]]]] = {}
    with serve_site(site) as base, sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium, args=list(CHROMIUM_ARGS))
        try:
            for width in MARGIN_VIEWPORT_WIDTHS:
                context = browser.new_context(
                    viewport={"width": width, "height": VIEWPORT["height"]}
                )
                context.route(
                    "**/*",
                    lambda r: r.continue_() if r.request.url.startswith(base) else r.abort(),
                )
                context.add_init_script("window.bookplotMeasuring = true;")
                tab = context.new_page()
                for page in pages:
                    tab.goto(f"{base}/{page.relative_to(site).as_posix()}")
                    for div_id, entry in tab.evaluate(_MEASURE_JS).items():
                        found.setdefault(page, {}).setdefault(div_id, []).append(entry)
                context.close()
        finally:
            browser.close()
    return found


_FIGURE_PARTS = re.compile(
    r'<div class="bookplot-graph"[^>]*>|<script type="application/json" class="bookplot-data"'
    r"[^>]*>.*?</script>",
    re.S,
)
_ASSET_REF = re.compile(r'<(?:link|script)\b[^>]*?\b(?:href|src)="([^"#?]+)(?:\?[^"]*)?"')
_MARGIN_CACHE = "bookplot-margins.json"


def margin_cache_key(site: Path, page: Path, page_html: str, file_hashes: dict[Path, str]) -> str:
    """What a page's measured margins depend on, hashed: a new key means measure it again.

    Its figures (each div, less its data-margins, and each figure's JSON), the contents of every
    stylesheet and script of the site the page loads (fonts and column width come from the CSS,
    the drawing from bookplot.js and plotly.js) and the viewports measured. ``file_hashes``
    caches the hashes of files across pages.
    """
    digest = hashlib.sha256(repr((MARGIN_VIEWPORT_WIDTHS, _MEASURE_JS)).encode())
    for part in _FIGURE_PARTS.findall(page_html):
        digest.update(re.sub(r' data-margins="[^"]*"', "", part).encode())
    for ref in sorted(set(_ASSET_REF.findall(page_html))):
        path = (page.parent / ref).resolve()
        if "://" in ref or not path.is_file() or site.resolve() not in path.parents:
            continue
        if path not in file_hashes:
            file_hashes[path] = hashlib.sha256(path.read_bytes()).hexdigest()
        digest.update(f"{ref}={file_hashes[path]}".encode())
    return digest.hexdigest()


def cached_margins(
    site: Path, pages: list[Path], cache: Path
) -> dict[Path, dict[str, list[list[int]]]]:
    """``measure_margins`` for the pages whose key changed since the last build; the rest from
    ``cache`` (a JSON file outside the site, rewritten with every page's key and margins)."""
    try:
        old = json.loads(cache.read_text())
    except (OSError, ValueError):
        old = {}
    file_hashes: dict[Path, str] = {}
    keys = {p: margin_cache_key(site, p, p.read_text(), file_hashes) for p in pages}
    found: dict[Path, dict[str, list[list[int]]]] = {}
    stale = []
    for page in pages:
        entry = old.get(page.relative_to(site).as_posix())
        if isinstance(entry, dict) and entry.get("key") == keys[page]:
            found[page] = entry["margins"]
        else:
            stale.append(page)
    LOGGER.info("bookext: figure margins measured on %d of %d pages", len(stale), len(pages))
    if stale:
        found.update(measure_margins(site, stale))
    cache.parent.mkdir(parents=True, exist_ok=True)
    cache.write_text(
        json.dumps(
            {
                p.relative_to(site).as_posix(): {"key": keys[p], "margins": found.get(p, {})}
                for p in pages
            }
        )
    )
    return found


def _on_build_finished(app: Any, exc: Exception | None) -> None:
    if exc is not None or app.builder.format != "html":
        return
    site = Path(app.outdir)
    pages = sorted(p for p in site.rglob("*.html") if 'class="bookplot-graph"' in p.read_text())
    if not pages:
        return
    try:
        # The cache lives with the doctrees (the build's cache), not in the published site.
        margins = cached_margins(site, pages, Path(app.doctreedir) / _MARGIN_CACHE)
    except Exception as err:  # no Chromium/Playwright here: figures are drawn as before
        LOGGER.info("bookext: figure margins not measured (%s); figures draw twice", err)
        return
    for page in pages:
        text = page.read_text()
        new = with_margins(text, margins.get(page, {}))
        if new != text:
            page.write_text(new)


def assets_digest() -> str:
    """SHA-256 over the files the site copies from ``bookext/assets`` and the plotly.js bundle.

    Sphinx copies static files only when it writes some page: with every page up to date
    (``no targets are out of date``) an edited ``bookplot.js`` would stay old in the site. As the
    value of an ``html`` config setting (``bookext_assets_digest``), a change to any of these
    files makes every page out of date, so the next build writes them and copies the new files.
    """
    import hashlib

    digest = hashlib.sha256()
    for path in sorted([*(a for a in ASSETS.iterdir() if a.is_file()), PLOTLY_BUNDLE]):
        digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def _on_config_inited(app: Any, config: Any) -> None:
    config.bookext_assets_digest = assets_digest()


def setup(app: Any) -> dict:
    app.setup_extension("bookext.pagespeed")
    app.add_config_value("bookext_assets_digest", "", "html")
    app.connect("config-inited", _on_config_inited)
    app.connect("builder-inited", _add_static)
    app.connect("html-page-context", _on_page_context)
    # After pagespeed's rewriting (priority 800), so the pages measured are the pages served.
    app.connect("build-finished", _on_build_finished, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True, "version": "1.0"}
