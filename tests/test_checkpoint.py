"""ember.utils.checkpoint as PyTorch's torch.utils.checkpoint: gradients equal
to the plain ones (random ops replayed), both variants, the argument forms,
the determinism check, and the memory it saves. Also the generator state and
the CPU allocator figures it relies on."""
import contextlib
import warnings

import numpy as np
import pytest

import ember
from ember.utils.checkpoint import CheckpointError, checkpoint, checkpoint_sequential

try:
    import torch
    import torch.utils.checkpoint as torch_checkpoint
except ImportError:  # the PyTorch comparisons are skipped without it
    torch = None

VARIANTS = [False, True]  # use_reentrant


def params(depth, width, seed=0):
    gen = np.random.default_rng(seed)
    return [(ember.tensor(gen.standard_normal((width, width)) / np.sqrt(width), requires_grad=True),
             ember.tensor(gen.standard_normal(width) * 0.1, requires_grad=True)) for _ in range(depth)]


def layer(w, b, drop=0.0):
    def run(h):
        z = h @ w + b
        out = z * z.sigmoid()  # silu: saves z and sigmoid(z)
        if drop:
            out = out * (ember.rand_like(out) >= drop).to(out.dtype) / (1 - drop)
        return out
    return run


def grads_of(tensors):
    return [t.grad.clone() for t in tensors]


def zero_grads(tensors):
    for t in tensors:
        t.grad = None


def run_mlp(x, layers, wrap):
    h = x
    for fn in layers:
        h = wrap(fn, h)
    return (h * h).sum()


def plain(fn, *args):
    return fn(*args)


def same(a, b):
    return a.tolist() == b.tolist()


def close(a, b):
    return np.allclose(np.array(a.tolist()), np.array(b.tolist()), rtol=1e-12, atol=1e-15)


# ---------------------------------------------------------------- gradients

@pytest.mark.parametrize("use_reentrant", VARIANTS)
@pytest.mark.parametrize("drop", [0.0, 0.3])
def test_mlp_gradients_equal_plain(use_reentrant, drop):
    ps = params(6, 5)
    leaves = [t for p in ps for t in p]
    x = ember.tensor(np.random.default_rng(1).standard_normal((4, 5)), requires_grad=True)
    layers = [layer(w, b, drop) for w, b in ps]

    ember.manual_seed(7)
    loss = run_mlp(x, layers, plain)
    loss.backward()
    expected = grads_of(leaves + [x])
    zero_grads(leaves + [x])

    ember.manual_seed(7)
    loss_ck = run_mlp(x, layers, lambda fn, h: checkpoint(fn, h, use_reentrant=use_reentrant))
    ember.rand(3)  # the generator moves on before backward; the recomputation must not care
    loss_ck.backward()
    assert same(loss, loss_ck)
    for got, want in zip(grads_of(leaves + [x]), expected):
        assert got.dtype == ember.float64
        assert same(got, want)


@pytest.mark.parametrize("use_reentrant", VARIANTS)
def test_random_ops_differ_without_preserved_rng(use_reentrant):
    x = ember.ones(64, dtype=ember.float64, requires_grad=True)

    def noisy(t):
        return t * ember.rand_like(t)

    ember.manual_seed(3)
    noisy(x).sum().backward()
    expected = x.grad.clone()
    x.grad = None
    ember.manual_seed(3)
    checkpoint(noisy, x, use_reentrant=use_reentrant, preserve_rng_state=False).sum().backward()
    assert not same(x.grad, expected)  # the recomputation drew new numbers
    x.grad = None
    ember.manual_seed(3)
    checkpoint(noisy, x, use_reentrant=use_reentrant, preserve_rng_state=True).sum().backward()
    assert same(x.grad, expected)


