"""Learned absolute position embeddings (GPT-2 / BERT style).

A learned table ``P`` of shape ``[max_len, d_model]`` holds one trainable vector per position; the
input to the first layer is ``x_t = E[token_t] + P[t]`` (Devlin et al. 2019, BERT, arXiv:1810.04805;
Radford et al. 2019, GPT-2). The table has a hard end: a position ``>= max_len`` has no row, so the
model cannot run on longer inputs at all — :class:`LearnedPositionalEmbedding` says so with a clear
``ValueError`` instead of an opaque index error.

Names follow Hugging Face GPT-2 (``wte`` for tokens, ``wpe`` for positions, ``position_ids``).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from lib._checks import (
    check_fits,
    check_floating,
    check_index_range,
    check_int,
    check_integer_tensor,
    check_ndim,
    check_positive_float,
    check_positive_int,
    check_token_ids,
)

__all__ = [
    "LearnedPositionalEmbedding",
    "TokenAndPositionEmbedding",
    "position_ids",
    "position_probe_error",
    "ridge_probe",
]

#: Hugging Face's ``initializer_range`` for GPT-2 and BERT: embedding tables start as N(0, 0.02²).
#: (OpenAI's GPT-2 code draws ``wpe`` with std 0.01 and ``wte`` with 0.02; BERT's code uses a
#: normal truncated at two standard deviations, std 0.02.)
DEFAULT_INIT_STD = 0.02


def position_ids(
    batch: int, seq_len: int, *, offset: int = 0, device: torch.device | str | None = None
) -> torch.Tensor:
    """Position ids ``offset, offset+1, …, offset+seq_len−1`` for every row of a batch.

    ``position_ids[b, t] = offset + t``: the absolute positions that index a learned table
    (Radford et al. 2019, GPT-2; Devlin et al. 2019, BERT, arXiv:1810.04805), named like Hugging
    Face's ``position_ids``; ``offset`` is the number of tokens already in a KV cache during
    generation.

    Equation:
        position_ids[b, t] = offset + t

    Args:
        batch: batch size ``B``, an int >= 1.
        seq_len: sequence length ``T``, an int >= 1.
        offset: first position, an int >= 0.
        device: where to create the tensor.

    Returns:
        ``position_ids: [B, T]`` torch.long.

    Raises:
        TypeError: an argument is not an int.
        ValueError: ``batch < 1``, ``seq_len < 1`` or ``offset < 0``.

    References:
        Devlin et al., BERT, arXiv:1810.04805.
    """
    batch = check_positive_int("batch", batch)
    seq_len = check_positive_int("seq_len", seq_len)
    offset = check_int("offset", offset, minimum=0)
    row = torch.arange(offset, offset + seq_len, dtype=torch.long, device=device)  # [T]
    return row.unsqueeze(0).repeat(batch, 1)  # [B, T]


class LearnedPositionalEmbedding(nn.Module):
    """A trainable table of absolute position vectors, ``forward(positions) = P[positions]``.

    ``P ∈ R^{max_len × d_model}`` is GPT-2's ``wpe`` / BERT's ``position_embeddings``
    (Radford et al. 2019; Devlin et al. 2019, arXiv:1810.04805). It is initialised like Hugging
    Face's GPT-2 and BERT, ``P ~ N(0, init_std²)`` with ``init_std = 0.02`` (their
    ``initializer_range``), not PyTorch's ``nn.Embedding`` default N(0, 1). (OpenAI's GPT-2 code
    used std 0.01 for ``wpe``; BERT's code a normal truncated at two standard deviations.)

    Equation:
        forward(positions) = P[positions],  P ∈ R^(max_len × d_model),  P ~ N(0, init_std²)

    Args:
        max_len: number of rows, i.e. the longest sequence the model can read
            (GPT-2: 1024, BERT: 512); an int >= 1.
        d_model: embedding width, an int >= 1.
        init_std: standard deviation of the initial weights, a real number > 0.

    Raises:
        TypeError: (forward) ``positions`` is not an integer tensor.
        ValueError: (forward) a position is < 0 or >= ``max_len`` (the message gives ``max_len``),
            or ``positions`` is a 0-d tensor.

    Shapes:
        ``positions: [..., T]`` integer tensor  →  ``[..., T, d_model]`` in the table's dtype.

    References:
        Devlin et al., BERT, arXiv:1810.04805.
    """

    def __init__(self, max_len: int, d_model: int, *, init_std: float = DEFAULT_INIT_STD) -> None:
        super().__init__()
        self.max_len = check_positive_int("max_len", max_len)
        self.d_model = check_positive_int("d_model", d_model)
        self.init_std = check_positive_float("init_std", init_std)
        check_fits(
            f"max_len={self.max_len}, d_model={self.d_model}",
            (self.max_len, self.d_model),
            torch.get_default_dtype(),
        )
        self.weight = nn.Parameter(torch.empty(self.max_len, self.d_model))  # [max_len, d_model]
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Draw the table again from N(0, init_std²), as GPT-2's ``_init_weights`` does."""
        nn.init.normal_(self.weight, mean=0.0, std=self.init_std)

    def forward(self, positions: torch.Tensor) -> torch.Tensor:
        """Look up ``positions: [..., T]`` (ints in ``0 .. max_len−1``) → ``[..., T, d_model]``.

        Equation:
            out[..., t, :] = P[positions[..., t]]

        Args:
            positions: position ids, an integer tensor with at least one dimension.

        Returns:
            The rows of the table, in the table's dtype.

        Raises:
            TypeError: ``positions`` is not an integer tensor.
            ValueError: a position is < 0 or >= ``max_len`` (the message gives ``max_len``), or
                ``positions`` is a 0-d tensor.

        Shapes:
            positions: [..., T] -> [..., T, d_model]
        """
        positions = check_integer_tensor("positions", positions)
        check_ndim("positions", positions, minimum=1)
        check_index_range(
            "positions", positions, self.max_len, what="position", size_name="max_len"
        )
        return F.embedding(positions.long(), self.weight)  # [..., T, d_model]

    def extra_repr(self) -> str:
        return f"max_len={self.max_len}, d_model={self.d_model}, init_std={self.init_std}"


