"""PyTorch's legacy API still found in real programs: the typed constructors (ember.FloatTensor, ...),
isinstance checks against them, and Tensor.type()."""
import numpy as np
import pytest

import ember

try:
    import torch
except ImportError:
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch is not installed")

TYPES = [("DoubleTensor", "float64"), ("FloatTensor", "float32"), ("HalfTensor", "float16"),
         ("BFloat16Tensor", "bfloat16"), ("LongTensor", "int64"), ("IntTensor", "int32"),
         ("ShortTensor", "int16"), ("CharTensor", "int8"), ("ByteTensor", "uint8"), ("BoolTensor", "bool")]


@pytest.mark.parametrize("name,dtype", TYPES)
def test_constructors(name, dtype):
    cls = getattr(ember, name)
    assert cls.dtype == getattr(ember, dtype)
    t = cls(2, 3)
    assert t.shape == (2, 3) and t.dtype == cls.dtype and isinstance(t, ember.Tensor)
    assert cls(ember.Size([4, 1])).shape == (4, 1)
    assert cls().shape == (0,)
    data = cls([[1, 0], [1, 1]])
    assert data.dtype == cls.dtype and data.tolist() == [[1, 0], [1, 1]]
    assert cls((1, 0)).tolist() == ember.tensor([1, 0], dtype=cls.dtype).tolist()   # a tuple is data, as PyTorch
    assert cls(np.array([1, 0])).tolist() == ember.tensor([1, 0], dtype=cls.dtype).tolist()
    assert isinstance(t, cls) and isinstance(ember.zeros(2, dtype=cls.dtype), cls)
    others = [c for n, c in ((n, getattr(ember, n)) for n, _ in TYPES) if n != name]
    assert not any(isinstance(t, c) for c in others)
    assert t.type() == f"ember.{name}"
    assert repr(cls) == f"<class 'ember.{name}'>" and cls.__name__ == name


def test_isinstance_as_pytorch():
    assert isinstance(ember.zeros(2), ember.FloatTensor)
    assert isinstance(ember.tensor([1, 2]), ember.LongTensor)
    assert not isinstance(ember.tensor([1, 2]), ember.FloatTensor)
    assert not isinstance([1.0], ember.FloatTensor) and not isinstance(1.0, ember.FloatTensor)
    assert not issubclass(ember.FloatTensor, ember.Tensor)     # types of tensors, not subclasses (as PyTorch)


def test_constructor_from_a_tensor_is_an_alias():
    x = ember.zeros(3)
    y = ember.FloatTensor(x)
    y[0] = 5
    assert x[0].item() == 5
    with pytest.raises(TypeError, match=r"expected ember.FloatTensor \(got ember.DoubleTensor\)"):
        ember.FloatTensor(x.double())


def test_constructor_errors():
    with pytest.raises(TypeError, match=r"new\(\): data must be a sequence \(got float\)"):
        ember.FloatTensor(2.5)
    with pytest.raises(TypeError, match="new\\(\\): data must be a sequence \\(got str\\)"):
        ember.FloatTensor("abc")
    with pytest.raises(TypeError, match="must be tuple of ints, but found element of type str"):
        ember.FloatTensor(2, "a")
    with pytest.raises(RuntimeError, match="negative dimension"):
        ember.FloatTensor(-1)
    with pytest.raises(RuntimeError, match="legacy constructor expects device type: cpu"):
        ember.FloatTensor(2, device="cuda")
    assert ember.LongTensor([1.7, -2.2]).tolist() == [1, -2]   # truncated, as PyTorch


def test_type_names_and_conversions():
    x = ember.tensor([1.5, -2.5])
    assert x.type() == "ember.FloatTensor"
    assert x.type(ember.float32) is x
    assert x.type(ember.FloatTensor) is x and x.type("ember.FloatTensor") is x
    d = x.type(ember.float64)
    assert d.dtype == ember.float64 and d.tolist() == [1.5, -2.5]
    assert x.type(ember.DoubleTensor).dtype == ember.float64
    assert x.type("ember.IntTensor").tolist() == [1, -2]
    assert x.type("torch.LongTensor").dtype == ember.int64   # programs written against PyTorch
    with pytest.raises(ValueError, match="invalid type: 'float'"):
        x.type("float")
    with pytest.raises(ValueError, match="invalid type: 'ember.Float'"):
        x.type("ember.Float")
    with pytest.raises(TypeError, match="must be ember.dtype or str, not int"):
        x.type(3)
    y = ember.tensor([1.0], requires_grad=True)
    y.type(ember.float64).sum().backward()                     # a conversion autograd follows
    assert y.grad.tolist() == [1.0]


@needs_torch
def test_type_strings_match_pytorch_after_the_prefix():
    for name, dtype in TYPES:
        t = torch.zeros(1, dtype=getattr(torch, dtype))
        assert t.type().split(".", 1)[1] == ember.zeros(1, dtype=getattr(ember, dtype)).type().split(".", 1)[1]
        assert isinstance(t, getattr(torch, name))


def test_legacy_types_are_public():
    for name, _ in TYPES:
        assert name in ember.__all__
