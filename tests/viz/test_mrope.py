"""Tests for lib.viz.mrope: position-id lines, the token map with its slot bars, and slot frequencies.

Position ids and slot axes are written out by hand here (never by calling lib.mrope), so a figure
that drew the wrong data would fail.
"""

from __future__ import annotations

import math

import pytest
import torch

from lib.viz.mrope import (
    AXIS_COLORS,
    position_ids_figure,
    slot_frequencies_figure,
    token_map_figure,
)

# text 2, image (1, 4, 4) -> merged 1×2×2, text 1: ids written out by hand (start of image: 2)
SEGMENTS = [("text", 2), ("image", (1, 4, 4)), ("text", 1)]
IDS = torch.tensor(
    [
        [0, 1, 2, 2, 2, 2, 4],  # t
        [0, 1, 2, 2, 3, 3, 4],  # h
        [0, 1, 2, 3, 2, 3, 4],  # w
    ]
)
CHUNKED = torch.tensor([0, 1, 1, 2])  # 4 slots: t, h, h, w
INTERLEAVED = torch.tensor([0, 1, 2, 0])


def visible_flags(fig, step: int) -> list[bool]:
    return list(fig.layout.sliders[0].steps[step].args[0]["visible"])


# ------------------------------------------------------------------ position_ids_figure


def test_position_ids_figure_draws_the_three_rows_and_shades_vision_spans():
    fig = position_ids_figure(IDS, SEGMENTS)
    assert [t.name for t in fig.data] == ["t id", "h id", "w id"]
    assert list(fig.data[1].y) == [0, 1, 2, 2, 3, 3, 4]
    assert list(fig.data[2].y) == [0, 1, 2, 3, 2, 3, 4]
    assert [t.line.color for t in fig.data] == list(AXIS_COLORS)
    (rect,) = fig.layout.shapes
    assert (rect.x0, rect.x1) == (1.5, 5.5)
    assert "image 1×2×2" in fig.layout.annotations[0].text


def test_position_ids_figure_checks_ids_against_segments():
    with pytest.raises(ValueError, match="7"):
        position_ids_figure(IDS[:, :6], SEGMENTS)
    with pytest.raises(ValueError, match=r"\[3, T\]"):
        position_ids_figure(IDS[:2], SEGMENTS)
    with pytest.raises(TypeError, match="integer"):
        position_ids_figure(IDS.float(), SEGMENTS)


# ------------------------------------------------------------------ token_map_figure


