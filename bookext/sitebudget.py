"""What a first visit to a page of the built site costs in bytes, and the budget for it.

Shared by the benchmark (``bench/run.py``, which also times page loads) and the real-browser test
(``tests/browser/test_site.py``, which asserts the byte budgets: they are deterministic, times are not).
"""

from __future__ import annotations

import gzip
from pathlib import Path
from urllib.parse import unquote, urlparse

# Bytes a first visit to a chapter page loads, every script, style sheet and font included
# (issue "reader speed": ≤ 3 MB uncompressed, ≤ 1.2 MB gzip-compressed).
BYTE_BUDGETS = {"raw_bytes": 3_000_000, "gzip_bytes": 1_200_000}


def transfer_sizes(urls: list[str], site: Path) -> dict:
    """Bytes of the distinct local files behind ``urls``: raw and gzip-compressed (level 6).

    Args:
        urls: Every URL the page requested (repeats count once, as a browser cache would).
        site: The built site's root folder the URLs are served from.

    Returns:
        ``raw_bytes``, ``gzip_bytes``, ``requests`` (distinct files) and ``files``
        (``(path, raw bytes)`` pairs).
    """
    raw = gz = 0
    files = []
    for url in dict.fromkeys(urls):
        path = site / unquote(urlparse(url).path).lstrip("/")
        if path.is_dir():
            path = path / "index.html"
        if not path.is_file():
            continue
        data = path.read_bytes()
        raw += len(data)
        gz += len(gzip.compress(data, compresslevel=6, mtime=0))
        files.append((path.relative_to(site).as_posix(), len(data)))
    return {"raw_bytes": raw, "gzip_bytes": gz, "requests": len(files), "files": files}
