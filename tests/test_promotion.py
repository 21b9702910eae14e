"""Type promotion, as PyTorch does it.

The expected tables below are literal data generated once from PyTorch 2.13
(torch.promote_types and the dtype of `a + b`); this file never imports torch.
"""
import numpy as np
import pytest

import ember

NAMES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64"]
ABBR = {"b1": "bool", "u1": "uint8", "i1": "int8", "i2": "int16", "i4": "int32", "i8": "int64",
        "f2": "float16", "bf": "bfloat16", "f4": "float32", "f8": "float64"}


def _table(rows):
    out = {}
    for a, row in zip(NAMES, rows):
        for b, r in zip(NAMES, row.split()):
            out[a, b] = ABBR[r]
    return out


# Row = left operand, column = right operand, both in NAMES order.
# Both operands dimensioned (torch.promote_types).
PROMOTE = _table([
    "b1 u1 i1 i2 i4 i8 f2 bf f4 f8",
    "u1 u1 i2 i2 i4 i8 f2 bf f4 f8",
    "i1 i2 i1 i2 i4 i8 f2 bf f4 f8",
    "i2 i2 i2 i2 i4 i8 f2 bf f4 f8",
    "i4 i4 i4 i4 i4 i8 f2 bf f4 f8",
    "i8 i8 i8 i8 i8 i8 f2 bf f4 f8",
    "f2 f2 f2 f2 f2 f2 f2 f4 f4 f8",
    "bf bf bf bf bf bf f4 bf f4 f8",
    "f4 f4 f4 f4 f4 f4 f4 f4 f4 f8",
    "f8 f8 f8 f8 f8 f8 f8 f8 f8 f8",
])

# Left operand dimensioned, right operand a 0-d tensor: the 0-d operand only
# matters when it is of a higher category (bool < integer < floating).
DIM_PLUS_ZERO_D = _table([
    "b1 u1 i1 i2 i4 i8 f2 bf f4 f8",
    "u1 u1 u1 u1 u1 u1 f2 bf f4 f8",
    "i1 i1 i1 i1 i1 i1 f2 bf f4 f8",
    "i2 i2 i2 i2 i2 i2 f2 bf f4 f8",
    "i4 i4 i4 i4 i4 i4 f2 bf f4 f8",
    "i8 i8 i8 i8 i8 i8 f2 bf f4 f8",
    "f2 f2 f2 f2 f2 f2 f2 f2 f2 f2",
    "bf bf bf bf bf bf bf bf bf bf",
    "f4 f4 f4 f4 f4 f4 f4 f4 f4 f4",
    "f8 f8 f8 f8 f8 f8 f8 f8 f8 f8",
])

# Dimensioned tensor + Python scalar: True, 7, -1, 2.5 (default dtype float32).
WITH_PYTHON_SCALAR = {
    "bool": ("b1", "i8", "i8", "f4"),
    "uint8": ("u1", "u1", "u1", "f4"),
    "int8": ("i1", "i1", "i1", "f4"),
    "int16": ("i2", "i2", "i2", "f4"),
    "int32": ("i4", "i4", "i4", "f4"),
    "int64": ("i8", "i8", "i8", "f4"),
    "float16": ("f2", "f2", "f2", "f2"),
    "bfloat16": ("bf", "bf", "bf", "bf"),
    "float32": ("f4", "f4", "f4", "f4"),
    "float64": ("f8", "f8", "f8", "f8"),
}
SCALARS = [True, 7, -1, 2.5]

PAIRS = [(a, b) for a in NAMES for b in NAMES]


def dt(name):
    return getattr(ember, name)


def ones(shape, name):
    return ember.ones(shape, dtype=dt(name))


# ---------------------------------------------------------------- the full table

@pytest.mark.parametrize("a,b", PAIRS, ids=[f"{a}-{b}" for a, b in PAIRS])
def test_add_dimensioned(a, b):
    r = ones((2, 3), a) + ones((2, 3), b)
    assert r.dtype == dt(PROMOTE[a, b])
    assert tuple(r.shape) == (2, 3)


@pytest.mark.parametrize("a,b", PAIRS, ids=[f"{a}-{b}" for a, b in PAIRS])
def test_promote_types(a, b):
    assert ember.promote_types(dt(a), dt(b)) == dt(PROMOTE[a, b])


@pytest.mark.parametrize("a,b", PAIRS, ids=[f"{a}-{b}" for a, b in PAIRS])
def test_result_type_tensors(a, b):
    assert ember.result_type(ones(3, a), ones(3, b)) == dt(PROMOTE[a, b])


def test_table_is_symmetric():
    for a, b in PAIRS:
        assert PROMOTE[a, b] == PROMOTE[b, a]
        assert ember.promote_types(dt(a), dt(b)) == ember.promote_types(dt(b), dt(a))


