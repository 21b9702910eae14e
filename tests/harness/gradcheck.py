"""float64 gradient checks of an op through ember's public ember.autograd.gradcheck and
gradgradcheck: the op on a sample, as a function of the sample's tensors.

Every floating input (but where's condition) is a leaf that requires grad; integral and bool
inputs go in as they are. Inputs keep their sample layout (a transposed or strided input is a
non-contiguous leaf), so backward through non-contiguous inputs is covered too. gradcheck
compares full Jacobians (slow mode); gradgradcheck, the derivative of the gradient with
respect to the inputs and the upstream gradients, runs in fast mode (two function calls per
input, one backward per output) with upstream gradients drawn from the case's rng.
"""
import ember

from .dtypes import is_floating
from .run import call, forms
from .tensors import build_inputs, dtype_name, make_tensor


def differentiable_inputs(sample):
    """(role, index) -> Arg for every floating input tensor."""
    out = {}
    for role, value in sample.inputs.items():
        items = value if isinstance(value, list) else [value]
        for i, arg in enumerate(items):
            if hasattr(arg, "dtype") and role != "c" and is_floating(arg.dtype):
                out[(role, i)] = arg
    return out


def _leaf(t):
    """A leaf requiring grad with t's values and layout; an empty one fresh (from NumPy it has
    stride 0, which gradcheck refuses, as PyTorch's)."""
    if t.numel() == 0:
        t = ember.empty(tuple(t.shape), dtype=t.dtype, device=t.device)
    return t.detach().requires_grad_()


def op_function(op, sample, form=None):
    """(func, tensors): func(*tensors) calls the op (as `form`, by default its first functional
    form) on the sample with these tensors, and returns its results as a tuple."""
    form = form or forms(op)[0]
    diff = differentiable_inputs(sample)
    inputs, _ = build_inputs(sample)
    slots, tensors = [], []
    for role, value in inputs.items():
        items = value if isinstance(value, list) else [value]
        for i, t in enumerate(items):
            if isinstance(t, ember.Tensor):
                slots.append((role, i, isinstance(value, list)))
                tensors.append(_leaf(t) if (role, i) in diff else t)

    def func(*args):
        given = {role: list(v) if isinstance(v, list) else v for role, v in inputs.items()}
        for (role, i, is_list), t in zip(slots, args):
            if is_list:
                given[role][i] = t
            else:
                given[role] = t
        result = call(op, sample, given, form)
        return tuple(result) if isinstance(result, (tuple, list)) else (result,)

    return func, tuple(tensors)


def _check_outputs_require_grad(op, outputs):
    floating = [k for k, o in enumerate(outputs) if is_floating(dtype_name(o.dtype))]
    assert floating, f"{op.full_name}: no floating output"
    for k in floating:
        assert outputs[k].requires_grad, f"{op.full_name}: output {k} does not require grad"


def gradcheck(op, sample, rng=None, form=None):
    """The op's first derivatives against finite differences (rng: unused, kept for callers)."""
    assert differentiable_inputs(sample), f"{op.full_name}: no floating input to differentiate"
    func, tensors = op_function(op, sample, form)
    _check_outputs_require_grad(op, func(*tensors))
    ember.autograd.gradcheck(func, tensors)


def gradgradcheck(op, sample, rng, form=None):
    """The op's second derivatives: gradgradcheck with upstream gradients from `rng`."""
    func, tensors = op_function(op, sample, form)
    outputs = [o for o in func(*tensors) if o.requires_grad]
    grad_outputs = [make_tensor(rng.uniform(-1, 1, tuple(o.shape)), "float64").requires_grad_() for o in outputs]
    ember.autograd.gradgradcheck(func, tensors, grad_outputs, fast_mode=True)
