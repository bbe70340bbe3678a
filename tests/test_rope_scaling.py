"""Tests for lib.rope_scaling: pinned values, identities between methods, transformers, errors."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import assume, given
from hypothesis import strategies as st

from lib.rope import rope_inv_freq, rope_wavelengths
from lib.rope_scaling import (
    PAIR_REGIMES,
    REAL_CONFIGS,
    ROPE_SCALING,
    critical_dimension,
    llama3_scaling,
    longrope_scaling,
    pair_regimes,
    scaled_inv_freq,
    stacked_rotary,
    swapped_rotary,
    wavelengths,
    yarn_scaling,
    yarn_softmax_scale,
)

LLAMA31 = {
    "factor": 8.0,
    "low_freq_factor": 1.0,
    "high_freq_factor": 4.0,
    "original_max_position_embeddings": 8192,
}


def _theta(d: int, base: float) -> torch.Tensor:
    """Default frequencies in float64 from the formula."""
    return torch.tensor([base ** (-2 * i / d) for i in range(d // 2)], dtype=torch.float64)


# ------------------------------------------------------------------------------ pinned values


def test_registry_names():
    assert set(ROPE_SCALING) == {
        "default",
        "linear",
        "ntk",
        "dynamic",
        "yarn",
        "longrope",
        "llama3",
    }


def test_default_and_linear_pinned():
    inv, att = scaled_inv_freq("default", 4, 100.0)
    torch.testing.assert_close(inv, torch.tensor([1.0, 0.1]))
    assert att == 1.0 and inv.dtype == torch.float32
    inv, att = scaled_inv_freq("linear", 4, 100.0, factor=4.0)
    torch.testing.assert_close(inv, torch.tensor([0.25, 0.025]))
    assert att == 1.0


def test_ntk_pinned():
    # base' = 100 * 4 ** (4 / 2) = 1600 -> theta = [1, 1600 ** -0.5] = [1, 0.025]
    inv, att = scaled_inv_freq("ntk", 4, 100.0, factor=4.0)
    torch.testing.assert_close(inv, torch.tensor([1.0, 0.025]))
    assert att == 1.0


@given(d_half=st.integers(2, 64), factor=st.floats(1.0, 64.0), base=st.floats(10.0, 1e6))
def test_ntk_keeps_first_pair_and_divides_last_by_factor(d_half, factor, base):
    d = 2 * d_half
    inv, _ = scaled_inv_freq("ntk", d, base, factor=factor)
    theta = _theta(d, base)
    assert inv[0] == 1.0
    torch.testing.assert_close(inv[-1].double(), theta[-1] / factor, rtol=1e-6, atol=0)


def test_dynamic_pinned():
    # d=4: exponent d/(d-2) = 2; factor 2, L = 2 * max -> stretch = 2*2 - 1 = 3 -> base' = 100 * 9
    inv, att = scaled_inv_freq(
        "dynamic", 4, 100.0, factor=2.0, max_position_embeddings=1000, seq_len=2000
    )
    torch.testing.assert_close(inv, torch.tensor([1.0, 900.0**-0.5]))
    assert att == 1.0


def test_yarn_pinned():
    # d=8, base=1e4, L=2048: dim(32) = 8 ln(2048/(64 pi)) / (2 ln 1e4) = 1.008 -> floor 1;
    # dim(1) = 8 ln(2048/(2 pi)) / (2 ln 1e4) = 2.513 -> ceil 3; ramp over pairs = [0, 0, .5, 1]
    assert math.floor(8 * math.log(2048 / (64 * math.pi)) / (2 * math.log(1e4))) == 1
    assert math.ceil(8 * math.log(2048 / (2 * math.pi)) / (2 * math.log(1e4))) == 3
    inv, att = scaled_inv_freq("yarn", 8, 1e4, factor=4.0, original_max_position_embeddings=2048)
    expected = torch.tensor([1.0, 0.1, 0.5 * 0.01 / 4 + 0.5 * 0.01, 0.001 / 4])
    torch.testing.assert_close(inv, expected)
    assert att == pytest.approx(0.1 * math.log(4.0) + 1.0, rel=1e-15)


def test_yarn_attention_factor_variants():
    kwargs = {"original_max_position_embeddings": 4096}
    _, att = yarn_scaling(64, 1e4, factor=40.0, **kwargs)
    assert att == pytest.approx(0.1 * math.log(40.0) + 1.0)
    _, att = yarn_scaling(64, 1e4, factor=1.0, **kwargs)
    assert att == 1.0
    _, att = yarn_scaling(64, 1e4, factor=40.0, mscale=1.0, mscale_all_dim=0.707, **kwargs)
    expected = (0.1 * math.log(40.0) + 1.0) / (0.1 * 0.707 * math.log(40.0) + 1.0)
    assert att == pytest.approx(expected)
    _, att = yarn_scaling(64, 1e4, factor=40.0, mscale=1.0, mscale_all_dim=1.0, **kwargs)
    assert att == pytest.approx(1.0)
    _, att = yarn_scaling(64, 1e4, factor=40.0, attention_factor=1.5, mscale=1.0,
                          mscale_all_dim=0.5, **kwargs)  # fmt: skip
    assert att == 1.5


def test_yarn_extrapolates_fast_pairs_and_interpolates_slow_pairs():
    d, base, factor, original = 128, 1e6, 4.0, 32768
    inv, _ = yarn_scaling(d, base, factor=factor, original_max_position_embeddings=original)
    theta = _theta(d, base)
    turns = original * theta / (2 * math.pi)  # full turns of each pair within the original length
    fast, slow = turns > 32, turns < 1
    assert fast.any() and slow.any()
    torch.testing.assert_close(inv.double()[fast], theta[fast], rtol=1e-6, atol=0)
    torch.testing.assert_close(inv.double()[slow], theta[slow] / factor, rtol=1e-6, atol=0)
    middle = ~fast & ~slow
    assert ((inv.double()[middle] <= theta[middle] * (1 + 1e-6))
            & (inv.double()[middle] >= theta[middle] / factor * (1 - 1e-6))).all()  # fmt: skip


def test_longrope_pinned():
    d, base = 8, 100.0
    short, long = [1.0, 2.0, 4.0, 8.0], [2.0, 4.0, 8.0, 16.0]
    theta = _theta(d, base)
    kwargs = {
        "short_factor": short,
        "long_factor": long,
        "original_max_position_embeddings": 4096,
        "max_position_embeddings": 131072,
    }
    for seq_len, chosen in ((None, short), (4096, short), (4097, long)):
        inv, att = longrope_scaling(d, base, seq_len=seq_len, **kwargs)
        torch.testing.assert_close(inv, (theta / torch.tensor(chosen, dtype=torch.float64)).float())
        assert att == pytest.approx(math.sqrt(1 + math.log(32) / math.log(4096)))
    _, att = longrope_scaling(d, base, factor=1.0, **{**kwargs, "max_position_embeddings": None})
    assert att == 1.0
    _, att = longrope_scaling(d, base, attention_factor=1.25, **kwargs)
    assert att == 1.25


def test_llama3_bands():
    d, base = 128, 500000.0
    inv, att = llama3_scaling(d, base, **LLAMA31)
    assert att == 1.0
    theta = _theta(d, base)
    wavelength = 2 * math.pi / theta
    high = wavelength < 8192 / 4.0
    low = wavelength > 8192 / 1.0
    medium = ~high & ~low
    assert high.sum() > 0 and low.sum() > 0 and medium.sum() > 0
    torch.testing.assert_close(inv.double()[high], theta[high], rtol=1e-7, atol=0)
    torch.testing.assert_close(inv.double()[low], theta[low] / 8.0, rtol=1e-7, atol=0)
    smooth = (8192 / wavelength[medium] - 1.0) / (4.0 - 1.0)
    expected = (1 - smooth) * theta[medium] / 8.0 + smooth * theta[medium]
    torch.testing.assert_close(inv.double()[medium], expected, rtol=1e-7, atol=0)


def test_wavelengths_pinned():
    lam = wavelengths(torch.tensor([1.0, 0.5, 0.001]))
    torch.testing.assert_close(lam, torch.tensor([2 * math.pi, 4 * math.pi, 2000 * math.pi]))
    assert lam.dtype == torch.float32


@given(d_half=st.integers(1, 64), base=st.floats(2.0, 1e6), factor=st.floats(1.0, 64.0))
def test_wavelengths_are_rope_wavelengths_in_float32(d_half, base, factor):
    # chapters 9 and 12 call this one; it must stay lib.rope.rope_wavelengths, cast once
    inv_freq = rope_inv_freq(2 * d_half, base) / factor
    lam = wavelengths(inv_freq)
    assert lam.dtype == torch.float32
    assert torch.equal(lam, rope_wavelengths(inv_freq).to(torch.float32))


# ------------------------------------------------------------------------------ identities


@given(d_half=st.integers(1, 64), factor=st.floats(1.0, 100.0), base=st.floats(2.0, 1e6))
def test_linear_is_default_divided_by_factor(d_half, factor, base):
    d = 2 * d_half
    default, _ = scaled_inv_freq("default", d, base)
    linear, att = scaled_inv_freq("linear", d, base, factor=factor)
    torch.testing.assert_close(linear, default / factor, rtol=3e-7, atol=0)
    assert att == 1.0


@given(d_half=st.integers(2, 64), base=st.floats(2.0, 1e6), seq_len=st.integers(1, 4096))
def test_factor_one_equals_default(d_half, base, seq_len):
    d = 2 * d_half
    default, _ = scaled_inv_freq("default", d, base)
    cases = {
        "linear": {"factor": 1.0},
        "ntk": {"factor": 1.0},
        # dynamic with factor 1 is the default only up to max_position_embeddings: there the
        # stretch factor*L/max - (factor - 1) is 1; beyond it, it grows with L whatever the factor
        "dynamic": {"factor": 1.0, "max_position_embeddings": 4096, "seq_len": seq_len},
        "yarn": {"factor": 1.0, "original_max_position_embeddings": 4096},
        "llama3": {**LLAMA31, "factor": 1.0},
        "longrope": {
            "short_factor": [1.0] * d_half,
            "long_factor": [1.0] * d_half,
            "original_max_position_embeddings": 4096,
            "factor": 1.0,
            "seq_len": seq_len,
        },
    }
    for name, params in cases.items():
        inv, att = scaled_inv_freq(name, d, base, **params)
        torch.testing.assert_close(inv, default, rtol=3e-7, atol=0, msg=name)
        assert att == 1.0, name


@given(factor=st.floats(1.0, 16.0), seq_len=st.integers(1, 2048))
def test_dynamic_is_default_within_the_trained_length(factor, seq_len):
    default, _ = scaled_inv_freq("default", 64, 10000.0)
    dynamic, _ = scaled_inv_freq(
        "dynamic", 64, 10000.0, factor=factor, max_position_embeddings=2048, seq_len=seq_len
    )
    torch.testing.assert_close(dynamic, default, rtol=3e-7, atol=0)


@pytest.mark.parametrize("name", sorted(REAL_CONFIGS))
def test_real_configs_run(name):
    config = REAL_CONFIGS[name]
    assert isinstance(config["source"], str) and config["source"]
    inv, att = scaled_inv_freq(config["rope_type"], config["d_head"], config["base"],
                               **config["params"])  # fmt: skip
    assert inv.shape == (config["d_head"] // 2,) and inv.dtype == torch.float32
    assert att >= 1.0


def test_real_config_llama31_values():
    config = REAL_CONFIGS["Llama-3.1-8B"]
    assert config["base"] == 500000.0 and config["d_head"] == 128
    assert config["params"] == LLAMA31


# ------------------------------------------------------------------------------ transformers


def _hf(rope_type: str, d: int, base: float, params: dict, max_pos: int, seq_len=None):
    import transformers
    from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS
    from transformers.models.llama.modeling_llama import LlamaRotaryEmbedding

    config = transformers.LlamaConfig(
        hidden_size=2 * d,
        num_attention_heads=2,
        head_dim=d,
        num_hidden_layers=1,
        max_position_embeddings=max_pos,
        rope_parameters={"rope_type": rope_type, "rope_theta": base, **params},
    )
    if rope_type == "default":  # transformers 5.x keeps it out of ROPE_INIT_FUNCTIONS
        return LlamaRotaryEmbedding.compute_default_rope_parameters(config)
    return ROPE_INIT_FUNCTIONS[rope_type](config, None, seq_len=seq_len)


_SF = [1.0 + 0.05 * i for i in range(48)]
_LF = [1.0 + 1.5 * i for i in range(48)]
HF_CASES = [
    # (rope_type, d_head, base, transformers params, our extra params, max_pos, seq_len)
    ("default", 128, 10000.0, {}, {}, 4096, None),
    ("default", 80, 1e6, {}, {}, 4096, None),
    ("linear", 128, 10000.0, {"factor": 4.0}, {}, 16384, None),
    ("dynamic", 128, 10000.0, {"factor": 4.0}, {"max_position_embeddings": 4096}, 4096, None),
    ("dynamic", 64, 10000.0, {"factor": 2.0}, {"max_position_embeddings": 4096}, 4096, 20000),
    ("yarn", 128, 1e6, {"factor": 4.0, "original_max_position_embeddings": 32768}, {},
     131072, None),
    ("yarn", 64, 10000.0,
     {"factor": 40.0, "original_max_position_embeddings": 4096, "beta_fast": 16.0,
      "beta_slow": 2.0, "mscale": 1.0, "mscale_all_dim": 0.8, "truncate": False}, {},
     163840, None),
    ("yarn", 32, 10000.0,
     {"factor": 8.0, "original_max_position_embeddings": 2048, "attention_factor": 1.3}, {},
     16384, None),
    ("llama3", 128, 500000.0, LLAMA31, {}, 131072, None),
    ("llama3", 64, 10000.0, {**LLAMA31, "factor": 4.0, "high_freq_factor": 2.0}, {},
     32768, None),
    ("longrope", 96, 10000.0,
     {"short_factor": _SF, "long_factor": _LF, "original_max_position_embeddings": 4096},
     {"max_position_embeddings": 131072}, 131072, None),
    ("longrope", 96, 10000.0,
     {"short_factor": _SF, "long_factor": _LF, "original_max_position_embeddings": 4096},
     {"max_position_embeddings": 131072}, 131072, 5000),
    ("longrope", 96, 10000.0,
     {"short_factor": _SF, "long_factor": _LF, "original_max_position_embeddings": 4096,
      "factor": 16.0}, {}, 131072, 5000),
]  # fmt: skip


@pytest.mark.parametrize("case", HF_CASES, ids=lambda c: f"{c[0]}-d{c[1]}-L{c[6]}")
def test_matches_transformers(case):
    rope_type, d, base, params, extra, max_pos, seq_len = case
    hf_inv, hf_att = _hf(rope_type, d, base, dict(params), max_pos, seq_len)
    ours_params = {**params, **extra}
    if seq_len is not None:
        ours_params["seq_len"] = seq_len
    inv, att = scaled_inv_freq(rope_type, d, base, **ours_params)
    torch.testing.assert_close(inv, hf_inv.float(), rtol=1e-6, atol=0)
    assert att == pytest.approx(hf_att, rel=1e-12)


# ------------------------------------------------------------------------------ errors


def test_errors():
    with pytest.raises(ValueError, match=r"name must be one of .*'yarn'"):
        scaled_inv_freq("su", 64, 10000.0)
    with pytest.raises(TypeError, match="factor"):
        scaled_inv_freq("linear", 64, 10000.0)
    with pytest.raises(TypeError, match="original_max_position_embeddings"):
        scaled_inv_freq("yarn", 64, 10000.0, factor=4.0)
    with pytest.raises(TypeError, match="low_freq_factr"):
        scaled_inv_freq("llama3", 64, 10000.0, low_freq_factr=1.0)
    for name, params in (
        ("linear", {}),
        ("ntk", {}),
        ("dynamic", {"max_position_embeddings": 10}),
        ("yarn", {"original_max_position_embeddings": 10}),
        ("llama3", {k: v for k, v in LLAMA31.items() if k != "factor"}),
    ):
        with pytest.raises(ValueError, match="factor must be >= 1"):
            scaled_inv_freq(name, 64, 10000.0, factor=0.5, **params)
        with pytest.raises(ValueError, match="factor must be > 0"):
            scaled_inv_freq(name, 64, 10000.0, factor=-2.0, **params)
    with pytest.raises(ValueError, match="d_head"):
        scaled_inv_freq("default", 63, 10000.0)
    with pytest.raises(ValueError, match="d_head must be >= 4"):
        scaled_inv_freq("ntk", 2, 10000.0, factor=2.0)
    with pytest.raises(ValueError, match="base"):
        scaled_inv_freq("linear", 64, -1.0, factor=2.0)
    with pytest.raises(ValueError, match="seq_len"):
        scaled_inv_freq("dynamic", 64, 1e4, factor=2.0, max_position_embeddings=10, seq_len=0)
    with pytest.raises(TypeError, match="max_position_embeddings"):
        scaled_inv_freq("dynamic", 64, 1e4, factor=2.0, max_position_embeddings=10.5)


def test_errors_yarn():
    kwargs = {"factor": 4.0, "original_max_position_embeddings": 4096}
    with pytest.raises(ValueError, match="beta_fast must be >= beta_slow"):
        yarn_scaling(64, 1e4, beta_fast=1.0, beta_slow=32.0, **kwargs)
    with pytest.raises(ValueError, match="beta_slow"):
        yarn_scaling(64, 1e4, beta_slow=0.0, **kwargs)
    with pytest.raises(TypeError, match="truncate"):
        yarn_scaling(64, 1e4, truncate="yes", **kwargs)
    with pytest.raises(ValueError, match="mscale and mscale_all_dim"):
        yarn_scaling(64, 1e4, mscale=1.0, **kwargs)
    with pytest.raises(ValueError, match="attention_factor"):
        yarn_scaling(64, 1e4, attention_factor=0.0, **kwargs)
    with pytest.raises(ValueError, match="original_max_position_embeddings"):
        yarn_scaling(64, 1e4, factor=4.0, original_max_position_embeddings=0)
    with pytest.raises(ValueError, match="base must be > 1"):
        yarn_scaling(64, 1.0, **kwargs)


def test_errors_longrope_and_llama3():
    ok = {"short_factor": [1.0] * 4, "long_factor": [2.0] * 4,
          "original_max_position_embeddings": 4096, "max_position_embeddings": 131072}  # fmt: skip
    with pytest.raises(ValueError, match="short_factor must have d_head // 2 = 4 entries, got 3"):
        longrope_scaling(8, 1e4, **{**ok, "short_factor": [1.0] * 3})
    with pytest.raises(ValueError, match="long_factor must have d_head // 2 = 4"):
        longrope_scaling(8, 1e4, **{**ok, "long_factor": [1.0] * 5})
    with pytest.raises(TypeError, match="long_factor must be a sequence"):
        longrope_scaling(8, 1e4, **{**ok, "long_factor": 2.0})
    with pytest.raises(ValueError, match="each entry of short_factor"):
        longrope_scaling(8, 1e4, **{**ok, "short_factor": [1.0, 0.0, 1.0, 1.0]})
    with pytest.raises(ValueError, match="factor or max_position_embeddings"):
        longrope_scaling(8, 1e4, **{**ok, "max_position_embeddings": None})
    with pytest.raises(ValueError, match="max_position_embeddings / original"):
        longrope_scaling(8, 1e4, **{**ok, "max_position_embeddings": 1024})
    with pytest.raises(ValueError, match="low_freq_factor must be < high_freq_factor"):
        llama3_scaling(64, 5e5, **{**LLAMA31, "low_freq_factor": 4.0})
    with pytest.raises(ValueError, match="high_freq_factor"):
        llama3_scaling(64, 5e5, **{**LLAMA31, "high_freq_factor": 0.0})
    with pytest.raises(ValueError, match="inv_freq must be > 0"):
        wavelengths(torch.tensor([1.0, 0.0]))
    with pytest.raises(TypeError, match="inv_freq"):
        wavelengths(torch.tensor([1, 2]))


def test_default_agrees_with_rope_module():
    assert torch.equal(scaled_inv_freq("default", 96, 5e5)[0], rope_inv_freq(96, 5e5))


# ------------------------------------------------------------------------------ one θ source


def test_kept_pairs_are_bitwise_the_default_frequencies():
    # every method rescales lib.rope.rope_inv_freq's θ_i; a pair it keeps is that θ_i exactly
    default = rope_inv_freq(128, 500000.0)
    inv, _ = llama3_scaling(128, 500000.0, **LLAMA31)
    high = 2 * math.pi / default.double() < 8192 / 4.0
    assert high.sum() > 0 and torch.equal(inv[high], default[high])
    inv, _ = yarn_scaling(128, 1e6, factor=4.0, original_max_position_embeddings=32768)
    kept = 32768 * rope_inv_freq(128, 1e6).double() / (2 * math.pi) > 32
    assert kept.sum() > 0 and torch.equal(inv[kept], rope_inv_freq(128, 1e6)[kept])
    assert scaled_inv_freq("ntk", 64, 1e4, factor=1.0)[0].equal(rope_inv_freq(64, 1e4))


def test_scaling_reports_which_method_produced_a_refused_base():
    with pytest.raises(ValueError, match=r"dynamic: factor=1e\+200.*too large for d_head=8"):
        scaled_inv_freq("dynamic", 8, 1e4, factor=1e200, max_position_embeddings=16, seq_len=10**6)


# ------------------------------------------------------------------------------ critical dim


def test_critical_dimension_pinned_llama2():
    # Liu et al. 2023 (arXiv:2310.05209): d = 128, base 10,000, T_train = 4,096 -> 92
    assert 64 * math.log(4096 / (2 * math.pi)) / math.log(10000) == pytest.approx(45.027, abs=1e-3)
    assert critical_dimension(128, 10000.0, 4096) == 92
    # Llama 3 8B (base 500,000, 8,192 tokens): 2 * ceil(34.98) = 70
    assert critical_dimension(128, 500000.0, 8192) == 70


def test_critical_dimension_clips():
    assert critical_dimension(64, 10000.0, 6) == 0  # shorter than 2π: no pair turns once
    assert critical_dimension(8, 2.0, 10**9) == 8  # every pair turns


@given(d_half=st.integers(1, 64), base=st.floats(2.0, 1e7), train_len=st.integers(1, 10**6))
def test_critical_dimension_counts_the_pairs_that_turn(d_half, base, train_len):
    d = 2 * d_half
    x = d / 2 * math.log(train_len / (2 * math.pi)) / math.log(base)
    assume(abs(x - round(x)) > 1e-9)  # exact ties (measure zero) are where the ceiling differs
    periods = [2 * math.pi * base ** (2 * n / d) for n in range(d_half)]
    full = sum(p <= train_len for p in periods)
    assert critical_dimension(d, base, train_len) == 2 * full


@given(d_half=st.integers(1, 64), base=st.floats(2.0, 1e7), a=st.integers(1, 10**6),
       b=st.integers(1, 10**6))  # fmt: skip
def test_critical_dimension_grows_with_length_and_falls_with_base(d_half, base, a, b):
    d = 2 * d_half
    short, long = sorted((a, b))
    assert critical_dimension(d, base, short) <= critical_dimension(d, base, long)
    assert critical_dimension(d, base * 10, long) <= critical_dimension(d, base, long)
    value = critical_dimension(d, base, long)
    assert value % 2 == 0 and 0 <= value <= d


def test_critical_dimension_errors():
    with pytest.raises(ValueError, match="d_head"):
        critical_dimension(127, 1e4, 4096)
    with pytest.raises(ValueError, match="base must be > 1"):
        critical_dimension(128, 1.0, 4096)
    with pytest.raises(ValueError, match="train_len"):
        critical_dimension(128, 1e4, 0)
    with pytest.raises(TypeError, match="train_len"):
        critical_dimension(128, 1e4, 4096.0)


# ------------------------------------------------------------------------------ YaRN edge cases

YARN_EDGE_CASES = {
    # high = ⌈dim(β_slow)⌉ = 17 here: past d/2 − 1 = 15 but below the clamp d − 1 = 31, so a clamp
    # at d/2 − 1 would change the ramp (transformers clamps at dim − 1)
    "upper-clamp-d32": (32, 1e4, {"factor": 4.0, "original_max_position_embeddings": 65536}),
    "upper-clamp-d128": (128, 1e4, {"factor": 8.0, "original_max_position_embeddings": 65536}),
    # β_fast == β_slow without rounding: low == high, the guard's high += 0.001 is reached
    "low-equals-high-untruncated": (
        64, 1e4,
        {"factor": 4.0, "original_max_position_embeddings": 4096, "beta_fast": 8.0,
         "beta_slow": 8.0, "truncate": False},
    ),
    # an original length just under 2π: ⌊dim(32)⌋ < 0 and ⌈dim(1)⌉ = 0, both bounds end at 0
    "low-equals-high-short-original": (
        64, 1e4, {"factor": 4.0, "original_max_position_embeddings": 6}
    ),
}  # fmt: skip


@pytest.mark.parametrize("case", sorted(YARN_EDGE_CASES))
def test_yarn_edge_cases_match_transformers(case):
    d, base, params = YARN_EDGE_CASES[case]
    from lib.rope_scaling import _yarn_correction_dim

    original = params["original_max_position_embeddings"]
    low = _yarn_correction_dim(params.get("beta_fast", 32.0), d, base, original)
    high = _yarn_correction_dim(params.get("beta_slow", 1.0), d, base, original)
    # each case reaches the branch it is named for
    if case.startswith("upper-clamp"):
        assert d // 2 - 1 < math.ceil(high) <= d - 1
    elif params.get("truncate", True):
        assert max(math.floor(low), 0) == min(math.ceil(high), d - 1) == 0
    else:
        assert low == high
    hf_inv, hf_att = _hf("yarn", d, base, dict(params), 4 * original)
    inv, att = yarn_scaling(d, base, **params)
    assert torch.isfinite(inv).all()
    torch.testing.assert_close(inv, hf_inv.float(), rtol=1e-6, atol=0)
    assert att == pytest.approx(hf_att, rel=1e-12)


# ------------------------------------------------------------------------------ second sources

# Values from config.json files found with the project's search tool (copies of the official
# files, each naming the model in `_name_or_path`), typed from those files, not from memory:
#   Meta-Llama-3-8B: https://huggingface.co/pandyamarut/Meta-Llama-3-8B/blob/3689724debf35846edda50e9442887aa41c7157c/config.json
#     ("_name_or_path": "meta-llama/Meta-Llama-3-8B", "rope_theta": 500000.0, "rope_scaling": null,
#      "max_position_embeddings": 8192, hidden_size 4096, num_attention_heads 32)
#   Llama-3.1-8B: https://huggingface.co/NbAiLab/nb-llama-3.1-8B/blob/main/config.json
#     ("_name_or_path": "meta-llama/Llama-3.1-8B", rope_scaling llama3 factor 8.0, low 1.0, high 4.0,
#      original_max_position_embeddings 8192, rope_theta 500000.0, max_position_embeddings 131072)
#   Qwen2.5 YaRN: https://huggingface.co/raphgg/test4-2.5-72B/blob/main/config.json
#     ("_name_or_path": "/data/models/Qwen2.5-72B-Instruct", rope_scaling yarn factor 4.0,
#      original_max_position_embeddings 32768, rope_theta 1000000.0), the setting the Qwen2.5
#     Instruct cards give for long texts; Qwen2.5-7B-Instruct: hidden 3584, 28 heads
#     (https://huggingface.co/osllmai-community/Qwen2.5-7B-Instruct/blob/main/config.json)
SECOND_SOURCE = {
    "Llama-3-8B": {"rope_type": "default", "d_head": 4096 // 32, "base": 500000.0, "params": {},
                   "context_length": 8192},
    "Llama-3.1-8B": {"rope_type": "llama3", "d_head": 4096 // 32, "base": 500000.0,
                     "params": {"factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                                "original_max_position_embeddings": 8192},
                     "context_length": 131072},
    "Qwen2.5-7B-Instruct (YaRN)": {"rope_type": "yarn", "d_head": 3584 // 28, "base": 1000000.0,
                                   "params": {"factor": 4.0,
                                              "original_max_position_embeddings": 32768},
                                   "context_length": 4 * 32768},
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(SECOND_SOURCE))
def test_real_configs_match_a_second_source(name):
    ours = {k: v for k, v in REAL_CONFIGS[name].items() if k != "source"}
    assert ours == SECOND_SOURCE[name]


def test_llama2_config_matches_transformers_defaults():
    # LlamaConfig's defaults describe meta-llama/Llama-2-7b-hf (its docstring says so)
    import transformers

    config = transformers.LlamaConfig()
    assert "meta-llama/Llama-2-7b-hf" in transformers.LlamaConfig.__doc__
    expected = {"rope_type": "default", "d_head": config.hidden_size // config.num_attention_heads,
                "base": config.rope_parameters["rope_theta"], "params": {}}  # fmt: skip
    ours = REAL_CONFIGS["Llama-2-7B"]
    assert {k: ours[k] for k in expected} == expected


# ------------------------------------------------------------------ DeepSeek's softmax scale


@pytest.mark.parametrize("factor", [1.0, 2.0, 40.0])
@pytest.mark.parametrize("mscale_all_dim", [None, 0.0, 0.707, 1.0])
@pytest.mark.parametrize("qk_head_dim", [192, 64])
def test_yarn_softmax_scale_matches_transformers_deepseek(factor, mscale_all_dim, qk_head_dim):
    from transformers.models.deepseek_v3.modeling_deepseek_v3 import yarn_apply_mscale

    params = {"rope_type": "yarn", "factor": factor}
    if mscale_all_dim is not None:
        params["mscale_all_dim"] = mscale_all_dim
    expected = yarn_apply_mscale(params, qk_head_dim**-0.5)
    got = yarn_softmax_scale(qk_head_dim, factor=factor, mscale_all_dim=mscale_all_dim)
    assert got == expected  # the same float operations


def test_yarn_softmax_scale_pinned_deepseek_v2():
    # DeepSeek-V2: mscale = mscale_all_dim = 0.707, factor 40, q·k over 128 + 64 dimensions.
    boost = yarn_softmax_scale(192, factor=40.0, mscale_all_dim=0.707) * math.sqrt(192)
    assert boost == pytest.approx((0.1 * 0.707 * math.log(40) + 1) ** 2, rel=1e-12)
    assert round(boost, 4) == 1.5896
    # the cos/sin factor is then exactly 1: the whole temperature is in the softmax scale
    _, cos_sin = yarn_scaling(64, 10000.0, factor=40.0, original_max_position_embeddings=4096,
                              mscale=0.707, mscale_all_dim=0.707)  # fmt: skip
    assert cos_sin == 1.0
    # plain YaRN's logit factor at the same s is larger: (0.1 ln 40 + 1)^2
    _, plain = yarn_scaling(64, 10000.0, factor=40.0, original_max_position_embeddings=4096)
    assert round(plain**2, 4) == 1.8739


def test_yarn_softmax_scale_errors():
    with pytest.raises(ValueError, match="qk_head_dim"):
        yarn_softmax_scale(0, factor=2.0, mscale_all_dim=1.0)
    with pytest.raises(ValueError, match="factor"):
        yarn_softmax_scale(64, factor=0.5, mscale_all_dim=1.0)
    with pytest.raises(ValueError, match="mscale_all_dim"):
        yarn_softmax_scale(64, factor=2.0, mscale_all_dim=-1.0)
    with pytest.raises(TypeError, match="mscale_all_dim"):
        yarn_softmax_scale(64, factor=2.0, mscale_all_dim="1")


def test_real_config_gpt_oss_matches_transformers_defaults():
    from transformers import GptOssConfig
    from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS

    hf_config = GptOssConfig()
    config = REAL_CONFIGS["gpt-oss-120b"]
    params = {
        k: v for k, v in hf_config.rope_parameters.items() if k not in ("rope_type", "rope_theta")
    }
    assert params == config["params"]
    assert hf_config.rope_parameters["rope_theta"] == config["base"]
    assert hf_config.head_dim == config["d_head"]
    hf_inv, hf_att = ROPE_INIT_FUNCTIONS["yarn"](hf_config, None)
    inv, att = scaled_inv_freq("yarn", config["d_head"], config["base"], **config["params"])
    torch.testing.assert_close(inv, hf_inv, rtol=1e-6, atol=0)
    assert att == pytest.approx(hf_att, rel=1e-12)
    # truncate=False matters here: rounding the ramp's ends moves the blended pairs
    inv_rounded, _ = scaled_inv_freq("yarn", 64, 150000.0, **{**config["params"], "truncate": True})
    assert not torch.allclose(inv_rounded, inv, rtol=1e-3)


# ------------------------------------------------------------------------------ pair regimes


_REGIME_PINS = [
    # (d_head, base, method, params, s, unchanged / between / interpolated / beyond)
    (128, 500000.0, "llama3", LLAMA31, 8.0, (29, 6, 29, 0)),  # Llama 3.1 8B: a narrow band
    (128, 500000.0, "yarn", {"factor": 8.0, "original_max_position_embeddings": 8192}, 8.0,
     (19, 16, 29, 0)),  # YaRN's ramp is wider
    (128, 500000.0, "yarn", {"factor": 8.0, "original_max_position_embeddings": 8192,
                             "ramp": "paper"}, 8.0, (19, 16, 29, 0)),  # the paper's: same ends
    # chapter 9's measurement (d_head 16, L 16, s 4): YaRN keeps pair 0, PI for the rest
    (16, 10000.0, "yarn", {"factor": 4.0, "original_max_position_embeddings": 16}, 4.0,
     (1, 0, 7, 0)),
    # the paper's ramp in r puts pair 0 (2.5 turns < β_fast) on the ramp: nothing is kept
    (16, 10000.0, "yarn", {"factor": 4.0, "original_max_position_embeddings": 16,
                           "ramp": "paper"}, 4.0, (0, 1, 7, 0)),
]  # fmt: skip


@pytest.mark.parametrize(("d_head", "base", "method", "params", "factor", "counts"), _REGIME_PINS)
def test_pair_regimes_pinned(d_head, base, method, params, factor, counts):
    theta = rope_inv_freq(d_head, base)
    scaled, _ = ROPE_SCALING[method](d_head, base, **params)
    assert pair_regimes(theta, scaled, factor) == dict(zip(PAIR_REGIMES, counts, strict=True))


def test_pair_regimes_dynamic_beyond_s():
    """Dynamic NTK at 4× its trained length (factor 2): α = 7 > s = 4 stretches pairs beyond s."""
    theta = rope_inv_freq(16, 10000.0)
    dynamic, _ = ROPE_SCALING["dynamic"](
        16, 10000.0, factor=2.0, max_position_embeddings=16, seq_len=64
    )  # α = 2·4 − 1 = 7 > s = 4: the slowest pairs are stretched beyond s
    assert pair_regimes(theta, dynamic, 4.0) == {
        "unchanged": 1,
        "between": 4,
        "interpolated": 0,
        "beyond": 3,
    }


@given(
    d_half=st.integers(1, 64),
    factor=st.floats(1.5, 64.0),
    cut=st.integers(0, 64),
    ramp=st.floats(0.01, 0.99),
)
def test_pair_regimes_counts_a_built_stretch(d_half, factor, cut, ramp):
    """Pairs built unchanged / strictly between / at s / beyond s are counted as such."""
    cut = min(cut, d_half)
    theta = rope_inv_freq(2 * d_half, 10000.0).double()
    stretch = torch.full((d_half,), factor, dtype=torch.float64)
    stretch[:cut] = 1.0
    n_between = min(2, d_half - cut)
    stretch[cut : cut + n_between] = 1 + ramp * (factor - 1)  # strictly inside (1, s)
    n_beyond = 1 if d_half - cut - n_between >= 2 else 0
    if n_beyond:
        stretch[-1] = factor * 1.5
    scaled = (theta / stretch).float()
    got = pair_regimes(theta.float(), scaled, factor)
    assert got == {
        "unchanged": cut,
        "between": n_between,
        "interpolated": d_half - cut - n_between - n_beyond,
        "beyond": n_beyond,
    }
    assert sum(got.values()) == d_half and list(got) == list(PAIR_REGIMES)


def test_pair_regimes_linear_and_default():
    theta = rope_inv_freq(32, 10000.0)
    assert pair_regimes(theta, theta / 4, 4.0)["interpolated"] == 16
    assert pair_regimes(theta, theta.clone(), 4.0)["unchanged"] == 16
    assert pair_regimes(theta, theta.clone(), 1.0) == {
        "unchanged": 16,
        "between": 0,
        "interpolated": 0,
        "beyond": 0,
    }


def test_pair_regimes_tolerance_separates_rounding_from_a_change():
    theta = torch.tensor([1.0, 0.1], dtype=torch.float64)
    nudged = theta / torch.tensor([1 + 1e-5, 4 * (1 - 1e-5)], dtype=torch.float64)
    assert pair_regimes(theta, nudged, 4.0) == {
        "unchanged": 0,
        "between": 2,
        "interpolated": 0,
        "beyond": 0,
    }
    assert pair_regimes(theta, nudged, 4.0, rtol=1e-4)["between"] == 0


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"inv_freq": [1.0, 0.1]}, TypeError, "inv_freq"),
        ({"scaled": torch.tensor([1, 2])}, TypeError, "scaled"),
        ({"scaled": torch.tensor([0.5])}, ValueError, "shape"),
        ({"scaled": torch.tensor([0.5, float("nan")])}, ValueError, "scaled"),
        ({"inv_freq": torch.tensor([1.0, 0.0])}, ValueError, "inv_freq must be > 0"),
        ({"scaled": torch.tensor([2.0, 0.1])}, ValueError, "faster"),
        ({"factor": 0.5}, ValueError, "factor"),
        ({"factor": "4"}, TypeError, "factor"),
        ({"rtol": 0.5}, ValueError, "rtol"),
        ({"rtol": -1e-6}, ValueError, "rtol"),
        ({"inv_freq": torch.empty(2, device="meta")}, ValueError, "meta"),
    ],
)
def test_pair_regimes_rejects_bad_input(kwargs, error, match):
    args = {
        "inv_freq": torch.tensor([1.0, 0.1]),
        "scaled": torch.tensor([0.5, 0.05]),
        "factor": 2.0,
    } | kwargs
    with pytest.raises(error, match=match):
        pair_regimes(args.pop("inv_freq"), args.pop("scaled"), args.pop("factor"), **args)


# ------------------------------------------------------------------------------ YaRN's two ramps


@given(
    half=st.integers(2, 64),
    log_base=st.floats(math.log(100.0), math.log(1e6)),
    factor=st.floats(1.0, 64.0),
    train_len=st.integers(2, 200_000),
    beta_slow=st.floats(0.25, 4.0),
    width=st.floats(0.5, 60.0),
)
def test_yarn_paper_ramp_is_gamma_of_turns(half, log_base, factor, train_len, beta_slow, width):
    """ramp="paper": θ' = (1 − γ(r))·θ/s + γ(r)·θ, r = L/λ, γ linear in r (YaRN §3.2), float64."""
    d, base, beta_fast = 2 * half, math.exp(log_base), beta_slow + width
    inv, att = yarn_scaling(
        d, base, factor=factor, original_max_position_embeddings=train_len,
        beta_fast=beta_fast, beta_slow=beta_slow, ramp="paper",
    )  # fmt: skip
    theta = _theta(d, base)
    r = train_len / (2 * math.pi / theta)
    gamma = ((r - beta_slow) / (beta_fast - beta_slow)).clamp(0, 1)
    expected = (1 - gamma) * theta / factor + gamma * theta
    torch.testing.assert_close(inv, expected.float(), rtol=2e-6, atol=0)
    assert att == pytest.approx(0.1 * math.log(factor) + 1 if factor > 1 else 1.0, rel=1e-12)
    # the same rule as Llama 3.1's with low = β_slow, high = β_fast (its wavelength bounds L/a, L/b)
    as_llama3, _ = llama3_scaling(
        d, base, factor=factor, low_freq_factor=beta_slow, high_freq_factor=beta_fast,
        original_max_position_embeddings=train_len,
    )  # fmt: skip
    torch.testing.assert_close(inv, as_llama3, rtol=2e-6, atol=0)


