"""Custom autograd Functions (ember.autograd.Function) as PyTorch's: both forward
forms, ctx (save_for_backward, needs_input_grad, mark_dirty, mark_non_differentiable,
set_materialize_grads, attributes), non-tensor and multiple inputs and outputs,
once_differentiable, the node in the graph, double backward, the errors PyTorch
raises, and no leaks. Parts compare with PyTorch 2.13 when it is installed."""
import gc
import threading
import warnings
import weakref

import numpy as np
import pytest

import ember
from ember.autograd import Function
from ember.autograd.function import FunctionCtx, InplaceFunction, once_differentiable

try:
    import torch
except ImportError:  # the comparisons are skipped
    torch = None


def leaf(data, dtype=ember.float64):
    return ember.tensor(data, dtype=dtype, requires_grad=True)


def close(t, expected, tol=1e-6):
    np.testing.assert_allclose(np.asarray(t.tolist(), dtype=np.float64), np.asarray(expected, dtype=np.float64),
                               rtol=tol, atol=tol)


def as_tuple(out):
    return out if isinstance(out, tuple) else (out,)


def check_gradients(fn, *inputs, eps=1e-6, tol=1e-5):
    """fn's vector-Jacobian products (backward with random upstream gradients)
    against central differences, for every float64 input."""
    rng = np.random.default_rng(0)
    outs = [o for o in as_tuple(fn(*inputs)) if isinstance(o, ember.Tensor) and o.requires_grad]
    vs = [ember.tensor(rng.standard_normal(tuple(o.shape))) for o in outs]
    grads = ember.autograd.grad(outs, inputs, vs, allow_unused=True)

    def objective(values):  # fn may itself differentiate (a gradient's gradcheck): no no_grad here
        res = [o for o in as_tuple(fn(*values)) if isinstance(o, ember.Tensor) and o.dtype == ember.float64]
        return sum(float((o.detach() * v).sum()) for o, v in zip(res, vs))

    for k, x in enumerate(inputs):
        base = np.array(x.tolist(), dtype=np.float64)
        numeric = np.zeros(base.shape)
        for j in range(base.size):
            parts = []
            for step in (eps, -eps):
                moved = base.copy()
                moved.flat[j] += step
                values = list(inputs)
                values[k] = ember.tensor(moved, requires_grad=True)
                parts.append(objective(values))
            numeric.flat[j] = (parts[0] - parts[1]) / (2 * eps)
        analytic = np.zeros(base.shape) if grads[k] is None else np.array(grads[k].tolist())
        np.testing.assert_allclose(analytic, numeric, rtol=tol, atol=tol)


# ---------------------------------------------------------------- the Functions the tests use

