"""Position machinery of current model families, as transformers 5.24 configures them by default.

Each row is read from the pinned transformers' configuration class of the family (its defaults,
which its docstring ties to the named checkpoint) and modeling code (which layers rotate, the
pairing). They are transformers' *default* configurations, not every released checkpoint's
``config.json``: a checkpoint may override a default (a larger window, a YaRN factor); rows and
fields that were not checked against a primary source are left out. ``tests/test_model_positions.py``
instantiates each configuration class and compares every field.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from lib._checks import check_choice
from lib.hybrid_layers import layer_types_from_pattern, rope_layer_flags
from lib.partial_rope import partial_rotary_inv_freq, proportional_inv_freq
from lib.rope import rope_inv_freq

__all__ = ["MODELS", "ModelPositions", "layer_inv_freqs", "layer_table"]


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


_SRC = "transformers 5.24.0, models/{m}/configuration_{m}.py defaults and modeling_{m}.py"
_DEF = {"rope_type": "default", "partial_rotary_factor": 1.0, "factor": 1.0}


def _rope(theta: float, **kw: object) -> dict[str, object]:
    return {**_DEF, "rope_theta": theta, **kw}


#: The rows, keyed by a display name (each with its ``source``).
MODELS: dict[str, ModelPositions] = {
    "Gemma 2": ModelPositions(
        "Gemma2Config", 26, 256, {"all": _rope(10000.0)}, 2, 4096, 0, False, None, 0,
        "half", None, None, True, 256000, 8192, source=_SRC.format(m="gemma2"),
    ),
    "Gemma 3": ModelPositions(
        "Gemma3TextConfig", 26, 256,
        {"sliding_attention": _rope(10000.0), "full_attention": _rope(1000000.0)},
        6, 4096, 0, False, None, 0, "half", None, None, True, 262208, 131072,
        source=_SRC.format(m="gemma3"),
    ),
    "Gemma 4": ModelPositions(
        "Gemma4TextConfig", 30, 256,
        {
            "sliding_attention": _rope(10000.0),
            "full_attention": _rope(1000000.0, rope_type="proportional", partial_rotary_factor=0.25),
        },
        6, 512, 0, False, None, 0, "half", None, None, True, 262144, 131072,
        head_dims={"full_attention": 512}, source=_SRC.format(m="gemma4"),
    ),
    "Llama 4 Scout": ModelPositions(
        "Llama4TextConfig", 48, 128, {"all": _rope(500000.0)}, 0, None, 4, False, 8192, 0,
        "interleaved", None, None, False, 202048, 131072, source=_SRC.format(m="llama4"),
    ),
    "Cohere2": ModelPositions(
        "Cohere2Config", 40, 128, {"all": _rope(10000.0)}, 4, 4096, 0, True, None, 0,
        "interleaved", None, None, True, 256000, 8192, source=_SRC.format(m="cohere2"),
    ),
    "SmolLM3": ModelPositions(
        "SmolLM3Config", 36, 128, {"all": _rope(2000000.0)}, 0, None, 4, False, None, 0,
        "half", None, None, True, 128256, 32768, source=_SRC.format(m="smollm3"),
    ),
    "gpt-oss": ModelPositions(
        "GptOssConfig", 36, 64,
        {"all": _rope(150000.0, rope_type="yarn", factor=32.0)},
        2, 128, 0, False, None, 0, "half", None, None, False, 201088, 131072,
        source=_SRC.format(m="gpt_oss"),
    ),
    "DeepSeek-V3": ModelPositions(
        "DeepseekV3Config", 61, 64, {"all": _rope(10000.0)}, 0, None, 0, False, None, 0,
        "interleaved", 64, 192, False, 129280, 4096, source=_SRC.format(m="deepseek_v3"),
    ),
    "Qwen3-Next": ModelPositions(
        "Qwen3NextConfig", 48, 256, {"all": _rope(10000.0, partial_rotary_factor=0.25)},
        0, None, 0, False, None, 4, "half", None, None, False, 151936, 32768,
        source=_SRC.format(m="qwen3_next"),
    ),
    "Qwen2.5-VL": ModelPositions(
        "Qwen2_5_VLTextConfig", 80, 128, {"all": _rope(1000000.0)}, 0, None, 0, False, None, 0,
        "half", None, None, False, 152064, 32768, source=_SRC.format(m="qwen2_5_vl"),
    ),
    "Phi-3": ModelPositions(
        "Phi3Config", 32, 96, {"all": _rope(10000.0)}, 0, None, 0, False, None, 0,
        "half", None, None, False, 32064, 4096, source=_SRC.format(m="phi3"),
    ),
    "OLMo 2": ModelPositions(
        "Olmo2Config", 32, 128, {"all": _rope(10000.0)}, 0, None, 0, False, None, 0,
        "half", None, None, False, 50304, 2048, source=_SRC.format(m="olmo2"),
    ),
    "OLMo 3": ModelPositions(
        "Olmo3Config", 32, 128,
        {"sliding_attention": _rope(500000.0), "full_attention": _rope(500000.0)},
        4, 4096, 0, False, None, 0, "half", None, None, False, 50304, 2048,
        source=_SRC.format(m="olmo3"),
    ),
    "Mistral": ModelPositions(
        "MistralConfig", 32, 128, {"all": _rope(10000.0)}, 0, 4096, 0, False, None, 0,
        "half", None, None, False, 32000, 131072, source=_SRC.format(m="mistral"),
        sliding_on_every_layer=True,
    ),
    "Ministral 3": ModelPositions(
        "Ministral3Config", 34, 128, {"all": _rope(1000000.0, rope_type="yarn", factor=16.0)},
        0, None, 0, False, None, 0, "half", None, None, False, 131072, 262144,
        source=_SRC.format(m="ministral3"),
    ),
    "GLM-4": ModelPositions(
        "Glm4Config", 40, 128, {"all": _rope(10000.0, partial_rotary_factor=0.5)},
        0, None, 0, False, None, 0, "interleaved", None, None, False, 151552, 131072,
        source=_SRC.format(m="glm4"),
    ),
    "GPT-NeoX": ModelPositions(
        "GPTNeoXConfig", 44, 96, {"all": _rope(10000.0, partial_rotary_factor=0.25)},
        0, None, 0, False, None, 0, "half", None, None, False, 50432, 2048,
        source=_SRC.format(m="gpt_neox"),
    ),
}  # fmt: skip


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
