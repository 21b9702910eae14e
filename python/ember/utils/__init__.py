"""Utilities built on ember's core: `ember.utils.trace` (seeing every op call) and
`ember.utils.hooks` (removable hook handles)."""
from . import hooks, trace  # noqa: E402,F401