class Cube(Function):
    """x ** 3, with a differentiable backward (double backward works)."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x * x

    @staticmethod
    def backward(ctx, grad):
        x, = ctx.saved_tensors
        return grad * 3 * x * x


class ScaledMul(Function):
    """x * y * k for a Python number k: a non-tensor input, stored on ctx."""

    @staticmethod
    def forward(ctx, x, y, k):
        ctx.save_for_backward(x, y)
        ctx.k = k
        return x * y * k

    @staticmethod
    def backward(ctx, grad):
        x, y = ctx.saved_tensors
        gx = grad * y * ctx.k if ctx.needs_input_grad[0] else None
        gy = grad * x * ctx.k if ctx.needs_input_grad[1] else None
        return gx, gy, None


class ExpSavingOutput(Function):
    @staticmethod
    def forward(ctx, x):
        y = x.exp()
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, grad):
        y, = ctx.saved_tensors
        return grad * y


class SinCos(Function):
    """Two outputs, in the setup_context form."""

    @staticmethod
    def forward(x):
        return x.sin(), x.cos()

    @staticmethod
    def setup_context(ctx, inputs, output):
        x, = inputs
        ctx.save_for_backward(x)

    @staticmethod
    def backward(ctx, gs, gc):
        x, = ctx.saved_tensors
        return gs * x.cos() - gc * x.sin()


# ---------------------------------------------------------------- forward, backward, ctx

def test_backward_through_a_custom_function():
    x = leaf([1.0, -2.0, 3.0])
    y = Cube.apply(x)
    close(y, [1.0, -8.0, 27.0])
    y.sum().backward()
    close(x.grad, [3.0, 12.0, 27.0])


def test_grad_fn_is_the_node_named_after_the_class():
    x = leaf([1.0, 2.0])
    y = ScaledMul.apply(x, ember.ones(2, dtype=ember.float64), 2.0)
    assert y.grad_fn.name() == "ScaledMulBackward"
    assert type(y.grad_fn).__name__ == "ScaledMulBackward"
    assert isinstance(y.grad_fn, ember.autograd.graph.Node)
    assert isinstance(y.grad_fn, FunctionCtx)
    (acc, nr), (other, other_nr) = y.grad_fn.next_functions
    assert acc.name() == "torch::autograd::AccumulateGrad" and nr == 0 and other is None
    assert repr(y).endswith("grad_fn=<ScaledMulBackward>)")
    # The node is a node of the C++ graph: built-in ops chain onto it and back through it.
    z = (y * 2).sum()
    assert z.grad_fn.next_functions[0][0].next_functions[0][0].name() == "ScaledMulBackward"


def test_non_tensor_inputs_needs_input_grad_and_ctx_attributes():
    x, y = leaf([1.0, 2.0]), ember.tensor([3.0, 4.0], dtype=ember.float64)
    out = ScaledMul.apply(x, y, 0.5)
    assert out.grad_fn.needs_input_grad == (True, False, False)
    assert out.grad_fn.k == 0.5
    out.sum().backward()
    close(x.grad, [1.5, 2.0])
    assert y.grad is None


def test_gradcheck_of_custom_functions():
    check_gradients(Cube.apply, leaf([0.5, -1.5, 2.0]))
    check_gradients(lambda a, b: ScaledMul.apply(a, b, 3.0), leaf([[1.0, 2.0], [3.0, -1.0]]), leaf([0.5, -2.0]))
    check_gradients(ExpSavingOutput.apply, leaf([0.1, -0.7, 1.3]))
    check_gradients(SinCos.apply, leaf([0.3, 2.0, -1.0]))


def test_double_backward_through_a_custom_function():
    x = leaf([1.0, -2.0, 0.5])
    gx, = ember.autograd.grad(Cube.apply(x).sum(), x, create_graph=True)
    close(gx, [3.0, 12.0, 0.75])
    assert gx.requires_grad
    ggx, = ember.autograd.grad(gx.sum(), x)
    close(ggx, [6.0, -12.0, 3.0])
    # A saved output unpacks with this node as its history: double backward through exp.
    x = leaf([0.2, -0.4])
    gx, = ember.autograd.grad(ExpSavingOutput.apply(x).sum(), x, create_graph=True)
    ggx, = ember.autograd.grad(gx.sum(), x)
    close(ggx, np.exp([0.2, -0.4]))
    # And as gradcheck of the gradient (a gradient penalty through the Function).
    check_gradients(lambda t: ember.autograd.grad((Cube.apply(t) * t).sum(), t, create_graph=True)[0],
                    leaf([0.5, -1.0, 2.0]))


def test_setup_context_form_binds_defaults_and_keywords():
    seen = []

    class Scale(Function):
        @staticmethod
        def forward(x, k=2.0):
            assert not ember.is_grad_enabled()
            return x * k

        @staticmethod
        def setup_context(ctx, inputs, output):
            seen.append((len(inputs), inputs[1], output.requires_grad))
            ctx.k = inputs[1]

        @staticmethod
        def backward(ctx, grad):
            return grad * ctx.k, None

    x = leaf([1.0, 2.0])
    close(Scale.apply(x), [2.0, 4.0])
    close(Scale.apply(x, k=3.0), [3.0, 6.0])
    Scale.apply(x, 5.0).sum().backward()
    close(x.grad, [5.0, 5.0])
    assert seen == [(2, 2.0, False), (2, 3.0, False), (2, 5.0, False)]


def test_keyword_arguments_count_as_positional_ones():
    class Mul(Function):
        @staticmethod
        def forward(ctx, x, y=None):
            return x * y

        @staticmethod
        def backward(ctx, grad):
            return grad, grad * 2

    x, y = leaf([1.0]), leaf([2.0])
    out = Mul.apply(x, y=y)
    assert out.grad_fn.needs_input_grad == (True, True)
    out.sum().backward()
    assert x.grad.tolist() == [1.0] and y.grad.tolist() == [2.0]


def test_forward_runs_without_grad_and_backward_in_the_callers_mode():
    modes = []

    class Probe(Function):
        @staticmethod
        def forward(ctx, x):
            modes.append(("forward", ember.is_grad_enabled()))
            return x + 1

        @staticmethod
        def backward(ctx, grad):
            modes.append(("backward", ember.is_grad_enabled()))
            return grad

    x = leaf([1.0])
    Probe.apply(x).sum().backward()
    Probe.apply(x).sum().backward(create_graph=True)
    assert modes == [("forward", False), ("backward", False), ("forward", False), ("backward", True)]


def test_no_history_without_grad_mode_or_inputs_that_require_grad():
    x = leaf([1.0, 2.0])
    with ember.no_grad():
        y = Cube.apply(x)
    assert not y.requires_grad and y.grad_fn is None
    y = Cube.apply(x.detach())
    assert not y.requires_grad and y.grad_fn is None


# ---------------------------------------------------------------- outputs

def test_multiple_outputs_non_tensor_and_integer_outputs():
    received = []

    class Many(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2, 7, x.long(), x * 3, None

        @staticmethod
        def backward(ctx, *grads):
            received.append(grads)
            return grads[0] * 2 + grads[3] * 3

    x = leaf([1.0, 2.0])
    a, seven, as_long, b, nothing = Many.apply(x)
    assert seven == 7 and nothing is None
    assert a.requires_grad and b.requires_grad and not as_long.requires_grad
    assert a.grad_fn is b.grad_fn and as_long.grad_fn is None
    assert (a.output_nr, b.output_nr) == (0, 3)
    b.sum().backward()
    close(x.grad, [3.0, 3.0])
    # Materialized: zeros for the tensors no gradient reached (in their dtype), None for the rest.
    g = received[0]
    assert g[0].tolist() == [0.0, 0.0] and g[1] is None and g[4] is None
    assert g[2].dtype == ember.int64 and g[2].tolist() == [0, 0]
    assert g[3].tolist() == [1.0, 1.0]


def test_set_materialize_grads_false_passes_none():
    received = []

    class Two(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.set_materialize_grads(False)
            return x.clone(), x.clone()

        @staticmethod
        def backward(ctx, g1, g2):
            received.append((g1, g2))
            return g2

    x = leaf([1.0, 2.0])
    _, second = Two.apply(x)
    second.sum().backward()
    assert received[0][0] is None and received[0][1].tolist() == [1.0, 1.0]


def test_returning_an_input_returns_an_alias_with_this_history():
    class Identity(Function):
        @staticmethod
        def forward(ctx, x, y):
            return x, y

        @staticmethod
        def backward(ctx, gx, gy):
            return gx * 2, gy

    x, y = leaf([1.0, 2.0]), ember.tensor([3.0], dtype=ember.float64)
    a, b = Identity.apply(x, y)
    assert a.grad_fn.name() == "IdentityBackward" and x.grad_fn is None and x.is_leaf
    assert a.data_ptr() == x.data_ptr()
    # As PyTorch: an output aliasing an input that needs no grad still gets the node.
    assert b.requires_grad and b.grad_fn is a.grad_fn
    a.sum().backward()
    close(x.grad, [2.0, 2.0])


def test_mark_non_differentiable():
    received = []

    class Sorted(Function):
        @staticmethod
        def forward(ctx, x):
            values, indices = x * 2, (x > 0).long()
            doubled = x * 3
            ctx.mark_non_differentiable(doubled)
            return values, indices, doubled

        @staticmethod
        def backward(ctx, gv, gi, gd):
            received.append(gd)
            return gv * 2

    x = leaf([1.0, -1.0])
    values, indices, doubled = Sorted.apply(x)
    assert values.requires_grad and not indices.requires_grad and not doubled.requires_grad
    values.sum().backward()
    close(x.grad, [2.0, 2.0])
    assert received[0].tolist() == [0.0, 0.0]


def test_mark_non_differentiable_input_returns_a_detached_alias():
    class Passthrough(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.mark_non_differentiable(x)
            return x

        @staticmethod
        def backward(ctx, grad):
            return grad

    x = leaf([1.0])
    out = Passthrough.apply(x)
    assert not out.requires_grad and out.grad_fn is None and x.requires_grad


# ---------------------------------------------------------------- mark_dirty

class DoubleInPlace(Function):
    @staticmethod
    def forward(ctx, x):
        x.mul_(2)
        ctx.mark_dirty(x)
        return x

    @staticmethod
    def backward(ctx, grad):
        return grad * 2


def test_mark_dirty_rebases_the_input_history():
    x = leaf([1.0, 2.0])
    y = x * 3
    version = y._version
    out = DoubleInPlace.apply(y)
    assert out.grad_fn.name() == "DoubleInPlaceBackward" and y.grad_fn.name() == "DoubleInPlaceBackward"
    assert out.data_ptr() == y.data_ptr()
    assert y._version == version + 2  # the forward's mul_, and mark_dirty's bump
    close(y, [6.0, 12.0])
    y.sum().backward()
    close(x.grad, [6.0, 6.0])


def test_mark_dirty_invalidates_tensors_saved_before():
    x = leaf([1.0, 2.0])
    y = x * 1
    z = y * y
    DoubleInPlace.apply(y)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        z.sum().backward()


def test_mark_dirty_on_a_leaf_that_requires_grad_raises():
    with pytest.raises(RuntimeError, match=r"^a leaf Variable that requires grad has been used in an in-place "
                                           r"operation\.$"):
        DoubleInPlace.apply(leaf([1.0]))


def test_mark_dirty_on_views():
    x = leaf([1.0, 2.0, 3.0])
    base = x * 1
    view = base[:2]
    out = DoubleInPlace.apply(view)
    assert base.grad_fn.name() == "torch::autograd::CopySlices" and out.grad_fn.name() == "AsStridedBackward0"
    base.sum().backward()
    close(x.grad, [2.0, 2.0, 1.0])
    with pytest.raises(RuntimeError, match=r"^a view of a leaf Variable that requires grad is being used in an "
                                           r"in-place operation\.$"):
        DoubleInPlace.apply(leaf([1.0, 2.0])[:1])

    class TwoOutputs(Function):
        @staticmethod
        def forward(ctx, x):
            x.mul_(2)
            ctx.mark_dirty(x)
            return x, x * 2

        @staticmethod
        def backward(ctx, g, h):
            return g

    with pytest.raises(RuntimeError, match="cannot return more than one Tensor"):
        TwoOutputs.apply((x * 1)[:2])


def test_mark_dirty_errors_and_warning():
    class NotReturned(Function):
        @staticmethod
        def forward(ctx, x):
            x.mul_(2)
            ctx.mark_dirty(x)
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g

    with pytest.raises(RuntimeError, match="Some elements marked as dirty during the forward method were not "
                                           "returned as output"):
        NotReturned.apply(leaf([1.0]) * 1)

    class NotAnInput(Function):
        @staticmethod
        def forward(ctx, x):
            y = x * 2
            ctx.mark_dirty(y)
            return y

        @staticmethod
        def backward(ctx, g):
            return g

    with pytest.warns(UserWarning, match="ctx.mark_dirty\\(\\) received a tensor that was not an input"):
        out = NotAnInput.apply(leaf([1.0]))
    assert out.grad_fn.name() == "NotAnInputBackward"

    class DirtyNumber(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.mark_dirty(3)
            return x * 1

        @staticmethod
        def backward(ctx, g):
            return g

    with pytest.raises(RuntimeError, match="mark_dirty can only accept variables"):
        DirtyNumber.apply(leaf([1.0]))


# ---------------------------------------------------------------- saved tensors

def test_saved_tensors_are_version_checked():
    x = leaf([1.0, 2.0])
    y = x * 1
    out = Cube.apply(y)
    y.add_(1)
    with pytest.raises(RuntimeError, match=r"one of the variables needed for gradient computation has been modified "
                                           r"by an inplace operation: .* CubeBackward"):
        out.sum().backward()
    out = ExpSavingOutput.apply(x)
    out.mul_(2)
    with pytest.raises(RuntimeError, match="is at version 1; expected version 0 instead"):
        out.sum().backward()


def test_saved_tensors_are_freed_by_backward():
    x = leaf([1.0, 2.0])
    out = Cube.apply(x)
    out.sum().backward(retain_graph=True)
    out.sum().backward()
    close(x.grad, [6.0, 24.0])
    message = "Trying to backward through the graph a second time"
    with pytest.raises(RuntimeError, match=message):
        out.grad_fn.saved_tensors
    with pytest.raises(RuntimeError, match=message):
        out.sum().backward()


def test_saved_tensors_inputs_outputs_and_none():
    class Saver(Function):
        @staticmethod
        def forward(ctx, x):
            y = x * 2
            ctx.save_for_backward(x, None, y)
            return y

        @staticmethod
        def backward(ctx, grad):
            return grad * 2

    x = leaf([1.0])
    out = Saver.apply(x)
    saved_x, nothing, saved_y = out.grad_fn.saved_tensors
    assert nothing is None
    assert saved_x.requires_grad and saved_x.is_leaf
    assert saved_y.grad_fn is out.grad_fn  # an output unpacks with this node as its history
    assert Saver.apply(x.detach()).grad_fn is None

    class SavesNumber(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x, 3)
            return x * 2

        @staticmethod
        def backward(ctx, grad):
            return grad

    with pytest.raises(TypeError, match="^save_for_backward can only save variables, but argument 1 is of type int$"):
        SavesNumber.apply(x)


# ---------------------------------------------------------------- what backward returns

def _with_backward(result):
    class Custom(Function):
        @staticmethod
        def forward(ctx, *args):
            return args[0] * 2

        @staticmethod
        def backward(ctx, grad):
            return result(grad)

    return Custom


@pytest.mark.parametrize("result, n_args, message", [
    (lambda g: g, 2, r"^function CustomBackward returned an incorrect number of gradients \(expected 2, got 1\)$"),
    (lambda g: (g, g), 1, r"^function CustomBackward returned an incorrect number of gradients \(expected 1, got 2\)$"),
    (lambda g: (g, g), "k", r"^function CustomBackward returned a gradient different than None at position 2, but "
                            r"the corresponding forward input was not a Variable$"),
    (lambda g: 3, 1, r"^expected Variable or None \(got int\)$"),
    (lambda g: ember.ones(4, dtype=ember.float64), 1,
     r"^Function CustomBackward returned an invalid gradient at index 0 - got \[4\] but expected shape compatible "
     r"with \[3\]$"),
    (lambda g: ember.ones(1, dtype=ember.float64), 1,
     r"^Function CustomBackward returned an invalid gradient at index 0 - got \[1\] but expected shape compatible "
     r"with \[3\]$"),
])
def test_bad_backward_results_raise_pytorchs_errors(result, n_args, message):
    x = leaf([1.0, 2.0, 3.0])
    args = (x, "k") if n_args == "k" else (x,) * n_args
    out = _with_backward(result).apply(*args)
    with pytest.raises(RuntimeError, match=message):
        out.sum().backward()


def test_backward_results_that_are_accepted():
    x = leaf([1.0, 2.0, 3.0])
    _with_backward(lambda g: (g, None, None)).apply(x).sum().backward()  # extra Nones are dropped
    close(x.grad, [1.0, 1.0, 1.0])
    x.grad = None
    _with_backward(lambda g: ember.ones(2, 3, dtype=ember.float64)).apply(x).sum().backward()  # summed to the shape
    close(x.grad, [2.0, 2.0, 2.0])
    x.grad = None
    _with_backward(lambda g: g.float()).apply(x).sum().backward()  # cast to the input's dtype
    assert x.grad.dtype == ember.float64


class BackwardError(Exception):
    pass


def test_exceptions_in_backward_reach_the_caller_unchanged():
    class Raises(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, grad):
            raise BackwardError("from the user's backward")

    x = leaf([1.0])
    with pytest.raises(BackwardError, match="^from the user's backward$"):
        Raises.apply(x).sum().backward()
    with pytest.raises(BackwardError):
        ember.autograd.grad(Raises.apply(x).sum(), x)
    # The engine is usable afterwards.
    Cube.apply(x).sum().backward()
    close(x.grad, [3.0])


def test_missing_methods_and_legacy_use_raise_as_pytorch():
    class NoBackward(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

    with pytest.raises(NotImplementedError, match="You must implement either the backward or vjp method"):
        NoBackward.apply(leaf([1.0])).sum().backward()

    class NoForward(Function):
        pass

    with pytest.raises(NotImplementedError, match="You must implement the forward function"):
        NoForward.apply(leaf([1.0]))
    with pytest.warns(DeprecationWarning, match="should not be instantiated"):
        instance = Cube()
    with pytest.raises(RuntimeError, match="Legacy autograd function with non-static forward method is deprecated"):
        instance(leaf([1.0]))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        assert InplaceFunction(inplace=True).inplace


# ---------------------------------------------------------------- once_differentiable

class CubeOnce(Cube):
    @staticmethod
    @once_differentiable
    def backward(ctx, grad):
        assert not ember.is_grad_enabled()
        return Cube.backward(ctx, grad)


def test_once_differentiable():
    x = leaf([1.0, 2.0])
    gx, = ember.autograd.grad(CubeOnce.apply(x).sum(), x)
    close(gx, [3.0, 12.0])
    assert not gx.requires_grad
    # Under create_graph, the result refuses to be differentiated again when that is tried.
    y = CubeOnce.apply(x)
    gx, = ember.autograd.grad((y * y).sum(), x, create_graph=True)
    assert gx.requires_grad and gx.grad_fn.name() == "Error"
    with pytest.raises(RuntimeError, match="^trying to differentiate twice a function that was marked with "
                                           "@once_differentiable$"):
        gx.sum().backward()


# ---------------------------------------------------------------- GIL and threads

def test_backward_through_custom_functions_on_threads():
    errors = []

    def work():
        try:
            for _ in range(50):
                x = leaf([1.0, 2.0])
                Cube.apply(ExpSavingOutput.apply(x)).sum().backward()
                close(x.grad, 3 * np.exp([1.0, 2.0]) ** 3)
        except Exception as e:  # reported below
            errors.append(e)

    threads = [threading.Thread(target=work) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors


# ---------------------------------------------------------------- no leaks

class KeepsEverything(Function):
    """Keeps its input and its output as ctx attributes, and saves the output."""

    @staticmethod
    def forward(ctx, x):
        y = x * 2
        ctx.x, ctx.y = x, y
        ctx.save_for_backward(x, y)
        return y

    @staticmethod
    def backward(ctx, grad):
        return grad * 2


def test_ctx_and_outputs_do_not_keep_each_other_alive():
    x = leaf([1.0, 2.0])
    y = KeepsEverything.apply(x)
    ctx = weakref.ref(y.grad_fn)
    del y
    gc.collect()
    assert ctx() is None
    # Without gc too: nothing the user cannot see forms a cycle.
    gc.disable()
    try:
        y = KeepsEverything.apply(x)
        ctx = weakref.ref(y.grad_fn)
        del y
        assert ctx() is None
    finally:
        gc.enable()


def _rss_bytes():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096


@pytest.mark.skipif(not __import__("os").path.exists("/proc/self/statm"), reason="needs /proc")
def test_repeated_custom_function_calls_do_not_grow_memory():
    x = ember.ones(64 * 1024, dtype=ember.float64, requires_grad=True)  # 512 kB per tensor

    def step():
        y = KeepsEverything.apply(x)
        z = Cube.apply(y)
        z.sum().backward()
        KeepsEverything.apply(x)  # never backpropagated

    for _ in range(20):
        step()
    before = _rss_bytes()
    for _ in range(100):
        step()
    assert _rss_bytes() - before < 20 * 1024 * 1024  # 100 leaked steps would hold over 200 MB


# ---------------------------------------------------------------- against PyTorch

def _torch_run(mod):
    """The same custom Function in `mod` (ember or torch): its gradients and second gradients."""
    F = mod.autograd.Function

    class Poly(F):
        @staticmethod
        def forward(ctx, x, y, k):
            ctx.save_for_backward(x, y)
            ctx.k = k
            return x * x * y + k, (x * y).sum()

        @staticmethod
        def backward(ctx, g, h):
            x, y = ctx.saved_tensors
            return g * 2 * x * y + h * y, g * x * x + h * x, None

    x = mod.tensor([1.0, -2.0, 0.5], dtype=mod.float64, requires_grad=True)
    y = mod.tensor([0.3, 0.7, -1.1], dtype=mod.float64, requires_grad=True)
    a, b = Poly.apply(x, y, 2.0)
    loss = (a * a).sum() + b * b
    gx, gy = mod.autograd.grad(loss, (x, y), create_graph=True)
    ggx, ggy = mod.autograd.grad((gx * gy).sum(), (x, y))
    return [t.detach().tolist() for t in (a, b, gx, gy, ggx, ggy)]


@pytest.mark.skipif(torch is None, reason="PyTorch is not installed")
def test_matches_pytorch_incl_double_backward():
    for got, want in zip(_torch_run(ember), _torch_run(torch)):
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-12, atol=1e-12)
