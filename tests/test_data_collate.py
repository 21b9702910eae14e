"""default_collate and default_convert (issue 13, point 1): structure, dtypes
(Python floats -> float64, ints -> int64, bools -> bool) and PyTorch's errors;
hand-computed results, and PyTorch's where torch is installed."""
import collections

import numpy as np
import pytest

import ember
from ember.utils.data import default_collate, default_convert
from ember.utils.data._utils.collate import collate, default_collate_fn_map

Point = collections.namedtuple("Point", ["x", "y"])


def plain(obj):
    """Tensors -> ("tensor", dtype name, shape, values), containers tagged with their type: comparable across
    libraries."""
    if hasattr(obj, "dtype") and hasattr(obj, "tolist") and not isinstance(obj, np.ndarray):
        return ("tensor", str(obj.dtype).split(".")[-1], tuple(obj.shape), obj.tolist())
    if isinstance(obj, dict):
        return (type(obj).__name__, {k: plain(v) for k, v in obj.items()})
    if isinstance(obj, tuple) and hasattr(obj, "_fields"):
        return (type(obj).__name__, tuple(plain(v) for v in obj))
    if isinstance(obj, (list, tuple)):
        return (type(obj).__name__, [plain(v) for v in obj])
    if isinstance(obj, np.ndarray):
        return ("ndarray", obj.dtype.str, obj.tolist())
    return obj


def test_numbers():
    assert plain(default_collate([1.5, 2.0])) == ("tensor", "float64", (2,), [1.5, 2.0])
    assert plain(default_collate([1, 2, 3])) == ("tensor", "int64", (3,), [1, 2, 3])
    assert plain(default_collate([True, False])) == ("tensor", "bool", (2,), [True, False])
    assert plain(default_collate([np.float32(1), np.float32(2)])) == ("tensor", "float32", (2,), [1.0, 2.0])
    assert plain(default_collate([np.int32(4)])) == ("tensor", "int32", (1,), [4])
    # Mixed numbers: the first element picks the collate function, ember.tensor's inference the dtype.
    assert plain(default_collate([1, 2.5])) == ("tensor", "float32", (2,), [1.0, 2.5])
    assert plain(default_collate([True, 2])) == ("tensor", "int64", (2,), [1, 2])
    assert plain(default_collate([1.0, 2])) == ("tensor", "float64", (2,), [1.0, 2.0])
    assert plain(default_collate([-(2**63), 2**63 - 1])) == ("tensor", "int64", (2,), [-(2**63), 2**63 - 1])


def test_tensors_and_arrays():
    out = default_collate([ember.tensor([1., 2.]), ember.tensor([3., 4.])])
    assert plain(out) == ("tensor", "float32", (2, 2), [[1., 2.], [3., 4.]])
    out = default_collate([np.arange(3, dtype=np.int16), np.arange(3, 6, dtype=np.int16)])
    assert plain(out) == ("tensor", "int16", (2, 3), [[0, 1, 2], [3, 4, 5]])
    x = ember.arange(6.).reshape(2, 3)
    out = default_collate([x.t(), x.t()])  # non-contiguous samples
    assert out.shape == (2, 3, 2) and out[1].tolist() == x.t().tolist()
    with pytest.raises(RuntimeError, match=r"stack expects each tensor to be equal size, but got \[2\] at entry 0 "
                                           r"and \[3\] at entry 1"):
        default_collate([ember.zeros(2), ember.zeros(3)])


