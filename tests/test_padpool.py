"""padpool (issue 11): the reflection/replication pad kernels (1-D, 2-D, 3-D) behind F.pad, against
NumPy's np.pad (reflect/edge/wrap) and PyTorch over dtypes, negative amounts, non-contiguous and
channels_last-like strides, empty batches and 1-3 threads above the parallel grain; max_unpool1d/2d,
local_response_norm and interpolate's bicubic mode; their gradients (gradcheck, gradgradcheck, JVPs)
and PyTorch's errors."""
import re

import numpy as np
import pytest

import ember
import ember.nn.functional as F
from ember.autograd import gradcheck, gradgradcheck

try:
    import torch
    import torch.nn.functional as TF
except ImportError:  # the torch comparisons are skipped without it
    torch = None

F64 = ember.float64
GRAIN = ember._C._thresholds()["grain_size"]
NN = ember._C._nn
needs_gpu = pytest.mark.skipif(not ember.cuda.is_available(), reason="needs a CUDA GPU")
NUMERIC = [ember.uint8, ember.int8, ember.int16, ember.int32, ember.int64, ember.float16, ember.bfloat16,
           ember.float32, ember.float64]
NP_MODE = {"reflection": "reflect", "replication": "edge"}


def t64(a, requires_grad=True):
    return ember.tensor(np.asarray(a, dtype=np.float64), requires_grad=requires_grad)


def values(shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape)


def np_edge_pad(a, padding, kind):
    """np.pad of the last len(padding) / 2 dims (non-negative amounts), in PyTorch's (left, right) order."""
    k = len(padding) // 2
    widths = [(0, 0)] * (a.ndim - k) + [(padding[2 * i], padding[2 * i + 1]) for i in reversed(range(k))]
    return np.pad(a, widths, mode=NP_MODE[kind])


# Ops the harness cannot sample: gradgradchecked by test_higher_order.py, their JVPs checked here.
HIGHER_ORDER_CASES = {
    "_pad_edge_backward": [(lambda g: ember._pad_edge_backward(g * g, [1, 2, 3, 3], [1, 2, 2, 0], True),
                            lambda: (t64(values((1, 2, 5, 6), 13)),), {}),
                           (lambda g: ember._pad_edge_backward(g * g, [2, 3], [-1, 3], False),
                            lambda: (t64(values((2, 5), 14)),), {})],
    "max_unpool2d": [(lambda a: NN.max_unpool2d(a * a, ember.tensor([[[0, 7], [9, 14]], [[4, 3], [12, 15]]]), [4, 4]),
                      lambda: (t64(values((2, 2, 2), 15)),), {})],
    "_upsample_bicubic2d_backward": [
        (lambda g: ember._upsample_bicubic2d_backward(g * g, [3, 5], [1, 1, 2, 3], False), lambda: (t64(values((1, 1, 3, 5), 23)),), {}),
        (lambda g: ember._upsample_bicubic2d_backward(g * g, [4, 2], [1, 2, 3, 3], True), lambda: (t64(values((1, 2, 4, 2), 24)),), {}),
        (lambda g: ember._upsample_bicubic2d_backward(g * g, [2, 5], [1, 1, 3, 2], False, 0.7, 2.6),
         lambda: (t64(values((1, 1, 2, 5), 25)),), {})],
}
JVP_CHECKED = set(HIGHER_ORDER_CASES)


def pad_op(kind, k):
    return getattr(NN, f"{kind}_pad{k}d")


# ---------------------------------------------------------------- pad kernels
@pytest.mark.parametrize("kind", ["reflection", "replication"])
@pytest.mark.parametrize("k,shape,padding", [(1, (2, 3, 7), (3, 2)), (1, (4, 6), (0, 5)), (2, (2, 3, 5, 6), (2, 1, 4, 3)),
                                             (2, (3, 4, 5), (0, 4, 1, 0)), (3, (1, 2, 4, 5, 6), (1, 2, 3, 0, 2, 3)),
                                             (3, (2, 3, 4, 5), (3, 3, 1, 1, 2, 0))])
