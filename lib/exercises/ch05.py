"""Checkers for chapter 5, "Attention cannot see order"."""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable

import torch

from lib.attention import SelfAttention
from lib.exercises import ExerciseFailed, exercise, require, require_function
from lib.sinusoidal import sinusoidal_pe

CHAPTER = "05_attention_needs_order"


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
    right_answer=lambda: lambda out_p, perm: out_p[:, torch.argsort(perm)],
)
def check_unpermute(answer: Callable[[torch.Tensor, torch.Tensor], torch.Tensor]) -> None:
    """``answer(out_p, perm)`` must undo ``out_p = out[:, perm]`` exactly.

    Args:
        answer: the reader's function ``unpermute(out_p, perm)``, returning the shape it gets.

    Raises:
        ExerciseFailed: the answer is wrong (the message says what to look at).
    """
    require_function(answer, "unpermute(out_p, perm)")
    for out, perm in _unpermute_cases():
        out_p = out[:, perm]  # what the layer gives for the permuted input  [B, T, D]
        got = answer(out_p.clone(), perm.clone())
        require(isinstance(got, torch.Tensor), f"unpermute must return a tensor, got {type(got)}")
        require(
            got.shape == out.shape,
            f"unpermute must return the shape it gets, {list(out.shape)}, got {list(got.shape)}",
        )
        if torch.equal(got, out):
            continue
        if torch.equal(got, out_p):
            raise ExerciseFailed("unpermute returned its input unchanged: the rows must be moved")
        if torch.equal(got, out_p[:, perm]):
            raise ExerciseFailed(
                "that applies perm a second time; to undo a permutation use its inverse, "
                "torch.argsort(perm)"
            )
        raise ExerciseFailed(
            f"for perm = {perm.tolist()} the rows are not back in their original order "
            "(row perm[j] of the original output is row j of out_p)"
        )


def _uniform_causal_readout(writers: int, t_max: int) -> torch.Tensor:
    """What each position reads when tokens ``0 .. writers-1`` write a 1: uniform causal average."""
    values = torch.zeros(t_max, dtype=torch.float64)
    values[:writers] = 1.0
    return torch.cumsum(values, 0) / torch.arange(1, t_max + 1, dtype=torch.float64)


@exercise(
    "ch05-two-writers",
    chapter=CHAPTER,
    wrong_answers=lambda: [
        lambda t: 2 / (t + 1),
        lambda t: 1 / (t + 1),
        lambda t: 2 / max(t, 1),
        lambda t: 2.0,
        0.5,
    ],
    right_answer=lambda: lambda t: min(t + 1, 2) / (t + 1),
)
def check_two_writers(answer: Callable[[int], float]) -> None:
    """``answer(t)``: the uniform causal average at position ``t`` when tokens 0 and 1 write a 1.

    Args:
        answer: the reader's function ``readout(t)``, returning a float for every position
            ``t >= 0``.

    Raises:
        ExerciseFailed: the answer is wrong (the message says what to look at).
    """
    require_function(answer, "readout(t)")
    want = _uniform_causal_readout(2, 40)
    for t in range(40):
        got = answer(t)
        if isinstance(got, torch.Tensor) and got.numel() == 1:
            got = got.item()
        require(
            isinstance(got, numbers.Real) and not isinstance(got, bool),
            f"readout({t}) must return a float, got {type(got).__name__}",
        )
        if math.isclose(float(got), float(want[t]), rel_tol=1e-9, abs_tol=1e-9):
            continue
        require(
            t != 0,
            f"readout(0) = {float(got):g}: the first token sees only itself, and it writes a 1, "
            "so its average is 1 (token 1 is not visible to it)",
        )
        require(
            False,
            f"readout({t}) = {float(got):g}, but position {t} averages {t + 1} values of which 2 "
            "are 1",
        )


def _equivariance_cases() -> list[tuple[Callable[[torch.Tensor], torch.Tensor], bool]]:
    """Functions ``[B, T, D] -> [B, T, D]`` and whether each is permutation equivariant."""
    d = 8
    with torch.random.fork_rng():  # fixed weights, and the reader's random stream is untouched
        torch.manual_seed(0)
        layer = SelfAttention(d, 2).eval()
        norm = torch.nn.LayerNorm(d)
        mlp = torch.nn.Sequential(torch.nn.Linear(d, 16), torch.nn.GELU(), torch.nn.Linear(16, d))
    pe = sinusoidal_pe(6, d)
    with torch.no_grad():
        return [
            (lambda x: layer(x).detach(), True),
            (lambda x: layer(norm(x)).detach(), True),
            (lambda x: (layer(x) + mlp(layer(x))).detach(), True),
            (lambda x: x.mean(dim=1, keepdim=True).expand_as(x), True),
            (lambda x: layer(x, causal=True).detach(), False),
            (lambda x: layer(x + pe).detach(), False),
            (lambda x: torch.cumsum(x, dim=1), False),
            (lambda x: x.flip(1), False),
        ]


def _perms() -> list[torch.Tensor]:
    return [torch.tensor([1, 2, 3, 4, 5, 0]), torch.tensor([2, 0, 1, 5, 3, 4])]


@exercise(
    "ch05-is-equivariant",
    chapter=CHAPTER,
    wrong_answers=lambda: [
        lambda f, x, perm: True,
        lambda f, x, perm: False,
        lambda f, x, perm: torch.allclose(f(x[:, perm]), f(x), atol=1e-5),
        lambda f, x, perm: torch.allclose(f(x[:, perm]), f(x)[:, torch.argsort(perm)], atol=1e-5),
        lambda f, x, perm: torch.allclose(f(x[:, perm]).mean(dim=1), f(x).mean(dim=1), atol=1e-5),
        "equivariant",
    ],
    right_answer=lambda: (
        lambda f, x, perm: torch.allclose(f(x[:, perm]), f(x)[:, perm], rtol=0, atol=1e-5)
    ),
)
def check_is_equivariant(answer: Callable[..., bool]) -> None:
    """``answer(f, x, perm)`` must say whether ``f(x[:, perm]) == f(x)[:, perm]``.

    Args:
        answer: the reader's function ``is_equivariant(f, x, perm)``, returning a bool.

    Raises:
        ExerciseFailed: the answer is wrong (the message says what to look at).
    """
    require_function(answer, "is_equivariant(f, x, perm)")
    x = torch.randn(2, 6, 8, generator=torch.Generator().manual_seed(4))
    for index, (f, equivariant) in enumerate(_equivariance_cases()):
        for perm in _perms():
            got = answer(f, x.clone(), perm.clone())
            if isinstance(got, torch.Tensor) and got.numel() == 1:
                got = bool(got.item())
            require(
                isinstance(got, bool),
                f"is_equivariant must return True or False, got {type(got).__name__}",
            )
            if got == equivariant:
                continue
            kind = "keeps" if equivariant else "breaks"
            require(
                False,
                f"test function {index} {kind} the symmetry, but you returned {got} for perm "
                f"{perm.tolist()}: compare f(x[:, perm]) with f(x)[:, perm] (shuffle the input, "
                "or shuffle the output: equivariance means both give the same)",
            )
