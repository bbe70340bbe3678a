"""Keyboard tab stops on scrollable blocks, with the theme's tab-stop pass patched (headless Chromium).

pydata-sphinx-theme gives every scrollable code block, cell output and table ``tabindex="0"`` so a
keyboard user can reach and scroll it. The built copy of its script (bookext.pagespeed,
THEME_PATCHES) measures only blocks that are rendered: a block in a section the browser skips
(reading.css, ``content-visibility: auto``) is measured once its section renders, or at the
reader's first Tab key press. These tests check both ways on a phone-wide window, where a table far
down a chapter scrolls sideways, and that the pass at load no longer lays out skipped sections.
"""

from __future__ import annotations

import pytest

from .conftest import SITE
from .test_site import ours

pytestmark = pytest.mark.browser

# ch12 has a table (the schemes side by side) far down, wider than a 360 px phone's column (ch11's
# tables fit since output tables wrap their code, reading.css).
PAGE = "chapters/13_comparison_lab.html"
PHONE = {"width": 360, "height": 800}
BLOCKS = (
    '["pre", ".nboutput > .output_area", ".cell_output > .output", ".jp-RenderedHTMLCommon", '
    '".pst-scrollable-table-container"].join(", ")'
)
# Per block: rendered now (not in a skipped section), its tabindex attribute.
STATE = (
    "() => Array.from(document.querySelectorAll(" + BLOCKS + ")).map((e) => "
    "({rendered: e.checkVisibility({contentVisibilityAuto: true}), "
    "tabindex: e.getAttribute('tabindex')}))"
)
# Indices of the blocks that scroll (measuring lays out skipped sections: only after STATE).
SCROLLABLE = (
    "() => Array.from(document.querySelectorAll(" + BLOCKS + ")).flatMap((e, i) => "
    "e.scrollWidth > e.clientWidth || e.scrollHeight > e.clientHeight ? [i] : [])"
)
# Scroll down one screen per animation frame, as a reader flicks, until block i is in the window.
BLOCK_I = "document.querySelectorAll(" + BLOCKS + ")[i]"
SCROLL_TO = """async (i) => {
  const el = BLOCK_I;
  const frame = () => new Promise((r) => requestAnimationFrame(() => r()));
  for (let n = 0; n < 1000; n++) {
    const r = el.getBoundingClientRect();
    if (r.top < innerHeight && r.bottom > 0) return scrollY;
    scrollBy(0, innerHeight);
    await frame();
  }
  throw new Error("block " + i + " never reached");
}""".replace("BLOCK_I", BLOCK_I)


def _open(recorder_factory, site_url):
    rec = recorder_factory()
    rec.page.set_viewport_size(PHONE)
    rec.page.goto(f"{site_url}/{PAGE}", wait_until="load")
    # The theme's pass runs at load; let any debounced re-run (300 ms) settle too.
    rec.page.wait_for_timeout(700)
    return rec


def _far_scrollable_block(p) -> int:
    """The first block that scrolls and was in a skipped section at load, never measured then."""
    state = p.evaluate(STATE)
    assert state, f"{PAGE}: no code block or output found"
    for s in state:
        if s["rendered"]:
            assert s["tabindex"] in ("0", "-1"), f"{PAGE}: a rendered block was not measured: {s}"
        else:
            assert s["tabindex"] is None, (
                f"{PAGE}: the tab-stop pass laid out a skipped section at load: {s}"
            )
    far = [i for i in p.evaluate(SCROLLABLE) if not state[i]["rendered"]]
    assert far, f"{PAGE} at {PHONE['width']} px has no scrollable block in a skipped section"
    return far[0]


def test_a_far_scrollable_block_gets_a_tab_stop_once_it_renders(recorder_factory, site_url):
    assert (SITE / PAGE).is_file()
    rec = _open(recorder_factory, site_url)
    p = rec.page
    i = _far_scrollable_block(p)
    assert p.evaluate(SCROLL_TO, i) > 3 * PHONE["height"]
    p.wait_for_function(
        "(i) => " + BLOCK_I + ".getAttribute('tabindex') === '0'",
        arg=i,
        timeout=3_000,
    )
    assert not ours(rec.console_errors), ours(rec.console_errors)


def test_the_first_tab_press_gives_every_scrollable_block_its_tab_stop(recorder_factory, site_url):
    rec = _open(recorder_factory, site_url)
    p = rec.page
    i = _far_scrollable_block(p)
    p.keyboard.press("Tab")
    tabindex = p.evaluate("(i) => " + BLOCK_I + ".getAttribute('tabindex')", i)
    assert tabindex == "0", f"{PAGE}: block {i} still has tabindex {tabindex} after Tab"
    assert p.evaluate(SCROLLABLE) == [
        i for i, s in enumerate(p.evaluate(STATE)) if s["tabindex"] == "0"
    ], f"{PAGE}: after Tab, the blocks with a tab stop are not exactly the scrollable ones"
    assert not ours(rec.console_errors), ours(rec.console_errors)
