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
import pkgutil
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


class ExerciseFailed(AssertionError):
    """A wrong answer: the message says what is wrong and, where it can, how to fix it."""


@dataclass(frozen=True)
class Exercise:
    """One registered exercise: its checker and a factory of obviously wrong answers."""

    id: str
    chapter: str
    checker: Callable[[Any], None]
    wrong_answers: Callable[[], list[Any]]


EXERCISES: dict[str, Exercise] = {}


def exercise(
    exercise_id: str, *, chapter: str, wrong_answers: Callable[[], list[Any]]
) -> Callable[[Callable[[Any], None]], Callable[[Any], None]]:
    """Register ``checker(answer)`` under ``exercise_id``; it raises ``AssertionError`` if wrong.

    ``chapter`` is the notebook's file stem (e.g. ``"08_rope"``); ``wrong_answers`` returns a list of
    answers the checker must reject (tested).
    """

    def register(checker: Callable[[Any], None]) -> Callable[[Any], None]:
        if exercise_id in EXERCISES:
            raise ValueError(f"exercise id {exercise_id!r} is registered twice")
        EXERCISES[exercise_id] = Exercise(exercise_id, chapter, checker, wrong_answers)
        return checker

    return register


def check(exercise_id: str, answer: Any) -> bool:
    """Check ``answer`` for exercise ``exercise_id``; raise :class:`ExerciseFailed` if it is wrong.

    Returns ``False`` (after printing a hint) while ``answer`` is ``None``, ``True`` when right.
    """
    _load_all()
    if exercise_id not in EXERCISES:
        raise ValueError(f"unknown exercise {exercise_id!r}; known: {sorted(EXERCISES)}")
    if answer is None:
        print("Not answered yet: replace None with your answer, then run this cell again.")
        return False
    try:
        EXERCISES[exercise_id].checker(answer)
    except ExerciseFailed:
        raise
    except AssertionError as error:
        raise ExerciseFailed(f"Not quite: {error}") from None
    print(f"Correct! ({exercise_id})")
    return True


_LOADED = False


def _load_all() -> None:
    """Import every ``lib/exercises/ch*.py`` so that its checkers register themselves."""
    global _LOADED
    if _LOADED:
        return
    for module in sorted(m.name for m in pkgutil.iter_modules(__path__) if m.name.startswith("ch")):
        importlib.import_module(f"{__name__}.{module}")
    _LOADED = True


def all_exercises() -> dict[str, Exercise]:
    """Every registered exercise, keyed by id (imports every chapter's checkers first)."""
    _load_all()
    return dict(EXERCISES)
