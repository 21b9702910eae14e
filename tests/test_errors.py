"""Every kind of misuse gets a clear Python exception that names the op, of the
type PyTorch raises (RuntimeError / IndexError / TypeError / ValueError), and
nothing crashes the interpreter."""
import pytest

import ember
from child_process import run_isolated


def message(excinfo):
    return str(excinfo.value)


# ---------------------------------------------------------------- broadcasting

BROADCAST = [
    ("add", lambda a, b: ember.add(a, b)),
    ("add", lambda a, b: a + b),
    ("mul", lambda a, b: a * b),
    ("sub", lambda a, b: ember.sub(a, b)),
    ("maximum", lambda a, b: ember.maximum(a, b)),
    ("eq", lambda a, b: a == b),
    ("lt", lambda a, b: ember.lt(a, b)),
    ("pow", lambda a, b: ember.pow(a, b)),
    ("where", lambda a, b: ember.where(a > 0, b, 0.0)),
    ("true_divide", lambda a, b: ember.true_divide(a, b)),
]


@pytest.mark.parametrize("op,fn", BROADCAST, ids=[f"{op}-{i}" for i, (op, _) in enumerate(BROADCAST)])
def test_broadcast_error_as_pytorch(op, fn):
    a, b = ember.ones(2, 3), ember.ones(4)
    with pytest.raises(RuntimeError) as e:
        fn(a, b)
    assert message(e) == "The size of tensor a (3) must match the size of tensor b (4) at non-singleton dimension 1"


def test_broadcast_error_3d():
    with pytest.raises(RuntimeError) as e:
        ember.ones(2, 3, 4) * ember.ones(5, 1)
    assert message(e) == "The size of tensor a (3) must match the size of tensor b (5) at non-singleton dimension 1"


# Two mismatching dims: PyTorch's infer_size names the last one (it scans from the right).
TWO_MISMATCHES = [
    ("add", lambda m, a, b: a + b, (2, 3), (3, 2)),
    ("where", lambda m, a, b: m.where(b > 0, a, m.zeros(2, 3)), (2, 3), (3, 2)),
    ("matmul batch", lambda m, a, b: a @ b, (2, 3, 1, 1), (3, 2, 1, 1)),
    ("cdist batch", lambda m, a, b: m.cdist(a, b), (2, 3, 1, 1), (3, 2, 1, 1)),
    ("cosine_similarity", lambda m, a, b: m.nn.functional.cosine_similarity(a, b, 0), (2, 3), (3, 2)),
    ("hinge_embedding_loss", lambda m, a, b: m.nn.functional.hinge_embedding_loss(a, b), (2, 3), (3, 2)),
    ("hinge_embedding_loss 1-D", lambda m, a, b: m.nn.functional.hinge_embedding_loss(a, b), (3,), (4,)),
]
TWO_MISMATCH_MESSAGES = {
    "add": "The size of tensor a (3) must match the size of tensor b (2) at non-singleton dimension 1",
    "where": "The size of tensor a (2) must match the size of tensor b (3) at non-singleton dimension 1",
    "matmul batch": "The size of tensor a (3) must match the size of tensor b (2) at non-singleton dimension 1",
    "cdist batch": "The size of tensor a (3) must match the size of tensor b (2) at non-singleton dimension 1",
    "cosine_similarity": "The size of tensor a (3) must match the size of tensor b (2) at non-singleton dimension 1",
    "hinge_embedding_loss": "The size of tensor a (2) must match the size of tensor b (3) at non-singleton dimension 1",
    "hinge_embedding_loss 1-D": "The size of tensor a (4) must match the size of tensor b (3) at non-singleton "
                                "dimension 0",
}


@pytest.mark.parametrize("name, fn, sa, sb", TWO_MISMATCHES, ids=[c[0] for c in TWO_MISMATCHES])
def test_broadcast_error_names_the_last_mismatching_dim(name, fn, sa, sb):
    with pytest.raises(RuntimeError) as e:
        fn(ember, ember.ones(*sa), ember.ones(*sb))
    assert message(e) == TWO_MISMATCH_MESSAGES[name]


