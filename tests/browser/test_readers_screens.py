"""What every reader meets, on every screen (issue 34): tables, the drawers on a phone, figure menus
in dark mode, a page whose height is right from the start.

- Tables: a ``Markdown(...)`` output with a pipe table renders as a ``<table>`` (myst-nb's
  ``render_markdown_format`` is ``myst``, ``_config.yml``), never as a paragraph of pipes, and its
  text reads on the page in the light and the dark theme.
- Phones (390 x 844, touch): the visible ☰ opens the chapter list, a chapter link in it leads to
  that chapter; the contents button opens the page's contents. On a desktop ☰ hides the chapter list.
- Figure menus (plotly ``updatemenus``, the lab's buttons and dropdown): their text contrasts with what
  is under it in both themes, and no two menus overlap.
- Page height: the skipped sections (``content-visibility: auto``) carry a measured size, so the
  page is as tall at load as once every section has been drawn, and End reaches the last section.
"""

from __future__ import annotations

import json
import re

import pytest

from .conftest import (  # noqa: F401 (SITE: fail clearly with no site)
    PHONE,
    ROOT,
    SITE,
    phone_context,
    site_pages,
)

pytestmark = pytest.mark.browser

PAGES = site_pages()
CHAPTERS = [p for p in PAGES if p.startswith("chapters/")]
# The lab (the last chapter) has the figure menus and the widest table.
LAB = next((p for p in CHAPTERS if p.endswith("comparison_lab.html")), None)
# A Markdown pipe table: a header row, then a delimiter row such as |---|:--:|.
_DELIMITER_ROW = re.compile(r"^\s*\|?\s*:?-{3,}:?\s*(\|\s*:?-{3,}:?\s*)+\|?\s*$", re.M)


def markdown_tables(page: str) -> int:
    """Pipe tables in the ``text/markdown`` outputs the page's notebook shows."""
    notebook = ROOT / page.replace(".html", ".ipynb")
    if not notebook.is_file():
        return 0
    count = 0
    for cell in json.loads(notebook.read_text(encoding="utf-8"))["cells"]:
        if set(cell.get("metadata", {}).get("tags", [])) & {"remove-output", "remove-cell"}:
            continue
        for out in cell.get("outputs", []):
            text = out.get("data", {}).get("text/markdown", "")
            text = "".join(text) if isinstance(text, list) else text
            count += len(_DELIMITER_ROW.findall(text))
    return count


def test_the_chapters_have_markdown_tables_to_check():
    # The check below is not vacuous: the chapters show 12 such tables (ch11's one was always fine).
    assert sum(markdown_tables(p) for p in CHAPTERS) >= 12


def set_mode(rec, mode: str) -> None:
    rec.page.add_init_script(
        f"localStorage.setItem('mode', '{mode}');localStorage.setItem('theme', '{mode}');"
    )


# Output paragraphs that are pipe tables, and each output table's text colour against the colour
# under it (WCAG contrast), walking up to the first opaque background.
OUTPUT_TABLES = """() => {
  const lum = (rgb) => {
    const [r, g, b] = rgb.map((v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; });
    return 0.2126 * r + 0.7152 * g + 0.0722 * b;
  };
  const parse = (c) => (c.match(/[\\d.]+/g) || []).map(Number);
  const under = (el) => {
    for (let e = el; e; e = e.parentElement) {
      const c = parse(getComputedStyle(e).backgroundColor);
      if (c.length === 3 || (c.length === 4 && c[3] > 0.5)) return c.slice(0, 3);
    }
    return [255, 255, 255];
  };
  const pipes = Array.from(document.querySelectorAll('.cell_output p'))
    .map((p) => p.textContent.trim())
    // Docutils' smart quotes turn the delimiter row's --- into an em dash.
    .filter((t) => t.startsWith('|') && /\\|\\s*:?(-{3,}|[\u2013\u2014])/.test(t));
  const tables = Array.from(document.querySelectorAll('.cell_output table')).map((t) => {
    const cell = t.querySelector('td') || t.querySelector('th');
    const fg = parse(getComputedStyle(cell).color), bg = under(cell);
    const [a, b] = [lum(fg), lum(bg)].sort((x, y) => y - x);
    return {text: t.textContent.trim().slice(0, 40), contrast: (a + 0.05) / (b + 0.05),
            rawMath: /\\$[^$]+\\$/.test(t.textContent)};
  });
  return {pipes, tables};
}"""


