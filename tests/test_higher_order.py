"""Higher-order gradients: every differentiable op in ops.yaml has a float64 gradgradcheck (the
op harness runs those with a `test:` entry, tests/test_ops.py; this file the ops the harness
skips, and points the harness's samples avoid), Hessian-vector products against an explicit
Hessian, a WGAN-GP gradient penalty (double backward) and a third derivative."""
import numpy as np
import pytest

import ember
from ember.autograd import grad, gradcheck, gradgradcheck
from harness.collect import collect
from harness.lint import lint
from harness.spec import differentiable, load_spec
from test_attention import ATTENTION_CASES
from test_random import RANDOM_OP_CASES
from test_blas import GRADGRAD_CASES as BLAS_GRADGRAD_CASES
from test_norm import GRAD_CASES as NORM_GRAD_CASES
from test_lapack import HIGHER_ORDER_CASES as LAPACK_CASES
from test_lapack2 import HIGHER_ORDER_CASES as LAPACK2_CASES
from test_sort import INDEX_RESULT_CASES as SORT_INDEX_CASES
from test_losses_classification import GRAD_CASES as LOSS_CLS_CASES
from test_losses_regression import GRAD_CASES as LOSSREG_CASES
from test_padpool import HIGHER_ORDER_CASES as PADPOOL_CASES
from test_rnn_fused import HIGHER_ORDER_CASES as RNN_CASES
from test_tensor_api_gaps import HIGHER_ORDER_CASES as TENSOR_API_CASES
from test_lapack_lu import HIGHER_ORDER_CASES as LU_CASES
from test_frexp import HIGHER_ORDER_CASES as FREXP_CASES
from test_torch_namespace_gaps import HIGHER_ORDER_CASES as NAMESPACE_GAPS_CASES

try:
    import torch
except ImportError:                      # the comparisons with PyTorch skip without it
    torch = None

SPEC = load_spec()
F64 = ember.float64


def t64(values, requires_grad=True):
    return ember.tensor(values, dtype=F64, requires_grad=requires_grad)


def _philox(a):
    noise = ember._C._philox_fill_(a * 1, "uniform", 7, 0)   # a fixed draw: its gradient is zero
    return a * noise


def _index_put(a, v, accumulate):
    return (a * 1).index_put_((ember.tensor([2, 0, 2]) if accumulate else ember.tensor([2, 0]),), v,
                              accumulate=accumulate) * a


def _to_dtype_round_trip(a):
    return a.to(ember.float64) ** 2


def _r64(*shape):
    """Fixed, distinct float64 values of `shape` (the convolutions are bilinear: any values do)."""
    n = int(np.prod(shape))
    return t64((np.sin(np.arange(1, n + 1) * 1.7) * 1.5).reshape(shape))


_CONV_CASES = {  # conv (issue 11)
    "_conv_forward": [(lambda x, w, b: ember._conv_forward(x, w, b, [1, 2], [1, 0], [2, 1], 1),
                       lambda: (_r64(1, 2, 4, 4), _r64(2, 2, 2, 2), _r64(2)), {})],
    "_conv_backward_input": [(lambda g, w: ember._conv_backward_input(g, w, [1, 4, 4, 4], [2, 2], [1, 1], [1, 1], 2),
                              lambda: (_r64(1, 2, 3, 3), _r64(2, 2, 2, 2)), {})],
    "_conv_backward_weight": [(lambda g, x: ember._conv_backward_weight(g, x, [2, 2, 2, 2], [2, 2], [1, 1], [1, 1], 2),
                               lambda: (_r64(1, 2, 3, 3), _r64(1, 4, 4, 4)), {})],
    "conv1d": [(lambda x, w, b: ember.conv1d(x, w, b, 2, 1), lambda: (_r64(1, 2, 5), _r64(2, 2, 3), _r64(2)), {})],
    "conv1d.padding": [(lambda x, w: ember.conv1d(x, w, padding="same"), lambda: (_r64(1, 2, 4), _r64(2, 2, 2)), {})],
    "conv2d": [(lambda x, w, b: ember.conv2d(x, w, b, 1, 1, 1, 2), lambda: (_r64(1, 2, 3, 3), _r64(2, 1, 2, 2), _r64(2)), {})],
    "conv2d.padding": [(lambda x, w: ember.conv2d(x, w, padding="same"), lambda: (_r64(1, 1, 3, 3), _r64(2, 1, 2, 2)), {})],
    "conv_transpose1d": [(lambda x, w, b: ember.conv_transpose1d(x, w, b, 2, 1, 1),
                          lambda: (_r64(1, 2, 3), _r64(2, 2, 3), _r64(2)), {})],
    "conv_transpose2d.input": [(lambda x, w: ember.conv_transpose2d(x, w, None, 2, 0, 1),
                                lambda: (_r64(1, 2, 2, 2), _r64(2, 1, 2, 2)), {})],
    "convolution": [(lambda x, w: ember.convolution(x, w, None, [1], [0], [1], True, [0], 1),
                     lambda: (_r64(1, 2, 2, 2), _r64(2, 1, 2, 2)), {})],
    "im2col": [(lambda x: ember._C._nn.im2col(x, [2, 2], [1, 1], [1, 0], [2, 1]), lambda: (_r64(1, 2, 3, 3),), {})],
    "col2im": [(lambda c: ember._C._nn.col2im(c, [3, 3], [2, 2], [1, 1], [0, 0], [1, 1]), lambda: (_r64(1, 4, 4),), {})],
    "_im2col_backward": [(lambda g: ember._im2col_backward(g, [1, 1, 3, 3], [2, 2], [1, 1], [0, 0], [1, 1]),
                          lambda: (_r64(1, 4, 4),), {})],
}
def _distinct64(*shape):
    """float64 values in [-2, 2], all different (max pools have no ties), requiring grad."""
    n = int(np.prod(shape))
    values = np.random.default_rng(n).permutation(n) * (4.0 / n) - 2.0
    return ember.tensor(values.reshape(shape), dtype=F64, requires_grad=True)


