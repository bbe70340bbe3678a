"""Tests for lib.viz.embeddings: the lookup, table-memory and gradient-rows slider figures."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from lib.embeddings import REAL_EMBEDDING_CONFIGS
from lib.viz.embeddings import gradient_rows_slider, lookup_slider, table_memory_slider


def _visible(fig) -> list[bool]:
    return [t.visible is not False for t in fig.data]


def _slider_visibility(fig, step: int) -> list[bool]:
    return fig.layout.sliders[0].steps[step].args[0]["visible"]


# --- lookup_slider ---------------------------------------------------------------------------------

TABLE = torch.tensor([[1.0, -2.0], [0.5, 0.25], [-3.0, 4.0]])  # [V=3, d=2]
IDS = torch.tensor([2, 0, 2])


def test_lookup_slider_pinned_panels():
    fig = lookup_slider(IDS, TABLE, tokens=["x", "y", "x"], caption="cap", alt="alt text")
    onehot, table, out = fig.data[:3]
    # one-hot rows written out by hand: a single 1 in column ids[t]
    assert np.array_equal(np.array(onehot.z), [[0, 0, 1], [1, 0, 0], [0, 0, 1]])
    assert np.array_equal(np.array(table.z), TABLE.numpy())
    assert np.array_equal(np.array(out.z), [[-3.0, 4.0], [1.0, -2.0], [-3.0, 4.0]])
    assert table.zmin == -4.0 and table.zmax == 4.0  # symmetric about 0 from max |E| = 4
    assert fig.layout.meta == {"caption": "cap", "alt": "alt text"}


def test_lookup_slider_outlines_follow_the_slider():
    fig = lookup_slider(IDS, TABLE, active=1)
    assert len(fig.data) == 3 + 3 * 3
    assert _visible(fig) == [True] * 3 + [False] * 3 + [True] * 3 + [False] * 3
    steps = fig.layout.sliders[0].steps
    assert len(steps) == 3 and fig.layout.sliders[0].active == 1
    for t, i in enumerate(IDS.tolist()):
        visible = _slider_visibility(fig, t)
        assert visible[:3] == [True] * 3
        shown = [k for k, v in enumerate(visible) if v][3:]
        assert shown == [3 + 3 * t, 4 + 3 * t, 5 + 3 * t]
        onehot_box, table_box, out_box = (fig.data[k] for k in shown)
        assert list(onehot_box.y) == [t - 0.5, t - 0.5, t + 0.5, t + 0.5, t - 0.5]
        assert list(table_box.y) == [i - 0.5, i - 0.5, i + 0.5, i + 0.5, i - 0.5]  # row ids[t]
        assert list(out_box.y) == list(onehot_box.y)
        assert list(onehot_box.x) == [-0.5, 2.5, 2.5, -0.5, -0.5]  # spans all V = 3 columns
        assert steps[t].label == f"{t}: {i} → row {i}"


def test_lookup_slider_rounds_and_serialises():
    table = torch.tensor([[0.123456789, -1.0], [2.0, 3.0]])
    fig = lookup_slider(torch.tensor([0]), table)
    assert fig.data[1].z[0][0] == 0.1235  # 4 significant digits
    json.loads(fig.to_json())  # plain JSON: works in a static page


@settings(max_examples=10)  # each example builds a plotly figure (~0.1 s)
@given(
    vocab=st.integers(1, 9),
    d=st.integers(1, 5),
    ids=st.lists(st.integers(0, 100), min_size=1, max_size=6),
    seed=st.integers(0, 2**16),
)
def test_lookup_slider_output_is_the_indexed_table(vocab, d, ids, seed):
    ids = torch.tensor([i % vocab for i in ids])
    table = torch.randn(vocab, d, generator=torch.Generator().manual_seed(seed))
    fig = lookup_slider(ids, table)
    e, out = np.array(fig.data[1].z), np.array(fig.data[2].z)
    assert np.array_equal(out, e[ids.numpy()])  # output row t is table row ids[t]
    assert np.array_equal(np.array(fig.data[0].z).argmax(axis=1), ids.numpy())


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"ids": IDS.float()}, TypeError, "ids"),
        ({"ids": IDS.reshape(1, 3)}, ValueError, "ids must be 1-D"),
        ({"ids": torch.tensor([], dtype=torch.long)}, ValueError, "ids must be 1-D"),
        ({"ids": torch.tensor([3])}, ValueError, "ids must lie in"),
        ({"ids": torch.tensor([-1])}, ValueError, "ids must lie in"),
        ({"table": TABLE[0]}, ValueError, "table must be 2-D"),
        ({"table": TABLE.long()}, TypeError, "table"),
        ({"tokens": ["a", "b"]}, ValueError, "tokens must hold 3"),
        ({"tokens": "abc"}, TypeError, "tokens"),
        ({"vocab": ["a"]}, ValueError, "vocab must hold 3"),
        ({"active": 3}, ValueError, "active"),
        ({"active": -1}, ValueError, "active"),
        ({"active": 1.0}, TypeError, "active"),
    ],
)
def test_lookup_slider_errors(kwargs, error, match):
    args = {"ids": IDS, "table": TABLE} | kwargs
    with pytest.raises(error, match=match):
        lookup_slider(args.pop("ids"), args.pop("table"), **args)


# --- table_memory_slider -----------------------------------------------------------------------

SMALL_CONFIGS = {
    "big": {"vocab_size": 50_000, "hidden_size": 1_000},  # 5e7 entries
    "small": {"vocab_size": 1_000, "hidden_size": 1_000},  # 1e6 entries
}


def test_table_memory_slider_pinned_bars():
    fig = table_memory_slider(SMALL_CONFIGS, ["float32", "bfloat16", "int4"])
    assert len(fig.data) == 3
    fp32, bf16, int4 = fig.data
    assert list(fp32.x) == ["small", "big"]  # sorted by size
    assert list(fp32.y) == [0.004, 0.2]  # 1e6·4 B and 5e7·4 B, in GB
    assert list(bf16.y) == [0.002, 0.1]
    assert list(int4.y) == [0.0005, 0.025]
    assert list(fp32.text) == ["4 MB", "0.20 GB"]
    assert list(bf16.text) == ["2 MB", "0.10 GB"]
    assert fp32.customdata[1][0] == "50,000 × 1,000 × 4 B"
    assert fig.layout.yaxis.range == (0, pytest.approx(0.2 * 1.15))  # fixed across steps
    assert [s.label for s in fig.layout.sliders[0].steps] == [
        "float32 (4 B)",
        "bfloat16 (2 B)",
        "int4 (0.5 B)",
    ]


def test_table_memory_slider_llama3_correction():
    fig = table_memory_slider(REAL_EMBEDDING_CONFIGS, ["bfloat16"])
    bars = fig.data[0]
    k = list(bars.x).index("Llama-3-8B")
    # 128,256 × 4,096 × 2 B = 1,050,673,152 B = 1.05 GB = 0.98 GiB (not "≈ 1 GB" of unknown kind)
    assert bars.y[k] == 1.051
    assert bars.text[k] == "1.05 GB"
    assert bars.customdata[k][0] == "128,256 × 4,096 × 2 B"
    assert bars.customdata[k][1] == "1.05 GB (0.98 GiB)"


def test_table_memory_slider_steps_show_one_dtype():
    fig = table_memory_slider(SMALL_CONFIGS, active=2)
    assert _visible(fig) == [False, False, True, False]
    for k in range(4):
        assert _slider_visibility(fig, k) == [j == k for j in range(4)]
    json.loads(fig.to_json())


@settings(max_examples=10)  # each example builds a plotly figure (~0.1 s)
@given(
    vocab=st.integers(1, 300_000),
    d=st.integers(1, 10_000),
    dtype=st.sampled_from(["float32", "bfloat16", "float16", "int8", "fp8", "int4"]),
)
def test_table_memory_slider_bar_is_v_times_d_times_bytes(vocab, d, dtype):
    per_entry = {"float32": 4, "bfloat16": 2, "float16": 2, "int8": 1, "fp8": 1, "int4": 0.5}
    fig = table_memory_slider({"m": {"vocab_size": vocab, "hidden_size": d}}, [dtype])
    expected = -(-vocab * d * per_entry[dtype] // 1) / 1e9  # ceil to whole bytes, then GB
    assert fig.data[0].y[0] == pytest.approx(expected, rel=1e-3)


@pytest.mark.parametrize(
    ("configs", "dtypes", "active", "error", "match"),
    [
        ([("a", 1)], ["float32"], 0, TypeError, "configs"),
        ({}, ["float32"], 0, ValueError, "configs"),
        ({"a": {"vocab_size": 10}}, ["float32"], 0, ValueError, r"configs\['a'\]"),
        (SMALL_CONFIGS, ["float64"], 0, ValueError, "dtypes"),
        (SMALL_CONFIGS, [], 0, ValueError, "dtypes"),
        (SMALL_CONFIGS, "float32", 0, ValueError, "dtypes"),
        (SMALL_CONFIGS, ["float32"], 1, ValueError, "active"),
    ],
)
def test_table_memory_slider_errors(configs, dtypes, active, error, match):
    with pytest.raises(error, match=match):
        table_memory_slider(configs, dtypes, active=active)


# --- gradient_rows_slider ----------------------------------------------------------------------


def test_gradient_rows_slider_pinned():
    ids = torch.tensor([[1, 1, 3]])  # row 1 twice, row 3 once, rows 0 and 2 never
    grad = torch.tensor([[0.0, 0.0], [2.0, -1.0], [0.0, 0.0], [0.5, 0.0]])  # [V=4, d=2]
    fig = gradient_rows_slider([ids], [grad], ["b1"], vocab=["p", "q", "r", "s"], caption="c")
    heat, bars = fig.data
    z = [list(row) for row in heat.z]
    assert z[0] == [None, None] and z[2] == [None, None]  # all-zero rows are blank
    assert z[1] == [2.0, -1.0]
    assert z[3] == [0.5, 0.0]  # a zero entry inside a nonzero row is drawn as 0
    assert list(bars.x) == [0, 2, 0, 1]  # times each row was looked up, by hand
    assert heat.zmin == -2.0 and heat.zmax == 2.0
    assert fig.layout.yaxis.ticktext == ("p", "q", "r", "s")
    assert fig.layout.meta["caption"] == "c"


def test_gradient_rows_slider_steps():
    g = torch.ones(3, 2)
    fig = gradient_rows_slider(
        [torch.tensor([0]), torch.tensor([1, 2])], [g, 2 * g], ["one", "two"], active=1
    )
    assert _visible(fig) == [False, False, True, True]
    assert _slider_visibility(fig, 0) == [True, True, False, False]
    assert [s.label for s in fig.layout.sliders[0].steps] == ["one", "two"]
    assert fig.data[2].zmax == 2.0  # one colour range shared by all steps
    json.loads(fig.to_json())


@settings(max_examples=10)  # each example builds a plotly figure (~0.1 s)
@given(
    vocab=st.integers(2, 12),
    ids=st.lists(st.integers(0, 100), min_size=1, max_size=10),
    seed=st.integers(0, 2**16),
)
def test_gradient_rows_slider_blank_rows_are_the_unused_ids(vocab, ids, seed):
    from lib.embeddings import lookup_gradient

    ids = torch.tensor([i % vocab for i in ids])
    g = torch.Generator().manual_seed(seed)
    table = torch.randn(vocab, 3, generator=g)
    upstream = torch.rand(len(ids), 3, generator=g) + 0.5  # > 0, so used rows are nonzero
    grad = lookup_gradient(ids, table, upstream)
    fig = gradient_rows_slider([ids], [grad], ["b"])
    blank = [r for r, row in enumerate(fig.data[0].z) if all(v is None for v in row)]
    assert blank == sorted(set(range(vocab)) - set(ids.tolist()))
    assert list(fig.data[1].x) == [ids.tolist().count(r) for r in range(vocab)]


@pytest.mark.parametrize(
    ("ids", "grads", "labels", "kwargs", "error", "match"),
    [
        ([], [], [], {}, ValueError, "non-empty"),
        ([torch.tensor([0])], [], ["a"], {}, ValueError, "one length"),
        ([torch.tensor([0.0])], [torch.ones(2, 2)], ["a"], {}, TypeError, r"ids\[0\]"),
        ([torch.tensor([2])], [torch.ones(2, 2)], ["a"], {}, ValueError, r"ids\[0\] must lie"),
        ([torch.tensor([0])], [torch.ones(2)], ["a"], {}, ValueError, r"grads\[0\] must be 2-D"),
        ([torch.tensor([0])], [torch.ones(2, 2).long()], ["a"], {}, TypeError, r"grads\[0\]"),
        (
            [torch.tensor([0])] * 2,
            [torch.ones(2, 2), torch.ones(3, 2)],
            ["a", "b"],
            {},
            ValueError,
            "one shape",
        ),
        ([torch.tensor([0])], [torch.ones(2, 2)], [1], {}, ValueError, "labels"),
        ([torch.tensor([0])], [torch.ones(2, 2)], ["a"], {"vocab": ["x"]}, ValueError, "vocab"),
        ([torch.tensor([0])], [torch.ones(2, 2)], ["a"], {"active": 1}, ValueError, "active"),
    ],
)
def test_gradient_rows_slider_errors(ids, grads, labels, kwargs, error, match):
    with pytest.raises(error, match=match):
        gradient_rows_slider(ids, grads, labels, **kwargs)


# --- bpe_merges_slider -------------------------------------------------------------------------

from lib.tokenization import MergeStep, bpe_merge_steps  # noqa: E402
from lib.viz.embeddings import bpe_merges_slider  # noqa: E402

MERGES = [("l", "o"), ("lo", "w"), ("e", "r"), ("low", "er")]


def test_bpe_merges_slider_draws_each_steps_symbols():
    steps = bpe_merge_steps("lower", MERGES)
    fig = bpe_merges_slider("lower", steps, caption="cap", alt="alt")
    assert len(fig.data) == len(steps) + 1
    assert list(fig.data[0].text) == list("lower")  # step 0: the bytes
    for trace, step in zip(fig.data[1:], steps, strict=True):
        assert tuple(trace.text) == step.symbols
        widths = [len(s) for s in step.symbols]
        assert list(trace.x) == widths
        assert list(trace.base) == np.cumsum([0, *widths[:-1]]).tolist()  # boxes abut
    # the symbol each merge made is the one highlighted
    orange, blue = "#E69F00", "#0072B2"
    assert list(fig.data[0].marker.color) == [blue] * 5  # the bytes: nothing merged yet
    assert list(fig.data[2].marker.color) == [orange, blue, blue]  # "low" just made
    assert list(fig.data[4].marker.color) == [orange]  # "lower"
    assert fig.layout.meta == {"caption": "cap", "alt": "alt"}


def test_bpe_merges_slider_steps_show_one_row_each():
    steps = bpe_merge_steps("lower", MERGES)
    fig = bpe_merges_slider("lower", steps)
    slider = fig.layout.sliders[0]
    assert slider.active == len(steps)  # opens on the tokens
    for k in range(len(steps) + 1):
        expected = [i == k for i in range(len(steps) + 1)]
        assert _slider_visibility(fig, k) == expected
    assert slider.steps[1].label == "1: l + o (rank 0)"
    assert _visible(fig) == [False] * len(steps) + [True]


def test_bpe_merges_slider_bad_input():
    steps = bpe_merge_steps("lower", MERGES)
    with pytest.raises(TypeError, match="piece must be a str"):
        bpe_merges_slider(None, steps)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="piece must be a non-empty"):
        bpe_merges_slider("", steps)
    with pytest.raises(ValueError, match=r"steps\[0\].symbols must spell the piece"):
        bpe_merges_slider("lowest", steps)
    with pytest.raises(TypeError, match=r"steps\[0\] must be a MergeStep"):
        bpe_merges_slider("lower", [("l", "o")])  # type: ignore[list-item]
    with pytest.raises(ValueError, match="active"):
        bpe_merges_slider("lower", steps, active=9)
    assert isinstance(steps[0], MergeStep)
