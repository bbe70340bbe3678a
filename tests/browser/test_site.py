"""The built website in a real browser (headless Chromium): every page, every figure, every slider.

Checks, per page: it loads with no console errors, no failed requests and no request to another host
(the site reads offline); it shows exactly as many figures as its notebook has plotly outputs; each
figure is drawn when it scrolls into view (not before it nears the viewport, and in the height that
was reserved for it), draws marks, and has a visible trace with finite data; math arrives typeset
(SVG rendered at build time); every slider moves and changes what its figure shows; figures stay
visible in light and dark mode (screenshots go to ``screenshots/`` beside the site for a human to
look at); a first visit to a chapter stays within the byte budgets; Thebe's configuration points
at this repository, branch, kernel and notebook folder.
"""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import pytest
import yaml

from bookext.plotly_mime import BUNDLE_TRACES, PLOTLY_JS_NAME, PLOTLY_MIME
from bookext.sitebudget import BYTE_BUDGETS, transfer_sizes

from .conftest import ROOT, SITE, site_pages

pytestmark = pytest.mark.browser

PAGES = site_pages()
SCREENSHOTS = SITE.parent / "screenshots"
TOC = Path(__file__).resolve().parents[2] / "_toc.yml"

# Console messages that come from third-party code we do not control, each with the reason.
KNOWN_THIRD_PARTY_ERRORS = (
    # pydata-sphinx-theme 0.15 on a reader's first visit (no saved light/dark choice yet).
    re.compile(r"^Got invalid theme mode: \. Resetting to auto\.$"),
)

# Scroll each figure into view in turn (figures are drawn when they near the viewport) and wait
# until it is drawn; returns how many figures the page has.
DRAW_ALL = """async () => {
  const divs = Array.from(document.querySelectorAll('.bookplot-graph'));
  for (const d of divs) {
    d.scrollIntoView({block: 'center'});
    const t0 = performance.now();
    while (d.dataset.drawn !== '1') {
      if (performance.now() - t0 > 30000) throw new Error(d.id + ' was not drawn within 30 s');
      await new Promise(r => setTimeout(r, 20));
    }
  }
  window.scrollTo(0, 0);
  return divs.length;
}"""
# Per figure: does some visible trace hold a drawable point? A heatmap: some finite z. Otherwise some
# index where both coordinates are present (neither null nor a non-finite number; a missing x is
# plotly's 0, 1, 2, ...). Reads plotly's resolved _fullData.
HAS_FINITE_DATA = """(div) => {
  const arr = (a) => Array.isArray(a) ? a : (ArrayBuffer.isView(a) ? Array.from(a) : null);
  const finite = (v) => (typeof v === 'number' && Number.isFinite(v)) ||
      (typeof v === 'string' && v.trim() !== '' && Number.isFinite(Number(v)));
  const present = (v) => v !== null && v !== undefined && v !== '' &&
      !(typeof v === 'number' && !Number.isFinite(v));
  const flat = (a) => { const x = arr(a); return x ? x.flatMap((r) => arr(r) || [r]) : []; };
  return (div._fullData || []).some((t) => {
    if (t.visible !== true) return false;
    if (t.z !== undefined) return flat(t.z).some(finite);
    const xs = arr(t.x), ys = arr(t.y);
    if (!xs && !ys) return false;
    const n = Math.max(xs ? xs.length : 0, ys ? ys.length : 0);
    for (let i = 0; i < n; i++) {
      const x = xs ? xs[i] : i, y = ys ? ys[i] : i;
      if (present(x) && present(y) && (finite(x) || finite(y))) return true;
    }
    return false;
  });
}"""
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
    """Load ``page``, then scroll every figure into view until each is drawn."""
    recorder.page.goto(f"{site_url}/{page}", wait_until="load")
    recorder.page.evaluate(DRAW_ALL)
    return recorder.page


def chapter_pages_in_toc() -> list[str]:
    return [f"{m}.html" for m in re.findall(r"file:\s*(\S+)", TOC.read_text())]


