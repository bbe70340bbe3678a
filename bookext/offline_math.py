"""Math rendered when the site is built, so a reader's browser runs no math engine at all.

Sphinx normally ships the TeX to the browser and MathJax typesets it there (the site used MathJax 3's
``tex-svg.js``, 2.1 MB, typesetting every formula at load). This extension registers an HTML math
renderer, ``bookmath``, that asks MathJax 3 itself (the same distribution, shipped inside the PyPI
package ``sphinx-mathjax-offline``) to turn each formula into SVG at build time, through Node.js
(``bookext/mathjax_ssr.js``, one process per build). The page then holds the finished
``<mjx-container>``: the same SVG MathJax drew in the browser, plus the formula as MathML for screen
readers, and a small stylesheet (``bookmath.css``). No script, no web font, nothing from a CDN.

A TeX error (an undefined macro, unbalanced braces) is a build warning naming the page and the
formula, so ``-W`` builds fail on it instead of showing red text to readers.

Needs Node.js >= 18 on the build machine (``node`` on PATH, or ``$NODE``).
"""

from __future__ import annotations

import html
import importlib.util
import json
import os
import re
import shutil
import subprocess
import threading
from pathlib import Path
from typing import Any

from docutils import nodes
from sphinx.errors import ExtensionError
from sphinx.locale import _
from sphinx.util import logging
from sphinx.util.math import get_node_equation_number

LOGGER = logging.getLogger(__name__)
RENDERER = "bookmath"
SSR_SCRIPT = Path(__file__).parent / "mathjax_ssr.js"
CSS_NAME = "bookmath.css"
# Files the build-time renderer needs from the MathJax distribution.
MATHJAX_FILES = ("node-main.js", "input/tex.js", "output/svg.js", "adaptors/liteDOM.js")
_MERROR = re.compile(r'data-mml-node="merror"[^>]*?data-mjx-error="([^"]*)"')
_MERROR_TITLE = re.compile(r'data-mml-node="merror"[^>]*?title="([^"]*)"')
# MathJax's noundefined package shows an unknown macro as red text instead of failing.
_UNDEFINED = re.compile(r'<mtext mathcolor="red">(\\[A-Za-z@]+)</mtext>')


def _mathjax_source() -> Path:
    """The MathJax 3 distribution inside sphinx-mathjax-offline."""
    # The distribution's package folder has a hyphen in its name, so it cannot be imported normally.
    spec = importlib.util.find_spec("sphinx-mathjax-offline")
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError(
            "sphinx-mathjax-offline is not installed: `pip install -r requirements.txt`"
        )
    path = Path(next(iter(spec.submodule_search_locations))) / "static" / "mathjax"
    missing = [name for name in MATHJAX_FILES if not (path / name).is_file()]
    if missing:
        raise FileNotFoundError(
            f"MathJax files {missing} not found in sphinx-mathjax-offline: {path}"
        )
    return path


def _node_executable() -> str:
    node = os.environ.get("NODE") or shutil.which("node") or shutil.which("nodejs")
    if not node:
        raise ExtensionError(
            "bookext.offline_math renders the book's math at build time with Node.js, which was "
            "not found: install it (Debian/Ubuntu: `apt-get install nodejs`; version 18 or newer) "
            "or set $NODE to its path"
        )
    return node