# Differentiable ops the harness does not gradgradcheck: op -> [(function, inputs, gradcheck options)].
# Points sit away from the kinks of the rounding ops, where their derivatives exist.
# index2 (issue 11): index, mask and list arguments are no harness samples.
_I2 = ember.tensor([[1, 0, 1], [0, 0, 2]])
_A2 = lambda: (t64([[1.0, -2.0, 0.5], [0.5, 3.0, -1.5], [2.0, 1.25, -0.75]]), t64([[1.5, -0.5, 2.0], [0.25, 1.75, -1.0]]))
INDEX2_CASES = {
    # scatter and put without accumulation: distinct targets (with duplicates one write wins, as in PyTorch)
    "scatter.src": [(lambda a, s: ember.scatter(a * a, 0, ember.tensor([[1, 0, 1], [0, 2, 2]]), s * s), _A2, {})],
    "scatter.value": [(lambda a: ember.scatter(a * a, 1, _I2, 2.5) * a, lambda: _A2()[:1], {})],
    "scatter_reduce.two": [(lambda a, s, r=r, inc=inc: ember.scatter_reduce(a * a, 0, _I2, s * s, r, include_self=inc) * a[:1, :1], _A2, {})
                           for r in ("sum", "prod", "mean", "amax", "amin") for inc in (True, False)],
    "_scatter_reduce_backward": [(lambda g, a, s: ember._scatter_reduce_backward(g * g, a, 0, _I2, s, "prod", True,
                                                                                 ember.scatter_reduce(a, 0, _I2, s, "prod"), True),
                                  lambda: (t64([[1.0, 2.0, 0.5], [0.5, 3.0, -1.5], [2.0, 1.25, -0.75]]), *_A2()), {})],
    "_scatter_reduce_jvp": [(lambda t, u, a, s: ember._scatter_reduce_jvp(t * a, u, a, 0, _I2, s, "mean", True,
                                                                          ember.scatter_reduce(a, 0, _I2, s, "mean")),
                             lambda: (*_A2()[:1], *_A2()[1:], *_A2()), {})],
    "index_add": [(lambda a, s: ember.index_add(a * a, 0, ember.tensor([2, 0]), s * s, alpha=-2), _A2, {})],
    "index_copy": [(lambda a, s: ember.index_copy(a * a, 0, ember.tensor([2, 0]), s * s), _A2, {})],
    "index_fill.int_Tensor": [(lambda a, v: ember.index_fill(a * a, 1, ember.tensor([2, -3]), v * v) * a,
                               lambda: (_A2()[0], t64(1.5)), {})],
    "index_fill.int_Scalar": [(lambda a: ember.index_fill(a * a, 1, ember.tensor([1]), 0.5) * a, lambda: _A2()[:1], {})],
    "masked_scatter": [(lambda a, s: ember.masked_scatter(a * a, a > 0.6, s * s), _A2, {})],
    "masked_select": [(lambda a: ember.masked_select(a * a, ember.tensor([True, False, True])), lambda: _A2()[:1], {})],
    "take": [(lambda a: ember.take(a * a, ember.tensor([[8, -1], [0, 4]])), lambda: _A2()[:1], {})],
    "take_along_dim": [(lambda a: ember.take_along_dim(a * a, ember.tensor([[2], [0], [1]]), 1), lambda: _A2()[:1], {}),
                       (lambda a: ember.take_along_dim(a * a, ember.tensor([3, 3, 7])), lambda: _A2()[:1], {})],
    "put": [(lambda a, s, i=i, acc=acc: ember.put(a * a, ember.tensor(i), (s * s).reshape(-1), accumulate=acc), _A2, {})
            for i, acc in (([0, 4, 4, -1, 2, 1], True), ([0, 4, 5, -1, 2, 1], False))],
    "argwhere": [(lambda a: (a * a)[ember.argwhere(a > 0.6)[:, 0]], lambda: _A2()[:1], {})],
    "where.cond": [(lambda a: a[ember.where(a > 0.6)] ** 2, lambda: _A2()[:1], {})],
    "cummax": [(lambda a: ember.cummax(a * a, 1).values * a, lambda: _A2()[:1], {})],
    "cummin": [(lambda a: ember.cummin(a * a, 0).values * a, lambda: _A2()[:1], {})],
    "_logcumsumexp_backward": [(lambda g, a: ember._logcumsumexp_backward(g * a, a, ember.logcumsumexp(a, 1), 1),
                                lambda: (_A2()[1], _A2()[1]), {})],
    "_logcumsumexp_jvp": [(lambda t, a: ember._logcumsumexp_jvp(t * a, a, 0), lambda: (_A2()[0], _A2()[0]), {})],
    "repeat_interleave.self_Tensor": [(lambda a: ember.repeat_interleave(a * a, ember.tensor([2, 0, 1]), 1), lambda: _A2()[:1], {})],
    "repeat_interleave.Tensor": [(lambda a: ember.index_select(a * a, 0, ember.repeat_interleave(ember.tensor([1, 2, 0]))), lambda: _A2()[:1], {})],
    "tensor_split.tensor_indices_or_sections": [(lambda a: ember.tensor_split(a * a, ember.tensor([1]), 1), lambda: _A2()[:1], {})],
    "broadcast_tensors": [(lambda a, s: ember.broadcast_tensors(a * a, s[:1] * s[:1]), _A2, {})],
    "meshgrid": [(lambda a, s: ember.meshgrid([a[0] * a[0], s[1]]), _A2, {})],
    "meshgrid.indexing": [(lambda a, s: ember.meshgrid(a[0] * a[0], s[1], indexing="xy"), _A2, {})],
    **{f"atleast_{n}d.Sequence": [(lambda a, s, n=n: getattr(ember, f"atleast_{n}d")(a[0, 0] * a[0, 0], s * s), _A2, {})]
       for n in (1, 2, 3)},
}

