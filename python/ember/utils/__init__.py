"""Utilities built on ember's core: `ember.utils.trace` (seeing every op call)."""
