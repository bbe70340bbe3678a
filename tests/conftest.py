"""Test-run policies shared by every test under tests/ (see CONTRIBUTING.md, "Tests").

- Hypothesis: one settings profile for the whole suite ("book"; "ci", derandomized, when ``CI`` is
  set, so a CI run draws the same examples every time). Tests only override what they must.
- No silent skips: a skipped (or xfailed) test is reported as a failure, unless ``BOOK_ALLOW_SKIPS=1``;
  then the summary lists every skip with its reason.
- Offline: the summary says whether this run went through scripts/offline.sh (``BOOK_OFFLINE``), and
  says plainly when it did not.
"""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile(
    "book",
    max_examples=30,
    deadline=None,  # a first call into torch can take a second; times are not what tests check
    suppress_health_check=[HealthCheck.too_slow],
    print_blob=True,
)
settings.register_profile("ci", parent=settings.get_profile("book"), derandomize=True)
settings.load_profile(
    os.environ.get("HYPOTHESIS_PROFILE")
    or ("ci" if os.environ.get("CI", "").lower() in ("1", "true", "yes") else "book")
)

ALLOW_SKIPS = os.environ.get("BOOK_ALLOW_SKIPS") == "1"
_SKIPS: list[str] = []


def _reason(report) -> str:
    longrepr = report.longrepr
    if isinstance(longrepr, tuple) and len(longrepr) == 3:
        return str(longrepr[2])
    return str(getattr(report, "wasxfail", "") or longrepr)


def _fail_skip(report, what: str) -> None:
    reason = _reason(report)
    _SKIPS.append(f"{report.nodeid}: {reason}")
    if not ALLOW_SKIPS:
        report.outcome = "failed"
        report.longrepr = (
            f"{what} ({reason}), and a skip is a failure in this book's tests: a skipped check is "
            "a check that did not run. Fix the cause (e.g. install the pinned requirements: "
            "make setup), or set BOOK_ALLOW_SKIPS=1 to allow skips (the summary then lists them)."
        )
        if hasattr(report, "wasxfail"):
            del report.wasxfail


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if report.skipped:
        _fail_skip(report, "xfailed" if hasattr(report, "wasxfail") else "skipped")


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector):
    outcome = yield
    report = outcome.get_result()
    if report.skipped:
        _fail_skip(report, "module skipped at collection")


def offline_mode() -> str | None:
    """How this run was cut off from the network (scripts/offline.sh), or None if it was not."""
    mode = os.environ.get("BOOK_OFFLINE")
    if mode in ("netns", "userns", "loopback-only"):
        return mode
    return None


def pytest_terminal_summary(terminalreporter):
    write = terminalreporter.write_line
    mode = offline_mode()
    if mode is not None:
        write(f"offline: yes (scripts/offline.sh, BOOK_OFFLINE={mode}: only loopback is visible)")
    elif os.environ.get("BOOK_OFFLINE") == "network-allowed" or (
        os.environ.get("BOOK_ALLOW_NETWORK") == "1"
    ):
        write(
            "offline: NO - BOOK_ALLOW_NETWORK=1, this run had the network; it does not show "
            "that the book builds and tests offline",
            red=True,
            bold=True,
        )
    else:
        write(
            "offline: NO - not run through scripts/offline.sh (use make test / make test-lib, or "
            "scripts/offline.sh .venv/bin/pytest ...); tests/test_offline.py fails in such a run",
            red=True,
            bold=True,
        )
    if _SKIPS:
        verdict = "allowed by BOOK_ALLOW_SKIPS=1" if ALLOW_SKIPS else "reported as failures"
        write(f"skips ({len(_SKIPS)}, {verdict}):", yellow=True, bold=True)
        for line in _SKIPS:
            write(f"  SKIP {line}", yellow=True)
