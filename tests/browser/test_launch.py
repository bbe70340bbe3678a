"""The launch configuration every chapter page emits: Binder, Colab, Thebe, download and source links.

Binder itself cannot be reached from here, so this checks what the site asks it for: the repository
and branch from _config.yml, and the notebook's own path on each page.
"""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import parse_qs, urlparse

import pytest
import yaml

from .conftest import ROOT, SITE, site_pages

pytestmark = pytest.mark.browser

CONFIG = yaml.safe_load((ROOT / "_config.yml").read_text())
REPO_URL = CONFIG["repository"]["url"].rstrip("/")
OWNER_REPO = urlparse(REPO_URL).path.strip("/")
BRANCH = CONFIG["repository"]["branch"]
CHAPTERS = [p for p in site_pages() if p.startswith("chapters/")]


def _hrefs(page: str) -> list[str]:
    from bs4 import BeautifulSoup

    soup = BeautifulSoup((SITE / page).read_text(encoding="utf-8"), "html.parser")
    return [a["href"] for a in soup.find_all("a", href=True)]


def test_every_chapter_is_checked():
    expected = sorted(p.stem for p in (ROOT / "chapters").glob("*.ipynb"))
    assert sorted(Path(p).stem for p in CHAPTERS) == expected


@pytest.mark.parametrize("page", CHAPTERS)
def test_binder_button_opens_this_notebook(page):
    notebook = page.replace(".html", ".ipynb")
    binder = [h for h in _hrefs(page) if h.startswith(CONFIG["launch_buttons"]["binderhub_url"])]
    assert len(binder) == 1, f"{page}: expected one Binder link, got {binder}"
    url = urlparse(binder[0])
    assert url.path == f"/v2/gh/{OWNER_REPO}/{BRANCH}"
    assert parse_qs(url.query)["urlpath"] == [f"lab/tree/{notebook}"]


@pytest.mark.parametrize("page", CHAPTERS)
def test_colab_button_opens_this_notebook(page):
    notebook = page.replace(".html", ".ipynb")
    colab = [h for h in _hrefs(page) if h.startswith(CONFIG["launch_buttons"]["colab_url"])]
    assert colab == [
        f"{CONFIG['launch_buttons']['colab_url']}/github/{OWNER_REPO}/blob/{BRANCH}/{notebook}"
    ]


@pytest.mark.parametrize("page", CHAPTERS)
def test_download_and_source_links(page):
    notebook = page.replace(".html", ".ipynb")
    hrefs = _hrefs(page)
    download = [h for h in hrefs if h.endswith(f"_sources/{notebook}")]
    assert download, f"{page}: no .ipynb download link"
    assert (SITE / "_sources" / notebook).is_file(), f"{page}: the downloadable notebook is missing"
    assert f"{REPO_URL}/edit/{BRANCH}/{notebook}" in hrefs, f"{page}: no edit-source link"
    source = f"{REPO_URL}/blob/{BRANCH}/{notebook}"
    assert any(h.split("?")[0] == source for h in hrefs), f"{page}: no view-source link"


@pytest.mark.parametrize("page", CHAPTERS)
def test_thebe_points_at_the_repository(page):
    html = (SITE / page).read_text(encoding="utf-8")
    config = re.search(r'<script type="text/x-thebe-config">(.*?)</script>', html, re.S)
    assert config, f"{page}: no Thebe configuration"
    text = config.group(1)
    assert f'repo: "{OWNER_REPO}"' in text
    assert f'ref: "{BRANCH}"' in text
    assert 'name: "python3"' in text


def test_binder_installs_lib_and_cpu_torch():
    lines = (ROOT / "binder" / "requirements.txt").read_text().splitlines()
    assert "-e ." in lines, "Binder must install the repository so `import lib` works"
    assert "-r ../requirements-kernel.txt" in lines, "Binder installs only what a kernel needs"
    assert "-c ../requirements-lock.txt" in lines, "Binder installs the tested versions"
    assert any(line.startswith("--extra-index-url") and "/whl/cpu" in line for line in lines)


@pytest.mark.parametrize("page", site_pages())
def test_page_weight_within_budget(page):
    """Each page's HTML stays under 1.5 MB; plotly.js is one shared, cached file."""
    size = (SITE / page).stat().st_size
    assert size <= 1_500_000, f"{page} is {size / 1e6:.2f} MB of HTML (budget 1.5 MB)"
    html = (SITE / page).read_text(encoding="utf-8")
    assert html.count("plotly.min.js") <= 1, f"{page} loads plotly.js more than once"
    assert "Plotly.newPlot" not in html.split("</head>")[0], f"{page} inlines plotly code"
