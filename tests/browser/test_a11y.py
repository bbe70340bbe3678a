"""Accessibility and reading comfort of the built site, in headless Chromium.

- axe-core (pinned, vendored in ``tests/browser/vendor/axe-core/``, injected from disk) finds no
  serious or critical violation on any page, with every figure drawn;
- every plotly slider has a keyboard control (WAI-ARIA slider: ``role="slider"``,
  ``aria-valuenow``/``aria-valuetext``) that arrow keys, PageUp/PageDown, Home and End move, which
  moves plotly's own slider and changes what the figure shows; focus is visible; the play and pause
  buttons are real buttons that run the animation;
- at a 1280 px window no code cell and no display equation is wider than its column.

Set ``BOOK_SITE`` to test another build; ``A11Y_REPORT`` names a JSON file for axe's findings.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest

from .conftest import SITE, site_pages

pytestmark = pytest.mark.browser

PAGES = site_pages()
AXE = Path(__file__).parent / "vendor" / "axe-core" / "axe.min.js"
AXE_VERSION = "4.14.1"
AXE_SHA256 = "29348999450cdf2849a8e70b7912fc2da85a849da39c0d0d5394f51d4a9ed95c"
BLOCKING = ("serious", "critical")

DRAW_ALL = """async () => {
  const divs = Array.from(document.querySelectorAll('.bookplot-graph'));
  for (const d of divs) {
    d.scrollIntoView({block: 'center'});
    for (let i = 0; i < 400 && d.dataset.drawn !== '1'; i++) {
      await new Promise(r => setTimeout(r, 50));
    }
  }
  window.scrollTo(0, 0);
  return divs.length;
}"""
DRAWN = (
    "() => Array.from(document.querySelectorAll('.bookplot-graph'))"
    ".every(d => d.dataset.drawn === '1')"
)
# What a figure shows: visibility and data of each trace, the sliders' positions, the title.
FIGURE_STATE = """(div) => JSON.stringify([
  div.data.map(t => (t.visible === false || t.visible === 'legendonly')
      ? null : [t.x, t.y, t.z, t.text, t.marker && t.marker.opacity]),
  (div.layout.sliders || []).map(s => s.active || 0),
  div.layout.title && (div.layout.title.text || div.layout.title),
])"""


def axe_source() -> str:
    data = AXE.read_bytes()
    digest = hashlib.sha256(data).hexdigest()
    assert digest == AXE_SHA256, f"{AXE} is not axe-core {AXE_VERSION} (SHA-256 {digest})"
    return data.decode("utf-8")


def open_drawn(rec, site_url: str, page: str):
    p = rec.page
    p.goto(f"{site_url}/{page}", wait_until="load")
    p.evaluate(DRAW_ALL)
    p.wait_for_function(DRAWN, timeout=60_000)
    return p


def run_axe(p) -> list[dict]:
    p.add_script_tag(content=axe_source())
    assert p.evaluate("axe.version") == AXE_VERSION
    result = p.evaluate(
        "async () => (await axe.run(document, {resultTypes: ['violations']})).violations"
        ".map(v => ({id: v.id, impact: v.impact, help: v.help,"
        " nodes: v.nodes.map(n => n.target.join(' ')).slice(0, 5), count: v.nodes.length}))"
    )
    return result


def _record(page: str, violations: list[dict]) -> None:
    path = os.environ.get("A11Y_REPORT")
    if not path:
        return
    report = Path(path)
    data = json.loads(report.read_text()) if report.is_file() else {}
    data[page] = violations
    report.write_text(json.dumps(data, indent=1, sort_keys=True))


def test_axe_core_is_pinned_and_vendored_with_its_licence():
    axe_source()
    licence = (AXE.parent / "LICENSE").read_text()
    assert "Mozilla Public License" in licence
    assert f"axe v{AXE_VERSION}" in AXE.read_text()[:200]


@pytest.mark.parametrize("page", PAGES)
def test_no_serious_or_critical_axe_violations(page, recorder_factory, site_url):
    rec = recorder_factory()
    p = open_drawn(rec, site_url, page)
    # The theme gives a scrollable block its tab stop once it is rendered, and every block at the
    # reader's first Tab press (bookext/pagespeed.py, LAZY_TABSTOPS; test_tabstops.py tests that
    # press): axe checks keyboard access in the state a keyboard reader meets, after one Tab.
    p.keyboard.press("Tab")
    violations = run_axe(p)
    _record(page, violations)
    blocking = [v for v in violations if v["impact"] in BLOCKING]
    assert not blocking, f"{page}: axe-core {AXE_VERSION} found " + json.dumps(blocking, indent=1)
    assert not rec.external_requests, f"{page} asked another host: {rec.external_requests}"


FIGURE_PAGES = [p for p in PAGES if p.startswith("chapters/")]


def keyboard_controls(p) -> list[dict]:
    return p.evaluate(
        """() => Array.from(document.querySelectorAll('.bookplot-graph')).map(div => ({
          id: div.id,
          sliders: (div.layout.sliders || []).length,
          menus: (div.layout.updatemenus || []).filter(m => m.type === 'buttons').length,
          controls: Array.from(document.querySelectorAll(
            '[role="slider"][aria-controls="' + div.id + '"]')).map(c => c.id),
        }))"""
    )


@pytest.mark.parametrize("page", FIGURE_PAGES)
def test_every_slider_works_from_the_keyboard(page, recorder_factory, site_url):
    rec = recorder_factory()
    p = open_drawn(rec, site_url, page)
    figures = keyboard_controls(p)
    for fig in figures:
        assert len(fig["controls"]) == fig["sliders"], (
            f"{page}: figure {fig['id']} has {fig['sliders']} sliders but "
            f"{len(fig['controls'])} keyboard controls"
        )
        div = p.locator(f"#{fig['id']}")
        for s, control_id in enumerate(fig["controls"]):
            check_keyboard_slider(p, page, div, p.locator(f"#{control_id}"), s)
    ours = [e for e in rec.console_errors if "pageerror" in e or "Uncaught" in e]
    assert not ours, f"{page}: script errors while using the keyboard: {ours}"


def _steps(div, s: int) -> list[dict]:
    return div.evaluate(
        f"d => d.layout.sliders[{s}].steps.map(st => ({{label: String(st.label)}}))"
    )


def _settle(p) -> None:
    p.wait_for_timeout(120)


def check_keyboard_slider(p, page: str, div, control, s: int) -> None:
    where = f"{page}: figure {div.get_attribute('id')} slider {s}"
    steps = _steps(div, s)
    n = len(steps)
    assert control.get_attribute("tabindex") == "0", f"{where}: control not focusable"
    assert control.get_attribute("aria-valuemin") == "0"
    assert control.get_attribute("aria-valuemax") == str(n - 1)
    assert control.get_attribute("aria-label"), f"{where}: control has no accessible name"
    control.focus()
    assert p.evaluate("document.activeElement.id") == control.get_attribute("id")
    outline = control.evaluate(
        "c => { const s = getComputedStyle(c); return [s.outlineStyle, parseFloat(s.outlineWidth)]; }"
    )
    assert outline[0] != "none" and outline[1] >= 2, f"{where}: focus not visible ({outline})"

    def now() -> int:
        return int(control.get_attribute("aria-valuenow"))

    def plotly_active() -> int:
        return div.evaluate(f"d => d.layout.sliders[{s}].active || 0")

    p.keyboard.press("Home")
    _settle(p)
    assert now() == 0 and plotly_active() == 0, f"{where}: Home did not go to step 0"
    before = div.evaluate(FIGURE_STATE)
    p.keyboard.press("ArrowRight")
    _settle(p)
    assert now() == 1, f"{where}: ArrowRight did not move the control"
    assert plotly_active() == 1, f"{where}: plotly's own slider did not follow the keyboard"
    assert div.evaluate(FIGURE_STATE) != before, f"{where}: ArrowRight changed nothing shown"
    label = control.get_attribute("aria-valuetext")
    assert label.endswith(steps[1]["label"]), f"{where}: aria-valuetext {label!r} is not step 1"
    p.keyboard.press("ArrowLeft")
    _settle(p)
    assert now() == 0 and plotly_active() == 0
    assert div.evaluate(FIGURE_STATE) == before, f"{where}: ArrowLeft did not restore step 0"
    p.keyboard.press("End")
    _settle(p)
    assert now() == n - 1 and plotly_active() == n - 1, f"{where}: End did not go to the last step"
    p.keyboard.press("PageDown")
    _settle(p)
    assert now() == max(0, n - 1 - max(1, round(n / 10))), f"{where}: PageDown"
    p.keyboard.press("Home")
    _settle(p)


@pytest.mark.parametrize("page", FIGURE_PAGES)
def test_play_buttons_are_keyboard_buttons(page, recorder_factory, site_url):
    rec = recorder_factory()
    p = open_drawn(rec, site_url, page)
    figures = [f for f in keyboard_controls(p) if f["menus"]]
    for fig in figures:
        buttons = p.locator(f"#{fig['id']} ~ .bookplot-keys button")
        names = [buttons.nth(i).inner_text() for i in range(buttons.count())]
        assert names, f"{page}: figure {fig['id']} has play buttons but no keyboard buttons"
        if "Play" not in names:
            continue
        control = p.locator(f'[role="slider"][aria-controls="{fig["id"]}"]').first
        start = int(control.get_attribute("aria-valuenow"))
        buttons.nth(names.index("Play")).focus()
        p.keyboard.press("Enter")
        p.wait_for_timeout(1500)
        if "Pause" in names:
            buttons.nth(names.index("Pause")).focus()
            p.keyboard.press("Enter")
        p.wait_for_timeout(300)
        moved = int(control.get_attribute("aria-valuenow"))
        assert moved != start, f"{page}: Play (keyboard) did not run the animation"
        assert div_active(p, fig["id"]) == moved, f"{page}: plotly slider and control disagree"


def div_active(p, div_id: str) -> int:
    return p.evaluate(f"document.getElementById('{div_id}').layout.sliders[0].active || 0")


OVERFLOW = """() => {
  const wide = (el) => el.scrollWidth > el.clientWidth + 1;
  const column = document.querySelector('article.bd-article') || document.querySelector('main');
  const right = column.getBoundingClientRect().right + 1;
  const code = Array.from(document.querySelectorAll(
      'div.cell div.cell_input pre, div.cell div.cell_output pre, div.highlight pre'))
    .filter(el => el.offsetParent !== null)
    .filter(el => wide(el) || el.getBoundingClientRect().right > right)
    .map(el => el.textContent.split('\\n').sort((a, b) => b.length - a.length)[0].slice(0, 100));
  const math = Array.from(document.querySelectorAll('mjx-container[display="true"]'))
    .filter(el => el.offsetParent !== null)
    .filter(el => wide(el) || el.getBoundingClientRect().right > right
      || (el.querySelector('svg') && el.querySelector('svg').getBoundingClientRect().right > right))
    .map(el => (el.getAttribute('aria-label')
      || (el.querySelector('math') || el).textContent).slice(0, 100));
  return {code, math};
}"""


@pytest.mark.parametrize("page", PAGES)
def test_code_and_display_math_fit_the_column_at_1280px(page, recorder_factory, site_url):
    rec = recorder_factory()
    assert rec.page.viewport_size["width"] == 1280
    rec.page.goto(f"{site_url}/{page}", wait_until="load")
    # Expand hidden cells (solutions) too: a reader who opens them must not scroll sideways.
    rec.page.evaluate("() => document.querySelectorAll('details').forEach(d => { d.open = true; })")
    found = rec.page.evaluate(OVERFLOW)
    assert not found["code"], f"{page}: code wider than the column: {found['code']}"
    assert not found["math"], f"{page}: display math wider than the column: {found['math']}"


def test_report_goes_where_asked(tmp_path, monkeypatch):
    monkeypatch.setenv("A11Y_REPORT", str(tmp_path / "a11y.json"))
    _record("x.html", [{"id": "rule", "impact": "minor"}])
    assert json.loads((tmp_path / "a11y.json").read_text()) == {
        "x.html": [{"id": "rule", "impact": "minor"}]
    }


def test_site_under_test_is_built():
    assert (SITE / "intro.html").is_file(), f"no built site at {SITE}"
