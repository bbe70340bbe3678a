"""A phone reader (390 x 844, touch) never scrolls the page sideways, and wide tables read (issue 34).

- Every chapter page at 390 x 844: the document is no wider than the screen once every section is
  laid out, every hidden cell (solutions) is open and every figure is drawn. Wide code wraps, wide
  display math scales down, wide tables and other wide blocks scroll inside their own box (which
  fits the screen), and plotly figures fit their column: the drawn SVG, its titles, axis titles
  and notes stay inside the figure's box, and no two panel titles or notes overlap (multi-panel
  figures stack their panels on a narrow column, ``bookext/assets/bookplot.js``).
- Wide output tables (the lab's 7-column comparison) at 1280 px and at 390 px: a table wider than
  the column scrolls inside its own container, which a keyboard can reach (``tabindex="0"``), and
  no cell's text is clipped.
"""

from __future__ import annotations

import pytest

from .conftest import (  # noqa: F401 (SITE: fail clearly with no site)
    PHONE,
    SITE,
    phone_context,
    site_pages,
)
from .test_site import DRAW_ALL

pytestmark = pytest.mark.browser

CHAPTERS = [p for p in site_pages() if p.startswith("chapters/")]
LAB = next((p for p in CHAPTERS if p.endswith("comparison_lab.html")), None)

# Lay out every section now (reading.css lets the browser skip far sections, whose content then
# adds nothing to the page's width) and open every hidden cell (a reader may open any of them).
LAY_OUT_EVERYTHING = """() => {
  const s = document.createElement('style');
  s.textContent = '.bd-article section section { content-visibility: visible !important; }';
  document.head.appendChild(s);
  document.querySelectorAll('details').forEach((d) => { d.open = true; });
}"""

# The page's width, and the outermost elements that stick out past the screen's right edge
# without a box of their own that scrolls or clips them inside the screen.
PAGE_OVERFLOW = """() => {
  const vw = document.documentElement.clientWidth;
  const clips = (el) => /(auto|scroll|hidden|clip)/.test(getComputedStyle(el).overflowX);
  const describe = (el) => {
    const cls = (el.getAttribute('class') || '').split(/\\s+/).slice(0, 3).join('.');
    return `${el.tagName.toLowerCase()}${cls ? '.' + cls : ''} right=${Math.round(
      el.getBoundingClientRect().right)} "${(el.textContent || '').trim().slice(0, 60)}"`;
  };
  const sticking = [];
  const walk = (el) => {
    for (const child of el.children) {
      const st = getComputedStyle(child);
      // Off-canvas drawers (position: fixed) and hidden boxes make no page to scroll to.
      if (st.position === 'fixed' || st.visibility === 'hidden' || st.display === 'none') continue;
      const r = child.getBoundingClientRect();
      // Its own box sticks out: reported (what is inside it goes with it).
      if (r.width > 0 && r.right > vw + 1) { sticking.push(describe(child)); continue; }
      // A box that fits and scrolls or clips keeps what is inside it inside the screen.
      if (!clips(child)) walk(child);
    }
  };
  walk(document.body);
  return {viewport: vw, scrollWidth: document.documentElement.scrollWidth,
          bodyScrollWidth: document.body.scrollWidth, sticking: sticking.slice(0, 8)};
}"""