@pytest.mark.parametrize("op", ["mul", "sub", "maximum"])
def test_other_binary_ops_follow_table(op):
    # PyTorch refuses sub with any bool operand (see test_sub_with_bool_raises).
    for a, b in PAIRS:
        if op == "sub" and "bool" in (a, b):
            continue
        r = getattr(ember, op)(ones(4, a), ones(4, b))
        assert r.dtype == dt(PROMOTE[a, b]), (op, a, b)


def test_sub_with_bool_raises():
    b = ember.tensor([True, False])
    i = ember.tensor([1, 1])
    for f in (lambda: b - b, lambda: b - i, lambda: i - b, lambda: ember.tensor([1.0, 2.0]) - b,
              lambda: b - 1, lambda: 1 - b, lambda: b - True, lambda: ember.sub(i, b)):
        with pytest.raises(RuntimeError, match="(?i)bool"):
            f()


# ---------------------------------------------------------------- 0-d tensors

@pytest.mark.parametrize("a,b", PAIRS, ids=[f"{a}-{b}" for a, b in PAIRS])
def test_dimensioned_with_zero_dim(a, b):
    expected = dt(DIM_PLUS_ZERO_D[a, b])
    assert (ones(3, a) + ones((), b)).dtype == expected
    assert (ones((), b) + ones(3, a)).dtype == expected


@pytest.mark.parametrize("a,b", PAIRS, ids=[f"{a}-{b}" for a, b in PAIRS])
def test_zero_dim_with_zero_dim(a, b):
    # Two 0-d tensors promote like two dimensioned ones.
    r = ones((), a) + ones((), b)
    assert r.dtype == dt(PROMOTE[a, b])
    assert r.dim() == 0


def test_zero_dim_examples():
    x = ember.tensor([1, 2, 3], dtype=ember.int32)
    r = x + ember.tensor(5)  # 0-d int64
    assert r.dtype == ember.int32
    assert r.tolist() == [6, 7, 8]
    r = x + ember.tensor(0.5, dtype=ember.float64)  # higher category: the 0-d dtype wins
    assert r.dtype == ember.float64
    assert r.tolist() == [1.5, 2.5, 3.5]
    h = ember.tensor([1.0, 2.0], dtype=ember.float16)
    assert (h * ember.tensor(3.0, dtype=ember.float64)).dtype == ember.float16
    # A 1-element 1-d tensor is dimensioned, not a 0-d one.
    assert (x + ember.tensor([5])).dtype == ember.int64


# ---------------------------------------------------------------- Python numbers

@pytest.mark.parametrize("a", NAMES)
def test_python_scalars(a):
    for s, expected in zip(SCALARS, WITH_PYTHON_SCALAR[a]):
        assert (ones(3, a) + s).dtype == dt(ABBR[expected]), (a, s)
        assert (s + ones(3, a)).dtype == dt(ABBR[expected]), (a, s)
        assert (ones((), a) + s).dtype == dt(ABBR[expected]), (a, s)


def test_python_scalar_examples():
    i = ember.tensor([1, 2], dtype=ember.int32)
    r = i + 2.5
    assert r.dtype == ember.float32
    assert r.tolist() == [3.5, 4.5]
    h = ember.tensor([1.0, 2.0], dtype=ember.float16)
    r = h * 2.0
    assert r.dtype == ember.float16
    assert r.tolist() == [2.0, 4.0]
    b = ember.tensor([True, False])
    r = b + 1
    assert r.dtype == ember.int64
    assert r.tolist() == [2, 1]
    assert (b + True).dtype == ember.bool
    assert (b * 2.5).tolist() == [2.5, 0.0]
    # uint8 stays uint8 with a negative Python int, and wraps around.
    u = ember.tensor([0, 5], dtype=ember.uint8)
    r = u + (-1)
    assert r.dtype == ember.uint8
    assert r.tolist() == [255, 4]
    r = u + 300  # 300 wraps to 44 in uint8 arithmetic
    assert r.dtype == ember.uint8
    assert r.tolist() == [44, 49]
    # An int8 tensor with a large Python int stays int8.
    assert (ember.tensor([1], dtype=ember.int8) * 1000).dtype == ember.int8
    # float16 overflows to inf rather than promoting.
    r = h * 1e10
    assert r.dtype == ember.float16
    assert r.tolist() == [float("inf"), float("inf")]


def test_python_float_uses_default_dtype():
    i = ember.tensor([1, 2], dtype=ember.int32)
    f = ember.tensor([1.0], dtype=ember.float32)
    prev = ember.get_default_dtype()
    try:
        ember.set_default_dtype(ember.float64)
        assert (i + 2.5).dtype == ember.float64
        assert (f + 2.5).dtype == ember.float32
        assert ember.result_type(i, 2.5) == ember.float64
    finally:
        ember.set_default_dtype(prev)
    assert ember.get_default_dtype() == ember.float32
    assert (i + 2.5).dtype == ember.float32


