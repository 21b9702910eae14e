"""nn.Module: registration, iteration, state_dict/load_state_dict, conversions, repr,
hooks and pickling, checked against hand-computed values and (when installed) PyTorch
on the same toy modules (tests/nn_toys.py)."""
import copy
import pickle
from collections import OrderedDict

import numpy as np
import pytest
from nn_toys import to_lib, toys

import ember
from ember import nn

try:
    import torch
except ImportError:
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="compares with PyTorch")
E = toys(ember)


def as_torch_message(text):
    return text.replace("ember.", "torch.").replace("ember ", "torch ")


# ---------------------------------------------------------------- Parameter and Buffer
def test_parameter_is_a_tensor_that_requires_grad():
    p = nn.Parameter(ember.tensor([1.0, 2.0]))
    assert isinstance(p, ember.Tensor) and isinstance(p, nn.Parameter)
    assert p.requires_grad and p.is_leaf and p.grad_fn is None
    assert not nn.Parameter(ember.tensor([1.0]), requires_grad=False).requires_grad
    with ember.no_grad():
        assert nn.Parameter(ember.zeros(2)).requires_grad  # no_grad does not change the default
    assert nn.Parameter().shape == (0,)
    # Ops on a Parameter give plain tensors; the parameter shares the data's memory.
    data = ember.zeros(3)
    q = nn.Parameter(data)
    assert type(q * 2) is ember.Tensor
    with ember.no_grad():
        q.add_(1)
    assert data.tolist() == [1.0, 1.0, 1.0]


def test_parameter_repr():
    p = nn.Parameter(ember.tensor([1.0, 2.0]))
    assert repr(p) == "Parameter containing:\ntensor([1., 2.], requires_grad=True)"
    q = nn.Parameter(ember.tensor([[1.5]], dtype=ember.float64), requires_grad=False)
    assert repr(q) == "Parameter containing:\ntensor([[1.5000]], dtype=ember.float64)"
    if torch is not None:
        assert repr(torch.nn.Parameter(torch.tensor([1.0, 2.0]))) == repr(p)


def test_parameter_deepcopy_and_pickle():
    p = nn.Parameter(ember.tensor([1.0, -2.0]))
    p.grad = ember.tensor([3.0, 4.0])
    c = copy.deepcopy(p)
    assert type(c) is nn.Parameter and c.requires_grad and c.tolist() == [1.0, -2.0]
    assert c.grad is None  # as PyTorch: the copy has no grad
    with ember.no_grad():
        c.mul_(0)
    assert p.tolist() == [1.0, -2.0]
    frozen = nn.Parameter(ember.tensor([5.0]), requires_grad=False)
    frozen.tag = "kept"
    for original in (p, frozen):
        back = pickle.loads(pickle.dumps(original))
        assert type(back) is nn.Parameter
        assert back.requires_grad == original.requires_grad and back.tolist() == original.tolist()
    assert pickle.loads(pickle.dumps(frozen)).tag == "kept"


def test_buffer_marks_a_plain_tensor():
    b = nn.Buffer(ember.ones(2), persistent=False)
    assert type(b) is ember.Tensor and isinstance(b, nn.Buffer) and not isinstance(ember.ones(2), nn.Buffer)
    assert b.persistent is False and not b.requires_grad
    m = nn.Module()
    m.kept = nn.Buffer(ember.zeros(1))
    m.temp = b
    assert [n for n, _ in m.named_buffers()] == ["kept", "temp"]
    assert list(m.state_dict()) == ["kept"]


def test_uninitialized_parameter_materializes():
    p = nn.UninitializedParameter()
    assert nn.parameter.is_lazy(p) and repr(p) == "<UninitializedParameter>"
    with pytest.raises(RuntimeError, match="Can't access the shape of an uninitialized parameter"):
        p.shape
    p.materialize((2, 3), dtype=ember.float64)
    assert type(p) is nn.Parameter and p.shape == (2, 3) and p.dtype == ember.float64 and p.requires_grad


