"""Tests for lib.viz.contextual: layer labels, token cosines, the layer-similarity and heatmap figures."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from lib.viz.contextual import (
    layer_labels,
    layer_similarity_figure,
    token_similarity_slider,
)

# --- layer_labels ----------------------------------------------------------------------------


def test_layer_labels_pinned():
    assert layer_labels(0) == ["0 (embeddings)"]
    assert layer_labels(3) == ["0 (embeddings)", "1", "2", "3"]
    with pytest.raises(ValueError, match="n_layers"):
        layer_labels(-1)
    with pytest.raises(TypeError, match="n_layers"):
        layer_labels(2.0)


# --- layer_similarity_figure -----------------------------------------------------------------------

SAME = torch.tensor([[1.0, 0.9, 0.8], [1.0, 0.7, 0.6]])  # [2 pairs, 3 layers]
DIFFERENT = torch.tensor([[1.0, 0.5, 0.4], [1.0, 0.3, 0.2], [1.0, 0.4, 0.9]])


def test_layer_similarity_lines_and_bands():
    fig = layer_similarity_figure(
        {"same": SAME, "different": DIFFERENT},
        references={"static": torch.ones(3)},
        caption="cap",
        alt="alt",
    )
    assert len(fig.data) == 2 * 2 + 1  # band + line per group, one reference
    band, line = fig.data[0], fig.data[1]
    assert list(line.x) == [0, 1, 2]
    assert np.allclose(line.y, [1.0, 0.8, 0.7])  # means over the 2 pairs, by hand
    assert np.allclose(band.y, [1.0, 0.9, 0.8, 0.6, 0.7, 1.0])  # max forwards, min backwards
    assert list(band.x) == [0, 1, 2, 2, 1, 0] and band.fill == "toself"
    assert np.allclose(fig.data[3].y, [1.0, 0.4, 0.5])  # (0.5 + 0.3 + 0.4)/3, (0.4 + 0.2 + 0.9)/3
    assert fig.data[4].line.dash == "dash" and np.allclose(fig.data[4].y, 1.0)
    assert line.name == "same (2 pairs)" and fig.data[3].name == "different (3 pairs)"
    assert list(fig.layout.xaxis.ticktext) == ["0", "1", "2"]
    assert fig.layout.xaxis.title.text == "layer (0 = embeddings)"
    assert line.marker.color == line.line.color  # markers match the legend and the line
    # the band is translucent through its fill colour (the PNG renderer ignores trace opacity
    # for fills), in the line's colour
    assert band.opacity is None and band.fillcolor.startswith("rgba(")
    r, g, b, a = (float(v) for v in band.fillcolor[5:-1].split(","))
    assert a == 0.2 and f"#{int(r):02x}{int(g):02x}{int(b):02x}" == line.line.color.lower()
    assert fig.layout.meta == {"caption": "cap", "alt": "alt"}


def test_layer_similarity_errors():
    with pytest.raises(TypeError, match="groups"):
        layer_similarity_figure({})
    with pytest.raises(ValueError, match="groups"):
        layer_similarity_figure({"a": torch.ones(3)})
    with pytest.raises(ValueError, match="groups"):
        layer_similarity_figure({"a": SAME, "b": torch.ones(2, 4)})
    with pytest.raises(ValueError, match="references"):
        layer_similarity_figure({"a": SAME}, references={"r": torch.ones(4)})
    with pytest.raises(TypeError, match="references"):
        layer_similarity_figure({"a": SAME}, references=[1.0, 1.0, 1.0])
    with pytest.raises(ValueError, match="at most"):
        layer_similarity_figure({str(k): SAME for k in range(9)})


# --- token_similarity_slider -----------------------------------------------------------------------

TOKENS = ["[CLS]", "bank", "of", "the", "bank", "[SEP]"]


def _states() -> torch.Tensor:
    return torch.randn(3, len(TOKENS), 4, generator=torch.Generator().manual_seed(1))


def test_token_slider_steps_data_and_ticks():
    states = _states()
    fig = token_similarity_slider(states, TOKENS, highlight=[1, 4], active=1, caption="c")
    assert len(fig.data) == 3
    assert [t.visible for t in fig.data] == [False, True, False]
    steps = fig.layout.sliders[0].steps
    assert [s.label for s in steps] == ["0 (embeddings)", "1", "2"]
    assert steps[2].args[0]["visible"] == [False, False, True]
    for layer, trace in enumerate(fig.data):
        unit = states[layer] / states[layer].norm(dim=-1, keepdim=True)
        assert np.allclose(np.array(trace.z), (unit @ unit.T).numpy(), atol=1e-3)
        assert trace.zmin == -1.0 and trace.zmax == 1.0
    ticks = list(fig.layout.xaxis.ticktext)
    assert ticks == ["[CLS]", "<b>bank</b>", "of", "the", "<b>bank</b>", "[SEP]"]
    assert list(fig.layout.xaxis.tickvals) == list(range(6))  # repeated tokens keep their columns
    assert fig.data[0].customdata[1][4] == "bank (1) · bank (4)"


def test_token_slider_errors():
    states = _states()
    with pytest.raises(ValueError, match="tokens"):
        token_similarity_slider(states, TOKENS[:-1])
    with pytest.raises(TypeError, match="tokens"):
        token_similarity_slider(states, "abcdef")
    with pytest.raises(ValueError, match="highlight"):
        token_similarity_slider(states, TOKENS, highlight=[6])
    with pytest.raises(ValueError, match="active"):
        token_similarity_slider(states, TOKENS, active=3)
    with pytest.raises(ValueError, match="states"):
        token_similarity_slider(states[0], TOKENS)