def test_yarn_paper_ramp_pinned_chapter9_pair0():
    """d_head 16, L 16, s 4: pair 0 makes 16/2π = 2.55 turns, γ = 0.050, stretch 3.479 (paper ramp);
    the reference code's ramp keeps it (its lower index −3 is clipped to 0)."""
    paper, _ = yarn_scaling(
        16, 10000.0, factor=4.0, original_max_position_embeddings=16, ramp="paper"
    )
    index, _ = yarn_scaling(16, 10000.0, factor=4.0, original_max_position_embeddings=16)
    gamma = (16 / (2 * math.pi) - 1) / 31
    assert 1 / paper[0].item() == pytest.approx(1 / ((1 - gamma) / 4 + gamma), rel=1e-6)
    assert 1 / paper[0].item() == pytest.approx(3.4793, abs=1e-4)
    assert index[0].item() == 1.0
    torch.testing.assert_close(paper[1:], index[1:])  # every other pair is divided by s in both


def test_yarn_ramps_agree_where_the_clip_is_idle_at_the_ends():
    """Llama 3 8B at s 8: both ramps keep the fastest and interpolate the slowest pairs alike."""
    kw = {"factor": 8.0, "original_max_position_embeddings": 8192}
    paper, _ = yarn_scaling(128, 500000.0, **kw, ramp="paper")
    index, _ = yarn_scaling(128, 500000.0, **kw)
    theta = rope_inv_freq(128, 500000.0)
    assert torch.equal(paper[:10], theta[:10]) and torch.equal(index[:10], theta[:10])
    torch.testing.assert_close(paper[-20:], index[-20:])
    assert not torch.allclose(paper, index)  # the middle differs: index vs r