@pytest.mark.parametrize("name, fn, sa, sb", TWO_MISMATCHES, ids=[c[0] for c in TWO_MISMATCHES])
def test_broadcast_error_names_the_last_mismatching_dim_as_torch(name, fn, sa, sb):
    torch = pytest.importorskip("torch")
    with pytest.raises(RuntimeError) as e:
        fn(torch, torch.ones(*sa), torch.ones(*sb))
    assert message(e) == TWO_MISMATCH_MESSAGES[name]


def test_cat_of_an_empty_list():
    with pytest.raises(ValueError) as e:
        ember.cat([])
    assert message(e) == "torch.cat(): expected a non-empty list of Tensors"
    with pytest.raises(ValueError, match=r"^torch\.cat\(\): expected a non-empty list of Tensors$"):
        ember.cat(())
    torch = pytest.importorskip("torch")
    with pytest.raises(ValueError, match=r"^torch\.cat\(\): expected a non-empty list of Tensors$"):
        torch.cat([])


def test_inplace_broadcast_error_leaves_tensor_alone():
    a = ember.ones(3)
    with pytest.raises(RuntimeError, match=r"output with shape \[3\] doesn't match the broadcast shape \[2, 3\]") as e:
        a.add_(ember.ones(2, 3))
    assert "add_" in message(e)
    assert a.tolist() == [1.0, 1.0, 1.0]


# ---------------------------------------------------------------- size mismatches

def test_mm_size_mismatch():
    with pytest.raises(RuntimeError, match=r"mat1 and mat2 shapes cannot be multiplied \(2x3 and 2x3\)"):
        ember.mm(ember.ones(2, 3), ember.ones(2, 3))
    with pytest.raises(RuntimeError, match="self must be a matrix"):
        ember.mm(ember.ones(3), ember.ones(3, 2))


def test_matmul_size_mismatch():
    with pytest.raises(RuntimeError, match=r"^mat1 and mat2 shapes cannot be multiplied \(2x3 and 4x5\)$"):
        ember.matmul(ember.ones(2, 3), ember.ones(4, 5))
    with pytest.raises(RuntimeError, match=r"^inconsistent tensor size, expected tensor \[3\] and src \[4\]"):
        ember.ones(3) @ ember.ones(4)
    with pytest.raises(RuntimeError, match="both arguments to matmul need to be at least 1D"):
        ember.matmul(ember.ones(()), ember.ones(3))
    with pytest.raises(RuntimeError, match=r"^The size of tensor a \(2\) must match the size of tensor b \(3\) at "
                                           "non-singleton dimension 0$"):  # the batch dims, as PyTorch's
        ember.matmul(ember.ones(2, 2, 3), ember.ones(3, 3, 4))
    with pytest.raises(RuntimeError, match="expected m1 and m2 to have the same dtype"):
        ember.matmul(ember.ones(2, 2), ember.ones(2, 2, dtype=ember.float64))


def test_cat_and_stack_mismatch():
    with pytest.raises(RuntimeError, match="Sizes of tensors must match except in dimension 0"):
        ember.cat([ember.ones(2, 3), ember.ones(2, 4)])
    with pytest.raises(RuntimeError, match="Tensors must have same number of dimensions: got 2 and 1"):
        ember.cat([ember.ones(2, 3), ember.ones(3)])
    with pytest.raises(ValueError, match=r"cat\(\): expected a non-empty list of Tensors"):
        ember.cat([])
    with pytest.raises(RuntimeError, match="stack expects each tensor to be equal size"):
        ember.stack([ember.ones(2), ember.ones(3)])