def test_pads_match_numpy_on_every_dtype(kind, k, shape, padding):
    if kind == "replication":
        padding = tuple(p + 2 for p in padding)  # edge padding may exceed the dim
    a = values(shape)
    for dtype in NUMERIC:
        x = ember.tensor(a).to(dtype) if dtype.is_floating_point else ember.tensor(np.round(a * 3) % 100).to(dtype)
        want = np_edge_pad(x.to(F64).numpy(), padding, kind)
        got = pad_op(kind, k)(x, padding)
        assert got.dtype == dtype and got.shape == want.shape
        np.testing.assert_array_equal(got.to(F64).numpy(), want)
        mode = "reflect" if kind == "reflection" else "replicate"
        np.testing.assert_array_equal(F.pad(x, padding, mode).to(F64).numpy(), want)


@pytest.mark.skipif(torch is None, reason="needs torch")
@pytest.mark.parametrize("kind", ["reflection", "replication"])
@pytest.mark.parametrize("k", [1, 2, 3])
def test_negative_amounts_crop_as_pytorch(kind, k):
    shape = (2, 3, 5, 6, 7)[:k + 2]
    a = values(shape, 1)
    for left, right in [(-2, 3), (3, -4), (-1, -2), (0, -3), (-4, 2)]:
        padding = (left, right) * k
        want = getattr(torch._C._nn, f"{kind}_pad{k}d")(torch.tensor(a), padding)
        np.testing.assert_array_equal(pad_op(kind, k)(ember.tensor(a), padding).numpy(), want.numpy())


@pytest.mark.parametrize("kind", ["reflection", "replication"])
def test_pads_read_strided_and_channels_last_inputs(kind):
    a = values((2, 5, 6, 7), 2)
    padding = (2, 3, 1, 4)
    want = np_edge_pad(a, padding, kind)
    channels_last = ember.tensor(np.ascontiguousarray(a.transpose(0, 2, 3, 1))).permute(0, 3, 1, 2)
    transposed = ember.tensor(np.ascontiguousarray(np.swapaxes(a, -1, -2))).transpose(-1, -2)
    sliced = ember.tensor(np.repeat(a, 2, axis=-1))[..., ::2]
    for x in (channels_last, transposed, sliced):
        assert not x.is_contiguous()
        np.testing.assert_array_equal(pad_op(kind, 2)(x, padding).numpy(), want)


@pytest.mark.parametrize("kind", ["reflection", "replication"])
@pytest.mark.parametrize("k", [1, 2, 3])
def test_empty_batch_and_unbatched_inputs(kind, k):
    spatial = (4, 5, 6)[:k]
    out = pad_op(kind, k)(ember.ones(0, 2, *spatial), (1, 2) * k)
    assert out.shape == (0, 2, *(s + 3 for s in spatial))
    a = values((3, *spatial), 3)
    np.testing.assert_array_equal(pad_op(kind, k)(ember.tensor(a), (1, 2) * k).numpy(), np_edge_pad(a, (1, 2) * k, kind))
    g = ember.zeros(0, 2, *spatial, dtype=F64, requires_grad=True)
    pad_op(kind, k)(g, (1, 2) * k).sum().backward()
    assert g.grad.shape == g.shape


@pytest.mark.parametrize("kind", ["reflection", "replication"])
def test_realistic_sizes_forward_and_backward_at_1_2_3_threads(kind, threads):
    # 96 planes of 40x50 padded to 46x57: above 4 grains, so rows and planes split over threads
    a = values((4, 24, 40, 50), 4).astype(np.float32)
    padding = (3, 4, 2, 4)
    assert a.size > 4 * GRAIN
    x = ember.tensor(a, requires_grad=True)
    y = pad_op(kind, 2)(x, padding)
    np.testing.assert_array_equal(y.detach().numpy(), np_edge_pad(a, padding, kind))
    g = values(y.shape, 5).astype(np.float32)
    y.backward(ember.tensor(g))
    want = np_pad_backward(g.astype(np.float64), a.shape, padding, kind)
    np.testing.assert_allclose(x.grad.numpy(), want, rtol=1e-5, atol=1e-5)
    if torch is not None:
        tx = torch.tensor(a, requires_grad=True)
        getattr(torch._C._nn, f"{kind}_pad2d")(tx, padding).backward(torch.tensor(g))
        np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-5, atol=1e-5)


