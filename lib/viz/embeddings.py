"""Figures for chapter 1 (from token IDs to vectors): lookup, table memory, sparse gradients.

Four builders, each returning a plotly figure whose slider works in a static page:

- :func:`lookup_slider`: ``one_hot(ids) @ E`` next to ``E`` and ``E[ids]``; the slider walks through
  the tokens and outlines the one-hot row, the table row it selects and the output row it becomes;
- :func:`table_memory_slider`: the embedding-table size of real models, one bar per model, with a
  slider over the storage dtype;
- :func:`gradient_rows_slider`: the gradient of the table after a backward pass through a lookup,
  one slider step per batch: only the looked-up rows are nonzero;
- :func:`bpe_merges_slider`: byte-level BPE merging one piece of a real tokenizer, one slider step
  per merge.

Figure data is rounded with :func:`lib.viz.core.rounded`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import plotly.graph_objects as go
import torch
from plotly.subplots import make_subplots

from lib._checks import (
    check_choice,
    check_floating,
    check_index,
    check_integer_tensor,
    check_token_ids,
)
from lib.embeddings import DTYPE_BYTES, embedding_table_bytes, format_bytes, lookup_counts, one_hot
from lib.tokenization import MergeStep
from lib.viz.core import (
    OKABE_ITO,
    SEQUENTIAL,
    add_step_slider,
    apply_theme,
    rounded,
    signed_scale,
)

__all__ = ["gradient_rows_slider", "lookup_slider", "table_memory_slider"]

#: Colour of the outlines that follow the slider (Okabe–Ito orange: visible on cividis, on RdBu_r
#: and on the light and dark page backgrounds).
HIGHLIGHT = OKABE_ITO[1]


def _check_labels(name: str, labels: object, length: int) -> list[str]:
    """``labels`` as a list of ``length`` strings; ``TypeError``/``ValueError`` naming ``name``."""
    if isinstance(labels, str) or not isinstance(labels, Sequence):
        raise TypeError(f"{name} must be a sequence of strings, got {type(labels).__name__}")
    if len(labels) != length or not all(isinstance(s, str) for s in labels):
        raise ValueError(f"{name} must hold {length} strings, got {labels!r}")
    return list(labels)


def _table(name: str, table: object) -> torch.Tensor:
    table = check_floating(name, table)
    if table.dim() != 2:
        raise ValueError(f"{name} must be 2-D [V, d], got shape {tuple(table.shape)}")
    return table


def _box(x0: float, x1: float, y0: float, y1: float) -> tuple[list[float], list[float]]:
    """Corners of a closed rectangle, for a ``go.Scatter`` outline."""
    return [x0, x1, x1, x0, x0], [y0, y0, y1, y1, y0]


def lookup_slider(
    ids: torch.Tensor,
    table: torch.Tensor,
    *,
    tokens: Sequence[str] | None = None,
    vocab: Sequence[str] | None = None,
    active: int = 0,
    caption: str | None = None,
    alt: str | None = None,
) -> go.Figure:
    """The lookup as a matrix product, ``one_hot(ids) @ E = E[ids]``, one slider step per token.

    Three heatmaps side by side: the one-hot matrix ``X: [T, V]`` (row t has its single 1 in column
    ``ids[t]``), the table ``E: [V, d]`` and the product ``X @ E: [T, d]``, which is ``E[ids]``
    row for row (Vaswani et al. 2017, arXiv:1706.03762, section 3.4: the input embedding). Step t
    outlines row t of ``X``, row ``ids[t]`` of ``E`` and row t of the output.

    Meant for toy tables (a few dozen rows and columns): every cell is drawn.

    Args:
        ids: ``[T]`` integer token ids, each in ``[0, V)``.
        table: ``[V, d]`` floating embedding table.
        tokens: ``T`` token strings for the rows of ``X`` and of the output (default the ids).
        vocab: ``V`` strings naming the rows of ``E`` (default the row numbers).
        active: the step (token position) shown first.
        caption, alt: passed to :func:`lib.viz.core.apply_theme`.

    Returns:
        A figure with 3 heatmaps and ``3·T`` outline traces (three visible per step) and one slider.

    Raises:
        TypeError: ``ids`` not an integer tensor, ``table`` not floating, labels not strings.
        ValueError: ``ids`` not 1-D or out of range, ``table`` not 2-D, labels of the wrong length,
        ``active`` outside ``[0, T)``.
    """
    ids = check_integer_tensor("ids", ids)
    table = _table("table", table)
    if ids.dim() != 1 or ids.numel() == 0:
        raise ValueError(f"ids must be 1-D [T] with T >= 1, got shape {tuple(ids.shape)}")
    vocab_size, d = table.shape
    check_token_ids(ids, vocab_size, "ids")
    n_tokens = ids.numel()
    tokens = _check_labels("tokens", tokens, n_tokens) if tokens is not None else None
    vocab = _check_labels("vocab", vocab, vocab_size) if vocab is not None else None
    active = check_index("active", active, n_tokens)

    x_onehot = rounded(one_hot(ids, vocab_size))  # [T, V]
    e = rounded(table)  # [V, d]
    out = rounded(table[ids])  # [T, d], the lookup; equal to one_hot(ids) @ E
    bound = float(np.abs(e).max()) or 1.0
    token_names = tokens or [str(i) for i in ids.tolist()]
    row_names = vocab or [str(v) for v in range(vocab_size)]
    id_list = ids.tolist()

    fig = make_subplots(
        rows=1,
        cols=3,
        column_widths=[w / (vocab_size + 2 * d) for w in (vocab_size, d, d)],  # cells ~square
        horizontal_spacing=0.12,
        subplot_titles=(
            f"one-hot X<br>[T, V] = [{n_tokens}, {vocab_size}]",
            f"table E<br>[V, d] = [{vocab_size}, {d}]",
            f"X @ E = E[ids]<br>[T, d] = [{n_tokens}, {d}]",
        ),
    )
    fig.add_trace(
        go.Heatmap(
            z=x_onehot.tolist(),
            colorscale=SEQUENTIAL,
            zmin=0.0,
            zmax=1.0,
            showscale=False,
            customdata=[[[tok, v] for v in range(vocab_size)] for tok in token_names],
            hovertemplate="token %{customdata[0]} (pos %{y})<br>column %{customdata[1]}<br>"
            "value %{z}<extra>one-hot</extra>",
        ),
        row=1,
        col=1,
    )
    fig.add_trace(
        go.Heatmap(
            z=e.tolist(),
            **signed_scale(bound),
            showscale=False,
            customdata=[[name] * d for name in row_names],
            hovertemplate="row %{y} (%{customdata})<br>dim %{x}<br>value %{z:.3f}<extra>E</extra>",
        ),
        row=1,
        col=2,
    )
    fig.add_trace(
        go.Heatmap(
            z=out.tolist(),
            **signed_scale(bound),
            colorbar={"title": {"text": "value"}, "len": 0.9},
            customdata=[[tok] * d for tok in token_names],
            hovertemplate="token %{customdata} (pos %{y})<br>dim %{x}<br>value %{z:.3f}"
            "<extra>E[ids]</extra>",
        ),
        row=1,
        col=3,
    )
    n_static = 3
    line = {"color": HIGHLIGHT, "width": 3}
    for t, i in enumerate(id_list):
        outlines = [
            (_box(-0.5, vocab_size - 0.5, t - 0.5, t + 0.5), 1),  # row t of X
            (_box(-0.5, d - 0.5, i - 0.5, i + 0.5), 2),  # row ids[t] of E
            (_box(-0.5, d - 0.5, t - 0.5, t + 0.5), 3),  # row t of the output
        ]
        for (xs, ys), col in outlines:
            fig.add_trace(
                go.Scatter(
                    x=xs, y=ys, mode="lines", line=line, hoverinfo="skip",
                    showlegend=False, visible=t == active,
                ),
                row=1,
                col=col,
            )  # fmt: skip

    add_step_slider(
        fig,
        [f"{t}: {tok} → row {i}" for t, (tok, i) in enumerate(zip(token_names, id_list, strict=True))],
        n_static=n_static, per_step=3, prefix="token ", active=active,
        pad_t=50 if vocab is None else 100, x=0.05, length=0.9,  # room for rotated token ticks
    )  # fmt: skip
    fig.update_layout(height=420 if vocab is None else 470)
    token_ticks = {"tickmode": "array", "tickvals": list(range(n_tokens)), "ticktext": token_names}
    fig.update_xaxes(row=1, col=1, title="vocabulary id", range=[-0.5, vocab_size - 0.5])
    if vocab is not None:  # name the one-hot columns by their tokens
        fig.update_xaxes(
            row=1, col=1, title="vocabulary (column = token id)", tickmode="array",
            tickvals=list(range(vocab_size)), ticktext=row_names, tickangle=-60,
        )  # fmt: skip
    fig.update_yaxes(row=1, col=1, autorange="reversed", **token_ticks)
    fig.update_xaxes(row=1, col=2, title="dimension", range=[-0.5, d - 0.5])
    fig.update_yaxes(
        row=1, col=2, autorange="reversed", tickmode="array",
        tickvals=list(range(vocab_size)), ticktext=row_names,
    )  # fmt: skip
    fig.update_xaxes(row=1, col=3, title="dimension", range=[-0.5, d - 0.5])
    fig.update_yaxes(row=1, col=3, autorange="reversed", **token_ticks)
    fig = apply_theme(fig, caption=caption, alt=alt)
    fig.update_layout(margin_t=75)  # room for the two-line panel titles
    return fig


def _size_label(gigabytes: float) -> str:
    """``"1.05 GB"``, or ``"47 MB"`` below 0.1 GB (so small tables do not all read "0.0x GB")."""
    return f"{gigabytes:.2f} GB" if gigabytes >= 0.1 else f"{gigabytes * 1000:.0f} MB"


def table_memory_slider(
    configs: Mapping[str, Mapping[str, Any]],
    dtypes: Sequence[str] = ("float32", "bfloat16", "int8", "int4"),
    *,
    active: int = 0,
    caption: str | None = None,
    alt: str | None = None,
) -> go.Figure:
    """Embedding-table size of real models, one bar per model, with a slider over the storage dtype.

    Each bar is ``vocab_size × hidden_size × DTYPE_BYTES[dtype]`` bytes
    (:func:`lib.embeddings.embedding_table_bytes`), drawn in decimal gigabytes (1 GB = 10⁹ B) on an
    axis that stays fixed across steps, so the bars visibly shrink with the dtype. Bars are sorted by
    size; the hover shows the product and the size in GB and GiB. Example: Llama 3 8B
    (Grattafiori et al. 2024, arXiv:2407.21783), 128,256 × 4,096 × 2 B = 1.05 GB in bfloat16.

    Args:
        configs: model name → mapping with integer ``vocab_size`` and ``hidden_size`` (e.g.
            :data:`lib.embeddings.REAL_EMBEDDING_CONFIGS`).
        dtypes: keys of :data:`lib.embeddings.DTYPE_BYTES`, one slider step each.
        active: the step shown first.
        caption, alt: passed to :func:`lib.viz.core.apply_theme`.

    Returns:
        A figure with one bar trace per dtype (one visible at a time) and one slider.

    Raises:
        TypeError: ``configs`` is not a mapping. ValueError: ``configs`` or ``dtypes`` is empty, a
        config lacks ``vocab_size``/``hidden_size``, a dtype is unknown, or ``active`` out of range.
    """
    if not isinstance(configs, Mapping):
        raise TypeError(f"configs must be a mapping name -> config, got {type(configs).__name__}")
    if not configs:
        raise ValueError("configs must hold at least one model")
    if isinstance(dtypes, str) or not isinstance(dtypes, Sequence) or not dtypes:
        raise ValueError(f"dtypes must be a non-empty sequence of dtype names, got {dtypes!r}")
    dtypes = [check_choice("dtypes", dt, tuple(DTYPE_BYTES)) for dt in dtypes]
    active = check_index("active", active, len(dtypes))
    shapes = {}
    for name, config in configs.items():
        if not isinstance(config, Mapping) or not {"vocab_size", "hidden_size"} <= set(config):
            raise ValueError(
                f"configs[{name!r}] must be a mapping with vocab_size and hidden_size, got {config!r}"
            )
        shapes[name] = (config["vocab_size"], config["hidden_size"])
    names = sorted(shapes, key=lambda n: (shapes[n][0] * shapes[n][1], n))

    fig, y_max = go.Figure(), 0.0
    for k, dt in enumerate(dtypes):
        sizes = [embedding_table_bytes(*shapes[n], dt) for n in names]  # bytes, exact ints
        gb = rounded(np.array(sizes, dtype=np.float64) / 1e9)
        y_max = max(y_max, float(gb.max()))
        products = [f"{shapes[n][0]:,} × {shapes[n][1]:,} × {DTYPE_BYTES[dt]:g} B" for n in names]
        fig.add_trace(
            go.Bar(
                x=names,
                y=gb.tolist(),
                text=[_size_label(g) for g in gb],
                textposition="outside",
                marker={"color": OKABE_ITO[0]},
                customdata=[[p, format_bytes(b)] for p, b in zip(products, sizes, strict=True)],
                hovertemplate="%{x}<br>%{customdata[0]}<br>= %{customdata[1]}<extra></extra>",
                name=dt,
                visible=k == active,
            )
        )
    add_step_slider(
        fig, [f"{dt} ({DTYPE_BYTES[dt]:g} B)" for dt in dtypes], n_static=0, per_step=1,
        prefix="dtype: ", active=active, pad_t=90, x=0.05, length=0.9,
    )  # fmt: skip
    fig.update_layout(showlegend=False, height=460)
    fig.update_yaxes(title="embedding table (GB, 10⁹ bytes)", range=[0, y_max * 1.15])
    fig.update_xaxes(tickangle=-30)
    return apply_theme(fig, caption=caption, alt=alt)


def gradient_rows_slider(
    ids: Sequence[torch.Tensor],
    grads: Sequence[torch.Tensor],
    labels: Sequence[str],
    *,
    vocab: Sequence[str] | None = None,
    active: int = 0,
    caption: str | None = None,
    alt: str | None = None,
) -> go.Figure:
    """The table's gradient after a backward through ``lookup(ids, E)``, one slider step per batch.

    Left, the gradient ``∂L/∂E: [V, d]`` as a heatmap; rows whose gradient is exactly zero in every
    entry are left blank, which makes the sparsity visible: row r is ∂L/∂E[r] = Σ_{t: ids_t = r} ∂L/∂out_t, so only
    looked-up rows can be nonzero (Vaswani et al. 2017, arXiv:1706.03762, section 3.4 for the
    lookup). Right, how many times each row was looked up in that batch
    (:func:`lib.embeddings.lookup_counts`).

    Args:
        ids: ``S`` integer tensors of any shape (e.g. ``[B, T]``), the batch of each step.
        grads: ``S`` floating ``[V, d]`` gradients of the table, one per batch.
        labels: ``S`` slider labels (e.g. the batch's text).
        vocab: ``V`` strings naming the rows (default the row numbers).
        active: the step shown first.
        caption, alt: passed to :func:`lib.viz.core.apply_theme`.

    Returns:
        A figure with ``2·S`` traces (a heatmap and a bar chart per step) and one slider.

    Raises:
        TypeError: an ``ids`` entry not an integer tensor, a gradient not floating, labels not
        strings. ValueError: the sequences differ in length or are empty, gradients differ in
        shape or are not 2-D, an id is out of range, ``active`` out of range.
    """
    if not (len(ids) == len(grads) == len(labels)) or not ids:
        raise ValueError(
            "ids, grads and labels must be non-empty and of one length (one per step), got "
            f"{len(ids)}, {len(grads)}, {len(labels)}"
        )
    labels = _check_labels("labels", labels, len(ids))
    tables = [_table(f"grads[{s}]", g) for s, g in enumerate(grads)]
    shape = tables[0].shape
    if any(g.shape != shape for g in tables):
        raise ValueError(
            f"every grads[s] must have one shape [V, d], got {[tuple(g.shape) for g in tables]}"
        )
    vocab_size, d = shape
    counts = []
    for s, batch in enumerate(ids):
        batch = check_token_ids(batch, vocab_size, f"ids[{s}]")  # names the step
        counts.append(lookup_counts(batch, vocab_size))  # [V]
    vocab = _check_labels("vocab", vocab, vocab_size) if vocab is not None else None
    row_names = vocab or [str(v) for v in range(vocab_size)]
    active = check_index("active", active, len(ids))

    arrays = [rounded(g) for g in tables]
    bound = max(float(np.abs(a).max()) for a in arrays) or 1.0
    count_max = max(int(c.max()) for c in counts)
    fig = make_subplots(
        rows=1,
        cols=2,
        column_widths=[0.75, 0.25],
        shared_yaxes=True,
        horizontal_spacing=0.03,
        subplot_titles=("gradient ∂L/∂E  [V, d]", "times looked up"),
    )
    for k, (a, c) in enumerate(zip(arrays, counts, strict=True)):
        zero_rows = ~a.any(axis=1)  # [V]: rows whose gradient is exactly zero, drawn blank
        fig.add_trace(
            go.Heatmap(
                z=[
                    [None] * d if blank else row.tolist()
                    for blank, row in zip(zero_rows, a, strict=True)
                ],
                **signed_scale(bound),
                colorbar={"title": {"text": "gradient"}, "x": 1.02, "len": 0.9},
                customdata=[[name] * d for name in row_names],
                hovertemplate="row %{y} (%{customdata})<br>dim %{x}<br>gradient %{z:.3f}"
                "<extra></extra>",
                visible=k == active,
            ),
            row=1,
            col=1,
        )
        fig.add_trace(
            go.Bar(
                x=c.tolist(),
                y=list(range(vocab_size)),
                orientation="h",
                marker={"color": HIGHLIGHT},
                customdata=row_names,
                hovertemplate="row %{y} (%{customdata})<br>looked up %{x} time(s)<extra></extra>",
                showlegend=False,
                visible=k == active,
            ),
            row=1,
            col=2,
        )
    add_step_slider(
        fig, labels, n_static=0, per_step=2, prefix="batch: ", active=active, x=0.05, length=0.9
    )
    fig.update_layout(height=max(420, 120 + 22 * vocab_size))
    fig.update_xaxes(row=1, col=1, title="dimension", range=[-0.5, d - 0.5])
    fig.update_yaxes(
        row=1, col=1, autorange="reversed", tickmode="array",
        tickvals=list(range(vocab_size)), ticktext=row_names,
    )  # fmt: skip
    fig.update_xaxes(row=1, col=2, title="count", range=[0, count_max + 0.5], dtick=1)
    return apply_theme(fig, caption=caption, alt=alt)


def bpe_merges_slider(
    piece: str,
    steps: Sequence[MergeStep],
    *,
    active: int | None = None,
    caption: str | None = None,
    alt: str | None = None,
) -> go.Figure:
    """Byte-level BPE merging one piece, one slider step per merge (:func:`lib.tokenization.bpe_merge_steps`).

    Each step draws the piece's symbols as boxes along one row, a box as wide as the bytes it
    spells; the symbol the step's merge just made is orange, the others blue. Step 0 is the
    piece's bytes before any merge.

    Args:
        piece: the piece in byte-level spelling (one character per byte), non-empty.
        steps: its merges, in order, as returned by :func:`lib.tokenization.bpe_merge_steps`.
        active: the step shown first (default: the last, the piece's tokens).
        caption: the figure caption.
        alt: the alt text.

    Returns:
        A plotly figure with a slider over ``len(steps) + 1`` steps.

    Raises:
        TypeError: ``piece`` is not a string, or an entry of ``steps`` is not a MergeStep.
        ValueError: an empty ``piece``, a step whose symbols do not spell ``piece``, or
            ``active`` out of range.
    """
    if not isinstance(piece, str):
        raise TypeError(f"piece must be a str, got {type(piece).__name__}")
    if not piece:
        raise ValueError("piece must be a non-empty string")
    rows: list[tuple[str, tuple[str, ...], str | None]] = [("bytes", tuple(piece), None)]
    for k, step in enumerate(steps):
        if not isinstance(step, MergeStep):
            raise TypeError(f"steps[{k}] must be a MergeStep, got {type(step).__name__}")
        if "".join(step.symbols) != piece:
            raise ValueError(
                f"steps[{k}].symbols must spell the piece {piece!r}, got {step.symbols}"
            )
        label = f"{k + 1}: {step.pair[0]} + {step.pair[1]} (rank {step.rank:,})"
        rows.append((label, step.symbols, "".join(step.pair)))
    active = len(rows) - 1 if active is None else check_index("active", active, len(rows))
    fig = go.Figure()
    for label, symbols, made in rows:
        starts = np.cumsum([0] + [len(s) for s in symbols[:-1]])
        colours = [OKABE_ITO[1] if s == made else OKABE_ITO[0] for s in symbols]
        fig.add_trace(
            go.Bar(
                x=[len(s) for s in symbols],
                base=starts.tolist(),
                y=["symbols"] * len(symbols),
                orientation="h",
                text=list(symbols),
                textposition="inside",
                insidetextanchor="middle",
                marker={"color": colours, "line": {"color": "white", "width": 2}},
                hovertemplate="%{text}<extra></extra>",
                name=label,
                showlegend=False,
                visible=False,
            )
        )
    add_step_slider(
        fig,
        [label for label, _, _ in rows],
        n_static=0,
        per_step=1,
        prefix="merge ",
        active=active,
        step_titles=[f"{len(symbols)} symbols" for _, symbols, _ in rows],
    )
    fig.update_xaxes(title="bytes", range=[0, len(piece)], dtick=1)
    fig.update_yaxes(showticklabels=False)
    default = (
        f"Byte-level BPE merging {piece!r}: {len(piece)} bytes, {len(steps)} merges, "
        f"{len(rows[-1][1])} tokens"
    )
    return apply_theme(fig, caption=caption, alt=alt, default=default, height=300)
