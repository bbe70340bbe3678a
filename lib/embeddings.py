"""From token IDs to vectors: lookup, one-hot, and what an embedding table costs (chapter 1).

An embedding table ``E: [V, d_model]`` holds one row per token of the vocabulary. Looking a token up
is row indexing, ``E[id]``, which equals the one-hot vector of the id times the table,
``one_hot(id) @ E`` (the one-hot row picks exactly one row of E). Frameworks implement the lookup,
never the product: it costs O(d) per token instead of O(V·d).

This module also does the memory arithmetic for real tables (``V × d_model × bytes per element``),
builds a table on PyTorch's ``meta`` device (shapes and sizes with no memory allocated), and shows
that a backward pass through a lookup touches only the looked-up rows (a sparse gradient).
"""

from __future__ import annotations

import math

import torch
from torch import nn

from lib._checks import (
    check_choice,
    check_floating,
    check_int,
    check_integer_tensor,
    check_positive_int,
    check_token_ids,
)

__all__ = [
    "DTYPE_BYTES",
    "REAL_EMBEDDING_CONFIGS",
    "embedding_on_meta",
    "embedding_table_bytes",
    "format_bytes",
    "lookup",
    "lookup_counts",
    "lookup_gradient",
    "one_hot",
    "parameter_bytes",
    "sparse_grad_rows",
]


def one_hot(
    ids: torch.Tensor, vocab_size: int, *, dtype: torch.dtype = torch.float32
) -> torch.Tensor:
    """One-hot vectors of token ids: ``out[..., v] = 1`` if ``ids[...] == v`` else 0.

    The textbook encoding of a token before an embedding (e.g. Mikolov et al. 2013, section 2);
    ``one_hot(ids, V) @ E == lookup(ids, E)``.

    Equation:
        out[..., v] = 1 if ids[...] = v else 0

    Args:
        ids: token ids, an integer tensor with 0 <= id < vocab_size.
        vocab_size: V, an int >= 1.
        dtype: a floating dtype for the result.

    Returns:
        The one-hot vectors.

    Raises:
        TypeError: ``ids`` not an integer tensor, ``vocab_size`` not an int, ``dtype`` not floating.
        ValueError: ``vocab_size < 1`` or an id out of range (:func:`lib._checks.check_token_ids`).

    Shapes:
        ids: [...] -> [..., vocab_size]

    References:
        Mikolov et al., word2vec, arXiv:1301.3781.
    """
    ids = check_integer_tensor("ids", ids)
    vocab_size = check_positive_int("vocab_size", vocab_size)
    if not isinstance(dtype, torch.dtype) or not dtype.is_floating_point:
        raise TypeError(f"dtype must be a floating torch.dtype, got {dtype!r}")
    check_token_ids(ids, vocab_size)
    out = torch.zeros(*ids.shape, vocab_size, dtype=dtype, device=ids.device)  # [..., V]
    out.scatter_(-1, ids.long().unsqueeze(-1), 1.0)
    return out


def lookup(ids: torch.Tensor, table: torch.Tensor) -> torch.Tensor:
    """Embedding lookup, i.e. row indexing: ``out[...] = table[ids[...]]``.

    Equal to ``one_hot(ids, V) @ table`` and to ``torch.nn.functional.embedding(ids, table)``;
    the input embedding of every transformer LM (Vaswani et al. 2017, section 3.4).

    Equation:
        out[...] = table[ids[...]] = one_hot(ids, V) @ table

    Args:
        ids: token ids, an integer tensor with 0 <= id < V.
        table: the embedding table, a 2-D floating tensor.

    Returns:
        The looked-up rows, dtype of ``table``.

    Raises:
        TypeError: ``ids`` not integer or ``table`` not floating.
        ValueError: ``table`` not 2-D, or an id outside [0, V − 1].

    Shapes:
        ids: [...]
        table: [V, d]
        returns: [..., d]

    References:
        Vaswani et al., Attention Is All You Need, arXiv:1706.03762.
    """
    ids = check_integer_tensor("ids", ids)
    table = check_floating("table", table)
    if table.dim() != 2:
        raise ValueError(f"table must be 2-D [V, d], got shape {tuple(table.shape)}")
    check_token_ids(ids, table.shape[0])
    return table[ids]  # [..., d]


