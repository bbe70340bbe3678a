"""Tests for lib.mrope: position ids, slot layouts, reduction to RoPE, transformers Qwen2-VL/Qwen3-VL."""

from __future__ import annotations

import itertools

import pytest
import torch
from hypothesis import assume, given
from hypothesis import strategies as st

from lib.mrope import (
    SegmentSpan,
    mrope_angles,
    mrope_position_ids,
    mrope_slot_axes,
    segment_spans,
    vision_axial_inv_freq,
    with_vision_markers,
)
from lib.rope import apply_rope, rope_angles, rope_inv_freq

LAYOUTS = ("chunked", "interleaved")

# text 2, image grid (1, 4, 6) -> merged (1, 2, 3), text 3, video (3, 4, 2) -> merged (3, 2, 1), text 2
EXAMPLE = [("text", 2), ("image", (1, 4, 6)), ("text", 3), ("video", (3, 4, 2)), ("text", 2)]
# worked out by hand: segments start at 0, 2, 5, 8, 11
EXAMPLE_IDS = [
    # text   image (t, h, w over 1 x 2 x 3)   text       video (3 x 2 x 1)        text
    [0, 1, 2, 2, 2, 2, 2, 2, 5, 6, 7, 8, 8, 9, 9, 10, 10, 11, 12],
    [0, 1, 2, 2, 2, 3, 3, 3, 5, 6, 7, 8, 9, 8, 9, 8, 9, 11, 12],
    [0, 1, 2, 3, 4, 2, 3, 4, 5, 6, 7, 8, 8, 8, 8, 8, 8, 11, 12],
]


# ------------------------------------------------------------------------------ position ids


def test_position_ids_pinned_example():
    ids = mrope_position_ids(EXAMPLE, spatial_merge_size=2)
    assert ids.dtype == torch.long and ids.shape == (3, 19)
    assert ids.tolist() == EXAMPLE_IDS


def test_position_ids_text_only_counts_up():
    ids = mrope_position_ids([("text", 4), ("text", 3)])
    assert ids.tolist() == [list(range(7))] * 3


def test_position_ids_vision_first_and_merge_size_one():
    ids = mrope_position_ids([("image", (2, 2, 3)), ("text", 1)], spatial_merge_size=1)
    assert ids.tolist() == [
        [0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 3],
        [0, 0, 0, 1, 1, 1, 0, 0, 0, 1, 1, 1, 3],
        [0, 1, 2, 0, 1, 2, 0, 1, 2, 0, 1, 2, 3],
    ]