def test_view_reshape_expand_mismatch():
    with pytest.raises(RuntimeError, match=r"shape '\[4\]' is invalid for input of size 6"):
        ember.ones(2, 3).view(4)
    with pytest.raises(RuntimeError, match=r"shape '\[-1, 4\]' is invalid for input of size 6"):
        ember.ones(2, 3).view(-1, 4)
    with pytest.raises(RuntimeError, match="only one dimension can be inferred"):
        ember.ones(2, 3).view(-1, -1)
    with pytest.raises(RuntimeError, match=r"view size is not compatible.*Use \.reshape"):
        ember.ones(2, 3).t().view(6)
    with pytest.raises(RuntimeError, match=r"shape '\[5\]' is invalid for input of size 6"):
        ember.ones(2, 3).reshape(5)
    with pytest.raises(RuntimeError, match="The expanded size of the tensor"):
        ember.ones(2, 3).expand(3, 3)
    with pytest.raises(RuntimeError, match="duplicate dims"):
        ember.ones(2, 3).permute(0, 0)
    with pytest.raises(RuntimeError, match="chunk expects `chunks` to be greater than 0"):
        ember.ones(2, 3).chunk(0)


def test_out_dtype_mismatch():
    with pytest.raises(RuntimeError, match="mm"):
        ember.mm(ember.ones(2, 2), ember.ones(2, 2), out=ember.empty(2, 2, dtype=ember.int64))


# ---------------------------------------------------------------- dim out of range

DIMS = [
    ("sum", lambda t: t.sum(2)),
    ("sum", lambda t: t.sum(-3)),
    ("mean", lambda t: t.mean(dim=(0, 5))),
    ("softmax", lambda t: t.softmax(5)),
    ("log_softmax", lambda t: ember.log_softmax(t, 2)),
    ("transpose", lambda t: t.transpose(0, 2)),
    ("select", lambda t: t.select(2, 0)),
    ("unsqueeze", lambda t: t.unsqueeze(4)),
    ("squeeze", lambda t: t.squeeze(3)),
    ("argmax", lambda t: t.argmax(3)),
    ("amax", lambda t: ember.amax(t, 2)),
    ("flatten", lambda t: t.flatten(0, 4)),
    ("permute", lambda t: t.permute(0, 2)),
    ("narrow", lambda t: t.narrow(4, 0, 1)),
    ("cat", lambda t: ember.cat([t, t], dim=2)),
    ("size", lambda t: t.size(5)),
    ("std", lambda t: t.std(2)),
    ("split", lambda t: t.split(1, dim=3)),
    ("unbind", lambda t: t.unbind(2)),
]


@pytest.mark.parametrize("op,fn", DIMS, ids=[f"{op}-{i}" for i, (op, _) in enumerate(DIMS)])
def test_dim_out_of_range(op, fn):
    pattern = r"Dimension out of range \(expected to be in range of \[-[23], [12]\], but got"
    with pytest.raises(IndexError, match=pattern) as e:
        fn(ember.ones(2, 3))
    assert op in message(e)


def test_dim_out_of_range_reports_range_for_rank():
    with pytest.raises(IndexError, match=r"expected to be in range of \[-3, 2\], but got 4"):
        ember.ones(2, 3).unsqueeze(4)  # unsqueeze accepts dim() + 1 positions
    with pytest.raises(IndexError, match=r"expected to be in range of \[-1, 0\], but got 1"):
        ember.cat([ember.ones(2)], dim=1)


def test_select_index_out_of_range():
    pattern = r"select\(\): index 5 out of range for tensor of size \[2, 3\] at dimension 1"
    with pytest.raises(IndexError, match=pattern):
        ember.ones(2, 3).select(1, 5)


# ---------------------------------------------------------------- unsupported dtypes

UNSUPPORTED = [
    ("neg", lambda: ember.neg(ember.ones(2, dtype=ember.bool))),
    ("neg", lambda: -ember.ones(2, dtype=ember.bool)),
    ("relu", lambda: ember.relu(ember.ones(2, dtype=ember.bool))),
    ("abs", lambda: ember.abs(ember.ones(2, dtype=ember.bool))),
    ("softmax", lambda: ember.ones(2, dtype=ember.int64).softmax(0)),
    ("mean", lambda: ember.ones(2, dtype=ember.int64).mean()),
    ("std", lambda: ember.ones(3, dtype=ember.int64).std()),
    ("mm", lambda: ember.mm(ember.ones(2, 2, dtype=ember.bool), ember.ones(2, 2, dtype=ember.bool))),
    ("sub", lambda: ember.ones(2, dtype=ember.bool) - ember.ones(2, dtype=ember.bool)),
]