def np_pad_backward(g, shape, padding, kind):
    """The pads' gradient: each output element added at the input position np.pad read it from."""
    index = np.arange(int(np.prod(shape))).reshape(shape)
    src = np_edge_pad(index, padding, kind)
    return np.bincount(src.ravel(), weights=g.ravel(), minlength=index.size).reshape(shape)


@pytest.mark.parametrize("dtype", [ember.float16, ember.bfloat16, ember.float32])
def test_backward_of_narrow_floats_accumulates_in_float(dtype):
    a = values((2, 3, 9), 6)
    x = ember.tensor(a).to(dtype).requires_grad_(True)
    y = NN.reflection_pad1d(x, (5, 6))
    g = values(y.shape, 7)
    y.backward(ember.tensor(g).to(dtype))
    want = np_pad_backward(ember.tensor(g).to(dtype).to(F64).numpy(), a.shape, (5, 6), "reflection")
    assert x.grad.dtype == dtype
    np.testing.assert_allclose(x.grad.to(F64).numpy(), want, rtol=1e-2 if dtype == ember.bfloat16 else 2e-3, atol=1e-2)


@pytest.mark.parametrize("kind", ["reflection", "replication"])
@pytest.mark.parametrize("k,shape,padding", [(1, (2, 5), (3, -1)), (2, (1, 4, 4), (2, 1, -1, 3)), (3, (1, 3, 3, 4), (1, 2, 2, 0, 1, 2))])
def test_gradients_gradgrad_and_jvps(kind, k, shape, padding):
    x = t64(values(shape, 8))
    fn = lambda t: pad_op(kind, k)(t, padding) ** 2
    assert gradcheck(fn, (x,), check_forward_ad=True)
    assert gradgradcheck(fn, (x,), check_fwd_over_rev=True)


@pytest.mark.parametrize("reflect", [True, False])
def test_pad_backward_op_is_differentiable(reflect):
    # _pad_edge_backward's own derivative is the forward pad (double backward of the pads)
    g = t64(values((1, 2, 5, 6), 9))
    fn = lambda t: ember._pad_edge_backward(t * t, [1, 2, 3, 3], [1, 2, 2, 0], reflect) * 3
    assert gradcheck(fn, (g,), check_forward_ad=True)
    assert gradgradcheck(fn, (g,), check_fwd_over_rev=True)


def test_circular_pad_matches_numpy_wrap_and_is_differentiable():
    a = values((2, 3, 4, 5), 10)
    np.testing.assert_array_equal(NN._pad_circular(ember.tensor(a), (2, 3, 1, 4)).numpy(),
                                  np.pad(a, [(0, 0), (0, 0), (1, 4), (2, 3)], mode="wrap"))
    np.testing.assert_array_equal(F.pad(ember.tensor(a), (2, 3, 1, 4), "circular").numpy(),
                                  np.pad(a, [(0, 0), (0, 0), (1, 4), (2, 3)], mode="wrap"))
    x = t64(values((1, 2, 3, 4), 11))
    fn = lambda t: NN._pad_circular(t, (1, 2, 2, -1)) ** 2
    assert gradcheck(fn, (x,), check_forward_ad=True)
    assert gradgradcheck(fn, (x,), check_fwd_over_rev=True)


