"""ember.autograd.grad, ember.autograd.backward and Tensor.backward(inputs=) as PyTorch 2.13:
arguments, errors (classes and wording), `inputs=` accumulating only into the given tensors,
and the engine running only the part of the graph that leads to them. Each scenario runs on
ember and, when torch is installed, on torch, and both must agree."""
import warnings

import numpy as np
import pytest

import ember
import ember.autograd as eag

try:
    import torch
except ImportError:                      # the comparisons skip without torch
    torch = None

LIBS = [ember] + ([torch] if torch is not None else [])


def leaf(lib, data):
    return lib.tensor(data, dtype=lib.float64, requires_grad=True)


def values(t):
    return None if t is None else np.array(t.tolist())


def both(scenario):
    """scenario(lib) on ember and torch: the same values, or the same error class and message
    (torch.Size printed as ember.Size)."""
    results = []
    for lib in LIBS:
        try:
            results.append(("ok", scenario(lib)))
        except Exception as e:          # noqa: BLE001 - compared below
            results.append(("error", (type(e).__name__, str(e).replace("torch.", "ember."))))
    got = results[0]
    for other in results[1:]:
        assert got[0] == other[0], f"ember: {got}, torch: {other}"
        if got[0] == "error":
            assert got[1] == other[1]
        else:
            a, b = got[1], other[1]
            assert len(a) == len(b)
            for x, y in zip(a, b):
                assert (x is None) == (y is None), (a, b)
                if x is not None:
                    np.testing.assert_allclose(x, y, rtol=1e-12, atol=1e-12)
    return got


def expect_error(scenario, cls, message):
    kind, payload = both(scenario)
    assert kind == "error" and payload == (cls.__name__, message), payload


# ---------------------------------------------------------------- autograd.grad

def test_grad_of_a_tensor_or_a_sequence_of_inputs():
    def run(lib):
        x, y = leaf(lib, [1.0, 2.0]), leaf(lib, [3.0, -1.0])
        (gx,) = lib.autograd.grad((x * y).sum(), x, retain_graph=True)
        gx2, gy = lib.autograd.grad([(x * y).sum()], [x, y])
        return [values(gx), values(gx2), values(gy), values(x.grad)]
    kind, (gx, gx2, gy, xgrad) = both(run)
    assert gx.tolist() == [3.0, -1.0] and gy.tolist() == [1.0, 2.0] and xgrad is None


def test_grad_with_dict_inputs_returns_a_dict():
    x, y = leaf(ember, [1.0, 2.0]), leaf(ember, [3.0, -1.0])
    got = eag.grad((x * y).sum(), {"x": x, "y": y})
    assert list(got) == ["x", "y"] and got["x"].tolist() == [3.0, -1.0] and got["y"].tolist() == [1.0, 2.0]
    with pytest.raises(TypeError, match="must be a dict, not"):
        import types
        eag.grad((x * y).sum(), types.MappingProxyType({"x": x}))


def test_grad_outputs_with_none_entries_and_several_outputs():
    def run(lib):
        x = leaf(lib, [1.0, 2.0, 3.0])
        a, b = x * x, (x * 3).sum()
        return [values(g) for g in lib.autograd.grad([a, b], x, [lib.tensor([1.0, 0.5, 2.0], dtype=lib.float64),
                                                                 None])]
    assert both(run)[1][0].tolist() == [5.0, 5.0, 15.0]


def test_allow_unused_and_materialize_grads():
    def run(lib, **kw):
        x, y = leaf(lib, [1.0, 2.0]), leaf(lib, [5.0, 6.0])
        return [values(g) for g in lib.autograd.grad((x * 2).sum(), [x, y], **kw)]
    assert both(lambda lib: run(lib, allow_unused=True))[1][1] is None
    assert both(lambda lib: run(lib, materialize_grads=True))[1][1].tolist() == [0.0, 0.0]
    expect_error(lambda lib: run(lib), RuntimeError,
                 "The differentiated Tensor at index 1 appears to not have been used in the graph. "
                 "Set allow_unused=True if this is the desired behavior.")
    expect_error(lambda lib: run(lib, materialize_grads=True, allow_unused=False), ValueError,
                 "Expected allow_unused to be True or not passed when materialize_grads=True, "
                 "but got: allow_unused=False.")


def test_materialized_grads_require_grad_under_create_graph():
    x, y = leaf(ember, [1.0, 2.0]), leaf(ember, [5.0, 6.0])
    _, gy = eag.grad((x * x).sum(), [x, y], create_graph=True, materialize_grads=True)
    assert gy.tolist() == [0.0, 0.0] and gy.requires_grad


def test_grad_of_a_leaf_no_op_has_used_yet_is_unused():
    x, fresh = leaf(ember, [1.0]), leaf(ember, [2.0])
    assert eag.grad((x * 2).sum(), [x, fresh], allow_unused=True)[1] is None
    assert fresh.grad_fn is None and fresh.grad is None


