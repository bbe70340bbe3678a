"""Tests for lib/lab.py: the induction task, the six position schemes, the tiny decoder, the lab."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from lib.lab import (
    CONDITIONS,
    DYNAMIC_FACTOR,
    FINE_TUNED_VARIANTS,
    IGNORE_INDEX,
    POSITION_SCHEMES,
    SCALED_VARIANTS,
    ZERO_SHOT_SCALING,
    ALiBiPositions,
    DecoderEnsemble,
    InterpolatedRotaryPositions,
    LabConfig,
    LabResult,
    LearnedPositions,
    NoPositions,
    RotaryPositions,
    SinusoidalPositions,
    TinyDecoder,
    build_decoder,
    earliest_answer_key,
    evaluate_decoder,
    evaluate_ensemble,
    head_scores,
    induction_batch,
    pair_norm_share,
    run_extrapolation_lab,
    run_lab,
    scaled_rope_frequencies,
    seed_spread,
    single_thread,
    train_decoder,
    train_ensemble,
)
from lib.relative import t5_relative_position_bucket
from lib.rope import apply_rope, rope_angles, rope_inv_freq
from lib.rope_scaling import ROPE_SCALING

#: A lab small enough for unit tests (well under a second per training).
TINY = LabConfig(
    vocab_size=16,
    d_model=16,
    n_heads=2,
    n_layers=2,
    train_len=8,
    eval_multiples=(1, 2),
    steps=6,
    warmup_steps=2,
    batch_size=4,
    eval_sequences=6,
)


def _scheme(name: str, **kwargs) -> torch.nn.Module:
    args = {"max_len": 32, "train_len": 8, "base": 10000.0} | kwargs
    return POSITION_SCHEMES[name](16, 2, **args)


def _rotate_half_by_hand(x: torch.Tensor, positions: torch.Tensor, base: float) -> torch.Tensor:
    """RoPE in the "half" pairing from the formula, float64: pairs (i, i + d/2) turn by m·θ_i."""
    d = x.shape[-1]
    theta = base ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)  # [d/2]
    angle = positions.to(torch.float64)[:, None] * theta[None, :]  # [T, d/2]
    a, b = x[..., : d // 2].double(), x[..., d // 2 :].double()
    return torch.cat([a * angle.cos() - b * angle.sin(), b * angle.cos() + a * angle.sin()], -1)


# ------------------------------------------------------------------------------------------------
# The task
# ------------------------------------------------------------------------------------------------


@given(
    batch=st.integers(1, 5),
    seq_len=st.integers(4, 40),
    extra_vocab=st.integers(0, 10),
    seed=st.integers(0, 10_000),
)
def test_induction_batch_is_a_repeated_block_with_next_token_targets(
    batch, seq_len, extra_vocab, seed
):
    vocab = seq_len // 2 + extra_vocab
    out = induction_batch(batch, seq_len, vocab, generator=torch.Generator().manual_seed(seed))
    assert out.input_ids.shape == out.targets.shape == (batch, seq_len)
    assert out.periods.shape == (batch,)
    for b in range(batch):
        n = int(out.periods[b])
        assert math.ceil(seq_len / 4) <= n <= seq_len // 2
        x = out.input_ids[b].tolist()
        block = x[:n]
        assert len(set(block)) == n, "a block holds distinct tokens"
        assert all(0 <= tok < vocab for tok in block)
        assert x == [block[t % n] for t in range(seq_len)]
        for t in range(seq_len):
            expected = x[t + 1] if n <= t < seq_len - 1 else IGNORE_INDEX
            assert int(out.targets[b, t]) == expected


def test_induction_batch_pinned_period_range_and_seed():
    # T = 4: periods can only be ceil(4/4) = 1 or floor(4/2) = 2.
    out = induction_batch(64, 4, 2, generator=torch.Generator().manual_seed(0))
    assert set(out.periods.tolist()) == {1, 2}
    # same seed, same batch; another seed, another batch
    a = induction_batch(3, 12, 20, generator=torch.Generator().manual_seed(5))
    b = induction_batch(3, 12, 20, generator=torch.Generator().manual_seed(5))
    c = induction_batch(3, 12, 20, generator=torch.Generator().manual_seed(6))
    assert torch.equal(a.input_ids, b.input_ids)
    assert not torch.equal(a.input_ids, c.input_ids)


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"batch_size": 0}, ValueError, "batch_size"),
        ({"seq_len": 3}, ValueError, "seq_len"),
        ({"seq_len": 8.0}, TypeError, "seq_len"),
        ({"vocab_size": 3}, ValueError, "vocab_size"),
        ({"generator": 0}, TypeError, "generator"),
    ],
)
def test_induction_batch_errors(kwargs, error, match):
    args = {"batch_size": 2, "seq_len": 8, "vocab_size": 8, "generator": torch.Generator()}
    args |= kwargs
    with pytest.raises(error, match=match):
        induction_batch(args.pop("batch_size"), args.pop("seq_len"), args.pop("vocab_size"), **args)


# ------------------------------------------------------------------------------------------------
# Determinism helper
# ------------------------------------------------------------------------------------------------


def test_single_thread_sets_one_thread_and_restores_even_after_an_error():
    before = torch.get_num_threads()
    with single_thread():
        assert torch.get_num_threads() == 1
    assert torch.get_num_threads() == before
    with pytest.raises(RuntimeError), single_thread():
        raise RuntimeError("boom")
    assert torch.get_num_threads() == before


# ------------------------------------------------------------------------------------------------
# Position schemes
# ------------------------------------------------------------------------------------------------


def test_registry_names_classes_and_where_they_act():
    assert list(POSITION_SCHEMES) == [
        "none",
        "sinusoidal",
        "learned",
        "rope",
        "rope+pi",
        "alibi",
        "t5",
    ]
    acts = {name: cls.acts_on for name, cls in POSITION_SCHEMES.items()}
    assert acts == {
        "none": "nothing",
        "sinusoidal": "input",
        "learned": "input",
        "rope": "q/k",
        "rope+pi": "q/k",
        "alibi": "scores",
        "t5": "scores",
    }
    assert POSITION_SCHEMES["rope+pi"].shares_training_with == "rope"
    assert all(
        cls.shares_training_with is None for n, cls in POSITION_SCHEMES.items() if n != "rope+pi"
    )


def test_parameters_added_by_each_scheme():
    counts = {n: sum(p.numel() for p in _scheme(n).parameters()) for n in POSITION_SCHEMES}
    assert counts == {n: 0 for n in POSITION_SCHEMES} | {"learned": 32 * 16, "t5": 32 * 2}


def test_none_adds_nothing_and_hooks_are_empty():
    scheme = _scheme("none")
    x = torch.randn(2, 5, 16)
    assert torch.equal(scheme.embed(x), x)
    assert scheme.rotary(5) is None and scheme.bias(5, dtype=torch.float32) is None


def test_sinusoidal_adds_the_papers_table():
    scheme = _scheme("sinusoidal")
    x = torch.zeros(1, 6, 16)
    got = scheme.embed(x)[0].double()  # [6, 16]
    p = torch.arange(6, dtype=torch.float64)[:, None]
    w = 10000.0 ** (-torch.arange(0, 16, 2, dtype=torch.float64) / 16)
    expected = torch.stack([torch.sin(p * w), torch.cos(p * w)], dim=-1).reshape(6, 16)
    torch.testing.assert_close(got, expected, atol=1e-6, rtol=0)
    assert scheme.embed(x).shape == x.shape
    assert scheme.embed(torch.zeros(1, 40, 16)).shape == (1, 40, 16)  # any length runs


def test_learned_adds_table_rows_and_refuses_past_max_len():
    scheme = _scheme("learned", max_len=12)
    x = torch.randn(3, 7, 16)
    torch.testing.assert_close(scheme.embed(x), x + scheme.table.weight[:7])
    with pytest.raises(ValueError, match="max_len=12"):
        scheme.embed(torch.zeros(1, 13, 16))


def test_rope_rotates_q_and_k_like_the_formula():
    x = torch.randn(2, 2, 9, 8, dtype=torch.float64)
    got = _scheme("rope", base=100.0).rotary(9)(x.float())
    expected = _rotate_half_by_hand(x, torch.arange(9), 100.0)
    torch.testing.assert_close(got.double(), expected, atol=1e-5, rtol=1e-5)


def test_rope_matches_transformers_apply_rotary_pos_emb():
    from transformers.models.llama import modeling_llama as llama

    q, k = torch.randn(2, 2, 10, 8), torch.randn(2, 2, 10, 8)
    theta = 10000.0 ** (-torch.arange(0, 8, 2, dtype=torch.float64) / 8)
    freqs = torch.arange(10, dtype=torch.float64)[:, None] * theta  # [T, d/2]
    emb = torch.cat([freqs, freqs], dim=-1)  # [T, d], Hugging Face's duplicated layout
    cos, sin = emb.cos().float()[None], emb.sin().float()[None]  # [1, T, d]
    hf_q, hf_k = llama.apply_rotary_pos_emb(q, k, cos, sin)
    rotate = _scheme("rope").rotary(10)
    torch.testing.assert_close(rotate(q), hf_q, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(rotate(k), hf_k, atol=1e-5, rtol=1e-5)


def test_rope_pi_is_rope_up_to_train_len_and_squeezes_positions_past_it():
    rope, pi = _scheme("rope"), _scheme("rope+pi")
    x = torch.randn(1, 2, 8, 8)
    torch.testing.assert_close(pi.rotary(8)(x), rope.rotary(8)(x), atol=0, rtol=0)
    # At T = 32 = 4·train_len the factor is 4: position 4m is turned like position m of plain RoPE.
    const = torch.randn(1, 2, 1, 8).expand(1, 2, 32, 8).contiguous()
    squeezed = pi.rotary(32)(const)[:, :, 0::4]  # positions 0, 4, 8, ...
    plain = rope.rotary(8)(const[:, :, :8])  # positions 0 .. 7
    torch.testing.assert_close(squeezed, plain, atol=1e-5, rtol=1e-5)
    # ... and by hand: angles m·θ_i / 4
    expected = _rotate_half_by_hand(const.double(), torch.arange(32) / 4, 10000.0)
    torch.testing.assert_close(pi.rotary(32)(const).double(), expected, atol=1e-5, rtol=1e-5)


def test_alibi_bias_is_minus_slope_times_distance_with_causal_mask():
    scheme = POSITION_SCHEMES["alibi"](16, 4, max_len=8, train_len=8)
    got = scheme.bias(5, dtype=torch.float32)  # [4, 5, 5]
    slopes = [1 / 4, 1 / 16, 1 / 64, 1 / 256]  # 2^(-8k/4), k = 1..4
    for h, m in enumerate(slopes):
        for i in range(5):
            for j in range(5):
                expected = -m * (i - j) if j <= i else -math.inf
                assert got[h, i, j].item() == pytest.approx(expected)
    assert scheme.embed(torch.ones(1, 5, 16)).equal(torch.ones(1, 5, 16))


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"d_model": 15}, ValueError, "d_model"),
        ({"n_heads": 0}, ValueError, "n_heads"),
        ({"max_len": 4}, ValueError, "train_len"),
        ({"train_len": 0}, ValueError, "train_len"),
        ({"base": 0.0}, ValueError, "base"),
        ({"max_len": 8.0}, TypeError, "max_len"),
    ],
)
def test_scheme_constructor_errors(kwargs, error, match):
    args = {"d_model": 16, "n_heads": 2, "max_len": 32, "train_len": 8} | kwargs
    with pytest.raises(error, match=match):
        NoPositions(args.pop("d_model"), args.pop("n_heads"), **args)


def test_odd_sizes_are_refused_where_pairs_are_needed():
    SinusoidalPositions(6, 2, max_len=8, train_len=8)  # d_model 6: fine
    with pytest.raises(ValueError, match="d_model must be even"):
        SinusoidalPositions(3, 3, max_len=8, train_len=8)
    RotaryPositions(8, 2, max_len=8, train_len=8)  # d_head 4: fine
    with pytest.raises(ValueError, match="d_head"):
        RotaryPositions(6, 2, max_len=8, train_len=8)  # d_head 3
    with pytest.raises(ValueError, match="d_head"):
        InterpolatedRotaryPositions(6, 2, max_len=8, train_len=8)
    LearnedPositions(3, 3, max_len=8, train_len=8)  # no pairs needed
    ALiBiPositions(3, 3, max_len=8, train_len=8)


# ------------------------------------------------------------------------------------------------
# The decoder
# ------------------------------------------------------------------------------------------------


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


# ------------------------------------------------------------------------------------------------
# Training
# ------------------------------------------------------------------------------------------------


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


# ------------------------------------------------------------------------------------------------
# Evaluation
# ------------------------------------------------------------------------------------------------


class _Oracle(TinyDecoder):
    """Predicts by the induction rule itself: the token after the previous occurrence."""

    def forward(self, input_ids):
        b, t = input_ids.shape
        logits = torch.zeros(b, t, self.vocab_size)
        for row in range(b):
            x = input_ids[row].tolist()
            n = next(j for j in range(1, t) if x[j] == x[0])
            for pos in range(n, t):
                logits[row, pos, x[pos - n + 1]] = 1.0
        return logits


class _AlwaysZero(TinyDecoder):
    def forward(self, input_ids):
        logits = torch.zeros(*input_ids.shape, self.vocab_size)
        logits[..., 0] = 1.0
        return logits


def test_oracle_scores_one_and_counts_every_predictable_position():
    oracle = _Oracle(40, 8, 2, 1, "none", max_len=64, train_len=8)
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
    model = _AlwaysZero(40, 8, 2, 1, "none", max_len=64, train_len=8)
    result = evaluate_decoder(model, 16, n_sequences=5, seed=11, batch_size=8)
    batch = induction_batch(5, 16, 40, generator=torch.Generator().manual_seed(11))
    scored = batch.targets != IGNORE_INDEX
    expected = (batch.targets[scored] == 0).double().mean().item()
    assert result.accuracy == pytest.approx(expected)
    assert result.n_predictions == int(scored.sum())
    assert result.n_predictions == sum(15 - int(n) for n in batch.periods)


def test_evaluation_restores_training_mode():
    model = build_decoder("none", TINY)
    model.train()
    evaluate_decoder(model, 8, n_sequences=2)
    assert model.training


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


# ------------------------------------------------------------------------------------------------
# Config and the whole lab
# ------------------------------------------------------------------------------------------------


def test_config_lengths():
    assert LabConfig().eval_lens == (32, 64, 128) and LabConfig().max_len == 128
    assert TINY.eval_lens == (8, 16) and TINY.max_len == 16


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"vocab_size": 7}, ValueError, "vocab_size"),
        ({"d_model": 15}, ValueError, "d_model"),
        ({"train_len": 3}, ValueError, "train_len"),
        ({"eval_multiples": ()}, TypeError, "eval_multiples"),
        ({"eval_multiples": [1, 2]}, TypeError, "eval_multiples"),
        ({"eval_multiples": (1, 0)}, ValueError, "eval_multiples"),
        ({"lr": 0.0}, ValueError, "lr"),
        ({"steps": 0}, ValueError, "steps"),
        ({"seed": -1}, ValueError, "seed"),
    ],
)
def test_config_errors(kwargs, error, match):
    with pytest.raises(error, match=match):
        LabConfig(**{**TINY.__dict__, **kwargs})


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
    model = _AlwaysZero(40, 8, 2, 1, "none", max_len=64, train_len=8)
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


# ------------------------------------------------------------------------------------------------
# The two conditions, the answer key, T5's bias
# ------------------------------------------------------------------------------------------------


@given(seq_len=st.integers(8, 48), data=st.data(), seed=st.integers(0, 1000))
def test_period_range_bounds_every_period_and_keeps_the_repeat_structure(seq_len, data, seed):
    high = data.draw(st.integers(1, seq_len // 2))
    low = data.draw(st.integers(1, high))
    out = induction_batch(
        6,
        seq_len,
        high + 3,
        generator=torch.Generator().manual_seed(seed),
        period_range=(low, high),
    )
    assert ((out.periods >= low) & (out.periods <= high)).all()
    for b in range(6):
        n = int(out.periods[b])
        assert torch.equal(out.input_ids[b, n:], out.input_ids[b, :-n])


def test_conditions_keep_or_scale_the_training_periods():
    assert CONDITIONS["seen"](128, 32) == (8, 16) == CONDITIONS["seen"](32, 32)
    assert CONDITIONS["unseen"](128, 32) == (32, 64)
    assert CONDITIONS["unseen"](32, 32) == CONDITIONS["seen"](32, 32)
    # the default range of induction_batch is the unseen one
    a = induction_batch(50, 40, 20, generator=torch.Generator().manual_seed(1))
    b = induction_batch(
        50, 40, 20, generator=torch.Generator().manual_seed(1), period_range=(10, 20)
    )
    assert torch.equal(a.input_ids, b.input_ids)


@pytest.mark.parametrize(
    ("period_range", "error"),
    [((0, 4), ValueError), ((5, 4), ValueError), ((2, 9), ValueError), ([2, 4], TypeError)],
)
def test_period_range_errors(period_range, error):
    with pytest.raises(error, match="period_range"):
        induction_batch(2, 16, 16, generator=torch.Generator(), period_range=period_range)


@given(seq_len=st.integers(4, 40), seed=st.integers(0, 1000))
def test_earliest_answer_key_is_the_first_key_after_an_earlier_copy(seq_len, seed):
    batch = induction_batch(4, seq_len, seq_len, generator=torch.Generator().manual_seed(seed))
    keys = earliest_answer_key(batch.periods, seq_len)
    for b in range(4):
        x = batch.input_ids[b]
        for t in range(int(batch.periods[b]), seq_len - 1):
            holders = [j for j in range(1, t + 1) if x[j - 1] == x[t]]
            assert holders and int(keys[b, t]) == holders[0]
            assert x[holders[0]] == x[t + 1]  # it holds the answer


def test_earliest_answer_key_pinned_and_errors():
    assert earliest_answer_key(torch.tensor([3]), 7).tolist() == [[1, 2, 3, 1, 2, 3, 1]]
    with pytest.raises(TypeError, match="periods"):
        earliest_answer_key(torch.tensor([3.0]), 7)
    with pytest.raises(ValueError, match="periods"):
        earliest_answer_key(torch.tensor([0]), 7)


def test_t5_bias_is_the_bucket_table_shared_by_layers_with_a_causal_mask():
    scheme = _scheme("t5")
    bias = scheme.bias(40, dtype=torch.float32)  # [H, T, T]
    table = scheme.table.relative_attention_bias.weight  # [32, H]
    i, j = torch.tril_indices(40, 40)
    buckets = t5_relative_position_bucket(
        j - i, bidirectional=False, num_buckets=32, max_distance=128
    )
    assert torch.equal(bias[:, i, j], table[buckets].T)
    assert torch.isneginf(bias[:, 0, 1:]).all() and torch.isneginf(bias[:, 5, 6:]).all()
    # distances 0..15 get their own bucket; 128 and beyond share the last one
    assert buckets[(i - j) < 16].tolist() == (i - j)[(i - j) < 16].tolist()
    assert t5_relative_position_bucket(
        torch.tensor([-128, -500]), bidirectional=False, num_buckets=32, max_distance=128
    ).tolist() == [31, 31]
    # initialised as transformers' T5 (std d_model^-0.5), not nn.Embedding's N(0, 1)
    wide = POSITION_SCHEMES["t5"](256, 64, max_len=8, train_len=8)
    std = wide.table.relative_attention_bias.weight.std().item()
    assert abs(std - 256**-0.5) < 0.1 * 256**-0.5


# ------------------------------------------------------------------------------------------------
# The ensemble
# ------------------------------------------------------------------------------------------------

TRAINABLE = ("none", "sinusoidal", "learned", "rope", "alibi", "t5")


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
    _, records = ensemble(ids, keep_pairs=nothing, return_attention=True)
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


def test_scaled_rope_frequencies_follow_the_registry():
    d, base, L = 16, 10000.0, 32
    theta, _ = ROPE_SCALING["default"](d, base)
    for method in ZERO_SHOT_SCALING:  # up to L every method is plain RoPE
        inv, factor = scaled_rope_frequencies(method, d, base, seq_len=L, train_len=L)
        assert torch.equal(inv, theta) and factor == 1.0
    inv, _ = scaled_rope_frequencies("linear", d, base, seq_len=4 * L, train_len=L)
    torch.testing.assert_close(inv, theta / 4)
    inv, factor = scaled_rope_frequencies("yarn", d, base, seq_len=4 * L, train_len=L)
    expected = ROPE_SCALING["yarn"](d, base, factor=4.0, original_max_position_embeddings=L)
    assert torch.equal(inv, expected[0]) and factor == expected[1]
    stretch = (theta / inv).tolist()  # YaRN at s = 4 with 8 pairs: pair 0 kept, 2+ interpolated
    assert stretch[0] == pytest.approx(1.0) and 1.0 < stretch[1] < 4.0
    assert stretch[2:] == pytest.approx([4.0] * 6)
    inv, _ = scaled_rope_frequencies("dynamic", d, base, seq_len=2 * L, train_len=L)
    new_base = base * (DYNAMIC_FACTOR * 2 - (DYNAMIC_FACTOR - 1)) ** (d / (d - 2))
    torch.testing.assert_close(inv, ROPE_SCALING["default"](d, new_base)[0])
    with pytest.raises(ValueError, match="method"):
        scaled_rope_frequencies("longrope", d, base, seq_len=64, train_len=L)


# ------------------------------------------------------------------------------------------------
# Frequency pairs and head roles
# ------------------------------------------------------------------------------------------------


def test_pair_norm_share_pinned_sums_to_one_and_ignores_rotation():
    q = torch.tensor([[3.0, 0.0, 4.0, 1.0]])  # pairs (0, 2) and (1, 3): norms 5 and 1
    k = torch.tensor([[1.0, 2.0, 0.0, 0.0]])  # norms 1 and 2
    torch.testing.assert_close(pair_norm_share(q, k), torch.tensor([5 / 7, 2 / 7]))
    x = torch.randn(2, 3, 10, 16, generator=torch.Generator().manual_seed(0))
    y = torch.randn(2, 3, 10, 16, generator=torch.Generator().manual_seed(1))
    share = pair_norm_share(x, y)
    assert share.shape == (2, 3, 8)
    torch.testing.assert_close(share.sum(-1), torch.ones(2, 3))
    angles = rope_angles(torch.arange(10), rope_inv_freq(16, 100.0))
    cos, sin = angles.cos(), angles.sin()
    rotated = pair_norm_share(apply_rope(x, cos, sin), apply_rope(y, cos, sin))
    torch.testing.assert_close(rotated, share, atol=1e-5, rtol=1e-5)
    with pytest.raises(ValueError, match="d even"):
        pair_norm_share(x[..., :3], y[..., :3])
    with pytest.raises(TypeError, match="q"):
        pair_norm_share(torch.ones(2, 4, dtype=torch.long), y)


def test_head_scores_shapes_and_ranges():
    ensemble = DecoderEnsemble("rope", TINY, (0, 1))
    scores, records = head_scores(ensemble, n_sequences=4)
    shape = (2, TINY.n_layers, TINY.n_heads)
    assert scores.previous_token.shape == scores.induction.shape == shape
    for values in (scores.previous_token, scores.induction):
        assert ((values >= 0) & (values <= 1 + 1e-6)).all()
    assert len(records) == TINY.n_layers
    torch.testing.assert_close(records[0].weights.sum(-1), torch.ones(2, 4, 2, 8))


def test_run_extrapolation_lab_small():
    config = LabConfig(**{**TINY.__dict__, "eval_multiples": (1, 2)})
    lab = run_extrapolation_lab(
        config, (0, 1), ("rope", "alibi"), eval_tokens=64, fine_tune_steps=2
    )
    expected = ["rope", "alibi", *SCALED_VARIANTS, *FINE_TUNED_VARIANTS]
    assert list(lab.results) == expected
    for name in expected:
        assert set(lab.results[name]) == set(CONDITIONS)
        # at T = L both conditions are one evaluation
        assert lab.results[name]["seen"][8] is lab.results[name]["unseen"][8]
        assert lab.accuracy(name, "unseen", 16).shape == (2,)
    # zero-shot variants are the rope models: same accuracy at L
    assert torch.equal(lab.accuracy("rope+yarn", "seen", 8), lab.accuracy("rope", "seen", 8))
    assert lab.ensembles["rope+pi+ft"].fixed_rope is not None
    assert lab.ensembles["rope+ft"].fixed_rope is None
    assert lab.losses["rope"].shape == (config.steps, 2)
    with pytest.raises(ValueError, match="schemes"):
        run_extrapolation_lab(config, (0,), ("rope+pi",))


def test_seed_spread_takes_the_lower_middle_seed_for_an_even_count():
    odd = seed_spread([0.3, 0.9, 0.5])
    assert (odd.median.item(), odd.low.item(), odd.high.item()) == (0.5, 0.3, 0.9)
    even = seed_spread(torch.tensor([0.9, 0.2, 0.6, 0.4], dtype=torch.float64))
    assert even.median.item() == 0.4  # a seed's value, not numpy's mean of the middle two (0.5)
    assert (even.low.item(), even.high.item()) == (0.2, 0.9)
    # over the first axis: per column of [S, n]
    rows = seed_spread([[0.7, 0.2, 0.1], [0.5, 0.3, 0.2], [0.6, 0.3, 0.1], [0.4, 0.1, 0.5]])
    assert rows.median.tolist() == [0.5, 0.2, 0.1]
    assert rows.low.tolist() == [0.4, 0.1, 0.1] and rows.high.tolist() == [0.7, 0.3, 0.5]
    assert rows.median.dtype == torch.float64


@given(st.lists(st.floats(-1e6, 1e6), min_size=1, max_size=20))
def test_seed_spread_median_is_a_seed_between_low_and_high(values):
    spread = seed_spread(values)
    assert spread.median.item() in values
    assert spread.low.item() == min(values) and spread.high.item() == max(values)
    below = sum(v <= spread.median.item() for v in values)
    assert below >= (len(values) + 1) // 2  # at least half the seeds at or below it


def test_seed_spread_refuses_bad_input():
    with pytest.raises(ValueError, match="values"):
        seed_spread([])
    with pytest.raises(ValueError, match="values"):
        seed_spread(torch.tensor(0.5))
    with pytest.raises(ValueError, match="finite"):
        seed_spread([0.5, float("nan")])
    with pytest.raises(TypeError, match="values"):
        seed_spread("0.5")
