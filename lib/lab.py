"""A length-extrapolation lab: one tiny decoder, six ways to give it positions.

The experiment of the book's last chapter. A small decoder-only attention model is trained on a
synthetic *induction* task at one length ``L`` and evaluated at ``L``, ``2L`` and ``4L``; the only
thing that changes between runs is how it learns about positions, chosen by name from
:data:`POSITION_SCHEMES`:

- ``"none"``: no positional information (NoPE), only the causal mask (Kazemnejad et al. 2023,
  arXiv:2305.19466); acts on nothing.
- ``"sinusoidal"``: fixed sin/cos vectors added to the token embeddings (Vaswani et al. 2017,
  arXiv:1706.03762); acts on the input.
- ``"learned"``: a trained table of position vectors added to the input (GPT-2; Devlin et al.
  2019, arXiv:1810.04805); acts on the input.
- ``"rope"``: rotary embedding of q and k (Su et al. 2021, arXiv:2104.09864); acts on q and k.
- ``"rope+pi"``: the ``"rope"`` model evaluated with linear position interpolation (Chen et al.
  2023, arXiv:2306.15595); acts on q and k.
- ``"alibi"``: a linear distance penalty on the scores (Press et al. 2022, arXiv:2108.12409); acts
  on the scores.
- ``"t5"``: T5's learned, bucketed relative bias on the scores (Raffel et al. 2020,
  arXiv:1910.10683), from :mod:`lib.relative`; acts on the scores.

The task (:func:`induction_batch`): each sequence repeats a random block of ``n`` distinct tokens
(``x_t = a_{t mod n}``), with ``n`` drawn per sequence from ``L/4 .. L/2``. After the first block
every next token is predictable by *induction*: find where the current token occurred ``n`` steps
earlier and copy the token that followed it. That rule does not depend on the length, so a model
that learned it could in principle run at any length; whether it does is what the lab measures.

The chapter's experiment (:func:`run_extrapolation_lab`) trains several seeds of each scheme as
one :class:`DecoderEnsemble` (stacked weights, one batched forward pass), evaluates them under
two :data:`CONDITIONS` (the training's periods, "seen distances", or periods growing with the
length, "unseen distances"), splits the accuracy by where the earliest answer key lies
(:func:`earliest_answer_key`), applies the zero-shot RoPE scalings of :data:`SCALED_VARIANTS`
and fine-tunes position interpolation at ``2L``. :func:`head_scores` and
:func:`pair_norm_share` show what a trained RoPE model uses its frequency pairs for.

Training and evaluation run single-threaded (:func:`single_thread`): with several threads the
matrix products add in an order that depends on the thread count, the last bits of every step
differ, and after hundreds of steps a notebook re-run on another machine would print other digits.

References:
    Kazemnejad et al., The Impact of Positional Encoding on Length Generalization in Transformers,
    arXiv:2305.19466.
    Vaswani et al., Attention Is All You Need, arXiv:1706.03762.
    Devlin et al., BERT, arXiv:1810.04805.
    Su et al., RoFormer, arXiv:2104.09864.
    Chen et al., Extending Context Window of Large Language Models via Positional Interpolation,
    arXiv:2306.15595.
    Press et al., Train Short, Test Long (ALiBi), arXiv:2108.12409.
    Raffel et al., Exploring the Limits of Transfer Learning (T5), arXiv:1910.10683.
    Olsson et al., In-context Learning and Induction Heads, arXiv:2209.11895.
"""

from __future__ import annotations

import contextlib
import math
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Literal, NamedTuple, overload

import torch
import torch.nn.functional as F
from torch import nn

from lib._checks import (
    check_choice,
    check_int,
    check_integer_tensor,
    check_positive_float,
    check_positive_int,
    check_real_array,
    check_token_ids,
)
from lib.alibi import alibi_bias
from lib.attention import SelfAttention
from lib.learned import LearnedPositionalEmbedding
from lib.relative import T5RelativeBias, t5_relative_bias
from lib.rope import apply_rope, rope_angles
from lib.rope_scaling import ROPE_SCALING
from lib.sinusoidal import sinusoidal_pe

__all__ = [
    "CONDITIONS",
    "DYNAMIC_FACTOR",
    "FINE_TUNED_VARIANTS",
    "IGNORE_INDEX",
    "POSITION_SCHEMES",
    "SCALED_VARIANTS",
    "ZERO_SHOT_SCALING",
    "ALiBiPositions",
    "AttentionRecord",
    "DecoderEnsemble",
    "EnsembleEval",
    "EnsembleTrainResult",
    "EvalResult",
    "ExtrapolationLab",
    "HeadScores",
    "InductionBatch",
    "InterpolatedRotaryPositions",
    "LabConfig",
    "LabResult",
    "LearnedPositions",
    "NoPositions",
    "PositionScheme",
    "RotaryPositions",
    "SeedSpread",
    "SinusoidalPositions",
    "T5BiasPositions",
    "TinyDecoder",
    "TrainResult",
    "build_decoder",
    "earliest_answer_key",
    "evaluate_decoder",
    "evaluate_ensemble",
    "head_scores",
    "induction_batch",
    "pair_norm_share",
    "run_extrapolation_lab",
    "run_lab",
    "scaled_rope_frequencies",
    "seed_spread",
    "single_thread",
    "train_decoder",
    "train_ensemble",
]

#: Target id that the loss and the accuracy skip (PyTorch's and Hugging Face's convention).
IGNORE_INDEX = -100


# --------------------------------------------------------------------------------------------
# Determinism
# --------------------------------------------------------------------------------------------


@contextlib.contextmanager
def single_thread() -> Iterator[None]:
    """Run the body with ``torch.set_num_threads(1)``, then restore the previous thread count.

    Why: a multi-threaded matrix product splits its sums across threads, so its last bits depend
    on the thread count. One step differs by ~1e-7; hundreds of optimiser steps later the trained
    weights differ visibly. With one thread the arithmetic is the same on every run of the same
    machine whatever ``OMP_NUM_THREADS`` is (the tiny model loses little speed).

    Yields:
        None; the body of the ``with`` block runs on one thread.
    """
    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(previous)


# --------------------------------------------------------------------------------------------
# The task
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class InductionBatch:
    """One batch of the induction task.

    Attributes:
        input_ids: ``[B, T]`` long, ``input_ids[b, t] = block_b[t mod periods[b]]``.
        targets: ``[B, T]`` long, the next token where it is predictable (``t >= periods[b]`` and
            ``t < T − 1``), :data:`IGNORE_INDEX` elsewhere.
        periods: ``[B]`` long, the block length ``n`` of each sequence.
    """

    input_ids: torch.Tensor
    targets: torch.Tensor
    periods: torch.Tensor


