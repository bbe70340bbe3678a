"""make pdf on the built site: each page prints with its numbered title, every figure drawn, no
controls, and the joined file bookmarks it (scripts/book_pdf.py, bookext/assets/print.css)."""

from __future__ import annotations

import importlib.util
import io
import sys

import pytest

from .conftest import ROOT, SITE

pytestmark = pytest.mark.browser

_spec = importlib.util.spec_from_file_location("book_pdf", ROOT / "scripts" / "book_pdf.py")
book_pdf = importlib.util.module_from_spec(_spec)
sys.modules["book_pdf"] = book_pdf
_spec.loader.exec_module(book_pdf)

# The intro and one chapter with sliders and play buttons (the whole book takes minutes: make pdf).
PAGES = ["intro", "chapters/08_rope"]


@pytest.fixture(scope="module")
def printed(browser, site_url):
    known = {p.docname: p for p in book_pdf.book_pages(ROOT / "_toc.yml")}
    return book_pdf.print_pages(browser, site_url, [known[d] for d in PAGES])


def _text(pdf: bytes) -> str:
    from pypdf import PdfReader

    return "\n".join(sheet.extract_text() for sheet in PdfReader(io.BytesIO(pdf)).pages)


def test_every_page_loads_its_print_stylesheet():
    for docname in PAGES:
        html = (SITE / f"{docname}.html").read_text(encoding="utf-8")
        assert "print.css" in html and 'media="print"' in html, docname


def test_a_chapter_prints_with_its_number_and_every_figure(printed):
    chapter = printed[1]
    assert chapter.title.startswith("8. "), chapter.title
    html = (SITE / "chapters/08_rope.html").read_text(encoding="utf-8")
    assert chapter.figures == html.count('class="bookplot-graph') > 0
    text = " ".join(_text(chapter.pdf).split())
    # the article's numbered h1, not the theme's unnumbered print title
    assert "8. Rotary position embedding (RoPE)" in text
    # plotly draws tick labels as text: the first figure's axes are in the PDF
    assert "pair index" in text


def test_controls_do_not_print(printed):
    text = _text(printed[1].pdf)
    assert "Home End" not in text  # the keyboard slider's key hint
    assert "❚❚" not in text  # plotly's pause button (its play button's ▶ is named in the prose)


def test_the_joined_pdf_bookmarks_each_page(printed):
    from pypdf import PdfReader

    reader = PdfReader(io.BytesIO(book_pdf.join(printed, printed[0].title)))
    titles = [item.title for item in reader.outline if not isinstance(item, list)]
    assert titles[0] == printed[0].title
    nested = [item.title for group in reader.outline if isinstance(group, list) for item in group]
    assert nested == ["8. Rotary position embedding (RoPE)"]


def test_the_site_carries_the_whole_book_pdf():
    """make test builds it after the site (make pdf); the intro links it."""
    from pypdf import PdfReader

    path = SITE / "book.pdf"
    assert path.is_file(), f"no {path}: run `make pdf` after building the site"
    assert 'href="book.pdf"' in (SITE / "intro.html").read_text(encoding="utf-8")
    reader = PdfReader(path)
    pages = book_pdf.book_pages(ROOT / "_toc.yml")
    entries = [
        item for group in reader.outline for item in (group if isinstance(group, list) else [group])
    ]
    parts = {p.part for p in pages if p.part}
    page_titles = [item.title for item in entries if item.title not in parts]
    assert len(page_titles) == len(pages)  # one bookmark per page of the book
    chapters = [p for p in pages if p.docname.startswith("chapters/")]
    numbered = [t for t in page_titles if t.split(". ", 1)[0].isdigit()]
    assert [int(t.split(". ", 1)[0]) for t in numbered] == list(range(1, len(chapters) + 1))
    first_sheets = [reader.get_destination_page_number(item) for item in entries]
    assert first_sheets == sorted(first_sheets) and len(reader.pages) > len(pages)
