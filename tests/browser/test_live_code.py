"""Live Code (Thebe) says what happened when it cannot start (issue 34).

The site offers Live Code (``launch_buttons.thebe`` in ``_config.yml``): its button loads Thebe from
unpkg.com, then asks mybinder.org for a kernel. Neither can be reached here, which is what a reader
offline (or behind a filter) meets. sphinx-thebe shows "Loading thebe from CDN..." and nothing
more; ``bookext/assets/bookpage.js`` says, in a status note under the title, that Live Code needs
the internet, that the rest of the page works without it and how to run the code instead, and the
button tries again. A load that hangs gets a note after a while; a Thebe that loads gets none.
"""

from __future__ import annotations

import re

import pytest
import yaml

from bookext.localsite import VIEWPORT

from .conftest import ROOT, SITE, site_pages

pytestmark = pytest.mark.browser

CONFIG = yaml.safe_load((ROOT / "_config.yml").read_text())
CHAPTERS = [p for p in site_pages() if p.startswith("chapters/")]
PAGE = "chapters/08_rope.html"
THEBE_JS = re.compile(r"https://unpkg\.com/thebe@[^/]+/lib/index\.js")
NOTE = "#bookthebe-status"


def test_the_site_offers_live_code():
    # The tests below are about this button: they matter only while the site offers it.
    assert CONFIG["launch_buttons"]["thebe"] is True


@pytest.mark.parametrize("page", CHAPTERS)
def test_every_chapter_has_the_live_code_button(page):
    html = (SITE / page).read_text(encoding="utf-8")
    assert re.search(r'<button[^>]*onclick="initThebeSBT\(\)"', html), f"{page}: no Live Code"


def click_live_code(p) -> None:
    p.locator(".dropdown-launch-buttons button").first.click()
    button = p.locator("button.btn-launch-thebe")
    button.wait_for(state="visible", timeout=5000)
    button.click()


def test_live_code_offline_says_what_happened_and_tries_again(recorder_factory, site_url):
    rec = recorder_factory()  # every request to another host is aborted, as offline
    p = rec.page
    p.goto(f"{site_url}/{PAGE}", wait_until="load")
    click_live_code(p)
    note = p.locator(NOTE)
    note.wait_for(state="visible", timeout=10_000)
    text = note.inner_text()
    assert note.get_attribute("role") == "status"
    assert "needs an internet connection" in text and "unpkg.com" in text, text
    assert "works without it" in text and "download the notebook" in text, text
    button = p.locator(".thebe-launch-button")
    assert "Loading" not in button.inner_text(), "the button still says it is loading"
    assert "try again" in button.inner_text()
    # The button tries again: a second request for Thebe, and the same clear note after it.
    asked = [u for u in rec.external_requests if THEBE_JS.fullmatch(u)]
    assert len(asked) == 1, rec.external_requests
    button.click()
    p.wait_for_function(
        "() => document.getElementById('bookthebe-status').dataset.state === 'failed'",
        timeout=10_000,
    )
    assert len([u for u in rec.external_requests if THEBE_JS.fullmatch(u)]) == 2
    assert "needs an internet connection" in note.inner_text()


def test_live_code_that_hangs_says_it_is_waiting(browser, site_url):
    context = browser.new_context(viewport=VIEWPORT)
    try:
        pending = []
        # unpkg.com never answers (a network that drops the packets): the request stays pending.
        context.route(THEBE_JS, lambda route: pending.append(route))
        local = site_url.split("//", 1)[1]
        context.route(
            re.compile(r"^https?://(?!" + re.escape(local) + r")(?!unpkg\.com/thebe@).*"),
            lambda route: route.abort(),
        )
        context.add_init_script("window.bookLiveCodePatience = 1500;")
        p = context.new_page()
        p.goto(f"{site_url}/{PAGE}", wait_until="load")
        click_live_code(p)
        p.wait_for_selector(f"{NOTE}[data-state='slow']", timeout=10_000)
        assert pending, "Thebe was never requested"
        text = p.locator(NOTE).inner_text()
        assert "still loading" in text and "1.5 s" in text, text
    finally:
        context.close()


def test_live_code_that_loads_gets_no_note(browser, site_url):
    context = browser.new_context(viewport=VIEWPORT)
    try:
        # A stand-in Thebe that loads and starts nothing.
        context.route(
            THEBE_JS,
            lambda route: route.fulfill(
                status=200,
                content_type="application/javascript",
                body="window.thebelab = {on() {}, bootstrap() { window.booted = true; }};",
            ),
        )
        context.add_init_script("window.bookLiveCodePatience = 500;")
        p = context.new_page()
        p.goto(f"{site_url}/{PAGE}", wait_until="load")
        click_live_code(p)
        p.wait_for_function("() => window.booted === true", timeout=10_000)
        p.wait_for_timeout(1000)
        assert p.locator(NOTE).count() == 0
    finally:
        context.close()
