"""Tests for lib.viz.contextual: layer labels, token cosines, the layer-similarity and heatmap figures."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from lib.viz.contextual import (
    layer_labels,
    layer_similarity_figure,
    token_cosines,
    token_similarity_slider,
)

# --- layer_labels and token_cosines ----------------------------------------------------------------


def test_layer_labels_pinned():
    assert layer_labels(0) == ["0 (embeddings)"]
    assert layer_labels(3) == ["0 (embeddings)", "1", "2", "3"]
    with pytest.raises(ValueError, match="n_layers"):
        layer_labels(-1)
    with pytest.raises(TypeError, match="n_layers"):
        layer_labels(2.0)


def test_labels_and_cosines_match_a_transformers_bert():
    """One label per entry of BertModel's hidden_states; cosines equal torch's, pair by pair."""
    import transformers

    config = transformers.BertConfig(
        vocab_size=50, hidden_size=16, num_hidden_layers=3, num_attention_heads=2,
        intermediate_size=32, max_position_embeddings=32,
    )  # fmt: skip
    torch.manual_seed(0)
    model = transformers.BertModel(config).eval()
    ids = torch.tensor([[1, 7, 9, 7, 2]])
    with torch.no_grad():
        hidden = model(input_ids=ids, output_hidden_states=True).hidden_states
    assert len(layer_labels(config.num_hidden_layers)) == len(hidden)
    states = torch.stack([h[0] for h in hidden])  # [L + 1, T, d]
    cos = token_cosines(states)
    for layer, h in enumerate(hidden):
        expected = torch.nn.functional.cosine_similarity(h[0][:, None], h[0][None, :], dim=-1)
        torch.testing.assert_close(cos[layer], expected.double(), atol=1e-6, rtol=0)
    # at layer 0 the two copies of token 7 differ only by position: close, not identical
    assert 0.0 < cos[0, 1, 3] < 1.0 - 1e-6


def test_token_cosines_pinned():
    states = torch.tensor([[[1.0, 0.0], [0.0, 2.0], [1.0, 1.0]]])  # [1, 3, 2]
    r = 1 / math.sqrt(2)
    expected = torch.tensor([[[1, 0, r], [0, 1, r], [r, r, 1]]], dtype=torch.float64)
    torch.testing.assert_close(token_cosines(states), expected)


@given(layers=st.integers(1, 4), n_tokens=st.integers(1, 7), seed=st.integers(0, 10_000))
def test_token_cosines_properties(layers, n_tokens, seed):
    g = torch.Generator().manual_seed(seed)
    states = torch.randn(layers, n_tokens, 5, generator=g)
    cos = token_cosines(states)
    assert cos.shape == (layers, n_tokens, n_tokens) and cos.dtype == torch.float64
    torch.testing.assert_close(cos, cos.transpose(1, 2))
    torch.testing.assert_close(
        cos.diagonal(dim1=1, dim2=2), torch.ones(layers, n_tokens, dtype=torch.float64)
    )
    scale = torch.rand(layers, n_tokens, 1, generator=g) + 0.1  # positive rescaling of each token
    torch.testing.assert_close(token_cosines(states * scale), cos)


def test_token_cosines_errors():
    with pytest.raises(ValueError, match="states"):
        token_cosines(torch.ones(3, 4))
    with pytest.raises(TypeError, match="states"):
        token_cosines(torch.ones(2, 3, 4, dtype=torch.long))


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
    assert list(fig.layout.xaxis.ticktext) == ["0 (embeddings)", "1", "2"]
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
