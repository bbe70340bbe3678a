"""Every internal link, script, stylesheet and image of the built site points at something that exists."""

from __future__ import annotations

from urllib.parse import unquote, urldefrag, urlparse

import pytest

from .conftest import SITE, site_pages

pytestmark = pytest.mark.browser

PAGES = site_pages()


def _ids(path, cache={}):  # noqa: B006 - a deliberate per-process cache
    from bs4 import BeautifulSoup

    if path not in cache:
        soup = BeautifulSoup(path.read_text(encoding="utf-8"), "html.parser")
        cache[path] = {tag["id"] for tag in soup.find_all(id=True)} | {
            tag["name"] for tag in soup.find_all("a", attrs={"name": True})
        }
    return cache[path]


@pytest.mark.parametrize("page", PAGES)
def test_internal_links_resolve(page):
    from bs4 import BeautifulSoup

    source = SITE / page
    soup = BeautifulSoup(source.read_text(encoding="utf-8"), "html.parser")
    broken = []
    for tag, attr in (("a", "href"), ("link", "href"), ("script", "src"), ("img", "src")):
        for element in soup.find_all(tag, attrs={attr: True}):
            url = element[attr]
            parsed = urlparse(url)
            if parsed.scheme or parsed.netloc or url.startswith(("mailto:", "javascript:")):
                continue
            target_url, fragment = urldefrag(url)
            target = (source.parent / unquote(parsed.path)).resolve() if target_url else source
            if target.is_dir():
                target = target / "index.html"
            if not target.is_file():
                broken.append(url)
            elif fragment and target.suffix == ".html" and unquote(fragment) not in _ids(target):
                broken.append(url)
    assert not broken, f"{page}: broken internal links {sorted(set(broken))}"
