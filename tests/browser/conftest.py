"""Fixtures for the real-browser tests: the built site served on localhost, and headless Chromium.

These tests need a built site: ``_build/html`` (``make build-strict``), or the folder in
``$BOOK_SITE``; without one, every test that reads the site fails at once saying so. They also need
Debian's ``chromium`` (``/usr/bin/chromium``, or the path in ``$CHROMIUM``). Playwright drives that browser; it never downloads one of its own.
Every request to a host other than the local server is blocked and recorded: the site must read
offline.
"""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import urlparse

import pytest

from bookext.localsite import CHROMIUM_ARGS, VIEWPORT, find_chromium, serve_site

ROOT = Path(__file__).resolve().parents[2]
# BOOK_SITE lets a second build (e.g. jupyter-book build . --path-output /tmp/x) be tested.
SITE = Path(os.environ.get("BOOK_SITE", ROOT / "_build" / "html"))
NO_SITE = (
    f"no built site at {SITE}: build the site first (`make build-strict`), or set $BOOK_SITE to "
    "a built site's html folder"
)


def chromium_path() -> str:
    path = find_chromium()
    if path is None:
        pytest.fail(
            "Chromium not found: install Debian's chromium (apt-get install chromium) or set "
            "$CHROMIUM; `make test` does this for you when run as root."
        )
    return path


def site_pages() -> list[str]:
    """Every HTML page of the built site, relative to its root (index.html is a redirect)."""
    if not (SITE / "intro.html").is_file():
        return []
    pages = []
    for path in sorted(SITE.rglob("*.html")):
        rel = path.relative_to(SITE).as_posix()
        if (
            rel.startswith(("_static/", "_sources/", "_sphinx_design_static/"))
            or rel == "index.html"
        ):
            continue
        pages.append(rel)
    return pages


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    """A test module that reads the built site (it imports SITE) fails clearly without one."""
    module = getattr(item, "module", None)
    if getattr(module, "SITE", None) is not None and not (SITE / "intro.html").is_file():
        pytest.fail(NO_SITE, pytrace=False)


@pytest.fixture(scope="session")
def site_url():
    if not (SITE / "intro.html").is_file():
        pytest.fail(NO_SITE, pytrace=False)
    with serve_site(SITE) as url:
        yield url


@pytest.fixture(scope="session")
def browser():
    from playwright import sync_api  # a pinned requirement: a failed import fails, never skips

    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=chromium_path(), args=list(CHROMIUM_ARGS)
        )
        yield browser
        browser.close()


#: A phone's screen in CSS pixels (an iPhone 12-15 held upright), for the phone tests.
PHONE = {"width": 390, "height": 844}


def phone_context(browser, site_url: str):
    """A touch browser context at :data:`PHONE` size that lets only the local site's requests
    through (a phone reader of the static site, offline)."""
    context = browser.new_context(viewport=PHONE, has_touch=True, is_mobile=True)
    local = site_url.split("//", 1)[1]
    context.route(
        "**/*", lambda r: r.continue_() if local in r.request.url.split("/")[2] else r.abort()
    )
    return context


class PageRecorder:
    """A browser page that records console errors, page errors and requests that leave the site."""

    def __init__(self, browser, site_url: str, color_scheme: str = "light"):
        self.context = browser.new_context(viewport=VIEWPORT, color_scheme=color_scheme)
        self.page = self.context.new_page()
        self.console_errors: list[str] = []
        self.external_requests: list[str] = []
        self.failed_requests: list[str] = []
        local_host = urlparse(site_url).netloc
        self.page.on(
            "console",
            lambda msg: self.console_errors.append(msg.text) if msg.type == "error" else None,
        )
        self.page.on("pageerror", lambda exc: self.console_errors.append(f"pageerror: {exc}"))
        self.page.on(
            "requestfailed",
            lambda req: (
                self.failed_requests.append(req.url)
                if urlparse(req.url).netloc == local_host
                else None
            ),
        )

        def route(route):
            if urlparse(route.request.url).netloc in (local_host, ""):
                route.continue_()
            else:
                self.external_requests.append(route.request.url)
                route.abort()

        self.page.route("**/*", route)

    def close(self) -> None:
        self.context.close()


@pytest.fixture
def recorder_factory(browser, site_url):
    made: list[PageRecorder] = []

    def make(color_scheme: str = "light") -> PageRecorder:
        rec = PageRecorder(browser, site_url, color_scheme)
        made.append(rec)
        return rec

    yield make
    for rec in made:
        rec.close()
