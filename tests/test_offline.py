"""The tests run with no network (scripts/offline.sh; every test target of the Makefile uses it).

In whatever mode the wrapper ran (a network namespace as root, a user namespace otherwise), the test
processes must see no interface but loopback. The checks read /proc/net/dev (which follows the
network namespace; /sys/class/net does not) and ask the kernel for a route with a UDP ``connect``,
which sends no packet: nothing here sends traffic to another host, whether or not the network is cut.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
WRAPPER = ROOT / "scripts" / "offline.sh"
# Documentation addresses (RFC 5737, RFC 3849): never routed on the internet.
OUTSIDE_V4 = ("192.0.2.1", 9)
OUTSIDE_V6 = ("2001:db8::1", 9)
PROBE = (
    "import os\n"
    "names = [l.split(':')[0].strip() for l in open('/proc/net/dev') if ':' in l]\n"
    "print('mode', os.environ.get('BOOK_OFFLINE'))\n"
    "print('interfaces', ','.join(names))\n"
)


def offline_mode() -> str | None:
    """The wrapper's mode (as tests/conftest.py reports it), or None if it did not cut the network."""
    mode = os.environ.get("BOOK_OFFLINE")
    return mode if mode in ("netns", "userns", "loopback-only") else None


def interfaces() -> list[str]:
    """Network interfaces this process's network namespace holds (from /proc/net/dev)."""
    lines = Path("/proc/net/dev").read_text().splitlines()
    return [line.split(":")[0].strip() for line in lines if ":" in line]


def has_route(address: tuple[str, int], family: socket.AddressFamily) -> bool:
    """Whether the kernel has a route to ``address``; a UDP connect sends no packet."""
    try:
        sock = socket.socket(family, socket.SOCK_DGRAM)
    except OSError:
        return False  # no such protocol family here: no route either
    with sock:
        try:
            sock.connect(address)
        except OSError:
            return False
    return True


def _run_wrapper(*command: str, env: dict[str, str] | None = None):
    base = {k: v for k, v in os.environ.items() if k not in ("BOOK_ALLOW_NETWORK", "BOOK_OFFLINE")}
    return subprocess.run(
        [str(WRAPPER), *command],
        capture_output=True,
        text=True,
        timeout=60,
        env={**base, **(env or {})},
    )


def _offline_or_opted_out() -> str | None:
    """This run's offline mode; None under the documented opt-out; a failure otherwise."""
    mode = offline_mode()
    if mode is None:
        if os.environ.get("BOOK_ALLOW_NETWORK") == "1":
            # The documented opt-out: the summary (tests/conftest.py) says this run was not offline.
            print("NOT OFFLINE: BOOK_ALLOW_NETWORK=1")
            return None
        pytest.fail(
            "this test run did NOT run offline: it was not started through scripts/offline.sh "
            f"(BOOK_OFFLINE={os.environ.get('BOOK_OFFLINE')!r}). Run `make test` / `make test-lib`, "
            "or `scripts/offline.sh .venv/bin/pytest ...`; BOOK_ALLOW_NETWORK=1 accepts a run "
            "with the network (reported in the summary)."
        )
    return mode


def test_this_run_sees_only_loopback():
    mode = _offline_or_opted_out()
    if mode is None:
        return
    assert interfaces() == ["lo"], f"BOOK_OFFLINE={mode} but this process sees {interfaces()}"
    assert not has_route(OUTSIDE_V4, socket.AF_INET), "a route to another IPv4 host exists"
    assert not has_route(OUTSIDE_V6, socket.AF_INET6), "a route to another IPv6 host exists"
    # Loopback itself must work: kernels, the local web server and the browser use it.
    with socket.create_server(("127.0.0.1", 0)) as server:
        with socket.create_connection(server.getsockname(), timeout=5):
            pass