@pytest.mark.parametrize("use_reentrant", VARIANTS)
def test_recomputation_leaves_the_generator_alone(use_reentrant):
    x = ember.ones(8, requires_grad=True)
    y = checkpoint(lambda t: t * ember.rand_like(t), x, use_reentrant=use_reentrant)
    ember.manual_seed(11)
    y.sum().backward()
    after_backward = ember.rand(4)
    ember.manual_seed(11)
    assert same(after_backward, ember.rand(4))


@pytest.mark.skipif(torch is None, reason="PyTorch is not installed")
@pytest.mark.parametrize("use_reentrant", VARIANTS)
def test_matches_torch(use_reentrant):
    gen = np.random.default_rng(5)
    data = [gen.standard_normal((4, 4)), gen.standard_normal((4, 4)), gen.standard_normal((3, 4))]

    def block(lib, w1, w2):
        return lambda h: ((h @ w1).tanh() @ w2).sigmoid() * h

    grads = {}
    for lib, ckpt in ((ember, checkpoint), (torch, torch_checkpoint.checkpoint)):
        w1, w2, x = (lib.tensor(d, dtype=lib.float64, requires_grad=True) for d in data)
        h = ckpt(block(lib, w1, w2), x, use_reentrant=use_reentrant)
        h = ckpt(block(lib, w2, w1), h, use_reentrant=use_reentrant)
        (h * h).sum().backward()
        grads[lib.__name__] = [np.array(t.grad.tolist()) for t in (w1, w2, x)]
    for got, want in zip(grads["ember"], grads["torch"]):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


# ---------------------------------------------------------------- argument forms

@pytest.mark.parametrize("use_reentrant", VARIANTS)
def test_non_tensor_args_multiple_outputs_and_inputs_without_grad(use_reentrant):
    x = ember.tensor([1.0, 2.0, 3.0], requires_grad=True)
    c = ember.tensor([0.5, -1.0, 2.0])  # no grad

    def fn(a, scale, b, name):
        assert name == "tag"
        return (a * b * scale).exp(), a.sin() + b, "not a tensor"

    out1, out2, label = checkpoint(fn, x, 2.0, c, "tag", use_reentrant=use_reentrant)
    assert label == "not a tensor"
    (out1.sum() + out2.sum()).backward()
    expected = ((x * c * 2.0).exp() * c * 2.0 + x.cos()).detach()
    assert close(x.grad, expected)
    assert c.grad is None


def test_kwargs_go_to_the_function():
    x = ember.tensor([1.0, -2.0], requires_grad=True)
    y = checkpoint(lambda t, *, power: t ** power, x, power=3, use_reentrant=False)
    y.sum().backward()
    assert x.grad.tolist() == [3.0, 12.0]


@pytest.mark.parametrize("use_reentrant", VARIANTS)
def test_only_some_outputs_used(use_reentrant):
    x = ember.tensor([1.0, 2.0], requires_grad=True)
    a, b = checkpoint(lambda t: (t * 2, t * t), x, use_reentrant=use_reentrant)
    b.sum().backward()
    assert x.grad.tolist() == [2.0, 4.0]


def test_nested_checkpoints():
    x = ember.tensor([0.3, -0.7, 1.1], dtype=ember.float64, requires_grad=True)

    def inner(t):
        return (t.sin() * t).exp()

    def outer(t):
        u = t.tanh() * 2
        return checkpoint(inner, u, use_reentrant=False).cos() * u

    (outer(x) ** 2).sum().backward()
    expected = x.grad.clone()
    x.grad = None
    (checkpoint(outer, x, use_reentrant=False) ** 2).sum().backward()
    assert same(x.grad, expected)


def test_backward_twice_with_retain_graph():
    x = ember.tensor([0.5, 1.5], dtype=ember.float64, requires_grad=True)
    y = checkpoint(lambda t: (t.exp() * t).sin(), x, use_reentrant=False).sum()
    y.backward(retain_graph=True)
    first = x.grad.clone()
    y.backward()
    assert same(x.grad, first * 2)


