"""Figures for chapter 4 (weight tying): what tying saves, where the gradient goes, loss curves.

Weight tying (Press & Wolf 2017, arXiv:1608.05859) uses the input embedding ``E: [V, d]`` also as
the LM head, ``logits = h Eᵀ``. Three builders, each returning a plotly figure (never shown):

- :func:`tying_bars`: for real model configurations, the parameters (or bytes) of the input
  embedding and the LM head, tied (one ``[V, d]`` matrix) next to untied (two), with the
  published model's choice labelled and a slider over the unit (parameters, or bytes per dtype);
- :func:`gradient_split_bars`: per vocabulary row, the size of the gradient that reaches the shared
  matrix through the lookup and through the head, and of their sum (the tied gradient);
- :func:`loss_curves`: training-loss curves (block means) with an optional reference level.

Figure data is rounded with :func:`lib.viz.core.rounded`; the slider works in a static page.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import plotly.graph_objects as go
import torch

from lib._checks import check_choice, check_floating, check_index, check_int, check_positive_int
from lib.embeddings import DTYPE_BYTES, embedding_table_bytes, format_bytes
from lib.viz.core import (
    LEGEND_ABOVE,
    OKABE_ITO,
    add_step_slider,
    apply_theme,
    palette,
    rounded,
    slider_figure,
)
from lib.vocab import block_means

__all__ = ["gradient_split_bars", "loss_curves", "tying_bars", "vocabulary_share_slider"]

#: Colours: the input embedding (blue), a separate LM head (orange), their sum (green).
EMBED_COLOUR, HEAD_COLOUR, SUM_COLOUR = OKABE_ITO[0], OKABE_ITO[1], OKABE_ITO[2]
#: The unit of :func:`tying_bars`'s first slider step: a parameter count (in millions).
PARAMETERS = "parameters"
#: Opacity of the configuration a model was *not* published with.
FADED = 0.4


def _rows(rows: object) -> list[Mapping[str, Any]]:
    if isinstance(rows, Mapping | str) or not isinstance(rows, Sequence) or not rows:
        raise ValueError(
            "rows must be a non-empty list of mappings (e.g. lib.tiny_lm.tying_table()), "
            f"got {rows!r}"
        )
    for row in rows:
        missing = {"model", "vocab_size", "hidden_size", "tie_word_embeddings"} - set(row)
        if not isinstance(row, Mapping) or missing:
            raise ValueError(
                "rows must hold mappings with model, vocab_size, hidden_size and "
                f"tie_word_embeddings; got {row!r}"
            )
        check_positive_int("rows[...]['vocab_size']", row["vocab_size"])
        check_positive_int("rows[...]['hidden_size']", row["hidden_size"])
        if row["tie_word_embeddings"] not in (True, False, None):
            raise ValueError(
                "rows[...]['tie_word_embeddings'] must be True, False or None, got "
                f"{row['tie_word_embeddings']!r}"
            )
    return list(rows)


def tying_bars(
    rows: Sequence[Mapping[str, Any]],
    units: Sequence[str] = (PARAMETERS, "float32", "bfloat16"),
    *,
    active: int = 0,
    caption: str | None = None,
    alt: str | None = None,
) -> go.Figure:
    """Input embedding + LM head of real models, tied vs untied, with a slider over the unit.

    For a model with vocabulary ``V`` and width ``d`` the input embedding has ``V·d`` parameters.
    Tied (Press & Wolf 2017, arXiv:1608.05859), the head reuses it: one ``[V, d]`` matrix. Untied,
    a bias-free head ``nn.Linear(d, V)`` adds another ``V·d``. Each model gets two bars: "tied"
    (the embedding only, hatched because it also serves as the head) and "untied" (embedding +
    head, stacked). The bar matching the published model's ``tie_word_embeddings`` is labelled
    "★" and drawn in full colour, the other faded; a row with ``None`` (no LM head
    published) gets no label and no fading. Models are sorted by
    ``V·d``.

    Args:
        rows: mappings with ``model``, ``vocab_size``, ``hidden_size``, ``tie_word_embeddings``
            (e.g. :func:`lib.tiny_lm.tying_table`); an optional ``source`` shows in the hover.
        units: one slider step each: ``"parameters"`` (drawn in millions) or a key of
            :data:`lib.embeddings.DTYPE_BYTES` (bytes ``V·d·bytes_per_element``, drawn in GB).
        active: the step shown first.
        caption, alt: passed to :func:`lib.viz.core.apply_theme`.

    Returns:
        A figure with three bar traces per step (tied embedding, untied embedding, untied head)
        and one slider whose steps also set the y-axis title and range.

    Raises:
        ValueError: ``rows`` or ``units`` is empty or malformed, a unit is unknown, ``active`` is
            out of range.
    """
    rows = sorted(_rows(rows), key=lambda r: (r["vocab_size"] * r["hidden_size"], r["model"]))
    if isinstance(units, str) or not isinstance(units, Sequence) or not units:
        raise ValueError(f"units must be a non-empty sequence of unit names, got {units!r}")
    units = [check_choice("units", u, (PARAMETERS, *DTYPE_BYTES)) for u in units]
    active = check_index("active", active, len(units))

    names = [str(r["model"]) for r in rows]
    shapes = [(int(r["vocab_size"]), int(r["hidden_size"])) for r in rows]
    published = [r["tie_word_embeddings"] for r in rows]
    sources = [str(r.get("source", "")) for r in rows]

    fig = go.Figure()
    titles, ranges = [], []
    for k, unit in enumerate(units):
        if unit == PARAMETERS:
            exact = [v * d for v, d in shapes]  # V·d parameters per matrix
            values = rounded(np.array(exact, dtype=np.float64) / 1e6)
            hover_size = [
                f"{v:,} × {d:,} = {n:,} parameters" for (v, d), n in zip(shapes, exact, strict=True)
            ]
            titles.append("parameters (millions)")
        else:
            exact = [embedding_table_bytes(v, d, unit) for v, d in shapes]  # bytes per matrix
            values = rounded(np.array(exact, dtype=np.float64) / 1e9)
            hover_size = [
                f"{v:,} × {d:,} × {DTYPE_BYTES[unit]:g} B = {format_bytes(n)}"
                for (v, d), n in zip(shapes, exact, strict=True)
            ]
            titles.append(f"GB in {unit} (10⁹ bytes)")
        ranges.append([0.0, float(2 * values.max()) * 1.15])
        custom = [[h, s] for h, s in zip(hover_size, sources, strict=True)]
        hover = "%{x}: %{meta}<br>%{customdata[0]} per matrix<br>config: %{customdata[1]}"
        tied_text = ["★" if p is True else "" for p in published]
        untied_text = ["★" if p is False else "" for p in published]
        # the published configuration in full colour, the alternative faded
        tied_opacity = [FADED if p is False else 1.0 for p in published]
        untied_opacity = [FADED if p is True else 1.0 for p in published]
        common = {
            "x": names,
            "y": values.tolist(),
            "customdata": custom,
            "hovertemplate": hover + "<extra></extra>",
            "showlegend": k == active,
            "visible": k == active,
            "textposition": "outside",
            "textfont": {"size": 16},
            "constraintext": "none",
            "cliponaxis": False,
        }
        fig.add_trace(
            go.Bar(
                name="tied: one matrix, used as embedding and head",
                offsetgroup="tied",
                legendgroup="tied",
                marker={
                    "color": EMBED_COLOUR,
                    "pattern": {"shape": "/", "fgcolor": HEAD_COLOUR},
                    "opacity": tied_opacity,
                },
                text=tied_text,
                meta="tied",
                **common,
            )
        )
        fig.add_trace(
            go.Bar(
                name="untied: input embedding",
                offsetgroup="untied",
                legendgroup="embed",
                marker={"color": EMBED_COLOUR, "opacity": untied_opacity},
                meta="untied, input embedding",
                **common,
            )
        )
        fig.add_trace(
            go.Bar(
                base=values.tolist(),
                name="untied: separate LM head",
                offsetgroup="untied",
                legendgroup="head",
                marker={"color": HEAD_COLOUR, "opacity": untied_opacity},
                text=untied_text,
                meta="untied, LM head",
                **common,
            )
        )

    add_step_slider(
        fig, [PARAMETERS if unit == PARAMETERS else f"bytes, {unit}" for unit in units],
        n_static=0, per_step=3, prefix="unit: ", active=active, legend_follows=True,
        step_layouts=[
            {"yaxis.title.text": t, "yaxis.range": r} for t, r in zip(titles, ranges, strict=True)
        ],
        pad_t=90, x=0.05, length=0.9,
    )  # fmt: skip
    fig.update_layout(
        barmode="group",
        height=500,
        legend=LEGEND_ABOVE,
    )
    fig.update_yaxes(title=titles[active], range=ranges[active])
    fig.update_xaxes(tickangle=-30)
    return apply_theme(fig, caption=caption, alt=alt)


def _escape(label: str) -> str:
    """Escape ``<`` and ``>`` so plotly shows a token such as ``</s>`` instead of reading HTML."""
    return label.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def gradient_split_bars(
    lookup_grad: torch.Tensor,
    head_grad: torch.Tensor,
    tokens: Sequence[str],
    *,
    caption: str | None = None,
    alt: str | None = None,
) -> go.Figure:
    """Per vocabulary row: ‖gradient through the lookup‖, ‖through the head‖, ‖their sum‖.

    In a tied model the shared matrix ``E`` receives ``∂L/∂E = ∂L/∂E|lookup + ∂L/∂E|head``
    (Press & Wolf 2017). The lookup part is nonzero only in rows that were looked up; the head
    part reaches every row (the softmax pushes every logit). Each bar is a row's L2 norm (computed
    in float64).

    Equation:
        ∂L/∂E = ∂L/∂E|lookup + ∂L/∂E|head; bar of row v = ‖(∂L/∂E)_v‖₂

    Args:
        lookup_grad: the gradient reaching ``E`` through the embedding lookup.
        head_grad: the gradient reaching ``E`` through the LM head.
        tokens: one label per row of ``E``.
        caption, alt: passed to :func:`lib.viz.core.apply_theme`.

    Returns:
        A grouped bar figure with three traces (lookup, head, their sum), one bar per row.

    Raises:
        TypeError: a gradient is not a floating tensor.
        ValueError: shapes differ, are not 2-D, or ``tokens`` does not have ``V`` entries.

    Shapes:
        lookup_grad, head_grad: [V, d] floating
        tokens: V labels

    References:
        Press & Wolf, Using the Output Embedding to Improve Language Models, arXiv:1608.05859.
    """
    lookup_grad = check_floating("lookup_grad", lookup_grad)
    head_grad = check_floating("head_grad", head_grad)
    if lookup_grad.dim() != 2 or lookup_grad.shape != head_grad.shape:
        raise ValueError(
            "lookup_grad and head_grad must both be [V, d] with the same shape, got "
            f"{list(lookup_grad.shape)} and {list(head_grad.shape)}"
        )
    if isinstance(tokens, str) or len(tokens) != lookup_grad.shape[0]:
        raise ValueError(
            f"tokens must hold one label per row (V = {lookup_grad.shape[0]}), got {tokens!r}"
        )
    parts = {
        "through the lookup": (lookup_grad, EMBED_COLOUR),
        "through the head": (head_grad, HEAD_COLOUR),
        "tied gradient (the sum)": (lookup_grad.double() + head_grad.double(), SUM_COLOUR),
    }
    labels = [_escape(str(t)) for t in tokens]
    fig = go.Figure()
    for name, (grad, colour) in parts.items():
        norms = rounded(grad.detach().double().norm(dim=-1))  # [V]
        fig.add_trace(
            go.Bar(
                x=labels,
                y=norms.tolist(),
                name=name,
                marker={"color": colour},
                hovertemplate="row %{x}<br>‖gradient‖ = %{y:.3g}<extra>" + name + "</extra>",
            )
        )
    fig.update_layout(
        barmode="group",
        height=440,
        legend=LEGEND_ABOVE,
    )
    fig.update_xaxes(title="row of E (token)")
    fig.update_yaxes(title="L2 norm of the row's gradient")
    return apply_theme(fig, caption=caption, alt=alt)


def loss_curves(
    histories: Mapping[str, Sequence[float]],
    *,
    block: int = 20,
    reference: float | None = None,
    reference_label: str = "",
    caption: str | None = None,
    alt: str | None = None,
    digits: int = 3,
) -> go.Figure:
    """Training-loss curves, one line per run, as means over blocks of ``block`` steps.

    Point ``j`` of a run is the mean loss of steps ``j·block … (j+1)·block − 1``, drawn at the
    block's last step; averaging removes the minibatch noise, and ``digits`` significant digits
    (default 3) keep the saved figure identical across CPUs. An optional dotted horizontal line
    marks a ``reference`` loss (e.g. the best a bigram model can do).

    Equation:
        point j = (1/block) Σ_{s = j·block}^{(j+1)·block − 1} loss_s, drawn at step (j + 1)·block

    Args:
        histories: ``{run name: per-step losses}``, one line each.
        block: the number of steps averaged into one point, >= 1.
        reference: a loss drawn as a dotted horizontal line, or None for none.
        reference_label: the text beside the reference line.
        caption, alt: passed to :func:`lib.viz.core.apply_theme`.
        digits: significant digits the drawn means keep, >= 1.

    Returns:
        A figure with one line per run (and the reference line, if any).

    Raises:
        ValueError: ``histories`` is empty, a run is shorter than ``block`` steps, or ``block`` /
            ``digits`` < 1.
    """
    if not isinstance(histories, Mapping) or not histories:
        raise ValueError(f"histories must be a non-empty mapping name -> losses, got {histories!r}")
    block = check_positive_int("block", block)
    digits = check_positive_int("digits", digits)
    fig = go.Figure()
    for k, (name, losses) in enumerate(histories.items()):
        values = np.asarray(list(losses), dtype=np.float64)
        if values.ndim != 1 or len(values) < block:
            raise ValueError(
                f"histories[{name!r}] must hold at least block = {block} losses, got {len(values)}"
            )
        steps, means = block_means(values, block)
        fig.add_trace(
            go.Scatter(
                x=steps.tolist(),
                y=rounded(means, digits).tolist(),
                mode="lines",
                name=name,
                line={"color": palette(k), "width": 2.5},
                hovertemplate="step %{x}<br>loss %{y:.3f}<extra>" + name + "</extra>",
            )
        )
    if reference is not None:
        level = float(rounded([reference], digits)[0])
        fig.add_hline(
            y=level,
            line={"dash": "dot", "color": OKABE_ITO[7]},
            annotation_text=reference_label,
            annotation_position="top right",
        )
    fig.update_xaxes(title="training step")
    fig.update_yaxes(title="cross-entropy (nats per token)")
    fig.update_layout(
        height=440,
        legend=LEGEND_ABOVE,
    )
    return apply_theme(fig, caption=caption, alt=alt)


def vocabulary_share_slider(
    rows: Sequence[Mapping[str, Any]],
    *,
    caption: str | None = None,
    alt: str | None = None,
    active: int = 0,
) -> go.Figure:
    """Where a model's parameters sit, tied and untied, one model per slider step.

    Each step shows two stacked horizontal bars that add up to 100 % of the model's parameters:
    the body (grey), the input embedding (blue) and, untied, the LM head (orange). ``rows`` are
    those of :func:`lib.tiny_lm.vocabulary_share_table` (keys ``model``, ``body``,
    ``vocab_params``, ``total_tied``, ``total_untied``, ``tie_word_embeddings``).

    Args:
        rows: one mapping per model, as :func:`lib.tiny_lm.vocabulary_share_table` returns them.
        caption, alt: passed to :func:`lib.viz.core.apply_theme`.
        active: the model shown first.

    Returns:
        A figure with three stacked bar traces per step (body, embedding, head) and one slider.

    Raises:
        TypeError: ``active`` is not an int.
        ValueError: ``rows`` is empty, or ``active`` is out of range.
    """
    rows = list(rows)
    if not rows:
        raise ValueError("rows must hold at least one model")
    active = check_int("active", active)
    labels, steps, titles = [], [], []
    layouts = ("untied", "tied")
    for r in rows:
        body, vocab = float(r["body"]), float(r["vocab_params"])
        totals = {"tied": float(r["total_tied"]), "untied": float(r["total_untied"])}
        parts = {
            "body (layers)": ([body / totals[k] for k in layouts], OKABE_ITO[7]),
            "input embedding": ([vocab / totals[k] for k in layouts], EMBED_COLOUR),
            "LM head": ([vocab / totals["untied"], 0.0], HEAD_COLOUR),
        }
        published = "tied" if r["tie_word_embeddings"] else "untied"
        ylabels = [f"{k} ★" if k == published else k for k in layouts]
        group = [
            go.Bar(
                x=rounded(100 * np.asarray(shares), 4).tolist(),
                y=ylabels,
                orientation="h",
                name=part,
                marker={"color": colour},
                hovertemplate="%{y}: " + part + " %{x:.1f}%<extra></extra>",
            )
            for part, (shares, colour) in parts.items()
        ]
        steps.append(group)
        labels.append(str(r["model"]))
        share_t, share_u = vocab / totals["tied"], 2 * vocab / totals["untied"]
        titles.append(
            f"{r['model']} ({totals[published] / 1e9:.2f} B parameters as published): embedding and "
            f"head {share_t:.1%} of all tied, {share_u:.1%} untied"
        )
    if not 0 <= active < len(rows):
        raise ValueError(f"active must be in [0, {len(rows) - 1}], got {active}")
    fig = slider_figure(steps, labels, prefix="model: ", active=active, step_titles=titles)
    fig.update_layout(barmode="stack", height=360, legend={"orientation": "h", "y": -0.25})
    fig.update_xaxes(title="share of all parameters (%)", range=[0, 100])
    return apply_theme(fig, caption=caption, alt=alt)
