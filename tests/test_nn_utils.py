"""ember.nn.utils (issue 12): clip_grad_norm_/clip_grad_value_/get_total_norm/clip_grads_with_norm_ and
parameters_to_vector/vector_to_parameters against hand-computed norms (NumPy) and, when installed, PyTorch."""
import math
import warnings

import numpy as np
import pytest

import ember
from ember.nn.utils import (
    clip_grad_norm, clip_grad_norm_, clip_grad_value_, clip_grads_with_norm_, get_total_norm,
    parameters_to_vector, vector_to_parameters,
)

try:
    import torch
except ImportError:
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch not installed")
SHAPES = [(3, 4), (5,), (2, 1, 3), ()]


def make_params(shapes=SHAPES, seed=0, scale=1.0, dtype=np.float32):
    """Leaf tensors with .grad set (NumPy copies of the grads returned too)."""
    rng = np.random.default_rng(seed)
    params, grads = [], []
    for shape in shapes:
        p = ember.from_numpy(np.array(rng.standard_normal(shape), dtype)).requires_grad_()
        g = np.array(rng.standard_normal(shape) * scale, dtype)
        p.grad = ember.from_numpy(g.copy())
        params.append(p)
        grads.append(g)
    return params, grads


def np_norm(x, norm_type):
    x = np.abs(x.astype(np.float64).ravel())
    if norm_type == math.inf:
        return x.max()
    if norm_type == -math.inf:
        return x.min()
    if norm_type == 0:
        return float(np.count_nonzero(x))
    return (x ** norm_type).sum() ** (1 / norm_type)


def np_total_norm(grads, norm_type):
    """The norm of the per-tensor norms (for p-norms the norm of all elements as one vector; for
    norm_type 0 the number of tensors with a non-zero element, as PyTorch computes it)."""
    return np_norm(np.array([np_norm(g, norm_type) for g in grads]), norm_type)


@pytest.mark.parametrize("norm_type", [2.0, 1, 3.5, math.inf, "inf", 0])
@pytest.mark.parametrize("max_norm", [0.5, 1e3])
def test_clip_grad_norm_matches_hand_computed(norm_type, max_norm):
    params, grads = make_params()
    nt = float(norm_type)
    expected = np_total_norm(grads, nt)
    total = clip_grad_norm_(params, max_norm, norm_type=nt)
    assert isinstance(total, ember.Tensor) and total.dim() == 0 and total.dtype == ember.float32
    np.testing.assert_allclose(total.item(), expected, rtol=1e-5)
    coef = min(max_norm / (expected + 1e-6), 1.0)
    for p, g in zip(params, grads):
        np.testing.assert_allclose(p.grad.numpy(), g * coef, rtol=1e-5, atol=1e-7)
    if max_norm < expected and nt != 0:  # clipped: the new norm is max_norm (to the 1e-6 guard; 0 is scale-free)
        np.testing.assert_allclose(np_total_norm([p.grad.numpy() for p in params], nt), max_norm, rtol=1e-5)


def test_clip_grad_norm_single_tensor_generator_and_missing_grads():
    params, grads = make_params()
    total = clip_grad_norm_(params[0], 1.0)
    np.testing.assert_allclose(total.item(), np.linalg.norm(grads[0]), rtol=1e-6)
    params, grads = make_params()
    params[1].grad = None  # a parameter without a gradient is skipped
    total = clip_grad_norm_((p for p in params), 0.1)
    kept = [g for i, g in enumerate(grads) if i != 1]
    np.testing.assert_allclose(total.item(), np_total_norm(kept, 2.0), rtol=1e-6)
    assert params[1].grad is None
    np.testing.assert_allclose(np_total_norm([params[i].grad.numpy() for i in (0, 2, 3)], 2.0), 0.1, rtol=1e-5)


def test_clip_grad_norm_empty_inputs():
    assert clip_grad_norm_([], 1.0).item() == 0.0
    with pytest.warns(UserWarning, match="`parameters` is an empty generator, no gradient clipping will occur."):
        total = clip_grad_norm_((p for p in []), 1.0)
    assert total.item() == 0.0
    params, _ = make_params()
    for p in params:
        p.grad = None
    assert clip_grad_norm_(params, 1.0).item() == 0.0


