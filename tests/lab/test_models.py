"""Tests for lib/lab/models.py (the length-extrapolation lab)."""

from __future__ import annotations

import pytest
import torch

from lib.lab import (
    POSITION_SCHEMES,
    DecoderEnsemble,
    LabConfig,
    TinyDecoder,
    build_decoder,
    train_ensemble,
)
from lib.rope_scaling import ROPE_SCALING

from .helpers import TINY, TRAINABLE


@pytest.mark.parametrize("scheme", list(POSITION_SCHEMES))
def test_decoder_shapes_and_causality(scheme):
    model = build_decoder(scheme, TINY)
    ids = torch.randint(0, 16, (2, 10), generator=torch.Generator().manual_seed(0))
    logits = model(ids)
    assert logits.shape == (2, 10, 16)
    changed = ids.clone()
    changed[:, 6:] = (changed[:, 6:] + 1) % 16  # change the future of position 5
    torch.testing.assert_close(model(changed)[:, :6], logits[:, :6])
    assert not torch.allclose(model(changed)[:, 6:], logits[:, 6:])


def test_every_scheme_starts_from_the_same_shared_weights():
    states = {n: build_decoder(n, TINY).state_dict() for n in POSITION_SCHEMES}
    shared = [k for k in states["none"] if not k.startswith("positions.")]
    assert shared
    for name, state in states.items():
        for key in shared:
            assert torch.equal(state[key], states["none"][key]), (name, key)


def test_one_layer_nope_cannot_tell_the_order_of_the_earlier_tokens():
    # One causal attention layer with no positions: the last position attends to a *set* of tokens,
    # so permuting the tokens before it leaves its output unchanged. Sinusoidal positions break this.
    ids = torch.tensor([[3, 1, 4, 1, 5, 9, 2, 6]])
    permuted = torch.tensor([[9, 5, 1, 4, 1, 3, 2, 6]])  # first 7 shuffled, last token kept
    assert sorted(permuted[0, :7].tolist()) == sorted(ids[0, :7].tolist())
    outs = {}
    for name in ("none", "sinusoidal"):
        torch.manual_seed(0)
        model = TinyDecoder(16, 16, 2, 1, name, max_len=8, train_len=8)
        outs[name] = (model(ids)[0, -1], model(permuted)[0, -1])
    torch.testing.assert_close(*outs["none"], atol=1e-5, rtol=1e-5)
    assert not torch.allclose(*outs["sinusoidal"], atol=1e-3)


@pytest.mark.parametrize(
    ("make", "error", "match"),
    [
        (lambda m: m(torch.zeros(2, 5)), TypeError, "input_ids"),
        (lambda m: m([[1, 2]]), TypeError, "input_ids"),
        (lambda m: m(torch.zeros(5, dtype=torch.long)), ValueError, r"input_ids must be \[B, T\]"),
        (lambda m: m(torch.full((1, 5), 16)), ValueError, "vocab_size = 16"),
        (lambda m: m(torch.zeros(1, 17, dtype=torch.long)), ValueError, "max_len=16"),
    ],
)
def test_decoder_forward_errors(make, error, match):
    model = build_decoder("learned", TINY)  # max_len = 8 · 2 = 16
    with pytest.raises(error, match=match):
        make(model)


def test_decoder_constructor_errors():
    with pytest.raises(ValueError, match="scheme"):
        TinyDecoder(16, 16, 2, 1, "xpos", max_len=8, train_len=8)
    with pytest.raises(ValueError, match="n_layers"):
        TinyDecoder(16, 16, 2, 0, "none", max_len=8, train_len=8)
    with pytest.raises(ValueError, match="d_model"):
        TinyDecoder(16, 15, 2, 1, "none", max_len=8, train_len=8)


