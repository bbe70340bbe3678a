"""Measure what readers and maintainers feel: chapter run time and memory, build time, page weight,
and the speed of ``lib.rope.apply_rope``. Writes ``bench/results.json`` and ``bench/results.md`` and
refreshes the figures in README.md.

    make bench                      # everything (about 10–15 minutes on 2 cores)
    python -m bench.run --only rope # one part: chapters, build, site, rope

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
    "lab_chapter_seconds": 90.0,
    "chapter_peak_mb": 1024.0,
    "clean_build_seconds": 360.0,
    "page_mb": 1.5,
}
LAB_CHAPTER = "12_comparison_lab"


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


def bench_site(site: Path) -> dict:
    rows = []
    for page in sorted(site.rglob("*.html")):
        rel = page.relative_to(site).as_posix()
        if rel.startswith(("_static/", "_sources/")):
            continue
        assets = _page_assets(page, site)
        plotly = [a for a in assets if a.name == "plotly.min.js"]
        others = sum(a.stat().st_size for a in assets if a.name != "plotly.min.js")
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
    plotly_js = site / "_static" / "plotly.min.js"
    total = sum(p.stat().st_size for p in site.rglob("*") if p.is_file())
    return {
        "rows": rows,
        "plotly_js_mb": round(plotly_js.stat().st_size / 1e6, 2) if plotly_js.exists() else None,
        "site_total_mb": round(total / 1e6, 1),
    }


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
def machine() -> dict:
    import torch

    return {
        "date": time.strftime("%Y-%m-%d"),
        "cpu": platform.processor() or platform.machine(),
        "cores": os.cpu_count(),
        "python": platform.python_version(),
        "torch": torch.__version__,
    }


def markdown(results: dict) -> str:
    lines = [
        f"Measured on {results['machine']['date']}: {results['machine']['cores']} cores, "
        f"Python {results['machine']['python']}, torch {results['machine']['torch']}.",
        "",
    ]
    if "chapters" in results:
        ch = results["chapters"]
        lines += [
            f"**Chapters** (fresh kernel each; floor = start a kernel and import torch, plotly and "
            f"lib: {ch['floor']['wall_s']} s, {ch['floor']['peak_mb']} MB):",
            "",
            "| chapter | wall (s) | peak memory (MB) | wall / floor | memory / floor | budget |",
            "| --- | ---: | ---: | ---: | ---: | --- |",
        ]
        for r in ch["rows"]:
            lines.append(
                f"| {r['chapter']} | {r['wall_s']} | {r['peak_mb']} | {r['wall_over_floor']}"
                f" | {r['peak_over_floor']} | {'met' if r['within_budget'] else 'MISSED'} |"
            )
        lines.append("")
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
            "| page | HTML (MB) | other assets (MB, plotly.js excluded) | loads plotly.js |",
            "| --- | ---: | ---: | --- |",
        ]
        for r in s["rows"]:
            lines.append(
                f"| {r['page']} | {r['html_mb']} | {r['assets_mb_without_plotly']} | "
                f"{'yes' if r['loads_plotly'] else 'no'} |"
            )
        lines.append("")
    if "rope" in results:
        rp = results["rope"]
        lines += [
            f"**apply_rope** on {rp['shape']} ({rp['threads']} threads), median of 7:",
            "",
            "| dtype | lib.rope.apply_rope (ms) | transformers formula (ms) | memory copy (ms) "
            "| lib / transformers | lib / copy |",
            "| --- | ---: | ---: | ---: | ---: | ---: |",
        ]
        for r in rp["rows"]:
            lines.append(
                f"| {r['dtype']} | {r['apply_rope_ms']} | {r['transformers_formula_ms']} | "
                f"{r['memory_copy_ms']} | {r['lib_over_transformers']} | "
                f"{r['lib_over_copy']} |"
            )
        lines.append("")
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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", choices=["chapters", "build", "site", "rope"], action="append")
    args = parser.parse_args()
    parts = args.only or ["chapters", "build", "site", "rope"]
    results_path = OUT / "results.json"
    results = json.loads(results_path.read_text()) if results_path.exists() else {}
    results["machine"] = machine()
    if "rope" in parts:
        print("apply_rope vs transformers formula", flush=True)
        results["rope"] = bench_rope()
    if "chapters" in parts:
        print("chapters", flush=True)
        results["chapters"] = bench_chapters()
    site = ROOT / "_build" / "html"
    if "build" in parts:
        print("book build", flush=True)
        results["build"] = bench_build()
        site = Path(results["build"].pop("site"))
    if "site" in parts or "build" in parts:
        print("site", flush=True)
        results["site"] = bench_site(site)
    results_path.write_text(json.dumps(results, indent=2) + "\n")
    md = markdown(results)
    (OUT / "results.md").write_text("# Benchmark results\n\n" + md)
    update_readme(md)
    print(md)
    return 0


if __name__ == "__main__":
    sys.exit(main())
