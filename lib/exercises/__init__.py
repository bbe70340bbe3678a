"""Check-yourself exercises: a registry of checkers that every chapter's exercise cells call.

A chapter's exercise looks like this in the notebook::

    answer = None  # your code here            <- the reader's cell
    check("rope-norm", answer)                  <- the check cell

    answer = ...                                <- the solution cell, hidden behind a toggle
    check("rope-norm", answer)

:func:`check` prints a hint while ``answer`` is still ``None``, raises :class:`ExerciseFailed`
(an ``AssertionError``) that explains what is wrong for a wrong answer, and prints a confirmation for
a right one. Each checker is registered with :func:`exercise` together with a few obviously wrong
answers; the test suite checks that every checker rejects them, and nbval checks (through the saved
"Correct" output) that every checker accepts its chapter's solution.

Checkers live in one module per chapter (``lib/exercises/ch06.py``, ...), imported below.
"""

from __future__ import annotations

import importlib
import numbers
import pkgutil
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

import torch


class ExerciseFailed(AssertionError):
    """A wrong answer: the message says what is wrong and, where it can, how to fix it."""


@dataclass(frozen=True)
class Exercise:
    """One registered exercise: its checker and a factory of obviously wrong answers.

    Attributes:
        id: the id a chapter's check cell passes to :func:`check`.
        chapter: the notebook's file stem (e.g. ``"08_rope"``).
        checker: ``checker(answer)`` raises :class:`ExerciseFailed` for a wrong answer.
        wrong_answers: returns a list of answers the checker must reject (tested).
        right_answer: returns one answer the checker must accept (tested), or None.
    """

    id: str
    chapter: str
    checker: Callable[[Any], None]
    wrong_answers: Callable[[], list[Any]]
    right_answer: Callable[[], Any] | None = None


EXERCISES: dict[str, Exercise] = {}


def require(condition: object, message: str) -> None:
    """Raise :class:`ExerciseFailed` with ``message`` unless ``condition`` holds (survives ``-O``).

    Args:
        condition: anything with a truth value.
        message: what is wrong, shown to the reader.

    Raises:
        ExerciseFailed: ``condition`` is false.
    """
    if not condition:
        raise ExerciseFailed(message)


def require_function(answer: object, signature: str = "") -> None:
    """Raise with a message naming the expected ``signature`` unless ``answer`` is callable.

    Args:
        answer: the reader's answer.
        signature: the function the exercise asks for, e.g. ``"embed(ids, E)"`` (or ``""``).

    Raises:
        ExerciseFailed: ``answer`` is not callable.
    """
    if not callable(answer):
        expected = f"a function {signature}" if signature else "a function"
        raise ExerciseFailed(f"answer must be {expected}, got {type(answer).__name__}")


def require_tensor(
    answer: object, message: str, *, kind: Literal["any", "floating", "integer"] = "any"
) -> torch.Tensor:
    """Return ``answer`` as a tensor (for the type checker too), or raise with ``message``.

    Args:
        answer: the reader's answer.
        message: what was expected, shown to the reader.
        kind: ``"floating"`` requires a floating-point dtype, ``"integer"`` an integer dtype (not
            bool, not complex), ``"any"`` any dtype.

    Returns:
        ``answer``, unchanged.

    Raises:
        ExerciseFailed: ``answer`` is not a tensor of that kind.
    """
    if not isinstance(answer, torch.Tensor):
        raise ExerciseFailed(message)
    if kind == "floating" and not answer.is_floating_point():
        raise ExerciseFailed(message)
    if kind == "integer" and (
        answer.is_floating_point() or answer.is_complex() or answer.dtype == torch.bool
    ):
        raise ExerciseFailed(message)
    return answer


def require_real(answer: object, message: str) -> float:
    """Return ``answer`` as a float if it is a real number (not a bool), or raise with ``message``.

    Args:
        answer: the reader's answer.
        message: what was expected, shown to the reader.

    Returns:
        ``float(answer)``.

    Raises:
        ExerciseFailed: ``answer`` is not a real number, or is a bool.
    """
    if isinstance(answer, bool) or not isinstance(answer, numbers.Real):
        raise ExerciseFailed(message)
    return float(answer)


def require_int(answer: object, message: str) -> int:
    """Return ``answer`` as an int if it is an integer, or raise with ``message``.

    The integer counterpart of :func:`require_real`: a count or an index, where ``3.0`` is a
    wrong answer (it says the reader computed with floats).

    Args:
        answer: the reader's answer; a Python or numpy integer passes, a bool or a float does not.
        message: what was expected, shown to the reader.

    Returns:
        ``int(answer)``, a Python int.

    Raises:
        ExerciseFailed: ``answer`` is not an integer, or is a bool.
    """
    if isinstance(answer, bool) or not isinstance(answer, numbers.Integral):
        raise ExerciseFailed(message)
    return int(answer)