NOT_IN_HARNESS = {
    "index": [(lambda a: a[ember.tensor([2, 0, 2])] ** 2, lambda: (t64([[1.0, -2.0], [0.5, 3.0], [1.5, 2.0]]),), {}),
              (lambda a: a[ember.tensor([0, 1]), ember.tensor([1, 1])] * a[0, 0],
               lambda: (t64([[1.0, -2.0], [0.5, 3.0]]),), {})],
    "index_put_": [(lambda a, v: _index_put(a, v, True), lambda: (t64([1.0, -2.0, 0.5]), t64([2.0, 3.0, -1.0])), {}),
                   (lambda a, v: _index_put(a, v, False), lambda: (t64([1.0, -2.0, 0.5]), t64([2.0, 3.0])), {})],
    "copy_": [(lambda a, b: (a * a).copy_(b * b) * a, lambda: (t64([[1.0, -2.0], [0.5, 3.0]]), t64([1.5, -0.5])), {})],
    "fill_": [(lambda a: (a * a).fill_(2.5) * a + a * a, lambda: (t64([1.0, -2.0, 0.5]),), {})],
    "zero_": [(lambda a: (a * a).zero_() + a ** 3, lambda: (t64([1.0, -2.0, 0.5]),), {})],
    "to.dtype": [(_to_dtype_round_trip, lambda: (ember.tensor([0.75, -1.5], requires_grad=True),),
                  {"eps": 2.0 ** -10, "atol": 1e-3}),
                 (lambda a: a.to(F64, copy=True) ** 3, lambda: (t64([0.75, -1.5]),), {})],
    "to.device": [(lambda a: a.to("cpu", copy=True) ** 3, lambda: (t64([0.75, -1.5]),), {})],
    "to.other": [(lambda a, b: a.to(b, copy=True) * b, lambda: (t64([0.75, -1.5]), t64([2.0, 0.5])), {})],
    "pow.Scalar": [(lambda a: ember.pow(2.5, a * a), lambda: (t64([0.75, -1.5]),), {})],
    "_philox_fill_": [(_philox, lambda: (t64([0.75, -1.5, 2.0]),), {})],
    "_div_floor": [(lambda a, b: ember.div(a * a, b, rounding_mode="floor") * a,
                    lambda: (t64([1.3, -2.6]), t64([0.7, 1.9])), {})],
    "_div_trunc": [(lambda a, b: ember.div(a * a, b, rounding_mode="trunc") * a,
                    lambda: (t64([1.3, -2.6]), t64([0.7, 1.9])), {})],
    "remainder": [(lambda a, b: ember.remainder(a * a, b) * b, lambda: (t64([1.3, -2.6]), t64([0.7, 1.9])), {})],
    "prelu": [(lambda a, w: ember.prelu(a * a - 1, w) * a,
               lambda: (t64([[1.3, -0.4, 0.2], [-1.1, 0.7, 1.6]]), t64([0.25, -0.5, 1.5])), {}),
              (ember.prelu, lambda: (t64([0.5, -1.5, 2.0]), t64([0.3])), {})],
    "gather": [(lambda a: ember.gather(a, 1, ember.tensor([[0, 1, 1], [1, 0, 0]])) ** 2,
                lambda: (t64([[1.0, -2.0], [0.5, 3.0]]),), {})],
    "scatter_add": [(lambda a, s: ember.scatter_add(a * a, 0, ember.tensor([[1, 0], [1, 1]]), s * s),
                     lambda: (t64([[1.0, -2.0], [0.5, 3.0]]), t64([[1.5, -0.5], [2.0, 0.25]])), {})],
    "index_select": [(lambda a: ember.index_select(a, 1, ember.tensor([1, 0, 1])) ** 2,
                      lambda: (t64([[1.0, -2.0], [0.5, 3.0]]),), {})],
    "masked_fill.Scalar": [(lambda a: (a * a).masked_fill(ember.tensor([True, False]), 1.5) * a,
                            lambda: (t64([[1.0, -2.0], [0.5, 3.0]]),), {})],
    "masked_fill.Tensor": [(lambda a, v: (a * a).masked_fill(ember.tensor([False, True]), v * v) * a,
                            lambda: (t64([[1.0, -2.0], [0.5, 3.0]]), t64(1.25)), {})],
    # scans (issue 11): diagonal's gradient and diff's optional tensors are no harness samples
    "_diagonal_backward": [(lambda g: ember._diagonal_backward(g * g, [3, 4], 1, 0, 1) * 2,
                            lambda: (t64([1.0, -2.0, 0.5]),), {})],
    "_cumprod_backward": [(lambda g, a: ember._cumprod_backward(g * a, a, 0, ember.cumprod(a, 0)),
                           lambda: (t64([1.0, -2.0, 0.5, 2.0]), t64([1.5, 0.0, -0.5, 0.0])), {})],
    "_cumprod_jvp": [(lambda t, a: ember._cumprod_jvp(t * a, a, 0, ember.cumprod(a, 0)),
                      lambda: (t64([1.0, -2.0, 0.5, 2.0]), t64([1.5, 0.0, -0.5, 0.0])), {})],
    **{name: [(lambda a, b, f=getattr(ember, name): f([a * a, b]) * 2,
                lambda: (t64([[1.0, -2.0], [0.5, 3.0]]), t64([[1.5, 2.0], [-1.0, 0.25]])), {})]
       for name in ("hstack", "vstack", "dstack")},
    **NORM_GRAD_CASES,  # norm (issue 11): optional weights, running stats, index tensors (tests/test_norm.py)
    "diff": [(lambda a, p: ember.diff(a * a, 2, 0, prepend=p), lambda: (t64([[1.0, -2.0], [0.5, 3.0], [1.5, 2.0]]), t64([[0.3, 0.7]])), {}),
             (lambda a: ember.diff(a * a, dim=-1), lambda: (t64([1.0, -2.0, 0.5, 4.0]),), {})],
    **RANDOM_OP_CASES,  # random ops (issue 11), made repeatable by reseeding
    **ATTENTION_CASES,
    # conv (issue 11): a weight tensor is no harness sample (more cases in tests/test_conv.py)
    **_CONV_CASES,
    **BLAS_GRADGRAD_CASES,  # blas (issue 11): products with three operands, einsum, cdist, norms
    # pool (issue 11): two results or private gradients, no harness samples; distinct values (no ties)
    "max_pool2d_with_indices": [(lambda a: ember.nn.functional.max_pool2d_with_indices(a, 2, 1, 1)[0] ** 2,
                                 lambda: (_distinct64(1, 3, 4),), {})],
    "max_pool1d_with_indices": [(lambda a: ember.max_pool1d_with_indices(a, 3, 2, 1)[0] ** 2,
                                 lambda: (_distinct64(2, 5),), {})],
    "adaptive_max_pool2d": [(lambda a: ember.nn.functional.adaptive_max_pool2d(a, (2, 3)) ** 2,
                             lambda: (_distinct64(1, 3, 4),), {})],
    "adaptive_max_pool1d": [(lambda a: ember.adaptive_max_pool1d(a, 3)[0] ** 2, lambda: (_distinct64(2, 5),), {})],
    "_max_pool_gather": [(lambda a: ember._max_pool_gather(a * a, ember.tensor([[[0, 5], [7, 5]]])),
                          lambda: (_distinct64(1, 3, 3),), {})],
    "_max_pool_backward": [(lambda g: ember._max_pool_backward(g * g, ember.zeros(1, 3, 3, dtype=F64),
                                                               ember.tensor([[[0, 5], [7, 5]]])),
                            lambda: (_distinct64(1, 2, 2),), {})],
    "_avg_pool2d_backward": [(lambda g: ember._avg_pool2d_backward(g * g, ember.zeros(1, 3, 4, dtype=F64), [2, 2], [1, 2],
                                                                   [1, 1], True, False, None),
                              lambda: (_distinct64(1, 4, 3),), {})],
    "_upsample_backward": [(lambda g: ember._upsample_backward(g * g, [1, 2, 3], [5], True, False, False, None, 1.7),
                            lambda: (_distinct64(1, 2, 5),), {}),
                           (lambda g: ember._upsample_backward(g * g, [1, 2, 3], [2, 4], False),
                            lambda: (_distinct64(1, 2, 4),), {})],
    # math (issue 11): three-tensor pointwise ops and fmod (away from its jumps)
    "lerp.Tensor": [(ember.lerp, lambda: (t64([[1.0, -2.0], [0.5, 3.0]]), t64([1.5, -0.5]), t64([[0.2], [0.8]])), {})],
    "addcmul": [(lambda a, b, c: ember.addcmul(a, b, c, value=0.5) * b,
                 lambda: (t64([1.0, -2.0]), t64([[0.5, 3.0], [1.5, -1.0]]), t64([2.0, 0.7])), {})],
    "addcdiv": [(lambda a, b, c: ember.addcdiv(a, b, c, value=-2) * b,
                 lambda: (t64([1.0, -2.0]), t64([[0.5, 3.0], [1.5, -1.0]]), t64([2.0, 0.7])), {})],
    "fmod": [(lambda a, b: ember.fmod(a * a, b) * b, lambda: (t64([1.3, -2.6]), t64([0.7, -1.9])), {})],
    "isclose": [(lambda a, b: ember.where(ember.isclose(a, b, atol=0.1), a * a, a * b),
                 lambda: (t64([1.0, -2.0, 0.5]), t64([1.05, 2.0, 0.0])), {})],
    "clamp.Tensor": [(lambda a, lo, hi: ember.clamp(a * a, lo, hi) * a,
                      lambda: (t64([[1.3, -0.4, 0.2], [-1.1, 0.7, 1.6]]), t64([0.25, 0.5, 0.1]), t64([[1.5], [0.3]])), {})],
    "clip.Tensor": [(lambda a, lo: ember.clip(a * a, lo) * a, lambda: (t64([1.3, -0.4, 0.2]), t64([0.25, 0.5, 0.1])), {})],
    # integer counts: a constant factor to the graph around them
    "count_nonzero": [(lambda a: ember.count_nonzero(a) * a * a, lambda: (t64([1.3, -0.7, 0.2]),), {})],
    "count_nonzero.dim_IntList": [(lambda a: ember.count_nonzero(a, [0]) * a * a, lambda: (t64([[1.3, -0.7, 0.2]]),), {})],
    **INDEX2_CASES,
    **SORT_INDEX_CASES,  # sort (issue 11): argsort and bucketize give indices
    **LAPACK_CASES,  # lapack (issue 11): square and structured matrices, cases in tests/test_lapack.py
    **LOSS_CLS_CASES,  # losses-classification (issue 11): class targets, optional weights (tests/test_losses_classification.py)
    **LOSSREG_CASES,  # losses-regression (issue 11): three tensors or no promotion (tests/test_losses_regression.py)
    **PADPOOL_CASES,  # padpool (issue 11): private gradients and index arguments, cases in tests/test_padpool.py
    **LAPACK2_CASES,  # lapack2 (issue 11): pinv, cond, matrix_rank, matrix_power, in tests/test_lapack2.py
    **RNN_CASES,  # rnn (issue 12): the fused layer, its backward, ember-ops rerun and JVP (tests/test_rnn_fused.py)
    **TENSOR_API_CASES,  # *_as methods, unfold/as_strided backward helpers (tests/test_tensor_api_gaps.py)
    **LU_CASES, **FREXP_CASES,  # op-gaps (issue 12): tests/test_lapack_lu.py, tests/test_frexp.py
    **NAMESPACE_GAPS_CASES,  # float_power, concatenate, row_stack (tests/test_torch_namespace_gaps.py)
}
EXPLICIT = [(name, i, *case) for name, cases in NOT_IN_HARNESS.items() for i, case in enumerate(cases)]


