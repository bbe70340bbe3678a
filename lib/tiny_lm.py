"""A tiny language model with optional weight tying (chapter 4).

Weight tying uses the input embedding ``E: [V, d]`` also as the output projection. One
``nn.Parameter`` then serves both uses: ``model.lm_head.weight is model.embed.weight`` (the names
follow Hugging Face models such as ``LlamaForCausalLM.lm_head``), it is stored once, and its
gradient is the sum of the gradient through the lookup and the gradient through the head.

:class:`TinyLM` is deliberately small: embedding -> ``n_layers`` residual MLP blocks -> LayerNorm ->
LM head. Its body sees one token at a time (no attention), so it is a learned *bigram* model,
p(next token | current token): enough to compare tied and untied heads in seconds on a CPU.
:data:`DECODER_CONFIGS` and :func:`decoder_parameters` count what tying saves in real decoders.

Equation:
    logits = h Eᵀ        (h: final hidden states)

Shapes:
    h: [..., T, d] -> logits: [..., T, V]

References:
    Press & Wolf, Using the Output Embedding to Improve Language Models, arXiv:1608.05859.
    Inan et al., Tying Word Vectors and Word Classifiers, arXiv:1611.01462.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TypedDict

import torch
import torch.nn.functional as F
from torch import nn

from lib._checks import (
    check_floating,
    check_int,
    check_integer_tensor,
    check_positive_float,
    check_positive_int,
    check_token_ids,
)
from lib.embeddings import REAL_EMBEDDING_CONFIGS, embedding_table_bytes
from lib.vocab import TrainingHistory, Vocab, build_vocab

__all__ = [
    "DECODER_CONFIGS",
    "EOS",
    "DecoderConfig",
    "MLPBlock",
    "TinyLM",
    "count_parameters",
    "decoder_parameters",
    "direct_path_ranks",
    "head_gradient",
    "lm_head_cost",
    "lm_head_parameters",
    "lm_loss",
    "params_saved_by_tying",
    "repeat_probability",
    "similarity_correlation",
    "tokens_from_sentences",
    "train_lm",
    "tying_table",
    "vocabulary_share_table",
]

#: The end-of-sentence token appended by :func:`tokens_from_sentences`.
EOS = "</s>"


class MLPBlock(nn.Module):
    """Pre-LayerNorm residual MLP block: the feed-forward sublayer of a transformer.

    GELU activation and pre-norm placement as in GPT-2.

    Equation:
        MLPBlock(x) = x + W2 · GELU(W1 · LN(x) + b1) + b2

    Args:
        d_model: width ``d`` of the input and output.
        d_hidden: width of the hidden layer.

    Shapes:
        x: [..., d] -> [..., d]

    References:
        Vaswani et al., Attention Is All You Need, arXiv:1706.03762 (eq. 2).
        Hendrycks & Gimpel, Gaussian Error Linear Units, arXiv:1606.08415.
    """

    def __init__(self, d_model: int, d_hidden: int):
        super().__init__()
        self.norm = nn.LayerNorm(d_model)
        self.fc_in = nn.Linear(d_model, d_hidden)
        self.fc_out = nn.Linear(d_hidden, d_model)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Apply the block: ``x + fc_out(GELU(fc_in(LN(x))))``, ``[..., d] -> [..., d]``.

        Equation:
            MLPBlock(x) = x + W2 · GELU(W1 · LN(x) + b1) + b2

        Args:
            x: the residual stream, a floating tensor whose last dimension is ``d_model``.

        Returns:
            ``x`` plus the block's update, same shape.

        Shapes:
            x: [..., d] -> [..., d]
        """
        return x + self.fc_out(F.gelu(self.fc_in(self.norm(x))))


