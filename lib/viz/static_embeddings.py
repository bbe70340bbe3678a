"""Figures for chapter 2 (one-hot and static embeddings): projections, similarities, GloVe's weight.

The projections (:func:`lib.similarity.pca_2d`) and similarities (:func:`lib.similarity.cosine_matrix`)
are computed in :mod:`lib.similarity`; these builders draw them:

- :func:`training_projection_slider`: word vectors projected to 2-D at every training snapshot, one
  slider step per snapshot (noise at epoch 0, structure at the end);
- :func:`offset_pairs_figure`: word pairs (man → woman, france → paris, ...) as arrows in a 2-D
  projection, one panel per relation, to show that a relation is (roughly) one offset;
- :func:`similarity_heatmaps`: cosine-similarity matrices of the same words side by side (one-hot,
  word2vec, GloVe ...);
- :func:`glove_weight_figure`: GloVe's weighting function f(x) with the distribution of a corpus's
  co-occurrence counts underneath.

Figure data is rounded with :func:`lib.viz.core.rounded`; sliders are ``layout.sliders`` and work in
a static page.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import plotly.graph_objects as go
import torch
from plotly.subplots import make_subplots

from lib._checks import check_floating, check_index, check_int, check_positive_float
from lib.glove import count_histogram, glove_weight
from lib.similarity import pca_2d, rms_norm
from lib.viz.core import (
    LINE_COLOURS,
    OKABE_ITO,
    apply_theme,
    palette,
    rounded,
    signed_scale,
    slider_figure,
)

__all__ = [
    "glove_weight_figure",
    "offset_pairs_figure",
    "similarity_heatmaps",
    "training_projection_slider",
]

#: Half-width of the square plot area of a projection scaled to max |coordinate| = 1.
_LIMIT = 1.25
#: Label positions, alternated between the words of a group so that close neighbours overlap less.
_TEXT_POSITIONS = ("top center", "bottom center")


# --- argument checks -------------------------------------------------------------------------------


def _matrix(name: str, value: object) -> torch.Tensor:
    value = check_floating(name, value)
    if value.dim() != 2:
        raise ValueError(f"{name} must be 2-D [N, d], got shape {tuple(value.shape)}")
    return value


def _words(name: str, value: object) -> list[str]:
    if isinstance(value, str) or not isinstance(value, Sequence):
        raise TypeError(f"{name} must be a sequence of strings, got {type(value).__name__}")
    if not all(isinstance(w, str) for w in value):
        raise TypeError(f"{name} must hold only strings, got {list(value)!r}")
    return list(value)


def _rows(name: str, words: Sequence[str], vocab_words: Sequence[str]) -> list[int]:
    """Row index of each word in ``vocab_words``; ``KeyError`` naming the missing word."""
    index = {w: i for i, w in enumerate(vocab_words)}
    missing = [w for w in words if w not in index]
    if missing:
        raise KeyError(f"{name}: {missing} not in vocab_words ({len(vocab_words)} words)")
    return [index[w] for w in words]


def _fit_unit(coords: torch.Tensor) -> torch.Tensor:
    """Scale ``[N, 2]`` coordinates so that the largest ``abs(coordinate)`` is 1."""
    scale = coords.abs().max()
    return coords / scale if scale > 0 else coords


def _check_groups(groups: object) -> dict[str, list[str]]:
    if not isinstance(groups, Mapping) or not groups:
        raise TypeError(f"groups must be a non-empty mapping name -> words, got {groups!r}")
    checked = {str(name): _words(f"groups[{name!r}]", words) for name, words in groups.items()}
    seen: set[str] = set()
    for name, words in checked.items():
        if not words:
            raise ValueError(f"groups[{name!r}] is empty")
        repeated = seen.intersection(words)
        if repeated:
            raise ValueError(f"groups[{name!r}] repeats {sorted(repeated)} from another group")
        seen.update(words)
    return checked


def training_projection_slider(
    snapshots: Sequence[torch.Tensor],
    epochs: Sequence[int],
    vocab_words: Sequence[str],
    groups: Mapping[str, Sequence[str]],
    *,
    losses: Sequence[float] | None = None,
    active: int | None = None,
    caption: str | None = None,
    alt: str | None = None,
) -> go.Figure:
    """Word vectors in 2-D at every training snapshot, one slider step per snapshot.

    For each snapshot the vectors of the words in ``groups`` are projected with
    :func:`lib.similarity.pca_2d` (fitted on those words only), rotated to best match the last
    snapshot's projection, and scaled so that the largest ``abs(coordinate)`` is 1 (the vectors grow
    during training; the scale is reported in the step title as the RMS norm of the plotted
    vectors, :func:`lib.similarity.rms_norm`). One marker-and-label trace per group, in the
    Okabe–Ito colours. Meant for word2vec snapshots (Mikolov et al. 2013, arXiv:1301.3781).

    Args:
        snapshots: S tensors ``[V, d]`` (e.g. ``TrainingHistory.snapshots``).
        epochs: S epoch numbers (e.g. ``TrainingHistory.snapshot_epochs``), for the slider labels.
        vocab_words: V strings: the word of each row (e.g. ``vocab.words``).
        groups: group name -> words to plot (at most 8 groups, no word in two groups).
        losses: optional mean training loss per epoch (``TrainingHistory.losses``): ``losses[e-1]``
            is shown in the title of epoch e.
        active: the step shown first (default: the last, the trained vectors).
        caption, alt: passed to :func:`lib.viz.core.apply_theme`.

    Returns:
        A figure with ``S × len(groups)`` scatter traces and one slider.

    Raises:
        TypeError / ValueError / KeyError: mismatched lengths or shapes, words missing from
        ``vocab_words``, ``active`` out of range.
    """
    if isinstance(snapshots, torch.Tensor) or not isinstance(snapshots, Sequence) or not snapshots:
        raise TypeError("snapshots must be a non-empty sequence of [V, d] tensors")
    snapshots = [_matrix(f"snapshots[{k}]", s) for k, s in enumerate(snapshots)]
    vocab_words = _words("vocab_words", vocab_words)
    for k, s in enumerate(snapshots):
        if s.shape != snapshots[0].shape or s.shape[0] != len(vocab_words):
            raise ValueError(
                f"snapshots[{k}] must have shape [V, d] = [{len(vocab_words)}, "
                f"{snapshots[0].shape[1]}] like the others, got {tuple(s.shape)}"
            )
    epochs = [check_int(f"epochs[{k}]", e, minimum=0) for k, e in enumerate(epochs)]
    if len(epochs) != len(snapshots):
        raise ValueError(
            f"epochs must have one entry per snapshot ({len(snapshots)}), got {epochs}"
        )
    groups = _check_groups(groups)
    if len(groups) > len(LINE_COLOURS):
        raise ValueError(f"groups must hold at most {len(LINE_COLOURS)} groups, got {len(groups)}")
    if losses is not None:
        losses = [
            check_positive_float(f"losses[{k}]", x, allow_zero=True) for k, x in enumerate(losses)
        ]
        if max(epochs) > len(losses):
            raise ValueError(f"losses must cover epoch {max(epochs)}, got {len(losses)} entries")
    n_steps = len(snapshots)
    active = n_steps - 1 if active is None else check_index("active", active, n_steps)

    words = [w for ws in groups.values() for w in ws]
    rows = _rows("groups", words, vocab_words)
    final = pca_2d(snapshots[-1][rows])  # [N, 2], the reference orientation
    steps, titles = [], []
    for snapshot, epoch in zip(snapshots, epochs, strict=True):
        selected = snapshot[rows]  # [N, d]
        coords = rounded(_fit_unit(pca_2d(selected, reference=final)))  # [N, 2]
        rms = float(rms_norm(selected))
        title = f"epoch {epoch}"
        if losses is not None and epoch > 0:
            title += f" · mean loss {losses[epoch - 1]:.3f}"
        titles.append(f"{title} · RMS vector norm {rms:.3g}")
        traces, start = [], 0
        for g, (name, group_words) in enumerate(groups.items()):
            colour = palette(g)
            xy = coords[start : start + len(group_words)]
            start += len(group_words)
            traces.append(
                go.Scatter(
                    x=xy[:, 0].tolist(),
                    y=xy[:, 1].tolist(),
                    mode="markers+text",
                    text=group_words,
                    textposition=[_TEXT_POSITIONS[k % 2] for k in range(len(group_words))],
                    textfont={"size": 11, "color": colour},
                    marker={"size": 8, "color": colour},
                    name=name,
                    legendgroup=name,
                    hovertemplate="%{text}<br>(%{x:.2f}, %{y:.2f})<extra>" + name + "</extra>",
                )
            )
        steps.append(traces)
    fig = slider_figure(
        steps, [str(e) for e in epochs], prefix="epoch ", active=active, step_titles=titles
    )
    fig.update_xaxes(title="principal axis 1 (scaled)", range=[-_LIMIT, _LIMIT], zeroline=False)
    fig.update_yaxes(
        title="principal axis 2 (scaled)", range=[-_LIMIT, _LIMIT], zeroline=False,
        scaleanchor="x", scaleratio=1,
    )  # fmt: skip
    fig.update_layout(height=620, legend={"itemsizing": "constant"})
    return apply_theme(fig, caption=caption, alt=alt)


def offset_pairs_figure(
    vectors: torch.Tensor,
    vocab_words: Sequence[str],
    panels: Mapping[str, Sequence[tuple[str, str]]],
    *,
    caption: str | None = None,
    alt: str | None = None,
) -> go.Figure:
    """Word pairs as arrows (first word → second) in a 2-D PCA of their vectors, one panel per relation.

    If a relation is a constant offset, w(b) − w(a) ≈ r for every pair (a, b) (the vector offset
    method of Mikolov, Yih & Zweig 2013; arXiv:1301.3781 for word2vec), the arrows come out parallel
    and of similar length. Each panel's projection (:func:`lib.similarity.pca_2d`) is fitted on that panel's words
    only.

    Args:
        vectors: ``[V, d]`` word vectors, row i for ``vocab_words[i]``.
        vocab_words: V strings.
        panels: panel title -> pairs ``(a, b)``; at least 2 distinct words per panel.
        caption, alt: passed to :func:`lib.viz.core.apply_theme`.

    Returns:
        A figure with one subplot per panel: a marker-and-label trace and one arrow annotation per
        pair.
    """
    vectors = _matrix("vectors", vectors)
    vocab_words = _words("vocab_words", vocab_words)
    if vectors.shape[0] != len(vocab_words):
        raise ValueError(
            f"vectors must have one row per word of vocab_words ({len(vocab_words)}), "
            f"got shape {tuple(vectors.shape)}"
        )
    if not isinstance(panels, Mapping) or not panels:
        raise TypeError(f"panels must be a non-empty mapping title -> pairs, got {panels!r}")
    fig = make_subplots(
        rows=1, cols=len(panels), subplot_titles=list(panels), horizontal_spacing=0.06
    )
    for col, (title, pairs) in enumerate(panels.items(), start=1):
        if not pairs or not all(isinstance(p, tuple) and len(p) == 2 for p in pairs):
            raise ValueError(f"panels[{title!r}] must be a non-empty list of (a, b) pairs")
        words = list(dict.fromkeys(w for pair in pairs for w in pair))  # unique, in order
        rows = _rows(f"panels[{title!r}]", words, vocab_words)
        coords = rounded(_fit_unit(pca_2d(vectors[rows])))  # [N, 2]
        where = {w: coords[k] for k, w in enumerate(words)}
        colour = palette(col - 1)
        fig.add_trace(
            go.Scatter(
                x=coords[:, 0].tolist(),
                y=coords[:, 1].tolist(),
                mode="markers+text",
                text=words,
                textposition="top center",
                marker={"size": 8, "color": colour},
                showlegend=False,
                hovertemplate="%{text}<extra></extra>",
            ),
            row=1,
            col=col,
        )
        axis = "" if col == 1 else str(col)
        for a, b in pairs:
            fig.add_annotation(
                x=float(where[b][0]), y=float(where[b][1]),
                ax=float(where[a][0]), ay=float(where[a][1]),
                xref=f"x{axis}", yref=f"y{axis}", axref=f"x{axis}", ayref=f"y{axis}",
                showarrow=True, arrowhead=2, arrowsize=1.2, arrowwidth=1.5, arrowcolor=colour,
                text="", standoff=5, startstandoff=5,
            )  # fmt: skip
        fig.update_xaxes(row=1, col=col, range=[-_LIMIT, _LIMIT], title="axis 1")
        fig.update_yaxes(
            row=1, col=col, range=[-_LIMIT, _LIMIT], title="axis 2" if col == 1 else None,
            scaleanchor=f"x{axis}", scaleratio=1,
        )  # fmt: skip
    fig.update_layout(height=430)
    return apply_theme(fig, caption=caption, alt=alt)


def similarity_heatmaps(
    matrices: Mapping[str, torch.Tensor],
    labels: Sequence[str],
    *,
    caption: str | None = None,
    alt: str | None = None,
) -> go.Figure:
    """Square similarity matrices of the same N items side by side, on one colour scale [−1, 1].

    Meant for cosine similarities cos(x, y) = x·y / (‖x‖ ‖y‖) of word vectors: one-hot vectors
    give the identity (Mikolov et al. 2013, section 2), trained vectors do not. Diverging scale
    (``RdBu_r``) centred on 0.

    Equation:
        cos(x, y) = x·y / (‖x‖ ‖y‖)

    Args:
        matrices: ``{panel title: [N, N] similarities}``, one heatmap panel each, left to right.
        labels: the N item names (rows top to bottom, columns left to right).
        caption, alt: passed to :func:`lib.viz.core.apply_theme`.

    Returns:
        A figure with one heatmap per matrix and one shared colour bar.

    Raises:
        TypeError: ``matrices`` is not a non-empty mapping, a matrix is not a floating tensor, or
            ``labels`` is not a sequence of strings.
        ValueError: a matrix is not ``[N, N]`` with ``N = len(labels)``.

    Shapes:
        matrices[title]: [N, N]
        labels: N strings

    References:
        Mikolov et al., Efficient Estimation of Word Representations in Vector Space,
        arXiv:1301.3781.
    """
    if not isinstance(matrices, Mapping) or not matrices:
        raise TypeError(f"matrices must be a non-empty mapping title -> [N, N], got {matrices!r}")
    labels = _words("labels", labels)
    n = len(labels)
    fig = make_subplots(
        rows=1, cols=len(matrices), subplot_titles=list(matrices), horizontal_spacing=0.08
    )
    for col, (title, matrix) in enumerate(matrices.items(), start=1):
        matrix = check_floating(f"matrices[{title!r}]", matrix)
        if tuple(matrix.shape) != (n, n):
            raise ValueError(
                f"matrices[{title!r}] must be [N, N] with N = len(labels) = {n}, "
                f"got {tuple(matrix.shape)}"
            )
        fig.add_trace(
            go.Heatmap(
                z=rounded(matrix).tolist(),
                x=list(range(n)),
                y=list(range(n)),
                customdata=[[[a, b] for b in labels] for a in labels],
                **signed_scale(1.0),
                showscale=col == len(matrices),
                colorbar={"title": {"text": "cosine"}},
                hovertemplate="%{customdata[0]} · %{customdata[1]}<br>cos %{z:.3f}"
                f"<extra>{title}</extra>",
            ),
            row=1,
            col=col,
        )
        ticks = {"tickmode": "array", "tickvals": list(range(n)), "ticktext": labels}
        fig.update_xaxes(row=1, col=col, tickangle=-60, showgrid=False, **ticks)
        fig.update_yaxes(
            row=1, col=col, autorange="reversed", showticklabels=col == 1, showgrid=False, **ticks
        )
    fig.update_layout(height=420)
    return apply_theme(fig, caption=caption, alt=alt)


def glove_weight_figure(
    counts: torch.Tensor | None = None,
    *,
    x_max: float = 100.0,
    alphas: Sequence[float] = (0.5, 0.75, 1.0),
    caption: str | None = None,
    alt: str | None = None,
) -> go.Figure:
    """GloVe's weighting function f(x) = (x / x_max)^α for x < x_max, else 1, on a log x-axis.

    One curve per α (α = 3/4, the paper's choice, drawn thicker), from
    :func:`lib.glove.glove_weight`. If ``counts`` (the nonzero co-occurrence values X_ij of a
    corpus) is given, their distribution is drawn underneath as a histogram over 30 log-spaced bins
    (:func:`lib.glove.count_histogram`: share of the M entries, right axis).

    Equation:
        f(x) = (x / x_max)^α if x < x_max, else 1

    Args:
        counts: the nonzero co-occurrence counts, or None for the curves alone.
        x_max: the cutoff where the weight reaches 1, > 0.
        alphas: the exponents α, one curve each, each > 0.
        caption, alt: passed to :func:`lib.viz.core.apply_theme`.

    Returns:
        A figure with one line per α (and, with ``counts``, a histogram on a right-hand axis).

    Raises:
        TypeError: ``x_max`` or an α is not a real number, or ``counts`` is not a floating tensor.
        ValueError: ``x_max`` or an α is not > 0, ``alphas`` is empty, or ``counts`` is not a
            non-empty 1-D tensor of positive values.

    Shapes:
        counts: [M]

    References:
        Pennington et al., GloVe, EMNLP 2014, eq. 9 (no arXiv id).
    """
    x_max = check_positive_float("x_max", x_max)
    alphas = [check_positive_float(f"alphas[{k}]", a) for k, a in enumerate(alphas)]
    if not alphas:
        raise ValueError("alphas must hold at least one exponent")
    low, high = x_max / 1000.0, x_max * 20.0
    if counts is not None:
        counts = check_floating("counts", counts)
        if counts.dim() != 1 or counts.numel() == 0 or bool((counts <= 0).any()):
            raise ValueError("counts must be a 1-D tensor of positive co-occurrence values [M]")
        low = min(low, float(counts.min()))
        high = max(high, float(counts.max()))
    x = torch.logspace(np.log10(low), np.log10(high), 200, dtype=torch.float64)  # [200]
    fig = make_subplots(specs=[[{"secondary_y": True}]])
    if counts is not None:
        hist = count_histogram(counts, low=low, high=high, bins=30)
        fig.add_trace(
            go.Bar(
                x=rounded(hist.centres).tolist(),
                y=rounded(hist.shares).tolist(),
                width=rounded(hist.edges[1:] - hist.edges[:-1]).tolist(),
                marker={"color": OKABE_ITO[7], "opacity": 0.45},
                name="share of nonzero X_ij (right axis)",
                hovertemplate="X_ij ≈ %{x:.3g}<br>share %{y:.3f}<extra></extra>",
            ),
            secondary_y=True,
        )
    for k, alpha in enumerate(alphas):
        paper = abs(alpha - 0.75) < 1e-12
        fig.add_trace(
            go.Scatter(
                x=rounded(x).tolist(),
                y=rounded(glove_weight(x, x_max, alpha)).tolist(),
                mode="lines",
                line={"color": palette(k), "width": 4 if paper else 2},
                name=f"f(x), α = {alpha:g}" + (" (paper)" if paper else ""),
                hovertemplate="x = %{x:.3g}<br>f(x) = %{y:.3f}<extra></extra>",
            ),
            secondary_y=False,
        )
    fig.add_vline(x=x_max, line={"dash": "dot", "color": OKABE_ITO[7]})
    fig.update_xaxes(type="log", title="co-occurrence count x = X_ij (log scale)")
    fig.update_yaxes(title="weight f(x)", range=[0, 1.05], secondary_y=False)
    if counts is not None:
        fig.update_yaxes(
            title="share of entries", secondary_y=True, showgrid=False, tickformat=".0%"
        )
    fig.update_layout(height=420, legend={"x": 0.72, "y": 0.85, "xanchor": "left"})
    return apply_theme(fig, caption=caption, alt=alt)