@pytest.mark.parametrize("scheme", TRAINABLE)
def test_ensemble_members_are_the_plain_models(scheme):
    ensemble = DecoderEnsemble(scheme, TINY, (3, 1, 4))
    ids = torch.randint(0, TINY.vocab_size, (3, 2, 12), generator=torch.Generator().manual_seed(0))
    logits = ensemble(ids)  # [S, B, T, V]
    assert logits.shape == (3, 2, 12, TINY.vocab_size)
    for s, seed in enumerate((3, 1, 4)):
        member = ensemble.member(s)
        fresh = build_decoder(scheme, LabConfig(**{**TINY.__dict__, "seed": seed}))
        for key, value in fresh.state_dict().items():
            assert torch.equal(member.state_dict()[key], value)
        torch.testing.assert_close(logits[s], member(ids[s]), atol=1e-5, rtol=1e-5)
    # a [B, T] input is shared by every model
    torch.testing.assert_close(ensemble(ids[0]), ensemble(ids[0].expand(3, -1, -1)))


def test_ensemble_copy_is_independent_and_fixed_rope_is_used_everywhere():
    ensemble = DecoderEnsemble("rope", TINY, (0, 1))
    twin = ensemble.copy()
    twin.params["lm_head.weight"] += 1.0
    assert not torch.equal(twin.params["lm_head.weight"], ensemble.params["lm_head.weight"])
    ids = torch.randint(0, TINY.vocab_size, (2, 3, 8), generator=torch.Generator().manual_seed(1))
    pi = ROPE_SCALING["linear"](TINY.d_model // TINY.n_heads, TINY.base, factor=2.0)
    fixed = ensemble.copy()
    fixed.fixed_rope = pi
    torch.testing.assert_close(fixed(ids), ensemble(ids, rope=pi))
    assert not torch.allclose(fixed(ids), ensemble(ids))


def test_keep_pairs_zeroes_pairs_of_q_and_k():
    ensemble = DecoderEnsemble("rope", TINY, (0,))
    ids = torch.randint(0, TINY.vocab_size, (1, 2, 8), generator=torch.Generator().manual_seed(2))
    half = TINY.d_model // TINY.n_heads // 2
    everything = torch.ones(TINY.n_layers, half, dtype=torch.bool)
    torch.testing.assert_close(ensemble(ids, keep_pairs=everything), ensemble(ids))
    # dropping every pair of layer 0 is the same as zero query weights there (uniform attention)
    nothing = everything.clone()
    nothing[0] = False
    zero_q = ensemble.copy()
    zero_q.params["layers.0.q_proj.weight"].zero_()
    torch.testing.assert_close(ensemble(ids, keep_pairs=nothing), zero_q(ids))
    records = []
    ensemble(ids, keep_pairs=nothing, records=records)
    assert torch.count_nonzero(records[0].q) == 0
    with pytest.raises(ValueError, match="keep_pairs"):
        ensemble(ids, keep_pairs=everything[:, :1])


def test_ensemble_errors():
    with pytest.raises(ValueError, match="scheme"):
        DecoderEnsemble("xpos", TINY, (0,))
    with pytest.raises(TypeError, match="seeds"):
        DecoderEnsemble("rope", TINY, [0])
    with pytest.raises(ValueError, match="seeds"):
        DecoderEnsemble("rope", TINY, (1, 1))
    with pytest.raises(TypeError, match="config"):
        DecoderEnsemble("rope", {"d_model": 16}, (0,))
    ensemble = DecoderEnsemble("learned", TINY, (0, 1))
    with pytest.raises(ValueError, match="input_ids"):
        ensemble(torch.zeros(3, 2, 8, dtype=torch.long))
    with pytest.raises(ValueError, match="input_ids"):
        ensemble(torch.full((2, 8), TINY.vocab_size))
    with pytest.raises(TypeError, match="input_ids"):
        ensemble(torch.zeros(2, 8))
    with pytest.raises(ValueError, match="learned table"):
        ensemble(torch.zeros(2, TINY.max_len + 1, dtype=torch.long))
    with pytest.raises(ValueError, match="rope"):
        ensemble(torch.zeros(2, 8, dtype=torch.long), rope=ROPE_SCALING["default"](8, 1e4))
    with pytest.raises(ValueError, match="index"):
        ensemble.member(2)
    with pytest.raises(TypeError, match="ensemble"):
        train_ensemble(build_decoder("rope", TINY))
    with pytest.raises(ValueError, match="steps"):
        train_ensemble(ensemble, steps=0)


def test_position_offset_moves_the_absolute_positions_only():
    """The "positions only" condition: rows offset.. of the learned table, nothing for the biases."""
    ids = torch.randint(0, TINY.vocab_size, (2, 8), generator=torch.Generator().manual_seed(0))
    learned = DecoderEnsemble("learned", TINY, (0, 1))
    shifted = learned.copy()
    table = learned.params["positions.table.weight"]  # [S, max_len, D]
    shifted.params["positions.table.weight"] = torch.roll(table, -5, dims=1)
    assert torch.equal(learned(ids, position_offset=5), shifted(ids))
    for scheme in ("none", "alibi", "t5"):  # distances only: the offset changes nothing
        ensemble = DecoderEnsemble(scheme, TINY, (0, 1))
        assert torch.equal(ensemble(ids, position_offset=9), ensemble(ids)), scheme
    sinusoidal = DecoderEnsemble("sinusoidal", TINY, (0, 1))
    assert not torch.allclose(sinusoidal(ids, position_offset=8), sinusoidal(ids))
    assert torch.equal(sinusoidal(ids, position_offset=0), sinusoidal(ids))


def test_position_offset_leaves_rope_scores_relative():
    """RoPE's scores depend on m − n: shifting every position moves the logits by float32 rounding
    of the larger angles only (measured below 1e-5 here; a wrong offset moves them by ~1)."""
    ids = torch.randint(0, TINY.vocab_size, (2, 8), generator=torch.Generator().manual_seed(1))
    rope = DecoderEnsemble("rope", TINY, (0, 1))
    torch.testing.assert_close(rope(ids, position_offset=24), rope(ids), atol=1e-5, rtol=0)
    records, plain = [], []
    rope(ids, position_offset=24, records=records)
    rope(ids, records=plain)
    assert len(records) == len(plain) == TINY.n_layers
    assert not torch.allclose(records[0].q, plain[0].q)  # the rotation itself did move


def test_position_offset_errors():
    ids = torch.zeros(1, 8, dtype=torch.long)
    with pytest.raises(ValueError, match="position_offset"):
        DecoderEnsemble("rope", TINY, (0,))(ids, position_offset=-1)
    with pytest.raises(ValueError, match="past the learned table"):
        DecoderEnsemble("learned", TINY, (0,))(ids, position_offset=TINY.max_len - 7)


def test_window_limits_every_query_to_its_last_keys():
    """With a window w, token 0 reaches position t of a 2-layer model only if t <= 2(w − 1)."""
    generator = torch.Generator().manual_seed(3)
    ids = torch.randint(0, TINY.vocab_size, (2, 16), generator=generator)
    other = ids.clone()
    other[:, 0] = (ids[:, 0] + 1) % TINY.vocab_size  # change the first token only
    for scheme in ("rope", "alibi", "t5", "learned", "none"):
        ensemble = DecoderEnsemble(scheme, TINY, (0, 1))
        assert torch.equal(ensemble(ids, window=16), ensemble(ids)), scheme  # window >= T
        window = 3
        moved = (ensemble(ids, window=window) - ensemble(other, window=window)).abs()
        moved = moved.amax(dim=(0, 1, 3))  # [T]
        reach = 2 * (window - 1)  # two layers, each reaching w − 1 tokens back
        assert bool((moved[reach + 1 :] == 0).all()), scheme
        assert bool((moved[: reach + 1] > 0).all()), scheme
        full = (ensemble(ids) - ensemble(other)).abs().amax(dim=(0, 1, 3))
        assert bool((full[reach + 1 :] > 0).all()), scheme  # without the window they change
    with pytest.raises(ValueError, match="window"):
        DecoderEnsemble("rope", TINY, (0,))(ids, window=0)