@pytest.mark.parametrize("op,fn", UNSUPPORTED, ids=[f"{op}-{i}" for i, (op, _) in enumerate(UNSUPPORTED)])
def test_unsupported_dtype_raises_runtime_error_naming_op(op, fn):
    with pytest.raises(RuntimeError) as e:
        fn()
    assert op in message(e)


# Dtype dispatch failures: NotImplementedError (a RuntimeError subclass), worded as PyTorch's
# `"op" not implemented for 'Dtype'` (PyTorch names its kernel, ember the op).
NOT_IMPLEMENTED = [
    ("bitwise_and", "Float", lambda: ember.bitwise_and(ember.tensor(1.), ember.tensor(1.))),
    ("bitwise_not", "Float", lambda: ember.tensor([1.]).bitwise_not()),
    ("bitwise_left_shift", "Float", lambda: ember.tensor([1.]) << 1),
    ("softmax", "Long", lambda: ember.softmax(ember.tensor([1, 2]), 0)),
    ("log_softmax", "Long", lambda: ember.tensor([1, 2]).log_softmax(0)),
    ("arange_cpu", "Bool", lambda: ember.arange(3, dtype=ember.bool)),
    ("check_uniform_bounds", "Long", lambda: ember.rand(2, dtype=ember.int64)),
]


@pytest.mark.parametrize("op,dtype,fn", NOT_IMPLEMENTED, ids=[c[0] for c in NOT_IMPLEMENTED])
def test_unsupported_dtype_raises_not_implemented_error(op, dtype, fn):
    with pytest.raises(NotImplementedError, match=f"\"{op}\" not implemented for '{dtype}'"):
        fn()


TORCH_NOT_IMPLEMENTED = [
    "torch.bitwise_and(torch.tensor(1.), torch.tensor(1.))",
    "torch.tensor([1.]).bitwise_not()",
    "torch.tensor([1.]) << 1",
    "torch.softmax(torch.tensor([1, 2]), 0)",
    "torch.tensor([1, 2]).log_softmax(0)",
    "torch.arange(3, dtype=torch.bool)",
    "torch.rand(2, dtype=torch.int64)",
]


@pytest.mark.parametrize("expr", TORCH_NOT_IMPLEMENTED)
def test_torch_raises_not_implemented_error_for_the_same_calls(expr):
    torch = pytest.importorskip("torch")
    with pytest.raises(NotImplementedError):
        eval(expr, {"torch": torch})
    with pytest.raises(NotImplementedError):
        eval(expr.replace("torch.", "ember."), {"ember": ember})


# ---------------------------------------------------------------- PyTorch's classes for misuse (issue 8, point 11)

def test_argmax_argmin_of_empty_tensor_raise_index_error():
    for fn in (ember.argmax, ember.argmin):
        with pytest.raises(IndexError, match=f"{fn.__name__}\\(\\): Expected reduction dim to be specified"):
            fn(ember.tensor([]))
    with pytest.raises(IndexError):
        ember.zeros(0, 3).argmax()


def test_none_where_a_tensor_is_expected_is_a_type_error():
    with pytest.raises(TypeError, match=r"type_as\(\): argument 'other' \(position 1\) must be Tensor, not NoneType"):
        ember.ones(2).type_as(None)
    with pytest.raises(TypeError, match=r"numel\(\): argument 'input' \(position 1\) must be Tensor, not NoneType"):
        ember.numel(None)
    with pytest.raises(TypeError):
        ember.is_floating_point(None)