# ---------------------------------------------------------------- registration
def test_setattr_registers_parameters_buffers_and_modules():
    m = E.Block(2)
    assert list(m._parameters) == ["alpha"] and list(m._modules) == ["fc", "scale"]
    assert m.fc.weight is m._modules["fc"]._parameters["weight"]
    assert "alpha" not in m.__dict__
    # A plain tensor is an ordinary attribute; assigning to a buffer's name keeps it a buffer.
    m.cache = ember.zeros(1)
    assert "cache" in m.__dict__ and "cache" not in m._buffers
    m.scale.running = ember.ones(2)
    assert m.scale._buffers["running"].tolist() == [1.0, 1.0]
    m.scale.scratch = ember.zeros(2)
    assert "scratch" in m.scale._non_persistent_buffers_set  # still non-persistent
    # Reassigning a name to another kind moves it.
    m.fc = nn.Parameter(ember.zeros(1))
    assert "fc" in m._parameters and "fc" not in m._modules
    del m.fc
    assert "fc" not in m._parameters
    with pytest.raises(AttributeError, match="'Block' object has no attribute 'fc'"):
        m.fc


def test_registration_errors():
    m = E.Scale(2)
    with pytest.raises(TypeError, match=r"cannot assign 'ember.FloatTensor' as parameter 'gain' "
                                        r"\(ember.nn.Parameter or None expected\)"):
        m.gain = ember.zeros(2)
    with pytest.raises(TypeError, match=r"cannot assign 'int' as child module 'c'"):
        m.c = E.Scale(1)
        m.c = 3
    with pytest.raises(TypeError, match=r"cannot assign 'str' as buffer 'running'"):
        m.running = "x"
    with pytest.raises(KeyError, match="attribute 'forward' already exists"):
        m.register_buffer("forward", ember.zeros(1))
    with pytest.raises(KeyError, match='buffer name can.*t contain "."'):
        m.register_buffer("a.b", ember.zeros(1))
    with pytest.raises(KeyError, match="parameter name can.*t be empty string"):
        m.register_parameter("", None)
    with pytest.raises(TypeError, match="parameter name should be a string. Got int"):
        m.register_parameter(1, None)
    with pytest.raises(TypeError, match=r"cannot assign 'ember.FloatTensor' object to parameter 'w'"):
        m.register_parameter("w", ember.zeros(1))
    with pytest.raises(TypeError, match="int is not a Module subclass"):
        m.add_module("k", 3)
    with pytest.raises(KeyError, match='module name can.*t contain ".", got: a.b'):
        m.add_module("a.b", None)

    class Early(nn.Module):
        def __init__(self):
            self.w = nn.Parameter(ember.zeros(1))

    with pytest.raises(AttributeError, match=r"cannot assign parameters before Module.__init__\(\) call"):
        Early()
    with pytest.raises(TypeError, match=r"Module.__init__\(\) takes 1 positional argument but 2 were given"):
        nn.Module(3)


def test_register_parameter_none_and_get_by_path():
    net = E.Net()
    assert net.heads[2].bias is None
    assert [n for n, _ in net.heads[2].named_parameters()] == ["weight"]
    assert net.get_submodule("features.1.scale") is net.features[1].scale
    assert net.get_parameter("features.1.fc.bias") is net.features[1].fc.bias
    assert net.get_buffer("features.1.scale.running") is net.features[1].scale.running
    assert net.get_submodule("") is net
    with pytest.raises(AttributeError, match="Sequential has no attribute `9`"):
        net.get_submodule("features.9")
    with pytest.raises(AttributeError, match="`gain` is not an nn.Module"):
        net.get_submodule("features.2.gain")
    with pytest.raises(AttributeError, match="`running` is not an nn.Parameter"):
        net.get_parameter("features.2.running")
    with pytest.raises(AttributeError, match="`gain` is not a buffer"):
        net.get_buffer("features.2.gain")
    net.set_submodule("features.2", E.MultiLine())
    assert isinstance(net.features[2], E.MultiLine)
    with pytest.raises(AttributeError, match="Sequential has no attribute `7`"):
        net.set_submodule("features.7", E.MultiLine(), strict=True)


# ---------------------------------------------------------------- iteration
NET_PARAMS = [
    "features.0.weight", "features.0.bias", "features.1.alpha", "features.1.fc.weight", "features.1.fc.bias",
    "features.1.scale.gain", "features.2.gain", "heads.0.weight", "heads.0.bias", "heads.1.weight", "heads.1.bias",
    "heads.2.weight", "by_name.b.gain"]
