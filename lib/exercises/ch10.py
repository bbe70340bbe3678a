"""Exercise checkers for chapter 10, M-RoPE (Wang et al. 2024, *Qwen2-VL*, arXiv 2409.12191).

- ``ch10-next-text-start``: where text resumes after a long video, under the paper's rule
  (transformers 4.x) and under transformers 5.x.
- ``ch10-interleaved-axes``: which axis each frequency slot reads in Qwen3-VL's interleaved layout.
- ``ch10-chunked-angles``: M-RoPE angles with chunked sections, computed without ``mrope_angles``.
"""

from __future__ import annotations

import torch

from lib.exercises import exercise
from lib.mrope import mrope_angles, mrope_position_ids, mrope_slot_axes
from lib.rope import rope_angles, rope_inv_freq

CHAPTER = "10_mrope"


def _long_tensor(answer: object, what: str) -> torch.Tensor:
    """The answer as an int64 tensor, or an AssertionError that says what was expected."""
    if isinstance(answer, torch.Tensor):
        assert not answer.is_floating_point() and not answer.is_complex(), (
            f"expected {what} as integers, got a tensor of dtype {answer.dtype}"
        )
        return answer.detach().to(torch.int64).cpu()
    try:
        return torch.as_tensor(answer, dtype=torch.int64)
    except (TypeError, ValueError, RuntimeError):
        raise AssertionError(
            f"expected {what} (a nested list of ints or a tensor), got {type(answer).__name__}"
        ) from None


# ---------------------------------------------------------------- 1. where text resumes

NEXT_SEGMENTS = [("text", 5), ("video", (16, 8, 8)), ("text", 1)]


def _next_right() -> tuple[int, int]:
    """(paper / transformers 4.x, transformers 5.x) id of the first text token after the video."""
    paper = int(mrope_position_ids(NEXT_SEGMENTS, spatial_merge_size=2)[0, -1])
    video_start = 5
    v5 = video_start + max(8, 8) // 2  # 5.x: the start advances by max(h, w) / merge
    return paper, v5


def _next_wrong() -> list:
    paper, v5 = _next_right()
    n_video_tokens = 16 * 4 * 4
    return [
        (v5, paper),  # swapped
        (5 + n_video_tokens, 5 + n_video_tokens),  # counting tokens like 1-D text
        (paper - 1, v5 - 1),  # the largest id, not one past it
        paper,  # not a pair
        ("21", "9"),
    ]


@exercise("ch10-next-text-start", chapter=CHAPTER, wrong_answers=_next_wrong)
def check_next_text_start(answer: object) -> None:
    """``answer``: ``(paper_rule, transformers_5)``, two ints, for text 5 / video (16, 8, 8) / text."""
    assert isinstance(answer, tuple | list) and len(answer) == 2, (
        f"expected a pair (paper_rule, transformers_5), got {type(answer).__name__} {answer!r}"
    )
    for name, value in zip(("paper_rule", "transformers_5"), answer, strict=True):
        assert isinstance(value, int) and not isinstance(value, bool), (
            f"{name} must be an int (a position id), got {type(value).__name__} {value!r}"
        )
    paper, v5 = _next_right()
    got_paper, got_v5 = answer
    if (got_paper, got_v5) == (paper, v5):
        return
    assert (got_paper, got_v5) != (v5, paper), "the two values are swapped"
    assert got_paper != 5 + 16 * 4 * 4, (
        "M-RoPE does not count the video's tokens: the text resumes after the largest id the video "
        "used on any row"
    )
    assert got_paper != paper - 1, "one past the largest id: the largest id itself is taken"
    assert got_paper == paper, (
        "paper rule: the video's ids run from 5 to 5 + max(t, h/2, w/2) − 1 on some row; the text "
        "starts one after that"
    )
    raise AssertionError(
        "transformers 5.x advances the start by max(h, w) / spatial_merge_size only, ignoring t"
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


@exercise("ch10-interleaved-axes", chapter=CHAPTER, wrong_answers=_interleaved_wrong)
def check_interleaved_axes(answer: object) -> None:
    """``answer``: 64 ints (0 = t, 1 = h, 2 = w), the axis of each slot, sections [24, 20, 20]."""
    got = _long_tensor(answer, "64 axis numbers").flatten()
    assert got.numel() == INTERLEAVED_D_HALF, (
        f"expected one axis per frequency slot, d_head/2 = 64 of them, got {got.numel()}"
    )
    right = _interleaved_right()
    if torch.equal(got, right):
        return
    counts = [int((got == a).sum()) for a in range(3)]
    assert counts == list(INTERLEAVED_SECTIONS), (
        f"the sections give t, h, w {INTERLEAVED_SECTIONS} slots each; your answer gives "
        f"{tuple(counts)}"
    )
    assert not torch.equal(got, torch.as_tensor(mrope_slot_axes(INTERLEAVED_SECTIONS))), (
        "that is the chunked layout of Qwen2-VL; Qwen3-VL interleaves the axes slot by slot"
    )
    raise AssertionError(
        "the counts are right but the order is not: slots cycle t, h, w while h and w still have "
        "slots left; the remaining slots at the slow end all go to t"
    )


# ---------------------------------------------------------------- 3. chunked angles by hand

ANGLES_SEGMENTS = [("text", 2), ("image", (1, 4, 4)), ("video", (2, 2, 4)), ("text", 1)]
ANGLES_D_HEAD = 16
ANGLES_SECTIONS = (2, 3, 3)


def angles_inputs() -> tuple[torch.Tensor, torch.Tensor]:
    """The exercise's inputs: position ids ``[3, T]`` and ``inv_freq [8]`` (base 10000)."""
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


@exercise("ch10-chunked-angles", chapter=CHAPTER, wrong_answers=_angles_wrong)
def check_chunked_angles(answer: object) -> None:
    """``answer``: a float tensor ``[T, 8]``, chunked M-RoPE angles with sections (2, 3, 3)."""
    assert isinstance(answer, torch.Tensor) and answer.is_floating_point(), (
        f"expected a floating tensor [T, 8], got {type(answer).__name__}"
    )
    right = _angles_right()
    assert tuple(answer.shape) == tuple(right.shape), (
        f"expected shape {list(right.shape)}: one row per token, one angle per frequency slot "
        f"(d_head/2 = 8), got {list(answer.shape)}"
    )
    got = answer.detach().double().cpu()
    if torch.allclose(got, right.double(), rtol=1e-5, atol=1e-6):
        return
    ids, inv_freq = angles_inputs()
    if torch.allclose(got, rope_angles(ids[0], inv_freq).double(), rtol=1e-5, atol=1e-6):
        raise AssertionError(
            "these are 1-D RoPE angles of the t row; slots 2–4 must read h, slots 5–7 read w"
        )
    slots = [range(0, 2), range(2, 5), range(5, 8)]
    for axis, name in enumerate("thw"):
        cols = list(slots[axis])
        if not torch.allclose(got[:, cols], right[:, cols].double(), rtol=1e-5, atol=1e-6):
            raise AssertionError(
                f"slots {cols[0]}–{cols[-1]} should be the {name} ids times inv_freq of those "
                "slots (chunked sections [2, 3, 3] in the order t, h, w)"
            )
    raise AssertionError("not the chunked M-RoPE angles")