def record_prediction(
    log: dict[str, Any], prediction: object, next_step: str, *, quote: bool = False
) -> None:
    """Record a predict-then-measure exercise's prediction, or refuse one made after measuring.

    ``log`` is the exercise's per-kernel record, ``{"prediction": ..., "measured": bool}``; its
    measurement checker sets ``measured``. A prediction is accepted while nothing has been
    measured; afterwards the one recorded before stands and a new one raises.

    Args:
        log: the exercise's record (mutated: ``log["prediction"] = prediction``).
        prediction: the reader's checked prediction.
        next_step: what to do next, printed after the recorded prediction.
        quote: show predictions with ``repr`` (strings in quotes) instead of ``str``.

    Raises:
        ExerciseFailed: a measurement was checked already.
    """
    show = repr if quote else str
    if log["measured"]:
        raise ExerciseFailed(
            "you have measured already, so this is no longer a prediction; the one recorded "
            f"before measuring stands: {show(log['prediction'])}. (Restart the kernel to start over.)"
        )
    log["prediction"] = prediction
    print(f"Prediction recorded: {show(prediction)}. {next_step}")


def exercise(
    exercise_id: str,
    *,
    chapter: str,
    wrong_answers: Callable[[], list[Any]],
    right_answer: Callable[[], Any] | None = None,
) -> Callable[[Callable[[Any], None]], Callable[[Any], None]]:
    """Register ``checker(answer)`` under ``exercise_id``; it raises :class:`ExerciseFailed` if wrong.

    Checkers signal a wrong answer with :func:`require` (never a bare ``assert``, which ``python -O``
    removes).

    Args:
        exercise_id: the id a chapter's check cell passes to :func:`check`.
        chapter: the notebook's file stem (e.g. ``"08_rope"``).
        wrong_answers: returns a list of answers the checker must reject (tested).
        right_answer: returns one answer the checker must accept (tested), or None.

    Returns:
        A decorator that registers the checker and returns it unchanged.

    Raises:
        ValueError: (when decorating) ``exercise_id`` is already registered.
    """

    def register(checker: Callable[[Any], None]) -> Callable[[Any], None]:
        if exercise_id in EXERCISES:
            raise ValueError(f"exercise id {exercise_id!r} is registered twice")
        EXERCISES[exercise_id] = Exercise(
            exercise_id, chapter, checker, wrong_answers, right_answer
        )
        return checker

    return register


def check(exercise_id: str, answer: Any) -> None:
    """Check ``answer`` for exercise ``exercise_id``; raise :class:`ExerciseFailed` if it is wrong.

    Prints a hint while ``answer`` is ``None`` and a confirmation when it is right. Returns nothing,
    so a check cell shows only the message.

    Args:
        exercise_id: a registered exercise id.
        answer: the reader's answer, or None while unanswered.

    Raises:
        ExerciseFailed: a wrong answer (the message says what is wrong).
        ValueError: an unknown ``exercise_id``.
    """
    if exercise_id not in EXERCISES:  # a chapter that imported its own checkers skips the rest
        _load_all(strict=False)
    if exercise_id not in EXERCISES:
        broken = f"; chapters whose checkers failed to import: {_BROKEN}" if _BROKEN else ""
        raise ValueError(f"unknown exercise {exercise_id!r}; known: {sorted(EXERCISES)}{broken}")
    if answer is None:
        print("Not answered yet: replace None with your answer, then run this cell again.")
        return
    try:
        EXERCISES[exercise_id].checker(answer)
    except ExerciseFailed:
        raise
    except AssertionError as error:
        raise ExerciseFailed(f"Not quite: {error}") from None
    print(f"Correct! ({exercise_id})")


_LOADED: set[str] = set()
_BROKEN: dict[str, str] = {}


def _load_all(*, strict: bool = True) -> None:
    """Import every ``lib/exercises/ch*.py`` so that its checkers register themselves.

    With ``strict=False`` (what a chapter's check cell uses) a chapter module that fails to import is
    skipped and remembered, so one broken chapter cannot break the exercises of every other chapter.
    """
    for module in sorted(m.name for m in pkgutil.iter_modules(__path__) if m.name.startswith("ch")):
        if module in _LOADED:
            continue
        try:
            importlib.import_module(f"{__name__}.{module}")
        except Exception as error:
            if strict:
                raise
            _BROKEN[module] = f"{type(error).__name__}: {error}"
            continue
        _LOADED.add(module)
        _BROKEN.pop(module, None)


def all_exercises() -> dict[str, Exercise]:
    """Every registered exercise, keyed by id (imports every chapter's checkers; errors propagate).

    Returns:
        ``{id: Exercise}``, a copy of the registry.
    """
    _load_all(strict=True)
    return dict(EXERCISES)
