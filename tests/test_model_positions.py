"""lib.model_positions: every row against transformers' configuration class of the family."""

import pytest
import torch
import transformers
from transformers.models.gemma4.configuration_gemma4 import Gemma4TextConfig

from lib.model_positions import MODELS, OVERRIDES, layer_inv_freqs, layer_table

# The released config.json fields of the rows whose ``source_kind`` is "released", as the public
# copies named in each row's ``source`` hold them (the fields that bear on positions and size).
RELEASED_ROWS = {
    "Llama 3.1 8B": {
        "num_hidden_layers": 32, "hidden_size": 4096, "num_attention_heads": 32,
        "num_key_value_heads": 8, "vocab_size": 128256, "max_position_embeddings": 131072,
        "rope_theta": 500000.0, "tie_word_embeddings": False,
        "rope_scaling": {"factor": 8.0, "high_freq_factor": 4.0, "low_freq_factor": 1.0,
                         "original_max_position_embeddings": 8192, "rope_type": "llama3"},
    },
    "Llama 3.2 1B": {
        "num_hidden_layers": 16, "hidden_size": 2048, "num_attention_heads": 32, "head_dim": 64,
        "num_key_value_heads": 8, "vocab_size": 128256, "max_position_embeddings": 131072,
        "rope_theta": 500000.0, "tie_word_embeddings": True,
        "rope_scaling": {"factor": 32.0, "high_freq_factor": 4.0, "low_freq_factor": 1.0,
                         "original_max_position_embeddings": 8192, "rope_type": "llama3"},
    },
    "Phi-4": {
        "num_hidden_layers": 40, "hidden_size": 5120, "num_attention_heads": 40,
        "num_key_value_heads": 10, "vocab_size": 100352, "max_position_embeddings": 16384,
        "original_max_position_embeddings": 16384, "rope_theta": 250000, "rope_scaling": None,
        "sliding_window": None, "tie_word_embeddings": False,
    },
}  # fmt: skip


def _config(name):
    row = MODELS[name]
    if row.config_class == "Gemma4TextConfig":
        return Gemma4TextConfig()
    return getattr(transformers, row.config_class)(**RELEASED_ROWS.get(name, {}))


def test_released_rows_are_exactly_those_with_a_copy():
    released = {n for n, r in MODELS.items() if r.source_kind == "released"}
    assert released == set(RELEASED_ROWS)
    assert {r.source_kind for r in MODELS.values()} == {"defaults", "released"}
    for name in released:
        assert "released config.json" in MODELS[name].source and "https://" in MODELS[name].source
    for name in set(MODELS) - released:
        assert MODELS[name].source.startswith("transformers 5.24.0")


def test_llama_defaults_are_not_llama3():
    """Why the Llama 3.x rows read a released config: LlamaConfig's defaults are another model."""
    cfg = transformers.LlamaConfig()
    assert cfg.rope_parameters["rope_type"] == "default"
    assert cfg.rope_parameters["rope_theta"] != MODELS["Llama 3.1 8B"].rope["all"]["rope_theta"]


def _head_dim(cfg):
    if isinstance(cfg, Gemma4TextConfig):
        return cfg.per_layer_config[0].head_dim  # layer 0 is a sliding layer in every row
    return getattr(cfg, "head_dim", None) or cfg.hidden_size // cfg.num_attention_heads


def _tie(cfg):
    if isinstance(cfg, transformers.Qwen2_5_VLTextConfig):  # the tie flag lives on the VL config
        return transformers.Qwen2_5_VLConfig().tie_word_embeddings
    return cfg.tie_word_embeddings


@pytest.mark.parametrize("name", list(MODELS))
def test_row_equals_transformers_config(name):
    row = MODELS[name]
    cfg = _config(name)
    assert row.num_hidden_layers == cfg.num_hidden_layers
    assert row.vocab_size == cfg.vocab_size
    assert row.tie_word_embeddings == _tie(cfg)
    assert row.max_position_embeddings == cfg.max_position_embeddings
    assert row.head_dim == _head_dim(cfg)
    assert row.sliding_window == getattr(cfg, "sliding_window", None) or not getattr(
        cfg, "use_sliding_window", True
    )
    rp = cfg.rope_parameters
    for kind, params in row.rope.items():
        hf = rp if kind == "all" else rp[kind]
        assert params["rope_type"] == hf["rope_type"]
        assert params["rope_theta"] == hf["rope_theta"]
        assert params["partial_rotary_factor"] == hf.get("partial_rotary_factor", 1.0)
        assert params["factor"] == hf.get("factor", 1.0)
    for i, layer in enumerate(layer_table(name)):
        if (
            hasattr(cfg, "layer_types") and layer["kind"] != "full_attention"
        ) or row.sliding_window_pattern:
            assert layer["kind"] == cfg.layer_types[i]
        if hasattr(cfg, "no_rope_layers"):
            assert (layer["rope"] is not None) == bool(cfg.no_rope_layers[i])
        if row.head_dims:
            assert layer["head_dim"] == cfg.per_layer_config[i].head_dim
    if row.qk_head_dim is not None:
        assert row.qk_head_dim == cfg.qk_nope_head_dim + cfg.qk_rope_head_dim
        assert row.rotated_dims == cfg.qk_rope_head_dim
        assert cfg.rope_interleave and row.pairing == "interleaved"
    if row.attention_chunk_size is not None:
        assert row.attention_chunk_size == cfg.attention_chunk_size