def induction_batch(
    batch_size: int,
    seq_len: int,
    vocab_size: int,
    *,
    generator: torch.Generator,
    period_range: tuple[int, int] | None = None,
) -> InductionBatch:
    """Sequences that repeat a random block of distinct tokens: ``x_t = a_{t mod n}``.

    For each sequence, a period ``n`` is drawn uniformly from ``ceil(T/4) .. floor(T/2)`` and a block
    ``a_0 … a_{n−1}`` of distinct token ids from ``0 .. vocab_size−1``; the sequence repeats the
    block until it has ``T`` tokens (2 to 4 copies). The target at position ``t`` is
    ``x_{t+1}`` for ``n <= t < T−1`` (predictable by induction: the token after the previous
    occurrence of ``x_t``, which is at ``t − n``) and :data:`IGNORE_INDEX` for the first block, whose
    next tokens are random. This is the "repeated random tokens" probe of induction heads (Olsson
    et al. 2022) with a random period, so that no fixed offset solves it.

    Equation:
        input_ids[b, t] = a_b[t mod n_b];  targets[b, t] = x_{t+1} if n_b <= t < T − 1, else −100

    Args:
        batch_size: ``B``, an int >= 1.
        seq_len: ``T``, an int >= 4 (so that a period ``n >= 1`` with ``2n <= T`` exists).
        vocab_size: number of token ids, an int >= ``T // 2`` (a block needs ``n`` distinct ids).
        generator: the ``torch.Generator`` every random draw uses (seed it for reproducibility).
        period_range: ``(n_min, n_max)``, the inclusive range of the period ``n``, with
            ``1 <= n_min <= n_max`` and ``2 · n_max <= T`` (every sequence shows at least one
            repeat); default ``(ceil(T/4), floor(T/2))``. Fixing it while ``T`` grows keeps the
            look-back distances of training ("seen distances").

    Returns:
        An :class:`InductionBatch` with ``input_ids``/``targets`` ``[B, T]`` and ``periods`` ``[B]``.

    Raises:
        TypeError: an argument has the wrong type (e.g. ``generator`` is not a torch.Generator).
        ValueError: ``batch_size < 1``, ``seq_len < 4``, ``vocab_size`` smaller than the longest
            period, or a ``period_range`` outside ``1 <= n_min <= n_max <= T / 2``.

    Shapes:
        input_ids, targets: [B, T]; periods: [B]

    References:
        Olsson et al., In-context Learning and Induction Heads, arXiv:2209.11895.
    """
    batch_size = check_positive_int("batch_size", batch_size)
    seq_len = check_int("seq_len", seq_len, minimum=4)
    vocab_size = check_positive_int("vocab_size", vocab_size)
    if period_range is None:
        low, high = -(-seq_len // 4), seq_len // 2  # ceil(T/4), floor(T/2)
    else:
        low, high = _check_period_range(period_range, seq_len)
    if vocab_size < high:
        raise ValueError(
            f"vocab_size must be >= the longest period {high} (a block holds up to that many "
            f"distinct tokens), got {vocab_size}"
        )
    if not isinstance(generator, torch.Generator):
        raise TypeError(f"generator must be a torch.Generator, got {type(generator).__name__}")
    periods = torch.randint(low, high + 1, (batch_size,), generator=generator)  # [B]
    # A random permutation of the vocabulary per row; its first n entries are the block.
    blocks = torch.rand(batch_size, vocab_size, generator=generator).argsort(dim=-1)  # [B, V]
    t = torch.arange(seq_len)  # [T]
    input_ids = blocks.gather(1, t[None, :] % periods[:, None])  # [B, T]
    next_ids = torch.roll(input_ids, shifts=-1, dims=1)  # [B, T], next_ids[:, t] = x_{t+1}
    predictable = (t[None, :] >= periods[:, None]) & (t[None, :] < seq_len - 1)  # [B, T]
    targets = torch.where(predictable, next_ids, torch.full_like(next_ids, IGNORE_INDEX))
    return InductionBatch(input_ids=input_ids, targets=targets, periods=periods)


def _check_period_range(period_range: object, seq_len: int) -> tuple[int, int]:
    if not isinstance(period_range, tuple) or len(period_range) != 2:
        raise TypeError(f"period_range must be a tuple (n_min, n_max), got {period_range!r}")
    low = check_positive_int("period_range[0]", period_range[0])
    high = check_positive_int("period_range[1]", period_range[1])
    if low > high or 2 * high > seq_len:
        raise ValueError(
            f"period_range must satisfy 1 <= n_min <= n_max <= seq_len / 2 = {seq_len / 2:g}, "
            f"got {period_range}"
        )
    return low, high


def earliest_answer_key(periods: torch.Tensor, seq_len: int) -> torch.Tensor:
    """Position of the earliest key an induction head can copy the answer from: ``(t mod n) + 1``.

    At query position ``t`` of a sequence with period ``n`` the answer is ``x_{t+1}``; a key ``j``
    holds it for an induction head when its previous token matches the query, ``x_{j−1} = x_t``,
    i.e. ``j ≡ t + 1 (mod n)`` with ``1 <= j <= t``. The earliest such key is ``(t mod n) + 1``
    (Olsson et al. 2022 describe the mechanism).

    Equation:
        key[b, t] = (t mod periods[b]) + 1

    Args:
        periods: the period ``n`` of each sequence, an integer tensor with values >= 1.
        seq_len: ``T``, an int >= 1.

    Returns:
        The earliest answer key of every query position, a long tensor.

    Raises:
        TypeError: ``periods`` is not an integer tensor.
        ValueError: ``periods`` is not 1-D or holds a value < 1; ``seq_len < 1``.

    Shapes:
        periods: [B] -> [B, T]

    References:
        Olsson et al., In-context Learning and Induction Heads, arXiv:2209.11895.
    """
    periods = check_integer_tensor("periods", periods)
    if periods.dim() != 1 or (periods.numel() and int(periods.min()) < 1):
        raise ValueError(f"periods must be 1-D with values >= 1, got shape {list(periods.shape)}")
    seq_len = check_positive_int("seq_len", seq_len)
    t = torch.arange(seq_len, device=periods.device)  # [T]
    return t[None, :] % periods[:, None] + 1  # [B, T]


# --------------------------------------------------------------------------------------------
# Position schemes (one registry, one constructor signature)
# --------------------------------------------------------------------------------------------


def _check_heads(d_model: int, n_heads: int) -> None:
    """Raise ``ValueError`` unless ``d_model`` splits into ``n_heads`` heads of equal width."""
    if d_model % n_heads:
        raise ValueError(
            f"d_model must be divisible by n_heads, got d_model={d_model}, n_heads={n_heads}"
        )


class PositionScheme(nn.Module):
    """Base class: how a :class:`TinyDecoder` learns about positions (default: not at all).

    Every scheme is built as ``Scheme(d_model, n_heads, *, max_len, train_len, base)`` and
    offers three hooks, each a no-op here:

    - :meth:`embed` adds absolute position vectors to the token embeddings ``[B, T, D]``;
    - :meth:`rotary` returns the callable that :class:`lib.attention.SelfAttention` applies to
      ``q`` and ``k`` (``[B, H, T, d_head]``), or ``None``;
    - :meth:`bias` returns an additive score bias ``[H, T, T]`` (with the causal ``−inf``), or
      ``None`` (the decoder then asks attention for its causal mask).

    Args:
        d_model: model width ``D``, an int >= 1 divisible by ``n_heads``.
        n_heads: heads per layer, an int >= 1 (``d_head = d_model / n_heads``).
        max_len: the longest length the scheme must serve, an int >= ``train_len``.
        train_len: the training length, an int >= 1.
        base: frequency base of the sinusoidal and rotary schemes, > 0.

    Attributes:
        acts_on: where the scheme enters the model: ``"nothing"``, ``"input"``, ``"q/k"`` or
            ``"scores"``.
        shares_training_with: the name of a scheme whose trained weights this one reuses (it
            differs only at evaluation), or ``None``.

    Raises:
        TypeError: a size is not an int, or ``base`` not a real number.
        ValueError: a size < 1, ``base`` not a finite number > 0, ``d_model`` not divisible by
            ``n_heads``, or ``train_len > max_len``.
    """

    acts_on = "nothing"
    shares_training_with: str | None = None

    def __init__(
        self,
        d_model: int,
        n_heads: int,
        *,
        max_len: int,
        train_len: int,
        base: float = 10000.0,
    ) -> None:
        super().__init__()
        self.d_model = check_positive_int("d_model", d_model)
        self.n_heads = check_positive_int("n_heads", n_heads)
        self.max_len = check_positive_int("max_len", max_len)
        self.train_len = check_positive_int("train_len", train_len)
        self.base = check_positive_float("base", base)
        _check_heads(self.d_model, self.n_heads)
        if self.train_len > self.max_len:
            raise ValueError(f"train_len must be <= max_len={max_len}, got {train_len}")
        self.d_head = self.d_model // self.n_heads

    def embed(self, x: torch.Tensor) -> torch.Tensor:
        """Return the token embeddings ``x: [B, T, D]`` with positions added (here: unchanged).

        Args:
            x: the token embeddings of a batch.

        Returns:
            ``x`` plus the scheme's position vectors, same shape and dtype.

        Shapes:
            x: [B, T, D] -> [B, T, D]
        """
        return x

    def rotary(self, seq_len: int) -> Callable[[torch.Tensor], torch.Tensor] | None:
        """The rotation for ``q``/``k`` ``[B, H, T, d_head]`` at length ``seq_len`` (here: none).

        Args:
            seq_len: the sequence length ``T``.

        Returns:
            A callable that rotates ``q`` or ``k`` and keeps its shape, or None for no rotation.

        Shapes:
            rotary(T): [B, H, T, d_head] -> [B, H, T, d_head]
        """
        return None

    def bias(self, seq_len: int, *, dtype: torch.dtype) -> torch.Tensor | None:
        """The additive score bias ``[H, T, T]`` at length ``seq_len`` (here: none).

        Args:
            seq_len: the sequence length ``T``.
            dtype: the dtype of the returned bias.

        Returns:
            The bias with ``−inf`` for every key after its query, or None (the decoder then asks
            attention for its causal mask).

        Shapes:
            -> [H, T, T]
        """
        return None

    def extra_repr(self) -> str:
        return f"acts_on={self.acts_on!r}, train_len={self.train_len}, max_len={self.max_len}"


class NoPositions(PositionScheme):
    """NoPE: no position signal at all; only the causal mask breaks the symmetry.

    A causal decoder without positional encoding is not permutation-equivariant (each token sees a
    different prefix), and Kazemnejad et al. 2023 show it can represent both absolute and relative
    positions.

    Shapes:
        embed: x: [B, T, D] -> [B, T, D] (the identity)

    References:
        Kazemnejad et al., The Impact of Positional Encoding on Length Generalization in Transformers,
        arXiv:2305.19466.
    """


class SinusoidalPositions(PositionScheme):
    """Fixed sinusoidal vectors added to the input, from :func:`lib.sinusoidal.sinusoidal_pe`.

    Defined for every position, so any length runs; positions past ``train_len`` were never seen.

    Equation:
        h_t = E[x_t] + PE[t]
        PE[t, 2i] = sin(t / base^(2i/D)),  PE[t, 2i+1] = cos(t / base^(2i/D))

    Args:
        d_model, n_heads, max_len, train_len, base: as :class:`PositionScheme`.

    Raises:
        ValueError: ``d_model`` is odd (and the errors of :class:`PositionScheme`).

    Shapes:
        embed: x: [B, T, D] -> [B, T, D]

    References:
        Vaswani et al., Attention Is All You Need, arXiv:1706.03762 (section 3.5).
    """

    acts_on = "input"

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        if self.d_model % 2:
            raise ValueError(f"d_model must be even for sinusoidal positions, got {self.d_model}")
        self._tables: dict[tuple[int, torch.dtype], torch.Tensor] = {}

    def embed(self, x: torch.Tensor) -> torch.Tensor:
        seq_len = x.shape[1]
        key = (seq_len, x.dtype)
        if key not in self._tables:
            self._tables[key] = sinusoidal_pe(seq_len, self.d_model, self.base).to(x.dtype)
        return x + self._tables[key].to(x.device)  # [B, T, D] + [T, D]


class LearnedPositions(PositionScheme):
    """A learned table of ``max_len`` position vectors added to the input.

    :class:`lib.learned.LearnedPositionalEmbedding` (GPT-2 style, rows start as N(0, 0.02²)). Rows
    ``train_len .. max_len−1`` exist but never get a gradient while training at ``train_len``: with
    Adam and no weight decay they keep their random initial values, so evaluating past
    ``train_len`` uses untrained vectors. Past ``max_len`` the table raises ``ValueError``.

    Equation:
        h_t = E[x_t] + P[t]

    Args:
        d_model, n_heads, max_len, train_len, base: as :class:`PositionScheme`.

    Raises:
        ValueError: as :class:`PositionScheme`; in :meth:`embed`, a length past ``max_len``.

    Shapes:
        embed: x: [B, T, D] -> [B, T, D]; table: [max_len, D]

    References:
        Devlin et al., BERT, arXiv:1810.04805.
    """

    acts_on = "input"

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.table = LearnedPositionalEmbedding(self.max_len, self.d_model)

    def embed(self, x: torch.Tensor) -> torch.Tensor:
        positions = torch.arange(x.shape[1], device=x.device)  # [T]
        return x + self.table(positions).to(x.dtype)  # [B, T, D] + [T, D]


class RotaryPositions(PositionScheme):
    """RoPE: rotate each ``(i, i + d_head/2)`` pair of ``q`` and ``k`` by ``t · θ_i``.

    Angles from :func:`lib.rope.rope_angles` (float32), rotation by :func:`lib.rope.apply_rope` with
    ``pairing="half"`` (the GPT-NeoX / Hugging Face LLaMA layout). The score of query ``m`` and key
    ``n`` then depends on ``m − n`` only.

    Equation:
        θ_i = base^(−2i/d_head),  angle[t, i] = t · θ_i

    Args:
        d_model, n_heads, max_len, train_len, base: as :class:`PositionScheme`.

    Raises:
        ValueError: ``d_head = d_model / n_heads`` is odd (and the errors of :class:`PositionScheme`).

    Shapes:
        rotary(T): [B, H, T, d_head] -> [B, H, T, d_head]

    References:
        Su et al., RoFormer, arXiv:2104.09864.
    """

    acts_on = "q/k"

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        if self.d_head % 2:
            raise ValueError(f"d_head = d_model / n_heads must be even for RoPE, got {self.d_head}")

    def scaling(self, seq_len: int) -> tuple[torch.Tensor, float]:
        """``(inv_freq, attention_factor)`` used at ``seq_len`` (here: the default frequencies).

        Equation:
            inv_freq[i] = base^(−2i/d_head)  (the default; a subclass may rescale it at seq_len)

        Args:
            seq_len: the sequence length ``T`` the rotation is built for.

        Returns:
            The inverse frequencies θ_i and the factor that multiplies cos and sin
            (1.0 here).

        Shapes:
            inv_freq: [d_head/2]
        """
        return ROPE_SCALING["default"](self.d_head, self.base)

    def rotary(self, seq_len: int) -> Callable[[torch.Tensor], torch.Tensor]:
        inv_freq, attention_factor = self.scaling(seq_len)  # [d_head/2], float
        positions = torch.arange(seq_len)  # [T]
        angles = rope_angles(positions, inv_freq)  # [T, d_head/2], float32
        # Hugging Face multiplies cos and sin by the attention factor (1.0 for default / linear).
        cos, sin = angles.cos() * attention_factor, angles.sin() * attention_factor

        def rotate(t: torch.Tensor) -> torch.Tensor:
            return apply_rope(t, cos.to(t.device), sin.to(t.device), pairing="half")

        return rotate


class InterpolatedRotaryPositions(RotaryPositions):
    """RoPE evaluated with linear position interpolation (PI) past the training length.

    At length ``T > train_len`` the positions are squeezed by ``factor = T / train_len``
    (``ROPE_SCALING["linear"]``), so every angle stays inside the range seen in training; at
    ``T <= train_len`` it is plain RoPE. Chen et al. fine-tune briefly after interpolating; this
    scheme does not, it reuses the ``"rope"`` weights as they are (``shares_training_with =
    "rope"``).

    Equation:
        θ_i → θ_i / factor,  factor = T / train_len  (T > train_len)

    Shapes:
        as :class:`RotaryPositions`

    References:
        Chen et al., Extending Context Window of Large Language Models via Positional Interpolation,
        arXiv:2306.15595.
    """

    shares_training_with = "rope"

    def scaling(self, seq_len: int) -> tuple[torch.Tensor, float]:
        if seq_len <= self.train_len:
            return ROPE_SCALING["default"](self.d_head, self.base)
        return ROPE_SCALING["linear"](self.d_head, self.base, factor=seq_len / self.train_len)


class ALiBiPositions(PositionScheme):
    """ALiBi: a fixed linear distance penalty on the scores, from :func:`lib.alibi.alibi_bias`.

    The slopes ``m_h`` are fixed; no parameters, no position vectors.

    Equation:
        bias[h, i, j] = −m_h · (i − j)  for j <= i,  −inf for j > i

    Shapes:
        bias(T): [H, T, T]

    References:
        Press et al., Train Short, Test Long (ALiBi), arXiv:2108.12409.
    """

    acts_on = "scores"

    def bias(self, seq_len: int, *, dtype: torch.dtype) -> torch.Tensor:
        return alibi_bias(self.n_heads, seq_len, causal=True).to(dtype)  # [H, T, T]


class T5BiasPositions(PositionScheme):
    """T5's bucketed relative bias: add a learned scalar ``b_h(bucket(j − i))`` to the scores.

    :class:`lib.relative.T5RelativeBias` in its decoder form (``bidirectional=False``) with T5's
    32 buckets and ``max_distance`` 128 (section 2.1 of the paper): distances 0–15 get a bucket
    each, longer ones share logarithmically wider buckets, and from 128 on all share the last. One
    table of ``[32, n_heads]`` scalars is shared by every layer, as in T5. It starts as
    N(0, d_model^−1), transformers' T5 initialisation (``factor = 1``). Buckets of distances never
    seen in training keep their initial values.

    Equation:
        bias[h, i, j] = b_h(bucket(j − i))  for j <= i,  −inf for j > i

    Args:
        d_model, n_heads, max_len, train_len, base: as :class:`PositionScheme`.

    Shapes:
        bias(T): [H, T, T]

    References:
        Raffel et al., Exploring the Limits of Transfer Learning (T5), arXiv:1910.10683.
    """

    acts_on = "scores"
    num_buckets = 32
    max_distance = 128

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.table = T5RelativeBias(
            self.n_heads,
            num_buckets=self.num_buckets,
            max_distance=self.max_distance,
            bidirectional=False,
        )
        nn.init.normal_(self.table.relative_attention_bias.weight, std=self.d_model**-0.5)

    def bias(self, seq_len: int, *, dtype: torch.dtype) -> torch.Tensor:
        return _causal(self.table(seq_len, seq_len)).to(dtype)  # [H, T, T]


def _causal(bias: torch.Tensor) -> torch.Tensor:
    """``bias [..., T, T]`` with ``−inf`` for every key after its query."""
    seq_len = bias.shape[-1]
    future = torch.ones(seq_len, seq_len, dtype=torch.bool, device=bias.device).triu(1)
    return bias.masked_fill(future, float("-inf"))


#: Position schemes by name; each is ``Scheme(d_model, n_heads, *, max_len, train_len, base)``.
POSITION_SCHEMES: dict[str, type[PositionScheme]] = {
    "none": NoPositions,
    "sinusoidal": SinusoidalPositions,
    "learned": LearnedPositions,
    "rope": RotaryPositions,
    "rope+pi": InterpolatedRotaryPositions,
    "alibi": ALiBiPositions,
    "t5": T5BiasPositions,
}


# --------------------------------------------------------------------------------------------
# The model
# --------------------------------------------------------------------------------------------


class TinyDecoder(nn.Module):
    """A tiny decoder-only, attention-only transformer with a pluggable position scheme.

    Pre-LN causal attention layers (:class:`lib.attention.SelfAttention`). No MLP blocks: two
    attention layers are enough for an induction head (Olsson et al. 2022). Token embeddings start
    as N(0, 1) (PyTorch's default), the same scale as the sinusoidal vectors. Parameters other than
    the scheme's are created first, so with the same seed every scheme starts from the same weights.

    Equation:
        h⁰ = scheme.embed(E[x]);  hˡ = hˡ⁻¹ + Attn(LN(hˡ⁻¹));  logits = W_out · LN(h)

    Args:
        vocab_size: number of token ids, an int >= 1.
        d_model: width ``D``, an int >= 1, divisible by ``n_heads``.
        n_heads: heads per layer, an int >= 1.
        n_layers: attention layers, an int >= 1.
        scheme: a key of :data:`POSITION_SCHEMES`.
        max_len: longest input (rows of a learned table), an int >= ``train_len``.
        train_len: the training length (used by ``"rope+pi"``), an int >= 1.
        base: frequency base of sinusoidal and rotary schemes, a real number > 0.

    Raises:
        TypeError: an argument has the wrong type; ``input_ids`` is not an integer tensor.
        ValueError: ``scheme`` unknown, a size < 1, ``d_model`` not divisible by ``n_heads``;
            (forward) ``input_ids`` not 2-D, a token id out of range, or (learned) ``T > max_len``.

    Shapes:
        input_ids: [B, T] integer -> logits: [B, T, vocab_size]

    References:
        Vaswani et al., Attention Is All You Need, arXiv:1706.03762.
        Olsson et al., In-context Learning and Induction Heads, arXiv:2209.11895.
    """

    def __init__(
        self,
        vocab_size: int,
        d_model: int,
        n_heads: int,
        n_layers: int,
        scheme: str,
        *,
        max_len: int,
        train_len: int,
        base: float = 10000.0,
    ) -> None:
        super().__init__()
        self.vocab_size = check_positive_int("vocab_size", vocab_size)
        self.d_model = check_positive_int("d_model", d_model)
        self.n_layers = check_positive_int("n_layers", n_layers)
        self.scheme_name = check_choice("scheme", scheme, tuple(POSITION_SCHEMES))
        self.embed_tokens = nn.Embedding(self.vocab_size, self.d_model)  # [V, D], N(0, 1)
        self.norms = nn.ModuleList(nn.LayerNorm(self.d_model) for _ in range(self.n_layers))
        self.layers = nn.ModuleList(
            SelfAttention(self.d_model, n_heads) for _ in range(self.n_layers)
        )
        self.norm = nn.LayerNorm(self.d_model)
        self.lm_head = nn.Linear(self.d_model, self.vocab_size, bias=False)  # [V, D]
        # Built last, so the shared weights above are drawn identically for every scheme.
        self.positions = POSITION_SCHEMES[scheme](
            self.d_model, n_heads, max_len=max_len, train_len=train_len, base=base
        )

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        """Next-token logits of ``input_ids``.

        Args:
            input_ids: token ids in ``[0, vocab_size)``, an integer tensor.

        Returns:
            The logits.

        Raises:
            TypeError: ``input_ids`` is not an integer tensor.
            ValueError: ``input_ids`` is not 2-D, holds an id out of range, or (learned positions) is
                longer than ``max_len``.

        Shapes:
            input_ids: [B, T] -> [B, T, vocab_size]
        """
        input_ids = check_integer_tensor("input_ids", input_ids)
        if input_ids.dim() != 2:
            raise ValueError(f"input_ids must be [B, T], got shape {list(input_ids.shape)}")
        check_token_ids(input_ids, self.vocab_size, "input_ids")
        seq_len = input_ids.shape[1]
        h = self.positions.embed(self.embed_tokens(input_ids))  # [B, T, D]
        rotary = self.positions.rotary(seq_len)
        bias = self.positions.bias(seq_len, dtype=h.dtype)  # [H, T, T] or None
        for norm, layer in zip(self.norms, self.layers, strict=True):
            h = h + layer(norm(h), attn_bias=bias, causal=bias is None, rotary=rotary)
        return self.lm_head(self.norm(h))  # [B, T, V]


# --------------------------------------------------------------------------------------------
# Training and evaluation
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class LabConfig:
    """Sizes and settings of the lab; the defaults are the chapter's experiment.

    Attributes:
        vocab_size: token ids, at least ``max_len // 2`` (a block holds distinct tokens).
        d_model: model width ``D``.
        n_heads: heads per layer (``d_head = d_model / n_heads``).
        n_layers: attention layers.
        train_len: the training length ``L``, at least 4.
        eval_multiples: evaluate at ``L · k`` for each ``k`` of this tuple.
        steps: optimiser steps (one batch each).
        warmup_steps: steps of linear learning-rate warm-up, then constant.
        batch_size: sequences per training batch.
        lr: Adam's learning rate (no weight decay).
        eval_sequences: sequences per evaluation length.
        seed: seeds the model initialisation (``seed``), the training data (``seed + 1``) and the
            evaluation data (``seed + 2``).
        base: frequency base of the sinusoidal and rotary schemes.

    Raises:
        TypeError: a field has the wrong type (e.g. ``eval_multiples`` not a tuple).
        ValueError: a size < 1, ``train_len < 4``, ``d_model`` not divisible by ``n_heads``,
            ``vocab_size < max_len // 2``, ``lr <= 0``.
    """

    vocab_size: int = 64
    d_model: int = 64
    n_heads: int = 4
    n_layers: int = 2
    train_len: int = 32
    eval_multiples: tuple[int, ...] = (1, 2, 4)
    steps: int = 300
    batch_size: int = 32
    lr: float = 1e-2
    warmup_steps: int = 50
    eval_sequences: int = 256
    seed: int = 0
    base: float = 10000.0

    def __post_init__(self) -> None:
        for name in (
            "vocab_size",
            "d_model",
            "n_heads",
            "n_layers",
            "train_len",
            "steps",
            "warmup_steps",
            "batch_size",
            "eval_sequences",
        ):
            check_positive_int(name, getattr(self, name))
        check_int("train_len", self.train_len, minimum=4)
        check_int("seed", self.seed, minimum=0)
        check_positive_float("lr", self.lr)
        check_positive_float("base", self.base)
        if not isinstance(self.eval_multiples, tuple) or not self.eval_multiples:
            raise TypeError(
                f"eval_multiples must be a non-empty tuple, got {self.eval_multiples!r}"
            )
        for k in self.eval_multiples:
            check_positive_int("eval_multiples entries", k)
        _check_heads(self.d_model, self.n_heads)
        needed = self.max_len // 2
        if self.vocab_size < needed:
            raise ValueError(
                f"vocab_size must be >= max_len // 2 = {needed} (blocks of distinct tokens), "
                f"got {self.vocab_size}"
            )

    @property
    def max_len(self) -> int:
        """The longest evaluation length, ``train_len · max(eval_multiples)``."""
        return self.train_len * max(self.eval_multiples)

    @property
    def eval_lens(self) -> tuple[int, ...]:
        """The evaluation lengths ``train_len · k``."""
        return tuple(self.train_len * k for k in self.eval_multiples)


@dataclass
class TrainResult:
    """A trained model, its per-step training loss and the wall time the training took.

    Attributes:
        model: the trained :class:`TinyDecoder`.
        losses: the training loss of each optimiser step.
        seconds: wall time of the training.
    """

    model: TinyDecoder
    losses: list[float]
    seconds: float


@dataclass(frozen=True)
class EvalResult:
    """Next-token accuracy on the predictable positions of an induction evaluation set.

    Attributes:
        seq_len: the evaluation length ``T``.
        accuracy: fraction of predictable positions whose argmax is the right token.
        per_position: ``[T]`` float64, accuracy at each position ``t`` over the sequences where
            ``t`` is predictable; NaN where none is.
        per_position_count: ``[T]`` long, how many predictions each position scored.
        per_period: ``{n: accuracy}`` over the sequences with period ``n``.
        n_predictions: number of predictable positions scored.
    """

    seq_len: int
    accuracy: float
    per_position: torch.Tensor
    per_position_count: torch.Tensor
    per_period: dict[int, float]
    n_predictions: int


def build_decoder(scheme: str, config: LabConfig) -> TinyDecoder:
    """A fresh :class:`TinyDecoder` for ``scheme`` with ``config``'s sizes, seeded by ``config.seed``.

    Calls ``torch.manual_seed(config.seed)`` first, so every call with the same config returns the
    same initial weights, and (the scheme's parameters being created last) every scheme shares
    them. The learned table gets ``config.max_len`` rows. See :class:`TinyDecoder` for the model.

    Args:
        scheme: a key of :data:`POSITION_SCHEMES`.
        config: a :class:`LabConfig`.

    Returns:
        A :class:`TinyDecoder` in training mode; it maps ``input_ids: [B, T]`` to ``[B, T, V]``.

    Raises:
        TypeError: ``config`` is not a :class:`LabConfig`.
        ValueError: ``scheme`` is unknown.
    """
    check_choice("scheme", scheme, tuple(POSITION_SCHEMES))
    if not isinstance(config, LabConfig):
        raise TypeError(f"config must be a LabConfig, got {type(config).__name__}")
    torch.manual_seed(config.seed)
    return TinyDecoder(
        config.vocab_size,
        config.d_model,
        config.n_heads,
        config.n_layers,
        scheme,
        max_len=config.max_len,
        train_len=config.train_len,
        base=config.base,
    )


def train_decoder(scheme: str, config: LabConfig = LabConfig()) -> TrainResult:
    """Train a :class:`TinyDecoder` with ``scheme`` on the induction task at ``config.train_len``.

    Minimises the cross-entropy of the predictable next tokens (targets :data:`IGNORE_INDEX`
    skipped) with Adam at a constant learning rate, ``config.steps`` batches of
    :func:`induction_batch` from a generator seeded with ``config.seed + 1`` (the same batches for
    every scheme). Runs in :func:`single_thread` so that the result does not depend on the
    machine's thread count.

    Args:
        scheme: a key of :data:`POSITION_SCHEMES`.
        config: a :class:`LabConfig`.

    Returns:
        A :class:`TrainResult` (model in eval mode, float losses per step, wall seconds).

    Raises:
        TypeError: ``config`` is not a :class:`LabConfig`.
        ValueError: ``scheme`` is unknown.
    """
    model = build_decoder(scheme, config)
    data = torch.Generator().manual_seed(config.seed + 1)
    optimiser = torch.optim.Adam(model.parameters(), lr=config.lr)
    # Linear warm-up, then constant: Adam's first steps are large and noisy at a high rate.
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimiser, lambda step: min(1.0, (step + 1) / config.warmup_steps)
    )
    losses: list[float] = []
    start = time.perf_counter()
    with single_thread():
        model.train()
        for _ in range(config.steps):
            batch = induction_batch(
                config.batch_size, config.train_len, config.vocab_size, generator=data
            )
            logits = model(batch.input_ids)  # [B, T, V]
            loss = F.cross_entropy(
                logits.flatten(0, 1),  # [B·T, V]
                batch.targets.flatten(),  # [B·T]
                ignore_index=IGNORE_INDEX,
            )
            optimiser.zero_grad(set_to_none=True)
            loss.backward()
            optimiser.step()
            schedule.step()
            losses.append(loss.item())
    model.eval()
    return TrainResult(model=model, losses=losses, seconds=time.perf_counter() - start)


