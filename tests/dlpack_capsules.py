"""A hand-made DLPack producer (ctypes over the spec's structs) for the tests: capsules with
byte_offset, NULL strides, flags, versions, devices and lanes no library hands out on demand,
and a deleter that counts its calls."""
import ctypes

import numpy as np


class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", DLDevice), ("ndim", ctypes.c_int32), ("dtype", DLDataType),
                ("shape", ctypes.POINTER(ctypes.c_int64)), ("strides", ctypes.POINTER(ctypes.c_int64)),
                ("byte_offset", ctypes.c_uint64)]


class DLManagedTensor(ctypes.Structure):
    pass


class DLManagedTensorVersioned(ctypes.Structure):
    pass


LegacyDeleter = ctypes.CFUNCTYPE(None, ctypes.POINTER(DLManagedTensor))
VersionedDeleter = ctypes.CFUNCTYPE(None, ctypes.POINTER(DLManagedTensorVersioned))
DLManagedTensor._fields_ = [("dl_tensor", DLTensor), ("manager_ctx", ctypes.c_void_p), ("deleter", LegacyDeleter)]
DLManagedTensorVersioned._fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32),
                                     ("manager_ctx", ctypes.c_void_p), ("deleter", VersionedDeleter),
                                     ("flags", ctypes.c_uint64), ("dl_tensor", DLTensor)]
READ_ONLY, IS_COPIED = 1, 2

_capsule_new = ctypes.pythonapi.PyCapsule_New
_capsule_new.restype = ctypes.py_object
_capsule_new.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
_capsule_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_capsule_pointer.restype = ctypes.c_void_p
_capsule_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]


class Producer:
    """Owns `buffer` (a NumPy array) and the structs of one capsule; `deleted` counts deleter calls.
    The capsule has no destructor: a test that leaves it unconsumed calls `release()` itself."""

    def __init__(self, buffer, shape, strides=None, byte_offset=0, versioned=True, version=(1, 0), flags=0,
                 device=(1, 0), dtype=None, code_bits_lanes=None):
        self.buffer = buffer
        self.deleted = 0
        self._shape = (ctypes.c_int64 * len(shape))(*shape)
        self._strides = None if strides is None else (ctypes.c_int64 * len(strides))(*strides)
        code, bits, lanes = code_bits_lanes or _dl_dtype(dtype or buffer.dtype)
        dl = DLTensor(buffer.ctypes.data, DLDevice(*device), len(shape), DLDataType(code, bits, lanes),
                      self._shape, self._strides, byte_offset)
        if versioned:
            self._deleter = VersionedDeleter(self._on_delete)
            self.managed = DLManagedTensorVersioned(version[0], version[1], None, self._deleter, flags, dl)
            self.name = b"dltensor_versioned"
        else:
            self._deleter = LegacyDeleter(self._on_delete)
            self.managed = DLManagedTensor(dl, None, self._deleter)
            self.name = b"dltensor"
        self.capsule = _capsule_new(ctypes.addressof(self.managed), self.name, None)

    def _on_delete(self, _):
        self.deleted += 1

    def release(self):
        self._on_delete(None)


def _dl_dtype(dt):
    dt = np.dtype(dt)
    code = {"b": 6, "u": 1, "i": 0, "f": 2, "c": 5}[dt.kind]
    return code, dt.itemsize * 8, 1


def versioned_flags(capsule):
    """The flags of an unconsumed "dltensor_versioned" capsule."""
    address = _capsule_pointer(capsule, b"dltensor_versioned")
    return DLManagedTensorVersioned.from_address(address).flags


def versioned_version(capsule):
    m = DLManagedTensorVersioned.from_address(_capsule_pointer(capsule, b"dltensor_versioned"))
    return m.major, m.minor
