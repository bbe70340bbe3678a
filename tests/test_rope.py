"""Tests for lib.rope: pinned values, properties, the two pairings, precision, transformers."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from lib.rope import (
    RotaryEmbedding,
    apply_rope,
    apply_rope_reference,
    apply_rotary_emb_complex,
    half_to_interleaved_permutation,
    interleaved_to_half_permutation,
    permute_qk_weight_hf_to_meta,
    permute_qk_weight_meta_to_hf,
    precompute_freqs_cis,
    rope_angles,
    rope_frequencies,
    rope_inv_freq,
    rope_max_angles,
    rope_wavelengths,
    rotate_half,
)

PAIRINGS = ("half", "interleaved")


def _rotate_pair(a: float, b: float, angle: float) -> tuple[float, float]:
    """Rotate the 2-D vector (a, b) by ``angle`` (plain math, independent of lib)."""
    return a * math.cos(angle) - b * math.sin(angle), b * math.cos(angle) + a * math.sin(angle)


def _rotation_reference(x: torch.Tensor, positions, base: float, pairing: str) -> torch.Tensor:
    """RoPE in float64 with explicit loops over pairs; x: [T, d]."""
    d = x.shape[-1]
    out = torch.empty(x.shape, dtype=torch.float64)
    for t, m in enumerate(positions):
        for i in range(d // 2):
            theta = base ** (-2 * i / d)
            a, b = (i, i + d // 2) if pairing == "half" else (2 * i, 2 * i + 1)
            out[t, a], out[t, b] = _rotate_pair(float(x[t, a]), float(x[t, b]), m * theta)
    return out


# ------------------------------------------------------------------------------ pinned values


def test_inv_freq_pinned():
    assert rope_inv_freq(4, base=100.0).tolist() == [1.0, pytest.approx(0.1, rel=1e-7)]
    expected = torch.tensor([1.0, 0.1, 0.01, 0.001], dtype=torch.float64).float()
    assert torch.equal(rope_inv_freq(8, base=10000.0), expected)
    assert rope_inv_freq(128).dtype == torch.float32
    assert rope_inv_freq(128).shape == (64,)


def test_inv_freq_is_correctly_rounded():
    # every value is the float32 nearest to the float64 formula
    d, base = 96, 500000.0
    exact = torch.tensor([base ** (-2 * i / d) for i in range(d // 2)], dtype=torch.float64)
    assert torch.equal(rope_inv_freq(d, base), exact.float())


def test_apply_rope_pinned_d4_base100_position1():
    x = torch.tensor([[1.0, 2.0, 3.0, 4.0]])  # one position
    cos, sin = rope_frequencies(4, max_len=2, base=100.0)
    # position 1: angles (1, 0.1); table row 1
    c, s = cos[1:2], sin[1:2]
    y0, y2 = _rotate_pair(1.0, 3.0, 1.0)
    y1, y3 = _rotate_pair(2.0, 4.0, 0.1)
    expected_half = torch.tensor([[y0, y1, y2, y3]])
    torch.testing.assert_close(apply_rope(x, c, s, pairing="half"), expected_half)
    z0, z1 = _rotate_pair(1.0, 2.0, 1.0)
    z2, z3 = _rotate_pair(3.0, 4.0, 0.1)
    expected_inter = torch.tensor([[z0, z1, z2, z3]])
    torch.testing.assert_close(apply_rope(x, c, s, pairing="interleaved"), expected_inter)


def test_rope_frequencies_pinned():
    cos, sin = rope_frequencies(4, max_len=3, base=100.0)
    assert cos.shape == sin.shape == (3, 2)
    assert cos.dtype == sin.dtype == torch.float32
    expected_angles = torch.tensor([[0.0, 0.0], [1.0, 0.1], [2.0, 0.2]], dtype=torch.float64)
    torch.testing.assert_close(cos, expected_angles.cos().float())
    torch.testing.assert_close(sin, expected_angles.sin().float())


@pytest.mark.parametrize(("d_head", "max_len"), [(128, 3 * 4096 + 7), (2**18, 7)])
def test_rope_frequencies_over_several_blocks(d_head, max_len):
    # the angles are formed 2^18 // (d_head / 2) rows at a time (4096 rows for d_head = 128, 2 for
    # d_head = 2^18): every row m of every block must hold cos/sin(m·θ_i) of its own position, the
    # same float32 product as rope_angles (a block restarting at position 0 fails here)
    d_half = d_head // 2
    assert max_len > 3 * max(1, 2**18 // d_half)  # at least four blocks, the last one partial
    cos, sin = rope_frequencies(d_head, max_len=max_len, base=10000.0)
    angles = rope_angles(torch.arange(max_len), rope_inv_freq(d_head, 10000.0))
    assert torch.equal(cos, angles.cos()) and torch.equal(sin, angles.sin())


def test_rope_angles_shapes_and_dtypes():
    inv = rope_inv_freq(8)
    pos = torch.arange(5).expand(2, 3, 5)  # [B, H, T]
    angles = rope_angles(pos, inv)
    assert angles.shape == (2, 3, 5, 4)
    assert angles.dtype == torch.float32
    torch.testing.assert_close(angles[1, 2, 3], 3 * inv)
    # fractional positions (position interpolation) are allowed in float32/float64
    half_step = rope_angles(torch.tensor([0.5], dtype=torch.float64), inv)
    torch.testing.assert_close(half_step[0], (0.5 * inv.double()).float())
    # a bf16 inv_freq is upcast: result float32
    assert rope_angles(torch.arange(3), inv.bfloat16()).dtype == torch.float32


def test_apply_rope_matches_loop_reference():
    torch.manual_seed(0)
    x = torch.randn(6, 8, dtype=torch.float64)
    cos, sin = rope_frequencies(8, max_len=10, base=50.0)
    for pairing in PAIRINGS:
        expected = _rotation_reference(x, range(6), 50.0, pairing)
        got = apply_rope(x, cos[:6], sin[:6], pairing=pairing)  # callers slice the rows
        assert got.dtype == torch.float64
        torch.testing.assert_close(got, expected, atol=1e-6, rtol=1e-6)


def test_rotate_half_pinned():
    x = torch.tensor([1.0, 2.0, 3.0, 4.0])
    assert rotate_half(x).tolist() == [-3.0, -4.0, 1.0, 2.0]


# ------------------------------------------------------------------------------ properties


@given(
    d_half=st.integers(1, 16),
    n_pos=st.integers(1, 12),
    pairing=st.sampled_from(PAIRINGS),
    seed=st.integers(0, 2**16),
)
def test_rope_preserves_norms(d_half, n_pos, pairing, seed):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(2, n_pos, 2 * d_half, generator=g, dtype=torch.float64)
    cos, sin = rope_frequencies(2 * d_half, max_len=n_pos + 3)
    y = apply_rope(x, cos[:n_pos], sin[:n_pos], pairing=pairing)
    torch.testing.assert_close(y.norm(dim=-1), x.norm(dim=-1))


@given(
    m=st.integers(0, 500),
    n=st.integers(0, 500),
    shift=st.integers(0, 500),
    pairing=st.sampled_from(PAIRINGS),
    seed=st.integers(0, 2**16),
)
def test_score_depends_only_on_offset(m, n, shift, pairing, seed):
    g = torch.Generator().manual_seed(seed)
    d = 16
    q = torch.randn(1, d, generator=g, dtype=torch.float64)
    k = torch.randn(1, d, generator=g, dtype=torch.float64)
    inv = rope_inv_freq(d).double()

    def rotated(v, position):
        angles = rope_angles(torch.tensor([position], dtype=torch.float64), inv).double()
        return apply_rope(v, angles.cos(), angles.sin(), pairing=pairing)

    score = (rotated(q, m) * rotated(k, n)).sum()
    shifted = (rotated(q, m + shift) * rotated(k, n + shift)).sum()
    torch.testing.assert_close(score, shifted, atol=1e-4, rtol=1e-4)


def test_score_matrix_is_toeplitz():
    torch.manual_seed(1)
    q = torch.randn(1, 16).expand(12, 16)  # the same query at every position
    k = torch.randn(1, 16).expand(12, 16)
    cos, sin = rope_frequencies(16, max_len=12)
    scores = apply_rope(q, cos, sin) @ apply_rope(k, cos, sin).T  # [T, T]
    for offset in range(-11, 12):
        diagonal = torch.diagonal(scores, offset)
        torch.testing.assert_close(diagonal, diagonal[:1].expand_as(diagonal), atol=1e-4, rtol=0)


@given(d_half=st.integers(1, 16), n_pos=st.integers(1, 8), seed=st.integers(0, 2**16))
def test_pairings_agree_under_permutation(d_half, n_pos, seed):
    d = 2 * d_half
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(3, n_pos, d, generator=g)
    cos, sin = rope_frequencies(d, max_len=n_pos)
    perm = interleaved_to_half_permutation(d)
    half = apply_rope(x[..., perm], cos, sin, pairing="half")
    inter = apply_rope(x, cos, sin, pairing="interleaved")[..., perm]
    torch.testing.assert_close(half, inter, atol=0, rtol=0)
    inverse = half_to_interleaved_permutation(d)
    assert torch.equal(x[..., perm][..., inverse], x)


def test_permutations_pinned():
    assert interleaved_to_half_permutation(8).tolist() == [0, 2, 4, 6, 1, 3, 5, 7]
    assert half_to_interleaved_permutation(8).tolist() == [0, 4, 1, 5, 2, 6, 3, 7]
    assert interleaved_to_half_permutation(8).dtype == torch.long


#: Tolerances of the fast path against the reference, measured over 200 seeds: float32 differs
#: by the order of the last rounding (``addcmul`` vs ``mul``/``sub``; max 2.4e-7 for |x| ~ 4),
#: float64 not at all; bf16/fp16 round nearly the same float32 values, so they differ by at most
#: one unit in the last place (5 and 46 elements of 163,200): rtol 2^-7 and 2^-10 allow that.
FAST_TOLERANCE = {
    torch.float64: {"atol": 1e-12, "rtol": 1e-12},
    torch.float32: {"atol": 1e-6, "rtol": 1e-6},
    torch.bfloat16: {"atol": 1e-6, "rtol": 2.0**-7},
    torch.float16: {"atol": 1e-6, "rtol": 2.0**-10},
}


def _tables(layout: str, batch: int, n_pos: int, d_half: int, g: torch.Generator):
    """cos/sin in each layout the contract allows: [T, d/2], [B, 1, T, d/2], [1, d/2], [d/2]."""
    positions = torch.randint(0, 5000, (batch, n_pos), generator=g)
    angles = rope_angles(positions, rope_inv_freq(2 * d_half))  # [B, T, d/2]
    table = {
        "rows": angles[0],
        "per_sequence": angles[:, None],
        "one_row": angles[0, :1],
        "one_rotation": angles[0, 0],
    }[layout]
    return table.cos(), table.sin()


# every combination of the categorical choices runs on every test run (a hypothesis draw over
# them reached some combinations in only half the runs); hypothesis draws the sizes and values
@pytest.mark.parametrize("chunk", [1, 16, 64, 1 << 19])
@pytest.mark.parametrize("layout", ["rows", "per_sequence", "one_row", "one_rotation"])
@pytest.mark.parametrize("dtype", sorted(FAST_TOLERANCE, key=str), ids=str)
@pytest.mark.parametrize("pairing", PAIRINGS)
@settings(max_examples=4)
@given(n_pos=st.integers(1, 40), d_half=st.integers(1, 8), seed=st.integers(0, 2**16))
def test_fast_path_equals_reference(n_pos, d_half, pairing, dtype, layout, chunk, seed):
    # the one fast path (CPU, no autograd: blocks of positions, written into the output) against
    # the readable reference, over dtypes, table layouts and block sizes (chunk=1: one position
    # per block; 1 << 19: one block)
    import lib.rope as rope_module

    g = torch.Generator().manual_seed(seed)
    x = torch.randn(2, 3, n_pos, 2 * d_half, generator=g).to(dtype)
    cos, sin = _tables(layout, 2, n_pos, d_half, g)
    original = rope_module._CPU_CHUNK_ELEMENTS
    rope_module._CPU_CHUNK_ELEMENTS = chunk
    try:
        fast = apply_rope(x, cos, sin, pairing=pairing)
    finally:
        rope_module._CPU_CHUNK_ELEMENTS = original
    slow = apply_rope_reference(x, cos, sin, pairing=pairing)
    assert fast.dtype == slow.dtype == dtype and fast.shape == x.shape
    torch.testing.assert_close(fast, slow, **FAST_TOLERANCE[dtype])


def test_fast_path_runs_in_several_blocks(monkeypatch):
    # the test above could pass with a loop that stops after its first block: here every
    # position of a long bf16 input must be rotated, compared with float64 arithmetic
    import lib.rope as rope_module

    monkeypatch.setattr(rope_module, "_CPU_CHUNK_ELEMENTS", 64)
    x = torch.randn(2, 3, 37, 8, generator=torch.Generator().manual_seed(2)).bfloat16()
    cos, sin = rope_frequencies(8, max_len=37)
    exact = apply_rope_reference(x.double(), cos.double(), sin.double())
    fast = apply_rope(x, cos, sin)
    assert fast.dtype == torch.bfloat16
    # one bf16 rounding of the exact result: within half a bf16 ulp (2^-8 relative)
    torch.testing.assert_close(fast.double(), exact, atol=1e-6, rtol=2.0**-8)


def test_non_cpu_and_autograd_take_the_reference(monkeypatch):
    import lib.rope as rope_module

    def refuse(*args, **kwargs):
        raise AssertionError("the CPU fast path must not run here")

    monkeypatch.setattr(rope_module, "_apply_rope_cpu", refuse)
    cos, sin = rope_frequencies(8, max_len=4)
    y = apply_rope(torch.empty(1, 2, 4, 8, device="meta"), cos.to("meta"), sin.to("meta"))
    assert y.device.type == "meta" and y.shape == (1, 2, 4, 8)
    x = torch.randn(1, 2, 4, 8, requires_grad=True)
    assert apply_rope(x, cos, sin).requires_grad


def test_the_table_contract_is_broadcasting():
    torch.manual_seed(3)
    x = torch.randn(2, 4, 5, 8)
    cos, sin = rope_frequencies(8, max_len=100)
    rows = apply_rope(x, cos[:5], sin[:5])  # [T, d/2]: positions 0..4
    exact = apply_rope(x, cos[:5][None, None], sin[:5][None, None])  # [1, 1, T, d/2]
    torch.testing.assert_close(rows, exact, atol=0, rtol=0)
    one_rotation = apply_rope(x, cos[7], sin[7])  # [d/2]: position 7 for every token
    torch.testing.assert_close(one_rotation, apply_rope(x, cos[7:8], sin[7:8]), atol=0, rtol=0)
    torch.testing.assert_close(
        one_rotation, apply_rope(x, cos[[7] * 5], sin[[7] * 5]), atol=0, rtol=0
    )
    with pytest.raises(ValueError, match=r"cos has 100 rows .* slice the rows .* cos\[:5\]"):
        apply_rope(x, cos, sin)  # the whole table: callers slice


@pytest.mark.parametrize(("n_heads", "n_pos"), [(4, 10), (12, 10)])
def test_x_in_meta_layout_is_named_not_sliced(n_heads, n_pos):
    """x as [B, T, H, d] (heads after the sequence axis) with a table of its T rows: the error says
    the layout is wrong; slicing the table to H rows (fewer or more) would rotate by wrong angles."""
    cos, sin = rope_frequencies(8, max_len=32)
    x = torch.randn(2, n_pos, n_heads, 8)
    with pytest.raises(ValueError, match=r"x looks like \[B, T, H, d_head\].*transpose") as info:
        apply_rope(x, cos[:n_pos], sin[:n_pos])
    assert "slice the rows" not in str(info.value)
    assert "positions past the table" not in str(info.value)
    # The layout it asks for works.
    y = apply_rope(x.transpose(-3, -2), cos[:n_pos], sin[:n_pos]).transpose(-3, -2)
    assert y.shape == x.shape


def test_output_dtype_and_shape_follow_x():
    cos, sin = rope_frequencies(8, max_len=4)
    for dtype in (torch.float16, torch.bfloat16, torch.float32, torch.float64):
        x = torch.randn(1, 2, 4, 8).to(dtype)
        y = apply_rope(x, cos, sin)
        assert y.dtype == dtype and y.shape == x.shape


def test_autograd_goes_through_reference():
    torch.manual_seed(4)
    x = torch.randn(2, 6, 8, dtype=torch.float64, requires_grad=True)
    cos, sin = rope_frequencies(8, max_len=6)
    g = torch.randn(2, 6, 8, dtype=torch.float64)
    (apply_rope(x, cos, sin) * g).sum().backward()
    # the gradient of <R x, g> is R^T g = rotation by the negative angles
    expected = apply_rope(g, cos, -sin)
    torch.testing.assert_close(x.grad, expected)


# ------------------------------------------------------------------------------ complex form


def test_precompute_freqs_cis_pinned():
    fc = precompute_freqs_cis(4, end=3, base=100.0)
    assert fc.dtype == torch.complex64 and fc.shape == (3, 2)
    expected = torch.tensor(
        [[complex(math.cos(p * t), math.sin(p * t)) for t in (1.0, 0.1)] for p in range(3)],
        dtype=torch.complex128,
    )
    torch.testing.assert_close(fc, expected.to(torch.complex64))


@given(n_pos=st.integers(1, 20), d_half=st.integers(1, 12), seed=st.integers(0, 2**16))
def test_complex_form_equals_interleaved(n_pos, d_half, seed):
    d = 2 * d_half
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(2, 3, n_pos, d, generator=g)
    cos, sin = rope_frequencies(d, max_len=32)
    expected = apply_rope(x, cos[:n_pos], sin[:n_pos], pairing="interleaved")
    got = apply_rotary_emb_complex(x, precompute_freqs_cis(d, 32)[:n_pos])
    torch.testing.assert_close(got, expected, atol=1e-5, rtol=1e-5)


# ------------------------------------------------------------------------------ weight permutation


def test_permute_qk_weight_matches_the_conversion_script_per_head():
    torch.manual_seed(5)
    n_heads, d_head, d_in = 3, 8, 5
    w = torch.randn(n_heads * d_head, d_in)
    converted = permute_qk_weight_meta_to_hf(w, n_heads)
    perm = interleaved_to_half_permutation(d_head)
    per_head = w.view(n_heads, d_head, d_in)[:, perm].reshape(n_heads * d_head, d_in)
    assert torch.equal(converted, per_head)
    assert torch.equal(permute_qk_weight_hf_to_meta(converted, n_heads), w)


def test_converted_weights_give_the_same_attention_scores():
    # Meta: interleaved RoPE on W_meta x.  HF: half RoPE on W_hf x.  Scores must agree.
    torch.manual_seed(6)
    n_heads, d_head, d_in, n_pos = 2, 8, 6, 7
    wq, wk = torch.randn(n_heads * d_head, d_in), torch.randn(n_heads * d_head, d_in)
    x = torch.randn(n_pos, d_in)
    cos, sin = rope_frequencies(d_head, max_len=n_pos)

    def scores(wq_, wk_, pairing):
        q = (x @ wq_.T).view(n_pos, n_heads, d_head).transpose(0, 1)  # [H, T, d]
        k = (x @ wk_.T).view(n_pos, n_heads, d_head).transpose(0, 1)
        q, k = apply_rope(q, cos, sin, pairing=pairing), apply_rope(k, cos, sin, pairing=pairing)
        return q @ k.transpose(-1, -2)

    meta = scores(wq, wk, "interleaved")
    hf = scores(
        permute_qk_weight_meta_to_hf(wq, n_heads), permute_qk_weight_meta_to_hf(wk, n_heads), "half"
    )
    torch.testing.assert_close(hf, meta, atol=1e-4, rtol=1e-4)


# ------------------------------------------------------------------------------ precision


def test_bf16_at_long_positions_is_as_accurate_as_float32():
    torch.manual_seed(7)
    d = 128
    positions = torch.tensor([131071, 131072 - 1000, 100000, 65537])
    x = torch.randn(4, d).bfloat16()
    inv = rope_inv_freq(d, base=500000.0)
    angles = rope_angles(positions, inv)  # float32
    y = apply_rope(x, angles.cos(), angles.sin())
    assert y.dtype == torch.bfloat16

    # float64 reference with the same (float32) inv_freq and exact integer positions
    exact = positions.double()[:, None] * inv.double()
    reference = apply_rope(x.double(), exact.cos(), exact.sin())
    half = d // 2
    pair_norm = torch.sqrt(x.double()[:, :half] ** 2 + x.double()[:, half:] ** 2)  # [4, d/2]
    pair_norm = pair_norm.repeat(1, 2)  # each coordinate gets its pair's norm ("half" pairing)
    # bound: bf16 rounding of the output (2^-8 relative) + float32 angle rounding
    # (half an ulp of an angle < 2^17, i.e. 2^-8 rad, times the pair's norm)
    bound = 2.0**-8 * reference.abs() + 2.0**-8 * pair_norm + 1e-6
    assert ((y.double() - reference).abs() <= bound).all()

    # the same computation with bf16 angles is useless: the error is of the size of x itself
    angles_bf16 = positions.bfloat16()[:, None] * inv.bfloat16()
    y_bad = apply_rope(x, angles_bf16.float().cos(), angles_bf16.float().sin())
    assert (y_bad.double() - reference).abs().max() > 0.5 * x.double().abs().max()
    assert (y_bad.double() - reference).abs().max() > 50 * (y.double() - reference).abs().max()


# ------------------------------------------------------------------------------ transformers


def _llama_rotary(d_head: int, base: float):
    import transformers
    from transformers.models.llama.modeling_llama import LlamaRotaryEmbedding

    config = transformers.LlamaConfig(
        hidden_size=2 * d_head,
        num_attention_heads=2,
        head_dim=d_head,
        num_hidden_layers=1,
        max_position_embeddings=4096,
        rope_parameters={"rope_type": "default", "rope_theta": base},
    )
    return LlamaRotaryEmbedding(config)


@pytest.mark.parametrize("d_head,base", [(64, 10000.0), (128, 500000.0), (96, 10000.0)])
def test_inv_freq_matches_transformers(d_head, base):
    rotary = _llama_rotary(d_head, base)
    # transformers evaluates base ** (arange / d) in float32: a few ulps from the exact value
    torch.testing.assert_close(rope_inv_freq(d_head, base), rotary.inv_freq, rtol=5e-7, atol=0)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_apply_rope_matches_transformers_llama(dtype):
    from transformers.models.llama.modeling_llama import apply_rotary_pos_emb
    from transformers.models.llama.modeling_llama import rotate_half as hf_rotate_half

    d_head, n_pos = 64, 50
    rotary = _llama_rotary(d_head, 10000.0)
    torch.manual_seed(8)
    q = torch.randn(2, 4, n_pos, d_head)
    k = torch.randn(2, 2, n_pos, d_head)
    position_ids = torch.arange(n_pos).expand(2, n_pos)
    cos_hf, sin_hf = rotary(q, position_ids)  # [B, T, d_head], duplicated halves
    q_hf, k_hf = apply_rotary_pos_emb(q, k, cos_hf, sin_hf)

    cos, sin = rope_frequencies(d_head, max_len=n_pos)
    torch.testing.assert_close(cos, cos_hf[0, :, : d_head // 2], atol=2e-6, rtol=0)
    torch.testing.assert_close(cos_hf[..., : d_head // 2], cos_hf[..., d_head // 2 :])
    q_ours = apply_rope(q.to(dtype), cos, sin, pairing="half")
    k_ours = apply_rope(k.to(dtype), cos, sin, pairing="half")
    tol = {"atol": 1e-5, "rtol": 1e-5} if dtype == torch.float32 else {"atol": 3e-2, "rtol": 1e-2}
    torch.testing.assert_close(q_ours.float(), q_hf, **tol)
    torch.testing.assert_close(k_ours.float(), k_hf, **tol)
    assert torch.equal(rotate_half(q), hf_rotate_half(q))


def test_rotary_module_matches_transformers_with_position_ids():
    from transformers.models.llama.modeling_llama import apply_rotary_pos_emb

    d_head = 32
    rotary = _llama_rotary(d_head, 10000.0)
    module = RotaryEmbedding(d_head, max_len=4096)
    torch.manual_seed(9)
    q, k = torch.randn(2, 3, 5, d_head), torch.randn(2, 1, 5, d_head)
    position_ids = torch.tensor([[0, 1, 2, 3, 4], [100, 101, 102, 103, 3000]])
    q_hf, k_hf = apply_rotary_pos_emb(q, k, *rotary(q, position_ids))
    q_ours, k_ours = module(q, k, position_ids)
    torch.testing.assert_close(q_ours, q_hf, atol=2e-4, rtol=1e-5)
    torch.testing.assert_close(k_ours, k_hf, atol=2e-4, rtol=1e-5)


# ------------------------------------------------------------------------------ module


def test_rotary_module_buffers_and_defaults():
    module = RotaryEmbedding(16, max_len=32, base=100.0, pairing="interleaved")
    assert module.state_dict() == {}  # a non-persistent buffer
    assert [name for name, _ in module.named_buffers()] == ["inv_freq"]  # no cos/sin cache
    assert torch.equal(module.inv_freq, rope_inv_freq(16, 100.0))
    q, k = torch.randn(1, 2, 10, 16), torch.randn(1, 2, 7, 16)
    q_rot, k_rot = module(q, k)
    cos, sin = rope_frequencies(16, max_len=32, base=100.0)
    expected_q = apply_rope(q, cos[:10], sin[:10], pairing="interleaved")
    torch.testing.assert_close(q_rot, expected_q, atol=0, rtol=0)
    expected_k = apply_rope(k, cos[:7], sin[:7], pairing="interleaved")
    torch.testing.assert_close(k_rot, expected_k, atol=0, rtol=0)
    # explicit 1-D positions: a decoding step at position 20
    q1, k1 = module(q[..., :1, :], k[..., :1, :], torch.tensor([20]))
    for rotated, original in ((q1, q), (k1, k)):
        expected = apply_rope(original[..., :1, :], cos[20], sin[20], pairing="interleaved")
        torch.testing.assert_close(rotated, expected)
    assert "pairing='interleaved'" in repr(module)


# ------------------------------------------------------------------------------ errors


def test_errors_frequencies():
    with pytest.raises(ValueError, match="d_head"):
        rope_inv_freq(7)
    with pytest.raises(TypeError, match="d_head"):
        rope_inv_freq(8.0)
    with pytest.raises(ValueError, match="base"):
        rope_inv_freq(8, base=0.0)
    with pytest.raises(ValueError, match="max_len"):
        rope_frequencies(8, max_len=0)
    with pytest.raises(TypeError, match="positions"):
        rope_angles(torch.arange(4).bfloat16(), rope_inv_freq(8))
    with pytest.raises(TypeError, match="positions"):
        rope_angles([0, 1], rope_inv_freq(8))
    with pytest.raises(TypeError, match="inv_freq"):
        rope_angles(torch.arange(4), torch.arange(4))
    with pytest.raises(ValueError, match="inv_freq"):
        rope_angles(torch.arange(4), rope_inv_freq(8)[None])
    with pytest.raises(ValueError, match="positions"):
        rope_angles(torch.tensor(3), rope_inv_freq(8))


def test_errors_apply_rope():
    cos, sin = rope_frequencies(8, max_len=4)
    x = torch.randn(2, 6, 8)
    with pytest.raises(ValueError, match="positions past the table"):
        apply_rope(x, cos, sin)
    with pytest.raises(ValueError, match=r"cos's last dimension must be d_head // 2 = 4.*pass cos"):
        apply_rope(x[:, :4], torch.cat((cos, cos), -1), torch.cat((sin, sin), -1))
    with pytest.raises(ValueError, match=r"x.shape\[-1\]"):
        apply_rope(torch.randn(2, 4, 7), cos, sin)
    with pytest.raises(ValueError, match="pairing"):
        apply_rope(x[:, :4], cos, sin, pairing="neox")
    with pytest.raises(TypeError, match="x"):
        apply_rope(torch.ones(2, 4, 8, dtype=torch.long), cos, sin)
    with pytest.raises(TypeError, match="cos"):
        apply_rope(x[:, :4], cos.long(), sin)
    with pytest.raises(ValueError, match="same shape"):
        apply_rope(x[:, :4], cos, sin[:3])
    with pytest.raises(ValueError, match="does not broadcast"):
        apply_rope(torch.randn(2, 3, 4, 8), torch.ones(5, 1, 4, 4), torch.ones(5, 1, 4, 4))
    # (3 rows for x [2, 3, 4, 8] would match dim -3: that is named as a layout error, see
    # test_x_in_meta_layout_is_named_not_sliced)
    with pytest.raises(ValueError, match="positions past the table"):
        apply_rope(torch.randn(2, 3, 5, 8), torch.ones(1, 1, 4, 4), torch.ones(1, 1, 4, 4))
    with pytest.raises(ValueError, match=r"cos has 6 rows \(dim -2\) .* slice"):
        apply_rope(torch.randn(2, 3, 4, 8), torch.ones(1, 1, 6, 4), torch.ones(1, 1, 6, 4))
    with pytest.raises(ValueError, match=r"cos has 6 rows \(dim -2\) .* cos\[:4\]"):
        apply_rope(torch.randn(2, 3, 4, 8), torch.ones(6, 4), torch.ones(6, 4))
    with pytest.raises(ValueError, match="cos is on meta but x is on cpu"):
        apply_rope(x[:, :4], cos.to("meta"), sin.to("meta"))
    with pytest.raises(ValueError, match="more dimensions"):
        apply_rope(torch.randn(4, 8), torch.ones(1, 4, 4), torch.ones(1, 4, 4))
    with pytest.raises(ValueError, match="x must have at least 2"):
        apply_rope(torch.randn(8), cos, sin)
    with pytest.raises(TypeError, match="freqs_cis"):
        apply_rotary_emb_complex(x[:, :4], cos)
    with pytest.raises(ValueError, match="positions past the table"):
        apply_rotary_emb_complex(x, precompute_freqs_cis(8, 4))


def test_errors_permutations_and_module():
    with pytest.raises(ValueError, match="d_head"):
        interleaved_to_half_permutation(5)
    with pytest.raises(ValueError, match="n_heads"):
        permute_qk_weight_meta_to_hf(torch.randn(10, 3), 3)
    with pytest.raises(ValueError, match="even"):
        permute_qk_weight_meta_to_hf(torch.randn(9, 3), 3)
    with pytest.raises(ValueError, match="w must be 2-D"):
        permute_qk_weight_meta_to_hf(torch.randn(8), 2)
    module = RotaryEmbedding(8, max_len=16)
    q = torch.randn(1, 2, 4, 8)
    with pytest.raises(ValueError, match="positions past the table"):
        module(q, q, torch.tensor([0, 1, 2, 16]))
    with pytest.raises(ValueError, match="positions must lie"):
        module(q, q, torch.tensor([-1, 1, 2, 3]))
    with pytest.raises(ValueError, match="positions has 3 entries"):
        module(q, q, torch.tensor([0, 1, 2]))
    with pytest.raises(TypeError, match="positions"):
        module(q, q, torch.tensor([0.0, 1.0, 2.0, 3.0]))
    with pytest.raises(ValueError, match="d_head = 8"):
        module(torch.randn(1, 2, 4, 6), q)
    with pytest.raises(ValueError, match="positions past the table"):
        module(torch.randn(1, 2, 17, 8), torch.randn(1, 2, 17, 8))
    with pytest.raises(ValueError, match="pairing"):
        RotaryEmbedding(8, pairing="gptj")


def test_rotary_module_keeps_float32_angles_when_cast_to_bfloat16():
    """``module.to(bfloat16)`` must not quantise the angles (the bf16-angle bug)."""
    module = RotaryEmbedding(64, max_len=4096).to(torch.bfloat16)
    reference = RotaryEmbedding(64, max_len=4096)
    # torch casts the buffer (the hazard) ...
    assert module.inv_freq.dtype == torch.bfloat16
    # ... and forward rebuilds theta in float32, bit for bit
    assert module.float32_inv_freq().dtype == torch.float32
    torch.testing.assert_close(module.float32_inv_freq(), reference.inv_freq, rtol=0, atol=0)
    q = torch.randn(1, 2, 4096, 64, generator=torch.Generator().manual_seed(0)).to(torch.bfloat16)
    q_rot, _ = module(q, q)
    assert q_rot.dtype == torch.bfloat16
    torch.testing.assert_close(q_rot, reference(q, q)[0], rtol=0, atol=0)
    # float32-accurate angles: float64 rotation, then one bf16 rounding (rtol 2^-8), plus the
    # float32 angle error (m < 4096: under 2^-12 rad, times |x| <= 5; measured 2.4e-4); bf16
    # angles, as the cast buffer would give, are off by more than 1
    exact = torch.arange(4096, dtype=torch.float64)[:, None] * rope_inv_freq(64).double()
    y = apply_rope_reference(q.double(), exact.cos(), exact.sin())
    torch.testing.assert_close(q_rot.double(), y, atol=5e-4, rtol=2.0**-8)
    bf16_angles = torch.arange(4096)[:, None].float() * module.inv_freq.float()
    wrong = apply_rope(q, bf16_angles.cos(), bf16_angles.sin())
    assert (wrong.double() - y).abs().max() > 1.0


def test_rotary_module_allocates_nothing_of_size_max_len():
    module = RotaryEmbedding(128, max_len=2**40)  # no table: max_len only bounds positions
    assert module.inv_freq.shape == (64,)
    q = torch.randn(1, 1, 2, 128)
    q1, _ = module(q, q, torch.tensor([0, 2**40 - 1]))
    assert torch.isfinite(q1).all()


def test_rope_max_angles_are_the_largest_offset_times_theta_in_float64():
    inv_freq = rope_inv_freq(8, 10000.0)  # float32 θ_i = 10000^(−i/4)
    angles = rope_max_angles(inv_freq, 100)
    assert angles.dtype == torch.float64
    assert angles.tolist() == [99 * float(theta) for theta in inv_freq]  # from the unrounded θ
    # the largest of the relative angles (m − n)·θ_i over all positions m, n < L
    positions = torch.arange(100)
    relative = (positions[:, None] - positions[None, :]).abs().max()
    assert torch.equal(angles, relative.item() * inv_freq.double())
    # below 2π: the pair never turns once, and 2π / θ_i (its wavelength) exceeds L − 1
    assert torch.equal(angles < 2 * math.pi, rope_wavelengths(inv_freq) > 99)
    assert rope_max_angles(inv_freq, 1).tolist() == [0.0] * 4
    assert rope_max_angles(torch.empty(4, device="meta"), 8).shape == (4,)
    with pytest.raises(ValueError, match="seq_len"):
        rope_max_angles(inv_freq, 0)
    with pytest.raises(ValueError, match="inv_freq"):
        rope_max_angles(torch.tensor([1.0, -1.0]), 8)
    with pytest.raises(TypeError, match="inv_freq"):
        rope_max_angles(torch.tensor([1, 2]), 8)


def test_rope_wavelengths_are_two_pi_over_theta_in_float64():
    inv_freq = rope_inv_freq(8, 10000.0)  # float32 θ_i = 10000^(−i/4)
    wavelengths = rope_wavelengths(inv_freq)
    assert wavelengths.dtype == torch.float64
    expected = [2 * math.pi / float(theta) for theta in inv_freq]  # from the unrounded θ
    assert wavelengths.tolist() == pytest.approx(expected, rel=1e-15)
    assert wavelengths[0].item() == pytest.approx(2 * math.pi, rel=1e-15)  # θ_0 = 1
    assert rope_wavelengths(torch.empty(4, device="meta")).shape == (4,)
    with pytest.raises(ValueError, match="inv_freq"):
        rope_wavelengths(torch.tensor([1.0, 0.0]))
    with pytest.raises(TypeError, match="inv_freq"):
        rope_wavelengths(torch.tensor([1, 2]))


def test_chapter_8_exercise_reference_permutation_is_lib_and_the_converters():
    """The checker's index formula, lib's view/transpose and the converter's permute agree."""
    from lib.exercises.ch08 import _meta_to_hf_by_index

    for n_heads, d_head, d_in in [(1, 8, 3), (3, 64, 5), (4, 6, 2)]:
        w = torch.randn(n_heads * d_head, d_in, generator=torch.Generator().manual_seed(d_head))
        rows = n_heads * d_head
        converter = (
            w.view(n_heads, rows // n_heads // 2, 2, d_in).transpose(1, 2).reshape(rows, d_in)
        )
        assert torch.equal(
            _meta_to_hf_by_index(w, n_heads), permute_qk_weight_meta_to_hf(w, n_heads)
        )
        assert torch.equal(_meta_to_hf_by_index(w, n_heads), converter)
