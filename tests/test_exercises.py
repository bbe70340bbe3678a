"""Every exercise's checker rejects obviously wrong answers, and every exercise appears in its chapter.

(That each checker accepts its chapter's hidden solution is checked by nbval: the solution cell's
saved output says "Correct!", and strict nbval re-runs it.)
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from lib.exercises import ExerciseFailed, all_exercises, check

CHAPTERS = Path(__file__).resolve().parents[1] / "chapters"
EXERCISES = all_exercises()


def _notebook_sources(stem: str) -> list[tuple[list[str], str]]:
    nb = json.loads((CHAPTERS / f"{stem}.ipynb").read_text())
    return [
        (cell.get("metadata", {}).get("tags", []), "".join(cell["source"]))
        for cell in nb["cells"]
        if cell["cell_type"] == "code"
    ]


@pytest.mark.parametrize("exercise_id", sorted(EXERCISES))
def test_checker_rejects_wrong_answers(exercise_id):
    wrong = EXERCISES[exercise_id].wrong_answers()
    assert wrong, f"{exercise_id}: register at least one obviously wrong answer"
    for answer in wrong:
        with pytest.raises(ExerciseFailed):
            check(exercise_id, answer)


@pytest.mark.parametrize("exercise_id", sorted(EXERCISES))
def test_exercise_has_a_check_cell_and_a_hidden_solution(exercise_id):
    chapter = EXERCISES[exercise_id].chapter
    assert (CHAPTERS / f"{chapter}.ipynb").is_file(), f"{exercise_id}: no chapter {chapter}"
    calls = [
        (tags, src)
        for tags, src in _notebook_sources(chapter)
        if re.search(rf"check\(\s*[\"']{re.escape(exercise_id)}[\"']", src)
    ]
    reader = [c for c in calls if "solution" not in c[0]]
    solution = [c for c in calls if "solution" in c[0]]
    assert reader, f"{exercise_id}: no check cell for the reader in {chapter}"
    assert solution, f"{exercise_id}: no solution cell (tagged 'solution') in {chapter}"
    assert all("hide-cell" in tags or "hide-input" in tags for tags, _ in solution), (
        f"{exercise_id}: the solution must be hidden behind a toggle (tag hide-cell or hide-input)"
    )


def test_unanswered_exercise_prints_a_hint_and_does_not_raise(capsys):
    if not EXERCISES:
        pytest.fail("no exercises registered")
    assert check(sorted(EXERCISES)[0], None) is None
    assert "Not answered yet" in capsys.readouterr().out


def test_unknown_exercise_is_a_clear_error():
    with pytest.raises(ValueError, match="unknown exercise"):
        check("no-such-exercise", 1)


def test_every_chapter_has_exercises():
    chapters = sorted(p.stem for p in CHAPTERS.glob("[0-9][0-9]_*.ipynb"))
    with_exercises = {e.chapter for e in EXERCISES.values()}
    missing = [c for c in chapters if c not in with_exercises]
    assert not missing, f"chapters without exercises: {missing}"