@pytest.mark.parametrize("mode", ["light", "dark"])
@pytest.mark.parametrize("page", CHAPTERS)
def test_output_tables_render_as_tables(page, mode, recorder_factory, site_url):
    rec = recorder_factory(color_scheme=mode)
    set_mode(rec, mode)
    rec.page.goto(f"{site_url}/{page}", wait_until="load")
    assert rec.page.evaluate("document.documentElement.dataset.theme") == mode
    got = rec.page.evaluate(OUTPUT_TABLES)
    assert not got["pipes"], f"{page}: output tables shown as paragraphs of pipes: {got['pipes']}"
    expected = markdown_tables(page)
    assert len(got["tables"]) >= expected, (
        f"{page}: {expected} Markdown tables in its outputs, {len(got['tables'])} <table>s"
    )
    for table in got["tables"]:
        assert table["contrast"] >= 4.5, f"{page} ({mode}): table text unreadable: {table}"
        assert not table["rawMath"], f"{page}: table shows raw $math$: {table}"


# ---------------------------------------------------------------------------------- the drawers


def visible_toggle(p, cls: str):
    toggles = p.locator(f"button.{cls}")
    shown = [toggles.nth(i) for i in range(toggles.count()) if toggles.nth(i).is_visible()]
    assert len(shown) == 1, f"{len(shown)} visible .{cls} buttons"
    return shown[0]


def test_a_phone_opens_the_chapter_list_and_the_page_contents(browser, site_url):
    context = phone_context(browser, site_url)
    try:
        p = context.new_page()
        p.goto(f"{site_url}/chapters/08_rope.html", wait_until="load")
        assert p.evaluate("window.innerWidth") == PHONE["width"]
        # The page contents.
        visible_toggle(p, "secondary-toggle").tap()
        contents = p.locator("#pst-secondary-sidebar-modal")
        contents.locator("nav a").first.wait_for(state="visible", timeout=5000)
        assert p.evaluate("document.getElementById('pst-secondary-sidebar-modal').open")
        p.keyboard.press("Escape")
        p.wait_for_function("!document.getElementById('pst-secondary-sidebar-modal').open")
        # The chapter list, and a chapter link in it.
        visible_toggle(p, "primary-toggle").tap()
        drawer = p.locator("#pst-primary-sidebar-modal")
        link = drawer.locator("a.reference.internal[href*='09_rope_scaling']").first
        link.wait_for(state="visible", timeout=5000)
        box = link.bounding_box()
        assert box and 0 <= box["x"] < PHONE["width"], f"chapter link off screen: {box}"
        link.tap()
        p.wait_for_url("**/chapters/09_rope_scaling.html", timeout=10000)
    finally:
        context.close()


def test_on_a_desktop_the_menu_button_hides_the_chapter_list(recorder_factory, site_url):
    rec = recorder_factory()
    p = rec.page
    p.goto(f"{site_url}/chapters/08_rope.html", wait_until="load")
    sidebar = p.locator("#pst-primary-sidebar")
    assert sidebar.is_visible()
    visible_toggle(p, "primary-toggle").click()
    p.wait_for_timeout(500)
    assert not p.evaluate("document.getElementById('pst-primary-sidebar-modal').open")
    width = sidebar.evaluate("e => e.getBoundingClientRect().width")
    assert not sidebar.is_visible() or width < 5, f"the chapter list is still shown ({width} px)"


# ----------------------------------------------------------------------------- figure menus

# Every drawn figure's menus: each button's text colour against its own fill (or the page under a
# transparent fill), and the menus' boxes, to check that no two overlap.
FIGURE_MENUS = """() => {
  const lum = (rgb) => {
    const [r, g, b] = rgb.map((v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; });
    return 0.2126 * r + 0.7152 * g + 0.0722 * b;
  };
  const parse = (c) => (c.match(/[\\d.]+/g) || []).map(Number);
  const page = parse(getComputedStyle(document.body).backgroundColor);
  const out = [];
  document.querySelectorAll('.bookplot-graph').forEach((div) => {
    // Each button of a row, and each dropdown's header (the closed menu).
    const menus = Array.from(div.querySelectorAll('g.updatemenu-button, g.updatemenu-header'))
      .filter((g) => g.getBoundingClientRect().width > 0);
    const buttons = menus.map((g) => {
      const rect = g.querySelector('rect.updatemenu-item-rect');
      const text = g.querySelector('text.updatemenu-item-text');
      const fill = parse(getComputedStyle(rect).fill);
      const alpha = fill.length === 4 ? fill[3] : Number(getComputedStyle(rect).fillOpacity);
      const bg = alpha < 0.5 ? page : fill.slice(0, 3);
      const [a, b] = [lum(parse(getComputedStyle(text).fill).slice(0, 3)), lum(bg)].sort((x, y) => y - x);
      const r = g.getBoundingClientRect();
      return {label: text.textContent, contrast: (a + 0.05) / (b + 0.05),
              box: [r.left, r.top, r.right, r.bottom]};
    });
    if (buttons.length) out.push({id: div.id, buttons});
  });
  return out;
}"""


