"""The layer modules of issue 12 (linear, conv, pooling, upsampling, pixel shuffle, padding, fold,
distance, flatten, channel shuffle): with torch, each module built in both libraries with torch's
weights loaded into ember's, then forward outputs, input and parameter gradients, reprs and
state_dict keys compared; without torch, outputs against NumPy and the functionals, shapes, reprs
and the reset_parameters distributions. Also the functionals the modules added (linear, bilinear,
conv3d, channel_shuffle) and PyTorch's errors."""
import math

import numpy as np
import pytest

import ember
import ember.nn as nn
import ember.nn.functional as F

try:
    import torch
except ImportError:  # the torch comparisons are skipped without it
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="needs torch")


def values(shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def et(a, requires_grad=False):
    return ember.tensor(np.asarray(a), requires_grad=requires_grad)


def as_numpy(t):
    return t.detach().numpy() if t is not None else None


# (module name, constructor args, constructor kwargs, input shapes)
CASES = [
    ("Linear", (5, 3), {}, [(4, 5)]),
    ("Linear", (5, 3), {"bias": False}, [(2, 7, 5)]),
    ("Linear", (5, 3), {}, [(5,)]),
    ("Bilinear", (4, 3, 5), {}, [(6, 4), (6, 3)]),
    ("Bilinear", (4, 3, 2), {"bias": False}, [(2, 3, 4), (2, 3, 3)]),
    ("Bilinear", (2, 3, 4), {}, [(2,), (3,)]),
    ("Identity", (3, "ignored"), {"also": 1}, [(2, 3)]),
    ("Flatten", (), {}, [(2, 3, 4, 5)]),
    ("Flatten", (0, 2), {}, [(2, 3, 4, 5)]),
    ("Unflatten", (1, (3, 4)), {}, [(2, 12, 5)]),
    ("Unflatten", (-1, [2, -1]), {}, [(3, 8)]),
    ("Conv1d", (4, 6, 3), {}, [(2, 4, 10)]),
    ("Conv1d", (4, 6, 3), {"stride": 2, "padding": 1, "dilation": 2, "groups": 2, "bias": False}, [(2, 4, 11)]),
    ("Conv1d", (4, 6, 4), {"padding": "same", "padding_mode": "reflect"}, [(2, 4, 9)]),
    ("Conv1d", (4, 6, 3), {"padding": 2, "padding_mode": "circular"}, [(4, 9)]),
    ("Conv2d", (3, 4, 3), {}, [(2, 3, 7, 8)]),
    ("Conv2d", (4, 6, (2, 3)), {"stride": (2, 1), "padding": (1, 2), "dilation": (1, 2), "groups": 2},
     [(2, 4, 9, 10)]),
    ("Conv2d", (3, 4, 3), {"padding": "same", "dilation": 2, "padding_mode": "replicate"}, [(2, 3, 7, 8)]),
    ("Conv2d", (3, 4, 3), {"padding": "valid", "bias": False}, [(3, 6, 5)]),
    ("Conv2d", (3, 4, 3), {"padding": (1, 2), "padding_mode": "reflect"}, [(2, 3, 5, 6)]),
    ("Conv2d", (3, 4, 4), {"padding": "same"}, [(2, 3, 6, 7)]),
    ("Conv2d", (4, 4, 3), {"padding": 1, "groups": 4, "padding_mode": "circular"}, [(1, 4, 5, 5)]),
    ("Conv3d", (2, 4, 3), {}, [(2, 2, 5, 6, 7)]),
    ("Conv3d", (4, 6, (2, 3, 1)), {"stride": (2, 1, 2), "padding": (1, 0, 1), "dilation": (2, 1, 1), "groups": 2},
     [(1, 4, 7, 6, 5)]),
    ("Conv3d", (2, 3, 3), {"padding": "same", "padding_mode": "circular"}, [(2, 4, 5, 6)]),
    ("Conv3d", (2, 3, 2), {"padding": "same", "bias": False}, [(1, 2, 4, 5, 3)]),
    ("Conv3d", (3, 2, (1, 2, 3)), {"padding": 1, "padding_mode": "replicate"}, [(2, 3, 3, 4, 5)]),
    ("ConvTranspose1d", (4, 6, 3), {"stride": 2, "padding": 1, "output_padding": 1, "groups": 2}, [(2, 4, 7)]),
    ("ConvTranspose1d", (3, 2, 4), {"dilation": 2, "bias": False}, [(3, 5)]),
    ("ConvTranspose2d", (3, 4, (3, 2)), {"stride": (2, 3), "padding": (1, 0), "dilation": (1, 2), "bias": False},
     [(2, 3, 5, 6)]),
    ("ConvTranspose2d", (4, 2, 3), {"stride": 2, "output_padding": 1, "groups": 2}, [(1, 4, 3, 4)]),
    ("ConvTranspose3d", (4, 2, (2, 3, 2)), {"stride": (2, 1, 3), "padding": (1, 0, 1), "output_padding": (1, 0, 2),
                                            "groups": 2}, [(2, 4, 3, 4, 3)]),
    ("ConvTranspose3d", (3, 2, 2), {"dilation": (2, 1, 1), "bias": False}, [(3, 2, 3, 2)]),
    ("MaxPool1d", (3,), {"stride": 2, "padding": 1, "ceil_mode": True}, [(2, 3, 10)]),
    ("MaxPool1d", (2,), {"dilation": 2}, [(3, 9)]),
    ("MaxPool2d", ((3, 2),), {"stride": (2, 1), "padding": (1, 0)}, [(2, 3, 8, 7)]),
    ("MaxPool2d", (2,), {"return_indices": True}, [(2, 3, 6, 8)]),
    ("AvgPool1d", (3,), {"stride": 2, "padding": 1, "count_include_pad": False}, [(2, 3, 10)]),
    ("AvgPool1d", (4,), {"ceil_mode": True}, [(3, 10)]),
    ("AvgPool2d", (3,), {"stride": 2, "padding": 1, "ceil_mode": True, "divisor_override": 2}, [(2, 3, 8, 9)]),
    ("AvgPool2d", ((2, 3),), {"count_include_pad": False, "padding": (1, 1)}, [(2, 6, 7)]),
    ("AdaptiveAvgPool1d", (4,), {}, [(2, 3, 10)]),
    ("AdaptiveAvgPool2d", ((3, None),), {}, [(2, 3, 7, 5)]),
    ("AdaptiveAvgPool2d", (1,), {}, [(2, 4, 6, 6)]),
    ("AdaptiveMaxPool1d", (4,), {}, [(2, 3, 10)]),
    ("AdaptiveMaxPool1d", (3,), {"return_indices": True}, [(2, 3, 8)]),
    ("AdaptiveMaxPool2d", (3,), {}, [(2, 3, 7, 8)]),
    ("AdaptiveMaxPool2d", ((2, 5),), {"return_indices": True}, [(3, 7, 8)]),
    ("Upsample", (), {"scale_factor": 2}, [(1, 2, 3, 4)]),
    ("Upsample", (), {"size": (5, 7), "mode": "bilinear", "align_corners": False}, [(2, 2, 3, 4)]),
    ("Upsample", (), {"scale_factor": 1.5, "mode": "linear"}, [(2, 3, 6)]),
    ("Upsample", (), {"size": 7, "mode": "bicubic", "align_corners": True}, [(1, 2, 4, 5)]),
    ("Upsample", (), {"scale_factor": (2, 3), "mode": "nearest-exact"}, [(1, 2, 3, 4)]),
    ("UpsamplingNearest2d", (), {"scale_factor": 3}, [(1, 2, 3, 4)]),
    ("UpsamplingBilinear2d", ((6, 9),), {}, [(2, 2, 3, 4)]),
    ("PixelShuffle", (2,), {}, [(2, 8, 3, 4)]),
    ("PixelUnshuffle", (2,), {}, [(2, 2, 6, 4)]),
    ("ZeroPad1d", (2,), {}, [(2, 3, 4)]),
    ("ZeroPad2d", ((1, 2, 0, 3),), {}, [(2, 3, 4, 5)]),
    ("ZeroPad3d", (1,), {}, [(1, 2, 3, 4, 2)]),
    ("ConstantPad1d", ((1, 2), 3.5), {}, [(2, 3, 4)]),
    ("ConstantPad2d", (2, -1.0), {}, [(3, 4, 5)]),
    ("ConstantPad3d", ((1, 0, 2, 1, 0, 1), 0.5), {}, [(1, 2, 3, 4, 2)]),
    ("ReflectionPad1d", ((3, 1),), {}, [(2, 3, 5)]),
    ("ReflectionPad2d", (2,), {}, [(2, 3, 4, 5)]),
    ("ReflectionPad3d", ((1, 2, 0, 1, 1, 1),), {}, [(2, 3, 3, 4)]),
    ("ReplicationPad1d", (2,), {}, [(3, 4)]),
    ("ReplicationPad2d", ((1, 0, 3, 2),), {}, [(2, 3, 4, 5)]),
    ("ReplicationPad3d", (1,), {}, [(1, 2, 3, 4, 2)]),
    ("CircularPad1d", ((2, 1),), {}, [(2, 3, 4)]),
    ("CircularPad2d", (1,), {}, [(3, 4, 5)]),
    ("CircularPad3d", ((1, 0, 1, 2, 0, 1),), {}, [(1, 2, 3, 4, 3)]),
    ("Fold", ((4, 5), (2, 2)), {}, [(2, 12, 12)]),
    ("Fold", ((6, 7), 3), {"padding": 1, "stride": 2}, [(18, 12)]),
    ("Unfold", ((2, 3),), {"dilation": (1, 2), "padding": 1, "stride": (2, 1)}, [(2, 3, 6, 7)]),
    ("Unfold", (2,), {}, [(3, 4, 5)]),
    ("CosineSimilarity", (), {}, [(4, 5), (4, 5)]),
    ("CosineSimilarity", (0, 1e-6), {}, [(4, 5), (4, 5)]),
    ("PairwiseDistance", (), {}, [(4, 5), (4, 5)]),
    ("PairwiseDistance", (1.0, 1e-3, True), {}, [(4, 5), (4, 5)]),
    ("ChannelShuffle", (3,), {}, [(2, 6, 4, 4)]),
]
CASE_IDS = [f"{name}-{i}" for i, (name, *_rest) in enumerate(CASES)]


def load_torch_weights(module, torch_module):
    """torch_module's parameters and buffers, copied into module by state_dict."""
    state = {k: ember.tensor(v.detach().numpy()) for k, v in torch_module.state_dict().items()}
    module.load_state_dict(state)


def outputs(result):
    return list(result) if isinstance(result, tuple) else [result]


@needs_torch
@pytest.mark.filterwarnings("ignore:Using padding='same' with even kernel lengths")  # torch's own note
@pytest.mark.parametrize("name,args,kwargs,shapes", CASES, ids=CASE_IDS)
def test_module_matches_torch(name, args, kwargs, shapes):
    module, torch_module = getattr(nn, name)(*args, **kwargs), getattr(torch.nn, name)(*args, **kwargs)
    assert repr(module) == repr(torch_module)
    assert list(module.state_dict()) == list(torch_module.state_dict())
    assert [(n, tuple(p.shape)) for n, p in module.named_parameters()] == \
        [(n, tuple(p.shape)) for n, p in torch_module.named_parameters()]
    load_torch_weights(module, torch_module)
    inputs = [values(s, seed) for seed, s in enumerate(shapes)]
    e_in = [et(a, requires_grad=True) for a in inputs]
    t_in = [torch.tensor(a, requires_grad=True) for a in inputs]
    e_out, t_out = outputs(module(*e_in)), outputs(torch_module(*t_in))
    assert len(e_out) == len(t_out)
    for e, t in zip(e_out, t_out):
        assert tuple(e.shape) == tuple(t.shape)
        if t.dtype == torch.int64:  # pool indices
            np.testing.assert_array_equal(e.numpy(), t.numpy())
        else:
            np.testing.assert_allclose(e.detach().numpy(), t.detach().numpy(), rtol=1e-5, atol=1e-5)
    grad = values(tuple(t_out[0].shape), 99)
    e_out[0].backward(et(grad))
    t_out[0].backward(torch.tensor(grad))
    for e, t in zip(e_in, t_in):
        np.testing.assert_allclose(as_numpy(e.grad), t.grad.numpy(), rtol=1e-4, atol=1e-5)
    for (name_e, p), (_, q) in zip(module.named_parameters(), torch_module.named_parameters()):
        np.testing.assert_allclose(as_numpy(p.grad), q.grad.numpy(), rtol=1e-4, atol=1e-5, err_msg=name_e)


@needs_torch
@pytest.mark.parametrize("cls,kernel,stride,padding,shape", [
    ("1d", 3, 2, 1, (2, 3, 11)), ("2d", (2, 3), (2, 1), (1, 0), (2, 3, 8, 7)), ("2d", 2, None, 0, (3, 6, 8))])
def test_max_unpool_matches_torch(cls, kernel, stride, padding, shape):
    pool_e = getattr(nn, f"MaxPool{cls}")(kernel, stride, padding, return_indices=True)
    pool_t = getattr(torch.nn, f"MaxPool{cls}")(kernel, stride, padding, return_indices=True)
    unpool_e = getattr(nn, f"MaxUnpool{cls}")(kernel, stride, padding)
    unpool_t = getattr(torch.nn, f"MaxUnpool{cls}")(kernel, stride, padding)
    assert repr(unpool_e) == repr(unpool_t)
    x = values(shape)
    (pe, ie), (pt, it) = pool_e(et(x)), pool_t(torch.tensor(x))
    spatial = 2 if cls == "2d" else 1
    sizes = [None, list(x.shape[-spatial:])] + ([list(x.shape)] if x.ndim == spatial + 2 else [])
    for output_size in sizes:
        np.testing.assert_array_equal(unpool_e(pe, ie, output_size).numpy(), unpool_t(pt, it, output_size).numpy())


@needs_torch
@pytest.mark.parametrize("cls,args,kwargs,shape,output_size", [
    ("ConvTranspose1d", (3, 2, 3), {"stride": 3}, (2, 3, 4), [13]),
    ("ConvTranspose1d", (3, 2, 3), {"stride": 2, "padding": 1}, (3, 4), [2, 8]),
    ("ConvTranspose2d", (3, 2, 3), {"stride": 2}, (2, 3, 4, 5), [10, 11]),
    ("ConvTranspose2d", (3, 2, 3), {"stride": (3, 2), "dilation": 2}, (1, 3, 3, 4), [1, 2, 12, 12]),
    ("ConvTranspose3d", (3, 2, 2), {"stride": (2, 3, 1)}, (1, 3, 2, 3, 4), [4, 9, 5]),
])
def test_conv_transpose_output_size_matches_torch(cls, args, kwargs, shape, output_size):
    module, torch_module = getattr(nn, cls)(*args, **kwargs), getattr(torch.nn, cls)(*args, **kwargs)
    load_torch_weights(module, torch_module)
    x = values(shape)
    expected = torch_module(torch.tensor(x), output_size).detach().numpy()
    np.testing.assert_allclose(module(et(x), output_size).detach().numpy(), expected, rtol=1e-5, atol=1e-5)


def test_conv_transpose_output_size_errors():
    module = nn.ConvTranspose2d(3, 2, 3, stride=2)
    x = ember.randn(1, 3, 4, 5)
    with pytest.raises(ValueError, match=r"^requested an output size of \[12, 11\], but valid sizes range from "
                                         r"\[9, 11\] to \[10, 12\] \(for an input of "):
        module(x, [12, 11])
    with pytest.raises(ValueError, match=r"^ConvTranspose2D: for 4D input, output_size must have 2 or 4 elements "
                                         r"\(got 3\)$"):
        module(x, [1, 9, 11])
    assert tuple(module(x, [10, 12]).shape) == (1, 2, 10, 12)


# ---------------------------------------------------------------- without torch: NumPy references


def test_linear_against_numpy():
    m = nn.Linear(5, 3)
    x = values((2, 4, 5))
    expected = x @ m.weight.detach().numpy().T + m.bias.detach().numpy()
    np.testing.assert_allclose(m(et(x)).detach().numpy(), expected, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(F.linear(et(x[0]), m.weight).detach().numpy(), x[0] @ m.weight.detach().numpy().T,
                               rtol=1e-5, atol=1e-6)
    assert tuple(m(ember.randn(5)).shape) == (3,)


def test_bilinear_against_numpy():
    m = nn.Bilinear(4, 3, 5)
    x1, x2 = values((2, 6, 4), 1), values((2, 6, 3), 2)
    w, b = m.weight.detach().numpy(), m.bias.detach().numpy()
    expected = np.einsum("...i,oij,...j->...o", x1, w, x2) + b
    np.testing.assert_allclose(m(et(x1), et(x2)).detach().numpy(), expected, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(F.bilinear(et(x1[0, 0]), et(x2[0, 0]), m.weight).detach().numpy(),
                               np.einsum("i,oij,j->o", x1[0, 0], w, x2[0, 0]), rtol=1e-5, atol=1e-5)


def test_bilinear_errors():
    w = ember.randn(4, 3, 5)
    cases = [((2, 3), (2, 2, 5), None, "input dimensions do not match: got 2 and 3"),
             ((2, 3), (3, 5), None, "input batch dimensions do not match at dim 0: got 2 and 3"),
             ((2, 4), (2, 5), None, "input1 size does not match weight size: got 4 but expected 3"),
             ((2, 3), (2, 6), None, "input2 size does not match weight size: got 6 but expected 5"),
             ((2, 3), (2, 5), 3, "bias size does not match weight size: got 3 but expected 4")]
    for s1, s2, bias, msg in cases:
        with pytest.raises(RuntimeError, match=rf"^bilinear\(\): {msg}$"):
            F.bilinear(ember.randn(s1), ember.randn(s2), w, None if bias is None else ember.randn(bias))
    with pytest.raises(ValueError, match=r"^in1_features must be > 0, but got \(in1_features=0\)$"):
        nn.Bilinear(0, 3, 2)


def np_conv3d(x, w, b, stride, padding, dilation, groups):
    """Direct-loop 3-D convolution (N, C, D, H, W) of zero-padded x."""
    x = np.pad(x, [(0, 0), (0, 0)] + [(p, p) for p in padding])
    n, c = x.shape[:2]
    o, cg, *k = w.shape
    out_sizes = [(x.shape[2 + i] - dilation[i] * (k[i] - 1) - 1) // stride[i] + 1 for i in range(3)]
    out = np.zeros((n, o, *out_sizes), np.float64)
    og = o // groups
    for oc in range(o):
        g = oc // og
        for a, bb, cc in np.ndindex(*k):
            window = x[:, g * cg:(g + 1) * cg,
                       a * dilation[0]:a * dilation[0] + (out_sizes[0] - 1) * stride[0] + 1:stride[0],
                       bb * dilation[1]:bb * dilation[1] + (out_sizes[1] - 1) * stride[1] + 1:stride[1],
                       cc * dilation[2]:cc * dilation[2] + (out_sizes[2] - 1) * stride[2] + 1:stride[2]]
            out[:, oc] += np.einsum("ncdhw,c->ndhw", window, w[oc, :, a, bb, cc])
        if b is not None:
            out[:, oc] += b[oc]
    return out


@pytest.mark.parametrize("xshape,wshape,stride,padding,dilation,groups,bias", [
    ((2, 2, 5, 6, 7), (4, 2, 3, 3, 3), (1, 1, 1), (0, 0, 0), (1, 1, 1), 1, True),
    ((1, 4, 7, 6, 5), (6, 2, 2, 3, 1), (2, 1, 2), (1, 0, 1), (2, 1, 1), 2, True),
    ((2, 3, 4, 5, 6), (3, 1, 3, 2, 2), (1, 2, 1), (2, 1, 0), (1, 1, 2), 3, False),
    ((1, 2, 3, 3, 3), (2, 2, 3, 3, 3), (1, 1, 1), (0, 0, 0), (1, 1, 1), 1, True),
])
def test_conv3d_against_numpy(xshape, wshape, stride, padding, dilation, groups, bias, threads):
    x, w = values(xshape, 1).astype(np.float64), values(wshape, 2).astype(np.float64)
    b = values(wshape[0], 3).astype(np.float64) if bias else None
    out = F.conv3d(et(x), et(w), None if b is None else et(b), stride, padding, dilation, groups)
    np.testing.assert_allclose(out.numpy(), np_conv3d(x, w, b, stride, padding, dilation, groups), rtol=1e-10,
                               atol=1e-10)
    # unbatched: the same without the batch dim
    single = F.conv3d(et(x[0]), et(w), None if b is None else et(b), stride, padding, dilation, groups)
    np.testing.assert_allclose(single.numpy(), out.numpy()[0], rtol=1e-12, atol=1e-12)


def test_conv3d_gradcheck():
    x = ember.randn(1, 2, 3, 4, 3, dtype=ember.float64, requires_grad=True)
    w = ember.randn(2, 1, 2, 2, 2, dtype=ember.float64, requires_grad=True)
    b = ember.randn(2, dtype=ember.float64, requires_grad=True)
    assert ember.autograd.gradcheck(lambda x, w, b: F.conv3d(x, w, b, (2, 1, 1), 1, (1, 2, 1), 2), (x, w, b))


def test_conv3d_same_and_valid_padding():
    x, w = values((1, 2, 4, 5, 3), 1).astype(np.float64), values((3, 2, 2, 3, 2), 2).astype(np.float64)
    same = F.conv3d(et(x), et(w), padding="same", dilation=(1, 1, 2)).numpy()
    # 'same': total d * (k - 1) per dim, left half and the rest on the right
    padded = np.pad(x, [(0, 0), (0, 0), (0, 1), (1, 1), (1, 1)])
    np.testing.assert_allclose(same, np_conv3d(padded, w, None, (1, 1, 1), (0, 0, 0), (1, 1, 2), 1), atol=1e-12)
    assert same.shape == (1, 3, 4, 5, 3)
    valid = F.conv3d(et(x), et(w), padding="valid").numpy()
    np.testing.assert_allclose(valid, np_conv3d(x, w, None, (1, 1, 1), (0, 0, 0), (1, 1, 1), 1), atol=1e-12)


@pytest.mark.parametrize("xshape,wshape,kwargs", [
    ((2, 3, 3, 4, 5), (3, 2, 2, 3, 2), {}),
    ((1, 4, 3, 4, 5), (4, 3, 3, 2, 2), {"stride": (2, 3, 1), "padding": (1, 0, 1), "output_padding": (1, 2, 0),
                                        "dilation": (1, 1, 2)}),
    ((2, 6, 4, 3, 3), (6, 2, 3, 3, 3), {"stride": 2, "padding": 1, "output_padding": 1, "groups": 3}),
    ((1, 2, 2, 2, 2), (2, 2, 1, 1, 1), {"stride": 3, "output_padding": 2}),
])
def test_conv_transpose3d_is_the_adjoint_of_conv3d(xshape, wshape, kwargs, threads):
    # <conv_transpose3d(x, w), y> == <x, conv3d(y, w)> for every y of the transposed output's shape.
    x, w = et(values(xshape, 1).astype(np.float64)), et(values(wshape, 2).astype(np.float64))
    out = F.conv_transpose3d(x, w, **kwargs)
    groups = kwargs.get("groups", 1)
    assert tuple(out.shape[:2]) == (xshape[0], wshape[1] * groups)
    y = et(values(tuple(out.shape), 3).astype(np.float64))
    conv_kwargs = {k: v for k, v in kwargs.items() if k != "output_padding"}
    forward = F.conv3d(y, w, **conv_kwargs)
    assert tuple(forward.shape) == xshape
    np.testing.assert_allclose((out * y).sum().item(), (x * forward).sum().item(), rtol=1e-10)
    bias = et(values(wshape[1] * groups, 4).astype(np.float64))
    with_bias = F.conv_transpose3d(x, w, bias, **kwargs).numpy()
    np.testing.assert_allclose(with_bias, out.numpy() + bias.numpy().reshape(1, -1, 1, 1, 1), atol=1e-12)
    np.testing.assert_allclose(F.conv_transpose3d(x[0], w, **kwargs).numpy(), out.numpy()[0], atol=1e-12)


def test_conv_transpose3d_gradcheck():
    x = ember.randn(1, 2, 2, 3, 2, dtype=ember.float64, requires_grad=True)
    w = ember.randn(2, 2, 2, 2, 2, dtype=ember.float64, requires_grad=True)
    b = ember.randn(4, dtype=ember.float64, requires_grad=True)
    assert ember.autograd.gradcheck(lambda x, w, b: F.conv_transpose3d(x, w, b, (2, 1, 2), 1, (1, 0, 0), 2, (1, 2, 1)),
                                    (x, w, b))


CONV_TRANSPOSE3D_ERRORS = [
    ((1, 2, 3, 3, 3), (3, 2, 1, 1, 1), {}, r"Given transposed=1, weight of size \[3, 2, 1, 1, 1\], expected "
                                           r"input\[1, 2, 3, 3, 3\] to have 3 channels, but got 2 channels instead"),
    ((1, 2, 3, 3, 3), (2, 2, 1, 1, 1), {"output_padding": 1},
     r"output padding must be smaller than either stride or dilation, but got output_padding=\[1, 1, 1\], "
     r"stride=\[1, 1, 1\], dilation=\[1, 1, 1\]"),
    ((1, 2, 1, 1, 1), (2, 2, 1, 1, 1), {"padding": 1}, r"Given input size per channel: \(1 x 1 x 1\)\. Calculated "
                                                       r"output size per channel: \(-1 x -1 x -1\)\. Output size is "
                                                       "too small"),
    ((1, 2, 3, 3, 3), (2, 2, 1, 1, 1), {"output_padding": -1}, "negative output padding is not supported"),
    ((2, 3, 3), (2, 2, 1, 1, 1), {}, r"Expected 4D \(unbatched\) or 5D \(batched\) input to conv_transpose3d, but "
                                     r"got input of size: \[2, 3, 3\]"),
]


@pytest.mark.parametrize("xshape,wshape,kwargs,msg", CONV_TRANSPOSE3D_ERRORS)
def test_conv_transpose3d_errors(xshape, wshape, kwargs, msg):
    with pytest.raises(RuntimeError, match=f"^{msg}$"):
        F.conv_transpose3d(ember.randn(xshape), ember.randn(wshape), **kwargs)


CONV3D_ERRORS = [
    ((1, 2, 3), (4, 2, 1, 1, 1), {}, r"Expected 4D \(unbatched\) or 5D \(batched\) input to conv3d, but got input of "
                                      r"size: \[1, 2, 3\]"),
    ((1, 2, 3, 3, 3), (4, 2, 1, 1), {}, r"expected a 5-dimensional weight, but got weight of size \[4, 2, 1, 1\]"),
    ((1, 2, 3, 3, 3), (4, 2, 1, 1, 1), {"groups": 3}, r"Given groups=3, expected weight to be divisible by 3 at "
                                                      r"dimension 0, but got weight of size \[\[4, 2, 1, 1, 1\]\] "
                                                      "instead"),
    ((1, 2, 3, 3, 3), (4, 3, 1, 1, 1), {}, r"Given groups=1, weight of size \[4, 3, 1, 1, 1\], expected "
                                           r"input\[1, 2, 3, 3, 3\] to have 3 channels, but got 2 channels instead"),
    ((1, 2, 3, 3, 3), (4, 2, 5, 1, 1), {}, r"Calculated padded input size per channel: \(3 x 3 x 3\)\. Kernel size: "
                                           r"\(5 x 1 x 1\)\. Kernel size can't be greater than actual input size"),
    ((1, 2, 3, 3, 3), (4, 2, 1, 1, 1), {"stride": 0}, "non-positive stride is not supported"),
    ((1, 2, 3, 3, 3), (4, 2, 1, 1, 1), {"padding": -1}, "negative padding is not supported"),
    ((1, 2, 3, 3, 3), (4, 2, 1, 1, 1), {"padding": "foo"}, "Invalid padding string: 'foo'"),
    ((1, 2, 3, 3, 3), (4, 2, 1, 1, 1), {"stride": 2, "padding": "same"},
     "padding='same' is not supported for strided convolutions"),
    ((1, 2, 3, 3, 3), (4, 2, 1, 1, 1), {"stride": (1, 2)}, r"expected stride to be a single integer value or a list "
                                                           r"of 3 values to match the convolution dimensions, but got "
                                                           r"stride=\[1, 2\]"),
    ((1, 2, 3, 3, 3), (4, 2, 1, 1, 1), {"dilation": 0}, "non-positive dilation is not supported"),
]


@pytest.mark.parametrize("xshape,wshape,kwargs,msg", CONV3D_ERRORS)
def test_conv3d_errors(xshape, wshape, kwargs, msg):
    with pytest.raises(RuntimeError, match=f"^{msg}$"):
        F.conv3d(ember.randn(xshape), ember.randn(wshape), **kwargs)


def test_conv3d_bias_errors():
    x, w = ember.randn(1, 4, 3, 3, 3), ember.randn(6, 2, 1, 1, 1)
    with pytest.raises(RuntimeError, match=r"^Given weight of size \[6, 2, 1, 1, 1\], expected bias to be "
                                           r"1-dimensional with 6 elements, but got bias of size \[5\] instead$"):
        F.conv3d(x, w, ember.randn(5), groups=2)
    with pytest.raises(RuntimeError, match=r"^Input type \(float32\) and weight type \(float64\) should be "
                                           "the same$"):
        F.conv3d(x, w.double(), groups=2)


@pytest.mark.parametrize("mode,np_mode", [("reflect", "reflect"), ("replicate", "edge"), ("circular", "wrap")])
@pytest.mark.parametrize("dims", [1, 2, 3])
def test_conv_padding_modes_pad_then_convolve(mode, np_mode, dims):
    conv = getattr(nn, f"Conv{dims}d")(2, 3, 3, padding=1, padding_mode=mode)
    x = values((2, 2) + (5, 4, 3)[:dims], 4)
    padded = np.pad(x, [(0, 0), (0, 0)] + [(1, 1)] * dims, mode=np_mode)
    functional = getattr(F, f"conv{dims}d")
    expected = functional(et(padded), conv.weight, conv.bias).detach().numpy()
    np.testing.assert_allclose(conv(et(x)).detach().numpy(), expected, rtol=1e-6, atol=1e-6)


def test_conv_modules_call_their_functional():
    x = values((2, 4, 9, 8))
    conv = nn.Conv2d(4, 6, (3, 2), stride=(2, 1), padding=(1, 0), dilation=(2, 1), groups=2)
    expected = F.conv2d(et(x), conv.weight, conv.bias, (2, 1), (1, 0), (2, 1), 2)
    np.testing.assert_array_equal(conv(et(x)).detach().numpy(), expected.detach().numpy())
    tconv = nn.ConvTranspose2d(4, 2, 3, stride=2, padding=1, output_padding=1, groups=2, dilation=1)
    expected = F.conv_transpose2d(et(x), tconv.weight, tconv.bias, 2, 1, 1, 2, 1)
    np.testing.assert_array_equal(tconv(et(x)).detach().numpy(), expected.detach().numpy())
    assert tuple(tconv(et(x)).shape) == (2, 2, 18, 16)


def test_conv_constructor_errors():
    with pytest.raises(ValueError, match="^groups must be a positive integer$"):
        nn.Conv2d(4, 4, 3, groups=0)
    with pytest.raises(ValueError, match="^in_channels must be divisible by groups$"):
        nn.Conv1d(3, 4, 3, groups=2)
    with pytest.raises(ValueError, match="^out_channels must be divisible by groups$"):
        nn.Conv3d(4, 3, 3, groups=2)
    with pytest.raises(ValueError, match=r"^Invalid padding string 'full', should be one of \{'(same|valid)', "
                                         r"'(same|valid)'\}$"):
        nn.Conv2d(2, 2, 3, padding="full")
    with pytest.raises(ValueError, match="^padding='same' is not supported for strided convolutions$"):
        nn.Conv1d(2, 2, 3, stride=2, padding="same")
    with pytest.raises(ValueError, match=r"^padding_mode must be one of \{.*\}, but got padding_mode='mirror'$"):
        nn.Conv2d(2, 2, 3, padding_mode="mirror")
    with pytest.raises(ValueError, match='^Only "zeros" padding mode is supported for ConvTranspose2d$'):
        nn.ConvTranspose2d(2, 2, 3, padding_mode="reflect")


def test_conv_weight_shapes():
    assert tuple(nn.Conv1d(4, 6, 3, groups=2).weight.shape) == (6, 2, 3)
    assert tuple(nn.Conv2d(4, 6, (3, 2)).weight.shape) == (6, 4, 3, 2)
    assert tuple(nn.Conv3d(4, 6, (3, 2, 1), groups=4 // 2).weight.shape) == (6, 2, 3, 2, 1)
    assert tuple(nn.ConvTranspose1d(4, 6, 3, groups=2).weight.shape) == (4, 3, 3)
    assert tuple(nn.ConvTranspose2d(4, 6, (3, 2)).weight.shape) == (4, 6, 3, 2)
    assert tuple(nn.ConvTranspose3d(4, 6, (3, 2, 1), groups=2).weight.shape) == (4, 3, 3, 2, 1)
    assert nn.Conv2d(4, 6, 3, bias=False).bias is None


REPRS = [
    (lambda: nn.Linear(5, 3), "Linear(in_features=5, out_features=3, bias=True)"),
    (lambda: nn.Linear(5, 3, bias=False), "Linear(in_features=5, out_features=3, bias=False)"),
    (lambda: nn.Bilinear(4, 3, 5), "Bilinear(in1_features=4, in2_features=3, out_features=5, bias=True)"),
    (lambda: nn.Identity(), "Identity()"),
    (lambda: nn.Flatten(), "Flatten(start_dim=1, end_dim=-1)"),
    (lambda: nn.Unflatten(1, (3, 4)), "Unflatten(dim=1, unflattened_size=(3, 4))"),
    (lambda: nn.Conv1d(4, 6, 3), "Conv1d(4, 6, kernel_size=(3,), stride=(1,))"),
    (lambda: nn.Conv2d(4, 6, (2, 3), stride=(2, 1), padding=(1, 2), dilation=(1, 2), groups=2, bias=False,
                       padding_mode="reflect"),
     "Conv2d(4, 6, kernel_size=(2, 3), stride=(2, 1), padding=(1, 2), dilation=(1, 2), groups=2, bias=False, "
     "padding_mode=reflect)"),
    (lambda: nn.Conv2d(3, 4, 3, padding="same"), "Conv2d(3, 4, kernel_size=(3, 3), stride=(1, 1), padding=same)"),
    (lambda: nn.Conv3d(2, 4, 3), "Conv3d(2, 4, kernel_size=(3, 3, 3), stride=(1, 1, 1))"),
    (lambda: nn.ConvTranspose2d(4, 2, 3, stride=2, output_padding=1),
     "ConvTranspose2d(4, 2, kernel_size=(3, 3), stride=(2, 2), output_padding=(1, 1))"),
    (lambda: nn.MaxPool2d(3, 2, 1), "MaxPool2d(kernel_size=3, stride=2, padding=1, dilation=1, ceil_mode=False)"),
    (lambda: nn.MaxUnpool2d(2), "MaxUnpool2d(kernel_size=(2, 2), stride=(2, 2), padding=(0, 0))"),
    (lambda: nn.AvgPool1d(3), "AvgPool1d(kernel_size=(3,), stride=(3,), padding=(0,))"),
    (lambda: nn.AvgPool2d(3, 2), "AvgPool2d(kernel_size=3, stride=2, padding=0)"),
    (lambda: nn.AdaptiveAvgPool2d((3, None)), "AdaptiveAvgPool2d(output_size=(3, None))"),
    (lambda: nn.AdaptiveMaxPool1d(4), "AdaptiveMaxPool1d(output_size=4)"),
    (lambda: nn.Upsample(scale_factor=2), "Upsample(scale_factor=2.0, mode='nearest')"),
    (lambda: nn.Upsample(size=(4, 5), mode="bilinear"), "Upsample(size=(4, 5), mode='bilinear')"),
    (lambda: nn.UpsamplingBilinear2d(scale_factor=2), "UpsamplingBilinear2d(scale_factor=2.0, mode='bilinear')"),
    (lambda: nn.PixelShuffle(3), "PixelShuffle(upscale_factor=3)"),
    (lambda: nn.PixelUnshuffle(2), "PixelUnshuffle(downscale_factor=2)"),
    (lambda: nn.ZeroPad2d(1), "ZeroPad2d((1, 1, 1, 1))"),
    (lambda: nn.ConstantPad1d(2, 3.5), "ConstantPad1d(padding=(2, 2), value=3.5)"),
    (lambda: nn.ReflectionPad1d((1, 2)), "ReflectionPad1d((1, 2))"),
    (lambda: nn.ReplicationPad3d(1), "ReplicationPad3d((1, 1, 1, 1, 1, 1))"),
    (lambda: nn.CircularPad2d(1), "CircularPad2d((1, 1, 1, 1))"),
    (lambda: nn.Fold((4, 5), 2), "Fold(output_size=(4, 5), kernel_size=2, dilation=1, padding=0, stride=1)"),
    (lambda: nn.Unfold(2, padding=1), "Unfold(kernel_size=2, dilation=1, padding=1, stride=1)"),
    (lambda: nn.CosineSimilarity(), "CosineSimilarity()"),
    (lambda: nn.PairwiseDistance(), "PairwiseDistance()"),
    (lambda: nn.ChannelShuffle(2), "ChannelShuffle(groups=2)"),
]


@pytest.mark.parametrize("make,expected", REPRS, ids=[r[1].split("(")[0] + str(i) for i, r in enumerate(REPRS)])
def test_repr(make, expected):
    assert repr(make()) == expected


PAD_CASES = [("ZeroPad1d", (2,), "constant", [(2, 2)]), ("ZeroPad2d", ((1, 2, 0, 3),), "constant", [(0, 3), (1, 2)]),
             ("ConstantPad3d", ((1, 0, 2, 1, 0, 1), 0.5), "constant", [(0, 1), (2, 1), (1, 0)]),
             ("ReflectionPad2d", (2,), "reflect", [(2, 2), (2, 2)]), ("ReflectionPad1d", ((3, 1),), "reflect", [(3, 1)]),
             ("ReplicationPad3d", (1,), "edge", [(1, 1)] * 3), ("ReplicationPad1d", ((0, 2),), "edge", [(0, 2)]),
             ("CircularPad2d", ((1, 0, 2, 1),), "wrap", [(2, 1), (1, 0)]),
             ("CircularPad1d", (2,), "wrap", [(2, 2)])]


@pytest.mark.parametrize("name,args,np_mode,widths", PAD_CASES)
def test_padding_modules_against_numpy(name, args, np_mode, widths):
    x = values((2, 3, 5, 4, 6)[-len(widths) - 2:], 5)
    kwargs = {"constant_values": args[1]} if len(args) > 1 else {}
    expected = np.pad(x, [(0, 0), (0, 0)] + widths, mode=np_mode, **kwargs)
    np.testing.assert_array_equal(getattr(nn, name)(*args)(et(x)).numpy(), expected)


def test_circular_pad_input_dims():
    with pytest.raises(ValueError, match=r"^expected 3D or 4D input \(got 2D input\)$"):
        nn.CircularPad2d(1)(ember.randn(3, 4))
    with pytest.raises(ValueError, match=r"^expected 4D or 5D input \(got 3D input\)$"):
        nn.CircularPad3d(1)(ember.randn(2, 3, 4))


def test_flatten_unflatten_channel_shuffle_against_numpy():
    x = values((2, 3, 4, 5))
    np.testing.assert_array_equal(nn.Flatten()(et(x)).numpy(), x.reshape(2, 60))
    np.testing.assert_array_equal(nn.Flatten(1, 2)(et(x)).numpy(), x.reshape(2, 12, 5))
    np.testing.assert_array_equal(nn.Unflatten(-1, (5, 1))(et(x)).numpy(), x.reshape(2, 3, 4, 5, 1))
    y = values((2, 6, 3, 2))
    expected = y.reshape(2, 3, 2, 3, 2).transpose(0, 2, 1, 3, 4).reshape(2, 6, 3, 2)
    np.testing.assert_array_equal(nn.ChannelShuffle(3)(et(y)).numpy(), expected)
    np.testing.assert_array_equal(F.native_channel_shuffle(et(y), 2).numpy()[:, [0, 2, 4, 1, 3, 5]], y)


def test_unflatten_and_channel_shuffle_errors():
    with pytest.raises(TypeError, match="^unflattened_size must be tuple of ints, but found element of type float at "
                                        "pos 1$"):
        nn.Unflatten(1, (2, 3.0))
    with pytest.raises(TypeError, match="^unflattened_size must be a tuple of ints, but found type int$"):
        nn.Unflatten(1, 6)
    with pytest.raises(RuntimeError, match=r"^channel_shuffle expects input with > 2 dims, but got input with sizes "
                                           r"\[2, 6\]$"):
        F.channel_shuffle(ember.randn(2, 6), 3)
    with pytest.raises(RuntimeError, match="^Number of channels must be divisible by groups. Got 6 channels and 4 "
                                           "groups.$"):
        nn.ChannelShuffle(4)(ember.randn(2, 6, 3))
    with pytest.raises(RuntimeError, match="^Number of groups to divide channels in must be positive. Value of "
                                           "groups:0$"):
        F.channel_shuffle(ember.randn(2, 6, 3), 0)


def test_pool_upsample_fold_distance_modules_call_their_functional():
    x = et(values((2, 3, 8, 9)))
    pairs = [(nn.MaxPool2d(3, 2, 1, ceil_mode=True), F.max_pool2d(x, 3, 2, 1, ceil_mode=True)),
             (nn.AvgPool2d((2, 3), padding=1, count_include_pad=False),
              F.avg_pool2d(x, (2, 3), padding=1, count_include_pad=False)),
             (nn.AdaptiveAvgPool2d((3, 4)), F.adaptive_avg_pool2d(x, (3, 4))),
             (nn.AdaptiveMaxPool2d(2), F.adaptive_max_pool2d(x, 2)),
             (nn.Upsample(scale_factor=2, mode="bilinear"), F.interpolate(x, scale_factor=2, mode="bilinear")),
             (nn.UpsamplingNearest2d(size=(9, 10)), F.interpolate(x, size=(9, 10))),
             (nn.PixelUnshuffle(2), F.pixel_unshuffle(x[..., :8], 2)),
             (nn.Unfold((2, 3), stride=2), F.unfold(x, (2, 3), stride=2))]
    for module, expected in pairs:
        arg = x[..., :8] if isinstance(module, nn.PixelUnshuffle) else x
        np.testing.assert_array_equal(module(arg).numpy(), expected.numpy())
    cols = et(values((2, 12, 12)))
    np.testing.assert_array_equal(nn.Fold((4, 5), 2)(cols).numpy(), F.fold(cols, (4, 5), 2).numpy())
    a, b = values((4, 5), 1), values((4, 5), 2)
    np.testing.assert_allclose(nn.PairwiseDistance(p=1.0)(et(a), et(b)).numpy(),
                               np.abs(a - b + 1e-6).sum(-1), rtol=1e-5)
    cos = (a * b).sum(0) / np.maximum(np.linalg.norm(a, axis=0) * np.linalg.norm(b, axis=0), 1e-8)
    np.testing.assert_allclose(nn.CosineSimilarity(dim=0)(et(a), et(b)).numpy(), cos, rtol=1e-5)


def test_max_unpool_inverts_max_pool():
    x = values((2, 3, 6, 8))
    pooled, indices = nn.MaxPool2d(2, return_indices=True)(et(x))
    restored = nn.MaxUnpool2d(2)(pooled, indices).numpy()
    blocks = x.reshape(2, 3, 3, 2, 4, 2)
    keep = blocks == blocks.max(axis=(3, 5), keepdims=True)
    np.testing.assert_array_equal(restored, np.where(keep, blocks, 0).reshape(x.shape))
    p1, i1 = nn.MaxPool1d(3, 2, 1, return_indices=True)(et(x[0]))
    assert tuple(nn.MaxUnpool1d(3, 2, 1)(p1, i1, output_size=[8]).shape) == (3, 6, 8)


def ks_uniform(sample, bound):
    x = np.sort(sample.ravel().astype(np.float64))
    cdf = (x + bound) / (2 * bound)
    n = len(x)
    return max(np.max(np.arange(1, n + 1) / n - cdf), np.max(cdf - np.arange(n) / n))


@pytest.mark.parametrize("make,fan_in", [(lambda: nn.Linear(50, 400), 50), (lambda: nn.Bilinear(30, 4, 200), 30),
                                         (lambda: nn.Conv1d(6, 300, 5), 30), (lambda: nn.Conv2d(8, 64, 3, groups=2), 36),
                                         (lambda: nn.Conv3d(4, 40, (2, 3, 3)), 72),
                                         (lambda: nn.ConvTranspose2d(16, 100, 3), 900),
                                         (lambda: nn.ConvTranspose1d(40, 8, 4, groups=4), 8)])
def test_reset_parameters_distribution(make, fan_in):
    ember.manual_seed(0)
    module = make()
    bound = 1 / math.sqrt(fan_in)
    weight = module.weight.detach().numpy().copy()
    assert np.abs(weight).max() <= bound and np.abs(weight).max() > 0.95 * bound
    assert ks_uniform(weight, bound) < 1.95 / math.sqrt(weight.size)
    bias = module.bias.detach().numpy()
    assert np.abs(bias).max() <= bound
    assert ks_uniform(bias, bound) < 1.95 / math.sqrt(bias.size)
    # reset_parameters draws again from the same distribution
    module.reset_parameters()
    again = module.weight.detach().numpy()
    assert not np.array_equal(again, weight) and np.abs(again).max() <= bound


def test_factory_kwargs_and_parameters():
    m = nn.Conv2d(2, 3, 3, dtype=ember.float64)
    assert m.weight.dtype == ember.float64 and m.bias.dtype == ember.float64
    assert isinstance(m.weight, nn.Parameter) and m.weight.requires_grad
    lin = nn.Linear(3, 2, device="cpu", dtype=ember.float64)
    assert lin(ember.randn(4, 3, dtype=ember.float64)).dtype == ember.float64
    assert [n for n, _ in nn.Bilinear(2, 3, 4, bias=False).named_parameters()] == ["weight"]
    assert list(nn.MaxPool2d(2).parameters()) == []


def test_upsample_scale_factor_is_stored_as_float():
    assert nn.Upsample(scale_factor=2).scale_factor == 2.0
    assert nn.Upsample(scale_factor=(2, 3)).scale_factor == (2.0, 3.0)
    assert nn.Upsample(size=4).scale_factor is None


@pytest.mark.parametrize("make,shapes", [
    (lambda: nn.Linear(5, 3), [(4, 5)]), (lambda: nn.Bilinear(4, 3, 2), [(6, 4), (6, 3)]),
    (lambda: nn.Conv2d(3, 4, 3, padding=1, padding_mode="reflect"), [(2, 3, 6, 7)]),
    (lambda: nn.Conv3d(4, 6, (2, 3, 1), padding="same", groups=2), [(2, 4, 5, 6, 3)]),
    (lambda: nn.ConvTranspose1d(3, 2, 3, stride=2), [(2, 3, 5)]), (lambda: nn.ChannelShuffle(2), [(2, 4, 3, 5)]),
    (lambda: nn.ReplicationPad2d((1, 0, 2, 1)), [(2, 3, 4, 5)]), (lambda: nn.Flatten(0, 1), [(2, 3, 4)]),
    (lambda: nn.CosineSimilarity(dim=-1), [(4, 5), (4, 5)]), (lambda: nn.MaxPool2d(2), [(2, 3, 6, 8)]),
])
def test_non_contiguous_inputs(make, shapes):
    # Each input as the transpose of a contiguous array, and as an expanded (stride 0) batch:
    # the module gives what it gives on contiguous copies.
    module = make()
    arrays = [values(s, i) for i, s in enumerate(shapes)]
    expected = module(*[et(a) for a in arrays])
    transposed = [et(np.ascontiguousarray(np.swapaxes(a, 0, -1))).transpose(0, -1) for a in arrays]
    assert not all(t.is_contiguous() for t in transposed)
    np.testing.assert_allclose(module(*transposed).detach().numpy(), expected.detach().numpy(), rtol=1e-6, atol=1e-6)
    expanded = [et(a[:1]).expand(*a.shape) for a in arrays]
    copies = [et(np.broadcast_to(a[:1], a.shape).copy()) for a in arrays]
    np.testing.assert_allclose(module(*expanded).detach().numpy(), module(*copies).detach().numpy(), rtol=1e-6,
                               atol=1e-6)


LAZY = [("LazyLinear", (3,), {}, (4, 5), "Linear", (3, 5)),
        ("LazyLinear", (2,), {"bias": False}, (2, 6, 4), "Linear", (2, 4)),
        ("LazyConv1d", (4, 3), {"stride": 2}, (2, 3, 9), "Conv1d", (4, 3, 3)),
        ("LazyConv2d", (4, 3), {"padding": 1, "groups": 2}, (2, 6, 5, 5), "Conv2d", (4, 3, 3, 3)),
        ("LazyConv3d", (2, 2), {}, (3, 3, 3, 3), "Conv3d", (2, 3, 2, 2, 2)),
        ("LazyConvTranspose1d", (4, 3), {"bias": False}, (6, 5), "ConvTranspose1d", (6, 4, 3)),
        ("LazyConvTranspose2d", (2, 3), {"stride": 2}, (1, 3, 4, 4), "ConvTranspose2d", (3, 2, 3, 3)),
        ("LazyConvTranspose3d", (2, 2), {}, (3, 2, 2, 2), "ConvTranspose3d", (3, 2, 2, 2, 2))]


@pytest.mark.parametrize("name,args,kwargs,shape,becomes,weight_shape", LAZY)
def test_lazy_modules(name, args, kwargs, shape, becomes, weight_shape):
    module = getattr(nn, name)(*args, **kwargs)
    assert nn.parameter.is_lazy(module.weight)
    x = et(values(shape))
    y = module(x)
    assert type(module) is getattr(nn, becomes)
    assert tuple(module.weight.shape) == weight_shape and not nn.parameter.is_lazy(module.weight)
    bias = kwargs.get("bias", True)
    assert (module.bias is not None) == bias
    # initialized as the eager module: U(-1/sqrt(fan_in), 1/sqrt(fan_in))
    fan_in = int(np.prod(weight_shape[1:]))
    assert np.abs(module.weight.detach().numpy()).max() <= 1 / math.sqrt(fan_in)
    np.testing.assert_array_equal(y.detach().numpy(), module(x).detach().numpy())
    if torch is not None:
        torch_module = getattr(torch.nn, name)(*args, **kwargs)
        assert repr(getattr(nn, name)(*args, **kwargs)) == repr(torch_module)
        torch_module(torch.tensor(values(shape)))
        assert repr(module) == repr(torch_module)


def test_lazy_errors_and_loading():
    with pytest.raises(RuntimeError, match=r"^Expected 3D \(unbatched\) or 4D \(batched\) input to LazyConv2d, but "
                                           r"got input of size: "):
        nn.LazyConv2d(4, 3)(ember.randn(3, 4))
    with pytest.raises(ValueError, match="^in_channels must be divisible by groups$"):
        nn.LazyConv1d(4, 3, groups=2)(ember.randn(2, 3, 5))
    lazy, source = nn.LazyLinear(3), nn.Linear(5, 3)
    lazy.load_state_dict(source.state_dict())
    x = ember.randn(2, 5)
    np.testing.assert_array_equal(lazy(x).detach().numpy(), source(x).detach().numpy())
    assert type(lazy) is nn.Linear


def test_linear_shape_errors():
    with pytest.raises(RuntimeError, match=r"mat1 and mat2 shapes cannot be multiplied \(2x5 and 3x4\)$"):
        nn.Linear(3, 4)(ember.randn(2, 5))
    with pytest.raises(RuntimeError, match=r"mat1 and mat2 shapes cannot be multiplied \(14x5 and 3x4\)$"):
        nn.Linear(3, 4, bias=False)(ember.randn(7, 2, 5))
    with pytest.raises(RuntimeError, match="^expected m1 and m2 to have the same dtype, but got: double != float$"):
        F.linear(ember.randn(2, 3, dtype=ember.float64), ember.randn(4, 3), ember.randn(4))


@pytest.mark.parametrize("make,shape", [(lambda: nn.Conv2d(2, 3, 3, padding="same", padding_mode="circular"),
                                         (1, 2, 5, 5)),
                                        (lambda: nn.Linear(4, 2), (3, 4)), (lambda: nn.Upsample(scale_factor=2), (1, 2, 3)),
                                        (lambda: nn.ReflectionPad2d(1), (1, 2, 3, 3)),
                                        (lambda: nn.ConvTranspose1d(2, 3, 3, stride=2), (1, 2, 4))])
def test_pickle_copy_and_double(make, shape):
    import copy
    import pickle
    module = make()
    x = et(values(shape))
    expected = module(x).detach().numpy()
    for clone in (pickle.loads(pickle.dumps(module)), copy.deepcopy(module)):
        assert repr(clone) == repr(module) and type(clone) is type(module)
        np.testing.assert_array_equal(clone(x).detach().numpy(), expected)
    doubled = module.double()
    np.testing.assert_allclose(doubled(x.double()).detach().numpy(), expected, rtol=1e-6, atol=1e-6)
