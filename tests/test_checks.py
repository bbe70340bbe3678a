"""lib._checks, and every public function refusing degenerate input with a named ValueError/TypeError
(base <= 1, lengths a formula divides by, overflowing factors, empty or non-finite inputs, sizes that
cannot fit), and running on the meta device (value checks run on the CPU only)."""

from __future__ import annotations

import math
import sys

import numpy
import pytest
import torch

from lib import _checks
from lib.alibi import alibi_bias, alibi_bias_bloom, alibi_slopes
from lib.attention import SelfAttention, attention
from lib.learned import LearnedPositionalEmbedding, TokenAndPositionEmbedding
from lib.rope import (
    RotaryEmbedding,
    precompute_freqs_cis,
    rope_angles,
    rope_frequencies,
    rope_inv_freq,
)
from lib.rope_scaling import ROPE_SCALING, scaled_inv_freq
from lib.sinusoidal import (
    relative_rotation,
    sinusoidal_frequencies,
    sinusoidal_pe,
    sinusoidal_pe_concat,
)


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda: _checks.check_int("n", 1.5), TypeError, "n must be an int"),
        (lambda: _checks.check_int("n", True), TypeError, "n must be an int"),
        (lambda: _checks.check_positive_int("n_heads", 0), ValueError, "n_heads must be >= 1"),
        (lambda: _checks.check_even("d_head", 7), ValueError, "d_head must be even"),
        (lambda: _checks.check_positive_float("base", 0.0), ValueError, "base must be > 0"),
        (lambda: _checks.check_positive_float("base", "1"), TypeError, "base must be a real"),
        (lambda: _checks.check_positive_float("f", float("nan")), ValueError, "f must be finite"),
        (lambda: _checks.check_tensor("x", [1, 2]), TypeError, "x must be a torch.Tensor"),
        (
            lambda: _checks.check_floating("x", torch.ones(2, dtype=torch.long)),
            TypeError,
            "floating-point",
        ),
        (
            lambda: _checks.check_integer_tensor("positions", torch.ones(2)),
            TypeError,
            "positions must be an integer tensor",
        ),
        (
            lambda: _checks.check_ndim("x", torch.ones(2), minimum=2),
            ValueError,
            "at least 2 dimension",
        ),
        (
            lambda: _checks.check_choice("pairing", "odd", ("half", "interleaved")),
            ValueError,
            "pairing must be one of",
        ),
    ],
)
def test_errors_name_the_argument_and_the_expectation(call, error, message):
    with pytest.raises(error, match=message):
        call()


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda: _checks.check_float("x", "1"), TypeError, "x must be a real number"),
        (lambda: _checks.check_float("x", True), TypeError, "x must be a real number"),
        (lambda: _checks.check_float("x", math.inf), ValueError, "x must be finite"),
        (lambda: _checks.check_float("x", -0.5, minimum=0.0), ValueError, "x must be >= 0.0"),
        (lambda: _checks.check_float("x", 1.5, maximum=1.0), ValueError, "x must be <= 1.0"),
        (lambda: _checks.check_index("active", 3, 3), ValueError, r"active must be in \[0, 2\]"),
        (lambda: _checks.check_index("active", -1, 3), ValueError, r"active must be in \[0, 2\]"),
        (lambda: _checks.check_index("active", 1.0, 3), TypeError, "active must be an int"),
        (
            lambda: _checks.check_positions("p", torch.zeros(2, dtype=torch.bfloat16)),
            TypeError,
            "p must be an integer tensor or float32/float64",
        ),
        (lambda: _checks.check_positions("p", [0, 1]), TypeError, "p must be a torch.Tensor"),
        (
            lambda: _checks.check_positions("p", torch.zeros(2, dtype=torch.bool)),
            TypeError,
            "p must be an integer tensor",
        ),
        (
            lambda: _checks.check_token_ids(torch.tensor([0, 10]), 10, name="input_ids"),
            ValueError,
            r"input_ids must lie in \[0, 9\] \(vocab_size = 10\), got id 10$",
        ),
        (
            lambda: _checks.check_token_ids(torch.tensor([[-3, 0]]), 10),
            ValueError,
            r"^ids must lie in \[0, 9\] \(vocab_size = 10\), got id -3$",
        ),
        (
            lambda: _checks.check_token_ids(torch.tensor([0.0]), 10),
            TypeError,
            "ids must be an integer tensor",
        ),
        (
            lambda: _checks.check_token_ids(torch.tensor([0]), 0),
            ValueError,
            "vocab_size must be >= 1",
        ),
        (
            lambda: _checks.check_index_range(
                "positions", torch.tensor([4]), 4, what="position", size_name="max_len"
            ),
            ValueError,
            r"^positions: position 4 is past the table: max_len=4 \(valid positions 0\.\.3\)$",
        ),
        (
            lambda: _checks.check_index_range("p", torch.tensor([[-2, 9]]), 4, what="row"),
            ValueError,
            r"^p: row -2 is negative: size=4 \(valid rows 0\.\.3\)$",
        ),
    ],
)
def test_public_checks_name_the_argument_and_the_expectation(call, error, message):
    with pytest.raises(error, match=message):
        call()


