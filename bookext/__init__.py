"""Sphinx / myst-nb extensions that the book's build needs (not part of the taught library)."""
