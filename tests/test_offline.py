"""The test command runs with no network (see scripts/offline.sh and the Makefile's `test` target).

The first test proves the wrapper really cuts the network; the second, when this run is itself inside
the wrapper (as `make test` arranges), that this very run has no route to another host.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# A public address (a well-known anycast DNS resolver); nothing is sent if the network is cut.
OUTSIDE = ("1.1.1.1", 443)
PROBE = (
    "import socket, sys\n"
    "try:\n"
    f"    socket.create_connection({OUTSIDE!r}, timeout=3)\n"
    "except OSError as error:\n"
    "    print('unreachable', error)\n"
    "else:\n"
    "    print('CONNECTED'); sys.exit(1)\n"
)


def _can_cut_network() -> bool:
    return os.geteuid() == 0 and all(
        subprocess.run(["which", tool], capture_output=True).returncode == 0
        for tool in ("unshare", "ip")
    )


def test_offline_wrapper_cuts_the_network():
    if not _can_cut_network():
        # Without root the wrapper can only point proxies nowhere: check that HTTP then fails.
        result = subprocess.run(
            [
                str(ROOT / "scripts" / "offline.sh"),
                sys.executable,
                "-c",
                "import urllib.request as u\n"
                "try:\n    u.urlopen('http://example.com', timeout=5)\n"
                "except OSError as e:\n    print('unreachable', e)\n",
            ],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert "unreachable" in result.stdout, result.stdout + result.stderr
        return
    result = subprocess.run(
        [str(ROOT / "scripts" / "offline.sh"), sys.executable, "-c", PROBE],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "unreachable" in result.stdout
    links = subprocess.run(
        [str(ROOT / "scripts" / "offline.sh"), "ip", "-o", "link"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    names = [line.split(":")[1].strip() for line in links.stdout.splitlines()]
    assert names == ["lo"], f"the namespace should hold only loopback, got {names}"


def test_this_run_is_offline_when_make_test_runs_it():
    mode = os.environ.get("BOOK_OFFLINE")
    if mode is None:
        # Run directly (not through `make test`): check instead that the model loads with the hub
        # switched off, which is what the chapters rely on.
        from lib.pretrained import load_minilm

        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        model, _tokenizer = load_minilm()
        assert model.config.hidden_size == 384
        return
    assert mode == "netns", f"expected a network namespace, got BOOK_OFFLINE={mode}"
    with pytest.raises(OSError):
        socket.create_connection(OUTSIDE, timeout=3)
