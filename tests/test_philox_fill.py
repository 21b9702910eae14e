"""_philox_fill_, the per-device kernel behind rand, randn and randint, and the
random streams themselves: seeded values are pinned, so a change to where or
how the fill runs cannot change them."""
import numpy as np
import pytest

import ember


def np_(t):
    return t.float().numpy() if t.dtype == ember.bfloat16 else t.numpy()


def test_seeded_streams_are_pinned():
    ember.manual_seed(2024)
    assert ember.rand(5).tolist() == [0.6036898493766785, 0.26856327056884766, 0.984598696231842,
                                      0.08359599113464355, 0.3462841510772705]
    assert ember.randn(3, dtype=ember.float64).tolist() == [0.6344701736630803, -1.1445717241962206,
                                                            0.13090183189209728]
    assert ember.randint(-5, 17, (6,)).tolist() == [0, 10, 8, 2, -5, -2]
    assert ember.randint(0, 2 ** 40, (3,)).tolist() == [160651249310, 101197280316, 1055820510102]
    assert ember.rand(4, dtype=ember.float16).tolist() == [0.0771484375, 0.1103515625, 0.61474609375,
                                                           0.08056640625]
    assert ember.randn(3, dtype=ember.bfloat16).tolist() == [-1.671875, -1.09375, -0.0595703125]
    ember.manual_seed(2 ** 63 + 5)
    assert ember.rand(2).tolist() == [0.9707057476043701, 0.011069893836975098]


# (factory call, the matching fill's arguments after (seed, offset), elements a Philox block)
CASES = [
    (lambda n, g: ember.rand(n, generator=g), ("uniform",), ember.float32, 4),
    (lambda n, g: ember.rand(n, generator=g, dtype=ember.float64), ("uniform",), ember.float64, 2),
    (lambda n, g: ember.randn(n, generator=g, dtype=ember.bfloat16), ("normal",), ember.bfloat16, 4),
    (lambda n, g: ember.randn(n, generator=g, dtype=ember.float64), ("normal",), ember.float64, 2),
    (lambda n, g: ember.randint(-3, 9, (n,), generator=g, dtype=ember.int16), ("integer", -3, 9), ember.int16, 4),
    (lambda n, g: ember.randint(0, 2 ** 40, (n,), generator=g), ("integer", 0, 2 ** 40), ember.int64, 2),
]


@pytest.mark.parametrize("factory,args,dtype,per_block", CASES)
def test_fill_matches_the_factories(factory, args, dtype, per_block):
    g = ember.Generator().manual_seed(77)
    first, second = factory(10, g), factory(10, g)
    blocks = -(-10 // per_block)   # the offset the first call advanced the generator by
    for offset, expected in ((0, first), (blocks, second)):
        t = ember._philox_fill_(ember.empty(10, dtype=dtype), args[0], 77, offset, *args[1:])
        np.testing.assert_array_equal(np_(t), np_(expected))


def test_seed_is_the_int64_bits_of_a_uint64():
    ember.manual_seed(2 ** 64 - 3)
    expected = ember.rand(6)
    t = ember._philox_fill_(ember.empty(6), "uniform", -3, 0)
    np.testing.assert_array_equal(t.numpy(), expected.numpy())


def test_strided_self_takes_the_row_major_order():
    contiguous = ember._philox_fill_(ember.empty(6, 4), "normal", 5, 11)
    strided = ember.empty(4, 6).t()
    assert not strided.is_contiguous()
    out = ember._philox_fill_(strided, "normal", 5, 11)
    assert out.data_ptr() == strided.data_ptr() and out.stride() == strided.stride()
    np.testing.assert_array_equal(strided.numpy(), contiguous.numpy())
    sliced = ember.zeros(6, 8)[:, ::2]
    ember._philox_fill_(sliced, "normal", 5, 11)
    np.testing.assert_array_equal(sliced.numpy(), contiguous.numpy())


def test_empty_self_and_version():
    e = ember.empty(0, 3)
    assert tuple(ember._philox_fill_(e, "uniform", 1, 0).shape) == (0, 3)
    t = ember.empty(3)
    v = t._version
    ember._philox_fill_(t, "uniform", 1, 0)
    assert t._version == v + 1


def test_bad_arguments_raise_naming_the_op():
    with pytest.raises(ValueError, match="_philox_fill_: distribution must be 'uniform', 'normal' or 'integer', "
                                         "but got 'gauss'"):
        ember._philox_fill_(ember.empty(3), "gauss", 1, 0)
    with pytest.raises(RuntimeError, match="\"_philox_fill_\" not implemented for 'Long'"):
        ember._philox_fill_(ember.empty(3, dtype=ember.int64), "uniform", 1, 0)
    with pytest.raises(RuntimeError, match="_philox_fill_: 'integer' expects low < high, but got low=4 and high=4"):
        ember._philox_fill_(ember.empty(3, dtype=ember.int64), "integer", 1, 0, 4, 4)
    with pytest.raises(RuntimeError, match="more than one element of the written-to tensor"):
        ember._philox_fill_(ember.empty(1).expand(3), "uniform", 1, 0)


def test_autograd_as_pytorch_random_fills():
    leaf = ember.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad"):
        ember._philox_fill_(leaf, "uniform", 1, 0)
    y = leaf * 2
    ember._philox_fill_(y, "normal", 1, 0)
    y.sum().backward()
    np.testing.assert_array_equal(leaf.grad.numpy(), np.zeros(3, dtype=np.float32))
