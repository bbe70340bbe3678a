"""A tiny language model with optional weight tying (chapter 4).

Weight tying (Press & Wolf 2017, arXiv 1608.05859; Inan et al. 2017, arXiv 1611.01462) uses the
input embedding ``E: [V, d]`` also as the output projection, so the logits are::

    logits = h Eᵀ        (h: [..., T, d] final hidden states -> [..., T, V])

One ``nn.Parameter`` then serves both uses: ``model.lm_head.weight is model.embed.weight`` (the
names follow Hugging Face models such as ``LlamaForCausalLM.lm_head``), it is stored once, and its
gradient is the sum of the gradient through the lookup and the gradient through the head.

:class:`TinyLM` is deliberately small: embedding -> ``n_layers`` residual MLP blocks -> LayerNorm ->
LM head. Its body sees one token at a time (no attention), so it is a learned *bigram* model,
p(next token | current token): enough to compare tied and untied heads in seconds on a CPU.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import torch
import torch.nn.functional as F
from torch import nn

from lib._checks import check_int, check_integer_tensor, check_positive_float, check_positive_int
from lib.embeddings import REAL_EMBEDDING_CONFIGS, embedding_table_bytes
from lib.word2vec import TrainingHistory, Vocab, build_vocab

__all__ = [
    "DECODER_CONFIGS",
    "EOS",
    "MLPBlock",
    "TinyLM",
    "count_parameters",
    "decoder_parameters",
    "lm_head_parameters",
    "lm_loss",
    "params_saved_by_tying",
    "tokens_from_sentences",
    "train_lm",
    "tying_table",
    "vocabulary_share_table",
]

#: The end-of-sentence token appended by :func:`tokens_from_sentences`.
EOS = "</s>"


class MLPBlock(nn.Module):
    """Pre-LayerNorm residual MLP: ``x + W2 · GELU(W1 · LN(x) + b1) + b2``; ``[..., d] -> [..., d]``.

    The feed-forward sublayer of a transformer (Vaswani et al. 2017, arXiv 1706.03762, eq. 2), with
    GELU (Hendrycks & Gimpel 2016, arXiv 1606.08415) and pre-norm placement as in GPT-2.
    """

    def __init__(self, d_model: int, d_hidden: int):
        super().__init__()
        self.norm = nn.LayerNorm(d_model)
        self.fc_in = nn.Linear(d_model, d_hidden)
        self.fc_out = nn.Linear(d_hidden, d_model)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.fc_out(F.gelu(self.fc_in(self.norm(x))))


class TinyLM(nn.Module):
    """Embedding -> ``n_layers`` MLP blocks -> LayerNorm -> LM head, with ``tie_weights`` on or off.

    ``forward(ids)`` returns logits = LN(body(E[ids])) Wᵀ, where W = E when ``tie_weights`` (Press &
    Wolf 2017, arXiv 1608.05859): then ``lm_head.weight`` *is* ``embed.weight`` (one Parameter, one
    storage). The head has no bias, as in GPT-2 and LLaMA.

    Shapes: ``ids: [..., T]`` integer -> ``[..., T, vocab_size]``. Weights are initialised from a
    ``torch.Generator`` seeded with ``seed``: embeddings and linear weights N(0, 0.02²) as in GPT-2,
    biases zero; the untied head gets its own N(0, 0.02²) draw.
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
        """Final hidden states h (after the last LayerNorm): ``[..., T] -> [..., T, d_model]``."""
        ids = check_integer_tensor("ids", ids)
        if ids.numel() and (int(ids.min()) < 0 or int(ids.max()) >= self.vocab_size):
            raise ValueError(f"ids must lie in [0, {self.vocab_size - 1}], got a value outside")
        x = self.embed(ids)  # [..., T, d]
        for block in self.blocks:
            x = block(x)
        return self.norm(x)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return self.lm_head(self.hidden(ids))  # [..., T, V] = h Wᵀ


