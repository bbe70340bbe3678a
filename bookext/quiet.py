"""Build noise a maintainer would have to learn to ignore, removed at its source (Sphinx extension).

Each notebook the build executes starts an IPython kernel, and every kernel printed
``[IPKernelApp] WARNING | Kernel is running over TCP without encryption ...`` (ipykernel 7): 13
identical lines per clean build. The kernel talks to the build over loopback only, with the
connection file's HMAC key; the notice is true and irrelevant here. The build's kernels read their
IPython configuration from a profile under the build folder (``IPYTHONDIR``, unless the maintainer
set one), whose ``ipython_kernel_config.py`` drops exactly that notice from the kernel's log; every
other kernel message still shows. Readers' kernels (JupyterLab, Binder, Colab) are untouched.

myst-parser and myst-nb also print their whole parser configuration on every build (two lines of
~1,500 characters, ``myst v3.0.1: MdParserConfig(...)``, ``myst-nb v1.4.0: NbParserConfig(...)``);
those two records are dropped, and the configuration stays in ``_config.yml``.
"""

from __future__ import annotations

import logging
import os
import re
from pathlib import Path
from typing import Any

KERNEL_NOTICE = "Kernel is running over TCP without encryption"
KERNEL_CONFIG = f'''"""The build's IPython kernels (bookext/quiet.py): drop one notice, keep the rest."""
import logging


class _DropNotice(logging.Filter):
    def filter(self, record):
        return {KERNEL_NOTICE!r} not in record.getMessage()


logging.getLogger("IPKernelApp").addFilter(_DropNotice())
'''


def quiet_ipython_dir(build_dir: Path) -> Path:
    """Write the build's IPython profile under ``build_dir`` and return its IPYTHONDIR."""
    ipython_dir = build_dir / "ipython"
    profile = ipython_dir / "profile_default"
    profile.mkdir(parents=True, exist_ok=True)
    config = profile / "ipython_kernel_config.py"
    if not config.is_file() or config.read_text(encoding="utf-8") != KERNEL_CONFIG:
        config.write_text(KERNEL_CONFIG, encoding="utf-8")
    return ipython_dir


# (logger, message prefix) of the configuration dumps; Sphinx names its loggers "sphinx.<module>".
CONFIG_DUMPS = (
    ("sphinx.myst_parser.sphinx_ext.main", "myst v"),
    ("sphinx.myst_nb.sphinx_ext", "myst-nb v"),
)


class DropConfigDump(logging.Filter):
    """Drops a record that is a parser's configuration dump (``<prefix>...Config(``)."""

    def __init__(self, prefix: str) -> None:
        super().__init__()
        self.prefix = prefix

    def filter(self, record: logging.LogRecord) -> bool:
        # The version is printed in bold (sphinx.util.console.bold): colour codes go first.
        message = re.sub(r"\x1b\[[0-9;]*m", "", record.getMessage())
        return not (message.startswith(self.prefix) and "ParserConfig(" in message)


def setup(app: Any) -> dict:
    for name, prefix in CONFIG_DUMPS:
        logger = logging.getLogger(name)
        if not any(isinstance(f, DropConfigDump) for f in logger.filters):
            logger.addFilter(DropConfigDump(prefix))
    if not os.environ.get("IPYTHONDIR"):
        # Kernels inherit the build's environment (jupyter_client copies os.environ).
        os.environ["IPYTHONDIR"] = str(quiet_ipython_dir(Path(app.doctreedir).parent))
    return {"parallel_read_safe": True, "parallel_write_safe": True, "version": "1.0"}
