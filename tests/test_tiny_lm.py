"""Tests for lib.tiny_lm: tied storage, logits = h Eᵀ, gradient accumulation, counts, training."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

from lib.corpus import generate_corpus
from lib.embeddings import REAL_EMBEDDING_CONFIGS
from lib.tiny_lm import (
    EOS,
    TinyLM,
    count_parameters,
    direct_path_ranks,
    head_gradient,
    lm_head_cost,
    lm_head_parameters,
    lm_loss,
    params_saved_by_tying,
    repeat_probability,
    similarity_correlation,
    tokens_from_sentences,
    train_lm,
    tying_table,
)


def by_hand(V: int, d: int, h: int, n_layers: int, tied: bool) -> int:
    block = 2 * d + (d * h + h) + (h * d + d)  # LayerNorm, fc_in, fc_out
    return V * d + n_layers * block + 2 * d + (0 if tied else V * d)


# --- tying -------------------------------------------------------------------------------------


def test_tied_weights_share_one_parameter_and_storage():
    model = TinyLM(11, 6, tie_weights=True)
    assert model.lm_head.weight is model.embed.weight
    assert model.lm_head.weight.data_ptr() == model.embed.weight.data_ptr()
    untied = TinyLM(11, 6, tie_weights=False)
    assert untied.lm_head.weight.data_ptr() != untied.embed.weight.data_ptr()
    with torch.no_grad():
        model.embed.weight[3, 0] = 42.0  # one write shows up in both uses
    assert model.lm_head.weight[3, 0].item() == 42.0


@given(
    V=st.integers(2, 30), d=st.integers(1, 12), n_layers=st.integers(0, 2), seed=st.integers(0, 100)
)
def test_tied_logits_are_hidden_times_embedding_transpose(V, d, n_layers, seed):
    model = TinyLM(V, d, tie_weights=True, n_layers=n_layers, seed=seed)
    ids = torch.randint(0, V, (2, 5), generator=torch.Generator().manual_seed(seed))
    logits = model(ids)
    assert logits.shape == (2, 5, V)
    torch.testing.assert_close(logits, model.hidden(ids) @ model.embed.weight.T)


def test_gradient_of_tied_weight_is_lookup_grad_plus_head_grad():
    V, d = 13, 8
    tied = TinyLM(V, d, tie_weights=True, seed=1)
    untied = TinyLM(V, d, tie_weights=False, seed=1)
    untied.load_state_dict(tied.state_dict())  # same values; now two separate Parameters
    with torch.no_grad():
        untied.lm_head.weight.copy_(tied.embed.weight)
    assert untied.lm_head.weight.data_ptr() != untied.embed.weight.data_ptr()
    ids = torch.tensor([[1, 4, 4, 7, 12], [0, 3, 9, 9, 2]])
    targets = torch.roll(ids, -1, dims=1)
    for model in (tied, untied):
        logits = model(ids)
        F.cross_entropy(logits.reshape(-1, V), targets.reshape(-1)).backward()
    lookup_grad, head_grad = untied.embed.weight.grad, untied.lm_head.weight.grad
    assert torch.count_nonzero(lookup_grad.abs().sum(-1)) == len(ids.unique())  # sparse rows
    torch.testing.assert_close(tied.embed.weight.grad, lookup_grad + head_grad)


def test_same_seed_same_body_for_tied_and_untied():
    tied, untied = TinyLM(9, 4, tie_weights=True, seed=3), TinyLM(9, 4, tie_weights=False, seed=3)
    for (name, p), (_, q) in zip(tied.named_parameters(), untied.named_parameters(), strict=False):
        assert torch.equal(p, q), name
    assert not torch.equal(untied.lm_head.weight, untied.embed.weight)


# --- parameter counts ----------------------------------------------------------------------------


@pytest.mark.parametrize("n_layers", [0, 1, 3])
def test_count_parameters_by_hand(n_layers):
    V, d = 50, 16
    tied = TinyLM(V, d, tie_weights=True, n_layers=n_layers)
    untied = TinyLM(V, d, tie_weights=False, n_layers=n_layers)
    assert count_parameters(tied) == by_hand(V, d, 4 * d, n_layers, tied=True)
    assert count_parameters(untied) == by_hand(V, d, 4 * d, n_layers, tied=False)
    assert count_parameters(untied) - count_parameters(tied) == lm_head_parameters(V, d)
    assert count_parameters(tied, count_shared_once=False) == count_parameters(untied)


def test_count_parameters_matches_transformers():
    from transformers import GPT2Config, GPT2LMHeadModel

    config = GPT2Config(vocab_size=101, n_embd=32, n_layer=1, n_head=2, n_positions=16)
    model = GPT2LMHeadModel(config)
    assert model.lm_head.weight is model.transformer.wte.weight  # GPT-2 ties
    assert count_parameters(model) == model.num_parameters()
    assert count_parameters(model, count_shared_once=False) == model.num_parameters() + 101 * 32


def test_lm_head_parameters_and_savings():
    assert lm_head_parameters(10, 3) == 30
    assert lm_head_parameters(10, 3, bias=True) == 40
    assert params_saved_by_tying("Llama-3-8B") == 128256 * 4096 == 525_336_576
    assert params_saved_by_tying("Llama-3.2-1B") == 262_668_288
    assert params_saved_by_tying({"vocab_size": 50257, "hidden_size": 768}) == 38_597_376


def test_tying_table():
    rows = {row["model"]: row for row in tying_table()}
    assert set(rows) == set(REAL_EMBEDDING_CONFIGS)
    llama1b, llama8b, minilm = rows["Llama-3.2-1B"], rows["Llama-3-8B"], rows["all-MiniLM-L6-v2"]
    assert llama1b["saved_params"] == 128256 * 2048 and llama8b["saved_params"] == 0
    assert llama8b["head_params_if_untied"] == 525_336_576
    assert llama8b["head_bytes_if_untied"] == 1_050_673_152  # bfloat16
    assert minilm["saved_params"] == 0
    assert rows["GPT-2 small"]["source"] == "openai-community/gpt2"


def test_count_errors():
    with pytest.raises(TypeError, match="model"):
        count_parameters(torch.zeros(2))
    with pytest.raises(KeyError, match="'GPT-5'"):
        params_saved_by_tying("GPT-5")
    with pytest.raises(ValueError, match="hidden_size"):
        params_saved_by_tying({"vocab_size": 10})
    with pytest.raises(ValueError, match="d_model"):
        lm_head_parameters(10, 0)


def test_model_errors():
    with pytest.raises(TypeError, match="tie_weights"):
        TinyLM(10, 4, tie_weights=1)
    with pytest.raises(ValueError, match="vocab_size"):
        TinyLM(0, 4, tie_weights=True)
    with pytest.raises(ValueError, match="n_layers"):
        TinyLM(10, 4, tie_weights=True, n_layers=-1)
    model = TinyLM(10, 4, tie_weights=True)
    with pytest.raises(ValueError, match="ids must lie in"):
        model(torch.tensor([10]))
    with pytest.raises(TypeError, match="ids"):
        model(torch.tensor([1.0]))


# --- data and training -------------------------------------------------------------------------


def test_tokens_from_sentences():
    ids, vocab = tokens_from_sentences([["a", "b"], ["b"]])
    assert [vocab.words[i] for i in ids.tolist()] == ["a", "b", EOS, "b", EOS]
    again, _ = tokens_from_sentences([["b", "a"]], vocab)
    assert [vocab.words[i] for i in again.tolist()] == ["b", "a", EOS]
    with pytest.raises(KeyError, match="'zebra'"):
        tokens_from_sentences([["zebra"]], vocab)


def test_tied_and_untied_training_on_the_generated_corpus():
    ids, vocab = tokens_from_sentences(generate_corpus(2000, seed=0))
    held_out, _ = tokens_from_sentences(generate_corpus(300, seed=1), vocab)
    for tie in (True, False):
        model = TinyLM(len(vocab), 32, tie_weights=tie)
        before = lm_loss(model, held_out)
        history = train_lm(model, ids, steps=80, lr=1e-2, seed=0)
        assert len(history.losses) == 80
        assert before == pytest.approx(torch.log(torch.tensor(len(vocab))).item(), rel=0.05)
        assert lm_loss(model, held_out) < 0.5 * before
        if tie:
            assert model.lm_head.weight is model.embed.weight  # still tied after Adam


def test_train_lm_is_deterministic():
    ids, vocab = tokens_from_sentences(generate_corpus(200, seed=0))
    runs = []
    for _ in range(2):
        model = TinyLM(len(vocab), 8, tie_weights=True, seed=2)
        runs.append(train_lm(model, ids, steps=5, seed=7).losses)
    assert runs[0] == runs[1]


def test_lm_loss_pinned():
    model = TinyLM(4, 2, tie_weights=False, n_layers=0)
    with torch.no_grad():
        model.lm_head.weight.zero_()  # uniform predictions -> loss log 4
    assert lm_loss(model, torch.tensor([0, 1, 2, 3])) == pytest.approx(
        torch.log(torch.tensor(4.0)).item()
    )


def test_train_errors():
    model = TinyLM(5, 4, tie_weights=True)
    with pytest.raises(ValueError, match="token_ids must hold"):
        train_lm(model, torch.tensor([0, 1, 2]), seq_len=8)
    with pytest.raises(ValueError, match="token_ids must be 1-D"):
        train_lm(model, torch.zeros(2, 20, dtype=torch.long))
    with pytest.raises(ValueError, match="steps"):
        train_lm(model, torch.zeros(50, dtype=torch.long), steps=0)
    with pytest.raises(TypeError, match="model"):
        train_lm(torch.nn.Linear(2, 2), torch.zeros(50, dtype=torch.long))


# --- decoder parameter counts (chapter 4's vocabulary-share slider) ------------------------------


@pytest.mark.parametrize("name", ["Qwen2.5-0.5B", "Llama-3.2-1B", "Qwen2.5-7B", "Llama-3-70B"])
@pytest.mark.parametrize("tied", [True, False])
def test_decoder_parameters_match_transformers_on_meta(name: str, tied: bool) -> None:
    from transformers import LlamaConfig, LlamaForCausalLM, Qwen2Config, Qwen2ForCausalLM

    from lib.tiny_lm import DECODER_CONFIGS, decoder_parameters

    c = dict(DECODER_CONFIGS[name])
    qwen = name.startswith("Qwen")
    keys = ["vocab_size", "hidden_size", "intermediate_size", "num_hidden_layers",
            "num_attention_heads", "num_key_value_heads"]  # fmt: skip
    kwargs = {k: c[k] for k in keys} | {"tie_word_embeddings": tied}
    if not qwen:
        kwargs["attention_bias"] = c["attention_bias"]
    config_cls, model_cls = (
        (Qwen2Config, Qwen2ForCausalLM) if qwen else (LlamaConfig, LlamaForCausalLM)
    )
    with torch.device("meta"):
        model = model_cls(config_cls(**kwargs))
    n_hf = sum(p.numel() for p in model.parameters())  # a tied head is listed once
    assert decoder_parameters(name, tied=tied)["total"] == n_hf


def test_decoder_parameters_published_sizes_and_errors() -> None:
    from lib.tiny_lm import decoder_parameters

    # the sizes the models are known by (1.24B, 8.03B; Qwen2.5-0.5B: 0.49B), to 0.5 %
    for name, size in [("Llama-3.2-1B", 1.24e9), ("Llama-3-8B", 8.03e9), ("Qwen2.5-0.5B", 0.494e9)]:
        assert abs(decoder_parameters(name)["total"] / size - 1) < 0.005
    with pytest.raises(KeyError):
        decoder_parameters("GPT-5")
    with pytest.raises(TypeError, match="tied"):
        decoder_parameters("Llama-3-8B", tied="yes")


def test_vocabulary_share_table_is_sorted_and_consistent() -> None:
    from lib.tiny_lm import vocabulary_share_table

    rows = vocabulary_share_table()
    totals = [r["total_tied"] for r in rows]
    assert totals == sorted(totals)
    for r in rows:
        assert r["total_untied"] == r["total_tied"] + r["vocab_params"]
        assert r["share_tied"] == pytest.approx(r["vocab_params"] / r["total_tied"], rel=1e-12)
        assert 0 < r["share_tied"] < r["share_untied"] < 1


def test_decoder_configs_agree_with_real_embedding_configs() -> None:
    from lib.tiny_lm import DECODER_CONFIGS

    shared = set(DECODER_CONFIGS) & set(REAL_EMBEDDING_CONFIGS)
    assert shared == {"Llama-3-8B", "Llama-3.2-1B", "Qwen2.5-7B"}
    for name in shared:
        for key in ("vocab_size", "hidden_size", "tie_word_embeddings", "source"):
            assert DECODER_CONFIGS[name][key] == REAL_EMBEDDING_CONFIGS[name][key], (name, key)


def test_decoder_parameters_rejects_bad_sizes_by_name() -> None:
    from lib.tiny_lm import DECODER_CONFIGS, decoder_parameters

    config = dict(DECODER_CONFIGS["Llama-3.2-1B"])
    with pytest.raises(TypeError, match="hidden_size"):
        decoder_parameters(config | {"hidden_size": 2048.5})
    with pytest.raises(ValueError, match="num_hidden_layers"):
        decoder_parameters(config | {"num_hidden_layers": 0})
    with pytest.raises(ValueError, match="vocab_size"):
        params_saved_by_tying({"vocab_size": 0, "hidden_size": 8})


# --- lm_head_cost and direct_path_ranks (the real tied model of chapter 4) ---------------------


def test_lm_head_cost_pinned():
    cost = lm_head_cost(49152, 576, 1000, n_tokens=8, dtype="float32")
    assert cost == {
        "head_flops": 2 * 49152 * 576 * 8,
        "body_flops": 2 * 1000 * 8,
        "logits_bytes": 8 * 49152 * 4,
    }
    assert lm_head_cost(10, 4, 0, dtype="bfloat16")["logits_bytes"] == 20


def test_lm_head_cost_bad_input():
    with pytest.raises(ValueError, match="vocab_size must be >= 1"):
        lm_head_cost(0, 4, 1)
    with pytest.raises(ValueError, match="body_params must be >= 0"):
        lm_head_cost(10, 4, -1)
    with pytest.raises(TypeError, match="n_tokens must be an int"):
        lm_head_cost(10, 4, 1, n_tokens=2.0)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="dtype"):
        lm_head_cost(10, 4, 1, dtype="float7")


def _ranks_with_llama_rmsnorm(E, ids, g, eps):
    """The direct path with transformers' own LlamaRMSNorm, ranks counted one row at a time."""
    from transformers.models.llama.modeling_llama import LlamaRMSNorm

    norm = LlamaRMSNorm(E.shape[1], eps=eps)
    with torch.no_grad():
        norm.weight.copy_(g)
        logits = norm(E[ids]) @ E.T
    return torch.tensor(
        [int((row > row[i]).sum()) for row, i in zip(logits, ids.tolist(), strict=True)]
    )


