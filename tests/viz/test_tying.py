"""Tests for lib.viz.tying: the tied/untied bars, the gradient split and the loss curves.

Expected values are worked out by hand here (V·d, bytes per element, block means), never by calling
the function under test.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from lib.viz.core import OKABE_ITO
from lib.viz.tying import FADED, gradient_split_bars, loss_curves, tying_bars

ROWS = [
    {"model": "big", "vocab_size": 1000, "hidden_size": 30, "tie_word_embeddings": False},
    {"model": "small", "vocab_size": 100, "hidden_size": 20, "tie_word_embeddings": True},
    {"model": "encoder", "vocab_size": 50, "hidden_size": 10, "tie_word_embeddings": None},
]


def _step_visible(fig, step: int) -> list[bool]:
    return list(fig.layout.sliders[0].steps[step].args[0]["visible"])


# --- tying_bars ----------------------------------------------------------------------------------


def test_tying_bars_pinned_values_sorted_by_size():
    fig = tying_bars(ROWS, units=("parameters", "float32"), caption="cap", alt="alt")
    assert len(fig.data) == 2 * 3
    tied, embed, head = fig.data[:3]
    # sorted by V·d: encoder 500, small 2,000, big 30,000 parameters, drawn in millions
    assert list(tied.x) == ["encoder", "small", "big"]
    assert list(tied.y) == [0.0005, 0.002, 0.03]
    assert list(embed.y) == list(tied.y)
    assert list(head.base) == list(tied.y) and list(head.y) == list(tied.y)  # stacked on top
    # float32 step: V·d·4 bytes in GB
    tied_b = fig.data[3]
    assert list(tied_b.y) == [2e-06, 8e-06, 0.00012]
    assert fig.layout.meta == {"caption": "cap", "alt": "alt"}


def test_tying_bars_marks_and_fades_by_published_choice():
    fig = tying_bars(ROWS)
    tied, embed, head = fig.data[:3]
    # order encoder (None), small (tied), big (untied)
    assert list(tied.text) == ["", "★", ""]
    assert list(head.text) == ["", "", "★"]
    assert list(tied.marker.opacity) == [1.0, 1.0, FADED]
    assert list(embed.marker.opacity) == [1.0, FADED, 1.0]
    assert list(head.marker.opacity) == list(embed.marker.opacity)


def test_tying_bars_slider_switches_traces_and_axis():
    fig = tying_bars(ROWS, units=("parameters", "bfloat16", "int4"), active=1)
    assert [t.visible for t in fig.data] == [False] * 3 + [True] * 3 + [False] * 3
    assert fig.layout.sliders[0].active == 1
    for k in range(3):
        assert _step_visible(fig, k) == [j == k for j in range(3) for _ in range(3)]
    layout_args = fig.layout.sliders[0].steps[2].args[1]
    assert layout_args["yaxis.title.text"] == "GB in int4 (10⁹ bytes)"
    # int4: 30,000 · 0.5 B = 15,000 B = 1.5e-05 GB per matrix; range covers the stacked 2× bar
    assert layout_args["yaxis.range"] == pytest.approx([0.0, 2 * 1.5e-05 * 1.15])
    assert fig.layout.yaxis.title.text == "GB in bfloat16 (10⁹ bytes)"
    assert json.loads(fig.to_json())  # serialisable for the static page


def test_tying_bars_hover_names_source_and_exact_counts():
    rows = [dict(ROWS[1], source="org/small")]
    fig = tying_bars(rows)
    assert fig.data[0].customdata[0][0] == "100 × 20 = 2,000 parameters"
    assert fig.data[0].customdata[0][1] == "org/small"


@given(
    v=st.integers(1, 300_000), d=st.integers(1, 10_000), tie=st.sampled_from([True, False, None])
)
def test_tying_bars_untied_is_twice_tied(v, d, tie):
    rows = [{"model": "m", "vocab_size": v, "hidden_size": d, "tie_word_embeddings": tie}]
    fig = tying_bars(rows, units=("parameters", "float32"))
    for step in (0, 1):
        tied, _embed, head = fig.data[3 * step : 3 * step + 3]
        assert head.base[0] + head.y[0] == pytest.approx(2 * tied.y[0])
    assert fig.data[0].y[0] == pytest.approx(v * d / 1e6, rel=1e-3)
    assert fig.data[3].y[0] == pytest.approx(v * d * 4 / 1e9, rel=1e-3)


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"rows": []}, ValueError, "rows"),
        ({"rows": "GPT-2"}, ValueError, "rows"),
        ({"rows": [{"model": "x"}]}, ValueError, "rows"),
        ({"rows": [dict(ROWS[0], vocab_size=0)]}, ValueError, "vocab_size"),
        ({"rows": [dict(ROWS[0], hidden_size=2.5)]}, TypeError, "hidden_size"),
        ({"rows": [dict(ROWS[0], tie_word_embeddings="yes")]}, ValueError, "tie_word_embeddings"),
        ({"rows": ROWS, "units": ()}, ValueError, "units"),
        ({"rows": ROWS, "units": ("float64",)}, ValueError, "units"),
        ({"rows": ROWS, "active": 3}, ValueError, "active"),
        ({"rows": ROWS, "active": -1}, ValueError, "active"),
    ],
)
def test_tying_bars_errors(kwargs, error, match):
    with pytest.raises(error, match=match):
        tying_bars(**kwargs)


# --- gradient_split_bars ---------------------------------------------------------------------------


def test_gradient_split_bars_row_norms_by_hand():
    lookup = torch.tensor([[3.0, 4.0], [0.0, 0.0], [1.0, 0.0]])  # norms 5, 0, 1
    head = torch.tensor([[0.0, 1.0], [6.0, 8.0], [-1.0, 0.0]])  # norms 1, 10, 1
    fig = gradient_split_bars(lookup, head, ["a", "</s>", "c"], caption="cap")
    assert [t.name for t in fig.data] == [
        "through the lookup",
        "through the head",
        "tied gradient (the sum)",
    ]
    assert list(fig.data[0].y) == [5.0, 0.0, 1.0]
    assert list(fig.data[1].y) == [1.0, 10.0, 1.0]
    # sum rows: (3, 5) -> √34, (6, 8) -> 10, (0, 0) -> 0 (the two parts cancel)
    assert list(fig.data[2].y) == [5.831, 10.0, 0.0]
    assert list(fig.data[0].x) == ["a", "&lt;/s&gt;", "c"]  # escaped so plotly shows "</s>"
    assert [t.marker.color for t in fig.data] == list(OKABE_ITO[:3])
    assert fig.layout.height == 440  # the site keeps the author's height
    assert fig.layout.meta["caption"] == "cap"


def test_gradient_split_bars_errors():
    g = torch.zeros(3, 2)
    with pytest.raises(TypeError, match="lookup_grad"):
        gradient_split_bars(torch.zeros(3, 2, dtype=torch.long), g, "abc")
    with pytest.raises(TypeError, match="head_grad"):
        gradient_split_bars(g, [[0.0]], ["a", "b", "c"])
    with pytest.raises(ValueError, match="same shape"):
        gradient_split_bars(g, torch.zeros(3, 3), ["a", "b", "c"])
    with pytest.raises(ValueError, match="same shape"):
        gradient_split_bars(torch.zeros(3), torch.zeros(3), ["a", "b", "c"])
    with pytest.raises(ValueError, match="tokens"):
        gradient_split_bars(g, g, ["a", "b"])
    with pytest.raises(ValueError, match="tokens"):
        gradient_split_bars(g, g, "abc")


# --- loss_curves -----------------------------------------------------------------------------------


def test_loss_curves_block_means_by_hand():
    fig = loss_curves(
        {"tied": [4.0, 2.0, 3.0, 1.0, 9.0], "untied": [1.0, 1.0, 1.0, 1.0]},
        block=2,
        reference=1.23456,
        reference_label="limit",
        caption="cap",
    )
    tied, untied = fig.data
    assert list(tied.x) == [2, 4] and list(tied.y) == [3.0, 2.0]  # the 5th step is dropped
    assert list(untied.y) == [1.0, 1.0]
    assert tied.line.color == OKABE_ITO[0] and untied.line.color == OKABE_ITO[1]
    (line,) = fig.layout.shapes
    assert line.y0 == line.y1 == 1.23  # 3 significant digits
    assert fig.layout.annotations[0].text == "limit"
    assert fig.layout.height == 440


@given(losses=st.lists(st.floats(0.1, 10.0), min_size=1, max_size=60), block=st.integers(1, 10))
def test_loss_curves_points_are_block_means(losses, block):
    if len(losses) < block:
        with pytest.raises(ValueError, match="block"):
            loss_curves({"run": losses}, block=block)
        return
    fig = loss_curves({"run": losses}, block=block)
    n = len(losses) // block
    assert len(fig.data[0].y) == n
    for j in range(n):
        mean = sum(losses[j * block : (j + 1) * block]) / block
        assert fig.data[0].y[j] == pytest.approx(mean, rel=6e-3)
        assert fig.data[0].x[j] == (j + 1) * block


def test_loss_curves_errors():
    with pytest.raises(ValueError, match="histories"):
        loss_curves({})
    with pytest.raises(ValueError, match="block"):
        loss_curves({"a": [1.0, 2.0]}, block=0)
    with pytest.raises(ValueError, match="digits"):
        loss_curves({"a": [1.0, 2.0]}, digits=0)
    with pytest.raises(ValueError, match="at least block"):
        loss_curves({"a": np.ones(3)}, block=4)


def test_vocabulary_share_slider_bars_add_up_to_100() -> None:
    from lib.viz.tying import vocabulary_share_slider

    rows = [
        {"model": "a", "body": 300, "vocab_params": 100, "total_tied": 400, "total_untied": 500,
         "tie_word_embeddings": True},
        {"model": "b", "body": 900, "vocab_params": 100, "total_tied": 1000, "total_untied": 1100,
         "tie_word_embeddings": False},
    ]  # fmt: skip
    fig = vocabulary_share_slider(rows, caption="c", alt="a")
    assert len(fig.data) == 2 * 3 and len(fig.layout.sliders[0].steps) == 2
    body, embed, head = fig.data[:3]  # model "a": bars [untied, tied]
    assert list(body.x) == [60.0, 75.0] and list(embed.x) == [20.0, 25.0]
    assert list(head.x) == [20.0, 0.0]
    assert body.y[1] == "tied ★" and fig.data[3].y[0] == "untied ★"
    with pytest.raises(ValueError, match="active"):
        vocabulary_share_slider(rows, active=2)
    with pytest.raises(ValueError, match="rows"):
        vocabulary_share_slider([])


def test_block_means_averages_full_blocks_and_ends_each_at_its_last_step() -> None:
    # lib.vocab.block_means, which loss_curves and lib.viz.lab.loss_figure draw (tested here
    # beside its two figures; it belongs in tests/test_vocab.py).
    from lib.vocab import block_means

    steps, means = block_means([1.0, 3.0, 2.0, 6.0, 100.0], 2)  # the trailing 100 is left out
    assert steps.tolist() == [2, 4] and means.tolist() == [2.0, 4.0]
    fig = loss_curves({"run": [1.0, 3.0, 2.0, 6.0, 100.0]}, block=2)
    assert list(fig.data[0].x) == [2, 4] and list(fig.data[0].y) == [2.0, 4.0]
    with pytest.raises(ValueError, match="at least block = 3"):
        block_means([1.0, 2.0], 3)
    with pytest.raises(ValueError, match="block must be >= 1"):
        block_means([1.0], 0)


@given(st.lists(st.floats(-1e3, 1e3), min_size=1, max_size=40), st.integers(1, 8))
def test_block_means_of_a_constant_is_the_constant(values: list[float], block: int) -> None:
    from lib.vocab import block_means

    n = len(values)
    if block > n:
        block = n
    steps, means = block_means([values[0]] * n, block)
    assert len(steps) == n // block and np.allclose(means, values[0], rtol=1e-12, atol=1e-12)
    assert steps[-1] <= n and (np.diff(steps) == block).all()