def test_public_checks_accept_numpy_scalars_and_boundaries():
    assert _checks.check_positive_int("n", numpy.int64(3)) == 3
    assert type(_checks.check_positive_int("n", numpy.int32(3))) is int
    assert _checks.check_index("i", numpy.int64(2), 3) == 2
    assert _checks.check_index("i", 0, 1) == 0
    assert _checks.check_float("x", numpy.float32(0.5), minimum=0.0, maximum=1.0) == 0.5
    assert _checks.check_float("x", 0, minimum=0.0) == 0.0
    assert _checks.check_float("x", 1, maximum=1.0) == 1.0
    ids = torch.tensor([[0, 9], [3, 4]])
    assert _checks.check_token_ids(ids, 10) is ids
    assert _checks.check_token_ids(ids, numpy.int64(10)) is ids
    empty = torch.zeros(0, dtype=torch.long)
    assert _checks.check_token_ids(empty, 1) is empty
    p = torch.tensor([0.5, 2.0], dtype=torch.float64)
    assert _checks.check_positions("p", p) is p


def test_the_id_range_check_skips_values_on_meta_only():
    on_meta = torch.full((3,), 99, dtype=torch.long, device="meta")
    assert _checks.check_token_ids(on_meta, 10) is on_meta  # no values to read
    with pytest.raises(ValueError, match="got id 99"):
        _checks.check_token_ids(torch.full((3,), 99), 10)


def test_valid_values_pass_through():
    assert _checks.check_even("d_head", 128) == 128
    assert _checks.check_positive_float("base", 10_000) == 10_000.0
    assert _checks.check_positive_float("f", 0, allow_zero=True) == 0.0
    x = torch.arange(3)
    assert _checks.check_integer_tensor("positions", x) is x


# ---------------------------------------------------------------- degenerate inputs, every module

#: Parameters that make each scaling method valid, so that only ``base`` is wrong below.
SCALING_PARAMS = {
    "default": {},
    "linear": {"factor": 2.0},
    "ntk": {"factor": 2.0},
    "dynamic": {"factor": 2.0, "max_position_embeddings": 16},
    "yarn": {"factor": 2.0, "original_max_position_embeddings": 16},
    "longrope": {
        "short_factor": [1.0] * 4,
        "long_factor": [2.0] * 4,
        "original_max_position_embeddings": 16,
        "factor": 2.0,
    },
    "llama3": {
        "factor": 2.0,
        "low_freq_factor": 1.0,
        "high_freq_factor": 4.0,
        "original_max_position_embeddings": 16,
    },
}

BASE_USERS = {
    "rope_inv_freq": lambda base: rope_inv_freq(8, base),
    "rope_frequencies": lambda base: rope_frequencies(8, 4, base),
    "precompute_freqs_cis": lambda base: precompute_freqs_cis(8, 4, base),
    "RotaryEmbedding": lambda base: RotaryEmbedding(8, 4, base),
    "sinusoidal_frequencies": lambda base: sinusoidal_frequencies(8, base),
    "sinusoidal_pe": lambda base: sinusoidal_pe(4, 8, base),
    "sinusoidal_pe_concat": lambda base: sinusoidal_pe_concat(4, 8, base),
    "relative_rotation": lambda base: relative_rotation(1, 8, base),
    **{
        f"scaled_inv_freq[{name}]": (
            lambda base, name=name, p=p: scaled_inv_freq(name, 8, base, **p)
        )
        for name, p in SCALING_PARAMS.items()
    },
}


def test_the_base_list_covers_every_scaling_method():
    assert set(SCALING_PARAMS) == set(ROPE_SCALING)


@pytest.mark.parametrize("user", sorted(BASE_USERS))
@pytest.mark.parametrize("base", [1.0, 0.5, 1 - 1e-12, 0.0, -10_000])
def test_a_base_at_most_1_is_refused_everywhere(user, base):
    # The message names the real rule, > 1, also for base <= 0 (not "must be > 0").
    with pytest.raises(ValueError, match=r"base must be > 1 .* got "):
        BASE_USERS[user](base)