@settings(max_examples=20)
@given(seed=st.integers(0, 10_000), V=st.integers(2, 40), d=st.integers(1, 12))
def test_direct_path_ranks_equal_transformers_rmsnorm_then_head(seed, V, d):
    gen = torch.Generator().manual_seed(seed)
    E = torch.randn(V, d, generator=gen)
    g = torch.rand(d, generator=gen) + 0.5
    ids = torch.randint(0, V, (7,), generator=gen)
    got = direct_path_ranks(E, ids, norm_weight=g, eps=1e-5)
    assert got.dtype == torch.int64
    assert torch.equal(got, _ranks_with_llama_rmsnorm(E, ids, g, 1e-5))


def test_direct_path_ranks_pinned():
    # orthogonal rows: each token's own logit is the only positive one -> rank 0
    assert torch.equal(
        direct_path_ranks(torch.eye(4), torch.arange(4)), torch.zeros(4, dtype=torch.long)
    )
    # a long row wins every direct path: token 0's own logit is beaten by row 1 (same direction, longer)
    E = torch.tensor([[1.0, 0.0], [3.0, 0.1], [0.0, 1.0]])
    assert direct_path_ranks(E, torch.tensor([0, 1, 2])).tolist() == [1, 0, 0]
    # the norm weight can flip it: weight 0 on dimension 0 leaves token 0 nothing
    g = torch.tensor([0.0, 1.0])
    assert direct_path_ranks(E, torch.tensor([0]), norm_weight=g).tolist() == [0]  # all logits 0


