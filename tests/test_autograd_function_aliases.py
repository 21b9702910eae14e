"""A custom Function's outputs that alias its inputs, written in place afterwards.

An input returned as-is comes back as a view of it (PyTorch's view_as) whose grad_fn is
the Function's node; a view of an input stays a view. Writing in place through such a
view would rebase its history around the Function's backward (a silently wrong
gradient), so it raises as PyTorch does; mark_dirty is the supported way. The same holds
for the module outputs and inputs that full backward hooks pass through their Function.
Each case runs on ember with hand-computed expectations and, when PyTorch is installed,
on torch too, which must give the same gradients or the same error."""
import re

import numpy as np
import pytest

import ember

try:
    import torch
except ImportError:  # the comparisons are skipped
    torch = None

CUSTOM_FUNCTION_VIEW = ("This view was created inside a custom Function (or because an input was returned as-is) "
                        "and the autograd logic to handle view+inplace would override the custom backward "
                        "associated with the custom Function, leading to incorrect gradients. This behavior is "
                        "forbidden. You can fix this by cloning the output of the custom Function.")
MULTI_OUTPUT_VIEW = ("This view is the output of a function that returns multiple views. Such functions do not "
                     "allow the output views to be modified inplace. You should replace the inplace operation by "
                     "an out-of-place one.")


def returning_its_input(lib, name, mark=None):
    """A Function returning its input unchanged, first passing it to ctx.<mark> when given;
    its backward doubles the gradient (unlike the identity's)."""
    def forward(ctx, x):
        if mark is not None:
            getattr(ctx, mark)(x)
        return x

    def backward(ctx, g):
        return g * 2

    return type(name, (lib.autograd.Function,), {"forward": staticmethod(forward), "backward": staticmethod(backward)})


def functions(lib):
    """The custom Functions of the cases, defined on `lib` (ember or torch)."""
    Function = lib.autograd.Function

    class Tail(Function):  # a view of its input
        @staticmethod
        def forward(ctx, x):
            return x[1:]

        @staticmethod
        def backward(ctx, g):
            out = g.new_zeros(3)
            out[1:] = g * 2
            return out

    class InputAndTriple(Function):  # two outputs, the first its input
        @staticmethod
        def forward(ctx, x):
            return x, x * 3

        @staticmethod
        def backward(ctx, g_same, g_triple):
            return g_same * 2 + g_triple * 3

    class Swap(Function):  # both outputs are inputs
        @staticmethod
        def forward(ctx, x, y):
            return y, x

        @staticmethod
        def backward(ctx, g_y, g_x):
            return g_x * 2, g_y * 3

    class TailNonDiff(Function):  # a non-differentiable view of its input
        @staticmethod
        def forward(ctx, x):
            tail = x[1:]
            ctx.mark_non_differentiable(tail)
            return tail

        @staticmethod
        def backward(ctx, g):
            return None

    returning = [returning_its_input(lib, "Id"), returning_its_input(lib, "IdDirty", "mark_dirty"),
                 returning_its_input(lib, "PassNonDiff", "mark_non_differentiable")]
    return {cls.__name__: cls for cls in returning + [Tail, InputAndTriple, Swap, TailNonDiff]}


def start(lib):
    return lib.tensor([1.0, -2.0, 3.0], dtype=lib.float64, requires_grad=True)


# Each case gets (lib, the Functions) and returns what it computed; a case may raise.
def id_relu_(lib, f):
    y = f["Id"].apply(start(lib) * 1)
    y.relu_()


def id_mul_(lib, f):
    y = f["Id"].apply(start(lib) * 1)
    y.mul_(3)


def id_of_leaf_mul_(lib, f):
    f["Id"].apply(start(lib)).mul_(3)


def id_view_of_output_mul_(lib, f):
    f["Id"].apply(start(lib) * 1).view(3).mul_(3)


def id_element_of_output_mul_(lib, f):
    f["Id"].apply(start(lib) * 1)[0].mul_(3)