def lookup_gradient(
    ids: torch.Tensor, table: torch.Tensor, upstream: torch.Tensor | None = None
) -> torch.Tensor:
    """Gradient of L = Σ upstream · lookup(ids, table) with respect to the table.

    Row r of the gradient is the sum of ``upstream`` over the positions where ``ids == r``, so every
    row that was not looked up gets exactly zero. (This is why ``nn.Embedding(sparse=True)`` can
    return a sparse gradient.) The table itself is not modified; the gradient is computed on a
    detached copy.

    Equation:
        ∂L/∂E[r] = Σ_{t: ids_t = r} upstream_t

    Args:
        ids: token ids, an integer tensor with 0 <= id < V.
        table: the embedding table, a 2-D floating tensor.
        upstream: ∂L/∂out, floating, the shape of the lookup (default all ones).

    Returns:
        The gradient, shape of ``table``.

    Raises:
        TypeError: a tensor of the wrong dtype.
        ValueError: ``table`` not 2-D, an id out of range, or ``upstream`` of another shape.

    Shapes:
        ids: [...]
        table: [V, d]
        upstream: [..., d]
        returns: [V, d]
    """
    ids = check_integer_tensor("ids", ids)
    table = check_floating("table", table)
    leaf = table.detach().clone().requires_grad_(True)
    out = lookup(ids, leaf)  # [..., d]
    if upstream is None:
        upstream = torch.ones_like(out)
    else:
        upstream = check_floating("upstream", upstream)
        if upstream.shape != out.shape:
            raise ValueError(
                f"upstream must have the lookup's shape {tuple(out.shape)} ([..., d]), got "
                f"{tuple(upstream.shape)}"
            )
    (out * upstream).sum().backward()
    grad = leaf.grad
    if grad is None:  # cannot happen: leaf requires grad and every output depends on it
        raise RuntimeError("backward left no gradient on the table")
    return grad


def sparse_grad_rows(ids: torch.Tensor, table: torch.Tensor) -> torch.Tensor:
    """The rows of ``table`` whose gradient is nonzero after one backward through ``lookup(ids, table)``.

    With an all-ones upstream gradient these are exactly the distinct looked-up ids (sorted): the
    other ``V − len(unique(ids))`` rows receive zero gradient (see :func:`lookup_gradient`).

    Args:
        ids: token ids, an integer tensor with 0 <= id < V.
        table: the embedding table, a 2-D floating tensor.

    Returns:
        The row indices, a LongTensor sorted ascending.

    Raises:
        TypeError, ValueError: as :func:`lookup_gradient`.

    Shapes:
        ids: [...]
        table: [V, d]
        returns: [n_rows]
    """
    grad = lookup_gradient(ids, table)  # [V, d]
    return torch.nonzero(grad.abs().sum(dim=-1) > 0).flatten()


def lookup_counts(ids: torch.Tensor, vocab_size: int) -> torch.Tensor:
    """How many times each row of a ``[V, d]`` table is looked up by ``ids``.

    The rows with a nonzero count are the rows :func:`lookup_gradient` can make nonzero; with an
    all-ones upstream gradient, row r's gradient is ``count_r`` times the ones vector.

    Equation:
        count_r = #{t : ids_t = r},  r = 0 … V − 1

    Args:
        ids: token ids, an integer tensor of any shape with 0 <= id < ``vocab_size``.
        vocab_size: V, the number of rows, an int >= 1.

    Returns:
        The counts, int64, one per row (zeros included); they sum to ``ids.numel()``.

    Raises:
        TypeError: ``ids`` is not an integer tensor, or ``vocab_size`` not an int.
        ValueError: ``vocab_size < 1`` or an id outside ``[0, vocab_size)``.

    Shapes:
        ids: [...]
        returns: [V]
    """
    ids = check_token_ids(ids, vocab_size)
    return torch.bincount(ids.flatten().long(), minlength=vocab_size)


# --- memory of real tables -------------------------------------------------------------------