def test_direct_path_ranks_bad_input():
    E = torch.randn(5, 3)
    with pytest.raises(TypeError, match="E must be a floating"):
        direct_path_ranks(torch.ones(5, 3, dtype=torch.long), torch.tensor([0]))
    with pytest.raises(ValueError, match=r"E must be a \[V, d\] matrix"):
        direct_path_ranks(torch.randn(5), torch.tensor([0]))
    with pytest.raises(ValueError, match="ids must be 1-D"):
        direct_path_ranks(E, torch.tensor([[0]]))
    with pytest.raises(ValueError, match="vocab_size"):
        direct_path_ranks(E, torch.tensor([5]))
    with pytest.raises(ValueError, match=r"norm_weight must have shape \(3,\)"):
        direct_path_ranks(E, torch.tensor([0]), norm_weight=torch.ones(4))
    with pytest.raises(ValueError, match="eps"):
        direct_path_ranks(E, torch.tensor([0]), eps=0.0)


# --- DECODER_CONFIGS against a second source: copies of the released config.json files ------------
# The first source is the model's own config.json on the Hugging Face Hub (each row's ``source``);
# these are public verbatim copies of those files, read with the search tool, so a typo in the table
# fails here and not only in chapter 4's saved outputs.
_LLM_PROF = "https://github.com/citsjtu2020/LLM-Prof/blob/8434c8d19c396b2f95d92a67845a7c0a0e0dd512/sglang/Model_Config.md"
_THUNDER = (
    "https://github.com/kevinstephano/thunder_model_blocks/blob/main/hf_llama/llama_config.py"
)
_KEYS = ("vocab_size", "hidden_size", "intermediate_size", "num_hidden_layers",
         "num_attention_heads", "num_key_value_heads", "tie_word_embeddings")  # fmt: skip
