"""Tensor.__getitem__ / __setitem__ against NumPy (PyTorch's rules): basic
indexing (ints, slices, None, ...), advanced indexing (integer tensors and
lists, bool masks), views that write through, assignment, and the errors."""
import re
import warnings

import numpy as np
import pytest

import ember

try:
    import torch
except ImportError:  # the suite runs without PyTorch; only the comparisons need it
    torch = None

S = slice
E = Ellipsis
A = np.array


def base(dtype=np.int64, shape=(2, 3, 4)):
    a = np.arange(int(np.prod(shape))).reshape(shape)
    if dtype == np.bool_:
        a = a % 3 == 0
    else:
        a = (a - 5).astype(dtype) if dtype != np.uint8 else a.astype(np.uint8)
    return a


def to_ember_key(key):
    def conv(k):
        if isinstance(k, np.ndarray):
            return ember.tensor(k) if k.size else ember.tensor(k.tolist(), dtype=ember.int64)
        return k
    if isinstance(key, tuple):
        return tuple(conv(k) for k in key)
    return conv(key)


def check(a, key, t=None):
    t = ember.tensor(a) if t is None else t
    r = t[to_ember_key(key)]
    ref = a[key]
    assert tuple(r.shape) == ref.shape, key
    assert r.dtype == t.dtype
    np.testing.assert_array_equal(np.asarray(r.numpy()), ref)
    return r


def key_id(key):
    def one(k):
        if isinstance(k, slice):
            return f"{'' if k.start is None else k.start}:{'' if k.stop is None else k.stop}" + \
                (f":{k.step}" if k.step is not None else "")
        if k is Ellipsis:
            return "..."
        if isinstance(k, np.ndarray):
            return "arr" + "x".join(map(str, k.shape)) + ("b" if k.dtype == np.bool_ else "")
        return repr(k)
    return ",".join(one(k) for k in key) if isinstance(key, tuple) else one(key)


# ---------------------------------------------------------------- basic indexing

BASIC = [
    0, 1, -1, -2, (0, 0), (1, -1), (-1, -2, -3), (1, 2, 3), (0, 2, -4),
    S(None), S(1, None), S(None, 1), S(None, None, 2), S(-1, None), S(-100, 100), S(1, 0), S(5, 10),
    (S(None), S(1, None, 2)), (S(None), S(None), S(None, None, 3)), (S(None), S(-2, None), S(1, -1)),
    (S(None), S(2, 1)), (S(None), S(0, 3, 2), S(3, None, 5)), (0, S(1, 3)), (S(None), 1), (1, S(None), -1),
    None, (None, 0), (0, None), (None, None), (0, None, S(None)), (S(None), None, 1), (None, S(None), None, 2),
    E, (E, 1), (1, E), (1, E, 2), (E, None), (None, E, None), (E, S(1, None)), (0, E, 1, 2), (E, 0, 1, 2),
    (S(None), E), (None, 1, E, S(None, None, 2), None),
]


@pytest.mark.parametrize("key", BASIC, ids=[key_id(k) for k in BASIC])
def test_basic_indexing_matches_numpy(key):
    check(base(), key)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.uint8, np.int16, np.bool_, np.float16])
def test_basic_indexing_dtypes(dtype):
    a = base(dtype)
    for key in [(1, S(None), -1), (S(None), S(None, None, 2)), (None, E, 0)]:
        check(a, key)


def test_int_index_reduces_to_0d():
    t = ember.tensor([[1.5, 2.5], [3.5, 4.5]])
    r = t[1, 0]
    assert r.dim() == 0
    assert r.item() == 3.5
    r = t[-1][-1]
    assert r.item() == 4.5


def test_zero_dim_tensor_indexing():
    t = ember.tensor(5)
    assert t[None].tolist() == [5]
    assert tuple(t[None, None].shape) == (1, 1)
    with pytest.raises(IndexError, match="invalid index of a 0-dim tensor"):
        t[0]


def test_zero_dim_tensor_ellipsis_and_bool():
    t = ember.tensor(5)
    r = t[...]
    assert r.dim() == 0 and r.item() == 5
    assert t[True].tolist() == [5]
    assert tuple(t[False].shape) == (0,)


def test_bool_python_scalar_index():
    t = ember.tensor(base())
    assert tuple(t[True].shape) == (1, 2, 3, 4)
    assert tuple(t[False].shape) == (0, 2, 3, 4)
    assert tuple(t[None, True].shape) == (1, 1, 2, 3, 4)


