"""Pickling and copying tensors, storages, dtypes and devices (issue 8, point 9).

A pickle writes each storage once and rebuilds every tensor as a view of it,
so views stay views within one pickle; copy.deepcopy copies each storage once
(tied weights stay tied); copy.copy shares the storage, as in PyTorch."""
import copy
import json
import os
import pickle
import subprocess
import sys

import pytest

import ember

PROTOCOLS = list(range(pickle.HIGHEST_PROTOCOL + 1))
DTYPES = [ember.bool, ember.uint8, ember.int8, ember.int16, ember.int32, ember.int64, ember.float16,
          ember.bfloat16, ember.float32, ember.float64]


def storage_bytes(t):
    return bytes(t.untyped_storage().cpu())


def assert_same(a, b):
    """Same dtype, geometry, requires_grad and bytes; `b` is a leaf."""
    assert type(b) is type(a)
    assert b.dtype == a.dtype and b.device == a.device
    assert tuple(b.shape) == tuple(a.shape) and b.stride() == a.stride()
    assert b.storage_offset() == a.storage_offset()
    assert b.requires_grad == a.requires_grad and b.is_leaf
    assert storage_bytes(b) == storage_bytes(a)


def sample(dtype, shape=(3, 4)):
    n = 1
    for s in shape:
        n *= s
    values = ember.arange(n).reshape(shape) % 7 - 3
    return (values > 0) if dtype == ember.bool else values.to(dtype)


def shares_storage(a, b):
    return a.untyped_storage() is b.untyped_storage()


# ---------------------------------------------------------------- round trips

@pytest.mark.parametrize("protocol", PROTOCOLS)
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_round_trip_every_dtype_and_protocol(dtype, protocol):
    t = sample(dtype)
    u = pickle.loads(pickle.dumps(t, protocol=protocol))
    assert_same(t, u)
    assert not shares_storage(t, u)


LAYOUTS = {
    "0-d": lambda t: t[1, 2],
    "empty": lambda t: t[:, :0],
    "empty-rows": lambda t: t[3:],
    "transposed": lambda t: t.t(),
    "offset-slice": lambda t: t[1:, 1:3],
    "step-slice": lambda t: t[::2, ::3],
    "expanded": lambda t: t[1:2].expand(5, 4),
    "row": lambda t: t[2],
}


@pytest.mark.parametrize("protocol", [0, 2, 4, 5])
@pytest.mark.parametrize("layout", sorted(LAYOUTS))
@pytest.mark.parametrize("dtype", [ember.float16, ember.bfloat16, ember.float32, ember.int64, ember.bool], ids=str)
def test_views_keep_offset_and_strides(dtype, layout, protocol):
    view = LAYOUTS[layout](sample(dtype))
    u = pickle.loads(pickle.dumps(view, protocol=protocol))
    assert_same(view, u)
    assert u.tolist() == view.tolist()


def test_zero_dim_and_empty_tensors_of_their_own():
    for t in (ember.tensor(2.5), ember.tensor([], dtype=ember.int32), ember.zeros(0, 3, dtype=ember.float16)):
        assert_same(t, pickle.loads(pickle.dumps(t)))


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_requires_grad_kept_and_grad_dropped(protocol):
    w = ember.randn(3, 2, requires_grad=True)
    (w * 2).sum().backward()
    u = pickle.loads(pickle.dumps(w, protocol=protocol))
    assert u.requires_grad and u.is_leaf and u.grad is None  # PyTorch does not pickle .grad
    assert u.tolist() == w.tolist()
    (u * 3).sum().backward()
    assert u.grad.tolist() == [[3.0, 3.0]] * 3


def test_non_leaf_pickles_as_a_leaf_that_requires_grad():
    x = ember.randn(4, requires_grad=True)
    y = x * 2
    u = pickle.loads(pickle.dumps(y))
    assert u.is_leaf and u.requires_grad and u.grad_fn is None
    assert u.tolist() == y.tolist()


def test_views_stay_views_within_one_pickle():
    base = ember.arange(12.0).reshape(3, 4)
    objs = {"base": base, "row": base[1], "t": base.t(), "cols": base[:, 1::2], "again": base}
    out = pickle.loads(pickle.dumps(objs))
    assert out["again"] is out["base"]
    storage = out["base"].untyped_storage()
    for name in ("row", "t", "cols"):
        assert out[name].untyped_storage() is storage
        assert out[name].data_ptr() - out["base"].data_ptr() == objs[name].data_ptr() - base.data_ptr()
    out["base"][1, 1] = 100.0
    assert out["row"][1].item() == 100.0 and out["t"][1, 1].item() == 100.0 and out["cols"][1, 0].item() == 100.0
    assert base[1, 1].item() == 5.0  # the original is untouched
    # The storage was written once: a pickle of base and three views is not four storages long.
    assert len(pickle.dumps(objs)) < 2 * base.numel() * base.element_size() + 1000


