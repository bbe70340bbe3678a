"""bookext: the plotly mime renderer's HTML and the site's offline math."""

from __future__ import annotations

import html as html_module
import json
import re
from types import SimpleNamespace

from docutils import nodes

from bookext.offline_math import MATHJAX_FILES, _mathjax_source
from bookext.plotly_mime import MARKER_CLASS, PLOTLY_MIME, PlotlyMimeRenderer, figure_html


def _figure(meta=None):
    layout = {"title": {"text": "t"}}
    if meta is not None:
        layout["meta"] = meta
    return {"data": [{"type": "scatter", "x": [1], "y": [2]}], "layout": layout}


def test_figure_html_embeds_json_caption_and_alt():
    html = figure_html(_figure({"caption": "Cap <b>", "alt": "Alt"}), "fig-1")
    assert 'id="fig-1"' in html and 'aria-label="Alt"' in html
    assert "<figcaption" in html and "Cap &lt;b&gt;" in html
    payload = html.split('data-target="fig-1">')[1].split("</script>")[0]
    assert json.loads(payload)["data"][0]["y"] == [2]


def test_figure_html_cannot_be_closed_early_by_data():
    fig = _figure()
    fig["data"][0]["text"] = ["</script><script>alert(1)</script>"]
    html = figure_html(fig, "fig-2")
    assert html.count("</script>") == 1
    payload = html.split('data-target="fig-2">')[1].split("</script>")[0]
    assert json.loads(payload)["data"][0]["text"] == ["</script><script>alert(1)</script>"]


def test_figure_html_summarises_its_sliders_and_buttons_for_the_keyboard_controls():
    fig = _figure()
    step = {"method": "restyle", "args": [{"visible": [True]}]}
    fig["layout"]["sliders"] = [
        {
            "active": 2,
            "currentvalue": {"prefix": 'base "b" = '},
            "steps": [{**step, "label": "1"}, {**step, "label": "<b>2</b>"}, step],
        }
    ]
    fig["layout"]["updatemenus"] = [
        {"type": "dropdown", "buttons": [{"label": "menu", "method": "relayout"}]},
        {"type": "buttons", "buttons": [{"label": "\u25b6", "method": "animate", "args": [None]}]},
    ]
    html = figure_html(fig, "fig-k")
    attr = re.search(r'<div class="bookplot-graph"[^>]* data-keys="([^"]*)"', html)
    assert attr is not None, html
    keys = json.loads(html_module.unescape(attr.group(1)))
    # Labels, active step and prefix only: the steps' methods and args stay in the figure's JSON.
    assert keys == {
        "sliders": [{"labels": ["1", "<b>2</b>", None], "active": 2, "prefix": 'base "b" = '}],
        "menus": [{"index": 1, "labels": ["\u25b6"]}],
    }
    assert "restyle" not in attr.group(1) and "animate" not in attr.group(1)


def test_figure_without_sliders_or_buttons_has_no_keyboard_summary():
    fig = _figure()
    fig["layout"]["updatemenus"] = [{"type": "dropdown", "buttons": [{"label": "x"}]}]
    assert "data-keys" not in figure_html(fig, "fig-n")


def test_figure_without_caption_gets_a_generic_alt_text():
    html = figure_html(_figure(), "fig-3")
    assert 'aria-label="Interactive figure"' in html and "<figcaption" not in html


def test_renderer_ids_are_deterministic_and_marked():
    renderer = SimpleNamespace(
        renderer=SimpleNamespace(
            document=SimpleNamespace(
                settings=SimpleNamespace(env=SimpleNamespace(docname="chapters/08_rope"))
            )
        )
    )
    data = SimpleNamespace(mime_type=PLOTLY_MIME, content=_figure(), cell_index=4, output_index=0)
    first = PlotlyMimeRenderer.handle_mime(renderer, data, False)
    second = PlotlyMimeRenderer.handle_mime(renderer, data, False)
    assert isinstance(first[0], nodes.raw) and MARKER_CLASS in first[0]["classes"]
    assert first[0].astext() == second[0].astext()
    assert 'id="bookplot-chapters-08-rope-4-0"' in first[0].astext()


def test_renderer_ignores_other_mime_types_and_inline_outputs():
    data = SimpleNamespace(mime_type="text/plain", content="x", cell_index=0, output_index=0)
    assert PlotlyMimeRenderer.handle_mime(None, data, False) is None
    data = SimpleNamespace(mime_type=PLOTLY_MIME, content=_figure(), cell_index=0, output_index=0)
    assert PlotlyMimeRenderer.handle_mime(None, data, True) is None


def test_mathjax_is_installed_locally():
    for name in MATHJAX_FILES:
        assert (_mathjax_source() / name).is_file()


