"""sphinx-book-theme options that Jupyter Book 1.x's ``_config.yml`` has no key for, and two fixes.

- Setting ``html_theme_options`` under ``sphinx.config`` would replace the options Jupyter Book builds
  from ``_config.yml`` (repository, launch and edit buttons), so this adds to them instead.
- Inline scripts written twice: Sphinx 7.4 registers an inline script (``add_js_file(None, body=...)``)
  both as ``None`` and, again at write time, as ``""``; the two do not compare equal, so every page
  carried sphinx-thebe's ``const THEBE_JS_URL = ...`` (a SyntaxError the second time) and
  sphinx-togglebutton's selector twice. Each page's scripts are de-duplicated before it is written.
- Icons without 1.5 MB of JavaScript: pydata-sphinx-theme loads ``fontawesome.js`` on every page, which
  replaces each ``<i class="fa-...">`` by an inline SVG. The theme's own stylesheet already draws
  the same icons from Font Awesome's web fonts (it bundles them), so the built site's
  ``fontawesome.js`` is replaced by a stub, and the web fonts by subsets holding only the icons the
  built pages and the theme's stylesheets use (``bookicons.css`` points the theme's font families at
  them), and the ~2,400 ``.fa-NAME:before`` rules of the theme's stylesheet are cut to the icons the
  site uses. The theme itself is unchanged; only the copies in the built site are.
- The visible ☰ and contents buttons: both themes' scripts bind only the first ``.primary-toggle``
  (a hidden one), so on phones and tablets neither drawer opened; ``sidebar_toggles.js`` hands a
  click on the visible button to the first one (``bookpage.js``).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from sphinx.util import logging

LOGGER = logging.getLogger(__name__)

EXTRA_THEME_OPTIONS = {
    # A "view source" link (the notebook on the repository host) beside download and edit.
    "use_source_button": True,
}

ICON_CSS = "bookicons.css"
PAGE_SCRIPT = "bookpage.js"
ICON_DIR = "bookicons"
FONTAWESOME_STUB = (
    "/* bookext.theme_options: the site draws Font Awesome icons from the theme's web fonts\n"
    "   (subset to the icons the pages use, see bookicons.css) instead of this 1.5 MB script. */\n"
)
# Icons the theme's scripts add to pages after load (pydata-sphinx-theme.js: the search dialog's
# close button), which no built HTML file names.
SCRIPT_ICONS = ("xmark",)
# (file stem in the theme's vendor/fontawesome/webfonts, CSS font-family, font-weight)
FONTS = (
    ("fa-solid-900", "Font Awesome 6 Free", 900),
    ("fa-regular-400", "Font Awesome 6 Free", 400),
    ("fa-brands-400", "Font Awesome 6 Brands", 400),
)
# Class names that style an icon rather than name one.
_NOT_ICONS = {
    "fa",
    "fas",
    "far",
    "fab",
    "fa-solid",
    "fa-regular",
    "fa-brands",
    "fa-lg",
    "fa-sm",
    "fa-xs",
    "fa-fw",
    "fa-2x",
    "fa-3x",
    "fa-spin",
}
_CLASS_ATTR = re.compile(r'class="([^"]*\bfa-[^"]*)"')
_ICON_RULE = re.compile(r'((?:\.fa-[a-z0-9-]+:before,?)+)\{content:"\\([0-9a-f]+)"\}')


def _on_config(app: Any, config: Any) -> None:
    config.html_theme_options = {**config.html_theme_options, **EXTRA_THEME_OPTIONS}


def _script_key(script: Any) -> tuple:
    filename = getattr(script, "filename", script) or ""
    attributes = getattr(script, "attributes", {})
    return (str(filename), getattr(script, "priority", 500), tuple(sorted(attributes.items())))


def dedupe_scripts(scripts: list) -> list:
    """``scripts`` without repeats, treating an inline script's ``None`` and ``""`` alike."""
    seen: set[tuple] = set()
    unique = []
    for script in scripts:
        key = _script_key(script)
        if key not in seen:
            seen.add(key)
            unique.append(script)
    return unique


def _on_page_context(app: Any, pagename: str, templatename: str, context: dict, doctree) -> None:
    scripts = context.get("script_files")
    if isinstance(scripts, list):
        scripts[:] = dedupe_scripts(scripts)


def _on_builder_inited(app: Any) -> None:
    if app.builder.format == "html":
        app.add_css_file(ICON_CSS)
        # bookext/assets/bookpage.js (copied by bookext.plotly_mime): the visible ☰ and contents
        # buttons open their drawers; skipped sections get their measured height (see its header).
        app.add_js_file(PAGE_SCRIPT, loading_method="defer")


def icon_codepoints(theme_css: str) -> dict[str, int]:
    """Font Awesome icon name (without ``fa-``) -> code point, from the theme's stylesheet."""
    names: dict[str, int] = {}
    for selectors, code in _ICON_RULE.findall(theme_css):
        for name in re.findall(r"\.fa-([a-z0-9-]+):before", selectors):
            names[name] = int(code, 16)
    return names