def test_views_of_different_dtypes_of_one_storage_are_not_confused():
    a = ember.arange(6, dtype=ember.int64)
    b = ember.arange(6, dtype=ember.float16)
    out = pickle.loads(pickle.dumps([a, b[2:], a[::2]]))
    assert out[0].tolist() == [0, 1, 2, 3, 4, 5] and out[1].tolist() == [2.0, 3.0, 4.0, 5.0]
    assert shares_storage(out[0], out[2]) and not shares_storage(out[0], out[1])


def test_separate_pickles_are_not_tied():
    base = ember.zeros(4)
    a = pickle.loads(pickle.dumps(base))
    b = pickle.loads(pickle.dumps(base[1:]))
    a[1] = 5.0
    assert b[0].item() == 0.0 and not shares_storage(a, b)


def test_protocol_5_out_of_band_buffers():
    t = ember.arange(1000.0)
    buffers = []
    data = pickle.dumps([t, t[3:]], protocol=5, buffer_callback=buffers.append)
    assert len(buffers) == 1  # one storage, one buffer
    assert len(data) < t.numel() * t.element_size()  # the bytes travel out of band
    u, v = pickle.loads(data, buffers=buffers)
    assert u.tolist() == t.tolist() and v.tolist() == t[3:].tolist()
    assert shares_storage(u, v) and not shares_storage(u, t)


def test_attributes_and_subclasses_survive():
    t = ember.ones(2)
    t.name = "weights"
    u = pickle.loads(pickle.dumps(t))
    assert u.name == "weights" and u.tolist() == [1.0, 1.0]
    s = Tagged._make_subclass(Tagged, ember.arange(3.0), True)
    s.tag = [1, 2]
    for v in (pickle.loads(pickle.dumps(s)), copy.deepcopy(s)):
        assert type(v) is Tagged and v.tag == [1, 2] and v.requires_grad and v.tolist() == [0.0, 1.0, 2.0]


class Tagged(ember.Tensor):
    pass


def test_damaged_geometry_raises_instead_of_reading_out_of_bounds():
    from ember import _utils
    storage = ember.zeros(3).untyped_storage()
    with pytest.raises(RuntimeError, match="out of bounds for storage of size 12"):
        _utils._rebuild_tensor(storage, 0, (4,), (1,), ember.float32)
    with pytest.raises(RuntimeError, match="out of bounds"):
        _utils._rebuild_tensor(storage, 1, (2, 2), (2**62, 1), ember.float32)
    with pytest.raises(RuntimeError, match="storage offset"):
        _utils._rebuild_tensor(storage, -1, (1,), (1,), ember.float32)
    with pytest.raises(RuntimeError, match="negative dimension"):
        _utils._rebuild_tensor(storage, 0, (-1,), (1,), ember.float32)
    with pytest.raises(RuntimeError, match="length of strides"):
        _utils._rebuild_tensor(storage, 0, (1, 1), (1,), ember.float32)
    assert _utils._rebuild_tensor(storage, 3, (0, 5), (5, 1), ember.float32).shape == (0, 5)
    with pytest.raises(TypeError, match="UntypedStorage"):
        _utils._rebuild_tensor(b"\0" * 12, 0, (3,), (1,), ember.float32)
    with pytest.raises(TypeError):
        _utils._rebuild_tensor(storage, 0, (3,), (1,), "float32")
    with pytest.raises(TypeError, match="tuple of ints"):
        _utils._rebuild_tensor(storage, 0, 3, (1,), ember.float32)
    with pytest.raises(TypeError):
        _utils._rebuild_storage(12, "cpu")


@pytest.mark.skipif(ember.cuda.is_available(), reason="checks the message on a machine without CUDA")
def test_cuda_storage_without_cuda_raises_clearly():
    from ember import _utils
    with pytest.raises(RuntimeError, match="CUDA device"):
        _utils._rebuild_storage(b"\0" * 8, "cuda:0")


# ---------------------------------------------------------------- copy and deepcopy

def test_deepcopy_keeps_tied_tensors_tied():
    w = ember.randn(3, 4, requires_grad=True)
    with ember.no_grad():
        tied = w.t()  # a leaf view: a tied (transposed) weight
    model = {"encoder": w, "decoder": tied, "alias": [w], "other": ember.ones(2)}
    out = copy.deepcopy(model)
    assert out["alias"][0] is out["encoder"]
    assert shares_storage(out["encoder"], out["decoder"])
    assert not shares_storage(out["encoder"], w)
    assert out["encoder"].requires_grad and out["decoder"].stride() == tied.stride()
    with ember.no_grad():
        out["encoder"][0, 1] = 42.0
    assert out["decoder"][1, 0].item() == 42.0 and w[0, 1].item() != 42.0


def test_deepcopy_copies_grad_and_keeps_it_separate():
    w = ember.ones(3, requires_grad=True)
    (w * 2).sum().backward()
    c = copy.deepcopy(w)
    assert c.requires_grad and c.is_leaf and c.grad.tolist() == [2.0, 2.0, 2.0]
    assert not shares_storage(c.grad, w.grad) and not shares_storage(c, w)
    c.grad.zero_()
    assert w.grad.tolist() == [2.0, 2.0, 2.0]