def test_every_differentiable_op_has_a_gradgradcheck():
    """An op differentiable per the spec is gradgradchecked by the harness or here, or its
    `test: no_gradgrad:` says why it has no second derivative (none does today)."""
    in_harness = {c.op.full_name for c in collect(SPEC).gradgrad}
    excused = {op.full_name for op in SPEC.ops if "no_gradgrad" in op.test}
    wanted = {op.full_name for op in SPEC.ops if differentiable(op) and op.full_name != "floor_divide"}
    missing = wanted - in_harness - set(NOT_IN_HARNESS) - excused
    assert not missing, f"no gradgradcheck for {sorted(missing)}"
    assert not set(NOT_IN_HARNESS) & in_harness, "listed here though the harness covers it"
    assert len(excused) <= 4  # digamma; geqrf, _ctc_loss (PyTorch does not differentiate their backward); _threshold_backward


def test_no_gradgrad_takes_an_op_out_of_the_gradgrad_cases_and_needs_a_reason(tmp_path):
    (tmp_path / "ops.yaml").write_text(
        "dtype_sets: {floating: [float32, float64]}\nops:\n"
        "- {func: f(Tensor self) -> Tensor, kind: composite, doc: F., "
        "test: {samples: unary, ref: a, no_gradgrad: 'its backward is a kernel without a derivative'}}\n"
        "- {func: g(Tensor self) -> Tensor, kind: composite, doc: G., test: {samples: unary, ref: a, no_gradgrad: ''}}\n"
        "- {func: h(Tensor self) -> Tensor, kind: composite, doc: H., test: {samples: unary, ref: a}}\n")
    (tmp_path / "derivatives.yaml").write_text("[]\n")
    spec = load_spec(str(tmp_path / "ops.yaml"), str(tmp_path / "derivatives.yaml"))
    assert [p.split(": ", 2)[1:] for p in lint(spec)] == [
        ["g", "no_gradgrad: needs the reason the op has no second derivative"]]
    cases = collect(spec)
    assert {c.op.name for c in cases.grad} == {"f", "g", "h"} and {c.op.name for c in cases.gradgrad} == {"h"}


