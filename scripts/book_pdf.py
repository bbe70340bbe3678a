"""The whole book as one PDF: Chromium prints every page of the built site, pypdf joins them.

Usage (``make pdf``, after ``make book``)::

    python scripts/book_pdf.py [SITE] [--out PATH] [--pages DOCNAME ...]

Pages come in the order of ``_toc.yml`` (the root page, then each part's chapters), each printed
with the site's own print stylesheet (``bookext/assets/print.css``: numbered titles, no slider
tracks or key hints) after every figure on it has been drawn: the site draws a figure only when it
nears the screen (``bookext/assets/bookplot.js``) and on ``beforeprint``, which this script sends.
A page whose figures do not all draw stops the build with the page's name: a PDF with blank
figures is worse than none. The joined file has a bookmark per part and per page, titled as the
page is (``8. Rotary position embedding (RoPE)``). Offline: the site is served from this machine.
"""

from __future__ import annotations

import argparse
import io
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bookext.localsite import CHROMIUM_ARGS, find_chromium, serve_site  # noqa: E402

MARGIN = {"top": "14mm", "bottom": "16mm", "left": "14mm", "right": "14mm"}
# Chromium fills the page's title and numbers into these spans (numbers restart on every page of
# the book, so the footer names the page too).
FOOTER = (
    '<div style="font-size:8px; width:100%; text-align:center; color:#555;">'
    '<span class="title"></span> · <span class="pageNumber"></span>/<span class="totalPages"></span>'
    "</div>"
)
DRAWN = "[...document.querySelectorAll('.bookplot-graph')].every(d => d.querySelector('.main-svg'))"


@dataclass(frozen=True)
class BookPage:
    """One page of the book: its Sphinx docname and the part it belongs to (None for the root)."""

    docname: str
    part: str | None


@dataclass(frozen=True)
class PrintedPage:
    """A printed page: its title as the site shows it, the figures drawn on it, the PDF bytes."""

    page: BookPage
    title: str
    figures: int
    pdf: bytes


def book_pages(toc: Path) -> list[BookPage]:
    """The pages of a jb-book ``_toc.yml`` in reading order: the root, then each part's chapters."""
    data = yaml.safe_load(toc.read_text(encoding="utf-8"))
    if not isinstance(data, dict) or "root" not in data:
        raise ValueError(f"{toc}: expected a jb-book table of contents with a 'root' entry")
    pages = [BookPage(str(data["root"]), None)]
    for part in data.get("parts", []):
        caption = str(part.get("caption", "")) or None
        for chapter in part.get("chapters", []):
            pages.append(BookPage(str(chapter["file"]), caption))
    return pages


def print_page(browser_page, url: str, page: BookPage, timeout_s: float = 180.0) -> PrintedPage:
    """Print one page of the served site to PDF, after every figure on it has been drawn."""
    browser_page.goto(f"{url}/{page.docname}.html", wait_until="load")
    browser_page.emulate_media(media="print", color_scheme="light")
    # What a reader's Ctrl+P fires: the site then draws every figure (bookplot.js).
    browser_page.evaluate("window.dispatchEvent(new Event('beforeprint'))")
    figures = browser_page.evaluate("document.querySelectorAll('.bookplot-graph').length")
    try:
        browser_page.wait_for_function(DRAWN, timeout=timeout_s * 1000)
    except Exception as error:  # playwright's TimeoutError
        drawn = browser_page.evaluate(
            "[...document.querySelectorAll('.bookplot-graph')]"
            ".filter(d => d.querySelector('.main-svg')).length"
        )
        raise RuntimeError(
            f"{page.docname}: only {drawn} of {figures} figures drew within {timeout_s:.0f} s"
        ) from error
    title = browser_page.evaluate(
        "(() => { const h = document.querySelector('.bd-article h1');"
        " return h ? h.textContent.replace(/#$/, '').trim() : document.title; })()"
    )
    pdf = browser_page.pdf(
        format="A4",
        margin=MARGIN,
        print_background=True,
        display_header_footer=True,
        header_template="<span></span>",
        footer_template=FOOTER,
    )
    return PrintedPage(page, " ".join(title.split()), int(figures), pdf)


def join(printed: list[PrintedPage], title: str) -> bytes:
    """One PDF from the printed pages, with a bookmark per part and per page."""
    from pypdf import PdfReader, PdfWriter

    writer = PdfWriter()
    parts: dict[str, object] = {}
    for item in printed:
        first = len(writer.pages)
        for sheet in PdfReader(io.BytesIO(item.pdf)).pages:
            writer.add_page(sheet)
        parent = None
        if item.page.part is not None:
            if item.page.part not in parts:
                parts[item.page.part] = writer.add_outline_item(
                    title=item.page.part, page_number=first
                )
            parent = parts[item.page.part]
        writer.add_outline_item(title=item.title, page_number=first, parent=parent)
    writer.add_metadata({"/Title": title})
    writer.page_mode = "/UseOutlines"
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def print_pages(browser, url: str, pages: list[BookPage]) -> list[PrintedPage]:
    """Print ``pages`` of the site served at ``url`` with a launched playwright ``browser``."""
    printed = []
    browser_page = browser.new_page()
    try:
        for page in pages:
            start = time.perf_counter()
            item = print_page(browser_page, url, page)
            printed.append(item)
            print(
                f"{page.docname}: {item.title!r}, {item.figures} figures, "
                f"{time.perf_counter() - start:.1f} s",
                flush=True,
            )
    finally:
        browser_page.close()
    return printed


def build_pdf(site: Path, pages: list[BookPage], out: Path) -> list[PrintedPage]:
    """Print ``pages`` of the built ``site`` with Chromium and write them as one PDF to ``out``."""
    from playwright.sync_api import sync_playwright

    if not (site / "index.html").is_file():
        raise FileNotFoundError(f"{site} has no index.html: build the book first (make book)")
    chromium = find_chromium()
    if chromium is None:
        raise FileNotFoundError("no Chromium found (make chromium installs Debian's)")
    with serve_site(site) as url, sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium, args=list(CHROMIUM_ARGS))
        try:
            printed = print_pages(browser, url, pages)
        finally:
            browser.close()
    title = printed[0].title if printed else "book"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_bytes(join(printed, title))
    return printed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("site", nargs="?", default=str(ROOT / "_build" / "html"))
    parser.add_argument("--out", default=None, help="default: SITE/book.pdf")
    parser.add_argument("--toc", default=str(ROOT / "_toc.yml"))
    parser.add_argument("--pages", nargs="*", help="docnames to print (default: the whole book)")
    args = parser.parse_args(argv)
    site = Path(args.site)
    pages = book_pages(Path(args.toc))
    if args.pages:
        known = {p.docname: p for p in pages}
        unknown = [d for d in args.pages if d not in known]
        if unknown:
            parser.error(f"not in {args.toc}: {', '.join(unknown)}")
        pages = [known[d] for d in args.pages]
    out = Path(args.out) if args.out else site / "book.pdf"
    start = time.perf_counter()
    printed = build_pdf(site, pages, out)
    size = out.stat().st_size / 2**20
    print(
        f"wrote {out}: {len(printed)} pages of the book, {size:.1f} MiB, "
        f"{time.perf_counter() - start:.0f} s"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