def test_clip_grad_norm_foreach_and_no_grad_graph():
    for foreach in (None, True, False):
        params, grads = make_params()
        total = clip_grad_norm_(params, 1.0, foreach=foreach)
        np.testing.assert_allclose(total.item(), np_total_norm(grads, 2.0), rtol=1e-6)
        assert total.grad_fn is None and not total.requires_grad


@pytest.mark.parametrize("bad", [math.nan, math.inf])
def test_clip_grad_norm_nonfinite(bad):
    params, grads = make_params()
    params[0].grad[0, 0] = bad
    msg = ("The total norm of order 2.0 for gradients from `parameters` is non-finite, so it cannot be clipped. "
           "To disable this error and scale the gradients by the non-finite norm anyway, "
           "set `error_if_nonfinite=False`")
    with pytest.raises(RuntimeError) as err:
        clip_grad_norm_(params, 1.0, error_if_nonfinite=True)
    assert str(err.value) == msg
    np.testing.assert_array_equal(params[1].grad.numpy(), grads[1])  # nothing scaled before the error
    total = clip_grad_norm_(params, 1.0)  # without the check the grads are scaled by the non-finite norm
    assert not math.isfinite(total.item())
    if bad == math.inf:  # coef = 1 / inf = 0
        np.testing.assert_array_equal(params[1].grad.numpy(), np.zeros_like(grads[1]))


def test_clip_grad_norm_float64_and_mixed_dtypes():
    params, grads = make_params(dtype=np.float64)
    total = clip_grad_norm_(params, 0.5)
    assert total.dtype == ember.float64
    np.testing.assert_allclose(total.item(), np_total_norm(grads, 2.0), rtol=1e-12)
    p32, g32 = make_params(SHAPES[:2], seed=1)
    p64, g64 = make_params(SHAPES[2:], seed=2, dtype=np.float64)
    total = get_total_norm([p.grad for p in p32 + p64])
    np.testing.assert_allclose(total.item(), np_total_norm(g32 + g64, 2.0), rtol=1e-6)


def test_deprecated_clip_grad_norm_warns():
    params, grads = make_params()
    with pytest.warns(FutureWarning, match="clip_grad_norm` is now deprecated"):
        total = clip_grad_norm(params, 0.5)
    np.testing.assert_allclose(total.item(), np_total_norm(grads, 2.0), rtol=1e-6)


def test_get_total_norm_then_clip_grads_with_norm():
    params, grads = make_params(scale=3.0)
    total = get_total_norm([p.grad for p in params], norm_type=1.0)
    np.testing.assert_allclose(total.item(), np_total_norm(grads, 1.0), rtol=1e-5)
    assert clip_grads_with_norm_(params, 2.0, total) is None
    coef = 2.0 / (np_total_norm(grads, 1.0) + 1e-6)
    for p, g in zip(params, grads):
        np.testing.assert_allclose(p.grad.numpy(), g * coef, rtol=1e-5)
    assert get_total_norm([]).item() == 0.0
    single = ember.tensor([3.0, -4.0])
    assert get_total_norm(single).item() == 5.0
    assert get_total_norm(single, norm_type=math.inf).item() == 4.0
    with pytest.raises(RuntimeError, match="non-finite"):
        get_total_norm([ember.tensor([math.nan])], error_if_nonfinite=True)


@pytest.mark.parametrize("foreach", [None, True, False])
def test_clip_grad_value(foreach):
    params, grads = make_params(scale=2.0)
    params[2].grad = None
    assert clip_grad_value_(params, 0.75, foreach=foreach) is None
    for i, (p, g) in enumerate(zip(params, grads)):
        if i == 2:
            assert p.grad is None
        else:
            np.testing.assert_array_equal(p.grad.numpy(), np.clip(g, -0.75, 0.75))
    t = ember.tensor([-3.0, 0.5, 3.0], requires_grad=True)
    t.grad = ember.tensor([-3.0, 0.5, 3.0])
    clip_grad_value_(t, 1)
    assert t.grad.tolist() == [-1.0, 0.5, 1.0]