def test_autograd_grad_through_it():
    x = ember.tensor([0.5, 1.5], dtype=ember.float64, requires_grad=True)
    w = ember.tensor([2.0, -1.0], dtype=ember.float64, requires_grad=True)
    y = checkpoint(lambda a, b: (a * b).tanh() * a, x, w, use_reentrant=False).sum()
    (gx,) = ember.autograd.grad(y, [x])
    plain_y = ((x * w).tanh() * x).sum()
    (want,) = ember.autograd.grad(plain_y, [x])
    assert same(gx, want)
    assert x.grad is None and w.grad is None


@pytest.mark.parametrize("use_reentrant", VARIANTS)
def test_in_no_grad_mode_runs_plainly(use_reentrant):
    x = ember.tensor([1.0], requires_grad=True)
    with ember.no_grad():
        y = checkpoint(lambda t: t * 2, x, use_reentrant=use_reentrant)
    assert not y.requires_grad and y.tolist() == [2.0]


def test_an_input_modified_after_the_forward_is_caught():
    x = ember.tensor([1.0, 2.0], requires_grad=True)
    h = x * 1
    y = checkpoint(lambda t: t.exp(), h, use_reentrant=False)
    h.mul_(2)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


# ---------------------------------------------------------------- PyTorch's warnings and errors

def test_use_reentrant_left_out_warns_and_is_reentrant():
    x = ember.tensor([1.0, 2.0], requires_grad=True)
    with pytest.warns(UserWarning, match="the use_reentrant parameter should be passed explicitly"):
        y = checkpoint(lambda t: t.sin(), x)
    assert type(y.grad_fn).__name__ == "CheckpointFunctionBackward"
    y.sum().backward()
    assert close(x.grad, x.cos().detach())
    with pytest.warns(UserWarning, match="checkpoint_sequential: the use_reentrant parameter"):
        checkpoint_sequential([lambda t: t * 2, lambda t: t + 1], 2, x)


def test_bad_arguments():
    x = ember.tensor([1.0], requires_grad=True)
    with pytest.raises(ValueError, match="Unexpected keyword arguments: foo"):
        checkpoint(lambda t, foo: t, x, foo=1, use_reentrant=True)
    with pytest.raises(ValueError, match="only supported when use_reentrant=False"):
        checkpoint(lambda t: t, x, use_reentrant=True, debug=True)
    with pytest.raises(ValueError, match=r"determinism_check should be one of \['default', 'none'\], but got foo"):
        checkpoint(lambda t: t, x, use_reentrant=False, determinism_check="foo")
    with pytest.raises(TypeError, match="unexpected keyword argument 'foo'"):
        checkpoint(lambda t: t, x, use_reentrant=False, foo=1)
    with pytest.raises(ValueError, match="Unexpected keyword arguments: bar"):
        checkpoint_sequential([lambda t: t], 1, x, use_reentrant=False, bar=2)


def test_reentrant_warns_when_no_input_requires_grad():
    with pytest.warns(UserWarning, match="None of the inputs have requires_grad=True"):
        checkpoint(lambda t: t * 2, ember.ones(2), use_reentrant=True)


def test_reentrant_backward_needs_an_output_requiring_grad():
    x = ember.tensor([1.0], requires_grad=True)
    y = checkpoint(lambda t: t.detach() * 3, x, use_reentrant=True)
    assert y.requires_grad  # a Function's output; the recomputed one does not require grad
    with pytest.raises(RuntimeError, match="none of output has requires_grad=True"):
        y.sum().backward()


def changing(first, later):
    calls = []

    def fn(t):
        calls.append(1)
        return first(t) if len(calls) == 1 else later(t)
    return fn


def test_determinism_check_metadata():
    x = ember.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = checkpoint(changing(lambda t: t.sin(), lambda t: t[:2].sin()), x, use_reentrant=False)
    with pytest.raises(CheckpointError, match=r"(?s)have different metadata than during the forward pass.*"
                                              r"tensor at position 0:.*'shape': ember.Size\(\[2\]\)"):
        y.sum().backward()