NET_BUFFERS = ["step", "features.1.scale.running", "features.1.scale.scratch", "features.2.running",
               "features.2.scratch", "by_name.b.running", "by_name.b.scratch"]
NET_STATE = (["step"] + NET_PARAMS[:6] + ["features.1.scale.running", "features.2.gain", "features.2.running"]
             + NET_PARAMS[7:] + ["by_name.b.running"])


def test_named_members_follow_registration_order():
    net = E.Net()
    assert [n for n, _ in net.named_parameters()] == NET_PARAMS
    assert [n for n, _ in net.named_buffers()] == NET_BUFFERS
    assert [n for n, _ in net.named_modules()] == [
        "", "features", "features.0", "features.1", "features.1.fc", "features.1.scale", "features.2", "heads",
        "heads.0", "heads.1", "heads.2", "by_name", "by_name.b", "by_name.a", "empty"]
    assert [n for n, _ in net.named_children()] == ["features", "heads", "by_name", "empty"]
    assert list(net.children())[0] is net.features
    assert [n for n, _ in net.features[1].named_parameters(recurse=False)] == ["alpha"]
    assert [n for n, _ in net.features[1].named_parameters(prefix="blk")][:2] == ["blk.alpha", "blk.fc.weight"]
    assert [n for n, _ in net.named_buffers(recurse=False)] == ["step"]
    assert len(list(net.parameters())) == len(NET_PARAMS) and len(list(net.modules())) == 15
    if torch is not None:
        tnet = toys(torch).Net()
        assert [n for n, _ in tnet.named_parameters()] == NET_PARAMS
        assert [n for n, _ in tnet.named_buffers()] == NET_BUFFERS
        assert [n for n, _ in tnet.named_modules()] == [n for n, _ in net.named_modules()]


def test_shared_parameters_and_modules_appear_once():
    tied = E.Tied()
    assert [n for n, _ in tied.named_parameters()] == ["enc.weight", "enc.bias", "dec.bias"]
    assert [n for n, _ in tied.named_parameters(remove_duplicate=False)] == [
        "enc.weight", "enc.bias", "dec.weight", "dec.bias"]
    shared = E.Scale(1)
    seq = nn.Sequential(shared, shared)
    assert len(list(seq.modules())) == 2 and len(list(seq.children())) == 1
    assert len(list(seq.modules(remove_duplicate=False))) == 3
    assert [n for n, _ in seq.named_parameters()] == ["0.gain"]
    # state_dict keeps every name (PyTorch's too).
    assert list(tied.state_dict()) == ["enc.weight", "enc.bias", "dec.weight", "dec.bias"]
    if torch is not None:
        assert [n for n, _ in toys(torch).Tied().named_parameters()] == ["enc.weight", "enc.bias", "dec.bias"]


# ---------------------------------------------------------------- state_dict
def test_state_dict_order_metadata_and_detach():
    net = E.Net()
    sd = net.state_dict()
    assert type(sd) is OrderedDict and list(sd) == NET_STATE
    assert not sd["features.0.weight"].requires_grad and type(sd["features.0.weight"]) is ember.Tensor
    assert sd["features.0.weight"].data_ptr() == net.features[0].weight.data_ptr()  # shares memory
    assert sd._metadata[""] == {"version": 1} and sd._metadata["features.1.scale"] == {"version": 1}
    assert list(sd._metadata)[:3] == ["", "features", "features.0"]
    kept = net.state_dict(keep_vars=True)
    assert kept["features.0.weight"] is net.features[0].weight
    dest = {}
    assert net.features[1].state_dict(destination=dest, prefix="p.") is dest
    assert list(dest) == ["p.alpha", "p.fc.weight", "p.fc.bias", "p.scale.gain", "p.scale.running"]
    if torch is not None:
        tsd = toys(torch).Net().state_dict()
        assert list(tsd) == NET_STATE and list(tsd._metadata) == list(sd._metadata)


