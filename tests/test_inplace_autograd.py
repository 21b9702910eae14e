"""In-place ops differentiate exactly like their functional forms, and do not leak.

Every derived `op_` of a differentiable op in ops.yaml is gradchecked and
gradgradchecked (float64, harness samples) on a non-leaf self, `x.clone().op_(...)` and `(x * 1).op_(...)`,
and gradchecked on a view of a non-leaf base (harness.run.VIEW_INPLACE: the base's history
is rebased, views taken before the write regenerated), so a new op is covered as
soon as it has a `test:` entry. The leak tests run each
in-place composite, and a small training step, 200 times on 1 MiB tensors and
bound the growth of RSS and of the objects the garbage collector tracks.
"""
import gc
import os

import numpy as np
import pytest

import ember
from harness.collect import collect, rng_for
from harness.gradcheck import gradcheck, gradgradcheck
from harness.run import NONLEAF_INPLACE, VIEW_INPLACE, public_function
from harness.spec import differentiable, load_spec, tensor_args
from test_blas import OWN_INPLACE_CHECKS as BLAS_INPLACE_CHECKS

try:
    import torch
except ImportError:  # the suite runs without PyTorch; only the comparisons need it
    torch = None

SPEC = load_spec()


def _fits_self(case):
    """The in-place result has self's shape (a broadcast to a larger shape raises instead)."""
    a = case.sample.inputs.get("a")
    return hasattr(a, "values") and tuple(np.shape(case.ref.outputs[0])) == tuple(a.values.shape)


INPLACE_GRAD = [c for c in collect(SPEC).grad if "inplace" in c.op.derive and _fits_self(c)]
# Each case under both ways of making self a non-leaf, alternating to keep the file fast.
FORMS = sorted(NONLEAF_INPLACE)
INPLACE_GRAD_FORMS = [(c, FORMS[i % len(FORMS)]) for i, c in enumerate(INPLACE_GRAD)]
INPLACE_GRADGRAD_FORMS = [(c, f) for c, f in INPLACE_GRAD_FORMS if "no_gradgrad" not in c.op.test]


# Ops with index or mask tensor arguments the harness cannot sample: their in-place forms are
# gradchecked and gradgradchecked (non-leaf self and a view of one) in tests/test_index_ops.py.
OWN_INPLACE_CHECKS = {"scatter_add", "masked_fill.Scalar", "masked_fill.Tensor"}
OWN_INPLACE_CHECKS |= BLAS_INPLACE_CHECKS  # blas (issue 11): addmm_ and co. in tests/test_blas.py
OWN_INPLACE_CHECKS |= {"lerp.Tensor", "addcmul", "addcdiv",  # math (issue 11), three tensors: tests/test_math.py
                       "clamp.Tensor", "clip.Tensor"}
OWN_INPLACE_CHECKS |= {"scatter.src", "scatter.value", "scatter_reduce.two", "index_add", "index_copy",  # index2 (issue 11)
                       "index_fill.int_Scalar", "index_fill.int_Tensor", "masked_scatter", "put"}  # tests/test_index2.py


def test_every_differentiable_inplace_op_is_covered():
    # `test: {grad: false}` marks ops whose finite differences are meaningless (floor_divide);
    # ops the harness skips (three-tensor addcmul, lerp.Tensor) check their in-place forms themselves.
    derived = {op.full_name for op in SPEC.ops
               if "inplace" in op.derive and differentiable(op) and op.test.get("grad", True)}
    covered = {c.op.full_name for c in INPLACE_GRAD} | OWN_INPLACE_CHECKS
    assert derived and derived == covered, f"no in-place gradcheck for {sorted(derived - covered)}"
    assert "div" in covered  # the composite one, computed out of place and copied into self


@pytest.mark.parametrize("case,form", INPLACE_GRAD_FORMS, ids=[f"{c.id}-{f}" for c, f in INPLACE_GRAD_FORMS])
def test_inplace_gradcheck_on_non_leaf(case, form):
    gradcheck(case.op, case.sample, rng_for("inplace-grad|" + case.id), form=form)