def test_contains_accepts_tensors_and_numbers_only():
    t = ember.tensor([1., 2.])
    assert 2 in t and 2.0 in t and ember.tensor(1.) in t and 3 not in t
    import numpy as np
    assert np.float32(1) in t and np.int64(2) in t
    with pytest.raises(RuntimeError, match=r"Tensor.__contains__ only supports Tensor or scalar, but you passed in a "
                                           r"<class 'str'>"):
        "a" in t
    with pytest.raises(RuntimeError):
        None in t


def test_numpy_arrays_as_index_and_operand():
    import numpy as np
    t = ember.arange(4.)
    assert t[np.array([0, 1])].tolist() == [0., 1.]
    assert t[np.array([True, False, True, False])].tolist() == [0., 2.]
    assert ember.arange(6).reshape(2, 3)[np.array([1]), np.array([2])].tolist() == [5]
    assert t[np.int64(2)].item() == 2.0     # a NumPy scalar is still an integer index
    s = t + np.ones(4)
    assert isinstance(s, ember.Tensor) and s.dtype == ember.float64 and s.tolist() == [1., 2., 3., 4.]
    assert (t * np.arange(4, dtype=np.float32)).tolist() == [0., 1., 4., 9.]
    assert (t + np.float32(1)).dtype == ember.float32     # NumPy scalars stay numbers
    u = ember.zeros(4)
    u[np.array([1, 3])] = 5.0
    assert u.tolist() == [0., 5., 0., 5.]


def test_numpy_array_operand_matches_torch():
    torch = pytest.importorskip("torch")
    import numpy as np
    for expr in ("lib.arange(4.) + np.ones(4)", "lib.arange(4.)[np.array([0, 1])]",
                 "lib.arange(4) * np.arange(4, dtype=np.int16)"):
        want = eval(expr, {"lib": torch, "np": np})
        got = eval(expr, {"lib": ember, "np": np})
        assert got.tolist() == want.tolist() and str(got.dtype).split(".")[1] == str(want.dtype).split(".")[1], expr


def test_set_num_threads_rejects_non_positive():
    before = ember.get_num_threads()
    for n in (0, -1):
        with pytest.raises(RuntimeError, match="set_num_threads expects a positive integer"):
            ember.set_num_threads(n)
    assert ember.get_num_threads() == before


def test_negative_strides_copy_in_tensor_but_not_in_as_tensor():
    import numpy as np
    reversed_view = np.arange(4)[::-1]
    assert ember.tensor(reversed_view).tolist() == [3, 2, 1, 0]    # ember.tensor copies
    for fn in (ember.as_tensor, ember.from_numpy):
        with pytest.raises(ValueError, match="At least one stride in the given numpy array is negative"):
            fn(reversed_view)
    shared = np.arange(4)
    ember.as_tensor(shared)[0] = 7                                  # as_tensor shares memory
    assert shared[0] == 7


def test_promoting_ops_accept_any_dtype():
    # sqrt/exp/sigmoid compute integer and bool inputs in the default float dtype.
    for fn in (ember.sqrt, ember.exp, ember.sigmoid, ember.sin):
        assert fn(ember.ones(2, dtype=ember.bool)).dtype == ember.float32
        assert fn(ember.ones(2, dtype=ember.int64)).dtype == ember.float32


def test_requires_grad_on_integer_tensor():
    with pytest.raises(RuntimeError, match="only Tensors of floating point"):
        ember.ones(2, dtype=ember.int32).requires_grad_()


# ---------------------------------------------------------------- argument parsing

def test_unknown_keyword_lists_signature():
    with pytest.raises(TypeError) as e:
        ember.add(ember.ones(2), ember.ones(2), foo=1)
    msg = message(e)
    assert "add(" in msg and "other" in msg and "foo" in msg
    with pytest.raises(TypeError) as e:
        ember.ones(2).add(ember.ones(2), bogus=2)
    msg = message(e)
    assert "add(" in msg and "other" in msg and "bogus" in msg
    with pytest.raises(TypeError) as e:
        ember.ones(2, 3).sum(dimm=1)
    msg = message(e)
    assert "sum(" in msg and "dimm" in msg and "keepdim" in msg