def test_strings_bytes_and_structures():
    assert default_collate(["a", "b"]) == ["a", "b"] and default_collate([b"a", b"b"]) == [b"a", b"b"]
    out = default_collate([{"x": 1, "s": "a"}, {"x": 2, "s": "b"}])
    assert plain(out) == ("dict", {"x": ("tensor", "int64", (2,), [1, 2]), "s": ("list", ["a", "b"])})
    out = default_collate([Point(1.0, 2), Point(3.0, 4)])
    assert type(out) is Point and plain(out.x) == ("tensor", "float64", (2,), [1.0, 3.0])
    out = default_collate([(1, 2.5), (3, 4.5)])  # tuples give lists, as PyTorch
    assert plain(out) == ("list", [("tensor", "int64", (2,), [1, 3]), ("tensor", "float64", (2,), [2.5, 4.5])])
    out = default_collate([[ember.zeros(2), {"k": [1, 2]}], [ember.ones(2), {"k": [3, 4]}]])  # nested
    assert plain(out[0]) == ("tensor", "float32", (2, 2), [[0., 0.], [1., 1.]])
    assert plain(out[1]["k"]) == ("list", [("tensor", "int64", (2,), [1, 3]), ("tensor", "int64", (2,), [2, 4])])
    dd = collections.defaultdict(list, {"a": 1})
    out = default_collate([dd, dd])
    assert type(out) is collections.defaultdict and out.default_factory is list


def test_errors():
    with pytest.raises(RuntimeError, match="each element in list of batch should be of equal size"):
        default_collate([[1, 2], [3]])
    with pytest.raises(TypeError, match=r"default_collate: batch must contain tensors, numpy arrays, numbers, "
                                        r"dicts or lists; found <class 'object'>"):
        default_collate([object(), object()])
    with pytest.raises(TypeError, match=r"batch must contain tensors, numpy arrays, numbers, dicts or lists; "
                                        r"found <U1"):
        default_collate([np.array(["a"]), np.array(["b"])])


def test_custom_collate_fn_map():
    def join(batch, *, collate_fn_map=None):
        return "+".join(batch)
    assert collate([{"s": "a"}, {"s": "b"}], collate_fn_map={str: join}) == {"s": "a+b"}
    assert default_collate_fn_map[float]([1.0], collate_fn_map=None).dtype == ember.float64


def test_default_convert():
    out = default_convert({"a": np.arange(2), "b": [np.float32(1)], "c": "s", "d": Point(np.zeros(1), 1)})
    assert plain(out["a"]) == ("tensor", "int64", (2,), [0, 1])
    assert plain(out["b"]) == ("list", [("tensor", "float32", (), 1.0)])
    assert out["c"] == "s" and type(out["d"]) is Point and out["d"].y == 1
    assert plain(default_convert((np.ones(1), 2))) == ("list", [("tensor", "float64", (1,), [1.0]), 2])
    strings = np.array(["x"])
    assert default_convert(strings) is strings  # no tensor of strings: left as it is
    t = ember.zeros(1)
    assert default_convert(t) is t and default_convert(3.5) == 3.5


CASES = [
    [1.5, 2.0], [1, 2, 3], [True, False], ["a", "b"], [b"x", b"y"], [1, 2.5], [True, 2], [1.0, 2], [False, 1.5],
    [{"x": 1, "s": "a"}, {"x": 2, "s": "b"}], [(1, 2.5), (3, 4.5)], [[1, 2], [3, 4]],
    [np.float32(1), np.float32(2)], [np.int64(1)], [np.bool_(True), np.bool_(False)],
    [np.arange(3, dtype=np.int32), np.arange(3, dtype=np.int32)], [np.ones((2, 2)), np.zeros((2, 2))],
    [{"p": [1.0, {"q": np.uint8(3)}]}, {"p": [2.0, {"q": np.uint8(4)}]}],
]


@pytest.mark.parametrize("batch", CASES, ids=range(len(CASES)))
def test_against_torch(batch):
    torch = pytest.importorskip("torch")
    assert plain(default_collate(batch)) == plain(torch.utils.data.default_collate(batch))
    assert plain(default_convert(batch)) == plain(torch.utils.data.default_convert(batch))


def test_errors_against_torch():
    torch = pytest.importorskip("torch")
    for batch in ([[1, 2], [3]], [object()], [np.array(["a"])], [None]):
        with pytest.raises(Exception) as theirs:
            torch.utils.data.default_collate(batch)
        with pytest.raises(type(theirs.value)) as ours:
            default_collate(batch)
        assert str(ours.value) == str(theirs.value)
