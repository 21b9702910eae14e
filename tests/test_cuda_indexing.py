"""Advanced indexing on CUDA (index, index_put_, x[...] and x[...] = v) against
the CPU kernels (skipped without a GPU): every dtype, one / several /
separated index tensors, index tensors on the CPU or the GPU, int32 and
negative indices, masks on either device, slicing mixed with advanced
indices, broadcast and cast values, accumulate with many duplicates,
out-of-range indices, and gradients that stay on the device."""
import numpy as np
import pytest

import ember

gpu = pytest.mark.skipif(not ember.cuda.is_available(), reason="needs a CUDA GPU")
pytestmark = gpu

ALL = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64"]


def numpy(t):
    t = t.cpu()
    if t.dtype == ember.bfloat16:
        t = t.float()
    return np.array(t.numpy())


def sample(shape, dtype, seed=0):
    rng = np.random.default_rng(seed)
    if dtype == "bool":
        a = rng.integers(0, 2, size=shape).astype(bool)
    else:
        a = rng.integers(0 if dtype == "uint8" else -50, 50, size=shape).astype(np.float64)
    return ember.from_numpy(np.array(a)).to(getattr(ember, dtype))


def idx(values, dtype=ember.int64):
    return ember.tensor(values, dtype=dtype)


def on(indices, device):
    return [None if i is None else i.to(device) for i in indices]


A = np.array
CASES = {
    "single": [[2, 0, 3, 3]],
    "single-2d": [[[1, 2], [0, 3]]],
    "second-dim": [None, [4, 0, -1]],
    "last-dim": [None, None, [5, -6, 2]],
    "adjacent-pair": [[0, 3, 1], [4, 4, 0]],
    "adjacent-middle": [None, [[0], [2]], [1, 5, 3]],
    "separated": [[1, 2], None, [0, 5]],
    "separated-bcast": [[[1], [2], [3]], None, [0, 5]],
    "all-three": [[0, 1], [2, 3], [4, 5]],
    "zero-d": [2],
    "zero-d-and-vector": [1, None, [0, 2, 4]],
    "negative": [[-1, -4], [-5, 4]],
    "empty-index": [[]],
    "empty-index-middle": [None, []],
}


def make_indices(case, dtype=ember.int64):
    return [None if i is None else idx(i, dtype) for i in CASES[case]]


# ---------------------------------------------------------------- index (gather)

@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("where", ["cuda", "cpu"])
def test_index_cases(case, where):
    x = sample((4, 5, 6), "float32")
    indices = make_indices(case)
    got = ember.index(x.cuda(), on(indices, where))
    want = ember.index(x, indices)
    assert got.is_cuda and tuple(got.shape) == tuple(want.shape)
    np.testing.assert_array_equal(numpy(got), numpy(want))


@pytest.mark.parametrize("dtype", ALL)
def test_index_every_dtype(dtype):
    x = sample((4, 5, 6), dtype, seed=1)
    for case in ("single", "separated", "adjacent-middle", "last-dim"):
        indices = make_indices(case)
        got = ember.index(x.cuda(), on(indices, "cuda"))
        assert got.dtype == x.dtype
        np.testing.assert_array_equal(numpy(got), numpy(ember.index(x, indices)))


def test_index_int32_and_mixed_devices():
    x = sample((4, 5, 6), "int64")
    i32 = idx([3, -1, 0], ember.int32)
    i64 = idx([[4], [0]])
    want = ember.index(x, [i32, i64])
    for a, b in ((i32.cuda(), i64.cuda()), (i32.cuda(), i64), (i32, i64.cuda()), (i32, i64)):
        np.testing.assert_array_equal(numpy(ember.index(x.cuda(), [a, b])), numpy(want))


