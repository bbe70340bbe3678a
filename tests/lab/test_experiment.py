"""Tests for lib/lab/experiment.py (the length-extrapolation lab)."""

from __future__ import annotations

import math

import pytest
import torch

from lib.lab import (
    CONDITIONS,
    FINE_TUNED_VARIANTS,
    IGNORE_INDEX,
    LAB_CONDITIONS,
    SCALED_VARIANTS,
    SHIFTED,
    WINDOWED,
    LabConfig,
    LabResult,
    evaluate_decoder,
    induction_batch,
    run_extrapolation_lab,
    run_lab,
)

from .helpers import TINY, AlwaysZero


def test_run_lab_trains_rope_once_and_reports_every_length():
    lab = run_lab(TINY, ("rope+pi", "alibi"))
    assert list(lab.results) == ["rope+pi", "alibi"]
    assert set(lab.seconds) == {"rope", "alibi"}  # rope+pi reuses the rope training
    for key, value in lab.models["rope"].state_dict().items():
        assert torch.equal(value, lab.models["rope+pi"].state_dict()[key])
    assert lab.losses["rope+pi"] == lab.losses["rope"]
    for by_len in lab.results.values():
        assert list(by_len) == [8, 16]
    table = lab.accuracy_table()
    assert table["alibi"][16] == round(lab.results["alibi"][16].accuracy, 2)
    # rope+pi at the training length is plain RoPE: same predictions as the rope weights
    rope_at_l = evaluate_decoder(lab.models["rope"], 8, n_sequences=TINY.eval_sequences, seed=2)
    assert lab.results["rope+pi"][8].accuracy == rope_at_l.accuracy


@pytest.mark.parametrize(
    ("args", "error", "match"),
    [
        ((TINY, ("none", "none")), ValueError, "repeat"),
        ((TINY, ("xpos",)), ValueError, "schemes"),
        ((TINY, ["none"]), TypeError, "schemes"),
        (({"steps": 1},), TypeError, "config"),
    ],
)
def test_run_lab_errors(args, error, match):
    with pytest.raises(error, match=match):
        run_lab(*args)


def test_accuracy_between_weights_positions_by_their_counts():
    model = AlwaysZero(40, 8, 2, 1, "none", max_len=64, train_len=8)
    lab = LabResult(config=TINY, results={"none": {16: evaluate_decoder(model, 16, n_sequences=5)}})
    result = lab.results["none"][16]
    assert int(result.per_position_count.sum()) == result.n_predictions
    # the whole range gives the overall accuracy; an empty range gives NaN
    assert lab.accuracy_between("none", 16, 0, 16) == pytest.approx(result.accuracy)
    assert math.isnan(lab.accuracy_between("none", 16, 0, 2))  # periods >= 4: nothing scored
    # a sub-range by hand: correct predictions / predictions at positions 8..15
    batch = induction_batch(5, 16, 40, generator=torch.Generator().manual_seed(2))
    scored = batch.targets[:, 8:] != IGNORE_INDEX
    expected = (batch.targets[:, 8:][scored] == 0).double().mean().item()
    assert lab.accuracy_between("none", 16, 8, 16) == pytest.approx(expected)
    with pytest.raises(KeyError):
        lab.accuracy_between("rope", 16, 0, 16)


def test_run_extrapolation_lab_small():
    config = LabConfig(**{**TINY.__dict__, "eval_multiples": (1, 2)})
    lab = run_extrapolation_lab(
        config, (0, 1), ("rope", "alibi"), eval_tokens=64, fine_tune_steps=2
    )
    expected = ["rope", "alibi", *SCALED_VARIANTS, *FINE_TUNED_VARIANTS]
    assert list(lab.results) == expected
    for name in expected:
        assert set(lab.results[name]) == {*CONDITIONS, SHIFTED, WINDOWED} == set(LAB_CONDITIONS)
        # at T = L every condition is one evaluation
        assert lab.results[name]["seen"][8] is lab.results[name]["unseen"][8]
        assert lab.results[name]["seen"][8] is lab.results[name][SHIFTED][8]
        assert lab.results[name]["seen"][8] is lab.results[name][WINDOWED][8]
        # the window control: the very sequences of "seen" at T, attention limited to L keys
        windowed, seen = lab.results[name][WINDOWED][16], lab.results[name]["seen"][16]
        assert (windowed.seq_len, windowed.window, seen.window) == (16, 8, None)
        assert windowed.shares_sequences_with(seen) and seen.shares_sequences_with(windowed)
        assert not seen.shares_sequences_with(lab.results[name]["unseen"][16])
        assert lab.results[name][SHIFTED][16].shares_sequences_with(lab.results[name]["seen"][8])
        assert lab.accuracy(name, "unseen", 16).shape == (2,)
        # positions only: training-length sequences (the ones evaluated at L), shifted by T − L
        shifted = lab.results[name][SHIFTED][16]
        assert (shifted.seq_len, shifted.condition, shifted.position_offset) == (8, "seen", 8)
        assert torch.equal(shifted.sequence_count, lab.results[name]["seen"][8].sequence_count)
        interval = lab.interval(name, "unseen", 16)
        assert interval.low <= interval.estimate <= interval.high
        assert interval.estimate == pytest.approx(float(lab.accuracy(name, "unseen", 16).mean()))
    # paired differences: a variant against itself is exactly 0; the same sequences pair
    assert tuple(lab.difference(("rope", "seen", 16), ("rope", "seen", 16))) == (0.0, 0.0, 0.0)
    paired = lab.difference(("rope", "seen", 16), ("rope", WINDOWED, 16))
    diff = lab.accuracy("rope", "seen", 16) - lab.accuracy("rope", WINDOWED, 16)
    assert paired.estimate == pytest.approx(float(diff.mean()), abs=1e-12)
    across = lab.difference(("rope", "seen", 8), ("rope", "unseen", 16))  # two evaluation sets
    diff = lab.accuracy("rope", "seen", 8) - lab.accuracy("rope", "unseen", 16)
    assert across.estimate == pytest.approx(float(diff.mean()), abs=1e-12)
    # ALiBi sees distances only: shifting every position changes no prediction
    assert torch.equal(lab.accuracy("alibi", SHIFTED, 16), lab.accuracy("alibi", "seen", 8))
    # zero-shot variants are the rope models: same accuracy at L
    assert torch.equal(lab.accuracy("rope+yarn", "seen", 8), lab.accuracy("rope", "seen", 8))
    assert lab.ensembles["rope+pi+ft"].fixed_rope is not None
    assert lab.ensembles["rope+ft"].fixed_rope is None
    assert lab.losses["rope"].shape == (config.steps, 2)
    with pytest.raises(ValueError, match="schemes"):
        run_extrapolation_lab(config, (0,), ("rope+pi",))