def test_load_state_dict_copies_into_the_same_tensors():
    src, dst = E.Block(2), E.Block(2)
    with ember.no_grad():
        for p in src.parameters():
            p.mul_(3).add_(1)
        src.scale.running.fill_(7)
    weight = dst.fc.weight
    result = dst.load_state_dict(src.state_dict())
    assert result.missing_keys == [] and result.unexpected_keys == []
    assert repr(result) == "<All keys matched successfully>"
    assert dst.fc.weight is weight  # copied in place
    for (name, a), (_, b) in zip(src.state_dict().items(), dst.state_dict().items()):
        np.testing.assert_array_equal(a.numpy(), b.numpy(), err_msg=name)
    assert dst.scale.scratch.tolist() == [1.0, 1.0]  # non-persistent buffers are not loaded


def test_load_state_dict_assign_takes_the_tensors():
    m = E.Scale(2)
    sd = OrderedDict(gain=ember.tensor([5.0, 6.0]), running=ember.tensor([1.0, 2.0]))
    m.load_state_dict(sd, assign=True)
    assert type(m.gain) is nn.Parameter and m.gain.requires_grad and m.gain.tolist() == [5.0, 6.0]
    assert m.running is sd["running"]
    assert m.gain.data_ptr() == sd["gain"].data_ptr()


def load_errors(lib, make_state):
    module = toys(lib).Block(2)
    with pytest.raises(RuntimeError) as info:
        module.load_state_dict(make_state(lib, module.state_dict()))
    return str(info.value)


def drop_and_add(lib, sd):
    del sd["fc.bias"]
    del sd["scale.running"]
    sd["fc.extra"] = lib.zeros(1)
    sd["nothere.x"] = lib.zeros(1)
    sd["beta"] = lib.zeros(1)
    return sd


def wrong_size(lib, sd):
    sd["fc.weight"] = lib.zeros(3, 2)
    sd["alpha"] = lib.zeros(2)
    return sd


def test_load_state_dict_errors():
    message = load_errors(ember, drop_and_add)
    assert message == (
        'Error(s) in loading state_dict for Block:\n\tMissing key(s) in state_dict: "fc.bias", "scale.running". \n\t'
        'Unexpected key(s) in state_dict: "nothere.x", "beta", "fc.extra". ')
    size = load_errors(ember, wrong_size)
    assert size == ("Error(s) in loading state_dict for Block:\n\t"
                    "size mismatch for alpha: copying a param with shape ember.Size([2]) from checkpoint, the shape "
                    "in current model is ember.Size([]).\n\t"
                    "size mismatch for fc.weight: copying a param with shape ember.Size([3, 2]) from checkpoint, the "
                    "shape in current model is ember.Size([2, 2]).")
    if torch is not None:
        assert as_torch_message(message) == load_errors(torch, drop_and_add)
        assert as_torch_message(size) == load_errors(torch, wrong_size)
    with pytest.raises(TypeError, match="Expected state_dict to be dict-like, got <class 'list'>."):
        E.Scale(1).load_state_dict([])


def test_load_state_dict_not_strict_reports_keys():
    m = E.Block(2)
    sd = drop_and_add(ember, m.state_dict())
    result = m.load_state_dict(sd, strict=False)
    # As PyTorch: the keys are collected whatever `strict` is; the root's own unexpected keys come first.
    assert result.missing_keys == ["fc.bias", "scale.running"]
    assert result.unexpected_keys == ["nothere.x", "beta", "fc.extra"]
    assert repr(result) == ("_IncompatibleKeys(missing_keys=['fc.bias', 'scale.running'], "
                            "unexpected_keys=['nothere.x', 'beta', 'fc.extra'])")
    if torch is not None:
        t = toys(torch).Block(2)
        assert repr(t.load_state_dict(drop_and_add(torch, t.state_dict()), strict=False)) == repr(result)


@needs_torch
def test_a_pytorch_state_dict_loads_and_gives_the_same_outputs():
    tnet, enet = toys(torch).Net(), E.Net()
    with torch.no_grad():
        for p in tnet.parameters():
            p.copy_(torch.randn_like(p))
    enet.load_state_dict({k: to_lib(ember, v) for k, v in tnet.state_dict().items()})
    x = np.random.default_rng(0).standard_normal((5, 3)).astype(np.float32)
    np.testing.assert_allclose(enet(ember.tensor(x)).detach().numpy(), tnet(torch.tensor(x)).detach().numpy(),
                               rtol=1e-5, atol=1e-6)


