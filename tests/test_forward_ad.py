"""Forward-mode AD: ember.autograd.forward_ad and the tangents every differentiable op computes.

The op harness part checks, for every differentiable op of ops.yaml with gradcheck samples, the
JVP against finite differences and against reverse mode (tests/harness/forward_ad.py); the ops
whose `test:` entries are skipped there get a check of their own below. The rest is the
forward_ad API against PyTorch's behaviour: levels, errors, views and in-place writes, out=,
non-differentiable ops, tangents through backward (forward-over-reverse), and the generator's
derivation of JVPs (codegen/forward.py).
"""
import numpy as np
import pytest

import ember
from ember.autograd import forward_ad as fwAD
from harness.collect import collect, rng_for
from harness.forward_ad import EPS, jvp_check
from harness.spec import differentiable, load_spec
from test_blas import OWN_JVP_CHECKS as BLAS_JVP_CHECKS
from test_codegen_errors import GOOD_OP
from test_attention import ATTENTION_CASES
from test_random import RANDOM_OP_CASES
from test_norm import GRAD_CASES as NORM_GRAD_CASES
from test_losses_classification import GRAD_CASES as LOSS_CLS_CASES
from test_lapack import JVP_CHECKED as LAPACK_JVP_CHECKED
from test_losses_regression import GRAD_CASES as LOSSREG_CASES
from test_padpool import JVP_CHECKED as PADPOOL_JVP_CHECKED
from test_lapack2 import JVP_CHECKED as LAPACK2_JVP_CHECKED
from test_tensor_api_gaps import JVP_CHECKED as TENSOR_API_JVP_CHECKED
from test_lapack_lu import JVP_CHECKED as LU_JVP_CHECKED
from test_frexp import JVP_CHECKED as FREXP_JVP_CHECKED
from test_nn_ctc_loss import JVP_CHECKED as CTC_JVP_CHECKED
from test_torch_namespace_gaps import JVP_CHECKED as NAMESPACE_GAPS_JVP_CHECKED

try:
    import torch
    import torch.autograd.forward_ad as torch_fwAD
except ImportError:
    torch = None

SPEC = load_spec()
GRAD_CASES = collect(SPEC).grad
F64 = ember.float64


@pytest.mark.parametrize("case", GRAD_CASES, ids=[c.id for c in GRAD_CASES])
def test_jvp(case):
    jvp_check(case.op, case.sample, rng_for("jvp|" + case.id))


# ---------------------------------------------------------------- ops the harness cannot sample

def t64(values):
    return ember.tensor(values, dtype=F64)


def jvp(fn, primals, tangents):
    """(outputs, tangents) of fn(*duals) as lists; a missing tangent is None."""
    with fwAD.dual_level():
        out = fn(*[fwAD.make_dual(p, t) for p, t in zip(primals, tangents)])
        outs = list(out) if isinstance(out, (tuple, list)) else [out]
        pairs = [fwAD.unpack_dual(o) for o in outs]
        return [p.clone() for p, _ in pairs], [None if t is None else t.clone() for _, t in pairs]


def finite_difference(fn, primals, tangents):
    def at(sign):
        with ember.no_grad():
            out = fn(*[p + sign * EPS * t for p, t in zip(primals, tangents)])
        return [o.numpy() for o in (out if isinstance(out, (tuple, list)) else [out])]
    return [(a - b) / (2 * EPS) for a, b in zip(at(1), at(-1))]


def check_against_finite_differences(fn, primals, tangents):
    _, got = jvp(fn, primals, tangents)
    for g, n in zip(got, finite_difference(fn, primals, tangents)):
        np.testing.assert_allclose(g.numpy(), n, rtol=1e-6, atol=1e-7)


def rand(*shape):
    return ember.randn(*shape, dtype=F64)