PAD_ERRORS = [
    (lambda nn, x: nn.reflection_pad1d(x[0], (1, 1, 1)), RuntimeError, r"padding size is expected to be 2, but got: 3"),
    (lambda nn, x: nn.replication_pad2d(x, (1, 1)), RuntimeError, r"padding size is expected to be 4"),
    (lambda nn, x: nn.reflection_pad1d(x, (1, 1)), RuntimeError,
     r"Expected 2D or 3D \(batch mode\) tensor with possibly 0 batch size and other non-zero dimensions for input, "
     r"but got: \[1, 2, 4, 4\]"),
    (lambda nn, x: nn.replication_pad3d(x[:, :0], (1,) * 6), RuntimeError,
     r"Expected 4D or 5D \(batch mode\) tensor with possibly 0 batch size and other non-zero dimensions for input, "
     r"but got: \[1, 0, 4, 4\]"),
    (lambda nn, x: nn.reflection_pad2d(x, (4, 4, 1, 1)), RuntimeError,
     r"Argument #4: Padding size should be less than the corresponding input dimension, but got: padding \(4, 4\) at "
     r"dimension 3 of input \[1, 2, 4, 4\]"),
    (lambda nn, x: nn.reflection_pad2d(x, (1, 1, 1, 4)), RuntimeError,
     r"Argument #6: Padding size should be less than the corresponding input dimension, but got: padding \(1, 4\) at "
     r"dimension 2 of input \[1, 2, 4, 4\]"),
    (lambda nn, x: nn.reflection_pad3d(x, (1, 1, 1, 1, 2, 1)), RuntimeError,
     r"Argument #8: Padding size should be less than the corresponding input dimension, but got: padding \(2, 1\) at "
     r"dimension 1 of input \[1, 2, 4, 4\]"),
    (lambda nn, x: nn.replication_pad1d(x[0], (-3, -2)), RuntimeError, r"input \(W: 4\) is too small. Calculated output W: -1"),
    (lambda nn, x: nn.reflection_pad2d(x, (-2, -2, -3, -2)), RuntimeError,
     r"input \(H: 4, W: 4\) is too small. Calculated output H: -1 W: 0"),
    (lambda nn, x: nn.replication_pad3d(x, (0, 0, 0, 0, -2, -1)), RuntimeError,
     r"Trying to create tensor with negative dimension -1: \[1, -1, 4, 4\]"),
    (lambda nn, x: nn.reflection_pad2d(x.bool(), (1, 1, 1, 1)), NotImplementedError,
     "\"reflection_pad2d\" not implemented for 'Bool'"),
    (lambda nn, x: nn.replication_pad1d(x[0].bool(), (1, 1)), NotImplementedError,
     "\"replication_pad1d\" not implemented for 'Bool'"),
]


@pytest.mark.parametrize("fn,cls,message", PAD_ERRORS, ids=[str(i) for i in range(len(PAD_ERRORS))])
def test_pad_errors_match_pytorch(fn, cls, message):
    a = values((1, 2, 4, 4), 12).astype(np.float32)
    with pytest.raises(cls, match=message):
        fn(NN, ember.tensor(a))
    if torch is not None:
        with pytest.raises(cls, match=message):
            fn(torch._C._nn, torch.tensor(a))


def test_pad_backward_checks_its_arguments():
    g = ember.ones(1, 2, 6, dtype=F64)
    with pytest.raises(RuntimeError, match="is not the padded input shape"):
        ember._pad_edge_backward(g, [1, 2, 4], [1, 2], True)
    with pytest.raises(RuntimeError, match="reflect padding"):
        ember._pad_edge_backward(g, [1, 2, 2], [2, 2], True)
    with pytest.raises(NotImplementedError, match="_pad_edge_backward"):
        ember._pad_edge_backward(g.to(ember.int64), [1, 2, 4], [1, 1], False)


@needs_gpu
@pytest.mark.parametrize("op", ["reflection_pad1d", "replication_pad1d"])
def test_cuda_slot_names_the_op_and_device(op):
    with pytest.raises(NotImplementedError, match=f"{op}: .*not implemented on cuda"):
        getattr(NN, op)(ember.ones(2, 4).cuda(), (1, 1))