class TinyLM(nn.Module):
    """Embedding -> ``n_layers`` MLP blocks -> LayerNorm -> LM head, with ``tie_weights`` on or off.

    With ``tie_weights`` the head's weight W *is* the embedding E (``lm_head.weight is
    embed.weight``: one Parameter, one storage). The head has no bias, as in GPT-2 and LLaMA.
    Weights are initialised from a ``torch.Generator`` seeded with ``seed``: embeddings and linear
    weights N(0, 0.02²) as in GPT-2, biases zero; the untied head gets its own N(0, 0.02²) draw.

    Equation:
        logits = LN(body(E[ids])) Wᵀ,   W = E when tied

    Args:
        vocab_size: number of token ids ``V``, an int >= 1.
        d_model: width ``d``, an int >= 1.
        tie_weights: share one Parameter between the embedding and the head.
        n_layers: MLP blocks, an int >= 0.
        d_hidden: hidden width of each block (default ``4 · d_model``).
        seed: seed of the initialisation, an int >= 0.

    Raises:
        TypeError: ``tie_weights`` is not a bool, or a size is not an int.
        ValueError: a size is out of range.

    Shapes:
        ids: [..., T] integer -> logits: [..., T, vocab_size]

    References:
        Press & Wolf, Using the Output Embedding to Improve Language Models, arXiv:1608.05859.
    """

    def __init__(
        self,
        vocab_size: int,
        d_model: int,
        *,
        tie_weights: bool,
        n_layers: int = 1,
        d_hidden: int | None = None,
        seed: int = 0,
    ):
        super().__init__()
        vocab_size = check_positive_int("vocab_size", vocab_size)
        d_model = check_positive_int("d_model", d_model)
        n_layers = check_int("n_layers", n_layers, minimum=0)
        d_hidden = 4 * d_model if d_hidden is None else check_positive_int("d_hidden", d_hidden)
        seed = check_int("seed", seed, minimum=0)
        if not isinstance(tie_weights, bool):
            raise TypeError(f"tie_weights must be a bool, got {type(tie_weights).__name__}")
        self.vocab_size, self.d_model, self.tie_weights = vocab_size, d_model, tie_weights
        self.embed = nn.Embedding(vocab_size, d_model)
        self.blocks = nn.ModuleList(MLPBlock(d_model, d_hidden) for _ in range(n_layers))
        self.norm = nn.LayerNorm(d_model)
        self.lm_head = nn.Linear(d_model, vocab_size, bias=False)
        generator = torch.Generator().manual_seed(seed)
        with torch.no_grad():
            for module in self.modules():
                if isinstance(module, (nn.Embedding, nn.Linear)):
                    module.weight.normal_(0.0, 0.02, generator=generator)
                if isinstance(module, nn.Linear) and module.bias is not None:
                    module.bias.zero_()
        if tie_weights:
            self.lm_head.weight = self.embed.weight  # the same Parameter: [V, d] used twice

    def hidden(self, ids: torch.Tensor) -> torch.Tensor:
        """Final hidden states h (after the last LayerNorm).

        Args:
            ids: token ids in ``[0, vocab_size)``, an integer tensor.

        Returns:
            The hidden states.

        Raises:
            TypeError: ``ids`` is not an integer tensor.
            ValueError: an id is outside ``[0, vocab_size)``.

        Shapes:
            ids: [..., T] -> [..., T, d_model]
        """
        ids = check_token_ids(ids, self.vocab_size)
        x = self.embed(ids)  # [..., T, d]
        for block in self.blocks:
            x = block(x)
        return self.norm(x)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        """Next-token logits ``h Wᵀ``; errors as :meth:`hidden`.

        Equation:
            logits = h Wᵀ,  h = hidden(ids),  W = E when tied

        Args:
            ids: token ids in ``[0, vocab_size)``, an integer tensor.

        Returns:
            The logits, one row of ``vocab_size`` scores per position.

        Raises:
            TypeError: ``ids`` is not an integer tensor.
            ValueError: an id is outside ``[0, vocab_size)``.

        Shapes:
            ids: [..., T] -> [..., T, vocab_size]
        """
        return self.lm_head(self.hidden(ids))  # [..., T, V] = h Wᵀ


def count_parameters(model: nn.Module, *, count_shared_once: bool = True) -> int:
    """Number of scalar parameters of ``model``; a Parameter used in two places counts once.

    With ``count_shared_once=False`` every use counts (the naive sum over module attributes), which
    for a tied model overstates the size by V·d. The default agrees with ``model.parameters()`` and
    with Hugging Face's ``PreTrainedModel.num_parameters()``.

    Args:
        model: any ``torch.nn.Module``.
        count_shared_once: count a shared Parameter once (True) or at every use (False).

    Returns:
        The number of scalar parameters.

    Raises:
        TypeError: ``model`` is not a ``torch.nn.Module``.
    """
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    seen: set[int] = set()
    total = 0
    for _, p in model.named_parameters(remove_duplicate=False):
        if count_shared_once and id(p) in seen:
            continue
        seen.add(id(p))
        total += p.numel()
    return total


def lm_head_parameters(vocab_size: int, d_model: int, *, bias: bool = False) -> int:
    """Parameters of an LM head ``nn.Linear(d_model, vocab_size)``.

    Equation:
        V · d  (+ V with a bias)

    Args:
        vocab_size: ``V``, an int >= 1.
        d_model: ``d``, an int >= 1.
        bias: the head has a bias vector.

    Returns:
        The parameter count.

    Raises:
        TypeError: a size is not an int.
        ValueError: a size is < 1.
    """
    vocab_size = check_positive_int("vocab_size", vocab_size)
    d_model = check_positive_int("d_model", d_model)
    return vocab_size * d_model + (vocab_size if bias else 0)