RELEASED_DECODER_CONFIGS = {
    # name: (the copy's URL, which released file it copies, its values in the order of _KEYS)
    "Llama-3.2-1B": (_THUNDER, "Llama-3.2-1B-Instruct (same body)", (128256, 2048, 8192, 16, 32, 8, True)),
    "Llama-3.2-3B": (_LLM_PROF, "Llama-3.2-3B", (128256, 3072, 8192, 28, 24, 8, True)),
    "Qwen2.5-3B": (_LLM_PROF, "Qwen2.5-3B", (151936, 2048, 11008, 36, 16, 2, True)),
    "Qwen2.5-7B": (_LLM_PROF, "Qwen2.5-7B", (152064, 3584, 18944, 28, 28, 4, False)),
    # Llama 3.1 8B keeps Llama 3 8B's body (only its RoPE scaling and context changed)
    "Llama-3-8B": (_LLM_PROF, "Llama-3.1-8B (same body)", (128256, 4096, 14336, 32, 32, 8, False)),
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(RELEASED_DECODER_CONFIGS))
def test_decoder_configs_equal_the_released_config_json(name: str) -> None:
    from lib.tiny_lm import DECODER_CONFIGS

    _url, _file, values = RELEASED_DECODER_CONFIGS[name]
    row = DECODER_CONFIGS[name]
    assert {k: row[k] for k in _KEYS} == dict(zip(_KEYS, values, strict=True))  # type: ignore[literal-required]
    # Llama has no q/k/v biases, Qwen2.5 has them (the released modeling code; no config field)
    assert row["attention_bias"] is name.startswith("Qwen")


