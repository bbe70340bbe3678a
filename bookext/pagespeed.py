"""A chapter page readable sooner: nothing in ``<head>`` holds the parser up (Sphinx extension).

Measured with the benchmark's page-load section (``python -m bench.run --only pages``) and Chromium's
trace of a cold visit, a chapter page spent its first second on three things besides its own HTML:

- **scripts that block the parser**: Sphinx, the theme and their extensions write plain
  ``<script src>`` tags in ``<head>``; the browser stops parsing the page until each has arrived
  and run. Here every such script becomes ``defer`` (they still run in the same order, before
  ``DOMContentLoaded``, and each already waits for the DOM), except ``documentation_options.js``,
  which the inline scripts right after it use at once (a few hundred bytes).
- **the search index on every page**: pydata-sphinx-theme loads ``searchtools.js``,
  ``language_data.js`` and ``searchindex.js`` (0.2 MB) on every page for its search-as-you-type
  box, which this book leaves off (``search_as_you_type`` is false, so the theme's script never
  uses them). The search field sends the reader to ``search.html``, which loads its own copy; the
  other pages no longer load it.
- **unused CSS**: the theme's stylesheet (0.31 MB, Bootstrap included) is cut, in the built copy,
  to the rules for classes some page or script of the site names (:func:`trim_css`).
- **sphinx-design's assets on pages that use none of it**: its stylesheet (55 kB) and tab script
  stay only on a page with an ``sd-`` component.
- **a second full style pass**: the theme's script resolves the reader's light/dark choice ("auto"
  becomes light or dark) after the page is parsed and restyles the whole page. A small inline
  script in ``<head>`` resolves it exactly as the theme does before the body is parsed, so the
  theme's later assignment changes nothing.

- **a full-page layout for the theme's tab stops**: the theme's script measures every code block
  and cell output at ``load`` and after each change to the article's DOM, laying out every
  skipped section; the built copy of that script measures only what is rendered, again as more
  renders, and ignores the changes plotly makes inside a figure (:data:`THEME_PATCHES`).

- **a span for every token of the code**: Pygments wraps each token of a code block in
  ``<span class>``, also names, punctuation and spaces, which the book's light and dark code styles
  draw in exactly the code block's own colour (half the elements of the RoPE chapter's code). In
  the built pages those spans go (:func:`strip_plain_tokens`); which token classes are plain is read
  from the site's own ``pygments.css`` (:func:`plain_token_classes`), so a style that colours
  names keeps their spans. The page's text and colours are unchanged.

plotly.js is no longer a ``<script>`` of the page at all: ``bookplot.js`` loads it once the page is
parsed (see :mod:`bookext.plotly_mime`). And ``reading.css`` lets the browser skip styling and
laying out the sections far below the screen (``content-visibility: auto``).

The built pages are rewritten at the end of the build (idempotent: a page already rewritten is
left as it is); the theme's templates are not forked.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from sphinx.util import logging

LOGGER = logging.getLogger(__name__)

# Scripts the inline scripts after them use while the page is parsed: they stay blocking.
KEEP_BLOCKING = ("documentation_options.js",)
SEARCH_SCRIPTS = ("_static/searchtools.js", "_static/language_data.js", "searchindex.js")
# pydata-sphinx-theme 0.17 (assets/scripts/pydata-sphinx-theme.js, setTheme): the reader's saved
# mode, else the page's default mode; "auto" (or anything unknown) follows prefers-color-scheme.
EARLY_THEME = (
    "(function(){var d=document.documentElement,m=localStorage.getItem('mode')||"
    "document.documentElement.dataset.mode||'';if(m!=='light'&&m!=='dark')m='auto';"
    "d.dataset.mode=m;d.dataset.theme=m==='auto'?(matchMedia('(prefers-color-scheme: dark)')"
    ".matches?'dark':'light'):m;})();"
)

_HEAD = re.compile(r"<head>.*?</head>", re.S)
# sphinx-design (loaded by Jupyter Book on every page): its stylesheet and tab script, needed only
# by a page that uses one of its components (their classes start with "sd-").
_USES_DESIGN = re.compile(r'class="(?:[^"]* )?sd-')
_DESIGN_ASSET = re.compile(
    r'[ \t]*<(?:link[^>]*href="[^"]*sphinx-design[^"]*\.css[^"]*"[^>]*/?>'
    r'|script[^>]*src="[^"]*design-tabs\.js[^"]*"[^>]*></script>)\n?'
)
_SCRIPT_SRC = re.compile(
    r'<script(?P<attrs>(?: [^>]*?)?) src="(?P<src>[^"]+)"(?P<rest>[^>]*)></script>'
)


def _search_script(src: str) -> bool:
    path = src.split("?")[0]
    return any(path.endswith(name) and not path.endswith("_" + name) for name in SEARCH_SCRIPTS)


def rewrite_head(html: str, pagename: str) -> str:
    """``html`` with its head scripts deferred and, except on the search page, no search index."""
    head = _HEAD.search(html)
    if head is None:
        return html

    def script(match: re.Match) -> str:
        tag, attrs, src = (
            match.group(0),
            match.group("attrs") + match.group("rest"),
            match.group("src"),
        )
        if pagename != "search" and _search_script(src):
            return ""
        if re.search(r"\b(?:defer|async)\b", attrs) or any(k in src for k in KEEP_BLOCKING):
            return tag
        if re.search(r'\btype="(?!text/javascript)', attrs):
            return tag  # a module or data block: left alone
        return tag.replace("<script", "<script defer", 1)

    new_head = _SCRIPT_SRC.sub(script, head.group(0))
    if not _USES_DESIGN.search(html, head.end()):
        new_head = _DESIGN_ASSET.sub("", new_head)
    # Blank lines left where the search scripts were.
    new_head = re.sub(r"\n[ \t]*\n(?:[ \t]*\n)+", "\n", new_head)
    return html[: head.start()] + new_head + html[head.end() :]


def _pagename(site: Path, page: Path) -> str:
    return page.relative_to(site).with_suffix("").as_posix()


# pygments.css as pydata-sphinx-theme writes it: one rule per theme and token class,
# `html[data-theme="light"] .highlight .n { color: #080808 }`, and the block's own
# `html[data-theme="light"] .highlight { background: #fefefe; color: #080808 }`.
PYGMENTS_CSS = "_static/pygments.css"
_PYGMENTS_RULE = re.compile(
    r'html\[data-theme="(?P<theme>[\w-]+)"\] \.highlight(?: \.(?P<cls>[\w-]+))? \{(?P<decls>[^}]*)\}'
)
# reading.css: `div.highlight pre.plain-tokens { color: inherit }`.
PLAIN_TOKENS_CLASS = "plain-tokens"
_CODE_BLOCK = re.compile(r'<div class="highlight"><pre>.*?</pre></div>', re.S)


def _declarations(text: str) -> frozenset[tuple[str, str]]:
    pairs = (d.split(":", 1) for d in text.split(";") if ":" in d)
    return frozenset((k.strip().lower(), v.strip().lower()) for k, v in pairs)


Declarations = frozenset[tuple[str, str]]


def _token_rules(css: str) -> tuple[dict[str, Declarations], dict[str, dict[str, Declarations]]]:
    """``css``'s ``.highlight`` colour per theme, and each token class's declarations per theme."""
    base: dict[str, Declarations] = {}
    rules: dict[str, dict[str, Declarations]] = {}
    for match in _PYGMENTS_RULE.finditer(css):
        decls = _declarations(match.group("decls"))
        if match.group("cls") is None:
            base[match.group("theme")] = frozenset(kv for kv in decls if kv[0] == "color")
        else:
            rules.setdefault(match.group("cls"), {})[match.group("theme")] = decls
    return base, rules


def plain_token_classes(css: str) -> set[str]:
    """The Pygments token classes that draw their text exactly as the code block around them.

    A class is plain when it has a rule in every theme of ``css`` (``html[data-theme=...]``) and
    each sets nothing but the block's own text colour (the ``.highlight`` rule's ``color``). A class
    without a rule in some theme takes ``<pre>``'s colour there, which is not the block's. A span of
    a plain class changes nothing on the page.

    Args:
        css: the site's ``pygments.css`` (pydata-sphinx-theme's light and dark rules).

    Returns:
        The plain classes (``{"n", "p", "w", ...}`` for the book's styles); empty if ``css`` has
        no ``.highlight`` rule with a colour per theme.
    """
    base, rules = _token_rules(css)
    if not base or not all(base.values()):
        return set()
    return {
        cls
        for cls, by_theme in rules.items()
        if set(by_theme) == set(base) and all(by_theme[t] == colour for t, colour in base.items())
    }


def coloured_token_classes(css: str) -> set[str]:
    """The Pygments token classes of ``css`` whose rule sets a ``color`` in every theme.

    Text in a span of one of them keeps its colour whatever ``<pre>``'s colour is; text in any
    other span (``linenos``, ``hll``, bold or italic only) takes ``<pre>``'s.
    """
    base, rules = _token_rules(css)
    return {
        cls
        for cls, by_theme in rules.items()
        if base and all(any(k == "color" for k, _ in by_theme.get(t, ())) for t in base)
    }


_SPAN = re.compile(r'<span class="([^"]*)">([^<]*)</span>')


def _has_bare_text(block: str, coloured: set[str]) -> bool:
    """Whether a code block has visible text in ``<pre>``'s colour: outside every span of a
    ``coloured`` class (innermost spans first; an uncoloured span such as ``hll`` is taken off
    around its content and its own text counts)."""
    body = block[block.index("<pre>") + len("<pre>") : block.rindex("</pre>")]
    while True:
        shorter = _SPAN.sub(lambda m: "" if m.group(1) in coloured else m.group(2), body)
        if shorter == body:
            break
        body = shorter
    return bool(re.sub(r"<[^>]+>", "", body).strip())


def strip_plain_tokens(html: str, plain: set[str], coloured: set[str] | None = None) -> str:
    """``html`` with the code blocks' ``<span class="c">`` of a plain class ``c`` unwrapped.

    Only spans inside ``<div class="highlight"><pre>`` (Pygments' output: a token's escaped text,
    no nested markup) are touched; the text is kept exactly, so copying the code is unchanged.
    A block that lost spans gets ``<pre class="plain-tokens">``, which ``reading.css`` draws in the
    block's own colour (the theme's ``pre`` colour differs), the plain classes' colour; so a block
    with text in ``<pre>``'s colour (outside every span of a ``coloured`` class, see
    :func:`coloured_token_classes`; default: ``plain`` only) is left as it is.
    """
    if not plain:
        return html
    classes = "|".join(re.escape(c) for c in sorted(plain))
    span = re.compile(rf'<span class="(?:{classes})">([^<]*)</span>')

    def unwrap(block: re.Match) -> str:
        if _has_bare_text(block.group(0), coloured if coloured is not None else plain):
            return block.group(0)  # that text is in <pre>'s colour, which unwrapped text is not
        code = span.sub(r"\1", block.group(0))
        if code == block.group(0):
            return code
        # The theme gives <pre> a text colour of its own: the unwrapped text takes the block's.
        return code.replace("<pre>", f'<pre class="{PLAIN_TOKENS_CLASS}">', 1)

    return _CODE_BLOCK.sub(unwrap, html)


def rewrite_site(site: Path) -> int:
    """Rewrite every page of the built site in place; returns how many changed."""
    changed = 0
    css = site / PYGMENTS_CSS
    rules = css.read_text(encoding="utf-8") if css.is_file() else ""
    plain, coloured = plain_token_classes(rules), coloured_token_classes(rules)
    for page in site.rglob("*.html"):
        if page.relative_to(site).parts[0] in ("_static", "_sources"):
            continue
        text = page.read_text(encoding="utf-8")
        new = strip_plain_tokens(rewrite_head(text, _pagename(site, page)), plain, coloured)
        if new != text:
            page.write_text(new, encoding="utf-8")
            changed += 1
    return changed


# The theme's one big stylesheet (Bootstrap and the theme, 0.31 MB): its rules for classes that no
# page and no script of the site names are cut from the built copy.
THEME_CSS = ("styles/pydata-sphinx-theme.css",)
_CLASS_IN_SELECTOR = re.compile(r"\.(-?[_a-zA-Z][\w-]*)")
# A selector inside these may match elements *without* a class, so it is always kept.
_FUNCTIONAL = re.compile(r":(?:not|is|where|has|matches|-webkit-any)\(")


def site_names(site: Path) -> set[str]:
    """Every class a built page names, and every identifier-like word in the site's scripts.

    Scripts add classes at run time (Bootstrap's ``show``, the theme's ``dropdown-menu-dark``), so
    every word in every script counts as a class that may be used: the trim errs on keeping.
    """
    names: set[str] = set()
    for page in site.rglob("*.html"):
        for classes in re.findall(
            r'class="([^"]*)"', page.read_text(encoding="utf-8", errors="replace")
        ):
            names.update(classes.split())
    for script in site.rglob("*.js"):
        names.update(
            re.findall(r"[A-Za-z_][\w-]*", script.read_text(encoding="utf-8", errors="replace"))
        )
    return names


def _selectors(prelude: list) -> list[str]:
    """A rule's selector list, split at its top-level commas (not those inside ``:not(a, b)``)."""
    import tinycss2

    parts: list[list] = [[]]
    for token in prelude:
        if token.type == "literal" and token.value == ",":
            parts.append([])
        else:
            parts[-1].append(token)
    return [tinycss2.serialize(part).strip() for part in parts]