def _vocab_and_width(config: str | Mapping[str, object]) -> tuple[int, int]:
    """``(vocab_size, hidden_size)`` of a :data:`REAL_EMBEDDING_CONFIGS` name or a mapping."""
    if isinstance(config, str):
        if config not in REAL_EMBEDDING_CONFIGS:
            raise KeyError(
                f"config {config!r} is not in REAL_EMBEDDING_CONFIGS; known: "
                f"{sorted(REAL_EMBEDDING_CONFIGS)}"
            )
        config = REAL_EMBEDDING_CONFIGS[config]
    if not isinstance(config, Mapping):
        raise TypeError(f"config must be a name or a mapping, got {type(config).__name__}")
    for key in ("vocab_size", "hidden_size"):
        if key not in config:
            raise ValueError(f"config must have the key {key!r}, got keys {sorted(config)}")
    return (
        check_positive_int("config['vocab_size']", config["vocab_size"]),
        check_positive_int("config['hidden_size']", config["hidden_size"]),
    )


def params_saved_by_tying(config: str | Mapping[str, object]) -> int:
    """Parameters that tying saves (or would save) for a config: the bias-free head's V · d.

    Example: Llama 3 8B, 128,256 × 4,096 = 525,336,576.

    Equation:
        saved = vocab_size · hidden_size

    Args:
        config: a key of :data:`lib.embeddings.REAL_EMBEDDING_CONFIGS` or a mapping with
            ``vocab_size`` and ``hidden_size`` (Hugging Face config names).

    Returns:
        The number of parameters of an untied, bias-free LM head.

    Raises:
        KeyError: an unknown model name.
        TypeError: ``config`` is neither a name nor a mapping, or a size is not an int.
        ValueError: a key is missing or a size is < 1.

    References:
        Press & Wolf, Using the Output Embedding to Improve Language Models, arXiv:1608.05859.
    """
    return lm_head_parameters(*_vocab_and_width(config))


def tying_table(dtype: str = "bfloat16") -> list[dict[str, object]]:
    """One row per model of :data:`REAL_EMBEDDING_CONFIGS`: what its LM head costs, tied or not.

    A model published without an LM head (``tie_word_embeddings`` None) has ``saved_params`` 0.

    Args:
        dtype: the dtype ``head_bytes_if_untied`` is counted in (see
            :func:`lib.embeddings.embedding_table_bytes`).

    Returns:
        Rows with the keys ``model, vocab_size, hidden_size, tie_word_embeddings,
        embedding_params, head_params_if_untied`` (V·d), ``saved_params`` (V·d when the published
        model ties, else 0), ``head_bytes_if_untied`` (in ``dtype``) and ``source`` (the Hugging
        Face repo of its config.json).

    Raises:
        ValueError: an unknown ``dtype``.
    """
    rows: list[dict[str, object]] = []
    for name, config in REAL_EMBEDDING_CONFIGS.items():
        V, d = _vocab_and_width(config)
        head = lm_head_parameters(V, d)
        rows.append(
            {
                "model": name,
                "vocab_size": V,
                "hidden_size": d,
                "tie_word_embeddings": config["tie_word_embeddings"],
                "embedding_params": V * d,
                "head_params_if_untied": head,
                "saved_params": head if config["tie_word_embeddings"] else 0,
                "head_bytes_if_untied": embedding_table_bytes(V, d, dtype),
                "source": config["source"],
            }
        )
    return rows


class DecoderConfig(TypedDict):
    """The fields of a Llama-style decoder's ``config.json`` that :func:`decoder_parameters` reads."""

    vocab_size: int
    hidden_size: int
    intermediate_size: int
    num_hidden_layers: int
    num_attention_heads: int
    num_key_value_heads: int
    attention_bias: bool
    tie_word_embeddings: bool
    source: str


def _decoder(
    source: str,
    vocab_size: int,
    hidden_size: int,
    intermediate_size: int,
    num_hidden_layers: int,
    num_attention_heads: int,
    num_key_value_heads: int,
    *,
    attention_bias: bool,
    tie_word_embeddings: bool,
) -> DecoderConfig:
    """One :class:`DecoderConfig`, the sizes in the order of a ``config.json``'s fields."""
    return {
        "vocab_size": vocab_size,
        "hidden_size": hidden_size,
        "intermediate_size": intermediate_size,
        "num_hidden_layers": num_hidden_layers,
        "num_attention_heads": num_attention_heads,
        "num_key_value_heads": num_key_value_heads,
        "attention_bias": attention_bias,
        "tie_word_embeddings": tie_word_embeddings,
        "source": source,
    }


