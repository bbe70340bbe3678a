"""Tests for lib/lab/evaluation.py (the length-extrapolation lab)."""

from __future__ import annotations

import math

import pytest
import torch

from lib.lab import (
    IGNORE_INDEX,
    DecoderEnsemble,
    LabConfig,
    build_decoder,
    earliest_answer_key,
    evaluate_decoder,
    evaluate_ensemble,
    induction_batch,
    train_ensemble,
)

from .helpers import TINY, AlwaysZero, Oracle


def test_oracle_scores_one_and_counts_every_predictable_position():
    oracle = Oracle(40, 8, 2, 1, "none", max_len=64, train_len=8)
    result = evaluate_decoder(oracle, 20, n_sequences=10, seed=3, batch_size=4)
    assert result.seq_len == 20 and result.accuracy == 1.0
    # the same draws, in the same chunks of 4, 4, 2: each sequence scores t = n .. T-2
    data = torch.Generator().manual_seed(3)
    periods = torch.cat([induction_batch(k, 20, 40, generator=data).periods for k in (4, 4, 2)])
    assert result.n_predictions == sum(19 - int(n) for n in periods)
    assert set(result.per_period) == set(periods.tolist())
    assert set(result.per_period.values()) == {1.0}
    assert math.isnan(result.per_position[0].item())  # the first block is never scored
    assert math.isnan(result.per_position[19].item())  # nor the last position (no next token)
    assert result.per_position[10].item() == 1.0  # n <= 10 always for T = 20


def test_accuracy_of_a_constant_guess_is_the_share_of_zero_targets():
    model = AlwaysZero(40, 8, 2, 1, "none", max_len=64, train_len=8)
    result = evaluate_decoder(model, 16, n_sequences=5, seed=11, batch_size=8)
    batch = induction_batch(5, 16, 40, generator=torch.Generator().manual_seed(11))
    scored = batch.targets != IGNORE_INDEX
    expected = (batch.targets[scored] == 0).double().mean().item()
    assert result.accuracy == pytest.approx(expected)
    assert result.n_predictions == int(scored.sum())
    assert result.n_predictions == sum(15 - int(n) for n in batch.periods)


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"seq_len": 3}, ValueError, "seq_len"),
        ({"n_sequences": 0}, ValueError, "n_sequences"),
        ({"seed": -1}, ValueError, "seed"),
        ({"batch_size": 0}, ValueError, "batch_size"),
    ],
)
def test_evaluate_decoder_errors(kwargs, error, match):
    args = {"seq_len": 8} | kwargs
    with pytest.raises(error, match=match):
        evaluate_decoder(build_decoder("none", TINY), args.pop("seq_len"), **args)
    with pytest.raises(TypeError, match="model"):
        evaluate_decoder(torch.nn.Linear(2, 2), 8)


def test_learned_model_cannot_be_evaluated_past_its_table():
    with pytest.raises(ValueError, match="max_len"):
        evaluate_decoder(build_decoder("learned", TINY), 4 * TINY.train_len, n_sequences=1)


def test_evaluate_ensemble_counts_like_the_plain_models_and_splits_by_answer_key():
    config = LabConfig(**{**TINY.__dict__, "steps": 30, "warmup_steps": 5})
    ensemble = train_ensemble(DecoderEnsemble("rope", config, (0, 1))).ensemble
    result = evaluate_ensemble(ensemble, 32, condition="unseen", n_sequences=20, seed=5)
    data = torch.Generator().manual_seed(5)
    batch = induction_batch(20, 32, config.vocab_size, generator=data, period_range=(8, 16))
    scored = batch.targets != IGNORE_INDEX
    below = earliest_answer_key(batch.periods, 32) < config.train_len
    for s in range(2):
        predicted = ensemble.member(s)(batch.input_ids).argmax(-1)
        hits = (predicted == batch.targets) & scored
        assert result.accuracy[s].item() == pytest.approx(hits.sum().item() / scored.sum().item())
        assert result.key_below[s].item() == pytest.approx(
            (hits & below).sum().item() / (scored & below).sum().item()
        )
    assert result.n_below == int((scored & below).sum()) and result.n_above > 0
    total = result.n_below + result.n_above
    mixed = (result.key_below * result.n_below + result.key_above * result.n_above) / total
    torch.testing.assert_close(mixed, result.accuracy)
    # seen distances: the earliest answer key is always below L, so nothing is above
    seen = evaluate_ensemble(ensemble, 32, condition="seen", n_sequences=8)
    assert seen.n_above == 0 and seen.key_above.isnan().all()
    with pytest.raises(ValueError, match="condition"):
        evaluate_ensemble(ensemble, 32, condition="far")


@pytest.mark.parametrize("scheme", ["rope", "t5", "learned"])
def test_evaluate_ensemble_chunks_change_no_prediction(scheme):
    # the forward pass runs chunk_tokens // T sequences at a time (the chapter's peak memory);
    # the sequences are independent, so every count must be exactly what one pass gives
    config = LabConfig(**{**TINY.__dict__, "steps": 20, "warmup_steps": 5})
    ensemble = train_ensemble(DecoderEnsemble(scheme, config, (0, 1))).ensemble
    one_pass = evaluate_ensemble(ensemble, 16, n_sequences=24, batch_size=24, chunk_tokens=10**6)
    for chunk_tokens in (1, 16 * 5, 16 * 8):  # 1 sequence, 5 (a ragged last chunk), 8
        chunked = evaluate_ensemble(
            ensemble, 16, n_sequences=24, batch_size=24, chunk_tokens=chunk_tokens
        )
        for name in ("accuracy", "key_below", "key_above", "per_position"):
            a, b = getattr(one_pass, name), getattr(chunked, name)
            assert torch.equal(a.isnan(), b.isnan()) and torch.equal(a.nan_to_num(), b.nan_to_num())
        assert (chunked.n_below, chunked.n_above) == (one_pass.n_below, one_pass.n_above)
    with pytest.raises(ValueError, match="chunk_tokens"):
        evaluate_ensemble(ensemble, 16, n_sequences=4, chunk_tokens=0)


def test_evaluate_ensemble_per_sequence_counts_add_up_to_the_accuracy():
    ensemble = DecoderEnsemble("rope", TINY, (0, 1))
    result = evaluate_ensemble(ensemble, 16, n_sequences=5, batch_size=2)
    assert result.sequence_correct.shape == (2, 5) and result.sequence_count.shape == (5,)
    totals = result.sequence_correct.sum(1) / result.sequence_count.sum()
    assert torch.equal(totals, result.accuracy)  # the same sums, in the same float64 order
    # a sequence of period n at length T scores positions n .. T − 2
    assert bool((result.sequence_count >= 16 - 1 - 8).all())