# ---------------------------------------------------------------- max_unpool
def np_unpool(a, idx, oh, ow):
    planes = a.reshape(-1, a.shape[-2] * a.shape[-1])
    out = np.zeros((planes.shape[0], oh * ow), a.dtype)
    np.put_along_axis(out, idx.reshape(planes.shape), planes, axis=1)
    return out.reshape(*a.shape[:-2], oh, ow)


def pooled(shape, k, s=None, p=0, seed=16):
    """A max_pool2d result and its indices, from distinct values (no ties)."""
    a = np.random.default_rng(seed).permutation(int(np.prod(shape))).reshape(shape) / 7.0
    y, i = F.max_pool2d(ember.tensor(a), k, s, p, return_indices=True)
    return a, y.numpy(), i.numpy()


@pytest.mark.parametrize("shape,k,s,p,out", [((2, 3, 6, 8), 2, None, 0, None), ((1, 2, 7, 7), 3, 2, 1, None),
                                             ((3, 5, 6), 2, None, 0, (5, 7)), ((2, 2, 5, 5), (2, 3), (2, 1), 0, (1, 2, 5, 5))])
def test_max_unpool2d_puts_values_back(shape, k, s, p, out):
    _, y, i = pooled(shape, k, s, p)
    got = F.max_unpool2d(ember.tensor(y), ember.tensor(i), k, s, p, out)
    size = got.shape[-2:]
    np.testing.assert_array_equal(got.numpy(), np_unpool(y, i, *size))
    if torch is not None:
        want = TF.max_unpool2d(torch.tensor(y), torch.tensor(i), k, s, p, out)
        assert tuple(want.shape) == tuple(got.shape)
        np.testing.assert_array_equal(got.numpy(), want.numpy())
    for dtype in (ember.float16, ember.bfloat16, ember.float32):
        np.testing.assert_array_equal(F.max_unpool2d(ember.tensor(y).to(dtype), ember.tensor(i), k, s, p, out)
                                      .to(F64).numpy(), np_unpool(ember.tensor(y).to(dtype).to(F64).numpy(), i, *size))


def test_max_unpool2d_non_contiguous_empty_batch_and_threads(threads):
    _, y, i = pooled((4, 32, 40, 40), 2, seed=17)      # 51200 pooled elements into 204800: past the grain
    ty, ti = ember.tensor(np.ascontiguousarray(np.swapaxes(y, -1, -2))).transpose(-1, -2), ember.tensor(i)
    assert not ty.is_contiguous()
    np.testing.assert_array_equal(F.max_unpool2d(ty, ti, 2).numpy(), np_unpool(y, i, 40, 40))
    assert F.max_unpool2d(ember.zeros(0, 2, 2, 2), ember.zeros(0, 2, 2, 2, dtype=ember.int64), 2).shape == (0, 2, 4, 4)


def test_max_unpool1d_matches_torch():
    a = np.random.default_rng(18).permutation(2 * 3 * 9).reshape(2, 3, 9) / 5.0
    y, i = F.max_pool1d(ember.tensor(a), 3, 2, 1, return_indices=True)
    got = F.max_unpool1d(y, i, 3, 2, 1)
    assert got.shape == (2, 3, 9)
    np.testing.assert_array_equal(got.numpy(), np_unpool(y.numpy()[..., None], i.numpy()[..., None], 9, 1)[..., 0])
    assert F.max_unpool1d(y[0], i[0], 3, 2, 1, output_size=[10]).shape == (3, 10)
    if torch is not None:
        ty, ti = TF.max_pool1d(torch.tensor(a), 3, 2, 1, return_indices=True)
        np.testing.assert_array_equal(got.numpy(), TF.max_unpool1d(ty, ti, 3, 2, 1).numpy())


def test_max_unpool_gradients_gradgrad_and_jvps():
    _, y, i = pooled((1, 2, 4, 6), 2, seed=19)
    idx = ember.tensor(i)
    fn = lambda t: F.max_unpool2d(t, idx, 2) ** 2
    assert gradcheck(fn, (t64(y),), check_forward_ad=True)
    assert gradgradcheck(fn, (t64(y),), check_fwd_over_rev=True)
    # unpool after pool: the pool's gradient flows back through both
    x = t64(values((1, 2, 4, 6), 20))
    round_trip = lambda t: F.max_unpool2d(*F.max_pool2d(t, 2, return_indices=True), 2) * t
    assert gradcheck(round_trip, (x,), check_forward_ad=True)
    assert gradgradcheck(round_trip, (x,))