@pytest.mark.parametrize("user", sorted(BASE_USERS))
def test_a_valid_base_just_above_1_still_works(user):
    BASE_USERS[user](1.5)


def test_check_base():
    assert _checks.check_base("base", 10_000) == 10_000.0
    with pytest.raises(TypeError, match="base must be a real number"):
        _checks.check_base("base", "10000")
    with pytest.raises(ValueError, match="base must be finite"):
        _checks.check_base("base", math.inf)


@pytest.mark.parametrize(
    ("name", "params", "message"),
    [
        # a length that a formula divides by (ln 1 = 0)
        (
            "longrope",
            {**SCALING_PARAMS["longrope"], "original_max_position_embeddings": 1},
            "original_max_position_embeddings must be >= 2, got 1",
        ),
        # factors that overflow the formula, or divide every frequency down to 0
        ("ntk", {"factor": 1e300}, r"factor=1e\+300 is too large"),
        ("linear", {"factor": 1e308}, r"linear: factor=1e\+308: some scaled frequencies"),
        (
            "dynamic",
            {"factor": 1e200, "max_position_embeddings": 16, "seq_len": 10**6},
            "dynamic: factor=1e.200, seq_len=1000000",
        ),
        ("yarn", {"factor": 1e308, "original_max_position_embeddings": 16}, "yarn: factor="),
        ("llama3", {**SCALING_PARAMS["llama3"], "factor": 1e308}, "llama3: factor="),
    ],
)
def test_scaling_refuses_degenerate_lengths_and_factors(name, params, message):
    with pytest.raises(ValueError, match=message):
        scaled_inv_freq(name, 8, 10_000.0, **params)


def test_a_base_so_large_that_frequencies_vanish_is_refused():
    with pytest.raises(ValueError, match=r"base=1e\+300 is too large for d_head=128"):
        rope_inv_freq(128, 1e300)


def test_empty_inputs_are_refused():
    q = torch.randn(2, 3, 4)
    with pytest.raises(ValueError, match=r"at least one key \(T_k >= 1\)"):
        attention(q, torch.randn(2, 0, 4), torch.randn(2, 0, 5))
    with pytest.raises(ValueError, match="last dim d >= 1"):
        attention(torch.randn(2, 3, 0), torch.randn(2, 3, 0), torch.randn(2, 3, 5))
    with pytest.raises(ValueError, match="inv_freq must have at least one frequency"):
        rope_angles(torch.arange(4), torch.empty(0))
    # zero queries are not degenerate: an empty result of the right shape
    assert attention(torch.randn(2, 0, 4), q, q).shape == (2, 0, 4)


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_non_finite_positions_and_frequencies_are_refused(bad):
    positions = torch.tensor([0.0, 1.5, bad])
    with pytest.raises(ValueError, match=r"positions must be finite .* 1 non-finite"):
        rope_angles(positions, rope_inv_freq(8))
    inv_freq = rope_inv_freq(8).clone()
    inv_freq[1] = bad
    with pytest.raises(ValueError, match=r"inv_freq must be finite"):
        rope_angles(torch.arange(3), inv_freq)


