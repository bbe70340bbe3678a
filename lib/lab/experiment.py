"""The whole experiment: train every scheme, evaluate every variant under every condition."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import torch

from lib._checks import (
    check_choice,
    check_positive_float,
    check_positive_int,
)
from lib.lab.config import LabConfig
from lib.lab.evaluation import EnsembleEval, EvalResult, evaluate_decoder, evaluate_ensemble
from lib.lab.models import DecoderEnsemble, TinyDecoder, build_decoder
from lib.lab.schemes import POSITION_SCHEMES
from lib.lab.statistics import Interval, seed_interval, seed_spread
from lib.lab.tasks import CONDITIONS
from lib.lab.training import train_decoder, train_ensemble
from lib.lab.variants import FINE_TUNED_VARIANTS, SCALED_VARIANTS, scaled_rope_frequencies
from lib.rope_scaling import ROPE_SCALING


@dataclass
class LabResult:
    """Everything :func:`run_lab` measured.

    Attributes:
        config: the :class:`LabConfig` used.
        models: trained model per scheme (``"rope+pi"`` holds the ``"rope"`` weights).
        losses: training loss per step per scheme.
        seconds: training wall time per trained scheme (schemes sharing weights are not listed).
        results: ``results[scheme][seq_len]`` is an :class:`EvalResult`.
    """

    config: LabConfig
    models: dict[str, TinyDecoder] = field(default_factory=dict)
    losses: dict[str, list[float]] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)
    results: dict[str, dict[int, EvalResult]] = field(default_factory=dict)

    def accuracy_between(self, scheme: str, seq_len: int, start: int, stop: int) -> float:
        """Accuracy of ``scheme`` at length ``seq_len`` over positions ``start <= t < stop`` only.

        Args:
            scheme: a scheme that was run.
            seq_len: an evaluated length.
            start: first position counted.
            stop: one past the last position counted.

        Returns:
            The accuracy, NaN if no position in that range was scored.

        Raises:
            KeyError: a scheme or length that was not run.
        """
        result = self.results[scheme][seq_len]
        counts = result.per_position_count[start:stop].double()  # [stop - start]
        if counts.sum() == 0:
            return math.nan
        correct = result.per_position[start:stop].nan_to_num(0.0) * counts
        return float(correct.sum() / counts.sum())

    def accuracy_table(self, digits: int = 2) -> dict[str, dict[int, float]]:
        """``{scheme: {seq_len: accuracy rounded to digits}}``, ready to print.

        Args:
            digits: decimal places of the rounded accuracies.

        Returns:
            The accuracy of every scheme at every evaluated length.
        """
        return {
            scheme: {t: round(r.accuracy, digits) for t, r in by_len.items()}
            for scheme, by_len in self.results.items()
        }


def run_lab(
    config: LabConfig = LabConfig(),  # noqa: B008 (a frozen dataclass)
    schemes: tuple[str, ...] = tuple(POSITION_SCHEMES),
) -> LabResult:
    """Train every scheme at ``config.train_len`` and evaluate it at each of ``config.eval_lens``.

    A scheme whose ``shares_training_with`` names another scheme (``"rope+pi"`` → ``"rope"``)
    is not trained again: it gets a copy of that scheme's trained weights (training it would give
    the very same weights, since the two agree at the training length). Same seeds, same data
    and the same initial shared weights for every scheme.

    Args:
        config: a :class:`LabConfig`.
        schemes: names from :data:`POSITION_SCHEMES`, each at most once.

    Returns:
        A :class:`LabResult`.

    Raises:
        TypeError: ``config`` is not a :class:`LabConfig` or ``schemes`` not a tuple.
        ValueError: an unknown or repeated scheme name.
    """
    if not isinstance(config, LabConfig):
        raise TypeError(f"config must be a LabConfig, got {type(config).__name__}")
    if not isinstance(schemes, tuple):
        raise TypeError(f"schemes must be a tuple of names, got {type(schemes).__name__}")
    for name in schemes:
        check_choice("schemes entries", name, tuple(POSITION_SCHEMES))
    if len(set(schemes)) != len(schemes):
        raise ValueError(f"schemes must not repeat a name, got {schemes}")
    lab = LabResult(config=config)
    for name in schemes:
        donor = POSITION_SCHEMES[name].shares_training_with
        if donor is not None and donor not in lab.models:
            trained = train_decoder(donor, config)
            lab.models[donor], lab.losses[donor] = trained.model, trained.losses
            lab.seconds[donor] = trained.seconds
        if donor is not None:
            model = build_decoder(name, config)
            model.load_state_dict(lab.models[donor].state_dict())
            model.eval()
            lab.models[name], lab.losses[name] = model, lab.losses[donor]
        elif name not in lab.models:
            trained = train_decoder(name, config)
            lab.models[name], lab.losses[name] = trained.model, trained.losses
            lab.seconds[name] = trained.seconds
    for name in schemes:
        lab.results[name] = {
            t: evaluate_decoder(
                lab.models[name], t, n_sequences=config.eval_sequences, seed=config.seed + 2
            )
            for t in config.eval_lens
        }
    return lab


#: The condition that moves positions only: at column ``T > L`` a sequence of the training
#: length ``L`` with training's periods, its position ids shifted by ``T − L`` (so they run over
#: ``T − L .. T − 1``, the last ``L`` positions of a ``T``-token input). Content, periods and every
#: distance are those of training; only the absolute positions are new (from ``L`` on).
SHIFTED = "shifted"

#: The distractor-distance control: the very sequences of ``"seen"`` at ``T`` (training's
#: periods in a ``T``-token input), with every query attending only to its last ``L`` keys.
#: Every answer (at distance ``n − 1 < L``) stays in view; no query sees more keys, or a key
#: farther back, than in training. ``"seen"`` minus this is the effect of the far keys.
WINDOWED = "windowed"

#: Every condition :func:`run_extrapolation_lab` evaluates: the two of :data:`CONDITIONS`
#: (``"seen"``: training's periods in a longer input; ``"unseen"``: periods growing with ``T``),
#: :data:`SHIFTED` and :data:`WINDOWED`.
LAB_CONDITIONS: tuple[str, ...] = (*CONDITIONS, SHIFTED, WINDOWED)


@dataclass
class ExtrapolationLab:
    """What :func:`run_extrapolation_lab` measured.

    Attributes:
        config: the :class:`LabConfig` (sizes, steps, lengths).
        seeds: the model seeds, one per ensemble member.
        ensembles: the trained :class:`DecoderEnsemble` per trained variant.
        losses: ``[steps, S]`` training loss per trained scheme.
        seconds: wall time per training (schemes and fine-tunes).
        results: ``results[variant][condition][T]`` is an :class:`EnsembleEval` for each
            condition of :data:`LAB_CONDITIONS`; at ``T = L`` every condition holds the same
            evaluation.
    """

    config: LabConfig
    seeds: tuple[int, ...]
    ensembles: dict[str, DecoderEnsemble] = field(default_factory=dict)
    losses: dict[str, torch.Tensor] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)
    results: dict[str, dict[str, dict[int, EnsembleEval]]] = field(default_factory=dict)

    def accuracy(self, variant: str, condition: str, seq_len: int) -> torch.Tensor:
        """``[S]`` accuracies of ``variant`` (``KeyError`` if not run).

        Args:
            variant: a trained scheme or a RoPE variant that was evaluated.
            condition: one of :data:`LAB_CONDITIONS`.
            seq_len: an evaluated length.

        Returns:
            One accuracy per seed, float64.

        Raises:
            KeyError: a variant, condition or length that was not run.

        Shapes:
            -> [S]
        """
        return self.results[variant][condition][seq_len].accuracy

    def median(self, variant: str, condition: str, seq_len: int) -> float:
        """Median accuracy over seeds (the middle seed for an odd count).

        Args:
            variant: a trained scheme or a RoPE variant that was evaluated.
            condition: one of :data:`LAB_CONDITIONS`.
            seq_len: an evaluated length.

        Returns:
            The median of :meth:`accuracy` (:func:`seed_spread`: for an even count, the lower of
            the middle two).

        Raises:
            KeyError: a variant, condition or length that was not run.
        """
        return float(seed_spread(self.accuracy(variant, condition, seq_len)).median)

    def interval(
        self, variant: str, condition: str, seq_len: int, *, level: float = 0.9
    ) -> Interval:
        """Mean accuracy over seeds with its t-interval (seeds and shared sequences).

        Args:
            variant: a trained scheme or a RoPE variant that was evaluated.
            condition: one of :data:`LAB_CONDITIONS`.
            seq_len: an evaluated length.
            level: the interval's nominal coverage, in (0, 1).

        Returns:
            :func:`lib.lab.seed_interval` of the evaluation's per-sequence counts.

        Raises:
            KeyError: a variant, condition or length that was not run.
        """
        result = self.results[variant][condition][seq_len]
        return seed_interval(result.sequence_correct, result.sequence_count, level=level)

    def difference(
        self,
        a: tuple[str, str, int],
        b: tuple[str, str, int],
        *,
        level: float = 0.9,
    ) -> Interval:
        """Paired difference ``accuracy(a) − accuracy(b)`` over seeds, with its t-interval.

        ``a`` and ``b`` are ``(variant, condition, seq_len)``. Seed ``s`` of every variant
        starts from the same weights and data, so the seeds are paired; when both were scored
        on the same sequences (:meth:`EnsembleEval.shares_sequences_with`) the sequences are
        paired too, otherwise both evaluation sets' sampling errors count
        (:func:`lib.lab.seed_interval` with ``baseline``).

        Args:
            a: ``(variant, condition, seq_len)`` of the first accuracy.
            b: the same for the baseline.
            level: the interval's nominal coverage, in (0, 1).

        Returns:
            An :class:`Interval` of the difference.

        Raises:
            KeyError: a variant, condition or length that was not run.
        """
        first = self.results[a[0]][a[1]][a[2]]
        second = self.results[b[0]][b[1]][b[2]]
        return seed_interval(
            first.sequence_correct,
            first.sequence_count,
            baseline=second.sequence_correct,
            baseline_count=None if first.shares_sequences_with(second) else second.sequence_count,
            level=level,
        )


def _evaluate_all(
    lab: ExtrapolationLab,
    name: str,
    ensemble: DecoderEnsemble,
    tokens: int,
    rope_for: Callable[[int], tuple[torch.Tensor, float]] | None = None,
) -> None:
    config = lab.config
    out: dict[str, dict[int, EnsembleEval]] = {c: {} for c in LAB_CONDITIONS}
    for seq_len in config.eval_lens:
        rope = rope_for(seq_len) if rope_for is not None else None
        for condition in CONDITIONS:
            if seq_len == config.train_len and condition != "seen":
                out[condition][seq_len] = out["seen"][seq_len]
                continue
            out[condition][seq_len] = evaluate_ensemble(
                ensemble,
                seq_len,
                condition=condition,
                n_sequences=max(1, tokens // seq_len),
                rope=rope,
            )
        if seq_len == config.train_len:
            out[SHIFTED][seq_len] = out[WINDOWED][seq_len] = out["seen"][seq_len]
        else:
            out[WINDOWED][seq_len] = evaluate_ensemble(
                ensemble,
                seq_len,
                condition="seen",
                n_sequences=max(1, tokens // seq_len),
                rope=rope,
                window=config.train_len,
            )  # training-length sequences at the last L positions of a T-token input
            out[SHIFTED][seq_len] = evaluate_ensemble(
                ensemble,
                config.train_len,
                condition="seen",
                n_sequences=max(1, tokens // config.train_len),
                rope=rope,
                position_offset=seq_len - config.train_len,
            )
    lab.results[name] = out


def run_extrapolation_lab(
    config: LabConfig = LabConfig(),  # noqa: B008 (a frozen dataclass)
    seeds: tuple[int, ...] = (0, 1, 2, 3, 4),
    schemes: tuple[str, ...] = ("none", "sinusoidal", "learned", "rope", "alibi", "t5"),
    *,
    eval_tokens: int = 8192,
    fine_tune_steps: int = 60,
    fine_tune_lr: float = 3e-3,
) -> ExtrapolationLab:
    """Train each scheme as one ensemble of ``seeds`` and evaluate every variant.

    For each scheme, ``len(seeds)`` models (initialisation seed ``s``, their own data) are
    trained at ``L = config.train_len`` (:func:`train_ensemble`) and evaluated at each of
    ``config.eval_lens`` under every condition of :data:`LAB_CONDITIONS` on the same
    ``eval_tokens // T`` sequences (``eval_tokens // L`` for :data:`SHIFTED`). If ``"rope"`` is among the schemes, its trained models are also evaluated under
    every zero-shot method of :data:`SCALED_VARIANTS` (no retraining) and fine-tuned twice at
    ``2L`` for ``fine_tune_steps`` steps of 16 sequences (lr ``fine_tune_lr``, 10 warm-up
    steps): once with position interpolation of factor 2 fixed at every length (Chen et al.
    2023) and once without (the control).

    Args:
        config: a :class:`LabConfig`.
        seeds: the model seeds, one per ensemble member.
        schemes: names from :data:`POSITION_SCHEMES` that train (not ``"rope+pi"``), each once.
        eval_tokens: tokens per evaluation (``eval_tokens // T`` sequences), an int >= 1.
        fine_tune_steps: steps of each fine-tune at ``2L``, an int >= 1.
        fine_tune_lr: the fine-tunes' learning rate, > 0.

    Returns:
        An :class:`ExtrapolationLab`.

    Raises:
        TypeError: ``config`` not a :class:`LabConfig`, ``schemes``/``seeds`` not tuples.
        ValueError: an unknown or repeated scheme; ``"rope+pi"`` among the schemes (it is a
            variant here); bad sizes.

    References:
        Chen et al., Extending Context Window of Large Language Models via Positional Interpolation,
        arXiv:2306.15595.
    """
    if not isinstance(config, LabConfig):
        raise TypeError(f"config must be a LabConfig, got {type(config).__name__}")
    if not isinstance(schemes, tuple) or not schemes:
        raise TypeError(f"schemes must be a non-empty tuple of names, got {schemes!r}")
    trainable = tuple(
        n for n in POSITION_SCHEMES if POSITION_SCHEMES[n].shares_training_with is None
    )
    for name in schemes:
        check_choice("schemes entries", name, trainable)
    if len(set(schemes)) != len(schemes):
        raise ValueError(f"schemes must not repeat a name, got {schemes}")
    eval_tokens = check_positive_int("eval_tokens", eval_tokens)
    fine_tune_steps = check_positive_int("fine_tune_steps", fine_tune_steps)
    fine_tune_lr = check_positive_float("fine_tune_lr", fine_tune_lr)
    lab = ExtrapolationLab(config=config, seeds=seeds)
    for name in schemes:
        trained = train_ensemble(DecoderEnsemble(name, config, seeds))
        lab.ensembles[name], lab.losses[name] = trained.ensemble, trained.losses
        lab.seconds[name] = trained.seconds
        _evaluate_all(lab, name, trained.ensemble, eval_tokens)
    if "rope" not in schemes:
        return lab
    rope = lab.ensembles["rope"]
    d_head, base, train_len = rope.d_head, config.base, config.train_len
    for variant, method in SCALED_VARIANTS.items():

        def rope_for(seq_len: int, method: str = method) -> tuple[torch.Tensor, float]:
            return scaled_rope_frequencies(
                method, d_head, base, seq_len=seq_len, train_len=train_len
            )

        _evaluate_all(lab, variant, rope, eval_tokens, rope_for)
    for variant in FINE_TUNED_VARIANTS:
        tuned = rope.copy()
        if variant == "rope+pi+ft":
            tuned.fixed_rope = ROPE_SCALING["linear"](d_head, base, factor=2.0)
        result = train_ensemble(
            tuned,
            steps=fine_tune_steps,
            seq_len=2 * train_len,
            lr=fine_tune_lr,
            batch_size=16,
            warmup_steps=10,
            data_seed=20_000,
        )
        lab.ensembles[variant], lab.seconds[variant] = tuned, result.seconds
        _evaluate_all(lab, variant, tuned, eval_tokens)
    return lab