WRONG_TYPES = [
    ("add(", "other", lambda: ember.add(ember.ones(2), "x")),
    ("add(", "other", lambda: ember.add(ember.ones(2))),
    ("add(", "other", lambda: ember.add(ember.ones(2), ember.ones(2), ember.ones(2), ember.ones(2))),
    ("sum(", "dim", lambda: ember.ones(2, 3).sum("x")),
    ("zeros(", "size", lambda: ember.zeros("a")),
    ("zeros(", "dtype", lambda: ember.zeros(2, dtype="float")),
    ("reshape(", "shape", lambda: ember.ones(2, 3).reshape(2.5, 2)),
    ("view(", "size", lambda: ember.ones(2, 3).view("x")),
    ("transpose(", "dim0", lambda: ember.ones(2, 3).transpose(0.5, 1)),
    ("mm(", "mat2", lambda: ember.mm(ember.ones(2, 2), [1, 2])),
    ("cat(", "tensors", lambda: ember.cat(ember.ones(2))),
    ("cat(", "tensors", lambda: ember.cat([ember.ones(2), 1])),
    ("full(", "fill_value", lambda: ember.full((2,))),
    ("rand(", "size", lambda: ember.rand(2, "a")),
    ("softmax(", "dim", lambda: ember.ones(2).softmax("a")),
    ("ones_like(", "input", lambda: ember.ones_like([1, 2])),
]


@pytest.mark.parametrize("name,arg,fn", WRONG_TYPES, ids=[f"{n}{i}" for i, (n, _, _) in enumerate(WRONG_TYPES)])
def test_wrong_argument_types(name, arg, fn):
    with pytest.raises(TypeError) as e:
        fn()
    msg = message(e)
    assert name in msg and arg in msg


# A Python number for a Tensor argument: accepted only where PyTorch takes one (its wrapped
# numbers for add/sub/mul/div, or a Scalar overload such as eq.Scalar); elsewhere TypeError.
TENSOR_ONLY = [
    ("maximum(", lambda t: ember.maximum(t, 2.0)), ("maximum(", lambda t: t.maximum(2)),
    ("maximum_(", lambda t: t.maximum_(2)), ("minimum(", lambda t: ember.minimum(t, 2)),
    ("minimum(", lambda t: ember.minimum(2, t)), ("logical_and(", lambda t: ember.logical_and(t, 2)),
    ("logical_and(", lambda t: t.logical_and(True)), ("logical_and_(", lambda t: t.logical_and_(2)),
    ("logical_or(", lambda t: ember.logical_or(t, 0)), ("logical_or(", lambda t: t.logical_or(1.5)),
    ("max(", lambda t: ember.max(t, 2.5)), ("min(", lambda t: t.min(2.5)),
    ("matmul(", lambda t: ember.matmul(t, 2)), ("mv(", lambda t: ember.ones(3, 3).mv(2)),
    ("eq(", lambda t: ember.eq(2, t)), ("lt(", lambda t: ember.lt(2.5, t)),
    ("where(", lambda t: ember.where(True, t, 2)),
]


@pytest.mark.parametrize("name,fn", TENSOR_ONLY, ids=[f"{n}{i}" for i, (n, _) in enumerate(TENSOR_ONLY)])
def test_tensor_only_arguments_refuse_python_numbers(name, fn):
    with pytest.raises(TypeError) as e:
        fn(ember.ones(3))
    assert name in message(e)


TAKES_NUMBERS = [
    lambda L, t: L.add(2, t), lambda L, t: L.sub(2.5, t, alpha=2), lambda L, t: L.mul(t, 3),
    lambda L, t: L.div(1, t), lambda L, t: L.div(t, 2, rounding_mode="floor"), lambda L, t: L.true_divide(3, t),
    lambda L, t: L.floor_divide(7, t), lambda L, t: L.remainder(7, t), lambda L, t: t.remainder(2),
    lambda L, t: L.eq(t, 2), lambda L, t: t.ge(1.5), lambda L, t: L.where(t > 1, 2, t), lambda L, t: t.where(t > 1, 0),
    lambda L, t: L.where(t > 1, 1.5, 2), lambda L, t: t.clone().copy_(5), lambda L, t: L.bitwise_and(6, t.long()),
    lambda L, t: L.bitwise_left_shift(1, t.long()),
]


