"""Tests for lib.sinusoidal: pinned values, the rotation property, layouts, errors."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from lib.sinusoidal import (
    SINUSOIDAL_LAYOUTS,
    relative_rotation,
    sinusoidal_frequencies,
    sinusoidal_pe,
    sinusoidal_pe_concat,
)


def paper_pe_by_hand(max_len: int, d_model: int, base: float = 10000.0) -> torch.Tensor:
    """Vaswani et al. 2017, section 3.5, written as two loops with the math module."""
    rows = []
    for p in range(max_len):
        row = []
        for i in range(d_model // 2):
            angle = p / base ** (2 * i / d_model)
            row += [math.sin(angle), math.cos(angle)]
        rows.append(row)
    return torch.tensor(rows, dtype=torch.float64)


def concat_pe_by_hand(max_len: int, d_model: int, base: float = 10000.0) -> torch.Tensor:
    """tensor2tensor / fairseq layout: sines then cosines, exponent i / (h - 1)."""
    h = d_model // 2
    rows = []
    for p in range(max_len):
        angles = [p * math.exp(-math.log(base) * i / (h - 1)) for i in range(h)]
        rows.append([math.sin(a) for a in angles] + [math.cos(a) for a in angles])
    return torch.tensor(rows, dtype=torch.float64)


# ---------------------------------------------------------------- pinned values


def test_pinned_d4():
    # d_model = 4: w_0 = 1, w_1 = 10000^(-2/4) = 1/100
    pe = sinusoidal_pe(3, 4)
    expected = torch.tensor(
        [
            [0.0, 1.0, 0.0, 1.0],
            [math.sin(1), math.cos(1), math.sin(0.01), math.cos(0.01)],
            [math.sin(2), math.cos(2), math.sin(0.02), math.cos(0.02)],
        ]
    )
    assert pe.shape == (3, 4) and pe.dtype == torch.float32
    torch.testing.assert_close(pe, expected, rtol=0, atol=1e-7)


def test_pinned_other_base():
    # base = 16, d_model = 4: w_1 = 16^(-1/2) = 1/4, so position 2 has angle 1/2 in pair 1
    pe = sinusoidal_pe(3, 4, base=16)
    torch.testing.assert_close(pe[2, 2:], torch.tensor([math.sin(0.5), math.cos(0.5)]))


@pytest.mark.parametrize(
    ("max_len", "d_model", "base"), [(50, 16, 10000.0), (7, 2, 10.0), (33, 10, 500.0)]
)
def test_matches_hand_formula(max_len, d_model, base):
    pe = sinusoidal_pe(max_len, d_model, base)
    torch.testing.assert_close(
        pe.double(), paper_pe_by_hand(max_len, d_model, base), atol=1e-7, rtol=0
    )


def test_frequencies():
    w = sinusoidal_frequencies(8)
    torch.testing.assert_close(w, torch.tensor([1.0, 0.1, 0.01, 0.001], dtype=torch.float64))


def test_large_positions_accurate():
    # angles are built in float64: the row for p = 131072 is accurate to float32 rounding
    p, d = 131072, 8
    row = []
    for i in range(d // 2):
        angle = p / 10000.0 ** (2 * i / d)
        row += [math.sin(angle), math.cos(angle)]
    pe = sinusoidal_pe(p + 1, d)
    torch.testing.assert_close(
        pe[p].double(), torch.tensor(row, dtype=torch.float64), atol=1e-7, rtol=0
    )


def test_values_bounded_and_pairs_on_unit_circle():
    pe = sinusoidal_pe(512, 64).double()
    assert pe.abs().max() <= 1.0
    radius2 = pe[:, 0::2] ** 2 + pe[:, 1::2] ** 2  # [512, 32]
    torch.testing.assert_close(radius2, torch.ones_like(radius2), atol=1e-6, rtol=0)


# ---------------------------------------------------------------- relative positions

PE_TABLE = sinusoidal_pe(2048, 32)


@given(p=st.integers(0, 1000), k=st.integers(-1000, 1000))
def test_shift_is_a_fixed_rotation(p, k):
    if p + k < 0:
        k = -p
    m_k = relative_rotation(k, 32)
    torch.testing.assert_close(m_k @ PE_TABLE[p], PE_TABLE[p + k], atol=2e-5, rtol=0)


@given(k=st.integers(-500, 500), d_half=st.integers(1, 16))
def test_rotation_is_orthogonal_and_inverse_is_transpose(k, d_half):
    d = 2 * d_half
    m_k = relative_rotation(k, d).double()
    eye = torch.eye(d, dtype=torch.float64)
    torch.testing.assert_close(m_k @ m_k.T, eye, atol=1e-6, rtol=0)
    torch.testing.assert_close(relative_rotation(-k, d).double(), m_k.T, atol=1e-7, rtol=0)


def test_rotation_pinned_block_and_sign():
    # d_model = 2: one pair with w = 1; PE(p) = (sin p, cos p)
    # and M_k = [[cos k, sin k], [-sin k, cos k]]
    k = 3
    expected = torch.tensor([[math.cos(k), math.sin(k)], [-math.sin(k), math.cos(k)]])
    torch.testing.assert_close(relative_rotation(k, 2), expected)
    torch.testing.assert_close(relative_rotation(0, 6), torch.eye(6))
    # the block acts on (sin, cos) as a rotation by -k: (sin 0, cos 0) = (0, 1) -> (sin k, cos k)
    torch.testing.assert_close(
        expected @ torch.tensor([0.0, 1.0]), torch.tensor([math.sin(k), math.cos(k)])
    )


def test_rotation_is_block_diagonal():
    m = relative_rotation(5, 8)
    mask = torch.zeros(8, 8, dtype=torch.bool)
    for i in range(4):
        mask[2 * i : 2 * i + 2, 2 * i : 2 * i + 2] = True
    assert torch.all(m[~mask] == 0)


@given(p=st.integers(0, 1000), k=st.integers(0, 1000))
def test_dot_product_depends_only_on_offset(p, k):
    d, base = 32, 10000.0
    expected = sum(math.cos(k / base ** (2 * i / d)) for i in range(d // 2))
    dot = float(PE_TABLE[p].double() @ PE_TABLE[p + k].double())
    assert dot == pytest.approx(expected, abs=2e-5)
    assert dot == pytest.approx(float(PE_TABLE[0].double() @ PE_TABLE[k].double()), abs=2e-5)


# ---------------------------------------------------------------- concat layout and registry


@pytest.mark.parametrize(
    ("max_len", "d_model", "base"), [(40, 16, 10000.0), (9, 4, 10000.0), (20, 6, 50.0)]
)
def test_concat_matches_hand_formula(max_len, d_model, base):
    pe = sinusoidal_pe_concat(max_len, d_model, base)
    assert pe.shape == (max_len, d_model) and pe.dtype == torch.float32
    torch.testing.assert_close(
        pe.double(), concat_pe_by_hand(max_len, d_model, base), atol=1e-7, rtol=0
    )


def test_concat_slowest_frequency_is_one_over_base():
    # the last sine column of the concat layout turns at exactly 1/base
    # (the paper's slowest: base^(-(d-2)/d))
    pe = sinusoidal_pe_concat(101, 8, base=100.0)
    assert float(pe[100, 3]) == pytest.approx(math.sin(1.0), abs=1e-7)


def test_concat_matches_transformers_m2m100():
    from transformers.models.m2m_100.modeling_m2m_100 import M2M100SinusoidalPositionalEmbedding

    theirs = M2M100SinusoidalPositionalEmbedding.get_embedding(300, 64, padding_idx=None)
    # theirs forms the angles p * w in float32 (error up to ~300 * 6e-8); ours in float64
    torch.testing.assert_close(sinusoidal_pe_concat(300, 64), theirs.float(), atol=5e-5, rtol=0)
    torch.testing.assert_close(
        sinusoidal_pe_concat(300, 64).double(), concat_pe_by_hand(300, 64), atol=1e-7, rtol=0
    )


def test_layouts_are_a_permutation_only_up_to_exponent():
    # the two layouts are NOT a permutation of each other: their exponents differ (i/(h-1) vs 2i/d)
    inter, concat = sinusoidal_pe(16, 8), sinusoidal_pe_concat(16, 8)
    perm = [0, 2, 4, 6, 1, 3, 5, 7]  # interleaved -> [sin | cos]
    torch.testing.assert_close(inter[:, perm][:, [0, 4]], concat[:, [0, 4]])  # w_0 = 1 in both
    assert not torch.allclose(inter[:, perm], concat, atol=1e-3)


def test_registry():
    assert set(SINUSOIDAL_LAYOUTS) == {"interleaved", "concat"}
    for name, fn in SINUSOIDAL_LAYOUTS.items():
        pe = fn(10, 8, base=10000.0)
        assert pe.shape == (10, 8), name
    assert SINUSOIDAL_LAYOUTS["interleaved"] is sinusoidal_pe


# ---------------------------------------------------------------- errors


@pytest.mark.parametrize("fn", [sinusoidal_pe, sinusoidal_pe_concat])
def test_errors(fn):
    with pytest.raises(ValueError, match="d_model"):
        fn(10, 7)
    with pytest.raises(ValueError, match="d_model"):
        fn(10, 0)
    with pytest.raises(ValueError, match="max_len"):
        fn(0, 8)
    with pytest.raises(ValueError, match="base"):
        fn(10, 8, base=0.0)
    with pytest.raises(ValueError, match="base"):
        fn(10, 8, base=-2.0)
    with pytest.raises(ValueError, match="base"):
        fn(10, 8, base=float("inf"))
    with pytest.raises(TypeError, match="max_len"):
        fn(10.0, 8)
    with pytest.raises(TypeError, match="d_model"):
        fn(10, "8")
    with pytest.raises(TypeError, match="base"):
        fn(10, 8, base="10000")
    with pytest.raises(TypeError, match="max_len"):
        fn(True, 8)


def test_concat_needs_d_model_at_least_4():
    with pytest.raises(ValueError, match="d_model must be >= 4"):
        sinusoidal_pe_concat(10, 2)


def test_relative_rotation_errors():
    with pytest.raises(TypeError, match="k"):
        relative_rotation(1.5, 8)
    with pytest.raises(ValueError, match="d_model"):
        relative_rotation(1, 5)
    with pytest.raises(ValueError, match="base"):
        relative_rotation(1, 8, base=0)


# ---------------------------------------------------------------- found by make mutation (docs/mutation.md)


@pytest.mark.parametrize("fn", [sinusoidal_pe, sinusoidal_pe_concat])
def test_errors_name_the_argument_exactly(fn):
    # r"\bname\b": the message names the argument itself, not a longer word that contains it
    with pytest.raises(ValueError, match=r"\bd_model\b"):
        fn(10, 7)
    with pytest.raises(ValueError, match=r"\bmax_len\b"):
        fn(0, 8)
    with pytest.raises(ValueError, match=r"\bbase\b"):
        fn(10, 8, base=0.0)
    with pytest.raises(ValueError, match=r"\bd_model\b"):
        sinusoidal_frequencies(7)
    with pytest.raises(ValueError, match=r"\bbase\b"):
        sinusoidal_frequencies(8, base=-1.0)
    with pytest.raises(TypeError, match=r"\bk\b"):
        relative_rotation(1.5, 8)


@pytest.mark.parametrize("fn", [sinusoidal_pe, sinusoidal_pe_concat])
def test_sizes_that_cannot_fit_are_refused_naming_the_arguments(fn):
    with pytest.raises(ValueError, match=r"^max_len=1000000000000, d_model=1000000: the result"):
        fn(10**12, 10**6)


def test_every_function_works_on_the_meta_device():
    # nothing may be made on the CPU behind the caller's back: the device reaches every tensor
    meta = torch.device("meta")
    assert sinusoidal_frequencies(8, device="meta").device == meta
    for fn in (sinusoidal_pe, sinusoidal_pe_concat):
        pe = fn(70000, 8, device="meta")  # several row blocks
        assert pe.device == meta and pe.shape == (70000, 8) and pe.dtype == torch.float32
    rotation = relative_rotation(3, 8, device="meta")
    assert rotation.device == meta and rotation.shape == (8, 8)


def test_concat_rows_past_the_block_size():
    # 2^18 pairs per block: d_model = 8 (4 pairs a row) gives blocks of 65,536 rows; every row
    # past the first block holds its own position p (a block restarting at p = 0 fails here)
    max_len, h = 65_536 + 200, 4
    pe = sinusoidal_pe_concat(max_len, 2 * h)
    i = torch.arange(h, dtype=torch.float64)
    angles = torch.arange(max_len, dtype=torch.float64)[:, None] * torch.exp(
        -math.log(10000.0) * i / (h - 1)
    )
    expected = torch.cat([torch.sin(angles), torch.cos(angles)], dim=1).to(torch.float32)
    assert torch.equal(pe, expected)