def test_determinism_check_count():
    x = ember.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = checkpoint(changing(lambda t: t.sin().exp(), lambda t: t.sin()), x, use_reentrant=False)
    with pytest.raises(CheckpointError, match="Number of tensors saved during forward: 2\n"
                                              "Number of tensors saved during recomputation: 1"):
        y.sum().backward()
    assert issubclass(CheckpointError, RuntimeError)


def test_more_tensors_in_the_recomputation_without_early_stop():
    x = ember.tensor([1.0, 2.0], requires_grad=True)
    with ember.utils.checkpoint.set_checkpoint_early_stop(False):
        y = checkpoint(changing(lambda t: t.sin(), lambda t: t.sin().exp()), x, use_reentrant=False)
    with pytest.raises(CheckpointError, match="trying to save more tensors during recomputation"):
        y.sum().backward()
    # with early stop (the default) the recomputation ends at the last saved tensor
    x.grad = None
    y = checkpoint(changing(lambda t: t.sin(), lambda t: t.sin().exp()), x, use_reentrant=False)
    y.sum().backward()
    assert close(x.grad, x.cos().detach())


def test_determinism_check_none_skips_the_check():
    x = ember.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = checkpoint(changing(lambda t: t.exp(), lambda t: (t + 1).exp()), x, use_reentrant=False,
                   determinism_check="none")
    y.sum().backward()
    assert close(x.grad, (x + 1).exp().detach())  # the recomputed (different) values are used


def test_debug_names_the_ops():
    x = ember.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = checkpoint(changing(lambda t: t.sin(), lambda t: t[:2].cos()), x, use_reentrant=False, debug=True)
    with pytest.raises(CheckpointError) as info:
        y.sum().backward()
    message = str(info.value)
    assert "Operations executed during the original forward:\n\nsin" in message
    assert "Operations executed during recomputation:\n\nslice" in message
    assert "have different metadata" in message


def test_context_fn_wraps_forward_and_recomputation():
    events = []

    @contextlib.contextmanager
    def mark(name):
        events.append(name + " in")
        try:
            yield
        finally:  # early stop leaves the recomputation by an exception
            events.append(name + " out")

    x = ember.tensor([1.0, 2.0], requires_grad=True)
    y = checkpoint(lambda t: t.exp(), x, use_reentrant=False, context_fn=lambda: (mark("fwd"), mark("re")))
    assert events == ["fwd in", "fwd out"]
    y.sum().backward()
    assert events == ["fwd in", "fwd out", "re in", "re out"]


# ---------------------------------------------------------------- checkpoint_sequential

@pytest.mark.parametrize("use_reentrant", VARIANTS)
def test_checkpoint_sequential_gradients(use_reentrant):
    ps = params(7, 4, seed=3)
    leaves = [t for p in ps for t in p]
    layers = [layer(w, b, drop=0.2) for w, b in ps]
    x = ember.tensor(np.random.default_rng(2).standard_normal((3, 4)), requires_grad=True)
    ember.manual_seed(1)
    run_mlp(x, layers, plain).backward()
    expected = grads_of(leaves + [x])
    zero_grads(leaves + [x])
    ember.manual_seed(1)
    out = checkpoint_sequential(layers, 3, x, use_reentrant=use_reentrant)
    (out * out).sum().backward()
    for got, want in zip(grads_of(leaves + [x]), expected):
        assert same(got, want)


# ---------------------------------------------------------------- memory

def peak_bytes_of_step(x, run):
    """Peak CPU bytes held by tensors during forward and backward, beyond what was held before."""
    import gc
    gc.collect()
    before = ember._C._cpu_memory_stats()["allocated_bytes.all.current"]
    ember._C._cpu_reset_peak_memory_stats()
    out = run(x)
    (out * out).sum().backward()
    del out
    return ember._C._cpu_memory_stats()["allocated_bytes.all.peak"] - before