#: Bytes per element of common storage formats (weights only; a quantised format's per-block
#: scales are extra). "fp8" is any 8-bit float (e4m3 / e5m2); "int4" packs two values per byte.
DTYPE_BYTES: dict[str, float] = {
    "float32": 4,
    "bfloat16": 2,
    "float16": 2,
    "int8": 1,
    "fp8": 1,
    "int4": 0.5,
}

_TORCH_DTYPES: dict[str, torch.dtype] = {
    "float32": torch.float32,
    "bfloat16": torch.bfloat16,
    "float16": torch.float16,
}


def embedding_table_bytes(vocab_size: int, d_model: int, dtype: str = "bfloat16") -> int:
    """Bytes of an embedding table: ``vocab_size × d_model × DTYPE_BYTES[dtype]`` (rounded up).

    Example: Llama 3 8B, 128,256 × 4,096 × 2 B in bfloat16 = 1,050,673,152 B.

    Equation:
        bytes = ceil(vocab_size · d_model · DTYPE_BYTES[dtype])

    Args:
        vocab_size: number of rows, an int >= 1.
        d_model: number of columns, an int >= 1.
        dtype: a key of :data:`DTYPE_BYTES`.

    Returns:
        The size in bytes, an int (int4 rounds up to whole bytes).

    Raises:
        TypeError: a size not an int.
        ValueError: a size < 1 or an unknown ``dtype``.

    References:
        Grattafiori et al., The Llama 3 Herd of Models, arXiv:2407.21783.
    """
    vocab_size = check_positive_int("vocab_size", vocab_size)
    d_model = check_positive_int("d_model", d_model)
    dtype = check_choice("dtype", dtype, tuple(DTYPE_BYTES))
    return math.ceil(vocab_size * d_model * DTYPE_BYTES[dtype])


_DECIMAL_UNITS = (
    ("B", "B", 0),
    ("kB", "KiB", 1),
    ("MB", "MiB", 2),
    ("GB", "GiB", 3),
    ("TB", "TiB", 4),
)


def format_bytes(n: int, unit: str | None = None) -> str:
    """A byte count in decimal and binary units: ``format_bytes(1_050_673_152) == "1.05 GB (0.98 GiB)"``.

    Decimal units are powers of 1000 (1 GB = 10^9 B), binary ones powers of 1024 (1 GiB = 2^30 B),
    as IEC 80000-13 defines them. By default the largest decimal unit with a value >= 1 is used,
    with the binary unit of the same rank. Values have two decimals; below 1 kB the count is
    printed as ``"512 B"``.

    Args:
        n: the number of bytes, an int >= 0.
        unit: ``"kB"``, ``"MB"``, ``"GB"`` or ``"TB"`` to force the decimal unit, or None.

    Returns:
        The formatted size.

    Raises:
        TypeError: ``n`` not an int.
        ValueError: ``n < 0`` or an unknown ``unit``.
    """
    n = check_int("n", n, minimum=0)
    names = tuple(u[0] for u in _DECIMAL_UNITS[1:])
    if unit is None:
        rank = 0
        while rank + 1 < len(_DECIMAL_UNITS) and n >= 1000 ** (rank + 1):
            rank += 1
    else:
        unit = check_choice("unit", unit, names)
        rank = names.index(unit) + 1
    if rank == 0:
        return f"{n} B"
    decimal, binary, power = _DECIMAL_UNITS[rank]
    return f"{n / 1000**power:.2f} {decimal} ({n / 1024**power:.2f} {binary})"