def test_extra_state_round_trip():
    class WithExtra(nn.Module):
        def __init__(self):
            super().__init__()
            self.value = {"a": 1}

        def get_extra_state(self):
            return self.value

        def set_extra_state(self, state):
            self.value = state

    outer = nn.Sequential(WithExtra())
    sd = outer.state_dict()
    assert list(sd) == ["0._extra_state"] and sd["0._extra_state"] == {"a": 1}
    other = nn.Sequential(WithExtra())
    other.load_state_dict({"0._extra_state": {"b": 2}})
    assert other[0].value == {"b": 2}
    with pytest.raises(RuntimeError, match=r'Missing key\(s\) in state_dict: "0._extra_state"'):
        other.load_state_dict({})
    with pytest.raises(RuntimeError, match=r'Unexpected key\(s\) in state_dict: "0._extra_state"'):
        nn.Sequential(E.MultiLine()).load_state_dict({"0._extra_state": 1})


def test_state_dict_and_load_hooks():
    m = E.Scale(2)
    calls = []
    m.register_state_dict_pre_hook(lambda mod, prefix, keep_vars: calls.append(("pre", prefix, keep_vars)))

    def post(mod, sd, prefix, local_metadata):
        calls.append(("post", prefix, list(sd)))
        sd[prefix + "added"] = 1

    m.register_state_dict_post_hook(post)
    outer = nn.Sequential(m)
    assert list(outer.state_dict()) == ["0.gain", "0.running", "0.added"]
    assert calls == [("pre", "0.", False), ("post", "0.", ["0.gain", "0.running"])]
    m.register_state_dict_post_hook(lambda *a: {})  # must return None
    with pytest.raises(RuntimeError, match="state_dict post-hook must return None"):
        m.state_dict()

    n = E.Scale(2)
    seen = []

    def load_pre(module, state_dict, prefix, local_metadata, strict, missing, unexpected, errors):
        seen.append((module is n, prefix, sorted(state_dict)))
        state_dict[prefix + "running"] = ember.full((2,), 9.0)  # e.g. converting an old format

    def load_post(module, keys):
        seen.append(("post", list(keys.missing_keys)))
        keys.unexpected_keys.clear()

    n.register_load_state_dict_pre_hook(load_pre)
    n.register_load_state_dict_post_hook(load_post)
    result = nn.Sequential(n).load_state_dict({"0.gain": ember.zeros(2), "0.bogus": ember.zeros(1)})
    assert seen == [(True, "0.", ["0.bogus", "0.gain"]), ("post", [])]
    assert result.unexpected_keys == [] and n.running.tolist() == [9.0, 9.0]


# ---------------------------------------------------------------- modes, gradients, conversions
def test_train_eval_requires_grad_and_zero_grad():
    net = E.Net()
    assert net.training and all(m.training for m in net.modules())
    assert net.eval() is net and not any(m.training for m in net.modules())
    net.train()
    assert all(m.training for m in net.modules())
    with pytest.raises(ValueError, match="training mode is expected to be boolean"):
        net.train(1)
    net.features.requires_grad_(False)
    assert [p.requires_grad for p in net.features.parameters()] == [False] * 7
    assert all(p.requires_grad for p in net.heads.parameters())
    out = net(ember.ones(2, 3)).sum()
    out.backward()
    grads = [p.grad for p in net.heads.parameters()]
    assert all(g is not None for g in grads)
    net.zero_grad(set_to_none=False)
    assert all(g.tolist() == ember.zeros_like(g).tolist() for g in grads)
    assert net.heads[0].weight.grad.data_ptr() == grads[0].data_ptr()  # zeroed in place
    net.zero_grad()
    assert all(p.grad is None for p in net.parameters())


def test_forward_missing_and_call():
    with pytest.raises(NotImplementedError, match=r'Module \[MultiLine\] is missing the required "forward" function'):
        E.MultiLine()(1)
    lin = E.TinyLinear(2, 2)
    x = ember.tensor([[1.0, 2.0]])
    expected = x.numpy() @ lin.weight.detach().numpy().T + lin.bias.detach().numpy()
    np.testing.assert_allclose(lin(x).detach().numpy(), expected, rtol=1e-6)