@pytest.mark.parametrize(
    ("ramp", "error"), [("r", ValueError), ("Paper", ValueError), (1, TypeError)]
)
def test_yarn_ramp_rejects_unknown(ramp, error):
    with pytest.raises(error, match="ramp"):
        yarn_scaling(16, 10000.0, factor=2.0, original_max_position_embeddings=16, ramp=ramp)


# ------------------------------------------------------------------------------ swapped_rotary


def _rotary(rope_parameters: dict, d: int = 64, max_pos: int = 8192):
    import transformers
    from transformers.models.llama.modeling_llama import LlamaRotaryEmbedding

    config = transformers.LlamaConfig(
        hidden_size=2 * d, num_attention_heads=2, head_dim=d, num_hidden_layers=1,
        max_position_embeddings=max_pos, rope_parameters=rope_parameters,
    )  # fmt: skip
    return LlamaRotaryEmbedding(config)


@pytest.mark.parametrize(
    "params",
    [
        {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 8192},
        {"rope_type": "linear", "factor": 4.0},
        {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
         "original_max_position_embeddings": 8192},
    ],
)  # fmt: skip
def test_swapped_rotary_equals_transformers_scaled_module(params):
    """A default rotary module with a scaled module's θ' and factor swapped in = that module."""
    default = _rotary({"rope_type": "default", "rope_theta": 100000.0})
    scaled = _rotary({**params, "rope_theta": 100000.0})
    x = torch.zeros(1, 300, 64)
    positions = torch.arange(300)[None]
    want = scaled(x, positions)
    before = default(x, positions)
    with swapped_rotary(default, scaled.inv_freq.clone(), scaled.attention_scaling):
        got = default(x, positions)
    assert torch.equal(got[0], want[0]) and torch.equal(got[1], want[1])
    after = default(x, positions)
    assert torch.equal(after[0], before[0]) and torch.equal(after[1], before[1])
    # lib's registry entry for the same method gives the same tables within float32 rounding
    name = params.pop("rope_type")
    inv, att = ROPE_SCALING[name](64, 100000.0, **params)
    with swapped_rotary(default, inv, att):
        got = default(x, positions)
    torch.testing.assert_close(got[0], want[0], rtol=0, atol=2e-5)
    assert default.attention_scaling == 1.0