def css_icon_codepoints(css: str) -> set[int]:
    """Icons a stylesheet draws itself (admonition, link and breadcrumb marks, ...).

    The theme writes them as literal private-use characters in custom properties
    (``--pst-icon-info-circle: "\uf05a"``) or as escapes in ``content``; the ``.fa-NAME:before``
    rules that merely name every icon are left out.
    """
    css = _ICON_RULE.sub("", css)
    codes = {ord(ch) for ch in css if 0xE000 <= ord(ch) <= 0xF8FF}
    codes |= {int(c, 16) for c in re.findall(r'"\\([ef][0-9a-f]{3})"', css)}
    return codes


def icons_used(html_files: list[Path]) -> set[str]:
    """Every ``fa-NAME`` icon class in the built pages (style classes excluded)."""
    used: set[str] = set()
    for path in html_files:
        for classes in _CLASS_ATTR.findall(path.read_text(encoding="utf-8", errors="replace")):
            for cls in classes.split():
                if cls.startswith("fa-") and cls not in _NOT_ICONS:
                    used.add(cls.removeprefix("fa-"))
    return used


def _subset_fonts(outdir: Path) -> None:
    from fontTools import subset

    static = outdir / "_static"
    theme_css = static / "styles" / "pydata-sphinx-theme.css"
    webfonts = static / "vendor" / "fontawesome" / "webfonts"
    if not theme_css.is_file() or not webfonts.is_dir():
        return  # another theme: nothing to trim
    codes = icon_codepoints(theme_css.read_text(encoding="utf-8"))
    pages = [p for p in outdir.rglob("*.html") if "_static" not in p.parts]
    wanted = icons_used(pages) | set(SCRIPT_ICONS)
    unknown = sorted(name for name in wanted if name not in codes)
    if unknown:
        LOGGER.warning(
            "icons %s are not in the theme's Font Awesome stylesheet; they would not show",
            unknown,
            type="bookext",
            subtype="icons",
        )
    unicodes = {codes[name] for name in wanted if name in codes}
    for sheet in static.rglob("*.css"):
        if sheet.name != ICON_CSS:
            unicodes |= css_icon_codepoints(sheet.read_text(encoding="utf-8", errors="replace"))
    unicodes = sorted(unicodes)
    target = static / ICON_DIR
    target.mkdir(exist_ok=True)
    faces = []
    for stem, family, weight in FONTS:
        source = webfonts / f"{stem}.ttf"
        if not source.is_file():
            continue
        options = subset.Options()
        options.flavor = "woff"
        options.layout_features = ["*"]
        options.name_IDs = ["*"]
        options.notdef_outline = True
        font = subset.load_font(str(source), options)
        subsetter = subset.Subsetter(options)
        subsetter.populate(unicodes=unicodes)
        subsetter.subset(font)
        subset.save_font(font, str(target / f"{stem}.woff"), options)
        faces.append(
            f'@font-face{{font-display:block;font-family:"{family}";font-style:normal;'
            f'font-weight:{weight};src:url({ICON_DIR}/{stem}.woff) format("woff")}}'
        )
    (static / ICON_CSS).write_text(
        "/* bookext.theme_options: the theme's Font Awesome fonts, subset to the icons the site "
        "uses. Declared after the theme's own @font-face rules, these win. */\n"
        + "\n".join(faces)
        + "\n",
        encoding="utf-8",
    )
    # The theme's stylesheet names ~2,400 icons; keep the rules of the icons the site uses.
    keep = wanted

    def trim(match: re.Match) -> str:
        names = re.findall(r"\.fa-([a-z0-9-]+):before", match.group(1))
        kept = [n for n in names if n in keep]
        if not kept:
            return ""
        selectors = ",".join(f".fa-{n}:before" for n in kept)
        return f'{selectors}{{content:"\\{match.group(2)}"}}'

    theme_css.write_text(
        _ICON_RULE.sub(trim, theme_css.read_text(encoding="utf-8")), encoding="utf-8"
    )
    fontawesome_js = static / "scripts" / "fontawesome.js"
    if fontawesome_js.is_file():
        fontawesome_js.write_text(FONTAWESOME_STUB, encoding="utf-8")


def _on_build_finished(app: Any, exception: Exception | None) -> None:
    if exception is None and app.builder.format == "html":
        _subset_fonts(Path(app.outdir))


def setup(app: Any) -> dict:
    app.connect("config-inited", _on_config, priority=900)
    app.connect("builder-inited", _on_builder_inited)
    app.connect("html-page-context", _on_page_context, priority=900)
    app.connect("build-finished", _on_build_finished)
    return {"parallel_read_safe": True, "parallel_write_safe": True, "version": "1.1"}
