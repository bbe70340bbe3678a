"""The position schemes the lab compares: one registry, one constructor, three hooks."""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import nn

from lib._checks import (
    check_positive_float,
    check_positive_int,
)
from lib.alibi import alibi_bias
from lib.learned import LearnedPositionalEmbedding
from lib.relative import T5RelativeBias
from lib.rope import apply_rope, rope_angles
from lib.rope_scaling import ROPE_SCALING
from lib.sinusoidal import sinusoidal_pe


def check_heads(d_model: int, n_heads: int) -> None:
    """Refuse a width that does not split into ``n_heads`` heads of equal width.

    Args:
        d_model: the model width ``D``.
        n_heads: the number of heads.

    Raises:
        ValueError: ``d_model`` is not divisible by ``n_heads``.
    """
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
        check_heads(self.d_model, self.n_heads)
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
        return causal_bias(self.table(seq_len, seq_len)).to(dtype)  # [H, T, T]


def causal_bias(bias: torch.Tensor) -> torch.Tensor:
    """``bias`` with ``−inf`` for every key after its query (the causal mask as a bias).

    Args:
        bias: an additive score bias whose last two axes are (query, key), square.

    Returns:
        ``bias`` with every entry above the diagonal set to ``−inf``.

    Shapes:
        bias: [..., T, T] -> [..., T, T]
    """
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