# The float32 input of the to.dtype case is the point of it: its finite differences are exact
# for the quadratic, with eps a power of two.
@pytest.mark.filterwarnings("ignore:Input #0 requires gradient and is not a double precision:UserWarning")
@pytest.mark.parametrize("name,i,fn,make_inputs,options", EXPLICIT, ids=[f"{c[0]}-{c[1]}" for c in EXPLICIT])
def test_gradcheck_and_gradgradcheck_of_ops_outside_the_harness(name, i, fn, make_inputs, options):
    inputs = make_inputs()
    assert gradcheck(fn, inputs, **options)
    assert gradgradcheck(fn, inputs, **options)


def test_floor_divide_backward_raises_at_every_order():
    """floor_divide has no derivative in PyTorch (backward raises), so none of higher order."""
    x = t64([1.5, -2.5])
    with pytest.raises(RuntimeError, match="derivative for aten::floor_divide is not implemented"):
        grad(ember.floor_divide(x, 2).sum(), x, create_graph=True)


@pytest.mark.parametrize("values,dim", [([2.0, 0.0, 3.0, -1.5], None), ([0.0, 0.0, 3.0, 2.0], 0),
                                        ([[2.0, 0.0, 1.5], [3.0, 1.0, 0.5], [0.0, 0.0, 2.0]], 1),
                                        ([[2.0, 0.0], [3.0, -1.0]], 0)])
