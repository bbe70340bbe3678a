"""Tests for lib.tokenization: GPT-2's byte map, BPE merge replay, Land & Bartolo's indicator."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from tokenizers import Tokenizer, models, pre_tokenizers
from transformers.convert_slow_tokenizer import bytes_to_unicode as hf_bytes_to_unicode

from lib.smollm import read_gguf, smollm_gguf_path, smollm_tokenizer
from lib.tokenization import (
    MergeStep,
    bpe_merge_steps,
    byte_level_spelling,
    bytes_to_unicode,
    gguf_tensor,
    missing_byte_symbols,
    unused_token_distance,
)

# --- bytes_to_unicode and byte_level_spelling ---------------------------------------------------


def test_bytes_to_unicode_equals_transformers_gpt2_map():
    assert bytes_to_unicode() == hf_bytes_to_unicode()


def test_bytes_to_unicode_pinned_symbols():
    table = bytes_to_unicode()
    assert table[ord(" ")] == "Ġ" == "\u0120"
    assert table[ord("\n")] == "Ċ" == "\u010a"
    assert table[0] == "\u0100"
    assert table[ord("a")] == "a"
    assert table[0xE9] == "é"  # printable Latin-1 stands for itself
    assert len(set(table.values())) == 256  # one character per byte, all different


def test_bytes_to_unicode_returns_a_fresh_dict():
    table = bytes_to_unicode()
    table[32] = "x"
    assert bytes_to_unicode()[32] == "Ġ"


@given(st.text(max_size=40))
def test_byte_level_spelling_equals_tokenizers_byte_level(text):
    split = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    expected = "".join(piece for piece, _ in split.pre_tokenize_str(text))
    assert byte_level_spelling(text) == expected


@given(st.text(max_size=40))
def test_byte_level_spelling_has_one_symbol_per_byte_and_inverts(text):
    spelled = byte_level_spelling(text)
    inverse = {c: b for b, c in bytes_to_unicode().items()}
    assert len(spelled) == len(text.encode("utf-8"))
    assert bytes(inverse[c] for c in spelled).decode("utf-8") == text


def test_byte_level_spelling_pinned():
    assert byte_level_spelling("Hi there") == "HiĠthere"
    assert byte_level_spelling("🦜") == "ðŁ¦ľ"  # F0 9F A6 9C


def test_byte_level_spelling_rejects_bytes():
    with pytest.raises(TypeError, match="text must be a str"):
        byte_level_spelling(b"abc")  # type: ignore[arg-type]


# --- bpe_merge_steps ---------------------------------------------------------------------------


def test_bpe_merge_steps_pinned():
    merges = [("l", "o"), ("lo", "w"), ("e", "r"), ("low", "er")]
    steps = bpe_merge_steps("lower", merges)
    assert steps == [
        MergeStep(pair=("l", "o"), rank=0, symbols=("lo", "w", "e", "r")),
        MergeStep(pair=("lo", "w"), rank=1, symbols=("low", "e", "r")),
        MergeStep(pair=("e", "r"), rank=2, symbols=("low", "er")),
        MergeStep(pair=("low", "er"), rank=3, symbols=("lower",)),
    ]


def test_bpe_merge_steps_lowest_rank_first_not_leftmost():
    # "b c" has the better rank, so it merges before the leftmost pair "a b"
    steps = bpe_merge_steps("abc", [("b", "c"), ("a", "b")])
    assert [s.pair for s in steps] == [("b", "c")]
    assert steps[-1].symbols == ("a", "bc")


def test_bpe_merge_steps_merges_every_occurrence_and_accepts_a_rank_dict():
    steps = bpe_merge_steps("abab", {("a", "b"): 0})
    assert steps == [MergeStep(pair=("a", "b"), rank=0, symbols=("ab", "ab"))]
    assert bpe_merge_steps("xyz", [("a", "b")]) == []


@settings(max_examples=30)
@given(
    word=st.text(alphabet="abcd", min_size=1, max_size=12),
    merge_order=st.permutations(range(16)),
    n_merges=st.integers(0, 16),
)
def test_bpe_merge_steps_tokens_equal_tokenizers_bpe(word, merge_order, n_merges):
    """A random merges list over a 4-letter alphabet: our last step = the tokenizers library's."""
    letters = "abcd"
    pairs = [(letters[i // 4], letters[i % 4]) for i in merge_order[:n_merges]]
    merges, vocab = [], {c: i for i, c in enumerate(letters)}
    for a, b in pairs:  # first-level merges plus one merge of merged symbols per pair
        merges.append((a, b))
        vocab.setdefault(a + b, len(vocab))
    if len(pairs) >= 2:
        second = (pairs[0][0] + pairs[0][1], pairs[1][0] + pairs[1][1])
        merges.append(second)
        vocab.setdefault(second[0] + second[1], len(vocab))
    backend = Tokenizer(models.BPE(vocab=vocab, merges=merges))
    expected = backend.encode(word).tokens
    steps = bpe_merge_steps(word, merges)
    got = list(steps[-1].symbols) if steps else list(word)
    assert got == expected
    assert [s.rank for s in steps] == sorted(s.rank for s in steps)  # ranks applied in order


@pytest.mark.parametrize("word", ["Ġembeddings", "Ġtokenization", "Ġunbelievably", "Hello"])
def test_bpe_merge_steps_reproduce_smollm2_tokens(word):
    contents = read_gguf(smollm_gguf_path())
    merges = [tuple(m.split(" ", 1)) for m in contents.metadata["tokenizer.ggml.merges"]]
    tokenizer = smollm_tokenizer(contents)
    text = word.replace("Ġ", " ")
    steps = bpe_merge_steps(word, merges)
    assert list(steps[-1].symbols) == tokenizer.tokenize(text)


def test_bpe_merge_steps_bad_input():
    with pytest.raises(TypeError, match="piece must be a str"):
        bpe_merge_steps(3, [("a", "b")])  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="piece must be a non-empty"):
        bpe_merge_steps("", [("a", "b")])
    with pytest.raises(TypeError, match="merges must be a sequence"):
        bpe_merge_steps("ab", "ab")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"merges\[1\] must be a \(left, right\) pair"):
        bpe_merge_steps("ab", [("a", "b"), ("abc",)])  # type: ignore[list-item]


# --- missing_byte_symbols -----------------------------------------------------------------------


def test_missing_byte_symbols_pinned():
    full = set(bytes_to_unicode().values())
    assert missing_byte_symbols(full) == []
    partial = {t: i for i, t in enumerate(sorted(full - {"Ġ", "\u0100"}))}
    assert missing_byte_symbols(partial) == [0, 32]
    assert missing_byte_symbols(["ab", "Ġ"]) == sorted(set(range(256)) - {32})


def test_missing_byte_symbols_bad_input():
    with pytest.raises(TypeError, match="vocab must be a mapping"):
        missing_byte_symbols("abc")


# --- unused_token_distance ---------------------------------------------------------------------


def _magikarp_reference(mat: np.ndarray, unused: list[int], remove_pc: bool) -> np.ndarray:
    """Land & Bartolo's embedding_distance_metrics, float64 numpy, PC by SVD (sklearn's PCA)."""
    if remove_pc:
        centred = mat - mat.mean(axis=0)
        first_pc = np.linalg.svd(centred, full_matrices=False)[2][0]
        mat = mat - np.outer(mat.dot(first_pc), first_pc)
    v = mat[unused].mean(axis=0)
    return 1 - mat.dot(v) / (np.linalg.norm(mat, axis=1) * np.linalg.norm(v)).clip(min=1e-6)


@settings(max_examples=20)
@given(seed=st.integers(0, 10_000), remove_pc=st.booleans(), n_ref=st.integers(1, 6))
def test_unused_token_distance_equals_the_magikarp_formula(seed, remove_pc, n_ref):
    gen = torch.Generator().manual_seed(seed)
    E = torch.randn(60, 8, generator=gen) + torch.randn(8, generator=gen) * 3  # a shared offset
    ref = torch.randperm(60, generator=gen)[:n_ref]
    got = unused_token_distance(E, ref, remove_first_pc=remove_pc)
    expected = _magikarp_reference(E.double().numpy(), ref.tolist(), remove_pc)
    assert got.dtype == torch.float32 and got.shape == (60,)
    np.testing.assert_allclose(got.numpy(), expected, atol=2e-6, rtol=0)


def test_unused_token_distance_scores_reference_like_rows_low():
    gen = torch.Generator().manual_seed(0)
    E = torch.randn(200, 16, generator=gen)
    E[:10] = torch.tensor([1.0] * 16) + 0.01 * torch.randn(10, 16, generator=gen)
    score = unused_token_distance(E, [0, 1, 2])  # three of the ten look-alike rows
    assert set(score.argsort()[:10].tolist()) == set(range(10))
    # without the PC step (a PC depends on every row) a row's score ignores its length
    plain = unused_token_distance(E, [0, 1, 2], remove_first_pc=False)
    E2 = E.clone()
    E2[50] *= 7.0
    torch.testing.assert_close(
        unused_token_distance(E2, [0, 1, 2], remove_first_pc=False)[50], plain[50]
    )


def test_unused_token_distance_bad_input():
    E = torch.randn(20, 4)
    with pytest.raises(TypeError, match="E must be a floating"):
        unused_token_distance(torch.ones(20, 4, dtype=torch.long), [0])
    with pytest.raises(ValueError, match=r"E must be a \[V, d\] matrix with V > d"):
        unused_token_distance(torch.randn(4, 20), [0])
    with pytest.raises(ValueError, match="reference_ids must be a non-empty"):
        unused_token_distance(E, [])
    with pytest.raises(ValueError, match="reference_ids: index 20 is past the table"):
        unused_token_distance(E, [20])
    with pytest.raises(TypeError, match="reference_ids must be an integer"):
        unused_token_distance(E, torch.tensor([0.5]))


# --- gguf_tensor -------------------------------------------------------------------------------


def test_gguf_tensor_equals_the_gguf_package_reader():
    """SmolLM2's embedding table (Q8_0) and final norm (F32), against gguf's own dequantize."""
    from gguf import GGUFReader
    from gguf.quants import dequantize as gguf_dequantize

    contents = read_gguf(smollm_gguf_path())
    reader = GGUFReader(contents.path)
    by_name = {t.name: t for t in reader.tensors}
    for name in ("token_embd.weight", "output_norm.weight", "blk.0.attn_q.weight"):
        ours = gguf_tensor(contents, name)
        ref = by_name[name]
        expected = gguf_dequantize(ref.data, ref.tensor_type).reshape(ours.shape)
        assert ours.dtype == torch.float32
        assert torch.equal(ours, torch.from_numpy(np.ascontiguousarray(expected)).float())
    assert gguf_tensor(contents, "token_embd.weight").shape == (49152, 576)


def test_gguf_tensor_bad_input():
    contents = read_gguf(smollm_gguf_path())
    with pytest.raises(KeyError, match="name must be a tensor of the file"):
        gguf_tensor(contents, "output.weight")  # tied: SmolLM2 stores no head
    with pytest.raises(TypeError, match="contents must be a GGUFContents"):
        gguf_tensor(str(contents.path), "token_embd.weight")  # type: ignore[arg-type]


def test_bpe_merge_steps_a_repeated_merge_keeps_its_first_rank():
    # GPT-2's encoder builds ranks with dict(zip(merges, range(...))): a repeat would take the
    # later rank there; a merges list has no repeats, and ours keeps the first line's rank
    steps = bpe_merge_steps("abc", [("b", "c"), ("a", "b"), ("b", "c")])
    assert steps[0] == MergeStep(pair=("b", "c"), rank=0, symbols=("a", "bc"))