# --- train_lm's on_step, repeat_probability, head_gradient, similarity_correlation -------------


def test_on_step_sees_the_model_after_each_step():
    ids, vocab = tokens_from_sentences(generate_corpus(60, seed=3))
    seen: list[int] = []
    snapshot: dict[int, torch.Tensor] = {}
    model = TinyLM(len(vocab), 8, tie_weights=True, seed=2)

    def record(k: int) -> None:
        seen.append(k)
        if k == 4:
            snapshot[k] = model.embed.weight.detach().clone()

    losses = train_lm(model, ids, steps=9, seed=5, seq_len=8, on_step=record).losses
    assert seen == list(range(1, 10))
    short = TinyLM(len(vocab), 8, tie_weights=True, seed=2)
    short_losses = train_lm(short, ids, steps=4, seed=5, seq_len=8).losses
    # the snapshot at k = 4 is the model trained for exactly 4 steps, and the callback
    # changes nothing in the run
    assert torch.equal(snapshot[4], short.embed.weight.detach())
    assert losses[:4] == short_losses
    plain = TinyLM(len(vocab), 8, tie_weights=True, seed=2)
    assert train_lm(plain, ids, steps=9, seed=5, seq_len=8).losses == losses
    with pytest.raises(TypeError, match="on_step"):
        train_lm(plain, ids, steps=2, seq_len=8, on_step=3)  # type: ignore[arg-type]