@pytest.mark.parametrize("fn", TAKES_NUMBERS)
def test_python_numbers_where_pytorch_takes_them(fn):
    t = ember.tensor([1.0, 2.0, 3.0])
    got = fn(ember, t)
    try:
        import torch
    except ImportError:
        return
    want = fn(torch, torch.tensor([1.0, 2.0, 3.0]))
    assert got.tolist() == want.tolist() and str(got.dtype).split(".")[1] == str(want.dtype).split(".")[1]


def test_binary_ops_take_numbers_exactly_where_torch_does():
    torch = pytest.importorskip("torch")
    from harness.spec import load_spec, tensor_args
    checked = 0
    for op in load_spec().ops:
        tensors = tensor_args(op)
        if len(tensors) != 2 or tensors[0].name != "self" or op.name.startswith("_") or op.kind == "view":
            continue
        for form in ("function", "method"):
            if form not in op.variants or not hasattr(torch.Tensor if form == "method" else torch, op.name):
                continue
            for number in (2, 2.5):
                outcomes = []
                for lib in (ember, torch):
                    t = lib.ones(3, 3)
                    fn = getattr(t, op.name) if form == "method" else (lambda x, f=getattr(lib, op.name): f(t, x))
                    try:
                        fn(number)
                        outcomes.append("ok")
                    except (TypeError, AttributeError):  # AttributeError: torch.functional's tensordot reads b.dim()
                        outcomes.append("TypeError")
                    except (RuntimeError, IndexError):
                        outcomes.append("other")  # the number was accepted (or matched another overload)
                assert outcomes[0] == outcomes[1], f"{form} {op.full_name}({number}): ember {outcomes[0]}, torch {outcomes[1]}"
                checked += 1
    assert checked > 40


def test_unknown_attribute():
    with pytest.raises(AttributeError, match="foobar"):
        ember.ones(2).foobar
    with pytest.raises(AttributeError, match="foobar"):
        ember.foobar


# ---------------------------------------------------------------- values

def test_index_out_of_bounds():
    t = ember.ones(2, 3)
    with pytest.raises(IndexError, match="index 5 is out of bounds for dimension 0 with size 2"):
        t[5]
    with pytest.raises(IndexError, match="out of bounds"):
        t[ember.tensor([0, 7])]
    with pytest.raises(IndexError, match="out of bounds"):
        t[:, -4]
    with pytest.raises(IndexError, match="out of bounds"):
        t[1, 3] = 0.0


def test_item_of_multi_element():
    with pytest.raises(RuntimeError, match="a Tensor with 6 elements cannot be converted to Scalar"):
        ember.ones(2, 3).item()


def test_integer_to_negative_power():
    with pytest.raises(RuntimeError, match="Integers to negative integer powers are not allowed"):
        ember.tensor([2]) ** -1
    with pytest.raises(RuntimeError, match="Integers to negative integer powers are not allowed"):
        ember.pow(ember.tensor([2, 3]), -2)
    assert (ember.tensor([2.0]) ** -1).tolist() == [0.5]


def test_integer_division_by_zero():
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        ember.tensor([1]) // 0
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        ember.tensor([1]) % 0


def test_where_requires_bool_condition():
    with pytest.raises(RuntimeError, match="where expected condition to be a boolean tensor"):
        ember.where(ember.ones(2), ember.ones(2), ember.ones(2))


def test_fill_with_non_scalar_tensor():
    with pytest.raises(RuntimeError, match="fill_ only supports 0-dimension value tensor"):
        ember.zeros(2).fill_(ember.tensor([2.5]))


def test_clamp_without_bounds():
    with pytest.raises(RuntimeError, match="At least one of 'min' or 'max' must not be None"):
        ember.clamp(ember.ones(2))


