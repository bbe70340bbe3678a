"""Sitemap and OpenGraph metadata (bookext.social): the pieces, and the built site.

The built-site checks are marked ``browser`` (they run where the site is built, as the browser tests
do; ``BOOK_SITE`` points at another build).
"""

from __future__ import annotations

import base64
import io
import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import plotly.graph_objects as go
import plotly.io as pio
import pytest
from bs4 import BeautifulSoup
from docutils.core import publish_doctree
from PIL import Image

from bookext.notebook_png import check_picture, render_png
from bookext.social import describe, first_figure_png, meta_tags, page_url, sitemap_xml
from lib.viz import apply_theme

ROOT = Path(__file__).resolve().parents[1]
SITE_DEFAULT = ROOT / "_build" / "html"


def notebook(tmp_path: Path, outputs: list[dict]) -> Path:
    nb = {
        "cells": [{"cell_type": "code", "source": "", "metadata": {}, "outputs": outputs}],
        "metadata": {},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    path = tmp_path / "chapter.ipynb"
    path.write_text(json.dumps(nb))
    return path


def figure(title: str) -> go.Figure:
    fig = go.Figure(go.Scatter(x=[0, 1, 2], y=[0, 2, 1], name="a"))
    return apply_theme(fig, title=title, caption="A caption.")


def display(data: dict) -> dict:
    return {"output_type": "display_data", "data": data, "metadata": {}}


def test_first_figure_png_takes_the_saved_picture(tmp_path):
    png = render_png(figure("one"))
    other = render_png(figure("two"))
    plotly_json = json.loads(pio.to_json(figure("one")))
    path = notebook(
        tmp_path,
        [
            display({"text/plain": "x"}),
            display(
                {
                    "application/vnd.plotly.v1+json": plotly_json,
                    "image/png": base64.b64encode(png).decode(),
                }
            ),
            display(
                {
                    "application/vnd.plotly.v1+json": plotly_json,
                    "image/png": base64.b64encode(other).decode(),
                }
            ),
        ],
    )
    assert first_figure_png(path) == png


def test_first_figure_png_falls_back_to_drawing_the_plotly_json(tmp_path):
    plotly_json = json.loads(pio.to_json(figure("drawn")))
    path = notebook(tmp_path, [display({"application/vnd.plotly.v1+json": plotly_json})])
    png = first_figure_png(path)
    assert png == render_png(plotly_json)
    check_picture(png)


def test_first_figure_png_without_figures_or_file(tmp_path):
    assert first_figure_png(notebook(tmp_path, [display({"text/plain": "1"})])) is None
    assert first_figure_png(tmp_path / "missing.ipynb") is None


def test_description_is_the_first_real_paragraph_shortened():
    doctree = publish_doctree(
        "Title\n=====\n\nShort.\n\n" + "word " * 80 + "\n\nLater paragraph.\n"
    )
    text = describe(doctree, limit=60)
    assert text.startswith("word word") and text.endswith("…") and len(text) <= 60
    assert describe(publish_doctree("A paragraph that is long enough to describe a page.")) == (
        "A paragraph that is long enough to describe a page."
    )
    assert describe(None) == ""


def test_page_urls():
    base = "https://example.org/book/"
    assert page_url(base, "chapters/08_rope") == base + "chapters/08_rope.html"
    assert page_url(base.rstrip("/"), "intro") == base + "intro.html"
    assert page_url(base, "chapters/08_rope", "dirhtml") == base + "chapters/08_rope/"


def test_meta_tags_escape_and_choose_the_card():
    tags = meta_tags(
        title='A "quoted" <title>',
        description="d & e",
        url="https://x/p.html",
        site_name="Book",
        image_url="https://x/i.png",
    )
    soup = BeautifulSoup(tags, "html.parser")
    got = {m.get("property") or m.get("name"): m["content"] for m in soup.find_all("meta")}
    assert got["og:title"] == 'A "quoted" <title>' and got["og:description"] == "d & e"
    assert got["og:image"] == "https://x/i.png" and got["twitter:card"] == "summary_large_image"
    bare = meta_tags(title="t", description="", url="", site_name="s", image_url=None)
    soup = BeautifulSoup(bare, "html.parser")
    names = {m.get("property") or m.get("name") for m in soup.find_all("meta")}
    assert "og:image" not in names and "og:url" not in names and "og:description" not in names


def test_sitemap_is_valid_sorted_and_unique():
    xml = sitemap_xml(["https://x/b.html", "https://x/a.html?q=1&r=2", "https://x/b.html"])
    root = ET.fromstring(xml)
    ns = "{http://www.sitemaps.org/schemas/sitemap/0.9}"
    locs = [u.find(f"{ns}loc").text for u in root.findall(f"{ns}url")]
    assert locs == ["https://x/a.html?q=1&r=2", "https://x/b.html"]


# ------------------------------------------------------------------------------------------------
# The built site


def _site() -> Path:
    import os

    return Path(os.environ.get("BOOK_SITE", SITE_DEFAULT))


def _baseurl() -> str:
    import yaml

    return yaml.safe_load((ROOT / "_config.yml").read_text())["html"]["baseurl"]


def _chapters() -> list[str]:
    return [
        f"{m}.html" for m in re.findall(r"file:\s*(chapters/\S+)", (ROOT / "_toc.yml").read_text())
    ]


@pytest.mark.browser
def test_built_site_has_a_sitemap_of_every_page():
    site = _site()
    root = ET.fromstring((site / "sitemap.xml").read_text())
    ns = "{http://www.sitemaps.org/schemas/sitemap/0.9}"
    locs = {u.find(f"{ns}loc").text for u in root.findall(f"{ns}url")}
    base = _baseurl()
    for page in ["intro.html", *_chapters()]:
        assert base + page in locs, f"sitemap.xml lacks {page}"
        assert (site / page).is_file()


@pytest.mark.browser
@pytest.mark.parametrize("page", _chapters())
def test_built_chapter_has_opengraph_tags_and_its_figure_image(page):
    site = _site()
    soup = BeautifulSoup((site / page).read_text(encoding="utf-8"), "html.parser")
    got = {
        m.get("property") or m.get("name"): m.get("content")
        for m in soup.find_all("meta")
        if m.get("property", "").startswith("og:") or m.get("name", "").startswith("twitter:")
    }
    assert got.get("og:title") and got.get("og:description"), f"{page}: {got}"
    assert got["og:url"] == _baseurl() + page
    image = got.get("og:image")
    assert image and image.startswith(_baseurl() + "_static/social/"), f"{page}: og:image {image}"
    png = (site / image.removeprefix(_baseurl())).read_bytes()
    check_picture(png)
    width, height = Image.open(io.BytesIO(png)).size
    assert width >= 600 and height >= 300
    # The image is the chapter's first figure, drawn from its notebook.
    source = ROOT / page.replace(".html", ".ipynb")
    assert png == first_figure_png(source)
    # The page itself never loads it (nor any figure PNG): the site's weight is unchanged.
    html = (site / page).read_text(encoding="utf-8")
    assert "data:image/png" not in html
    assert not [img for img in soup.find_all("img") if "social" in (img.get("src") or "")]