def id_then_input_mul_(lib, f):  # the input (the view's base) is written after: the view's grad_fn can't be read
    base = start(lib) * 1
    y = f["Id"].apply(base)
    base.mul_(3)
    y.sum()


def id_then_no_grad_mul_(lib, f):  # written without recording: found when the history is next needed
    y = f["Id"].apply(start(lib) * 1)
    with lib.no_grad():
        y.mul_(3)
    y.sum()


def id_then_detached_mul_(lib, f):
    y = f["Id"].apply(start(lib) * 1)
    y.detach().mul_(3)
    y.sum()


def id_of_a_view_mul_(lib, f):
    y = f["Id"].apply((start(lib) * 1)[1:])
    y.mul_(3)


def tail_mul_(lib, f):
    f["Tail"].apply(start(lib) * 1).mul_(3)


def tail_of_leaf_mul_(lib, f):
    f["Tail"].apply(start(lib)).mul_(3)


def multi_output_input_mul_(lib, f):
    same, _ = f["InputAndTriple"].apply(start(lib) * 1)
    same.mul_(5)


def swap_mul_(lib, f):
    x = start(lib)
    _, second = f["Swap"].apply(x * 1, x * 1)
    second.mul_(2)


def tail_non_diff_mul_(lib, f):
    f["TailNonDiff"].apply(start(lib) * 1).mul_(2)


RAISING = [
    (id_relu_, "Output 0 of Id is a view and is being modified inplace. " + CUSTOM_FUNCTION_VIEW),
    (id_mul_, "Output 0 of Id is a view and is being modified inplace. " + CUSTOM_FUNCTION_VIEW),
    (id_of_leaf_mul_, "Output 0 of Id is a view and is being modified inplace. " + CUSTOM_FUNCTION_VIEW),
    (id_view_of_output_mul_, "Output 0 of View is a view and is being modified inplace. " + CUSTOM_FUNCTION_VIEW),
    (id_element_of_output_mul_, "Output 0 of Select is a view and is being modified inplace. "
     + CUSTOM_FUNCTION_VIEW),
    (id_then_input_mul_, "Output 0 of Id is a view and its base or another view of its base has been modified "
     "inplace. " + CUSTOM_FUNCTION_VIEW),
    (id_then_no_grad_mul_, "Output 0 of Id is a view and its base or another view of its base has been modified "
     "inplace. " + CUSTOM_FUNCTION_VIEW),
    (id_then_detached_mul_, "Output 0 of Id is a view and its base or another view of its base has been modified "
     "inplace. " + CUSTOM_FUNCTION_VIEW),
    (id_of_a_view_mul_, "Output 0 of Id is a view and is being modified inplace. " + CUSTOM_FUNCTION_VIEW),
    (tail_mul_, "Output 0 of Tail is a view and is being modified inplace. " + CUSTOM_FUNCTION_VIEW),
    (tail_of_leaf_mul_, "Output 0 of Tail is a view and is being modified inplace. " + CUSTOM_FUNCTION_VIEW),
    (multi_output_input_mul_, "Output 0 of InputAndTriple is a view and is being modified inplace. "
     + MULTI_OUTPUT_VIEW),
    (swap_mul_, "Output 1 of Swap is a view and is being modified inplace. " + MULTI_OUTPUT_VIEW),
    (tail_non_diff_mul_, "A view was created in no_grad mode and is being modified inplace with grad mode enabled. "
     + CUSTOM_FUNCTION_VIEW),
]


def run_case(lib, case):
    """('ok', result) or ('raises', error class name, message) of `case` on `lib`."""
    try:
        return ("ok", case(lib, functions(lib)))
    except Exception as e:  # the outcome is what is compared
        return ("raises", type(e).__name__, str(e))