#: Embedding-table facts of real models, copied from each model's Hugging Face ``config.json``
#: (``source`` is the repo id). ``tie_word_embeddings``: whether the published LM head shares the
#: input table (for GPT-2 and BERT the config leaves it at the library default, True); ``None`` for
#: all-MiniLM-L6-v2, a sentence encoder published without any LM head. GPT-2 names the width
#: ``n_embd``; it is stored here as ``hidden_size``.
REAL_EMBEDDING_CONFIGS: dict[str, dict[str, object]] = {
    "GPT-2 small": {
        "vocab_size": 50257,
        "hidden_size": 768,
        "tie_word_embeddings": True,
        "source": "openai-community/gpt2",
    },
    "BERT-base-uncased": {
        "vocab_size": 30522,
        "hidden_size": 768,
        "tie_word_embeddings": True,
        "source": "google-bert/bert-base-uncased",
    },
    "all-MiniLM-L6-v2": {
        "vocab_size": 30522,
        "hidden_size": 384,
        "tie_word_embeddings": None,
        "source": "sentence-transformers/all-MiniLM-L6-v2",
    },
    "Llama-2-7B": {
        "vocab_size": 32000,
        "hidden_size": 4096,
        "tie_word_embeddings": False,
        "source": "meta-llama/Llama-2-7b-hf",
    },
    "Mistral-7B-v0.1": {
        "vocab_size": 32000,
        "hidden_size": 4096,
        "tie_word_embeddings": False,
        "source": "mistralai/Mistral-7B-v0.1",
    },
    "Llama-3-8B": {
        "vocab_size": 128256,
        "hidden_size": 4096,
        "tie_word_embeddings": False,
        "source": "meta-llama/Meta-Llama-3-8B",
    },
    "Llama-3.2-1B": {
        "vocab_size": 128256,
        "hidden_size": 2048,
        "tie_word_embeddings": True,
        "source": "meta-llama/Llama-3.2-1B",
    },
    "Qwen2.5-7B": {
        "vocab_size": 152064,
        "hidden_size": 3584,
        "tie_word_embeddings": False,
        "source": "Qwen/Qwen2.5-7B",
    },
    "Gemma-2-2B": {
        "vocab_size": 256000,
        "hidden_size": 2304,
        "tie_word_embeddings": True,
        "source": "google/gemma-2-2b",
    },
}


def _torch_dtype(dtype: str | torch.dtype) -> torch.dtype:
    if isinstance(dtype, torch.dtype):
        if not dtype.is_floating_point:
            raise TypeError(f"dtype must be a floating torch.dtype, got {dtype}")
        return dtype
    return _TORCH_DTYPES[check_choice("dtype", dtype, tuple(_TORCH_DTYPES))]


def embedding_on_meta(
    vocab_size: int, d_model: int, dtype: str | torch.dtype = "float32"
) -> nn.Embedding:
    """An ``nn.Embedding(vocab_size, d_model)`` on PyTorch's ``meta`` device: shapes, no memory.

    A meta tensor records shape and dtype but owns no storage, so
    ``embedding_on_meta(128256, 4096)`` describes Llama 3 8B's 2.1 GB float32 table without
    allocating it (a real ``nn.Embedding(128256, 4096)`` peaks at about 2.2 GB of RSS, beyond a
    2 GB Binder limit). Its size is ``parameter_bytes(module)``.

    Args:
        vocab_size: number of rows, an int >= 1.
        d_model: number of columns, an int >= 1.
        dtype: ``"float32"``, ``"bfloat16"``, ``"float16"`` or a floating ``torch.dtype``.

    Returns:
        The module, its weight on ``meta``.

    Raises:
        TypeError: a size not an int or a dtype not floating.
        ValueError: a size < 1 or an unknown dtype name.

    Shapes:
        weight: [vocab_size, d_model]
    """
    vocab_size = check_positive_int("vocab_size", vocab_size)
    d_model = check_positive_int("d_model", d_model)
    return nn.Embedding(vocab_size, d_model, device="meta", dtype=_torch_dtype(dtype))


def parameter_bytes(module: nn.Module) -> int:
    """Bytes held by a module's parameters, each shared parameter counted once.

    Works on the ``meta`` device (it reads shapes and dtypes only).

    Equation:
        bytes = Σ_p numel(p) · element_size(p)

    Args:
        module: any ``torch.nn.Module``.

    Returns:
        The size in bytes.

    Raises:
        TypeError: ``module`` is not a ``torch.nn.Module``.
    """
    if not isinstance(module, nn.Module):
        raise TypeError(f"module must be a torch.nn.Module, got {type(module).__name__}")
    return sum(p.numel() * p.element_size() for p in module.parameters())  # parameters() dedups