def test_prod_second_derivative_with_zeros(values, dim):
    """The product of the others, at one zero and at two: the harness samples avoid zeros."""
    def prod(a):
        return a.prod() if dim is None else a.prod(dim)
    x = t64(values)
    assert gradcheck(prod, (x,)) and gradgradcheck(prod, (x,))
    assert gradgradcheck(lambda a: prod(a) * 1.5, (x,), fast_mode=True)


def _hessian_by_double_backward(f, x):
    """H[i, j] = d^2 f / dx_i dx_j, one row per backward of the gradient's i-th element."""
    (g,) = grad(f(x), x, create_graph=True)
    rows = [grad(g[i], x, retain_graph=True)[0] for i in range(x.numel())]
    return np.array([r.tolist() for r in rows])


def _tanh_mlp_loss(x):
    w = ember.tensor([[0.5, -1.0, 0.25], [1.5, 0.5, -0.75]], dtype=F64)
    h = ember.tanh(ember.matmul(w, x))
    return (h * h).sum() + (x ** 3).sum() * 0.1 + ember.exp(x).prod()


def test_hessian_vector_product_matches_the_explicit_hessian():
    x = t64([0.3, -0.7, 1.1])
    v = ember.tensor([1.0, -2.0, 0.5], dtype=F64)
    (g,) = grad(_tanh_mlp_loss(x), x, create_graph=True)
    (hv,) = grad(g, x, grad_outputs=v)
    hessian = _hessian_by_double_backward(_tanh_mlp_loss, x)
    np.testing.assert_allclose(hv.tolist(), hessian @ np.array(v.tolist()), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(hessian, hessian.T, rtol=1e-12, atol=1e-12)
    # ... and the Hessian against central differences of the gradient.
    base, eps, numeric = np.array(x.tolist()), 1e-6, np.zeros((3, 3))
    for j in range(3):
        step = np.eye(3)[j] * eps
        numeric[:, j] = (_gradient_at(base + step) - _gradient_at(base - step)) / (2 * eps)
    np.testing.assert_allclose(hessian, numeric, rtol=1e-6, atol=1e-6)


def _gradient_at(values):
    x = t64(values.tolist())
    return np.array(grad(_tanh_mlp_loss(x), x)[0].tolist())


# ---------------------------------------------------------------- WGAN-GP

def _gradient_penalty(lib, real, fake, alpha, weights):
    """WGAN-GP's penalty on a two-layer critic: ((|d critic / d x|_2 - 1)^2).mean() at points
    between real and fake samples, built with create_graph so the critic's weights get its gradient."""
    w1, b1, w2 = weights
    x = (alpha * real + (1 - alpha) * fake).detach().requires_grad_(True)
    critic = lib.matmul(lib.tanh(lib.matmul(x, w1) + b1), w2)
    (g,) = lib.autograd.grad(critic, x, grad_outputs=lib.ones_like(critic), create_graph=True)
    return ((g.norm(2, dim=1) - 1) ** 2).mean()


def _wgan_data(lib):
    rng = np.random.default_rng(3)
    arrays = [rng.standard_normal(s) for s in [(5, 3), (5, 3), (5, 1), (3, 4), (4,), (4, 1)]]
    real, fake, alpha = (lib.tensor(a, dtype=lib.float64) for a in arrays[:3])
    weights = [lib.tensor(a, dtype=lib.float64, requires_grad=True) for a in arrays[3:]]
    return real, fake, alpha, weights


def _wgan_step(lib):
    real, fake, alpha, weights = _wgan_data(lib)
    penalty = _gradient_penalty(lib, real, fake, alpha, weights)
    penalty.backward()
    return penalty.item(), [np.array(w.grad.tolist()) for w in weights]


def test_wgan_gp_gradient_penalty_against_finite_differences():
    penalty, grads = _wgan_step(ember)
    real, fake, alpha, weights = _wgan_data(ember)
    eps = 1e-6
    for w, g in zip(weights, grads):
        numeric = np.zeros(g.shape)
        for idx in np.ndindex(g.shape):
            values = []
            for sign in (1, -1):
                with ember.no_grad():
                    w[idx] += sign * eps
                values.append(float(_gradient_penalty(ember, real, fake, alpha, weights)))
                with ember.no_grad():
                    w[idx] -= sign * eps
            numeric[idx] = (values[0] - values[1]) / (2 * eps)
        np.testing.assert_allclose(g, numeric, rtol=1e-5, atol=1e-8)
    assert penalty > 0


@pytest.mark.skipif(torch is None, reason="compares with PyTorch")
def test_wgan_gp_gradient_penalty_matches_torch():
    penalty, grads = _wgan_step(ember)
    want_penalty, want_grads = _wgan_step(torch)
    assert penalty == pytest.approx(want_penalty, rel=1e-12)
    for g, w in zip(grads, want_grads):
        np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-12)


