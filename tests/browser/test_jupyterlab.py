"""The local learner's path in a real browser: JupyterLab, the RoPE chapter, Run All, the widget.

JupyterLab starts from the project's environment on 127.0.0.1 (settings, workspaces and runtime
files in a temporary folder; the chapter is a temporary copy, so autosave never touches the
checkout). Headless Chromium (Debian's, driven by Playwright) opens chapters/08_rope.ipynb, runs
all cells, checks that no cell failed, then moves the ipywidgets position slider with the keyboard
and checks that the figure under it changes. A later cell that rebinds a name the widget's
callback uses makes the callback fail after Run All, and then the figure does not change.
"""

from __future__ import annotations

import os
import secrets
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# BOOK_LAB_CHAPTER: try the test on a draft of the chapter (e.g. a copy with a fix).
CHAPTER = Path(os.environ.get("BOOK_LAB_CHAPTER", ROOT / "chapters" / "08_rope.ipynb"))
pytestmark = pytest.mark.browser


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """A JupyterLab server on 127.0.0.1 serving a copy of the chapter: (base URL, token)."""
    home = tmp_path_factory.mktemp("lab")
    root = home / "root"
    root.mkdir()
    shutil.copy2(CHAPTER, root / CHAPTER.name)
    port, token = _free_port(), secrets.token_hex(16)
    env = {
        **os.environ,
        "JUPYTER_CONFIG_DIR": str(home / "config"),
        "JUPYTER_RUNTIME_DIR": str(home / "runtime"),
        "JUPYTERLAB_SETTINGS_DIR": str(home / "settings"),
        "JUPYTERLAB_WORKSPACES_DIR": str(home / "workspaces"),
    }
    cmd = [
        str(Path(sys.executable).parent / "jupyter"),
        "lab",
        "--no-browser",
        "--expose-app-in-browser",
        f"--port={port}",
        "--ServerApp.ip=127.0.0.1",
        f"--IdentityProvider.token={token}",
        f"--ServerApp.root_dir={root}",
        "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
        "--LabApp.news_url=",
    ]
    if os.geteuid() == 0:
        cmd.append("--allow-root")  # what `make lab` does as root
    log = (home / "lab.log").open("w")
    server = subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 90
    while True:
        try:
            with urllib.request.urlopen(f"{base}/api/status?token={token}", timeout=2):
                break
        except OSError:
            if server.poll() is not None or time.monotonic() > deadline:
                server.kill()
                pytest.fail(f"JupyterLab did not start:\n{(home / 'lab.log').read_text()[-3000:]}")
            time.sleep(0.5)
    yield base, token
    server.terminate()
    try:
        server.wait(timeout=20)
    except subprocess.TimeoutExpired:
        server.kill()
    log.close()


@pytest.fixture(scope="module")
def page(lab, browser):
    # The session's one Playwright instance (tests/browser/conftest.py): a second sync_playwright
    # cannot start inside the first one's event loop.
    base, token = lab
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    other_hosts = []

    def route(r):
        if r.request.url.startswith(base):
            r.continue_()
        else:
            other_hosts.append(r.request.url)
            r.abort()

    context.route("**/*", route)
    page = context.new_page()
    page.goto(f"{base}/lab/tree/{CHAPTER.name}?token={token}")
    yield page
    context.close()


NOTEBOOK = "window.jupyterapp.shell.currentWidget"

ALL_RUN = f"""() => {{
  const w = {NOTEBOOK};
  if (!w || !w.content || !w.sessionContext.session || !w.sessionContext.session.kernel) return false;
  if (w.sessionContext.session.kernel.status !== 'idle') return false;
  const cells = w.content.widgets.filter(c => c.model.type === 'code');
  return cells.length > 0 && cells.every(c => c.model.executionCount !== null
      && !c.node.querySelector('.jp-InputArea-prompt').textContent.includes('*'));
}}"""

ERRORS = f"""() => {{
  const errors = [];
  for (const c of {NOTEBOOK}.content.widgets) {{
    if (c.model.type !== 'code') continue;
    for (const o of c.model.outputs.toJSON()) {{
      if (o.output_type === 'error') errors.push(o.ename + ': ' + o.evalue);
    }}
  }}
  return errors;
}}"""


def test_run_all_then_the_widget_redraws_the_figure(page):
    page.wait_for_function(
        "() => { const a = window.jupyterapp; const w = a && a.shell.currentWidget;"
        f" return !!(w && w.context && w.context.path === '{CHAPTER.name}' && w.sessionContext"
        " && w.sessionContext.session && w.sessionContext.session.kernel"
        " && w.sessionContext.session.kernel.status === 'idle'); }",
        timeout=120_000,
        polling=500,
    )
    page.evaluate("window.jupyterapp.commands.execute('notebook:run-all-cells')")
    page.wait_for_timeout(1000)
    page.wait_for_function(ALL_RUN, timeout=300_000, polling=500)
    assert page.evaluate(ERRORS) == [], "a cell failed under Run All"

    slider = page.locator(".widget-hslider", has_text="position m")
    slider.scroll_into_view_if_needed()
    box = page.locator(".jupyter-widgets.widget-vbox").filter(has=slider)
    output = box.locator(".widget-output")
    figure = output.locator(".jp-RenderedPlotly").first  # the plot, or plotly's image of it
    output.scroll_into_view_if_needed()
    try:
        figure.wait_for(timeout=30_000)
    except Exception:
        pytest.fail(
            "after Run All the widget's Output shows no figure (a plotly figure handed to "
            "Output.append_display_data displays itself elsewhere and leaves the Output empty; "
            "use `with figure_box: figure_box.clear_output(wait=True); display(fig)`). The "
            f"Output holds: {output.inner_html()[:1500]}"
        )
    readout = slider.locator(".widget-readout")
    page.wait_for_timeout(2000)  # let plotly finish drawing
    before_value, before = readout.inner_text(), output.inner_html()
    slider.locator(".noUi-handle").focus()
    page.keyboard.press("ArrowRight")
    page.wait_for_function(
        "([el, v]) => el.textContent.trim() !== v", arg=[readout.element_handle(), before_value]
    )
    assert readout.inner_text() != before_value, "the slider did not move"
    try:
        page.wait_for_function(
            "([out, html]) => out.querySelector('.jp-RenderedPlotly') && out.innerHTML !== html",
            arg=[output.element_handle(), before],
            timeout=30_000,
        )
    except Exception:
        pytest.fail(
            f"moving the slider from {before_value} to {readout.inner_text()} did not redraw the "
            "figure after Run All: the widget's callback failed (e.g. a later cell rebinds a name "
            "the callback uses)"
        )
    assert page.evaluate(ERRORS) == []
