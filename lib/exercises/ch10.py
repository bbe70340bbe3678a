"""Exercise checkers for chapter 10, M-RoPE (Wang et al. 2024, *Qwen2-VL*).

- ``ch10-next-text-start``: where text resumes after a long video (with its vision start/end
  tokens), under Qwen2-VL's rule (transformers 4.x).
- ``ch10-interleaved-axes``: which axis each frequency slot reads in Qwen3-VL's interleaved layout.
- ``ch10-chunked-angles``: M-RoPE angles with chunked sections, computed without ``mrope_angles``.

References:
    Wang et al., Qwen2-VL, arXiv:2409.12191.
"""

from __future__ import annotations

import torch

from lib.exercises import ExerciseFailed, exercise, require, require_int, require_tensor
from lib.mrope import mrope_angles, mrope_position_ids, mrope_slot_axes, with_vision_markers
from lib.rope import rope_angles, rope_inv_freq

CHAPTER = "10_mrope"


def _long_tensor(answer: object, what: str) -> torch.Tensor:
    """The answer as an int64 tensor, or an AssertionError that says what was expected."""
    if isinstance(answer, torch.Tensor):
        require(
            not answer.is_floating_point() and not answer.is_complex(),
            f"expected {what} as integers, got a tensor of dtype {answer.dtype}",
        )
        return answer.detach().to(torch.int64).cpu()
    try:
        return torch.as_tensor(answer, dtype=torch.int64)
    except (TypeError, ValueError, RuntimeError):
        raise ExerciseFailed(
            f"expected {what} (a nested list of ints or a tensor), got {type(answer).__name__}"
        ) from None


# ---------------------------------------------------------------- 1. where text resumes

#: text, then a video (patch grid before merging), then text; the processor wraps the video in
#: <|vision_start|> ... <|vision_end|>, two ordinary text tokens.
NEXT_SEGMENTS: list[tuple[str, int | tuple[int, int, int]]] = [
    ("text", 5),
    ("video", (16, 8, 8)),
    ("text", 1),
]
NEXT_MERGE = 2


def _next_right() -> int:
    """Id of the first text token after <|vision_end|>, Qwen2-VL's rule (transformers 4.x)."""
    ids = mrope_position_ids(with_vision_markers(NEXT_SEGMENTS), spatial_merge_size=NEXT_MERGE)
    return int(ids[0, -1])


def _next_buggy() -> int:
    """What transformers 5.x's get_rope_index gives: start + max(h, w)/m, then +1."""
    video_start = 5 + 1  # after the 5 text ids and <|vision_start|>
    return video_start + max(8, 8) // NEXT_MERGE + 1


def _next_wrong() -> list:
    right = _next_right()
    n_video_tokens = 16 * 4 * 4
    return [
        right - 2,  # without the two marker tokens
        right - 1,  # the id of <|vision_end|> itself
        5 + 1 + n_video_tokens + 1,  # counting tokens like 1-D text
        _next_buggy(),
        (right, right),  # not an int
        "23",
    ]


@exercise(
    "ch10-next-text-start",
    chapter=CHAPTER,
    wrong_answers=_next_wrong,
    right_answer=_next_right,
)
def check_next_text_start(answer: object) -> None:
    """``answer``: an int, the id of the first text token after text 5 / video (16, 8, 8).

    Args:
        answer: the position id, an int.

    Raises:
        ExerciseFailed: the answer is wrong (the message says what to look at).
    """
    require_int(
        answer, f"expected one position id (an int), got {type(answer).__name__} {answer!r}"
    )
    right = _next_right()
    if answer == right:
        return
    require(
        answer != 5 + 1 + 16 * 4 * 4 + 1,
        "M-RoPE does not count the video's tokens: the text resumes after the largest id the "
        "video used on any row",
    )
    require(
        answer != right - 2,
        "the video is wrapped in <|vision_start|> and <|vision_end|>, two text tokens with an id "
        "each",
    )
    require(
        answer != right - 1,
        "that is the id of <|vision_end|>; the text comes one after it",
    )
    require(
        answer != _next_buggy(),
        "that is what transformers 5.x's get_rope_index gives (it deviates from the paper and "
        "from 4.x): it ignores the video's t extent; Qwen2-VL's rule starts after the largest id "
        "on any row",
    )
    raise ExerciseFailed(
        f"{answer} is not it: ids 0–4 for the text, 5 for <|vision_start|>, then the video from 6 "
        "to 6 + max(t, h/m, w/m) − 1 on some row, then <|vision_end|>, then the text"
    )