def expected_figures(page: str) -> int:
    """Plotly outputs the page's notebook shows (cells whose output is removed excluded)."""
    notebook = ROOT / page.replace(".html", ".ipynb")
    if not notebook.is_file():
        return 0
    count = 0
    for cell in json.loads(notebook.read_text(encoding="utf-8"))["cells"]:
        tags = set(cell.get("metadata", {}).get("tags", []))
        if tags & {"remove-output", "remove-cell"}:
            continue
        count += sum(PLOTLY_MIME in out.get("data", {}) for out in cell.get("outputs", []))
    return count


def test_site_has_every_page_of_the_toc():
    missing = [p for p in ["intro.html", *chapter_pages_in_toc()] if p not in PAGES]
    assert not missing, f"pages in _toc.yml missing from the built site: {missing}"


@pytest.mark.parametrize("page", PAGES)
def test_page_in_the_browser(page, recorder_factory, site_url):
    """One visit per page: loads offline and cleanly, math typeset, figures drawn, sliders work."""
    rec = recorder_factory()
    rec.page.goto(f"{site_url}/{page}", wait_until="load")
    p = rec.page
    expected = expected_figures(page)
    if page.startswith("chapters/"):
        # Every chapter keeps at least one figure: "all drawn" must not pass on an empty page.
        assert expected > 0, f"{page}: its notebook has no plotly output"
    n_figures = p.locator(".bookplot-graph").count()
    assert n_figures == expected, (
        f"{page} shows {n_figures} figures, its notebook has {expected} plotly outputs"
    )
    check_drawn_lazily(p, page)
    assert p.evaluate(DRAW_ALL) == expected
    assert not rec.external_requests, f"{page} asked another host: {rec.external_requests}"
    assert not rec.failed_requests, f"{page} has broken resources: {rec.failed_requests}"
    assert not ours(rec.console_errors), f"{page} console errors: {ours(rec.console_errors)}"
    check_math(p, page)
    check_figures_render(p, page)
    check_sliders_move(p, page)
    assert not ours(rec.console_errors), (
        f"{page}: console errors while sliding: {rec.console_errors}"
    )


def check_drawn_lazily(p, page: str) -> None:
    """At load only figures near the first screen are drawn; the rest keep their reserved height."""
    state = p.evaluate(
        """() => Array.from(document.querySelectorAll('.bookplot-graph')).map(d => {
          const r = d.getBoundingClientRect();
          return {id: d.id, top: r.top + scrollY, height: r.height, drawn: d.dataset.drawn === '1',
                  reserved: parseFloat(d.style.height)};
        })"""
    )
    # The observer starts drawing one screen (900 px) ahead; well beyond that nothing is drawn yet.
    far = [f for f in state if f["top"] > 3 * 900]
    assert not [f["id"] for f in far if f["drawn"]], f"{page}: figures drawn long before needed"
    for f in state:
        assert f["reserved"] >= 200 and abs(f["height"] - f["reserved"]) < 1, (
            f"{page}: {f['id']} has no reserved height before drawing: {f}"
        )
    for f in state:
        # Drawing must not change the height the page reserved (no jump while reading).
        p.evaluate("(id) => document.getElementById(id).scrollIntoView({block: 'center'})", f["id"])
        p.wait_for_function(
            "(id) => document.getElementById(id).dataset.drawn === '1'", arg=f["id"], timeout=30_000
        )
        height = p.evaluate(
            "(id) => document.getElementById(id).getBoundingClientRect().height", f["id"]
        )
        assert abs(height - f["reserved"]) < 1, (
            f"{page}: {f['id']} jumped {f['reserved']} -> {height}"
        )


# Jump around the page (bottom, middle, top), then through every screen, one animation frame per
# position and no waiting for any figure: every figure has been within a screen of the viewport.
JUMP_SCROLL = """async () => {
  const frame = () => new Promise(r => requestAnimationFrame(() => r()));
  const end = () => document.documentElement.scrollHeight - innerHeight;
  for (const y of [end(), end() / 2, 0, end(), 0]) { scrollTo(0, y); await frame(); }
  for (let y = 0; y <= end(); y += innerHeight / 2) { scrollTo(0, y); await frame(); }
  for (let y = end(); y >= 0; y -= innerHeight) { scrollTo(0, y); await frame(); }
}"""