# Every drawn figure: its SVG against its div, and the boxes of its texts (the title, subplot
# titles and notes, axis titles, legend) against the div and against each other.
FIGURE_FIT = """() => {
  const out = [];
  document.querySelectorAll('.bookplot-graph[data-drawn="1"]').forEach((div) => {
    const box = div.getBoundingClientRect();
    const svg = div.querySelector('svg.main-svg');
    const problems = [];
    if (svg && svg.getBoundingClientRect().width > box.width + 1) {
      problems.push(`svg ${Math.round(svg.getBoundingClientRect().width)} px wide in a ` +
                    `${Math.round(box.width)} px column`);
    }
    const texts = Array.from(div.querySelectorAll(
        'g.g-gtitle text, g.annotation text, g.g-xtitle text, g.g-ytitle text, ' +
        'g[class^="g-x"][class$="title"] text, g[class^="g-y"][class$="title"] text, g.legend'))
      .filter((t) => t.getBoundingClientRect().width > 0 && (t.textContent || '').trim());
    const rects = texts.map((t) => ({t: t.textContent.trim().slice(0, 40),
                                     r: t.getBoundingClientRect()}));
    for (const {t, r} of rects) {
      if (r.left < box.left - 1 || r.right > box.right + 1 || r.top < box.top - 1 ||
          r.bottom > box.bottom + 1) {
        problems.push(`"${t}" outside the figure (${Math.round(r.left - box.left)}..` +
                      `${Math.round(r.right - box.left)} of ${Math.round(box.width)} px)`);
      }
    }
    // Titles and notes that overlap one another. Not the legend (it may sit over the plot area),
    // nor labels placed on the data (x/y references): those belong to the plot's own drawing.
    const onData = (el) => {
      const g = el.closest('g.annotation');
      const a = g && (div.layout.annotations || [])[Number(g.getAttribute('data-index'))];
      const ref = (r) => !r || r === 'paper' || /domain$/.test(r);
      return Boolean(a) && !(ref(a.xref) && ref(a.yref));
    };
    const labels = rects.filter((x, i) => !texts[i].matches('g.legend') && !onData(texts[i]));
    for (let i = 0; i < labels.length; i++) {
      for (let j = i + 1; j < labels.length; j++) {
        const a = labels[i].r, b = labels[j].r;
        const w = Math.min(a.right, b.right) - Math.max(a.left, b.left);
        const h = Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top);
        if (w > 2 && h > 2) problems.push(`"${labels[i].t}" overlaps "${labels[j].t}"`);
      }
    }
    if (problems.length) out.push({id: div.id, problems});
  });
  return out;
}"""


def open_on_phone(context, site_url: str, page: str):
    p = context.new_page()
    p.goto(f"{site_url}/{page}", wait_until="load")
    assert p.evaluate("document.documentElement.clientWidth") == PHONE["width"]
    p.evaluate(LAY_OUT_EVERYTHING)
    p.evaluate(DRAW_ALL)
    p.wait_for_timeout(200)
    return p


@pytest.mark.parametrize("page", CHAPTERS)
def test_no_chapter_page_scrolls_sideways_on_a_phone(page, browser, site_url):
    context = phone_context(browser, site_url)
    try:
        p = open_on_phone(context, site_url, page)
        got = p.evaluate(PAGE_OVERFLOW)
        assert got["scrollWidth"] <= PHONE["width"] and got["bodyScrollWidth"] <= PHONE["width"], (
            f"{page}: the page is {got['scrollWidth']} px wide on a {PHONE['width']} px phone; "
            f"sticking out: {got['sticking']}"
        )
        assert not got["sticking"], f"{page}: past the screen's edge: {got['sticking']}"
    finally:
        context.close()


@pytest.mark.parametrize("page", CHAPTERS)
def test_figures_fit_a_phone(page, browser, site_url):
    context = phone_context(browser, site_url)
    try:
        p = open_on_phone(context, site_url, page)
        assert p.locator(".bookplot-graph[data-drawn='1']").count() > 0
        bad = p.evaluate(FIGURE_FIT)
        assert not bad, f"{page}: figures that do not fit a phone: {bad}"
    finally:
        context.close()


# Each output table: its width against its column, the box that scrolls it (if any), and cells
# whose text is cut (a cell narrower than its content that hides the rest).
TABLES = """() => Array.from(document.querySelectorAll('.cell_output table')).map((t) => {
  const column = document.querySelector('article.bd-article');
  let scroller = null;
  for (let e = t.parentElement; e && e !== column; e = e.parentElement) {
    if (/(auto|scroll)/.test(getComputedStyle(e).overflowX)) { scroller = e; break; }
  }
  const clipped = Array.from(t.querySelectorAll('th, td'))
    .filter((c) => c.scrollWidth > c.clientWidth + 1 &&
                   /(hidden|clip)/.test(getComputedStyle(c).overflowX))
    .map((c) => c.textContent.trim().slice(0, 30));
  const tr = t.getBoundingClientRect(), cr = column.getBoundingClientRect();
  return {
    text: t.textContent.trim().slice(0, 40), width: Math.round(tr.width),
    column: Math.round(cr.width), fits: tr.right <= cr.right + 1,
    scroller: scroller && {
      right: Math.round(scroller.getBoundingClientRect().right),
      scrolls: scroller.scrollWidth > scroller.clientWidth + 1,
      tabindex: scroller.getAttribute('tabindex'),
    },
    clipped,
  };
})"""


def press_tab(p) -> None:
    """A keyboard reader's first Tab: the theme's tab-stop pass (patched in bookext/pagespeed.py to
    run lazily) then measures every block, so scrolling boxes get tabindex 0."""
    p.keyboard.press("Tab")
    p.wait_for_timeout(200)