class TokenAndPositionEmbedding(nn.Module):
    """Token embedding plus learned absolute position embedding, the input layer of GPT-2.

    ``h[..., t, :] = wte[input_ids[..., t]] + wpe[offset + t]`` (Radford et al. 2019, GPT-2;
    Devlin et al. 2019, BERT, arXiv:1810.04805, without BERT's segment embedding and LayerNorm).
    Both tables start as N(0, init_std²), ``init_std = 0.02`` like Hugging Face's GPT-2.

    Equation:
        h[..., t, :] = wte[input_ids[..., t]] + wpe[offset + t]

    Args:
        vocab_size: number of token ids, an int >= 1.
        max_len: number of positions, an int >= 1.
        d_model: embedding width, an int >= 1.
        init_std: standard deviation of the initial weights, a real number > 0.

    Raises:
        TypeError: (forward) ``input_ids`` is not an integer tensor, ``offset`` not an int.
        ValueError: (forward) a token id is outside ``0 .. vocab_size−1``, ``offset < 0``, or
            ``offset + T > max_len`` (the message gives ``max_len``).

    Shapes:
        ``input_ids: [..., T]`` integer tensor (usually ``[B, T]``)  →  ``[..., T, d_model]``.

    References:
        Devlin et al., BERT, arXiv:1810.04805.
    """

    def __init__(
        self, vocab_size: int, max_len: int, d_model: int, *, init_std: float = DEFAULT_INIT_STD
    ) -> None:
        super().__init__()
        self.vocab_size = check_positive_int("vocab_size", vocab_size)
        self.d_model = check_positive_int("d_model", d_model)
        init_std = check_positive_float("init_std", init_std)
        check_fits(
            f"vocab_size={self.vocab_size}, d_model={self.d_model}",
            (self.vocab_size, self.d_model),
            torch.get_default_dtype(),
        )
        self.wte = nn.Embedding(self.vocab_size, self.d_model)  # [vocab_size, d_model]
        nn.init.normal_(self.wte.weight, mean=0.0, std=init_std)
        self.wpe = LearnedPositionalEmbedding(max_len, self.d_model, init_std=init_std)

    @property
    def max_len(self) -> int:
        """Number of rows of the position table.

        Returns:
            ``wpe.max_len``, the longest input the layer can embed.
        """
        return self.wpe.max_len

    def forward(self, input_ids: torch.Tensor, *, offset: int = 0) -> torch.Tensor:
        """Embed ``input_ids: [..., T]`` at positions ``offset .. offset+T−1`` → ``[..., T, D]``.

        Equation:
            h[..., t, :] = wte[input_ids[..., t]] + wpe[offset + t]

        Args:
            input_ids: token ids in ``0 .. vocab_size−1``, an integer tensor with at least one
                dimension (usually ``[B, T]``).
            offset: position of the first token (e.g. the length of a cached prefix), an
                int >= 0.

        Returns:
            Token plus position embeddings.

        Raises:
            TypeError: ``input_ids`` is not an integer tensor, ``offset`` not an int.
            ValueError: a token id is outside ``0 .. vocab_size−1``, ``offset < 0``, or
                ``offset + T > max_len`` (the message gives ``max_len``).

        Shapes:
            input_ids: [..., T] -> [..., T, d_model]
        """
        input_ids = check_integer_tensor("input_ids", input_ids)
        check_ndim("input_ids", input_ids, minimum=1)
        offset = check_int("offset", offset, minimum=0)
        check_token_ids(input_ids, self.vocab_size, name="input_ids")
        seq_len = input_ids.shape[-1]
        if offset + seq_len > self.max_len:
            raise ValueError(
                f"input_ids: {seq_len} tokens starting at offset {offset} need positions up to "
                f"{offset + seq_len - 1}, past the table: max_len={self.max_len} "
                f"(valid positions 0..{self.max_len - 1})"
            )
        positions = torch.arange(offset, offset + seq_len, device=input_ids.device)  # [T]
        tokens = self.wte(input_ids.long())  # [..., T, d_model]
        return tokens + self.wpe(positions)  # [..., T, d_model] + [T, d_model] (broadcast over ...)