# --------------------------------------------------------------------------- plotly.js bundle
def test_vendored_plotly_bundle_is_intact_and_matches_the_pinned_plotly():
    import hashlib

    import plotly.offline

    from bookext import plotly_mime

    data = plotly_mime.PLOTLY_BUNDLE.read_bytes()
    assert hashlib.sha256(data).hexdigest() == plotly_mime.PLOTLY_BUNDLE_SHA256
    assert plotly_mime.PLOTLY_BUNDLE_VERSION == plotly.offline.get_plotlyjs_version()
    # The file names its version and trace types in its banner, and ships with its MIT licence.
    banner = re.search(r"plotly\.js \(book: ([a-z0-9, ]+) - minified\) v(\S+)", data[:300].decode())
    assert banner is not None
    assert set(banner[1].split(", ")) == plotly_mime.BUNDLE_TRACES
    assert banner[2] == plotly_mime.PLOTLY_BUNDLE_VERSION
    assert plotly_mime.PLOTLY_JS_NAME == f"plotly-book-{plotly_mime.PLOTLY_BUNDLE_VERSION}.min.js"
    assert "MIT License" in (plotly_mime.PLOTLY_BUNDLE_DIR / "LICENSE").read_text()
    assert plotly_mime._plotly_js_source() == plotly_mime.PLOTLY_BUNDLE


def test_bundle_build_is_pinned_and_registers_exactly_the_bundle_traces():
    """scripts/plotly_bundle pins plotly.js (= the pinned plotly's) and esbuild exactly, and its
    entry registers the trace types BUNDLE_TRACES names (scatter comes with plotly.js's core)."""
    from pathlib import Path

    from bookext import plotly_mime

    build = Path(__file__).resolve().parents[1] / "scripts" / "plotly_bundle"
    wanted = json.loads((build / "package.json").read_text())["devDependencies"]
    assert wanted == {"esbuild": wanted["esbuild"], "plotly.js": plotly_mime.PLOTLY_BUNDLE_VERSION}
    assert re.fullmatch(r"\d+\.\d+\.\d+", wanted["esbuild"]), "esbuild must be pinned exactly"
    locked = json.loads((build / "package-lock.json").read_text())["packages"]
    assert locked[""]["devDependencies"] == wanted
    assert locked["node_modules/plotly.js"]["version"] == plotly_mime.PLOTLY_BUNDLE_VERSION
    assert locked["node_modules/esbuild"]["version"] == wanted["esbuild"]
    assert all(entry.get("integrity") for name, entry in locked.items() if name)
    entry = (build / "entry.js").read_text()
    required = set(re.findall(r"require\('plotly\.js/lib/([a-z0-9]+)'\)", entry))
    assert required == {"core"} | (plotly_mime.BUNDLE_TRACES - {"scatter"})


def test_a_tampered_or_mismatched_bundle_stops_the_build(tmp_path, monkeypatch):
    import pytest

    from bookext import plotly_mime

    fake = tmp_path / "plotly-book.min.js"
    fake.write_text("/* not plotly */")
    monkeypatch.setattr(plotly_mime, "PLOTLY_BUNDLE", fake)
    with pytest.raises(ValueError, match="SHA-256"):
        plotly_mime._plotly_js_source()
    monkeypatch.undo()
    monkeypatch.setattr(plotly_mime, "PLOTLY_BUNDLE_VERSION", "0.0.1")
    with pytest.raises(ValueError, match=r"plotly ships plotly\.js"):
        plotly_mime._plotly_js_source()


def _chapter_figures():
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    for path in sorted((root / "chapters").glob("*.ipynb")):
        nb = json.loads(path.read_text(encoding="utf-8"))
        for index, cell in enumerate(nb["cells"]):
            for output in cell.get("outputs", []):
                figure = output.get("data", {}).get(PLOTLY_MIME)
                if figure is not None:
                    yield path.name, index, figure


def test_every_chapter_figure_uses_only_trace_types_the_site_bundle_draws():
    """A chapter that adds e.g. a scatter3d or scattergl trace fails here (and warns in the build)."""
    from bookext.plotly_mime import unsupported_trace_types

    figures = list(_chapter_figures())
    assert len(figures) >= 12, "expected the chapters' committed plotly outputs"
    bad = [(nb, i, sorted(unsupported_trace_types(f))) for nb, i, f in figures]
    bad = [b for b in bad if b[2]]
    assert not bad, f"trace types the site's plotly.js bundle lacks: {bad}"


def test_trace_types_include_frames_and_default_to_scatter():
    from bookext.plotly_mime import trace_types, unsupported_trace_types

    figure = {
        "data": [{"x": [1]}, {"type": "heatmap", "z": [[1]]}],
        "frames": [{"data": [{"type": "scatter3d", "x": [1], "y": [1], "z": [1]}]}],
    }
    assert trace_types(figure) == {"scatter", "heatmap", "scatter3d"}
    assert unsupported_trace_types(figure) == {"scatter3d"}
    assert unsupported_trace_types({"data": [{"type": "bar"}]}) == set()