@pytest.mark.parametrize("case,message", RAISING, ids=[case.__name__ for case, _ in RAISING])
def test_writing_through_an_output_aliasing_an_input_raises(case, message):
    with pytest.raises(RuntimeError, match="^" + re.escape(message) + "$"):
        case(ember, functions(ember))
    if torch is not None:
        assert run_case(torch, case) == run_case(ember, case)


# Cases that work: each returns the leaf's gradient, checked against hand-computed values.
def id_then_clone_relu_(lib, f):  # the fix the message names: the clone's in-place is tracked past Id's backward
    x = start(lib)
    y = f["Id"].apply(x * 1).clone()
    y.relu_()
    y.sum().backward()
    return x.grad


def id_out_of_place(lib, f):
    x = start(lib)
    f["Id"].apply(x * 1).relu().sum().backward()
    return x.grad


def id_dirty_relu_(lib, f):  # mark_dirty: the output is the input itself, with the Function's history
    x = start(lib)
    y = f["IdDirty"].apply(x * 1)
    y.relu_()
    y.sum().backward()
    return x.grad


def multi_output_non_view_mul_(lib, f):  # the output that is not an input may be written
    x = start(lib)
    same, triple = f["InputAndTriple"].apply(x * 1)
    triple.mul_(5)
    (same.sum() + triple.sum()).backward()
    return x.grad


def tail_out_of_place(lib, f):
    x = start(lib)
    (f["Tail"].apply(x * 1) * lib.tensor([1.0, 4.0], dtype=lib.float64)).sum().backward()
    return x.grad


def id_under_no_grad_mul_(lib, f):  # nothing recorded: writing is fine
    with lib.no_grad():
        y = f["Id"].apply(start(lib) * 1)
    y.mul_(3)
    return [y.requires_grad] + y.tolist()


def id_without_grad_mul_(lib, f):
    y = f["Id"].apply(lib.tensor([1.0, -2.0, 3.0], dtype=lib.float64))
    y.mul_(3)
    return [y.requires_grad] + y.tolist()


def pass_non_diff_mul_(lib, f):  # a detached alias, not a view: writing is fine
    y = f["PassNonDiff"].apply(start(lib) * 1)
    y.mul_(2)
    return [y.requires_grad] + y.tolist()


WORKING = [
    (id_then_clone_relu_, [2.0, 0.0, 2.0]),
    (id_out_of_place, [2.0, 0.0, 2.0]),
    (id_dirty_relu_, [2.0, 0.0, 2.0]),
    (multi_output_non_view_mul_, [17.0, 17.0, 17.0]),  # 1 * 2 + 5 * 3
    (tail_out_of_place, [0.0, 2.0, 8.0]),
    (id_under_no_grad_mul_, [False, 3.0, -6.0, 9.0]),
    (id_without_grad_mul_, [False, 3.0, -6.0, 9.0]),
    (pass_non_diff_mul_, [False, 2.0, -4.0, 6.0]),
]


@pytest.mark.parametrize("case,expected", WORKING, ids=[case.__name__ for case, _ in WORKING])
def test_supported_uses_run_the_functions_backward(case, expected):
    got = case(ember, functions(ember))
    np.testing.assert_allclose(np.asarray(got.tolist() if hasattr(got, "tolist") else got, dtype=np.float64),
                               expected)
    if torch is not None:
        want = case(torch, functions(torch))
        np.testing.assert_allclose(np.asarray(want.tolist() if hasattr(want, "tolist") else want,
                                              dtype=np.float64), expected)


def test_mark_dirty_on_a_leaf_raises():
    with pytest.raises(RuntimeError, match=r"^a leaf Variable that requires grad has been used in an in-place "
                                           r"operation\.$"):
        functions(ember)["IdDirty"].apply(start(ember))


def test_an_input_returned_as_is_is_a_view_with_the_functions_history():
    x = start(ember)
    base = x * 1
    y = functions(ember)["Id"].apply(base)
    assert y is not base and y._base is not None and y.data_ptr() == base.data_ptr()
    assert y._base.grad_fn.name() == "MulBackward0"
    assert y.grad_fn.name() == "IdBackward"