UNPOOL_ERRORS = [
    (lambda F, y, i: F.max_unpool2d(y, i * 3, 2), RuntimeError, r"Found an invalid max index: 45 \(output volumes are of size 4x4"),
    (lambda F, y, i: F.max_unpool2d(y, -i, 2), RuntimeError, r"Found an invalid max index: -\d+ \(output volumes are of size 4x4"),
    (lambda F, y, i: F.max_unpool2d(y, i.int(), 2), RuntimeError, "elements in indices should be type int64 but got: Int"),
    (lambda F, y, i: F.max_unpool2d(y, i[..., :1], 2), RuntimeError,
     r"Expected shape of indices to be same as that of the input tensor \(\[1, 1, 2, 2\]\) but got indices tensor with "
     r"shape: \[1, 1, 2, 1\]"),
    (lambda F, y, i: F.max_unpool2d(y[0, 0], i[0, 0], 2), RuntimeError,
     "Input to max_unpooling2d should be a 3d or 4d Tensor, but got a tensor with 2 dimensions."),
    (lambda F, y, i: F.max_unpool2d(y[:, :0], i[:, :0], 2), RuntimeError,
     r"max_unpooling2d_forward_out_cpu\(\): Expected input to have non-zero size for non-batch dimensions, but got "
     r"\[1, 0, 2, 2\] with dimension 1 being empty."),
    (lambda F, y, i: F.max_unpool2d(y, i, 2, output_size=(7, 7)), ValueError,
     r'invalid output_size "\[7, 7\]" \(dim 0 must be between 2 and 6\)'),
    (lambda F, y, i: F.max_unpool2d(y, i, 2, output_size=(1, 5, 5)), ValueError,
     "output_size should be a sequence containing 2 or 4 elements, but it has a length of '3'"),
    (lambda F, y, i: F.max_unpool2d(y.to(i.dtype), i, 2), NotImplementedError, "\"max_unpool2d\" not implemented for 'Long'"),
    (lambda F, y, i: F.max_unpool1d(y[0], i[0], 2), RuntimeError, r"Found an invalid max index: 15 \(output volumes are of size 4x1"),
]


@pytest.mark.parametrize("fn,cls,message", UNPOOL_ERRORS, ids=[str(i) for i in range(len(UNPOOL_ERRORS))])
def test_max_unpool_errors_match_pytorch(fn, cls, message):
    a = np.arange(16.0).reshape(1, 1, 4, 4)
    y, i = F.max_pool2d(ember.tensor(a), 2, return_indices=True)
    with pytest.raises(cls, match=message):
        fn(F, y, i)
    if torch is not None:
        ty, ti = TF.max_pool2d(torch.tensor(a), 2, return_indices=True)
        # which bad index torch names depends on its dtype's code path; the wording does not
        loose = re.sub(r"index: -?\d+", r"index: -?\\d+", message).replace("\\[7, 7\\]", "\\(7, 7\\)")
        with pytest.raises(cls, match=loose):
            fn(TF, ty, ti)


