"""Tests for lib.corpus: determinism, the advertised structure, and errors."""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lib.corpus import CORPUS_STRUCTURE, NATIONS, PEOPLE, VERBS, generate_corpus


def test_deterministic_and_seed_dependent():
    assert generate_corpus(200, seed=3) == generate_corpus(200, seed=3)
    assert generate_corpus(200, seed=3) != generate_corpus(200, seed=4)


@given(n=st.integers(1, 300), seed=st.integers(0, 2**31))
def test_shape_and_tokens(n, seed):
    corpus = generate_corpus(n, seed)
    assert len(corpus) == n
    for sentence in corpus:
        assert sentence and all(
            isinstance(w, str) and w == w.lower() and w.isalpha() for w in sentence
        )


def test_prefix_property():
    # Sentence i depends only on the draws before it: a longer corpus extends a shorter one.
    assert generate_corpus(500, 1)[:100] == generate_corpus(100, 1)


def test_every_word_of_interest_occurs_often():
    counts = Counter(w for s in generate_corpus(5000, 0) for w in s)
    words = [*PEOPLE, "bank", "shore", "vault"]
    words += [w for country, city, _, _ in NATIONS.values() for w in (country, city)]
    words += [w for verb, (past, _) in VERBS.items() for w in (verb, past)]
    for word in words:
        assert counts[word] >= 30, word


def test_people_templates_carry_only_their_attributes():
    # A male word never shares a sentence with a female pronoun, a royal word never with a
    # common-rank context, and so on: the structure the analogies rely on.
    female = {"she", "her", "herself"}
    male = {"he", "his", "himself"}
    for sentence in generate_corpus(3000, 0):
        words = set(sentence)
        for word, (gender, _, _) in PEOPLE.items():
            if word in words:
                assert not words & (female if gender == "male" else male), sentence


def test_bank_occurs_in_both_senses():
    river = money = 0
    for sentence in generate_corpus(3000, 0):
        if "bank" in sentence:
            river += bool({"river", "fish", "water", "muddy"} & set(sentence))
            money += bool({"money", "loan", "account", "cash"} & set(sentence))
    assert river > 20 and money > 20


def test_country_capital_relation_is_in_the_corpus():
    sentences = {" ".join(s) for s in generate_corpus(3000, 0)}
    assert "rome is the capital of italy" in sentences


def test_structure_description():
    assert set(CORPUS_STRUCTURE) == {"royalty/gender", "country/capital", "verb tense", "polysemy"}
    assert CORPUS_STRUCTURE["country/capital"]["words"]["italy"] == "rome"
    assert CORPUS_STRUCTURE["verb tense"]["words"]["walk"] == "walked"
    for entry in CORPUS_STRUCTURE.values():
        assert {"words", "template families", "analogy"} <= set(entry)


def test_errors():
    with pytest.raises(ValueError, match="n_sentences"):
        generate_corpus(0)
    with pytest.raises(TypeError, match="n_sentences"):
        generate_corpus(10.0)
    with pytest.raises(ValueError, match="seed"):
        generate_corpus(10, seed=-1)
