"""gradcheck and gradgradcheck: analytical gradients (the autograd engine) against central
finite differences, with PyTorch's signatures, checks and messages.

Slow mode compares full Jacobians: one finite difference per input element, one backward per
output element. Fast mode (PyTorch's, https://github.com/pytorch/pytorch/issues/53876)
compares the scalars v^T J u for random unit vectors u (per input) and v (per output): two
function calls per input and one backward per output, and on a mismatch recomputes the slow
Jacobians for the message. ember has no complex or sparse tensors, so PyTorch's paths for
those have no counterpart here.
"""
import warnings
from itertools import product

from .. import _C

__all__ = ["GradcheckError", "gradcheck", "gradgradcheck"]


class GradcheckError(RuntimeError):
    """Raised by gradcheck and gradgradcheck when a check fails."""


def _needs_vmap(what):
    """The one place that refuses what needs vmap (batched forward grads, functional's
    forward-mode strategies), which ember does not implement."""
    raise NotImplementedError(f"{what} needs vmap, which ember does not implement")


def _is_tensor(x):
    return isinstance(x, _C.TensorBase)


def _as_tuple(x):
    if isinstance(x, tuple):
        return x
    if isinstance(x, list):
        return tuple(x)
    return (x,)


def _differentiable_outputs(x):
    return tuple(o for o in _as_tuple(x) if o.requires_grad)


def _is_float_tensor(x):
    return _is_tensor(x) and x.is_floating_point()


def _diff_inputs(inputs):
    """(index, tensor) of the inputs that require grad."""
    return [(i, t) for i, t in enumerate(inputs) if _is_tensor(t) and t.requires_grad]


def _check_inputs(inputs):
    any_requiring_grad = False
    for idx, inp in enumerate(inputs):
        if _is_tensor(inp) and inp.requires_grad:
            if inp.dtype != _dtype("float64"):
                warnings.warn(f"Input #{idx} requires gradient and is not a double precision floating point or "
                              "complex. This check will likely fail if all the inputs are not of double precision "
                              "floating point or complex. ", stacklevel=3)
            if not all(st > 0 or sz <= 1 for st, sz in zip(inp.stride(), inp.size())):
                raise RuntimeError(f"The {idx}th input has a dimension with stride 0. gradcheck only supports inputs "
                                   "that are non-overlapping to be able to compute the numerical gradients correctly. "
                                   "You should call .contiguous on the input before passing it to gradcheck.")
            any_requiring_grad = True
    if not any_requiring_grad:
        raise ValueError("gradcheck expects at least one input tensor to require gradient, but none of them have "
                         "requires_grad=True.")


def _dtype(name):
    import ember
    return getattr(ember, name)


def _ember():
    import ember
    return ember


def _allclose(a, b, rtol, atol):
    """torch.allclose after promoting both to a common dtype (NaN is never close)."""
    dtype = _C.promote_types(a.dtype, b.dtype)
    a, b = a.to(dtype), b.to(dtype)
    return bool(((a == b) | ((a - b).abs() <= atol + rtol * b.abs())).all())


def _grad(outputs, inputs, grad_outputs, **kw):
    from . import grad
    return grad(outputs, inputs, grad_outputs, allow_unused=True, **kw)


# ----------------------------------------------------------------------------- numerical

def _check_same_dtype_and_shape(a, b, eps, idx=None):
    on_index = f"on index {idx} " if idx is not None else ""
    if a.shape != b.shape:
        raise AssertionError(f"Expected `func` to return outputs with the same shape when inputs are perturbed "
                             f"{on_index}by {eps}, but got: shapes {a.shape} and {b.shape}.")
    if a.dtype != b.dtype:
        raise AssertionError(f"Expected `func` to return outputs with the same dtype when inputs are perturbed "
                             f"{on_index}by {eps}, but got: dtypes {a.dtype} and {b.dtype}.")


def _central_difference(fn, entry, delta, norm, idx=None, eps=None):
    """(f(x + delta) - f(x - delta)) / (2 norm) per output, flattened; `entry` is the part of
    an input's .data that moves (one element, or the whole input in fast mode)."""
    orig = entry.clone()
    entry.copy_(orig - delta)
    before = fn()
    entry.copy_(orig + delta)
    after = fn()
    entry.copy_(orig)
    out = []
    for a, b in zip(before, after):
        _check_same_dtype_and_shape(a, b, eps if eps is not None else norm, idx)
        out.append(((b - a) / (2 * norm)).detach().reshape(-1))
    return out