class MathRenderer:
    """One MathJax process for the whole build; each distinct formula is rendered once."""

    def __init__(self) -> None:
        self._proc: subprocess.Popen | None = None
        self._pid: int | None = None
        self._lock = threading.Lock()
        self._cache: dict[tuple[str, bool], str] = {}
        self._next_id = 0
        self.css = ""
        self.version = ""

    def _start(self) -> None:
        self._proc = subprocess.Popen(
            [_node_executable(), str(SSR_SCRIPT), str(_mathjax_source())],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            encoding="utf-8",
            bufsize=1,
        )
        self._pid = os.getpid()
        first = self._proc.stdout.readline()
        if not first:
            err = self._proc.stderr.read()
            raise ExtensionError(f"the build-time MathJax process did not start: {err.strip()}")
        hello = json.loads(first)
        self.css, self.version = hello["css"], hello["version"]

    def render(self, tex: str, display: bool) -> str:
        """The ``<mjx-container>`` HTML for ``tex``; raises ValueError on a TeX error."""
        key = (tex, display)
        with self._lock:
            if key in self._cache:
                return self._cache[key]
            # A forked parallel-write worker must not share its parent's pipe.
            if self._proc is None or self._pid != os.getpid() or self._proc.poll() is not None:
                self._start()
            self._next_id += 1
            request = {"id": self._next_id, "tex": tex, "display": display}
            self._proc.stdin.write(json.dumps(request) + "\n")
            self._proc.stdin.flush()
            line = self._proc.stdout.readline()
            if not line:
                raise ExtensionError(
                    f"the build-time MathJax process stopped: {self._proc.stderr.read().strip()}"
                )
            answer = json.loads(line)
            if "error" in answer:
                raise ValueError(answer["error"])
            out = answer["html"]
            error = _MERROR.search(out) or _MERROR_TITLE.search(out)
            if error:
                raise ValueError(html.unescape(error.group(1)))
            undefined = _UNDEFINED.search(out)
            if undefined:
                raise ValueError(f"Undefined control sequence {undefined.group(1)}")
            self._cache[key] = out
            return out

    def stylesheet(self) -> str:
        """MathJax's CSS for its SVG output (starts the process if no page had math)."""
        with self._lock:
            if self._proc is None or self._pid != os.getpid() or self._proc.poll() is not None:
                self._start()
            return self.css

    def close(self) -> None:
        if self._proc is not None and self._pid == os.getpid():
            self._proc.stdin.close()
            try:
                self._proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self._proc.kill()
            self._proc = None


RENDER = MathRenderer()


def _svg(translator: Any, node: nodes.Element, tex: str, display: bool) -> str:
    try:
        return RENDER.render(tex, display)
    except ValueError as err:
        LOGGER.warning("TeX error in %r: %s", tex, err, location=node, type="bookmath")
        return f'<span class="bookmath-error">{translator.encode(tex)}</span>'


def html_visit_math(self: Any, node: nodes.math) -> None:
    self.body.append(self.starttag(node, "span", "", CLASS="math notranslate nohighlight"))
    self.body.append(_svg(self, node, node.astext(), display=False))
    self.body.append("</span>")
    raise nodes.SkipNode


def html_visit_displaymath(self: Any, node: nodes.math_block) -> None:
    """Sphinx's (and myst-parser's amsmath) display math, with the TeX turned into SVG."""
    amsmath = "amsmath" in node.get("classes", [])
    classes = "math notranslate nohighlight" + (" amsmath" if amsmath else "")
    self.body.append(self.starttag(node, "div", CLASS=classes))
    if node["nowrap"] and not amsmath:
        self.body.append(_svg(self, node, node.astext(), display=True))
        self.body.append("</div>")
        raise nodes.SkipNode
    if node["number"]:
        number = get_node_equation_number(self, node)
        self.body.append(f'<span class="eqno">({number})')
        self.add_permalink_ref(node, _("Link to this equation"))
        self.body.append("</span>")
    if amsmath:
        # An amsmath environment (align, equation, ...) is complete TeX on its own.
        tex = node.astext()
    else:
        # The same TeX sphinx.ext.mathjax would hand to MathJax.
        parts = [part for part in node.astext().split("\n\n") if part.strip()]
        pieces = []
        for part in parts:
            pieces.append(r"\begin{split}" + part + r"\end{split}" if r"\\" in part else part)
        tex = r"\\".join(pieces)
        if len(parts) > 1:
            tex = r"\begin{align}\begin{aligned}" + tex + r"\end{aligned}\end{align}"
    self.body.append(_svg(self, node, tex, display=True))
    self.body.append("</div>\n")
    raise nodes.SkipNode


