"""The test-run policies of tests/conftest.py: a skip fails unless allowed, and the summary says so."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from hypothesis import settings

CONFTEST = Path(__file__).resolve().parent / "conftest.py"
PROBE = """
import pytest

def test_runs():
    pass

def test_skips():
    pytest.skip("no frobnicator")

@pytest.mark.xfail(reason="known bug")
def test_xfails():
    assert False
"""


def _run_probe(tmp_path: Path, *, module_skip: bool = False, **env: str):
    shutil.copy(CONFTEST, tmp_path / "conftest.py")
    (tmp_path / "test_probe.py").write_text(PROBE)
    if module_skip:
        (tmp_path / "test_module_skip.py").write_text(
            'import pytest\npytest.importorskip("no_such_module_anywhere")\n'
        )
    base = {k: v for k, v in os.environ.items() if k != "BOOK_ALLOW_SKIPS"}
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", str(tmp_path)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        env={**base, **env},
    )


def test_a_skip_is_a_failure_by_default(tmp_path):
    result = _run_probe(tmp_path)
    assert result.returncode == 1, result.stdout
    assert "2 failed, 1 passed" in result.stdout, result.stdout
    assert "no frobnicator" in result.stdout and "BOOK_ALLOW_SKIPS=1" in result.stdout
    assert "SKIP test_probe.py::test_xfails: known bug" in result.stdout


def test_a_module_skipped_at_import_stops_the_run(tmp_path):
    result = _run_probe(tmp_path, module_skip=True)
    assert result.returncode != 0, result.stdout
    assert "module skipped at collection" in result.stdout, result.stdout
    assert "no_such_module_anywhere" in result.stdout


def test_allowed_skips_are_listed_in_the_summary(tmp_path):
    result = _run_probe(tmp_path, module_skip=True, BOOK_ALLOW_SKIPS="1")
    assert result.returncode == 0, result.stdout
    assert "skips (3, allowed by BOOK_ALLOW_SKIPS=1)" in result.stdout, result.stdout
    assert "SKIP test_probe.py::test_skips: Skipped: no frobnicator" in result.stdout
    assert "no_such_module_anywhere" in result.stdout


def test_one_hypothesis_profile_derandomized_on_ci():
    profile = settings.get_profile("book")
    assert profile.max_examples == 30 and profile.deadline is None
    assert settings.get_profile("ci").derandomize
    expected = "ci" if os.environ.get("CI", "").lower() in ("1", "true", "yes") else "book"
    if not os.environ.get("HYPOTHESIS_PROFILE"):
        assert settings.default.derandomize == (expected == "ci")