def _perturbable(func, inputs, k):
    """(fn, data): fn() calls func with input k replaced by a copy (requiring grad as it does),
    data aliases that copy for the perturbation. PyTorch perturbs the input's .data in place; in
    ember that would bump the input's version (it lives in the storage) and break the graphs
    that saved it, the caller's included."""
    inp = inputs[k]
    work = inp.detach().clone().requires_grad_(inp.requires_grad)
    args = list(inputs)
    args[k] = work
    return (lambda: tuple(o.clone() for o in _as_tuple(func(*args)))), work.detach()


def _numerical_jacobian(func, inputs, outputs, eps):
    """[input][output] -> (input.numel(), output.numel()) for each input requiring grad and each
    output (all of them: a function without differentiable outputs must have zero ones)."""
    ember = _ember()
    jacobians = []
    for k, inp in _diff_inputs(inputs):
        per_output = [ember.zeros(inp.numel(), o.numel(), dtype=o.dtype if o.is_floating_point() else inp.dtype,
                                  device=o.device) for o in outputs]
        fn, data = _perturbable(func, inputs, k)
        for col, idx in enumerate(product(*[range(m) for m in data.shape])):
            for jac, d in zip(per_output, _central_difference(fn, data[idx], eps, eps, idx=idx)):
                jac[col] = d
        jacobians.append(per_output)
    return jacobians


# ----------------------------------------------------------------------------- analytical

def _stack_vjps(rows, diff, numel_output):
    """Per input, the (input.numel(), numel_output) matrix of the given vjp columns; and whether
    every vjp had its input's size and dtype."""
    ember = _ember()
    sizes_ok = types_ok = True
    jacobians = []
    for (_, inp), columns in zip(diff, rows):
        jac = ember.zeros(inp.numel(), numel_output, dtype=inp.dtype, device=inp.device)
        for j, g in enumerate(columns):
            if g is None:
                continue
            if g.shape != inp.shape:
                sizes_ok = False
            elif g.dtype != inp.dtype:
                types_ok = False
            jac[:, j] = g.reshape(-1)
        jacobians.append(jac)
    return jacobians, sizes_ok, types_ok


def _vjp_columns(output, diff, grad_outputs):
    columns = [[] for _ in diff]
    for go in grad_outputs:
        grads = _grad(output, [t for _, t in diff], go, retain_graph=True)
        for col, g in zip(columns, grads):
            col.append(None if g is None else g.clone())
    return columns


def _one_hot_grad_outputs(output):
    ember = _ember()
    for j in range(output.numel()):
        go = ember.zeros(output.numel(), dtype=output.dtype, device=output.device)
        go[j] = 1.0
        yield go.reshape(output.shape)


def _analytical_jacobian(inputs, output, nondet_tol, check_grad_dtypes, v=None):
    """Per input requiring grad, (input.numel(), output.numel()) (or one column v^T J), computed
    twice to catch a backward that is not reentrant."""
    diff = _diff_inputs(inputs)
    grad_outputs = list(_one_hot_grad_outputs(output)) if v is None else [v.reshape(output.shape)]
    numel = len(grad_outputs)
    jac1, sizes_ok, types_ok = _stack_vjps(_vjp_columns(output, diff, grad_outputs), diff, numel)
    jac2, _, _ = _stack_vjps(_vjp_columns(output, diff, grad_outputs), diff, numel)
    reentrant = all(a.numel() == 0 or float((a - b).abs().max()) <= nondet_tol for a, b in zip(jac1, jac2))
    if not types_ok and check_grad_dtypes:
        raise GradcheckError("Gradient has dtype mismatch")
    if not sizes_ok:
        raise GradcheckError("Analytical gradient has incorrect size")
    if not reentrant:
        raise GradcheckError("Backward is not reentrant, i.e., running backward with same input and grad_output "
                             "multiple times gives different values, although analytical gradient matches "
                             f"numerical gradient.The tolerance for nondeterminism was {nondet_tol}.")
    return jac1


def _forward_jacobian(func, inputs, func_out):
    """[input][output] -> (input.numel(), output.numel()) from forward-mode JVPs, one one-hot
    tangent per element of each input requiring grad (the other inputs carry none)."""
    ember = _ember()
    fw = ember.autograd.forward_ad
    outs = _as_tuple(func_out)
    jacobians = []
    for k, inp in _diff_inputs(inputs):
        per_output = [ember.zeros(inp.numel(), o.numel(), dtype=o.dtype if o.is_floating_point() else inp.dtype,
                                  device=o.device) for o in outs]
        for col in range(inp.numel()):
            tangent = ember.zeros(inp.numel(), dtype=inp.dtype, device=inp.device)
            tangent[col] = 1.0
            with fw.dual_level():
                duals = [fw.make_dual(x.detach(), tangent.reshape(tuple(x.shape))) if i == k else x
                         for i, x in enumerate(inputs)]
                for jac, r in zip(per_output, _as_tuple(func(*duals))):
                    t = fw.unpack_dual(r).tangent if _is_tensor(r) else None
                    if t is not None:
                        jac[col] = t.reshape(-1)
        jacobians.append(per_output)
    return jacobians