# Checked here rather than by the harness: their test entries are skipped there (indexing,
# copies, conversions, fills, prelu's per-channel weight) or their gradcheck is off (rounding divisions, remainder).
OWN_CHECKS = {"index", "index_put_", "copy_", "fill_", "zero_", "to.dtype", "to.device", "to.other", "pow.Scalar",
              "_philox_fill_", "_div_trunc", "_div_floor", "remainder", "prelu",
              "gather", "scatter_add", "index_select", "masked_fill.Scalar",
              "masked_fill.Tensor",  # index ops: JVPs in tests/test_index_ops.py
              "_diagonal_backward", "diff", "_cumprod_backward", "_cumprod_jvp",
              "hstack", "vstack", "dstack"}  # scans (issue 11): JVPs checked in tests/test_scans.py
# Issue 11's groups (JVPs checked in their own test files):
OWN_CHECKS |= {*RANDOM_OP_CASES, *ATTENTION_CASES}  # tests/test_random.py, test_attention.py
OWN_CHECKS |= {"_conv_forward", "_conv_backward_input", "_conv_backward_weight", "conv1d", "conv1d.padding",
               "conv2d", "conv2d.padding", "conv_transpose1d", "conv_transpose2d.input", "convolution", "im2col", "col2im",
               "_im2col_backward"}  # conv (issue 11): JVPs checked in tests/test_conv.py
OWN_CHECKS |= BLAS_JVP_CHECKS  # blas (issue 11): JVPs checked in tests/test_blas.py
OWN_CHECKS |= set(NORM_GRAD_CASES)  # norm (issue 11): JVPs checked in tests/test_norm.py
OWN_CHECKS |= {"max_pool2d_with_indices", "max_pool1d_with_indices", "adaptive_max_pool2d", "adaptive_max_pool1d",
               "_max_pool_gather", "_max_pool_backward", "_avg_pool2d_backward", "_upsample_backward"}  # pool: tests/test_pool.py
OWN_CHECKS |= {"lerp.Tensor", "addcmul", "addcdiv", "fmod", "isclose", "clamp.Tensor", "clip.Tensor", "count_nonzero",
               "count_nonzero.dim_IntList"}  # math (issue 11): JVPs checked in tests/test_math.py
OWN_CHECKS |= {"scatter.src", "scatter.value", "scatter_reduce.two", "_scatter_reduce_backward",
               "_scatter_reduce_jvp", "index_add", "index_copy", "index_fill.int_Tensor",
               "index_fill.int_Scalar", "masked_scatter", "masked_select", "take", "take_along_dim",
               "put", "where.cond", "argwhere", "cummax", "cummin", "_logcumsumexp_backward",
               "_logcumsumexp_jvp", "repeat_interleave.self_Tensor", "repeat_interleave.Tensor",
               "tensor_split.tensor_indices_or_sections", "broadcast_tensors", "meshgrid",
               "meshgrid.indexing", "atleast_1d.Sequence", "atleast_2d.Sequence",
               "atleast_3d.Sequence"}  # index2 (issue 11): tests/test_index2*.py
OWN_CHECKS |= LAPACK_JVP_CHECKED  # lapack (issue 11): JVPs checked in tests/test_lapack.py
OWN_CHECKS |= LAPACK2_JVP_CHECKED  # lapack2 (issue 11): JVPs checked in tests/test_lapack2.py
OWN_CHECKS |= {"argsort", "bucketize"}  # sort (issue 11): JVPs checked in tests/test_sort.py
OWN_CHECKS |= set(LOSS_CLS_CASES)  # losses-classification (issue 11): tests/test_losses_classification.py
OWN_CHECKS |= set(LOSSREG_CASES)  # losses-regression (issue 11): tests/test_losses_regression.py
OWN_CHECKS |= PADPOOL_JVP_CHECKED  # padpool (issue 11): JVPs checked in tests/test_padpool.py
OWN_CHECKS |= {"_rnn_fused", "_rnn_backward", "_rnn_reference",
               "_rnn_fused_jvp"}  # rnn (issue 12): JVPs checked in tests/test_rnn_fused.py (the tangent's own, reverse)