@pytest.mark.parametrize("case,form", INPLACE_GRADGRAD_FORMS, ids=[f"{c.id}-{f}" for c, f in INPLACE_GRADGRAD_FORMS])
def test_inplace_gradgradcheck_on_non_leaf(case, form):
    """The value self had before the op, saved for the backward (sin_, mul_, log_), keeps its history."""
    gradgradcheck(case.op, case.sample, rng_for("inplace-gradgrad|" + case.id), form=form)


VIEW_FORMS = sorted(VIEW_INPLACE)


def _view_forms_per_op(cases):
    """Each op's cases alternate between the view forms; an op with fewer cases than forms
    repeats one, so every op is checked through every form."""
    by_op = {}
    for c in cases:
        by_op.setdefault(c.op.full_name, []).append(c)
    out = []
    for op_cases in by_op.values():
        n = max(len(op_cases), len(VIEW_FORMS))
        out += [(op_cases[i % len(op_cases)], VIEW_FORMS[i % len(VIEW_FORMS)]) for i in range(n)]
    return out


INPLACE_VIEW_GRAD_FORMS = _view_forms_per_op(INPLACE_GRAD)


@pytest.mark.parametrize("case,form", INPLACE_VIEW_GRAD_FORMS,
                         ids=[f"{c.id}-{f}" for c, f in INPLACE_VIEW_GRAD_FORMS])
def test_inplace_gradcheck_through_a_view(case, form):
    gradcheck(case.op, case.sample, rng_for("inplace-view-grad|" + case.id), form=form)


def test_every_differentiable_inplace_op_is_checked_through_each_view_form():
    for form in VIEW_FORMS:
        ops = {c.op.full_name for c, f in INPLACE_VIEW_GRAD_FORMS if f == form}
        missing = {c.op.full_name for c in INPLACE_GRAD} - ops
        assert not missing, f"{form}: no gradcheck for {sorted(missing)}"


# ----------------------------------------------------------------------------- the issue's example

def _issue_example(lib):
    x = lib.tensor([1.5, -2.0, 0.25], dtype=lib.float64, requires_grad=True)
    w = lib.tensor([0.5, 4.0, -1.25], dtype=lib.float64, requires_grad=True)
    y = x * 1
    y.div_(w)
    y.sum().backward()
    return y.detach(), x.grad, w.grad


def test_div_inplace_on_non_leaf_gives_the_gradient():
    y, gx, gw = _issue_example(ember)
    x, w = np.array([1.5, -2.0, 0.25]), np.array([0.5, 4.0, -1.25])
    np.testing.assert_allclose(y.numpy(), x / w)
    np.testing.assert_allclose(gx.numpy(), 1 / w)
    np.testing.assert_allclose(gw.numpy(), -x / w ** 2)
    if torch is not None:
        for got, want in zip((y, gx, gw), _issue_example(torch)):
            np.testing.assert_allclose(got.numpy(), want.numpy())


@pytest.mark.parametrize("rounding_mode", [None, "trunc", "floor"])
def test_div_inplace_when_only_the_divisor_requires_grad(rounding_mode):
    # div's gradient for `other` reads `self`: the value before the write, not after.
    y = ember.tensor([3.0, -5.0, 7.0], dtype=ember.float64)
    w = ember.tensor([2.0, 4.0, -1.5], dtype=ember.float64, requires_grad=True)
    y.div_(w, rounding_mode=rounding_mode)
    y.sum().backward()
    want = -np.array([3.0, -5.0, 7.0]) / np.array([2.0, 4.0, -1.5]) ** 2 if rounding_mode is None else np.zeros(3)
    np.testing.assert_allclose(w.grad.numpy(), want)
    assert y.grad_fn is not None


