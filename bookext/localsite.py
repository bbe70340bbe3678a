"""The built site on localhost, and the Chromium that reads it: one copy for the benchmark and the tests.

Used by the benchmark's page loads (``bench/run.py``) and the real-browser tests
(``tests/browser/conftest.py``), which both serve the built site from a local HTTP server and drive
Debian's Chromium through Playwright (never a downloaded browser).
"""

from __future__ import annotations

import contextlib
import functools
import http.server
import os
import shutil
import threading
from collections.abc import Iterator
from pathlib import Path

# Headless, and nothing the browser would fetch by itself (updates, sync, QUIC probes).
CHROMIUM_ARGS = (
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
)
VIEWPORT = {"width": 1280, "height": 900}


def find_chromium() -> str | None:
    """Debian's Chromium: ``$CHROMIUM``, else ``chromium``/``chromium-browser`` on PATH, else None."""
    for path in (
        os.environ.get("CHROMIUM"),
        shutil.which("chromium"),
        shutil.which("chromium-browser"),
        "/usr/bin/chromium",
    ):
        if path and Path(path).is_file():
            return path
    return None


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass


@contextlib.contextmanager
def serve_site(site: Path) -> Iterator[str]:
    """Serve the folder ``site`` on 127.0.0.1 (a free port) while the block runs.

    Args:
        site: A built site's html folder.

    Yields:
        The server's base URL, ``http://127.0.0.1:PORT`` (no trailing slash).

    Raises:
        FileNotFoundError: ``site`` is not a folder.
    """
    if not Path(site).is_dir():
        raise FileNotFoundError(f"no built site at {site}")
    handler = functools.partial(_QuietHandler, directory=str(site))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
