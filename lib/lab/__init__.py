"""A length-extrapolation lab: one tiny decoder, six ways to give it positions.

The experiment of the book's last chapter. A small decoder-only attention model is trained on a
synthetic *induction* task at one length ``L`` and evaluated at ``L``, ``2L`` and ``4L``; the only
thing that changes between runs is how it learns about positions, chosen by name from
:data:`POSITION_SCHEMES`:

- ``"none"``: no positional information (NoPE), only the causal mask (Kazemnejad et al. 2023,
  arXiv:2305.19466); acts on nothing.
- ``"sinusoidal"``: fixed sin/cos vectors added to the token embeddings (Vaswani et al. 2017,
  arXiv:1706.03762); acts on the input.
- ``"learned"``: a trained table of position vectors added to the input (GPT-2; Devlin et al.
  2019, arXiv:1810.04805); acts on the input.
- ``"rope"``: rotary embedding of q and k (Su et al. 2021, arXiv:2104.09864); acts on q and k.
- ``"rope+pi"``: the ``"rope"`` model evaluated with linear position interpolation (Chen et al.
  2023, arXiv:2306.15595); acts on q and k.
- ``"alibi"``: a linear distance penalty on the scores (Press et al. 2022, arXiv:2108.12409); acts
  on the scores.
- ``"t5"``: T5's learned, bucketed relative bias on the scores (Raffel et al. 2020,
  arXiv:1910.10683), from :mod:`lib.relative`; acts on the scores.

The task (:func:`induction_batch`): each sequence repeats a random block of ``n`` distinct tokens
(``x_t = a_{t mod n}``), with ``n`` drawn per sequence from ``L/4 .. L/2``. After the first block
every next token is predictable by *induction*: find where the current token occurred ``n`` steps
earlier and copy the token that followed it. That rule does not depend on the length, so a model
that learned it could in principle run at any length; whether it does is what the lab measures.

The chapter's experiment (:func:`run_extrapolation_lab`) trains several seeds of each scheme as
one :class:`DecoderEnsemble` (stacked weights, one batched forward pass), evaluates them under
two :data:`CONDITIONS` (the training's periods, "seen distances", or periods growing with the
length, "unseen distances"), splits the accuracy by where the earliest answer key lies
(:func:`earliest_answer_key`), applies the zero-shot RoPE scalings of :data:`SCALED_VARIANTS`
and fine-tunes position interpolation at ``2L``. :func:`head_scores` and
:func:`pair_norm_share` show what a trained RoPE model uses its frequency pairs for.

Training and evaluation run single-threaded (:func:`single_thread`): with several threads the
matrix products add in an order that depends on the thread count, the last bits of every step
differ, and after hundreds of steps a notebook re-run on another machine would print other digits.


The package, in the order a reader meets it (each name is re-exported here, so
``from lib.lab import X`` works for all of them):

- :mod:`lib.lab.tasks` — the induction task, the evaluation :data:`CONDITIONS`, answer keys.
- :mod:`lib.lab.schemes` — the position schemes and their registry :data:`POSITION_SCHEMES`.
- :mod:`lib.lab.config` — :class:`LabConfig` (sizes, steps, lengths) and :func:`single_thread`.
- :mod:`lib.lab.models` — :class:`TinyDecoder` and :class:`DecoderEnsemble` (S seeds as one model).
- :mod:`lib.lab.training` — :func:`train_decoder`, :func:`train_ensemble`.
- :mod:`lib.lab.evaluation` — :func:`evaluate_decoder`, :func:`evaluate_ensemble`.
- :mod:`lib.lab.variants` — the RoPE model's zero-shot scalings and fine-tunes.
- :mod:`lib.lab.analysis` — what a trained RoPE model uses its frequency pairs for.
- :mod:`lib.lab.statistics` — summaries over seeds and evaluation sequences.
- :mod:`lib.lab.experiment` — :func:`run_extrapolation_lab`, the chapter's whole experiment.

References:
    Kazemnejad et al., The Impact of Positional Encoding on Length Generalization in Transformers,
    arXiv:2305.19466.
    Vaswani et al., Attention Is All You Need, arXiv:1706.03762.
    Devlin et al., BERT, arXiv:1810.04805.
    Su et al., RoFormer, arXiv:2104.09864.
    Chen et al., Extending Context Window of Large Language Models via Positional Interpolation,
    arXiv:2306.15595.
    Press et al., Train Short, Test Long (ALiBi), arXiv:2108.12409.
    Raffel et al., Exploring the Limits of Transfer Learning (T5), arXiv:1910.10683.
    Olsson et al., In-context Learning and Induction Heads, arXiv:2209.11895.
"""