#: Decoder-only models of two families, from each model's ``config.json`` on the Hugging Face Hub
#: (``source``). Llama: no biases; Qwen2.5: biases on the q, k, v projections (``attention_bias``).
#: ``tie_word_embeddings``: what the published model does. :func:`decoder_parameters` counts them.
#: Columns: source, vocab_size, hidden_size, intermediate_size, num_hidden_layers,
#: num_attention_heads, num_key_value_heads.
DECODER_CONFIGS: dict[str, DecoderConfig] = {
    "Qwen2.5-0.5B": _decoder("Qwen/Qwen2.5-0.5B", 151936, 896, 4864, 24, 14, 2, attention_bias=True, tie_word_embeddings=True),
    "Llama-3.2-1B": _decoder("meta-llama/Llama-3.2-1B", 128256, 2048, 8192, 16, 32, 8, attention_bias=False, tie_word_embeddings=True),
    "Qwen2.5-1.5B": _decoder("Qwen/Qwen2.5-1.5B", 151936, 1536, 8960, 28, 12, 2, attention_bias=True, tie_word_embeddings=True),
    "Qwen2.5-3B": _decoder("Qwen/Qwen2.5-3B", 151936, 2048, 11008, 36, 16, 2, attention_bias=True, tie_word_embeddings=True),
    "Llama-3.2-3B": _decoder("meta-llama/Llama-3.2-3B", 128256, 3072, 8192, 28, 24, 8, attention_bias=False, tie_word_embeddings=True),
    "Qwen2.5-7B": _decoder("Qwen/Qwen2.5-7B", 152064, 3584, 18944, 28, 28, 4, attention_bias=True, tie_word_embeddings=False),
    "Llama-3-8B": _decoder("meta-llama/Meta-Llama-3-8B", 128256, 4096, 14336, 32, 32, 8, attention_bias=False, tie_word_embeddings=False),
    "Llama-3-70B": _decoder("meta-llama/Meta-Llama-3-70B", 128256, 8192, 28672, 80, 64, 8, attention_bias=False, tie_word_embeddings=False),
    "Qwen2.5-72B": _decoder("Qwen/Qwen2.5-72B", 152064, 8192, 29568, 80, 64, 8, attention_bias=True, tie_word_embeddings=False),
}  # fmt: skip


def decoder_parameters(
    config: str | Mapping[str, object], *, tied: bool | None = None
) -> dict[str, int]:
    """Parameter count of a Llama-style decoder from its config, split into body and vocabulary.

    Per layer: q and o projections ``d × n_h d_h`` each, k and v ``d × n_kv d_h`` each (grouped-query
    attention), biases on q, k, v if ``attention_bias``, a gated MLP of three ``d × d_ff`` matrices,
    two RMSNorm vectors of ``d``; then a final norm.

    Equation:
        d_h = d / n_h
        attention = 2 d n_h d_h + 2 d n_kv d_h  (+ n_h d_h + 2 n_kv d_h with biases)
        body = n_layers · (attention + 3 d d_ff + 2 d) + d
        vocab = V d (tied) or 2 V d (untied)

    Args:
        config: a key of :data:`DECODER_CONFIGS` or a mapping with the same keys.
        tied: count with a tied (True) or untied (False) head; None: as the model was published.

    Returns:
        ``{"body", "vocab", "total"}`` parameter counts.

    Raises:
        KeyError: an unknown model name, or a key missing from ``config``.
        TypeError: ``tied`` is not a bool or None; a size in ``config`` is not an int.
        ValueError: a size in ``config`` is < 1.

    References:
        Ainslie et al., GQA: Training Generalized Multi-Query Transformer Models, arXiv:2305.13245.
    """
    c: Mapping[str, object] = DECODER_CONFIGS[config] if isinstance(config, str) else config
    if tied is not None and not isinstance(tied, bool):
        raise TypeError(f"tied must be a bool or None, got {type(tied).__name__}")
    if tied is None:
        tied = bool(c["tie_word_embeddings"])

    def size(key: str) -> int:
        return check_positive_int(f"config[{key!r}]", c[key])

    d, n_h, n_kv = size("hidden_size"), size("num_attention_heads"), size("num_key_value_heads")
    d_h = d // n_h
    attention = 2 * d * n_h * d_h + 2 * d * n_kv * d_h
    if c.get("attention_bias"):
        attention += n_h * d_h + 2 * n_kv * d_h
    mlp = 3 * d * size("intermediate_size")
    body = size("num_hidden_layers") * (attention + mlp + 2 * d) + d
    vocab = size("vocab_size") * d * (1 if tied else 2)
    return {"body": body, "vocab": vocab, "total": body + vocab}