def _overlap(a: list[float], b: list[float]) -> bool:
    return a[0] < b[2] - 1 and b[0] < a[2] - 1 and a[1] < b[3] - 1 and b[1] < a[3] - 1


@pytest.mark.parametrize("mode", ["light", "dark"])
def test_figure_menus_read_in_both_themes_and_do_not_overlap(mode, recorder_factory, site_url):
    from .test_site import open_page

    rec = recorder_factory(color_scheme=mode)
    set_mode(rec, mode)
    p = open_page(rec, site_url, LAB)
    got = p.evaluate(FIGURE_MENUS)
    assert got, "the lab has figure menus (the lab's condition buttons and group dropdown)"
    for figure in got:
        for button in figure["buttons"]:
            assert button["contrast"] >= 4.5, f"{mode}: {figure['id']} {button}"
        boxes = figure["buttons"]
        for i, a in enumerate(boxes):
            for b in boxes[i + 1 :]:
                assert not _overlap(a["box"], b["box"]), f"{figure['id']}: {a} overlaps {b}"


# ------------------------------------------------------------------------------- page height

SCROLL_TO_END = """async () => {
  const el = document.scrollingElement;
  let last = -1;
  for (let i = 0; i < 400 && el.scrollHeight !== last; i++) {
    last = el.scrollHeight;
    for (let y = 0; y < el.scrollHeight; y += window.innerHeight / 2) {
      window.scrollTo(0, y);
      await new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)));
    }
  }
  return el.scrollHeight;
}"""


@pytest.mark.parametrize("page", ["chapters/08_rope.html", "chapters/11_alibi.html"])
def test_the_page_is_as_tall_at_load_as_once_read(page, recorder_factory, site_url):
    rec = recorder_factory()
    p = rec.page
    p.goto(f"{site_url}/{page}", wait_until="load")
    p.wait_for_timeout(300)
    at_load = p.evaluate("document.scrollingElement.scrollHeight")
    # End from the top: it must land on the last section (the exercises), not part-way.
    p.keyboard.press("End")
    p.wait_for_timeout(800)
    last_heading = p.evaluate(
        """() => { const hs = Array.from(document.querySelectorAll('.bd-article section > h2'));
        return hs.filter((h) => h.getBoundingClientRect().top < innerHeight)
                 .map((h) => h.textContent.trim()).pop(); }"""
    )
    headings = p.evaluate(
        "Array.from(document.querySelectorAll('.bd-article section > h2'))"
        ".map((h) => h.textContent.trim())"
    )
    assert last_heading == headings[-1], f"End landed in {last_heading!r}, not {headings[-1]!r}"
    read = p.evaluate(SCROLL_TO_END)
    assert abs(read - at_load) <= 0.03 * read, (
        f"{page}: {at_load} px tall at load, {read} px once every section was drawn"
    )


def test_a_phone_shows_no_plotly_tool_bar(browser, site_url):
    """On a touch screen plotly's mode bar would cover the titles after a tap: there is none."""
    from .test_site import DRAW_ALL

    context = phone_context(browser, site_url)
    try:
        p = context.new_page()
        p.goto(f"{site_url}/chapters/08_rope.html", wait_until="load")
        assert p.evaluate(DRAW_ALL) > 0
        p.locator(".bookplot-graph").first.tap()
        bars = p.evaluate("document.querySelectorAll('.bookplot-graph .modebar').length")
        assert bars == 0, f"{bars} plotly tool bars on a phone"
    finally:
        context.close()


@pytest.mark.parametrize("page", CHAPTERS)
def test_exercise_solutions_are_labelled_as_solutions(page, recorder_factory, site_url):
    rec = recorder_factory()
    rec.page.goto(f"{site_url}/{page}", wait_until="load")
    labels = rec.page.evaluate(
        "Array.from(document.querySelectorAll('.cell.tag_solution summary'))"
        ".map((s) => s.textContent.trim().replace(/\\s+/g, ' '))"
    )
    assert labels, f"{page}: no solution toggles (every chapter has exercises)"
    assert all(label.startswith("Show the solution") for label in labels), labels
