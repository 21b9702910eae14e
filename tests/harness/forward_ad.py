"""A float64 check of ember's forward-mode AD.

For a random direction v (one array per floating input), the tangent forward AD
gives each floating output (J v) must match central finite differences along v,
(f(x + eps v) - f(x - eps v)) / 2 eps, and J v assembled from reverse mode: one
autograd.grad per output element gives that row of the Jacobian. Inputs keep
their sample layouts: a transposed or strided input is a view of a dual leaf, so
its tangent comes through the view ops' own forward formulas. Ops with a derived
in-place form are also run in place (on a clone of self, with and without a
tangent on self); the tangent written into self must be the functional one.
Self-contained: it shares only the sample plumbing with gradcheck.py.
"""
import numpy as np

import ember
from ember.autograd import forward_ad as fwAD

from .dtypes import is_floating
from .run import call, forms
from .samples import Arg
from .tensors import apply_layout, dtype_name, layout_back, make_tensor, storage_array, to_numpy

EPS = 1e-6
RTOL, ATOL = 1e-3, 1e-5


def _as_list(result):
    return list(result) if isinstance(result, (tuple, list)) else [result]


def floating_inputs(sample):
    """(role, index) -> Arg for every floating input tensor (not where's condition)."""
    out = {}
    for role, value in sample.inputs.items():
        items = value if isinstance(value, list) else [value]
        for i, arg in enumerate(items):
            if isinstance(arg, Arg) and role != "c" and is_floating(arg.dtype):
                out[(role, i)] = arg
    return out


def _storage_tangent(arg, v):
    """The leaf's array whose layout view holds `v` (a strided input's filler rows get 0)."""
    if arg.layout == "transposed":
        return np.ascontiguousarray(np.swapaxes(v, -1, -2))
    if arg.layout == "strided":
        base = np.zeros((2 * v.shape[0],) + v.shape[1:])
        base[::2] = v
        return base
    return v


def build_inputs(sample, overrides=None, tangents=None, requires_grad=()):
    """role -> tensor | number | [tensor], and {(role, index): leaf}. As tensors.build_inputs,
    but a leaf given a tangent (inside a dual level) is made dual before its layout view."""
    overrides, tangents = overrides or {}, tangents or {}
    inputs, leaves = {}, {}

    def one(key, arg):
        leaf = make_tensor(storage_array(arg, overrides.get(key)), arg.dtype)
        if key in requires_grad:
            leaf.requires_grad_()
        leaves[key] = leaf
        if key in tangents:
            leaf = fwAD.make_dual(leaf, make_tensor(_storage_tangent(arg, tangents[key]), "float64"))
        return apply_layout(arg, leaf)

    for role, value in sample.inputs.items():
        if isinstance(value, list):
            inputs[role] = [one((role, i), arg) for i, arg in enumerate(value)]
        elif isinstance(value, Arg):
            inputs[role] = one((role, 0), value)
        else:
            inputs[role] = value
    return inputs, leaves


def forward_tangents(op, sample, tangents, form, outputs):
    """The tangents forward AD gives `outputs` (indices of the results) as arrays."""
    with fwAD.dual_level():
        inputs, _ = build_inputs(sample, tangents=tangents)
        results = _as_list(call(op, sample, inputs, form))
        got = {}
        for k in outputs:
            primal, tangent = fwAD.unpack_dual(results[k])
            assert tangent is not None, f"{op.full_name} ({form}): output {k} has no tangent"
            assert tuple(tangent.shape) == tuple(primal.shape), f"{op.full_name}: tangent shape {tangent.shape}"
            assert tangent.dtype == primal.dtype, f"{op.full_name}: tangent dtype {tangent.dtype}"
            got[k] = to_numpy(tangent)
    assert ember._C._live_tangents() == 0, f"{op.full_name}: tangents outlived their dual level"
    return got