_GLYPH = re.compile(r'<path data-c="[0-9A-F]+"((?: [a-z-]+="[^"]*")*)></path>')
_D_ATTR = re.compile(r' d="([^"]*)"')
_MML_NODE = re.compile(r' data-mml-node="([^"]*)"')
_STYLED_NODES = {"maction", "merror", "mtable"}  # named by MathJax's SVG stylesheet
_TEXCLASS = re.compile(r' data-mjx-texclass="[^"]*"')
# Inside HTML the parser puts <svg> and <math> in their namespaces by itself.
_SVG_XMLNS = re.compile(r'<svg (?:([^>]*?) )?xmlns="http://www\.w3\.org/2000/svg" ?')
_MATH_XMLNS = re.compile(r'<math xmlns="http://www\.w3\.org/1998/Math/MathML" ?')


# One formula's SVG (it may hold a nested <svg>, e.g. a table's), up to its MathML.
_FORMULA_SVG = re.compile(r"(<mjx-container[^>]*>)(<svg.*?</svg>)(?=<mjx-assistive-mml)", re.S)
_SVG_TOKEN = re.compile(r'<(/?)([a-zA-Z][\w:-]*)((?: [^\s=>/]+="[^"]*")*)(/?)>|([^<]+)')
_ONLY_TRANSFORM = re.compile(r' transform="([^"]*)"')
# Elements a group's transform can move onto without changing what is drawn.
_TRANSFORMABLE = {"g", "use", "path", "rect", "line"}
_Node = list  # [tag, attribute text, children (nodes or text)]


def _svg_tree(svg: str) -> _Node:
    root: _Node = ["", "", []]
    stack = [root]
    pos = 0
    for match in _SVG_TOKEN.finditer(svg):
        if match.start() != pos:
            raise ValueError(f"unexpected markup at {pos}")
        pos = match.end()
        close, tag, attrs, empty, text = match.groups()
        if text is not None:
            stack[-1][2].append(text)
        elif close:
            if len(stack) == 1 or stack[-1][0] != tag:
                raise ValueError(f"unbalanced </{tag}>")
            stack.pop()
        else:
            node: _Node = [tag, attrs, []]
            stack[-1][2].append(node)
            if not empty:
                stack.append(node)
    if pos != len(svg) or len(stack) != 1:
        raise ValueError("unbalanced SVG")
    return root


def _styled(node: _Node) -> bool:
    """Named by MathJax's stylesheet (``g[data-mml-node=...] > ...``, ``svg[data-table] > g``)."""
    return "data-mml-node=" in node[1] or "data-table=" in node[1]


def _flat(node: _Node | str, in_styled: bool) -> list:
    if isinstance(node, str):
        return [node]
    tag, attrs, children = node
    node[2] = [new for child in children for new in _flat(child, _styled(node))]
    if tag != "g" or in_styled:
        return [node]
    if not attrs:  # a bare group: its children are drawn exactly the same without it
        return node[2]
    only = _ONLY_TRANSFORM.fullmatch(attrs)
    if only and len(node[2]) == 1 and not isinstance(node[2][0], str):
        child = node[2][0]
        if child[0] in _TRANSFORMABLE:
            # g(T) > child(U) draws as child(T U): SVG composes a transform list left to right.
            own = _ONLY_TRANSFORM.search(child[1])
            if own:
                start, end = own.span()
                child[1] = (
                    f'{child[1][:start]} transform="{only.group(1)} {own.group(1)}"{child[1][end:]}'
                )
            else:
                child[1] += f' transform="{only.group(1)}"'
            return [child]
    return [node]


def _svg_markup(node: _Node | str, out: list[str]) -> None:
    if isinstance(node, str):
        out.append(node)
        return
    out.append(f"<{node[0]}{node[1]}>")
    for child in node[2]:
        _svg_markup(child, out)
    out.append(f"</{node[0]}>")


