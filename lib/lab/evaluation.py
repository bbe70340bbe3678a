"""Evaluating the lab's models: accuracy by length, condition, position and answer key."""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from lib._checks import (
    check_choice,
    check_int,
    check_positive_int,
)
from lib.lab.config import single_thread
from lib.lab.models import DecoderEnsemble, TinyDecoder
from lib.lab.tasks import CONDITIONS, IGNORE_INDEX, earliest_answer_key, induction_batch


@dataclass(frozen=True)
class EvalResult:
    """Next-token accuracy on the predictable positions of an induction evaluation set.

    Attributes:
        seq_len: the evaluation length ``T``.
        accuracy: fraction of predictable positions whose argmax is the right token.
        per_position: ``[T]`` float64, accuracy at each position ``t`` over the sequences where
            ``t`` is predictable; NaN where none is.
        per_position_count: ``[T]`` long, how many predictions each position scored.
        per_period: ``{n: accuracy}`` over the sequences with period ``n``.
        n_predictions: number of predictable positions scored.
    """

    seq_len: int
    accuracy: float
    per_position: torch.Tensor
    per_position_count: torch.Tensor
    per_period: dict[int, float]
    n_predictions: int


@torch.no_grad()
def evaluate_decoder(
    model: TinyDecoder,
    seq_len: int,
    *,
    n_sequences: int = 256,
    seed: int = 2,
    batch_size: int = 64,
) -> EvalResult:
    """Next-token accuracy of ``model`` on ``n_sequences`` induction sequences of length ``seq_len``.

    ``accuracy = #{argmax logits[b, t] == targets[b, t]} / #{predictable (b, t)}`` over
    :func:`induction_batch` sequences drawn from a generator seeded with ``seed`` (so every model
    sees the same set). Runs in :func:`single_thread`, in batches of ``batch_size``.

    Args:
        model: a :class:`TinyDecoder`.
        seq_len: evaluation length ``T``, an int >= 4.
        n_sequences: number of sequences, an int >= 1.
        seed: seed of the evaluation data, an int >= 0.
        batch_size: sequences per forward pass, an int >= 1.

    Returns:
        An :class:`EvalResult`.

    Raises:
        TypeError: ``model`` is not a :class:`TinyDecoder`; an argument has the wrong type.
        ValueError: ``seq_len < 4``, ``n_sequences < 1``, ``seed < 0``, ``batch_size < 1``, or
            (learned positions) ``seq_len`` past the model's table.
    """
    if not isinstance(model, TinyDecoder):
        raise TypeError(f"model must be a TinyDecoder, got {type(model).__name__}")
    seq_len = check_int("seq_len", seq_len, minimum=4)
    n_sequences = check_positive_int("n_sequences", n_sequences)
    seed = check_int("seed", seed, minimum=0)
    batch_size = check_positive_int("batch_size", batch_size)
    data = torch.Generator().manual_seed(seed)
    correct_at = torch.zeros(seq_len, dtype=torch.float64)  # [T]
    count_at = torch.zeros(seq_len, dtype=torch.float64)  # [T]
    by_period: dict[int, list[float]] = {}
    was_training = model.training
    model.eval()
    with single_thread():
        done = 0
        while done < n_sequences:
            size = min(batch_size, n_sequences - done)
            batch = induction_batch(size, seq_len, model.vocab_size, generator=data)
            predicted = model(batch.input_ids).argmax(dim=-1)  # [b, T]
            scored = batch.targets != IGNORE_INDEX  # [b, T]
            correct = (predicted == batch.targets) & scored  # [b, T]
            correct_at += correct.sum(dim=0).double()
            count_at += scored.sum(dim=0).double()
            for n, c, s in zip(batch.periods.tolist(), correct.sum(1), scored.sum(1), strict=True):
                totals = by_period.setdefault(int(n), [0.0, 0.0])
                totals[0] += float(c)
                totals[1] += float(s)
            done += size
    model.train(was_training)
    per_position = torch.where(count_at > 0, correct_at / count_at.clamp(min=1), math.nan)
    return EvalResult(
        seq_len=seq_len,
        accuracy=float(correct_at.sum() / count_at.sum()),
        per_position=per_position,
        per_position_count=count_at.long(),
        per_period={n: c / s for n, (c, s) in sorted(by_period.items())},
        n_predictions=int(count_at.sum()),
    )