def test_swapped_rotary_restores_after_an_error():
    rotary = _rotary({"rope_type": "default", "rope_theta": 10000.0})
    old = rotary.inv_freq
    with pytest.raises(RuntimeError, match="boom"), swapped_rotary(rotary, old / 2, 1.5):
        assert rotary.attention_scaling == 1.5 and torch.equal(rotary.inv_freq, old / 2)
        raise RuntimeError("boom")
    assert rotary.inv_freq is old and rotary.attention_scaling == 1.0


def test_swapped_rotary_on_meta():
    with torch.device("meta"):
        rotary = _rotary({"rope_type": "default", "rope_theta": 10000.0})
    with swapped_rotary(rotary, torch.empty(32, device="meta"), 2.0) as module:
        assert module.inv_freq.is_meta and module.attention_scaling == 2.0


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"rotary": torch.nn.Linear(2, 2)}, TypeError, "rotary"),
        ({"inv_freq": [1.0] * 32}, TypeError, "inv_freq"),
        ({"inv_freq": torch.ones(32, dtype=torch.int64)}, TypeError, "inv_freq"),
        ({"inv_freq": torch.ones(16)}, ValueError, "shape"),
        ({"inv_freq": torch.full((32,), float("nan"))}, ValueError, "inv_freq"),
        ({"inv_freq": -torch.ones(32)}, ValueError, "inv_freq"),
        ({"attention_factor": 0.0}, ValueError, "attention_factor"),
        ({"attention_factor": "1"}, TypeError, "attention_factor"),
    ],
)
def test_swapped_rotary_rejects_bad_input(kwargs, error, match):
    args = {
        "rotary": _rotary({"rope_type": "default", "rope_theta": 10000.0}),
        "inv_freq": torch.ones(32),
        "attention_factor": 1.0,
    } | kwargs
    with pytest.raises(error, match=match), swapped_rotary(**args):
        pass


