"""``import lib`` then ``lib.<module>``: the package reaches its submodules, and stays cheap to import."""

from __future__ import annotations

import subprocess
import sys

import pytest


def _run(code: str) -> str:
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    return result.stdout.strip()


def test_a_bare_import_lib_reaches_every_submodule():
    # A fresh interpreter: in this one some test has already imported lib.rope.
    out = _run(
        "import lib, pkgutil, pydoc\n"
        "text = pydoc.render_doc(lib.rope.apply_rope)\n"
        "assert 'apply_rope' in text, text\n"
        "names = [m.name for m in pkgutil.iter_modules(lib.__path__)]\n"
        "print(all(getattr(lib, n).__name__ == 'lib.' + n for n in names), len(names))"
    )
    ok, count = out.split()
    assert ok == "True" and int(count) >= 20, out


def test_import_lib_alone_imports_no_submodule_and_no_torch():
    out = _run(
        "import sys, lib\n"
        "print(sorted(m for m in sys.modules if m.startswith('lib.') or m in ('torch', 'plotly')))"
    )
    assert out == "[]", f"import lib pulled in {out}"


def test_an_unknown_name_is_still_an_attribute_error():
    import lib

    with pytest.raises(AttributeError, match="no attribute 'nonexistent'"):
        lib.nonexistent  # noqa: B018
    assert "rope" in dir(lib) and "viz" in dir(lib)
