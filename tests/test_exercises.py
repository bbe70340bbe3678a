"""Every exercise's checker rejects obviously wrong answers and accepts its registered right answer,
signals wrong answers with real exceptions (no bare ``assert``), and appears in its chapter; every
committed chapter is executed and leaves its exercises unanswered for the reader.

(That each checker also accepts its chapter's hidden solution is checked by nbval: the solution
cell's saved output says "Correct!", and strict nbval re-runs it.)
"""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import pytest

import lib.exercises
from lib.exercises import ExerciseFailed, all_exercises, check

ROOT = Path(__file__).resolve().parents[1]
CHAPTERS = ROOT / "chapters"
EXERCISES = all_exercises()
CHECKER_MODULES = sorted(Path(lib.exercises.__file__).parent.glob("ch*.py"))
NOTEBOOKS = sorted(CHAPTERS.glob("[0-9][0-9]_*.ipynb"))


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


def test_every_exercise_registers_a_right_answer():
    missing = sorted(i for i, e in EXERCISES.items() if e.right_answer is None)
    assert not missing, (
        f"{len(missing)} of {len(EXERCISES)} exercises register no right_answer= (@exercise(..., "
        f"right_answer=lambda: ...)): {missing}"
    )


@pytest.mark.parametrize("exercise_id", sorted(EXERCISES))
def test_checker_accepts_its_right_answer(exercise_id, capsys):
    exercise = EXERCISES[exercise_id]
    if exercise.right_answer is None:
        pytest.fail(f"{exercise_id}: register right_answer=lambda: ... in lib/exercises")
    answer = exercise.right_answer()
    assert answer is not None, (
        f"{exercise_id}: right_answer() returned None (the 'unanswered' value)"
    )
    check(exercise_id, answer)  # raises ExerciseFailed if the checker rejects it
    assert f"Correct! ({exercise_id})" in capsys.readouterr().out


@pytest.mark.parametrize("module", CHECKER_MODULES, ids=lambda p: p.name)
def test_checkers_use_require_not_a_bare_assert(module):
    # `python -O` removes assert statements: a checker built on them accepts every answer.
    tree = ast.parse(module.read_text(), filename=str(module))
    asserts = [node.lineno for node in ast.walk(tree) if isinstance(node, ast.Assert)]
    assert not asserts, (
        f"lib/exercises/{module.name} uses a bare assert on line(s) {asserts}: use "
        "lib.exercises.require(condition, message) or raise ExerciseFailed"
    )


def _code_cells(path: Path) -> list[dict]:
    return [c for c in json.loads(path.read_text())["cells"] if c["cell_type"] == "code"]


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: p.name)
def test_committed_notebook_has_no_unexecuted_code_cell(notebook):
    # nbval compares only the outputs a cell has: a cell never run would pass unchecked.
    unexecuted = [
        i
        for i, cell in enumerate(_code_cells(notebook))
        if "".join(cell["source"]).strip() and cell.get("execution_count") is None
    ]
    assert not unexecuted, (
        f"{notebook.name}: code cells {unexecuted} (0-based, among code cells) were never run; "
        f"execute it: make execute NB=chapters/{notebook.name}"
    )


def _reader_check_cells(notebook: Path) -> list[tuple[str, str, dict]]:
    """(exercise id, answer variable, cell) for each reader cell ``check("id", name)``."""
    found = []
    for cell in _code_cells(notebook):
        if "solution" in cell.get("metadata", {}).get("tags", []):
            continue
        source = "".join(cell["source"])
        for match in re.finditer(r"check\(\s*[\"']([\w-]+)[\"']\s*,\s*(\w+)\s*\)", source):
            found.append((match.group(1), match.group(2), cell))
    return found


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: p.name)
def test_exercise_reader_cells_are_left_unanswered(notebook):
    cells = _reader_check_cells(notebook)
    assert cells, f'{notebook.name}: no reader exercise cell check("id", answer)'
    for exercise_id, name, cell in cells:
        source = "".join(cell["source"])
        tree = ast.parse(source)
        assigned = [
            node.value
            for node in tree.body
            if isinstance(node, ast.Assign)
            and any(isinstance(t, ast.Name) and t.id == name for t in node.targets)
        ]
        assert len(assigned) == 1 and isinstance(assigned[0], ast.Constant), (
            f"{notebook.name}, {exercise_id}: the reader cell must set `{name} = None` (once) "
            f"before check(); got:\n{source}"
        )
        assert assigned[0].value is None, (
            f"{notebook.name}, {exercise_id}: the reader cell is answered (`{name} = "
            f"{assigned[0].value!r}`); leave `{name} = None` for the reader"
        )
        text = "".join(
            "".join(out.get("text", "")) for out in cell.get("outputs", []) if "text" in out
        )
        assert "Not answered yet" in text, (
            f"{notebook.name}, {exercise_id}: the saved output of the reader cell should be the "
            f"'Not answered yet' hint, got {text!r}"
        )


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


def test_require_tensor_returns_the_tensor_or_fails_with_the_message() -> None:
    import torch

    from lib.exercises import require_tensor

    x = torch.zeros(3)
    assert require_tensor(x, "m", kind="floating") is x
    ids = torch.arange(3)
    assert require_tensor(ids, "m", kind="integer") is ids
    assert require_tensor(torch.zeros(2, dtype=torch.bool), "m") is not None  # "any"
    for answer, kind in [
        ([0.0, 1.0], "any"),
        (ids, "floating"),
        (x, "integer"),
        (torch.zeros(2, dtype=torch.bool), "integer"),
        (torch.zeros(2, dtype=torch.complex64), "integer"),
    ]:
        with pytest.raises(ExerciseFailed, match=r"^expected this$"):
            require_tensor(answer, "expected this", kind=kind)


def test_require_real_returns_a_float_or_fails_with_the_message() -> None:
    from fractions import Fraction

    from lib.exercises import require_real

    assert require_real(3, "m") == 3.0 and isinstance(require_real(3, "m"), float)
    assert require_real(Fraction(1, 4), "m") == 0.25
    for answer in [True, "0.5", None, 1j]:
        with pytest.raises(ExerciseFailed, match=r"^expected a number$"):
            require_real(answer, "expected a number")


def test_require_int_returns_an_int_or_fails_with_the_message() -> None:
    import numpy as np

    from lib.exercises import require_int

    assert require_int(3, "m") == 3 and type(require_int(np.int64(3), "m")) is int
    for answer in [True, 3.0, "3", None, np.float32(3)]:
        with pytest.raises(ExerciseFailed, match=r"^expected an int$"):
            require_int(answer, "expected an int")


def test_require_function_names_the_signature_it_wants() -> None:
    from lib.exercises import require_function

    require_function(len, "f(x)")  # a callable passes
    with pytest.raises(ExerciseFailed, match=r"^answer must be a function f\(x\), got int$"):
        require_function(3, "f(x)")
    with pytest.raises(ExerciseFailed, match=r"^answer must be a function, got str$"):
        require_function("f")