def test_figure_height_is_reserved_before_drawing():
    assert 'style="height:450px"' in figure_html(_figure(), "fig-4")
    fig = _figure()
    fig["layout"]["height"] = 620
    assert 'style="height:620px"' in figure_html(fig, "fig-5")


# --------------------------------------------------------------------------- build-time math
def test_math_is_rendered_to_svg_with_mathml_for_screen_readers():
    from bookext.offline_math import RENDER

    out = RENDER.render(r"\theta_i = b^{-2i/d}", display=True)
    assert out.startswith('<mjx-container class="MathJax" jax="SVG" display="true"')
    assert "<svg" in out and 'aria-hidden="true"' in out
    assert "<mjx-assistive-mml" in out and "<mi>θ</mi>" in out
    inline = RENDER.render(r"\boldsymbol{x}^\top W", display=False)  # autoloaded package
    assert 'display="true"' not in inline.split(">")[0]


def test_tex_errors_are_refused_not_drawn_in_red():
    import pytest

    from bookext.offline_math import RENDER

    with pytest.raises(ValueError, match="Missing close brace"):
        RENDER.render(r"\frac{a", display=True)
    with pytest.raises(ValueError, match=r"Undefined control sequence \\nosuchmacro"):
        RENDER.render(r"\nosuchmacro{x}", display=False)


def test_glyph_outlines_are_shared_once_per_page():
    import re

    from bookext.offline_math import RENDER, share_glyphs

    one = RENDER.render(r"x + x", display=False)
    page = share_glyphs(f"<p>{one}</p><p>{one}</p>")
    defs = re.findall(r'<path id="(mjx-g\d+)" d="', page)
    uses = re.findall(r'<use href="#(mjx-g\d+)"', page)
    assert len(defs) == 2  # "x" and "+"
    assert len(uses) == 6 and set(uses) == set(defs)
    assert "<path data-c=" not in page
    assert share_glyphs("<p>no math</p>") == "<p>no math</p>"


def test_formula_groups_that_draw_nothing_are_taken_out():
    import re

    from bookext.offline_math import RENDER, flatten_svg, share_glyphs

    page = share_glyphs(RENDER.render(r"q \cdot k", display=False))
    svg = re.search(r"<mjx-container[^>]*>(<svg.*?</svg>)", page).group(1)
    # One group left (the one that flips y and sets the colour), the glyphs right inside it,
    # each carrying the offset its group had; the MathML for screen readers is untouched.
    assert svg.count("<g") == 1 and 'transform="scale(1,-1)"' in svg
    assert re.findall(r"<use [^>]*>", svg)[1:] == [
        '<use href="#mjx-g1" transform="translate(682.2,0)">',
        '<use href="#mjx-g2" transform="translate(1182.4,0)">',
    ]
    assert "<math ><mi>q</mi><mo>⋅</mo><mi>k</mi></math>" in page
    # A group's transform goes in front of its child's own; groups MathJax's stylesheet names
    # (and what is inside them) stay; markup it cannot read is left alone.
    nested = (
        '<svg><g transform="translate(1,0)"><use href="#a" transform="scale(2)"></use></g></svg>'
    )
    assert flatten_svg(nested) == (
        '<svg><use href="#a" transform="translate(1,0) scale(2)"></use></svg>'
    )
    table = '<svg><g data-mml-node="mtable"><g><line data-line="v"></line></g></g></svg>'
    assert flatten_svg(table) == table
    two = '<svg><g transform="translate(1,0)"><use href="#a"></use><use href="#b"></use></g></svg>'
    assert flatten_svg(two) == two
    assert flatten_svg("<svg><g><path d></path></g></svg>") == "<svg><g><path d></path></g></svg>"


# --------------------------------------------------------------------------- theme fixes
def test_inline_scripts_registered_as_none_and_empty_are_deduplicated():
    from sphinx.builders.html._assets import _JavaScript

    from bookext.theme_options import dedupe_scripts

    body = 'const THEBE_JS_URL = "x"'
    scripts = [
        _JavaScript("_static/a.js"),
        _JavaScript(None, body=body),
        _JavaScript("", body=body),
        _JavaScript("_static/a.js"),
        _JavaScript("", body="other"),
    ]
    assert [(s.filename, s.attributes) for s in dedupe_scripts(scripts)] == [
        ("_static/a.js", {}),
        (None, {"body": body}),
        ("", {"body": "other"}),
    ]


