"""The repository's policies as tests.

First the test-run policies of tests/conftest.py (a skip fails unless allowed, and the summary says
so); then the code base's own (CONTRIBUTING.md): the recipes stay true, one docstring dialect,
public names across modules, nothing that points outside the repository.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import json
import os
import pkgutil
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import settings

CONFTEST = Path(__file__).resolve().parent / "conftest.py"
PROBE = """
import pytest

def test_runs():
    pass

def test_skips():
    pytest.skip("no frobnicator")

@pytest.mark.xfail(reason="known bug")
def test_xfails():
    assert False
"""


def _run_probe(tmp_path: Path, *, module_skip: bool = False, **env: str):
    shutil.copy(CONFTEST, tmp_path / "conftest.py")
    (tmp_path / "test_probe.py").write_text(PROBE)
    if module_skip:
        (tmp_path / "test_module_skip.py").write_text(
            'import pytest\npytest.importorskip("no_such_module_anywhere")\n'
        )
    base = {k: v for k, v in os.environ.items() if k != "BOOK_ALLOW_SKIPS"}
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", str(tmp_path)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        env={**base, **env},
    )


def test_a_skip_is_a_failure_by_default(tmp_path):
    result = _run_probe(tmp_path)
    assert result.returncode == 1, result.stdout
    assert "2 failed, 1 passed" in result.stdout, result.stdout
    assert "no frobnicator" in result.stdout and "BOOK_ALLOW_SKIPS=1" in result.stdout
    assert "SKIP test_probe.py::test_xfails: known bug" in result.stdout


def test_a_module_skipped_at_import_stops_the_run(tmp_path):
    result = _run_probe(tmp_path, module_skip=True)
    assert result.returncode != 0, result.stdout
    assert "module skipped at collection" in result.stdout, result.stdout
    assert "no_such_module_anywhere" in result.stdout


def test_allowed_skips_are_listed_in_the_summary(tmp_path):
    result = _run_probe(tmp_path, module_skip=True, BOOK_ALLOW_SKIPS="1")
    assert result.returncode == 0, result.stdout
    assert "skips (3, allowed by BOOK_ALLOW_SKIPS=1)" in result.stdout, result.stdout
    assert "SKIP test_probe.py::test_skips: Skipped: no frobnicator" in result.stdout
    assert "no_such_module_anywhere" in result.stdout


def test_one_hypothesis_profile_derandomized_on_ci():
    profile = settings.get_profile("book")
    assert profile.max_examples == 30 and profile.deadline is None
    assert settings.get_profile("ci").derandomize
    expected = "ci" if os.environ.get("CI", "").lower() in ("1", "true", "yes") else "book"
    if not os.environ.get("HYPOTHESIS_PROFILE"):
        assert settings.default.derandomize == (expected == "ci")


# ==================================================================================================
# The repository's own policies (CONTRIBUTING.md, "Architecture" and "Recipes"): the recipes stay
# true, one docstring dialect, public names across modules, no pointers outside the repository.
#
# Each policy that the code base does not meet everywhere yet has an explicit allow-list of what
# still breaks it. A new violation fails at once; an entry that no longer breaks the policy fails
# too ("remove it from the list"), so the lists can only shrink, to empty.


ROOT = CONFTEST.parents[1]
LIB = ROOT / "lib"


def _repo_files() -> list[Path]:
    """The files git tracks and the untracked ones it does not ignore (what a clone would get)."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT, check=True, capture_output=True, text=True,
    ).stdout.split("\0")  # fmt: skip
    return sorted({ROOT / n for n in listed if n and (ROOT / n).is_file()})