def _check_forward_ad(func, func_out, inputs, eps, rtol, atol):
    numerical = _numerical_jacobian(func, inputs, _as_tuple(func_out), eps)
    for j, (per_numerical, per_forward) in enumerate(zip(numerical, _forward_jacobian(func, inputs, func_out))):
        for i, (n, a) in enumerate(zip(per_numerical, per_forward)):
            if not _allclose(a, n, rtol, atol):
                raise GradcheckError(_mismatch_message(a, n, i, j, "computed with forward mode "))


def _mismatch_message(analytical, numerical, output_idx, input_idx, mode=""):
    return (f"Jacobian {mode}mismatch for output {output_idx:d} with respect to input {input_idx:d},\n"
            f"numerical:{numerical}\nanalytical:{analytical}\n")


# ----------------------------------------------------------------------------- the two modes

def _slow_gradcheck(func, func_out, inputs, outputs, eps, rtol, atol, check_grad_dtypes, nondet_tol):
    func_out = _as_tuple(func_out)
    numerical = _numerical_jacobian(func, inputs, func_out, eps)
    if not outputs:
        for per_output in numerical:
            for jac in per_output:
                if bool((jac != 0).any()):
                    raise GradcheckError("Numerical gradient for function expected to be zero")
        return
    # [input][output] -> [differentiable output][input]
    numerical = [[per_input[k] for per_input in numerical] for k, o in enumerate(func_out) if o.requires_grad]
    for i, o in enumerate(outputs):
        analytical = _analytical_jacobian(inputs, o, nondet_tol, check_grad_dtypes)
        for j, (a, n) in enumerate(zip(analytical, numerical[i])):
            if not _allclose(a, n, rtol, atol):
                raise GradcheckError(_mismatch_message(a, n, i, j))


def _random_unit_vector(like, generator):
    ember = _ember()
    vec = ember.rand(like.numel(), generator=generator, dtype=ember.float64).to(like.dtype).to(like.device)
    return vec / vec.norm()


def _fast_gradcheck(func, func_out, inputs, outputs, eps, rtol, atol, check_grad_dtypes, nondet_tol):
    ember = _ember()
    func_out = _as_tuple(func_out)
    generator = ember.Generator()      # its own: the caller's random stream is left alone
    diff = _diff_inputs(inputs)
    all_u = [_random_unit_vector(t, generator) for _, t in diff]
    all_v = [_random_unit_vector(o, generator) for o in outputs]
    # J u per input, by one central difference along u (only floating outputs have a Jacobian).
    all_ju = []
    for (k, inp), u in zip(diff, all_u):
        fn, data = _perturbable(func, inputs, k)
        ju = _central_difference(fn, data, (u * eps).reshape(inp.shape), eps)
        all_ju.append([d for d, o in zip(ju, func_out) if _is_float_tensor(o)])
    if not outputs:
        for ju in all_ju:
            for d in ju:
                if d.numel() and float(d.abs().max()) > nondet_tol:
                    raise GradcheckError("Numerical gradient for function expected to be zero")
        return
    numerical = [[(v * ju[k]).sum() for k, v in enumerate(all_v)] for ju in all_ju]
    analytical = []
    for o, v in zip(outputs, all_v):
        vj = _analytical_jacobian(inputs, o, nondet_tol, check_grad_dtypes, v=v)
        analytical.append([col.reshape(-1).dot(u) for col, u in zip(vj, all_u)])
    for i, per_output in enumerate(numerical):
        for j, n in enumerate(per_output):
            a = analytical[j][i]
            # |v^T (A - N) u| may reach atol * sum(u) * sum(v) where the Jacobians differ by atol each.
            scaled_atol = atol * float(all_u[i].sum()) * float(all_v[j].sum())
            if not _allclose(a, n, rtol, scaled_atol):
                raise GradcheckError(_mismatch_message(a, n, j, i)
                                     + _slow_mode_report(func, inputs, outputs, i, j, rtol, atol, eps))