@given(V=st.integers(2, 20), d=st.integers(1, 8), seed=st.integers(0, 50), n=st.integers(2, 30))
@settings(max_examples=30, deadline=None)
def test_repeat_probability_equals_a_loop_over_positions(V, d, seed, n):
    model = TinyLM(V, d, tie_weights=bool(seed % 2), seed=seed)
    ids = torch.randint(0, V, (n,), generator=torch.Generator().manual_seed(seed))
    with torch.no_grad():
        by_hand = [model(ids[t : t + 1]).softmax(-1)[0, int(ids[t])].item() for t in range(n - 1)]
    r = repeat_probability(model, ids)
    assert 0.0 <= r <= 1.0
    assert r == pytest.approx(sum(by_hand) / len(by_hand), rel=1e-5)


def test_repeat_probability_pinned_and_sees_the_self_logit():
    model = TinyLM(5, 4, tie_weights=True, n_layers=0, seed=0)
    ids = torch.tensor([0, 1, 2, 3, 4, 0, 2])
    # at initialisation, already above the uniform 1/5: the tied self-logit
    assert repeat_probability(model, ids) == pytest.approx(0.209178, abs=1e-6)
    with torch.no_grad():  # an identity-like table: the tied direct path repeats the input
        model.embed.weight.copy_(10 * torch.eye(5, 4))
    assert repeat_probability(model, torch.tensor([0, 1, 2, 3, 0])) > 0.99
    with pytest.raises(TypeError, match="model"):
        repeat_probability(torch.nn.Linear(2, 2), ids)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="token_ids"):
        repeat_probability(model, torch.tensor([1, 7]))
    with pytest.raises(ValueError, match="token_ids"):
        repeat_probability(model, torch.tensor([1]))