def test_icon_names_map_to_code_points_and_style_classes_are_not_icons(tmp_path):
    from bookext.theme_options import icon_codepoints, icons_used

    css = '.fa-a:before,.fa-b:before{content:"\\f001"}.fa-github:before{content:"\\f09b"}'
    assert icon_codepoints(css) == {"a": 0xF001, "b": 0xF001, "github": 0xF09B}
    page = tmp_path / "p.html"
    page.write_text('<i class="fa-solid fa-sun fa-lg"></i><span class="fa-brands fa-github">')
    assert icons_used([page]) == {"sun", "github"}


def test_icons_the_theme_stylesheet_draws_itself_are_kept():
    from bookext.theme_options import css_icon_codepoints

    css = (
        ':root{--pst-icon-info-circle:"\uf05a"}.fa-sun:before{content:"\\f185"}'
        '.x:after{content:"\\f107"}'
    )
    assert css_icon_codepoints(css) == {0xF05A, 0xF107}


# --------------------------------------------------------------------------- page speed
def test_compact_numbers_keeps_every_value_and_type_javascript_sees():
    from hypothesis import given
    from hypothesis import strategies as st

    from bookext.plotly_mime import compact_numbers

    leaves = st.floats(allow_nan=False, allow_infinity=False) | st.integers() | st.text()
    values = st.recursive(
        leaves, lambda kids: st.lists(kids) | st.dictionaries(st.text(), kids), max_leaves=20
    )

    @given(values)
    def check(value):
        # JSON round trip: the same numbers (JavaScript has one number type), never longer.
        before = json.dumps(value)
        after = json.dumps(compact_numbers(value))
        assert json.loads(after) == json.loads(before)
        assert len(after) <= len(before)

    check()
    assert json.dumps(compact_numbers({"x": [0.0, 1.0, -2.0, 0.25, 1e300]})) == (
        '{"x": [0, 1, -2, 0.25, 1e+300]}'
    )


def test_figure_html_writes_whole_numbers_without_a_decimal_point():
    fig = _figure()
    fig["data"][0]["y"] = [2.0, 2.5, 3.0]
    payload = figure_html(fig, "f").split('data-target="f">')[1].split("</script>")[0]
    assert '"y":[2,2.5,3]' in payload


HEAD = """<html><head>
<script src="../_static/documentation_options.js?v=1"></script>
<script src="../_static/doctools.js?v=2"></script>
<script async="async" src="../_static/sphinx-thebe.js?v=3"></script>
<script defer="defer" src="../_static/bookplot.js?v=4"></script>
<script>DOCUMENTATION_OPTIONS.pagename = 'x';</script>
<link rel="stylesheet" type="text/css" href="../_static/sphinx-design.min.css?v=5" />
<script data-sd-tabs-storage-prefix="p" src="../_static/design-tabs.js?v=6"></script>
<script src="../_static/searchtools.js"></script>
<script src="../_static/language_data.js"></script>
<script src="../searchindex.js"></script>
</head><body><p class="x">text</p><script src="late.js"></script></body></html>"""


def test_rewrite_head_defers_scripts_and_drops_what_the_page_does_not_use():
    from bookext.pagespeed import rewrite_head

    out = rewrite_head(HEAD, "chapters/x")
    head = out.split("</head>")[0]
    # Parser-blocking scripts become defer, in their order; the one inline scripts use stays.
    assert '<script src="../_static/documentation_options.js?v=1">' in head
    assert '<script defer src="../_static/doctools.js?v=2">' in head
    assert '<script async="async" src="../_static/sphinx-thebe.js?v=3">' in head
    assert head.count("bookplot.js") == 1 and "defer defer" not in head
    # No search index and no sphinx-design on a page that uses neither.
    for gone in (
        "searchtools.js",
        "language_data.js",
        "searchindex.js",
        "sphinx-design",
        "design-",
    ):
        assert gone not in head, gone
    # The body is untouched; a second pass changes nothing.
    assert out.split("</head>")[1] == HEAD.split("</head>")[1]
    assert rewrite_head(out, "chapters/x") == out


def test_rewrite_head_keeps_the_search_index_on_the_search_page_and_design_where_used():
    from bookext.pagespeed import rewrite_head

    search = rewrite_head(HEAD, "search")
    assert "searchindex.js" in search and "searchtools.js" in search
    designed = rewrite_head(HEAD.replace('class="x"', 'class="sd-card x"'), "chapters/x")
    assert "sphinx-design.min.css" in designed and "design-tabs.js" in designed


