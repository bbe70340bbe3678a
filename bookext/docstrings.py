"""Render the ``Equation:`` section of lib's docstrings as a literal block on the API page.

lib's docstrings (CONTRIBUTING.md, "Docstrings") write formulas in plain text under a Google-style
``Equation:`` section. Napoleon renders a custom section's body as reStructuredText, where ``|x|`` is
a substitution, ``**params`` starts bold text and a continuation line's indent is an error. This hook
runs before napoleon and turns the section into a rubric and a literal block, so each formula shows
exactly as written (the same text ``help()`` prints).
"""

from __future__ import annotations

from typing import Any

SECTION = "Equation:"


def literal_equation_sections(lines: list[str]) -> list[str]:
    """``lines`` of a docstring with each ``Equation:`` section as a rubric and a literal block.

    Args:
        lines: the docstring's lines, dedented (as autodoc passes them).

    Returns:
        New lines: the section header becomes ``.. rubric:: Equation`` and its indented body a
        ``::`` literal block; everything else is unchanged.
    """
    out: list[str] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.strip() == SECTION:
            indent = len(line) - len(line.lstrip())
            body: list[str] = []
            i += 1
            while i < len(lines) and (
                not lines[i].strip() or len(lines[i]) - len(lines[i].lstrip()) > indent
            ):
                body.append(lines[i])
                i += 1
            while body and not body[-1].strip():
                body.pop()
            pad = " " * indent
            out += [pad + ".. rubric:: Equation", "", pad + "::", ""]
            out += body
            out.append("")
            continue
        out.append(line)
        i += 1
    return out


def _process(app: Any, what: str, name: str, obj: Any, options: Any, lines: list[str]) -> None:
    lines[:] = literal_equation_sections(lines)


def setup(app: Any) -> dict:
    app.setup_extension("sphinx.ext.autodoc")  # the event is autodoc's
    # Before sphinx.ext.napoleon (priority 500), which would parse the section as reStructuredText.
    app.connect("autodoc-process-docstring", _process, priority=400)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