def test_wgan_gp_penalty_passes_gradcheck():
    real, fake, alpha, weights = _wgan_data(ember)
    assert gradcheck(lambda w1, b1, w2: _gradient_penalty(ember, real, fake, alpha, (w1, b1, w2)), tuple(weights))


# ---------------------------------------------------------------- third order

def test_third_derivative_of_a_scalar_function():
    """f = sin(x) * x^2 + exp(2x): f''' = -cos x x^2 - 6 sin x x + 6 cos x + 8 exp(2x)."""
    x0 = 0.7
    x = t64(x0)
    y = ember.sin(x) * x ** 2 + ember.exp(2 * x)
    (d1,) = grad(y, x, create_graph=True)
    (d2,) = grad(d1, x, create_graph=True)
    (d3,) = grad(d2, x)
    c, s, e = np.cos(x0), np.sin(x0), np.exp(2 * x0)
    assert d1.item() == pytest.approx(c * x0 ** 2 + 2 * s * x0 + 2 * e, rel=1e-13)
    assert d2.item() == pytest.approx(-s * x0 ** 2 + 4 * c * x0 + 2 * s + 4 * e, rel=1e-13)
    assert d3.item() == pytest.approx(-c * x0 ** 2 - 6 * s * x0 + 6 * c + 8 * e, rel=1e-13)