OWN_CHECKS |= TENSOR_API_JVP_CHECKED  # unfold/as_strided helpers, *_as: tests/test_tensor_api_gaps.py
OWN_CHECKS |= LU_JVP_CHECKED | FREXP_JVP_CHECKED | CTC_JVP_CHECKED  # op-gaps (issue 12): their own test files
OWN_CHECKS |= NAMESPACE_GAPS_JVP_CHECKED  # float_power, concatenate, ...: tests/test_torch_namespace_gaps.py


def test_every_differentiable_op_has_a_jvp_check():
    covered = {c.op.full_name for c in GRAD_CASES}
    missing = sorted(op.full_name for op in SPEC.ops if differentiable(op) and op.full_name not in covered | OWN_CHECKS)
    assert not missing, f"differentiable ops without a JVP check: {missing}"
    assert all(SPEC.by_full_name(name) is not None for name in OWN_CHECKS)


def test_no_differentiable_op_lacks_a_forward_derivative():
    # no_forward: is for an op that cannot have one; none does today.
    assert [op.full_name for op in SPEC.ops if op.derivative and op.derivative.no_forward] == []


def test_prelu_jvp():
    # Inputs away from prelu's kink at 0, where the finite difference would straddle it.
    x = rand(2, 3, 4)
    x = x + x.sign() * 0.1
    for w in (rand(3), rand(1)):
        check_against_finite_differences(ember.prelu, [x, w], [rand(2, 3, 4), rand(*w.shape)])


def test_index_and_index_put_jvp():
    x, v = rand(4, 3), rand(4, 3)
    idx = ember.tensor([2, 0, 2])
    check_against_finite_differences(lambda a: a[idx], [x], [v])
    check_against_finite_differences(lambda a: a[idx, ember.tensor([1, 1, 0])], [x], [v])
    vals, w = rand(3, 3), rand(3, 3)
    for accumulate in (False, True):
        check_against_finite_differences(
            lambda a, b: a.clone().index_put_([ember.tensor([3, 1, 0])], b, accumulate), [x, vals], [v, w])
    # only the values carry a tangent: self's becomes zero outside the written rows
    with fwAD.dual_level():
        y = x.clone()
        y[ember.tensor([1])] = fwAD.make_dual(vals[:1], w[:1])
        expected = np.zeros((4, 3))
        expected[1] = w[0].numpy()
        np.testing.assert_array_equal(fwAD.unpack_dual(y).tangent.numpy(), expected)


def test_copy_fill_zero_and_random_fill_jvp():
    x, v = rand(2, 3), rand(2, 3)
    check_against_finite_differences(lambda a: ember.zeros(2, 3, dtype=F64).copy_(a), [x], [v])
    check_against_finite_differences(lambda a: ember.zeros(2, 3, dtype=F64).copy_(a[0]), [x], [v])  # broadcast
    with fwAD.dual_level():
        d = fwAD.make_dual(x.clone(), v)
        assert fwAD.unpack_dual(d.clone().fill_(2.0)).tangent.tolist() == [[0.0] * 3] * 2
        assert fwAD.unpack_dual(d.clone().zero_()).tangent.tolist() == [[0.0] * 3] * 2
        r = d.clone()
        ember._philox_fill_(r, "uniform", 7, 0)
        assert fwAD.unpack_dual(r).tangent.tolist() == [[0.0] * 3] * 2
        # a write from a tensor without a tangent zeroes the target's
        e = d.clone().copy_(ember.ones(2, 3, dtype=F64))
        assert fwAD.unpack_dual(e).tangent.tolist() == [[0.0] * 3] * 2


def test_conversions_jvp():
    x, v = rand(3), rand(3)
    _, (t,) = jvp(lambda a: a.to(ember.float32), [x], [v])
    assert t.dtype == ember.float32 and np.allclose(t.numpy(), v.numpy(), atol=1e-6)
    _, (t,) = jvp(lambda a: a.to("cpu", dtype=ember.float32, copy=True), [x], [v])
    assert t.dtype == ember.float32
    _, (t,) = jvp(lambda a: a.to(ember.zeros(1, dtype=ember.float16)), [x], [v])
    assert t.dtype == ember.float16
    _, (t,) = jvp(lambda a: a.to(ember.int64), [x], [v])
    assert t is None   # integral results carry no tangent, as in PyTorch
    check_against_finite_differences(lambda a: a.to(F64, copy=True), [x], [v])


