"""What a trained RoPE model uses its frequency pairs for: head scores and pair shares."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from lib._checks import (
    check_int,
    check_positive_int,
)
from lib.lab.config import single_thread
from lib.lab.models import AttentionRecord, DecoderEnsemble
from lib.lab.tasks import IGNORE_INDEX, induction_batch


@dataclass(frozen=True)
class HeadScores:
    """How much each head of each model attends like a previous-token or an induction head.

    Attributes:
        previous_token: ``[S, n_layers, H]``, mean attention weight of a query on the key just
            before it.
        induction: ``[S, n_layers, H]``, mean total weight of a scored query on its answer keys
            (keys ``j <= t`` with ``j ≡ t + 1 (mod n)``, the keys that follow an earlier copy of
            the current token).
    """

    previous_token: torch.Tensor
    induction: torch.Tensor


@torch.no_grad()
def head_scores(
    ensemble: DecoderEnsemble, *, n_sequences: int = 32, seed: int = 3
) -> tuple[HeadScores, list[AttentionRecord]]:
    """Previous-token and induction scores of every head, on sequences at the training length.

    The two roles of an induction circuit (Elhage et al. 2021; Olsson et al. 2022): a
    previous-token head puts its weight on key ``t − 1``; an induction head puts it on the keys
    right after earlier occurrences of the current token.

    Args:
        ensemble: a :class:`DecoderEnsemble`.
        n_sequences: induction sequences at ``config.train_len``, an int >= 1.
        seed: seed of their generator, an int >= 0.

    Returns:
        ``(scores, records)``: the :class:`HeadScores` and the per-layer
        :class:`AttentionRecord` they were computed from.

    Raises:
        TypeError: ``ensemble`` is not a :class:`DecoderEnsemble`.
        ValueError: ``n_sequences < 1`` or ``seed < 0``.

    Shapes:
        scores.previous_token, scores.induction: [S, n_layers, H]

    References:
        Olsson et al., In-context Learning and Induction Heads, arXiv:2209.11895.
    """
    if not isinstance(ensemble, DecoderEnsemble):
        raise TypeError(f"ensemble must be a DecoderEnsemble, got {type(ensemble).__name__}")
    n_sequences = check_positive_int("n_sequences", n_sequences)
    seed = check_int("seed", seed, minimum=0)
    config = ensemble.config
    seq_len = config.train_len
    batch = induction_batch(
        n_sequences, seq_len, config.vocab_size, generator=torch.Generator().manual_seed(seed)
    )
    with single_thread():
        records: list[AttentionRecord] = []
        ensemble(batch.input_ids, records=records)
    t = torch.arange(seq_len)
    previous = (t[None, :] == t[:, None] - 1).float()  # [T, T], key t-1 of query t
    j, q_pos = t[None, None, :], t[None, :, None]  # [1, 1, T], [1, T, 1]
    n = batch.periods[:, None, None]  # [B, 1, 1]
    answer = ((j - q_pos - 1) % n == 0) & (j <= q_pos) & (j >= 1)  # [B, T, T]
    scored = (batch.targets != IGNORE_INDEX).float()  # [B, T]
    prev_scores, ind_scores = [], []
    for record in records:
        w = record.weights  # [S, B, H, T, T]
        prev = (w * previous).sum(-1)[..., 1:].mean(dim=(1, 3))  # [S, H]
        on_answer = (w * answer[None, :, None].float()).sum(-1)  # [S, B, H, T]
        weight = scored[None, :, None, :]  # [1, B, 1, T]
        ind = (on_answer * weight).sum(dim=(1, 3)) / weight.sum(dim=(1, 3))  # [S, H]
        prev_scores.append(prev)
        ind_scores.append(ind)
    scores = HeadScores(torch.stack(prev_scores, 1), torch.stack(ind_scores, 1))
    return scores, records


def pair_norm_share(q: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
    """Share of each rotary pair in a head's q·k magnitude.

    ``‖q_i‖`` is the mean over tokens of the norm of pair ``i`` (dimensions ``i`` and
    ``i + d/2``, the "half" layout) of the query, likewise for keys; rotation does not change
    these norms, so rotated or unrotated ``q``/``k`` give the same answer. A pair whose norms are
    near zero cannot move the scores, whatever its angle. In the spirit of Barbero et al. 2024,
    who study which RoPE frequencies Gemma 7B's queries and keys use.

    Equation:
        share_i = ‖q_i‖ ‖k_i‖ / Σ_j ‖q_j‖ ‖k_j‖

    Args:
        q: queries, a floating tensor.
        k: keys, the same shape as ``q``.

    Returns:
        The share of each pair, summing to 1 over the last dimension.

    Raises:
        TypeError: ``q`` or ``k`` not a floating tensor.
        ValueError: shapes differ, fewer than 2 dims, or ``d`` odd.

    Shapes:
        q, k: [..., T, d] (d even) -> [..., d/2]

    References:
        Barbero et al., Round and Round We Go! What Makes Rotary Positional Encodings Useful?,
        arXiv:2410.06205.
    """
    for name, t in (("q", q), ("k", k)):
        if not isinstance(t, torch.Tensor) or not t.is_floating_point():
            raise TypeError(f"{name} must be a floating tensor [..., T, d]")
    if q.shape != k.shape or q.dim() < 2 or q.shape[-1] % 2:
        raise ValueError(
            f"q and k must share a shape [..., T, d] with d even, got {list(q.shape)} and "
            f"{list(k.shape)}"
        )
    half = q.shape[-1] // 2

    def pair_norms(x: torch.Tensor) -> torch.Tensor:
        return torch.sqrt(x[..., :half] ** 2 + x[..., half:] ** 2).mean(dim=-2)  # [..., d/2]

    energy = pair_norms(q) * pair_norms(k)
    return energy / energy.sum(dim=-1, keepdim=True).clamp(min=torch.finfo(q.dtype).tiny)
