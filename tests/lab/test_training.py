"""Tests for lib/lab/training.py (the length-extrapolation lab)."""

from __future__ import annotations

import math

import pytest
import torch

from lib.lab import (
    DecoderEnsemble,
    LabConfig,
    build_decoder,
    evaluate_decoder,
    train_decoder,
    train_ensemble,
)

from .helpers import TINY


def test_training_is_reproducible_and_independent_of_the_thread_count():
    before = torch.get_num_threads()
    try:
        torch.set_num_threads(2)
        a = train_decoder("alibi", TINY)
        torch.set_num_threads(1)
        b = train_decoder("alibi", TINY)
    finally:
        torch.set_num_threads(before)
    assert len(a.losses) == TINY.steps and all(math.isfinite(x) for x in a.losses)
    assert a.losses == b.losses
    for (k, v), (_, w) in zip(
        a.model.state_dict().items(), b.model.state_dict().items(), strict=True
    ):
        assert torch.equal(v, w), k
    assert a.seconds > 0 and not a.model.training


def test_training_lowers_the_loss():
    config = LabConfig(**{**TINY.__dict__, "steps": 60, "warmup_steps": 5})
    losses = train_decoder("rope", config).losses
    assert sum(losses[-10:]) / 10 < sum(losses[:10]) / 10 - 0.3


def test_learned_rows_past_the_training_length_never_change():
    initial = build_decoder("learned", TINY).positions.table.weight.detach().clone()  # [16, 16]
    trained = train_decoder("learned", TINY).model.positions.table.weight.detach()
    assert torch.equal(trained[TINY.train_len :], initial[TINY.train_len :])
    assert not torch.equal(trained[: TINY.train_len], initial[: TINY.train_len])


def test_training_rope_pi_gives_exactly_the_rope_weights():
    rope = train_decoder("rope", TINY).model.state_dict()
    pi = train_decoder("rope+pi", TINY).model.state_dict()
    assert rope.keys() == pi.keys()
    assert all(torch.equal(rope[k], pi[k]) for k in rope)


def test_train_decoder_errors():
    with pytest.raises(ValueError, match="scheme"):
        train_decoder("xpos", TINY)
    with pytest.raises(TypeError, match="config"):
        train_decoder("none", {"steps": 3})


def test_evaluation_restores_training_mode():
    model = build_decoder("none", TINY)
    model.train()
    evaluate_decoder(model, 8, n_sequences=2)
    assert model.training


def test_ensemble_training_equals_separate_training():
    together = train_ensemble(DecoderEnsemble("rope", TINY, (0, 1)), steps=4)
    for s, seed in enumerate((0, 1)):
        alone = train_ensemble(DecoderEnsemble("rope", TINY, (seed,)), steps=4)
        torch.testing.assert_close(together.losses[:, s], alone.losses[:, 0], atol=1e-5, rtol=0)
        for key, value in alone.ensemble.params.items():
            torch.testing.assert_close(
                together.ensemble.params[key][s], value[0], atol=1e-5, rtol=0
            )
    assert together.losses.shape == (4, 2)


def test_ensemble_training_lowers_every_models_loss_and_keeps_untrained_rows():
    config = LabConfig(**{**TINY.__dict__, "steps": 40, "warmup_steps": 5, "batch_size": 8})
    ensemble = DecoderEnsemble("learned", config, (0, 1))
    before = ensemble.params["positions.table.weight"].clone()
    result = train_ensemble(ensemble)
    assert (result.losses[-5:].mean(0) < result.losses[:5].mean(0) - 0.2).all()
    after = ensemble.params["positions.table.weight"]
    L = config.train_len
    assert torch.equal(after[:, L:], before[:, L:])
    assert not torch.equal(after[:, :L], before[:, :L])