def test_pow_scalar_base_remainder_and_rounding_divisions_jvp():
    x, v = rand(4).abs() + 0.5, rand(4)
    y, w = rand(4).abs() + 0.5, rand(4)
    check_against_finite_differences(lambda a: 2 ** a, [x], [v])
    check_against_finite_differences(lambda a, b: ember.remainder(a * 3.7, b), [x, y], [v, w])
    for mode in ("floor", "trunc"):
        _, (t,) = jvp(lambda a, b: ember.div(a, b, rounding_mode=mode), [x, y], [v, w])
        assert t.tolist() == [0.0] * 4   # as PyTorch's: the rounded quotient is piecewise constant
    _, (t,) = jvp(lambda a: ember._div_trunc(a, 2.0), [x], [v])
    assert t.tolist() == [0.0] * 4


@pytest.mark.skipif(torch is None, reason="needs PyTorch")
@pytest.mark.parametrize("name", ["index_put", "remainder", "div_floor", "copy_broadcast"])
def test_jvp_matches_pytorch(name):
    rng = np.random.default_rng(3)
    x, v, b, w = (rng.standard_normal((3, 4)) for _ in range(4))
    fns = {
        "index_put": lambda m, a, c: a.clone().index_put_([m.tensor([2, 0])], c[:2], True),
        "remainder": lambda m, a, c: m.remainder(a, c.abs() + 0.5),
        "div_floor": lambda m, a, c: m.div(a, c, rounding_mode="floor"),
        "copy_broadcast": lambda m, a, c: a.clone().copy_(c[1]),
    }
    _, (mine,) = jvp(lambda a, c: fns[name](ember, a, c), [t64(x), t64(b)], [t64(v), t64(w)])
    with torch_fwAD.dual_level():
        duals = [torch_fwAD.make_dual(torch.tensor(p), torch.tensor(t)) for p, t in ((x, v), (b, w))]
        theirs = torch_fwAD.unpack_dual(fns[name](torch, *duals)).tangent
    np.testing.assert_allclose(mine.numpy(), theirs.numpy(), rtol=1e-12, atol=1e-12)


# ---------------------------------------------------------------- the forward_ad API

def test_dual_level_make_and_unpack():
    x, v = t64([1.0, 2.0, 3.0]), t64([1.0, 0.5, -1.0])
    with fwAD.dual_level() as level:
        assert level == 0 and fwAD._current_level == 0
        d = fwAD.make_dual(x, v)
        assert d is not x and d.data_ptr() == x.data_ptr()       # an alias of the primal
        primal, tangent = fwAD.unpack_dual(d)
        assert tangent.data_ptr() == v.data_ptr()                # the tangent as given
        assert primal.data_ptr() == x.data_ptr() and fwAD.unpack_dual(primal).tangent is None
        assert fwAD.unpack_dual(x).tangent is None               # the primal itself stays plain
        result = fwAD.unpack_dual(d * d)
        assert isinstance(result, fwAD.UnpackedDualTensor) and result.tangent.tolist() == [2.0, 2.0, -6.0]
        assert ember._C._live_tangents() > 0
    assert fwAD._current_level == -1 and ember._C._live_tangents() == 0
    assert fwAD.unpack_dual(d).tangent is None                   # exiting cleared it
    assert fwAD.unpack_dual(d, level=0).tangent is None


