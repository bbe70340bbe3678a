"""The built website in a real browser (headless Chromium): every page, every figure, every slider.

Checks, per page: it loads with no console errors, no failed requests and no request to another host
(the site reads offline); every plotly figure draws (an SVG with traces in it); math typesets;
every slider moves and changes what its figure shows; figures stay visible in light and dark mode
(screenshots go to ``_build/screenshots/`` for a human to look at).
"""

from __future__ import annotations

import io
import re
from pathlib import Path

import pytest

from .conftest import SITE, site_pages

pytestmark = pytest.mark.browser

PAGES = site_pages()
SCREENSHOTS = SITE.parent / "screenshots"
TOC = Path(__file__).resolve().parents[2] / "_toc.yml"

# Console messages that come from third-party code we do not control, each with the reason.
KNOWN_THIRD_PARTY_ERRORS = (
    # sphinx-thebe 0.3.1 writes its inline configuration script twice on every page.
    re.compile(r"Identifier 'THEBE_JS_URL' has already been declared"),
    # pydata-sphinx-theme 0.15 on a reader's first visit (no saved light/dark choice yet).
    re.compile(r"^Got invalid theme mode: \. Resetting to auto\.$"),
)

DRAWN = (
    "() => Array.from(document.querySelectorAll('.bookplot-graph'))"
    ".every(d => d.dataset.drawn === '1')"
)
# MathJax 3: typesetting is done when its startup promise resolves.
MATH_DONE = "async () => { await window.MathJax.startup.promise; return true; }"
# A fingerprint of what a figure shows: visibility and data of every trace, plus slider positions.
FIGURE_STATE = """(div) => {
  const traces = div.data.map(t => (t.visible === false || t.visible === 'legendonly')
      ? null : [t.x, t.y, t.z, t.r, t.theta, t.text]);
  const sliders = (div.layout.sliders || []).map(s => s.active);
  const s = JSON.stringify([traces, sliders]);
  let h = 0;
  for (let i = 0; i < s.length; i++) h = (h * 31 + s.charCodeAt(i)) | 0;
  return [s.length, h, sliders];
}"""


def ours(errors: list[str]) -> list[str]:
    return [e for e in errors if not any(p.search(e) for p in KNOWN_THIRD_PARTY_ERRORS)]


def open_page(recorder, site_url: str, page: str):
    recorder.page.goto(f"{site_url}/{page}", wait_until="load")
    recorder.page.wait_for_function(DRAWN, timeout=30_000)
    if recorder.page.locator(".math").count():
        recorder.page.wait_for_function("() => window.MathJax && MathJax.startup", timeout=30_000)
        recorder.page.evaluate(MATH_DONE)
    return recorder.page


def chapter_pages_in_toc() -> list[str]:
    return [f"{m}.html" for m in re.findall(r"file:\s*(\S+)", TOC.read_text())]


def test_site_has_every_page_of_the_toc():
    assert PAGES, f"no built site at {SITE}: run `make book` first"
    missing = [p for p in ["intro.html", *chapter_pages_in_toc()] if p not in PAGES]
    assert not missing, f"pages in _toc.yml missing from the built site: {missing}"


@pytest.mark.parametrize("page", PAGES)
def test_page_in_the_browser(page, recorder_factory, site_url):
    """One visit per page: loads offline and cleanly, math typeset, figures drawn, sliders work."""
    rec = recorder_factory()
    p = open_page(rec, site_url, page)
    assert not rec.external_requests, f"{page} asked another host: {rec.external_requests}"
    assert not rec.failed_requests, f"{page} has broken resources: {rec.failed_requests}"
    assert not ours(rec.console_errors), f"{page} console errors: {ours(rec.console_errors)}"
    check_math(p, page)
    check_figures_render(p, page)
    check_sliders_move(p, page)
    assert not ours(rec.console_errors), (
        f"{page}: console errors while sliding: {rec.console_errors}"
    )


def check_math(p, page: str) -> None:
    n_math = p.locator(".math").count()
    raw_left = p.evaluate(
        "() => Array.from(document.querySelectorAll('.math'))"
        ".filter(e => !e.querySelector('mjx-container')).length"
    )
    assert raw_left == 0, f"{page}: {raw_left} of {n_math} math elements left as raw LaTeX"


def check_figures_render(p, page: str) -> None:
    figures = p.locator(".bookplot-graph")
    for i in range(figures.count()):
        fig = figures.nth(i)
        fig.scroll_into_view_if_needed()
        n_marks = fig.evaluate(
            "d => d.querySelectorAll('.main-svg .trace, .main-svg .hm, .main-svg image, "
            ".main-svg .heatmaplayer *, .main-svg .table').length"
        )
        assert n_marks > 0, f"{page}: figure {i} drew no trace"
        box = fig.bounding_box()
        assert box and box["height"] > 150 and box["width"] > 300, f"{page}: figure {i} is {box}"


def check_sliders_move(p, page: str) -> None:
    figures = p.locator(".bookplot-graph")
    for i in range(figures.count()):
        fig = figures.nth(i)
        n_sliders = fig.evaluate("d => (d.layout.sliders || []).length")
        for s in range(n_sliders):
            # plotly draws every slider of a figure inside one .slider-container.
            rail = fig.locator(".slider-rail-rect").nth(s)
            rail.scroll_into_view_if_needed()
            before = fig.evaluate(FIGURE_STATE)
            box = rail.bounding_box()
            active = before[2][s] or 0
            n_steps = fig.evaluate(f"d => d.layout.sliders[{s}].steps.length")
            # Click the rail's far end from the current step.
            frac = 0.97 if active < n_steps / 2 else 0.03
            p.mouse.click(box["x"] + box["width"] * frac, box["y"] + box["height"] / 2)
            p.wait_for_timeout(300)
            after = fig.evaluate(FIGURE_STATE)
            assert after[2][s] != active, f"{page}: figure {i} slider {s} did not move"
            assert after[:2] != before[:2], f"{page}: figure {i} slider {s} changed nothing shown"


def _ink(png: bytes) -> tuple[float, int]:
    from PIL import Image, ImageStat

    image = Image.open(io.BytesIO(png)).convert("RGB")
    stddev = sum(ImageStat.Stat(image.convert("L")).stddev)
    colours = len(image.quantize(colors=64).getcolors() or [])
    return stddev, colours


@pytest.mark.parametrize("page", [p for p in PAGES if p.startswith("chapters/")])
@pytest.mark.parametrize("mode", ["light", "dark"])
def test_figures_readable_in_light_and_dark_mode(page, mode, recorder_factory, site_url):
    rec = recorder_factory(color_scheme=mode)
    # pydata-sphinx-theme reads the reader's choice from localStorage before it paints.
    rec.page.add_init_script(
        f"localStorage.setItem('mode', '{mode}');localStorage.setItem('theme', '{mode}');"
    )
    p = open_page(rec, site_url, page)
    assert p.evaluate("document.documentElement.dataset.theme") == mode
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    stem = page.replace("/", "_").removesuffix(".html")
    p.screenshot(path=str(SCREENSHOTS / f"{stem}-{mode}.png"))
    figures = p.locator(".bookplot-graph")
    expected_font = "#e6e6e6" if mode == "dark" else "#222222"
    for i in range(figures.count()):
        fig = figures.nth(i)
        fig.scroll_into_view_if_needed()
        font = fig.evaluate("d => d._fullLayout.font.color")
        assert font == expected_font, f"{page}: figure {i} font {font} in {mode} mode"
        stddev, colours = _ink(fig.screenshot())
        assert stddev > 5 and colours > 3, f"{page}: figure {i} looks blank in {mode} mode"