@pytest.mark.parametrize("use_reentrant", VARIANTS)
def test_peak_memory_of_a_deep_mlp_drops(use_reentrant):
    # 16 layers, each keeping about three batch x width activations (1 MiB each) for backward
    ps = params(16, 64)
    layers = [layer(w, b) for w, b in ps]
    x = ember.tensor(np.random.default_rng(0).standard_normal((2048, 64)), requires_grad=True)

    def run_plain(h):
        for fn in layers:
            h = fn(h)
        return h

    plain_peak = peak_bytes_of_step(x, run_plain)
    checkpointed_peak = peak_bytes_of_step(x, lambda h: checkpoint_sequential(layers, 4, h,
                                                                              use_reentrant=use_reentrant))
    activation = 2048 * 64 * 8
    assert plain_peak > 40 * activation
    assert checkpointed_peak < plain_peak / 2.5, (plain_peak / activation, checkpointed_peak / activation)


# ---------------------------------------------------------------- what checkpointing relies on

def test_rng_state_round_trip():
    state = ember.get_rng_state()
    assert state.dtype == ember.uint8 and tuple(state.shape) == (16,)
    first = ember.rand(5)
    ember.rand(3)
    ember.set_rng_state(state)
    assert same(ember.rand(5), first)
    g = ember.Generator().manual_seed(4)
    saved = g.get_state()
    a = ember.rand(3, generator=g)
    assert g.set_state(saved) is g
    assert same(ember.rand(3, generator=g), a)
    assert not same(g.get_state(), saved)


def test_rng_state_errors():
    with pytest.raises(TypeError, match="expected a ember.ByteTensor, but got int"):
        ember.set_rng_state(3)
    with pytest.raises(TypeError, match="RNG state must be a ember.ByteTensor"):
        ember.set_rng_state(ember.zeros(16))
    with pytest.raises(RuntimeError, match="Expected a GeneratorState of size 16 but found the input RNG state "
                                           "size to be 3"):
        ember.set_rng_state(ember.zeros(3, dtype=ember.uint8))


def test_cpu_memory_stats_count_tensor_bytes():
    # An earlier test's cached block a little over 2 MiB would serve (and count as) the 2 MiB request.
    ember._C._cpu_empty_cache()
    base = ember._C._cpu_memory_stats()["allocated_bytes.all.current"]
    ember._C._cpu_reset_peak_memory_stats()
    assert ember._C._cpu_memory_stats()["allocated_bytes.all.peak"] == base
    small = ember.empty(1000, dtype=ember.float64)  # a small block: counted by its size
    assert ember._C._cpu_memory_stats()["allocated_bytes.all.current"] == base + 8000
    big = ember.empty(1 << 18, dtype=ember.float64)  # a 2 MiB block from the cache
    assert ember._C._cpu_memory_stats()["allocated_bytes.all.current"] == base + 8000 + (2 << 20)
    del small, big
    stats = ember._C._cpu_memory_stats()
    assert stats["allocated_bytes.all.current"] == base
    assert stats["allocated_bytes.all.peak"] == base + 8000 + (2 << 20)


@pytest.mark.parametrize("use_reentrant", VARIANTS)
@pytest.mark.parametrize("backward", [False, True])
def test_nothing_is_left_behind(use_reentrant, backward):
    w = ember.randn(64, 64, requires_grad=True)

    def step():
        def inner(t):
            return (t @ w).tanh() @ w

        def outer(t):  # nests a non-reentrant checkpoint inside
            return checkpoint(inner, t.sin(), use_reentrant=False).cos()

        y = checkpoint(outer, ember.randn(128, 64, requires_grad=True), use_reentrant=use_reentrant)
        if backward:
            y.sum().backward()
        w.grad = None

    step()
    base = ember._C._cpu_memory_stats()["allocated_bytes.all.current"]
    for _ in range(3):
        step()
    assert ember._C._cpu_memory_stats()["allocated_bytes.all.current"] == base
