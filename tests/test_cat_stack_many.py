"""cat and stack of many inputs (the DataLoader's collate stacks a batch of small samples): one pass of
block copies for contiguous inputs of the result's dtype, copy_ for the others, serial below
cat_parallel_work result elements and split across threads from there; against NumPy, and torch when installed."""
import numpy as np
import pytest

import ember

PARALLEL = ember._C._thresholds()["cat_parallel_work"]


def _arrays(n, shape, dtype=np.float32, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(shape).astype(dtype) if np.dtype(dtype).kind == "f"
            else rng.integers(-50, 50, shape).astype(dtype) for _ in range(n)]


def _tensors(arrays):
    return [ember.from_numpy(a) for a in arrays]


@pytest.mark.parametrize("n", [1, 2, 3, 64, 257])
@pytest.mark.parametrize("shape", [(), (5,), (3, 4), (2, 3, 4)])
def test_stack_many_every_dim(threads, n, shape):
    arrays = _arrays(n, shape, seed=n)
    for dim in range(-len(shape) - 1, len(shape) + 1):
        out = ember.stack(_tensors(arrays), dim)
        assert out.is_contiguous() and out._version == 0
        np.testing.assert_array_equal(out.numpy(), np.stack(arrays, axis=dim))


@pytest.mark.parametrize("n", [1, 2, 64, 200])
def test_cat_many_every_dim(threads, n):
    rng = np.random.default_rng(n)
    for dim in range(3):
        arrays = []
        for i in range(n):
            shape = [2, 3, 4]
            shape[dim] = int(rng.integers(0, 4))  # some inputs are empty along dim
            arrays.append(rng.standard_normal(shape).astype(np.float64))
        out = ember.cat(_tensors(arrays), dim)
        np.testing.assert_array_equal(out.numpy(), np.concatenate(arrays, axis=dim))
        assert out._version == 0


@pytest.mark.parametrize("elements", [PARALLEL - 16, PARALLEL - 1, PARALLEL, PARALLEL + 16, 3 * PARALLEL + 5])
@pytest.mark.parametrize("dim", [0, 1, 2])
def test_results_around_the_parallel_threshold(threads, elements, dim):
    # 8 inputs of (2, k, 1): 16k result elements, `elements` rounded down to a multiple of 16.
    arrays = _arrays(8, (2, elements // 16, 1), seed=elements)
    np.testing.assert_array_equal(ember.stack(_tensors(arrays), dim).numpy(), np.stack(arrays, axis=dim))
    np.testing.assert_array_equal(ember.cat(_tensors(arrays), dim).numpy(), np.concatenate(arrays, axis=dim))
    one = _arrays(1, (elements,), seed=1)[0]  # exactly `elements`, split in unequal pieces
    pieces = np.split(one, [1, elements // 3, elements // 2])
    np.testing.assert_array_equal(ember.cat(_tensors(pieces)).numpy(), one)


def test_non_contiguous_offset_and_expanded_inputs_mixed_with_contiguous(threads):
    base = np.arange(4 * 6 * 5, dtype=np.float32).reshape(4, 6, 5)
    parts = [ember.from_numpy(base[0]), ember.from_numpy(base[1]).t().t(),  # contiguous
             ember.from_numpy(base).transpose(1, 2)[2].t(),  # transposed
             ember.from_numpy(base[3, :, ::2].repeat(2, 1)[:, :5]),  # row-strided
             ember.from_numpy(base)[1:3].reshape(12, 5)[3:9],  # a contiguous view at a storage offset
             ember.from_numpy(np.arange(5, dtype=np.float32)).expand(6, 5),  # stride 0
             ember.from_numpy(base)[:, 1, :].t().t()[0:1].expand(6, 5)]
    arrays = [p.numpy().copy() for p in parts]
    for dim in (0, 1, -1):
        np.testing.assert_array_equal(ember.stack(parts, dim).numpy(), np.stack(arrays, axis=dim))
    for dim in (0, 1):
        np.testing.assert_array_equal(ember.cat(parts, dim).numpy(), np.concatenate(arrays, axis=dim))


@pytest.mark.parametrize("dtypes,expected_dtype", [  # torch's promotion: a float kind wins over ints whatever their size
    ((np.uint8, np.int8), np.int16), ((np.int64, np.float32), np.float32), ((np.bool_, np.uint8), np.uint8),
    ((np.float16, np.float64), np.float64), ((np.int32, np.int32, np.float16), np.float16)])
def test_mixed_dtypes_promote(threads, dtypes, expected_dtype):
    arrays = [_arrays(1, (3, 4), dtype=d, seed=i)[0] for i, d in enumerate(dtypes * 20)]
    arrays = [a > 0 if a.dtype == np.bool_ else a for a in arrays]
    for op, ref in ((ember.stack, np.stack), (ember.cat, np.concatenate)):
        out = op(_tensors(arrays), 1)
        assert out.numpy().dtype == expected_dtype
        np.testing.assert_array_equal(out.numpy(), ref([a.astype(expected_dtype) for a in arrays], axis=1))
    torch = pytest.importorskip("torch")
    assert str(ember.stack(_tensors(arrays))).split("dtype=")[-1] == \
        str(torch.stack([torch.from_numpy(a) for a in arrays])).split("dtype=")[-1].replace("torch.", "ember.")


def test_gradients_of_many_inputs(threads):
    n = 40
    arrays = _arrays(n, (3, 2), dtype=np.float64, seed=3)
    weights = np.random.default_rng(4).standard_normal((3, n, 2))
    inputs = [ember.tensor(a, requires_grad=i % 3 != 1) for i, a in enumerate(arrays)]
    out = ember.stack(inputs, 1)
    assert out.requires_grad and out.grad_fn.name() == "StackBackward0"
    (out * ember.from_numpy(weights)).sum().backward()
    for i, t in enumerate(inputs):
        if i % 3 == 1:
            assert t.grad is None
        else:
            np.testing.assert_array_equal(t.grad.numpy(), weights[:, i, :])
    inputs = [ember.tensor(a, requires_grad=i % 2 == 0) for i, a in enumerate(arrays)]
    out = ember.cat(inputs, 1)
    assert out.grad_fn.name() == "CatBackward0"
    cat_weights = weights.reshape(3, 2 * n)
    (out * ember.from_numpy(cat_weights)).sum().backward()
    for i in range(0, n, 2):
        np.testing.assert_array_equal(inputs[i].grad.numpy(), cat_weights[:, 2 * i:2 * i + 2])
    plain = ember.stack(_tensors(arrays))
    assert not plain.requires_grad and plain.grad_fn is None
    torch = pytest.importorskip("torch")
    tin = [torch.tensor(a, requires_grad=True) for a in arrays]
    torch.stack(tin, 1).mul(torch.from_numpy(weights)).sum().backward()
    ein = [ember.tensor(a, requires_grad=True) for a in arrays]
    ember.stack(ein, 1).mul(ember.from_numpy(weights)).sum().backward()
    for e, t in zip(ein, tin):
        np.testing.assert_array_equal(e.grad.numpy(), t.grad.numpy())


def test_results_own_their_memory():
    arrays = _arrays(5, (4,), seed=9)
    expected = np.stack(arrays)
    inputs = _tensors(arrays)
    out = ember.stack(inputs)
    inputs[0].fill_(100.0)  # writes arrays[0], not the result
    np.testing.assert_array_equal(out.numpy(), expected)
    out.fill_(0)
    np.testing.assert_array_equal(inputs[1].numpy(), expected[1])