def test_index_noncontiguous_self_and_indices():
    x = sample((6, 8, 5), "float32")
    g = x.cuda()
    e = idx([[2, 0, 1], [5, 5, 3]]).t()            # non-contiguous index tensor
    for view in (lambda t: t.transpose(0, 2), lambda t: t[::2, 1:]):
        want = ember.index(view(x), [None, e])
        np.testing.assert_array_equal(numpy(ember.index(view(g), [None, e.cuda()])), numpy(want))
    bcast = idx([1, 3]).reshape(2, 1).expand(2, 4)  # stride-0 index
    np.testing.assert_array_equal(numpy(ember.index(g, [bcast.cuda()])), numpy(ember.index(x, [bcast])))


@pytest.mark.parametrize("mask_dtype", [ember.bool, ember.uint8])
@pytest.mark.parametrize("where", ["cuda", "cpu"])
def test_index_masks(mask_dtype, where):
    x = sample((4, 5, 6), "float32")
    m1 = ember.from_numpy(A([True, False, True, True])).to(mask_dtype)
    m2 = ember.from_numpy(np.random.default_rng(3).integers(0, 2, (4, 5)).astype(bool)).to(mask_dtype)
    for indices in ([m1], [None, None, ember.from_numpy(A([1, 0, 0, 1, 1, 0], dtype=bool)).to(mask_dtype)],
                    [m2], [m2, idx([5])], [ember.zeros(4, dtype=mask_dtype)]):
        want = ember.index(x, indices)
        got = ember.index(x.cuda(), on(indices, where))
        np.testing.assert_array_equal(numpy(got), numpy(want))


def test_index_big_rows():
    x = ember.randn(1000, 8192)
    i = idx(np.random.default_rng(0).integers(-1000, 1000, 3000).tolist())
    np.testing.assert_array_equal(numpy(ember.index(x.cuda(), [i.cuda()])), numpy(ember.index(x, [i])))
    j = idx(np.random.default_rng(1).integers(0, 8192, 5000).tolist())
    np.testing.assert_array_equal(numpy(ember.index(x.cuda(), [None, j.cuda()])), numpy(ember.index(x, [None, j])))


# ---------------------------------------------------------------- Python indexing on CUDA tensors

def test_getitem_forms():
    x = sample((4, 5, 6), "float32")
    g = x.cuda()
    mask = x > 0
    keys = [
        lambda m: m,                               # mask of every dim
        lambda m: m[:, :, 0],                      # 2-d mask
        lambda m: (slice(1, None), [0, 2]),        # slicing + list
        lambda m: [0, 2],
        lambda m: ([0, 2], slice(None), [1, 3]),   # separated
        lambda m: (Ellipsis, [5, 0]),
        lambda m: (None, [1, 1], slice(None, None, 2)),
        lambda m: (m[:, 0, 0], 2),                 # mask + int
        lambda m: (m[:, :, 0], [1]),               # mask broadcast with a list
    ]
    for key in keys:
        want = x[key(mask)]
        for k in (key(mask.cuda()), key(mask)):    # masks on either device
            got = g[k]
            assert got.is_cuda
            np.testing.assert_array_equal(numpy(got), numpy(want))
    np.testing.assert_array_equal(numpy(g[idx([3, -1]).cuda()]), numpy(x[idx([3, -1])]))
    np.testing.assert_array_equal(numpy(g[ember.tensor(True)]), numpy(x[ember.tensor(True)]))
    np.testing.assert_array_equal(numpy(g[..., ember.tensor(False).cuda()]), numpy(x[..., ember.tensor(False)]))


def test_setitem_forms():
    x = sample((4, 5, 6), "float32")
    mask = x > 10
    row = ember.arange(6.0)
    for key, value in [
        (mask, 7.0),                                # mask = scalar
        (mask[:, :, 0], row),                       # mask = broadcast row
        ([0, 2], ember.ones(2, 5, 6)),              # list
        ((slice(1, 3), [4, 0]), -1.0),              # slicing + list
        (([0, 3], slice(None), [1, 5]), row[:5]),   # separated indices, broadcast value
        (idx([-1, 1]), 3),                          # int value into a float tensor
    ]:
        want = x.clone()
        want[key] = value
        for on_device in (True, False):
            g = x.cuda()
            k = key.cuda() if on_device and isinstance(key, ember.Tensor) else key
            v = value.cuda() if isinstance(value, ember.Tensor) else value
            g[k] = v
            np.testing.assert_array_equal(numpy(g), numpy(want))