def test_zero_dim_int_tensor_as_index():
    a = base()
    t = ember.tensor(a)
    r = t[ember.tensor(1)]
    assert tuple(r.shape) == (3, 4)
    np.testing.assert_array_equal(r.numpy(), a[1])
    r = t[:, ember.tensor(-1)]
    np.testing.assert_array_equal(r.numpy(), a[:, -1])


# ---------------------------------------------------------------- views

def test_basic_indexing_returns_views():
    t = ember.zeros(2, 3, 4)
    v = t[1]
    v.fill_(7)
    assert t[1].sum().item() == 7 * 12 and t[0].sum().item() == 0
    t[0, :, 1::2].fill_(1)
    assert t[0].tolist() == [[0.0, 1.0, 0.0, 1.0]] * 3
    v = t[None, ..., -1]
    v += 100
    assert t[:, :, 3].tolist() == [[101.0] * 3, [107.0] * 3]
    v = t[:, 1:2]
    assert v.data_ptr() == t.data_ptr() + 4 * t.element_size()
    s = t[0, 0, 0]
    assert s.data_ptr() == t.data_ptr()
    assert t[...].data_ptr() == t.data_ptr()


def test_view_strides():
    t = ember.zeros(2, 3, 4)
    assert tuple(t[:, ::2].stride()) == (12, 8, 1)
    assert tuple(t[1, :, 1::3].stride()) == (4, 3)
    assert tuple(t[None].stride())[1:] == (12, 4, 1)
    assert tuple(t[:, 1].stride()) == (12, 1)


def test_advanced_indexing_copies():
    t = ember.zeros(3, 4)
    r = t[ember.tensor([0, 1])]
    r.fill_(5)
    assert t.sum().item() == 0
    r = t[t == 0]
    r.fill_(5)
    assert t.sum().item() == 0
    r = t[[0, 2]]
    r.fill_(5)
    assert t.sum().item() == 0


# ---------------------------------------------------------------- advanced indexing

ADVANCED = [
    A([1, 0, 1]),
    A([-1, -2]),
    A([[0, 1], [1, 0]]),
    (A([0, 1]), A([1, 2])),
    (A([0, 1]), A([1, 2]), A([3, 0])),
    (S(None), A([2, 0, 2, 1])),
    (S(None), S(None), A([3, -1])),
    (S(None), A([0, 2]), A([1, 3])),  # adjacent: stays in place
    (A([0, 1]), S(None), A([1, 3])),  # separated: goes first
    (A([[0], [1]]), S(None), A([0, 2, 3])),  # separated + broadcast
    (A([[0], [1]]), A([0, 2, 1])),  # broadcast adjacent
    (S(None), A([[0], [2]]), A([1, 2, 3])),
    (E, A([0, 1])),
    (None, A([0, 1]), None),
    (A([0, 1]), None),
    (A([1, 0]), S(1, None), 0),
    (S(None), 1, A([0, 2])),
    (A([0, 1]), 1),
    (1, A([0, 2])),
    (0, A([0, 1]), A([1, 2])),
    (S(None), A([1])),
    A(1),
    A([], dtype=np.int64),
    (S(None), A([], dtype=np.int64)),
]


@pytest.mark.parametrize("key", ADVANCED, ids=[key_id(k) for k in ADVANCED])
def test_advanced_indexing_matches_numpy(key):
    check(base(), key)


def test_int_before_separated_index_selects_first():
    # PyTorch applies an integer as a select first: x[0, :, [0, 2]] is x[0][:, [0, 2]]
    # (shape (3, 2)), where NumPy would give (2, 3).
    a = base()
    r = ember.tensor(a)[0, :, ember.tensor([0, 2])]
    assert tuple(r.shape) == (3, 2)
    np.testing.assert_array_equal(r.numpy(), a[0][:, [0, 2]])


def test_zero_dim_index_tensor_acts_as_an_int():
    # As in NumPy, a 0-d integer index tensor is taken as an integer: a select
    # (a view), applied before the other indices.
    a = base()
    t = ember.tensor(a)
    r = t[ember.tensor(1), :, ember.tensor([0, 2])]
    assert tuple(r.shape) == (3, 2)
    np.testing.assert_array_equal(r.numpy(), a[1][:, [0, 2]])
    assert t[ember.tensor(1)].data_ptr() == t[1].data_ptr()