def flatten_svg(svg: str) -> str:
    """A formula's SVG with the groups that draw nothing of their own taken out.

    MathJax wraps every MathML node in a ``<g>``; once its ``data-mml-node`` name is gone (only
    MathJax's scripts read it) a ``<g>`` without attributes changes nothing, and a ``<g>`` with only
    a ``transform`` around one element can hand that transform to it. About half the elements of a
    page's formulas go, which the browser no longer parses, styles or lays out. Groups that
    MathJax's stylesheet names (``merror``, ``mtable``, tables) and their children stay as they are.
    Markup this does not recognise is returned unchanged.

    Args:
        svg: one formula's ``<svg>...</svg>`` markup as MathJax wrote it (no XML declaration).

    Returns:
        The same drawing with fewer elements, or ``svg`` itself if it could not be parsed.
    """
    try:
        root = _svg_tree(svg)
    except ValueError:
        return svg
    out: list[str] = []
    for child in root[2]:
        for node in _flat(child, False):
            _svg_markup(node, out)
    return "".join(out)


def share_glyphs(body: str) -> str:
    """Draw each distinct glyph outline once per page, as MathJax's own "global" font cache does.

    Every ``<path data-c=... d=...>`` glyph in the page's formulas becomes a ``<use href=...>`` of a
    path defined once in a hidden ``<svg>`` at the top of the page, and each formula's groups that
    draw nothing of their own are taken out (:func:`flatten_svg`).
    """
    ids: dict[str, str] = {}

    def use(match: re.Match) -> str:
        attrs = match.group(1)
        d = _D_ATTR.search(attrs)
        if d is None:
            return match.group(0)
        ref = ids.setdefault(d.group(1), f"mjx-g{len(ids)}")
        rest = _D_ATTR.sub("", attrs, count=1)
        return f'<use href="#{ref}"{rest}></use>'

    body = _GLYPH.sub(use, body)
    if not ids:
        return body
    # Markup only MathJax's own scripts read (none run here); the stylesheet's selectors stay.
    body = _MML_NODE.sub(lambda m: m.group(0) if m.group(1) in _STYLED_NODES else "", body)
    body = _TEXCLASS.sub("", body)
    body = _SVG_XMLNS.sub(lambda m: f"<svg {m.group(1)} " if m.group(1) else "<svg ", body)
    body = _MATH_XMLNS.sub("<math ", body)
    body = _FORMULA_SVG.sub(lambda m: m.group(1) + flatten_svg(m.group(2)), body)
    defs = "".join(f'<path id="{ref}" d="{d}"></path>' for d, ref in ids.items())
    cache = (
        '<svg style="display: none;" id="MJX-SVG-global-cache" aria-hidden="true">'
        f"<defs>{defs}</defs></svg>"
    )
    return cache + body


def _on_page_context(app: Any, pagename: str, templatename: str, context: dict, doctree) -> None:
    if isinstance(context.get("body"), str) and "<mjx-container" in context["body"]:
        context["body"] = share_glyphs(context["body"])


def _on_config(app: Any, config: Any) -> None:
    config.html_math_renderer = RENDERER


def _on_builder_inited(app: Any) -> None:
    if app.builder.format != "html":
        return
    _mathjax_source()  # fail early, with the reason, if MathJax is missing
    _node_executable()
    app.add_css_file(CSS_NAME)


def _on_build_finished(app: Any, exception: Exception | None) -> None:
    if app.builder.format == "html" and exception is None:
        static = Path(app.outdir) / "_static"
        static.mkdir(parents=True, exist_ok=True)
        css = RENDER.stylesheet()
        extra = (
            "\n/* bookext: display math scrolls sideways on a narrow screen instead of overflowing. */"
            '\ndiv.math > mjx-container[jax="SVG"][display="true"] { overflow-x: auto; '
            "overflow-y: hidden; }\n"
            ".bookmath-error { color: #b00020; font-family: monospace; }\n"
        )
        (static / CSS_NAME).write_text(
            f"/* MathJax {RENDER.version} SVG output, rendered at build time. */\n" + css + extra,
            encoding="utf-8",
        )
    RENDER.close()


def setup(app: Any) -> dict:
    app.add_html_math_renderer(RENDERER, (html_visit_math, None), (html_visit_displaymath, None))
    app.connect("config-inited", _on_config, priority=900)
    app.connect("builder-inited", _on_builder_inited)
    app.connect("html-page-context", _on_page_context)
    app.connect("build-finished", _on_build_finished)
    return {"parallel_read_safe": True, "parallel_write_safe": True, "version": "2.0"}