from lib.lab.analysis import HeadScores, head_scores, pair_norm_share
from lib.lab.config import LabConfig, single_thread
from lib.lab.evaluation import EnsembleEval, EvalResult, evaluate_decoder, evaluate_ensemble
from lib.lab.experiment import (
    LAB_CONDITIONS,
    SHIFTED,
    WINDOWED,
    ExtrapolationLab,
    LabResult,
    run_extrapolation_lab,
    run_lab,
)
from lib.lab.models import AttentionRecord, DecoderEnsemble, TinyDecoder, build_decoder
from lib.lab.schemes import (
    POSITION_SCHEMES,
    ALiBiPositions,
    InterpolatedRotaryPositions,
    LearnedPositions,
    NoPositions,
    PositionScheme,
    RotaryPositions,
    SinusoidalPositions,
    T5BiasPositions,
)
from lib.lab.statistics import Interval, SeedSpread, seed_interval, seed_spread
from lib.lab.tasks import (
    CONDITIONS,
    IGNORE_INDEX,
    InductionBatch,
    earliest_answer_key,
    induction_batch,
)
from lib.lab.training import EnsembleTrainResult, TrainResult, train_decoder, train_ensemble
from lib.lab.variants import (
    DYNAMIC_FACTOR,
    FINE_TUNED_VARIANTS,
    SCALED_VARIANTS,
    ZERO_SHOT_SCALING,
    scaled_rope_frequencies,
)

__all__ = [  # noqa: RUF022 (in the order of the package's modules, as the API page lists them)
    # lib.lab.tasks
    "IGNORE_INDEX",
    "InductionBatch",
    "induction_batch",
    "earliest_answer_key",
    "CONDITIONS",
    # lib.lab.schemes
    "PositionScheme",
    "NoPositions",
    "SinusoidalPositions",
    "LearnedPositions",
    "RotaryPositions",
    "InterpolatedRotaryPositions",
    "ALiBiPositions",
    "T5BiasPositions",
    "POSITION_SCHEMES",
    # lib.lab.config
    "LabConfig",
    "single_thread",
    # lib.lab.models
    "TinyDecoder",
    "build_decoder",
    "DecoderEnsemble",
    "AttentionRecord",
    # lib.lab.training
    "TrainResult",
    "train_decoder",
    "EnsembleTrainResult",
    "train_ensemble",
    # lib.lab.evaluation
    "EvalResult",
    "evaluate_decoder",
    "EnsembleEval",
    "evaluate_ensemble",
    # lib.lab.variants
    "ZERO_SHOT_SCALING",
    "DYNAMIC_FACTOR",
    "scaled_rope_frequencies",
    "SCALED_VARIANTS",
    "FINE_TUNED_VARIANTS",
    # lib.lab.analysis
    "HeadScores",
    "head_scores",
    "pair_norm_share",
    # lib.lab.statistics
    "SeedSpread",
    "seed_spread",
    "Interval",
    "seed_interval",
    # lib.lab.experiment
    "SHIFTED",
    "WINDOWED",
    "LAB_CONDITIONS",
    "LabResult",
    "run_lab",
    "ExtrapolationLab",
    "run_extrapolation_lab",
]
