"""A length-extrapolation lab: one tiny decoder, six ways to give it positions.

The experiment of the book's last chapter. A small decoder-only attention model is trained on a
synthetic *induction* task at one length ``L`` and evaluated at ``L``, ``2L`` and ``4L``; the only
thing that changes between runs is how it learns about positions, chosen by name from
:data:`POSITION_SCHEMES`:

- ``"none"``: no positional information (NoPE), only the causal mask (Kazemnejad et al. 2023,
  arXiv 2305.19466); acts on nothing.
- ``"sinusoidal"``: fixed sin/cos vectors added to the token embeddings (Vaswani et al. 2017,
  arXiv 1706.03762); acts on the input.
- ``"learned"``: a trained table of position vectors added to the input (GPT-2; Devlin et al.
  2019, arXiv 1810.04805); acts on the input.
- ``"rope"``: rotary embedding of q and k (Su et al. 2021, arXiv 2104.09864); acts on q and k.
- ``"rope+pi"``: the ``"rope"`` model evaluated with linear position interpolation (Chen et al.
  2023, arXiv 2306.15595); acts on q and k.
- ``"alibi"``: a linear distance penalty on the scores (Press et al. 2022, arXiv 2108.12409); acts
  on the scores.

The task (:func:`induction_batch`): each sequence repeats a random block of ``n`` distinct tokens
(``x_t = a_{t mod n}``), with ``n`` drawn per sequence from ``L/4 .. L/2``. After the first block
every next token is predictable by *induction*: find where the current token occurred ``n`` steps
earlier and copy the token that followed it. That rule does not depend on the length, so a model
that learned it could in principle run at any length; whether it does is what the lab measures.

Training and evaluation run single-threaded (:func:`single_thread`): with several threads the
matrix products add in an order that depends on the thread count, the last bits of every step
differ, and after hundreds of steps a notebook re-run on another machine would print other digits.
"""

from __future__ import annotations

import contextlib
import math
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F
from torch import nn

from lib._checks import check_choice, check_int, check_positive_float, check_positive_int
from lib.alibi import alibi_bias
from lib.attention import SelfAttention
from lib.learned import LearnedPositionalEmbedding
from lib.rope import apply_rope, rope_angles
from lib.rope_scaling import ROPE_SCALING
from lib.sinusoidal import sinusoidal_pe

