"""bookext.keyboard and the figure markup's accessibility (no browser needed)."""

from __future__ import annotations

from pathlib import Path

from bookext.keyboard import SCRIPT, STYLESHEET, TEMPLATES, fix_body
from bookext.plotly_mime import ASSETS, figure_html


def test_figure_div_is_a_figure_named_by_its_alt_text_and_described_by_its_caption():
    html = figure_html({"layout": {"meta": {"caption": "Cap", "alt": "Alt text"}}}, "f1")
    assert 'role="img"' not in html  # img's children are presentational: no controls allowed
    assert 'id="f1" role="figure" aria-label="Alt text" aria-describedby="f1-caption"' in html
    assert '<figcaption class="bookplot-caption" id="f1-caption">Cap</figcaption>' in html
    bare = figure_html({"layout": {}}, "f2")
    assert 'role="figure" aria-label="Interactive figure"' in bare
    assert "aria-describedby" not in bare


def test_fix_body_removes_only_the_two_faults():
    body = (
        '<details class="hide"><summary aria-label="Toggle hidden content">'
        "<span>Show code cell source</span></summary></details>"
        '<div role="list" class="citation-list"><div class="citation" role="doc-biblioentry">'
        '<button aria-label="Keep me">x</button>'
    )
    fixed = fix_body(body)
    assert "Toggle hidden content" not in fixed and "<summary><span>Show code" in fixed
    assert '<div class="citation-list">' in fixed and 'role="doc-biblioentry"' in fixed
    assert 'aria-label="Keep me"' in fixed
    assert fix_body(fixed) == fixed


def test_assets_and_template_exist():
    assert (ASSETS / SCRIPT).is_file() and (ASSETS / STYLESHEET).is_file()
    template = (Path(TEMPLATES) / "search-button-field.html").read_text()
    assert "search-button-field" in template and 'aria-label="' not in template
    script = (ASSETS / SCRIPT).read_text()
    for needed in ('"slider"', "aria-valuenow", "aria-valuetext", "Home", "End", "PageUp"):
        assert needed in script
    for method in ("Plotly.animate", "Plotly.restyle", "Plotly.relayout", "Plotly.update"):
        assert method in script
