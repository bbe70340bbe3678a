"""Tests for lib/lab.py: the induction task, the six position schemes, the tiny decoder, the lab."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from lib.lab import (
    IGNORE_INDEX,
    POSITION_SCHEMES,
    ALiBiPositions,
    InterpolatedRotaryPositions,
    LabConfig,
    LabResult,
    LearnedPositions,
    NoPositions,
    RotaryPositions,
    SinusoidalPositions,
    TinyDecoder,
    build_decoder,
    evaluate_decoder,
    induction_batch,
    run_lab,
    single_thread,
    train_decoder,
)

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
    assert list(POSITION_SCHEMES) == ["none", "sinusoidal", "learned", "rope", "rope+pi", "alibi"]
    acts = {name: cls.acts_on for name, cls in POSITION_SCHEMES.items()}
    assert acts == {
        "none": "nothing",
        "sinusoidal": "input",
        "learned": "input",
        "rope": "q/k",
        "rope+pi": "q/k",
        "alibi": "scores",
    }
    assert POSITION_SCHEMES["rope+pi"].shares_training_with == "rope"
    assert all(
        cls.shares_training_with is None for n, cls in POSITION_SCHEMES.items() if n != "rope+pi"
    )


def test_parameters_added_by_each_scheme():
    counts = {n: sum(p.numel() for p in _scheme(n).parameters()) for n in POSITION_SCHEMES}
    assert counts == {n: 0 for n in POSITION_SCHEMES} | {"learned": 32 * 16}


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
        (lambda m: m(torch.full((1, 5), 16)), ValueError, "vocab_size=16"),
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
