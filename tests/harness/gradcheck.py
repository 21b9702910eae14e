"""A float64 gradcheck of ember's autograd against central finite differences.

For random upstream gradients v (one per floating output), the vector-Jacobian
product that backward() computes must match d/dx sum_i <out_i(x), v_i>, taken
by central differences with eps = 1e-6 on every element of every floating input.
Integral and bool inputs (where's condition) are not differentiated. Inputs keep
their sample layout: a transposed or strided input is a view of the leaf that
requires grad, so backward through non-contiguous inputs is covered too.
"""
import numpy as np

import ember

from .dtypes import is_floating
from .run import call, forms
from .tensors import build_inputs, dtype_name, layout_back, make_tensor, to_numpy

EPS = 1e-6
RTOL, ATOL = 1e-3, 1e-5


def _as_list(result):
    return list(result) if isinstance(result, (tuple, list)) else [result]


def differentiable_inputs(sample):
    """(role, index) -> Arg for every floating input tensor."""
    out = {}
    for role, value in sample.inputs.items():
        items = value if isinstance(value, list) else [value]
        for i, arg in enumerate(items):
            if hasattr(arg, "dtype") and role != "c" and is_floating(arg.dtype):
                out[(role, i)] = arg
    return out


def gradcheck(op, sample, rng, form=None):
    """`form`: how to call the op (run.call); by default its first functional form."""
    diff = differentiable_inputs(sample)
    assert diff, f"{op.full_name}: no floating input to differentiate"

    def outputs(overrides):
        with ember.no_grad():
            inputs, _ = build_inputs(sample, overrides)
            return _as_list(call(op, sample, inputs, form))

    form = form or forms(op)[0]
    first = outputs({})
    floating = [k for k, t in enumerate(first) if is_floating(dtype_name(t.dtype)) and tuple(t.shape).count(0) == 0]
    assert floating, f"{op.full_name}: no non-empty floating output"
    vs = {k: rng.standard_normal(tuple(first[k].shape)) for k in floating}

    # Analytic: one backward per output, each on a fresh graph, summed.
    analytic = {key: np.zeros(arg.values.shape) for key, arg in diff.items()}
    for k in floating:
        inputs, leaves = build_inputs(sample, requires_grad=set(diff))
        out = _as_list(call(op, sample, inputs, form))[k]
        assert out.requires_grad, f"{op.full_name}: output {k} does not require grad"
        out.backward(make_tensor(vs[k], "float64"))
        for key, arg in diff.items():
            grad = leaves[key].grad
            if grad is not None:
                assert grad.device == leaves[key].device, f"{op.full_name}: gradient on {grad.device}"
                analytic[key] += layout_back(arg, to_numpy(grad))

    def objective(overrides):
        outs = outputs(overrides)
        return sum(float(np.sum(to_numpy(outs[k]) * vs[k])) for k in floating)

    for key, arg in diff.items():
        base = np.asarray(arg.values, dtype=np.float64)
        numeric = np.zeros(base.shape)
        for j in range(base.size):
            plus, minus = base.copy(), base.copy()
            plus.flat[j] += EPS
            minus.flat[j] -= EPS
            numeric.flat[j] = (objective({key: plus}) - objective({key: minus})) / (2 * EPS)
        if not np.allclose(analytic[key], numeric, rtol=RTOL, atol=ATOL):
            role, i = key
            name = role if role != "tensors" else f"tensors[{i}]"
            raise AssertionError(
                f"{op.full_name}: gradient of input {name!r} (shape {base.shape}) does not match finite "
                f"differences (max abs diff {np.max(np.abs(analytic[key] - numeric)):.3g})\n"
                f"backward:\n{analytic[key]}\nnumeric:\n{numeric}")