def test_parameters_to_vector_and_back():
    params, _ = make_params([(2, 3), (4,), (1, 2)])
    vec = parameters_to_vector(params)
    expected = np.concatenate([p.detach().numpy().ravel() for p in params])
    np.testing.assert_array_equal(vec.detach().numpy(), expected)
    assert vec.requires_grad  # differentiable, as torch.cat of views
    vec.sum().backward()
    new = ember.arange(12, dtype=ember.float32)
    vector_to_parameters(new, params)
    assert [tuple(p.shape) for p in params] == [(2, 3), (4,), (1, 2)]
    np.testing.assert_array_equal(params[0].detach().numpy(), np.arange(6).reshape(2, 3))
    np.testing.assert_array_equal(params[1].detach().numpy(), [6, 7, 8, 9])
    np.testing.assert_array_equal(params[2].detach().numpy(), [[10, 11]])
    assert params[0].requires_grad and params[0].is_leaf
    new[0] = 100.0  # the parameters view the vector, as PyTorch's
    assert params[0][0, 0].item() == 100.0
    with pytest.raises(TypeError, match="^expected torch.Tensor, but got: list$"):
        vector_to_parameters([1.0, 2.0], params)
    with pytest.raises(TypeError, match="^expected torch.Tensor, but got: numpy.ndarray$"):
        vector_to_parameters(np.zeros(12), params)


@needs_torch
@pytest.mark.parametrize("norm_type", [2.0, 1.0, 0.5, 0, math.inf, -math.inf])
def test_clip_grad_norm_matches_torch(norm_type):
    params, grads = make_params(scale=4.0, seed=3)
    tparams = []
    for p, g in zip(params, grads):
        tp = torch.from_numpy(p.detach().numpy().copy()).requires_grad_()
        tp.grad = torch.from_numpy(g.copy())
        tparams.append(tp)
    total = clip_grad_norm_(params, 1.5, norm_type=norm_type)
    ttotal = torch.nn.utils.clip_grad_norm_(tparams, 1.5, norm_type=norm_type)
    np.testing.assert_allclose(total.item(), ttotal.item(), rtol=1e-6)
    for p, tp in zip(params, tparams):
        np.testing.assert_allclose(p.grad.numpy(), tp.grad.numpy(), rtol=1e-6, atol=1e-7)
    clip_grad_value_(params, 0.01)
    torch.nn.utils.clip_grad_value_(tparams, 0.01)
    for p, tp in zip(params, tparams):
        np.testing.assert_allclose(p.grad.numpy(), tp.grad.numpy(), rtol=1e-6, atol=1e-7)
        assert np.abs(p.grad.numpy()).max() <= 0.01


@needs_torch
def test_nonfinite_message_matches_torch():
    t = torch.tensor([1.0], requires_grad=True)
    t.grad = torch.tensor([math.inf])
    e = ember.tensor([1.0], requires_grad=True)
    e.grad = ember.tensor([math.inf])
    for norm_type in (2, math.inf, 1.5):
        with pytest.raises(RuntimeError) as terr:
            torch.nn.utils.clip_grad_norm_(t, 1.0, norm_type, error_if_nonfinite=True)
        with pytest.raises(RuntimeError) as eerr:
            clip_grad_norm_(e, 1.0, norm_type, error_if_nonfinite=True)
        assert str(eerr.value) == str(terr.value)


@needs_torch
def test_public_names_match_torch():
    import ember.nn.utils as eu
    for name in ("clip_grad_norm", "clip_grad_norm_", "clip_grads_with_norm_", "clip_grad_value_", "get_total_norm",
                 "parameters_to_vector", "vector_to_parameters"):
        assert name in torch.nn.utils.__all__ and name in eu.__all__ and hasattr(eu, name)
    import inspect
    for name in eu.__all__:
        assert name in torch.nn.utils.__all__, name
        if inspect.ismodule(getattr(eu, name)):  # rnn: a submodule in both lists
            continue
        assert inspect.signature(getattr(eu, name)).parameters.keys() == \
            inspect.signature(getattr(torch.nn.utils, name)).parameters.keys(), name