def test_enter_and_exit_by_hand_and_as_decorator():
    level = fwAD.enter_dual_level()
    try:
        d = fwAD.make_dual(t64([1.0]), t64([2.0]), level=level)
        assert fwAD.unpack_dual(d.exp(), level=level).tangent.item() == pytest.approx(2 * np.e)
    finally:
        fwAD.exit_dual_level(level=level)

    @fwAD.dual_level()
    def tangent_of_square(x, v):
        return fwAD.unpack_dual(fwAD.make_dual(x, v) ** 2).tangent

    assert tangent_of_square(t64([3.0]), t64([1.0])).tolist() == [6.0]
    assert fwAD._current_level == -1


def api_errors(fw, lib, dt):
    """(label, callable) pairs hitting each error of the API, for ember and PyTorch alike."""
    x, v = lib.ones(3, dtype=dt), lib.ones(3, dtype=dt)

    def in_level(fn):
        def run():
            with fw.dual_level():
                return fn()
        return run

    return [
        ("no level", lambda: fw.make_dual(x, v)),
        ("nested", in_level(lambda: fw.enter_dual_level())),
        ("size", in_level(lambda: fw.make_dual(x, lib.ones(4, dtype=dt)))),
        ("integral primal", in_level(lambda: fw.make_dual(lib.ones(3, dtype=lib.int64), v))),
        ("integral tangent", in_level(lambda: fw.make_dual(x, lib.ones(3, dtype=lib.int64)))),
        ("already dual", in_level(lambda: fw.make_dual(fw.make_dual(x, v), v))),
        ("dual tangent", in_level(lambda: fw.make_dual(x, fw.make_dual(v, v)))),
        ("wrong level", in_level(lambda: fw.make_dual(x, v, level=1))),
        ("unpack wrong level", in_level(lambda: fw.unpack_dual(fw.make_dual(x, v), level=1))),
        ("exit wrong level", in_level(lambda: fw.exit_dual_level(level=5))),
        ("exit without level", lambda: fw.exit_dual_level()),
        ("out=", in_level(lambda: lib.mul(fw.make_dual(x, v), 2, out=lib.empty(3, dtype=dt)))),
        ("out= into a dual", in_level(lambda: lib.mul(x, 2, out=fw.make_dual(lib.ones(3, dtype=dt), v)))),
        ("sum out=", in_level(lambda: lib.sum(fw.make_dual(x, v), 0, out=lib.empty((), dtype=dt)))),
        ("no derivative", in_level(lambda: lib.floor_divide(fw.make_dual(x, v), 2))),
        ("no derivative in place", in_level(lambda: fw.make_dual(x, v).clone().floor_divide_(2))),
    ]


def test_api_errors():
    expected = {
        "no level": (RuntimeError, "Trying to create a dual Tensor for forward AD but no level exists, make sure "
                                   "to enter_dual_level() first."),
        "nested": (RuntimeError, "Nested forward mode AD is not supported at the moment"),
        "size": (RuntimeError, "Trying to set a forward gradient that has a different size than that of the "
                               "original Tensor, this is not supported. Tensor is of size [3] while the given "
                               "forward gradient is of size [4]."),
        "integral primal": (ValueError, "Expected primal to be floating point or complex, but got: ember.int64"),
        "integral tangent": (ValueError, "Expected tangent to be floating point or complex, but got: ember.int64"),
        "already dual": (RuntimeError, "Making a dual Tensor based on a Tensor that already has a forward gradient "
                                       "at the same level 0 is not supported."),
        "dual tangent": (RuntimeError, "Setting a forward grad that itself has a forward gradient at the same level0 "
                                       "is not supported."),
        "wrong level": (RuntimeError, "Invalid level given to _make_dual"),
        "unpack wrong level": (RuntimeError, "Invalid level given to _fw_primal"),
        "exit wrong level": (RuntimeError, "Trying to exit a forward AD level that was not the last one that was "
                                           "created. This is not supported."),
        "exit without level": (RuntimeError, "Dual level must be a positive number."),
        "out=": (NotImplementedError, "Trying to use forward AD with mul_out that does not support it because it "
                                      "is an out= function"),
        "out= into a dual": (NotImplementedError, "Trying to use forward AD with mul_out that does not support it "
                                                  "because it is an out= function"),
        "sum out=": (NotImplementedError, "Trying to use forward AD with sum_out that does not support it because "
                                          "it is an out= function"),
        "no derivative": (NotImplementedError, "Trying to use forward AD with aten::floor_divide that does not "
                                               "support it."),
        "no derivative in place": (NotImplementedError, "Trying to use forward AD with aten::floor_divide_ that "
                                                        "does not support it."),
    }
    for label, fn in api_errors(fwAD, ember, F64):
        kind, message = expected[label]
        with pytest.raises(kind) as e:
            fn()
        assert str(e.value) == message, label
        assert fwAD._current_level == -1 and ember._C._live_tangents() == 0, label


