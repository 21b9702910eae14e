"""ember.optim.Optimizer: param groups, state, state_dict layout and round trips (with PyTorch's),
zero_grad, hooks, repr, argument errors as PyTorch's."""
import copy
import pickle
import warnings

import numpy as np
import pytest

import ember
from ember import optim

try:
    import torch
except ImportError:  # pragma: no cover - CI has no torch
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch is not installed")

ALL = ["SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "Adadelta", "Adamax", "NAdam", "RAdam", "LBFGS"]


def leaf(*shape, value=1.0):
    return ember.full(shape, value, requires_grad=True)


def make(lib, name, params, **kw):
    return getattr(lib.optim, name)(params, **kw)


def train(opt, params, steps=3):
    for i in range(steps):
        opt.zero_grad()
        sum(((p - i) ** 2).sum() for p in params).backward()
        opt.step()


def test_importable_from_ember():
    assert ember.optim is optim
    assert set(ALL) | {"Optimizer"} <= set(optim.__all__)
    assert issubclass(optim.AdamW, optim.Adam)


# ---------------------------------------------------------------- construction and groups
def test_param_groups_get_the_defaults():
    a, b = leaf(2), leaf(3)
    opt = optim.SGD([{"params": [a]}, {"params": b, "lr": 0.5}], lr=0.1, momentum=0.9)
    assert [g["lr"] for g in opt.param_groups] == [0.1, 0.5]
    assert all(g["momentum"] == 0.9 for g in opt.param_groups)
    assert opt.param_groups[1]["params"][0] is b
    assert opt.defaults["lr"] == 0.1 and opt.defaults["foreach"] is None and opt.defaults["fused"] is None
    c = leaf(1)
    opt.add_param_group({"params": [c], "nesterov": True})
    assert opt.param_groups[2]["nesterov"] is True and opt.param_groups[2]["lr"] == 0.1


def test_named_parameters_keep_their_names():
    a, b = leaf(2), leaf(3)
    opt = optim.Adam([("w", a), ("b", b)])
    assert opt.param_groups[0]["param_names"] == ["w", "b"]
    assert opt.state_dict()["param_groups"][0]["param_names"] == ["w", "b"]
    with pytest.raises(ValueError, match="Some param names are missing"):
        optim.Adam([("w", a), b])
    with pytest.raises(ValueError, match="cannot add param group without names to the optimizer"):
        opt.add_param_group({"params": [leaf(1)]})


def test_errors_as_pytorch():
    p = leaf(2)
    with pytest.raises(TypeError, match="^params argument given to the optimizer should be an iterable of Tensors "
                                        "or dicts, but got ember.FloatTensor$"):
        optim.SGD(p, lr=0.1)
    with pytest.raises(ValueError, match="^optimizer got an empty parameter list$"):
        optim.Adam([])
    with pytest.raises(ValueError, match="^can't optimize a non-leaf Tensor$"):
        optim.SGD([p * 2], lr=0.1)
    with pytest.raises(TypeError, match="^optimizer can only optimize Tensors, but one of the params is int$"):
        optim.SGD([p, 3], lr=0.1)
    with pytest.raises(TypeError, match="param_group must be a dict"):
        optim.SGD([p], lr=0.1).add_param_group([leaf(1)])
    with pytest.raises(TypeError, match="organized in ordered collections"):
        optim.SGD([{"params": {p}}], lr=0.1)
    with pytest.raises(ValueError, match="^some parameters appear in more than one parameter group$"):
        optim.SGD([{"params": [p]}, {"params": [p]}], lr=0.1)
    with pytest.warns(UserWarning, match="duplicate parameters"):
        optim.SGD([p, p], lr=0.1)


@pytest.mark.parametrize("name,kw,message", [
    ("SGD", dict(lr=-1), "Invalid learning rate: -1"),
    ("Adam", dict(lr=-1), "Invalid learning rate: -1"),
    ("SGD", dict(momentum=-0.5), "Invalid momentum value: -0.5"),
    ("SGD", dict(weight_decay=-1e-3), "Invalid weight_decay value: -0.001"),
    ("SGD", dict(nesterov=True), "Nesterov momentum requires a momentum and zero dampening"),
    ("SGD", dict(nesterov=True, momentum=0.9, dampening=0.1), "Nesterov momentum requires a momentum and zero dampening"),
    ("Adam", dict(eps=-1.0), "Invalid epsilon value: -1.0"),
    ("Adam", dict(betas=(1.0, 0.999)), "Invalid beta parameter at index 0: 1.0"),
    ("AdamW", dict(betas=(0.9, -0.1)), "Invalid beta parameter at index 1: -0.1"),
    ("Adam", dict(betas=(0.9, ember.tensor(0.99))), "betas must be either both floats or both Tensors"),
    ("RMSprop", dict(alpha=-0.1), "Invalid alpha value: -0.1"),
    ("Adagrad", dict(lr_decay=-1), "Invalid lr_decay value: -1"),
    ("Adagrad", dict(initial_accumulator_value=-1), "Invalid initial_accumulator_value value: -1"),
    ("Adadelta", dict(rho=1.5), "Invalid rho value: 1.5"),
    ("NAdam", dict(momentum_decay=-1), "Invalid momentum_decay value: -1"),
    ("RAdam", dict(weight_decay=-1), "Invalid weight_decay value: -1"),
    ("LBFGS", dict(lr=-1), "Invalid learning rate: -1"),
    ("Adam", dict(lr=ember.tensor([0.1, 0.2])), "Tensor lr must be 1-element"),
])
def test_argument_errors(name, kw, message):
    with pytest.raises(ValueError) as info:
        make(ember, name, [leaf(2)], **kw)
    assert str(info.value) == message
    if torch is not None:  # the same message from PyTorch
        tkw = {k: (torch.tensor(v.tolist()) if isinstance(v, ember.Tensor) else
                   tuple(torch.tensor(x.item()) if isinstance(x, ember.Tensor) else x for x in v)
                   if isinstance(v, tuple) else v) for k, v in kw.items()}
        with pytest.raises(ValueError) as tinfo:
            make(torch, name, [torch.ones(2, requires_grad=True)], **tkw)
        assert str(tinfo.value) == message


@pytest.mark.parametrize("name", ["SGD", "Adam", "AdamW"])
def test_fused_flag_errors(name):
    with pytest.raises(RuntimeError, match="^`fused` does not support `differentiable`$"):
        make(ember, name, [leaf(2)], fused=True, differentiable=True)
    with pytest.raises(RuntimeError, match="^`fused` and `foreach` cannot be `True` together.$"):
        make(ember, name, [leaf(2)], fused=True, foreach=True)


def test_lbfgs_rejects_groups_and_unknown_line_search():
    with pytest.raises(ValueError, match="LBFGS doesn't support per-parameter options"):
        optim.LBFGS([{"params": [leaf(1)]}, {"params": [leaf(1)]}])
    p = leaf(2)
    opt = optim.LBFGS([p], line_search_fn="armijo")

    def closure():
        opt.zero_grad()
        loss = ((p - 3) ** 2).sum()
        loss.backward()
        return loss

    with pytest.raises(RuntimeError, match="only 'strong_wolfe' is supported"):
        opt.step(closure)


# ---------------------------------------------------------------- repr
@needs_torch
@pytest.mark.parametrize("name", ALL)
def test_repr_as_torch(name):
    kw = {"lr": 0.1} if name == "SGD" else {}
    ours = make(ember, name, [leaf(2)], **kw)
    theirs = make(torch, name, [torch.ones(2, requires_grad=True)], **kw)
    assert repr(ours) == repr(theirs)
    assert ours.defaults == theirs.defaults


def test_repr_lists_sorted_options():
    opt = optim.SGD([leaf(2)], lr=0.1, momentum=0.9)
    assert repr(opt) == ("SGD (\nParameter Group 0\n    dampening: 0\n    differentiable: False\n    foreach: None\n"
                         "    fused: None\n    lr: 0.1\n    maximize: False\n    momentum: 0.9\n    nesterov: False\n"
                         "    weight_decay: 0\n)")


# ---------------------------------------------------------------- zero_grad
def test_zero_grad():
    p = leaf(3)
    opt = optim.SGD([p], lr=0.1)
    (p * 2).sum().backward()
    opt.zero_grad(set_to_none=False)
    np.testing.assert_array_equal(p.grad.numpy(), np.zeros(3))
    assert not p.grad.requires_grad
    opt.zero_grad()
    assert p.grad is None


# ---------------------------------------------------------------- hooks
def test_step_hooks_run_in_order_and_remove():
    p = leaf(2)
    opt = optim.SGD([p], lr=0.1)
    calls = []
    pre = opt.register_step_pre_hook(lambda o, args, kwargs: calls.append(("pre", o is opt)))
    post = opt.register_step_post_hook(lambda o, args, kwargs: calls.append(("post", p.grad is not None)))
    glob = optim.optimizer.register_optimizer_step_pre_hook(lambda o, a, k: calls.append(("global", None)))
    p.sum().backward()
    opt.step()
    assert calls == [("global", None), ("pre", True), ("post", True)]
    for handle in (pre, post, glob):
        handle.remove()
    opt.step()
    assert len(calls) == 3


def test_step_pre_hook_can_replace_arguments():
    p = leaf(2)
    opt = optim.LBFGS([p], max_iter=1)
    seen = []

    def closure():
        seen.append(1)
        opt.zero_grad()
        loss = (p ** 2).sum()
        loss.backward()
        return loss

    opt.register_step_pre_hook(lambda o, args, kwargs: ((o, closure), {}))
    opt.step(lambda: pytest.fail("the hook replaced the closure"))
    assert seen
    opt.register_step_pre_hook(lambda o, args, kwargs: 5)
    with pytest.raises(RuntimeError, match="must return None or a tuple of"):
        opt.step(closure)


def test_state_dict_hooks():
    p = leaf(2)
    opt = optim.Adam([p])
    order = []
    opt.register_state_dict_pre_hook(lambda o: order.append("pre"))
    opt.register_state_dict_post_hook(lambda o, sd: {**sd, "extra": 1})
    opt.register_state_dict_pre_hook(lambda o: order.append("first"), prepend=True)
    sd = opt.state_dict()
    assert order == ["first", "pre"] and sd["extra"] == 1
    opt.register_load_state_dict_pre_hook(lambda o, sd: order.append("load-pre"))
    opt.register_load_state_dict_post_hook(lambda o: order.append("load-post"))
    opt.load_state_dict(sd)
    assert order[-2:] == ["load-pre", "load-post"]


# ---------------------------------------------------------------- state and state_dict
def test_state_is_keyed_by_parameter_with_tensor_steps():
    a, b = leaf(2), leaf(3)
    opt = optim.Adam([a, b], lr=0.1)
    train(opt, [a, b])
    assert set(opt.state) == {a, b}
    step = opt.state[a]["step"]
    assert isinstance(step, ember.Tensor) and step.dim() == 0 and step.dtype == ember.float32 and step.item() == 3
    assert list(opt.state[a]) == ["step", "exp_avg", "exp_avg_sq"]


def test_state_dict_layout():
    a, b, c = leaf(2), leaf(3), leaf(1)
    opt = optim.SGD([{"params": [a, b]}, {"params": [c], "lr": 0.5}], lr=0.1, momentum=0.9)
    train(opt, [a, b, c])
    sd = opt.state_dict()
    assert set(sd) == {"state", "param_groups"}
    assert [g["params"] for g in sd["param_groups"]] == [[0, 1], [2]]
    assert sd["param_groups"][1]["lr"] == 0.5
    assert set(sd["state"]) == {0, 1, 2}
    assert sd["state"][2]["momentum_buffer"] is opt.state[c]["momentum_buffer"]


@pytest.mark.parametrize("name", ALL[:-1])
def test_state_dict_round_trip_continues_the_trajectory(name):
    def fresh():
        return [ember.tensor([1.0, -2.0], requires_grad=True), ember.tensor([[0.5, 3.0]], requires_grad=True)]

    kw = {"lr": 0.1, "momentum": 0.9} if name == "SGD" else {}
    params = fresh()
    opt = make(ember, name, params, **kw)
    train(opt, params, 3)
    sd = copy.deepcopy(opt.state_dict())
    clone = [p.detach().clone().requires_grad_() for p in params]
    train(opt, params, 2)
    opt2 = make(ember, name, clone, **kw)
    opt2.load_state_dict(sd)
    assert opt2.state[clone[0]].keys() == opt.state[params[0]].keys()
    train(opt2, clone, 2)
    for p, q in zip(params, clone):
        np.testing.assert_allclose(q.detach().numpy(), p.detach().numpy(), rtol=1e-6)


def test_load_state_dict_errors():
    opt = optim.SGD([leaf(2), leaf(2)], lr=0.1)
    with pytest.raises(ValueError, match="^loaded state dict has a different number of parameter groups$"):
        opt.load_state_dict({"state": {}, "param_groups": []})
    with pytest.raises(ValueError, match="^loaded state dict contains a parameter group that doesn't match the size "
                                         "of optimizer's group$"):
        opt.load_state_dict({"state": {}, "param_groups": [{"params": [0], "lr": 0.1}]})


def test_load_state_dict_casts_state_to_the_parameter_dtype():
    p = ember.zeros(2, dtype=ember.float64, requires_grad=True)
    opt = optim.Adam([p])
    sd = {"state": {0: {"step": ember.tensor(4.0), "exp_avg": ember.ones(2), "exp_avg_sq": ember.ones(2)}},
          "param_groups": [dict(opt.state_dict()["param_groups"][0], lr=0.5)]}
    opt.load_state_dict(sd)
    assert opt.state[p]["exp_avg"].dtype == ember.float64
    assert opt.state[p]["step"].dtype == ember.float32  # steps stay as saved
    assert opt.param_groups[0]["lr"] == 0.5 and opt.param_groups[0]["params"][0] is p


def test_pickle_and_deepcopy_keep_the_state():
    p = leaf(2)
    opt = optim.Adam([p], lr=0.2)
    train(opt, [p])
    for other in (pickle.loads(pickle.dumps(opt)), copy.deepcopy(opt)):
        assert repr(other) == repr(opt)
        (state,) = other.state.values()
        np.testing.assert_array_equal(state["exp_avg"].numpy(), opt.state[p]["exp_avg"].numpy())
        other.register_step_pre_hook(lambda *a: None)  # hooks work after unpickling


@needs_torch
@pytest.mark.parametrize("name", ALL[:-1])
def test_torch_state_dict_loads_into_ember(name):
    """A PyTorch checkpoint (tensors converted through NumPy) continues in ember as it does in PyTorch."""
    kw = {"lr": 0.1, "momentum": 0.9} if name == "SGD" else {}
    init = [np.array([1.0, -2.0, 0.5]), np.array([[0.5, 3.0]])]
    tparams = [torch.tensor(a, requires_grad=True) for a in init]
    topt = make(torch, name, tparams, **kw)
    train(topt, tparams, 3)
    tsd = topt.state_dict()

    def convert(value):
        if isinstance(value, torch.Tensor):
            return ember.from_numpy(value.detach().numpy().copy())
        if isinstance(value, dict):
            return {k: convert(v) for k, v in value.items()}
        if isinstance(value, list):
            return [convert(v) for v in value]
        return value

    params = [ember.tensor(p.detach().numpy(), requires_grad=True) for p in tparams]
    opt = make(ember, name, params, **kw)
    opt.load_state_dict(convert(tsd))
    assert opt.state_dict()["param_groups"] == tsd["param_groups"]
    train(topt, tparams, 2)
    train(opt, params, 2)
    for p, q in zip(params, tparams):
        np.testing.assert_allclose(p.detach().numpy(), q.detach().numpy(), rtol=1e-10)
    # and back: ember's state_dict has PyTorch's keys
    ours = opt.state_dict()
    assert {k: sorted(v) for k, v in ours["state"].items()} == {k: sorted(v) for k, v in topt.state_dict()["state"].items()}


# ---------------------------------------------------------------- step details
def test_step_runs_without_grad_and_returns_the_closure_loss():
    p = leaf(2)
    opt = optim.SGD([p], lr=0.1)

    def closure():
        assert ember.is_grad_enabled()
        opt.zero_grad()
        loss = (p ** 2).sum()
        loss.backward()
        return loss

    loss = opt.step(closure)
    assert loss.item() == 2.0
    np.testing.assert_allclose(p.detach().numpy(), [0.8, 0.8])
    assert p.grad_fn is None and p.requires_grad


def test_step_bumps_the_version_so_saved_tensors_notice():
    p = leaf(2)
    for opt in (optim.SGD([p], lr=0.1), optim.Adam([p]), optim.SGD([p], lr=0.1, foreach=False)):
        y = (p * p).sum()  # saves p
        (p * 2).sum().backward()
        opt.step()
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            y.backward()


def test_differentiable_step_records_the_update():
    w = ember.tensor([1.0, 2.0], requires_grad=True)
    p = w * 1.0  # a non-leaf parameter: the step is part of w's graph
    opt = optim.SGD([p], lr=0.5, differentiable=True)
    p.grad = ember.tensor([1.0, 1.0])
    with warnings.catch_warnings():  # reading a non-leaf's .grad warns, as in PyTorch
        warnings.simplefilter("ignore")
        opt.step()
    (p ** 2).sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), 2 * (np.array([1.0, 2.0]) - 0.5))


def test_tensor_lr_and_unknown_key_warn_free():
    p = leaf(2)
    opt = optim.Adam([p], lr=ember.tensor(0.1))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        p.sum().backward()
        opt.step()
    np.testing.assert_allclose(p.detach().numpy(), [0.9, 0.9], rtol=1e-6)