# ---------------------------------------------------------------- 2. interleaved axes

INTERLEAVED_D_HALF = 64
INTERLEAVED_SECTIONS = (24, 20, 20)


def _interleaved_right() -> torch.Tensor:
    axes = mrope_slot_axes(INTERLEAVED_SECTIONS, layout="interleaved")
    return torch.as_tensor(axes, dtype=torch.int64)


def _interleaved_wrong() -> list:
    chunked = torch.as_tensor(mrope_slot_axes(INTERLEAVED_SECTIONS, layout="chunked"))
    return [
        chunked.tolist(),  # Qwen2-VL's layout
        [j % 3 for j in range(INTERLEAVED_D_HALF)],  # cycling all the way, no tail for t
        [0] * INTERLEAVED_D_HALF,  # text-only thinking
        [j % 3 for j in range(60)],  # wrong length
    ]


@exercise(
    "ch10-interleaved-axes",
    chapter=CHAPTER,
    wrong_answers=_interleaved_wrong,
    right_answer=lambda: _interleaved_right().tolist(),
)
def check_interleaved_axes(answer: object) -> None:
    """``answer``: 64 ints (0 = t, 1 = h, 2 = w), the axis of each slot, sections [24, 20, 20].

    Args:
        answer: 64 axis numbers, a list or an integer tensor.

    Raises:
        ExerciseFailed: the answer is wrong (the message says what to look at).
    """
    got = _long_tensor(answer, "64 axis numbers").flatten()
    require(
        got.numel() == INTERLEAVED_D_HALF,
        f"expected one axis per frequency slot, d_head/2 = 64 of them, got {got.numel()}",
    )
    right = _interleaved_right()
    if torch.equal(got, right):
        return
    counts = [int((got == a).sum()) for a in range(3)]
    require(
        counts == list(INTERLEAVED_SECTIONS),
        f"the sections give t, h, w {INTERLEAVED_SECTIONS} slots each; your answer gives "
        f"{tuple(counts)}",
    )
    require(
        not torch.equal(got, torch.as_tensor(mrope_slot_axes(INTERLEAVED_SECTIONS))),
        "that is the chunked layout of Qwen2-VL; Qwen3-VL interleaves the axes slot by slot",
    )
    raise ExerciseFailed(
        "the counts are right but the order is not: slots cycle t, h, w while h and w still have "
        "slots left; the remaining slots at the slow end all go to t"
    )


# ---------------------------------------------------------------- 3. chunked angles by hand

ANGLES_SEGMENTS: list[tuple[str, int | tuple[int, int, int]]] = [
    ("text", 2),
    ("image", (1, 4, 4)),
    ("video", (2, 2, 4)),
    ("text", 1),
]
ANGLES_D_HEAD = 16
ANGLES_SECTIONS = (2, 3, 3)


def angles_inputs() -> tuple[torch.Tensor, torch.Tensor]:
    """The exercise's inputs: position ids ``[3, T]`` and ``inv_freq [8]`` (base 10000).

    Returns:
        ``(position_ids, inv_freq)``: the M-RoPE ids of the exercise's segments
        (:func:`lib.mrope.mrope_position_ids`) and the RoPE inverse frequencies for
        ``d_head = 16`` (:func:`lib.rope.rope_inv_freq`).

    Shapes:
        -> position_ids: [3, T], inv_freq: [8]
    """
    return mrope_position_ids(ANGLES_SEGMENTS), rope_inv_freq(ANGLES_D_HEAD)


def _angles_right() -> torch.Tensor:
    ids, inv_freq = angles_inputs()
    return mrope_angles(ids, inv_freq, ANGLES_SECTIONS, layout="chunked")


def _angles_wrong() -> list:
    ids, inv_freq = angles_inputs()
    return [
        rope_angles(ids[0], inv_freq),  # t row only
        mrope_angles(ids, inv_freq, (3, 3, 2), layout="chunked"),  # wrong section sizes
        mrope_angles(ids[[2, 1, 0]], inv_freq, ANGLES_SECTIONS, layout="chunked"),  # rows reversed
        _angles_right()[:, :4].clone(),
    ]