def trim_css(css: str, names: set[str]) -> str:
    """``css`` without the selectors that need a class outside ``names`` (rules left empty go).

    Only plain class selectors decide: a selector with ``:not()``, ``:is()``, ``:where()`` or
    ``:has()`` is kept whole, and at-rules other than ``@media``/``@supports`` (fonts, keyframes,
    layers) are kept as they are.
    """
    import tinycss2

    def keep(selector: str) -> bool:
        if _FUNCTIONAL.search(selector):
            return True
        return all(c in names for c in _CLASS_IN_SELECTOR.findall(selector))

    def rules(nodes: list) -> str:
        out = []
        for node in nodes:
            if node.type == "qualified-rule":
                selectors = _selectors(node.prelude)
                kept = [s for s in selectors if keep(s)]
                if kept:
                    out.append(",".join(kept) + "{" + tinycss2.serialize(node.content) + "}")
            elif (
                node.type == "at-rule"
                and node.content is not None
                and node.lower_at_keyword
                in (
                    "media",
                    "supports",
                )
            ):
                inner = rules(tinycss2.parse_rule_list(node.content, skip_comments=True))
                if inner:
                    out.append(f"@{node.at_keyword}{tinycss2.serialize(node.prelude)}{{{inner}}}")
            elif node.type in ("at-rule", "qualified-rule"):
                out.append(node.serialize())
        return "".join(out)

    return rules(tinycss2.parse_stylesheet(css, skip_comments=True))


