"""Figures for chapter 9 (extending RoPE's context: position interpolation, NTK, YaRN, Llama 3.1, ...).

RoPE pair ``i`` turns by ``θ_i = base^(−2i/d_head)`` radians per token, so its wavelength is
``λ_i = 2π/θ_i`` tokens (Su et al. 2021, arXiv 2104.09864). Every scaling method of
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

from lib._checks import check_int, check_positive_int
from lib.viz.core import OKABE_ITO, add_step_slider, apply_theme, rounded

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

#: Colour and dash of each scaling method, the same in every figure of the chapter (Okabe–Ito).
METHOD_STYLES: dict[str, tuple[str, str]] = {
    "default": (OKABE_ITO[7], "solid"),
    "linear": (OKABE_ITO[0], "dash"),
    "ntk": (OKABE_ITO[1], "dot"),
    "dynamic": (OKABE_ITO[2], "dashdot"),
    "yarn": (OKABE_ITO[3], "solid"),
    "llama3": (OKABE_ITO[5], "longdash"),
    "longrope": (OKABE_ITO[4], "solid"),
}


def method_style(name: str, index: int) -> tuple[str, str]:
    """Colour and dash for a curve: the method's own style if ``name`` starts with a method name.

    ``"yarn (β_fast = 32)"`` and ``"yarn: 0.1 ln s + 1"`` get yarn's colour; unknown names cycle
    through the palette by ``index``.
    """
    words = str(name).replace(":", " ").replace(",", " ").split()
    key = words[0].lower() if words else ""
    if key in METHOD_STYLES:
        return METHOD_STYLES[key]
    dashes = ("solid", "dash", "dot", "dashdot", "longdash")
    return OKABE_ITO[index % len(OKABE_ITO)], dashes[index % len(dashes)]


def _assign_styles(names: Sequence[str]) -> list[tuple[str, str]]:
    """One (colour, dash) per curve, all colours distinct within the figure.

    A method's own style goes to its first curve; later curves of the same method, and unknown
    names, take the first palette colour that no curve of this figure uses or will use (yellow,
    hard to read on a light page, is never picked).
    """
    own = [method_style(name, n) for n, name in enumerate(names)]
    reserved = {color for (color, _), name in zip(own, names, strict=True) if _is_method(name)}
    dashes = ("solid", "dash", "dot", "dashdot", "longdash")
    styles: list[tuple[str, str]] = []
    for n, (name, style) in enumerate(zip(names, own, strict=True)):
        used = {color for color, _ in styles}
        if not _is_method(name) or style[0] in used:
            free = [c for c in OKABE_ITO if c != OKABE_ITO[6] and c not in used | reserved]
            free = free or [c for c in OKABE_ITO if c != OKABE_ITO[6] and c not in used]
            style = (free[0] if free else OKABE_ITO[n % len(OKABE_ITO)], dashes[n % len(dashes)])
        styles.append(style)
    return styles


def _is_method(name: str) -> bool:
    words = str(name).replace(":", " ").replace(",", " ").split()
    return bool(words) and words[0].lower() in METHOD_STYLES


# --------------------------------------------------------------------------------------------------
# argument checks
# --------------------------------------------------------------------------------------------------


def _vector(name: str, value: object, length: int | None = None) -> np.ndarray:
    """A 1-D float64 array (rounded) of ``length`` entries from a tensor, array or sequence."""
    if isinstance(value, torch.Tensor):
        if value.is_complex() or value.dtype == torch.bool:
            raise TypeError(f"{name} must hold real numbers, got dtype {value.dtype}")
    elif not isinstance(value, np.ndarray | Sequence) or isinstance(value, str):
        raise TypeError(
            f"{name} must be a 1-D tensor, array or sequence, got {type(value).__name__}"
        )
    array = rounded(value)
    if array.ndim != 1 or array.size == 0 or (length is not None and array.shape[0] != length):
        want = f"[{length}]" if length is not None else "1-D and non-empty"
        raise ValueError(f"{name} must have shape {want}, got {list(array.shape)}")
    if not np.isfinite(array).all():
        raise ValueError(f"{name} must hold finite numbers")
    return array


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


def _mapping(name: str, value: object) -> Mapping:
    if not isinstance(value, Mapping):
        raise TypeError(f"{name} must be a mapping, got {type(value).__name__}")
    if len(value) == 0:
        raise ValueError(f"{name} must hold at least one entry")
    return value


def _active(active: object, n_steps: int) -> int:
    active = check_int("active", active, minimum=0)
    if active >= n_steps:
        raise ValueError(f"active must be in [0, {n_steps - 1}], got {active}")
    return active


def _add_slider(
    fig: go.Figure,
    *,
    n_static: int,
    per_step: int,
    labels: Sequence[str],
    prefix: str,
    active: int,
    titles: Sequence[str] | None = None,
) -> None:
    """A ``layout.sliders`` slider over groups of ``per_step`` traces added after ``n_static``.

    Same contract as :func:`lib.viz.core.slider_figure`, for figures built with subplots.
    """
    add_step_slider(
        fig,
        labels,
        n_static=n_static,
        per_step=per_step,
        prefix=prefix,
        active=active,
        step_titles=titles,
    )
    if titles is not None:
        fig.update_layout(title={"text": titles[active], "x": 0.02, "xanchor": "left"})


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
    curves: Mapping[str, torch.Tensor],
    context_lengths: Mapping[str, float],
    *,
    caption: str | None = None,
    alt: str | None = None,
    height: int = 420,
) -> go.Figure:
    """Wavelength ``λ_i = 2π/θ_i`` (tokens, log scale) of every RoPE pair, one line per curve.

    Equation: ``λ_i = 2π / θ_i``, ``θ_i = base^(−2i/d_head)`` for plain RoPE (Su et al. 2021,
    arXiv 2104.09864), or whatever scaled ``θ'_i`` a curve holds. Dotted horizontal lines mark
    context lengths: a pair whose wavelength lies above a context line never completes a turn
    within that many tokens.

    Args:
        curves: name -> inverse frequencies ``[d_half]`` (float tensors, all the same length).
        context_lengths: label -> a length in tokens (> 0), drawn as a horizontal line.
        caption, alt: passed to :func:`lib.viz.core.apply_theme`.
        height: figure height in pixels.

    Returns:
        A figure with one line trace per curve (x = pair index i).

    Raises:
        TypeError / ValueError: a curve is not a 1-D tensor of positive values, lengths differ, a
        context length is not a positive number.
    """
    _mapping("curves", curves)
    _mapping("context_lengths", context_lengths)
    height = check_positive_int("height", height)
    arrays = {str(k): _inv_freq(f"curves[{k!r}]", v) for k, v in curves.items()}
    lengths = {a.size for a in arrays.values()}
    if len(lengths) != 1:
        raise ValueError(f"every curve must have the same number of pairs, got {sorted(lengths)}")
    n_pairs = next(iter(lengths))
    fig = go.Figure()
    styles = _assign_styles(list(arrays))
    for n, (name, inv) in enumerate(arrays.items()):
        color, dash = styles[n]
        fig.add_trace(
            go.Scatter(
                x=list(range(inv.size)),
                y=rounded(_TWO_PI / inv).tolist(),
                mode="lines+markers",
                marker={"size": 4},
                name=name,
                line={"color": color, "dash": dash, "width": 2},
                hovertemplate="pair %{x}<br>λ = %{y:,.4g} tokens<extra>" + name + "</extra>",
            )
        )
    for label, length in context_lengths.items():
        value = _positive_number(f"context_lengths[{label!r}]", length)
        _ref_line(fig, [0, n_pairs - 1], [value, value], f"{label}: {_fmt_tokens(value)}")
    fig.update_xaxes(title="pair index i (fast → slow)")
    fig.update_yaxes(title="wavelength λ = 2π/θ (tokens)", type="log", exponentformat="power")
    fig.update_layout(legend={"orientation": "h", "y": 1.12, "x": 0})
    return apply_theme(fig, caption=caption, alt=alt, height=height)


def _positive_number(name: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"{name} must be a number, got {type(value).__name__}")
    value = float(value)
    if not math.isfinite(value) or value <= 0:
        raise ValueError(f"{name} must be finite and > 0, got {value}")
    return value


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

    Equation: a query and a key at most ``L − 1`` tokens apart meet at relative angles
    ``(m − n)·θ_i`` with ``|m − n| ≤ L − 1``; so pair i's largest angle in training is
    ``(L − 1)·θ_i`` and at a new length L' it is ``(L' − 1)·θ_i`` (RoPE, Su et al. 2021,
    arXiv 2104.09864; the failure analysis of Chen et al. 2023, arXiv 2306.15595). Where
    ``(L − 1)·θ_i < 2π`` the pair never completed a turn in training, and every angle beyond
    ``(L − 1)·θ_i`` is one the model has never seen for that pair: those pairs are marked.

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
    active = _active(active, len(new))
    pairs = list(range(theta.size))
    seen = (trained_len - 1) * theta  # [d_half] largest relative angle in training
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
        needed = (length - 1) * theta
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
    _add_slider(
        fig,
        n_static=2,
        per_step=2,
        labels=[f"{v:,}" for v in new],
        prefix="new length L′ = ",
        active=active,
    )
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

    Equation: pair i's rotation for a query–key offset k is the point ``(cos kθ_i, sin kθ_i)``.
    Offsets ``0 … L − 1`` sweep the arc from 0 to ``(L − 1)θ_i`` (the whole circle once that
    exceeds 2π); offsets ``L … L' − 1`` add the arc up to ``(L' − 1)θ_i``. Only the part of the
    new arc that training did not cover is drawn, outside the circle (Su et al. 2021,
    arXiv 2104.09864; Chen et al. 2023, arXiv 2306.15595).

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
    active = _active(active, len(chosen))

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
        wavelength = _TWO_PI / theta[i]
        turns = (trained_len - 1) * theta[i] / _TWO_PI
        shown = float(rounded([wavelength])[0])
        titles.append(
            f"pair {i}: λ = {shown:,.0f} tokens"
            if shown >= 100
            else f"pair {i}: λ = {shown:.3g} tokens"
        )
        titles[-1] += f", {float(rounded([turns], 3)[0]):,.3g} turns in training"
    _add_slider(
        fig,
        n_static=1,
        per_step=2,
        labels=[str(i) for i in chosen],
        prefix="pair i = ",
        active=active,
        titles=titles,
    )
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
    caption: str | None = None,
    alt: str | None = None,
) -> go.Figure:
    """Two panels per scaling factor s: the wavelength of every pair, and its stretch over default.

    Equations: ``λ'_i = 2π/θ'_i`` (left, log scale, against pair i) and the stretch
    ``λ'_i/λ_i = θ_i/θ'_i`` (right, against the *original* wavelength λ_i, both axes log) — 1 for a
    pair left alone, s for a pair interpolated like position interpolation (Chen et al. 2023,
    arXiv 2306.15595). Dotted lines mark the original context L and the target s·L (left) and L
    (right), which is where YaRN (Peng et al. 2023, arXiv 2309.00071) and Llama 3.1's scaling
    (Grattafiori et al. 2024, arXiv 2407.21783) place their thresholds.

    Args:
        scaled: scaling factor s -> (method name -> scaled inverse frequencies ``[d_half]``); every
            s holds the same method names. One slider step per s (no slider if there is one s).
        default_inv_freq: ``[d_half]``, the unscaled θ_i.
        original_len: the original (trained) context length L, in tokens.
        active: the step shown first.
        prefix: text before the slider's current value.
        caption, alt: passed to :func:`lib.viz.core.apply_theme`.

    Returns:
        A figure with ``2 × n_methods`` traces per step (left and right panel).

    Raises:
        TypeError / ValueError: shapes differ, names differ between steps, non-positive values.
    """
    _mapping("scaled", scaled)
    theta = _inv_freq("default_inv_freq", default_inv_freq)
    original_len = check_positive_int("original_len", original_len)
    factors = [_positive_number("scaled key (the scaling factor)", s) for s in scaled]
    active = _active(active, len(factors))
    names = [str(n) for n in _mapping("scaled[first]", next(iter(scaled.values())))]
    wavelength = _TWO_PI / theta  # [d_half] original wavelengths
    pairs = list(range(theta.size))

    steps = []  # per s: [(name, inv_freq as float64)]
    for s, methods in zip(factors, scaled.values(), strict=True):
        methods = _mapping(f"scaled[{s:g}]", methods)
        if [str(n) for n in methods] != names:
            raise ValueError(f"scaled[{s:g}] must hold the same methods {names}, in that order")
        steps.append(
            [
                (str(n), _inv_freq(f"scaled[{s:g}][{n!r}]", v, theta.size))
                for n, v in methods.items()
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
    styles = _assign_styles(names)
    for s, step in zip(factors, steps, strict=True):
        for n, (name, inv) in enumerate(step):
            color, dash = styles[n]
            line = {"color": color, "dash": dash, "width": 2.5 if n == 0 else 2}
            fig.add_trace(
                go.Scatter(
                    x=pairs, y=rounded(_TWO_PI / inv).tolist(), mode="lines", name=name,
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
        _add_slider(
            fig,
            n_static=2,
            per_step=2 * len(names) + 1,
            labels=[f"{s:g}" for s in factors],
            prefix=prefix,
            active=active,
        )
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
    caption: str | None = None,
    alt: str | None = None,
    height: int = 400,
) -> go.Figure:
    """Lines of several named curves over one x axis, with optional labelled reference lines.

    Used for quantities that depend on one number: dynamic NTK's stretch against the current
    sequence length (emozilla 2023), or YaRN's and LongRoPE's attention factors against the
    scaling factor (Peng et al. 2023, arXiv 2309.00071; Ding et al. 2024, arXiv 2402.13753).

    Args:
        x: ``[N]`` x values.
        curves: name -> ``[N]`` y values; a name starting with a method name gets its style.
        x_title, y_title: axis titles.
        log_x, log_y: logarithmic axes.
        vlines, hlines: label -> position of a dotted reference line.
        caption, alt: passed to :func:`lib.viz.core.apply_theme`.
        height: figure height in pixels.

    Returns:
        A figure with one line trace per curve.
    """
    xs = _vector("x", x)
    _mapping("curves", curves)
    height = check_positive_int("height", height)
    fig = go.Figure()
    styles = _assign_styles([str(k) for k in curves])
    for n, (name, values) in enumerate(curves.items()):
        ys = _vector(f"curves[{name!r}]", values, xs.size)
        color, dash = styles[n]
        fig.add_trace(
            go.Scatter(
                x=xs.tolist(), y=ys.tolist(), mode="lines", name=str(name),
                line={"color": color, "dash": dash, "width": 2.5},
                hovertemplate="%{x:,.4g} → %{y:,.4g}<extra>" + str(name) + "</extra>",
            )
        )  # fmt: skip
    all_y = np.concatenate([_vector(f"curves[{k!r}]", v, xs.size) for k, v in curves.items()])
    y_span = [float(all_y.min()), float(all_y.max())]
    for label, value in (vlines or {}).items():
        value = _positive_number(f"vlines[{label!r}]", value)
        _ref_line(fig, [value, value], y_span, str(label), label_at_start=False)
    for label, value in (hlines or {}).items():
        value = _positive_number(f"hlines[{label!r}]", value)
        _ref_line(fig, [float(xs.min()), float(xs.max())], [value, value], str(label))
    fig.update_xaxes(title=x_title, type="log" if log_x else "linear")
    fig.update_yaxes(title=y_title, type="log" if log_y else "linear")
    if log_y and y_span[0] > 0:
        fig.update_yaxes(**_log2_ticks(y_span[0], y_span[1]))
    fig.update_layout(legend={"orientation": "h", "y": 1.14, "x": 0})
    return apply_theme(fig, caption=caption, alt=alt, height=height)