@given(V=st.integers(2, 15), d=st.integers(1, 8), seed=st.integers(0, 50), n=st.integers(1, 12))
@settings(max_examples=30, deadline=None)
def test_head_gradient_equals_autograd_of_an_untied_head(V, d, seed, n):
    model = TinyLM(V, d, tie_weights=False, seed=seed)
    gen = torch.Generator().manual_seed(seed)
    ids = torch.randint(0, V, (n,), generator=gen)
    targets = torch.randint(0, V, (n,), generator=gen)
    hidden = model.hidden(ids).detach()
    logits = model.lm_head(hidden)
    F.cross_entropy(logits, targets).backward()
    torch.testing.assert_close(
        head_gradient(hidden, logits.detach(), targets), model.lm_head.weight.grad
    )


def test_head_gradient_pinned_and_errors():
    hidden = torch.tensor([[1.0, 0.0], [0.0, 2.0]])
    logits = torch.zeros(2, 3)  # uniform: p = 1/3 everywhere
    g = head_gradient(hidden, logits, torch.tensor([0, 1]))
    expected = torch.tensor([[1 / 3 - 1, 2 / 3], [1 / 3, 2 / 3 - 2], [1 / 3, 2 / 3]]) / 2
    torch.testing.assert_close(g, expected)
    with pytest.raises(TypeError, match="hidden"):
        head_gradient(torch.zeros(2, 2, dtype=torch.long), logits, torch.tensor([0, 1]))
    with pytest.raises(ValueError, match="same N"):
        head_gradient(torch.zeros(3, 2), logits, torch.tensor([0, 1]))
    with pytest.raises(ValueError, match="targets"):
        head_gradient(hidden, logits, torch.tensor([0, 3]))
    with pytest.raises(ValueError, match="targets"):
        head_gradient(hidden, logits, torch.tensor([[0, 1]]))


@given(n=st.integers(3, 12), d=st.integers(2, 6), seed=st.integers(0, 100))
@settings(max_examples=30, deadline=None)
def test_similarity_correlation_ignores_rotation_and_row_scale(n, d, seed):
    gen = torch.Generator().manual_seed(seed)
    A = torch.randn(n, d, generator=gen, dtype=torch.float64)
    Q, _ = torch.linalg.qr(torch.randn(d, d, generator=gen, dtype=torch.float64))
    scale = torch.rand(n, 1, generator=gen, dtype=torch.float64) + 0.1
    assert similarity_correlation(A, A) == pytest.approx(1.0, abs=1e-12)
    assert similarity_correlation(A, (A @ Q) * scale) == pytest.approx(1.0, abs=1e-9)
    B = torch.randn(n, d + 1, generator=gen, dtype=torch.float64)
    assert similarity_correlation(A, B) == pytest.approx(similarity_correlation(B, A), abs=1e-12)


def test_similarity_correlation_equals_numpy_corrcoef_and_errors():
    import numpy as np

    gen = torch.Generator().manual_seed(0)
    A, B = torch.randn(6, 3, generator=gen), torch.randn(6, 4, generator=gen)

    def sims(T: torch.Tensor) -> np.ndarray:
        u = F.normalize(T.double(), dim=-1).numpy()
        i, j = np.triu_indices(len(u), k=1)
        return (u @ u.T)[i, j]

    expected = np.corrcoef(sims(A), sims(B))[0, 1]
    assert similarity_correlation(A, B) == pytest.approx(float(expected), abs=1e-12)
    with pytest.raises(ValueError, match="same n"):
        similarity_correlation(A, B[:5])
    with pytest.raises(ValueError, match="zero row"):
        similarity_correlation(torch.cat([A[:5], torch.zeros(1, 3)]), B)
    with pytest.raises(ValueError, match="do not vary"):
        similarity_correlation(torch.ones(4, 2), B[:4])
    with pytest.raises(TypeError, match="A"):
        similarity_correlation(torch.zeros(4, 2, dtype=torch.long), B[:4])
