"""torch.save's format before PyTorch 1.6 (`_use_new_zipfile_serialization=False`), which
torch.load still reads: five pickles in a row (magic number, protocol version, system info,
the object with storages as persistent ids ('storage', type, key, location, numel, None),
the sorted storage keys), then each storage as an int64 element count and its raw bytes.
"""
import pickle
import struct
import sys

from . import _C

MAGIC_NUMBER = 0x1950A86A20F9469CFC6C
PROTOCOL_VERSION = 1001
_SYS_INFO = {"protocol_version": PROTOCOL_VERSION, "little_endian": sys.byteorder == "little",
             "type_sizes": {"short": 2, "int": 4, "long": 4}}


def legacy_save(obj, f, pickler_class, protocol):
    storages, itemsizes = {}, {}

    class LegacyPickler(pickler_class):
        def persistent_id(self, obj):
            pid = super().persistent_id(obj)
            if pid is None:
                return None
            itemsizes.setdefault(pid[2], getattr(obj, "dtype", _C.uint8).itemsize)
            return pid + (None,)  # no view metadata

    for header in (MAGIC_NUMBER, PROTOCOL_VERSION, _SYS_INFO):
        pickle.dump(header, f, protocol=protocol)
    LegacyPickler(f, protocol, storages).dump(obj)
    keys = sorted(storages)
    pickle.dump(keys, f, protocol=protocol)
    from . import _storage
    for key in keys:
        storage = _storage.cpu(storages[key])
        f.write(struct.pack("<q", storage.nbytes() // itemsizes[key]))
        f.write(memoryview(storage))
    if hasattr(f, "flush"):
        f.flush()


def legacy_load(f, restore_location, unpickler_factory):
    """Reads a legacy-format file from `f` (at its start)."""
    from .serialization import TypedStorage, _StorageType, _decode
    for expected, what in ((MAGIC_NUMBER, "magic number"), (PROTOCOL_VERSION, "protocol version")):
        value = unpickler_factory(f).load()
        if value != expected:
            raise RuntimeError("Invalid magic number; corrupt file?" if what == "magic number"
                               else f"Invalid protocol version: {value}")
    sys_info = unpickler_factory(f).load()
    if isinstance(sys_info, dict) and sys_info.get("little_endian") is False:
        raise RuntimeError("ember.load: this legacy checkpoint was written on a big-endian machine")
    storages = {}

    def persistent_load(saved_id):
        if not isinstance(saved_id, tuple) or len(saved_id) != 6 or _decode(saved_id[0]) != "storage":
            raise pickle.UnpicklingError(f"Unknown persistent id in this checkpoint: {saved_id!r}")
        storage_type, key, location, numel, view_metadata = saved_id[1:]
        if view_metadata is not None:
            raise RuntimeError("ember.load: storage views of the legacy format (PyTorch < 1.0) are not supported")
        dtype = _C.uint8 if storage_type is _C.UntypedStorage else getattr(storage_type, "dtype", None)
        key, location = _decode(key), _decode(location)
        if dtype is None or not (isinstance(key, str) and isinstance(location, str) and type(numel) is int
                                 and numel >= 0):
            raise pickle.UnpicklingError(f"Malformed storage id in this checkpoint: {saved_id!r}")
        if key not in storages:
            storages[key] = (_C.empty(numel * dtype.itemsize, dtype=_C.uint8).untyped_storage(), dtype, location)
        storage = storages[key][0]
        return storage if not isinstance(storage_type, _StorageType) else TypedStorage(storage, dtype)

    unpickler = unpickler_factory(f)
    unpickler.persistent_load = persistent_load
    result = unpickler.load()
    keys = unpickler_factory(f).load()
    for key in keys:
        if key not in storages:
            raise RuntimeError(f"ember.load: storage key {key!r} of this checkpoint is not in its pickle")
        storage, dtype, location = storages[key]
        header = f.read(8)
        count = struct.unpack("<q", header)[0] if len(header) == 8 else -1
        view = memoryview(storage)
        if count * dtype.itemsize != len(view) or f.readinto(view) != len(view):
            raise RuntimeError(f"ember.load: the legacy checkpoint is truncated or corrupted (storage {key})")
        if restore_location(storage, location) is not storage:
            raise RuntimeError("ember.load: a legacy-format checkpoint loads on the CPU only: pass "
                               "map_location='cpu' (or re-save it with the zip format)")
    return result
