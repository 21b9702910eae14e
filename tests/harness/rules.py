"""The dtype an op computes in and the dtype of each result, from ops.yaml's rules.

promote: common -> result_type of the inputs; float -> the same, with integral/bool
going to float32; bool -> compute in the common type, return bool.
reduce.result: long_for_integral (integral/bool -> int64), same, bool (as PyTorch's
all/any: a uint8 input gives uint8, everything else bool).
The Scalar parameters an op lists in `promote_scalars:` (clamp's min/max) take
part in promotion as wrapped numbers, as in PyTorch; others (alpha, negative_slope) do not.
Ops with none of these rules (kernels such as argmax, composites, views) compute in
the common type of their tensor inputs; their result dtype is inferred from the
NumPy reference: bool stays bool, an int64 result (indices) stays int64, an int32 one
from floating inputs stays int32 (frexp's exponent), a floating result from integral
inputs is float32, and anything else keeps the input dtype.
"""
import numpy as np

from .dtypes import TensorInfo, is_floating, result_type
from .samples import Arg
from .spec import extra_args, reduce_result, role_of, tensor_args


def operands(op, sample):
    """Promotion operands: tensor inputs (not bool-cast ones) and the op's `promote_scalars:`."""
    out = []
    for p in tensor_args(op):
        role = role_of(op, p)
        if role == "c":
            continue
        value = sample.inputs.get(role)
        for v in (value if isinstance(value, list) else [value]):
            if isinstance(v, Arg):
                out.append(TensorInfo(v.dtype, v.ndim))
            elif v is not None:
                out.append(v)
    for p, value in bound_extras(op, sample).items():
        param = op.sig.param(p)
        if p in op.promote_scalars and isinstance(value, (bool, int, float)):
            out.append(value)
    return out


def bound_extras(op, sample):
    """Non-tensor arguments the call passes: positional `args` then `kwargs`, by name."""
    bound = {}
    positional = [p for p in extra_args(op) if not p.kw_only]
    for p, v in zip(positional, sample.args):
        bound[p.name] = v
    for k, v in sample.kwargs.items():
        if op.sig.param(k) is not None:
            bound[k] = v
    return bound


def self_dtype(sample):
    a = sample.inputs.get("a")
    return a.dtype if isinstance(a, Arg) else None


def compute_dtype(op, sample):
    if reduce_result(op) == "long_for_integral":
        d = self_dtype(sample)
        return d if is_floating(d) else "int64"
    if reduce_result(op) is not None:
        return self_dtype(sample)
    common = result_type(operands(op, sample))
    if op.promote == "float" and not is_floating(common):
        return "float32"
    return common


def result_dtypes(op, sample, compute, ref_outputs):
    """One dtype per output (ref_outputs: the NumPy reference's arrays)."""
    if op.promote in ("common", "float"):
        return [compute] * len(ref_outputs)
    if reduce_result(op) == "bool":
        return ["uint8" if compute == "uint8" else "bool"] * len(ref_outputs)
    if op.promote == "bool":
        return ["bool"] * len(ref_outputs)
    if reduce_result(op) in ("long_for_integral", "same"):
        return [compute] * len(ref_outputs)
    out = []
    for r in ref_outputs:
        kind = np.asarray(r).dtype
        if kind == np.bool_:
            out.append("bool")
        elif kind == np.int64 and compute != "int64":
            out.append("int64")
        elif kind == np.int32 and is_floating(compute):
            out.append("int32")
        elif kind.kind == "f" and not is_floating(compute):
            out.append("float32")
        else:
            out.append(compute)
    return out