def test_swapped_rotary_on_smollm2_logits():
    """SmolLM2-135M: its own θ swapped in gives bit-identical logits; lib's default entry (θ in
    float64, rounded once) differs from transformers' float32 θ by at most one ulp, and moves
    the logits by < 1e-3; PI (linear, factor 4) moves them by far more."""
    from lib.smollm import load_smollm

    model, tokenizer = load_smollm()
    rotary = model.model.rotary_emb
    ids = torch.tensor([tokenizer("The river bank was quiet in the morning.")["input_ids"]])
    with torch.no_grad():
        native = model(ids).logits
        with swapped_rotary(rotary, rotary.inv_freq.clone(), rotary.attention_scaling):
            same = model(ids).logits
        inv, att = ROPE_SCALING["default"](64, 100000.0)
        assert (inv - rotary.inv_freq).abs().max() <= torch.finfo(torch.float32).eps * 1.0
        with swapped_rotary(rotary, inv, att):
            registry = model(ids).logits
        with swapped_rotary(rotary, *ROPE_SCALING["linear"](64, 100000.0, factor=4.0)):
            pi = model(ids).logits
        after = model(ids).logits
    assert torch.equal(same, native) and torch.equal(after, native)
    assert (registry - native).abs().max() < 1e-3
    assert (pi - native).abs().max() > 0.1