def trim_theme_css(site: Path) -> None:
    """Trim the built copies of the theme's stylesheets to what the site can use."""
    names = site_names(site)
    for rel in THEME_CSS:
        path = site / "_static" / rel
        if path.is_file():
            path.write_text(trim_css(path.read_text(encoding="utf-8"), names), encoding="utf-8")


# pydata-sphinx-theme 0.17 (addTabStopsToScrollableElements): on window ``load``, after every
# resize and after every change to the DOM of #main-content (debounced 300 ms) it reads
# scrollWidth/scrollHeight of every <pre> and cell output, to make the scrollable ones
# keyboard-focusable (tabindex 0). Each read forces a layout, and in a section reading.css lets the
# browser skip (content-visibility: auto) a layout of that section: on a chapter the pass at
# ``load`` laid out the whole page, 0.25-0.5 s of the main thread while the reader scrolls, and
# drawing a plotly figure changes that DOM. The built copy of the script is patched in two places,
# each matched exactly (a theme that no longer has the code logs a warning; -W fails the build):
#
# - THEME_TABSTOPS: the pass measures only what is rendered (Element.checkVisibility with
#   contentVisibilityAuto: an element in a skipped section keeps its tabindex) and runs again,
#   debounced as before, when the page scrolls or a section's skipped state changes
#   (contentvisibilityautostatechange, captured on the document; bookplot.js can also show a
#   section by class, which fires no such event but follows a scroll), so a block gets its tab stop
#   once it renders. At the reader's first Tab key press the pass measures every block once, skipped
#   or not, before the focus moves: a keyboard user reaches every scrollable block, as before.
#   A browser without contentvisibilityautostatechange measures everything, as before.
# - THEME_OBSERVER: the observer ignores changes inside a figure (plotly's SVG, the keyboard
#   slider), which add no <pre> and no cell output, and changes to nodes no longer in the page
#   (plotly rebuilds detached <g> nodes); any other change is handled as before.
THEME_JS = "scripts/pydata-sphinx-theme.js"
_TABSTOP_SELECTOR = (
    'document.querySelectorAll(["pre",".nboutput > .output_area",".cell_output > .output",'
    '".jp-RenderedHTMLCommon",".pst-scrollable-table-container"].join(", "))'
)
_TABSTOP_SET = "e.tabIndex=e.scrollWidth>e.clientWidth||e.scrollHeight>e.clientHeight?0:-1"
THEME_TABSTOPS = (
    "const e=()=>{" + _TABSTOP_SELECTOR + ".forEach(e=>{" + _TABSTOP_SET + "})},t=_(e,300);"
    'window.addEventListener("resize",t),'
)
LAZY_TABSTOPS = (
    "const e=a=>{" + _TABSTOP_SELECTOR + ".forEach(e=>{"
    "if(a!==!0&&window.ContentVisibilityAutoStateChangeEvent&&"
    "!e.checkVisibility({contentVisibilityAuto:!0}))return;" + _TABSTOP_SET + "})},t=_(e,300);"
    'window.addEventListener("resize",t),window.addEventListener("scroll",t,{passive:!0}),'
    'document.addEventListener("contentvisibilityautostatechange",function(v){v.skipped||t()},!0),'
    'document.addEventListener("keydown",function k(v){"Tab"===v.key&&'
    '(document.removeEventListener("keydown",k,!0),e(!0))},!0),'
)
THEME_OBSERVER = (
    'new MutationObserver(t).observe(document.getElementById("main-content"),'
    "{subtree:!0,childList:!0})"
)
QUIET_OBSERVER = (
    "new MutationObserver(function(r){r.some(function(m){return m.target.isConnected&&!("
    'm.target.closest&&m.target.closest("figure.bookplot"))})&&t()}).observe('
    'document.getElementById("main-content"),{subtree:!0,childList:!0})'
)
# (the theme's code, what the built copy has instead)
THEME_PATCHES = {
    "THEME_TABSTOPS": (THEME_TABSTOPS, LAZY_TABSTOPS),
    "THEME_OBSERVER": (THEME_OBSERVER, QUIET_OBSERVER),
}