def test_list_indices():
    a = base()
    t = ember.tensor(a)
    np.testing.assert_array_equal(t[[1, 0, 1]].numpy(), a[[1, 0, 1]])
    np.testing.assert_array_equal(t[[0, 1], :, [1, 2]].numpy(), a[[0, 1], :, [1, 2]])
    np.testing.assert_array_equal(t[:, [2, 0], [1, 3]].numpy(), a[:, [2, 0], [1, 3]])
    np.testing.assert_array_equal(t[..., [-1, 0]].numpy(), a[..., [-1, 0]])
    np.testing.assert_array_equal(t[[True, False]].numpy(), a[[True, False]])


def test_empty_list_index():
    t = ember.tensor(base())
    r = t[[]]
    assert tuple(r.shape) == (0, 3, 4)
    assert r.dtype == ember.int64


@pytest.mark.parametrize("idx_dtype", ["int32", "int64"])
def test_index_tensor_dtypes(idx_dtype):
    a = base()
    t = ember.tensor(a)
    i = ember.tensor([2, 0, -1], dtype=getattr(ember, idx_dtype))
    np.testing.assert_array_equal(t[:, i].numpy(), a[:, [2, 0, -1]])


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.uint8, np.int8, np.bool_, np.float16])
def test_advanced_indexing_dtypes(dtype):
    a = base(dtype)
    for key in [(A([0, 1]), S(None), A([1, 3])), (S(None), A([[0], [2]]), A([1, 2, 3])), a > a.min()]:
        check(a, key)


def test_bfloat16_indexing():
    t = ember.arange(12.0).reshape(3, 4).to(ember.bfloat16)
    r = t[ember.tensor([2, 0]), 1:]
    assert r.dtype == ember.bfloat16
    assert r.float().tolist() == [[9.0, 10.0, 11.0], [1.0, 2.0, 3.0]]
    r = t[t > 8]
    assert r.float().tolist() == [9.0, 10.0, 11.0]


# ---------------------------------------------------------------- bool masks

MASKS = [
    lambda a: a > 3,  # full mask
    lambda a: (a % 2 == 0)[:, :, 0],  # mask over the first two dims
    lambda a: A([True, False]),  # per-dim mask on dim 0
    lambda a: (S(None), A([True, False, True])),  # per-dim mask on dim 1
    lambda a: (E, A([False, True, True, False])),  # per-dim mask on the last dim
    lambda a: (1, A([True, False, True])),
    lambda a: (A([True, True]), S(None), A([0, 2])),  # mask + int index
    lambda a: (A([True, False]), A([0, 2])),
    lambda a: a < -100,  # selects nothing
    lambda a: (None, a > 0),
]


@pytest.mark.parametrize("i", range(len(MASKS)))
def test_bool_mask_indexing_matches_numpy(i):
    a = base()
    key = MASKS[i](a)
    check(a, key)


def test_mask_on_2d_leading_dims():
    a = base()
    m = np.array([[True, False, True], [False, False, True]])
    r = check(a, m)
    assert tuple(r.shape) == (3, 4)


def test_mask_shape_mismatch():
    t = ember.tensor(base())
    with pytest.raises(IndexError, match="mask"):
        t[ember.tensor([True, False, True])]


# ---------------------------------------------------------------- __setitem__

def setitem_both(a, key, value):
    t = ember.tensor(a)
    a = a.copy()
    t[to_ember_key(key)] = ember.tensor(value) if isinstance(value, np.ndarray) else value
    a[key] = value
    np.testing.assert_array_equal(t.numpy(), a)
    return t


SET_CASES = [
    (0, 9),
    ((1, 2, 3), -7),
    ((S(None), 1), 5),
    ((S(None), S(None), S(None, None, 2)), 0),
    ((E, -1), A([1, 2, 3])),  # broadcast (3,) into (2, 3)
    ((S(None), S(1, None)), A([[1, 2, 3, 4]])),  # broadcast (1, 4) into (2, 2, 4)
    (1, A([10, 20, 30, 40])),
    ((None, 0), 3),
    (A([1, 0]), A(4)),
    (A([0, 1]), 1),
    ((A([0, 1]), A([2, 0])), A([100, 200, 300, 400])),
    ((A([0, 1]), S(None), A([1, 3])), A([[1, 2, 3], [4, 5, 6]])),
    ((S(None), A([0, 2])), A([[7], [8]])[:, :, None]),
    ((S(None), A([[0], [2]]), A([1, 3])), 42),
    ((A([-1]),), 5),
]


@pytest.mark.parametrize("key,value", SET_CASES, ids=[key_id(k) for k, _ in SET_CASES])
def test_setitem_matches_numpy(key, value):
    setitem_both(base(), key, value)


