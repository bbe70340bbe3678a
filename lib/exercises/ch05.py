"""Checkers for chapter 5, "Attention cannot see order"."""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable

import torch

from lib.attention import SelfAttention
from lib.exercises import exercise, require, require_function
from lib.sinusoidal import sinusoidal_pe

CHAPTER = "05_attention_needs_order"


def _prefix_rule(perm: torch.Tensor) -> torch.Tensor:
    """Positions whose causal output cannot change: same token at t, same set {0..t} before it."""
    positions = torch.arange(len(perm))
    return (perm == positions) & (torch.cummax(perm, dim=0).values == positions)


def _shuffle_cases() -> list[torch.Tensor]:
    """Permutations that separate the right rule from the tempting ones."""
    g = torch.Generator().manual_seed(5)
    cases = [
        torch.tensor([2, 0, 1, 3, 5, 4]),  # prefix shuffled, then a fixed point, then a swap
        torch.tensor([0, 2, 1, 3]),  # fixed point before the shuffle: unchanged at 0
        torch.tensor([1, 0, 2, 4, 3, 5, 6]),
        torch.tensor([3, 1, 2, 0, 4]),  # 1 and 2 are fixed points but see token 3
        torch.arange(5),  # nothing moves
        torch.arange(6).flip(0),
    ]
    cases += [torch.randperm(t, generator=g) for t in (3, 5, 8, 8, 10)]
    return cases


@exercise(
    "ch05-unchanged-outputs",
    chapter=CHAPTER,
    wrong_answers=lambda: [
        lambda perm: perm == torch.arange(len(perm)),  # same token, ignores what it sees
        lambda perm: torch.cummax(perm, 0).values == torch.arange(len(perm)),  # set only
        lambda perm: torch.zeros(len(perm), dtype=torch.bool),
        lambda perm: torch.ones(len(perm), dtype=torch.bool),
        lambda perm: (perm == torch.arange(len(perm))).cumprod(0).bool(),  # untouched prefix
        "not a function",
    ],
    right_answer=lambda: _prefix_rule,
)
def check_unchanged_outputs(answer: Callable[[torch.Tensor], torch.Tensor]) -> None:
    """``answer(perm)`` must mark the positions whose causal output a shuffle cannot change.

    Args:
        answer: the reader's function ``unchanged_outputs(perm)``, returning a bool tensor ``[T]``.

    Raises:
        ExerciseFailed: the answer is wrong (the message says what to look at).
    """
    require_function(answer, "unchanged_outputs(perm)")
    for perm in _shuffle_cases():
        got = answer(perm.clone())
        require(
            isinstance(got, torch.Tensor) and got.shape == perm.shape,
            f"unchanged_outputs must return a tensor of shape [{len(perm)}], got "
            f"{list(got.shape) if isinstance(got, torch.Tensor) else type(got).__name__}",
        )
        want = _prefix_rule(perm)
        if torch.equal(got.bool(), want):
            continue
        t = int((got.bool() != want).nonzero()[0])
        if want[t]:
            reason = (
                f"it is unchanged: token {t} is still at position {t} and sees the same set "
                f"{{0..{t}}}, only in another order"
            )
        elif int(perm[t]) != t:
            reason = f"another token (token {int(perm[t])}) now sits at position {t}"
        else:
            reason = (
                f"token {t} stays in place but now sees {sorted(perm[: t + 1].tolist())}, "
                "a different set of tokens"
            )
        require(False, f"for perm = {perm.tolist()}, position {t} is wrong: {reason}")


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