@torch.no_grad()
def evaluate_decoder(
    model: TinyDecoder,
    seq_len: int,
    *,
    n_sequences: int = 256,
    seed: int = 2,
    batch_size: int = 64,
) -> EvalResult:
    """Next-token accuracy of ``model`` on ``n_sequences`` induction sequences of length ``seq_len``.

    ``accuracy = #{argmax logits[b, t] == targets[b, t]} / #{predictable (b, t)}`` over
    :func:`induction_batch` sequences drawn from a generator seeded with ``seed`` (so every model
    sees the same set). Runs in :func:`single_thread`, in batches of ``batch_size``.

    Args:
        model: a :class:`TinyDecoder`.
        seq_len: evaluation length ``T``, an int >= 4.
        n_sequences: number of sequences, an int >= 1.
        seed: seed of the evaluation data, an int >= 0.
        batch_size: sequences per forward pass, an int >= 1.

    Returns:
        An :class:`EvalResult`.

    Raises:
        TypeError: ``model`` is not a :class:`TinyDecoder`; an argument has the wrong type.
        ValueError: ``seq_len < 4``, ``n_sequences < 1``, ``seed < 0``, ``batch_size < 1``, or
            (learned positions) ``seq_len`` past the model's table.
    """
    if not isinstance(model, TinyDecoder):
        raise TypeError(f"model must be a TinyDecoder, got {type(model).__name__}")
    seq_len = check_int("seq_len", seq_len, minimum=4)
    n_sequences = check_positive_int("n_sequences", n_sequences)
    seed = check_int("seed", seed, minimum=0)
    batch_size = check_positive_int("batch_size", batch_size)
    data = torch.Generator().manual_seed(seed)
    correct_at = torch.zeros(seq_len, dtype=torch.float64)  # [T]
    count_at = torch.zeros(seq_len, dtype=torch.float64)  # [T]
    by_period: dict[int, list[float]] = {}
    was_training = model.training
    model.eval()
    with single_thread():
        done = 0
        while done < n_sequences:
            size = min(batch_size, n_sequences - done)
            batch = induction_batch(size, seq_len, model.vocab_size, generator=data)
            predicted = model(batch.input_ids).argmax(dim=-1)  # [b, T]
            scored = batch.targets != IGNORE_INDEX  # [b, T]
            correct = (predicted == batch.targets) & scored  # [b, T]
            correct_at += correct.sum(dim=0).double()
            count_at += scored.sum(dim=0).double()
            for n, c, s in zip(batch.periods.tolist(), correct.sum(1), scored.sum(1), strict=True):
                totals = by_period.setdefault(int(n), [0.0, 0.0])
                totals[0] += float(c)
                totals[1] += float(s)
            done += size
    model.train(was_training)
    per_position = torch.where(count_at > 0, correct_at / count_at.clamp(min=1), math.nan)
    return EvalResult(
        seq_len=seq_len,
        accuracy=float(correct_at.sum() / count_at.sum()),
        per_position=per_position,
        per_position_count=count_at.long(),
        per_period={n: c / s for n, (c, s) in sorted(by_period.items())},
        n_predictions=int(count_at.sum()),
    )


