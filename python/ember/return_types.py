"""The named tuples ops return (``ember.return_types.max`` ...), as ``torch.return_types``."""
from . import _C
from ._tuple_out import OUT_TYPES as _OUT_TYPES  # frexp_out, ...: the tuple out= forms

__all__ = []
for _type in (*_C._return_types(), *_OUT_TYPES):
    globals()[_type.__name__] = _type
    __all__.append(_type.__name__)
__all__.sort()
del _type
