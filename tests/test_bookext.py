"""bookext: the plotly mime renderer's HTML and the site's offline math."""

from __future__ import annotations

import json
from types import SimpleNamespace

from docutils import nodes

from bookext.offline_math import MATHJAX_COMPONENT, _mathjax_source
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
    assert (_mathjax_source() / MATHJAX_COMPONENT).is_file()
