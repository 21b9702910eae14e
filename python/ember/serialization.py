"""ember.save and ember.load in PyTorch's file format (torch.serialization).

A file ember.save writes is what torch.save writes: a zip (see _zip_records) holding
`data.pkl`, a protocol-2 pickle that names torch's own globals
(`torch._utils._rebuild_tensor_v2`, `torch.FloatStorage`, `torch.float32`, ...),
and one record `data/<key>` per storage, which the pickle refers to by persistent id
`('storage', torch.FloatStorage, key, location, numel)`. So torch.load reads ember's
files and ember.load reads torch's, with or without torch installed: ember writes
those names as text and maps them back to its own objects when it reads them.

The safe globals of weights_only loading live here; saving in _serialization_save, loading in
_serialization_load (their public names are this module's).
"""
from . import _weights_only_unpickler

__all__ = ["save", "load", "add_safe_globals", "get_safe_globals", "clear_safe_globals", "safe_globals",
           "get_unsafe_globals_in_checkpoint", "default_restore_location", "location_tag", "get_default_mmap_options",
           "set_default_mmap_options"]


# ---------------------------------------------------------------------------- safe globals
def clear_safe_globals():
    """Clears the list of globals that are safe for ``weights_only`` load."""
    _weights_only_unpickler._clear_safe_globals()


def get_safe_globals():
    """Returns the list of user-added globals that are safe for ``weights_only`` load."""
    return _weights_only_unpickler._get_safe_globals()


def add_safe_globals(safe_globals):
    """Marks the given globals as safe for ``weights_only`` load: functions in the list may be called
    while unpickling, classes instantiated and their state set. Each item is a function/class or a
    tuple (function/class, "full.path.Name") naming it as the checkpoint does."""
    _weights_only_unpickler._add_safe_globals(safe_globals)


class safe_globals(_weights_only_unpickler._safe_globals):
    """Context-manager that adds certain globals as safe for ``weights_only`` load."""


from ._serialization_save import DEFAULT_PROTOCOL, location_tag, save  # noqa: E402,F401
from ._serialization_load import (  # noqa: E402,F401
    UNSAFE_MESSAGE, TypedStorage, _decode, _StorageType, default_restore_location, get_default_mmap_options,
    get_unsafe_globals_in_checkpoint, load, set_default_mmap_options)