def test_cohere2_rotates_only_sliding_layers():
    """modeling_cohere2: apply_rotary_pos_emb only `if self.sliding_window is not None`."""
    table = layer_table("Cohere2")
    assert all((r["rope"] is not None) == (r["kind"] == "sliding_attention") for r in table)


def test_inv_freqs_gemma4_global_layer():
    freqs = layer_inv_freqs("Gemma 4")
    assert freqs[5].shape == (256,) and int((freqs[5] > 0).sum()) == 64
    assert freqs[0].shape == (128,) and bool((freqs[0] > 0).all())


def test_unknown_name():
    with pytest.raises(ValueError, match="name"):
        layer_table("GPT-5")
    assert torch.equal(layer_inv_freqs("SmolLM3")[3], torch.zeros(64))


def test_mistral_slides_on_every_layer():
    """modeling_mistral passes config.sliding_window to every layer's attention."""
    cfg = transformers.MistralConfig()
    table = layer_table("Mistral")
    assert {r["kind"] for r in table} == {"sliding_attention"}
    assert {r["window"] for r in table} == {cfg.sliding_window}
    assert "layer_types" not in cfg.to_dict()  # no per-layer kinds: one rule for all layers


def test_glm4_rotates_interleaved_pairs_of_its_first_half():
    """GLM-4 rotates pairs (2i, 2i+1) of the first partial_rotary_factor of each head."""
    from transformers.models.glm4.modeling_glm4 import apply_rotary_pos_emb

    from lib.partial_rope import apply_partial_rope
    from lib.rope import rope_angles

    row = MODELS["GLM-4"]
    d, f = row.head_dim, row.rope["all"]["partial_rotary_factor"]
    inv = layer_inv_freqs("GLM-4")[0]
    inv = inv[inv > 0]
    assert inv.shape == (int(d * f) // 2,)
    g = torch.Generator().manual_seed(0)
    x = torch.randn(1, 2, 5, d, generator=g)
    ang = rope_angles(torch.arange(5), inv)
    emb = torch.cat([ang, ang], -1)[None]  # transformers' cos/sin: cat((freqs, freqs))
    hf, _ = apply_rotary_pos_emb(x, x, emb.cos(), emb.sin())
    ours = apply_partial_rope(x, ang.cos(), ang.sin(), pairing=row.pairing)
    torch.testing.assert_close(ours, hf, rtol=1e-6, atol=1e-6)


# --- a second source: the released checkpoint's config.json (a public verbatim copy) -------------
# The rows are transformers' *defaults* (the first source, checked above). Where a released
# config.json copy was found, the fields it shares with the row are compared; a field where the
# checkpoint overrides the default is listed in ``overrides`` with both values, so that the row's
# docstring ("a checkpoint may override a default") is checked rather than assumed.
RELEASED = {
    "SmolLM3": {
        "url": "https://github.com/fetchwiki/HuggingFaceTB-SmolLM3-3B/blob/24f7882f92998ee0e691d105ade637afc3e5171f/config.json",
        "config": {
            "num_hidden_layers": 36, "hidden_size": 2048, "num_attention_heads": 16,
            "vocab_size": 128256, "no_rope_layer_interval": 4, "sliding_window": None,
            "no_rope_layers": [1, 1, 1, 0] * 9, "layer_types": ["full_attention"] * 36,
            "rope_theta": 5000000.0, "max_position_embeddings": 65536,
        },
    },
}  # fmt: skip


def test_every_override_has_its_released_copy():
    assert set(OVERRIDES) == set(RELEASED)
    assert all(MODELS[n].source_kind == "defaults" for n in OVERRIDES)


@pytest.mark.parametrize("name", sorted(RELEASED))
def test_row_agrees_with_the_released_config_json(name):
    row, released = MODELS[name], RELEASED[name]
    cfg = released["config"]
    # field: (transformers' default in the row, the released value), as lib.OVERRIDES records them
    overrides = {k: v for k, v in OVERRIDES[name].items() if k != "source"}
    assert released["url"] in str(OVERRIDES[name]["source"])
    assert row.num_hidden_layers == cfg["num_hidden_layers"]
    assert row.vocab_size == cfg["vocab_size"]
    assert row.head_dim == cfg["hidden_size"] // cfg["num_attention_heads"]
    assert row.no_rope_interval == cfg["no_rope_layer_interval"]
    assert row.sliding_window == cfg["sliding_window"]
    table = layer_table(name)
    assert [r["kind"] for r in table] == cfg["layer_types"]
    assert [int(r["rope"] is not None) for r in table] == cfg["no_rope_layers"]
    values = {"rope_theta": row.rope["all"]["rope_theta"],
              "max_position_embeddings": row.max_position_embeddings}  # fmt: skip
    assert set(overrides) <= set(values)
    for field_name, value in values.items():
        if field_name in overrides:
            default, released_value = overrides[field_name]
            assert value == default and cfg[field_name] == released_value != default
        else:
            assert value == cfg[field_name]
