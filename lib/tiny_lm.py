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
    "EOS",
    "MLPBlock",
    "TinyLM",
    "count_parameters",
    "lm_head_parameters",
    "lm_loss",
    "params_saved_by_tying",
    "tokens_from_sentences",
    "train_lm",
    "tying_table",
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