def test_token_map_labels_every_cell_and_bars_read_the_slot_axis():
    fig = token_map_figure(
        IDS, SEGMENTS, {"chunked": CHUNKED, "interleaved": INTERLEAVED}, active=4
    )
    texts = fig.data[0]
    stacked = [t.replace("<br>", ",") for t in texts.text]  # vision ids are stacked t / h / w
    assert stacked == ["0", "1", "2,2,2", "2,2,3", "2,3,2", "2,3,3", "4"]
    assert len(fig.layout.shapes) == 7  # one cell per token
    per_step = 3  # highlight + 2 layouts
    token4 = fig.data[1 + 4 * per_step : 1 + 5 * per_step]
    highlight, chunked, interleaved = token4
    assert list(chunked.y) == [2, 3, 3, 2]  # token 4 has (t, h, w) = (2, 3, 2): slots t, h, h, w
    assert list(interleaved.y) == [2, 3, 2, 2]  # slots t, h, w, t
    assert list(chunked.marker.color) == [AXIS_COLORS[a] for a in (0, 1, 1, 2)]
    # the highlight square is centred on the cell of token 4 (image row 1, column 0)
    assert (min(highlight.y) + max(highlight.y)) / 2 == 1.0
    assert visible_flags(fig, 4)[:1] == [True]
    assert visible_flags(fig, 4)[1:] == [k // per_step == 4 for k in range(7 * per_step)]
    # the colour key: the first bar panel's title names each axis in its bars' colour
    titles = [a.text for a in fig.layout.annotations if a.text.startswith(("chunked", "inter"))]
    assert titles[1] == "interleaved"
    for name, color in zip("thw", AXIS_COLORS, strict=True):
        assert f'<span style="color:{color}">■ {name}</span>' in titles[0]
    assert fig.layout.showlegend is False
    steps = fig.layout.sliders[0].steps
    assert steps[4].args[1]["title.text"] == "token 4 (image): t 2, h 3, w 2"
    assert steps[0].args[1]["title.text"] == "token 0 (text): t = h = w = 0"
    assert fig.layout.title.text == steps[4].args[1]["title.text"]


def test_token_map_text_tokens_read_the_same_position_in_every_slot():
    fig = token_map_figure(IDS, SEGMENTS, {"chunked": CHUNKED}, tokens=[6])
    assert list(fig.data[-1].y) == [4, 4, 4, 4]
    assert len(fig.layout.sliders[0].steps) == 1


def test_token_map_rejects_bad_layouts_and_tokens():
    with pytest.raises(ValueError, match="axis numbers"):
        token_map_figure(IDS, SEGMENTS, {"bad": torch.tensor([0, 3, 1, 2])})
    with pytest.raises(ValueError, match="slots"):
        token_map_figure(IDS, SEGMENTS, {"a": CHUNKED, "b": torch.tensor([0, 1])})
    with pytest.raises(ValueError, match="tokens"):
        token_map_figure(IDS, SEGMENTS, {"a": CHUNKED}, tokens=[7])
    with pytest.raises(ValueError, match="layouts"):
        token_map_figure(IDS, SEGMENTS, {})
    with pytest.raises(ValueError, match="active"):
        token_map_figure(IDS, SEGMENTS, {"a": CHUNKED}, tokens=[0, 1], active=2)


# ------------------------------------------------------------------ slot_frequencies_figure


def test_slot_frequencies_puts_each_slot_on_its_axis_at_its_wavelength():
    theta = torch.tensor([1.0, 0.1, 0.01, 0.001])
    fig = slot_frequencies_figure(
        {"chunked": (CHUNKED, theta), "2-D only": (torch.tensor([1, 1, 2, 2]), theta)},
        context_length=100,
    )
    t_trace, h_trace, w_trace = fig.data[:3]
    assert list(t_trace.customdata) == [0] and list(h_trace.customdata) == [1, 2]
    assert list(w_trace.customdata) == [3]
    # one legend entry per axis, even though the second layout has no t slot
    legend = [t.name for t in fig.data if t.showlegend is not False and t.mode == "markers"]
    assert legend == ["t pairs", "h pairs", "w pairs"]
    assert h_trace.x[1] == pytest.approx(2 * math.pi / 0.01, rel=1e-3)
    assert set(h_trace.y) == {"h"}
    assert list(fig.data[3].x) == []  # the 2-D layout has no t slot ...
    assert any("no pairs for t" in a.text for a in fig.layout.annotations)  # ... and says so
    ref = fig.data[6]
    assert list(ref.x) == [100.0, 100.0]
    assert fig.layout.xaxis.type == "log"


def test_slot_frequencies_rejects_bad_layouts():
    theta = torch.tensor([1.0, 0.1, 0.01, 0.001])
    with pytest.raises(ValueError, match="slots"):
        slot_frequencies_figure({"a": (CHUNKED[:3], theta)})
    with pytest.raises(TypeError, match="floating"):
        slot_frequencies_figure({"a": (CHUNKED, torch.tensor([1, 2, 3, 4]))})
    with pytest.raises(ValueError, match="pair"):
        slot_frequencies_figure({"a": CHUNKED})
    with pytest.raises(ValueError, match="context_length"):
        slot_frequencies_figure({"a": (CHUNKED, theta)}, context_length=-1)


# ------------------------------------------------------------------ the strip's lines (issue 34)


def test_strip_wraps_into_lines_no_wider_than_strip_width():
    from lib.mrope import segment_spans
    from lib.viz.mrope import STRIP_WIDTH, _cell_layout

    # text 4, image 3×4 (12 tokens), text 4, video of 3 frames 2×2 (12 tokens), text 2: 34 tokens,
    # about 25 cells wide on one line; two lines of at most 14 cells
    spans = segment_spans(
        [("text", 4), ("image", (1, 6, 8)), ("text", 4), ("video", (3, 4, 4)), ("text", 2)],
        spatial_merge_size=2,
    )
    centres, captions = _cell_layout(spans)
    assert len(centres) == 34
    assert max(x for x, _ in centres) <= STRIP_WIDTH - 1 + 1e-9
    lines = sorted({y for _, y in centres})
    # line 1: text (y 0), the image's 3 rows (y 0, 1, 2); line 2 starts below the first line's
    # captions: the video's 2 rows, the last text
    assert lines == [0.0, 1.0, 2.0, 3.9, 4.9]
    assert [y for _, y in centres[20:22]] == [3.9, 3.9]  # the video starts the second line
    assert [label for _, _, label in captions] == [
        "text", "image", "text", "video, 3 frames", "text"
    ]  # fmt: skip
    # every two cells are at least one cell apart (no overlapping cells, hence no crowded ids)
    for i, (xa, ya) in enumerate(centres):
        for xb, yb in centres[i + 1 :]:
            assert abs(xa - xb) >= 1 - 1e-9 or abs(ya - yb) >= 1 - 1e-9


def test_strip_splits_a_long_text_across_lines():
    from lib.mrope import segment_spans
    from lib.viz.mrope import _cell_layout

    centres, captions = _cell_layout(segment_spans([("text", 30)]), width=14.0)
    assert [y for _, y in centres] == [0.0] * 14 + [1.9] * 14 + [3.8] * 2
    assert [x for x, _ in centres[:3]] == [0.0, 1.0, 2.0] and centres[14] == (0.0, 1.9)
    assert [label for _, _, label in captions] == ["text"] * 3