def ridge_probe(
    features: torch.Tensor, targets: torch.Tensor, train: torch.Tensor, *, ridge: float
) -> torch.Tensor:
    """Fit a linear probe (ridge regression) on the ``train`` rows; predict every row.

    The features are centred on the training rows and divided by their root-mean-square norm,
    so ``ridge`` means the same for tables of any scale; the intercept is not penalised. Only
    the training rows enter the fit (in float64).

    Equation:
        X̃ = (X − mean_train X) / rms_train,  w = (X̃_trᵀ X̃_tr + λ I)⁻¹ X̃_trᵀ (y_tr − ȳ_tr),
        ŷ = X̃ w + ȳ_tr

    Args:
        features: ``X``, a floating tensor ``[N, d]`` (e.g. rows of a position table).
        targets: ``y``, a floating or integer tensor ``[N]`` (e.g. the positions).
        train: a bool tensor ``[N]``, True for the rows the probe may see; at least 2.
        ridge: ``λ``, a float > 0.

    Returns:
        The predictions ``ŷ`` for all ``N`` rows, float64 ``[N]``.

    Raises:
        TypeError: a tensor of the wrong kind, or ``ridge`` not a number.
        ValueError: mismatched shapes, fewer than 2 training rows, or ``ridge <= 0``.

    Shapes:
        features: [N, d], targets: [N], train: [N] -> [N]

    References:
        Alain & Bengio, Understanding intermediate layers using linear classifier probes,
        arXiv:1610.01644. Hoerl & Kennard, Ridge Regression (Technometrics, 1970).
    """
    features = check_floating("features", features)
    targets = _check_real_1d("targets", targets, len(features))
    if features.dim() != 2:
        raise ValueError(f"features must be 2-D [N, d], got shape {tuple(features.shape)}")
    if not isinstance(train, torch.Tensor) or train.dtype != torch.bool:
        raise TypeError(f"train must be a bool tensor, got {train!r:.60}")
    if train.shape != (len(features),):
        raise ValueError(f"train must have shape ({len(features)},), got {tuple(train.shape)}")
    if int(train.sum()) < 2:
        raise ValueError(f"train must select at least 2 rows, got {int(train.sum())}")
    lam = check_positive_float("ridge", ridge)
    x = features.detach().to(torch.float64)
    y = targets.detach().to(torch.float64)
    mean, y_mean = x[train].mean(0), y[train].mean()
    x = x - mean
    rms = x[train].pow(2).sum(-1).mean().sqrt().clamp_min(torch.finfo(torch.float64).tiny)
    x = x / rms
    a = x[train]  # [N_train, d]
    eye = torch.eye(x.shape[1], dtype=torch.float64, device=x.device)
    w = torch.linalg.solve(a.T @ a + lam * eye, a.T @ (y[train] - y_mean))  # [d]
    return x @ w + y_mean