@dataclass
class LabResult:
    """Everything :func:`run_lab` measured.

    Attributes:
        config: the :class:`LabConfig` used.
        models: trained model per scheme (``"rope+pi"`` holds the ``"rope"`` weights).
        losses: training loss per step per scheme.
        seconds: training wall time per trained scheme (schemes sharing weights are not listed).
        results: ``results[scheme][seq_len]`` is an :class:`EvalResult`.
    """

    config: LabConfig
    models: dict[str, TinyDecoder] = field(default_factory=dict)
    losses: dict[str, list[float]] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)
    results: dict[str, dict[int, EvalResult]] = field(default_factory=dict)

    def accuracy_between(self, scheme: str, seq_len: int, start: int, stop: int) -> float:
        """Accuracy of ``scheme`` at length ``seq_len`` over positions ``start <= t < stop`` only.

        Args:
            scheme: a scheme that was run.
            seq_len: an evaluated length.
            start: first position counted.
            stop: one past the last position counted.

        Returns:
            The accuracy, NaN if no position in that range was scored.

        Raises:
            KeyError: a scheme or length that was not run.
        """
        result = self.results[scheme][seq_len]
        counts = result.per_position_count[start:stop].double()  # [stop - start]
        if counts.sum() == 0:
            return math.nan
        correct = result.per_position[start:stop].nan_to_num(0.0) * counts
        return float(correct.sum() / counts.sum())

    def accuracy_table(self, digits: int = 2) -> dict[str, dict[int, float]]:
        """``{scheme: {seq_len: accuracy rounded to digits}}``, ready to print.

        Args:
            digits: decimal places of the rounded accuracies.

        Returns:
            The accuracy of every scheme at every evaluated length.
        """
        return {
            scheme: {t: round(r.accuracy, digits) for t, r in by_len.items()}
            for scheme, by_len in self.results.items()
        }


