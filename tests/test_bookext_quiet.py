"""bookext.quiet: the build's kernels drop the TCP notice and nothing else; parser dumps dropped."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from pathlib import Path

from bookext.quiet import CONFIG_DUMPS, KERNEL_NOTICE, DropConfigDump, quiet_ipython_dir

ROOT = Path(__file__).resolve().parents[1]
KERNEL = """
import sys
from jupyter_client.manager import start_new_kernel
km, kc = start_new_kernel(kernel_name="python3")
kc.execute_interactive("import logging; logging.getLogger('IPKernelApp').warning('kept: %s', 42)")
kc.stop_channels(); km.shutdown_kernel(now=True)
"""


def _kernel_stderr(env: dict) -> str:
    done = subprocess.run(
        [sys.executable, "-c", KERNEL], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return done.stderr


def test_the_builds_kernels_drop_the_tcp_notice_and_keep_other_warnings(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "IPYTHONDIR"}
    env["IPYTHONDIR"] = str(tmp_path / "plain")  # a fresh profile: what the build had before
    assert KERNEL_NOTICE in _kernel_stderr(env)
    env["IPYTHONDIR"] = str(quiet_ipython_dir(tmp_path))
    err = _kernel_stderr(env)
    assert KERNEL_NOTICE not in err
    assert "kept: 42" in err  # the filter drops one message, not the kernel's log


def test_the_parser_configuration_dumps_are_dropped_and_other_records_kept():
    for name, prefix in CONFIG_DUMPS:
        f = DropConfigDump(prefix)

        def record(msg: str, name: str = name) -> logging.LogRecord:
            return logging.LogRecord(name, logging.INFO, __file__, 1, msg, None, None)

        assert not f.filter(record(f"{prefix}9.9: MdParserConfig(commonmark_only=False)"))
        assert not f.filter(record(f"{prefix}9.9: NbParserConfig(custom_formats={{}})"))
        # As Sphinx logs it with colours on: the version in bold.
        bold = f"\x1b[01m{prefix}9.9:\x1b[39;49;00m MdParserConfig(gfm_only=False)"
        assert not f.filter(record(bold))
        assert f.filter(record(f"{prefix}9.9 loaded"))
        assert f.filter(record("Executing notebook using local CWD"))


# A book of one executed notebook, built by Sphinx with myst-nb and bookext.quiet, as the book's
# build runs them. With -q Sphinx prints only warnings and errors; anything else printed is noise
# a maintainer would have to learn to ignore (a kernel's notice, a dependency's warning).
CONF = """
extensions = ["myst_nb", "bookext.quiet"]
nb_execution_mode = "force"
exclude_patterns = ["_build"]
"""
NOTEBOOK = {
    "cells": [
        {"cell_type": "markdown", "id": "md", "metadata": {}, "source": ["# A page"]},
        {
            "cell_type": "code", "execution_count": None, "id": "code", "metadata": {},
            "outputs": [], "source": ["print(6 * 7)"],
        },
    ],
    "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3",
                                "language": "python"}},
    "nbformat": 4, "nbformat_minor": 5,
}  # fmt: skip


def test_a_quiet_build_of_an_executed_notebook_prints_nothing(tmp_path):
    import json

    src = tmp_path / "src"
    src.mkdir()
    (src / "conf.py").write_text(CONF)
    (src / "index.ipynb").write_text(json.dumps(NOTEBOOK))
    env = {k: v for k, v in os.environ.items() if k != "IPYTHONDIR"}
    env["PYTHONPATH"] = os.pathsep.join(
        [str(ROOT), *([env["PYTHONPATH"]] if env.get("PYTHONPATH") else [])]
    )
    done = subprocess.run(
        [sys.executable, "-m", "sphinx", "-b", "html", "-q", str(src), str(tmp_path / "out")],
        env=env, capture_output=True, text=True, timeout=300, cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "42" in (tmp_path / "out" / "index.html").read_text()  # the notebook did run
    noise = [line for line in (done.stdout + done.stderr).splitlines() if line.strip()]
    assert not noise, f"a quiet build printed {len(noise)} line(s) of noise: {noise[:5]}"