def vocabulary_share_table() -> list[dict[str, object]]:
    """One row per model of :data:`DECODER_CONFIGS`, smallest first: the vocabulary's share.

    Equation:
        share_tied = V·d / total_tied,   share_untied = 2·V·d / total_untied

    Returns:
        Rows with the keys ``model``, ``tie_word_embeddings`` (published), ``total_tied``,
        ``total_untied``, ``body``, ``vocab_params`` (``V·d``, one matrix), ``share_tied``,
        ``share_untied`` and ``source``, sorted by ``total_tied``.
    """
    counts = {
        name: (decoder_parameters(name, tied=True), decoder_parameters(name, tied=False))
        for name in DECODER_CONFIGS
    }
    rows: list[dict[str, object]] = []
    for name in sorted(counts, key=lambda n: counts[n][0]["total"]):
        tied, untied = counts[name]
        config = DECODER_CONFIGS[name]
        rows.append(
            {
                "model": name,
                "tie_word_embeddings": bool(config["tie_word_embeddings"]),
                "body": tied["body"],
                "vocab_params": tied["vocab"],
                "total_tied": tied["total"],
                "total_untied": untied["total"],
                "share_tied": tied["vocab"] / tied["total"],
                "share_untied": untied["vocab"] / untied["total"],
                "source": config["source"],
            }
        )
    return rows


def lm_head_cost(
    vocab_size: int, d_model: int, body_params: int, *, n_tokens: int = 1, dtype: str = "float32"
) -> dict[str, int]:
    """What the LM head costs per forward pass, next to the body's weight matrices.

    The head multiplies each token's hidden state by a ``[V, d]`` matrix, one multiply-add per
    entry, and writes ``V`` logits per token; the body's weight matrices cost one multiply-add
    per parameter and token (attention's scores are left out: they grow with the context).

    Equation:
        head_flops = 2 · V · d · n,   body_flops = 2 · body_params · n
        logits_bytes = n · V · bytes(dtype)

    Args:
        vocab_size: ``V``, an int >= 1.
        d_model: ``d``, an int >= 1.
        body_params: parameters of everything but the embedding and head, an int >= 0.
        n_tokens: tokens in the batch (``B · T``), an int >= 1.
        dtype: the logits' dtype (:data:`lib.embeddings.DTYPE_BYTES`).

    Returns:
        ``{"head_flops", "body_flops", "logits_bytes"}``.

    Raises:
        TypeError: a size is not an int.
        ValueError: a size out of range, or an unknown ``dtype``.

    References:
        Wijmans et al., Cut Your Losses in Large-Vocabulary Language Models, arXiv:2411.09009.
    """
    V = check_positive_int("vocab_size", vocab_size)
    d = check_positive_int("d_model", d_model)
    body = check_int("body_params", body_params, minimum=0)
    n = check_positive_int("n_tokens", n_tokens)
    return {
        "head_flops": 2 * V * d * n,
        "body_flops": 2 * body * n,
        "logits_bytes": embedding_table_bytes(n, V, dtype),
    }


