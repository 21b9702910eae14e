"""Autograd hooks as PyTorch's: Tensor.register_hook (leaves and non-leaves),
register_post_accumulate_grad_hook, retain_grad's place among them,
Node.register_hook / register_prehook / metadata, removable handles, the errors
for bad hook results, and saved_tensors_hooks (pack at save, unpack in backward)
with save_on_cpu and disable_saved_tensors_hooks. Parts compare with PyTorch
2.13 when it is installed."""
import gc
import pickle
import threading
import weakref

import numpy as np
import pytest

import ember
from ember.autograd import Function
from ember.autograd.graph import Node, disable_saved_tensors_hooks, save_on_cpu, saved_tensors_hooks
from ember.utils.hooks import RemovableHandle

try:
    import torch
except ImportError:  # the comparisons are skipped
    torch = None


def leaf(data, dtype=ember.float32):
    return ember.tensor(data, dtype=dtype, requires_grad=True)


# ---------------------------------------------------------------- Tensor.register_hook

def test_leaf_hook_sees_and_replaces_the_gradient_before_accumulation():
    x = leaf([1.0, 2.0])
    seen = []
    handle = x.register_hook(lambda g: seen.append(g.tolist()) or g * 10)
    assert isinstance(handle, RemovableHandle)
    (x * 2).sum().backward()
    (x * 3).sum().backward()
    assert seen == [[2.0, 2.0], [3.0, 3.0]]
    assert x.grad.tolist() == [50.0, 50.0]
    # Registered while a graph already reaches the leaf.
    w = leaf([1.0])
    y = w * 4
    w.register_hook(lambda g: g + 1)
    y.sum().backward()
    assert w.grad.tolist() == [5.0]


def test_non_leaf_hooks_run_in_order_and_replace_what_flows_on():
    x = leaf([1.0, 2.0])
    y = x * 2
    order = []
    y.register_hook(lambda g: order.append(("a", g.tolist())) or g + 1)
    y.register_hook(lambda g: order.append(("b", g.tolist())))
    y.register_hook(lambda g: order.append(("c", g.tolist())) or g * 3)
    y.sum().backward()
    assert order == [("a", [1.0, 1.0]), ("b", [2.0, 2.0]), ("c", [2.0, 2.0])]
    assert x.grad.tolist() == [12.0, 12.0]


def test_hooks_live_on_the_autograd_record_not_the_python_object():
    x = leaf([1.0, 2.0])
    y = x * 2
    calls = []
    y.register_hook(lambda g: calls.append("y"))
    other_x = y.grad_fn.next_functions[0][0].variable  # another Python object for x
    assert other_x is not x
    other_x.register_hook(lambda g: calls.append("x"))
    del y  # the graph (and the hook) live on in `z`
    z = (x * 2).sum()
    z.backward()
    assert calls == ["x"]


def test_remove_and_context_manager():
    x = leaf([1.0])
    y = x * 2
    handle = y.register_hook(lambda g: g * 100)
    handle.remove()
    handle.remove()
    with x.register_hook(lambda g: g * 100):
        pass
    y.sum().backward()
    assert x.grad.tolist() == [2.0]


def test_a_hook_may_remove_itself_or_add_hooks_while_running():
    x = leaf([1.0])
    y = x * 2
    calls = []

    def once(g):
        calls.append("once")
        handle.remove()
        y.register_hook(lambda g: calls.append("added"))

    handle = y.register_hook(once)
    y.sum().backward(retain_graph=True)
    y.sum().backward()
    assert calls == ["once", "added"]


def test_register_hook_needs_requires_grad():
    with pytest.raises(RuntimeError, match="^cannot register a hook on a tensor that doesn't require gradient$"):
        ember.ones(2).register_hook(lambda g: g)


def _backward_with_hook(hook, on_leaf):
    x = leaf([1.0, 2.0, 3.0])
    target = x if on_leaf else x * 2
    target.register_hook(hook)
    target.sum().backward()