@pytest.mark.skipif(torch is None, reason="needs PyTorch")
def test_api_errors_match_pytorch():
    mine = {label: fn for label, fn in api_errors(fwAD, ember, F64)}
    for label, fn in api_errors(torch_fwAD, torch, torch.float64):
        with pytest.raises(Exception) as theirs:
            fn()
        with pytest.raises(Exception) as ours:
            mine[label]()
        assert type(ours.value) is type(theirs.value), label
        assert str(ours.value) == str(theirs.value).replace("torch.", "ember."), label


def test_tangent_layout_and_dtype_follow_pytorch():
    with fwAD.dual_level():
        x = rand(2, 3)
        t = ember.ones(3, 2, dtype=F64).t()                  # another layout: copied into x's
        got = fwAD.unpack_dual(fwAD.make_dual(x, t)).tangent
        assert got is not t and got.stride() == x.stride() and got.tolist() == t.tolist()
        half = ember.ones(2, 3, dtype=ember.float32)          # another dtype: kept as given ...
        d = fwAD.make_dual(x, half)
        assert fwAD.unpack_dual(d).tangent.data_ptr() == half.data_ptr()
        assert fwAD.unpack_dual(d * 2).tangent.dtype == F64   # ... and results' tangents take theirs


def test_forward_ad_ignores_grad_mode_and_keeps_reverse_mode():
    x = ember.tensor([1.0, 2.0], dtype=F64, requires_grad=True)
    with fwAD.dual_level():
        d = fwAD.make_dual(x, t64([1.0, 1.0]))
        assert d.requires_grad and d.grad_fn.name() == "ViewBackward0"
        with ember.no_grad():
            assert fwAD.unpack_dual(d * 3).tangent.tolist() == [3.0, 3.0]
        y = d * d
        tangent = fwAD.unpack_dual(y).tangent                 # 2 x v, differentiable in x
        tangent.sum().backward()
        assert x.grad.tolist() == [2.0, 2.0]


def test_non_floating_results_have_no_tangent():
    with fwAD.dual_level():
        d = fwAD.make_dual(t64([1.0, -2.0, 3.0]), t64([1.0, 1.0, 1.0]))
        assert fwAD.unpack_dual(d > 0).tangent is None
        assert fwAD.unpack_dual(d.argmax()).tangent is None
        values, indices = d.max(0)
        assert fwAD.unpack_dual(values).tangent.item() == 1.0 and fwAD.unpack_dual(indices).tangent is None
        assert fwAD.unpack_dual(ember.zeros(3, dtype=ember.int64).copy_(d)).tangent is None


def test_in_place_updates_the_tangent_in_place():
    x, v = t64([1.0, 2.0]), t64([1.0, 1.0])
    with fwAD.dual_level():
        d = fwAD.make_dual(x.clone(), v)
        d.mul_(3)
        assert v.tolist() == [3.0, 3.0]                      # the tangent object itself, as PyTorch
        z = ember.zeros(2, dtype=F64)
        z.add_(fwAD.make_dual(x, t64([5.0, 6.0])))          # a tangent appears on z
        assert fwAD.unpack_dual(z).tangent.tolist() == [5.0, 6.0]
        w = ember.ones(2, dtype=F64)
        w.mul_(fwAD.make_dual(x, t64([1.0, 1.0])))
        assert fwAD.unpack_dual(w).tangent.tolist() == [1.0, 1.0]
        y = x.clone()
        y.exp_()
        assert fwAD.unpack_dual(y).tangent is None           # nothing dual involved