def test_creation_errors():
    with pytest.raises(RuntimeError, match="(?i)negative"):
        ember.zeros(-1)
    with pytest.raises(RuntimeError, match="step must be nonzero"):
        ember.arange(0, 10, 0)
    with pytest.raises(RuntimeError, match="random_ expects 'from' to be less than 'to'"):
        ember.randint(5, 2, (3,))
    with pytest.raises(ValueError):
        ember.tensor([[1], [1, 2]])


def test_empty_reduction_without_dim():
    with pytest.raises(RuntimeError, match=r"max\(\): Expected reduction dim to be specified"):
        ember.zeros(0).max()
    with pytest.raises(IndexError, match=r"amax\(\): Expected reduction dim 0 to have non-zero size"):
        ember.zeros(0, 3).amax(0)


# ---------------------------------------------------------------- nothing crashes

def test_empty_tensor_reductions_do_not_crash():
    p = run_isolated("""
        import math, ember
        z = ember.zeros(0, 3)
        assert ember.zeros(0).sum().item() == 0.0
        assert z.sum(0).tolist() == [0.0, 0.0, 0.0]
        assert z.sum(1).tolist() == []
        assert ember.zeros(3, 0).sum(1).tolist() == [0.0, 0.0, 0.0]
        assert ember.zeros(0).prod().item() == 1.0
        assert math.isnan(ember.zeros(0).mean().item())
        assert all(math.isnan(v) for v in z.mean(0).tolist())
        assert ember.zeros(0, dtype=ember.bool).all().item() is True
        assert ember.zeros(0, dtype=ember.bool).any().item() is False
        assert z.amax(1).tolist() == []
        print("OK")
    """)
    assert p.returncode == 0, f"rc={p.returncode}\n{p.stderr[-2000:]}"
    assert "OK" in p.stdout


FUZZ = """
    import ember
    T = ember.ones(2, 3)
    pool = [None, "x", T, ember.ones(4, 5), ember.tensor(1.5), ember.zeros(0, 3), ember.tensor([True, False]),
            ember.tensor([[1, 2, 3]]), ember.ones(3, dtype=ember.bfloat16), ember.ones(2, 3, dtype=ember.float16),
            100, -100, 1.5, 0, [T, ember.ones(3)], [[1, 2], [3]], (2, -1), ember.ones(3, 2).t()]
    tensors = [x for x in pool if isinstance(x, ember.Tensor)]
    allowed = (TypeError, RuntimeError, IndexError, ValueError, NotImplementedError, ZeroDivisionError,
               OverflowError, AttributeError)
    bad = []

    def attempt(label, fn, *args, **kw):
        try:
            fn(*args, **kw)
        except allowed:
            pass
        except Exception as e:
            bad.append(f"{label}: {type(e).__name__}: {e}")

    functions = [getattr(table, name) for table in ember._C._op_modules.values() for name in table.__all__]
    for fn in sorted(functions, key=lambda f: f.__name__):
        op = fn.__name__
        attempt(op, fn)
        for a in pool:
            attempt(op, fn, a)
        for a in tensors:
            for b in pool:
                attempt(op, fn, a, b)
        for b in (100, -100, 0, T, "x"):
            for c in (100, -100, T, None):
                attempt(op, fn, T, b, c)
        attempt(op, fn, T, dim=100)
        attempt(op, fn, T, foo=1)
        attempt(op, fn, T, T, out=ember.empty(1, dtype=ember.int8))
        attempt(op, fn, T, dtype="float")
        method = getattr(ember.Tensor, op, None)
        if method is not None:
            for recv in tensors:
                for b in pool:
                    attempt("Tensor." + op, method, recv, b)
    print("\\n".join(bad))
    print("FUZZ-DONE", len(bad))
"""


def test_fuzzed_misuse_never_crashes():
    p = run_isolated(FUZZ, timeout=300)
    assert p.returncode == 0, f"interpreter died with rc={p.returncode}\n{p.stderr[-2000:]}"
    assert "FUZZ-DONE 0" in p.stdout, p.stdout[-3000:]