def _text(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except (UnicodeDecodeError, OSError):
        return None


def _toc_chapters() -> list[str]:
    """The chapter stems of _toc.yml, in order (the book's one list of chapters)."""
    import yaml

    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    files = [c["file"] for part in toc["parts"] for c in part.get("chapters", [])]
    return [Path(f).name for f in files if f.startswith("chapters/")]


def _check_allow_list(
    found: dict[str, list[str]], allowed: set[str], what: str, present: set[str]
) -> None:
    """No violation outside ``allowed``; no entry of ``allowed`` that is ``present`` and clean."""
    new = {k: v for k, v in found.items() if k not in allowed}
    fixed = sorted((allowed & present) - set(found))
    lines = [f"{k}: {'; '.join(v[:6])}{' ...' if len(v) > 6 else ''}" for k, v in new.items()]
    assert not new, f"{what}:\n" + "\n".join(lines)
    assert not fixed, f"{what}: fixed, remove from the allow-list: {fixed}"


# --------------------------------------------------------------------------------------------------
# Recipe "add a chapter": chapters/NN_name.ipynb, _toc.yml, lib/exercises/chNN.py, intro.md.


def test_the_toc_lists_exactly_the_chapter_notebooks():
    """Every other list of chapters (tests, bench, reader paths) is the glob chapters/*.ipynb."""
    toc = _toc_chapters()
    assert len(toc) == len(set(toc)), f"a chapter is listed twice in _toc.yml: {toc}"
    notebooks = sorted(p.stem for p in (ROOT / "chapters").glob("*.ipynb"))
    assert sorted(toc) == notebooks, "_toc.yml and chapters/*.ipynb disagree"
    assert toc == sorted(toc), "chapters are numbered in reading order: NN_name"
    assert all(re.fullmatch(r"\d\d_[a-z0-9_]+", stem) for stem in toc), toc


def test_every_chapter_has_its_exercise_module_and_intro_entry():
    from lib.exercises import EXERCISES, _load_all

    _load_all()
    toc = _toc_chapters()
    intro = (ROOT / "intro.md").read_text()
    by_chapter: dict[str, set[str]] = {}
    for ex in EXERCISES.values():
        by_chapter.setdefault(ex.chapter, set()).add(ex.checker.__module__)
    for stem in toc:
        module = f"lib.exercises.ch{stem[:2]}"
        assert (LIB / "exercises" / f"ch{stem[:2]}.py").is_file(), f"{stem}: no {module}"
        assert by_chapter.get(stem) == {module}, f"{stem}: exercises from {by_chapter.get(stem)}"
        assert f"{{doc}}`chapters/{stem}`" in intro, f"{stem}: not in intro.md's map of the book"
    assert set(by_chapter) <= set(toc), f"exercises for no chapter: {set(by_chapter) - set(toc)}"


#: Files that may name many chapters: the list itself, the pages and the bench's results.
CHAPTER_LIST_HOMES = {"_toc.yml", "intro.md", "references.bib", "bench/results.md"}
CHAPTER_LIST_HOME_GLOBS = ("chapters/*.ipynb", "bench/results*.json")


def test_no_other_file_hardcodes_the_chapter_list():
    """A file naming four or more chapters is a second list that "add a chapter" would miss.

    README.md's benchmark block (between its bench markers) is written by `make bench` from the
    chapters it ran, so it is left out.
    """
    stems = _toc_chapters()
    offenders = {}
    for path in _repo_files():
        rel = path.relative_to(ROOT).as_posix()
        if rel in CHAPTER_LIST_HOMES or any(path.match(g) for g in CHAPTER_LIST_HOME_GLOBS):
            continue
        text = _text(path)
        if text is None:
            continue
        text = re.sub(r"<!-- bench:start -->.*?<!-- bench:end -->", "", text, flags=re.S)
        named = [s for s in stems if s in text]
        if len(named) >= 4:
            offenders[rel] = named
    assert not offenders, f"files that list chapters (derive them from _toc.yml): {offenders}"


def test_the_prose_states_the_right_number_of_chapters():
    words = "zero one two three four five six seven eight nine ten eleven twelve thirteen".split()
    count = len(_toc_chapters())
    wrong = []
    for name in ["README.md", "CONTRIBUTING.md", "intro.md", "appendix/architecture.md"]:
        path = ROOT / name
        text = path.read_text() if path.is_file() else ""
        for match in re.finditer(rf"\b(\d+|{'|'.join(words)}) chapters\b", text, re.I):
            n = match.group(1).lower()
            if (int(n) if n.isdigit() else words.index(n)) != count:
                wrong.append(f"{name}: {match.group(0)!r}")
    assert not wrong, f"the book has {count} chapters: {wrong}"


# --------------------------------------------------------------------------------------------------
# Recipes "add a figure" and "add a module": each module has its test file and its API entry.


def _lib_modules() -> list[str]:
    import lib

    names = ["lib", *(m.name for m in pkgutil.walk_packages(lib.__path__, "lib."))]
    return sorted(names)


def _lib_packages() -> set[str]:
    import lib

    return {"lib", *(m.name for m in pkgutil.walk_packages(lib.__path__, "lib.") if m.ispkg)}


def test_every_lib_module_is_in_the_api_reference():
    api = "\n".join(p.read_text() for p in sorted((ROOT / "appendix").glob("api*.md")))
    documented = set(re.findall(r"^\.\. automodule:: (\S+)", api, re.M))
    wanted = {m for m in _lib_modules() if not m.rsplit(".", 1)[-1].startswith("_")}
    wanted -= _lib_packages() - {"lib"}  # a subpackage's modules are documented one by one
    wanted -= {m for m in wanted if re.fullmatch(r"lib\.exercises\.ch\d\d", m)}  # checkers only
    assert wanted <= documented, (
        f"add to appendix/api.md or api_figures.md: {sorted(wanted - documented)}"
    )
    assert documented <= set(_lib_modules()), f"no such module: {documented - set(_lib_modules())}"


#: lib modules tested under another name (``lib/_checks.py`` -> tests/test_checks.py).
TEST_FILE_FOR = {"lib/_checks.py": "tests/test_checks.py", "lib/book.py": "tests/test_exercises.py"}


def test_every_lib_and_figure_module_has_its_test_file():
    missing = []
    for path in sorted([*LIB.glob("*.py"), *(LIB / "viz").glob("*.py")]):
        rel = path.relative_to(ROOT).as_posix()
        if path.name == "__init__.py":
            continue
        sub = "viz/" if path.parent.name == "viz" else ""
        test = TEST_FILE_FOR.get(rel, f"tests/{sub}test_{path.stem.lstrip('_')}.py")
        if not (ROOT / test).is_file():
            missing.append(f"{rel} -> {test}")
    assert not missing, f"modules without their test file: {missing}"


# --------------------------------------------------------------------------------------------------
# One docstring dialect: Google sections plus Equation, Shapes and References (napoleon custom
# sections), in this order; a summary line; Args/Returns where the function has them.

SECTION_ORDER = ("Equation", "Args", "Returns", "Yields", "Raises", "Shapes", "References")
OTHER_SECTIONS = {"Attributes", "Example", "Examples", "Note", "Notes", "Warning", "See Also"}
#: Headers that look like sections but that napoleon does not know (or knows under another name).
NEAR_MISSES = {
    "Arguments", "Parameters", "Params", "Return", "Raise", "Shape", "Equations", "Reference",
    "Paper", "Papers", "Citation", "Keys",
}  # fmt: skip
HEADER = re.compile(r"^(?P<name>[A-Z][A-Za-z]*(?: Also)?):(?P<rest>.*)$")


def _public_objects():
    """(qualified name, object) of every public function, class and method defined in lib."""
    for modname in _lib_modules():
        module = importlib.import_module(modname)
        for name, obj in vars(module).items():
            if name.startswith("_") or getattr(obj, "__module__", None) != modname:
                continue
            if not (inspect.isfunction(obj) or inspect.isclass(obj)):
                continue
            yield modname, f"{modname}.{name}", obj
            if inspect.isclass(obj):
                for mname, member in vars(obj).items():
                    if isinstance(member, staticmethod | classmethod):
                        member = member.__func__
                    public = not mname.startswith("_") or mname == "__init__"
                    if public and inspect.isfunction(member) and not _inherits_contract(obj, mname):
                        yield modname, f"{modname}.{name}.{mname}", member


def _inherits_contract(cls: type, name: str) -> bool:
    """An override documented where it is declared: a lib base class's method (checked there), or
    a torch method (``extra_repr``, ``parameters``), except ``forward``, which is the class's API."""
    for base in cls.__mro__[1:]:
        if name in vars(base) and name != "__init__":
            return base.__module__.startswith("lib") or name != "forward"
    return False


def docstring_problems(obj) -> list[str]:
    """What breaks the dialect in ``obj``'s docstring (empty when it follows it)."""
    if inspect.isfunction(obj) and obj.__name__ == "__init__":
        params = [p for p in inspect.signature(obj).parameters if p != "self"]
        owner_doc = inspect.getdoc(obj) or ""
        cls_doc = obj.__globals__.get(obj.__qualname__.split(".")[0]).__doc__ or ""
        both = owner_doc + "\n" + inspect.cleandoc(cls_doc)
        has = re.search(r"^(Args|Attributes):\s*$", both, re.M)
        return ["__init__ has parameters but no Args:"] if params and not has else []
    doc = inspect.getdoc(obj)
    if not doc or not doc.splitlines()[0].strip():
        return ["no summary line"]
    problems, headers = [], []
    for line in doc.splitlines()[1:]:
        match = HEADER.match(line)  # getdoc() dedents: a section header has no indentation
        if not match:
            continue
        name, rest = match.group("name"), match.group("rest").strip()
        if name in NEAR_MISSES:
            problems.append(f"unknown section {name!r}")
        elif name in SECTION_ORDER and rest:  # "Note: ..." is prose; "Shapes: x" a lost section
            problems.append(f"{name}: text on the header line is not a section")
        elif (name in SECTION_ORDER or name in OTHER_SECTIONS) and not rest:
            headers.append(name)
    ordered = [h for h in headers if h in SECTION_ORDER]
    if ordered != sorted(ordered, key=SECTION_ORDER.index) or len(ordered) != len(set(ordered)):
        problems.append(f"sections out of order: {ordered}")
    if inspect.isfunction(obj):
        sig = inspect.signature(obj)
        if [p for p in sig.parameters if p not in ("self", "cls")] and "Args" not in headers:
            problems.append("no Args:")
        ret = sig.return_annotation
        returns = ret not in (inspect.Signature.empty, None, "None", "NoReturn")
        if returns and not {"Returns", "Yields"} & set(headers):
            problems.append("no Returns:")
    return problems


def test_the_dialect_checker_tells_the_two_dialects_apart():
    def good(x: int, *, base: float = 10.0) -> float:
        """Scale ``x``.

        Equation:
            y = x / base

        Args:
            x: the value.
            base: the divisor.

        Returns:
            ``x / base``.

        Shapes:
            x: scalar.

        References:
            Su et al., RoFormer, arXiv:2104.09864.
        """
        return x / base

    def old(x: int) -> float:
        """Scale ``x``.

        Equation: y = x / 10
        Shapes: x: scalar.
        """
        return x / 10

    def late(x: int) -> None:
        """Print ``x``.

        Shapes:
            x: scalar.

        Args:
            x: the value.
        """

    assert docstring_problems(good) == []
    assert docstring_problems(old) == [
        "Equation: text on the header line is not a section",
        "Shapes: text on the header line is not a section",
        "no Args:",
        "no Returns:",
    ]
    assert docstring_problems(late) == ["sections out of order: ['Shapes', 'Args']"]


#: Modules whose docstrings are not converted yet (issue 17): shrinks to empty.
DIALECT_PENDING: set[str] = set()


def test_every_public_lib_docstring_follows_the_dialect():
    found: dict[str, list[str]] = {}
    for modname, qualname, obj in _public_objects():
        for problem in docstring_problems(obj):
            found.setdefault(modname, []).append(f"{qualname.removeprefix(modname)}: {problem}")
    _check_allow_list(
        found, DIALECT_PENDING, "docstrings off the dialect (CONTRIBUTING.md)", set(_lib_modules())
    )


#: A citation as the dialect writes it, or an arXiv URL (fine beside it).
ARXIV_OK = re.compile(r"arXiv:\d{4}\.\d{4,5}(?:v\d+)?|arxiv\.org/(?:abs|pdf)/\d{4}\.\d{4,5}")
#: Any other arXiv number: ``arXiv 2108.12409``, ``arXiv: 2108.12409``, ``arxiv:2108.12409``.
ARXIV_OTHER = re.compile(r"arxiv\W{0,3}\d", re.I)
#: Files whose arXiv citations are not ``arXiv:NNNN.NNNNN`` yet: shrinks to empty.
ARXIV_PENDING: set[str] = set()


def arxiv_problems(text: str) -> list[str]:
    """Each arXiv number in ``text`` not written ``arXiv:NNNN.NNNNN``, with its line number."""
    blanked = ARXIV_OK.sub(lambda m: " " * len(m.group(0)), text)
    problems = []
    for match in ARXIV_OTHER.finditer(blanked):
        line = text.count("\n", 0, match.start()) + 1
        problems.append(
            f"line {line}: {' '.join(text[match.start() : match.start() + 20].split())!r}"
        )
    return problems


def test_the_arxiv_checker_accepts_one_spelling_only():
    assert arxiv_problems("Su et al., arXiv:2104.09864 (https://arxiv.org/abs/2104.09864).") == []
    assert arxiv_problems("(no arXiv id)") == []
    bad = "arXiv 2108.12409; arXiv: 2108.12409; arxiv:2108.12409; arXiv\n2108.12409"
    assert len(arxiv_problems(bad)) == 4


def test_arxiv_citations_are_written_one_way():
    """``arXiv:2104.09864`` (a URL beside it is fine), never ``arXiv 2104.09864`` or ``arXiv: 2104``."""
    found: dict[str, list[str]] = {}
    for path in sorted(LIB.rglob("*.py")):
        problems = arxiv_problems(path.read_text())
        if problems:
            found[path.relative_to(ROOT).as_posix()] = problems
    present = {p.relative_to(ROOT).as_posix() for p in LIB.rglob("*.py")}
    _check_allow_list(found, ARXIV_PENDING, "arXiv citations not written arXiv:NNNN.NNNNN", present)


# --------------------------------------------------------------------------------------------------
# Public names for what crosses modules.


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _resolve(module: str, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    base = module.split(".")
    base = base[: len(base) - node.level + (1 if module.endswith("__init__") else 0)]
    return ".".join([*base, *([node.module] if node.module else [])])


def private_imports(path: Path) -> list[str]:
    """``from other import _name`` and ``other._name`` in ``path`` (other: a module of this repo)."""
    module = _module_name(path)
    is_pkg = path.name == "__init__.py"
    tree = ast.parse(path.read_text())
    ours = ("lib", "bookext", "bench", "scripts")
    aliases: dict[str, str] = {}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            level_base = module if is_pkg else module.rpartition(".")[0]
            if node.level:
                parts = level_base.split(".")
                parts = parts[: len(parts) - node.level + 1]
                source = ".".join([*parts, *([node.module] if node.module else [])])
            else:
                source = node.module or ""
            if source.split(".")[0] not in ours:
                continue
            for alias in node.names:
                if alias.name.startswith("_") and not alias.name.startswith("__"):
                    if source != module:
                        found.append(f"from {source} import {alias.name}")
                else:
                    aliases[alias.asname or alias.name] = f"{source}.{alias.name}"
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] in ours:
                    aliases[alias.asname or alias.name.split(".")[0]] = (
                        alias.name if alias.asname else alias.name.split(".")[0]
                    )
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr.startswith("_"):
            if node.attr.startswith("__"):
                continue
            chain, value = [], node.value
            while isinstance(value, ast.Attribute):
                chain.insert(0, value.attr)
                value = value.value
            if isinstance(value, ast.Name) and value.id in aliases:
                target = ".".join([aliases[value.id], *chain])
                if target != module:
                    found.append(f"{target}.{node.attr}")
    return found


def test_the_private_import_finder_finds_both_spellings(tmp_path):
    src = tmp_path / "probe.py"
    src.write_text(
        "import lib.rope\nfrom lib import mrope\nfrom lib.rope import _angles, rope_inv_freq\n"
        "from os import _exit\nlib.rope._cache\nmrope._kinds\nmrope.SEGMENT_KINDS\n"
    )
    old = ROOT
    try:
        globals()["ROOT"] = tmp_path
        assert sorted(private_imports(src)) == sorted(
            ["from lib.rope import _angles", "lib.rope._cache", "lib.mrope._kinds"]
        )
    finally:
        globals()["ROOT"] = old


#: Files that still use another module's private names (issue 17): shrinks to empty.
PRIVATE_IMPORT_PENDING: set[str] = set()


def test_no_module_uses_another_modules_private_names():
    """Outside tests, what crosses modules is public (e.g. ``lib._checks.check_positions``)."""
    found: dict[str, list[str]] = {}
    for path in _repo_files():
        rel = path.relative_to(ROOT).as_posix()
        if path.suffix != ".py" or rel.startswith(("tests/", "chapters/")):
            continue
        hits = private_imports(path)
        if hits:
            found[rel] = hits
    present = {p.relative_to(ROOT).as_posix() for p in _repo_files()}
    _check_allow_list(found, PRIVATE_IMPORT_PENDING, "private names used across modules", present)


# --------------------------------------------------------------------------------------------------
# Nothing points outside the repository.

#: Built from pieces so that this file does not mention them itself.
OUTSIDE = ("../" + "shared", "/work/" + "coord")


@pytest.mark.parametrize("needle", OUTSIDE)
def test_no_file_points_outside_the_repository(needle):
    hits = [p.relative_to(ROOT).as_posix() for p in _repo_files() if needle in (_text(p) or "")]
    assert not hits, f"{needle!r} is not part of the repository, but {hits} mention it"


# --------------------------------------------------------------------------------------------------
# The layers (CONTRIBUTING.md, "Architecture"): what each may import.

#: layer -> (its files, the imports it must not make). Imports inside functions count too.
LAYERS = {
    "lib (math)": (
        lambda rel: rel.startswith("lib/") and not rel.startswith("lib/viz/"),
        ("lib.viz", "plotly", "matplotlib", "bookext", "tests", "bench", "scripts"),
    ),
    "lib/viz (figures)": (
        lambda rel: rel.startswith("lib/viz/"),
        ("matplotlib", "PIL", "bookext", "tests", "bench", "scripts"),
    ),
    "bookext (site)": (
        lambda rel: rel.startswith("bookext/"),
        ("lib", "tests", "bench", "scripts"),
    ),
    "chapters": (
        lambda rel: rel.startswith("chapters/"),
        ("bookext", "tests", "bench", "scripts"),
    ),
}


def _imports(source: str) -> set[str]:
    source = "\n".join(
        "" if line.lstrip().startswith(("%", "!")) else line for line in source.splitlines()
    )
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.add(node.module)
            found |= {f"{node.module}.{alias.name}" for alias in node.names}
    return found


def test_each_layer_imports_only_what_it_may():
    wrong = []
    for path in _repo_files():
        rel = path.relative_to(ROOT).as_posix()
        if path.suffix == ".py":
            source = path.read_text()
        elif path.suffix == ".ipynb":
            cells = json.loads(path.read_text())["cells"]
            source = "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "code")
        else:
            continue
        for layer, (member, forbidden) in LAYERS.items():
            if not member(rel):
                continue
            for name in sorted(_imports(source)):
                if any(name == f or name.startswith(f + ".") for f in forbidden):
                    wrong.append(f"{rel} ({layer}) imports {name}")
    assert not wrong, "imports against the layering:\n" + "\n".join(sorted(set(wrong)))


# --------------------------------------------------------------------------------------------------
# Recipe "add a RoPE variant": lib's registry is the list; the figures' styles follow it.


def test_every_registered_scaling_method_has_a_style_of_its_own():
    """``method_style`` refuses a method without a style; no two methods share one."""
    from lib.rope_scaling import ROPE_SCALING
    from lib.viz.rope_scaling import method_style

    styles = {name: method_style(name) for name in ROPE_SCALING}
    assert len(set(styles.values())) == len(styles), f"two methods share a style: {styles}"


def test_every_position_scheme_of_the_lab_has_a_style():
    from lib.lab import POSITION_SCHEMES
    from lib.viz.lab import SCHEME_STYLE

    missing = sorted(set(POSITION_SCHEMES) - set(SCHEME_STYLE))
    assert not missing, f"no style in lib/viz/lab.py for {missing}"


def test_references_bib_lists_each_arxiv_paper_once():
    """Two keys for one paper print it twice in the bibliography (deepseek2024v2 had a twin)."""
    text = (ROOT / "references.bib").read_text()
    owners: dict[str, list[str]] = {}
    for entry in re.split(r"(?m)^(?=@)", text)[1:]:
        key = re.match(r"@\w+\{([^,]+),", entry).group(1).strip()
        for arxiv_id in set(re.findall(r"(?<![\d.])(\d{4}\.\d{4,5})(?!\d)", entry)):
            owners.setdefault(arxiv_id, []).append(key)
    twins = {arxiv_id: keys for arxiv_id, keys in owners.items() if len(keys) > 1}
    assert not twins, f"one arXiv paper under several keys: {twins}"


def test_every_cited_key_is_in_references_bib():
    """A {cite} key missing from references.bib fails the strict build late; name it here."""
    text = (ROOT / "references.bib").read_text()
    known = {m.group(1).strip() for m in re.finditer(r"(?m)^@\w+\{([^,]+),", text)}
    missing: dict[str, set[str]] = {}
    for path in sorted(
        [
            *(ROOT / "chapters").glob("*.ipynb"),
            *ROOT.glob("*.md"),
            *(ROOT / "appendix").glob("*.md"),
        ]
    ):
        if path.suffix == ".ipynb":
            cells = json.loads(path.read_text())["cells"]
            source = "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "markdown")
        else:
            source = path.read_text()
        for group in re.findall(r"\{cite(?::[a-z]+)?\}`([^`]+)`", source):
            for key in (k.strip() for k in group.split(",")):
                if key not in known:
                    missing.setdefault(path.name, set()).add(key)
    assert not missing, f"cited but not in references.bib: {missing}"
