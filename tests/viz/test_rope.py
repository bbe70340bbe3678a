"""Tests for lib.viz.rope: the rotation diagram (snapshot, frames, two-slider explorer), the
wavelength, Toeplitz, decay, pairing and precision figures.

Expected values are computed here by hand (math.cos / math.sin of m·θ_i, explicit loops), never
by calling lib.rope, so a figure that drew the wrong data fails.
"""

from __future__ import annotations

import cmath
import copy
import json
import math

import numpy as np
import plotly.graph_objects as go
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from lib.viz.core import OKABE_ITO, rounded
from lib.viz.rope import (
    BAND_COLOURS,
    decay_figure,
    pairing_diagram,
    position_precision_figure,
    rotation_diagram,
    rotation_explorer,
    rotation_snapshot,
    toeplitz_slider,
    wavelength_figure,
)
from lib.viz.rope_scaling import wavelength_figure as scaling_wavelength_figure


def hand_tracks(thetas: list[float], n_pos: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Pair (1, 0) turned by m·θ for every θ and position m: points [P, n, 2], angles [P, n]."""
    points = torch.empty(len(thetas), n_pos, 2, dtype=torch.float64)
    angles = torch.empty(len(thetas), n_pos, dtype=torch.float64)
    for p, theta in enumerate(thetas):
        for m in range(n_pos):
            angles[p, m] = m * theta
            points[p, m, 0] = math.cos(m * theta)
            points[p, m, 1] = math.sin(m * theta)
    return points, angles


def r4(x: float) -> float:
    return float(rounded([x])[0])


# ------------------------------------------------------------------ wavelength figure


def test_wavelength_figure_plots_theta_and_two_pi_over_theta():
    theta = torch.tensor([1.0, 0.1, 0.01])
    fig = wavelength_figure({"base 100": theta}, context_lengths={"ctx": 50}, caption="c")
    left, right = fig.data
    assert list(left.y) == [1.0, 0.1, 0.01]
    assert list(right.y) == [r4(2 * math.pi), r4(20 * math.pi), r4(200 * math.pi)]
    assert list(left.x) == [0, 1, 2]
    assert fig.layout.yaxis.type == "log" and fig.layout.yaxis2.type == "log"
    assert left.showlegend and not right.showlegend
    assert any(s.y0 == 50 for s in fig.layout.shapes)
    note = [a for a in fig.layout.annotations if a.text == "ctx: 50"]
    assert len(note) == 1 and note[0].y == math.log10(50) and note[0].yref == "y2"
    assert fig.layout.meta["caption"] == "c"


def test_wavelength_figure_wavelength_comes_from_the_unrounded_theta():
    """θ = 0.0123456 shows as 0.01235; 2π/θ is 508.9 (4 digits), 2π/0.01235 would be 508.8."""
    theta = torch.tensor([0.0123456], dtype=torch.float64)
    left, right = wavelength_figure({"a": theta}).data
    assert list(left.y) == [0.01235]
    assert list(right.y) == [508.9] == [r4(2 * math.pi / 0.0123456)]
    assert r4(2 * math.pi / 0.01235) != 508.9  # the hazard this test guards against


def test_wavelength_figure_is_chapter_9s_figure_with_its_speed_panel():
    theta = {"a": torch.tensor([1.0, 0.1, 0.01]), "b": torch.tensor([0.5, 0.05, 0.005])}
    mine = wavelength_figure(theta, context_lengths={"ctx": 50}, caption="c")
    one = scaling_wavelength_figure(theta, {"ctx": 50}, speeds=True, caption="c")
    assert mine.to_plotly_json() == one.to_plotly_json()


def test_wavelength_figure_errors():
    with pytest.raises(TypeError, match="inv_freqs must be a mapping"):
        wavelength_figure([torch.ones(3)])
    with pytest.raises(ValueError, match="inv_freqs must hold at least one"):
        wavelength_figure({})
    with pytest.raises(
        ValueError, match=r"inv_freqs\['a'\] must hold finite inverse frequencies > 0"
    ):
        wavelength_figure({"a": torch.tensor([1.0, 0.0])})
    with pytest.raises(ValueError, match=r"inv_freqs\['a'\] must be 1-D"):
        wavelength_figure({"a": torch.ones(2, 2)})
    with pytest.raises(ValueError, match=r"context_lengths\['c'\] must be > 0"):
        wavelength_figure({"a": torch.ones(2)}, context_lengths={"c": 0})
    with pytest.raises(TypeError, match=r"inv_freqs\['a'\] must be a torch.Tensor"):
        wavelength_figure({"a": np.ones(2)})


# ------------------------------------------------------------------ snapshot


def panel_traces(fig, panel: int):
    """(circle, start arrow, dots, arrow, read-out) of one panel: 5 traces per panel."""
    return fig.data[5 * panel : 5 * panel + 5]


def test_snapshot_draws_arrow_dots_and_angle_at_the_step():
    thetas = [1.0, 0.1, 0.001]
    points, angles = hand_tracks(thetas, 10)
    fig = rotation_snapshot(points, angles, ["a", "b", "c"], step=4, caption="cap", alt="alt")
    assert len(fig.data) == 15
    for p, theta in enumerate(thetas):
        circle, start, dots, arrow, text = panel_traces(fig, p)
        assert list(start.x) == [0.0, 1.0] and list(start.y) == [0.0, 0.0]  # position 0
        assert list(arrow.x) == [0.0, r4(math.cos(4 * theta))]
        assert list(arrow.y) == [0.0, r4(math.sin(4 * theta))]
        assert list(dots.marker.opacity) == [0.45] * 5 + [0.0] * 5  # positions 0..4 shown
        assert list(dots.x)[7] == r4(math.cos(7 * theta))
        angle = r4(4 * theta)
        turns = angle / (2 * math.pi)
        assert text.text[0] == f"m = 4: m·θ = {angle:.3g} rad<br>= {turns:.3g} turns"
        assert dots.marker.color == BAND_COLOURS[p]
        assert circle.mode == "lines"
    assert [a.text for a in fig.layout.annotations] == ["a", "b", "c"]
    assert fig.layout.yaxis.scaleanchor == "x" and fig.layout.yaxis3.scaleanchor == "x3"
    assert fig.layout.meta == {"caption": "cap", "alt": "alt"}


def test_snapshot_errors():
    points, angles = hand_tracks([1.0], 3)
    with pytest.raises(ValueError, match="step must be in"):
        rotation_snapshot(points, angles, ["a"], step=3)
    with pytest.raises(TypeError, match="step must be an int"):
        rotation_snapshot(points, angles, ["a"], step=1.0)
    with pytest.raises(ValueError, match="titles must have 1 entries"):
        rotation_snapshot(points, angles, ["a", "b"], step=0)
    with pytest.raises(ValueError, match=r"points must be \[n_pairs, n_positions, 2\]"):
        rotation_snapshot(points[..., :1], angles, ["a"], step=0)
    with pytest.raises(ValueError, match="angles must be"):
        rotation_snapshot(points, angles[:, :2], ["a"], step=0)
    with pytest.raises(TypeError, match=r"points must be a torch\.Tensor"):
        rotation_snapshot(points.tolist(), angles, ["a"], step=0)
    with pytest.raises(ValueError, match="points must be finite"):
        rotation_snapshot(points * float("nan"), angles, ["a"], step=0)
    with pytest.raises(TypeError, match="titles must be a sequence"):
        rotation_snapshot(points, angles, "a", step=0)


# ------------------------------------------------------------------ animated diagram


def as_json(fig) -> dict:
    """The figure as plotly.js receives it (lists, not tuples)."""
    return json.loads(fig.to_json())


def apply_frame(fig, name: str) -> list[dict]:
    """What plotly.js shows after animating to frame ``name``: frame data merged into traces."""
    spec = as_json(fig)
    data = spec["data"]
    frame = next(f for f in spec["frames"] if f["name"] == name)
    for index, update in zip(frame["traces"], frame["data"], strict=True):
        update.pop("type", None)
        for key, value in update.items():
            if isinstance(value, dict):
                data[index].setdefault(key, {}).update(value)
            else:
                data[index][key] = value
    return data


def test_diagram_frames_equal_the_snapshot_at_every_step():
    points, angles = hand_tracks([1.0, 0.1, 0.001], 5)
    titles = ["fast", "medium", "slow"]
    fig = rotation_diagram(points, angles, titles, active=2, caption="cap")
    assert len(fig.frames) == 5
    slider = fig.layout.sliders[0]
    assert slider.active == 2 and len(slider.steps) == 5
    assert [list(s.args[0]) for s in slider.steps] == [[str(k)] for k in range(5)]
    assert all(s.method == "animate" for s in slider.steps)
    play, pause = fig.layout.updatemenus[0].buttons
    assert play.args[0] is None and play.args[1]["fromcurrent"] is True
    assert list(pause.args[0]) == [None]
    for step in range(5):
        shown = apply_frame(fig, str(step))
        want = as_json(rotation_snapshot(points, angles, titles, step))["data"]
        assert shown == want, f"frame {step} differs from the snapshot"


def test_diagram_initial_state_is_the_active_snapshot():
    points, angles = hand_tracks([0.5, 0.05], 5)
    fig = rotation_diagram(points, angles, ["a", "b"], active=3)
    snap = rotation_snapshot(points, angles, ["a", "b"], 3)
    assert as_json(fig)["data"] == as_json(snap)["data"]


def test_diagram_errors():
    points, angles = hand_tracks([1.0], 3)
    with pytest.raises(ValueError, match="frame_ms must be >= 1"):
        rotation_diagram(points, angles, ["a"], frame_ms=0)
    with pytest.raises(ValueError, match="active must be in"):
        rotation_diagram(points, angles, ["a"], active=5)
    with pytest.raises(ValueError, match="colours must have 1 entries"):
        rotation_diagram(points, angles, ["a"], colours=["red", "blue"])


# ------------------------------------------------------------------ two-slider explorer


def simulate(fig, moves: list[tuple[int, int]], spec: dict | None = None) -> list:
    """Apply slider steps the way plotly.js does (restyle/update with trace indices)."""
    spec = copy.deepcopy(spec if spec is not None else as_json(fig))
    state, title = spec["data"], spec["layout"]["title"]["text"]
    for slider, step in moves:
        step_spec = spec["layout"]["sliders"][slider]["steps"][step]
        args = step_spec["args"]
        indices = args[1] if step_spec["method"] == "restyle" else args[2]
        for key, values in args[0].items():
            for index, value in zip(indices, values, strict=True):
                if "." in key:
                    outer, inner = key.split(".")
                    state[index].setdefault(outer, {})[inner] = value
                else:
                    state[index][key] = value
        if step_spec["method"] == "update":
            title = args[1]["title.text"]
    return [state, title]


def shown_arrow_and_text(state: list[dict]) -> tuple[list, list]:
    arrows = [t for t in state if t.get("mode") == "lines+markers" and t.get("visible") is True]
    texts = [t for t in state if t.get("mode") == "text" and t.get("visible") is True]
    return arrows, texts


@pytest.mark.parametrize("order", ["pair first", "position first"])
def test_explorer_sliders_are_independent(order):
    thetas = [1.0, 0.3, 0.01]
    points, angles = hand_tracks(thetas, 6)
    fig = rotation_explorer(points, angles, ["0", "8", "40"], active_pair=0, active_position=1)
    assert len(fig.layout.sliders) == 2
    for pair in range(3):
        for position in range(6):
            moves = [(1, pair), (0, position)]
            if order == "position first":
                moves.reverse()
            state, title = simulate(fig, moves)
            arrows, texts = shown_arrow_and_text(state)
            assert len(arrows) == 1 and len(texts) == 1
            theta = thetas[pair]
            assert arrows[0]["x"] == [0.0, r4(math.cos(position * theta))]
            assert arrows[0]["y"] == [0.0, r4(math.sin(position * theta))]
            assert texts[0]["text"][0].startswith(
                f"m = {position}: m·θ = {r4(position * theta):.3g}"
            )
            dots = state[2]
            assert dots["x"][5] == r4(math.cos(5 * theta))
            assert dots["marker"]["opacity"] == [0.45] * (position + 1) + [0.0] * (5 - position)
            assert state[1]["x"] == [0.0, 1.0]  # position 0 of every pair is (1, 0)
            assert title == f"pair i = {['0', '8', '40'][pair]}"


EXPLORER_THETAS = [1.0, 0.3, 0.01, 0.002]
EXPLORER_POSITIONS = 7
_EXPLORER_SPEC: dict = {}


def explorer_spec() -> tuple[go.Figure, dict]:
    """One explorer figure (pair 1 at position 3 to start), built once for the property test."""
    if not _EXPLORER_SPEC:
        points, angles = hand_tracks(EXPLORER_THETAS, EXPLORER_POSITIONS)
        labels = [str(k) for k in range(len(EXPLORER_THETAS))]
        fig = rotation_explorer(points, angles, labels, active_pair=1, active_position=3)
        _EXPLORER_SPEC.update(fig=fig, spec=as_json(fig))
    return _EXPLORER_SPEC["fig"], _EXPLORER_SPEC["spec"]


@given(
    moves=st.lists(
        st.one_of(
            st.tuples(st.just(0), st.integers(0, EXPLORER_POSITIONS - 1)),
            st.tuples(st.just(1), st.integers(0, len(EXPLORER_THETAS) - 1)),
        ),
        max_size=8,
    )
)
def test_any_sequence_of_slider_moves_shows_the_last_pair_at_the_last_position(moves):
    fig, spec = explorer_spec()
    state, title = simulate(fig, moves, spec)
    position = next((step for slider, step in reversed(moves) if slider == 0), 3)
    pair = next((step for slider, step in reversed(moves) if slider == 1), 1)
    arrows, texts = shown_arrow_and_text(state)
    assert len(arrows) == 1 and len(texts) == 1
    tip = complex(arrows[0]["x"][1], arrows[0]["y"][1])
    assert abs(tip - cmath.exp(1j * position * EXPLORER_THETAS[pair])) < 2e-3
    assert texts[0]["text"][0].startswith(f"m = {position}:")
    assert state[2]["marker"]["opacity"].count(0.45) == position + 1
    assert title == f"pair i = {pair}"


def test_explorer_pair_titles():
    points, angles = hand_tracks([1.0, 0.5], 3)
    fig = rotation_explorer(points, angles, ["0", "1"], pair_titles=["fast one", "slow one"])
    assert fig.layout.title.text == "fast one"
    assert fig.layout.sliders[1].steps[1].args[1]["title.text"] == "slow one"
    with pytest.raises(ValueError, match="pair_titles must have 2 entries"):
        rotation_explorer(points, angles, ["0", "1"], pair_titles=["x"])


def test_explorer_initial_state_and_errors():
    points, angles = hand_tracks([1.0, 0.5], 4)
    fig = rotation_explorer(points, angles, ["0", "1"], active_pair=1, active_position=2)
    arrows, _ = shown_arrow_and_text(as_json(fig)["data"])
    assert arrows[0]["x"] == [0.0, r4(math.cos(1.0))]
    assert fig.layout.sliders[0].active == 2 and fig.layout.sliders[1].active == 1
    assert fig.layout.margin.b == 220
    with pytest.raises(ValueError, match="pair_labels must have 2 entries"):
        rotation_explorer(points, angles, ["0"])
    with pytest.raises(ValueError, match="active_pair must be in"):
        rotation_explorer(points, angles, ["0", "1"], active_pair=2)
    with pytest.raises(ValueError, match="active_position must be in"):
        rotation_explorer(points, angles, ["0", "1"], active_position=-1)


# ------------------------------------------------------------------ Toeplitz slider


def test_toeplitz_slider_shares_one_symmetric_colour_range():
    a = torch.tensor([[1.0, 2.0], [3.0, 1.0]])
    b = torch.tensor([[-4.0, 0.5], [0.25, -4.0]])
    fig = toeplitz_slider([a, b], ["100", "10,000"], active=1, caption="c")
    assert len(fig.data) == 2 and [t.visible for t in fig.data] == [False, True]
    assert [list(row) for row in fig.data[0].z] == [[1.0, 2.0], [3.0, 1.0]]
    assert all((t.zmin, t.zmax) == (-4.0, 4.0) for t in fig.data)
    assert fig.layout.yaxis.autorange == "reversed" and fig.layout.yaxis.scaleanchor == "x"
    assert fig.layout.sliders[0].currentvalue.prefix == "base = "
    assert fig.layout.xaxis.title.text == "key position n"


def test_toeplitz_slider_errors():
    with pytest.raises(ValueError, match="matrices must hold at least one"):
        toeplitz_slider([], [])
    with pytest.raises(TypeError, match="matrices must be a sequence"):
        toeplitz_slider(torch.zeros(2, 2), ["a"])
    with pytest.raises(ValueError, match=r"matrices\[0\] must be square"):
        toeplitz_slider([torch.zeros(2, 3)], ["a"])
    with pytest.raises(ValueError, match="labels must have 1 entries"):
        toeplitz_slider([torch.zeros(2, 2)], ["a", "b"])


# ------------------------------------------------------------------ decay figure


def test_decay_figure_two_panels_log_distance():
    d = torch.tensor([1, 10, 100])
    fig = decay_figure(
        d, {"b": torch.tensor([3.0, 2.0, 1.0])}, {"b": torch.tensor([1.0, 0.5, 0.1])}
    )
    assert len(fig.data) == 2
    assert list(fig.data[0].x) == [1.0, 10.0, 100.0]
    assert list(fig.data[1].y) == [1.0, 0.5, 0.1]
    assert fig.layout.xaxis.type == "log" and fig.layout.xaxis2.type == "log"
    assert fig.data[0].showlegend and not fig.data[1].showlegend
    one = decay_figure(d, {"b": torch.tensor([3.0, 2.0, 1.0])})
    assert len(one.data) == 1


def test_decay_figure_errors():
    with pytest.raises(ValueError, match="distances must be non-empty and > 0"):
        decay_figure(torch.tensor([0, 1]), {"a": torch.ones(2)})
    with pytest.raises(ValueError, match="curve 'a' must have 2 values"):
        decay_figure(torch.tensor([1, 2]), {"a": torch.ones(3)})
    with pytest.raises(TypeError, match="bounds must be a mapping"):
        decay_figure(torch.tensor([1, 2]), [torch.ones(2)])
    with pytest.raises(ValueError, match="same_content must hold at least one"):
        decay_figure(torch.tensor([1, 2]), {"a": torch.ones(2)}, {})


# ------------------------------------------------------------------ pairing diagram


def test_pairing_diagram_lines_follow_the_permutation():
    perm = torch.tensor([0, 2, 4, 6, 1, 3, 5, 7])  # interleaved -> half for d = 8, by hand
    fig = pairing_diagram(perm, caption="c")
    lines = fig.data[:4]  # one trace per pair i
    for i, trace in enumerate(lines):
        # pair i: half-layout dims i and i + 4 come from interleaved dims 2i and 2i + 1
        assert list(trace.x) == [2 * i, i, None, 2 * i + 1, i + 4, None]
        assert list(trace.y) == [1, 0, None, 1, 0, None]
    top, bottom = fig.data[4], fig.data[5]
    assert list(top.text) == ["0", "0", "1", "1", "2", "2", "3", "3"]
    assert list(bottom.text) == ["0", "1", "2", "3", "0", "1", "2", "3"]
    assert list(top.marker.symbol) == ["square", "circle"] * 4
    assert list(bottom.marker.symbol) == ["square"] * 4 + ["circle"] * 4


def test_pairing_diagram_smallest_head_and_colours():
    fig = pairing_diagram(torch.tensor([0, 1]))  # d_head = 2: one pair, both layouts agree
    assert list(fig.data[0].x) == [0, 0, None, 1, 1, None]
    scale = fig.data[1].marker.colorscale
    assert scale[0][0] == 0.0 and scale[-1][0] == 1.0
    big = pairing_diagram(torch.tensor([0, 2, 4, 6, 1, 3, 5, 7]))
    assert big.data[0].line.color != big.data[3].line.color  # pairs are told apart by colour


def test_pairing_diagram_errors():
    with pytest.raises(TypeError, match=r"perm must be an integer torch\.Tensor"):
        pairing_diagram(torch.arange(4.0))
    with pytest.raises(ValueError, match="perm must be 1-D of even length"):
        pairing_diagram(torch.arange(3))
    with pytest.raises(ValueError, match="perm must be a permutation"):
        pairing_diagram(torch.tensor([0, 0, 1, 2]))


# ------------------------------------------------------------------ precision figure


def test_position_precision_figure():
    pos = torch.arange(4)
    fig = position_precision_figure(
        pos, {"exact": pos.float(), "steps": torch.tensor([0.0, 0, 2, 2])}
    )
    assert [t.name for t in fig.data] == ["exact", "steps"]
    assert list(fig.data[1].y) == [0.0, 0.0, 2.0, 2.0]
    assert fig.data[0].line.color == OKABE_ITO[0]
    big = torch.tensor([99_999, 100_001])  # positions keep every digit, unlike 4-digit rounding
    exact = position_precision_figure(big, {"f32": big.float()})
    assert list(exact.data[0].x) == [99_999.0, 100_001.0] == list(exact.data[0].y)
    with pytest.raises(ValueError, match=r"seen\['a'\] must have 4 values"):
        position_precision_figure(pos, {"a": torch.zeros(3)})
    with pytest.raises(TypeError, match="seen must be a mapping"):
        position_precision_figure(pos, None)


def test_builders_return_figures_with_rounded_data():
    points, angles = hand_tracks([1.0 / 3.0], 3)
    fig = rotation_snapshot(points, angles, ["a"], 2)
    assert isinstance(fig, go.Figure)
    x = fig.data[3].x[1]
    assert x == r4(math.cos(2 / 3)) and len(repr(x)) <= 8
    assert np.isfinite(np.array(fig.data[2].x)).all()
