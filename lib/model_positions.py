"""Position machinery of current model families, read from transformers 5.24 and released configs.

Most rows are the pinned transformers' configuration class of the family (its defaults, which its
docstring ties to the named checkpoint) and modeling code (which layers rotate, the pairing):
``source_kind == "defaults"``. A checkpoint may override a default (a larger window, a YaRN factor,
another base: SmolLM3-3B's released config.json has ``rope_theta`` 5,000,000 where the class
default is 2,000,000). Families whose configuration class defaults describe another model (Llama
3.1/3.2 share ``LlamaConfig``, whose defaults stand for meta-llama/Llama-2-7b-hf per its
``@auto_docstring``; Phi-4 shares ``Phi3Config``, whose defaults are Phi-3-mini's) are rows of a released config.json
instead: ``source_kind == "released"``, the copy named in ``source``. Fields that were not checked
against a primary source are left out. ``tests/test_model_positions.py`` instantiates each
configuration class (with the released values where the row is released) and compares every field.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from lib._checks import check_choice
from lib.hybrid_layers import layer_types_from_pattern, rope_layer_flags
from lib.partial_rope import partial_rotary_inv_freq, proportional_inv_freq
from lib.rope import rope_inv_freq

__all__ = ["MODELS", "OVERRIDES", "ModelPositions", "layer_inv_freqs", "layer_table"]


@dataclass(frozen=True)
class ModelPositions:
    """One model family's position machinery.

    Attributes:
        config_class: transformers' configuration class name (the second source the tests read).
        num_hidden_layers: layers.
        head_dim: head dimension of every layer (``head_dims`` overrides it per layer type).
        rope: per layer type, ``{"rope_type", "rope_theta", "partial_rotary_factor", "factor"}``.
        sliding_window_pattern: every p-th layer global (0: no local layers).
        sliding_window: local window, or None.
        no_rope_interval: every k-th layer NoPE (0: none).
        rope_only_on_sliding: Cohere2's rule (full layers are NoPE).
        attention_chunk_size: Llama 4's chunk on RoPE layers, or None.
        linear_attention_interval: Qwen3-Next: every k-th layer is full attention, the others
            linear (Gated DeltaNet: no RoPE, order carried by its decay and causal conv); 0: none.
        pairing: ``"half"`` or ``"interleaved"`` as the modeling code rotates.
        rotated_dims: dims rotated per head where only a slice is (DeepSeek MLA), else None.
        qk_head_dim: the q·k dimension where it differs from head_dim (DeepSeek MLA), else None.
        tie_word_embeddings: input and output embeddings shared.
        vocab_size: vocabulary size.
        max_position_embeddings: the configuration's maximum length.
        head_dims: per layer type head dimension, where it differs (Gemma 4).
        source: where the row was read.
        sliding_on_every_layer: every layer is a sliding-window layer (Mistral: the modeling code
            passes ``config.sliding_window`` to every layer's attention).
        source_kind: ``"defaults"`` (transformers' configuration class defaults) or
            ``"released"`` (a released checkpoint's config.json, named in ``source``).
    """

    config_class: str
    num_hidden_layers: int
    head_dim: int
    rope: dict[str, dict[str, object]]
    sliding_window_pattern: int
    sliding_window: int | None
    no_rope_interval: int
    rope_only_on_sliding: bool
    attention_chunk_size: int | None
    linear_attention_interval: int
    pairing: str
    rotated_dims: int | None
    qk_head_dim: int | None
    tie_word_embeddings: bool
    vocab_size: int
    max_position_embeddings: int
    head_dims: dict[str, int] = field(default_factory=dict)
    source: str = ""
    sliding_on_every_layer: bool = False
    source_kind: str = "defaults"


_SRC = "transformers 5.24.0, models/{m}/configuration_{m}.py defaults and modeling_{m}.py"
_DEF = {"rope_type": "default", "partial_rotary_factor": 1.0, "factor": 1.0}
_LLAMA_31 = (
    "released config.json of meta-llama/Llama-3.1-8B (public verbatim copies: "
    "https://huggingface.co/mlx-community/Meta-Llama-3.1-8B-bf16/blob/refs%2Fpr%2F1/config.json, "
    "https://huggingface.co/NbAiLab/nb-llama-3.1-8B/blob/main/config.json); modeling_llama.py"
)
_LLAMA_32 = (
    "released config.json of meta-llama/Llama-3.2-1B (public verbatim copies: "
    "https://huggingface.co/Emm9625/Llama-3.2-1B-chatml/blob/main/config.json, "
    "https://huggingface.co/ariG23498/layer-skip-v0/blame/ab64ee42adea0da8e188087514b90d79aceccfb7/config.json); "
    "modeling_llama.py"
)
_PHI_4 = (
    "released config.json of microsoft/phi-4 "
    "(https://huggingface.co/microsoft/phi-4/blob/refs%2Fpr%2F10/config.json); modeling_phi3.py"
)


def _rope(theta: float, **kw: object) -> dict[str, object]:
    return {**_DEF, "rope_theta": theta, **kw}


def _row(
    config_class: str,
    module: str,
    layers: int,
    head_dim: int,
    rope: dict[str, dict[str, object]],
    vocab: int,
    max_len: int,
    *,
    pattern: int = 0,
    window: int | None = None,
    nope: int = 0,
    rope_only_on_sliding: bool = False,
    chunk: int | None = None,
    linear: int = 0,
    pairing: str = "half",
    rotated: int | None = None,
    qk: int | None = None,
    tie: bool = False,
    head_dims: dict[str, int] | None = None,
    sliding_on_every_layer: bool = False,
    released: str = "",
) -> ModelPositions:
    """One row: the fields a family sets, the rest at their usual value (keywords, so no two
    rows repeat the same positional list). ``released`` names a released config.json instead of
    transformers' defaults."""
    return ModelPositions(
        config_class, layers, head_dim, rope, pattern, window, nope, rope_only_on_sliding, chunk,
        linear, pairing, rotated, qk, tie, vocab, max_len, head_dims or {},
        source=released or _SRC.format(m=module), sliding_on_every_layer=sliding_on_every_layer,
        source_kind="released" if released else "defaults",
    )  # fmt: skip


#: The rows, keyed by a display name (each with its ``source`` and ``source_kind``).
MODELS: dict[str, ModelPositions] = {
    "Gemma 2": _row("Gemma2Config", "gemma2", 26, 256, {"all": _rope(10000.0)}, 256000, 8192,
                    pattern=2, window=4096, tie=True),
    "Gemma 3": _row("Gemma3TextConfig", "gemma3", 26, 256,
                    {"sliding_attention": _rope(10000.0), "full_attention": _rope(1000000.0)},
                    262208, 131072, pattern=6, window=4096, tie=True),
    "Gemma 4": _row("Gemma4TextConfig", "gemma4", 30, 256,
                    {"sliding_attention": _rope(10000.0),
                     "full_attention": _rope(1000000.0, rope_type="proportional",
                                             partial_rotary_factor=0.25)},
                    262144, 131072, pattern=6, window=512, tie=True,
                    head_dims={"full_attention": 512}),
    "Llama 3.1 8B": _row("LlamaConfig", "llama", 32, 128,
                         {"all": _rope(500000.0, rope_type="llama3", factor=8.0)}, 128256, 131072,
                         released=_LLAMA_31),
    "Llama 3.2 1B": _row("LlamaConfig", "llama", 16, 64,
                         {"all": _rope(500000.0, rope_type="llama3", factor=32.0)}, 128256, 131072,
                         tie=True, released=_LLAMA_32),
    "Llama 4 Scout": _row("Llama4TextConfig", "llama4", 48, 128, {"all": _rope(500000.0)},
                          202048, 131072, nope=4, chunk=8192, pairing="interleaved"),
    "Cohere2": _row("Cohere2Config", "cohere2", 40, 128, {"all": _rope(10000.0)}, 256000, 8192,
                    pattern=4, window=4096, rope_only_on_sliding=True, pairing="interleaved",
                    tie=True),
    "SmolLM3": _row("SmolLM3Config", "smollm3", 36, 128, {"all": _rope(2000000.0)}, 128256, 32768,
                    nope=4, tie=True),
    "gpt-oss": _row("GptOssConfig", "gpt_oss", 36, 64,
                    {"all": _rope(150000.0, rope_type="yarn", factor=32.0)}, 201088, 131072,
                    pattern=2, window=128),
    "DeepSeek-V3": _row("DeepseekV3Config", "deepseek_v3", 61, 64, {"all": _rope(10000.0)},
                        129280, 4096, pairing="interleaved", rotated=64, qk=192),
    "Qwen3-Next": _row("Qwen3NextConfig", "qwen3_next", 48, 256,
                       {"all": _rope(10000.0, partial_rotary_factor=0.25)}, 151936, 32768,
                       linear=4),
    "Qwen2.5-VL": _row("Qwen2_5_VLTextConfig", "qwen2_5_vl", 80, 128, {"all": _rope(1000000.0)},
                       152064, 32768),
    "Phi-3": _row("Phi3Config", "phi3", 32, 96, {"all": _rope(10000.0)}, 32064, 4096),
    "Phi-4": _row("Phi3Config", "phi3", 40, 128, {"all": _rope(250000.0)}, 100352, 16384,
                  released=_PHI_4),
    "OLMo 2": _row("Olmo2Config", "olmo2", 32, 128, {"all": _rope(10000.0)}, 50304, 2048),
    "OLMo 3": _row("Olmo3Config", "olmo3", 32, 128,
                   {"sliding_attention": _rope(500000.0), "full_attention": _rope(500000.0)},
                   50304, 2048, pattern=4, window=4096),
    "Mistral": _row("MistralConfig", "mistral", 32, 128, {"all": _rope(10000.0)}, 32000, 131072,
                    window=4096, sliding_on_every_layer=True),
    "Ministral 3": _row("Ministral3Config", "ministral3", 34, 128,
                        {"all": _rope(1000000.0, rope_type="yarn", factor=16.0)}, 131072, 262144),
    "GLM-4": _row("Glm4Config", "glm4", 40, 128, {"all": _rope(10000.0, partial_rotary_factor=0.5)},
                  151552, 131072, pairing="interleaved"),
    "GPT-NeoX": _row("GPTNeoXConfig", "gpt_neox", 44, 96,
                     {"all": _rope(10000.0, partial_rotary_factor=0.25)}, 50432, 2048),
}  # fmt: skip

#: Fields where a released checkpoint's config.json differs from a ``"defaults"`` row:
#: ``{row: {"source": where, field: (transformers' default in the row, released value)}}``.
OVERRIDES: dict[str, dict[str, object]] = {
    "SmolLM3": {
        "source": "released config.json of HuggingFaceTB/SmolLM3-3B (public verbatim copy: "
        "https://github.com/fetchwiki/HuggingFaceTB-SmolLM3-3B/blob/"
        "24f7882f92998ee0e691d105ade637afc3e5171f/config.json)",
        "rope_theta": (2000000.0, 5000000.0),
        "max_position_embeddings": (32768, 65536),
    },
}


def layer_table(name: str) -> list[dict[str, object]]:
    """Per layer of a model of :data:`MODELS`: its attention kind, RoPE parameters, window, NoPE.

    Args:
        name: a key of :data:`MODELS`.

    Returns:
        One dict per layer: ``layer``, ``kind`` (``"sliding_attention"``, ``"full_attention"``,
        ``"chunked_attention"`` or ``"linear_attention"``), ``rope`` (the parameters, or None for
        a layer without positions), ``head_dim``, ``window`` (tokens a query sees, None = all).

    Raises:
        ValueError: an unknown name.
    """
    m = MODELS[check_choice("name", name, tuple(MODELS))]
    n = m.num_hidden_layers
    if m.sliding_window_pattern:
        kinds = layer_types_from_pattern(n, m.sliding_window_pattern)
    elif m.sliding_on_every_layer:
        kinds = ["sliding_attention"] * n
    else:
        kinds = ["full_attention"] * n
    uses_rope = [True] * n
    if m.no_rope_interval:
        uses_rope = [bool(f) for f in rope_layer_flags(n, m.no_rope_interval)]
        if m.attention_chunk_size is not None:
            kinds = ["chunked_attention" if r else "full_attention" for r in uses_rope]
    if m.rope_only_on_sliding:
        uses_rope = [k == "sliding_attention" for k in kinds]
    if m.linear_attention_interval:
        kinds = [
            "full_attention" if (i + 1) % m.linear_attention_interval == 0 else "linear_attention"
            for i in range(n)
        ]
        uses_rope = [k == "full_attention" for k in kinds]
    rows = []
    for i, (kind, rope) in enumerate(zip(kinds, uses_rope, strict=True)):
        params = m.rope.get(kind, m.rope.get("all"))
        window: int | None = None
        if kind == "sliding_attention":
            window = m.sliding_window
        elif kind == "chunked_attention":
            window = m.attention_chunk_size
        rows.append(
            {
                "layer": i,
                "kind": kind,
                "rope": params if rope else None,
                "head_dim": m.head_dims.get(kind, m.head_dim),
                "window": window,
            }
        )
    return rows


def layer_inv_freqs(name: str) -> list[torch.Tensor]:
    """Per layer, the frequency θ_i of every pair of the head (0 where a pair does not rotate).

    A NoPE or linear-attention layer gets all zeros; partial rotary gets its own ladder on the
    first pairs and zeros after; proportional RoPE, full-head frequencies with the slow pairs 0;
    MLA, a ``rotated_dims`` RoPE head and zeros for the content dims. Linear (``factor``) and
    YaRN scaling are not applied here: this is the layer *layout*; chapter 9 scales it.

    Args:
        name: a key of :data:`MODELS`.

    Returns:
        One float32 tensor [pairs of that layer's q·k head] per layer.

    Raises:
        ValueError: an unknown name.
    """
    m = MODELS[check_choice("name", name, tuple(MODELS))]
    out = []
    for row in layer_table(name):
        d = int(row["head_dim"])  # type: ignore[call-overload]  # the dict holds an int here
        params = row["rope"]
        if m.rotated_dims is not None and m.qk_head_dim is not None:
            total = m.qk_head_dim // 2
            rot = rope_inv_freq(m.rotated_dims, float(params["rope_theta"])) if params else None  # type: ignore[index]  # a dict when not None
            zeros = torch.zeros(total - m.rotated_dims // 2)
            out.append(
                torch.cat([zeros, rot if rot is not None else torch.zeros(m.rotated_dims // 2)])
            )
            continue
        if params is None:
            out.append(torch.zeros(d // 2))
            continue
        if not isinstance(params, dict):
            raise TypeError(f"layer {row['layer']}: rope parameters must be a dict")
        theta = float(params["rope_theta"])
        f = float(params["partial_rotary_factor"])
        if params["rope_type"] == "proportional":
            out.append(proportional_inv_freq(d, theta, f))
        else:
            freq = partial_rotary_inv_freq(d, theta, f)
            out.append(torch.cat([freq, torch.zeros(d // 2 - freq.shape[0])]))
    return out
