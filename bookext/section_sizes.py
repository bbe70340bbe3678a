"""Skipped sections get their measured height, so a page is as tall at load as once read (Sphinx extension).

``reading.css`` lets the browser skip the sections of a long page far from the screen
(``content-visibility: auto``); until a skipped section is first drawn it counts as its
``contain-intrinsic-size``. With one guess for all (1000 px) ch8 grew from 16,958 px to 36,674 px as
it was read, End landed in section 8.10 of 14 and the scrollbar jumped (issue 34).

At the end of the build each page with sections is opened in headless Chromium at the widths of
:data:`WIDTHS` (a phone, a tablet, a desktop), every section drawn, and each section's height at
each text-column width written into the page: ``data-sizes="column-width:height ..."``.
``bookpage.js`` then gives each section, before the page is drawn, the height measured at the
nearest column width (linearly between the two nearest), as ``contain-intrinsic-size: auto <h>px``
(``auto``: once drawn, the browser remembers its real size). Measurements are cached per page
(the page's HTML and the site's stylesheets and scripts hashed), so a rebuild that changes nothing
measures nothing; without Chromium the pages keep reading.css's guess.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any

from sphinx.util import logging

LOGGER = logging.getLogger(__name__)

# A phone, a tablet and a desktop (the theme's column is fixed above ~1200 px).
WIDTHS = (390, 820, 1280)
CACHE = "bookext-section-sizes.json"
_SECTION = re.compile(r'<section id="(?P<id>[^"]+)"(?: data-sizes="[^"]*")?')
# Every section of the article drawn, with the containment content-visibility: auto keeps on a
# drawn section (so margins do not collapse across its edge, as in the page as served).
_MEASURE_CSS = (
    ".bd-article section section{content-visibility:visible!important;"
    "contain:layout style paint!important}"
)
_MEASURE_JS = """async () => {
  await document.fonts.ready;
  const out = {};
  document.querySelectorAll('.bd-article section section[id]').forEach((s) => {
    const r = s.getBoundingClientRect();
    out[s.id] = [Math.round(r.width), Math.round(r.height)];
  });
  return out;
}"""


def with_sizes(page_html: str, sizes: dict[str, list[list[int]]]) -> str:
    """``page_html`` with each section's ``data-sizes`` from ``sizes`` (id -> [width, height]s)."""

    def attr(match: re.Match) -> str:
        entries = sorted({int(w): int(h) for w, h in sizes.get(match.group("id"), [])}.items())
        head = f'<section id="{match.group("id")}"'
        if not entries:
            return head
        return head + ' data-sizes="' + " ".join(f"{w}:{h}" for w, h in entries) + '"'

    return _SECTION.sub(attr, page_html)


def _strip(page_html: str) -> str:
    return re.sub(r' data-sizes="[^"]*"', "", page_html)


def cache_key(page_html: str, assets: str) -> str:
    return hashlib.sha256(
        (repr(WIDTHS) + _MEASURE_JS + assets + _strip(page_html)).encode()
    ).hexdigest()


def _assets_digest(site: Path) -> str:
    digest = hashlib.sha256()
    for path in sorted((site / "_static").rglob("*")):
        if path.suffix in (".css", ".js") and path.is_file():
            digest.update(path.name.encode() + hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()


def measure(site: Path, pages: list[Path]) -> dict[Path, dict[str, list[list[int]]]]:
    """Each page's section sizes at every width of :data:`WIDTHS`."""
    from playwright.sync_api import sync_playwright

    from bookext.localsite import CHROMIUM_ARGS, find_chromium, serve_site

    chromium = find_chromium()
    if chromium is None:
        raise FileNotFoundError("no Chromium")
    found: dict[Path, dict[str, list[list[int]]]] = {}
    with serve_site(site) as base, sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium, args=list(CHROMIUM_ARGS))
        try:
            for width in WIDTHS:
                context = browser.new_context(viewport={"width": width, "height": 900})
                context.route(
                    "**/*",
                    lambda r: r.continue_() if r.request.url.startswith(base) else r.abort(),
                )
                # Figures keep their reserved height; nothing needs drawing to measure the text.
                context.add_init_script("window.bookplotMeasuring = true;")
                tab = context.new_page()
                for page in pages:
                    tab.goto(f"{base}/{page.relative_to(site).as_posix()}")
                    tab.add_style_tag(content=_MEASURE_CSS)
                    for sid, entry in tab.evaluate(_MEASURE_JS).items():
                        found.setdefault(page, {}).setdefault(sid, []).append(entry)
                context.close()
        finally:
            browser.close()
    return found


def _on_build_finished(app: Any, exc: Exception | None) -> None:
    if exc is not None or app.builder.format != "html":
        return
    site = Path(app.outdir)
    pages = sorted(
        p
        for p in site.rglob("*.html")
        if p.relative_to(site).parts[0] not in ("_static", "_sources")
        and p.read_text(encoding="utf-8").count("<section id=") > 1
    )
    cache = Path(app.doctreedir) / CACHE
    try:
        old = json.loads(cache.read_text())
    except (OSError, ValueError):
        old = {}
    assets = _assets_digest(site)
    keys = {p: cache_key(p.read_text(encoding="utf-8"), assets) for p in pages}
    sizes: dict[Path, dict[str, list[list[int]]]] = {}
    stale = []
    for page in pages:
        entry = old.get(page.relative_to(site).as_posix())
        if isinstance(entry, dict) and entry.get("key") == keys[page]:
            sizes[page] = entry["sizes"]
        else:
            stale.append(page)
    LOGGER.info("bookext: section sizes measured on %d of %d pages", len(stale), len(pages))
    if stale:
        try:
            sizes.update(measure(site, stale))
        except Exception as err:  # no Chromium/Playwright here: reading.css's guess stays
            LOGGER.info("bookext: section sizes not measured (%s)", err)
            return
    cache.parent.mkdir(parents=True, exist_ok=True)
    cache.write_text(
        json.dumps(
            {
                p.relative_to(site).as_posix(): {"key": keys[p], "sizes": sizes.get(p, {})}
                for p in pages
            }
        )
    )
    for page in pages:
        text = page.read_text(encoding="utf-8")
        new = with_sizes(text, sizes.get(page, {}))
        if new != text:
            page.write_text(new, encoding="utf-8")


def setup(app: Any) -> dict:
    # After bookext.plotly_mime's margins (900): the pages measured are the pages served.
    app.connect("build-finished", _on_build_finished, priority=950)
    return {"parallel_read_safe": True, "parallel_write_safe": True, "version": "1.0"}