def count_parameters(model: nn.Module, *, count_shared_once: bool = True) -> int:
    """Number of scalar parameters of ``model``; a Parameter used in two places counts once.

    With ``count_shared_once=False`` every use counts (the naive sum over module attributes), which
    for a tied model overstates the size by V·d. The default agrees with ``model.parameters()`` and
    with Hugging Face's ``PreTrainedModel.num_parameters()``.
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
    """Parameters of an LM head ``nn.Linear(d_model, vocab_size)``: V·d (+ V with a bias)."""
    vocab_size = check_positive_int("vocab_size", vocab_size)
    d_model = check_positive_int("d_model", d_model)
    return vocab_size * d_model + (vocab_size if bias else 0)


def _resolve_config(config: str | Mapping[str, object]) -> Mapping[str, object]:
    if isinstance(config, str):
        if config not in REAL_EMBEDDING_CONFIGS:
            raise KeyError(
                f"config {config!r} is not in REAL_EMBEDDING_CONFIGS; known: "
                f"{sorted(REAL_EMBEDDING_CONFIGS)}"
            )
        return REAL_EMBEDDING_CONFIGS[config]
    if not isinstance(config, Mapping):
        raise TypeError(f"config must be a name or a mapping, got {type(config).__name__}")
    for key in ("vocab_size", "hidden_size"):
        if key not in config:
            raise ValueError(f"config must have the key {key!r}, got keys {sorted(config)}")
    return config


def params_saved_by_tying(config: str | Mapping[str, object]) -> int:
    """Parameters that tying saves (or would save) for a config: the bias-free head's V · hidden_size.

    ``config`` is a key of :data:`lib.embeddings.REAL_EMBEDDING_CONFIGS` or a mapping with
    ``vocab_size`` and ``hidden_size`` (Hugging Face config names). Press & Wolf 2017, arXiv
    1608.05859. Example: Llama 3 8B, 128,256 × 4,096 = 525,336,576.
    """
    config = _resolve_config(config)
    return lm_head_parameters(config["vocab_size"], config["hidden_size"])  # type: ignore[arg-type]


def tying_table(dtype: str = "bfloat16") -> list[dict[str, object]]:
    """One row per model of :data:`REAL_EMBEDDING_CONFIGS`: what its LM head costs, tied or not.

    Keys: ``model, vocab_size, hidden_size, tie_word_embeddings, embedding_params,
    head_params_if_untied`` (V·d), ``saved_params`` (V·d when the published model ties, else 0),
    ``head_bytes_if_untied`` (in ``dtype``) and ``source`` (the Hugging Face repo of its config.json).
    A model published without an LM head (``tie_word_embeddings`` None) has ``saved_params`` 0.
    """
    rows = []
    for name, config in REAL_EMBEDDING_CONFIGS.items():
        V, d = config["vocab_size"], config["hidden_size"]
        head = params_saved_by_tying(config)
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


#: Decoder-only models of two families, from each model's ``config.json`` on the Hugging Face Hub
#: (``source``). Llama: no biases; Qwen2.5: biases on the q, k, v projections (``attention_bias``).
#: ``tie_word_embeddings``: what the published model does. :func:`decoder_parameters` counts them.
DECODER_CONFIGS: dict[str, dict[str, object]] = {
    "Qwen2.5-0.5B": {"vocab_size": 151936, "hidden_size": 896, "intermediate_size": 4864,
                     "num_hidden_layers": 24, "num_attention_heads": 14, "num_key_value_heads": 2,
                     "attention_bias": True, "tie_word_embeddings": True,
                     "source": "Qwen/Qwen2.5-0.5B"},
    "Llama-3.2-1B": {"vocab_size": 128256, "hidden_size": 2048, "intermediate_size": 8192,
                     "num_hidden_layers": 16, "num_attention_heads": 32, "num_key_value_heads": 8,
                     "attention_bias": False, "tie_word_embeddings": True,
                     "source": "meta-llama/Llama-3.2-1B"},
    "Qwen2.5-1.5B": {"vocab_size": 151936, "hidden_size": 1536, "intermediate_size": 8960,
                     "num_hidden_layers": 28, "num_attention_heads": 12, "num_key_value_heads": 2,
                     "attention_bias": True, "tie_word_embeddings": True,
                     "source": "Qwen/Qwen2.5-1.5B"},
    "Qwen2.5-3B": {"vocab_size": 151936, "hidden_size": 2048, "intermediate_size": 11008,
                   "num_hidden_layers": 36, "num_attention_heads": 16, "num_key_value_heads": 2,
                   "attention_bias": True, "tie_word_embeddings": True,
                   "source": "Qwen/Qwen2.5-3B"},
    "Llama-3.2-3B": {"vocab_size": 128256, "hidden_size": 3072, "intermediate_size": 8192,
                     "num_hidden_layers": 28, "num_attention_heads": 24, "num_key_value_heads": 8,
                     "attention_bias": False, "tie_word_embeddings": True,
                     "source": "meta-llama/Llama-3.2-3B"},
    "Qwen2.5-7B": {"vocab_size": 152064, "hidden_size": 3584, "intermediate_size": 18944,
                   "num_hidden_layers": 28, "num_attention_heads": 28, "num_key_value_heads": 4,
                   "attention_bias": True, "tie_word_embeddings": False,
                   "source": "Qwen/Qwen2.5-7B"},
    "Llama-3-8B": {"vocab_size": 128256, "hidden_size": 4096, "intermediate_size": 14336,
                   "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8,
                   "attention_bias": False, "tie_word_embeddings": False,
                   "source": "meta-llama/Meta-Llama-3-8B"},
    "Llama-3-70B": {"vocab_size": 128256, "hidden_size": 8192, "intermediate_size": 28672,
                    "num_hidden_layers": 80, "num_attention_heads": 64, "num_key_value_heads": 8,
                    "attention_bias": False, "tie_word_embeddings": False,
                    "source": "meta-llama/Meta-Llama-3-70B"},
    "Qwen2.5-72B": {"vocab_size": 152064, "hidden_size": 8192, "intermediate_size": 29568,
                    "num_hidden_layers": 80, "num_attention_heads": 64, "num_key_value_heads": 8,
                    "attention_bias": True, "tie_word_embeddings": False,
                    "source": "Qwen/Qwen2.5-72B"},
}  # fmt: skip


def decoder_parameters(
    config: str | Mapping[str, object], *, tied: bool | None = None
) -> dict[str, int]:
    """Parameter count of a Llama-style decoder from its config, split into body and vocabulary.

    Per layer: q and o projections ``d × n_h d_h`` each, k and v ``d × n_kv d_h`` each (grouped-query
    attention, Ainslie et al. 2023, arXiv 2305.13245), biases on q, k, v if ``attention_bias``, a
    gated MLP of three ``d × d_ff`` matrices, two RMSNorm vectors of ``d``; then a final norm. The
    vocabulary part is ``V·d`` (tied) or ``2·V·d`` (untied), with ``d_h = d / n_h``.

    Args:
        config: a key of :data:`DECODER_CONFIGS` or a mapping with the same keys.
        tied: count with a tied (True) or untied (False) head; None: as the model was published.

    Returns:
        ``{"body", "vocab", "total"}`` parameter counts.

    Raises:
        KeyError: an unknown model name. TypeError: ``tied`` is not a bool or None.
    """
    c = DECODER_CONFIGS[config] if isinstance(config, str) else config
    if tied is not None and not isinstance(tied, bool):
        raise TypeError(f"tied must be a bool or None, got {type(tied).__name__}")
    if tied is None:
        tied = bool(c["tie_word_embeddings"])
    d, n_h, n_kv = (
        int(c["hidden_size"]),
        int(c["num_attention_heads"]),
        int(c["num_key_value_heads"]),
    )
    d_h = d // n_h
    attention = 2 * d * n_h * d_h + 2 * d * n_kv * d_h
    if c.get("attention_bias"):
        attention += n_h * d_h + 2 * n_kv * d_h
    mlp = 3 * d * int(c["intermediate_size"])
    body = int(c["num_hidden_layers"]) * (attention + mlp + 2 * d) + d
    vocab = int(c["vocab_size"]) * d * (1 if tied else 2)
    return {"body": body, "vocab": vocab, "total": body + vocab}


def vocabulary_share_table() -> list[dict[str, object]]:
    """One row per model of :data:`DECODER_CONFIGS`, smallest first: the vocabulary's share, tied or not.

    Keys: ``model``, ``tie_word_embeddings`` (published), ``total_tied``, ``total_untied``,
    ``body`` and ``vocab_params`` (``V·d``, one matrix), ``share_tied`` = ``V·d / total_tied`` and
    ``share_untied`` = ``2·V·d / total_untied``, ``source``.
    """
    rows = []
    for name, config in DECODER_CONFIGS.items():
        tied, untied = decoder_parameters(name, tied=True), decoder_parameters(name, tied=False)
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
    return sorted(rows, key=lambda r: r["total_tied"])


# --- data and training -------------------------------------------------------------------------


def tokens_from_sentences(
    sentences: Sequence[Sequence[str]], vocab: Vocab | None = None
) -> tuple[torch.Tensor, Vocab]:
    """One stream of token ids: every sentence followed by :data:`EOS`; ``(LongTensor [N], vocab)``.

    Without ``vocab`` one is built (:func:`lib.word2vec.build_vocab`) from the sentences plus EOS.
    With a given ``vocab``, an unknown word is a ``KeyError`` naming it.
    """
    with_eos = [[*sentence, EOS] for sentence in sentences]
    if vocab is None:
        vocab = build_vocab(with_eos)
    ids = [vocab.id(word) for sentence in with_eos for word in sentence]
    return torch.tensor(ids, dtype=torch.long), vocab


def _check_token_ids(token_ids: torch.Tensor, seq_len: int) -> torch.Tensor:
    token_ids = check_integer_tensor("token_ids", token_ids)
    if token_ids.dim() != 1:
        raise ValueError(f"token_ids must be 1-D [N], got shape {tuple(token_ids.shape)}")
    if len(token_ids) < seq_len + 1:
        raise ValueError(
            f"token_ids must hold at least seq_len + 1 = {seq_len + 1} tokens, got {len(token_ids)}"
        )
    return token_ids


def lm_loss(model: TinyLM, token_ids: torch.Tensor) -> float:
    """Mean next-token cross-entropy (nats) of ``model`` over the stream ``token_ids: [N]``.

    loss = −(1/(N−1)) Σ_t log p(x_{t+1} | x_≤t), computed without gradients.
    """
    if not isinstance(model, TinyLM):
        raise TypeError(f"model must be a TinyLM, got {type(model).__name__}")
    token_ids = _check_token_ids(token_ids, 1)
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
) -> TrainingHistory:
    """Train ``model`` in place on next-token prediction over ``token_ids: [N]``; return its losses.

    Each step draws ``batch_size`` windows of ``seq_len + 1`` tokens at random offsets (a
    ``torch.Generator`` seeded with ``seed``), computes the mean cross-entropy of
    ``model(x[:, :-1])`` against ``x[:, 1:]`` and takes one Adam step. ``history.losses`` holds the
    loss of every step.
    """
    if not isinstance(model, TinyLM):
        raise TypeError(f"model must be a TinyLM, got {type(model).__name__}")
    steps = check_positive_int("steps", steps)
    lr = check_positive_float("lr", lr)
    seed = check_int("seed", seed, minimum=0)
    batch_size = check_positive_int("batch_size", batch_size)
    seq_len = check_positive_int("seq_len", seq_len)
    token_ids = _check_token_ids(token_ids, seq_len)

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
    model.eval()
    return history