def check_tables(tables: list[dict], page: str, right_edge: float) -> None:
    assert tables, f"{page}: no output tables"
    for t in tables:
        assert not t["clipped"], f"{page}: table cells cut off: {t}"
        if t["fits"]:
            continue
        s = t["scroller"]
        assert s is not None, f"{page}: a table wider than the column, with no scroll box: {t}"
        assert s["right"] <= right_edge + 1, f"{page}: the table's scroll box is too wide: {t}"
        # A box that scrolls must be reachable by keyboard (the theme's tab stop, pagespeed.py).
        assert s["tabindex"] == "0", f"{page}: scroll box not keyboard-usable: {t}"


def test_the_labs_wide_table_scrolls_in_its_box_at_1280px(recorder_factory, site_url):
    rec = recorder_factory()
    p = rec.page
    assert p.viewport_size["width"] == 1280
    p.goto(f"{site_url}/{LAB}", wait_until="load")
    p.evaluate(LAY_OUT_EVERYTHING)
    press_tab(p)
    tables = p.evaluate(TABLES)
    right = p.evaluate("document.querySelector('article.bd-article').getBoundingClientRect().right")
    check_tables(tables, LAB, right)
    # The lab's comparison table (7 columns) is the widest; it is there and readable.
    assert any(t["text"].lower().startswith("scheme") for t in tables), tables


def test_wide_tables_scroll_in_their_box_on_a_phone(browser, site_url):
    page = LAB
    context = phone_context(browser, site_url)
    try:
        p = open_on_phone(context, site_url, page)
        press_tab(p)
        tables = p.evaluate(TABLES)
        check_tables(tables, page, PHONE["width"])
        # On a phone these tables are wider than the column: the scroll box is what is tested.
        assert any(not t["fits"] for t in tables), tables
    finally:
        context.close()


# Labels drawn on the data (a scatter's text, notes placed at data coordinates) and a figure's
# title against its legend: the boxes of any two that overlap by more than 1 px each way. The
# figure-fit check above leaves these out (a label may sit on the plot); here they must not sit
# on each other, which is what crowding on a narrow screen looks like (issue 34).
DATA_LABELS_OVERLAP = """() => {
  const out = [];
  document.querySelectorAll('.bookplot-graph[data-drawn="1"]').forEach((div) => {
    const boxes = [];
    const add = (el, what) => {
      const r = el.getBoundingClientRect();
      const t = (el.textContent || '').trim();
      if (r.width > 0 && r.height > 0 && (t || what === 'legend')) {
        boxes.push({what, t: t.slice(0, 30), r});
      }
    };
    div.querySelectorAll('g.textpoint text').forEach((el) => add(el, 'text'));
    div.querySelectorAll('g.annotation text').forEach((el) => add(el, 'note'));
    div.querySelectorAll('g.g-gtitle text').forEach((el) => add(el, 'title'));
    div.querySelectorAll('g.legend').forEach((el) => add(el, 'legend'));
    const problems = [];
    for (let i = 0; i < boxes.length; i++) {
      for (let j = i + 1; j < boxes.length; j++) {
        const a = boxes[i], b = boxes[j];
        // title vs legend, and any two texts; the legend may lie over the data's own text
        const pair = [a.what, b.what].sort().join('+');
        if (pair === 'legend+text' || pair === 'legend+note') continue;
        const w = Math.min(a.r.right, b.r.right) - Math.max(a.r.left, b.r.left);
        const h = Math.min(a.r.bottom, b.r.bottom) - Math.max(a.r.top, b.r.top);
        if (w > 1 && h > 1) problems.push(`${a.what} "${a.t}" overlaps ${b.what} "${b.t}"`);
      }
    }
    if (problems.length) out.push({id: div.id, n: problems.length, problems: problems.slice(0, 6)});
  });
  return out;
}"""
# Chapter 10's position strip (every token with its t, h, w ids, lib.viz.mrope.token_map_figure)
# and its other figures.
LABELLED = [p for p in CHAPTERS if p.endswith("10_mrope.html")]


@pytest.mark.parametrize("page", LABELLED)
def test_labels_on_the_data_do_not_crowd_on_a_phone(page, browser, site_url):
    context = phone_context(browser, site_url)
    try:
        p = open_on_phone(context, site_url, page)
        assert p.locator(".bookplot-graph[data-drawn='1'] g.textpoint text").count() > 0
        crowded = p.evaluate(DATA_LABELS_OVERLAP)
        assert not crowded, f"{page}: labels on top of each other at 390 px: {crowded}"
    finally:
        context.close()