def test_weight_norm_recomputes_weight_and_removes():
    from ember.nn.utils import remove_weight_norm, weight_norm
    ember.manual_seed(0)
    lin = ember.nn.Linear(4, 3)
    w0 = lin.weight.detach().numpy().copy()
    with pytest.warns(FutureWarning, match="`torch.nn.utils.weight_norm` is deprecated"):
        assert weight_norm(lin) is lin
    assert [n for n, _ in lin.named_parameters()] == ["bias", "weight_g", "weight_v"]
    assert tuple(lin.weight_g.shape) == (3, 1) and tuple(lin.weight_v.shape) == (3, 4)
    np.testing.assert_allclose(lin.weight_g.detach().numpy(), np.linalg.norm(w0, axis=1, keepdims=True), rtol=1e-6)
    np.testing.assert_allclose(lin.weight.detach().numpy(), w0, rtol=1e-6)
    with ember.no_grad():
        lin.weight_g.mul_(2.0)
    x = ember.randn(2, 4)
    out = lin(x)  # the pre-hook recomputes weight = g * v / ||v||
    np.testing.assert_allclose(out.detach().numpy(), x.numpy() @ (2 * w0).T + lin.bias.detach().numpy(),
                               rtol=1e-5, atol=1e-6)
    out.sum().backward()
    assert lin.weight_g.grad is not None and lin.weight_v.grad is not None
    with pytest.raises(RuntimeError, match="Cannot register two weight_norm hooks on the same parameter weight"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            weight_norm(lin)
    remove_weight_norm(lin)
    assert [n for n, _ in lin.named_parameters()] == ["bias", "weight"]
    np.testing.assert_allclose(lin.weight.detach().numpy(), 2 * w0, rtol=1e-5)
    with pytest.raises(ValueError, match="weight_norm of 'weight' not found in Linear"):
        remove_weight_norm(lin)


@needs_torch
@pytest.mark.parametrize("dim", [0, 1, None, -2])
def test_weight_norm_matches_torch(dim):
    from ember.nn.utils import weight_norm
    rng = np.random.default_rng(5)
    w = rng.standard_normal((3, 2, 4)).astype(np.float32)
    t_conv = torch.nn.Conv1d(2, 3, 4)
    e_conv = ember.nn.Conv1d(2, 3, 4)
    with torch.no_grad():
        t_conv.weight.copy_(torch.from_numpy(w))
    e_conv.load_state_dict({k: ember.from_numpy(v.detach().numpy().copy()) for k, v in t_conv.state_dict().items()})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.nn.utils.weight_norm(t_conv, dim=dim)
        weight_norm(e_conv, dim=dim)
    assert list(e_conv.state_dict()) == list(t_conv.state_dict())
    np.testing.assert_allclose(e_conv.weight_g.detach().numpy(), t_conv.weight_g.detach().numpy(), rtol=1e-6)
    x = rng.standard_normal((2, 2, 7)).astype(np.float32)
    e_out, t_out = e_conv(ember.from_numpy(x)), t_conv(torch.from_numpy(x))
    np.testing.assert_allclose(e_out.detach().numpy(), t_out.detach().numpy(), rtol=1e-5, atol=1e-6)
    e_out.sum().backward()
    t_out.sum().backward()
    for name in ("weight_g", "weight_v", "bias"):
        np.testing.assert_allclose(getattr(e_conv, name).grad.numpy(), getattr(t_conv, name).grad.numpy(),
                                   rtol=1e-4, atol=1e-5)


def test_spectral_norm_divides_by_the_largest_singular_value():
    from ember.nn.utils import remove_spectral_norm, spectral_norm
    ember.manual_seed(0)
    lin = ember.nn.Linear(5, 4)
    w = lin.weight.detach().numpy().copy()
    assert spectral_norm(lin) is lin
    assert [n for n, _ in lin.named_parameters()] == ["bias", "weight_orig"]
    assert [n for n, _ in lin.named_buffers()] == ["weight_u", "weight_v"]
    assert list(lin.state_dict()) == ["bias", "weight_orig", "weight_u", "weight_v"]
    x = ember.randn(3, 5)
    for _ in range(30):  # power iteration converges on the top singular pair
        out = lin(x)
    sigma = np.linalg.svd(w, compute_uv=False)[0]
    np.testing.assert_allclose(lin.weight.detach().numpy(), w / sigma, rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(out.detach().numpy(), x.numpy() @ (w / sigma).T + lin.bias.detach().numpy(),
                               rtol=1e-4, atol=1e-5)
    u = lin.weight_u.numpy().copy()
    lin.eval()  # no iteration in eval mode: the buffers stay
    lin(x)
    np.testing.assert_array_equal(lin.weight_u.numpy(), u)
    out = lin(x)
    out.sum().backward()
    assert lin.weight_orig.grad is not None
    with pytest.raises(RuntimeError, match="Cannot register two spectral_norm hooks on the same parameter weight"):
        spectral_norm(lin)
    with pytest.raises(ValueError, match="Expected n_power_iterations to be positive, but got n_power_iterations=0"):
        spectral_norm(ember.nn.Linear(2, 2), n_power_iterations=0)
    remove_spectral_norm(lin)
    assert [n for n, _ in lin.named_parameters()] == ["bias", "weight"]
    assert list(lin.state_dict()) == ["bias", "weight"] and not lin._load_state_dict_pre_hooks
    np.testing.assert_allclose(lin.weight.detach().numpy(), w / sigma, rtol=1e-4, atol=1e-6)
    with pytest.raises(ValueError, match="spectral_norm of 'weight' not found in Linear"):
        remove_spectral_norm(lin)


@needs_torch
@pytest.mark.parametrize("module", ["Linear", "Conv2d", "ConvTranspose2d"])
def test_spectral_norm_matches_torch(module):
    from ember.nn.utils import spectral_norm
    args = (6, 4) if module == "Linear" else (3, 4, 3)
    t_mod = torch.nn.utils.spectral_norm(getattr(torch.nn, module)(*args), n_power_iterations=2)
    e_mod = spectral_norm(getattr(ember.nn, module)(*args), n_power_iterations=2)
    assert list(e_mod.state_dict()) == list(t_mod.state_dict())
    e_mod.load_state_dict({k: ember.from_numpy(v.detach().numpy().copy()) for k, v in t_mod.state_dict().items()})
    rng = np.random.default_rng(6)
    shape = (3, 6) if module == "Linear" else (2, 3, 5, 5)
    for step in range(3):  # each training forward moves u and v by two iterations
        x = rng.standard_normal(shape).astype(np.float32)
        e_out, t_out = e_mod(ember.from_numpy(x)), t_mod(torch.from_numpy(x))
        np.testing.assert_allclose(e_out.detach().numpy(), t_out.detach().numpy(), rtol=1e-4, atol=1e-5)
        for buf in ("weight_u", "weight_v"):
            np.testing.assert_allclose(getattr(e_mod, buf).numpy(), getattr(t_mod, buf).numpy(), rtol=1e-4,
                                       atol=1e-6)
    e_out.sum().backward()
    t_out.sum().backward()
    np.testing.assert_allclose(e_mod.weight_orig.grad.numpy(), t_mod.weight_orig.grad.numpy(), rtol=1e-4, atol=1e-5)
    # A version-0 checkpoint (weight and weight_u, no weight_v) loads as PyTorch's does: v solved so that
    # u^T W v is the checkpoint's sigma, so the eval-mode weight is the checkpoint's weight.
    old = {k: v for k, v in t_mod.state_dict().items() if k != "weight_v"}
    old["weight"] = t_mod.weight.detach()
    e_mod.load_state_dict({k: ember.from_numpy(v.detach().numpy().copy()) for k, v in old.items()})
    e_mod.eval()
    e_mod(ember.from_numpy(rng.standard_normal(shape).astype(np.float32)))  # the hook recomputes the weight
    np.testing.assert_allclose(e_mod.weight.detach().numpy(), old["weight"].numpy(), rtol=1e-3, atol=1e-4)