PYGMENTS_CSS = """html[data-theme="light"] .highlight pre { line-height: 125%; }
html[data-theme="light"] .highlight .hll { background-color: #fae4c2 }
html[data-theme="light"] .highlight { background: #fefefe; color: #080808 }
html[data-theme="light"] .highlight .k { color: #6730C5 } /* Keyword */
html[data-theme="light"] .highlight .n { color: #080808 } /* Name */
html[data-theme="light"] .highlight .p { color: #080808 } /* Punctuation */
html[data-theme="light"] .highlight .nb { color: #080808; font-weight: bold }
html[data-theme="light"] .highlight .nx { color: #080808 }
html[data-theme="light"] .highlight .w { color: #080808 }
html[data-theme="dark"] .highlight { background: #2b2b2b; color: #F8F8F2 }
html[data-theme="dark"] .highlight .k { color: #DCC6E0 } /* Keyword */
html[data-theme="dark"] .highlight .n { color: #F8F8F2 } /* Name */
html[data-theme="dark"] .highlight .p { color: #f8f8f2 } /* Punctuation */
html[data-theme="dark"] .highlight .nb { color: #F8F8F2 }
html[data-theme="dark"] .highlight .nx { color: #ABE338 }
"""


def test_plain_token_classes_are_those_drawn_in_the_blocks_own_colour_in_every_theme():
    from bookext.pagespeed import plain_token_classes

    # n and p: the block's colour in both themes (hex case aside). w: no dark rule, so in dark it
    # takes <pre>'s colour, not the block's. k: coloured; nb: bold in light; nx: another colour in
    # dark; hll: a background.
    assert plain_token_classes(PYGMENTS_CSS) == {"n", "p"}
    # No .highlight rule to compare with, or one without a colour: nothing is plain.
    assert plain_token_classes(PYGMENTS_CSS.replace(".highlight {", ".highlight-x {")) == set()
    no_colour = PYGMENTS_CSS.replace("background: #2b2b2b; color: #F8F8F2", "background: #2b2b2b")
    assert plain_token_classes(no_colour) == set()


def test_coloured_token_classes_set_a_colour_in_every_theme():
    from bookext.pagespeed import coloured_token_classes

    # w has no dark rule, hll only a background, the pre rule is not a token class.
    assert coloured_token_classes(PYGMENTS_CSS) == {"k", "n", "p", "nb", "nx"}


def test_plain_token_classes_of_the_themes_own_code_styles():
    from pydata_sphinx_theme.pygments import get_pygments_stylesheet

    from bookext.pagespeed import plain_token_classes

    # The styles pydata-sphinx-theme's theme.conf names, which the book keeps.
    css = get_pygments_stylesheet("a11y-high-contrast-light", "a11y-high-contrast-dark")
    plain = plain_token_classes(css)
    assert {"n", "p", "w"} <= plain
    # Keywords, operators, strings, numbers, comments and builtins keep their colours.
    assert not plain & {"k", "kn", "o", "ow", "s", "s2", "si", "mi", "mf", "c1", "nb", "nf", "kc"}


def test_strip_plain_tokens_unwraps_only_plain_spans_inside_code_blocks():
    from bookext.pagespeed import strip_plain_tokens

    code = (
        '<div class="highlight"><pre><span></span><span class="k">def</span>'
        '<span class="w"> </span><span class="nf">f</span><span class="p">(</span>'
        '<span class="n">x</span><span class="p">):</span> <span class="n">a</span>'
        '<span class="o">&lt;</span><span class="hll"><span class="n">b</span></span></pre></div>'
    )
    signature = '<dt class="sig"><span class="n"><span class="pre">x</span></span></dt>'
    page = f'<html><body>{signature}{code}<p><span class="n">prose</span></p></body></html>'
    coloured = {"n", "p", "w", "k", "nf", "o"}
    out = strip_plain_tokens(page, {"n", "p", "w"}, coloured)
    assert (
        '<div class="highlight"><pre class="plain-tokens"><span></span><span class="k">def</span> '
        '<span class="nf">f</span>(x): a<span class="o">&lt;</span><span class="hll">b</span>'
    ) in out
    # Outside a code block nothing changes (autodoc signatures, prose).
    assert out.startswith(f"<html><body>{signature}")
    assert out.endswith('<p><span class="n">prose</span></p></body></html>')
    # The text is the same, a second pass changes nothing, and no plain class changes nothing.
    assert re.sub(r"<[^>]+>", "", out) == re.sub(r"<[^>]+>", "", page)
    assert strip_plain_tokens(out, {"n", "p", "w"}, coloured) == out
    assert strip_plain_tokens(page, set(), coloured) == page
    # By default only plain spans count as coloured: the k, nf and o text keeps the block as is.
    assert strip_plain_tokens(page, {"n", "p", "w"}) == page
    # A block with text in <pre>'s colour keeps its spans: outside every span, or in a span that
    # sets no colour (line numbers, an emphasised line's own text).
    bare = '<div class="highlight"><pre>x = <span class="n">y</span>\n</pre></div>'
    assert strip_plain_tokens(bare, {"n"}) == bare
    numbered = '<div class="highlight"><pre><span class="linenos">1</span><span class="n">y</span></pre></div>'
    assert strip_plain_tokens(numbered, {"n"}, {"n", "k"}) == numbered
    emphasised = (
        '<div class="highlight"><pre><span class="hll">x<span class="n">y</span></span></pre></div>'
    )
    assert strip_plain_tokens(emphasised, {"n"}, {"n"}) == emphasised
    spaced = '<div class="highlight"><pre><span class="n">y</span>\n  </pre></div>'
    assert (
        strip_plain_tokens(spaced, {"n"})
        == '<div class="highlight"><pre class="plain-tokens">y\n  </pre></div>'
    )


