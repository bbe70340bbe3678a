"""Figures for chapter 3 (contextual embeddings): similarity of hidden states, layer by layer.

- :func:`layer_similarity_figure`: cosine similarity of a word's hidden states across sentences,
  one line per group of sentence pairs (e.g. "same sense", "different senses"), with the spread
  of each group as a band, against the layer index;
- :func:`token_similarity_slider`: the token-by-token cosine-similarity matrix of one sentence, one
  slider step per layer (0 = the embedding layer's output), working in a static page.

Hidden states follow Hugging Face ``transformers``' convention for BERT-style encoders (Devlin et
al. 2019, arXiv:1810.04805): ``hidden_states[0]`` is the output of the embedding layer and
``hidden_states[l]`` the output of transformer layer l. Figure data is rounded with
:func:`lib.viz.core.rounded`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import plotly.graph_objects as go
import torch

from lib._checks import check_floating, check_index, check_int
from lib.similarity import cosine_matrix
from lib.viz.core import (
    LINE_COLOURS,
    apply_theme,
    palette,
    rounded,
    signed_scale,
    slider_figure,
)

__all__ = ["layer_labels", "layer_similarity_figure", "token_similarity_slider"]


def layer_labels(n_layers: int) -> list[str]:
    """Names of the ``n_layers + 1`` hidden states: ``["0 (embeddings)", "1", ..., "n_layers"]``.

    Index 0 is the embedding layer's output, index l >= 1 the output of transformer layer l, as in
    ``transformers``' ``output_hidden_states``.

    Args:
        n_layers: the number of transformer layers L, an int >= 0.

    Returns:
        ``L + 1`` labels, index 0 first.

    Raises:
        TypeError: ``n_layers`` is not an int.
        ValueError: ``n_layers < 0``.

    References:
        Devlin et al., BERT, arXiv:1810.04805.
    """
    n_layers = check_int("n_layers", n_layers, minimum=0)
    return ["0 (embeddings)"] + [str(layer) for layer in range(1, n_layers + 1)]


#: Opacity of the min-max bands of :func:`layer_similarity_figure` (in the fill colour's alpha).
BAND_ALPHA = 0.2


def _translucent(colour: str, alpha: float) -> str:
    """``"#rrggbb"`` -> ``"rgba(r, g, b, alpha)"``."""
    text = colour.lstrip("#")
    if len(text) != 6:
        raise ValueError(f"colour must be '#rrggbb', got {colour!r}")
    r, g, b = (int(text[i : i + 2], 16) for i in (0, 2, 4))
    return f"rgba({r}, {g}, {b}, {alpha})"


def _series(name: str, value: object) -> torch.Tensor:
    value = check_floating(name, value)
    if value.dim() != 2 or value.shape[0] == 0:
        raise ValueError(
            f"{name} must be 2-D [n_pairs, n_layers + 1] with n_pairs >= 1, got shape "
            f"{tuple(value.shape)}"
        )
    return value


def layer_similarity_figure(
    groups: Mapping[str, torch.Tensor],
    *,
    references: Mapping[str, torch.Tensor] | None = None,
    caption: str | None = None,
    alt: str | None = None,
) -> go.Figure:
    """Cosine similarity per layer for groups of pairs: a mean line and a min–max band per group.

    ``groups[name][p, l]`` is the cosine similarity cos(h_l^a, h_l^b) = h·h' / (‖h‖ ‖h'‖) of the
    hidden states at layer l of pair p (e.g. the word "bank" in two sentences). Each group is drawn
    as its mean over pairs (line and markers) with a shaded band from its minimum to its maximum;
    ``references`` are single curves ``[n_layers + 1]`` drawn dashed (e.g. the static lookup, whose
    cosine is 1 at every layer). Layer 0 is the embedding layer's output.

    Equation:
        cos(h_l^a, h_l^b) = h_l^a · h_l^b / (‖h_l^a‖ ‖h_l^b‖); a group's line is the mean over its
        pairs p, its band [min_p, max_p].

    Args:
        groups: ``{name: [n_pairs, L + 1] cosines}``, one band and mean line per group.
        references: ``{name: [L + 1] cosines}``, each drawn as one dashed line.
        caption, alt: passed to :func:`lib.viz.core.apply_theme`.

    Returns:
        A figure with two traces per group (band, mean line) and one per reference.

    Raises:
        TypeError: not a mapping, or a value is not a floating tensor.
        ValueError: empty ``groups``, wrong shapes, more groups and references than colours.

    Shapes:
        groups[name]: [n_pairs, L + 1] (same L + 1 for all)
        references[name]: [L + 1]

    References:
        Devlin et al., BERT, arXiv:1810.04805.
    """
    if not isinstance(groups, Mapping) or not groups:
        raise TypeError(
            f"groups must be a non-empty mapping name -> [n_pairs, L + 1], got {groups!r}"
        )
    references = {} if references is None else references
    if not isinstance(references, Mapping):
        raise TypeError(f"references must be a mapping name -> [L + 1], got {references!r}")
    series = {name: _series(f"groups[{name!r}]", v) for name, v in groups.items()}
    n_points = next(iter(series.values())).shape[1]
    for name, value in series.items():
        if value.shape[1] != n_points:
            raise ValueError(
                f"groups[{name!r}] has {value.shape[1]} layers, the first group {n_points}"
            )
    for name, value in references.items():
        value = check_floating(f"references[{name!r}]", value)
        if tuple(value.shape) != (n_points,):
            raise ValueError(
                f"references[{name!r}] must have shape [L + 1] = [{n_points}], got "
                f"{tuple(value.shape)}"
            )
    if len(series) + len(references) > len(LINE_COLOURS):
        raise ValueError(f"at most {len(LINE_COLOURS)} groups and references together")

    layers = list(range(n_points))
    labels = layer_labels(n_points - 1)
    ticks = ["0", *labels[1:]]  # "0 (embeddings)" overlapped ticks 1-2: said in the title
    fig = go.Figure()
    for k, (name, value) in enumerate(series.items()):
        colour = palette(k)
        value = value.to(torch.float64)
        mean, low, high = (
            rounded(v) for v in (value.mean(0), value.min(0).values, value.max(0).values)
        )
        fig.add_trace(
            go.Scatter(
                x=layers + layers[::-1],
                y=high.tolist() + low.tolist()[::-1],
                mode="lines",
                fill="toself",
                # the alpha in the colour itself, not trace opacity: the static PNG renderer
                # and every plotly version draw a translucent band from it
                fillcolor=_translucent(colour, BAND_ALPHA),
                line={"width": 0},
                hoverinfo="skip",
                showlegend=False,
                legendgroup=name,
            )
        )
        fig.add_trace(
            go.Scatter(
                x=layers,
                y=mean.tolist(),
                mode="lines+markers",
                line={"color": colour, "width": 3},
                marker={"size": 8, "color": colour},  # explicit: the PNG renderer needs it
                name=f"{name} ({value.shape[0]} pairs)",
                legendgroup=name,
                customdata=[
                    [lab, lo, hi]
                    for lab, lo, hi in zip(labels, low.tolist(), high.tolist(), strict=True)
                ],
                hovertemplate="layer %{customdata[0]}<br>mean cos %{y:.3f}<br>"
                "min %{customdata[1]:.3f}, max %{customdata[2]:.3f}<extra>" + name + "</extra>",
            )
        )
    for k, (name, value) in enumerate(references.items(), start=len(series)):
        fig.add_trace(
            go.Scatter(
                x=layers,
                y=rounded(value).tolist(),
                mode="lines",
                line={"color": palette(k), "width": 2, "dash": "dash"},
                name=name,
                hovertemplate="layer %{x}<br>cos %{y:.3f}<extra>" + name + "</extra>",
            )
        )
    fig.update_xaxes(
        title="layer (0 = embeddings)",
        tickmode="array",
        tickvals=layers,
        ticktext=ticks,
        range=[-0.2, n_points - 0.8],
    )
    fig.update_yaxes(title="cosine similarity")
    fig.update_layout(height=440, legend={"x": 0.01, "y": 0.01, "yanchor": "bottom"})
    return apply_theme(fig, caption=caption, alt=alt)


def token_similarity_slider(
    states: torch.Tensor,
    tokens: Sequence[str],
    *,
    highlight: Sequence[int] = (),
    active: int = 0,
    caption: str | None = None,
    alt: str | None = None,
) -> go.Figure:
    """The token-by-token cosine-similarity heatmap of one sentence, one slider step per layer.

    Step l shows ``cosine_matrix(states)[l]`` (:func:`lib.similarity.cosine_matrix`) on a diverging scale fixed to
    [−1, 1], so the steps are comparable. Tokens label both axes (in order, so repeated tokens such
    as two "bank"s stay apart); the tokens at the positions in ``highlight`` are drawn in bold.
    Layer 0 is the embedding layer's output (Devlin et al. 2019, arXiv:1810.04805).

    Args:
        states: ``[L + 1, T, d]`` hidden states of one sentence
            (e.g. :func:`lib.pretrained.sentence_hidden_states`).
        tokens: T token strings.
        highlight: token positions to emphasise.
        active: the layer shown first.
        caption, alt: passed to :func:`lib.viz.core.apply_theme`.

    Returns:
        A figure with ``L + 1`` heatmaps (one visible per step) and one slider.
    """
    states = check_floating("states", states)
    if states.dim() != 3:
        raise ValueError(f"states must be 3-D [L + 1, T, d], got shape {tuple(states.shape)}")
    cosines = cosine_matrix(states)  # [L + 1, T, T]
    n_states, n_tokens, _ = cosines.shape
    if isinstance(tokens, str) or not isinstance(tokens, Sequence):
        raise TypeError(f"tokens must be a sequence of strings, got {type(tokens).__name__}")
    if len(tokens) != n_tokens or not all(isinstance(t, str) for t in tokens):
        raise ValueError(f"tokens must hold T = {n_tokens} strings, got {list(tokens)!r}")
    highlight = [check_int(f"highlight[{k}]", h, minimum=0) for k, h in enumerate(highlight)]
    if any(h >= n_tokens for h in highlight):
        raise ValueError(f"highlight positions must be in [0, {n_tokens - 1}], got {highlight}")
    active = check_index("active", active, n_states)

    labels = layer_labels(n_states - 1)
    pair_names = [
        [f"{a} ({i}) · {b} ({j})" for j, b in enumerate(tokens)] for i, a in enumerate(tokens)
    ]
    steps = [
        [
            go.Heatmap(
                # Three decimals, not significant digits: near-zero cosines would keep float32
                # noise that differs between CPUs (the hover shows three decimals too).
                z=rounded(cosines[layer], decimals=3).tolist(),
                x=list(range(n_tokens)),
                y=list(range(n_tokens)),
                customdata=pair_names,
                **signed_scale(1.0),
                colorbar={"title": {"text": "cosine"}},
                hovertemplate="%{customdata}<br>cos %{z:.3f}<extra>layer "
                + labels[layer]
                + "</extra>",
            )
        ]
        for layer in range(n_states)
    ]
    fig = slider_figure(
        steps,
        labels,
        prefix="layer ",
        active=active,
        step_titles=[f"token-by-token cosine similarity, layer {lab}" for lab in labels],
    )
    ticktext = [f"<b>{t}</b>" if i in highlight else t for i, t in enumerate(tokens)]
    ticks = {"tickmode": "array", "tickvals": list(range(n_tokens)), "ticktext": ticktext}
    fig.update_xaxes(tickangle=-60, showgrid=False, **ticks)
    fig.update_yaxes(autorange="reversed", showgrid=False, **ticks)
    fig.update_layout(height=600)
    return apply_theme(fig, caption=caption, alt=alt)