def direct_path_ranks(
    E: torch.Tensor,
    ids: torch.Tensor,
    *,
    norm_weight: torch.Tensor | None = None,
    eps: float = 1e-5,
) -> torch.Tensor:
    """Where each token ranks among its own logits along the direct path of a tied model.

    The direct path skips every layer: the embedding goes straight through the final RMSNorm
    (weight ``g``) to the tied head. Its logits for input token v are ``RMSNorm(E[v]) Eᵀ``, the
    zero-layer part of the model's prediction (Elhage et al. 2021); the score of v itself is
    ``Σ g_j E[v, j]² / rms``, a weighted squared length. Rank 0 means the direct path predicts
    the input token again.

    Equation:
        z_v = (g ⊙ E[v] / sqrt(mean(E[v]²) + ε)) Eᵀ,   rank(v) = #{u : z_v[u] > z_v[v]}

    Args:
        E: the tied table, floating ``[V, d]``.
        ids: the input tokens to score, a 1-D integer tensor of ids in ``[0, V)``.
        norm_weight: the final norm's weight ``g``, floating ``[d]`` (None: plain RMSNorm, g = 1).
        eps: the norm's epsilon, a float > 0.

    Returns:
        The rank of each token among the logits of its own direct path, int64 ``[n]``.

    Raises:
        TypeError: a non-floating ``E`` or ``norm_weight``, or non-integer ``ids``.
        ValueError: ``E`` not 2-D, ``ids`` not 1-D or out of range, ``norm_weight`` not ``[d]``,
            or ``eps`` <= 0.

    Shapes:
        E: [V, d], ids: [n], norm_weight: [d] -> [n]

    References:
        Elhage et al., A Mathematical Framework for Transformer Circuits (2021),
        https://transformer-circuits.pub/2021/framework/index.html
        Press & Wolf, Using the Output Embedding to Improve Language Models, arXiv:1608.05859.
    """
    E = check_floating("E", E)
    if E.ndim != 2:
        raise ValueError(f"E must be a [V, d] matrix, got shape {tuple(E.shape)}")
    ids = check_token_ids(ids, E.shape[0])
    if ids.ndim != 1:
        raise ValueError(f"ids must be 1-D, got shape {tuple(ids.shape)}")
    eps = check_positive_float("eps", eps)
    g = torch.ones(E.shape[1], dtype=E.dtype, device=E.device)
    if norm_weight is not None:
        g = check_floating("norm_weight", norm_weight)
        if g.shape != (E.shape[1],):
            raise ValueError(f"norm_weight must have shape ({E.shape[1]},), got {tuple(g.shape)}")
    ranks = []
    for chunk in ids.split(64):  # 64 rows of logits at a time: [64, V], not [n, V]
        x = E[chunk]  # [c, d]
        h = g * x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps)  # RMSNorm, [c, d]
        logits = F.linear(h, E)  # h Eᵀ, [c, V] (no transposed copy of E)
        own = logits.gather(1, chunk[:, None])  # [c, 1]
        ranks.append((logits > own).sum(dim=1))
    return torch.cat(ranks) if ranks else torch.zeros(0, dtype=torch.long)


# --- data and training -------------------------------------------------------------------------


def tokens_from_sentences(
    sentences: Sequence[Sequence[str]], vocab: Vocab | None = None
) -> tuple[torch.Tensor, Vocab]:
    """One stream of token ids: every sentence followed by :data:`EOS`.

    Args:
        sentences: tokenised sentences.
        vocab: the vocabulary to use; None builds one (``build_vocab``) from the sentences plus EOS.

    Returns:
        ``(ids, vocab)``: the ids as a LongTensor and the vocabulary.

    Raises:
        KeyError: with a given ``vocab``, a word it does not know (the message names it).

    Shapes:
        ids: [N], N = number of words + number of sentences
    """
    with_eos = [[*sentence, EOS] for sentence in sentences]
    if vocab is None:
        vocab = build_vocab(with_eos)
    ids = [vocab.id(word) for sentence in with_eos for word in sentence]
    return torch.tensor(ids, dtype=torch.long), vocab


def _check_stream(token_ids: object, seq_len: int) -> torch.Tensor:
    """``token_ids`` as a 1-D integer stream of at least ``seq_len + 1`` tokens."""
    token_ids = check_integer_tensor("token_ids", token_ids)
    if token_ids.dim() != 1:
        raise ValueError(f"token_ids must be 1-D [N], got shape {tuple(token_ids.shape)}")
    if len(token_ids) < seq_len + 1:
        raise ValueError(
            f"token_ids must hold at least seq_len + 1 = {seq_len + 1} tokens, got {len(token_ids)}"
        )
    return token_ids


def lm_loss(model: TinyLM, token_ids: torch.Tensor) -> float:
    """Mean next-token cross-entropy (nats) of ``model`` over a token stream, without gradients.

    Equation:
        loss = −(1/(N−1)) Σ_t log p(x_{t+1} | x_≤t)

    Args:
        model: a :class:`TinyLM`.
        token_ids: the stream, at least 2 tokens in ``[0, vocab_size)``.

    Returns:
        The loss as a float.

    Raises:
        TypeError: ``model`` is not a :class:`TinyLM` or ``token_ids`` not an integer tensor.
        ValueError: ``token_ids`` is not 1-D, shorter than 2 or holds an id out of range.

    Shapes:
        token_ids: [N]
    """
    if not isinstance(model, TinyLM):
        raise TypeError(f"model must be a TinyLM, got {type(model).__name__}")
    token_ids = _check_stream(token_ids, 1)
    with torch.no_grad():
        logits = model(token_ids[:-1])  # [N-1, V]
        return float(F.cross_entropy(logits, token_ids[1:]))


