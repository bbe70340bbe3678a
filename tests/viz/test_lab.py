"""Tests for lib/viz/lab.py: the comparison table and the lab's three figures."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from lib.lab import FINE_TUNED_VARIANTS, POSITION_SCHEMES, SCALED_VARIANTS, seed_spread
from lib.viz.core import YELLOW
from lib.viz.lab import (
    SCHEME_STYLE,
    comparison_markdown,
    extrapolation_figure,
    loss_figure,
    pair_usage_figure,
    per_position_figure,
)


def test_scheme_styles_cover_every_scheme_and_variant_of_lib_and_avoid_yellow():
    names = set(POSITION_SCHEMES) | set(SCALED_VARIANTS) | set(FINE_TUNED_VARIANTS)
    assert set(SCHEME_STYLE) == names  # fails when lib.lab gains a scheme without a style
    assert all(style["color"] != YELLOW for style in SCHEME_STYLE.values())
    cues = [(s["color"], s["dash"], s["symbol"]) for s in SCHEME_STYLE.values()]
    assert len(set(cues)) == len(cues)  # no two schemes look alike


# ------------------------------------------------------------------------------------------------
# comparison_markdown
# ------------------------------------------------------------------------------------------------


def test_markdown_table_pinned():
    rows = [{"scheme": "RoPE", "acts on": "q, k"}, {"scheme": "ALiBi", "acts on": "scores"}]
    expected = "| scheme | acts on |\n|---|---|\n| RoPE | q, k |\n| ALiBi | scores |"
    assert comparison_markdown(rows, ["scheme", "acts on"]) == expected


def test_markdown_table_escapes_pipes_and_newlines_and_keeps_column_order():
    rows = [{"b": "x|y", "a": "two\nlines"}]
    assert comparison_markdown(rows, ["a", "b"]).splitlines()[-1] == "| two lines | x\\|y |"


@given(
    cells=st.lists(
        st.lists(st.text(alphabet="ab|\n ", min_size=1, max_size=6), min_size=3, max_size=3),
        min_size=0,
        max_size=5,
    )
)
def test_markdown_table_always_has_one_line_per_row_and_same_cell_count(cells):
    columns = ["c0", "c1", "c2"]
    rows = [dict(zip(columns, r, strict=True)) for r in cells]
    lines = comparison_markdown(rows, columns).splitlines()
    assert len(lines) == 2 + len(rows)
    for line in lines:
        unescaped_bars = line.replace("\\|", "").count("|")
        assert unescaped_bars == len(columns) + 1


def test_markdown_table_errors():
    with pytest.raises(ValueError, match="columns"):
        comparison_markdown([], [])
    with pytest.raises(ValueError, match=r"rows\[0\] lacks"):
        comparison_markdown([{"a": "1"}], ["a", "b"])
    with pytest.raises(TypeError, match="cell"):
        comparison_markdown([{"a": 1}], ["a"])


# ------------------------------------------------------------------------------------------------
# accuracies: rounded to 2 decimals, NaN / None a gap, [0, 1] enforced
# ------------------------------------------------------------------------------------------------


def test_accuracies_round_to_two_decimals_and_keep_gaps():
    fig = per_position_figure(
        {"rope": {4: [0.99876, 0.123456, 0.004, math.nan]}, "learned": {4: [1.0, None, 0, 1]}},
        train_len=2,
    )
    rope, learned = fig.data
    assert list(rope.y) == [1.0, 0.12, 0.0, None]
    assert list(learned.y) == [1.0, None, 0.0, 1.0]
    assert rope.name == "rope" and rope.line.color == SCHEME_STYLE["rope"]["color"]


@pytest.mark.parametrize(
    ("curve", "train_len", "error", "match"),
    [
        ([1.5, 0.5], 2, ValueError, "accuracies"),
        ([-0.1, 0.5], 2, ValueError, "accuracies"),
        ([0.5, 0.5], 0, ValueError, "train_len"),
        ([0.5, 0.5], 2.0, TypeError, "train_len"),
    ],
)
def test_accuracy_errors(curve, train_len, error, match):
    with pytest.raises(error, match=match):
        per_position_figure({"rope": {2: curve}}, train_len)


def test_numpy_integers_are_accepted_as_lengths():
    accuracy = {"rope": {8: [0.5] * 8}}
    assert per_position_figure(accuracy, np.int64(8)) == per_position_figure(accuracy, 8)


# ------------------------------------------------------------------------------------------------
# per_position_figure
# ------------------------------------------------------------------------------------------------


def _curves():
    return {
        "rope": {4: [math.nan, 0.5, 1.0, math.nan], 8: [math.nan] + [0.333333] * 6 + [math.nan]},
        "alibi": {4: [math.nan, 0.25, 0.75, math.nan], 8: [math.nan] + [0.9] * 6 + [math.nan]},
    }


def test_per_position_slider_shows_one_length_at_a_time():
    fig = per_position_figure(_curves(), train_len=4)
    assert len(fig.data) == 4  # 2 lengths x 2 schemes
    (slider,) = fig.layout.sliders
    assert [s.label for s in slider.steps] == ["4 (1×L)", "8 (2×L)"]
    for k, step in enumerate(slider.steps):
        visible = step.args[0]["visible"]
        assert visible == [j // 2 == k for j in range(4)]
        t = [4, 8][k]
        assert step.args[1]["xaxis.range"] == [-0.5, t - 0.5]
        shown = [tr for tr, v in zip(fig.data, visible, strict=True) if v]
        assert all(len(tr.x) == t for tr in shown)
    assert [tr.visible for tr in fig.data] == [True, True, False, False]
    assert list(fig.data[0].y) == [None, 0.5, 1.0, None]
    assert list(fig.data[2].y) == [None] + [0.33] * 6 + [None]
    assert fig.layout.shapes[0].x0 == 3.5  # the training-length line sits between 3 and 4


@pytest.mark.parametrize(
    ("curves", "error", "match"),
    [
        ({}, ValueError, "per_position"),
        ({"a": {4: [0.1] * 4}, "b": {8: [0.1] * 8}}, ValueError, "same evaluation lengths"),
        ({"a": {4: [0.1] * 3}}, ValueError, "must have 4 entries"),
        ({"a": {4: [0.1, 0.2, 2.0, 0.3]}}, ValueError, "accuracies"),
    ],
)
def test_per_position_errors(curves, error, match):
    with pytest.raises(error, match=match):
        per_position_figure(curves, train_len=4)


# ------------------------------------------------------------------------------------------------
# loss_figure
# ------------------------------------------------------------------------------------------------


def test_loss_figure_averages_windows_and_rounds():
    losses = {"rope": [4.0, 2.0, 1.0, 0.5, 0.123456, 0.1], "none": [3.0] * 6}
    fig = loss_figure(losses, window=2)
    rope, none = fig.data
    assert list(rope.x) == [2, 4, 6]
    assert list(rope.y) == [3.0, 0.75, 0.112]  # (0.123456 + 0.1) / 2 = 0.111728 -> 3 digits
    assert list(none.y) == [3.0, 3.0, 3.0]
    assert fig.layout.yaxis.type == "log"


def test_loss_figure_drops_an_incomplete_last_window():
    fig = loss_figure({"a": [1.0, 1.0, 1.0, 1.0, 9.0]}, window=2)
    assert list(fig.data[0].x) == [2, 4] and list(fig.data[0].y) == [1.0, 1.0]


@pytest.mark.parametrize(
    ("losses", "window", "error", "match"),
    [
        ({}, 1, ValueError, "losses"),
        ({"a": [1.0], "b": [1.0, 2.0]}, 1, ValueError, "same length"),
        ({"a": [1.0, 0.0]}, 1, ValueError, "> 0"),
        ({"a": [1.0, math.inf]}, 1, ValueError, "finite"),
        ({"a": [1.0, 1.0]}, 3, ValueError, "window"),
        ({"a": [1.0, 1.0]}, 0, ValueError, "window"),
    ],
)
def test_loss_figure_errors(losses, window, error, match):
    with pytest.raises(error, match=match):
        loss_figure(losses, window=window)


# ------------------------------------------------------------------------------------------------
# The result figure: buttons for the condition, a menu for the group
# ------------------------------------------------------------------------------------------------

ACC = {
    "rope": {
        "seen": {32: [1.0, 0.99, 1.0], 64: [0.9, 0.95, 0.8]},
        "unseen": {32: [1.0, 0.99, 1.0], 64: [0.5, 0.4, 0.6]},
    },
    "alibi": {
        "seen": {32: [0.9, 0.9, 0.88], 64: [0.91, 0.9, 0.9]},
        "unseen": {32: [0.9, 0.9, 0.88], 64: [0.9, 0.89, 0.9]},
    },
    "rope+yarn": {
        "seen": {32: [1.0, 0.99, 1.0], 64: [0.99, 0.98, 0.97]},
        "unseen": {32: [1.0, 0.99, 1.0], 64: [0.9, 0.8, 0.85]},
    },
}
GROUPS = {"schemes": ["rope", "alibi"], "scaling": ["rope", "rope+yarn"]}


def test_extrapolation_figure_medians_error_bars_and_controls():
    fig = extrapolation_figure(ACC, GROUPS, train_len=32)
    assert [t.name for t in fig.data] == ["rope", "alibi", "rope+yarn"]
    rope = fig.data[0]
    assert list(rope.x) == [1.0, 2.0]
    assert list(rope.y) == [1.0, 0.9]  # medians, seen distances first
    assert list(rope.error_y.array) == [0.0, 0.05]  # best seed - median
    assert list(rope.error_y.arrayminus) == [0.01, 0.1]  # median - worst seed
    assert [t.visible for t in fig.data] == [True, True, False]  # the first group
    buttons, menu = fig.layout.updatemenus
    assert buttons.type == "buttons" and menu.type == "dropdown"
    # the condition buttons restyle y and error bars of every trace, never visibility
    unseen = buttons.buttons[1]
    assert unseen.method == "restyle" and set(unseen.args[0]) == {"y", "error_y"}
    assert unseen.args[0]["y"] == [[1.0, 0.5], [0.9, 0.9], [1.0, 0.85]]
    assert unseen.args[0]["error_y"][0]["arrayminus"] == [0.01, 0.1]
    # the group menu restyles visibility only, so the two controls never undo each other
    scaling = menu.buttons[1]
    assert scaling.label == "scaling" and set(scaling.args[0]) == {"visible"}
    assert scaling.args[0]["visible"] == [True, False, True]


def test_figures_take_the_lower_middle_seed_for_an_even_count_like_lib():
    # numpy's median would average the middle two (0.5 and 0.35); lib.lab's is one seed's value
    acc = {"rope": {"seen": {32: [0.9, 0.2, 0.6, 0.4]}}}
    (trace,) = extrapolation_figure(acc, {"g": ["rope"]}, train_len=32).data
    assert list(trace.y) == [seed_spread([0.9, 0.2, 0.6, 0.4]).median.item()] == [0.4]
    assert list(trace.error_y.array) == [0.5] and list(trace.error_y.arrayminus) == [0.2]
    shares = {"prev": [[0.1, 0.9], [0.6, 0.4], [0.4, 0.6], [0.3, 0.7]]}
    (bar,) = pair_usage_figure(shares, [6.28, 62.8]).data
    assert list(bar.y) == [0.3, 0.6]
    assert list(bar.error_y.array) == [0.3, 0.3] and list(bar.error_y.arrayminus) == [0.2, 0.2]


def test_extrapolation_figure_labels_and_errors():
    fig = extrapolation_figure(ACC, GROUPS, train_len=32, condition_labels={"seen": "seen d"})
    assert [b.label for b in fig.layout.updatemenus[0].buttons] == ["seen d", "unseen"]
    with pytest.raises(ValueError, match="unknown"):
        extrapolation_figure(ACC, {"g": ["xpos"]}, train_len=32)
    with pytest.raises(ValueError, match="lengths"):
        bad = {**ACC, "alibi": {"seen": {32: [0.9]}, "unseen": {32: [0.9]}}}
        extrapolation_figure(bad, GROUPS, train_len=32)
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        bad = {**ACC, "alibi": {c: {32: [0.9], 64: [1.5]} for c in ("seen", "unseen")}}
        extrapolation_figure(bad, GROUPS, train_len=32)
    with pytest.raises(ValueError, match="at least one"):
        extrapolation_figure({}, GROUPS, train_len=32)


def test_pair_usage_figure_median_bars_with_seed_range():
    shares = {"prev": [[0.7, 0.2, 0.1], [0.5, 0.3, 0.2], [0.6, 0.3, 0.1]]}
    fig = pair_usage_figure(shares, [6.28, 62.8, 628.0])
    (bar,) = fig.data
    assert list(bar.y) == [0.6, 0.3, 0.1]
    assert list(bar.error_y.array) == [0.1, 0.0, 0.1]
    assert list(bar.error_y.arrayminus) == [0.1, 0.1, 0.0]
    assert list(fig.layout.xaxis.ticktext) == ["0 (6.28)", "1 (62.8)", "2 (628)"]
    with pytest.raises(ValueError, match="prev"):
        pair_usage_figure({"prev": [[0.5, 0.5]]}, [1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        pair_usage_figure({"prev": [[1.5, -0.5, 0.0]]}, [1.0, 2.0, 3.0])


def _intervals(shift: float = 0.0) -> dict:
    """(estimate, low, high) for every point of ACC: the mean of the seeds, ±0.02 (clipped)."""
    out: dict = {}
    for name, by_condition in ACC.items():
        for condition, by_len in by_condition.items():
            for t, values in by_len.items():
                mean = sum(values) / len(values) + shift
                entry = (mean, max(0.0, mean - 0.02), min(1.0, mean + 0.02))
                out.setdefault(name, {}).setdefault(condition, {})[t] = entry
    return out


def test_extrapolation_figure_draws_the_given_intervals_instead_of_the_seed_range():
    fig = extrapolation_figure(ACC, GROUPS, train_len=32, intervals=_intervals())
    rope = fig.data[0]
    assert list(rope.y) == [round(2.99 / 3, 2), round(2.65 / 3, 2)]  # means, not medians
    assert list(rope.error_y.array) == [0.0, 0.02]  # high - estimate (clipped at 1 for T = L)
    assert list(rope.error_y.arrayminus) == [0.02, 0.02]
    assert "mean accuracy" in rope.hovertemplate
    unseen = fig.layout.updatemenus[0].buttons[1].args[0]
    assert unseen["y"][0] == [round(2.99 / 3, 2), 0.5]
    with pytest.raises(ValueError, match="no entry"):
        extrapolation_figure(ACC, GROUPS, train_len=32, intervals={"rope": {}})
    bad = _intervals()
    bad["rope"]["seen"][64] = (0.5, 0.6, 0.7)  # estimate below its interval
    with pytest.raises(ValueError, match="low <= estimate"):
        extrapolation_figure(ACC, GROUPS, train_len=32, intervals=bad)
    bad["rope"]["seen"][64] = (0.5, 0.6)
    with pytest.raises(ValueError, match=r"\(estimate, low, high\)"):
        extrapolation_figure(ACC, GROUPS, train_len=32, intervals=bad)