def run_lab(
    config: LabConfig = LabConfig(), schemes: tuple[str, ...] = tuple(POSITION_SCHEMES)
) -> LabResult:
    """Train every scheme at ``config.train_len`` and evaluate it at each of ``config.eval_lens``.

    A scheme whose ``shares_training_with`` names another scheme (``"rope+pi"`` → ``"rope"``)
    is not trained again: it gets a copy of that scheme's trained weights (training it would give
    the very same weights, since the two agree at the training length). Same seeds, same data
    and the same initial shared weights for every scheme.

    Args:
        config: a :class:`LabConfig`.
        schemes: names from :data:`POSITION_SCHEMES`, each at most once.

    Returns:
        A :class:`LabResult`.

    Raises:
        TypeError: ``config`` is not a :class:`LabConfig` or ``schemes`` not a tuple.
        ValueError: an unknown or repeated scheme name.
    """
    if not isinstance(config, LabConfig):
        raise TypeError(f"config must be a LabConfig, got {type(config).__name__}")
    if not isinstance(schemes, tuple):
        raise TypeError(f"schemes must be a tuple of names, got {type(schemes).__name__}")
    for name in schemes:
        check_choice("schemes entries", name, tuple(POSITION_SCHEMES))
    if len(set(schemes)) != len(schemes):
        raise ValueError(f"schemes must not repeat a name, got {schemes}")
    lab = LabResult(config=config)
    for name in schemes:
        donor = POSITION_SCHEMES[name].shares_training_with
        if donor is not None and donor not in lab.models:
            trained = train_decoder(donor, config)
            lab.models[donor], lab.losses[donor] = trained.model, trained.losses
            lab.seconds[donor] = trained.seconds
        if donor is not None:
            model = build_decoder(name, config)
            model.load_state_dict(lab.models[donor].state_dict())
            model.eval()
            lab.models[name], lab.losses[name] = model, lab.losses[donor]
        elif name not in lab.models:
            trained = train_decoder(name, config)
            lab.models[name], lab.losses[name] = trained.model, trained.losses
            lab.seconds[name] = trained.seconds
    for name in schemes:
        lab.results[name] = {
            t: evaluate_decoder(
                lab.models[name], t, n_sequences=config.eval_sequences, seed=config.seed + 2
            )
            for t in config.eval_lens
        }
    return lab


# --------------------------------------------------------------------------------------------
# Seeds as one ensemble: S independent models in one forward pass
# --------------------------------------------------------------------------------------------