@exercise(
    "ch10-chunked-angles",
    chapter=CHAPTER,
    wrong_answers=_angles_wrong,
    right_answer=_angles_right,
)
def check_chunked_angles(answer: object) -> None:
    """``answer``: a float tensor ``[T, 8]``, chunked M-RoPE angles with sections (2, 3, 3).

    Args:
        answer: the angles, a floating tensor ``[T, 8]``.

    Raises:
        ExerciseFailed: the answer is wrong (the message says what to look at).
    """
    answer = require_tensor(
        answer, f"expected a floating tensor [T, 8], got {type(answer).__name__}", kind="floating"
    )
    right = _angles_right()
    require(
        tuple(answer.shape) == tuple(right.shape),
        f"expected shape {list(right.shape)}: one row per token, one angle per frequency slot "
        f"(d_head/2 = 8), got {list(answer.shape)}",
    )
    got = answer.detach().double().cpu()
    if torch.allclose(got, right.double(), rtol=1e-5, atol=1e-6):
        return
    ids, inv_freq = angles_inputs()
    if torch.allclose(got, rope_angles(ids[0], inv_freq).double(), rtol=1e-5, atol=1e-6):
        raise ExerciseFailed(
            "these are 1-D RoPE angles of the t row; slots 2–4 must read h, slots 5–7 read w"
        )
    slots = [range(0, 2), range(2, 5), range(5, 8)]
    for axis, name in enumerate("thw"):
        cols = list(slots[axis])
        if not torch.allclose(got[:, cols], right[:, cols].double(), rtol=1e-5, atol=1e-6):
            raise ExerciseFailed(
                f"slots {cols[0]}–{cols[-1]} should be the {name} ids times inv_freq of those "
                "slots (chunked sections [2, 3, 3] in the order t, h, w)"
            )
    raise ExerciseFailed("not the chunked M-RoPE angles")


# ---------------------------------------------------------------- 4. Qwen2.5-VL time ids

#: a video of TIME_FRAMES frames sampled at TIME_FPS, Qwen2.5-VL's tokens_per_second and
#: temporal_patch_size (released vision config)
TIME_FRAMES = 12
TIME_FPS = 1.5
TIME_TOKENS_PER_SECOND = 2
TIME_TEMPORAL_PATCH = 2


def _time_right() -> list[int]:
    """Relative t ids of the temporal patches: ⌊a · interval⌋, interval = tps · patch / fps."""
    interval = TIME_TOKENS_PER_SECOND * TIME_TEMPORAL_PATCH / TIME_FPS
    return [int(a * interval) for a in range(TIME_FRAMES // TIME_TEMPORAL_PATCH)]


def _time_wrong() -> list:
    n = TIME_FRAMES // TIME_TEMPORAL_PATCH
    interval = TIME_TOKENS_PER_SECOND * TIME_TEMPORAL_PATCH / TIME_FPS
    return [
        list(range(n)),  # Qwen2-VL: one id per temporal patch
        [a * int(interval) for a in range(n)],  # interval truncated first
        [round(a * interval) for a in range(n)],  # rounded, not floored
        list(range(TIME_FRAMES)),  # one id per frame
        "0, 2, 5",
    ]


@exercise(
    "ch10-time-ids",
    chapter=CHAPTER,
    wrong_answers=_time_wrong,
    right_answer=_time_right,
)
def check_time_ids(answer: object) -> None:
    """``answer``: the t ids, relative to the video's start, of each temporal patch.

    Equation:
        t_a = ⌊a · tokens_per_second · temporal_patch_size / fps⌋

    Args:
        answer: a list (or 1-D tensor) of ints, one per temporal patch.

    Raises:
        ExerciseFailed: the answer is wrong (the message says what to look at).

    References:
        Qwen Team, Qwen2.5-VL, arXiv:2502.13923; transformers ``Qwen2_5_VLModel.get_rope_index``.
    """
    got = _long_tensor(answer, "one t id per temporal patch").flatten().tolist()
    right = _time_right()
    if got == right:
        return
    n = len(right)
    require(
        len(got) == n,
        f"the video has {TIME_FRAMES} frames in patches of "
        f"{TIME_TEMPORAL_PATCH}: {n} temporal patches, so {n} ids, got {len(got)}",
    )
    require(got != list(range(n)), "that is Qwen2-VL's rule; Qwen2.5-VL spaces the ids by time")
    interval = TIME_TOKENS_PER_SECOND * TIME_TEMPORAL_PATCH / TIME_FPS
    require(
        got != [a * int(interval) for a in range(n)],
        "the interval is truncated too early: multiply by the patch index first, then round "
        "down (transformers PR #48669)",
    )
    raise ExerciseFailed(
        f"{got} is not it: interval = tokens_per_second · temporal_patch_size / fps, and patch a "
        "gets ⌊a · interval⌋"
    )
