"""The lab's sizes and settings (:class:`LabConfig`), and its one-thread arithmetic (:func:`single_thread`)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass

import torch

from lib._checks import (
    check_int,
    check_positive_float,
    check_positive_int,
)
from lib.lab.schemes import check_heads


@dataclass(frozen=True)
class LabConfig:
    """Sizes and settings of the lab; the defaults are the chapter's experiment.

    Attributes:
        vocab_size: token ids, at least ``max_len // 2`` (a block holds distinct tokens).
        d_model: model width ``D``.
        n_heads: heads per layer (``d_head = d_model / n_heads``).
        n_layers: attention layers.
        train_len: the training length ``L``, at least 4.
        eval_multiples: evaluate at ``L · k`` for each ``k`` of this tuple.
        steps: optimiser steps (one batch each).
        warmup_steps: steps of linear learning-rate warm-up, then constant.
        batch_size: sequences per training batch.
        lr: Adam's learning rate (no weight decay).
        eval_sequences: sequences per evaluation length.
        seed: seeds the model initialisation (``seed``), the training data (``seed + 1``) and the
            evaluation data (``seed + 2``).
        base: frequency base of the sinusoidal and rotary schemes.

    Raises:
        TypeError: a field has the wrong type (e.g. ``eval_multiples`` not a tuple).
        ValueError: a size < 1, ``train_len < 4``, ``d_model`` not divisible by ``n_heads``,
            ``vocab_size < max_len // 2``, ``lr <= 0``.
    """

    vocab_size: int = 64
    d_model: int = 64
    n_heads: int = 4
    n_layers: int = 2
    train_len: int = 32
    eval_multiples: tuple[int, ...] = (1, 2, 4)
    steps: int = 300
    batch_size: int = 32
    lr: float = 1e-2
    warmup_steps: int = 50
    eval_sequences: int = 256
    seed: int = 0
    base: float = 10000.0

    def __post_init__(self) -> None:
        for name in (
            "vocab_size",
            "d_model",
            "n_heads",
            "n_layers",
            "train_len",
            "steps",
            "warmup_steps",
            "batch_size",
            "eval_sequences",
        ):
            check_positive_int(name, getattr(self, name))
        check_int("train_len", self.train_len, minimum=4)
        check_int("seed", self.seed, minimum=0)
        check_positive_float("lr", self.lr)
        check_positive_float("base", self.base)
        if not isinstance(self.eval_multiples, tuple) or not self.eval_multiples:
            raise TypeError(
                f"eval_multiples must be a non-empty tuple, got {self.eval_multiples!r}"
            )
        for k in self.eval_multiples:
            check_positive_int("eval_multiples entries", k)
        check_heads(self.d_model, self.n_heads)
        needed = self.max_len // 2
        if self.vocab_size < needed:
            raise ValueError(
                f"vocab_size must be >= max_len // 2 = {needed} (blocks of distinct tokens), "
                f"got {self.vocab_size}"
            )

    @property
    def max_len(self) -> int:
        """The longest evaluation length, ``train_len · max(eval_multiples)``."""
        return self.train_len * max(self.eval_multiples)

    @property
    def eval_lens(self) -> tuple[int, ...]:
        """The evaluation lengths ``train_len · k``."""
        return tuple(self.train_len * k for k in self.eval_multiples)


@contextlib.contextmanager
def single_thread() -> Iterator[None]:
    """Run the body with ``torch.set_num_threads(1)``, then restore the previous thread count.

    Why: a multi-threaded matrix product splits its sums across threads, so its last bits depend
    on the thread count. One step differs by ~1e-7; hundreds of optimiser steps later the trained
    weights differ visibly. With one thread the arithmetic is the same on every run of the same
    machine whatever ``OMP_NUM_THREADS`` is (the tiny model loses little speed).

    Yields:
        None; the body of the ``with`` block runs on one thread.
    """
    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(previous)
