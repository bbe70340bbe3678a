"""Tests for lib/lab/config.py (the length-extrapolation lab)."""

from __future__ import annotations

import pytest
import torch

from lib.lab import (
    LabConfig,
    single_thread,
)

from .helpers import TINY


def test_single_thread_sets_one_thread_and_restores_even_after_an_error():
    before = torch.get_num_threads()
    with single_thread():
        assert torch.get_num_threads() == 1
    assert torch.get_num_threads() == before
    with pytest.raises(RuntimeError), single_thread():
        raise RuntimeError("boom")
    assert torch.get_num_threads() == before


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
