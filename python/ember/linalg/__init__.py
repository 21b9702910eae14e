"""ember.linalg: linear algebra, as torch.linalg (the ops grow here with the op-set issue)."""
from .. import _C

__all__ = ["vector_norm"]

vector_norm = _C.linalg_vector_norm