def test_check_finite_skips_values_off_the_cpu():
    assert not _checks.values_checkable(torch.empty(3, device="meta"))
    assert _checks.values_checkable(torch.empty(3), torch.empty(2))
    meta = torch.empty(3, device="meta")
    assert _checks.check_finite("x", meta) is meta  # nothing to read: no error, no crash


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: alibi_slopes(2**40), r"n_heads=1099511627776: .* GiB"),
        (lambda: alibi_bias(8, 2**24), r"n_heads=8, seq_len=16777216: .* GiB"),
        (lambda: alibi_bias_bloom(2**40, 2**20), r"n_heads=1099511627776, seq_len=1048576"),
        (lambda: sinusoidal_pe(2**40, 512), r"max_len=1099511627776, d_model=512"),
        (lambda: sinusoidal_pe_concat(2**40, 512), r"max_len=1099511627776, d_model=512"),
        (lambda: rope_frequencies(128, 2**40), r"d_head=128, max_len=1099511627776"),
        (lambda: LearnedPositionalEmbedding(2**40, 768), r"max_len=1099511627776, d_model=768"),
        (lambda: TokenAndPositionEmbedding(2**40, 8, 768), r"vocab_size=1099511627776"),
        (lambda: alibi_bias(2**32, 2**32, device="meta"), "more than a tensor can hold"),
    ],
)
def test_sizes_that_cannot_fit_are_refused_before_allocating(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_alibi_slopes_for_many_heads_do_not_loop_in_python():
    # counted, not timed: a per-head Python loop runs a traced line per head (millions here), the
    # vectorised branch a few dozen in all; a wall-clock bound depended on the machine's load
    lines = 0

    def trace(frame, event, arg):
        nonlocal lines
        if event == "line":
            lines += 1
        return trace

    sys.settrace(trace)
    try:
        slopes = alibi_slopes(2**22)
    finally:
        sys.settrace(None)
    assert 0 < lines < 10_000, lines
    assert slopes.shape == (2**22,) and bool((slopes > 0).all()) and bool((slopes < 1).all())
    assert bool((slopes[1 : 2**21] < slopes[: 2**21 - 1]).all())  # the power-of-two run falls


# ---------------------------------------------------------------- the meta device


def test_rotary_embedding_runs_on_meta_with_positions():
    rotary = RotaryEmbedding(8, 16).to("meta")
    q = torch.empty(2, 2, 5, 8, device="meta")
    for positions in (torch.arange(5, device="meta"), torch.zeros(2, 5, dtype=torch.long)):
        q2, k2 = rotary(q, q, positions.to("meta"))
        assert q2.shape == q.shape and q2.device.type == "meta" and k2.shape == q.shape
    with torch.device("meta"):
        built = RotaryEmbedding(8, 16)
    assert built.inv_freq.device.type == "meta"
    q2, _ = built(q, q)  # positions 0..T-1, built on meta too
    assert q2.device.type == "meta" and q2.shape == q.shape


def test_learned_embeddings_run_on_meta():
    with torch.device("meta"):
        table = LearnedPositionalEmbedding(16, 8)
        both = TokenAndPositionEmbedding(10, 16, 8)
        assert table(torch.arange(4)).shape == (4, 8)
        assert both(torch.zeros(2, 4, dtype=torch.long)).shape == (2, 4, 8)


def test_attention_runs_on_meta():
    q = torch.empty(2, 3, 4, 8, device="meta")
    assert attention(q, q, q, causal=True).shape == (2, 3, 4, 8)
    out, weights = attention(q, q, q, bias=alibi_bias(3, 4, device="meta"), return_weights=True)
    assert out.device.type == "meta" and weights.shape == (2, 3, 4, 4)
    layer = SelfAttention(8, 2).to("meta")
    assert layer(torch.empty(1, 4, 8, device="meta"), causal=True).shape == (1, 4, 8)


def test_value_checks_still_run_on_the_cpu():
    # the meta-device exemptions must not switch the checks off where values exist
    with pytest.raises(ValueError, match="past the table"):
        RotaryEmbedding(8, 4)(
            torch.randn(1, 1, 2, 8), torch.randn(1, 1, 2, 8), torch.tensor([0, 4])
        )
    with pytest.raises(ValueError, match="past the table"):
        LearnedPositionalEmbedding(4, 2)(torch.tensor([4]))
    fully_masked = torch.zeros(3, 3)
    fully_masked[1] = -math.inf
    with pytest.raises(ValueError, match="every key is masked"):
        attention(torch.randn(3, 2), torch.randn(3, 2), torch.randn(3, 2), bias=fully_masked)


def test_check_rows_and_vector_and_check_counts():
    rows, vector = torch.ones(3, 4), torch.ones(4)
    assert _checks.check_rows_and_vector("rows", rows, "q", vector) == (rows, vector)
    with pytest.raises(ValueError, match=r"^rows must be \[n, d\] and q \[d\], got shapes"):
        _checks.check_rows_and_vector("rows", rows, "q", torch.ones(5))
    with pytest.raises(ValueError, match="rows must be"):
        _checks.check_rows_and_vector("rows", torch.ones(4), "q", vector)  # 1-D table
    with pytest.raises(TypeError, match="q"):
        _checks.check_rows_and_vector("rows", rows, "q", torch.ones(4, dtype=torch.long))
    counts = torch.tensor([[0.0, 2.0], [1.0, 0.0]])
    assert _checks.check_counts("X", counts) is counts
    with pytest.raises(ValueError, match=r"^X must be non-negative \(co-occurrence counts\)$"):
        _checks.check_counts("X", torch.tensor([1.0, -0.5]))
    with pytest.raises(TypeError, match="X"):
        _checks.check_counts("X", torch.tensor([1, 2]))
    on_meta = torch.full((2,), -1.0, device="meta")
    assert _checks.check_counts("X", on_meta) is on_meta  # no values to read
