"""Tests for lib.embeddings: lookup == one-hot @ E, memory arithmetic, meta tables, sparse grads."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given
from hypothesis import strategies as st
from torch import nn

from lib.embeddings import (
    DTYPE_BYTES,
    REAL_EMBEDDING_CONFIGS,
    embedding_on_meta,
    embedding_table_bytes,
    format_bytes,
    lookup,
    lookup_counts,
    lookup_gradient,
    one_hot,
    parameter_bytes,
    sparse_grad_rows,
)

# --- one_hot and lookup ------------------------------------------------------------------------


def test_one_hot_pinned():
    out = one_hot(torch.tensor([2, 0]), 3)
    assert out.dtype == torch.float32
    assert torch.equal(out, torch.tensor([[0.0, 0.0, 1.0], [1.0, 0.0, 0.0]]))


def test_one_hot_matches_torch_and_keeps_leading_shape():
    ids = torch.tensor([[1, 4, 4], [0, 2, 3]])
    out = one_hot(ids, 5)
    assert out.shape == (2, 3, 5)
    assert torch.equal(out, F.one_hot(ids, 5).float())


def test_one_hot_vectors_are_mutually_orthogonal():
    eye = one_hot(torch.arange(6), 6)
    gram = eye @ eye.T
    assert torch.equal(gram, torch.eye(6))


def test_lookup_pinned():
    table = torch.tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    assert torch.equal(
        lookup(torch.tensor([2, 0, 2]), table), torch.tensor([[5.0, 6.0], [1.0, 2.0], [5.0, 6.0]])
    )


@given(
    V=st.integers(1, 20),
    d=st.integers(1, 8),
    shape=st.lists(st.integers(1, 4), min_size=1, max_size=3),
    seed=st.integers(0, 10_000),
)
def test_lookup_equals_one_hot_matmul(V, d, shape, seed):
    g = torch.Generator().manual_seed(seed)
    table = torch.randn(V, d, generator=g, dtype=torch.float64)
    ids = torch.randint(0, V, tuple(shape), generator=g)
    looked_up = lookup(ids, table)
    assert looked_up.shape == (*shape, d)
    torch.testing.assert_close(looked_up, one_hot(ids, V, dtype=torch.float64) @ table)
    torch.testing.assert_close(looked_up, F.embedding(ids, table))


def test_lookup_matches_nn_embedding():
    emb = nn.Embedding(7, 3)
    ids = torch.tensor([[6, 0], [3, 3]])
    torch.testing.assert_close(lookup(ids, emb.weight), emb(ids))


@pytest.mark.parametrize("bad", [torch.tensor([3]), torch.tensor([-1])])
def test_one_hot_out_of_range(bad):
    with pytest.raises(ValueError, match="ids must lie in"):
        one_hot(bad, 3)


def test_one_hot_errors():
    with pytest.raises(TypeError, match="ids"):
        one_hot(torch.tensor([0.0, 1.0]), 3)
    with pytest.raises(TypeError, match="ids"):
        one_hot([0, 1], 3)
    with pytest.raises(ValueError, match="vocab_size"):
        one_hot(torch.tensor([0]), 0)
    with pytest.raises(TypeError, match="vocab_size"):
        one_hot(torch.tensor([0]), 2.0)
    with pytest.raises(TypeError, match="dtype"):
        one_hot(torch.tensor([0]), 2, dtype=torch.long)


def test_lookup_errors():
    table = torch.zeros(4, 2)
    with pytest.raises(ValueError, match="ids must lie in"):
        lookup(torch.tensor([4]), table)
    with pytest.raises(TypeError, match="ids"):
        lookup(torch.tensor([1.0]), table)
    with pytest.raises(TypeError, match="table"):
        lookup(torch.tensor([1]), torch.zeros(4, 2, dtype=torch.long))
    with pytest.raises(ValueError, match="table must be 2-D"):
        lookup(torch.tensor([1]), torch.zeros(4))


# --- sparse gradients ----------------------------------------------------------------------------


def test_sparse_grad_rows_are_the_looked_up_ids():
    table = torch.randn(10, 3)
    ids = torch.tensor([[7, 2, 7], [0, 2, 9]])
    assert sparse_grad_rows(ids, table).tolist() == [0, 2, 7, 9]


def test_lookup_counts_pinned_and_equal_to_the_all_ones_gradient():
    ids = torch.tensor([[7, 2, 7], [0, 2, 9]])
    counts = lookup_counts(ids, 11)
    assert counts.tolist() == [1, 0, 2, 0, 0, 0, 0, 2, 0, 1, 0]
    grad = lookup_gradient(ids, torch.zeros(11, 3))  # row r = count_r * ones
    assert torch.equal(grad, counts[:, None].to(grad.dtype).expand(11, 3))
    with pytest.raises(ValueError, match=r"ids must lie in \[0, 8\]"):
        lookup_counts(ids, 9)
    with pytest.raises(TypeError, match="ids"):
        lookup_counts(torch.tensor([1.0]), 4)


def test_lookup_gradient_pinned_counts():
    # With an all-ones upstream, row r's gradient is (number of times r was looked up) * ones.
    grad = lookup_gradient(torch.tensor([1, 3, 1]), torch.zeros(4, 2))
    assert torch.equal(grad, torch.tensor([[0.0, 0.0], [2.0, 2.0], [0.0, 0.0], [1.0, 1.0]]))


def test_lookup_gradient_matches_index_add_and_sparse_embedding():
    g = torch.Generator().manual_seed(0)
    table = torch.randn(12, 4, generator=g)
    ids = torch.tensor([[3, 5, 3], [11, 0, 5]])
    upstream = torch.randn(2, 3, 4, generator=g)
    grad = lookup_gradient(ids, table, upstream)
    expected = torch.zeros(12, 4).index_add_(0, ids.flatten(), upstream.reshape(-1, 4))
    torch.testing.assert_close(grad, expected)
    # nn.Embedding(sparse=True) stores only the looked-up rows in its gradient
    emb = nn.Embedding(12, 4, sparse=True)
    with torch.no_grad():
        emb.weight.copy_(table)
    (emb(ids) * upstream).sum().backward()
    sparse = emb.weight.grad.coalesce()
    assert sparse.indices().flatten().tolist() == [0, 3, 5, 11]
    torch.testing.assert_close(sparse.to_dense(), expected)
    assert table.grad is None  # the caller's table is untouched


def test_lookup_gradient_errors():
    with pytest.raises(ValueError, match="upstream"):
        lookup_gradient(torch.tensor([0, 1]), torch.zeros(3, 2), torch.ones(2, 3))
    with pytest.raises(TypeError, match="upstream"):
        lookup_gradient(torch.tensor([0, 1]), torch.zeros(3, 2), torch.ones(2, 2, dtype=torch.long))


# --- memory arithmetic -----------------------------------------------------------------------------


def test_dtype_bytes_are_torchs_element_sizes():
    # each format against torch's own element size (fp8: both OCP variants), int4 by its bits
    torch_formats = {
        "float32": [torch.float32],
        "bfloat16": [torch.bfloat16],
        "float16": [torch.float16],
        "int8": [torch.int8],
        "fp8": [torch.float8_e4m3fn, torch.float8_e5m2],
    }
    assert set(DTYPE_BYTES) == set(torch_formats) | {"int4"}
    for name, dtypes in torch_formats.items():
        for dtype in dtypes:
            assert DTYPE_BYTES[name] == torch.empty(0, dtype=dtype).element_size(), name
    assert DTYPE_BYTES["int4"] * 8 == 4  # two 4-bit values per byte


def test_embedding_table_bytes_llama3():
    assert embedding_table_bytes(128256, 4096) == 1_050_673_152  # bfloat16 by default
    assert embedding_table_bytes(128256, 4096, "float32") == 2_101_346_304
    assert embedding_table_bytes(128256, 4096, "int4") == 262_668_288
    assert embedding_table_bytes(3, 3, "int4") == 5  # 4.5 bytes round up to whole bytes


def test_format_bytes_pinned():
    assert format_bytes(1_050_673_152) == "1.05 GB (0.98 GiB)"
    assert format_bytes(2**30) == "1.07 GB (1.00 GiB)"
    assert format_bytes(154_389_504) == "154.39 MB (147.24 MiB)"  # GPT-2's float32 table
    assert format_bytes(154_389_504, unit="GB") == "0.15 GB (0.14 GiB)"
    assert format_bytes(512) == "512 B"
    assert format_bytes(1000) == "1.00 kB (0.98 KiB)"
    assert format_bytes(0) == "0 B"


def test_memory_errors():
    with pytest.raises(ValueError, match="dtype"):
        embedding_table_bytes(10, 10, "float64")
    with pytest.raises(ValueError, match="vocab_size"):
        embedding_table_bytes(0, 10)
    with pytest.raises(TypeError, match="d_model"):
        embedding_table_bytes(10, 1.5)
    with pytest.raises(ValueError, match="n must be >= 0"):
        format_bytes(-1)
    with pytest.raises(ValueError, match="unit"):
        format_bytes(10, unit="GiB")


def test_real_configs_are_well_formed():
    assert {"GPT-2 small", "Llama-3-8B", "Llama-3.2-1B", "all-MiniLM-L6-v2"} <= set(
        REAL_EMBEDDING_CONFIGS
    )
    for config in REAL_EMBEDDING_CONFIGS.values():
        assert set(config) == {"vocab_size", "hidden_size", "tie_word_embeddings", "source"}
        assert isinstance(config["vocab_size"], int) and isinstance(config["hidden_size"], int)
        assert config["tie_word_embeddings"] in (True, False, None)
        assert "/" in config["source"]
    assert REAL_EMBEDDING_CONFIGS["Llama-3-8B"]["tie_word_embeddings"] is False
    assert REAL_EMBEDDING_CONFIGS["Llama-3.2-1B"]["tie_word_embeddings"] is True
    assert REAL_EMBEDDING_CONFIGS["GPT-2 small"]["tie_word_embeddings"] is True


def test_minilm_config_matches_the_installed_package():
    from transformers import AutoConfig

    from lib.pretrained import minilm_path

    config = AutoConfig.from_pretrained(minilm_path(), local_files_only=True)
    expected = REAL_EMBEDDING_CONFIGS["all-MiniLM-L6-v2"]
    assert (config.vocab_size, config.hidden_size) == (
        expected["vocab_size"],
        expected["hidden_size"],
    )


def test_transformers_default_configs_tie_like_the_table():
    # GPT-2's and BERT's config.json do not set tie_word_embeddings: the library default applies.
    from transformers import BertConfig, GPT2Config

    gpt2, bert = GPT2Config(), BertConfig()
    assert (gpt2.vocab_size, gpt2.n_embd, gpt2.tie_word_embeddings) == (50257, 768, True)
    assert (bert.vocab_size, bert.hidden_size, bert.tie_word_embeddings) == (30522, 768, True)
    assert REAL_EMBEDDING_CONFIGS["GPT-2 small"]["vocab_size"] == gpt2.vocab_size
    assert REAL_EMBEDDING_CONFIGS["BERT-base-uncased"]["vocab_size"] == bert.vocab_size


# --- meta device -------------------------------------------------------------------------------


def test_embedding_on_meta_allocates_nothing():
    # every tensor torch creates during the call is recorded (a dispatch mode sees each aten op's
    # result): none may live on a real device. The peak-RSS check this replaces depended on what
    # the process had allocated before (a high earlier peak hid a 2 GB table).
    from torch.utils._python_dispatch import TorchDispatchMode
    from torch.utils._pytree import tree_leaves

    created: list[tuple[str, int]] = []

    class RecordDevices(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            out = func(*args, **(kwargs or {}))
            created.extend(
                (t.device.type, t.numel()) for t in tree_leaves(out) if isinstance(t, torch.Tensor)
            )
            return out

    with RecordDevices():
        emb = embedding_on_meta(128256, 4096)  # 2.1 GB if it were real
    assert created and all(device == "meta" for device, _ in created), created
    assert emb.weight.is_meta and emb.weight.shape == (128256, 4096)
    assert parameter_bytes(emb) == embedding_table_bytes(128256, 4096, "float32")
    half = embedding_on_meta(128256, 4096, torch.bfloat16)
    assert half.weight.dtype == torch.bfloat16
    assert parameter_bytes(half) == 1_050_673_152


def test_parameter_bytes_counts_shared_once():
    a = nn.Linear(4, 3, bias=False)
    b = nn.Linear(4, 3, bias=False)
    b.weight = a.weight
    assert parameter_bytes(nn.Sequential(a, b)) == 4 * 3 * 4


def test_meta_errors():
    with pytest.raises(ValueError, match="dtype"):
        embedding_on_meta(10, 4, "int8")
    with pytest.raises(TypeError, match="dtype"):
        embedding_on_meta(10, 4, torch.int64)
    with pytest.raises(ValueError, match="d_model"):
        embedding_on_meta(10, 0)
    with pytest.raises(TypeError, match="module"):
        parameter_bytes(torch.zeros(3))


# Second sources for REAL_EMBEDDING_CONFIGS (config.json copies found with the search tool, each
# naming the model in `_name_or_path`; values typed from those files):
#   Meta-Llama-3-8B: https://huggingface.co/pandyamarut/Meta-Llama-3-8B/blob/3689724debf35846edda50e9442887aa41c7157c/config.json
#     (vocab_size 128256, hidden_size 4096, tie_word_embeddings false)
#   Qwen2.5-7B: https://huggingface.co/EVA-UNIT-01/EVA-Qwen2.5-7B-v0.0/blob/a32508949aec50fa43f32204d1a5600cf63ec3dd/config.json
#     ("_name_or_path": "Qwen/Qwen2.5-7B", vocab_size 152064, hidden_size 3584, tie false)
_CONFIG_JSON = {
    "Llama-3-8B": (128256, 4096, False),
    "Qwen2.5-7B": (152064, 3584, False),
}


@pytest.mark.parametrize("name", sorted(_CONFIG_JSON))
def test_real_embedding_configs_match_config_json(name):
    config = REAL_EMBEDDING_CONFIGS[name]
    got = (config["vocab_size"], config["hidden_size"], config["tie_word_embeddings"])
    assert got == _CONFIG_JSON[name]


@pytest.mark.parametrize(
    ("name", "config_class"),
    [("Gemma-2-2B", "Gemma2Config"), ("Mistral-7B-v0.1", "MistralConfig"),
     ("Llama-2-7B", "LlamaConfig")],
)  # fmt: skip
def test_real_embedding_configs_match_transformers_defaults(name, config_class):
    # the config classes' defaults are these models' sizes: MistralConfig's and LlamaConfig's
    # docstrings name Mistral-7B-v0.1 and Llama-2-7b-hf; Gemma2Config's defaults (hidden 2304,
    # 26 layers, 8 heads, 4 KV heads, intermediate 9216) are google/gemma-2-2b's config.json
    # (e.g. https://huggingface.co/indiebot-community/gemma-2-2b-it-bnb-4bit, commit 21852ba)
    import transformers

    default = getattr(transformers, config_class)()
    if config_class == "Gemma2Config":
        sizes = (default.hidden_size, default.num_hidden_layers, default.num_attention_heads,
                 default.num_key_value_heads, default.intermediate_size)  # fmt: skip
        assert sizes == (2304, 26, 8, 4, 9216)
    config = REAL_EMBEDDING_CONFIGS[name]
    got = (config["vocab_size"], config["hidden_size"], config["tie_word_embeddings"])
    assert got == (default.vocab_size, default.hidden_size, default.tie_word_embeddings)
