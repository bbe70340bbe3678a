"""Training the lab's models: one thread, one batch per step, Adam with a warm-up."""

from __future__ import annotations

import time
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from lib._checks import (
    check_int,
    check_positive_float,
    check_positive_int,
)
from lib.lab.config import LabConfig, single_thread
from lib.lab.models import DecoderEnsemble, TinyDecoder, build_decoder
from lib.lab.tasks import IGNORE_INDEX, induction_batch


@dataclass
class TrainResult:
    """A trained model, its per-step training loss and the wall time the training took.

    Attributes:
        model: the trained :class:`TinyDecoder`.
        losses: the training loss of each optimiser step.
        seconds: wall time of the training.
    """

    model: TinyDecoder
    losses: list[float]
    seconds: float


def train_decoder(scheme: str, config: LabConfig = LabConfig()) -> TrainResult:  # noqa: B008 (a frozen dataclass)
    """Train a :class:`TinyDecoder` with ``scheme`` on the induction task at ``config.train_len``.

    Minimises the cross-entropy of the predictable next tokens (targets :data:`IGNORE_INDEX`
    skipped) with Adam at a constant learning rate, ``config.steps`` batches of
    :func:`induction_batch` from a generator seeded with ``config.seed + 1`` (the same batches for
    every scheme). Runs in :func:`single_thread` so that the result does not depend on the
    machine's thread count.

    Args:
        scheme: a key of :data:`POSITION_SCHEMES`.
        config: a :class:`LabConfig`.

    Returns:
        A :class:`TrainResult` (model in eval mode, float losses per step, wall seconds).

    Raises:
        TypeError: ``config`` is not a :class:`LabConfig`.
        ValueError: ``scheme`` is unknown.
    """
    model = build_decoder(scheme, config)
    data = torch.Generator().manual_seed(config.seed + 1)
    optimiser = torch.optim.Adam(model.parameters(), lr=config.lr)
    # Linear warm-up, then constant: Adam's first steps are large and noisy at a high rate.
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimiser, lambda step: min(1.0, (step + 1) / config.warmup_steps)
    )
    losses: list[float] = []
    start = time.perf_counter()
    with single_thread():
        model.train()
        for _ in range(config.steps):
            batch = induction_batch(
                config.batch_size, config.train_len, config.vocab_size, generator=data
            )
            logits = model(batch.input_ids)  # [B, T, V]
            loss = F.cross_entropy(
                logits.flatten(0, 1),  # [B·T, V]
                batch.targets.flatten(),  # [B·T]
                ignore_index=IGNORE_INDEX,
            )
            optimiser.zero_grad(set_to_none=True)
            loss.backward()
            optimiser.step()
            schedule.step()
            losses.append(loss.item())
    model.eval()
    return TrainResult(model=model, losses=losses, seconds=time.perf_counter() - start)


@dataclass
class EnsembleTrainResult:
    """A trained :class:`DecoderEnsemble`, its loss per step and model ``[steps, S]``, seconds.

    Attributes:
        ensemble: the trained :class:`DecoderEnsemble`.
        losses: ``[steps, S]``, the training loss of each model at each step.
        seconds: wall time of the training.
    """

    ensemble: DecoderEnsemble
    losses: torch.Tensor
    seconds: float


def train_ensemble(
    ensemble: DecoderEnsemble,
    *,
    steps: int | None = None,
    seq_len: int | None = None,
    lr: float | None = None,
    batch_size: int | None = None,
    warmup_steps: int | None = None,
    data_seed: int = 10_000,
) -> EnsembleTrainResult:
    """Train every model of ``ensemble`` (in place) on the induction task; one batch per step.

    Model ``s`` sees its own batches, from a generator seeded ``data_seed + seeds[s]``, of
    ``batch_size`` sequences of length ``seq_len`` with the default period range
    ``ceil(T/4) .. floor(T/2)``. The loss is the sum over models of each model's mean
    cross-entropy, so each model gets exactly its own gradient; Adam (no weight decay) with
    ``warmup_steps`` of linear warm-up, then the constant ``lr``. Runs in :func:`single_thread`.
    Pass ``steps``/``seq_len``/``lr`` to fine-tune an already trained ensemble (e.g. position
    interpolation at ``2L``).

    Equation:
        loss = Σ_s mean_{scored (b, t)} CE(logits_s[b, t], targets_s[b, t])

    Args:
        ensemble: a :class:`DecoderEnsemble`, trained in place.
        steps: optimiser steps, an int >= 1 (default ``config.steps``).
        seq_len: training length, an int >= 4 (default ``config.train_len``).
        lr: Adam's learning rate, > 0 (default ``config.lr``).
        batch_size: sequences per model and step, an int >= 1 (default ``config.batch_size``).
        warmup_steps: steps of linear warm-up, an int >= 1 (default ``config.warmup_steps``).
        data_seed: base seed of the training data, an int >= 0.

    Returns:
        An :class:`EnsembleTrainResult`; ``losses`` is ``[steps, S]`` float32.

    Raises:
        TypeError: ``ensemble`` is not a :class:`DecoderEnsemble`.
        ValueError: ``steps < 1``, ``seq_len < 4``, ``lr <= 0`` or a negative ``data_seed``.

    Shapes:
        each step's input_ids, targets: [S, B, T]; losses: [steps, S]
    """
    if not isinstance(ensemble, DecoderEnsemble):
        raise TypeError(f"ensemble must be a DecoderEnsemble, got {type(ensemble).__name__}")
    config = ensemble.config
    steps = config.steps if steps is None else check_positive_int("steps", steps)
    seq_len = config.train_len if seq_len is None else check_int("seq_len", seq_len, minimum=4)
    lr = config.lr if lr is None else check_positive_float("lr", lr)
    batch_size = (
        config.batch_size if batch_size is None else check_positive_int("batch_size", batch_size)
    )
    warmup = (
        config.warmup_steps
        if warmup_steps is None
        else check_positive_int("warmup_steps", warmup_steps)
    )
    data_seed = check_int("data_seed", data_seed, minimum=0)
    generators = [torch.Generator().manual_seed(data_seed + s) for s in ensemble.seeds]
    params = ensemble.requires_grad_(True).parameters()
    optimiser = torch.optim.Adam(params, lr=lr)
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimiser, lambda step: min(1.0, (step + 1) / warmup)
    )
    losses = torch.empty(steps, ensemble.n_models)
    start = time.perf_counter()
    with single_thread():
        for step in range(steps):
            batches = [
                induction_batch(batch_size, seq_len, config.vocab_size, generator=g)
                for g in generators
            ]
            input_ids = torch.stack([b.input_ids for b in batches])  # [S, B, T]
            targets = torch.stack([b.targets for b in batches])  # [S, B, T]
            logits = ensemble(input_ids)  # [S, B, T, V]
            per_model = F.cross_entropy(
                logits.flatten(1, 2).transpose(1, 2),  # [S, V, B·T]
                targets.flatten(1),  # [S, B·T]
                ignore_index=IGNORE_INDEX,
                reduction="none",
            )  # [S, B·T]
            scored = (targets.flatten(1) != IGNORE_INDEX).sum(1).clamp(min=1)  # [S]
            loss_each = per_model.sum(1) / scored  # [S]
            optimiser.zero_grad(set_to_none=True)
            loss_each.sum().backward()
            optimiser.step()
            schedule.step()
            losses[step] = loss_each.detach()
    ensemble.requires_grad_(False)
    return EnsembleTrainResult(ensemble, losses, time.perf_counter() - start)