def test_early_theme_script_matches_the_theme_rules():
    from bookext.pagespeed import EARLY_THEME

    # The reader's saved mode, "auto" otherwise, resolved through prefers-color-scheme.
    for needle in ("localStorage.getItem('mode')", "m='auto'", "prefers-color-scheme: dark"):
        assert needle in EARLY_THEME


def test_trim_css_keeps_what_the_site_may_use_and_drops_the_rest():
    from bookext.pagespeed import trim_css

    css = (
        '@charset "UTF-8";.used{a:1}.unused{b:2}.used,.unused .used{c:3}'
        "img:not(.unused,.other){d:4}div{e:5}"
        "@media (min-width:1px){.unused{f:6}.used>.x{g:7}}"
        "@media print{.unused{h:8}}@font-face{font-family:X}"
        "html[data-theme=dark] .used:hover{i:9}"
    )
    out = trim_css(css, {"used", "x"})
    assert out == (
        '@charset "UTF-8";.used{a:1}.used{c:3}img:not(.unused,.other){d:4}div{e:5}'
        "@media (min-width:1px){.used>.x{g:7}}@font-face{font-family:X}"
        "html[data-theme=dark] .used:hover{i:9}"
    )
    assert trim_css(out, {"used", "x"}) == out


def test_equation_sections_become_literal_blocks_before_napoleon():
    """``|x|``, ``**params`` and indented continuation lines of an Equation: section stay literal."""
    from bookext.docstrings import literal_equation_sections

    lines = [
        "Summary.",
        "",
        "Equation:",
        "    bias = −m · |i − j|",
        "        (continued)",
        "",
        "Args:",
        "    x: a value.",
    ]
    out = literal_equation_sections(lines)
    assert out[:8] == [
        "Summary.",
        "",
        ".. rubric:: Equation",
        "",
        "::",
        "",
        "    bias = −m · |i − j|",
        "        (continued)",
    ]
    assert out[8:] == ["", "Args:", "    x: a value."]
    assert "Equation:" not in out
    assert literal_equation_sections(["No section."]) == ["No section."]


def test_with_margins_writes_each_width_once_and_replaces_or_drops_old_margins():
    from bookext.plotly_mime import with_margins

    page = figure_html(_figure(), "fig-a") + figure_html(_figure(), "fig-b")
    out = with_margins(page, {"fig-a": [[672, 79, 20, 60, 134], [774, 80, 20, 60, 134]]})
    assert (
        '<div class="bookplot-graph" id="fig-a" data-margins="672:79,20,60,134 774:80,20,60,134"'
        in out
    )
    assert '<div class="bookplot-graph" id="fig-b" role=' in out  # not measured: no attribute
    # A second build's measurement replaces the first; a figure no longer measured loses it.
    again = with_margins(out, {"fig-a": [[672, 70, 20, 60, 50], [672, 99, 9, 9, 9]]})
    assert 'id="fig-a" data-margins="672:70,20,60,50" role=' in again
    assert "data-margins" not in with_margins(out, {})
    # The JSON and everything else on the page are untouched.
    assert with_margins(out, {}) == page


def _margin_site(tmp_path, figure: dict, css: str = "body { font: 16px serif; }"):
    from bookext.plotly_mime import with_margins

    (tmp_path / "_static").mkdir(exist_ok=True)
    (tmp_path / "_static" / "reading.css").write_text(css)
    page = tmp_path / "ch.html"
    body = with_margins(figure_html(figure, "fig-a"), {"fig-a": [[672, 1, 2, 3, 4]]})
    page.write_text(f'<link rel="stylesheet" href="_static/reading.css?v=1">{body}')
    return page