# ---------------------------------------------------------------- local_response_norm
def np_lrn(a, size, alpha, beta, k):
    c = a.shape[1]
    sq = np.pad(a * a, [(0, 0), (size // 2, (size - 1) // 2)] + [(0, 0)] * (a.ndim - 2))
    mean = sum(sq[:, j:j + c] for j in range(size)) / size
    return a / (k + alpha * mean) ** beta


@pytest.mark.parametrize("shape,size", [((2, 5, 7), 3), ((2, 6, 4, 5), 4), ((1, 4, 3, 2, 3), 5), ((2, 3, 4), 1)])
def test_local_response_norm_matches_numpy_and_torch(shape, size):
    a = values(shape, 21)
    got = F.local_response_norm(ember.tensor(a), size, 0.3, 0.6, 1.5)
    np.testing.assert_allclose(got.numpy(), np_lrn(a, size, 0.3, 0.6, 1.5), rtol=1e-12)
    assert F.local_response_norm(ember.tensor(a).float(), size).dtype == ember.float32
    if torch is not None:
        np.testing.assert_allclose(got.numpy(), TF.local_response_norm(torch.tensor(a), size, 0.3, 0.6, 1.5).numpy(),
                                   rtol=1e-12)


def test_local_response_norm_gradients_and_errors():
    x = t64(values((1, 4, 3, 2), 22))
    fn = lambda t: F.local_response_norm(t, 3, 0.5, 0.75, 1.0)
    assert gradcheck(fn, (x,), check_forward_ad=True)
    assert gradgradcheck(fn, (x,), check_fwd_over_rev=True)
    empty = ember.ones(0, 3, 4)
    assert F.local_response_norm(empty, 2) is empty
    with pytest.raises(ValueError, match=r"Expected 3D or higher dimensionality +input \(got 2 dimensions\)"):
        F.local_response_norm(ember.ones(3, 4), 2)


@needs_gpu
def test_max_unpool_cuda_slot_names_the_op_and_device():
    with pytest.raises(NotImplementedError, match="max_unpool2d: .*not implemented on cuda"):
        NN.max_unpool2d(ember.ones(1, 2, 2).cuda(), ember.zeros(1, 2, 2, dtype=ember.int64).cuda(), [4, 4])


# ---------------------------------------------------------------- bicubic
BICUBIC_SIZES = [dict(size=(9, 4)), dict(size=(3, 11)), dict(scale_factor=2.0), dict(scale_factor=(0.6, 1.7)),
                 dict(scale_factor=1.5, recompute_scale_factor=True), dict(size=(1, 1))]


@pytest.mark.parametrize("align_corners", [False, True])
@pytest.mark.parametrize("kw", BICUBIC_SIZES, ids=[str(k) for k in BICUBIC_SIZES])
def test_bicubic_matches_numpy_and_torch(kw, align_corners):
    from harness.refs import np_upsample_bicubic
    a = values((2, 3, 5, 7), 26)
    got = F.interpolate(ember.tensor(a), mode="bicubic", align_corners=align_corners, **kw)
    scales = kw.get("scale_factor") if not kw.get("recompute_scale_factor") else None
    scales = (scales, scales) if isinstance(scales, float) else (scales or (None, None))
    np.testing.assert_allclose(got.numpy(), np_upsample_bicubic(a, got.shape[-2:], align_corners, *scales), rtol=1e-12,
                               atol=1e-12)
    if torch is not None:
        for dtype, tol in ((np.float64, 1e-12), (np.float32, 2e-6)):
            want = TF.interpolate(torch.tensor(a.astype(dtype)), mode="bicubic", align_corners=align_corners, **kw)
            mine = F.interpolate(ember.tensor(a.astype(dtype)), mode="bicubic", align_corners=align_corners, **kw)
            np.testing.assert_allclose(mine.numpy(), want.numpy(), rtol=tol, atol=tol)
        tx = torch.tensor(a, requires_grad=True)
        ty = TF.interpolate(tx, mode="bicubic", align_corners=align_corners, **kw)
        g = values(tuple(ty.shape), 27)
        ty.backward(torch.tensor(g))
        x = ember.tensor(a, requires_grad=True)
        F.interpolate(x, mode="bicubic", align_corners=align_corners, **kw).backward(ember.tensor(g))
        np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-12, atol=1e-12)


def test_bicubic_half_types_non_contiguous_and_threads(threads):
    from harness.refs import np_upsample_bicubic
    a = values((3, 16, 24, 20), 28).astype(np.float32)        # 96 planes of 480 outputs x 16 reads: past the grain
    x = ember.tensor(np.ascontiguousarray(np.swapaxes(a, -1, -2))).transpose(-1, -2).requires_grad_(True)
    y = F.interpolate(x, size=(31, 13), mode="bicubic")
    np.testing.assert_allclose(y.detach().numpy(), np_upsample_bicubic(a, (31, 13), False), rtol=1e-5, atol=1e-5)
    g = values(y.shape, 29).astype(np.float32)
    y.backward(ember.tensor(g))
    if torch is not None:
        tx = torch.tensor(a, requires_grad=True)
        TF.interpolate(tx, size=(31, 13), mode="bicubic").backward(torch.tensor(g))
        np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-4, atol=1e-4)
    for dtype in (ember.float16, ember.bfloat16):
        h = ember.tensor(a[:1, :2]).to(dtype)
        out = F.interpolate(h, scale_factor=1.5, mode="bicubic", align_corners=True)
        assert out.dtype == dtype
        want = np_upsample_bicubic(h.float().numpy(), out.shape[-2:], True, 1.5, 1.5)
        np.testing.assert_allclose(out.float().numpy(), want, rtol=1e-2, atol=2e-2)


def test_bicubic_gradients_gradgrad_and_jvps():
    x = t64(values((1, 2, 3, 4), 30))
    for fn in (lambda t: F.interpolate(t, size=(5, 3), mode="bicubic") ** 2,
               lambda t: F.interpolate(t, scale_factor=1.7, mode="bicubic", align_corners=True) * t.sum()):
        assert gradcheck(fn, (x,), check_forward_ad=True)
        assert gradgradcheck(fn, (x,), check_fwd_over_rev=True)
    for fn, args, _ in HIGHER_ORDER_CASES["_upsample_bicubic2d_backward"]:
        assert gradcheck(fn, args(), check_forward_ad=True)


BICUBIC_ERRORS = [
    (lambda F, x: F.interpolate(x, size=(0, 3), mode="bicubic"), RuntimeError,
     r"Input and output sizes should be greater than 0, but got input \(H: 3, W: 4\) output \(H: 0, W: 3\)"),
    (lambda F, x: F.interpolate(x[:, :, :0], size=(2, 3), mode="bicubic"), RuntimeError,
     r"Input and output sizes should be greater than 0, but got input \(H: 0, W: 4\) output \(H: 2, W: 3\)"),
    (lambda F, x: F.interpolate(x[0], size=4, mode="bicubic"), NotImplementedError,
     r"Input Error: Only 3D, 4D and 5D input Tensors supported \(got 3D\)"),
    (lambda F, x: F.interpolate(x.long(), size=4, mode="bicubic"), NotImplementedError, "not implemented for 'Long'"),
]


@pytest.mark.parametrize("fn,cls,message", BICUBIC_ERRORS, ids=[str(i) for i in range(len(BICUBIC_ERRORS))])
def test_bicubic_errors_match_pytorch(fn, cls, message):
    a = values((1, 2, 3, 4), 31).astype(np.float32)
    with pytest.raises(cls, match=message):
        fn(F, ember.tensor(a))
    if torch is not None and message is not None:
        with pytest.raises(cls, match=message):
            fn(TF, torch.tensor(a))
    with pytest.raises(RuntimeError, match="It is expected output_size equals to 2, but got size 1"):
        NN.upsample_bicubic2d(ember.tensor(a), [5], False)
    with pytest.raises(RuntimeError, match="It is expected input_size equals to 4, but got size 3"):
        NN.upsample_bicubic2d(ember.tensor(a[0]), [5, 6], False)
    with pytest.raises(RuntimeError, match="is not the resampled shape"):
        ember._upsample_bicubic2d_backward(ember.ones(1, 2, 3, 3), [5, 6], [1, 2, 3, 4], False)


@needs_gpu
def test_bicubic_cuda_slot_names_the_op_and_device():
    with pytest.raises(NotImplementedError, match="upsample_bicubic2d: .*not implemented on cuda"):
        F.interpolate(ember.ones(1, 1, 4, 4).cuda(), scale_factor=2, mode="bicubic")