def test_apply_and_to_dtype_convert_parameters_and_grads():
    net = E.Block(2)
    visited = []
    assert net.apply(lambda m: visited.append(type(m).__name__)) is net
    assert visited == ["TinyLinear", "Scale", "Block"]
    weight = net.fc.weight
    net(ember.ones(1, 2)).sum().backward()
    before = weight.detach().numpy().copy()
    assert net.to(ember.float64) is net
    assert net.fc.weight is weight  # same Parameter object, new data
    assert weight.dtype == ember.float64 and weight.grad.dtype == ember.float64 and weight.requires_grad
    np.testing.assert_array_equal(weight.detach().numpy(), before)
    assert net.scale.running.dtype == ember.float64
    net.half()
    assert weight.dtype == ember.float16 and weight.grad.dtype == ember.float16
    net.float()
    assert {p.dtype for p in net.parameters()} == {ember.float32}
    net.double().bfloat16()
    assert weight.dtype == ember.bfloat16
    net.to(dtype=ember.float32, device="cpu").cpu()
    assert weight.dtype == ember.float32
    # Integer tensors keep their dtype; the dtype must be floating.
    counted = E.Net()
    counted.to(ember.float64)
    assert counted.step.dtype == ember.int64
    with pytest.raises(TypeError, match="nn.Module.to only accepts floating point or complex dtypes, but got desired "
                                        "dtype=ember.int32"):
        counted.to(ember.int32)
    counted.to(ember.zeros(1, dtype=ember.float32))
    assert counted.features[0].weight.dtype == ember.float32
    counted.type(ember.float64)
    assert counted.step.dtype == ember.float64  # type() converts everything, as PyTorch
    with pytest.raises(TypeError, match="to\\(\\) received an invalid combination of arguments"):
        counted.to(1.5)


# ---------------------------------------------------------------- repr and dir
def test_repr_nested():
    expected = """Net(
  (features): Sequential(
    (0): TinyLinear(in_features=3, out_features=4, bias=True)
    (1): Block(
      (fc): TinyLinear(in_features=4, out_features=4, bias=True)
      (scale): Scale()
    )
    (2): Scale()
  )
  (heads): ModuleList(
    (0-1): 2 x TinyLinear(in_features=4, out_features=2, bias=True)
    (2): TinyLinear(in_features=4, out_features=2, bias=False)
  )
  (by_name): ModuleDict(
    (b): Scale()
    (a): MultiLine(
      first line
      second line
    )
  )
  (empty): Sequential()
)"""
    assert repr(E.Net()) == expected
    if torch is not None:
        assert repr(toys(torch).Net()) == expected
    assert repr(nn.Module()) == "Module()"


def test_dir_lists_members():
    m = E.Block(2)
    names = dir(m)
    assert {"alpha", "fc", "scale", "forward", "training", "state_dict"} <= set(names)
    assert names == sorted(names)
    assert "running" in dir(m.scale)


# ---------------------------------------------------------------- forward hooks
def test_forward_hooks_order_arguments_and_results():
    m = E.Scale(2)
    calls = []
    m.register_forward_pre_hook(lambda mod, args: calls.append(("pre", mod is m, len(args))))
    m.register_forward_pre_hook(lambda mod, args: (args[0] * 10,))
    m.register_forward_pre_hook(lambda mod, args: calls.append("first"), prepend=True)
    m.register_forward_hook(lambda mod, args, out: calls.append(("post", args[0].tolist(), out.tolist())))
    h = m.register_forward_hook(lambda mod, args, out: out + 1)
    out = m(ember.tensor([1.0, 2.0]))
    assert calls == ["first", ("pre", True, 1), ("post", [10.0, 20.0], [20.0, 40.0])]
    assert out.tolist() == [21.0, 41.0]
    h.remove()
    assert m(ember.tensor([1.0, 2.0])).tolist() == [20.0, 40.0]