def test_setitem_values_cast_and_0d_cpu_value():
    x = sample((5, 4), "int32")
    g = x.cuda()
    g[[0, 4]] = ember.tensor([1.7, -2.2, 3.9, 0.5]).cuda()       # cast to int32
    want = x.clone()
    want[[0, 4]] = ember.tensor([1.7, -2.2, 3.9, 0.5])
    np.testing.assert_array_equal(numpy(g), numpy(want))
    g[idx([1])] = ember.tensor(9)                                 # a 0-d CPU value moves
    assert numpy(g)[1].tolist() == [9, 9, 9, 9]
    with pytest.raises(RuntimeError, match="index_put_"):
        g[idx([1])] = ember.tensor([1, 2, 3, 4])                   # other CPU values do not


# ---------------------------------------------------------------- index_put_

@pytest.mark.parametrize("case", [c for c in CASES if c != "none-only"])
@pytest.mark.parametrize("where", ["cuda", "cpu"])
def test_index_put_cases(case, where):
    x = sample((4, 5, 6), "float32")
    indices = make_indices(case)
    shape = tuple(ember.index(x, indices).shape)
    v = sample(shape, "float32", seed=2)
    for accumulate in (False, True):
        want = x.clone().index_put_(indices, v, accumulate=accumulate)
        g = x.cuda()
        r = g.index_put_(on(indices, where), v.cuda(), accumulate=accumulate)
        assert r.is_cuda
        if accumulate or case not in ("single", "adjacent-pair", "separated-bcast"):  # no duplicates
            np.testing.assert_array_equal(numpy(g), numpy(want))


@pytest.mark.parametrize("dtype", ALL)
def test_index_put_every_dtype(dtype):
    x = sample((4, 5, 6), dtype)
    indices = make_indices("separated")
    v = sample((2, 5), dtype, seed=5)
    for accumulate in (False, True):
        want = x.clone().index_put_(indices, v, accumulate=accumulate)
        g = x.cuda().index_put_(on(indices, "cuda"), v.cuda(), accumulate=accumulate)
        np.testing.assert_array_equal(numpy(g), numpy(want))


@pytest.mark.parametrize("dtype", ALL)
def test_accumulate_many_duplicates(dtype):
    # 20000 values into 7 slots (and into neighbouring bytes of one word for the narrow types).
    rng = np.random.default_rng(6)
    x = sample((7, 3), dtype)
    i = idx(rng.integers(-7, 7, 20000).tolist())
    v = sample((20000, 3), dtype, seed=7)
    if dtype in ("float16", "bfloat16"):
        v = (v.float() * 0 + ember.from_numpy(rng.integers(-2, 3, (20000, 3)).astype(np.float32))).to(v.dtype)
    want = x.clone().index_put_([i], v, accumulate=True)
    got = x.cuda().index_put_([i.cuda()], v.cuda(), accumulate=True)
    if dtype == "float32":
        np.testing.assert_allclose(numpy(got), numpy(want), rtol=1e-4, atol=1e-2)
    elif dtype == "float64":
        np.testing.assert_allclose(numpy(got), numpy(want), rtol=1e-12)
    else:
        np.testing.assert_array_equal(numpy(got), numpy(want))  # integers, bool and small-integer halves are exact


def test_accumulate_gathers_masks_and_bcast():
    x = ember.zeros(6, 4).cuda()
    m = ember.tensor([True, False, True, True, False, True]).cuda()
    x.index_put_([m], ember.tensor([1.0, 2.0, 3.0, 4.0]).cuda(), accumulate=True)   # a row broadcast to 4 rows
    x.index_put_([idx([0, 0, 0]), idx([1])], ember.tensor(2.5).cuda(), accumulate=True)
    want = ember.zeros(6, 4)
    want.index_put_([m.cpu()], ember.tensor([1.0, 2.0, 3.0, 4.0]), accumulate=True)
    want.index_put_([idx([0, 0, 0]), idx([1])], ember.tensor(2.5), accumulate=True)
    np.testing.assert_array_equal(numpy(x), numpy(want))