def test_child_processes_see_only_loopback_too():
    if _offline_or_opted_out() is None:
        return
    result = subprocess.run(
        [sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=60
    )
    assert "interfaces lo\n" in result.stdout, result.stdout + result.stderr


def test_the_wrapper_cuts_the_network_or_stops_saying_how_to_run_anyway():
    result = _run_wrapper(sys.executable, "-c", PROBE)
    if result.returncode == 0:
        assert "interfaces lo\n" in result.stdout, result.stdout + result.stderr
        assert any(f"mode {m}\n" in result.stdout for m in ("netns", "userns", "loopback-only"))
    else:
        assert result.returncode == 2, result.stdout + result.stderr
        assert "BOOK_ALLOW_NETWORK=1" in result.stderr, result.stderr
        assert "cannot cut the network" in result.stderr, result.stderr


@pytest.fixture
def pretend_network(tmp_path):
    """A fake /proc/net/dev with an outside interface, so the wrapper must make a namespace."""
    netdev = tmp_path / "netdev"
    netdev.write_text(
        "Inter-|   Receive\n face |bytes\n    lo: 0 0 0 0 0 0 0 0 0 0\n  eth0: 1 1 0 0 0 0 0 0 1 1\n"
    )
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "bash").symlink_to(shutil.which("bash"))
    (bin_dir / "python").symlink_to(sys.executable)
    return {"BOOK_OFFLINE_NETDEV": str(netdev), "PATH": str(bin_dir)}, bin_dir


def test_without_unshare_the_wrapper_says_what_is_missing(pretend_network):
    env, _ = pretend_network
    result = _run_wrapper("python", "-c", "print('RAN')", env=env)
    assert result.returncode == 2, result.stdout + result.stderr
    assert "RAN" not in result.stdout
    assert "missing: util-linux 'unshare'" in result.stderr, result.stderr
    assert "missing: iproute2 'ip'" in result.stderr, result.stderr
    assert "BOOK_ALLOW_NETWORK=1 make test" in result.stderr, result.stderr


def test_when_unshare_is_refused_the_wrapper_says_why(pretend_network):
    env, bin_dir = pretend_network
    (bin_dir / "unshare").write_text(
        "#!/bin/bash\necho 'unshare: unshare failed: Operation not permitted' >&2\nexit 1\n"
    )
    (bin_dir / "ip").write_text("#!/bin/bash\nexit 0\n")
    for stub in ("unshare", "ip"):
        (bin_dir / stub).chmod(0o755)
    result = _run_wrapper("python", "-c", "print('RAN')", env=env)
    assert result.returncode == 2, result.stdout + result.stderr
    assert "RAN" not in result.stdout
    assert "'unshare --net': unshare: unshare failed: Operation not permitted" in result.stderr
    assert "'unshare --user --map-root-user --net'" in result.stderr
    assert "apparmor_restrict_unprivileged_userns" in result.stderr


def test_the_opt_out_runs_with_the_network_and_says_so(pretend_network):
    env, _ = pretend_network
    result = _run_wrapper(
        "python",
        "-c",
        "import os; print('RAN', os.environ['BOOK_OFFLINE'])",
        env={**env, "BOOK_ALLOW_NETWORK": "1"},
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "RAN network-allowed" in result.stdout
    assert "not offline" in result.stderr


@pytest.mark.parametrize(
    "target", ["test-lib", "test-nbval", "test-nbval-1thread", "test-browser", "build-strict"]
)
def test_every_test_target_goes_through_the_wrapper(target):
    # `make -n` prints the recipe without running it; setup steps (pip) are printed too, not run.
    result = subprocess.run(
        ["make", "-n", "--no-print-directory", target],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    commands = [
        line
        for line in result.stdout.splitlines()
        if "pytest" in line or "jupyter-book build" in line
    ]
    assert commands, result.stdout
    for line in commands:
        assert "scripts/offline.sh " in line.split("pytest")[0].split("jupyter-book")[0], line