def test_in_place_on_views_and_bases():
    with fwAD.dual_level():
        d = fwAD.make_dual(t64([1.0, 2.0, 3.0]), t64([1.0, 1.0, 1.0]))
        base = ember.zeros(2, 3, dtype=F64)
        base[0].copy_(d)                                      # writes a view: the base gets a tangent
        assert fwAD.unpack_dual(base).tangent.tolist() == [[1.0, 1.0, 1.0], [0.0, 0.0, 0.0]]
        other = ember.zeros(2, 3, dtype=F64)
        row = other[1]                                        # a view taken before the base is dual
        other.add_(fwAD.make_dual(ember.zeros(2, 3, dtype=F64), ember.arange(6.0, dtype=F64).reshape(2, 3)))
        assert fwAD.unpack_dual(row).tangent.tolist() == [3.0, 4.0, 5.0]
        col = other[:, 2]
        col.mul_(10)                                          # through a view into the base's tangent
        assert fwAD.unpack_dual(other).tangent.tolist() == [[0.0, 1.0, 20.0], [3.0, 4.0, 50.0]]
        view = fwAD.unpack_dual(d).tangent                    # the tangent of a view is that view of it
        assert fwAD.unpack_dual(d[1:]).tangent.data_ptr() == view[1:].data_ptr()


@pytest.mark.skipif(torch is None, reason="needs PyTorch")
def test_views_and_in_place_match_pytorch():
    def program(fw, lib):
        with fw.dual_level():
            base = lib.zeros(3, 4, dtype=lib.float64)
            early = base[1:, ::2]
            src = fw.make_dual(lib.arange(4.0, dtype=lib.float64), lib.arange(4.0, dtype=lib.float64) + 1)
            base[0].copy_(src)
            base.t()[2].mul_(src[:3] * 2)
            early.add_(src[:2])
            s = base.sum(0) * base[2]
            return [fw.unpack_dual(t).tangent.tolist() for t in (base, early, s)]
    assert program(fwAD, ember) == program(torch_fwAD, torch)


def test_forward_over_reverse_keeps_saved_outputs_tangents():
    # d/dx of (f(x) * w).sum() is f'(x) * w; its tangent is f''(x) * w * v (a Hessian-vector
    # product). ExpBackward0, TanhBackward0 and SqrtBackward0 read their saved outputs, which
    # must carry the outputs' tangents.
    x, v, w = t64([0.5, 1.5]), t64([1.0, 2.0]), t64([3.0, 4.0])
    for fn, second in [(lambda a: (a.exp() * w).sum(), lambda a: np.exp(a)),
                       (lambda a: (a.tanh() * w).sum(), lambda a: -2 * np.tanh(a) * (1 - np.tanh(a) ** 2)),
                       (lambda a: (a.sqrt() * w).sum(), lambda a: -0.25 * a ** -1.5),
                       (lambda a: (a * a * w).sum(), lambda a: 2 + 0 * a)]:
        with fwAD.dual_level():
            leaf = fwAD.make_dual(x, v).view(2)
            leaf.requires_grad_()
            (g,) = ember.autograd.grad(fn(leaf), leaf)
            hv = fwAD.unpack_dual(g).tangent
            np.testing.assert_allclose(hv.numpy(), second(x.numpy()) * w.numpy() * v.numpy(), rtol=1e-12)


def test_composites_with_their_own_nodes_pass_tangents():
    x, v = rand(3, 4), rand(3, 4)
    for fn in (lambda a: a.mean(1), lambda a: a.var(0), lambda a: a.std(), lambda a: a.t().contiguous(),
               lambda a: ember.cat([a, a * 2], 1), lambda a: ember.stack([a, a]), lambda a: a.clone(),
               lambda a: a.to(F64, copy=True), lambda a: a @ a.t(), lambda a: a.reshape(-1)[::3]):
        check_against_finite_differences(fn, [x], [v])


