"""Measure what readers and maintainers feel: chapter run time and memory, build time, page weight,
and the speed of ``lib.rope.apply_rope``. Writes ``bench/results.json`` and ``bench/results.md`` and
refreshes the figures in README.md.

    make bench                      # everything (about 15–20 minutes on 2 cores)
    python -m bench.run --only rope # one part: chapters, build, site, pages, rope
    python -m bench.run --only pages --site /tmp/x/_build/html   # page loads of another build

Page loads (``pages``): every chapter page and the intro in headless Chromium (Debian's, driven by
Playwright; never a downloaded browser), served from localhost, each run in a fresh browser context
(cold cache), median of ``--runs`` (default 3). Per page: the first screen readable (its text, its
math and every figure in the first viewport drawn), every further figure drawn after it scrolls
into view, everything drawn and typeset after scrolling through the page, and the bytes loaded,
uncompressed and gzip-compressed (level 6, as a web server would send them).

The run exits with status 1 and names every budget it missed.

Each chapter runs in a fresh kernel; its peak resident memory is sampled from outside (psutil, every
20 ms, kernel process and its children). The floor is a notebook that only starts a kernel and imports
torch, plotly and lib: the ratio chapter/floor shows what the chapter itself costs.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "bench"
BUDGETS = {
    "chapter_seconds": 30.0,
    "lab_chapter_seconds": 120.0,  # the developers' guide: the lab <= 120 s
    "chapter_peak_mb": 1024.0,
    "clean_build_seconds": 360.0,
    "page_mb": 1.5,
    # Page loads (issue "reader speed"), headless Chromium on localhost, cold cache.
    "first_screen_s": 1.0,
    "first_screen_over_intro": 2.0,
    "draw_after_visible_s": 0.3,
    "all_drawn_s": 2.5,
}
LAB_CHAPTER = "13_comparison_lab"
sys.path.insert(0, str(ROOT))
# Byte budgets are deterministic, so the browser test asserts them too (tests/browser/test_site.py).
from bookext.localsite import CHROMIUM_ARGS, VIEWPORT, find_chromium, serve_site  # noqa: E402
from bookext.sitebudget import BYTE_BUDGETS, transfer_sizes  # noqa: E402


# --------------------------------------------------------------------------- chapters
def _sample_peak_rss(pid: int, stop: threading.Event, peak: list[int]) -> None:
    import psutil

    try:
        proc = psutil.Process(pid)
    except psutil.NoSuchProcess:
        return
    while not stop.is_set():
        try:
            rss = proc.memory_info().rss + sum(
                c.memory_info().rss for c in proc.children(recursive=True)
            )
            peak[0] = max(peak[0], rss)
        except psutil.NoSuchProcess:
            return
        time.sleep(0.02)


def run_notebook(nb) -> tuple[float, float]:
    """Execute ``nb`` in a fresh kernel started in chapters/; return (wall seconds, peak RSS MB)."""
    from jupyter_client.manager import KernelManager
    from nbclient import NotebookClient

    km = KernelManager(kernel_name="python3")
    km.start_kernel(cwd=str(ROOT / "chapters"))
    pid = km.provisioner.process.pid
    stop, peak = threading.Event(), [0]
    sampler = threading.Thread(target=_sample_peak_rss, args=(pid, stop, peak), daemon=True)
    sampler.start()
    start = time.perf_counter()
    try:
        client = NotebookClient(nb, km=km, timeout=600, store_widget_state=False)
        client.execute()
        wall = time.perf_counter() - start
    finally:
        stop.set()
        sampler.join()
        km.shutdown_kernel(now=True)
    return wall, peak[0] / 2**20


def bench_chapters() -> dict:
    import nbformat

    floor_nb = nbformat.v4.new_notebook(
        cells=[
            nbformat.v4.new_code_cell("import torch, plotly, plotly.graph_objects, lib, lib.viz")
        ]
    )
    floor_wall, floor_mb = run_notebook(floor_nb)
    rows = []
    for path in sorted((ROOT / "chapters").glob("*.ipynb")):
        nb = nbformat.read(path, as_version=4)
        wall, peak = run_notebook(nb)
        budget = BUDGETS["lab_chapter_seconds" if path.stem == LAB_CHAPTER else "chapter_seconds"]
        rows.append(
            {
                "chapter": path.stem,
                "wall_s": round(wall, 2),
                "peak_mb": round(peak, 1),
                "wall_over_floor": round(wall / floor_wall, 2),
                "peak_over_floor": round(peak / floor_mb, 2),
                "within_budget": wall <= budget and peak <= BUDGETS["chapter_peak_mb"],
            }
        )
        print(f"  {path.stem}: {wall:.1f} s, {peak:.0f} MB", flush=True)
    return {"floor": {"wall_s": round(floor_wall, 2), "peak_mb": round(floor_mb, 1)}, "rows": rows}


# --------------------------------------------------------------------------- build
def bench_build() -> dict:
    target = Path("/tmp") / "embeddings-book-bench-build"
    shutil.rmtree(target, ignore_errors=True)
    cmd = [
        str(Path(sys.executable).parent / "jupyter-book"),
        "build",
        str(ROOT),
        "--path-output",
        str(target),
    ]
    times = {}
    for label in ("clean_build_s", "rebuild_unchanged_s"):
        start = time.perf_counter()
        subprocess.run(cmd, check=True, capture_output=True, cwd=ROOT)
        times[label] = round(time.perf_counter() - start, 1)
        print(f"  {label}: {times[label]} s", flush=True)
    times["within_budget"] = times["clean_build_s"] <= BUDGETS["clean_build_seconds"]
    times["site"] = str(target / "_build" / "html")
    return times


# --------------------------------------------------------------------------- site
def _page_assets(html_path: Path, site: Path) -> list[Path]:
    from bs4 import BeautifulSoup

    soup = BeautifulSoup(html_path.read_text(encoding="utf-8"), "html.parser")
    assets = []
    # bookplot.js loads plotly.js itself, from its data-plotly attribute (relative to the script).
    for el in soup.find_all("script", attrs={"data-plotly": True, "src": True}):
        path = ((html_path.parent / el["src"].split("?")[0]).parent / el["data-plotly"]).resolve()
        if path.is_file() and site in path.parents:
            assets.append(path)
    for tag, attr in (("script", "src"), ("link", "href"), ("img", "src")):
        for el in soup.find_all(tag, attrs={attr: True}):
            if tag == "link" and "stylesheet" not in (el.get("rel") or []):
                continue
            url = el[attr].split("?")[0].split("#")[0]
            if re.match(r"^[a-z]+:", url):
                continue
            path = (html_path.parent / url).resolve()
            if path.is_file() and site in path.parents:
                assets.append(path)
    return assets


def _is_plotly(path: Path) -> bool:
    return path.name.startswith("plotly") and path.suffix == ".js"


def bench_site(site: Path) -> dict:
    rows = []
    for page in sorted(site.rglob("*.html")):
        rel = page.relative_to(site).as_posix()
        if rel.startswith(("_static/", "_sources/")):
            continue
        assets = _page_assets(page, site)
        plotly = [a for a in assets if _is_plotly(a)]
        others = sum(a.stat().st_size for a in assets if not _is_plotly(a))
        html_mb = page.stat().st_size / 1e6
        rows.append(
            {
                "page": rel,
                "html_mb": round(html_mb, 3),
                "assets_mb_without_plotly": round(others / 1e6, 3),
                "loads_plotly": bool(plotly),
                "within_budget": html_mb <= BUDGETS["page_mb"],
            }
        )
    plotly_js = next((p for p in (site / "_static").glob("plotly*.js") if _is_plotly(p)), None)
    total = sum(p.stat().st_size for p in site.rglob("*") if p.is_file())
    return {
        "rows": rows,
        "plotly_js_mb": round(plotly_js.stat().st_size / 1e6, 2) if plotly_js else None,
        "site_total_mb": round(total / 1e6, 1),
    }


# --------------------------------------------------------------------------- pages
def chromium_path() -> str:
    path = find_chromium()
    if path is None:
        raise SystemExit("Chromium not found: apt-get install chromium, or set $CHROMIUM")
    return path


# Installed before any page script: records when each figure is drawn (bookplot.js sets
# data-drawn="1"), when it first enters the viewport, which figures the first screen holds, and,
# for a page that typesets math in the browser, when MathJax has finished.
TIMING_JS = """
(() => {
  const b = window.__bench = {drawn: {}, visible: {}, firstScreen: null, mathDone: null,
                              hasMath: false, dcl: null};
  new MutationObserver((muts) => {
    for (const m of muts) {
      if (m.target.dataset && m.target.dataset.drawn === "1" && !(m.target.id in b.drawn)) {
        b.drawn[m.target.id] = performance.now();
      }
    }
  }).observe(document, {attributes: true, subtree: true, attributeFilter: ["data-drawn"]});
  const poll = setInterval(() => {
    const mj = window.MathJax;
    if (mj && mj.startup && mj.startup.promise) {
      clearInterval(poll);
      mj.startup.promise.then(() => { b.mathDone = performance.now(); });
    }
  }, 5);
  document.addEventListener("DOMContentLoaded", () => {
    b.dcl = performance.now();
    b.hasMath = document.querySelector(".math") !== null;
    if (!document.querySelector('script[src*="mathjax"]')) clearInterval(poll);
    const figs = Array.from(document.querySelectorAll(".bookplot-graph"));
    b.nFigures = figs.length;
    // Which figures are in view comes from an IntersectionObserver, not from getBoundingClientRect
    // here: that would force the browser to lay out, at once, every section holding a figure,
    // sections it otherwise skips until they near the screen (reading.css), and the benchmark
    // would time its own work. b.inView follows the viewport (a section above may still change
    // height); FIRST_SCREEN_DONE takes the first screen to be those in view once all are drawn.
    b.inView = {};
    const io = new IntersectionObserver((entries) => {
      b.ioReady = true;
      for (const e of entries) {
        if (e.isIntersecting) b.inView[e.target.id] = true;
        else delete b.inView[e.target.id];
        if (e.isIntersecting && !(e.target.id in b.visible)) b.visible[e.target.id] = e.time;
      }
    });
    figs.forEach((d) => io.observe(d));
  });
})();
"""
FIRST_SCREEN_DONE = """() => {
  const b = window.__bench;
  if (!b || b.dcl === null || (b.nFigures && !b.ioReady)) return false;
  if (b.hasMath && document.querySelector('script[src*="mathjax"]') && b.mathDone === null)
    return false;
  const shown = Object.keys(b.inView || {});
  if (!shown.every((id) => id in b.drawn)) return false;
  b.firstScreen = shown;
  return true;
}"""
# A reader scrolling through the whole page, run inside it (no round trip to Python per screen,
# whose latency would count in "all drawn"): scroll one screen, wait (one check per animation
# frame) until every figure in view is drawn, the next screen, until the end; then wait for the
# math. A figure is in view when its box meets the viewport; its box is read only once each
# section around it does (outermost first): a section the browser skips (content-visibility,
# reading.css) is not laid out for the benchmark's sake.
SCROLL_THROUGH = """async () => {
  const frame = () => new Promise((r) => requestAnimationFrame(() => r()));
  const deadline = performance.now() + 60000;
  const meets = (el) => { const r = el.getBoundingClientRect();
                          return r.bottom > 0 && r.top < innerHeight; };
  const inView = (d) => {
    const chain = [];
    for (let s = d.parentElement; s; s = s.parentElement) if (s.tagName === "SECTION") chain.unshift(s);
    return chain.slice(1).every(meets) && meets(d);
  };
  const figs = Array.from(document.querySelectorAll(".bookplot-graph"));
  const until = async (done, what) => {
    while (!done()) {
      if (performance.now() > deadline) throw new Error("bench: timed out waiting for " + what);
      await frame();
    }
  };
  const inViewDrawn = () => figs.every((d) => d.dataset.drawn === "1" || !inView(d));
  const b = window.__bench;
  const mathDone = () => !b.hasMath || !document.querySelector('script[src*="mathjax"]')
                         || b.mathDone !== null;
  for (;;) {
    await until(inViewDrawn, "the figures in view at " + scrollY);
    const before = scrollY;
    scrollBy(0, innerHeight);
    if (scrollY === before) break;
    await frame();
  }
  await until(() => mathDone() && figs.every((d) => d.dataset.drawn === "1"), "all drawn");
  return b;
}"""


def load_page(browser, base: str, page: str, site: Path) -> dict:
    """One cold visit: first screen, then scroll through the page one screen at a time."""
    from urllib.parse import urlparse

    context = browser.new_context(viewport=VIEWPORT)
    try:
        tab = context.new_page()
        urls: list[str] = []
        external: list[str] = []
        local = urlparse(base).netloc

        def route(r):
            if urlparse(r.request.url).netloc in (local, ""):
                r.continue_()
            else:
                external.append(r.request.url)
                r.abort()

        tab.route("**/*", route)
        tab.on("requestfinished", lambda req: urls.append(req.url))
        tab.add_init_script(TIMING_JS)
        tab.goto(f"{base}/{page}", wait_until="commit")
        tab.wait_for_function(FIRST_SCREEN_DONE, timeout=60_000, polling=10)
        first = tab.evaluate(
            """() => { const b = window.__bench;
              const fcp = performance.getEntriesByName("first-contentful-paint")[0];
              const t = [b.dcl, fcp ? fcp.startTime : b.dcl,
                         ...b.firstScreen.map((id) => b.drawn[id])];
              if (b.mathDone !== null) t.push(b.mathDone);
              return {first: Math.max(...t), fcp: fcp ? fcp.startTime : null}; }"""
        )
        b = tab.evaluate(SCROLL_THROUGH)
        tab.wait_for_load_state("load")
    finally:
        context.close()
    first_screen = set(b["firstScreen"] or [])
    later = [
        max(0.0, b["drawn"][fid] - b["visible"][fid])
        for fid in b["drawn"]
        if fid not in first_screen and fid in b["visible"]
    ]
    ends = [*b["drawn"].values(), b["dcl"]]
    if b["mathDone"] is not None:
        ends.append(b["mathDone"])
    sizes = transfer_sizes(urls, site)
    return {
        "figures": b["nFigures"],
        "first_screen_figures": len(first_screen),
        "fcp_s": (first["fcp"] or 0) / 1e3,
        "first_screen_s": first["first"] / 1e3,
        "all_drawn_s": max(ends) / 1e3,
        "draw_after_visible_s": max(later, default=0.0) / 1e3,
        "raw_bytes": sizes["raw_bytes"],
        "gzip_bytes": sizes["gzip_bytes"],
        "requests": sizes["requests"],
        "external_requests": external,
    }


def bench_pages(site: Path, runs: int = 5) -> dict:
    from playwright.sync_api import sync_playwright

    if not (site / "intro.html").is_file():
        raise SystemExit(f"no built site at {site}: build it first (make book)")
    chapters = sorted(p.relative_to(site).as_posix() for p in (site / "chapters").glob("*.html"))
    pages = ["intro.html", *chapters]
    rows = []
    with serve_site(site) as base, sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium_path(), args=list(CHROMIUM_ARGS))
        version = browser.version
        load_page(browser, base, "intro.html", site)  # warm the browser process itself
        for page in pages:
            samples = [load_page(browser, base, page, site) for _ in range(runs)]
            row = {"page": page, **samples[0]}
            for key in ("fcp_s", "first_screen_s", "all_drawn_s", "draw_after_visible_s"):
                row[key] = round(statistics.median(s[key] for s in samples), 3)
                row[key + "_runs"] = [round(s[key], 3) for s in samples]
            rows.append(row)
            print(
                f"  {page}: first screen {row['first_screen_s']:.2f} s, all drawn "
                f"{row['all_drawn_s']:.2f} s, {row['raw_bytes'] / 1e6:.2f} MB "
                f"({row['gzip_bytes'] / 1e6:.2f} MB gzip)",
                flush=True,
            )
        browser.close()
    intro = rows[0]["first_screen_s"]
    for row in rows:
        row["first_screen_over_intro"] = round(row["first_screen_s"] / intro, 2)
        row["missed"] = page_budgets_missed(row)
    return {
        "runs": runs,
        # Page times depend on the browser's version as well as the machine: recorded so that two
        # runs can be compared (the same site's heavy pages have measured up to 2x apart).
        "chromium": version,
        "load_average": [round(x, 2) for x in os.getloadavg()],
        "viewport": VIEWPORT,
        "rows": rows,
    }


def page_budgets_missed(row: dict) -> list[str]:
    """The page-load budgets ``row`` misses (the intro has figures' budgets only by ratio)."""
    missed = []
    if not row["page"].startswith("chapters/"):
        return missed
    checks = [
        ("first_screen_s", BUDGETS["first_screen_s"]),
        ("first_screen_over_intro", BUDGETS["first_screen_over_intro"]),
        ("draw_after_visible_s", BUDGETS["draw_after_visible_s"]),
        ("all_drawn_s", BUDGETS["all_drawn_s"]),
        ("raw_bytes", BYTE_BUDGETS["raw_bytes"]),
        ("gzip_bytes", BYTE_BUDGETS["gzip_bytes"]),
    ]
    for key, limit in checks:
        if row[key] > limit:
            missed.append(f"{key} {row[key]} > {limit}")
    if row["external_requests"]:
        missed.append(f"requests to other hosts: {row['external_requests']}")
    return missed


# --------------------------------------------------------------------------- rope
def _time(fn, repeat: int = 7) -> float:
    fn()  # warm-up
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def bench_rope() -> dict:
    import torch

    from lib.rope import apply_rope, rope_frequencies

    def rotate_half(x):
        x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2 :]
        return torch.cat((-x2, x1), dim=-1)

    shape = (1, 32, 4096, 128)
    cos_half, sin_half = rope_frequencies(128, max_len=4096)
    rows = []
    for dtype in (torch.float32, torch.bfloat16):
        q = torch.randn(shape, generator=torch.Generator().manual_seed(0)).to(dtype)
        # transformers' formula: cos/sin duplicated to the full head width, in the input's dtype.
        cos = torch.cat((cos_half, cos_half), dim=-1).to(dtype)
        sin = torch.cat((sin_half, sin_half), dim=-1).to(dtype)
        t_hf = _time(lambda q=q, cos=cos, sin=sin: q * cos + rotate_half(q) * sin)
        t_lib = _time(lambda q=q: apply_rope(q, cos_half, sin_half, pairing="half"))
        t_copy = _time(lambda q=q: q.clone())
        rows.append(
            {
                "dtype": str(dtype).removeprefix("torch."),
                "apply_rope_ms": round(t_lib * 1e3, 2),
                "transformers_formula_ms": round(t_hf * 1e3, 2),
                "memory_copy_ms": round(t_copy * 1e3, 2),
                "lib_over_transformers": round(t_lib / t_hf, 2),
                "lib_over_copy": round(t_lib / t_copy, 2),
                "within_budget": t_lib <= t_hf * 1.05,
            }
        )
        print(
            f"  {dtype}: lib {t_lib * 1e3:.1f} ms, hf {t_hf * 1e3:.1f} ms, copy "
            f"{t_copy * 1e3:.1f} ms",
            flush=True,
        )
    return {"shape": list(shape), "threads": torch.get_num_threads(), "rows": rows}