def test_forward_hooks_with_kwargs():
    class KW(nn.Module):
        def forward(self, x, *, scale=1.0):
            return x * scale

    m = KW()
    m.register_forward_pre_hook(lambda mod, args, kwargs: (args, {"scale": kwargs["scale"] * 2}), with_kwargs=True)
    seen = []
    m.register_forward_hook(lambda mod, args, kwargs, out: seen.append(dict(kwargs)), with_kwargs=True)
    assert m(ember.tensor([1.0]), scale=3.0).tolist() == [6.0]
    assert seen == [{"scale": 6.0}]
    m.register_forward_pre_hook(lambda mod, args, kwargs: 5, with_kwargs=True)
    with pytest.raises(RuntimeError, match="forward pre-hook must return None or a tuple of"):
        m(ember.tensor([1.0]), scale=1.0)


def test_always_call_forward_hook_runs_when_forward_raises():
    class Boom(nn.Module):
        def forward(self, x):
            raise ValueError("boom")

    m = Boom()
    seen = []
    m.register_forward_hook(lambda mod, args, out: seen.append("normal"))
    m.register_forward_hook(lambda mod, args, out: seen.append(("always", out)), always_call=True)
    with pytest.raises(ValueError, match="boom"):
        m(ember.zeros(1))
    assert seen == [("always", None)]


def test_global_forward_hooks():
    from ember.nn.modules import module as module_module

    seen = []
    h1 = module_module.register_module_forward_pre_hook(lambda mod, args: seen.append(("gpre", type(mod).__name__)))
    h2 = module_module.register_module_forward_hook(lambda mod, args, out: seen.append(("gpost", type(mod).__name__)))
    try:
        m = E.Scale(1)
        m.register_forward_pre_hook(lambda mod, args: seen.append(("pre", "own")))
        m(ember.ones(1))
    finally:
        h1.remove()
        h2.remove()
    assert seen == [("gpre", "Scale"), ("pre", "own"), ("gpost", "Scale")]
    m(ember.ones(1))
    assert len(seen) == 4


# ---------------------------------------------------------------- backward hooks
def hooked_grads(lib, inputs, pre_scale=None):
    """Runs TwoInTwoOut with full backward hooks; returns what the hooks saw and the input grads."""
    m = toys(lib).TwoInTwoOut()
    seen = {}

    def pre(module, grad_output):
        seen["pre"] = [None if g is None else g.detach().numpy().copy() for g in grad_output]
        if pre_scale is not None:
            return tuple(None if g is None else g * pre_scale for g in grad_output)

    def hook(module, grad_input, grad_output):
        seen["in"] = [None if g is None else g.detach().numpy().copy() for g in grad_input]
        seen["out"] = [None if g is None else g.detach().numpy().copy() for g in grad_output]
        return (grad_input[0] * 2, None, grad_input[2])

    m.register_full_backward_pre_hook(pre)
    m.register_full_backward_hook(hook)
    a, b = (lib.tensor(v, requires_grad=True) for v in inputs)
    y, z = m(a, 3.0, b)
    (y * y).sum().backward(retain_graph=True)
    z.sum().backward()
    return seen, a.grad.numpy(), b.grad.numpy()


def test_full_backward_hooks_see_and_replace_gradients():
    av = np.array([0.5, -1.0], dtype=np.float32)
    bv = np.array([2.0, 0.25], dtype=np.float32)
    seen, ga, gb = hooked_grads(ember, (av, bv), pre_scale=0.5)
    # Last backward: z = exp(a + b) alone; grad_output of y is None, of z ones.
    assert seen["pre"][0] is None and seen["pre"][1].tolist() == [1.0, 1.0]
    ez = np.exp(av + bv)
    np.testing.assert_allclose(seen["out"][1], 0.5 * np.ones(2), rtol=1e-6)  # the pre hook's replacement
    np.testing.assert_allclose(seen["in"][0], 0.5 * ez, rtol=1e-6)
    assert seen["in"][1] is None  # the non-tensor input
    np.testing.assert_allclose(seen["in"][2], 0.5 * ez, rtol=1e-6)
    # Accumulated: first backward y^2 (y = 3ab) then z, each with the pre hook's 0.5 and the hook's x2 on a.
    y = 3 * av * bv
    np.testing.assert_allclose(ga, 2 * (0.5 * 2 * y * 3 * bv) + 2 * (0.5 * ez), rtol=1e-5)
    np.testing.assert_allclose(gb, 0.5 * 2 * y * 3 * av + 0.5 * ez, rtol=1e-5)
    if torch is not None:
        tseen, tga, tgb = hooked_grads(torch, (av, bv), pre_scale=0.5)
        np.testing.assert_allclose(ga, tga, rtol=1e-6)
        np.testing.assert_allclose(gb, tgb, rtol=1e-6)
        for key in ("pre", "in", "out"):
            for mine, theirs in zip(seen[key], tseen[key]):
                assert (mine is None) == (theirs is None)
                if mine is not None:
                    np.testing.assert_allclose(mine, theirs, rtol=1e-6)