def _slow_mode_report(func, inputs, outputs, input_idx, output_idx, rtol, atol, eps):
    outs = _as_tuple(func(*inputs))
    numerical = _numerical_jacobian(func, inputs, outs, eps)[input_idx]
    numerical = [n for n, o in zip(numerical, outs) if o.requires_grad][output_idx]
    analytical = _analytical_jacobian(inputs, outputs[output_idx], float("inf"), False)[input_idx]
    max_diff = float((numerical - analytical).abs().max())
    msg = ("\nThe above quantities relating the numerical and analytical jacobians are computed \n"
           "in fast mode. See: https://github.com/pytorch/pytorch/issues/53876 for more background \n"
           "about fast mode. Below, we recompute numerical and analytical jacobians in slow mode:\n\n"
           f"Numerical:\n {numerical}\nAnalytical:\n{analytical}\n\n"
           f"The max per-element difference (slow mode) is: {max_diff}.\n")
    if _allclose(analytical, numerical, rtol, atol):
        msg += ("\nFast gradcheck failed but element-wise differences are small. This means that the\n"
                "test might've passed in slow_mode!\n\nIf you are adding a new operator, call "
                "gradcheck/gradgradcheck with `fast_mode=False` as a keyword argument.")
    return msg


# ----------------------------------------------------------------------------- extra checks

def _test_backward_mul_by_grad_output(outputs, inputs):
    ember = _ember()
    diff = [t for _, t in _diff_inputs(inputs)]
    grads = _grad(outputs, diff, [ember.zeros_like(o) for o in outputs])
    for gi, di in zip(grads, diff):
        if gi is None:
            continue
        if not bool((gi == 0).all()):
            raise GradcheckError("backward not multiplied by grad_output")
        if gi.dtype != di.dtype:
            raise GradcheckError("grad is incorrect type")
        if gi.device != di.device:
            raise GradcheckError("grad is incorrect device")
        if gi.size() != di.size():
            raise GradcheckError("grad is incorrect size")


def _test_undefined_backward_mode(func, inputs):
    """Backward must cope with undefined output gradients: all of them, then one at a time
    (the others zero); every input gradient is then undefined or zero."""
    ember = _ember()
    diff = [t for _, t in _diff_inputs(inputs)]

    def check(outputs, undefined):
        grads_output = [None if k in undefined else ember.zeros_like(o) for k, o in enumerate(outputs)]
        try:
            grads = _C._grad(outputs, grads_output, diff, False, False, True, False)
        except RuntimeError as e:
            raise GradcheckError("Expected backward function to handle undefined output grads. Please look at "
                                 "\"Notes about undefined output gradients\" in \"derivatives.yaml\"") from e
        for gi in grads:
            if gi is not None and not bool((gi == 0).all()):
                raise GradcheckError("Expected all input grads to be undefined or zero when all output grads are "
                                     "undefined or zero. Please look at \"Notes about undefined output gradients\" "
                                     "in \"derivatives.yaml\"")

    outputs = _differentiable_outputs(func(*inputs))
    check(outputs, set(range(len(outputs))))
    if len(outputs) > 1:
        for k in range(len(outputs)):
            check(_differentiable_outputs(func(*inputs)), {k})


# ----------------------------------------------------------------------------- public API

def gradcheck(func, inputs, *, eps=1e-6, atol=1e-5, rtol=1e-3, raise_exception=True, nondet_tol=0.0,
              check_undefined_grad=True, check_grad_dtypes=False, check_batched_grad=False,
              check_batched_forward_grad=False, check_forward_ad=False, check_backward_ad=True, fast_mode=False,
              masked=None):
    """Checks the gradients autograd computes for `func` at `inputs` (the tensors requiring grad)
    against finite differences; True, or GradcheckError (False with raise_exception=False).
    `masked` concerns sparse tensors, which ember does not have; it is accepted and has no effect."""
    if not (check_forward_ad or check_backward_ad):
        raise AssertionError("Expected at least one of check_forward_ad or check_backward_ad to be True")
    if check_batched_grad and not check_backward_ad:
        raise AssertionError("Setting check_batched_grad=True requires check_backward_ad to be True")
    if check_batched_forward_grad and not check_forward_ad:
        raise AssertionError("Setting check_batched_forward_grad=True requires check_forward_ad to be True")
    try:
        return _gradcheck_helper(func, inputs, eps, atol, rtol, nondet_tol, check_undefined_grad, check_grad_dtypes,
                                 check_batched_grad, check_batched_forward_grad, check_forward_ad, check_backward_ad,
                                 fast_mode)
    except GradcheckError:
        if raise_exception:
            raise
        return False