@pytest.mark.parametrize("page", ["chapters/08_rope.html", "chapters/09_rope_scaling.html"])
def test_every_figure_is_drawn_after_jump_scrolling(page, recorder_factory, site_url):
    """No figure is left undrawn when the reader jumps around while sections render and resize."""
    rec = recorder_factory()
    p = rec.page
    p.goto(f"{site_url}/{page}", wait_until="domcontentloaded")
    n = p.locator(".bookplot-graph").count()
    assert n == expected_figures(page) > 0
    p.evaluate(JUMP_SCROLL)
    try:
        p.wait_for_function(
            "n => document.querySelectorAll('.bookplot-graph[data-drawn=\"1\"]').length === n",
            arg=n,
            timeout=5_000,
        )
    except Exception:
        undrawn = p.evaluate(
            "() => Array.from(document.querySelectorAll('.bookplot-graph:not([data-drawn])'))"
            ".map(d => d.id)"
        )
        pytest.fail(f"{page}: figures never drawn after jump-scrolling: {undrawn}")
    assert not ours(rec.console_errors), f"{page} console errors: {ours(rec.console_errors)}"


# The figures' own IntersectionObserver never reports them (as when it misses one): only
# bookplot.js's fallback check can draw them.
BLIND_FIGURE_OBSERVER = """(() => {
  const Real = window.IntersectionObserver;
  window.IntersectionObserver = class extends Real {
    observe(el) { if (!el.classList.contains("bookplot-graph")) super.observe(el); }
  };
})();"""