@pytest.mark.parametrize("case,cls,message", [
    ("input-no-grad", RuntimeError, "One of the differentiated Tensors does not require grad"),
    ("output-no-grad", RuntimeError, "element 1 of tensors does not require grad and does not have a grad_fn"),
    ("non-scalar", RuntimeError, "grad can be implicitly created only for scalar outputs"),
    ("shape", RuntimeError, "Mismatch in shape: grad_output[0] has a shape of ember.Size([4]) and output[0] "
                            "has a shape of ember.Size([3])."),
    ("too-few-grads", RuntimeError, "got 2 tensors and 1 gradients"),
    ("grad-not-tensor", TypeError, "gradients can be either Tensors or None, but got str"),
    ("empty-inputs", RuntimeError, "`inputs` argument to `grad()` cannot be empty."),
])
def test_grad_errors(case, cls, message):
    def run(lib):
        x, z = leaf(lib, [1.0, 2.0, 3.0]), lib.tensor([1.0, 2.0, 3.0], dtype=lib.float64)
        y = x * 2
        calls = {
            "input-no-grad": lambda: lib.autograd.grad(y.sum(), z),
            "output-no-grad": lambda: lib.autograd.grad([y.sum(), z.sum()], x),
            "non-scalar": lambda: lib.autograd.grad(y, x),
            "shape": lambda: lib.autograd.grad(y, x, lib.ones(4, dtype=lib.float64)),
            "too-few-grads": lambda: lib.autograd.grad([y, y], x, [lib.ones(3, dtype=lib.float64)]),
            "grad-not-tensor": lambda: lib.autograd.grad(y, x, ["ones"]),
            "empty-inputs": lambda: lib.autograd.grad(y.sum(), []),
        }
        calls[case]()
        return []
    expect_error(run, cls, message)


def test_grad_is_grads_batched_is_not_implemented():
    x = leaf(ember, [1.0])
    with pytest.raises(NotImplementedError, match="is_grads_batched"):
        eag.grad(x * 2, x, ember.ones(2, 1, dtype=ember.float64), is_grads_batched=True)


def test_grad_only_inputs_false_warns_and_is_ignored():
    x = leaf(ember, [1.0, 2.0])
    with pytest.warns(FutureWarning, match="only_inputs argument is deprecated"):
        (g,) = eag.grad((x * 3).sum(), x, only_inputs=False)
    assert g.tolist() == [3.0, 3.0] and x.grad is None


def test_grad_retain_graph_defaults_to_create_graph():
    x = leaf(ember, [2.0])
    y = (x ** 3).sum()
    (g,) = eag.grad(y, x, create_graph=True)
    (g_again,) = eag.grad(y, x)                 # the graph was kept: create_graph implies retain_graph
    assert g.tolist() == g_again.tolist() == [12.0]
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        eag.grad(y, x)


def test_grad_of_a_non_leaf_input():
    def run(lib):
        x = leaf(lib, [1.0, -2.0])
        h = x * 3
        out = (h * h).sum()
        gh, gx = lib.autograd.grad(out, [h, x])
        return [values(gh), values(gx), values(x.grad)]
    _, (gh, gx, xgrad) = both(run)
    assert gh.tolist() == [6.0, -12.0] and gx.tolist() == [18.0, -36.0] and xgrad is None


# ---------------------------------------------------------------- backward(inputs=)

def test_backward_inputs_accumulates_only_into_the_given_leaves():
    def run(lib):
        x, w = leaf(lib, [1.0, 2.0]), leaf(lib, [3.0, 4.0])
        (x * w).sum().backward(inputs=[x])
        (x * w).sum().backward(inputs=x)                     # a tensor alone; accumulates
        return [values(x.grad), values(w.grad)]
    _, (gx, gw) = both(run)
    assert gx.tolist() == [6.0, 8.0] and gw is None


def test_backward_inputs_non_leaf_gets_its_grad():
    def run(lib):
        x = leaf(lib, [1.0, -2.0])
        h = x * 3
        (h * h).sum().backward(inputs=[h, x])
        h2 = x * 2
        lib.autograd.backward((h2 * h2).sum(), inputs=[h2])
        return [values(h.grad), values(x.grad), values(h2.grad)]
    _, (gh, gx, gh2) = both(run)
    assert gh.tolist() == [6.0, -12.0] and gx.tolist() == [18.0, -36.0] and gh2.tolist() == [4.0, -8.0]


def test_backward_inputs_unused_leaf_stays_none():
    def run(lib):
        x, y = leaf(lib, [1.0]), leaf(lib, [2.0])
        (x * 2).sum().backward(inputs=[y])
        return [values(x.grad), values(y.grad)]
    assert both(run)[1] == [None, None]