def _gradcheck_helper(func, inputs, eps, atol, rtol, nondet_tol, check_undefined_grad, check_grad_dtypes,
                      check_batched_grad, check_batched_forward_grad, check_forward_ad, check_backward_ad,
                      fast_mode):
    if check_batched_forward_grad:
        _needs_vmap("check_batched_forward_grad=True")
    if check_batched_grad:
        _needs_vmap("check_batched_grad=True")
    tupled_inputs = _as_tuple(inputs)
    _check_inputs(tupled_inputs)
    func_out = func(*tupled_inputs)
    if check_forward_ad:  # against the slow numerical Jacobian, also in fast mode
        _check_forward_ad(func, func_out, tupled_inputs, eps, rtol, atol)
    if not check_backward_ad:
        return True
    outputs = _differentiable_outputs(func_out)
    check = _fast_gradcheck if fast_mode else _slow_gradcheck
    check(func, func_out, tupled_inputs, outputs, eps, rtol, atol, check_grad_dtypes, nondet_tol)
    _test_backward_mul_by_grad_output(outputs, tupled_inputs)
    if check_undefined_grad:
        _test_undefined_backward_mode(func, tupled_inputs)
    return True


def _random_grad_output(output, noncontiguous):
    """Uniform in [-1, 1), requiring grad; with `noncontiguous`, every other element of a wider
    tensor (PyTorch's make_tensor(noncontiguous=True))."""
    ember = _ember()
    dtype = output.dtype if output.is_floating_point() else ember.float64
    shape = tuple(output.shape)
    if noncontiguous and output.numel() > 1:
        wide = ember.rand(shape[:-1] + (2 * shape[-1],), dtype=dtype, device=output.device) * 2 - 1
        t = wide[..., ::2].detach()
    else:
        t = ember.rand(shape, dtype=dtype, device=output.device) * 2 - 1
    return t.requires_grad_()


def gradgradcheck(func, inputs, grad_outputs=None, *, eps=1e-6, atol=1e-5, rtol=1e-3,
                  gen_non_contig_grad_outputs=False, raise_exception=True, nondet_tol=0.0, check_undefined_grad=True,
                  check_grad_dtypes=False, check_batched_grad=False, check_fwd_over_rev=False,
                  check_rev_over_rev=True, fast_mode=False, masked=False):
    """gradcheck of the gradient itself: the function (inputs, grad_outputs) -> the gradients of
    `func`'s outputs with respect to its inputs, built with create_graph=True. Random grad_outputs
    (uniform in [-1, 1)) are made when none are given."""
    if not (check_fwd_over_rev or check_rev_over_rev):
        raise AssertionError("Expected at least one of check_fwd_over_rev or check_rev_over_rev to be True")
    if check_undefined_grad and not check_rev_over_rev:
        raise AssertionError("Setting check_undefined_grad=True requires check_rev_over_rev to be True")
    if check_batched_grad and not check_rev_over_rev:
        raise AssertionError("Setting check_batched_grad=True requires check_rev_over_rev to be True")
    tupled_inputs = _as_tuple(inputs)
    if grad_outputs is None:
        outputs = _differentiable_outputs(func(*tupled_inputs))
        tupled_grad_outputs = tuple(_random_grad_output(o, gen_non_contig_grad_outputs) for o in outputs)
    else:
        tupled_grad_outputs = _as_tuple(grad_outputs)
    num_outputs = len(tupled_grad_outputs)
    diff_input_indices = {i for i, x in enumerate(tupled_inputs) if _is_tensor(x) and x.requires_grad}
    diff_grad_output_indices = {i for i, x in enumerate(tupled_grad_outputs) if x.requires_grad}

    def new_func(*args):
        input_args = tuple(x.requires_grad_() if i in diff_input_indices else x
                           for i, x in enumerate(args[:-num_outputs]))
        outputs = _differentiable_outputs(func(*input_args))
        grad_outputs = tuple(x.requires_grad_() if i in diff_grad_output_indices else x
                             for i, x in enumerate(args[-num_outputs:]))
        diff_input_args = tuple(x for i, x in enumerate(input_args) if i in diff_input_indices)
        grad_inputs = _grad(outputs, diff_input_args, grad_outputs, create_graph=True)
        return tuple(g for g in grad_inputs if g is not None)

    return gradcheck(new_func, tupled_inputs + tupled_grad_outputs, eps=eps, atol=atol, rtol=rtol,
                     raise_exception=raise_exception, nondet_tol=nondet_tol, check_undefined_grad=check_undefined_grad,
                     check_grad_dtypes=check_grad_dtypes, check_batched_grad=check_batched_grad, fast_mode=fast_mode,
                     check_forward_ad=check_fwd_over_rev, check_backward_ad=check_rev_over_rev, masked=masked)