def test_margin_cache_key_changes_with_the_figure_and_its_css_not_with_old_margins(tmp_path):
    from bookext.plotly_mime import margin_cache_key, with_margins

    page = _margin_site(tmp_path, _figure())
    key = margin_cache_key(tmp_path, page, page.read_text(), {})
    # The margins written last build are not part of what is measured.
    assert margin_cache_key(tmp_path, page, with_margins(page.read_text(), {}), {}) == key
    changed = _figure()
    changed["data"][0]["y"] = [9, 9, 9]
    assert changed != _figure()
    page = _margin_site(tmp_path, changed)
    assert margin_cache_key(tmp_path, page, page.read_text(), {}) != key
    page = _margin_site(tmp_path, _figure(), css="body { font: 18px serif; }")
    assert margin_cache_key(tmp_path, page, page.read_text(), {}) != key
    page = _margin_site(tmp_path, _figure())
    assert margin_cache_key(tmp_path, page, page.read_text(), {}) == key


def test_cached_margins_measures_only_pages_whose_key_changed(tmp_path, monkeypatch):
    import bookext.plotly_mime as pm

    measured: list[list[str]] = []

    def fake_measure(site, pages):
        measured.append([p.name for p in pages])
        return {p: {"fig-a": [[672, len(measured), 0, 0, 0]]} for p in pages}

    monkeypatch.setattr(pm, "measure_margins", fake_measure)
    page = _margin_site(tmp_path, _figure())
    cache = tmp_path / "doctrees" / "cache.json"
    first = pm.cached_margins(tmp_path, [page], cache)
    assert measured == [["ch.html"]] and first[page] == {"fig-a": [[672, 1, 0, 0, 0]]}
    assert pm.cached_margins(tmp_path, [page], cache) == first  # unchanged: not measured again
    assert measured == [["ch.html"]]
    changed = _figure()
    changed["data"][0]["y"] = [9, 9, 9]
    page = _margin_site(tmp_path, changed)
    assert pm.cached_margins(tmp_path, [page], cache)[page] == {"fig-a": [[672, 2, 0, 0, 0]]}
    assert measured == [["ch.html"], ["ch.html"]]


def _installed_theme_js() -> str:
    from pathlib import Path

    import pydata_sphinx_theme

    from bookext.pagespeed import THEME_JS

    theme = Path(pydata_sphinx_theme.__file__).parent / "theme" / "pydata_sphinx_theme" / "static"
    return (theme / THEME_JS).read_text(encoding="utf-8")


def test_the_theme_tab_stop_code_patched_is_in_the_installed_theme():
    from bookext.pagespeed import THEME_PATCHES, patch_theme_js

    js = _installed_theme_js()
    for theirs, ours in THEME_PATCHES.values():
        assert js.count(theirs) == 1 and ours not in js
    patched, missing = patch_theme_js(js)
    assert missing == []
    for theirs, ours in THEME_PATCHES.values():
        assert theirs not in patched and patched.count(ours) == 1
    assert patch_theme_js(patched) == (patched, [])  # a rebuild leaves it as it is
    grown = sum(len(ours) - len(theirs) for theirs, ours in THEME_PATCHES.values())
    assert len(patched) - len(js) == grown  # nothing else changed


def test_the_patched_tab_stop_pass_skips_unrendered_blocks_and_catches_up():
    from bookext.pagespeed import LAZY_TABSTOPS, QUIET_OBSERVER

    # Skips what is not rendered, only where the browser tells when it renders.
    assert (
        "if(a!==!0&&window.ContentVisibilityAutoStateChangeEvent&&"
        "!e.checkVisibility({contentVisibilityAuto:!0}))return;" in LAZY_TABSTOPS
    )
    # Measures again (debounced) when something may have rendered; all at the first Tab.
    assert 'document.addEventListener("contentvisibilityautostatechange",' in LAZY_TABSTOPS
    assert 'window.addEventListener("scroll",t,{passive:!0})' in LAZY_TABSTOPS
    assert '"Tab"===v.key&&(document.removeEventListener("keydown",k,!0),e(!0))' in LAZY_TABSTOPS
    assert "m.target.isConnected&&" in QUIET_OBSERVER


def test_a_changed_theme_is_left_unpatched_and_named():
    from bookext.pagespeed import (
        LAZY_TABSTOPS,
        QUIET_OBSERVER,
        THEME_OBSERVER,
        THEME_TABSTOPS,
        patch_theme_js,
    )

    js = _installed_theme_js()
    changed = js.replace(THEME_TABSTOPS, THEME_TABSTOPS.replace("300", "250"))
    patched, missing = patch_theme_js(changed)
    assert missing == ["THEME_TABSTOPS"] and LAZY_TABSTOPS not in patched
    assert patched == changed.replace(THEME_OBSERVER, QUIET_OBSERVER)  # the other still applies
    twice = js.replace(THEME_OBSERVER, THEME_OBSERVER + "," + THEME_OBSERVER)
    assert patch_theme_js(twice)[1] == ["THEME_OBSERVER"]  # not exactly once: not guessed