@pytest.mark.parametrize("case,cls,message", [
    ("empty", RuntimeError, "`inputs` argument to `backward()` cannot be empty."),
    ("empty-dict", RuntimeError, "`inputs` argument to `backward()` cannot be empty."),
    ("no-grad-input", RuntimeError, "can't retain_grad on Tensor that has requires_grad=False"),
    ("root-no-grad", RuntimeError, "element 0 of tensors does not require grad and does not have a grad_fn"),
    ("grad-variables-and-tensors", RuntimeError, "`grad_tensors` and `grad_variables` (deprecated) arguments "
                                                 "both passed to `backward()`. Please only use `grad_tensors`."),
    ("gradient-not-tensor", TypeError, "'float' object is not iterable"),
])
def test_backward_errors(case, cls, message):
    def run(lib):
        x, z = leaf(lib, [1.0, 2.0]), lib.tensor([1.0, 2.0], dtype=lib.float64)
        y = (x * 2).sum()
        calls = {
            "empty": lambda: y.backward(inputs=[]),
            "empty-dict": lambda: lib.autograd.backward(y, inputs={}),
            "no-grad-input": lambda: y.backward(inputs=[z]),
            "root-no-grad": lambda: lib.autograd.backward(z.sum(), inputs=[z]),
            "grad-variables-and-tensors": lambda: lib.autograd.backward(
                y, grad_tensors=lib.ones((), dtype=lib.float64), grad_variables=lib.ones((), dtype=lib.float64)),
            "gradient-not-tensor": lambda: y.backward(1.0),
        }
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)
            calls[case]()
        return []
    expect_error(run, cls, message)


def test_backward_grad_variables_is_deprecated_but_works():
    x = leaf(ember, [1.0, 2.0])
    with pytest.warns(FutureWarning, match="`grad_variables` is deprecated"):
        eag.backward(x * 2, grad_variables=ember.tensor([1.0, 3.0], dtype=ember.float64))
    assert x.grad.tolist() == [2.0, 6.0]


def test_backward_create_graph_warns_once_about_the_reference_cycle(monkeypatch):
    monkeypatch.setattr(eag, "_warned_create_graph", False)
    x = leaf(ember, [2.0])
    with pytest.warns(UserWarning, match="create_graph=True will create a reference cycle"):
        (x ** 3).sum().backward(create_graph=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        (x ** 3).sum().backward(create_graph=True)
        (x ** 3).sum().backward(create_graph=True, inputs=[x])   # with inputs PyTorch does not warn
    assert x.grad.tolist() == [36.0]


# ---------------------------------------------------------------- only the needed graph runs

def _with_a_branch_that_cannot_backward(lib):
    """out = sum(x * w) + sum(floor_divide(v, 2)): backward through floor_divide raises."""
    x, w, v = leaf(lib, [1.0, 2.0]), leaf(lib, [3.0, 4.0]), leaf(lib, [5.0, 6.0])
    return x, w, v, (x * w).sum() + lib.floor_divide(v, 2).sum()


def test_backward_inputs_skips_the_rest_of_the_graph():
    def run(lib):
        x, w, v, out = _with_a_branch_that_cannot_backward(lib)
        out.backward(inputs=[x], retain_graph=True)
        gx = values(x.grad)
        (gw,) = lib.autograd.grad(out, w)
        return [gx, gw, values(w.grad), values(v.grad)]
    _, (gx, gw, wgrad, vgrad) = both(run)
    assert gx.tolist() == [3.0, 4.0] and gw.tolist() == [1.0, 2.0] and wgrad is None and vgrad is None
    x, w, v, out = _with_a_branch_that_cannot_backward(ember)
    with pytest.raises(RuntimeError, match="derivative for aten::floor_divide is not implemented"):
        out.backward()


def test_pruned_backward_keeps_the_graph_of_untouched_nodes():
    """Nodes that did not run keep their saved tensors, so a later full backward still works."""
    x, w = leaf(ember, [1.0, 2.0]), leaf(ember, [3.0, 4.0])
    h = x * w
    out = (h * x).sum()
    (gh,) = eag.grad(out, h)          # runs only the final mul's node: x*w's node keeps its tensors
    assert gh.tolist() == [1.0, 2.0]
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        eag.grad(out, h)


def test_grad_with_create_graph_through_a_pruned_graph():
    x, w = leaf(ember, [1.0, 2.0]), leaf(ember, [0.5, -1.0])
    out = (x * x * w).sum() + ember.floor_divide(w, 2).sum()
    (gx,) = eag.grad(out, x, create_graph=True)       # 2 x w, never touching floor_divide
    (gxx,) = eag.grad(gx.sum(), x, retain_graph=True)
    (gxw,) = eag.grad(gx.sum(), w)
    assert gx.tolist() == [1.0, -4.0] and gxx.tolist() == [1.0, -2.0] and gxw.tolist() == [2.0, 4.0]