@pytest.mark.parametrize("on_leaf", [True, False])
def test_bad_hook_results_raise_pytorchs_errors(on_leaf):
    def returns_int(g):
        return 3

    def changes_size(g):
        return ember.ones(5)

    def changes_dtype(g):
        return g.double()

    with pytest.raises(TypeError, match="^expected Variable, but hook returned 'int'$"):
        _backward_with_hook(returns_int, on_leaf)
    with pytest.raises(RuntimeError, match="^hook 'changes_size' has changed the size of value$"):
        _backward_with_hook(changes_size, on_leaf)
    with pytest.raises(RuntimeError, match=r"^hook 'changes_dtype' has changed the type of value \(was "
                                           r"ember.FloatTensor got ember.DoubleTensor\)$"):
        _backward_with_hook(changes_dtype, on_leaf)


class HookError(Exception):
    pass


def test_exceptions_in_hooks_reach_the_caller_unchanged():
    def fails(g):
        raise HookError("raised in a hook")

    with pytest.raises(HookError, match="^raised in a hook$"):
        _backward_with_hook(fails, on_leaf=False)
    with pytest.raises(HookError):
        _backward_with_hook(fails, on_leaf=True)


def test_hooks_on_an_output_no_gradient_reaches_get_none():
    class Two(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2, x * 3

        @staticmethod
        def backward(ctx, a, b):
            return a * 2

    x = leaf([1.0])
    a, b = Two.apply(x)
    seen = []
    b.register_hook(lambda g: seen.append(g))
    a.sum().backward()
    assert seen == [None]
    a, b = Two.apply(x)
    b.register_hook(lambda g: ember.ones(1))
    with pytest.raises(RuntimeError, match="^can't replace a None gradient with a non-None value$"):
        a.sum().backward()


def test_hooks_before_and_after_an_in_place_op():
    x = leaf([1.0, 2.0])
    z = x * 2
    seen = []
    z.register_hook(lambda g: seen.append(("old", g.tolist())))
    z.retain_grad()
    z.mul_(3)
    z.register_hook(lambda g: seen.append(("new", g.tolist())))
    z.sum().backward()
    # The old hook sees the gradient of the value before mul_; retain_grad follows the tensor.
    assert seen == [("new", [1.0, 1.0]), ("old", [3.0, 3.0])]
    assert z.grad.tolist() == [1.0, 1.0]
    assert x.grad.tolist() == [6.0, 6.0]


def test_hooks_in_autograd_grad():
    x = leaf([1.0, 2.0])
    unrelated = []
    x.register_hook(lambda g: unrelated.append(g))
    y = x * 2
    y.register_hook(lambda g: g * 7)
    q = y * 3
    gy, = ember.autograd.grad(q.sum(), y)
    assert gy.tolist() == [21.0, 21.0]
    assert unrelated == []  # x is not differentiated: its hook does not run
    gx, = ember.autograd.grad((x * 2).sum(), x)
    assert len(unrelated) == 1 and gx.tolist() == [2.0, 2.0]  # returned after the leaf's hook
    w = leaf([1.0])
    w.register_hook(lambda g: g + 1)
    gw, = ember.autograd.grad((w * 5).sum(), w)
    assert gw.tolist() == [6.0] and w.grad is None


# ---------------------------------------------------------------- retain_grad among hooks

@pytest.mark.parametrize("retain_first", [True, False])
def test_retain_grad_sees_the_hooked_gradient_whatever_the_order(retain_first):
    x = leaf([1.0, 2.0])
    y = x * 2
    if retain_first:
        y.retain_grad()
    y.register_hook(lambda g: g * 10)
    if not retain_first:
        y.retain_grad()
    y.sum().backward()
    assert y.grad.tolist() == [10.0, 10.0]
    assert x.grad.tolist() == [20.0, 20.0]


# ---------------------------------------------------------------- post-accumulate-grad hooks

def test_post_accumulate_grad_hook():
    x = leaf([1.0, 2.0])
    seen = []
    x.register_hook(lambda g: g + 1)
    handle = x.register_post_accumulate_grad_hook(lambda t: seen.append((t is x, t.grad.tolist())))
    (x * 2).sum().backward()
    (x * 2).sum().backward()
    assert [grad for _, grad in seen] == [[3.0, 3.0], [6.0, 6.0]]
    handle.remove()
    (x * 2).sum().backward()
    assert len(seen) == 2


def test_post_accumulate_grad_hook_errors():
    with pytest.raises(RuntimeError, match="^cannot register a hook on a tensor that doesn't require gradient$"):
        ember.ones(1).register_post_accumulate_grad_hook(lambda t: None)
    with pytest.raises(RuntimeError, match="^post accumulate grad hooks cannot be registered on non-leaf tensors$"):
        (leaf([1.0]) * 2).register_post_accumulate_grad_hook(lambda t: None)
    x = leaf([1.0])
    x.register_post_accumulate_grad_hook(lambda t: t)  # the argument itself counts as no change, as in PyTorch
    x.sum().backward()
    x.register_post_accumulate_grad_hook(lambda t: t * 1)
    with pytest.raises(RuntimeError, match="^Tensor post accumulate grad hooks should return None.$"):
        x.sum().backward()
    x = leaf([1.0])
    x.register_post_accumulate_grad_hook(lambda t: 5)
    with pytest.raises(TypeError, match="^expected Variable, but hook returned 'int'$"):
        x.sum().backward()


# ---------------------------------------------------------------- Node hooks and metadata

def test_node_hooks_see_gradients_and_may_replace_them():
    x = leaf([1.0, 2.0])
    y = x * 2
    log = []
    y.register_hook(lambda g: g * 10)
    y.grad_fn.register_prehook(lambda go: log.append(("pre", [g.tolist() for g in go])))
    y.grad_fn.register_hook(lambda gi, go: log.append(("post", [None if g is None else g.tolist() for g in gi],
                                                       [g.tolist() for g in go])))
    y.sum().backward()
    # Tensor hooks first, then the node's prehooks; the mul by a number has an input without gradient.
    assert log == [("pre", [[10.0, 10.0]]), ("post", [[20.0, 20.0], None], [[10.0, 10.0]])]
    x.grad = None
    z = x * 2
    z.grad_fn.register_prehook(lambda go: (go[0] * 3,))
    z.grad_fn.register_hook(lambda gi, go: (gi[0] + 1, None))
    z.sum().backward()
    assert x.grad.tolist() == [7.0, 7.0]


def test_node_hooks_on_accumulate_grad_and_custom_functions():
    x = leaf([1.0])
    acc = (x * 2).grad_fn.next_functions[0][0]
    log = []
    with acc.register_prehook(lambda go: log.append(("pre", go[0].tolist()))), \
            acc.register_hook(lambda gi, go: log.append(("post", gi, go[0].tolist()))):
        (x * 2).sum().backward()
    (x * 2).sum().backward()
    assert log == [("pre", [2.0]), ("post", (), [2.0])]

    class Double(Function):
        @staticmethod
        def forward(ctx, t):
            return t * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2

    y = Double.apply(x)
    y.grad_fn.register_prehook(lambda go: (go[0] + 1,))
    y.grad_fn.register_hook(lambda gi, go: log.append(("fn", gi[0].tolist(), go[0].tolist())))
    x.grad = None
    y.sum().backward()
    assert log[-1] == ("fn", [4.0], [2.0]) and x.grad.tolist() == [4.0]


def test_bad_node_hook_results_raise_pytorchs_errors():
    def backward_with(register):
        x = leaf([1.0])
        y = x * 2
        register(y.grad_fn)
        y.sum().backward()

    with pytest.raises(TypeError, match="^expected tuple, but hook returned 'int'$"):
        backward_with(lambda n: n.register_prehook(lambda go: 3))
    with pytest.raises(RuntimeError, match=r"^hook '<lambda>' has returned an incorrect number of values \(got 2, "
                                           r"but expected 1\)$"):
        backward_with(lambda n: n.register_prehook(lambda go: (go[0], go[0])))
    with pytest.raises(RuntimeError, match=r"^hook '<lambda>' has returned an incorrect number of values \(got 1, "
                                           r"but expected 2\)$"):
        backward_with(lambda n: n.register_hook(lambda gi, go: (gi[0],)))


def test_node_metadata_and_isinstance():
    x = leaf([1.0])
    y = x * 2
    y.grad_fn.metadata["tag"] = "mine"
    assert y.grad_fn.metadata == {"tag": "mine"}
    assert y.grad_fn.metadata is y.grad_fn.metadata
    for node in (y.grad_fn, y.grad_fn.next_functions[0][0]):
        assert isinstance(node, Node) and isinstance(node, ember.autograd.graph.Node)
    assert not isinstance(x, Node)
    with pytest.raises(TypeError):
        Node()


def test_handles_do_not_keep_hooks_alive_and_pickle():
    x = leaf([1.0])
    y = x * 2

    def hook(g):
        return g

    ref = weakref.ref(hook)
    handle = y.register_hook(hook)
    del hook, y
    gc.collect()
    assert ref() is None  # the graph held the hook; the handle does not
    handle.remove()
    copy = pickle.loads(pickle.dumps(handle))
    assert copy.id == handle.id
    copy.remove()
    assert RemovableHandle.next_id > handle.id


# ---------------------------------------------------------------- saved_tensors_hooks

def test_saved_tensors_hooks_pack_at_save_and_unpack_in_backward():
    x = leaf([1.0, 2.0, 3.0], dtype=ember.float64)
    log = []

    def pack(t):
        log.append(("pack", tuple(t.shape), ember.is_grad_enabled()))
        return ("packed", t.clone())

    def unpack(packed):
        log.append(("unpack",))
        return packed[1]

    with saved_tensors_hooks(pack, unpack):
        y = x * x          # saves self and other
        z = y.exp()        # saves its result
        w = x * 2          # saves only the number 2: not packed
    assert log == [("pack", (3,), False)] * 3
    del log[:]
    (z.sum() + w.sum()).backward()
    assert log == [("unpack",)] * 3
    np.testing.assert_allclose(x.grad.tolist(), (2 * np.array([1, 2, 3.0]) * np.exp([1, 4, 9.0]) + 2).tolist())


def test_saved_tensors_hooks_and_double_backward():
    x = leaf([1.0, 2.0], dtype=ember.float64)
    with saved_tensors_hooks(lambda t: t.clone(), lambda t: t):
        y = (x * x * x).sum()
    gx, = ember.autograd.grad(y, x, create_graph=True)
    assert gx.tolist() == [3.0, 12.0]
    ggx, = ember.autograd.grad(gx.sum(), x)
    assert ggx.tolist() == [6.0, 12.0]


def test_saved_tensors_hooks_apply_to_custom_functions():
    class Exp(Function):
        @staticmethod
        def forward(ctx, t):
            out = t.exp()
            ctx.save_for_backward(t, out)
            return out

        @staticmethod
        def backward(ctx, g):
            t, out = ctx.saved_tensors
            assert t.requires_grad and out.grad_fn is ctx
            return g * out

    packed = []
    x = leaf([0.5], dtype=ember.float64)
    with saved_tensors_hooks(lambda t: packed.append(t) or len(packed) - 1, lambda i: packed[i]):
        y = Exp.apply(x)
    assert len(packed) == 2
    y.sum().backward()
    np.testing.assert_allclose(x.grad.tolist(), [np.exp(0.5)])


def test_saved_tensors_hooks_nest_and_only_the_innermost_applies():
    seen = []
    x = leaf([1.0])
    with saved_tensors_hooks(lambda t: seen.append("outer") or t, lambda t: t):
        with saved_tensors_hooks(lambda t: seen.append("inner") or t, lambda t: t):
            x * x
        x.exp()
    x.sin()
    assert seen == ["inner", "inner", "outer"]


def test_saved_tensors_hooks_errors():
    x = leaf([1.0, 2.0])
    with saved_tensors_hooks(lambda t: t, lambda t: 3):
        y = x * x
    with pytest.raises(TypeError, match="^Output of saved tensor unpack_hook expected to be a Tensor but got result "
                                        "of type int$"):
        y.sum().backward()

    def modifies(t):
        t.add_(1)
        return t

    with saved_tensors_hooks(modifies, lambda t: t):
        with pytest.raises(RuntimeError, match="^A saved tensor pack hook is modifying its input in place"):
            x.detach().requires_grad_() * x

    def raises(t):
        raise HookError("in pack")

    with saved_tensors_hooks(raises, lambda t: t):
        with pytest.raises(HookError, match="^in pack$"):
            x * x
    with saved_tensors_hooks(lambda t: t, raises):
        y = x * x
    with pytest.raises(HookError, match="^in pack$"):
        y.sum().backward()


def test_saved_tensors_hooks_skip_version_checks():
    # As PyTorch: what the unpack hook returns is trusted (here, a copy made before the change).
    x = leaf([1.0, 2.0])
    with saved_tensors_hooks(lambda t: t.clone(), lambda t: t):
        a = x * 1
        y = (a * a).sum()
    a.add_(1)
    y.backward()
    assert x.grad.tolist() == [2.0, 4.0]


def test_save_on_cpu():
    x = leaf([1.0, 2.0], dtype=ember.float64)
    for pin in (False, True):
        x.grad = None
        with save_on_cpu(pin_memory=pin):
            y = (x * x).exp().sum()
        y.backward()
        np.testing.assert_allclose(x.grad.tolist(), (2 * np.array([1, 2.0]) * np.exp([1, 4.0])).tolist())


def test_disable_saved_tensors_hooks():
    with disable_saved_tensors_hooks("no hooks in here"):
        with pytest.raises(RuntimeError, match="^no hooks in here$"):
            with saved_tensors_hooks(lambda t: t, lambda t: t):
                pass
        with disable_saved_tensors_hooks("nested"):
            pass
        with pytest.raises(RuntimeError, match="^no hooks in here$"):  # the outer message is back
            saved_tensors_hooks(lambda t: t, lambda t: t).__enter__()
    with saved_tensors_hooks(lambda t: t, lambda t: t):
        with pytest.raises(RuntimeError, match="^not now$"):
            with disable_saved_tensors_hooks("not now"):
                pass
    with saved_tensors_hooks(lambda t: t, lambda t: t):  # enabled again
        pass


def test_saved_tensors_hooks_belong_to_the_thread_that_installs_them():
    seen = []
    started, done = threading.Event(), threading.Event()

    def other_thread():
        started.wait()
        y = leaf([1.0]) * leaf([2.0])
        seen.append("other thread saved")
        done.set()
        y.sum().backward()

    t = threading.Thread(target=other_thread)
    t.start()
    with saved_tensors_hooks(lambda x: seen.append("packed") or x, lambda x: x):
        started.set()
        done.wait()
    t.join()
    assert seen == ["other thread saved"]


def test_hooks_do_not_leak():
    x = leaf([1.0])

    class Big:
        pass

    big = Big()
    ref = weakref.ref(big)
    with saved_tensors_hooks(lambda t: (t, big), lambda p: p[0]):
        y = x * x
    del big
    assert ref() is not None  # y's node keeps the packed value
    del y
    gc.collect()
    assert ref() is None


# ---------------------------------------------------------------- against PyTorch

def _hook_run(mod):
    """Gradients through hooks of every kind, with retain_grad, in `mod` (ember or torch)."""
    x = mod.tensor([1.0, -2.0, 3.0], dtype=mod.float64, requires_grad=True)
    w = mod.tensor([0.5, 0.25, -1.0], dtype=mod.float64, requires_grad=True)
    x.register_hook(lambda g: g * 2)
    with mod.autograd.graph.saved_tensors_hooks(lambda t: t * 1, lambda t: t):
        y = x * w
        z = y.exp()
    y.register_hook(lambda g: g + 1)
    y.retain_grad()
    z.grad_fn.register_prehook(lambda go: (go[0] * 3,))
    y.grad_fn.register_hook(lambda gi, go: (gi[0], gi[1] * -1))
    (z.sum() + y.sum()).backward()
    return [t.tolist() for t in (x.grad, w.grad, y.grad)]


@pytest.mark.skipif(torch is None, reason="PyTorch is not installed")
def test_matches_pytorch():
    for got, want in zip(_hook_run(ember), _hook_run(torch)):
        np.testing.assert_allclose(got, want, rtol=1e-12)
