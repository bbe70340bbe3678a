"""Multimodal RoPE (M-RoPE): three position ids (t, h, w) per token, one per frequency slot.

M-RoPE (Wang et al. 2024, *Qwen2-VL*, arXiv:2409.12191, §2.1) gives every token three position ids —
temporal t, height h and width w — and lets each of the d_head/2 RoPE frequency slots take its angle
from one of them. Text tokens have t = h = w, so for text M-RoPE is exactly 1-D RoPE. The angles'
cos/sin then go through :func:`lib.rope.apply_rope` unchanged (transformers' Qwen2-VL / Qwen3-VL
use the "half" pairing).

Which slot uses which axis (:func:`mrope_slot_axes`):

- ``layout="chunked"`` (Qwen2-VL, Qwen2.5-VL): consecutive sections — the first ``sections[0]``
  slots (the highest frequencies) use t, the next ``sections[1]`` use h, the last ``sections[2]`` use
  w; Qwen2-VL uses [16, 24, 24] of 64 slots.
- ``layout="interleaved"`` (Qwen3-VL, Bai et al. 2025, arXiv:2511.21631): slot j uses h if
  j ≡ 1 (mod 3) and j < 3·sections[1], w if j ≡ 2 (mod 3) and j < 3·sections[2], and t otherwise —
  the slots cycle t, h, w while h and w have slots left, and the rest use t; Qwen3-VL uses
  [24, 20, 20]. This is transformers' ``Qwen3VLTextRotaryEmbedding`` (5.x) /
  ``apply_interleaved_mrope`` (4.x).

Position ids of an interleaved text/image/video sequence (:func:`mrope_position_ids`) follow the
Qwen2-VL paper and transformers 4.x ``Qwen2VLForConditionalGeneration.get_rope_index``: text counts
up on all three rows; a vision segment with merged grid (t, h/m, w/m) gets start + (t_idx, h_idx,
w_idx) in row-major order; every segment starts at 1 + the largest id used so far.

Version notes (checked against transformers 5.24):

- transformers 5.x ``Qwen2VLModel.get_rope_index`` (checked in 5.24) advances the running position
  after an image or video by ``max(h, w) // spatial_merge_size`` instead of to 1 + the largest id
  used, a deviation from the paper and from 4.x (transformers issue #45381, sometimes quoted for it,
  is about Qwen2.5-VL's temporal ids inside a video and was closed by PR #45400). The two rules
  agree for images (t = 1) and for videos with t ≤ max(h/m, w/m); for a video with more temporal
  patches than its merged height and width, 5.x starts the next segment at start + max(h/m, w/m),
  below the video's last temporal id start + t − 1, so the following text re-uses temporal ids of
  the video. :func:`mrope_position_ids` keeps the paper's / 4.x rule.
- Qwen2.5-VL (Bai et al. 2025, arXiv:2502.13923) spaces a video's temporal ids by real time:
  t_id = ⌊t_idx · tokens_per_second · second_per_grid_t⌋ (transformers ``Qwen2_5_VLModel``), images
  unscaled: ``mrope_position_ids(..., time_interval=video_time_interval(fps))``.
- Qwen3-VL splits a video into single-frame grids separated by textual timestamps; give each frame
  as its own ``("video", (1, h, w))`` segment with the timestamp text between them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

from lib._checks import (
    check_choice,
    check_floating,
    check_int,
    check_ndim,
    check_positions,
    check_positive_float,
    check_positive_int,
)
from lib.rope import rope_angles

__all__ = [
    "MROPE_LAYOUTS",
    "SEGMENT_KINDS",
    "SegmentSpan",
    "mrope_angles",
    "mrope_position_ids",
    "mrope_slot_axes",
    "segment_spans",
    "video_time_interval",
    "vision_axial_inv_freq",
    "with_vision_markers",
]

MROPE_LAYOUTS: tuple[str, ...] = ("chunked", "interleaved")
SEGMENT_KINDS: tuple[str, ...] = ("text", "image", "video")


def _check_segment(index: int, segment: object, spatial_merge_size: int) -> tuple[str, tuple]:
    name = f"segments[{index}]"
    if isinstance(segment, (str, bytes)) or not isinstance(segment, Sequence) or len(segment) != 2:
        raise TypeError(
            f"{name} must be a pair (kind, size) such as ('text', 5) or ('image', (1, 4, 6)), "
            f"got {segment!r}"
        )
    kind, size = segment
    check_choice(f"{name} kind", kind, SEGMENT_KINDS)
    if kind == "text":
        return kind, (check_positive_int(f"{name} text length", size),)
    if isinstance(size, (str, bytes)) or not isinstance(size, Sequence) or len(size) != 3:
        raise TypeError(f"{name} {kind} size must be a (t, h, w) patch grid, got {size!r}")
    t, h, w = (check_positive_int(f"{name} {axis}", v) for axis, v in zip("thw", size, strict=True))
    for axis, v in (("h", h), ("w", w)):
        if v % spatial_merge_size:
            raise ValueError(
                f"{name} {axis} = {v} must be divisible by spatial_merge_size = "
                f"{spatial_merge_size} (the grid is given before merging)"
            )
    return kind, (t, h, w)


def _check_segments(segments: object, spatial_merge_size: int) -> list[tuple[str, tuple]]:
    """Every segment checked by :func:`_check_segment`; ``segments`` a non-empty sequence."""
    if isinstance(segments, (str, bytes)) or not isinstance(segments, Sequence):
        raise TypeError(f"segments must be a sequence of (kind, size) pairs, got {segments!r}")
    if len(segments) == 0:
        raise ValueError("segments must not be empty")
    return [_check_segment(i, seg, spatial_merge_size) for i, seg in enumerate(segments)]


def mrope_position_ids(
    segments: Sequence[tuple[str, int | tuple[int, int, int]]],
    *,
    spatial_merge_size: int = 2,
    time_interval: float = 1.0,
) -> torch.Tensor:
    """(t, h, w) position ids of an interleaved text / image / video sequence, Qwen2-VL's rule.

    Follows Qwen2-VL §2.1 and transformers 4.x ``get_rope_index``. See the module docstring for
    where transformers 5.x and Qwen2.5-VL differ.

    Equation:
        a segment starts at s = 0 (first) or 1 + the largest id so far on any row;
        text token k of a segment gets (s + k, s + k, s + k);
        a vision segment with patch grid (t, h, w) and merge m has t·(h/m)·(w/m) tokens, token
        (a, b, c) in row-major order getting (s + a, s + b, s + c); for a video with
        ``time_interval`` r: (s + ⌊a·r⌋, s + b, s + c)

    Args:
        segments: a non-empty sequence of ``("text", n_tokens)``, ``("image", (t, h, w))`` or
            ``("video", (t, h, w))``, with (t, h, w) the patch grid *before* the spatial merge
            (what transformers calls ``image_grid_thw`` / ``video_grid_thw``).
        spatial_merge_size: m, an int >= 1 that divides every h and w.
        time_interval: Qwen2.5-VL's spacing of a *video's* temporal ids, a number > 0
            (:func:`video_time_interval`): temporal patch a gets t id s + ⌊a · interval⌋. Images
            keep interval 1 (they have no time). 1.0, the default, is Qwen2-VL.

    Returns:
        The position ids, a LongTensor with rows t, h, w.

    Raises:
        TypeError: ``segments`` or one of them of the wrong type.
        ValueError: empty ``segments``, an unknown kind, or sizes that are < 1 or not divisible
            by ``spatial_merge_size``.

    Shapes:
        returns: [3, T], T the total number of tokens

    References:
        Wang et al., Qwen2-VL, arXiv:2409.12191.
    """
    spatial_merge_size = check_positive_int("spatial_merge_size", spatial_merge_size)
    time_interval = check_positive_float("time_interval", time_interval)
    checked = _check_segments(segments, spatial_merge_size)

    blocks: list[torch.Tensor] = []
    start = 0
    for kind, size in checked:
        if kind == "text":
            ids = torch.arange(size[0]).expand(3, -1) + start  # [3, n]: same id on every row
        else:
            t, h, w = size
            grid = (t, h // spatial_merge_size, w // spatial_merge_size)
            t_idx, h_idx, w_idx = torch.meshgrid(
                *(torch.arange(n) for n in grid), indexing="ij"
            )  # each [t, h/m, w/m]
            if kind == "video" and time_interval != 1.0:  # Qwen2.5-VL: t ids on a clock
                t_idx = (t_idx * time_interval).long()  # quantised after multiplying
            ids = torch.stack((t_idx, h_idx, w_idx)).reshape(3, -1) + start  # row-major tokens
        blocks.append(ids)
        start = int(ids.max()) + 1
    return torch.cat(blocks, dim=1)


def video_time_interval(
    fps: float, *, tokens_per_second: float = 2.0, temporal_patch_size: int = 2
) -> float:
    """Qwen2.5-VL's step between the temporal ids of consecutive temporal patches of a video.

    One temporal patch covers ``temporal_patch_size`` frames, i.e. ``temporal_patch_size / fps``
    seconds (the processor's ``second_per_grid_ts``); ``tokens_per_second`` ids are spent per second
    of video, so the ids of two videos sampled at different rates run on one clock. The ids are
    quantised *after* multiplying by the patch index (:func:`mrope_position_ids`), so a fractional
    interval still advances on average by the right amount (transformers PR #48669 fixed a
    version that truncated the interval itself).

    Equation:
        interval = tokens_per_second · temporal_patch_size / fps

    Args:
        fps: the sampling rate of the video's frames, a number > 0.
        tokens_per_second: ids per second of video, > 0 (Qwen2.5-VL's released vision config: 2).
        temporal_patch_size: frames per temporal patch, a positive int (Qwen2.5-VL: 2).

    Returns:
        The interval, a float.

    Raises:
        TypeError: a non-numeric argument.
        ValueError: a non-positive argument.

    References:
        Qwen Team, Qwen2.5-VL Technical Report, arXiv:2502.13923 (absolute time encoding);
        transformers ``Qwen2_5_VLModel.get_rope_index``.
    """
    fps = check_positive_float("fps", fps)
    tokens_per_second = check_positive_float("tokens_per_second", tokens_per_second)
    temporal_patch_size = check_positive_int("temporal_patch_size", temporal_patch_size)
    return tokens_per_second * temporal_patch_size / fps


def with_vision_markers(
    segments: Sequence[tuple[str, int | tuple[int, int, int]]],
) -> list[tuple[str, int | tuple[int, int, int]]]:
    """``segments`` with ``<|vision_start|>`` and ``<|vision_end|>`` around each vision span.

    Qwen2-VL's chat template and processor wrap every image or video in a start and an end token;
    both are ordinary text tokens for M-RoPE (one id on all three rows), so
    ``mrope_position_ids(with_vision_markers(segments))`` equals transformers' ``get_rope_index`` on
    the token ids the processor builds (4.x; 5.x where its rule agrees). Each marker becomes its
    own ``("text", 1)`` segment, so figures can show it.

    Args:
        segments: as :func:`mrope_position_ids`.

    Returns:
        The segments with the markers, a new list.

    Raises:
        TypeError, ValueError: as :func:`mrope_position_ids` for a malformed segment.

    Shapes:
        returns: len(segments) + 2 · (number of vision segments) segments

    References:
        Wang et al., Qwen2-VL, arXiv:2409.12191.
    """
    if isinstance(segments, (str, bytes)) or not isinstance(segments, Sequence):
        raise TypeError(f"segments must be a sequence of (kind, size) pairs, got {segments!r}")
    out: list[tuple[str, int | tuple[int, int, int]]] = []
    for i, segment in enumerate(segments):
        kind, size = _check_segment(i, segment, 1)
        if kind == "text":
            out.append(("text", size[0]))
        else:
            out += [("text", 1), (kind, size), ("text", 1)]
    return out


def vision_axial_inv_freq(
    d_head: int, base: float = 10000.0, *, device: torch.device | str | None = None
) -> torch.Tensor:
    """Inverse frequencies of Qwen2-VL's *vision encoder* 2-D RoPE (axial, same for h and w).

    transformers' ``Qwen2VLVisionRotaryEmbedding`` ("simple axial 2D rope with same freqs used for
    H and W grids"): the ``d_head/4`` frequencies rotate the patch's row in the first quarter of the
    slots and its column in the second (the vision tower's default base is 10 000). The exponent's
    denominator is ``d_head/2``, not ``d_head``, so the frequencies span the whole range from 1 down
    to about ``1/base``. Computed in float32, as transformers does.

    Equation:
        s = d_head / 2 dimensions per axis;  θ_k = base^(−2k/s) = base^(−4k/d_head),
        k = 0 … s/2 − 1

    Args:
        d_head: head dimension of the vision tower, a positive multiple of 4.
        base: the frequency base, a finite number > 0.
        device: where to build the result (default: torch's default device).

    Returns:
        θ as float32.

    Raises:
        TypeError, ValueError: ``d_head`` not a positive multiple of 4; ``base`` not > 0.

    Shapes:
        returns: [d_head // 4]

    References:
        Wang et al., Qwen2-VL, arXiv:2409.12191.
    """
    d_head = check_positive_int("d_head", d_head)
    if d_head % 4:
        raise ValueError(f"d_head must be a multiple of 4 (two axes, pairs of dims), got {d_head}")
    base = check_positive_float("base", base)
    spatial = d_head // 2
    exponents = torch.arange(0, spatial, 2, dtype=torch.float32, device=device) / spatial
    return 1.0 / (base**exponents)


def _check_sections(sections: object) -> tuple[int, int, int]:
    if isinstance(sections, torch.Tensor):
        sections = sections.tolist()
    if isinstance(sections, (str, bytes)) or not isinstance(sections, Sequence):
        raise TypeError(f"sections must be a sequence of 3 ints (t, h, w), got {sections!r}")
    if len(sections) != 3:
        raise ValueError(f"sections must have 3 entries (t, h, w), got {list(sections)}")
    t, h, w = (check_int(f"sections[{i}]", s, minimum=0) for i, s in enumerate(sections))
    return t, h, w


def mrope_slot_axes(sections: Sequence[int], layout: str = "chunked") -> torch.Tensor:
    """Which position row (0 = t, 1 = h, 2 = w) each frequency slot reads.

    Equation:
        "chunked" (Qwen2-VL): axis(j) = 0 for j < s_t, 1 for s_t ≤ j < s_t + s_h, 2 after.
        "interleaved" (Qwen3-VL, transformers ``Qwen3VLTextRotaryEmbedding``): axis(j) = 1 if
        j mod 3 = 1 and j < 3 s_h, 2 if j mod 3 = 2 and j < 3 s_w, else 0.

    Args:
        sections: (s_t, s_h, s_w), three ints >= 0, not all 0.
        layout: ``"chunked"`` or ``"interleaved"`` (see :data:`MROPE_LAYOUTS`).

    Returns:
        The axis of every slot, a LongTensor.

    Raises:
        TypeError: ``sections`` not a sequence of ints.
        ValueError: not 3 sections, all 0, an unknown ``layout``, or an interleaved layout whose h
            or w slots would run past the last slot (needs 3·s_h ≤ d_half + 1 and 3·s_w ≤ d_half).

    Shapes:
        returns: [s_t + s_h + s_w]  (= d_head // 2)

    References:
        Wang et al., Qwen2-VL, arXiv:2409.12191. Bai et al., Qwen3-VL, arXiv:2511.21631.
    """
    s_t, s_h, s_w = _check_sections(sections)
    layout = check_choice("layout", layout, MROPE_LAYOUTS)
    d_half = s_t + s_h + s_w
    if d_half == 0:
        raise ValueError("sections must not all be 0")
    if layout == "chunked":
        return torch.repeat_interleave(torch.arange(3), torch.tensor([s_t, s_h, s_w]))
    if 3 * s_h > d_half + 1 or 3 * s_w > d_half:
        raise ValueError(
            f"sections {[s_t, s_h, s_w]} do not fit the interleaved layout: h and w take every "
            f"third slot, so 3*sections[1] <= d_head // 2 + 1 and 3*sections[2] <= d_head // 2 "
            f"(d_head // 2 = {d_half}); give t more slots"
        )
    axes = torch.zeros(d_half, dtype=torch.long)
    axes[1 : 3 * s_h : 3] = 1  # slots 1, 4, 7, ... while h has slots left
    axes[2 : 3 * s_w : 3] = 2  # slots 2, 5, 8, ... while w has slots left
    return axes


def mrope_angles(
    position_ids: torch.Tensor,
    inv_freq: torch.Tensor,
    sections: Sequence[int],
    *,
    layout: str = "chunked",
) -> torch.Tensor:
    """M-RoPE angles: slot j rotates by (position on its axis) · θ_j.

    When the three rows are equal this is exactly :func:`lib.rope.rope_angles`. Computed in float32
    (see ``rope_angles``); the cos/sin then go through :func:`lib.rope.apply_rope` unchanged.

    Equation:
        angles[..., n, j] = position_ids[axis(j), ..., n] · θ_j,  axis(j) from :func:`mrope_slot_axes`

    Args:
        position_ids: integer or float32/float64 positions with rows t, h, w in dim 0.
        inv_freq: θ, a 1-D floating tensor.
        sections: (s_t, s_h, s_w), summing to ``len(inv_freq)``.
        layout: ``"chunked"`` or ``"interleaved"``.

    Returns:
        The angles, float32.

    Raises:
        TypeError: wrong dtypes.
        ValueError: ``position_ids`` not ``[3, ..., T]``, ``inv_freq`` not 1-D, or sections that
            do not sum to ``len(inv_freq)`` (see also :func:`mrope_slot_axes`).

    Shapes:
        position_ids: [3, ..., T]  (e.g. [3, B, T])
        inv_freq: [d_head // 2]
        returns: [..., T, d_head // 2]

    References:
        Wang et al., Qwen2-VL, arXiv:2409.12191. Bai et al., Qwen3-VL, arXiv:2511.21631.
    """
    check_positions("position_ids", position_ids)
    check_ndim("position_ids", position_ids, minimum=2)
    if position_ids.shape[0] != 3:
        raise ValueError(
            f"position_ids must be [3, ..., T] (rows t, h, w), got shape "
            f"{tuple(position_ids.shape)}"
        )
    check_floating("inv_freq", inv_freq)
    if inv_freq.dim() != 1:
        raise ValueError(f"inv_freq must be 1-D [d_head // 2], got shape {tuple(inv_freq.shape)}")
    d_half = inv_freq.shape[0]
    section_sizes = _check_sections(sections)
    if sum(section_sizes) != d_half:
        raise ValueError(
            f"sections {list(section_sizes)} must sum to d_head // 2 = {d_half} "
            f"(the length of inv_freq), got {sum(section_sizes)}"
        )
    axes = mrope_slot_axes(section_sizes, layout).to(position_ids.device)
    per_axis = rope_angles(position_ids, inv_freq)  # [3, ..., T, d_half]
    index = axes.expand(1, *per_axis.shape[1:])  # [1, ..., T, d_half]: the row each slot reads
    return per_axis.gather(0, index).squeeze(0)  # [..., T, d_half]


@dataclass(frozen=True)
class SegmentSpan:
    """One segment's place in the token sequence: tokens ``start … stop − 1``.

    ``grid`` is the merged vision grid ``(t, h/m, w/m)`` (``None`` for text).

    Attributes:
        kind: ``"text"``, ``"image"`` or ``"video"``.
        start: index of the segment's first token.
        stop: one past the index of its last token.
        grid: the merged vision grid ``(t, h/m, w/m)``, or None for text.
    """

    kind: str
    start: int
    stop: int
    grid: tuple[int, int, int] | None


def segment_spans(
    segments: Sequence[tuple[str, int | tuple[int, int, int]]], *, spatial_merge_size: int = 2
) -> list[SegmentSpan]:
    """Where each segment's tokens sit in the sequence of :func:`mrope_position_ids`.

    Text holds n tokens; a vision segment with patch grid (t, h, w) before merging holds
    t·(h/m)·(w/m) tokens in row-major (t, h, w) order, checked by the same rules as
    :func:`mrope_position_ids`.

    Equation:
        tokens(text n) = n,  tokens(vision (t, h, w)) = t · (h/m) · (w/m)

    Args:
        segments: ``("text", n)``, ``("image", (t, h, w))`` or ``("video", (t, h, w))`` items.
        spatial_merge_size: m, an int >= 1 that divides every h and w.

    Returns:
        One :class:`SegmentSpan` per segment, in order; they tile ``0 … T − 1``.

    Raises:
        TypeError: ``segments`` or an item is not a sequence, a size is not an int.
        ValueError: empty ``segments``, an unknown kind, h or w not divisible by m.

    References:
        Wang et al., Qwen2-VL, arXiv:2409.12191.
    """
    spatial_merge_size = check_positive_int("spatial_merge_size", spatial_merge_size)
    spans, cursor = [], 0
    for kind, size in _check_segments(segments, spatial_merge_size):
        if kind == "text":
            grid, n = None, size[0]
        else:
            grid = (size[0], size[1] // spatial_merge_size, size[2] // spatial_merge_size)
            n = grid[0] * grid[1] * grid[2]
        spans.append(SegmentSpan(kind, cursor, cursor + n, grid))
        cursor += n
    return spans
