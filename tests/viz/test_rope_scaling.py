"""Tests for lib.viz.rope_scaling: wavelength, angle and stretch figures of RoPE scaling methods.

Inverse frequencies are built by hand here (θ_i = base^(−2i/d) with explicit numbers, divided by
hand-chosen stretches), never by calling lib.rope_scaling, so a figure that drew the wrong data
would fail.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from lib.rope_scaling import ROPE_SCALING
from lib.viz.core import LINE_COLOURS, OKABE_ITO
from lib.viz.rope_scaling import (
    METHOD_STYLES,
    angle_arcs_figure,
    angle_coverage_figure,
    curves_figure,
    method_style,
    scaling_methods_figure,
    wavelength_figure,
)


def hand_inv_freq(d_head: int, base: float) -> torch.Tensor:
    """θ_i = base^(−2i/d), written out with Python floats."""
    return torch.tensor(
        [base ** (-2.0 * i / d_head) for i in range(d_head // 2)], dtype=torch.float64
    )


def visible_flags(fig, step: int) -> list[bool]:
    return list(fig.layout.sliders[0].steps[step].args[0]["visible"])


def rel(a, b) -> float:
    return abs(a - b) / abs(b)


# ------------------------------------------------------------------ styles


def test_method_style_is_looked_up_by_method_key_for_every_method_of_lib():
    assert set(METHOD_STYLES) == set(ROPE_SCALING)  # fails when lib gains a method without a style
    assert method_style("yarn") == METHOD_STYLES["yarn"]
    with pytest.raises(ValueError, match="method"):
        method_style("yarn (β_fast = 32)")  # a label is not a method
    colours = [c for c, _ in METHOD_STYLES.values()]
    assert len(set(colours)) == len(colours)  # every method distinguishable
    assert set(colours) <= set(LINE_COLOURS)  # Okabe–Ito, never yellow


def test_styles_come_from_methods_never_from_labels():
    theta = hand_inv_freq(8, 10000.0)
    curves = {"β_fast = 32": theta, "llama3 at 8": theta / 2}
    fig = wavelength_figure(curves, {"L": 100}, methods={"β_fast = 32": "yarn"})
    assert fig.data[0].line.color == METHOD_STYLES["yarn"][0]
    assert fig.data[1].line.color != METHOD_STYLES["llama3"][0]  # a label is not read
    # no methods: no label is read either, every curve takes the next free palette colour
    for plain in (
        wavelength_figure({"llama3": theta, "yarn": theta / 2}, {"L": 100}),
        curves_figure(
            [1.0, 2.0], {"llama3": [1.0, 2.0], "yarn": [2.0, 3.0]}, x_title="", y_title=""
        ),
    ):
        assert [t.line.color for t in plain.data[:2]] == list(LINE_COLOURS[:2])
    assert LINE_COLOURS[:2] != (METHOD_STYLES["llama3"][0], METHOD_STYLES["yarn"][0])
    with pytest.raises(ValueError, match="method"):
        wavelength_figure(curves, {"L": 100}, methods={"β_fast = 32": "nope"})


def test_two_curves_of_one_method_get_different_colours_and_never_yellow():
    theta = hand_inv_freq(8, 10000.0)
    fig = scaling_methods_figure(
        {4.0: {"default": theta, "longrope (short)": theta / 2, "longrope (long)": theta / 4}},
        theta,
        100,
        methods={
            "default": "default",
            "longrope (short)": "longrope",
            "longrope (long)": "longrope",
        },
    )
    colours = [t.line.color for t in fig.data[2::2][:3]]  # left-panel traces after the 2 references
    assert colours[1] == METHOD_STYLES["longrope"][0]
    assert len(set(colours)) == 3 and OKABE_ITO[6] not in colours


# ------------------------------------------------------------------ wavelength_figure


def test_wavelength_figure_draws_two_pi_over_theta_and_context_lines():
    theta = torch.tensor([1.0, 0.01, 1e-4])
    fig = wavelength_figure({"a": theta, "b": theta / 4}, {"trained": 4096})
    assert [t.name for t in fig.data[:2]] == ["a", "b"]
    for got, want in zip(fig.data[0].y, [2 * math.pi, 200 * math.pi, 20000 * math.pi], strict=True):
        assert rel(got, want) < 1e-3
    assert rel(fig.data[1].y[2], 4 * 20000 * math.pi) < 1e-3
    ref = fig.data[2]
    assert list(ref.y) == [4096, 4096] and list(ref.x) == [0, 2]
    assert "4,096" in ref.text[0] and ref.showlegend is False
    assert fig.layout.yaxis.type == "log"


def test_wavelength_figure_rejects_bad_input():
    theta = torch.tensor([1.0, 0.1])
    with pytest.raises(TypeError, match="inv_freqs"):
        wavelength_figure({"a": [1.0, 0.1]}, {"L": 10})
    with pytest.raises(ValueError, match="same number of pairs"):
        wavelength_figure({"a": theta, "b": torch.tensor([1.0])}, {"L": 10})
    with pytest.raises(ValueError, match="> 0"):
        wavelength_figure({"a": torch.tensor([1.0, 0.0])}, {"L": 10})
    with pytest.raises(ValueError, match="context_lengths"):
        wavelength_figure({"a": theta}, {"L": -3})
    with pytest.raises(ValueError, match="inv_freqs"):
        wavelength_figure({}, {"L": 10})
    with pytest.raises(TypeError, match="floating"):
        wavelength_figure({"a": torch.tensor([1, 2])}, {"L": 10})


# ------------------------------------------------------------------ angle_coverage_figure


def test_angle_coverage_plots_largest_offsets_times_theta_and_marks_unseen_pairs():
    theta = hand_inv_freq(8, 10000.0)  # 1, 0.1, 0.01, 0.001
    fig = angle_coverage_figure(theta, 100, [400, 1000], active=1)
    trained, turn = fig.data[0], fig.data[1]
    assert [round(v, 6) for v in trained.y] == [99.0, 9.9, 0.99, 0.099]
    assert turn.y[0] == pytest.approx(2 * math.pi, rel=1e-3)
    needed_1000, unseen_1000 = fig.data[4], fig.data[5]
    assert [round(v, 6) for v in needed_1000.y] == [999.0, 99.9, 9.99, 0.999]
    # pairs 2 and 3 turn less than 2π in 100 tokens (0.99 and 0.099 rad): their new angles are unseen
    assert list(unseen_1000.x) == [2, 3]
    assert [t.visible is not False for t in fig.data] == [True, True, False, False, True, True]
    assert visible_flags(fig, 0) == [True, True, True, True, False, False]
    assert [s.label for s in fig.layout.sliders[0].steps] == ["400", "1,000"]


def test_angle_coverage_rejects_lengths_not_longer_than_training():
    theta = hand_inv_freq(8, 10000.0)
    with pytest.raises(ValueError, match="new_lens"):
        angle_coverage_figure(theta, 100, [100])
    with pytest.raises(ValueError, match="new_lens"):
        angle_coverage_figure(theta, 100, [])
    with pytest.raises(ValueError, match="trained_len"):
        angle_coverage_figure(theta, 1, [10])
    with pytest.raises(ValueError, match="active"):
        angle_coverage_figure(theta, 100, [200], active=1)
    with pytest.raises(ValueError, match="inv_freq"):
        angle_coverage_figure(theta[None], 100, [200])


# ------------------------------------------------------------------ angle_arcs_figure


def test_angle_arcs_cover_the_trained_arc_and_only_the_new_part_beyond_it():
    theta = torch.tensor([1.0, 0.001])
    fig = angle_arcs_figure(theta, 100, 1000, [0, 1], active=1, points=9)
    circle = fig.data[0]
    assert len(circle.x) == 9 and circle.x[0] == pytest.approx(1.0)
    fast_trained, fast_new, slow_trained, slow_new = fig.data[1:]
    # pair 0 turns 99 rad in training: the whole circle, nothing new
    assert fast_trained.x[-1] == pytest.approx(1.0) and abs(fast_trained.y[-1]) < 1e-3
    assert len(fast_new.x) == 0
    # pair 1: trained arc ends at 99·0.001 = 0.099 rad; the new arc runs on to 0.999 rad, radius 1.12
    assert math.atan2(slow_trained.y[-1], slow_trained.x[-1]) == pytest.approx(0.099, abs=1e-3)
    assert math.atan2(slow_new.y[0], slow_new.x[0]) == pytest.approx(0.099, abs=1e-3)
    assert math.atan2(slow_new.y[-1], slow_new.x[-1]) == pytest.approx(0.999, abs=1e-3)
    assert math.hypot(slow_new.x[-1], slow_new.y[-1]) == pytest.approx(1.12, abs=1e-3)
    steps = fig.layout.sliders[0].steps
    assert "pair 1" in steps[1].args[1]["title.text"]
    assert "6,283 tokens" in steps[1].args[1]["title.text"]  # λ = 2π/0.001
    assert "0.0158 turns" in steps[1].args[1]["title.text"]  # 0.099 / 2π
    assert fig.layout.yaxis.scaleanchor == "x"


def test_angle_arcs_rejects_bad_pairs():
    theta = torch.tensor([1.0, 0.001])
    with pytest.raises(ValueError, match="pairs"):
        angle_arcs_figure(theta, 100, 1000, [2])
    with pytest.raises(ValueError, match="pairs"):
        angle_arcs_figure(theta, 100, 1000, [])
    with pytest.raises(ValueError, match="new_len"):
        angle_arcs_figure(theta, 100, 50, [0])
    with pytest.raises(ValueError, match="points"):
        angle_arcs_figure(theta, 100, 1000, [0], points=2)


# ------------------------------------------------------------------ scaling_methods_figure


def test_scaling_methods_figure_draws_wavelengths_and_stretches_per_factor():
    theta = hand_inv_freq(8, 10000.0)
    ramp = torch.tensor([1.0, 1.0, 0.5, 0.25], dtype=torch.float64)  # a made-up partial stretch
    scaled = {
        2.0: {"default": theta, "linear": theta / 2, "ramp": theta * ramp},
        4.0: {"default": theta, "linear": theta / 4, "ramp": theta * ramp / 2},
    }
    fig = scaling_methods_figure(scaled, theta, 1000, active=1)
    # 2 static reference lines, then per factor: 3 methods × 2 panels + the s·L line
    assert len(fig.data) == 2 + 2 * 7
    step2 = fig.data[2 + 7 :]
    linear_left, linear_right = step2[2], step2[3]
    assert linear_left.name == "linear" and linear_right.showlegend is False
    for got, t in zip(linear_left.y, theta.tolist(), strict=True):
        assert rel(got, 4 * 2 * math.pi / t) < 1e-3
    assert list(linear_right.y) == [4.0, 4.0, 4.0, 4.0]
    assert [
        rel(a, b) < 1e-3
        for a, b in zip(linear_right.x, (2 * math.pi / theta).tolist(), strict=True)
    ]
    assert list(step2[5].y) == [2.0, 2.0, 4.0, 8.0]  # the ramp's stretch θ/θ′
    target = step2[6]
    assert list(target.y) == [4000.0, 4000.0] and "4,000" in target.text[0]
    assert visible_flags(fig, 0) == [True, True] + [True] * 7 + [False] * 7
    assert fig.layout.sliders[0].active == 1
    assert fig.layout.yaxis2.type == "log" and fig.layout.xaxis2.type == "log"
    assert list(fig.layout.yaxis2.tickvals)[:4] == [1.0, 2.0, 4.0, 8.0]


def test_scaling_methods_figure_without_slider_for_one_factor():
    theta = hand_inv_freq(8, 10000.0)
    fig = scaling_methods_figure({8.0: {"default": theta, "linear": theta / 8}}, theta, 512)
    assert not fig.layout.sliders
    assert all(t.visible is not False for t in fig.data)


def test_scaling_methods_figure_rejects_mismatched_methods_and_shapes():
    theta = hand_inv_freq(8, 10000.0)
    with pytest.raises(ValueError, match="same methods"):
        scaling_methods_figure({2.0: {"a": theta}, 4.0: {"b": theta}}, theta, 100)
    with pytest.raises(ValueError, match="4 entries"):
        scaling_methods_figure({2.0: {"a": theta[:3]}}, theta, 100)
    with pytest.raises(ValueError, match="scaled"):
        scaling_methods_figure({}, theta, 100)
    with pytest.raises(ValueError, match="original_len"):
        scaling_methods_figure({2.0: {"a": theta}}, theta, 0)
    with pytest.raises(TypeError, match="scaling factor"):
        scaling_methods_figure({"two": {"a": theta}}, theta, 100)


@given(
    s=st.sampled_from([2.0, 4.0, 8.0, 16.0]),
    d_half=st.integers(2, 16),
    log_base=st.floats(2.0, 7.0),
)
def test_interpolated_wavelengths_are_s_times_longer_and_grow_with_the_pair(s, d_half, log_base):
    theta = hand_inv_freq(2 * d_half, 10.0**log_base)
    fig = wavelength_figure({"default": theta, "linear": theta / s}, {"L": 1024})
    default, linear = np.array(fig.data[0].y), np.array(fig.data[1].y)
    np.testing.assert_allclose(linear / default, s, rtol=1e-3)
    assert (np.diff(default) > 0).all()  # slower pairs have longer wavelengths
    np.testing.assert_allclose(default, 2 * np.pi / theta.numpy(), rtol=1e-3)


# ------------------------------------------------------------------ curves_figure


def test_curves_figure_draws_curves_and_reference_lines():
    x = [1.0, 2.0, 4.0]
    fig = curves_figure(
        x,
        {"yarn": [1.0, 1.0693, 1.1386], "other": torch.tensor([1.0, 2.0, 3.0])},
        x_title="s",
        y_title="factor",
        log_x=True,
        vlines={"s = 2": 2.0},
        hlines={"one": 1.0},
        methods={"yarn": "yarn"},
    )
    yarn, other, vline, hline = fig.data
    assert yarn.line.color == METHOD_STYLES["yarn"][0]
    assert list(other.y) == [1.0, 2.0, 3.0]
    assert list(vline.x) == [2.0, 2.0] and list(vline.y) == [1.0, 3.0]
    assert list(hline.y) == [1.0, 1.0] and list(hline.x) == [1.0, 4.0]
    assert fig.layout.xaxis.type == "log" and fig.layout.yaxis.type == "linear"
    assert fig.layout.meta is None or "caption" not in (fig.layout.meta or {})


def test_curves_figure_log_y_ticks_at_powers_of_two():
    fig = curves_figure([1, 2, 3], {"a": [1.0, 3.0, 57.0]}, x_title="x", y_title="y", log_y=True)
    assert list(fig.layout.yaxis.tickvals) == [1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0]
    assert fig.layout.yaxis.type == "log"


def test_curves_figure_rejects_bad_input():
    with pytest.raises(ValueError, match=r"curves\['a'\]"):
        curves_figure([1, 2], {"a": [1.0]}, x_title="x", y_title="y")
    with pytest.raises(ValueError, match="curves"):
        curves_figure([1, 2], {}, x_title="x", y_title="y")
    with pytest.raises(TypeError, match="x"):
        curves_figure("12", {"a": [1.0, 2.0]}, x_title="x", y_title="y")
    with pytest.raises(ValueError, match="vlines"):
        curves_figure([1, 2], {"a": [1.0, 2.0]}, x_title="x", y_title="y", vlines={"v": 0})


def test_captions_travel_in_meta():
    theta = hand_inv_freq(8, 10000.0)
    fig = wavelength_figure({"a": theta}, {"L": 10}, caption="cap", alt="alt text")
    assert fig.layout.meta["caption"] == "cap" and fig.layout.meta["alt"] == "alt text"