def train_lm(
    model: TinyLM,
    token_ids: torch.Tensor,
    steps: int = 200,
    lr: float = 3e-3,
    seed: int = 0,
    *,
    batch_size: int = 16,
    seq_len: int = 32,
    on_step: Callable[[int], None] | None = None,
) -> TrainingHistory:
    """Train ``model`` in place on next-token prediction over a token stream; return its losses.

    Each step draws ``batch_size`` windows of ``seq_len + 1`` tokens at random offsets (a
    ``torch.Generator`` seeded with ``seed``), computes the mean cross-entropy of
    ``model(x[:, :-1])`` against ``x[:, 1:]`` and takes one Adam step.

    Args:
        model: a :class:`TinyLM`, trained in place (left in eval mode).
        token_ids: the stream, at least ``seq_len + 1`` tokens.
        steps: optimiser steps, an int >= 1.
        lr: Adam's learning rate, > 0.
        seed: seed of the window offsets, an int >= 0.
        batch_size: windows per step, an int >= 1.
        seq_len: inputs per window, an int >= 1.
        on_step: called as ``on_step(k)`` after the k-th optimiser step (k = 1 .. steps), with
            the model in train mode, to measure it mid-training; it must not change the model.
            None: no call.

    Returns:
        A ``TrainingHistory`` whose ``losses`` hold the loss of every step.

    Raises:
        TypeError: ``model`` is not a :class:`TinyLM`; an argument has the wrong type.
        ValueError: a size out of range, or ``token_ids`` not 1-D or too short.

    Shapes:
        token_ids: [N]; each batch: [batch_size, seq_len + 1]
    """
    if not isinstance(model, TinyLM):
        raise TypeError(f"model must be a TinyLM, got {type(model).__name__}")
    steps = check_positive_int("steps", steps)
    lr = check_positive_float("lr", lr)
    seed = check_int("seed", seed, minimum=0)
    batch_size = check_positive_int("batch_size", batch_size)
    seq_len = check_positive_int("seq_len", seq_len)
    token_ids = _check_stream(token_ids, seq_len)
    if on_step is not None and not callable(on_step):
        raise TypeError(f"on_step must be callable or None, got {type(on_step).__name__}")

    generator = torch.Generator().manual_seed(seed)
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)  # parameters(): the tied one once
    offsets = torch.arange(seq_len + 1)  # [L+1]
    history = TrainingHistory()
    model.train()
    for _ in range(steps):
        starts = torch.randint(0, len(token_ids) - seq_len, (batch_size,), generator=generator)
        windows = token_ids[starts[:, None] + offsets]  # [B, L+1]
        logits = model(windows[:, :-1])  # [B, L, V]
        loss = F.cross_entropy(logits.reshape(-1, model.vocab_size), windows[:, 1:].reshape(-1))
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        history.losses.append(loss.item())
        if on_step is not None:
            on_step(len(history.losses))  # the model after this many steps
    model.eval()
    return history


# --- what tying does to a trained model -------------------------------------------------------


def repeat_probability(model: TinyLM, token_ids: torch.Tensor) -> float:
    """Mean probability the model gives to the *current* token being the next one.

    The direct path of a tied model scores the input token with its own row (see
    :func:`direct_path_ranks`), which pulls towards repeating it; this measures that pull in a
    whole model, on real positions of a stream. Compare it with the data's own repeat rate
    (the share of positions with ``x_{t+1} = x_t``) and with ``1 / V`` for a uniform guess.
    The model is evaluated without gradients and its train/eval mode is left as it was.

    Equation:
        r = (1/(N−1)) Σ_{t<N} p(x_{t+1} = x_t | x_≤t)

    Args:
        model: a :class:`TinyLM`.
        token_ids: the stream, a 1-D integer tensor of at least 2 ids in ``[0, vocab_size)``.

    Returns:
        r, a float in [0, 1].

    Raises:
        TypeError: ``model`` is not a :class:`TinyLM` or ``token_ids`` not an integer tensor.
        ValueError: ``token_ids`` is not 1-D, shorter than 2 or holds an id out of range.

    Shapes:
        token_ids: [N]

    References:
        Elhage et al., A Mathematical Framework for Transformer Circuits (2021),
        https://transformer-circuits.pub/2021/framework/index.html
        Press & Wolf, Using the Output Embedding to Improve Language Models, arXiv:1608.05859.
    """
    if not isinstance(model, TinyLM):
        raise TypeError(f"model must be a TinyLM, got {type(model).__name__}")
    token_ids = _check_stream(token_ids, 1)
    check_token_ids(token_ids, model.vocab_size, "token_ids")
    current = token_ids[:-1]  # [N-1]
    with torch.no_grad():
        probs = model(current).softmax(-1)  # [N-1, V]
        return float(probs.gather(-1, current[:, None]).mean())


