"""Tests for lib.fasttext: fastText's hash, character n-grams, subword rows, the model, training.

Pinned values come from the FNV-1a reference vectors, a second implementation of the signed-char
hash written with numpy's int8/uint32 arithmetic, the paper's own example ("where"), and hand
computations; never from the function under test.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from lib.corpus import generate_corpus
from lib.fasttext import (
    FastTextSkipGram,
    character_ngrams,
    fnv1a_32,
    subword_rows,
    train_fasttext,
)
from lib.vocab import build_vocab
from lib.word2vec import negative_sampling_loss


def _fnv_numpy(text: str) -> int:
    """The reference's loop, ``h = (h ^ uint32(int8(byte))) * 16777619``, in numpy uint32."""
    h = np.uint32(2166136261)
    with np.errstate(over="ignore"):
        for byte in np.frombuffer(text.encode("utf-8"), dtype=np.int8):
            h = np.uint32((h ^ np.uint32(np.int64(byte) & 0xFFFFFFFF)) * np.uint32(16777619))
    return int(h)


def test_fnv1a_reference_vectors():
    # the published FNV-1a 32-bit test vectors (ASCII, where signed and unsigned bytes agree)
    assert fnv1a_32("") == 0x811C9DC5
    assert fnv1a_32("a") == 0xE40C292C
    assert fnv1a_32("foobar") == 0xBF9CF968


@given(st.text(max_size=12))
def test_fnv1a_matches_the_signed_char_loop(text):
    assert fnv1a_32(text) == _fnv_numpy(text)


def test_fnv1a_differs_from_textbook_for_non_ascii():
    textbook = 2166136261
    for byte in "é".encode():  # unsigned bytes: what the reference does NOT do
        textbook = ((textbook ^ byte) * 16777619) & 0xFFFFFFFF
    assert fnv1a_32("é") != textbook
    with pytest.raises(TypeError, match="text"):
        fnv1a_32(b"abc")  # type: ignore[arg-type]


def test_character_ngrams_paper_example():
    # Bojanowski et al. 2017, section 3.2: "where" with n = 3
    assert character_ngrams("where", 3, 3) == ["<wh", "whe", "her", "ere", "re>"]
    grams = character_ngrams("where")  # n = 3..6
    assert "<where" in grams and "where>" in grams and "<where>" not in grams  # 7 > maxn
    assert character_ngrams("ab", 3, 6) == ["<ab", "<ab>", "ab>"]


@given(word=st.text(alphabet="abcé", min_size=1, max_size=9), minn=st.integers(1, 3))
def test_character_ngram_count(word, minn):
    maxn = minn + 2
    n_chars = len(word) + 2
    expected = sum(max(n_chars - n + 1, 0) for n in range(minn, maxn + 1))
    if minn == 1:
        expected -= 2  # the lone "<" and ">" are skipped
    grams = character_ngrams(word, minn, maxn)
    assert len(grams) == expected
    assert all(minn <= len(g) <= maxn for g in grams)


def test_character_ngram_errors():
    with pytest.raises(ValueError, match="maxn"):
        character_ngrams("word", 4, 3)
    with pytest.raises(ValueError, match="empty"):
        character_ngrams("")


def test_subword_rows_word_then_hashed_ngrams():
    vocab = build_vocab([["cat", "dog", "cat"]])
    rows = subword_rows("cat", vocab, buckets=100)
    assert rows[0] == vocab.id("cat")
    assert rows[1:] == [2 + _fnv_numpy(g) % 100 for g in character_ngrams("cat")]
    oov = subword_rows("cats", vocab, buckets=100)  # out of vocabulary: n-grams only
    assert len(oov) == len(character_ngrams("cats")) and min(oov) >= len(vocab)


def test_model_vector_is_the_mean_of_its_rows_and_loss_is_sgns():
    vocab = build_vocab([["cat", "dog", "cat"]])
    g = torch.Generator().manual_seed(0)
    model = FastTextSkipGram(vocab, 4, buckets=50, generator=g)
    z = model.in_embed.weight.detach()
    assert z.abs().max() <= 1 / 4 and torch.all(model.out_embed.weight == 0)  # reference init
    expected = z[subword_rows("cat", vocab, buckets=50)].mean(0)
    torch.testing.assert_close(model.vectors()[vocab.id("cat")], expected)
    torch.testing.assert_close(model.word_vector("cat"), expected)
    torch.testing.assert_close(
        model.word_vector("cow"), z[subword_rows("cow", vocab, buckets=50)].mean(0)
    )
    with torch.no_grad():
        model.out_embed.weight.normal_(generator=g)
    centre, context, negs = torch.tensor([0]), torch.tensor([1]), torch.tensor([[0]])
    u = model.out_embed.weight.detach()
    want = negative_sampling_loss(expected[None], u[[1]], u[[0]][None])
    torch.testing.assert_close(model(centre, context, negs), want)
    with pytest.raises(ValueError, match="context"):
        model(centre, torch.tensor([2]), negs)


def _oov_cosines(model: FastTextSkipGram, word: str) -> torch.Tensor:
    """Cosine of ``word``'s n-gram vector with every vocabulary word's vector: ``[V]``."""
    oov = model.word_vector(word)
    return torch.nn.functional.cosine_similarity(model.vectors(), oov[None], dim=-1)


def test_training_lowers_the_loss_and_builds_oov_vectors():
    sentences = [s for s in generate_corpus(1500, seed=0) if "talked" not in s]
    model, vocab, history = train_fasttext(sentences, epochs=4, lr=0.05, buckets=5000, seed=0)
    assert history.losses[-1] < history.losses[0] - 1.0
    assert "talked" not in vocab
    # the same model before training (train_fasttext seeds its generator, then builds the model)
    untrained = FastTextSkipGram(
        vocab, 32, buckets=5000, generator=torch.Generator().manual_seed(0)
    )
    never_looked_up = sorted(set(range(len(vocab) + 5000)) - set(model.subwords.flatten().tolist()))
    assert torch.equal(  # rows no word uses keep their initial values: same starting point
        model.in_embed.weight[never_looked_up], untrained.in_embed.weight[never_looked_up]
    )
    # Spelling alone already puts "walked" (10 of the 18 n-grams of "talked") next to it, so the
    # test uses past forms that share with "talked" only the suffix: `ked`, `ked>`, `ed>` for
    # "cooked", `ed>` alone for "played" and "jumped". Only training makes them neighbours.
    before, after = _oov_cosines(untrained, "talked"), _oov_cosines(model, "talked")
    top_before = {vocab.words[i] for i in before.argsort(descending=True)[:10].tolist()}
    top_after = {vocab.words[i] for i in after.argsort(descending=True)[:10].tolist()}
    assert not {"played", "jumped"} & top_before and {"played", "jumped"} <= top_after
    for word in ("cooked", "played", "jumped"):
        # measured: 0.22 -> 0.98, 0.21 -> 0.96, -0.15 -> 0.97
        assert after[vocab.id(word)] > before[vocab.id(word)] + 0.5, word
    _, _, history2 = train_fasttext(sentences, epochs=4, lr=0.05, buckets=5000, seed=0)
    # same seed, same run up to float rounding: with several threads, the embedding backward
    # sums the gradients of repeated n-gram rows in a varying order (last bits only)
    assert history2.losses == pytest.approx(history.losses, rel=1e-6, abs=0)
    with pytest.raises(ValueError, match="buckets"):
        train_fasttext(sentences, buckets=0)