@dataclass(frozen=True)
class EnsembleEval:
    """Accuracy of each model of an ensemble at one length and condition.

    Attributes:
        seq_len: the evaluation length ``T``.
        condition: a key of :data:`CONDITIONS`.
        accuracy: ``[S]`` float64, over every scored position.
        key_below: ``[S]`` float64, over the positions whose earliest answer key
            (:func:`earliest_answer_key`) lies below the training length; NaN if none.
        key_above: ``[S]`` float64, the same for an earliest answer key at or past it.
        n_below: scored positions with the earliest answer key below the training length.
        n_above: scored positions with the earliest answer key at or past it.
        per_position: ``[S, T]`` float64, accuracy at each position (NaN where none scored).
        sequence_correct: ``[S, N]`` float64, correct predictions of each model in each of the
            ``N`` sequences (what :func:`lib.lab.seed_interval` reads).
        sequence_count: ``[N]`` float64, scored predictions in each sequence (the same for
            every model).
        position_offset: the position id of every sequence's first token (0 unless the
            "positions only" condition shifted them).
        period_range: the ``(low, high)`` periods the sequences were drawn from.
        data_seed: the seed of the evaluation data.
        window: the attention window (``None``: every earlier key).
    """

    seq_len: int
    condition: str
    accuracy: torch.Tensor
    key_below: torch.Tensor
    key_above: torch.Tensor
    n_below: int
    n_above: int
    per_position: torch.Tensor
    sequence_correct: torch.Tensor | None = None
    sequence_count: torch.Tensor | None = None
    position_offset: int = 0
    period_range: tuple[int, int] | None = None
    data_seed: int | None = None
    window: int | None = None

    def shares_sequences_with(self, other: EnsembleEval) -> bool:
        """Whether ``other`` was scored on the very same sequences (a paired comparison).

        True when both drew the same number of sequences of the same length and period range
        from the same data seed (the position offset and the window change no token).

        Args:
            other: another :class:`EnsembleEval`.

        Returns:
            Whether the two were scored on the same sequences (False if either does not record
            its period range or data seed).
        """
        if self.period_range is None or self.data_seed is None:
            return False
        return (
            self.seq_len == other.seq_len
            and self.period_range == other.period_range
            and self.data_seed == other.data_seed
            and self.sequence_count is not None
            and other.sequence_count is not None
            and self.sequence_count.shape == other.sequence_count.shape
        )