def test_inplace_on_non_leaf_rewrites_history_and_bumps_the_version():
    x = ember.tensor([1.0, 2.0], requires_grad=True)
    y = x * 1
    before = y._version
    y.div_(ember.tensor([2.0, 4.0]))
    assert y._version > before
    assert y.grad_fn is not None and y.grad_fn.name() != "MulBackward0"


# ----------------------------------------------------------------------------- leaks

MIB = 1 << 20
STEPS, WARMUP = 200, 30
# A 1 MiB tensor kept alive by each step would add 200 MiB, 12x this bound; the
# bound leaves room for allocator and heap noise after the rest of the suite (5 MiB seen).
RSS_BOUND = 16 * MIB
GC_OBJECTS_BOUND = 100


def _rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def _measure(step):
    """RSS and gc-tracked objects gained over STEPS calls of step."""
    gc.collect()
    rss0, objects0 = _rss(), len(gc.get_objects())
    for _ in range(STEPS):
        step()
    gc.collect()
    return _rss() - rss0, len(gc.get_objects()) - objects0


def _assert_flat(step):
    # One thread: on a loaded machine OpenMP's barriers wait for descheduled
    # threads, and these loops would take a minute instead of a second.
    threads = ember.get_num_threads()
    ember.set_num_threads(1)
    try:
        for _ in range(WARMUP):
            step()
        grown, objects = _measure(step)
        if grown >= RSS_BOUND:
            # After the rest of the suite the heap may still settle once (seen: 16-20 MiB, div_);
            # a leak grows again by the same amount in a second window.
            grown, objects = _measure(step)
    finally:
        ember.set_num_threads(threads)
    assert grown < RSS_BOUND, f"RSS grew by {grown / MIB:.1f} MiB over {STEPS} steps"
    assert objects < GC_OBJECTS_BOUND, f"{objects} more gc-tracked objects after {STEPS} steps"


N = 512  # 512 x 512 float32 = 1 MiB
INPLACE_COMPOSITES = [op.full_name for op in SPEC.ops if op.kind != "pointwise" and "inplace" in op.derive]


def _call_inplace(op, y, w, kwargs):
    """y.op_(w) or, for a function-only op (rrelu), ember.op_(y); w only where the op takes a second tensor."""
    others = [w] if len(tensor_args(op)) > 1 else []
    if "method" in op.variants:
        return getattr(y, op.name + "_")(*others, **kwargs)
    return public_function(op, "_")(y, *others, **kwargs)


# In-place ops whose other arguments are index or mask tensors: their own calls.
LEAK_INDEX = ember.randint(0, N, (N, N))
OWN_LEAK_CALLS = {
    "scatter_add": lambda y, w: y.scatter_add_(1, LEAK_INDEX, w),
    "masked_fill.Scalar": lambda y, w: y.masked_fill_(w > 1, 0.5),
    "masked_fill.Tensor": lambda y, w: y.masked_fill_(w > 1, w[0, 0]),
    # blas (issue 11): three operands, self of the product's shape
    "addmm": lambda y, w: y.addmm_(w, w, beta=0.5),
    "addmv": lambda y, w: y[0].addmv_(w, w[1], alpha=2),
    "addbmm": lambda y, w: y.addbmm_(w.unsqueeze(0), w.unsqueeze(0)),
    "baddbmm": lambda y, w: y.unsqueeze(0).baddbmm_(w.unsqueeze(0), w.unsqueeze(0)),
    # index2 (issue 11); scatter with reduce= has no derivative (as in PyTorch), so its src is detached
    "scatter.src": lambda y, w: y.scatter_(1, LEAK_INDEX, w),
    "scatter.value": lambda y, w: y.scatter_(1, LEAK_INDEX, 0.5),
    "scatter.reduce": lambda y, w: y.detach().scatter_(1, LEAK_INDEX, w.detach(), reduce="add"),
    "scatter.value_reduce": lambda y, w: y.detach().scatter_(1, LEAK_INDEX, 2.0, reduce="multiply"),
    "scatter_reduce.two": lambda y, w: y.scatter_reduce_(1, LEAK_INDEX, w, "amax"),
    "index_add": lambda y, w: y.index_add_(0, LEAK_INDEX[0], w, alpha=2),
    "index_copy": lambda y, w: y.index_copy_(0, LEAK_INDEX[0], w),
    "index_fill.int_Tensor": lambda y, w: y.index_fill_(1, LEAK_INDEX[0], w[0, 0]),
    "index_fill.int_Scalar": lambda y, w: y.index_fill_(1, LEAK_INDEX[0], 0.5),
    "masked_scatter": lambda y, w: y.masked_scatter_(w > 1, w),
    "put": lambda y, w: y.put_(LEAK_INDEX[0], w[0], accumulate=True),
    # pw-gaps: heaviside has no derivative (as in PyTorch), so its operands are detached
    "heaviside": lambda y, w: y.detach().heaviside_(w.detach()),
    "renorm": lambda y, w: y.renorm_(2, 0, 1.0),  # lazy-api: renorm's p, dim and maxnorm are not tensors
}