def test_stacked_rotary_rows_equal_swapped_rotary_bit_for_bit():
    """Block k of one stacked pass = a pass with table k swapped in, exactly; restored after."""
    rotary = _rotary({"rope_type": "default", "rope_theta": 100000.0})
    tables = [
        ROPE_SCALING["default"](64, 100000.0),
        ROPE_SCALING["linear"](64, 100000.0, factor=4.0),
        ROPE_SCALING["yarn"](64, 100000.0, factor=4.0, original_max_position_embeddings=8192),
    ]
    n, T = 2, 50
    positions = torch.arange(T).repeat(3 * n, 1) + torch.arange(3 * n)[:, None]  # rows differ
    x = torch.zeros(3 * n, T, 64)
    with stacked_rotary(rotary, torch.stack([t[0] for t in tables]), [t[1] for t in tables], n):
        cos, sin = rotary(x, positions)
    for k, (inv, att) in enumerate(tables):
        rows = slice(k * n, (k + 1) * n)
        with swapped_rotary(rotary, inv, att):
            want_cos, want_sin = rotary(x[rows], positions[rows])
        assert torch.equal(cos[rows], want_cos) and torch.equal(sin[rows], want_sin)
    assert rotary.inv_freq.shape == (32,) and rotary.attention_scaling == 1.0


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"rotary": torch.nn.Linear(2, 2)}, TypeError, "rotary"),
        ({"inv_freqs": torch.ones(32)}, ValueError, "shape"),
        ({"inv_freqs": torch.ones(2, 32, dtype=torch.int64)}, TypeError, "inv_freqs"),
        ({"inv_freqs": torch.zeros(2, 32)}, ValueError, "inv_freqs"),
        ({"attention_factors": [1.0]}, ValueError, "K = 2"),
        ({"attention_factors": "ab"}, TypeError, "attention_factors"),
        ({"attention_factors": [1.0, -1.0]}, ValueError, "attention_factors"),
        ({"rows_per_table": 0}, ValueError, "rows_per_table"),
    ],
)
def test_stacked_rotary_rejects_bad_input(kwargs, error, match):
    args = {
        "rotary": _rotary({"rope_type": "default", "rope_theta": 10000.0}),
        "inv_freqs": torch.ones(2, 32),
        "attention_factors": [1.0, 1.0],
        "rows_per_table": 1,
    } | kwargs
    with pytest.raises(error, match=match), stacked_rotary(**args):
        pass
