"""Utilities built on ember's core: `ember.utils.trace` (seeing every op call)."""
from . import trace  # noqa: E402,F401