def _inplace_composite_calls():
    """(id, fn(y, w)) for each in-place composite, with each of its keyword variants."""
    calls = []
    for name in INPLACE_COMPOSITES:
        op = SPEC.by_full_name(name)
        if name in OWN_LEAK_CALLS:
            calls.append((f"{name}_", OWN_LEAK_CALLS[name]))
            continue
        for kwargs in op.test.get("kwargs", [{}]):
            tag = "-".join(f"{k}={v}" for k, v in kwargs.items())
            calls.append((f"{op.name}_{'-' + tag if tag else ''}",
                          lambda y, w, op=op, kwargs=kwargs: _call_inplace(op, y, w, kwargs)))
    calls.append(("zero_", lambda y, w: y.zero_()))
    return calls


LEAK_CALLS = _inplace_composite_calls()


def test_leak_cases_cover_the_inplace_composites():
    assert INPLACE_COMPOSITES, "ops.yaml has no in-place composite: update the leak tests"
    assert {c.split("-")[0].split(".")[0].rstrip("_") for c, _ in LEAK_CALLS} >= {
        n.split(".")[0] for n in INPLACE_COMPOSITES}


@pytest.mark.parametrize("backward", [True, False], ids=["backward", "graph-dropped"])
@pytest.mark.parametrize("call", [fn for _, fn in LEAK_CALLS], ids=[i for i, _ in LEAK_CALLS])
def test_inplace_composite_loop_keeps_memory_flat(call, backward):
    x = ember.randn(N, N, requires_grad=True)
    w = (ember.rand(N, N) + 0.5).requires_grad_()

    def step():
        y = x * 1
        call(y, w)
        loss = y.sum()
        if backward:
            loss.backward()
            x.grad = None
            w.grad = None

    _assert_flat(step)


def test_training_step_loop_keeps_memory_flat():
    inputs = ember.randn(64, N)
    weight = (ember.randn(N, N) * 0.01).requires_grad_()

    def step():
        loss = ember.relu(inputs @ weight).sum()
        loss.backward()
        with ember.no_grad():
            weight.sub_(weight.grad * 1e-3)
            weight.grad.zero_()

    _assert_flat(step)


@pytest.mark.parametrize("write", [lambda y: y.mul_(y), lambda y: y.add_(y[:], alpha=2.0), lambda y: y.copy_(y)],
                         ids=["mul_-self", "add_-same-view", "copy_-self"])
def test_inplace_reading_its_own_target_keeps_memory_flat(write):
    # mul's node saves `other`, here the tensor it overwrites: backward must raise, as in
    # PyTorch, and the node must not keep that tensor (and through it, itself) alive.
    x = ember.randn(N, N, requires_grad=True)

    def step():
        y = x * 1
        write(y)
        return y

    _assert_flat(step)
    y = ember.tensor([1.0, 2.0], requires_grad=True) * 1
    y.mul_(y)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


