"""Tests for lib.similarity: neighbour class shares and nearest-neighbour accuracy, by hand."""

from __future__ import annotations

import pytest
import torch

from lib.similarity import nearest_neighbour_accuracy, neighbour_class_share

WORDS = ["a1", "a2", "b1", "b2", "x"]
VECTORS = torch.tensor([[1.0, 0.0], [0.9, 0.1], [0.0, 1.0], [0.1, 0.9], [-1.0, -1.0]])


def test_class_share_by_hand() -> None:
    classes = {"a": ["a1", "a2"], "b": ["b1", "b2"]}
    assert neighbour_class_share(VECTORS, WORDS, classes, k=1) == 1.0
    # k = 2: each word's second neighbour is from the other class
    assert neighbour_class_share(VECTORS, WORDS, classes, k=2) == 0.5
    with pytest.raises(ValueError, match="not in words"):
        neighbour_class_share(VECTORS, WORDS, {"a": ["zz"]}, k=1)
    with pytest.raises(ValueError, match="two classes"):
        neighbour_class_share(VECTORS, WORDS, {"a": ["a1"], "b": ["a1"]}, k=1)
    with pytest.raises(ValueError, match="k"):
        neighbour_class_share(VECTORS, WORDS, classes, k=5)


def test_nearest_neighbour_accuracy_by_hand() -> None:
    labels = ["a", "a", "b", "b", "b"]
    assert nearest_neighbour_accuracy(VECTORS[:4], labels[:4], centre=False) == 1.0
    # x's nearest neighbour (by cosine) is none of the b's pointing up-right: it is wrong
    assert nearest_neighbour_accuracy(VECTORS, labels, centre=False) == pytest.approx(4 / 5)
    same = torch.ones(4, 3)
    assert nearest_neighbour_accuracy(same, ["a", "a", "b", "b"], centre=False) == 0.0  # all ties
    with pytest.raises(ValueError, match="distinct"):
        nearest_neighbour_accuracy(VECTORS, ["a"] * 5)