def test_third_order_through_softmax_and_norm():
    """gradgradcheck of a function that is itself a gradient: third derivatives."""
    def first_derivative(a):
        loss = (ember.softmax(a, 0) * ember.tensor([1.0, 2.0, -1.0], dtype=F64)).sum() + a.norm() ** 3
        return grad(loss, a, create_graph=True)[0]
    assert gradgradcheck(first_derivative, (t64([0.3, -0.5, 1.2]),))


@pytest.mark.parametrize("exponent", [1 / 3, -2.5, 0.1, 3])
def test_pow_scalar_exponent_gradients_keep_double_precision(exponent):
    # The formula's `exponent - 1` is number arithmetic in double: as a wrapped-number tensor op it
    # was rounded to float32 (x.pow(1/3)'s float64 gradient was 2e-8 off).
    x = ember.tensor([0.3, 1.7, 4.2], dtype=ember.float64, requires_grad=True)
    (g,) = grad(x.pow(exponent).sum(), x, create_graph=True)
    a = np.array([0.3, 1.7, 4.2])
    np.testing.assert_allclose(g.detach().numpy(), exponent * a ** (exponent - 1), rtol=1e-14)
    (gg,) = grad(g.sum(), x)
    np.testing.assert_allclose(gg.numpy(), exponent * (exponent - 1) * a ** (exponent - 2), rtol=1e-14)
    import ember.autograd.forward_ad as fwAD
    with fwAD.dual_level():
        tangent = fwAD.unpack_dual(fwAD.make_dual(x.detach(), ember.ones(3, dtype=ember.float64)).pow(exponent)).tangent
    np.testing.assert_allclose(tangent.numpy(), exponent * a ** (exponent - 1), rtol=1e-14)
