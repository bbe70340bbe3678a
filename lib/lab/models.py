"""The lab's model: :class:`TinyDecoder`, and :class:`DecoderEnsemble` (S seeds run as one)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from lib._checks import (
    check_choice,
    check_int,
    check_integer_tensor,
    check_positive_int,
    check_token_ids,
)
from lib.attention import SelfAttention
from lib.lab.config import LabConfig
from lib.lab.schemes import (
    POSITION_SCHEMES,
    LearnedPositions,
    RotaryPositions,
    SinusoidalPositions,
    T5BiasPositions,
    causal_bias,
)
from lib.relative import t5_relative_bias
from lib.rope import apply_rope, rope_angles
from lib.sinusoidal import sinusoidal_pe


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
        self, seq_len: int, rope: tuple[torch.Tensor, float] | None, offset: int = 0
    ) -> tuple[torch.Tensor, torch.Tensor] | None:
        positions = self.template.positions
        if not isinstance(positions, RotaryPositions):
            return None
        if rope is None:
            rope = self.fixed_rope or positions.scaling(seq_len)
        inv_freq, attention_factor = rope
        angles = rope_angles(torch.arange(offset, offset + seq_len), inv_freq)  # [T, d_head/2]
        return angles.cos() * attention_factor, angles.sin() * attention_factor

    def forward(
        self,
        input_ids: torch.Tensor,
        *,
        rope: tuple[torch.Tensor, float] | None = None,
        keep_pairs: torch.Tensor | None = None,
        position_offset: int = 0,
        window: int | None = None,
        records: list[AttentionRecord] | None = None,
    ) -> torch.Tensor:
        """Logits of every model: ``input_ids [S, B, T]`` (or ``[B, T]``) → ``[S, B, T, V]``.

        Args:
            input_ids: token ids, integer, in ``0 .. vocab_size − 1``.
            rope: ``(inv_freq [d_head/2], attention_factor)`` to use instead of the scheme's
                own (RoPE schemes only; how the zero-shot scaling methods are applied).
            keep_pairs: ``[n_layers, d_head/2]`` bool; pair ``i`` (dimensions ``i`` and
                ``i + d_head/2``) of every head's ``q`` and ``k`` in layer ``l`` is zeroed where
                ``keep_pairs[l, i]`` is False (an ablation: that frequency no longer adds to the
                scores). ``None`` keeps everything.
            position_offset: the position id of the first token, an int >= 0: token ``t`` sits at
                position ``position_offset + t`` for the absolute schemes (rows of the learned
                table, sinusoidal vectors) and for RoPE's angles. Content and distances stay
                those of the input; only the absolute positions move (the lab's
                "positions only" condition). The relative biases (ALiBi, T5) and NoPE see
                distances only and are unchanged by it.
            window: ``None`` (every earlier key), or an int >= 1: query ``i`` attends only to
                keys ``j`` with ``0 <= i − j < window`` in every layer (a sliding window, the
                lab's distractor-distance control: with ``window = L`` no query sees more keys,
                or a longer distance, than in training).
            records: ``None``, or a list to which one :class:`AttentionRecord` per layer is
                appended (the rotated queries and keys and the attention weights).

        Returns:
            The logits.

        Raises:
            TypeError: ``input_ids`` is not an integer tensor.
            ValueError: wrong shape, an id out of range, ``position_offset + T`` past a learned
                table, a negative ``position_offset``, a ``window`` < 1, or ``rope`` given for a
                scheme without RoPE.

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
        offset = check_int("position_offset", position_offset, minimum=0)
        p = self.params
        n_models, batch, seq_len = input_ids.shape
        which = torch.arange(n_models)[:, None, None]  # [S, 1, 1]
        h = p["embed_tokens.weight"][which, input_ids]  # [S, B, T, D]
        if isinstance(positions, LearnedPositions):
            if offset + seq_len > positions.max_len:
                raise ValueError(
                    f"position_offset + seq_len = {offset + seq_len} is past the learned table "
                    f"(max_len={positions.max_len})"
                )
            h = h + p["positions.table.weight"][:, None, offset : offset + seq_len]  # [S,1,T,D]
        elif isinstance(positions, SinusoidalPositions) and offset:
            table = sinusoidal_pe(offset + seq_len, self.config.d_model, positions.base)
            h = h + table[offset:].to(h.dtype)  # + [T, D], rows offset .. offset + T − 1
        else:
            h = positions.embed(h.flatten(0, 1)).view_as(h)  # sinusoidal adds [T, D]
        tables = self._rope_tables(seq_len, rope, offset)
        bias: torch.Tensor | None
        if isinstance(positions, T5BiasPositions):
            weights = p["positions.table.relative_attention_bias.weight"]  # [S, buckets, H]
            bias = causal_bias(
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
        if window is not None:
            window = check_int("window", window, minimum=1)
            distance = torch.arange(seq_len)[:, None] - torch.arange(seq_len)  # [T, T]: i − j
            bias = bias.masked_fill(distance >= window, float("-inf"))
        if records is not None and not isinstance(records, list):
            raise TypeError(f"records must be None or a list, got {type(records).__name__}")
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
            if records is not None:
                records.append(AttentionRecord(q.detach(), k.detach(), weights.detach()))
            out = weights @ v  # [S, B, H, T, d_head]
            out = out.transpose(2, 3).reshape(n_models, batch, seq_len, heads * d_head)
            h = h + _linear(out, p[f"layers.{layer}.o_proj.weight"])
        h = _layer_norm(h, p["norm.weight"], p["norm.bias"])
        logits = _linear(h, p["lm_head.weight"])  # [S, B, T, V]
        return logits

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
