"""Figures for chapter 9 (extending RoPE's context: position interpolation, NTK, YaRN, Llama 3.1, ...).

RoPE pair ``i`` turns by ``θ_i = base^(−2i/d_head)`` radians per token, so its wavelength is
``λ_i = 2π/θ_i`` tokens (Su et al. 2021, arXiv:2104.09864). Every scaling method of
:mod:`lib.rope_scaling` replaces ``θ_i`` by some ``θ'_i ≤ θ_i``; what tells the methods apart is
*which* pairs it slows down and by how much, the stretch ``λ'_i/λ_i = θ_i/θ'_i``. The builders here
take inverse frequencies (tensors ``[d_head/2]``) computed by the library and draw wavelengths,
stretches and angles; they never compute a scaling method themselves.

Sliders are ``layout.sliders`` steps that toggle trace visibility, so they work on the static site
with no kernel; all data is rounded with :func:`lib.viz.core.rounded`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np
import plotly.graph_objects as go
import torch
from plotly.subplots import make_subplots

from lib._checks import (
    check_choice,
    check_index,
    check_int,
    check_mapping,
    check_positive_float,
    check_positive_int,
)
from lib.rope import rope_max_angles, rope_wavelengths
from lib.viz.core import (
    LINE_COLOURS,
    OKABE_ITO,
    add_step_slider,
    apply_theme,
    data_array,
    palette,
    rounded,
)

__all__ = [
    "METHOD_STYLES",
    "angle_arcs_figure",
    "angle_coverage_figure",
    "curves_figure",
    "method_style",
    "scaling_methods_figure",
    "wavelength_figure",
]

_ArrayLike = torch.Tensor | np.ndarray | Sequence[float]
_TWO_PI = 2.0 * math.pi
_GUIDE = "rgba(128,128,128,0.8)"  # reference lines: neutral grey, readable in light and dark mode

#: Colour and dash of each scaling method (a key of :data:`lib.rope_scaling.ROPE_SCALING`), the
#: same in every figure of the chapter; a test fails when ``ROPE_SCALING`` gains a key without one.
METHOD_STYLES: dict[str, tuple[str, str]] = {
    "default": (OKABE_ITO[7], "solid"),
    "linear": (OKABE_ITO[0], "dash"),
    "ntk": (OKABE_ITO[1], "dot"),
    "dynamic": (OKABE_ITO[2], "dashdot"),
    "yarn": (OKABE_ITO[3], "solid"),
    "llama3": (OKABE_ITO[5], "longdash"),
    "longrope": (OKABE_ITO[4], "solid"),
}
_DASHES = ("solid", "dash", "dot", "dashdot", "longdash")


def method_style(method: str) -> tuple[str, str]:
    """Colour and dash of a scaling method, looked up by its ``rope_type`` key (never by a label).

    Args:
        method: a key of :data:`lib.rope_scaling.ROPE_SCALING` (``"yarn"``, ``"llama3"``, ...).

    Returns:
        ``(colour, dash)``.

    Raises:
        ValueError: ``method`` is not a known method.
    """
    return METHOD_STYLES[check_choice("method", method, tuple(METHOD_STYLES))]


def _methods(names: Sequence[str], methods: Mapping[str, str] | None) -> list[str | None]:
    """The method of each curve: ``methods[name]`` (None: no method); a label is never read."""
    if methods is None:
        return [None] * len(names)
    for method in methods.values():
        method_style(method)  # a known method, or ValueError
    return [methods.get(n) for n in names]


def _assign_styles(
    names: Sequence[str], methods: Mapping[str, str] | None = None
) -> list[tuple[str, str]]:
    """One (colour, dash) per curve, all colours distinct within the figure.

    A method's own style goes to its first curve; later curves of the same method, and curves of
    no method, take the first palette colour (never yellow) that no curve of this figure uses or
    will use.
    """
    keys = _methods(names, methods)
    reserved = {METHOD_STYLES[k][0] for k in keys if k is not None}
    styles: list[tuple[str, str]] = []
    for n, key in enumerate(keys):
        used = {color for color, _ in styles}
        if key is not None and METHOD_STYLES[key][0] not in used:
            styles.append(METHOD_STYLES[key])
            continue
        free = [c for c in LINE_COLOURS if c not in used | reserved]
        free = free or [c for c in LINE_COLOURS if c not in used]
        styles.append((free[0] if free else palette(n), _DASHES[n % len(_DASHES)]))
    return styles


# --------------------------------------------------------------------------------------------------
# argument checks
# --------------------------------------------------------------------------------------------------


def _inv_freq(name: str, value: object, length: int | None = None) -> np.ndarray:
    """Inverse frequencies ``[d_half]``: a floating tensor of finite values > 0, as float64.

    Not rounded: the figures round what they draw (wavelengths, stretches), and a stretch computed
    from two rounded inverse frequencies would be off in the fourth digit.
    """
    if not isinstance(value, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor [d_head // 2], got {type(value).__name__}")
    if not value.is_floating_point():
        raise TypeError(f"{name} must be a floating-point tensor, got dtype {value.dtype}")
    if value.dim() != 1 or value.numel() == 0:
        raise ValueError(f"{name} must be 1-D [d_head // 2], got shape {list(value.shape)}")
    if length is not None and value.numel() != length:
        raise ValueError(f"{name} must have {length} entries (one per pair), got {value.numel()}")
    array = value.detach().to(torch.float64).cpu().numpy()
    if not (np.isfinite(array).all() and (array > 0).all()):
        raise ValueError(f"{name} must hold finite inverse frequencies > 0")
    return array


def _ref_line(
    fig: go.Figure,
    x: Sequence[float],
    y: Sequence[float],
    label: str,
    *,
    text_position: str = "top right",
    label_at_start: bool = True,
    **where,
) -> None:
    """A dotted grey reference line drawn as a trace (data coordinates, so log axes work), labelled
    at its first (or last) point; no legend entry, no hover."""
    blanks = [""] * (len(x) - 1)
    fig.add_trace(
        go.Scatter(
            x=rounded(x).tolist(),
            y=rounded(y).tolist(),
            mode="lines+text",
            text=[label, *blanks] if label_at_start else [*blanks, label],
            textposition=text_position,
            textfont={"color": _GUIDE},
            line={"color": _GUIDE, "dash": "dot", "width": 1.5},
            showlegend=False,
            hoverinfo="skip",
        ),
        **where,
    )


def _log2_ticks(low: float, high: float) -> dict:
    """Tick values at powers of two for a log axis spanning [low, high] (at most ~12 ticks)."""
    first, last = math.floor(math.log2(low)), math.ceil(math.log2(high))
    step = max(1, math.ceil((last - first + 1) / 12))
    values = [2.0**k for k in range(first, last + 1, step)]
    return {"tickvals": values, "ticktext": [f"{v:g}" for v in values]}


def _fmt_tokens(n: float) -> str:
    """``8192 -> '8,192'``, ``131072.0 -> '131,072'``; non-integers with 4 significant digits."""
    return f"{round(n):,}" if abs(n - round(n)) < 1e-9 else f"{n:.4g}"


# --------------------------------------------------------------------------------------------------
# 1. wavelengths per pair against context lengths
# --------------------------------------------------------------------------------------------------


def wavelength_figure(
    inv_freqs: Mapping[str, torch.Tensor],
    context_lengths: Mapping[str, float] | None = None,
    *,
    methods: Mapping[str, str] | None = None,
    speeds: bool = False,
    caption: str | None = None,
    alt: str | None = None,
    height: int | None = None,
) -> go.Figure:
    """Wavelength ``λ_i = 2π/θ_i`` (tokens, log scale) of every RoPE pair, one line per curve.

    The book's one wavelength figure: chapter 9 draws it as it is, chapter 8 with ``speeds``
    (:func:`lib.viz.rope.wavelength_figure`), which adds the speeds θ_i as a left panel. Dotted
    horizontal lines mark context lengths: a pair whose wavelength lies above a context line never
    completes a turn within that many tokens. Wavelengths come from the unrounded θ (rounding θ
    first would shift λ in its fourth digit).

    Equation:
        λ_i = 2π / θ_i, with θ_i = base^(−2i/d_head) for plain RoPE or whatever scaled θ'_i a
        curve holds, i = 0 … d_head/2 − 1

    Args:
        inv_freqs: name -> inverse frequencies ``[d_half]`` (floating tensors, > 0, all the same
            length), e.g. :func:`lib.rope.rope_inv_freq`.
        context_lengths: label -> a length in tokens (> 0), drawn as a horizontal line.
        methods: curve name -> its scaling method (a key of ``ROPE_SCALING``), for the method's
            colour and dash; a curve without one (and every curve by default) takes the
            first free palette colour.
        speeds: also draw θ_i (radians per token) in a left panel.
        caption, alt: passed to :func:`lib.viz.core.apply_theme`.
        height: figure height in pixels (default 440 with ``speeds``, else 420).

    Returns:
        A figure with one line trace per curve and panel (x = pair index i).

    Raises:
        TypeError / ValueError: a curve is not a 1-D floating tensor of positive values, lengths
            differ, a context length is not a positive number.

    Shapes:
        inv_freqs[name]: [d_head // 2], values > 0

    References:
        Su et al., RoFormer, arXiv:2104.09864, eq. 15.
    """
    check_mapping("inv_freqs", inv_freqs)
    height = check_positive_int("height", (440 if speeds else 420) if height is None else height)
    arrays = {str(k): _inv_freq(f"inv_freqs[{k!r}]", v) for k, v in inv_freqs.items()}
    lengths = {a.size for a in arrays.values()}
    if len(lengths) != 1:
        raise ValueError(f"every curve must have the same number of pairs, got {sorted(lengths)}")
    n_pairs = lengths.pop()
    contexts = dict(check_mapping("context_lengths", context_lengths) if context_lengths else {})
    for label, length in contexts.items():
        check_positive_float(f"context_lengths[{label!r}]", length)
    styles = _assign_styles(list(arrays), methods)
    fig = go.Figure()
    if speeds:
        titles = ("θ_i: radians per token", "wavelength 2π/θ_i: tokens per turn")
        fig = make_subplots(rows=1, cols=2, horizontal_spacing=0.12, subplot_titles=titles)
    for (name, inv), (color, dash) in zip(arrays.items(), styles, strict=True):
        theta, wavelength = rounded(inv), rounded(rope_wavelengths(torch.from_numpy(inv)))
        line = {"x": list(range(n_pairs)), "mode": "lines+markers", "marker": {"size": 4}}
        if not speeds:
            fig.add_trace(
                go.Scatter(
                    y=wavelength.tolist(), name=name, line={"color": color, "dash": dash, "width": 2},
                    hovertemplate="pair %{x}<br>λ = %{y:,.4g} tokens<extra>" + name + "</extra>",
                    **line,
                )
            )  # fmt: skip
            continue
        hover = (
            "pair i = %{x}<br>θ = %{customdata[0]:.4g} rad/token<br>"
            "wavelength %{customdata[1]:,.4g} tokens<extra>" + name + "</extra>"
        )
        for col, y in ((1, theta), (2, wavelength)):
            fig.add_trace(
                go.Scatter(
                    y=y.tolist(), name=name, legendgroup=name, showlegend=col == 1,
                    line={"color": color, "dash": dash}, hovertemplate=hover,
                    customdata=np.stack([theta, wavelength], axis=-1).tolist(), **line,
                ),
                row=1, col=col,
            )  # fmt: skip
    for label, length in contexts.items():
        text = f"{label}: {_fmt_tokens(length)}"
        if not speeds:
            _ref_line(fig, [0, n_pairs - 1], [length, length], text)
            continue
        fig.add_hline(
            y=length, row=1, col=2, line={"dash": "dot", "color": OKABE_ITO[7], "width": 1}
        )
        fig.add_annotation(
            x=0.02, xref="x2 domain", xanchor="left", y=math.log10(length), yref="y2",
            yanchor="bottom", text=text, showarrow=False, font={"size": 11},
        )  # on a log axis an annotation's y is given in log10 units  # fmt: skip
    fig.update_xaxes(title="pair index i" if speeds else "pair index i (fast → slow)")
    fig.update_yaxes(type="log", exponentformat="power")
    if not speeds:
        fig.update_yaxes(title="wavelength λ = 2π/θ (tokens)")
    fig.update_layout(legend={"orientation": "h", "y": 1.18 if speeds else 1.12, "x": 0})
    return apply_theme(fig, caption=caption, alt=alt, height=height)


# --------------------------------------------------------------------------------------------------
# 2. which angles a longer input needs
# --------------------------------------------------------------------------------------------------


def angle_coverage_figure(
    inv_freq: torch.Tensor,
    trained_len: int,
    new_lens: Sequence[int],
    *,
    active: int = 0,
    caption: str | None = None,
    alt: str | None = None,
) -> go.Figure:
    """Per pair, the largest relative angle seen in training against the one a longer input needs.

    Equation:
        a query and a key at most ``L − 1`` tokens apart meet at relative angles
        ``(m − n)·θ_i`` with ``|m − n| ≤ L − 1``; so pair i's largest angle in training is
        ``(L − 1)·θ_i`` and at a new length L' it is ``(L' − 1)·θ_i`` (RoPE, Su et al. 2021,
        arXiv:2104.09864; the failure analysis of Chen et al. 2023, arXiv:2306.15595). Where
        ``(L − 1)·θ_i < 2π`` the pair never completed a turn in training, and every angle beyond
        ``(L − 1)·θ_i`` is one the model has never seen for that pair: those pairs are marked.
        The angles come from :func:`lib.rope.rope_max_angles`.

    Args:
        inv_freq: ``[d_half]`` inverse frequencies θ_i (float tensor, > 0).
        trained_len: the trained context length L (int ≥ 2).
        new_lens: the longer lengths L' (ints > L), one slider step each.
        active: the step shown first.
        caption, alt: passed to :func:`lib.viz.core.apply_theme`.

    Returns:
        A figure with 2 static traces (training, one full turn) and 2 traces per step (needed
        angle, unseen-angle markers), with a slider over ``new_lens``.
    """
    theta = _inv_freq("inv_freq", inv_freq)
    trained_len = check_int("trained_len", trained_len, minimum=2)
    if isinstance(new_lens, str) or not isinstance(new_lens, Sequence) or len(new_lens) == 0:
        raise ValueError("new_lens must be a non-empty sequence of ints")
    new = [check_int(f"new_lens[{k}]", v, minimum=trained_len + 1) for k, v in enumerate(new_lens)]
    active = check_index("active", active, len(new))
    pairs = list(range(theta.size))
    theta_t = torch.from_numpy(theta)  # the checked θ_i, float64
    seen = rope_max_angles(theta_t, trained_len).numpy()  # [d_half] largest angle in training
    fig = go.Figure()
    fig.add_trace(
        go.Scatter(
            x=pairs,
            y=rounded(seen).tolist(),
            mode="lines",
            name=f"largest angle in training (L = {trained_len:,})",
            line={"color": OKABE_ITO[0], "width": 3},
            hovertemplate="pair %{x}<br>%{y:.4g} rad<extra>training</extra>",
        )
    )
    fig.add_trace(
        go.Scatter(
            x=[0, theta.size - 1],
            y=[rounded([_TWO_PI])[0]] * 2,
            mode="lines",
            name="one full turn (2π)",
            line={"color": _GUIDE, "dash": "dot", "width": 1.5},
            hoverinfo="skip",
        )
    )
    for length in new:
        needed = rope_max_angles(theta_t, length).numpy()  # [d_half]
        unseen = [i for i in pairs if seen[i] < _TWO_PI]
        fig.add_trace(
            go.Scatter(
                x=pairs,
                y=rounded(needed).tolist(),
                mode="lines",
                name=f"largest angle needed at L′ = {length:,}",
                line={"color": OKABE_ITO[5], "dash": "dash", "width": 2},
                hovertemplate="pair %{x}<br>%{y:.4g} rad<extra>needed</extra>",
            )
        )
        fig.add_trace(
            go.Scatter(
                x=unseen,
                y=rounded(needed[unseen]).tolist(),
                mode="markers",
                name="angles never seen in training",
                marker={"color": OKABE_ITO[5], "size": 7, "symbol": "x"},
                hovertemplate="pair %{x}: needs %{y:.4g} rad, saw less than one turn"
                "<extra>unseen</extra>",
            )
        )
    add_step_slider(
        fig, [f"{v:,}" for v in new], n_static=2, per_step=2, prefix="new length L′ = ",
        active=active,
    )  # fmt: skip
    fig.update_xaxes(title="pair index i (fast → slow)")
    fig.update_yaxes(title="largest relative angle (radians)", type="log", exponentformat="power")
    fig.update_layout(legend={"orientation": "h", "y": 1.18, "x": 0})
    return apply_theme(fig, caption=caption, alt=alt, height=460)


def angle_arcs_figure(
    inv_freq: torch.Tensor,
    trained_len: int,
    new_len: int,
    pairs: Sequence[int],
    *,
    active: int = 0,
    points: int = 120,
    caption: str | None = None,
    alt: str | None = None,
) -> go.Figure:
    """The arc of the unit circle that pair i's relative angle covers in training and at a new length.

    Equation:
        pair i's rotation for a query–key offset k is the point ``(cos kθ_i, sin kθ_i)``.
        Offsets ``0 … L − 1`` sweep the arc from 0 to ``(L − 1)θ_i`` (the whole circle once that
        exceeds 2π); offsets ``L … L' − 1`` add the arc up to ``(L' − 1)θ_i``. Only the part of the
        new arc that training did not cover is drawn, outside the circle (Su et al. 2021,
        arXiv:2104.09864; Chen et al. 2023, arXiv:2306.15595).

    Args:
        inv_freq: ``[d_half]`` inverse frequencies (float tensor, > 0).
        trained_len: trained context length L (int ≥ 2).
        new_len: longer length L' (int > L).
        pairs: the pair indices to offer on the slider (each in ``[0, d_half)``).
        active: the slider step shown first.
        points: points per drawn arc (int ≥ 8).
        caption, alt: passed to :func:`lib.viz.core.apply_theme`.

    Returns:
        A square figure: 1 static trace (the unit circle) and 2 traces per pair (trained arc, new
        arc), with a slider over ``pairs``.
    """
    theta = _inv_freq("inv_freq", inv_freq)
    trained_len = check_int("trained_len", trained_len, minimum=2)
    new_len = check_int("new_len", new_len, minimum=trained_len + 1)
    points = check_int("points", points, minimum=8)
    if isinstance(pairs, str) or not isinstance(pairs, Sequence) or len(pairs) == 0:
        raise ValueError("pairs must be a non-empty sequence of pair indices")
    chosen = [check_int(f"pairs[{k}]", p, minimum=0) for k, p in enumerate(pairs)]
    if max(chosen) >= theta.size:
        raise ValueError(f"pairs must lie in [0, {theta.size - 1}], got {max(chosen)}")
    active = check_index("active", active, len(chosen))

    def arc(start: float, stop: float, radius: float) -> tuple[list[float], list[float]]:
        phi = np.linspace(start, stop, points)
        return rounded(radius * np.cos(phi)).tolist(), rounded(radius * np.sin(phi)).tolist()

    fig = go.Figure()
    cx, cy = arc(0.0, _TWO_PI, 1.0)
    fig.add_trace(
        go.Scatter(
            x=cx, y=cy, mode="lines", name="unit circle", hoverinfo="skip",
            line={"color": "rgba(128,128,128,0.35)", "width": 1},
        )
    )  # fmt: skip
    titles = []
    for i in chosen:
        seen = min((trained_len - 1) * theta[i], _TWO_PI)
        needed = min((new_len - 1) * theta[i], _TWO_PI)
        tx, ty = arc(0.0, seen, 1.0)
        fig.add_trace(
            go.Scatter(
                x=tx, y=ty, mode="lines", name=f"offsets 0 … {trained_len - 1:,} (training)",
                line={"color": OKABE_ITO[0], "width": 6}, hoverinfo="skip",
            )
        )  # fmt: skip
        if needed > seen:
            nx, ny = arc(seen, needed, 1.12)
        else:  # training already covered the whole circle: nothing new
            nx, ny = [], []
        fig.add_trace(
            go.Scatter(
                x=nx, y=ny, mode="lines", name=f"new angles, offsets up to {new_len - 1:,}",
                line={"color": OKABE_ITO[5], "width": 6, "dash": "dot"}, hoverinfo="skip",
            )
        )  # fmt: skip
        wavelength = float(rope_wavelengths(torch.from_numpy(theta[i : i + 1]))[0])
        turns = (trained_len - 1) * theta[i] / _TWO_PI
        shown = float(rounded([wavelength])[0])
        titles.append(
            f"pair {i}: λ = {shown:,.0f} tokens"
            if shown >= 100
            else f"pair {i}: λ = {shown:.3g} tokens"
        )
        titles[-1] += f", {float(rounded([turns], 3)[0]):,.3g} turns in training"
    add_step_slider(
        fig, [str(i) for i in chosen], n_static=1, per_step=2, prefix="pair i = ", active=active,
        step_titles=titles,
    )  # fmt: skip
    fig.update_layout(title={"x": 0.02, "xanchor": "left"})
    fig.update_xaxes(
        range=[-1.3, 1.3], showticklabels=False, zeroline=False, showgrid=False, showline=False
    )
    fig.update_yaxes(
        range=[-1.3, 1.3], showticklabels=False, zeroline=False, showgrid=False, showline=False,
        scaleanchor="x", scaleratio=1,
    )  # fmt: skip
    fig.update_layout(legend={"orientation": "h", "y": -0.02, "x": 0, "yanchor": "top"})
    fig = apply_theme(fig, caption=caption, alt=alt, height=560)
    fig.update_layout(margin={"t": 60, "b": 190})
    return fig


# --------------------------------------------------------------------------------------------------
# 3. the methods side by side (the chapter's main figure)
# --------------------------------------------------------------------------------------------------


def scaling_methods_figure(
    scaled: Mapping[float, Mapping[str, torch.Tensor]],
    default_inv_freq: torch.Tensor,
    original_len: int,
    *,
    active: int = 0,
    prefix: str = "scaling factor s = ",
    methods: Mapping[str, str] | None = None,
    caption: str | None = None,
    alt: str | None = None,
) -> go.Figure:
    """Two panels per scaling factor s: the wavelength of every pair, and its stretch over default.

    Equation:
        ``λ'_i = 2π/θ'_i`` (left, log scale, against pair i) and the stretch
        ``λ'_i/λ_i = θ_i/θ'_i`` (right, against the *original* wavelength λ_i, both axes log) — 1 for a
        pair left alone, s for a pair interpolated like position interpolation (Chen et al. 2023,
        arXiv:2306.15595). Dotted lines mark the original context L and the target s·L (left) and L
        (right), which is where YaRN (Peng et al. 2023, arXiv:2309.00071) and Llama 3.1's scaling
        (Grattafiori et al. 2024, arXiv:2407.21783) place their thresholds.

    Args:
        scaled: scaling factor s -> (method name -> scaled inverse frequencies ``[d_half]``); every
            s holds the same method names. One slider step per s (no slider if there is one s).
        default_inv_freq: ``[d_half]``, the unscaled θ_i.
        original_len: the original (trained) context length L, in tokens.
        active: the step shown first.
        prefix: text before the slider's current value.
        methods: curve name -> its scaling method (a key of ``ROPE_SCALING``), for the method's
            colour and dash; a curve without one (and every curve by default) takes the
            first free palette colour.
        caption, alt: passed to :func:`lib.viz.core.apply_theme`.

    Returns:
        A figure with ``2 × n_methods`` traces per step (left and right panel).

    Raises:
        TypeError / ValueError: shapes differ, names differ between steps, non-positive values.
    """
    check_mapping("scaled", scaled)
    theta = _inv_freq("default_inv_freq", default_inv_freq)
    original_len = check_positive_int("original_len", original_len)
    factors = [check_positive_float("scaled key (the scaling factor)", s) for s in scaled]
    active = check_index("active", active, len(factors))
    names = [str(n) for n in check_mapping("scaled[first]", next(iter(scaled.values())))]
    wavelength = rope_wavelengths(torch.from_numpy(theta)).numpy()  # [d_half] original λ
    pairs = list(range(theta.size))

    steps = []  # per s: [(name, inv_freq as float64)]
    for s, per_method in zip(factors, scaled.values(), strict=True):
        per_method = check_mapping(f"scaled[{s:g}]", per_method)
        if [str(n) for n in per_method] != names:
            raise ValueError(f"scaled[{s:g}] must hold the same methods {names}, in that order")
        steps.append(
            [
                (str(n), _inv_freq(f"scaled[{s:g}][{n!r}]", v, theta.size))
                for n, v in per_method.items()
            ]
        )
    top = max(float((theta / inv).max()) for step in steps for _, inv in step)  # largest stretch

    fig = make_subplots(
        rows=1, cols=2, horizontal_spacing=0.12,
        subplot_titles=("wavelength λ′ per pair", "stretch λ′/λ vs original λ"),
    )  # fmt: skip
    # static reference lines: the original context, in both panels
    _ref_line(fig, [0, theta.size - 1], [original_len] * 2, f"L = {_fmt_tokens(original_len)}",
              row=1, col=1)  # fmt: skip
    _ref_line(fig, [original_len] * 2, [1.0, max(top, 1.0)], f"λ = L = {_fmt_tokens(original_len)}",
              text_position="top left", label_at_start=False, row=1, col=2)  # fmt: skip
    styles = _assign_styles(names, methods)
    for s, step in zip(factors, steps, strict=True):
        for n, (name, inv) in enumerate(step):
            color, dash = styles[n]
            line = {"color": color, "dash": dash, "width": 2.5 if n == 0 else 2}
            fig.add_trace(
                go.Scatter(
                    x=pairs, y=rounded(rope_wavelengths(torch.from_numpy(inv))).tolist(), mode="lines", name=name,
                    legendgroup=name, line=line,
                    hovertemplate="pair %{x}<br>λ′ = %{y:,.4g} tokens<extra>" + name + "</extra>",
                ),
                row=1, col=1,
            )  # fmt: skip
            fig.add_trace(
                go.Scatter(
                    x=rounded(wavelength).tolist(), y=rounded(theta / inv).tolist(), mode="lines",
                    name=name, legendgroup=name, showlegend=False, line=line,
                    hovertemplate="λ = %{x:,.4g} tokens<br>stretch %{y:.3f}×<extra>" + name
                    + "</extra>",
                ),
                row=1, col=2,
            )  # fmt: skip
        _ref_line(fig, [0, theta.size - 1], [s * original_len] * 2,
                  f"s·L = {_fmt_tokens(s * original_len)}", row=1, col=1)  # fmt: skip
    if len(factors) > 1:
        add_step_slider(
            fig, [f"{s:g}" for s in factors], n_static=2, per_step=2 * len(names) + 1,
            prefix=prefix, active=active,
        )  # fmt: skip
    fig.update_xaxes(title="pair index i (fast → slow)", row=1, col=1)
    fig.update_yaxes(
        title="wavelength λ′ (tokens)", type="log", exponentformat="power", row=1, col=1
    )
    fig.update_xaxes(
        title="original wavelength λ (tokens)", type="log", exponentformat="power", row=1, col=2
    )
    ticks = [2.0**k for k in range(int(math.log2(max(top, 1.0))) + 2)]  # 1, 2, 4, 8, ...
    fig.update_yaxes(
        title="stretch λ′/λ", type="log", range=[-0.05, math.log10(max(top, 1.0)) + 0.1],
        tickvals=ticks, ticktext=[f"{t:g}×" for t in ticks], row=1, col=2,
    )  # fmt: skip
    fig.update_layout(legend={"orientation": "h", "y": 1.22, "x": 0})
    fig = apply_theme(fig, caption=caption, alt=alt, height=520)
    fig.update_layout(margin={"t": 100})
    return fig


# --------------------------------------------------------------------------------------------------
# 4. plain line charts (dynamic NTK against the sequence length, attention factors, ...)
# --------------------------------------------------------------------------------------------------


def curves_figure(
    x: _ArrayLike,
    curves: Mapping[str, _ArrayLike],
    *,
    x_title: str,
    y_title: str,
    log_x: bool = False,
    log_y: bool = False,
    vlines: Mapping[str, float] | None = None,
    hlines: Mapping[str, float] | None = None,
    methods: Mapping[str, str] | None = None,
    caption: str | None = None,
    alt: str | None = None,
    height: int = 400,
) -> go.Figure:
    """Lines of several named curves over one x axis, with optional labelled reference lines.

    Used for quantities that depend on one number: dynamic NTK's stretch against the current
    sequence length (emozilla 2023), or YaRN's and LongRoPE's attention factors against the
    scaling factor (Peng et al. 2023, arXiv:2309.00071; Ding et al. 2024, arXiv:2402.13753).

    Args:
        x: ``[N]`` x values.
        curves: name -> ``[N]`` y values.
        x_title, y_title: axis titles.
        log_x, log_y: logarithmic axes.
        vlines, hlines: label -> position of a dotted reference line.
        methods: curve name -> its scaling method (a key of ``ROPE_SCALING``), for the method's
            colour and dash; a curve without one (and every curve by default) takes the
            first free palette colour.
        caption, alt: passed to :func:`lib.viz.core.apply_theme`.
        height: figure height in pixels.

    Returns:
        A figure with one line trace per curve.
    """
    xs = data_array("x", x, 1, sequences=True)
    check_mapping("curves", curves)
    height = check_positive_int("height", height)
    fig = go.Figure()
    styles = _assign_styles([str(k) for k in curves], methods)
    for n, (name, values) in enumerate(curves.items()):
        ys = data_array(f"curves[{name!r}]", values, 1, length=xs.size, sequences=True)
        color, dash = styles[n]
        fig.add_trace(
            go.Scatter(
                x=xs.tolist(), y=ys.tolist(), mode="lines", name=str(name),
                line={"color": color, "dash": dash, "width": 2.5},
                hovertemplate="%{x:,.4g} → %{y:,.4g}<extra>" + str(name) + "</extra>",
            )
        )  # fmt: skip
    all_y = np.concatenate(
        [
            data_array(f"curves[{k!r}]", v, 1, length=xs.size, sequences=True)
            for k, v in curves.items()
        ]
    )
    y_span = [float(all_y.min()), float(all_y.max())]
    for label, value in (vlines or {}).items():
        value = check_positive_float(f"vlines[{label!r}]", value)
        _ref_line(fig, [value, value], y_span, str(label), label_at_start=False)
    for label, value in (hlines or {}).items():
        value = check_positive_float(f"hlines[{label!r}]", value)
        _ref_line(fig, [float(xs.min()), float(xs.max())], [value, value], str(label))
    fig.update_xaxes(title=x_title, type="log" if log_x else "linear")
    fig.update_yaxes(title=y_title, type="log" if log_y else "linear")
    if log_y and y_span[0] > 0:
        fig.update_yaxes(**_log2_ticks(y_span[0], y_span[1]))
    fig.update_layout(legend={"orientation": "h", "y": 1.14, "x": 0})
    return apply_theme(fig, caption=caption, alt=alt, height=height)