#: The two evaluation conditions: the period range at evaluation length ``T`` for training length
#: ``L``. ``"seen"`` keeps training's periods (new positions, seen distances); ``"unseen"`` scales
#: them with ``T`` (new positions and new distances). At ``T = L`` both are training's range.
CONDITIONS: dict[str, Callable[[int, int], tuple[int, int]]] = {
    "seen": lambda seq_len, train_len: (-(-train_len // 4), train_len // 2),
    "unseen": lambda seq_len, train_len: (-(-seq_len // 4), seq_len // 2),
}

#: The zero-shot RoPE scaling methods the lab applies to a trained RoPE model (keys of
#: :data:`lib.rope_scaling.ROPE_SCALING`; ``"linear"`` is position interpolation).
ZERO_SHOT_SCALING: tuple[str, ...] = ("linear", "ntk", "dynamic", "yarn", "llama3")

#: Dynamic NTK's configured factor (transformers' ``rope_scaling["factor"]``) in the lab.
DYNAMIC_FACTOR = 2.0


def scaled_rope_frequencies(
    method: str, d_head: int, base: float, *, seq_len: int, train_len: int
) -> tuple[torch.Tensor, float]:
    """``(inv_freq, attention_factor)`` of a RoPE scaling method at length ``seq_len``.

    The factor is ``s = seq_len / train_len`` (the method is told the length it must reach); up
    to ``train_len`` every method gives the default frequencies. Settings: ``"linear"`` (PI) and
    ``"ntk"`` with factor ``s``; ``"dynamic"`` with the configured factor :data:`DYNAMIC_FACTOR` and
    the current length ``seq_len`` (its base grows with the length); ``"yarn"`` with factor ``s``,
    original length ``train_len`` and the default β's; ``"llama3"`` with factor ``s``, Llama 3.1's
    low/high frequency factors 1 and 4 and original length ``train_len``. All come from
    :data:`lib.rope_scaling.ROPE_SCALING`.

    Equation:
        s = seq_len / train_len  (methods other than "dynamic", seq_len > train_len)

    Args:
        method: ``"default"`` or one of :data:`ZERO_SHOT_SCALING`.
        d_head: the head width.
        base: the RoPE base.
        seq_len: the evaluation length, an int >= 1.
        train_len: the training length, an int >= 1.

    Returns:
        ``(inv_freq, attention_factor)``.

    Raises:
        ValueError: ``method`` is not ``"default"`` or one of :data:`ZERO_SHOT_SCALING`; a size
            is < 1.

    Shapes:
        inv_freq: [d_head/2]

    References:
        Chen et al., Extending Context Window of Large Language Models via Positional Interpolation,
        arXiv:2306.15595.
        Peng et al., YaRN, arXiv:2309.00071.
        Grattafiori et al., The Llama 3 Herd of Models, arXiv:2407.21783.
    """
    check_choice("method", method, ("default", *ZERO_SHOT_SCALING))
    seq_len = check_positive_int("seq_len", seq_len)
    train_len = check_positive_int("train_len", train_len)
    if method == "default" or seq_len <= train_len:
        return ROPE_SCALING["default"](d_head, base)
    factor = seq_len / train_len
    if method in ("linear", "ntk"):
        return ROPE_SCALING[method](d_head, base, factor=factor)
    if method == "dynamic":
        return ROPE_SCALING["dynamic"](
            d_head,
            base,
            factor=DYNAMIC_FACTOR,
            max_position_embeddings=train_len,
            seq_len=seq_len,
        )
    if method == "yarn":
        return ROPE_SCALING["yarn"](
            d_head, base, factor=factor, original_max_position_embeddings=train_len
        )
    return ROPE_SCALING["llama3"](
        d_head,
        base,
        factor=factor,
        low_freq_factor=1.0,
        high_freq_factor=4.0,
        original_max_position_embeddings=train_len,
    )


def _layer_norm(h: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    """LayerNorm of ``h: [S, B, T, D]`` with per-model ``weight``/``bias`` ``[S, D]``."""
    normed = F.layer_norm(h, h.shape[-1:], eps=1e-5)
    return normed * weight[:, None, None, :] + bias[:, None, None, :]


def _linear(x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    """``x: [S, B, T, D_in]`` times per-model ``weight: [S, D_out, D_in]`` → ``[S, B, T, D_out]``."""
    s, b, t, d = x.shape
    return torch.bmm(x.reshape(s, b * t, d), weight.transpose(1, 2)).view(s, b, t, -1)


class DecoderEnsemble:
    """``S`` independent :class:`TinyDecoder` models of one scheme, stacked and run as one.

    Every parameter of :class:`TinyDecoder` is stored once with a leading model axis
    (``params[name]: [S, ...]``, the names of ``TinyDecoder.state_dict()``), and
    :meth:`forward` computes all ``S`` models in one pass with batched matrix products. The
    models never mix: model ``s`` reads only ``params[·][s]`` and its own inputs, so the sum of
    their losses has per-model gradients, and Adam (elementwise) trains them exactly as separate
    runs would, up to the order of floating-point sums. :meth:`member` returns model ``s`` as a
    plain :class:`TinyDecoder` (tested equal).

    Args:
        scheme: a key of :data:`POSITION_SCHEMES`.
        config: a :class:`LabConfig` (sizes; its ``seed`` is ignored).
        seeds: one initialisation seed per model (:func:`build_decoder` with that seed).

    Raises:
        TypeError: ``config`` is not a :class:`LabConfig`; ``seeds`` not a tuple of ints.
        ValueError: unknown scheme, no seeds, a repeated or negative seed.

    Shapes:
        input_ids: [S, B, T] (or [B, T], shared by every model) -> logits: [S, B, T, vocab_size]
    """

    def __init__(self, scheme: str, config: LabConfig, seeds: tuple[int, ...]) -> None:
        check_choice("scheme", scheme, tuple(POSITION_SCHEMES))
        if not isinstance(config, LabConfig):
            raise TypeError(f"config must be a LabConfig, got {type(config).__name__}")
        if not isinstance(seeds, tuple) or not seeds:
            raise TypeError(f"seeds must be a non-empty tuple of ints, got {seeds!r}")
        for s in seeds:
            check_int("seeds entries", s, minimum=0)
        if len(set(seeds)) != len(seeds):
            raise ValueError(f"seeds must not repeat, got {seeds}")
        self.scheme = scheme
        self.config = config
        self.seeds = seeds
        members = [build_decoder(scheme, _with_seed(config, s)) for s in seeds]
        self.template = members[0]
        names = list(members[0].state_dict())
        self.params: dict[str, torch.Tensor] = {
            name: torch.stack([m.state_dict()[name] for m in members]).clone() for name in names
        }
        self.n_heads = config.n_heads
        self.d_head = config.d_model // config.n_heads
        #: ``(inv_freq, attention_factor)`` used at every length instead of the scheme's own RoPE
        #: frequencies (a fine-tuned PI model keeps its factor), or ``None``.
        self.fixed_rope: tuple[torch.Tensor, float] | None = None

    @property
    def n_models(self) -> int:
        """``S``, the number of stacked models."""
        return len(self.seeds)

    def parameters(self) -> list[torch.Tensor]:
        """The stacked parameter tensors (what an optimiser updates).

        Returns:
            The tensors of :attr:`params`, in ``TinyDecoder.state_dict()`` order (not copies).

        Shapes:
            each: [S, ...] (the member's shape with a leading model axis)
        """
        return list(self.params.values())

    def requires_grad_(self, flag: bool = True) -> DecoderEnsemble:
        """Set ``requires_grad`` on every stacked parameter; returns ``self``.

        Args:
            flag: the value to set.

        Returns:
            ``self``, so that calls chain.
        """
        for p in self.params.values():
            p.requires_grad_(flag)
        return self

    def copy(self) -> DecoderEnsemble:
        """An independent copy (detached parameters, same scheme, seeds and fixed RoPE).

        Returns:
            A new :class:`DecoderEnsemble` whose parameters are detached clones of these.
        """
        new = object.__new__(DecoderEnsemble)
        new.__dict__.update(self.__dict__)
        new.params = {k: v.detach().clone() for k, v in self.params.items()}
        return new

    def member(self, index: int) -> TinyDecoder:
        """Model ``index`` as a plain :class:`TinyDecoder` in eval mode (a copy).

        Args:
            index: which model, an int in ``0 .. S−1`` (the position of its seed in ``seeds``).

        Returns:
            A :class:`TinyDecoder` loaded with model ``index``'s parameters.

        Raises:
            TypeError: ``index`` is not an int.
            ValueError: ``index < 0`` or ``index >= S``.
        """
        index = check_int("index", index, minimum=0)
        if index >= self.n_models:
            raise ValueError(f"index must be < {self.n_models}, got {index}")
        model = build_decoder(self.scheme, _with_seed(self.config, self.seeds[index]))
        model.load_state_dict({k: v[index].detach() for k, v in self.params.items()})
        return model.eval()

    def _rope_tables(
        self, seq_len: int, rope: tuple[torch.Tensor, float] | None
    ) -> tuple[torch.Tensor, torch.Tensor] | None:
        positions = self.template.positions
        if not isinstance(positions, RotaryPositions):
            return None
        if rope is None:
            rope = self.fixed_rope or positions.scaling(seq_len)
        inv_freq, attention_factor = rope
        angles = rope_angles(torch.arange(seq_len), inv_freq)  # [T, d_head/2] float32
        return angles.cos() * attention_factor, angles.sin() * attention_factor

    @overload
    def forward(
        self,
        input_ids: torch.Tensor,
        *,
        rope: tuple[torch.Tensor, float] | None = ...,
        keep_pairs: torch.Tensor | None = ...,
        return_attention: Literal[False] = ...,
    ) -> torch.Tensor: ...

    @overload
    def forward(
        self,
        input_ids: torch.Tensor,
        *,
        rope: tuple[torch.Tensor, float] | None = ...,
        keep_pairs: torch.Tensor | None = ...,
        return_attention: Literal[True],
    ) -> tuple[torch.Tensor, list[AttentionRecord]]: ...

    def forward(
        self,
        input_ids: torch.Tensor,
        *,
        rope: tuple[torch.Tensor, float] | None = None,
        keep_pairs: torch.Tensor | None = None,
        return_attention: bool = False,
    ) -> torch.Tensor | tuple[torch.Tensor, list[AttentionRecord]]:
        """Logits of every model: ``input_ids [S, B, T]`` (or ``[B, T]``) → ``[S, B, T, V]``.

        Args:
            input_ids: token ids, integer, in ``0 .. vocab_size − 1``.
            rope: ``(inv_freq [d_head/2], attention_factor)`` to use instead of the scheme's
                own (RoPE schemes only; how the zero-shot scaling methods are applied).
            keep_pairs: ``[n_layers, d_head/2]`` bool; pair ``i`` (dimensions ``i`` and
                ``i + d_head/2``) of every head's ``q`` and ``k`` in layer ``l`` is zeroed where
                ``keep_pairs[l, i]`` is False (an ablation: that frequency no longer adds to the
                scores). ``None`` keeps everything.
            return_attention: also return one :class:`AttentionRecord` per layer.

        Returns:
            The logits, or ``(logits, records)`` with ``return_attention``.

        Raises:
            TypeError: ``input_ids`` is not an integer tensor.
            ValueError: wrong shape, an id out of range, ``T`` past a learned table, or ``rope``
                given for a scheme without RoPE.

        Shapes:
            input_ids: [S, B, T] or [B, T] -> logits: [S, B, T, V]
            keep_pairs: [n_layers, d_head/2]
        """
        input_ids = check_integer_tensor("input_ids", input_ids)
        if input_ids.dim() == 2:
            input_ids = input_ids.expand(self.n_models, *input_ids.shape)
        if input_ids.dim() != 3 or input_ids.shape[0] != self.n_models:
            raise ValueError(
                f"input_ids must be [S={self.n_models}, B, T] or [B, T], "
                f"got {list(input_ids.shape)}"
            )
        check_token_ids(input_ids, self.config.vocab_size, "input_ids")
        positions = self.template.positions
        if rope is not None and not isinstance(positions, RotaryPositions):
            raise ValueError(f"rope is only for RoPE schemes, not {self.scheme!r}")
        p = self.params
        n_models, batch, seq_len = input_ids.shape
        which = torch.arange(n_models)[:, None, None]  # [S, 1, 1]
        h = p["embed_tokens.weight"][which, input_ids]  # [S, B, T, D]
        if isinstance(positions, LearnedPositions):
            if seq_len > positions.max_len:
                raise ValueError(
                    f"seq_len {seq_len} is past the learned table (max_len={positions.max_len})"
                )
            h = h + p["positions.table.weight"][:, None, :seq_len]  # + [S, 1, T, D]
        else:
            h = positions.embed(h.flatten(0, 1)).view_as(h)  # sinusoidal adds [T, D]
        tables = self._rope_tables(seq_len, rope)
        bias: torch.Tensor | None
        if isinstance(positions, T5BiasPositions):
            weights = p["positions.table.relative_attention_bias.weight"]  # [S, buckets, H]
            bias = _causal(
                torch.stack(
                    [
                        t5_relative_bias(
                            w,
                            seq_len,
                            seq_len,
                            bidirectional=False,
                            max_distance=positions.max_distance,
                        )
                        for w in weights
                    ]
                )[:, None]
            )  # [S, 1, H, T, T]
        else:
            bias = positions.bias(seq_len, dtype=h.dtype)  # [H, T, T] or None
        if bias is None:
            future = torch.ones(seq_len, seq_len, dtype=torch.bool).triu(1)  # [T, T]
            bias = torch.zeros(seq_len, seq_len).masked_fill(future, float("-inf"))
        records: list[AttentionRecord] = []
        if keep_pairs is not None:
            shape = (self.config.n_layers, self.d_head // 2)
            if not isinstance(keep_pairs, torch.Tensor) or tuple(keep_pairs.shape) != shape:
                raise ValueError(f"keep_pairs must be a bool tensor of shape {list(shape)}")
        heads, d_head = self.n_heads, self.d_head
        for layer in range(self.config.n_layers):
            x = _layer_norm(h, p[f"norms.{layer}.weight"], p[f"norms.{layer}.bias"])
            w_qkv = torch.cat(
                [p[f"layers.{layer}.{n}_proj.weight"] for n in "qkv"], dim=1
            )  # [S, 3D, D]
            qkv = _linear(x, w_qkv).view(n_models, batch, seq_len, 3, heads, d_head)
            q, k, v = qkv.permute(3, 0, 1, 4, 2, 5)  # each [S, B, H, T, d_head]
            if tables is not None:
                cos, sin = tables
                q = apply_rope(q, cos, sin, pairing="half")
                k = apply_rope(k, cos, sin, pairing="half")
            if keep_pairs is not None:
                keep = keep_pairs[layer].to(q.dtype).repeat(2)  # [d_head], "half" layout
                q, k = q * keep, k * keep
            # in place: the same values as ``q @ kᵀ / √d + bias`` without two more [S, B, H, T, T]
            # temporaries (matmul's backward needs q and k, not its output)
            scores = (q @ k.transpose(-2, -1)).div_(math.sqrt(d_head)).add_(bias)
            weights = torch.softmax(scores, dim=-1)  # [S, B, H, T, T]
            del scores
            if return_attention:
                records.append(AttentionRecord(q.detach(), k.detach(), weights.detach()))
            out = weights @ v  # [S, B, H, T, d_head]
            out = out.transpose(2, 3).reshape(n_models, batch, seq_len, heads * d_head)
            h = h + _linear(out, p[f"layers.{layer}.o_proj.weight"])
        h = _layer_norm(h, p["norm.weight"], p["norm.bias"])
        logits = _linear(h, p["lm_head.weight"])  # [S, B, T, V]
        return (logits, records) if return_attention else logits

    __call__ = forward


@dataclass(frozen=True)
class AttentionRecord:
    """One layer's rotated queries and keys ``[S, B, H, T, d_head]`` and weights ``[S, B, H, T, T]``.

    Attributes:
        q: the layer's queries after the scheme's rotation, ``[S, B, H, T, d_head]``.
        k: the layer's keys after the rotation, ``[S, B, H, T, d_head]``.
        weights: the attention weights, ``[S, B, H, T, T]``.
    """

    q: torch.Tensor
    k: torch.Tensor
    weights: torch.Tensor


def _with_seed(config: LabConfig, seed: int) -> LabConfig:
    return LabConfig(**{**config.__dict__, "seed": seed})


@dataclass
class EnsembleTrainResult:
    """A trained :class:`DecoderEnsemble`, its loss per step and model ``[steps, S]``, seconds.

    Attributes:
        ensemble: the trained :class:`DecoderEnsemble`.
        losses: ``[steps, S]``, the training loss of each model at each step.
        seconds: wall time of the training.
    """

    ensemble: DecoderEnsemble
    losses: torch.Tensor
    seconds: float


def train_ensemble(
    ensemble: DecoderEnsemble,
    *,
    steps: int | None = None,
    seq_len: int | None = None,
    lr: float | None = None,
    batch_size: int | None = None,
    warmup_steps: int | None = None,
    data_seed: int = 10_000,
) -> EnsembleTrainResult:
    """Train every model of ``ensemble`` (in place) on the induction task; one batch per step.

    Model ``s`` sees its own batches, from a generator seeded ``data_seed + seeds[s]``, of
    ``batch_size`` sequences of length ``seq_len`` with the default period range
    ``ceil(T/4) .. floor(T/2)``. The loss is the sum over models of each model's mean
    cross-entropy, so each model gets exactly its own gradient; Adam (no weight decay) with
    ``warmup_steps`` of linear warm-up, then the constant ``lr``. Runs in :func:`single_thread`.
    Pass ``steps``/``seq_len``/``lr`` to fine-tune an already trained ensemble (e.g. position
    interpolation at ``2L``).

    Equation:
        loss = Σ_s mean_{scored (b, t)} CE(logits_s[b, t], targets_s[b, t])

    Args:
        ensemble: a :class:`DecoderEnsemble`, trained in place.
        steps: optimiser steps, an int >= 1 (default ``config.steps``).
        seq_len: training length, an int >= 4 (default ``config.train_len``).
        lr: Adam's learning rate, > 0 (default ``config.lr``).
        batch_size: sequences per model and step, an int >= 1 (default ``config.batch_size``).
        warmup_steps: steps of linear warm-up, an int >= 1 (default ``config.warmup_steps``).
        data_seed: base seed of the training data, an int >= 0.

    Returns:
        An :class:`EnsembleTrainResult`; ``losses`` is ``[steps, S]`` float32.

    Raises:
        TypeError: ``ensemble`` is not a :class:`DecoderEnsemble`.
        ValueError: ``steps < 1``, ``seq_len < 4``, ``lr <= 0`` or a negative ``data_seed``.

    Shapes:
        each step's input_ids, targets: [S, B, T]; losses: [steps, S]
    """
    if not isinstance(ensemble, DecoderEnsemble):
        raise TypeError(f"ensemble must be a DecoderEnsemble, got {type(ensemble).__name__}")
    config = ensemble.config
    steps = config.steps if steps is None else check_positive_int("steps", steps)
    seq_len = config.train_len if seq_len is None else check_int("seq_len", seq_len, minimum=4)
    lr = config.lr if lr is None else check_positive_float("lr", lr)
    batch_size = (
        config.batch_size if batch_size is None else check_positive_int("batch_size", batch_size)
    )
    warmup = (
        config.warmup_steps
        if warmup_steps is None
        else check_positive_int("warmup_steps", warmup_steps)
    )
    data_seed = check_int("data_seed", data_seed, minimum=0)
    generators = [torch.Generator().manual_seed(data_seed + s) for s in ensemble.seeds]
    params = ensemble.requires_grad_(True).parameters()
    optimiser = torch.optim.Adam(params, lr=lr)
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimiser, lambda step: min(1.0, (step + 1) / warmup)
    )
    losses = torch.empty(steps, ensemble.n_models)
    start = time.perf_counter()
    with single_thread():
        for step in range(steps):
            batches = [
                induction_batch(batch_size, seq_len, config.vocab_size, generator=g)
                for g in generators
            ]
            input_ids = torch.stack([b.input_ids for b in batches])  # [S, B, T]
            targets = torch.stack([b.targets for b in batches])  # [S, B, T]
            logits = ensemble(input_ids)  # [S, B, T, V]
            per_model = F.cross_entropy(
                logits.flatten(1, 2).transpose(1, 2),  # [S, V, B·T]
                targets.flatten(1),  # [S, B·T]
                ignore_index=IGNORE_INDEX,
                reduction="none",
            )  # [S, B·T]
            scored = (targets.flatten(1) != IGNORE_INDEX).sum(1).clamp(min=1)  # [S]
            loss_each = per_model.sum(1) / scored  # [S]
            optimiser.zero_grad(set_to_none=True)
            loss_each.sum().backward()
            optimiser.step()
            schedule.step()
            losses[step] = loss_each.detach()
    ensemble.requires_grad_(False)
    return EnsembleTrainResult(ensemble, losses, time.perf_counter() - start)


@dataclass(frozen=True)
class EnsembleEval:
    """Accuracy of each model of an ensemble at one length and condition.

    Attributes:
        seq_len: the evaluation length ``T``.
        condition: a key of :data:`CONDITIONS`.
        accuracy: ``[S]`` float64, over every scored position.
        key_below: ``[S]`` float64, over the positions whose earliest answer key
            (:func:`earliest_answer_key`) lies below the training length; NaN if none.
        key_above: ``[S]`` float64, the same for an earliest answer key at or past it.
        n_below: scored positions with the earliest answer key below the training length.
        n_above: scored positions with the earliest answer key at or past it.
        per_position: ``[S, T]`` float64, accuracy at each position (NaN where none scored).
    """

    seq_len: int
    condition: str
    accuracy: torch.Tensor
    key_below: torch.Tensor
    key_above: torch.Tensor
    n_below: int
    n_above: int
    per_position: torch.Tensor


@torch.no_grad()
def evaluate_ensemble(
    ensemble: DecoderEnsemble,
    seq_len: int,
    *,
    condition: str = "unseen",
    n_sequences: int = 128,
    seed: int = 2,
    rope: tuple[torch.Tensor, float] | None = None,
    keep_pairs: torch.Tensor | None = None,
    batch_size: int = 64,
    chunk_tokens: int = 1024,
) -> EnsembleEval:
    """Accuracy of every model on the same ``n_sequences`` induction sequences of length ``seq_len``.

    The period range is ``CONDITIONS[condition](seq_len, train_len)``; the data come from a
    generator seeded ``seed`` (the same sequences for every model and scheme), drawn
    ``batch_size`` at a time. Each drawn batch is run through the models in chunks of at most
    ``max(1, chunk_tokens // seq_len)`` sequences: the sequences are independent, so the
    chunking changes no prediction, only the peak memory (the scores ``[S, b, H, T, T]`` of one
    chunk). Runs under :func:`torch.inference_mode` and :func:`single_thread`.

    Args:
        ensemble: a :class:`DecoderEnsemble`.
        seq_len: ``T``, an int >= 4.
        condition: ``"seen"`` or ``"unseen"`` distances.
        n_sequences: sequences, an int >= 1.
        seed: data seed, an int >= 0.
        rope: ``(inv_freq, attention_factor)`` for a RoPE model (see
            :func:`scaled_rope_frequencies`), or ``None`` for the model's own.
        keep_pairs: an ablation mask (see :meth:`DecoderEnsemble.forward`), or ``None``.
        batch_size: sequences drawn from the data generator at a time (this fixes the data).
        chunk_tokens: tokens per forward pass (at least one sequence), an int >= 1.

    Returns:
        An :class:`EnsembleEval`.

    Raises:
        TypeError: ``ensemble`` is not a :class:`DecoderEnsemble`.
        ValueError: bad sizes, an unknown ``condition``, or the errors of
            :meth:`DecoderEnsemble.forward`.
    """
    if not isinstance(ensemble, DecoderEnsemble):
        raise TypeError(f"ensemble must be a DecoderEnsemble, got {type(ensemble).__name__}")
    seq_len = check_int("seq_len", seq_len, minimum=4)
    check_choice("condition", condition, tuple(CONDITIONS))
    n_sequences = check_positive_int("n_sequences", n_sequences)
    seed = check_int("seed", seed, minimum=0)
    batch_size = check_positive_int("batch_size", batch_size)
    chunk = max(1, check_positive_int("chunk_tokens", chunk_tokens) // seq_len)
    train_len = ensemble.config.train_len
    period_range = CONDITIONS[condition](seq_len, train_len)
    data = torch.Generator().manual_seed(seed)
    n = ensemble.n_models
    correct_at = torch.zeros(n, seq_len, dtype=torch.float64)  # [S, T]
    count_at = torch.zeros(seq_len, dtype=torch.float64)  # [T]
    below = torch.zeros(n, dtype=torch.float64)
    above = torch.zeros(n, dtype=torch.float64)
    n_below = n_above = 0
    with single_thread(), torch.inference_mode():
        done = 0
        while done < n_sequences:
            size = min(batch_size, n_sequences - done)
            batch = induction_batch(
                size,
                seq_len,
                ensemble.config.vocab_size,
                generator=data,
                period_range=period_range,
            )
            predicted = torch.cat(
                [
                    ensemble(ids, rope=rope, keep_pairs=keep_pairs).argmax(dim=-1)
                    for ids in batch.input_ids.split(chunk)
                ],
                dim=1,
            )  # [S, b, T]
            scored = batch.targets != IGNORE_INDEX  # [b, T]
            correct = (predicted == batch.targets) & scored  # [S, b, T]
            is_below = earliest_answer_key(batch.periods, seq_len) < train_len  # [b, T]
            correct_at += correct.sum(dim=1).double()
            count_at += scored.sum(dim=0).double()
            below += (correct & is_below).sum(dim=(1, 2)).double()
            above += (correct & ~is_below).sum(dim=(1, 2)).double()
            n_below += int((scored & is_below).sum())
            n_above += int((scored & ~is_below).sum())
            done += size
    per_position = torch.where(count_at > 0, correct_at / count_at.clamp(min=1), math.nan)
    return EnsembleEval(
        seq_len=seq_len,
        condition=condition,
        accuracy=correct_at.sum(1) / count_at.sum(),
        key_below=below / n_below if n_below else torch.full((n,), math.nan),
        key_above=above / n_above if n_above else torch.full((n,), math.nan),
        n_below=n_below,
        n_above=n_above,
        per_position=per_position,
    )


# --------------------------------------------------------------------------------------------
# What a trained RoPE model uses its frequency pairs for
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class HeadScores:
    """How much each head of each model attends like a previous-token or an induction head.

    Attributes:
        previous_token: ``[S, n_layers, H]``, mean attention weight of a query on the key just
            before it.
        induction: ``[S, n_layers, H]``, mean total weight of a scored query on its answer keys
            (keys ``j <= t`` with ``j ≡ t + 1 (mod n)``, the keys that follow an earlier copy of
            the current token).
    """

    previous_token: torch.Tensor
    induction: torch.Tensor


@torch.no_grad()
def head_scores(
    ensemble: DecoderEnsemble, *, n_sequences: int = 32, seed: int = 3
) -> tuple[HeadScores, list[AttentionRecord]]:
    """Previous-token and induction scores of every head, on sequences at the training length.

    The two roles of an induction circuit (Elhage et al. 2021; Olsson et al. 2022): a
    previous-token head puts its weight on key ``t − 1``; an induction head puts it on the keys
    right after earlier occurrences of the current token.

    Args:
        ensemble: a :class:`DecoderEnsemble`.
        n_sequences: induction sequences at ``config.train_len``, an int >= 1.
        seed: seed of their generator, an int >= 0.

    Returns:
        ``(scores, records)``: the :class:`HeadScores` and the per-layer
        :class:`AttentionRecord` they were computed from.

    Raises:
        TypeError: ``ensemble`` is not a :class:`DecoderEnsemble`.
        ValueError: ``n_sequences < 1`` or ``seed < 0``.

    Shapes:
        scores.previous_token, scores.induction: [S, n_layers, H]

    References:
        Olsson et al., In-context Learning and Induction Heads, arXiv:2209.11895.
    """
    if not isinstance(ensemble, DecoderEnsemble):
        raise TypeError(f"ensemble must be a DecoderEnsemble, got {type(ensemble).__name__}")
    n_sequences = check_positive_int("n_sequences", n_sequences)
    seed = check_int("seed", seed, minimum=0)
    config = ensemble.config
    seq_len = config.train_len
    batch = induction_batch(
        n_sequences, seq_len, config.vocab_size, generator=torch.Generator().manual_seed(seed)
    )
    with single_thread():
        _, records = ensemble(batch.input_ids, return_attention=True)
    t = torch.arange(seq_len)
    previous = (t[None, :] == t[:, None] - 1).float()  # [T, T], key t-1 of query t
    j, q_pos = t[None, None, :], t[None, :, None]  # [1, 1, T], [1, T, 1]
    n = batch.periods[:, None, None]  # [B, 1, 1]
    answer = ((j - q_pos - 1) % n == 0) & (j <= q_pos) & (j >= 1)  # [B, T, T]
    scored = (batch.targets != IGNORE_INDEX).float()  # [B, T]
    prev_scores, ind_scores = [], []
    for record in records:
        w = record.weights  # [S, B, H, T, T]
        prev = (w * previous).sum(-1)[..., 1:].mean(dim=(1, 3))  # [S, H]
        on_answer = (w * answer[None, :, None].float()).sum(-1)  # [S, B, H, T]
        weight = scored[None, :, None, :]  # [1, B, 1, T]
        ind = (on_answer * weight).sum(dim=(1, 3)) / weight.sum(dim=(1, 3))  # [S, H]
        prev_scores.append(prev)
        ind_scores.append(ind)
    scores = HeadScores(torch.stack(prev_scores, 1), torch.stack(ind_scores, 1))
    return scores, records


def pair_norm_share(q: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
    """Share of each rotary pair in a head's q·k magnitude.

    ``‖q_i‖`` is the mean over tokens of the norm of pair ``i`` (dimensions ``i`` and
    ``i + d/2``, the "half" layout) of the query, likewise for keys; rotation does not change
    these norms, so rotated or unrotated ``q``/``k`` give the same answer. A pair whose norms are
    near zero cannot move the scores, whatever its angle. In the spirit of Barbero et al. 2024,
    who study which RoPE frequencies Gemma 7B's queries and keys use.

    Equation:
        share_i = ‖q_i‖ ‖k_i‖ / Σ_j ‖q_j‖ ‖k_j‖

    Args:
        q: queries, a floating tensor.
        k: keys, the same shape as ``q``.

    Returns:
        The share of each pair, summing to 1 over the last dimension.

    Raises:
        TypeError: ``q`` or ``k`` not a floating tensor.
        ValueError: shapes differ, fewer than 2 dims, or ``d`` odd.

    Shapes:
        q, k: [..., T, d] (d even) -> [..., d/2]

    References:
        Barbero et al., Round and Round We Go! What Makes Rotary Positional Encodings Useful?,
        arXiv:2410.06205.
    """
    for name, t in (("q", q), ("k", k)):
        if not isinstance(t, torch.Tensor) or not t.is_floating_point():
            raise TypeError(f"{name} must be a floating tensor [..., T, d]")
    if q.shape != k.shape or q.dim() < 2 or q.shape[-1] % 2:
        raise ValueError(
            f"q and k must share a shape [..., T, d] with d even, got {list(q.shape)} and "
            f"{list(k.shape)}"
        )
    half = q.shape[-1] // 2

    def pair_norms(x: torch.Tensor) -> torch.Tensor:
        return torch.sqrt(x[..., :half] ** 2 + x[..., half:] ** 2).mean(dim=-2)  # [..., d/2]

    energy = pair_norms(q) * pair_norms(k)
    return energy / energy.sum(dim=-1, keepdim=True).clamp(min=torch.finfo(q.dtype).tiny)


# --------------------------------------------------------------------------------------------
# The whole experiment
# --------------------------------------------------------------------------------------------

#: The trained RoPE model under each zero-shot scaling method: variant name → method.
SCALED_VARIANTS: dict[str, str] = {
    f"rope+{m if m != 'linear' else 'pi'}": m for m in ZERO_SHOT_SCALING
}

#: The two fine-tuned variants: PI with a fixed factor 2 fine-tuned at 2L (Chen et al. 2023), and
#: the control, plain RoPE fine-tuned on the same data.
FINE_TUNED_VARIANTS: tuple[str, ...] = ("rope+pi+ft", "rope+ft")


class SeedSpread(NamedTuple):
    """Summary over seeds of a measurement (see :func:`seed_spread`)."""

    #: The median over seeds (for an even count, the lower of the middle two), float64.
    median: torch.Tensor
    #: The worst (smallest) seed, float64.
    low: torch.Tensor
    #: The best (largest) seed, float64.
    high: torch.Tensor


def seed_spread(values: object) -> SeedSpread:
    """Median, minimum and maximum over the seeds (the first axis) of a measurement.

    The lab reports every measurement as its median over seeds with the range from the worst to
    the best seed. For an even count the median is the lower of the middle two values
    (``torch.median``'s rule, not the mean of the two), so it is always one seed's value; for an
    odd count it is the middle seed.

    Equation:
        with v_(1) ≤ … ≤ v_(S) the sorted values: median = v_(⌈S/2⌉), low = v_(1), high = v_(S)

    Args:
        values: ``[S, ...]`` finite real numbers, a tensor, numpy array or (nested) sequence, with
            S >= 1 seeds.

    Returns:
        A :class:`SeedSpread` (median, low, high), each of the shape ``values`` has without its
        first axis.

    Raises:
        TypeError: ``values`` is not real numbers.
        ValueError: a value is NaN or ±inf, ``values`` is 0-D, or there is no seed.

    Shapes:
        values: [S, ...]
        returns: each [...]
    """
    array = torch.from_numpy(check_real_array("values", values, sequences=True))
    if array.dim() == 0 or array.shape[0] == 0:
        raise ValueError(
            f"values must be [S >= 1, ...] (one row per seed), got {list(array.shape)}"
        )
    return SeedSpread(
        median=array.median(dim=0).values, low=array.min(dim=0).values, high=array.max(dim=0).values
    )


@dataclass
class ExtrapolationLab:
    """What :func:`run_extrapolation_lab` measured.

    Attributes:
        config: the :class:`LabConfig` (sizes, steps, lengths).
        seeds: the model seeds, one per ensemble member.
        ensembles: the trained :class:`DecoderEnsemble` per trained variant.
        losses: ``[steps, S]`` training loss per trained scheme.
        seconds: wall time per training (schemes and fine-tunes).
        results: ``results[variant][condition][T]`` is an :class:`EnsembleEval`; at ``T = L``
            both conditions hold the same evaluation.
    """

    config: LabConfig
    seeds: tuple[int, ...]
    ensembles: dict[str, DecoderEnsemble] = field(default_factory=dict)
    losses: dict[str, torch.Tensor] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)
    results: dict[str, dict[str, dict[int, EnsembleEval]]] = field(default_factory=dict)

    def accuracy(self, variant: str, condition: str, seq_len: int) -> torch.Tensor:
        """``[S]`` accuracies of ``variant`` (``KeyError`` if not run).

        Args:
            variant: a trained scheme or a RoPE variant that was evaluated.
            condition: a key of :data:`CONDITIONS`.
            seq_len: an evaluated length.

        Returns:
            One accuracy per seed, float64.

        Raises:
            KeyError: a variant, condition or length that was not run.

        Shapes:
            -> [S]
        """
        return self.results[variant][condition][seq_len].accuracy

    def median(self, variant: str, condition: str, seq_len: int) -> float:
        """Median accuracy over seeds (the middle seed for an odd count).

        Args:
            variant: a trained scheme or a RoPE variant that was evaluated.
            condition: a key of :data:`CONDITIONS`.
            seq_len: an evaluated length.

        Returns:
            The median of :meth:`accuracy` (:func:`seed_spread`: for an even count, the lower of
            the middle two).

        Raises:
            KeyError: a variant, condition or length that was not run.
        """
        return float(seed_spread(self.accuracy(variant, condition, seq_len)).median)


def _evaluate_all(
    lab: ExtrapolationLab,
    name: str,
    ensemble: DecoderEnsemble,
    tokens: int,
    rope_for: Callable[[int], tuple[torch.Tensor, float]] | None = None,
) -> None:
    config = lab.config
    out: dict[str, dict[int, EnsembleEval]] = {c: {} for c in CONDITIONS}
    for seq_len in config.eval_lens:
        rope = rope_for(seq_len) if rope_for is not None else None
        for condition in CONDITIONS:
            if seq_len == config.train_len and condition != "seen":
                out[condition][seq_len] = out["seen"][seq_len]
                continue
            out[condition][seq_len] = evaluate_ensemble(
                ensemble,
                seq_len,
                condition=condition,
                n_sequences=max(1, tokens // seq_len),
                rope=rope,
            )
    lab.results[name] = out


def run_extrapolation_lab(
    config: LabConfig = LabConfig(),
    seeds: tuple[int, ...] = (0, 1, 2, 3, 4),
    schemes: tuple[str, ...] = ("none", "sinusoidal", "learned", "rope", "alibi", "t5"),
    *,
    eval_tokens: int = 8192,
    fine_tune_steps: int = 60,
    fine_tune_lr: float = 3e-3,
) -> ExtrapolationLab:
    """Train each scheme as one ensemble of ``seeds`` and evaluate every variant.

    For each scheme, ``len(seeds)`` models (initialisation seed ``s``, their own data) are
    trained at ``L = config.train_len`` (:func:`train_ensemble`) and evaluated at each of
    ``config.eval_lens`` under both :data:`CONDITIONS` on the same ``eval_tokens // T``
    sequences. If ``"rope"`` is among the schemes, its trained models are also evaluated under
    every zero-shot method of :data:`SCALED_VARIANTS` (no retraining) and fine-tuned twice at
    ``2L`` for ``fine_tune_steps`` steps of 16 sequences (lr ``fine_tune_lr``, 10 warm-up
    steps): once with position interpolation of factor 2 fixed at every length (Chen et al.
    2023) and once without (the control).

    Args:
        config: a :class:`LabConfig`.
        seeds: the model seeds, one per ensemble member.
        schemes: names from :data:`POSITION_SCHEMES` that train (not ``"rope+pi"``), each once.
        eval_tokens: tokens per evaluation (``eval_tokens // T`` sequences), an int >= 1.
        fine_tune_steps: steps of each fine-tune at ``2L``, an int >= 1.
        fine_tune_lr: the fine-tunes' learning rate, > 0.

    Returns:
        An :class:`ExtrapolationLab`.

    Raises:
        TypeError: ``config`` not a :class:`LabConfig`, ``schemes``/``seeds`` not tuples.
        ValueError: an unknown or repeated scheme; ``"rope+pi"`` among the schemes (it is a
            variant here); bad sizes.

    References:
        Chen et al., Extending Context Window of Large Language Models via Positional Interpolation,
        arXiv:2306.15595.
    """
    if not isinstance(config, LabConfig):
        raise TypeError(f"config must be a LabConfig, got {type(config).__name__}")
    if not isinstance(schemes, tuple) or not schemes:
        raise TypeError(f"schemes must be a non-empty tuple of names, got {schemes!r}")
    trainable = tuple(
        n for n in POSITION_SCHEMES if POSITION_SCHEMES[n].shares_training_with is None
    )
    for name in schemes:
        check_choice("schemes entries", name, trainable)
    if len(set(schemes)) != len(schemes):
        raise ValueError(f"schemes must not repeat a name, got {schemes}")
    eval_tokens = check_positive_int("eval_tokens", eval_tokens)
    fine_tune_steps = check_positive_int("fine_tune_steps", fine_tune_steps)
    fine_tune_lr = check_positive_float("fine_tune_lr", fine_tune_lr)
    lab = ExtrapolationLab(config=config, seeds=seeds)
    for name in schemes:
        trained = train_ensemble(DecoderEnsemble(name, config, seeds))
        lab.ensembles[name], lab.losses[name] = trained.ensemble, trained.losses
        lab.seconds[name] = trained.seconds
        _evaluate_all(lab, name, trained.ensemble, eval_tokens)
    if "rope" not in schemes:
        return lab
    rope = lab.ensembles["rope"]
    d_head, base, train_len = rope.d_head, config.base, config.train_len
    for variant, method in SCALED_VARIANTS.items():

        def rope_for(seq_len: int, method: str = method) -> tuple[torch.Tensor, float]:
            return scaled_rope_frequencies(
                method, d_head, base, seq_len=seq_len, train_len=train_len
            )

        _evaluate_all(lab, variant, rope, eval_tokens, rope_for)
    for variant in FINE_TUNED_VARIANTS:
        tuned = rope.copy()
        if variant == "rope+pi+ft":
            tuned.fixed_rope = ROPE_SCALING["linear"](d_head, base, factor=2.0)
        result = train_ensemble(
            tuned,
            steps=fine_tune_steps,
            seq_len=2 * train_len,
            lr=fine_tune_lr,
            batch_size=16,
            warmup_steps=10,
            data_seed=20_000,
        )
        lab.ensembles[variant], lab.seconds[variant] = tuned, result.seconds
        _evaluate_all(lab, variant, tuned, eval_tokens)
    return lab
