"""ember.backends: what the build contains."""
import types

from .. import _C

cuda = types.SimpleNamespace(is_built=lambda: bool(_C._cuda_built))
openblas = types.SimpleNamespace(corename=_C._blas_corename)