# ---------------------------------------------------------------- the generator (codegen/forward.py)

def spec_error(tmp_path, ops_body, derivs):
    """The SpecError's message for a spec, or the loaded model when it has none."""
    from codegen.errors import SpecError
    from test_codegen_errors import load  # also puts the repository on sys.path
    try:
        return load(tmp_path, ops_body, derivs)
    except SpecError as e:
        return str(e)


POINTWISE = GOOD_OP + """\
- func: add(Tensor self, Tensor other) -> Tensor
  kind: pointwise
  promote: common
  dtypes: all
  scalar: self + other
  doc: Adds.
- func: exp(Tensor self) -> Tensor
  kind: pointwise
  promote: float
  dtypes: all
  scalar: exp(self)
  doc: Exponential.
- func: sum(Tensor self) -> Tensor
  kind: kernel
  kernels: {cpu: sum_cpu}
  dtypes: all
  doc: Sums.
"""


@pytest.mark.parametrize("formula, why", [
    ("grad * grad", "the formula for 'self' is not linear in grad (mul() is not linear in self and other together)"),
    ("grad + 1", "the formula for 'self' is not linear in grad (add() is not linear in self unless other is zero)"),
    ("grad.exp()", "the formula for 'self' is not linear in grad (exp() is not linear in self)"),
    ("2 * other", "the formula for 'self' is not linear in grad (it does not depend on grad)"),
    ("grad.sum() * other", "the formula for 'self' does not act on grad element by element"),
])
def test_generator_refuses_to_derive_from_nonlinear_formulas(tmp_path, formula, why):
    msg = spec_error(tmp_path, POINTWISE, f"- op: mul\n  self: {formula}\n  other: grad * self\n")
    assert msg == f"derivatives.yaml:1: mul: no forward derivative: {why}; declare `forward:` (the output's " \
                  "tangent) or `no_forward:` (why not)"


def test_generator_checks_declared_forward_formulas(tmp_path):
    ok = "- op: sum\n  self: grad * ones_like(self)\n"
    assert spec_error(tmp_path, POINTWISE, ok).startswith("derivatives.yaml:1: sum: no forward derivative: sum is "
                                                          "kernel: only pointwise ops derive it")
    assert not isinstance(spec_error(tmp_path, POINTWISE, ok + "  forward: self_t.sum()\n"), str)
    assert spec_error(tmp_path, POINTWISE, ok + "  forward: (self_t * self_t).sum()\n") == (
        "derivatives.yaml:3: sum.forward: not linear in the tangents (mul() is not linear in self and other "
        "together): (self_t * self_t).sum()")
    assert spec_error(tmp_path, POINTWISE, ok + "  forward: self_t.sum() + 1\n").startswith(
        "derivatives.yaml:3: sum.forward: not linear in the tangents")
    assert spec_error(tmp_path, POINTWISE, ok + "  forward: self_t.sum()\n  no_forward: no\n") == \
        "derivatives.yaml:4: sum: give `forward:` or `no_forward:`, not both"
    assert spec_error(tmp_path, POINTWISE, ok + "  no_forward:\n") == \
        "derivatives.yaml:3: sum: no_forward is the reason (non-empty)"
    model = spec_error(tmp_path, POINTWISE, ok + "  no_forward: a reason\n")
    assert model.by_full_name("sum").derivative.no_forward == "a reason"


def test_generator_derives_one_guarded_term_per_input(tmp_path):
    from codegen.forward import forward_plan
    model = spec_error(tmp_path, POINTWISE, "- op: mul\n  self: grad * other\n  other: grad * self\n")
    plan = forward_plan(model, model.by_full_name("mul"))
    assert plan["derived"] and plan["tangents"] == ["self", "other"]
    assert [t.guard for t in plan["terms"]] == [["self"], ["other"]]
    assert "forward_ad::expand_like(self_t, result)" in plan["terms"][0].cpp