def test_setitem_masks():
    a = base()
    setitem_both(a, a > 0, 0)
    setitem_both(a, a > 10, A([1, 2, 3, 4, 5, 6, 7, 8]))
    setitem_both(a, (S(None), A([True, False, True])), -1)
    setitem_both(a, (E, A([False, True, True, False])), A([5, 6]))
    x = ember.tensor([[-1.0, 2.0], [3.0, -4.0]])
    x[x > 0] = 0
    assert x.tolist() == [[-1.0, 0.0], [0.0, -4.0]]
    x[x < 0] = ember.tensor([9.0, 8.0])
    assert x.tolist() == [[9.0, 0.0], [0.0, 8.0]]
    x[x == 0] = ember.tensor(5.0)  # a 0-d value broadcasts
    assert x.tolist() == [[9.0, 5.0], [5.0, 8.0]]


def test_setitem_mask_value_size_mismatch():
    x = ember.tensor([1, 2, 3, 4])
    with pytest.raises(RuntimeError, match="shape mismatch"):
        x[x > 1] = ember.tensor([1, 2])


def test_setitem_converts_dtype():
    x = ember.tensor([1, 2, 3])
    x[0] = 2.7  # truncated into int64
    assert x.tolist() == [2, 2, 3]
    x[1:] = ember.tensor([1.5, 9.9])
    assert x.tolist() == [2, 1, 9]
    assert x.dtype == ember.int64
    f = ember.zeros(2, 3)
    f[0] = ember.tensor([1, 2, 3])
    assert f.tolist() == [[1.0, 2.0, 3.0], [0.0, 0.0, 0.0]]
    b = ember.zeros(3, dtype=ember.bool)
    b[1] = True
    assert b.tolist() == [False, True, False]
    h = ember.zeros(2, dtype=ember.float16)
    h[ember.tensor([1])] = 0.5
    assert h.tolist() == [0.0, 0.5]


def test_setitem_keeps_identity_and_view_writes():
    x = ember.zeros(3, 4)
    ptr = x.data_ptr()
    x[1] = 1
    x[:, 0] = ember.tensor([5.0, 6.0, 7.0])
    assert x.data_ptr() == ptr
    assert x.tolist() == [[5.0, 0.0, 0.0, 0.0], [6.0, 1.0, 1.0, 1.0], [7.0, 0.0, 0.0, 0.0]]
    v = x[1:]
    v[:, 1:] = 3
    assert x[2].tolist() == [7.0, 3.0, 3.0, 3.0]


def test_setitem_with_itself_overlapping():
    x = ember.tensor([1, 2, 3, 4])
    x[ember.tensor([0, 1])] = x[ember.tensor([2, 3])]
    assert x.tolist() == [3, 4, 3, 4]


EXPANDED_WARNING = "Use of index_put_ on expanded tensors is deprecated. Please clone() the tensor"

# Writes into zeros(3).expand(2, 3), whose two rows are one row in memory: PyTorch warns
# (deprecated) and writes in order, the last write winning and accumulate adding every value.
EXPANDED_WRITES = [
    ("row", lambda L, a: a.index_put_((L.tensor([0]),), L.tensor(1.0))),
    ("element-last-wins", lambda L, a: a.index_put_((L.tensor([0, 1]), L.tensor([1, 1])), L.tensor([5.0, 6.0]))),
    ("rows-last-wins", lambda L, a: a.index_put_((L.tensor([1, 0]),), L.tensor([[1.0, 2, 3], [10, 20, 30]]))),
    ("accumulate-adds-each", lambda L, a: a.index_put_((L.tensor([0, 1]),), L.tensor([[1.0, 2, 3], [10, 20, 30]]),
                                                       accumulate=True)),
    ("setitem-index", lambda L, a: a.__setitem__(L.tensor([0]), 3.0)),
    ("setitem-mask", lambda L, a: a.__setitem__(L.tensor([[True, False, True], [False, False, False]]), 4.0)),
]


def _write_expanded(lib, write):
    a = lib.zeros(3).expand(2, 3)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        write(lib, a)
    return a, [str(w.message) for w in caught if issubclass(w.category, UserWarning)]


@pytest.mark.parametrize("write", [w for _, w in EXPANDED_WRITES], ids=[i for i, _ in EXPANDED_WRITES])
def test_index_put_into_expanded_self_warns_and_writes_like_pytorch(write):
    a, caught = _write_expanded(ember, write)
    assert any(m.startswith(EXPANDED_WARNING) for m in caught), caught
    if torch is not None:
        want, torch_caught = _write_expanded(torch, write)
        assert any(m.startswith(EXPANDED_WARNING) for m in torch_caught)
        np.testing.assert_array_equal(a.numpy(), want.numpy())


