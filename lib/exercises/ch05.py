"""Checkers for chapter 5, "Attention cannot see order"."""

from __future__ import annotations

from collections.abc import Callable

import torch

from lib.exercises import exercise

CHAPTER = "05_attention_needs_order"

#: The sentence of the "distinct outputs" exercise.
DOG_SENTENCE = "the dog chased the cat and the cat chased the dog"


def _unpermute_cases() -> list[tuple[torch.Tensor, torch.Tensor]]:
    """Outputs ``[B, T, D]`` and permutations that are not their own inverse (so ``perm`` ≠ fix)."""
    g = torch.Generator().manual_seed(5)
    cases = []
    for t in (3, 5, 8):
        out = torch.randn(2, t, 4, generator=g)
        perm = torch.roll(torch.arange(t), 1)  # a cycle: its inverse is a different permutation
        cases.append((out, perm))
        cases.append((out, torch.randperm(t, generator=g)))
    return cases


@exercise(
    "ch05-unpermute",
    chapter=CHAPTER,
    wrong_answers=lambda: [
        lambda out_p, perm: out_p,
        lambda out_p, perm: out_p[:, perm],
        lambda out_p, perm: out_p[:, perm.flip(0)],
        "not a function",
    ],
)
def check_unpermute(answer: Callable[[torch.Tensor, torch.Tensor], torch.Tensor]) -> None:
    """``answer(out_p, perm)`` must undo ``out_p = out[:, perm]`` exactly."""
    assert callable(answer), (
        f"answer must be a function unpermute(out_p, perm), got {type(answer).__name__}"
    )
    for out, perm in _unpermute_cases():
        out_p = out[:, perm]  # what the layer gives for the permuted input  [B, T, D]
        got = answer(out_p.clone(), perm.clone())
        assert isinstance(got, torch.Tensor), f"unpermute must return a tensor, got {type(got)}"
        assert got.shape == out.shape, (
            f"unpermute must return the shape it gets, {list(out.shape)}, got {list(got.shape)}"
        )
        if torch.equal(got, out):
            continue
        if torch.equal(got, out_p):
            raise AssertionError("unpermute returned its input unchanged: the rows must be moved")
        if torch.equal(got, out_p[:, perm]):
            raise AssertionError(
                "that applies perm a second time; to undo a permutation use its inverse, "
                "torch.argsort(perm)"
            )
        raise AssertionError(
            f"for perm = {perm.tolist()} the rows are not back in their original order "
            "(row perm[j] of the original output is row j of out_p)"
        )


@exercise(
    "ch05-distinct-outputs",
    chapter=CHAPTER,
    wrong_answers=lambda: [len(DOG_SENTENCE.split()), 10, 1, "five"],
)
def check_distinct_outputs(answer: int) -> None:
    """The number of different output vectors = the number of different words."""
    assert isinstance(answer, int) and not isinstance(answer, bool), (
        f"answer must be an int (a count), got {type(answer).__name__}"
    )
    words = DOG_SENTENCE.split()
    distinct = len(set(words))
    if answer == len(words):
        raise AssertionError(
            f"{answer} is the number of tokens; but with no position signal two copies of the "
            "same word get the same input, see the same set of keys, and so get the same output"
        )
    assert answer == distinct, (
        f"{answer} is not it: count the rows of the output that differ (e.g. torch.unique on "
        "rounded rows), or think about which tokens have identical inputs"
    )


#: The options of the "what breaks the symmetry" exercise, and whether each one does.
SYMMETRY_OPTIONS = {
    "a": ("adding sinusoidal position vectors to the token embeddings", True),
    "b": ("a LayerNorm applied to every token's vector", False),
    "c": ("a causal mask (query i sees keys j <= i only)", True),
    "d": ("more heads (say 8 instead of 2)", False),
    "e": ("an ALiBi bias -m·|i - j| added to the attention scores", True),
    "f": ("a per-token MLP after attention, with a residual connection", False),
}


@exercise(
    "ch05-symmetry-breakers",
    chapter=CHAPTER,
    wrong_answers=lambda: [
        {"a"},
        {"a", "b", "c", "d", "e", "f"},
        {"a", "c", "e", "f"},
        set(),
        "a, c, e",
        {"a", "c", "z"},
    ],
)
def check_symmetry_breakers(answer: set[str]) -> None:
    """The set of option letters that make the output depend on word order."""
    assert isinstance(answer, set | frozenset | list | tuple), (
        f"answer must be a set of letters such as {{'a', 'b'}}, got {type(answer).__name__}"
    )
    letters = {str(x).strip().lower() for x in answer}
    unknown = letters - set(SYMMETRY_OPTIONS)
    assert not unknown, f"unknown options {sorted(unknown)}; choose from {sorted(SYMMETRY_OPTIONS)}"
    right = {key for key, (_, breaks) in SYMMETRY_OPTIONS.items() if breaks}
    extra, missing = sorted(letters - right), sorted(right - letters)
    problems = [
        f"({key}) {SYMMETRY_OPTIONS[key][0]} acts on every token alike or on the set of keys, "
        "so it keeps the symmetry"
        for key in extra
    ] + [
        f"({key}) {SYMMETRY_OPTIONS[key][0]} does tie the computation to positions: try it"
        for key in missing
    ]
    assert not problems, "; ".join(problems)