def _check_real_1d(name: str, value: object, length: int) -> torch.Tensor:
    """Return ``value`` if it is a 1-D real tensor of ``length`` entries."""
    if not isinstance(value, torch.Tensor) or value.is_complex() or value.dtype == torch.bool:
        raise TypeError(f"{name} must be a real tensor, got {value!r:.60}")
    if value.shape != (length,):
        raise ValueError(f"{name} must have shape ({length},), got {tuple(value.shape)}")
    return value


def position_probe_error(
    table: torch.Tensor,
    *,
    seed: int,
    held_out: float = 0.2,
    ridges: tuple[float, ...] = (1e-3, 1e-2, 1e-1, 1.0, 10.0),
) -> float:
    """Mean absolute error, in positions, of a linear probe that reads the position off a table's rows.

    Row ``p`` of ``table`` is taken as the vector of position ``p``. A random ``held_out`` share
    of the positions (drawn with ``seed``) is never seen in fitting; the ridge ``λ`` is chosen
    from ``ridges`` on a validation quarter of the remaining rows, then the probe is refitted on
    all of them (:func:`ridge_probe`) and scored on the held-out positions. A table whose rows
    are independent of position scores near chance: predicting the mean position misses by about
    ``L/4`` for ``L`` positions.

    Equation:
        error = mean over held-out p of |ŷ(table[p]) − p|

    Args:
        table: ``[L, d]`` floating, row ``p`` for position ``p`` (``L >= 10``).
        seed: an int >= 0 for the held-out and validation draws.
        held_out: the share of positions kept out of fitting, a float in (0, 0.5].
        ridges: the candidate ``λ`` values, each > 0.

    Returns:
        The held-out mean absolute error, a float (positions).

    Raises:
        TypeError: ``table`` not a floating tensor, ``seed`` not an int.
        ValueError: ``table`` not 2-D or shorter than 10 rows, ``held_out`` outside (0, 0.5],
            an empty ``ridges`` or a ``λ <= 0``.

    Shapes:
        table: [L, d] -> float

    References:
        Alain & Bengio, Understanding intermediate layers using linear classifier probes,
        arXiv:1610.01644. Wang & Chen, What Do Position Embeddings Learn?, arXiv:2010.04903.
    """
    table = check_floating("table", table)
    if table.dim() != 2 or table.shape[0] < 10:
        raise ValueError(f"table must be 2-D [L >= 10, d], got shape {tuple(table.shape)}")
    seed = check_int("seed", seed, minimum=0)
    if not isinstance(held_out, (int, float)) or not 0 < held_out <= 0.5:
        raise ValueError(f"held_out must be a float in (0, 0.5], got {held_out!r}")
    if not ridges:
        raise ValueError("ridges must hold at least one candidate λ")
    ridges = tuple(check_positive_float("ridges", r) for r in ridges)
    n = table.shape[0]
    positions = torch.arange(n, dtype=torch.float64)
    order = torch.randperm(n, generator=torch.Generator().manual_seed(seed))
    n_test = max(1, round(held_out * n))
    test = torch.zeros(n, dtype=torch.bool)
    test[order[:n_test]] = True
    rest = order[n_test:]
    fit = torch.zeros(n, dtype=torch.bool)
    fit[rest[len(rest) // 4 :]] = True  # validation: the first quarter of the rest
    validation = ~test & ~fit

    def mae(predicted: torch.Tensor, rows: torch.Tensor) -> float:
        return float((predicted[rows] - positions[rows]).abs().mean())

    best = min(ridges, key=lambda r: mae(ridge_probe(table, positions, fit, ridge=r), validation))
    return mae(ridge_probe(table, positions, ~test, ridge=best), test)