@torch.no_grad()
def evaluate_ensemble(
    ensemble: DecoderEnsemble,
    seq_len: int,
    *,
    condition: str = "unseen",
    n_sequences: int = 128,
    seed: int = 2,
    rope: tuple[torch.Tensor, float] | None = None,
    keep_pairs: torch.Tensor | None = None,
    position_offset: int = 0,
    window: int | None = None,
    batch_size: int = 64,
    chunk_tokens: int = 1024,
) -> EnsembleEval:
    """Accuracy of every model on the same ``n_sequences`` induction sequences of length ``seq_len``.

    The period range is ``CONDITIONS[condition](seq_len, train_len)``; the data come from a
    generator seeded ``seed`` (the same sequences for every model and scheme), drawn
    ``batch_size`` at a time. Each drawn batch is run through the models in chunks of at most
    ``max(1, chunk_tokens // seq_len)`` sequences: the sequences are independent, so the
    chunking changes no prediction, only the peak memory (the scores ``[S, b, H, T, T]`` of one
    chunk). Runs under :func:`torch.inference_mode` and :func:`single_thread`.

    Args:
        ensemble: a :class:`DecoderEnsemble`.
        seq_len: ``T``, an int >= 4.
        condition: ``"seen"`` or ``"unseen"`` distances.
        n_sequences: sequences, an int >= 1.
        seed: data seed, an int >= 0.
        rope: ``(inv_freq, attention_factor)`` for a RoPE model (see
            :func:`scaled_rope_frequencies`), or ``None`` for the model's own.
        keep_pairs: an ablation mask (see :meth:`DecoderEnsemble.forward`), or ``None``.
        position_offset: the position id of each sequence's first token, an int >= 0 (see
            :meth:`DecoderEnsemble.forward`): the "positions only" condition evaluates
            training-length sequences at positions ``position_offset .. position_offset + T − 1``.
        window: ``None``, or attend only to the last ``window`` keys (see
            :meth:`DecoderEnsemble.forward`; the distractor-distance control uses ``L``).
        batch_size: sequences drawn from the data generator at a time (this fixes the data).
        chunk_tokens: tokens per forward pass (at least one sequence), an int >= 1.

    Returns:
        An :class:`EnsembleEval`.

    Raises:
        TypeError: ``ensemble`` is not a :class:`DecoderEnsemble`.
        ValueError: bad sizes, an unknown ``condition``, or the errors of
            :meth:`DecoderEnsemble.forward`.
    """
    if not isinstance(ensemble, DecoderEnsemble):
        raise TypeError(f"ensemble must be a DecoderEnsemble, got {type(ensemble).__name__}")
    seq_len = check_int("seq_len", seq_len, minimum=4)
    check_choice("condition", condition, tuple(CONDITIONS))
    n_sequences = check_positive_int("n_sequences", n_sequences)
    seed = check_int("seed", seed, minimum=0)
    batch_size = check_positive_int("batch_size", batch_size)
    position_offset = check_int("position_offset", position_offset, minimum=0)
    if window is not None:
        window = check_int("window", window, minimum=1)
    chunk = max(1, check_positive_int("chunk_tokens", chunk_tokens) // seq_len)
    train_len = ensemble.config.train_len
    period_range = CONDITIONS[condition](seq_len, train_len)
    data = torch.Generator().manual_seed(seed)
    n = ensemble.n_models
    correct_at = torch.zeros(n, seq_len, dtype=torch.float64)  # [S, T]
    count_at = torch.zeros(seq_len, dtype=torch.float64)  # [T]
    below = torch.zeros(n, dtype=torch.float64)
    above = torch.zeros(n, dtype=torch.float64)
    n_below = n_above = 0
    sequence_correct: list[torch.Tensor] = []  # [S, b] per drawn batch
    sequence_count: list[torch.Tensor] = []  # [b] per drawn batch
    with single_thread(), torch.inference_mode():
        done = 0
        while done < n_sequences:
            size = min(batch_size, n_sequences - done)
            batch = induction_batch(
                size,
                seq_len,
                ensemble.config.vocab_size,
                generator=data,
                period_range=period_range,
            )
            predicted = torch.cat(
                [
                    ensemble(
                        ids,
                        rope=rope,
                        keep_pairs=keep_pairs,
                        position_offset=position_offset,
                        window=window,
                    ).argmax(dim=-1)
                    for ids in batch.input_ids.split(chunk)
                ],
                dim=1,
            )  # [S, b, T]
            scored = batch.targets != IGNORE_INDEX  # [b, T]
            correct = (predicted == batch.targets) & scored  # [S, b, T]
            is_below = earliest_answer_key(batch.periods, seq_len) < train_len  # [b, T]
            correct_at += correct.sum(dim=1).double()
            sequence_correct.append(correct.sum(dim=2).double())  # [S, b]
            sequence_count.append(scored.sum(dim=1).double())  # [b]
            count_at += scored.sum(dim=0).double()
            below += (correct & is_below).sum(dim=(1, 2)).double()
            above += (correct & ~is_below).sum(dim=(1, 2)).double()
            n_below += int((scored & is_below).sum())
            n_above += int((scored & ~is_below).sum())
            done += size
    per_position = torch.where(count_at > 0, correct_at / count_at.clamp(min=1), math.nan)
    return EnsembleEval(
        seq_len=seq_len,
        condition=condition,
        accuracy=correct_at.sum(1) / count_at.sum(),
        key_below=below / n_below if n_below else torch.full((n,), math.nan),
        key_above=above / n_above if n_above else torch.full((n,), math.nan),
        n_below=n_below,
        n_above=n_above,
        per_position=per_position,
        sequence_correct=torch.cat(sequence_correct, dim=1),
        sequence_count=torch.cat(sequence_count),
        position_offset=position_offset,
        period_range=period_range,
        data_seed=seed,
        window=window,
    )
