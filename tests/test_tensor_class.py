"""ember.Tensor is a Python class deriving from the C type _C.TensorBase, as
torch.Tensor from torch._C.TensorBase: every tensor object is one, its Python
methods are ordinary methods, and subclasses work."""
import copy
import gc
import inspect
import pickle
import weakref

import numpy as np
import pytest

import ember
from ember import _C

try:
    import torch
except ImportError:
    torch = None


class Tagged(ember.Tensor):
    """A subclass with a method and an attribute of its own."""

    def tag(self):
        return "tagged"


def test_every_tensor_object_is_an_ember_tensor():
    x = ember.arange(6.0).view(2, 3).requires_grad_()
    results = [x, x + 1, x.sum(), ember.zeros(2), x[0], x.T, -x, x @ x.t(), ember.from_numpy(np.ones(2)),
               x.max(1).values, ember.tensor([1, 2]), copy.deepcopy(x), pickle.loads(pickle.dumps(x)),
               x.detach(), x.unbind(0)[1]]
    (x * x).sum().backward()
    results.append(x.grad)
    for r in results:
        assert type(r) is ember.Tensor
        assert isinstance(r, _C.TensorBase) and ember.is_tensor(r)
    assert ember.Tensor.__mro__ == (ember.Tensor, _C.TensorBase, object)
    assert repr(ember.Tensor) == "<class 'ember.Tensor'>" and repr(_C.TensorBase) == "<class 'ember._C.TensorBase'>"


def test_python_methods_are_ordinary_methods():
    for name in ("numpy", "tolist", "backward", "__repr__", "__iter__", "__reduce_ex__", "__deepcopy__", "float",
                 "new_zeros", "cpu", "type_as"):
        assert inspect.isfunction(ember.Tensor.__dict__[name]), name
        assert name not in _C.TensorBase.__dict__, name
    x = ember.tensor([1.0, 2.0])
    assert ember.Tensor.tolist(x) == [1.0, 2.0] and x.double().dtype == ember.float64


def test_legacy_constructor():
    assert ember.Tensor(2, 3).shape == (2, 3) and ember.Tensor(2, 3).dtype == ember.float32
    t = ember.Tensor([1, 2])
    assert type(t) is ember.Tensor and t.dtype == ember.float32 and t.tolist() == [1.0, 2.0]
    assert ember.Tensor().shape == (0,)
    with pytest.raises(TypeError, match="legacy|Tensor"):
        ember.Tensor([1], dtype=ember.int64)
    if torch is not None:
        assert tuple(torch.Tensor().shape) == (0,) and torch.Tensor([1, 2]).dtype == torch.float32


def test_make_subclass_and_as_subclass():
    x = ember.arange(3.0, requires_grad=True)
    s = Tagged._make_subclass(Tagged, x, True)
    assert type(s) is Tagged and s.tag() == "tagged" and s.is_leaf and s.requires_grad
    assert s.data_ptr() == x.data_ptr()
    # as_subclass: a view of x in x's graph, as PyTorch's.
    v = x.as_subclass(Tagged)
    assert type(v) is Tagged and not v.is_leaf and v.data_ptr() == x.data_ptr()
    (v * 2).sum().backward()
    assert x.grad.tolist() == [2.0, 2.0, 2.0]
    with pytest.raises(TypeError, match="as_subclass: cls must be a subclass of Tensor"):
        x.as_subclass(int)
    with pytest.raises(TypeError, match="_make_subclass: cls must be a subclass of Tensor"):
        ember.Tensor._make_subclass(dict, x)
    with pytest.raises(TypeError, match="expected a subclass of TensorBase"):
        _C._set_tensor_class(int)


def test_subclass_constructors_and_ops():
    t = Tagged([1.0, 2.0])
    assert type(t) is Tagged and t.tolist() == [1.0, 2.0]
    assert type(Tagged(2, 2)) is Tagged
    # Without __torch_function__, ops on a subclass give plain Tensors.
    assert type(t + 1) is ember.Tensor and type(t.sum()) is ember.Tensor
    assert isinstance(t, ember.Tensor) and ember.is_tensor(t)


def test_subclass_survives_pickle_and_deepcopy():
    t = Tagged([1.0, 2.0])
    t.note = "kept"
    for back in (pickle.loads(pickle.dumps(t)), copy.deepcopy(t)):
        assert type(back) is Tagged and back.note == "kept" and back.tolist() == [1.0, 2.0]


def test_subclass_cycles_are_collected():
    # A user subclass is GC-tracked as any Python class (ember.Tensor's own objects are not,
    # as TensorBase's never were), so a cycle through its attributes is freed.
    t = Tagged([1.0])
    t.me = t
    ref = weakref.ref(t)
    del t
    gc.collect()
    assert ref() is None
    assert not gc.is_tracked(ember.ones(1))


def test_view_reshape_expand_as_take_the_other_tensors_shape():
    x = ember.arange(6.0).requires_grad_()
    other = ember.zeros(2, 3)
    v = x.view_as(other)
    assert v.shape == (2, 3) and v._is_view() and v.data_ptr() == x.data_ptr() and v.tolist() == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]
    r = x.view(2, 3).t().reshape_as(ember.zeros(6))  # not viewable: a copy, as reshape
    assert r.tolist() == [0.0, 3.0, 1.0, 4.0, 2.0, 5.0]
    e = ember.tensor([[1.0], [2.0]]).expand_as(ember.zeros(3, 2, 4))
    assert e.shape == (3, 2, 4) and e.stride() == (0, 1, 0) and e[2, 1].tolist() == [2.0] * 4
    (v * ember.tensor([[1.0, 2.0, 3.0]]).expand_as(v)).sum().backward()
    assert x.grad.tolist() == [1.0, 2.0, 3.0, 1.0, 2.0, 3.0]
    for method in ("view_as", "reshape_as", "expand_as"):
        with pytest.raises(TypeError, match=rf"{method}\(\): argument 'other'( \(position 1\))? must be Tensor, not int"):
            getattr(x, method)(3)
    with pytest.raises(RuntimeError, match=r"shape '\[4\]' is invalid for input of size 6"):
        x.view_as(ember.zeros(4))