def test_full_backward_hook_on_a_layer_with_parameters():
    def run(lib):
        lin = toys(lib).TinyLinear(3, 2)
        seen = []
        lin.register_full_backward_hook(
            lambda mod, gin, gout: seen.append((gin[0].detach().numpy().copy(), gout[0].detach().numpy().copy())))
        x = lib.tensor(np.array([[1.0, 2.0, 3.0]], dtype=np.float32), requires_grad=True)
        (lin(x) * lib.tensor([[1.0, -2.0]])).sum().backward()
        return seen, lin.weight.grad.numpy()

    seen, wgrad = run(ember)
    gin, gout = seen[0]
    np.testing.assert_allclose(gout, [[1.0, -2.0]])
    np.testing.assert_allclose(gin, gout @ E.TinyLinear(3, 2).weight.detach().numpy(), rtol=1e-6)
    np.testing.assert_allclose(wgrad, gout.T @ np.array([[1.0, 2.0, 3.0]]), rtol=1e-6)
    if torch is not None:
        tseen, twgrad = run(torch)
        np.testing.assert_allclose(gin, tseen[0][0], rtol=1e-6)
        np.testing.assert_allclose(wgrad, twgrad, rtol=1e-6)


def test_backward_hook_kinds_do_not_mix_and_handles_remove():
    m = E.Scale(2)
    h = m.register_full_backward_hook(lambda *a: None)
    with pytest.raises(RuntimeError, match="Cannot use both regular backward hooks and full backward hooks"):
        m.register_backward_hook(lambda *a: None)
    h.remove()
    assert not m._backward_hooks


def test_full_backward_hook_when_no_input_requires_grad():
    m = E.Scale(2)
    seen = []
    m.register_full_backward_hook(lambda mod, gin, gout: seen.append((gin, gout[0].tolist())))
    with pytest.warns(UserWarning, match="Full backward hook is firing when gradients are computed with respect to "
                                         "module outputs"):
        m(ember.ones(2)).sum().backward()
    assert seen == [((None,), [1.0, 1.0])]
    assert m.gain.grad.tolist() == [1.0, 1.0]


# ---------------------------------------------------------------- copies and pickling
def test_deepcopy_and_pickle_a_whole_module():
    net = E.Tied()
    for clone in (copy.deepcopy(net), pickle.loads(pickle.dumps(net))):
        assert type(clone) is type(net) and repr(clone) == repr(net)
        assert clone.dec.weight is clone.enc.weight  # still tied
        assert clone.enc.weight is not net.enc.weight
        assert type(clone.enc.weight) is nn.Parameter and clone.enc.weight.requires_grad
        assert list(clone.state_dict()) == list(net.state_dict())
        for a, b in zip(clone.state_dict().values(), net.state_dict().values()):
            np.testing.assert_array_equal(a.numpy(), b.numpy())
        with ember.no_grad():
            clone.enc.weight.zero_()
        assert net.enc.weight.abs().sum().item() > 0
        x = ember.ones(1, 3)
        assert clone(x).shape == (1, 3)
    hooked = E.Scale(1)
    hooked.register_forward_hook(lambda mod, args, out: out * 3)  # hooks are attributes: a deep copy keeps them
    assert copy.deepcopy(hooked)(ember.ones(1)).tolist() == [6.0]
    saved = pickle.loads(pickle.dumps(E.Net()))
    assert list(saved.state_dict()) == NET_STATE and "scratch" in saved.features[2]._non_persistent_buffers_set
