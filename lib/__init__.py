"""Reference implementations for the book *Embeddings and positional encodings in LLMs*.

One module per topic:

- :mod:`lib.embeddings` — token-ID lookup, one-hot, embedding-table memory arithmetic.
- :mod:`lib.sinusoidal` — the original Transformer's sinusoidal positional encoding.
- :mod:`lib.learned` — learned absolute position tables (GPT-2 / BERT).
- :mod:`lib.rope` — rotary position embedding (RoPE), both pairing conventions.
- :mod:`lib.rope_scaling` — RoPE context extension (PI, NTK, dynamic NTK, YaRN, Llama 3.1, LongRoPE).
- :mod:`lib.mrope` — multimodal RoPE (Qwen2-VL / Qwen3-VL).
- :mod:`lib.alibi` — attention with linear biases.
- :mod:`lib.attention` — a minimal scaled dot-product attention.
- :mod:`lib.viz` — plotly figure builders whose sliders work in a static page.
"""

__version__ = "0.1.0"