def test_division_and_power():
    i = ember.tensor([4, 6], dtype=ember.int32)
    assert (i / i).dtype == ember.float32
    assert (i / 2).dtype == ember.float32
    assert (i / 2).tolist() == [2.0, 3.0]
    assert (i // 4).dtype == ember.int32
    assert (i ** 2).dtype == ember.int32
    assert (i ** 2.0).dtype == ember.float32
    assert (2 ** i).dtype == ember.int32
    assert (2.5 ** i).dtype == ember.float32
    u = ember.tensor([1, 2], dtype=ember.uint8)
    assert (u / u).dtype == ember.float32
    h = ember.tensor([1.0], dtype=ember.float16)
    assert (h / 2).dtype == ember.float16


def test_unary_int_to_float():
    i = ember.tensor([1, 4], dtype=ember.int32)
    assert ember.sqrt(i).dtype == ember.float32
    assert ember.sqrt(i).tolist() == [1.0, 2.0]
    assert ember.exp(ember.tensor([0], dtype=ember.int64)).dtype == ember.float32
    assert ember.sqrt(ember.tensor([True])).dtype == ember.float32
    assert ember.abs(i).dtype == ember.int32
    assert i.sum().dtype == ember.int64
    assert ember.tensor([True, True]).sum().dtype == ember.int64
    assert ember.tensor([1], dtype=ember.uint8).sum().dtype == ember.int64


def test_cat_and_where_promote():
    i = ember.tensor([1, 2], dtype=ember.int32)
    h = ember.tensor([0.5], dtype=ember.float16)
    r = ember.cat([i, h])
    assert r.dtype == ember.float16
    assert r.tolist() == [1.0, 2.0, 0.5]
    m = ember.tensor([True, False])
    r = ember.where(m, i, ember.tensor([0.5, 0.5], dtype=ember.float16))
    assert r.dtype == ember.float16
    assert r.tolist() == [1.0, 0.5]


# ---------------------------------------------------------------- promote_types / result_type

def test_promote_types_examples():
    assert ember.promote_types(ember.int32, ember.float16) == ember.float16
    assert ember.promote_types(ember.uint8, ember.int8) == ember.int16
    assert ember.promote_types(ember.float16, ember.bfloat16) == ember.float32
    assert ember.promote_types(ember.bool, ember.bool) == ember.bool
    assert ember.promote_types(ember.long, ember.float) == ember.float32
    assert ember.promote_types(ember.int64, ember.double) is ember.float64


def test_result_type_mixed():
    i32 = ember.ones(2, dtype=ember.int32)
    assert ember.result_type(i32, 2.5) == ember.float32
    assert ember.result_type(2.5, i32) == ember.float32
    assert ember.result_type(i32, ember.tensor(1, dtype=ember.int64)) == ember.int32
    assert ember.result_type(i32, ember.tensor(1.0, dtype=ember.float64)) == ember.float64
    assert ember.result_type(ember.tensor(1, dtype=ember.int8), ember.tensor(1, dtype=ember.uint8)) == ember.int16
    assert ember.result_type(ember.ones(2, dtype=ember.float16), ember.tensor(1.0, dtype=ember.float64)) \
        == ember.float16
    assert ember.result_type(ember.ones(2, dtype=ember.bool), True) == ember.bool
    assert ember.result_type(ember.ones(2, dtype=ember.bool), 2) == ember.int64
    assert ember.result_type(ember.tensor(True), 2) == ember.int64
    assert ember.result_type(ember.tensor(2), 2.5) == ember.float32


def test_result_type_two_numbers():
    assert ember.result_type(2, 3) == ember.int64
    assert ember.result_type(2, 3.0) == ember.float32
    assert ember.result_type(2.0, 3) == ember.float32
    assert ember.result_type(True, False) == ember.bool
    assert ember.result_type(True, 2) == ember.int64


def test_result_type_does_not_compute_or_touch_inputs():
    x = ember.tensor([[1, 2], [3, 4]], dtype=ember.int16)
    assert ember.result_type(x, ember.tensor([1.0], dtype=ember.float64)) == ember.float64
    assert x.tolist() == [[1, 2], [3, 4]]


# ---------------------------------------------------------------- comparisons

@pytest.mark.parametrize("op", ["eq", "ne", "lt", "le", "gt", "ge"])
def test_comparisons_return_bool(op):
    for a, b in PAIRS:
        r = getattr(ember, op)(ones(3, a), ones(3, b))
        assert r.dtype == ember.bool, (op, a, b)
        expected = op in ("eq", "le", "ge")
        assert r.tolist() == [expected] * 3, (op, a, b)


def test_comparison_with_scalars_promotes_before_comparing():
    i = ember.tensor([1, 2, 3], dtype=ember.int32)
    r = i < 2.5
    assert r.dtype == ember.bool
    assert r.tolist() == [True, True, False]
    # 2 == 2.0 compares in float, 2 > 1.5
    assert (i == 2.0).tolist() == [False, True, False]
    assert (i > 1.5).tolist() == [False, True, True]
    u = ember.tensor([0, 200], dtype=ember.uint8)
    i8 = ember.tensor([0, -56], dtype=ember.int8)
    # promoted to int16: 200 != -56
    assert (u == i8).tolist() == [True, False]
    assert (u > i8).tolist() == [False, True]
    b = ember.tensor([True, False])
    assert ember.ge(b, 0.5).tolist() == [True, False]
    h = ember.tensor([0.1], dtype=ember.float16)
    d = ember.tensor([0.1], dtype=ember.float64)
    # float16(0.1) promoted to float64 is not float64(0.1)
    assert (h == d).tolist() == [False]
    assert (h != d).dtype == ember.bool


def test_comparison_out_of_float_dtype():
    r = ember.lt(ember.tensor([0.0, 2.0]), 1, out=ember.empty(2, dtype=ember.float32))
    assert r.dtype == ember.float32
    assert r.tolist() == [1.0, 0.0]


# ---------------------------------------------------------------- in-place and out=

def test_inplace_cannot_cast_float_to_long():
    x = ember.tensor([1, 2])
    with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired output type Long"):
        x.add_(1.5)
    assert x.tolist() == [1, 2]
    with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired output type Long"):
        x.add_(ember.tensor([0.5, 0.5]))
    with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired output type Long"):
        x += 0.5
    assert x.tolist() == [1, 2]


def test_inplace_cannot_cast_other_pairs():
    with pytest.raises(RuntimeError, match="result type Long can't be cast to the desired output type Bool"):
        ember.tensor([True]).add_(1)
    with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired output type Byte"):
        ember.tensor([1], dtype=ember.uint8).mul_(2.0)
    with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired output type Int"):
        ember.tensor([1], dtype=ember.int32).__iadd__(0.5)
    with pytest.raises(RuntimeError, match="result type Double can't be cast to the desired output type Short"):
        ember.tensor([1], dtype=ember.int16).sub_(ember.tensor([1.0], dtype=ember.float64))


def test_inplace_true_division_of_int_raises():
    x = ember.tensor([4, 6], dtype=ember.int32)
    with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired output type Int"):
        x.div_(2)
    with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired output type Int"):
        x /= 2


def test_inplace_downcasts_within_category():
    x = ember.tensor([1.0, 2.0])
    x.add_(ember.tensor([0.5, 0.25], dtype=ember.float64))
    assert x.dtype == ember.float32
    assert x.tolist() == [1.5, 2.25]
    u = ember.tensor([250, 1], dtype=ember.uint8)
    u.add_(ember.tensor([10, 1]))  # computed in int64, written back as uint8 (wraps)
    assert u.dtype == ember.uint8
    assert u.tolist() == [4, 2]
    h = ember.tensor([1.0], dtype=ember.float16)
    h.mul_(2.5)
    assert h.dtype == ember.float16
    assert h.tolist() == [2.5]
    f = ember.tensor([1.0, 2.0])
    f.add_(ember.tensor([1, 2]))
    assert f.tolist() == [2.0, 4.0]
    b = ember.tensor([False, True])
    b.mul_(True)
    assert b.dtype == ember.bool


def test_out_dtype_rules():
    i = ember.tensor([1, 2])
    with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired output type Long"):
        ember.add(i, ember.tensor([0.5, 0.5]), out=ember.empty(2, dtype=ember.int64))
    r = ember.add(i, ember.tensor([1, 1], dtype=ember.int32), out=ember.empty(2, dtype=ember.float64))
    assert r.dtype == ember.float64
    assert r.tolist() == [2.0, 3.0]
    r = ember.add(ember.tensor([1.0, 2.0]), 1, out=ember.empty(2, dtype=ember.float16))
    assert r.dtype == ember.float16
    assert r.tolist() == [2.0, 3.0]


def test_promoted_values_are_exact():
    # int64 values beyond float32's 24-bit mantissa survive int64 + int32 promotion.
    big = ember.tensor([2 ** 40 + 1])
    r = big + ember.tensor([1], dtype=ember.int32)
    assert r.dtype == ember.int64
    assert r.tolist() == [2 ** 40 + 2]
    # float64 + float32 computes in float64
    r = ember.tensor([0.1], dtype=ember.float64) + ember.tensor([0.2], dtype=ember.float32)
    expected = np.float64(0.1) + np.float64(np.float32(0.2))
    assert r.tolist() == [expected]
