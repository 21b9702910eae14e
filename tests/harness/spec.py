"""ops.yaml and derivatives.yaml as the harness sees them: codegen's model (codegen/model.py,
the one reader of the spec), plus the few questions only the tests ask of an op."""
import os
import sys
from functools import lru_cache

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
if REPO not in sys.path:            # codegen/ is not installed: the tests import it from the checkout
    sys.path.insert(0, REPO)

from codegen.model import ALL_DTYPES, load_model  # noqa: E402,F401  (ALL_DTYPES is re-exported)

# What an op that declares no dtypes (neither `dtypes:` nor `test: dtypes:`) is tested on.
DEFAULT_TEST_DTYPES = ["float32", "float64"]


@lru_cache(maxsize=None)
def load_spec(ops_path=None, derivatives_path=None):
    """codegen's Model of the repository's spec (EMBER_OPS_YAML may name another ops.yaml)."""
    ops_path = ops_path or os.environ.get("EMBER_OPS_YAML") or os.path.join(REPO, "ops.yaml")
    return load_model(ops_path, derivatives_path or os.path.join(REPO, "derivatives.yaml"))


def run_dtypes(op):
    """The dtypes the harness runs: the declared ones, else `test: dtypes:`, else float32/64."""
    return op.dtypes or op.test_dtypes or DEFAULT_TEST_DTYPES


def tensor_args(op):
    """Every tensor parameter, lists (cat's `tensors`, index's `indices`) included."""
    return [p for p in op.sig.params if p.type.base == "Tensor"]


def extra_args(op):
    """The parameters that are not tensors, in signature order."""
    return [p for p in op.sig.params if p.type.base != "Tensor"]


def role_of(op, param):
    """Which sample input feeds a tensor parameter: a (self), b, c (bool condition), tensors."""
    if param.type.is_list:
        return "tensors"
    if param.name == "self":
        return "a"
    named = [p for p in op.sig.params if p.type.base == "Tensor" and not p.type.is_list]
    if param is named[0] and all(p.name != "self" for p in named):
        return "a"  # an op without `self` whose first tensor is its operand (cosine_similarity's x1)
    return "c" if op.cast.get(param.name) == "bool" else "b"


def reduce_result(op):
    """A reduction's `reduce: result:` rule, None for other kinds."""
    return op.reduce["result"] if op.reduce else None


def returns_several(op):
    """The op returns a tuple of tensors or a list (the reference gives a tuple)."""
    returns = op.sig.returns
    return len(returns) > 1 or returns[0].type.is_list


def differentiable(op):
    """Gradchecked: a derivatives.yaml entry, or a composite/view returning tensors (autograd
    records the ops it is made of)."""
    return op.derivative is not None or (
        op.kind in ("composite", "view") and all(r.type.base == "Tensor" for r in op.sig.returns))