# ---------------------------------------------------------------- module full backward hooks

def hooked_module_cases(lib):
    """Modules whose outputs (or inputs) pass through the full backward hooks' Function."""
    nn = lib.nn

    class InplaceOnInput(nn.Module):
        def forward(self, x):
            return x.relu_()

    class Identity(nn.Module):
        def forward(self, x):
            return x

    class TwoOutputs(nn.Module):
        def forward(self, x, y):
            return x * 1, y * 2

    return InplaceOnInput, Identity, TwoOutputs


def hook_inplace_on_input(lib):
    module = hooked_module_cases(lib)[0]()
    module.register_full_backward_hook(lambda mod, grad_input, grad_output: None)
    module(start(lib) * 1)


def hook_pre_hook_inplace_on_input(lib):
    module = hooked_module_cases(lib)[0]()
    module.register_full_backward_pre_hook(lambda mod, grad_output: None)
    module(start(lib) * 1)


def hook_identity_output_relu_(lib):
    module = hooked_module_cases(lib)[1]()
    module.register_full_backward_hook(lambda mod, grad_input, grad_output: None)
    module(start(lib) * 1).relu_()


def hook_linear_output_relu_(lib):
    lib.manual_seed(0)
    module = lib.nn.Linear(3, 2, dtype=lib.float64)
    module.register_full_backward_hook(lambda mod, grad_input, grad_output: None)
    module(start(lib)).relu_()


def hook_sequential_inplace_relu(lib):
    lib.manual_seed(0)
    model = lib.nn.Sequential(lib.nn.Linear(3, 2, dtype=lib.float64), lib.nn.ReLU(inplace=True))
    model[0].register_full_backward_hook(lambda mod, grad_input, grad_output: None)
    model(start(lib))


def hook_two_outputs_mul_(lib):
    module = hooked_module_cases(lib)[2]()
    module.register_full_backward_hook(lambda mod, grad_input, grad_output: None)
    x = start(lib)
    first, _ = module(x * 1, x * 1)
    first.mul_(2)


HOOK_RAISING = [
    (hook_inplace_on_input, CUSTOM_FUNCTION_VIEW),
    (hook_pre_hook_inplace_on_input, CUSTOM_FUNCTION_VIEW),
    (hook_identity_output_relu_, CUSTOM_FUNCTION_VIEW),
    (hook_linear_output_relu_, CUSTOM_FUNCTION_VIEW),
    (hook_sequential_inplace_relu, CUSTOM_FUNCTION_VIEW),
    (hook_two_outputs_mul_, MULTI_OUTPUT_VIEW),
]


@pytest.mark.parametrize("case,reason", HOOK_RAISING, ids=[case.__name__ for case, _ in HOOK_RAISING])
def test_writing_through_a_hooked_modules_tensors_raises(case, reason):
    message = "Output 0 of BackwardHookFunction is a view and is being modified inplace. " + reason
    with pytest.raises(RuntimeError, match="^" + re.escape(message) + "$"):
        case(ember)
    if torch is not None:
        with pytest.raises(RuntimeError, match="^" + re.escape(message) + "$"):
            case(torch)


def test_hooked_module_with_a_cloned_output_runs_the_hooks():
    calls = []
    results = {}
    for lib in (ember, torch) if torch is not None else (ember,):
        module = hooked_module_cases(lib)[1]()
        module.register_full_backward_hook(lambda mod, grad_input, grad_output: calls.append(
            (grad_input[0].tolist(), grad_output[0].tolist())))
        x = start(lib)
        y = module(x * 1).clone()
        y.relu_()
        y.sum().backward()
        results[lib.__name__] = x.grad.tolist()
    assert results["ember"] == [1.0, 0.0, 1.0]
    assert calls[0] == ([1.0, 0.0, 1.0], [1.0, 0.0, 1.0])
    if torch is not None:
        assert results["torch"] == results["ember"] and calls[1] == calls[0]
