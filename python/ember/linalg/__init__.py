"""ember.linalg: linear algebra, as torch.linalg. Its functions are the ops of
ops.yaml with `python_module: linalg`, named without the `linalg_` prefix."""
from .._C import _linalg
from .._C import _LinAlgError as LinAlgError  # noqa: F401 (a RuntimeError, as torch.linalg.LinAlgError)
from .._C._linalg import *  # noqa: F401,F403
from .._tuple_out import linalg_lu_factor as lu_factor, linalg_lu_factor_ex as lu_factor_ex  # noqa: E402,F401  (out=)

__all__ = [name for name in _linalg.__all__ if not name.startswith("_")]
del _linalg
