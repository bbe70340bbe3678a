"""The Binder reader's path: exactly what Binder installs runs every chapter, one thread, under 2 GB.

``scripts/nbtool.py env binder`` builds (once, cached in ``.cache/reader-envs``) a clean virtual
environment with ``pip install -r binder/requirements.txt`` in the repository's root, as repo2docker
does. Each chapter then runs in a fresh kernel started through ``binder/start`` (one thread, as on
Binder) while a watchdog samples the kernel's resident memory every 20 ms and kills it above 2 GB,
Binder's limit. The peaks are written to ``.cache/reader-envs/binder-peaks.json``.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CHAPTERS = sorted((ROOT / "chapters").glob("*.ipynb"))
LIMIT_MB = 2048
pytestmark = pytest.mark.readers

_spec = importlib.util.spec_from_file_location("nbtool", ROOT / "scripts" / "nbtool.py")
nbtool = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(nbtool)


def _installed(python: Path) -> dict[str, str]:
    code = (
        "import importlib.metadata as m, json; "
        "print(json.dumps({d.metadata['Name']: d.version for d in m.distributions()}))"
    )
    out = subprocess.run([str(python), "-c", code], check=True, capture_output=True, text=True)
    return {nbtool._norm(k): v for k, v in json.loads(out.stdout).items()}


def _lock() -> dict[str, str]:
    pins = {}
    for line in (ROOT / "requirements-lock.txt").read_text().splitlines():
        name, _, version = line.partition("==")
        if version:
            pins[nbtool._norm(name)] = version.strip()
    return pins


def test_binder_installs_the_kernel_requirements_under_the_lock():
    text = (ROOT / "binder" / "requirements.txt").read_text().splitlines()
    lines = [line.strip() for line in text if line.strip() and not line.startswith("#")]
    assert lines == [
        "--extra-index-url https://download.pytorch.org/whl/cpu",
        "-c ../requirements-lock.txt",
        "-r ../requirements-kernel.txt",
        "-e .",
    ]


def test_the_binder_environment_is_the_locked_kernel_set_and_nothing_more():
    python = nbtool.build_env("binder") / "venv" / "bin" / "python"
    installed, lock = _installed(python), _lock()
    drift = {
        k: (v, lock[k]) for k, v in installed.items() if k in lock and v.split("+")[0] != lock[k]
    }
    assert not drift, f"versions differ from requirements-lock.txt: {drift}"
    unlocked = sorted(set(installed) - set(lock) - {"pip", "setuptools", "embeddings-book-lib"})
    assert not unlocked, f"installed but not in requirements-lock.txt: {unlocked}"
    for name in ("pytest", "playwright", "ruff", "hypothesis", "nbval", "jupyter-book", "sphinx",
                 "myst-nb", "jupyterlab"):  # fmt: skip
        assert name not in installed, f"{name} is not a kernel requirement but Binder installs it"
    assert installed["torch"].startswith("2.13.0")


def test_every_chapter_runs_on_binder_with_one_thread_under_2_gb():
    home = nbtool.build_env("binder")
    results = nbtool.run_notebooks(
        CHAPTERS,
        str(home / "venv" / "bin" / "python"),
        threads=1,
        max_rss_mb=LIMIT_MB,
        launcher=[str(ROOT / "binder" / "start")],
    )
    report = {Path(r["notebook"]).stem: r for r in results}
    (home.parent / "binder-peaks.json").write_text(json.dumps(report, indent=1))
    lines = [f"{k}: {r.get('peak_mb')} MB, {r['wall_s']} s" for k, r in report.items()]
    print("\n".join(lines))
    failures = [f"{k}: {r['error']}" for k, r in report.items() if not r["ok"]]
    assert not failures, "\n\n".join(failures)
    assert all(0 < r["peak_mb"] < LIMIT_MB for r in results), lines
    assert len(results) == len(CHAPTERS)