def test_the_build_warns_when_the_theme_code_is_gone(tmp_path, monkeypatch):
    from types import SimpleNamespace

    from bookext import pagespeed

    static = tmp_path / "_static" / pagespeed.THEME_JS
    static.parent.mkdir(parents=True)
    static.write_text("function I(){}", encoding="utf-8")
    warnings = []
    monkeypatch.setattr(pagespeed.LOGGER, "warning", lambda *a, **k: warnings.append(a))
    app = SimpleNamespace(builder=SimpleNamespace(format="html"), outdir=str(tmp_path))
    pagespeed._on_build_finished(app, None)
    assert len(warnings) == 1 and "THEME_TABSTOPS and THEME_OBSERVER" in warnings[0]
    assert static.read_text(encoding="utf-8") == "function I(){}"
    static.write_text(_installed_theme_js(), encoding="utf-8")
    pagespeed._on_build_finished(app, None)
    assert len(warnings) == 1
    assert patch_is_applied(static.read_text(encoding="utf-8"))


def patch_is_applied(js: str) -> bool:
    from bookext.pagespeed import THEME_PATCHES

    return all(js.count(ours) == 1 for _, ours in THEME_PATCHES.values())


def test_an_edited_asset_makes_every_page_out_of_date(tmp_path, monkeypatch):
    """bookplot.js and the other assets reach the site on the next build, even with no page edited.

    Sphinx copies static files only when it writes a page; the assets' digest is an "html" config
    value, and a changed "html" value makes the HTML builder write every page.
    """
    import shutil

    from bookext import plotly_mime

    assets = tmp_path / "assets"
    shutil.copytree(plotly_mime.ASSETS, assets)
    monkeypatch.setattr(plotly_mime, "ASSETS", assets)
    before = plotly_mime.assets_digest()
    assert plotly_mime.assets_digest() == before
    (assets / "bookplot.js").write_text((assets / "bookplot.js").read_text() + "\n// edited\n")
    assert plotly_mime.assets_digest() != before

    calls = {}

    class App:
        def setup_extension(self, name):
            pass

        def add_config_value(self, name, default, rebuild):
            calls[name] = rebuild

        def connect(self, event, handler, priority=500):
            calls.setdefault("events", []).append((event, handler))

    plotly_mime.setup(App())
    assert calls["bookext_assets_digest"] == "html"
    handler = dict(calls["events"])["config-inited"]
    config = type("Config", (), {})()
    handler(None, config)
    assert config.bookext_assets_digest == plotly_mime.assets_digest()


# --------------------------------------------------------------------------- section sizes


def test_section_sizes_are_written_once_per_section_and_replaced_not_repeated():
    from bookext.section_sizes import cache_key, with_sizes

    page = '<section id="a"><h2>A</h2><section id="a-b"><p>x</p></section></section>'
    sizes = {"a": [[390, 900], [1280, 400], [390, 900]], "a-b": [[1280, 120]]}
    once = with_sizes(page, sizes)
    assert once == (
        '<section id="a" data-sizes="390:900 1280:400"><h2>A</h2>'
        '<section id="a-b" data-sizes="1280:120"><p>x</p></section></section>'
    )
    # A second build replaces the sizes; a section no longer measured loses them.
    again = with_sizes(once, {"a": [[1280, 410]]})
    assert again == (
        '<section id="a" data-sizes="1280:410"><h2>A</h2><section id="a-b"><p>x</p></section>'
        "</section>"
    )
    # The cache key ignores the sizes already written, and sees any other change.
    assert cache_key(once, "css") == cache_key(page, "css") == cache_key(again, "css")
    assert cache_key(page.replace("x", "y"), "css") != cache_key(page, "css")
    assert cache_key(page, "other css") != cache_key(page, "css")


def test_every_page_loads_the_page_script():
    from bookext.plotly_mime import ASSETS
    from bookext.theme_options import PAGE_SCRIPT

    script = (ASSETS / PAGE_SCRIPT).read_text()
    # Both fixes are in it: the toggles handed to the first (bound) button, and the sizes.
    assert 'forward(".primary-toggle")' in script and 'forward(".secondary-toggle")' in script
    assert "containIntrinsicSize" in script and "data-sizes" in script


def test_only_solution_cells_get_the_solution_label():
    from bookext.keyboard import fix_body

    def cell(tags: str) -> str:
        return (
            f'<div class="cell {tags} docutils container">\n<details class="admonition hide '
            'above-input">\n<summary>\n<p class="collapsed admonition-title">Show code cell '
            'content</p>\n<p class="expanded admonition-title">Hide code cell content</p>\n'
            "</summary>"
        )

    solution, other = cell("tag_solution tag_hide-cell"), cell("tag_hide-cell")
    out = fix_body(solution + other)
    assert out.count("Show the solution") == 1 and out.count("Hide the solution") == 1
    assert out.endswith(other)