def patch_theme_js(js: str) -> tuple[str, list[str]]:
    """The theme's script with its tab-stop pass patched (see THEME_PATCHES), and what was not found.

    Idempotent: code already patched is left as it is. A patch whose code is not found exactly once
    (neither the theme's nor the patched form) is not applied; its name is returned.

    Args:
        js: the text of the theme's ``pydata-sphinx-theme.js``.

    Returns:
        The patched text, and the names (keys of THEME_PATCHES) of the patches it lacks.
    """
    missing = []
    for name, (theirs, ours) in THEME_PATCHES.items():
        if js.count(ours) == 1 and theirs not in js:
            continue
        if js.count(theirs) == 1 and ours not in js:
            js = js.replace(theirs, ours)
        else:
            missing.append(name)
    return js, missing


def _on_builder_inited(app: Any) -> None:
    if app.builder.format == "html":
        # Before every other script: it runs while <head> is parsed, before the body is styled.
        app.add_js_file(None, body=EARLY_THEME, priority=1)


def _on_build_finished(app: Any, exception: Exception | None) -> None:
    if exception is None and app.builder.format == "html":
        rewrite_site(Path(app.outdir))
        trim_theme_css(Path(app.outdir))
        theme_js = Path(app.outdir) / "_static" / THEME_JS
        if theme_js.is_file():
            js, missing = patch_theme_js(theme_js.read_text(encoding="utf-8"))
            if missing:
                LOGGER.warning(
                    "bookext.pagespeed: %s no longer has the code of %s exactly once "
                    "(pydata-sphinx-theme changed), left unpatched: its tab-stop pass lays out "
                    "the whole page and chapters scroll slower until bookext/pagespeed.py matches "
                    "the new code",
                    THEME_JS,
                    " and ".join(missing),
                    type="bookext",
                    subtype="pagespeed",
                )
            theme_js.write_text(js, encoding="utf-8")


def setup(app: Any) -> dict:
    app.connect("builder-inited", _on_builder_inited)
    # After bookext.theme_options has cut the stylesheet's icon rules (priority 500).
    app.connect("build-finished", _on_build_finished, priority=800)
    return {"parallel_read_safe": True, "parallel_write_safe": True, "version": "1.0"}