def test_duplicates_without_accumulate_take_one_value():
    g = ember.zeros(3).cuda()
    g.index_put_([idx([1, 1, 1, 1]).cuda()], ember.tensor([5.0, 6.0, 7.0, 8.0]).cuda())
    assert numpy(g)[1] in (5.0, 6.0, 7.0, 8.0) and numpy(g)[0] == 0 and numpy(g)[2] == 0


def test_index_put_into_expanded_self_warns_and_writes():
    g = ember.zeros(1).cuda().expand(4)
    with pytest.warns(UserWarning, match="Use of index_put_ on expanded tensors is deprecated"):
        g.index_put_([idx([0])], ember.tensor(1.0).cuda())
    assert numpy(g).tolist() == [1.0] * 4


# ---------------------------------------------------------------- errors

@pytest.mark.parametrize("where", ["cuda", "cpu"])
def test_out_of_range_raises_index_error(where):
    g = ember.arange(24.0).reshape(2, 3, 4).cuda()
    with pytest.raises(IndexError, match="index: index 2 is out of bounds for dimension 0 with size 2"):
        ember.index(g, [idx([0, 2]).to(where)])
    with pytest.raises(IndexError, match="index -3 is out of bounds"):
        g[idx([-3]).to(where)]
    with pytest.raises(IndexError, match="index 7 is out of bounds"):
        g[:, idx([[0], [7]]).to(where)]
    with pytest.raises(IndexError, match="index_put_: index 5 is out of bounds"):
        g.index_put_([idx([5]).to(where)], ember.tensor(1.0).cuda(), accumulate=True)
    with pytest.raises(IndexError, match="out of bounds"):
        g[idx([9]).to(where)] = 1.0
    with pytest.raises(IndexError, match="out of bounds"):
        ember.index(g, [idx([0]).to(where), idx([1, 1]).to(where), idx([4]).to(where)])
    # The device is still usable, and nothing was written.
    np.testing.assert_array_equal(numpy(g), np.arange(24.0, dtype=np.float32).reshape(2, 3, 4))
    assert (g + 1).sum().item() == 24 * 25 / 2


def test_device_rules():
    x = ember.zeros(3, 4)
    with pytest.raises(IndexError, match="indices should be either on cpu or on the same device"):
        ember.index(x, [idx([0]).cuda()])
    with pytest.raises(IndexError, match="indices should be either on cpu or on the same device"):
        x[ember.tensor([True, False, True]).cuda()]
    with pytest.raises(IndexError, match="mask"):
        x.cuda()[ember.tensor([True, False]).cuda()]


# ---------------------------------------------------------------- autograd

def test_gradients_stay_on_device():
    x_cpu = ember.randn(5, 4)
    i = idx([0, 3, 3, -1, 0])
    x = x_cpu.cuda().detach().requires_grad_()
    (x[i.cuda()] * ember.arange(4.0).cuda()).sum().backward()
    xc = x_cpu.detach().requires_grad_()
    (xc[i] * ember.arange(4.0)).sum().backward()
    assert x.grad.is_cuda
    np.testing.assert_allclose(numpy(x.grad), numpy(xc.grad), rtol=1e-6)

    v_cpu = ember.randn(3).requires_grad_()
    v = v_cpu.cuda().detach().requires_grad_()
    base = ember.zeros(5, 3).cuda()
    base.index_put_([idx([1, 1, 4]).cuda()], v.unsqueeze(0).expand(3, 3), accumulate=True).sum().backward()
    assert v.grad.is_cuda
    np.testing.assert_allclose(numpy(v.grad), np.full(3, 3.0, np.float32))