# --------------------------------------------------------------------------- report
def _cpu_model() -> str:
    """The CPU's model name (/proc/cpuinfo on Linux), else what platform knows."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def machine() -> dict:
    import torch

    return {
        "date": time.strftime("%Y-%m-%d"),
        "cpu": _cpu_model(),
        "cores": os.cpu_count(),
        "python": platform.python_version(),
        "torch": torch.__version__,
    }


PAGE_TIMES = ("first_screen_s", "first_screen_over_intro", "all_drawn_s", "draw_after_visible_s")


def _table(columns: str, rows: list[list]) -> list[str]:
    """A Markdown table: ``columns`` is "a|b>|c", a ``>`` ending a right-aligned (numeric) column."""
    names = columns.split("|")
    lines = [
        "| " + " | ".join(n.rstrip(">") for n in names) + " |",
        "| " + " | ".join("---:" if n.endswith(">") else "---" for n in names) + " |",
    ]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    return [*lines, ""]


def markdown(results: dict) -> str:
    lines = [
        f"Measured on {results['machine']['date']}: {results['machine']['cores']} cores "
        f"({results['machine']['cpu']}), "
        f"Python {results['machine']['python']}, torch {results['machine']['torch']}.",
        "",
    ]
    if "chapters" in results:
        ch = results["chapters"]
        lines += [
            f"**Chapters** (fresh kernel each; floor = start a kernel and import torch, plotly and "
            f"lib: {ch['floor']['wall_s']} s, {ch['floor']['peak_mb']} MB):",
            "",
        ]
        lines += _table(
            "chapter|wall (s)>|peak memory (MB)>|wall / floor>|memory / floor>|budget",
            [
                [
                    *(r[k] for k in ("chapter", "wall_s", "peak_mb")),
                    *(r[k] for k in ("wall_over_floor", "peak_over_floor")),
                    "met" if r["within_budget"] else "MISSED",
                ]
                for r in ch["rows"]
            ],
        )
    if "build" in results:
        b = results["build"]
        lines += [
            f"**Book build**: clean, executing every chapter: {b['clean_build_s']} s "
            f"(budget 360 s: {'met' if b['within_budget'] else 'MISSED'}); rebuild with "
            f"nothing changed: {b['rebuild_unchanged_s']} s.",
            "",
        ]
    if "site" in results:
        s = results["site"]
        heaviest = max(s["rows"], key=lambda r: r["html_mb"])
        lines += [
            f"**Site**: {s['site_total_mb']} MB in all; plotly.js {s['plotly_js_mb']} MB, "
            f"loaded once and cached by pages with figures; heaviest page "
            f"{heaviest['page']} at {heaviest['html_mb']} MB of HTML (budget 1.5 MB).",
            "",
        ]
        lines += _table(
            "page|HTML (MB)>|other assets (MB, plotly.js excluded)>|loads plotly.js",
            [
                [
                    *(r[k] for k in ("page", "html_mb", "assets_mb_without_plotly")),
                    "yes" if r["loads_plotly"] else "no",
                ]
                for r in s["rows"]
            ],
        )
    if "pages" in results:
        pg = results["pages"]
        lines += [
            f"**Page loads** (headless Chromium, localhost, cold cache, fresh context per run, "
            f"median of {pg['runs']}; Chromium {pg.get('chromium', '?')}; load average during the "
            f"run {pg['load_average']}). "
            f"Budgets per chapter page: first screen ≤ {BUDGETS['first_screen_s']} s and "
            f"≤ {BUDGETS['first_screen_over_intro']}× the intro's, each further figure drawn "
            f"≤ {BUDGETS['draw_after_visible_s']} s after it scrolls into view, whole page drawn "
            f"≤ {BUDGETS['all_drawn_s']} s, ≤ {BYTE_BUDGETS['raw_bytes'] / 1e6:g} MB loaded "
            f"(≤ {BYTE_BUDGETS['gzip_bytes'] / 1e6:g} MB gzip):",
            "",
        ]
        rows = []
        for r in pg["rows"]:
            verdict = "MISSED: " + "; ".join(r["missed"]) if r["missed"] else "met"
            if not r["page"].startswith("chapters/"):
                verdict = "(reference)"
            rows.append(
                [r["page"], r["figures"]]
                + [f"{r[k]:.2f}" for k in PAGE_TIMES]
                + [f"{r['raw_bytes'] / 1e6:.2f}", f"{r['gzip_bytes'] / 1e6:.2f}", verdict]
            )
        lines += _table(
            "page|figures>|first screen (s)>|/ intro>|all drawn (s)>"
            "|drawn after in view (s, max)>|loaded (MB)>|gzip (MB)>|budget",
            rows,
        )
    if "rope" in results:
        rp = results["rope"]
        lines += [
            f"**apply_rope** on {rp['shape']} ({rp['threads']} threads), median of 7:",
            "",
        ]
        lines += _table(
            "dtype|lib.rope.apply_rope (ms)>|transformers formula (ms)>|memory copy (ms)>"
            "|lib / transformers>|lib / copy>",
            [
                [r[k] for k in ("dtype", "apply_rope_ms", "transformers_formula_ms")]
                + [r[k] for k in ("memory_copy_ms", "lib_over_transformers", "lib_over_copy")]
                for r in rp["rows"]
            ],
        )
    return "\n".join(lines)


def update_readme(md: str) -> None:
    readme = ROOT / "README.md"
    text = readme.read_text()
    start, end = "<!-- bench:start -->", "<!-- bench:end -->"
    block = f"{start}\nLatest figures (`make bench`):\n\n{md}\n{end}"
    if start in text:
        text = re.sub(re.escape(start) + ".*?" + re.escape(end), lambda _: block, text, flags=re.S)
    else:
        text = text.rstrip() + "\n\n" + block + "\n"
    readme.write_text(text)


def budgets_missed(results: dict) -> list[str]:
    """Every budget the results miss, one line each (empty when all are met)."""
    missed = []
    for r in results.get("chapters", {}).get("rows", []):
        if not r["within_budget"]:
            missed.append(f"chapter {r['chapter']}: {r['wall_s']} s, {r['peak_mb']} MB")
    build = results.get("build")
    if build and not build["within_budget"]:
        missed.append(
            f"clean build {build['clean_build_s']} s > {BUDGETS['clean_build_seconds']} s"
        )
    for r in results.get("site", {}).get("rows", []):
        if not r["within_budget"]:
            missed.append(f"page {r['page']}: {r['html_mb']} MB of HTML > {BUDGETS['page_mb']}")
    for r in results.get("pages", {}).get("rows", []):
        missed += [f"page load {r['page']}: {m}" for m in r["missed"]]
    for r in results.get("rope", {}).get("rows", []):
        if not r["within_budget"]:
            missed.append(
                f"apply_rope {r['dtype']}: {r['lib_over_transformers']}x the transformers "
                "formula > 1.05x"
            )
    return missed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parts_all = ["chapters", "build", "site", "pages", "rope"]
    parser.add_argument("--only", choices=parts_all, action="append")
    parser.add_argument("--site", type=Path, help="a built site (default: _build/html)")
    # Five: a page load varies by about 50 ms from one run to the next on this 2-core machine.
    parser.add_argument("--runs", type=int, default=5, help="page loads per page (median)")
    parser.add_argument(
        "--no-write", action="store_true", help="print only; leave bench/results and README"
    )
    args = parser.parse_args()
    parts = args.only or parts_all
    results_path = OUT / "results.json"
    results = json.loads(results_path.read_text()) if results_path.exists() else {}
    results["machine"] = machine()
    if "rope" in parts:
        print("apply_rope vs transformers formula", flush=True)
        results["rope"] = bench_rope()
    if "chapters" in parts:
        print("chapters", flush=True)
        results["chapters"] = bench_chapters()
    site = args.site or ROOT / "_build" / "html"
    if "build" in parts:
        print("book build", flush=True)
        results["build"] = bench_build()
        site = Path(results["build"].pop("site"))
    if "site" in parts or "build" in parts:
        print("site", flush=True)
        results["site"] = bench_site(site)
    if "pages" in parts:
        print(f"page loads ({site})", flush=True)
        results["pages"] = bench_pages(site, runs=args.runs)
    md = markdown(results)
    if not args.no_write:
        results_path.write_text(json.dumps(results, indent=2) + "\n")
        (OUT / "results.md").write_text("# Benchmark results\n\n" + md)
        update_readme(md)
    print(md)
    missed = budgets_missed(results)
    for line in missed:
        print(f"BUDGET MISSED: {line}", file=sys.stderr)
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
