"""scripts/book_pdf.py (make pdf): the book's pages in reading order, joined with bookmarks.

The printing itself (Chromium on the built site) is tested in tests/browser/test_pdf.py.
"""

from __future__ import annotations

import importlib.util
import io
import sys
from pathlib import Path

import pytest
from pypdf import PdfReader, PdfWriter

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("book_pdf", ROOT / "scripts" / "book_pdf.py")
book_pdf = importlib.util.module_from_spec(_spec)
sys.modules["book_pdf"] = book_pdf
_spec.loader.exec_module(book_pdf)


def test_book_pages_follow_the_toc():
    pages = book_pdf.book_pages(ROOT / "_toc.yml")
    assert pages[0] == book_pdf.BookPage("intro", None)
    docnames = [p.docname for p in pages]
    chapters = sorted(
        p.relative_to(ROOT).with_suffix("").as_posix() for p in ROOT.glob("chapters/*.ipynb")
    )
    assert [d for d in docnames if d.startswith("chapters/")] == chapters  # every chapter, in order
    assert len(set(docnames)) == len(docnames)
    assert {p.part for p in pages[1:]} >= {"Part I — Embeddings"}
    assert all(p.part for p in pages[1:])  # every page after the root sits in a part


def test_book_pages_rejects_a_toc_without_root(tmp_path):
    toc = tmp_path / "_toc.yml"
    toc.write_text("format: jb-book\nparts: []\n", encoding="utf-8")
    with pytest.raises(ValueError, match="root"):
        book_pdf.book_pages(toc)


def _blank_pdf(sheets: int) -> bytes:
    writer = PdfWriter()
    for _ in range(sheets):
        writer.add_blank_page(width=595, height=842)
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def test_join_keeps_every_sheet_and_bookmarks_each_page_at_its_first_sheet():
    pages = [
        book_pdf.PrintedPage(book_pdf.BookPage("intro", None), "The book", 0, _blank_pdf(2)),
        book_pdf.PrintedPage(book_pdf.BookPage("chapters/a", "Part I"), "1. A", 3, _blank_pdf(3)),
        book_pdf.PrintedPage(book_pdf.BookPage("chapters/b", "Part I"), "2. B", 1, _blank_pdf(1)),
        book_pdf.PrintedPage(book_pdf.BookPage("chapters/c", "Part II"), "3. C", 0, _blank_pdf(4)),
    ]
    reader = PdfReader(io.BytesIO(book_pdf.join(pages, "The book")))
    assert len(reader.pages) == 2 + 3 + 1 + 4
    assert reader.metadata.title == "The book"

    def flat(items, depth=0):
        for item in items:
            if isinstance(item, list):
                yield from flat(item, depth + 1)
            else:
                yield depth, item.title, reader.get_destination_page_number(item)

    assert list(flat(reader.outline)) == [
        (0, "The book", 0),
        (0, "Part I", 2),
        (1, "1. A", 2),
        (1, "2. B", 5),
        (0, "Part II", 6),
        (1, "3. C", 6),
    ]