def reverse_jvp(op, sample, diff, v, form, outputs):
    """J v per output, from the rows of the Jacobian that reverse mode gives."""
    inputs, leaves = build_inputs(sample, requires_grad=set(diff))
    results = _as_list(call(op, sample, inputs, form))
    keys = list(diff)
    out = {}
    for k in outputs:
        y = results[k]
        n = y.numel()
        jv = np.zeros(n)
        for j in range(n):
            onehot = np.zeros(n)
            onehot[j] = 1.0
            rows = ember.autograd.grad([y], [leaves[key] for key in keys], grad_outputs=[
                make_tensor(onehot.reshape(tuple(y.shape)), "float64")], retain_graph=True, allow_unused=True)
            jv[j] = sum(float(np.sum(layout_back(diff[key], to_numpy(row)) * v[key]))
                        for key, row in zip(keys, rows) if row is not None)
        out[k] = jv.reshape(tuple(y.shape))
    return out


def _compare(op, what, got, expected, k):
    if not np.allclose(got, expected, rtol=RTOL, atol=ATOL):
        raise AssertionError(
            f"{op.full_name}: the tangent of output {k} does not match {what} (max abs diff "
            f"{np.max(np.abs(got - expected)):.3g})\nforward AD:\n{got}\n{what}:\n{expected}")


def jvp_check(op, sample, rng, form=None):
    """Checks the op's JVP (function form by default) against finite differences and reverse mode."""
    diff = floating_inputs(sample)
    assert diff, f"{op.full_name}: no floating input to differentiate"
    form = form or forms(op)[0]
    v = {key: rng.standard_normal(arg.shape) for key, arg in diff.items()}

    def evaluate(overrides):
        with ember.no_grad():
            inputs, _ = build_inputs(sample, overrides)
            return _as_list(call(op, sample, inputs, form))

    first = evaluate({})
    outputs = [k for k, t in enumerate(first) if is_floating(dtype_name(t.dtype)) and t.numel() > 0]
    assert outputs, f"{op.full_name}: no non-empty floating output"
    forward = forward_tangents(op, sample, v, form, outputs)
    values = {key: np.asarray(arg.values, dtype=np.float64) for key, arg in diff.items()}
    plus = evaluate({key: values[key] + EPS * v[key] for key in diff})
    minus = evaluate({key: values[key] - EPS * v[key] for key in diff})
    reverse = reverse_jvp(op, sample, diff, v, form, outputs)
    for k in outputs:
        numeric = (to_numpy(plus[k]) - to_numpy(minus[k])) / (2 * EPS)
        _compare(op, "finite differences", forward[k], numeric, k)
        _compare(op, "reverse mode", forward[k], reverse[k], k)
    if "inplace" in op.derive and isinstance(sample.inputs.get("a"), Arg) \
            and tuple(first[0].shape) == sample.inputs["a"].shape and first[0].dtype == ember.float64:
        self_key = ("a", 0)
        for tangents in (v, {key: t for key, t in v.items() if key != self_key}):
            if not tangents:
                continue
            expected = forward if tangents is v else forward_tangents(op, sample, tangents, form, [0])
            inplace = forward_tangents(op, sample, tangents, "inplace-clone", [0])
            what = "the functional form's" + ("" if self_key in tangents else " (no tangent on self)")
            _compare(op, what, inplace[0], expected[0], 0)


def assert_jvp_matches_finite_differences(fn, primals, tangents, rtol=1e-5, atol=1e-6):
    """fn's forward-mode tangent along `tangents` against central differences (float64 callers)."""
    with fwAD.dual_level():
        out = fn(*[fwAD.make_dual(p, t) for p, t in zip(primals, tangents)])
        got = fwAD.unpack_dual(out).tangent.numpy()
    hi = fn(*[p + EPS * t for p, t in zip(primals, tangents)]).numpy()
    lo = fn(*[p - EPS * t for p, t in zip(primals, tangents)]).numpy()
    np.testing.assert_allclose(got, (hi - lo) / (2 * EPS), rtol=rtol, atol=atol)
