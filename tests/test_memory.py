"""Peak memory of the table builders: at most 1.5x the size of the result they return.

tracemalloc does not see torch's allocations, so each call runs in a fresh Python process that
resets its peak resident set size (writing 5 to /proc/self/clear_refs, Linux) just before the call
and reads the new peak (VmHWM in /proc/self/status) after it. Resident memory counts every byte
torch writes (the result included); a fresh process keeps earlier calls' freed memory out of it.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LIMIT = 1.5

MEASURE = """
import json, sys
import torch
torch.set_num_threads(1)
from lib.alibi import alibi_bias
from lib.rope import rope_frequencies
from lib.sinusoidal import sinusoidal_pe, sinusoidal_pe_concat


def status(field):
    for line in open("/proc/self/status"):
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024


def three_copies(n):  # the probe: two float32 temporaries of the result's size
    x = torch.ones(n)
    y = x * 2
    return y + 1


call, warm = sys.argv[1], sys.argv[2]
eval(warm)  # the same code path on a tiny size, so lazy initialisation is not counted
with open("/proc/self/clear_refs", "w") as clear:
    clear.write("5")  # reset the peak resident set size (VmHWM) to the current one
before = status("VmRSS")
result = eval(call)
peak = status("VmHWM")
tensors = result if isinstance(result, tuple) else (result,)
size = sum(t.numel() * t.element_size() for t in tensors)
print(json.dumps({"peak": peak - before, "size": size}))
"""


def peak_ratio(call: str, warm: str) -> tuple[float, dict]:
    result = subprocess.run(
        [sys.executable, "-c", MEASURE, call, warm],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout.strip().splitlines()[-1])
    return data["peak"] / data["size"], data


def test_the_measurement_sees_temporaries():
    # A builder with two temporaries as large as its result peaks near 3x: the method can fail.
    ratio, data = peak_ratio("three_copies(2**25)", "three_copies(16)")
    assert 2.5 < ratio < 3.5, data


@pytest.mark.parametrize(
    ("call", "warm"),
    [
        ("alibi_bias(8, 2048)", "alibi_bias(2, 16)"),  # 128 MiB; was 4.3x
        ("alibi_bias(8, 2048, causal=False)", "alibi_bias(2, 16, causal=False)"),
        ("sinusoidal_pe(65536, 512)", "sinusoidal_pe(16, 8)"),  # 128 MiB; was 4.0x
        ("sinusoidal_pe_concat(65536, 512)", "sinusoidal_pe_concat(16, 8)"),
        ("rope_frequencies(128, 2**18)", "rope_frequencies(8, 16)"),  # 2 x 64 MiB; was 1.5x
        ("rope_frequencies(2, 2**24)", "rope_frequencies(2, 16)"),  # 2 x 64 MiB; was 2.0x
    ],
)
def test_peak_memory_is_at_most_one_and_a_half_results(call, warm):
    ratio, data = peak_ratio(call, warm)
    assert ratio <= LIMIT, (
        f"{call} peaks at {data['peak'] / 2**20:.0f} MiB for a {data['size'] / 2**20:.0f} MiB "
        f"result: {ratio:.2f}x > {LIMIT}x"
    )
