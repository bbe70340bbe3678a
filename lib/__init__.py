"""Reference implementations for the book *Embeddings and positional encodings in LLMs*.

One module per topic:

- :mod:`lib.embeddings` — token-ID lookup, one-hot, embedding-table memory arithmetic.
- :mod:`lib.tokenization` — byte-level BPE taken apart; under-trained tokens from the table.
- :mod:`lib.similarity` — cosine similarity, nearest neighbours and PCA, in one place.
- :mod:`lib.corpus` — a small generated corpus with known structure (royalty, capitals, tense, "bank").
- :mod:`lib.vocab` — word vocabularies, token streams and training histories shared by the trainers.
- :mod:`lib.word2vec` — skip-gram with negative sampling, nearest neighbours, analogies.
- :mod:`lib.fasttext` — fastText: skip-gram word vectors built from character n-grams.
- :mod:`lib.glove` — co-occurrence counts and the GloVe objective.
- :mod:`lib.count_vectors` — count-based vectors (PPMI and truncated SVD).
- :mod:`lib.pretrained` — all-MiniLM-L6-v2 loaded offline from an installed package.
- :mod:`lib.smollm` — SmolLM2-135M-Instruct (a Llama decoder) loaded offline from its GGUF file.
- :mod:`lib.tiny_lm` — a tiny language model with optional weight tying.
- :mod:`lib.sinusoidal` — the original Transformer's sinusoidal positional encoding.
- :mod:`lib.learned` — learned absolute position tables (GPT-2 / BERT).
- :mod:`lib.position_ids` — position ids in practice: left padding, offsets, packing.
- :mod:`lib.rope` — rotary position embedding (RoPE), both pairing conventions.
- :mod:`lib.rope_scaling` — RoPE context extension (PI, NTK, dynamic NTK, YaRN, Llama 3.1, LongRoPE).
- :mod:`lib.mrope` — multimodal RoPE (Qwen2-VL / Qwen3-VL).
- :mod:`lib.relative` — relative position biases: Shaw et al.'s clipped embeddings, T5's buckets.
- :mod:`lib.alibi` — attention with linear biases.
- :mod:`lib.hybrid_layers` — local/global layer patterns, windows, chunks, NoPE layers (Gemma, Llama 4).
- :mod:`lib.partial_rope` — partial rotary and proportional RoPE (GPT-NeoX, Gemma 4).
- :mod:`lib.mla` — DeepSeek's multi-head latent attention and its decoupled RoPE.
- :mod:`lib.rope_cache` — re-rotating cached RoPE keys (StreamingLLM-style eviction).
- :mod:`lib.attention_sinks` — gpt-oss's learned attention sinks (a per-head logit in the softmax).
- :mod:`lib.model_positions` — current models' position machinery, from transformers' configs.
- :mod:`lib.attention` — a minimal scaled dot-product attention.
- :mod:`lib._checks` — the argument checks every public function uses (clear TypeError/ValueError).
- :mod:`lib.lab` — tiny models for the length-extrapolation lab.
- :mod:`lib.exercises` — the checkers behind every chapter's exercises.
- :mod:`lib.book` — bookkeeping: numbers glued into the prose (a no-op outside the book's build).
- :mod:`lib.viz` — plotly figure builders whose sliders work in a static page.
"""

import importlib
import pkgutil
from types import ModuleType

__version__ = "0.6.0"


def __getattr__(name: str) -> ModuleType:
    """``lib.rope`` after a bare ``import lib``: a submodule is imported the first time it is named.

    ``import lib`` itself stays as cheap as before (no torch, no plotly); ``help(lib.rope.apply_rope)``
    imports ``lib.rope`` then. Any name that is not a submodule raises AttributeError as usual.
    """
    if not name.startswith("__") and name in _submodule_names():
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *_submodule_names()})


def _submodule_names() -> set[str]:
    return {m.name for m in pkgutil.iter_modules(__path__)}