def head_gradient(
    hidden: torch.Tensor, logits: torch.Tensor, targets: torch.Tensor
) -> torch.Tensor:
    """Gradient of the mean cross-entropy with respect to the LM head's weight W (logits = h Wᵀ).

    Row v is a weighted sum of the hidden states, with weight ``p_tv`` where v was not the target
    and ``p_tv − 1`` where it was. A row that is never the target gets ``(1/N) Σ_t p_tv h_t``: all
    such rows are mixtures of the *same* hidden states, and they point one way exactly when their
    ``p_tv`` are proportional across positions (near-uniform softmax, e.g. at initialisation).
    In a tied model this is the head's part of the gradient of E (the other part comes through
    the lookup).

    Equation:
        ∂L/∂W = (1/N) (softmax(z) − Y)ᵀ H,   L = −(1/N) Σ_t log softmax(z_t)[y_t]

    Args:
        hidden: the final hidden states H, floating ``[N, d]``.
        logits: the logits z = H Wᵀ, floating ``[N, V]``.
        targets: the target ids y, integer ``[N]`` in ``[0, V)``.

    Returns:
        ∂L/∂W, ``[V, d]``, in the dtype of ``hidden``.

    Raises:
        TypeError: ``hidden`` or ``logits`` not floating, ``targets`` not integer.
        ValueError: shapes that disagree, or a target out of range.

    Shapes:
        hidden: [N, d], logits: [N, V], targets: [N] -> [V, d]

    References:
        Press & Wolf, Using the Output Embedding to Improve Language Models, arXiv:1608.05859.
        Land & Bartolo, Fishing for Magikarp: Automatically Detecting Under-trained Tokens in
        Large Language Models, arXiv:2405.05417.
    """
    hidden = check_floating("hidden", hidden)
    logits = check_floating("logits", logits)
    if hidden.ndim != 2 or logits.ndim != 2 or logits.shape[0] != hidden.shape[0]:
        raise ValueError(
            f"hidden must be [N, d] and logits [N, V] with the same N, got "
            f"{tuple(hidden.shape)} and {tuple(logits.shape)}"
        )
    targets = check_token_ids(targets, logits.shape[1], "targets")
    if targets.shape != (hidden.shape[0],):
        raise ValueError(
            f"targets must have shape ({hidden.shape[0]},), got {tuple(targets.shape)}"
        )
    coeff = logits.softmax(-1)  # [N, V]: p_t
    coeff = coeff - F.one_hot(targets, logits.shape[1]).to(coeff.dtype)  # p_t − y_t
    return (coeff.T.to(hidden.dtype) @ hidden) / hidden.shape[0]  # [V, N] @ [N, d] -> [V, d]


def similarity_correlation(A: torch.Tensor, B: torch.Tensor) -> float:
    """Pearson correlation between the cosine similarities of the same word pairs in two tables.

    Press & Wolf compare embeddings this way: two tables with one row per word agree when the
    words they call similar are the same, whatever the axes (the measure is unchanged by a
    rotation of either table or by rescaling its rows). Every unordered pair of different rows
    counts once.

    Equation:
        ρ = corr({cos(A_i, A_j)}_{i<j}, {cos(B_i, B_j)}_{i<j})

    Args:
        A: a table, floating ``[n, d_A]``, n >= 3, no zero row.
        B: a table with the same rows, floating ``[n, d_B]``.

    Returns:
        ρ, a float in [−1, 1] (computed in float64).

    Raises:
        TypeError: ``A`` or ``B`` not floating.
        ValueError: not 2-D, different row counts, fewer than 3 rows, a zero row, or similarities
            that do not vary (correlation undefined).

    Shapes:
        A: [n, d_A], B: [n, d_B]

    References:
        Press & Wolf, Using the Output Embedding to Improve Language Models, arXiv:1608.05859.
    """
    A = check_floating("A", A)
    B = check_floating("B", B)
    if A.ndim != 2 or B.ndim != 2 or A.shape[0] != B.shape[0] or A.shape[0] < 3:
        raise ValueError(
            f"A and B must be [n, d] tables with the same n >= 3 rows, got {tuple(A.shape)} and "
            f"{tuple(B.shape)}"
        )
    pairs = torch.triu_indices(A.shape[0], A.shape[0], offset=1)  # [2, n(n-1)/2]
    sims = []
    for name, table in (("A", A), ("B", B)):
        x = table.detach().double()
        norms = x.norm(dim=-1, keepdim=True)
        if bool((norms == 0).any()):
            raise ValueError(f"{name} has a zero row: its cosine similarity is undefined")
        unit = x / norms
        s = (unit @ unit.T)[pairs[0], pairs[1]]
        s = s - s.mean()
        if float(s.abs().max()) < 1e-12:  # equal up to rounding: no variation
            raise ValueError(f"the similarities of {name} do not vary: correlation undefined")
        sims.append(s)
    return float(sims[0] @ sims[1] / (sims[0].norm() * sims[1].norm()))