def _backward_of_div_reading_its_target(lib, rounding_mode, write):
    x = lib.tensor([1.5, -2.0, 3.0], dtype=lib.float64, requires_grad=True)
    try:
        write(lib, x * 1, rounding_mode).sum().backward()
    except RuntimeError as e:
        return str(e)
    return x.grad.tolist()


def _div_then_write_the_divisor(lib, y, mode):
    q = lib.div(lib.ones(3, dtype=y.dtype, requires_grad=True), y, rounding_mode=mode)
    y.add_(1)
    return q


DIV_READING_ITS_TARGET = [
    ("div_-self", lambda lib, y, mode: y.div_(y, rounding_mode=mode)),
    ("div_-same-view", lambda lib, y, mode: y[:2].div_(y[:2], rounding_mode=mode)),
    ("div-then-write-the-divisor", _div_then_write_the_divisor),
]


@pytest.mark.parametrize("rounding_mode", [None, "floor", "trunc"])
@pytest.mark.parametrize("write", [w for _, w in DIV_READING_ITS_TARGET], ids=[i for i, _ in DIV_READING_ITS_TARGET])
def test_div_backward_raises_when_its_saved_operand_was_overwritten(write, rounding_mode):
    # div (any rounding mode) saves the other operand, as PyTorch's DivBackward0/2: writing it in
    # place before backward raises there, so it must here, not give a zero (rounded) gradient.
    got = _backward_of_div_reading_its_target(ember, rounding_mode, write)
    assert isinstance(got, str) and "modified by an inplace operation" in got, got
    if torch is not None:
        want = _backward_of_div_reading_its_target(torch, rounding_mode, write)
        assert isinstance(want, str) and "modified by an inplace operation" in want, want


@pytest.mark.parametrize("rounding_mode", [None, "floor", "trunc"])
def test_div_inplace_by_another_tensor_keeps_its_gradient(rounding_mode):
    x = ember.tensor([1.5, -2.0, 3.0], dtype=ember.float64, requires_grad=True)
    w = ember.tensor([2.0, 4.0, -1.0], dtype=ember.float64, requires_grad=True)
    y = x * 1
    y.div_(w, rounding_mode=rounding_mode)
    y.sum().backward()
    want_x = [0.5, 0.25, -1.0] if rounding_mode is None else [0.0, 0.0, 0.0]
    want_w = [-0.375, 0.125, -3.0] if rounding_mode is None else [0.0, 0.0, 0.0]
    np.testing.assert_allclose(x.grad.numpy(), want_x)
    np.testing.assert_allclose(w.grad.numpy(), want_w)


@pytest.mark.parametrize("rounding_mode", [None, "floor"])
def test_derived_inplace_reading_its_own_target_keeps_memory_flat(rounding_mode):
    # The saved divisor is the tensor div_ overwrites: the node drops it (backward raises)
    # rather than hold it, and through its history the node itself, in a cycle.
    w = ember.randn(N, N, requires_grad=True)

    def step():
        z = w * 1
        z.div_(z[:], rounding_mode=rounding_mode)

    _assert_flat(step)


def _accumulate_after_create_graph(lib):
    x = lib.ones(3, requires_grad=True)
    (x.sum() * 1).backward(create_graph=True)  # sum's gradient is an expanded view
    x.sum().backward()
    with lib.no_grad():
        x.grad.add_(1)
    return x.grad


# PyTorch warns that .grad under create_graph makes a reference cycle; the test frees it.
@pytest.mark.filterwarnings("ignore:Using backward\\(\\) with create_graph=True:UserWarning")
def test_gradient_kept_under_create_graph_is_a_copy_later_accumulation_can_write():
    # A leaf's .grad stored under create_graph used to be the incoming (expanded)
    # gradient itself: the next accumulation wrote every element into one address.
    got = _accumulate_after_create_graph(ember)
    np.testing.assert_array_equal(got.numpy(), [3.0, 3.0, 3.0])
    if torch is not None:
        np.testing.assert_array_equal(got.numpy(), _accumulate_after_create_graph(torch).numpy())