def test_a_figure_the_observer_misses_is_still_drawn(recorder_factory, site_url):
    """bookplot.js's fallback: a figure the observer never reports is drawn when the reader gets there."""
    page = "chapters/09_rope_scaling.html"
    rec = recorder_factory()
    p = rec.page
    p.add_init_script(BLIND_FIGURE_OBSERVER)
    p.goto(f"{site_url}/{page}", wait_until="load")
    ids = p.evaluate(
        "() => Array.from(document.querySelectorAll('.bookplot-graph')).map(d => d.id)"
    )
    assert len(ids) == expected_figures(page) > 1
    target = ids[len(ids) // 2]
    # Scroll there in small steps, one per frame (a reader's scroll), then stop.
    p.evaluate(
        """async (id) => {
          const frame = () => new Promise(r => requestAnimationFrame(() => r()));
          for (let i = 0; i < 40; i++) {
            document.getElementById(id).scrollIntoView({block: "center"});
            await frame();
          }
        }""",
        target,
    )
    p.wait_for_function(
        "(id) => document.getElementById(id).dataset.drawn === '1'", arg=target, timeout=5_000
    )
    # Figures far from where the reader stopped are still not drawn.
    far = p.evaluate(
        """() => Array.from(document.querySelectorAll('.bookplot-graph'))
          .filter(d => Math.abs(d.getBoundingClientRect().top) > 4 * innerHeight)
          .map(d => d.dataset.drawn === '1')"""
    )
    assert far and not any(far), f"{page}: far figures drawn too: {far}"
    assert not ours(rec.console_errors), f"{page} console errors: {ours(rec.console_errors)}"


def check_math(p, page: str) -> None:
    """Math arrives typeset: SVG in every .math element, no raw TeX, no math engine loaded."""
    n_math = p.locator(".math").count()
    raw_left = p.evaluate(
        "() => Array.from(document.querySelectorAll('.math'))"
        ".filter(e => !e.querySelector('mjx-container svg')).length"
    )
    assert raw_left == 0, f"{page}: {raw_left} of {n_math} math elements left as raw LaTeX"
    # What is left of each .math element once its typeset formula and equation number are removed.
    tex_left = p.evaluate(
        """() => Array.from(document.querySelectorAll('.math')).map(e => {
          const c = e.cloneNode(true);
          c.querySelectorAll('mjx-container, .eqno').forEach(n => n.remove());
          return c.textContent.trim();
        }).filter(t => t.length > 0)"""
    )
    assert not tex_left, f"{page}: math elements show TeX source: {tex_left[:3]}"
    assert p.evaluate("() => typeof window.MathJax") == "undefined", f"{page} loads MathJax"
    # Every glyph a formula uses is defined on the page (the shared glyph cache).
    dangling = p.evaluate(
        "() => Array.from(document.querySelectorAll('mjx-container use'))"
        ".map(u => u.getAttribute('href')).filter(h => !document.getElementById(h.slice(1)))"
    )
    assert not dangling, f"{page}: math glyphs with no definition: {sorted(set(dangling))[:5]}"
    # A formula shown on the page (not inside a collapsed cell) has a drawn size.
    blank = p.evaluate(
        """() => Array.from(document.querySelectorAll('.math')).filter(e => e.getClientRects().length)
          .filter(e => { const s = e.querySelector('mjx-container svg').getBoundingClientRect();
                         return !(s.width > 0 && s.height > 0); }).length"""
    )
    assert blank == 0, f"{page}: {blank} visible formulas have no size"


def check_figures_render(p, page: str) -> None:
    figures = p.locator(".bookplot-graph")
    for i in range(figures.count()):
        fig = figures.nth(i)
        fig.scroll_into_view_if_needed()
        assert fig.evaluate("d => d.dataset.drawn") == "1", f"{page}: figure {i} not drawn"
        n_marks = fig.evaluate(
            "d => d.querySelectorAll('.main-svg .trace, .main-svg .hm, .main-svg image, "
            ".main-svg .heatmaplayer *, .main-svg .table').length"
        )
        assert n_marks > 0, f"{page}: figure {i} drew no trace"
        assert fig.evaluate(HAS_FINITE_DATA), f"{page}: figure {i} has no visible finite data"
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


# In both modes, every code block whose plain tokens lost their spans (bookext.pagespeed) draws
# its text in the colour those spans had: a probe span of each plain class, put back into the
# block, must have the block's own colour. Returns the blocks that differ, and how many there are.
CODE_COLOURS = """(classes) => {
  const blocks = Array.from(document.querySelectorAll('div.highlight pre.plain-tokens'));
  const wrong = [];
  for (const pre of blocks) {
    const own = getComputedStyle(pre).color;
    for (const cls of classes) {
      const probe = document.createElement('span');
      probe.className = cls;
      probe.textContent = 'x';
      pre.appendChild(probe);
      const theirs = getComputedStyle(probe).color;
      probe.remove();
      if (theirs !== own) wrong.push([cls, own, theirs]);
    }
  }
  return {blocks: blocks.length, wrong: wrong.slice(0, 5)};
}"""


@pytest.mark.parametrize("mode", ["light", "dark"])
def test_code_blocks_keep_their_colours_without_plain_token_spans(mode, recorder_factory, site_url):
    from bookext.pagespeed import (
        PYGMENTS_CSS,
        _has_bare_text,
        coloured_token_classes,
        plain_token_classes,
    )

    css = (SITE / PYGMENTS_CSS).read_text(encoding="utf-8")
    plain, coloured = sorted(plain_token_classes(css)), coloured_token_classes(css)
    assert {"n", "p", "w"} <= set(plain)
    span = re.compile(r'<span class="(?:{})">'.format("|".join(plain)))
    block = re.compile(r'<div class="highlight"><pre>.*?</pre></div>', re.S)
    for page in PAGES:
        html = (SITE / page).read_text(encoding="utf-8")
        # Only a block with text outside its spans keeps them (that text has <pre>'s colour).
        left = [
            b for b in block.findall(html) if span.search(b) and not _has_bare_text(b, coloured)
        ]
        assert not left, f"{page}: {len(left)} code blocks still wrap plain tokens in spans"
    rec = recorder_factory(color_scheme=mode)
    rec.page.add_init_script(f"localStorage.setItem('mode', '{mode}');")
    rec.page.goto(f"{site_url}/chapters/08_rope.html", wait_until="load")
    assert rec.page.evaluate("document.documentElement.dataset.theme") == mode
    got = rec.page.evaluate(CODE_COLOURS, plain)
    assert got["blocks"] > 20, got
    assert not got["wrong"], f"{mode}: plain text drawn in another colour than its span's: {got}"


def test_finite_data_check_fails_on_a_figure_without_data(recorder_factory, site_url):
    """The per-figure data check is not vacuous: all-null or empty traces fail it."""
    rec = recorder_factory()
    p = rec.page
    p.goto(f"{site_url}/intro.html", wait_until="load")
    p.add_script_tag(url=f"{site_url}/_static/{PLOTLY_JS_NAME}")
    cases = {
        "all null": [{"type": "scatter", "x": [0, 1], "y": [None, None]}],
        "empty": [{"type": "scatter", "x": [], "y": []}],
        "hidden": [{"type": "scatter", "x": [0], "y": [1], "visible": "legendonly"}],
        "null heatmap": [{"type": "heatmap", "z": [[None, None], [None, None]]}],
        "one point": [{"type": "scatter", "x": [0, 1], "y": [None, 2]}],
        "heatmap": [{"type": "heatmap", "z": [[None, 1]]}],
        "horizontal bar": [{"type": "bar", "orientation": "h", "y": ["a"], "x": [3]}],
        "strip": [{"type": "scatter", "x": [0.5, None], "y": ["8 heads", "8 heads"]}],
        "null x": [{"type": "scatter", "x": [None, None], "y": [1, 2]}],
    }
    got = {}
    for name, data in cases.items():
        got[name] = p.evaluate(
            """async ([data, check]) => {
              const div = document.createElement('div');
              document.body.appendChild(div);
              await Plotly.newPlot(div, data, {});
              return eval(check)(div);
            }""",
            [data, HAS_FINITE_DATA],
        )
    assert got == {
        "all null": False,
        "empty": False,
        "hidden": False,
        "null heatmap": False,
        "one point": True,
        "heatmap": True,
        "horizontal bar": True,
        "strip": True,
        "null x": False,
    }


def test_plotly_bundle_draws_exactly_the_trace_types_the_build_allows(recorder_factory, site_url):
    rec = recorder_factory()
    rec.page.goto(f"{site_url}/intro.html", wait_until="load")
    rec.page.add_script_tag(url=f"{site_url}/_static/{PLOTLY_JS_NAME}")
    traces = rec.page.evaluate("() => Object.keys(Plotly.PlotSchema.get().traces)")
    assert set(traces) == BUNDLE_TRACES


CHAPTERS = [p for p in PAGES if p.startswith("chapters/")]


@pytest.mark.parametrize("page", CHAPTERS)
def test_first_visit_to_a_chapter_stays_within_the_byte_budget(page, recorder_factory, site_url):
    """Everything a cold visit loads, every figure drawn: <= 3 MB, and <= 1.2 MB gzip-compressed.

    Uncompressed is what the browser parses; gzip is what a reader transfers (the site's host
    compresses). Both are deterministic, so they are asserted here; times stay in the benchmark.
    """
    rec = recorder_factory()
    urls: list[str] = []
    rec.page.on("requestfinished", lambda req: urls.append(req.url))
    open_page(rec, site_url, page)
    rec.page.wait_for_load_state("networkidle")
    sizes = transfer_sizes(urls, SITE)
    plotly = [f for f, _ in sizes["files"] if "plotly" in f and f.endswith(".js")]
    assert plotly == [f"_static/{PLOTLY_JS_NAME}"], f"{page} loads plotly.js as {plotly}"
    heavy = sorted(sizes["files"], key=lambda f: -f[1])[:5]
    for key in ("raw_bytes", "gzip_bytes"):
        limit = BYTE_BUDGETS[key]
        assert sizes[key] <= limit, f"{page}: {sizes[key]} B ({key}) > {limit}; {heavy}"


def test_plotly_js_is_one_cached_url_across_pages():
    """Every page with figures loads the same plotly.js URL, so the browser fetches it once.

    plotly.js is not a ``<script>`` of the page: bookplot.js loads it from its ``data-plotly``
    attribute (relative to bookplot.js) when it is first needed.
    """
    urls = set()
    for page in PAGES:
        html = (SITE / page).read_text(encoding="utf-8")
        assert not re.findall(r'<script[^>]*src="[^"]*plotly[^"]*"', html), (
            f"{page} loads plotly.js as a script of the page, before its text"
        )
        found = re.findall(r'data-plotly="([^"]+)"[^>]*src="([^"?]+)', html)
        assert len(found) <= 1, f"{page} has {len(found)} plotly loaders"
        if expected_figures(page):
            assert found, f"{page} has figures but no plotly.js"
        for name, script in found:
            path = ((SITE / page).parent / script).parent / name
            assert path.resolve().is_file(), f"{page}: plotly.js at {path} is missing"
            urls.add(path.resolve().relative_to(SITE.resolve()).as_posix())
    assert urls == {f"_static/{PLOTLY_JS_NAME}"}, f"plotly.js under several URLs: {urls}"


def test_search_finds_a_chapter(recorder_factory, site_url):
    """The search page loads its index and lists a chapter (the other pages no longer load it)."""
    rec = recorder_factory()
    rec.page.goto(f"{site_url}/search.html?q=rotary", wait_until="load")
    # Sphinx lists the results one by one; the chapter on RoPE is among them.
    rec.page.wait_for_function(
        """() => Array.from(document.querySelectorAll('#search-results ul.search li a'))
              .some((a) => a.getAttribute('href').includes('08_rope'))""",
        timeout=30_000,
    )
    assert not ours(rec.console_errors), rec.console_errors
    html = (SITE / "chapters" / "08_rope.html").read_text(encoding="utf-8")
    assert "searchindex.js" not in html


CONFIG = yaml.safe_load((ROOT / "_config.yml").read_text())


@pytest.mark.parametrize("page", CHAPTERS)
def test_thebe_configuration(page):
    """Thebe cannot start offline, but what it would ask Binder for can be checked."""
    html = (SITE / page).read_text(encoding="utf-8")
    # Each inline configuration script once (twice made `const THEBE_JS_URL` a SyntaxError).
    inline = re.findall(r"<script>(.*?)</script>", html, re.S)
    repeated = sorted({body for body in inline if inline.count(body) > 1})
    assert not repeated, f"{page} repeats inline scripts: {repeated}"
    assert sum("const THEBE_JS_URL" in body for body in inline) == 1
    configs = re.findall(r'<script type="text/x-thebe-config">(.*?)</script>', html, re.S)
    assert len(configs) == 1, f"{page}: {len(configs)} Thebe configurations"

    def field(name: str) -> str:
        found = re.findall(rf'\b{name}:\s*"([^"]*)"', configs[0])
        assert len(found) == 1, f"{page}: Thebe field {name}: {found}"
        return found[0]

    repo_url = CONFIG["repository"]["url"].rstrip("/")
    assert field("repo") == "/".join(repo_url.split("/")[-2:])
    assert field("ref") == CONFIG["repository"]["branch"]
    notebook = ROOT / page.replace(".html", ".ipynb")
    kernelspec = json.loads(notebook.read_text(encoding="utf-8"))["metadata"]["kernelspec"]
    assert field("name") == kernelspec["name"], f"{page}: Thebe kernel is not the notebook's"
    assert field("mode") == kernelspec.get("language", "python")
    # The kernel starts in the notebook's own folder, so the chapter's relative paths work.
    path = Path(CONFIG["repository"].get("path_to_book") or ".") / field("path")
    assert (ROOT / path).resolve() == notebook.parent.resolve(), f"{page}: Thebe path {path}"
    assert (ROOT / path / notebook.name).is_file()
    assert "requestKernel: true" in configs[0]