def test_deepcopy_of_non_leaf_raises_as_pytorch():
    y = ember.ones(2, requires_grad=True) * 3
    with pytest.raises(RuntimeError, match=r"Only Tensors created explicitly by the user \(graph leaves\)"):
        copy.deepcopy(y)
    assert copy.deepcopy(y.detach()).tolist() == [3.0, 3.0]


def test_copy_copy_shares_the_storage_as_pytorch():
    t = ember.arange(6.0).reshape(2, 3)[:, 1:]
    c = copy.copy(t)
    assert c is not t and shares_storage(c, t) and c.stride() == t.stride()
    assert c.storage_offset() == t.storage_offset()
    c[0, 0] = -1.0
    assert t[0, 0].item() == -1.0
    y = ember.ones(2, requires_grad=True) * 2
    cy = copy.copy(y)  # PyTorch: a leaf that requires grad
    assert cy.is_leaf and cy.requires_grad and shares_storage(cy, y)


def test_matches_pytorch_on_copy_and_pickle_of_non_leaves():
    torch = pytest.importorskip("torch")
    ty = torch.ones(2, requires_grad=True) * 2
    ey = ember.ones(2, requires_grad=True) * 2
    for fn in (copy.copy, lambda x: pickle.loads(pickle.dumps(x))):
        t, e = fn(ty), fn(ey)
        assert (e.is_leaf, e.requires_grad) == (t.is_leaf, t.requires_grad)
    assert (copy.copy(ty).data_ptr() == ty.data_ptr()) == (copy.copy(ey).data_ptr() == ey.data_ptr())
    with pytest.raises(RuntimeError) as torch_error:
        copy.deepcopy(ty)
    with pytest.raises(RuntimeError) as ember_error:
        copy.deepcopy(ey)
    assert str(ember_error.value) in str(torch_error.value)


def test_storage_copies():
    t = ember.arange(4, dtype=ember.int32)
    s = t.untyped_storage()
    assert s is t[1:].untyped_storage() and s.nbytes() == 16 and len(s) == 16
    assert s.device == ember.device("cpu") and s.data_ptr() == t.data_ptr()
    for c in (s.clone(), copy.copy(s), copy.deepcopy(s), pickle.loads(pickle.dumps(s))):
        assert type(c) is ember.UntypedStorage and c is not s and bytes(c) == bytes(s)
        assert c.data_ptr() != s.data_ptr()


# ---------------------------------------------------------------- dtypes, devices

@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_dtypes_and_devices_round_trip(protocol):
    for dt in DTYPES:
        assert pickle.loads(pickle.dumps(dt, protocol=protocol)) is dt
        assert copy.deepcopy(dt) is dt and copy.copy(dt) is dt
    for dev in (ember.device("cpu"), ember.device("cuda"), ember.device("cuda", 1), ember.device("cuda:0")):
        u = pickle.loads(pickle.dumps(dev, protocol=protocol))
        assert type(u) is ember.device and u == dev and repr(u) == repr(dev)
        assert copy.deepcopy(dev) == dev
    size = pickle.loads(pickle.dumps(ember.zeros(2, 3).shape, protocol=protocol))
    assert type(size) is ember.Size and size == (2, 3)


# ---------------------------------------------------------------- another process

CHILD = r"""
import json, pickle, sys
import ember
objs = pickle.loads(sys.stdin.buffer.read())
objs["base"][0, 0] = 100.0
print(json.dumps({
    "tied": objs["row"].untyped_storage() is objs["base"].untyped_storage(),
    "row0": objs["t"][0, 0].item(),
    "half": objs["half"].tolist(), "half_dtype": str(objs["half"].dtype),
    "bf16": objs["bf16"].float().tolist(),
    "grad": [objs["w"].requires_grad, objs["w"].is_leaf],
    "device": str(objs["device"]), "dtype": str(objs["dtype"]),
}))
"""


def test_unpickles_in_a_fresh_process():
    base = ember.arange(6.0).reshape(2, 3)
    objs = {"base": base, "row": base[1], "t": base.t(), "half": ember.tensor([0.5, -2.0], dtype=ember.float16),
            "bf16": ember.tensor([1.5, 3.0], dtype=ember.bfloat16), "w": ember.zeros(2, requires_grad=True),
            "device": ember.device("cuda", 1), "dtype": ember.bfloat16}
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    for protocol in (0, pickle.HIGHEST_PROTOCOL):
        out = subprocess.run([sys.executable, "-c", CHILD], input=pickle.dumps(objs, protocol=protocol),
                             capture_output=True, env=env, timeout=120)
        assert out.returncode == 0, out.stderr.decode()
        got = json.loads(out.stdout.decode().strip().splitlines()[-1])
        assert got == {"tied": True, "row0": 100.0, "half": [0.5, -2.0], "half_dtype": "ember.float16",
                       "bf16": [1.5, 3.0], "grad": [True, True], "device": "cuda:1", "dtype": "ember.bfloat16"}