@given(
    grids=st.lists(
        st.tuples(st.integers(1, 4), st.integers(1, 4), st.integers(1, 4)), min_size=1, max_size=3
    ),
    texts=st.lists(st.integers(1, 5), min_size=4, max_size=4),
)
def test_position_ids_properties(grids, texts):
    segments = []
    for i, (t, h, w) in enumerate(grids):
        segments.append(("text", texts[i]))
        segments.append(("video" if i % 2 else "image", (t, 2 * h, 2 * w)))
    segments.append(("text", texts[-1]))
    ids = mrope_position_ids(segments)
    n_tokens = sum(
        size if kind == "text" else size[0] * (size[1] // 2) * (size[2] // 2)
        for kind, size in segments
    )
    assert ids.shape == (3, n_tokens)
    # the final text block counts up from 1 + the largest earlier id, equal on all rows
    tail = ids[:, -texts[-1] :]
    assert (tail[0] == tail[1]).all() and (tail[1] == tail[2]).all()
    assert tail[0, 0] == ids[:, : -texts[-1]].max() + 1
    assert (tail[0].diff() == 1).all()


# ------------------------------------------------------------------------------ slot layouts


def test_slot_axes_pinned():
    assert mrope_slot_axes([1, 2, 1], "chunked").tolist() == [0, 1, 1, 2]
    assert mrope_slot_axes([2, 1, 1], "interleaved").tolist() == [0, 1, 2, 0]
    assert mrope_slot_axes([4, 2, 2], "interleaved").tolist() == [0, 1, 2, 0, 1, 2, 0, 0]
    qwen2 = mrope_slot_axes([16, 24, 24], "chunked")
    assert qwen2[:16].eq(0).all() and qwen2[16:40].eq(1).all() and qwen2[40:].eq(2).all()
    qwen3 = mrope_slot_axes([24, 20, 20], "interleaved")
    assert qwen3[:60].tolist() == [0, 1, 2] * 20 and qwen3[60:].tolist() == [0] * 4
    for layout in LAYOUTS:
        axes = mrope_slot_axes([24, 20, 20], layout)
        assert torch.bincount(axes).tolist() == [24, 20, 20]


@given(
    s_t=st.integers(0, 30),
    s_h=st.integers(0, 12),
    s_w=st.integers(0, 12),
    layout=st.sampled_from(LAYOUTS),
    seed=st.integers(0, 2**16),
)
def test_equal_rows_reduce_to_rope(s_t, s_h, s_w, layout, seed):
    d_half = s_t + s_h + s_w
    assume(d_half > 0)
    if layout == "interleaved":
        assume(3 * s_h <= d_half + 1 and 3 * s_w <= d_half)
    g = torch.Generator().manual_seed(seed)
    positions = torch.randint(0, 100000, (2, 7), generator=g)
    inv = rope_inv_freq(2 * d_half, base=1e6)
    angles = mrope_angles(positions.expand(3, 2, 7), inv, [s_t, s_h, s_w], layout=layout)
    assert torch.equal(angles, rope_angles(positions, inv))
    axes = mrope_slot_axes([s_t, s_h, s_w], layout)
    assert torch.bincount(axes, minlength=3).tolist() == [s_t, s_h, s_w]


def test_angles_pick_the_right_row():
    inv = rope_inv_freq(8, base=100.0)  # [1, 0.316, 0.1, 0.0316]
    positions = torch.tensor([[5], [7], [11]])  # one token with t=5, h=7, w=11
    chunked = mrope_angles(positions, inv, [1, 2, 1])
    torch.testing.assert_close(chunked[0], torch.tensor([5.0, 7.0, 7.0, 11.0]) * inv)
    interleaved = mrope_angles(positions, inv, [2, 1, 1], layout="interleaved")
    torch.testing.assert_close(interleaved[0], torch.tensor([5.0, 7.0, 11.0, 5.0]) * inv)


# ------------------------------------------------------------------------------ transformers


def _qwen2_vl_model():
    from transformers.models.qwen2_vl.configuration_qwen2_vl import Qwen2VLConfig
    from transformers.models.qwen2_vl.modeling_qwen2_vl import Qwen2VLModel

    config = Qwen2VLConfig(
        text_config={
            "hidden_size": 64,
            "num_attention_heads": 2,
            "num_hidden_layers": 1,
            "intermediate_size": 64,
            "vocab_size": 100,
            "rope_parameters": {"rope_type": "default", "rope_theta": 1e4, "mrope_section": [4, 6, 6]},
            "bos_token_id": None,
            "eos_token_id": None,
        },
        vision_config={"depth": 1, "embed_dim": 32, "hidden_size": 64, "num_heads": 2,
                       "spatial_merge_size": 2},
        image_token_id=90,
        video_token_id=91,
        vision_start_token_id=92,
    )  # fmt: skip
    return Qwen2VLModel(config).eval()


def _hf_rope_index(model, segments):
    """Build input_ids / mm_token_type_ids / grids for ``segments`` and call get_rope_index."""
    ids, types, images, videos = [], [], [], []
    for kind, size in segments:
        if kind == "text":
            ids += [1] * size
            types += [0] * size
        else:
            n = size[0] * size[1] * size[2] // 4
            ids += [90 if kind == "image" else 91] * n
            types += [1 if kind == "image" else 2] * n
            (images if kind == "image" else videos).append(list(size))
    position_ids, _ = model.get_rope_index(
        torch.tensor([ids]),
        torch.tensor([types]),
        image_grid_thw=torch.tensor(images) if images else None,
        video_grid_thw=torch.tensor(videos) if videos else None,
    )
    return position_ids[:, 0]  # [3, T]


AGREEING_CASES = [
    [("text", 2), ("image", (1, 4, 6)), ("text", 3)],
    [("image", (1, 6, 4)), ("text", 3), ("image", (1, 2, 2)), ("text", 1)],
    # videos whose temporal extent t <= max(h/m, w/m): both position rules agree
    [("text", 3), ("video", (2, 4, 4)), ("text", 2), ("image", (1, 8, 2)), ("text", 2)],
    [("text", 1), ("video", (3, 6, 2)), ("text", 4)],
]


@pytest.mark.parametrize("segments", AGREEING_CASES)
def test_position_ids_match_transformers_get_rope_index(segments):
    model = _qwen2_vl_model()
    expected = _hf_rope_index(model, segments)
    assert torch.equal(mrope_position_ids(segments, spatial_merge_size=2), expected)


def test_transformers_5_differs_after_a_long_video():
    # transformers 5.x advances by max(h, w) // m after a vision segment; with t = 3 frames and a
    # merged grid of 2 x 1, the text after the video starts 1 lower than the Qwen2-VL rule says.
    model = _qwen2_vl_model()
    hf = _hf_rope_index(model, EXAMPLE)
    ours = mrope_position_ids(EXAMPLE)
    assert torch.equal(hf[:, :17], ours[:, :17])  # identical up to the end of the video
    assert torch.equal(hf[:, 17:], ours[:, 17:] - 1)  # 8 + max(2, 1) = 10 instead of 8 + 3 = 11


def test_chunked_matches_transformers_qwen2_vl_rotation():
    from transformers.models.qwen2_vl.configuration_qwen2_vl import Qwen2VLTextConfig
    from transformers.models.qwen2_vl.modeling_qwen2_vl import (
        Qwen2VLRotaryEmbedding,
        apply_rotary_pos_emb,
    )

    d_head, base, sections = 128, 1e6, [16, 24, 24]  # Qwen2-VL's split of 64 slots
    config = Qwen2VLTextConfig(
        hidden_size=2 * d_head,
        num_attention_heads=2,
        num_hidden_layers=1,
        rope_parameters={"rope_type": "default", "rope_theta": base, "mrope_section": sections},
    )
    rotary = Qwen2VLRotaryEmbedding(config)
    positions = mrope_position_ids(EXAMPLE)[:, None]  # [3, B=1, T]
    torch.manual_seed(0)
    q = torch.randn(1, 2, positions.shape[-1], d_head)
    k = torch.randn(1, 2, positions.shape[-1], d_head)
    cos_hf, sin_hf = rotary(q, positions)  # [B, T, d_head]
    q_hf, k_hf = apply_rotary_pos_emb(q, k, cos_hf, sin_hf)

    angles = mrope_angles(positions, rope_inv_freq(d_head, base), sections)  # [B, T, d_half]
    torch.testing.assert_close(angles.cos(), cos_hf[..., : d_head // 2], atol=1e-5, rtol=0)
    cos, sin = angles.cos()[:, None], angles.sin()[:, None]  # [B, 1, T, d_half]
    torch.testing.assert_close(apply_rope(q, cos, sin), q_hf, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(apply_rope(k, cos, sin), k_hf, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("d_head,sections", [(128, [24, 20, 20]), (16, [4, 2, 2])])
def test_interleaved_matches_transformers_qwen3_vl(d_head, sections):
    from transformers.models.qwen3_vl.configuration_qwen3_vl import Qwen3VLTextConfig
    from transformers.models.qwen3_vl.modeling_qwen3_vl import (
        Qwen3VLTextRotaryEmbedding,
        apply_rotary_pos_emb,
    )

    base = 5e6
    config = Qwen3VLTextConfig(
        hidden_size=2 * d_head,
        num_attention_heads=2,
        head_dim=d_head,
        num_hidden_layers=1,
        rope_parameters={"rope_type": "default", "rope_theta": base, "mrope_section": sections,
                         "mrope_interleaved": True},
    )  # fmt: skip
    rotary = Qwen3VLTextRotaryEmbedding(config)
    positions = mrope_position_ids(EXAMPLE)[:, None]  # [3, 1, T]
    torch.manual_seed(1)
    q = torch.randn(1, 2, positions.shape[-1], d_head)
    k = torch.randn(1, 2, positions.shape[-1], d_head)
    cos_hf, sin_hf = rotary(q, positions)
    q_hf, k_hf = apply_rotary_pos_emb(q, k, cos_hf, sin_hf)

    angles = mrope_angles(positions, rope_inv_freq(d_head, base), sections, layout="interleaved")
    torch.testing.assert_close(angles.sin(), sin_hf[..., : d_head // 2], atol=1e-5, rtol=0)
    cos, sin = angles.cos()[:, None], angles.sin()[:, None]
    torch.testing.assert_close(apply_rope(q, cos, sin), q_hf, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(apply_rope(k, cos, sin), k_hf, atol=1e-5, rtol=1e-5)


# ------------------------------------------------------------------------------ errors


def test_errors_position_ids():
    with pytest.raises(ValueError, match="segments must not be empty"):
        mrope_position_ids([])
    with pytest.raises(ValueError, match=r"segments\[1\] kind"):
        mrope_position_ids([("text", 2), ("audio", (1, 2, 2))])
    with pytest.raises(ValueError, match=r"segments\[0\] w = 5 must be divisible"):
        mrope_position_ids([("image", (1, 4, 5))])
    with pytest.raises(
        ValueError, match=r"segments\[0\] h = 3 must be divisible by spatial_merge_size = 2"
    ):
        mrope_position_ids([("video", (2, 3, 6))], spatial_merge_size=2)
    with pytest.raises(ValueError, match=r"segments\[0\] text length"):
        mrope_position_ids([("text", 0)])
    with pytest.raises(TypeError, match=r"segments\[0\] text length"):
        mrope_position_ids([("text", 2.5)])
    with pytest.raises(TypeError, match=r"segments\[0\] image size must be a \(t, h, w\)"):
        mrope_position_ids([("image", (4, 4))])
    with pytest.raises(ValueError, match=r"segments\[0\] t"):
        mrope_position_ids([("video", (0, 4, 4))])
    with pytest.raises(TypeError, match=r"segments\[0\] must be a pair"):
        mrope_position_ids(["text"])
    with pytest.raises(TypeError, match="segments must be a sequence"):
        mrope_position_ids("text")
    with pytest.raises(ValueError, match="spatial_merge_size"):
        mrope_position_ids([("text", 1)], spatial_merge_size=0)


def test_errors_angles_and_axes():
    inv = rope_inv_freq(16)
    ids = torch.zeros(3, 5, dtype=torch.long)
    with pytest.raises(ValueError, match=r"sections \[2, 3, 2\] must sum to d_head // 2 = 8"):
        mrope_angles(ids, inv, [2, 3, 2])
    with pytest.raises(ValueError, match=r"position_ids must be \[3, \.\.\., T\]"):
        mrope_angles(torch.zeros(2, 5, dtype=torch.long), inv, [2, 3, 3])
    with pytest.raises(ValueError, match="position_ids must have at least 2"):
        mrope_angles(torch.zeros(3, dtype=torch.long), inv, [2, 3, 3])
    with pytest.raises(TypeError, match="position_ids"):
        mrope_angles(ids.bfloat16(), inv, [2, 3, 3])
    with pytest.raises(ValueError, match="inv_freq must be 1-D"):
        mrope_angles(ids, inv[None], [2, 3, 3])
    with pytest.raises(ValueError, match="layout"):
        mrope_angles(ids, inv, [2, 3, 3], layout="zigzag")
    with pytest.raises(ValueError, match="sections must have 3 entries"):
        mrope_slot_axes([4, 4])
    with pytest.raises(ValueError, match=r"sections\[1\]"):
        mrope_slot_axes([4, -1, 5])
    with pytest.raises(TypeError, match="sections must be a sequence"):
        mrope_slot_axes(8)
    with pytest.raises(ValueError, match="do not fit the interleaved layout"):
        mrope_slot_axes([0, 4, 4], "interleaved")
    with pytest.raises(ValueError, match="must not all be 0"):
        mrope_slot_axes([0, 0, 0])


# ---------------------------------------------------------------- vision markers, transformers 4.x

# Output of transformers 4.57.1's Qwen2VLModel.get_rope_index (run once outside this repository on
# the token ids Qwen2-VL's processor builds: <|vision_start|>, the image/video pad tokens,
# <|vision_end|>), pinned here because 4.x cannot be installed next to the 5.x this project uses.
# fmt: off
TRANSFORMERS_4_57_IDS = {
    "mixed": (
        [("text", 3), ("image", (1, 6, 8)), ("text", 2), ("video", (3, 4, 4)), ("text", 2)],
        [
            [0, 1, 2, 3, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 8, 9, 10, 11, 12, 12, 12, 12, 13, 13,
             13, 13, 14, 14, 14, 14, 15, 16, 17],
            [0, 1, 2, 3, 4, 4, 4, 4, 5, 5, 5, 5, 6, 6, 6, 6, 8, 9, 10, 11, 12, 12, 13, 13, 12, 12,
             13, 13, 12, 12, 13, 13, 15, 16, 17],
            [0, 1, 2, 3, 4, 5, 6, 7, 4, 5, 6, 7, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 12, 13, 12, 13,
             12, 13, 12, 13, 12, 13, 15, 16, 17],
        ],
    ),
    "long_video": (
        [("text", 3), ("video", (6, 4, 4)), ("text", 2)],
        [
            [0, 1, 2, 3, 4, 4, 4, 4, 5, 5, 5, 5, 6, 6, 6, 6, 7, 7, 7, 7, 8, 8, 8, 8, 9, 9, 9, 9,
             10, 11, 12],
            [0, 1, 2, 3, 4, 4, 5, 5, 4, 4, 5, 5, 4, 4, 5, 5, 4, 4, 5, 5, 4, 4, 5, 5, 4, 4, 5, 5,
             10, 11, 12],
            [0, 1, 2, 3, 4, 5, 4, 5, 4, 5, 4, 5, 4, 5, 4, 5, 4, 5, 4, 5, 4, 5, 4, 5, 4, 5, 4, 5,
             10, 11, 12],
        ],
    ),
}
# fmt: on
# fmt: on


@pytest.mark.parametrize("name", sorted(TRANSFORMERS_4_57_IDS))
def test_markers_give_transformers_4_ids(name):
    segments, expected = TRANSFORMERS_4_57_IDS[name]
    ids = mrope_position_ids(with_vision_markers(segments))
    assert ids.tolist() == expected


@pytest.mark.parametrize("segments", AGREEING_CASES)
def test_markers_match_transformers_5_where_its_rule_agrees(segments):
    model = _qwen2_vl_model()
    expected = _hf_rope_index(model, with_vision_markers(segments))
    assert torch.equal(mrope_position_ids(with_vision_markers(segments)), expected)


def test_transformers_5_starts_text_inside_the_video_with_markers():
    # 5.x deviation: after a video with t > max(h, w) / m, 5.x places <|vision_end|> and the text
    # below the video's largest t id; 4.x (pinned above) and the paper start after it.
    segments, expected_4x = TRANSFORMERS_4_57_IDS["long_video"]
    hf5 = _hf_rope_index(_qwen2_vl_model(), with_vision_markers(segments))
    video = slice(4, 4 + 6 * 2 * 2)
    assert hf5[0, video].max() > hf5[0, video.stop]  # the text restarts inside the video's t range
    assert hf5[:, : video.stop].tolist() == [row[: video.stop] for row in expected_4x]


def test_markers_wrap_each_vision_segment():
    segments = [("image", (1, 2, 2)), ("text", 4), ("video", (2, 2, 2))]
    assert with_vision_markers(segments) == [
        ("text", 1),
        ("image", (1, 2, 2)),
        ("text", 1),
        ("text", 4),
        ("text", 1),
        ("video", (2, 2, 2)),
        ("text", 1),
    ]
    with pytest.raises(TypeError, match="segments"):
        with_vision_markers("text")
    with pytest.raises(ValueError, match="kind"):
        with_vision_markers([("audio", 3)])


@pytest.mark.parametrize(("d_head", "base"), [(80, 10000.0), (64, 10000.0), (16, 500.0)])
def test_vision_axial_inv_freq_matches_transformers(d_head, base):
    from transformers.models.qwen2_vl.configuration_qwen2_vl import Qwen2VLVisionConfig
    from transformers.models.qwen2_vl.modeling_qwen2_vl import Qwen2VLVisionRotaryEmbedding

    config = Qwen2VLVisionConfig(
        embed_dim=d_head * 2,
        num_heads=2,
        rope_parameters={"rope_type": "axial", "rope_theta": base},
    )
    expected, _ = Qwen2VLVisionRotaryEmbedding.compute_axial_rope_parameters(config)
    got = vision_axial_inv_freq(d_head, base)
    assert got.shape == (d_head // 4,) and torch.equal(got, expected)
    # the exponent's denominator is d_head / 2: the text decoder's base^(-2k/d) is not it
    assert not torch.allclose(got, rope_inv_freq(d_head, base)[: d_head // 4])


def test_vision_axial_inv_freq_errors():
    with pytest.raises(ValueError, match="multiple of 4"):
        vision_axial_inv_freq(18)
    with pytest.raises(ValueError, match="base"):
        vision_axial_inv_freq(16, 0.0)
    with pytest.raises(TypeError, match="d_head"):
        vision_axial_inv_freq(16.0)


# ------------------------------------------------------------------ segment_spans


def test_segment_spans_counts_merged_tokens_in_order():
    spans = segment_spans([("text", 3), ("video", (3, 4, 6)), ("image", (1, 2, 2))])
    assert spans == [
        SegmentSpan("text", 0, 3, None),
        SegmentSpan("video", 3, 3 + 3 * 2 * 3, (3, 2, 3)),
        SegmentSpan("image", 21, 22, (1, 1, 1)),
    ]
    assert segment_spans([("image", (1, 3, 3))], spatial_merge_size=1)[0].stop == 9


@given(
    grids=st.lists(
        st.tuples(st.integers(1, 4), st.integers(1, 4), st.integers(1, 4)), min_size=1, max_size=4
    ),
    text=st.integers(1, 5),
)
def test_segment_spans_tile_the_sequence(grids, text):
    segments = []
    for t, h, w in grids:
        segments += [("text", text), ("video", (t, 2 * h, 2 * w))]
    spans = segment_spans(segments)
    assert spans[0].start == 0
    assert all(a.stop == b.start for a, b in itertools.pairwise(spans))
    assert spans[-1].stop == len(grids) * text + sum(t * h * w for t, h, w in grids)


def test_segment_spans_rejects_bad_segments():
    with pytest.raises(ValueError, match="kind"):
        segment_spans([("audio", 3)])
    with pytest.raises(ValueError, match="divisible"):
        segment_spans([("image", (1, 3, 4))])
    with pytest.raises(TypeError, match="patch grid"):
        segment_spans([("image", (4, 4))])
    with pytest.raises(ValueError, match="segments"):
        segment_spans([])
    with pytest.raises(TypeError, match="segments"):
        segment_spans([3])
    with pytest.raises(TypeError, match="text length"):
        segment_spans([("text", 2.5)])
    with pytest.raises(ValueError, match="spatial_merge_size"):
        segment_spans([("text", 2)], spatial_merge_size=0)


def test_segment_spans_match_the_position_ids():
    """Every span's tokens are where mrope_position_ids puts that segment (text: equal rows)."""
    ids = mrope_position_ids(EXAMPLE)
    spans = segment_spans(EXAMPLE)
    assert spans[-1].stop == ids.shape[1]
    for span in spans:
        block = ids[:, span.start : span.stop]
        equal_rows = bool((block[0] == block[1]).all() and (block[1] == block[2]).all())
        assert equal_rows == (span.kind == "text")


# ------------------------------------------------------------ Qwen2.5-VL time-spaced video ids


@pytest.mark.parametrize("fps", [1.0, 1.5, 2.0, 4.0, 0.5])
@pytest.mark.parametrize("grid", [(4, 2, 2), (3, 4, 6)])
def test_time_spaced_video_ids_match_transformers_qwen2_5_vl(fps, grid):
    from transformers.models.qwen2_5_vl.modeling_qwen2_5_vl import Qwen2_5_VLModel

    from lib.mrope import video_time_interval

    interval = video_time_interval(fps, tokens_per_second=2, temporal_patch_size=2)
    start = 3
    expected = Qwen2_5_VLModel.get_vision_position_ids(
        None, start, torch.tensor(grid), 1, 2, 2 * (2 / fps)
    )  # tokens_per_second · second_per_grid_t, as get_rope_index passes it
    ours = mrope_position_ids([("text", start), ("video", grid)], time_interval=interval)
    assert torch.equal(ours[:, start:], expected)


def test_time_spaced_ids_pinned_and_quantised_after_multiplying():
    from lib.mrope import video_time_interval

    assert video_time_interval(1.0, tokens_per_second=25, temporal_patch_size=2) == 50.0
    r = video_time_interval(1.5)  # 2 · 2 / 1.5 = 2.67 ids per temporal patch
    ids = mrope_position_ids([("video", (4, 2, 2))], time_interval=r)
    assert ids[0, ::1].unique().tolist() == [0, 2, 5, 8]  # ⌊a · 2.67⌋, not a · ⌊2.67⌋
    # an image ignores the interval (it has no time), text after a video starts after its max
    mixed = mrope_position_ids([("image", (2, 2, 2)), ("video", (4, 2, 2)), ("text", 1)],
                               time_interval=r)  # fmt: skip
    assert mixed[0, :2].tolist() == [0, 1]
    assert mixed[0, -1].item() == mixed[:, :-1].max().item() + 1


def test_time_interval_errors():
    from lib.mrope import video_time_interval

    with pytest.raises(ValueError, match="fps"):
        video_time_interval(0.0)
    with pytest.raises(ValueError, match="time_interval"):
        mrope_position_ids([("video", (2, 2, 2))], time_interval=0.0)