__all__ = [
    "IGNORE_INDEX",
    "POSITION_SCHEMES",
    "ALiBiPositions",
    "EvalResult",
    "InductionBatch",
    "InterpolatedRotaryPositions",
    "LabConfig",
    "LabResult",
    "LearnedPositions",
    "NoPositions",
    "PositionScheme",
    "RotaryPositions",
    "SinusoidalPositions",
    "TinyDecoder",
    "TrainResult",
    "build_decoder",
    "evaluate_decoder",
    "induction_batch",
    "run_lab",
    "single_thread",
    "train_decoder",
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
    batch_size: int, seq_len: int, vocab_size: int, *, generator: torch.Generator
) -> InductionBatch:
    """Sequences that repeat a random block of distinct tokens: ``x_t = a_{t mod n}``.

    For each sequence, a period ``n`` is drawn uniformly from ``ceil(T/4) .. floor(T/2)`` and a block
    ``a_0 … a_{n−1}`` of distinct token ids from ``0 .. vocab_size−1``; the sequence repeats the
    block until it has ``T`` tokens (2 to 4 copies). The target at position ``t`` is
    ``x_{t+1}`` for ``n <= t < T−1`` (predictable by induction: the token after the previous
    occurrence of ``x_t``, which is at ``t − n``) and :data:`IGNORE_INDEX` for the first block, whose
    next tokens are random. This is the "repeated random tokens" probe of induction heads (Olsson
    et al. 2022, arXiv 2209.11895) with a random period, so that no fixed offset solves it.

    Args:
        batch_size: ``B``, an int >= 1.
        seq_len: ``T``, an int >= 4 (so that a period ``n >= 1`` with ``2n <= T`` exists).
        vocab_size: number of token ids, an int >= ``T // 2`` (a block needs ``n`` distinct ids).
        generator: the ``torch.Generator`` every random draw uses (seed it for reproducibility).

    Returns:
        An :class:`InductionBatch` with ``input_ids``/``targets`` ``[B, T]`` and ``periods`` ``[B]``.

    Raises:
        TypeError: an argument has the wrong type (e.g. ``generator`` is not a torch.Generator).
        ValueError: ``batch_size < 1``, ``seq_len < 4`` or ``vocab_size < seq_len // 2``.
    """
    batch_size = check_positive_int("batch_size", batch_size)
    seq_len = check_int("seq_len", seq_len, minimum=4)
    vocab_size = check_positive_int("vocab_size", vocab_size)
    if vocab_size < seq_len // 2:
        raise ValueError(
            f"vocab_size must be >= seq_len // 2 = {seq_len // 2} (a block holds up to that many "
            f"distinct tokens), got {vocab_size}"
        )
    if not isinstance(generator, torch.Generator):
        raise TypeError(f"generator must be a torch.Generator, got {type(generator).__name__}")
    low, high = -(-seq_len // 4), seq_len // 2  # ceil(T/4), floor(T/2)
    periods = torch.randint(low, high + 1, (batch_size,), generator=generator)  # [B]
    # A random permutation of the vocabulary per row; its first n entries are the block.
    blocks = torch.rand(batch_size, vocab_size, generator=generator).argsort(dim=-1)  # [B, V]
    t = torch.arange(seq_len)  # [T]
    input_ids = blocks.gather(1, t[None, :] % periods[:, None])  # [B, T]
    next_ids = torch.roll(input_ids, shifts=-1, dims=1)  # [B, T], next_ids[:, t] = x_{t+1}
    predictable = (t[None, :] >= periods[:, None]) & (t[None, :] < seq_len - 1)  # [B, T]
    targets = torch.where(predictable, next_ids, torch.full_like(next_ids, IGNORE_INDEX))
    return InductionBatch(input_ids=input_ids, targets=targets, periods=periods)


# --------------------------------------------------------------------------------------------
# Position schemes (one registry, one constructor signature)
# --------------------------------------------------------------------------------------------


class PositionScheme(nn.Module):
    """Base class: how a :class:`TinyDecoder` learns about positions (default: not at all).

    Every scheme is built as ``Scheme(d_model, n_heads, *, max_len, train_len, base)`` and
    offers three hooks, each a no-op here:

    - :meth:`embed` adds absolute position vectors to the token embeddings ``[B, T, D]``;
    - :meth:`rotary` returns the callable that :class:`lib.attention.SelfAttention` applies to
      ``q`` and ``k`` (``[B, H, T, d_head]``), or ``None``;
    - :meth:`bias` returns an additive score bias ``[H, T, T]`` (with the causal ``−inf``), or
      ``None`` (the decoder then asks attention for its causal mask).

    Attributes:
        acts_on: where the scheme enters the model: ``"nothing"``, ``"input"``, ``"q/k"`` or
            ``"scores"``.
        shares_training_with: the name of a scheme whose trained weights this one reuses (it
            differs only at evaluation), or ``None``.
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
        if self.d_model % self.n_heads:
            raise ValueError(
                f"d_model must be divisible by n_heads, got d_model={d_model}, n_heads={n_heads}"
            )
        if self.train_len > self.max_len:
            raise ValueError(f"train_len must be <= max_len={max_len}, got {train_len}")
        self.d_head = self.d_model // self.n_heads

    def embed(self, x: torch.Tensor) -> torch.Tensor:
        """Return the token embeddings ``x: [B, T, D]`` with positions added (here: unchanged)."""
        return x

    def rotary(self, seq_len: int) -> Callable[[torch.Tensor], torch.Tensor] | None:
        """The rotation for ``q``/``k`` ``[B, H, T, d_head]`` at length ``seq_len`` (here: none)."""
        return None

    def bias(self, seq_len: int, *, dtype: torch.dtype) -> torch.Tensor | None:
        """The additive score bias ``[H, T, T]`` at length ``seq_len`` (here: none)."""
        return None

    def extra_repr(self) -> str:
        return f"acts_on={self.acts_on!r}, train_len={self.train_len}, max_len={self.max_len}"


class NoPositions(PositionScheme):
    """NoPE: no position signal at all; only the causal mask breaks the symmetry.

    A causal decoder without positional encoding is not permutation-equivariant (each token sees a
    different prefix), and Kazemnejad et al. 2023 (arXiv 2305.19466) show it can represent both
    absolute and relative positions. Shapes: :meth:`embed` is the identity on ``[B, T, D]``.
    """


class SinusoidalPositions(PositionScheme):
    """Fixed sinusoidal vectors added to the input: ``h_t = E[x_t] + PE[t]``.

    ``PE[t, 2i] = sin(t / base^(2i/D))``, ``PE[t, 2i+1] = cos(t / base^(2i/D))`` from
    :func:`lib.sinusoidal.sinusoidal_pe` (Vaswani et al. 2017, arXiv 1706.03762, section 3.5).
    Defined for every position, so any length runs; positions past ``train_len`` were never seen.
    Shapes: ``x: [B, T, D] → [B, T, D]``.
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
    """A learned table of ``max_len`` position vectors added to the input: ``h_t = E[x_t] + P[t]``.

    :class:`lib.learned.LearnedPositionalEmbedding` (GPT-2 style, rows start as N(0, 0.02²);
    Devlin et al. 2019, arXiv 1810.04805). Rows ``train_len .. max_len−1`` exist but never get a
    gradient while training at ``train_len``: with Adam and no weight decay they keep their
    random initial values, so evaluating past ``train_len`` uses untrained vectors. Past
    ``max_len`` the table raises ``ValueError``. Shapes: ``x: [B, T, D] → [B, T, D]``.
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

    ``θ_i = base^(−2i/d_head)``; angles from :func:`lib.rope.rope_angles` (float32), rotation by
    :func:`lib.rope.apply_rope` with ``pairing="half"`` (Su et al. 2021, arXiv 2104.09864; the
    GPT-NeoX / Hugging Face LLaMA layout). The score of query ``m`` and key ``n`` then depends on
    ``m − n`` only. Shapes: the callable maps ``[B, H, T, d_head] → [B, H, T, d_head]``.
    """

    acts_on = "q/k"

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        if self.d_head % 2:
            raise ValueError(f"d_head = d_model / n_heads must be even for RoPE, got {self.d_head}")

    def scaling(self, seq_len: int) -> tuple[torch.Tensor, float]:
        """``(inv_freq [d_head/2], attention_factor)`` used at ``seq_len`` (here: the default)."""
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

    At length ``T > train_len`` the positions are squeezed by ``factor = T / train_len``:
    ``θ_i → θ_i / factor`` (``ROPE_SCALING["linear"]``, Chen et al. 2023, arXiv 2306.15595), so
    every angle stays inside the range seen in training; at ``T <= train_len`` it is plain RoPE.
    Chen et al. fine-tune briefly after interpolating; this scheme does not, it reuses the
    ``"rope"`` weights as they are (``shares_training_with = "rope"``). Shapes: as
    :class:`RotaryPositions`.
    """

    shares_training_with = "rope"

    def scaling(self, seq_len: int) -> tuple[torch.Tensor, float]:
        if seq_len <= self.train_len:
            return ROPE_SCALING["default"](self.d_head, self.base)
        return ROPE_SCALING["linear"](self.d_head, self.base, factor=seq_len / self.train_len)


class ALiBiPositions(PositionScheme):
    """ALiBi: add ``−m_h · (i − j)`` to the score of query ``i`` and key ``j`` in head ``h``.

    The bias (with ``−inf`` for ``j > i``) is :func:`lib.alibi.alibi_bias`; the slopes ``m_h``
    are fixed (Press et al. 2022, arXiv 2108.12409). No parameters, no position vectors.
    Shapes: :meth:`bias` returns ``[H, T, T]``.
    """

    acts_on = "scores"

    def bias(self, seq_len: int, *, dtype: torch.dtype) -> torch.Tensor:
        return alibi_bias(self.n_heads, seq_len, causal=True).to(dtype)  # [H, T, T]


#: Position schemes by name; each is ``Scheme(d_model, n_heads, *, max_len, train_len, base)``.
POSITION_SCHEMES: dict[str, type[PositionScheme]] = {
    "none": NoPositions,
    "sinusoidal": SinusoidalPositions,
    "learned": LearnedPositions,
    "rope": RotaryPositions,
    "rope+pi": InterpolatedRotaryPositions,
    "alibi": ALiBiPositions,
}


# --------------------------------------------------------------------------------------------
# The model
# --------------------------------------------------------------------------------------------


class TinyDecoder(nn.Module):
    """A tiny decoder-only, attention-only transformer with a pluggable position scheme.

    ``h⁰ = scheme.embed(E[x])``; for each layer ``hˡ = hˡ⁻¹ + Attn(LN(hˡ⁻¹))`` (pre-LN, causal,
    :class:`lib.attention.SelfAttention`, Vaswani et al. 2017, arXiv 1706.03762); logits
    ``= W_out · LN(h)``. No MLP blocks: two attention layers are enough for an induction head
    (Olsson et al. 2022, arXiv 2209.11895). Token embeddings start as N(0, 1) (PyTorch's
    default), the same scale as the sinusoidal vectors. Parameters other than the scheme's are
    created first, so with the same seed every scheme starts from the same weights.

    Args:
        vocab_size: number of token ids, an int >= 1.
        d_model: width ``D``, an int >= 1, divisible by ``n_heads``.
        n_heads: heads per layer, an int >= 1.
        n_layers: attention layers, an int >= 1.
        scheme: a key of :data:`POSITION_SCHEMES`.
        max_len: longest input (rows of a learned table), an int >= ``train_len``.
        train_len: the training length (used by ``"rope+pi"``), an int >= 1.
        base: frequency base of sinusoidal and rotary schemes, a real number > 0.

    Shapes:
        ``input_ids: [B, T]`` integer  →  logits ``[B, T, vocab_size]``.

    Raises:
        TypeError: an argument has the wrong type; ``input_ids`` is not an integer tensor.
        ValueError: ``scheme`` unknown, a size < 1, ``d_model`` not divisible by ``n_heads``;
            (forward) ``input_ids`` not 2-D, a token id out of range, or (learned) ``T > max_len``.
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
        """``input_ids: [B, T]`` → next-token logits ``[B, T, vocab_size]``."""
        if not isinstance(input_ids, torch.Tensor) or input_ids.is_floating_point():
            got = input_ids.dtype if isinstance(input_ids, torch.Tensor) else type(input_ids)
            raise TypeError(f"input_ids must be an integer tensor [B, T], got {got}")
        if input_ids.dim() != 2:
            raise ValueError(f"input_ids must be [B, T], got shape {list(input_ids.shape)}")
        if input_ids.numel() and (input_ids.min() < 0 or input_ids.max() >= self.vocab_size):
            raise ValueError(
                f"input_ids must hold token ids in 0..{self.vocab_size - 1} "
                f"(vocab_size={self.vocab_size})"
            )
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
        if self.d_model % self.n_heads:
            raise ValueError(
                f"d_model must be divisible by n_heads, got {self.d_model} and {self.n_heads}"
            )
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
    """A trained model, its per-step training loss and the wall time the training took."""

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

        NaN if no position in that range was scored. Raises ``KeyError`` for a scheme or length
        that was not run.
        """
        result = self.results[scheme][seq_len]
        counts = result.per_position_count[start:stop].double()  # [stop - start]
        if counts.sum() == 0:
            return math.nan
        correct = result.per_position[start:stop].nan_to_num(0.0) * counts
        return float(correct.sum() / counts.sum())

    def accuracy_table(self, digits: int = 2) -> dict[str, dict[int, float]]:
        """``{scheme: {seq_len: accuracy rounded to digits}}``, ready to print."""
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