def test_index_put_into_expanded_self_is_written_in_order():
    # Many rows (the parallel path) aliasing one: still the last row's values, every time.
    n = 100_000
    a = ember.zeros(3).expand(n, 3)
    with pytest.warns(UserWarning, match=re.escape(EXPANDED_WARNING)):
        a.index_put_((ember.arange(n),), ember.arange(float(n)).unsqueeze(1).expand(n, 3))
    assert a[0].tolist() == [n - 1.0] * 3
    with pytest.warns(UserWarning, match=re.escape(EXPANDED_WARNING)):
        a.index_put_((ember.arange(n),), ember.tensor(1.0), accumulate=True)
    assert a[0].tolist() == [2.0 * n - 1] * 3


def test_index_put_without_expanded_self_does_not_warn():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ember.zeros(2, 3).index_put_((ember.tensor([0, 0]),), ember.tensor(1.0))
        ember.zeros(3).expand(1, 3).index_put_((ember.tensor([0]),), ember.tensor(1.0))  # size-1 dim
        ember.zeros(3).expand(2, 3)[0][ember.tensor([1])] = 2.0  # a row of it is not expanded


def test_expanded_index_put_warning_as_error_raises():
    a = ember.zeros(3).expand(2, 3)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(UserWarning, match=re.escape(EXPANDED_WARNING)):
            a.index_put_((ember.tensor([0]),), ember.tensor(1.0))


def test_setitem_shape_mismatch():
    x = ember.zeros(2, 3, 4)
    with pytest.raises(RuntimeError):
        x[0] = ember.ones(4, 3)
    with pytest.raises(RuntimeError):
        x[:, :, 0] = ember.ones(2)


# ---------------------------------------------------------------- errors

def test_out_of_bounds_int():
    t = ember.tensor(base())
    with pytest.raises(IndexError, match="index 2 is out of bounds for dimension 0 with size 2"):
        t[2]
    with pytest.raises(IndexError, match="index -3 is out of bounds for dimension 0 with size 2"):
        t[-3]
    with pytest.raises(IndexError, match="index 4 is out of bounds for dimension 2 with size 4"):
        t[:, :, 4]
    with pytest.raises(IndexError, match="out of bounds"):
        t[..., -5]


def test_out_of_bounds_int_reports_the_right_dim():
    t = ember.tensor(base())
    with pytest.raises(IndexError, match="index 3 is out of bounds for dimension 1 with size 3"):
        t[0, 3]


def test_out_of_bounds_index_tensor():
    t = ember.tensor(base())
    with pytest.raises(IndexError, match="index 2 is out of bounds for dimension 0 with size 2"):
        t[ember.tensor([0, 2])]
    with pytest.raises(IndexError, match="out of bounds"):
        t[[0, 5]]
    with pytest.raises(IndexError, match="index -3 is out of bounds"):
        t[ember.tensor([-3])]
    with pytest.raises(IndexError, match="out of bounds"):
        t[:, ember.tensor([[0], [3]])]


def test_out_of_bounds_setitem():
    t = ember.tensor(base())
    with pytest.raises(IndexError, match="out of bounds"):
        t[5] = 1
    with pytest.raises(IndexError, match="out of bounds"):
        t[ember.tensor([7])] = 1
    np.testing.assert_array_equal(t.numpy(), base())


def test_too_many_indices():
    t = ember.tensor(base())
    with pytest.raises(IndexError, match="too many indices for tensor of dimension 3"):
        t[0, 0, 0, 0]
    with pytest.raises(IndexError, match="too many indices for tensor of dimension 3"):
        t[..., 0, 0, 0, 0]
    with pytest.raises(IndexError, match="too many indices"):
        t[0, 0, 0, 0] = 1


def test_float_index():
    t = ember.tensor(base())
    with pytest.raises(IndexError, match=r"\(got float\)"):
        t[1.0]
    with pytest.raises(IndexError, match=r"\(got float\)"):
        t[0, 1.5]
    with pytest.raises(IndexError, match="tensors used as indices must be long, int, byte or bool tensors"):
        t[ember.tensor([0.0, 1.0])]


def test_int8_index_tensor_rejected():
    t = ember.tensor(base())
    with pytest.raises(IndexError, match="tensors used as indices must be long, int, byte or bool tensors"):
        t[ember.tensor([1, 0], dtype=ember.int8)]


def test_bad_slice_steps():
    t = ember.tensor(base())
    with pytest.raises(ValueError, match="step must be greater than zero"):
        t[::-1]
    with pytest.raises(ValueError):
        t[::0]
