"""Higher-level autograd, as torch.autograd.functional: vector-Jacobian and Jacobian-vector
products, Jacobians, Hessians and their products with vectors, built on autograd.grad.

The results nest as PyTorch's: a Tensor for a Tensor input (output), a tuple for a tuple; a
Jacobian is indexed [output][input], a Hessian [input][input]. jvp and hvp use the double-vjp
trick (the gradient of a vjp with respect to its cotangent), as PyTorch does. Forward mode
(strategy="forward-mode") and vectorize=True need vmap: both raise
NotImplementedError for now.
"""
from .. import _C
from .gradcheck import _needs_vmap

__all__ = ["vjp", "jvp", "jacobian", "hessian", "hvp", "vhp"]


def _ember():
    import ember
    return ember


def _as_tuple(inp, arg_name, fn_name):
    """(was it a tuple, the tuple); anything but Tensors raises TypeError."""
    is_tuple = isinstance(inp, tuple)
    if not is_tuple:
        inp = (inp,)
    for i, el in enumerate(inp):
        if not isinstance(el, _C.TensorBase):
            where = f"the value at index {i}" if is_tuple else f"the given {arg_name}"
            raise TypeError(f"The {arg_name} given to {fn_name} must be either a Tensor or a tuple of Tensors but "
                            f"{where} has type {type(el)}.")
    return is_tuple, inp


def _tuple_postprocess(res, to_unpack):
    """Unwraps the levels of `res` whose argument was a lone Tensor ((outputs, inputs) for Jacobians)."""
    if isinstance(to_unpack, tuple):
        if not to_unpack[1]:
            res = tuple(el[0] for el in res)
        if not to_unpack[0]:
            res = res[0]
    elif not to_unpack:
        res = res[0]
    return res


def _grad_preprocess(inputs, create_graph, need_graph):
    """Inputs to differentiate: with create_graph, a view that keeps the graph to the caller's
    tensor; else a detached leaf."""
    res = []
    for inp in inputs:
        if create_graph and inp.requires_grad:
            res.append(inp.view(inp.shape))
        else:
            res.append(inp.detach().requires_grad_(need_graph))
    return tuple(res)


def _grad_postprocess(inputs, create_graph):
    if isinstance(inputs[0], _C.TensorBase):
        return inputs if create_graph else tuple(inp.detach() for inp in inputs)
    return tuple(_grad_postprocess(inp, create_graph) for inp in inputs)


def _differentiable_inputs(inputs, fn_name, create_graph):
    is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", fn_name)
    return is_inputs_tuple, _grad_preprocess(inputs, create_graph=create_graph, need_graph=True)


def _outputs(func, inputs, fn_name, strict):
    """(was it a tuple, func's outputs as a tuple), checked: Tensors, requiring grad when strict."""
    is_outputs_tuple, outputs = _as_tuple(func(*inputs), "outputs of the user-provided function", fn_name)
    _check_requires_grad(outputs, "outputs", strict=strict)
    return is_outputs_tuple, outputs


def _validate_v(v, other, is_other_tuple):
    if len(other) != len(v):
        if is_other_tuple:
            raise RuntimeError(f"v is a tuple of invalid length: should be {len(other)} but got {len(v)}.")
        raise RuntimeError("The given v should contain a single Tensor.")
    for idx, (el_v, el_other) in enumerate(zip(v, other)):
        if el_v.size() != el_other.size():
            prepend = f"Entry {idx} in " if is_other_tuple else ""
            raise RuntimeError(f"{prepend}v has invalid size: should be {el_other.size()} but got {el_v.size()}.")


_NOT_REQUIRING_GRAD = {
    "hessian": "The hessian of the user-provided function with respect to input {i} is independent of the input. "
               "This is not allowed in strict mode. You should ensure that your function is thrice differentiable "
               "and that the hessian depends on the inputs.",
    "jacobian": "While computing the hessian, found that the jacobian of the user-provided function with respect to "
                "input {i} is independent of the input. This is not allowed in strict mode. You should ensure that "
                "your function is twice differentiable and that the jacobian depends on the inputs (this would be "
                "violated by a linear function for example).",
    "grad_inputs": "The gradient with respect to input {i} is independent of the inputs of the user-provided "
                   "function. This is not allowed in strict mode.",
    "outputs": "Output {i} of the user-provided function does not require gradients. The outputs must be computed "
               "in a differentiable manner from the input when running in strict mode.",
}


def _check_requires_grad(inputs, input_type, strict):
    if not strict:
        return
    for i, inp in enumerate(inputs):
        if inp is None:
            raise RuntimeError(f"The output of the user-provided function is independent of input {i}. This is not "
                               "allowed in strict mode.")
        if not inp.requires_grad:
            raise RuntimeError(_NOT_REQUIRING_GRAD[input_type].format(i=i))


def _autograd_grad(outputs, inputs, grad_outputs=None, create_graph=False, retain_graph=None):
    """autograd.grad over the outputs that require grad (None for every input when none does)."""
    from . import grad
    if grad_outputs is None:
        grad_outputs = (None,) * len(outputs)
    pairs = [(out, g) for out, g in zip(outputs, grad_outputs) if out is not None and out.requires_grad]
    if not pairs:
        return (None,) * len(inputs)
    return grad(tuple(o for o, _ in pairs), inputs, tuple(g for _, g in pairs), allow_unused=True,
                create_graph=create_graph, retain_graph=retain_graph)


_INDEPENDENT = {
    "back": "The output of the user-provided function is independent of input {i}. This is not allowed in strict "
            "mode.",
    "back_trick": "The gradient with respect to the input is independent of entry {i} in the grad_outputs when using "
                  "the double backward trick to compute forward mode gradients. This is not allowed in strict mode.",
    "double_back": "The jacobian of the user-provided function is independent of input {i}. This is not allowed in "
                   "strict mode.",
    "double_back_trick": "The hessian of the user-provided function is independent of entry {i} in the grad_jacobian. "
                         "This is not allowed in strict mode as it prevents from using the double backward trick to "
                         "replace forward mode AD.",
}


def _fill_in_zeros(grads, refs, strict, create_graph, stage):
    """Zeros for the None gradients of inputs the outputs do not depend on (errors in strict mode)."""
    ember = _ember()
    res = ()
    for i, grads_i in enumerate(grads):
        if grads_i is None:
            if strict:
                raise RuntimeError(_INDEPENDENT[stage].format(i=i))
            grads_i = ember.zeros_like(refs[i])
        elif strict and create_graph and not grads_i.requires_grad:
            what = "hessian" if "double" in stage else "jacobian"
            raise RuntimeError(f"The {what} of the user-provided function is independent of input {i}. This is not "
                               "allowed in strict mode when create_graph=True.")
        res += (grads_i,)
    return res


def _final_product(outs, wrt, v, refs, stage, create_graph, strict):
    """The last backward of each product: v through `outs` to `wrt`, recorded only with create_graph
    (else as grad mode was), None filled with zeros shaped like `refs`."""
    ember = _ember()
    with ember.set_grad_enabled(True if create_graph else _C.is_grad_enabled()):
        grad_res = _autograd_grad(outs, wrt, v, create_graph=create_graph)
        return _fill_in_zeros(grad_res, refs, strict, create_graph, stage)


def _package(outputs, result, create_graph, is_outputs_tuple, is_result_tuple):
    """(outputs, result), detached unless create_graph, each unwrapped if given as a lone Tensor."""
    return (_tuple_postprocess(_grad_postprocess(outputs, create_graph), is_outputs_tuple),
            _tuple_postprocess(_grad_postprocess(result, create_graph), is_result_tuple))


def _prepare_v(v, others, is_others_tuple, fn_name, create_graph, none_message):
    if v is not None:
        _, v = _as_tuple(v, "v", fn_name)
        v = _grad_preprocess(v, create_graph=create_graph, need_graph=False)
        _validate_v(v, others, is_others_tuple)
    elif len(others) != 1 or others[0].nelement() != 1:
        raise RuntimeError(none_message)
    return v


_V_NONE_FOR_INPUT = ("The vector v can only be None if the input to the user-provided function is a single Tensor "
                     "with a single element.")


def vjp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), v^T J): the vector-Jacobian product at `inputs`, shaped like the inputs.
    v may be None when func returns a single element."""
    ember = _ember()
    with ember.enable_grad():
        is_inputs_tuple, inputs = _differentiable_inputs(inputs, "vjp", create_graph)
        is_outputs_tuple, outputs = _outputs(func, inputs, "vjp", strict)
        v = _prepare_v(v, outputs, is_outputs_tuple, "vjp", create_graph,
                       "The vector v can only be None if the user-provided function returns a single Tensor with a "
                       "single element.")
    result = _final_product(outputs, inputs, v, inputs, "back", create_graph, strict)
    return _package(outputs, result, create_graph, is_outputs_tuple, is_inputs_tuple)


def jvp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), J v): the Jacobian-vector product, shaped like the outputs, by the double
    vjp trick: J v is the gradient of u -> u^T J, linear in u, with respect to u."""
    ember = _ember()
    with ember.enable_grad():
        is_inputs_tuple, inputs = _differentiable_inputs(inputs, "jvp", create_graph)
        v = _prepare_v(v, inputs, is_inputs_tuple, "jvp", create_graph, _V_NONE_FOR_INPUT)
        is_outputs_tuple, outputs = _outputs(func, inputs, "jvp", strict)
        grad_outputs = tuple(ember.zeros_like(out, requires_grad=True) for out in outputs)
        grad_inputs = _autograd_grad(outputs, inputs, grad_outputs, create_graph=True)
        _check_requires_grad(grad_inputs, "grad_inputs", strict=strict)
    result = _final_product(grad_inputs, grad_outputs, v, outputs, "back_trick", create_graph, strict)
    return _package(outputs, result, create_graph, is_outputs_tuple, is_outputs_tuple)


def jacobian(func, inputs, create_graph=False, strict=False, vectorize=False, strategy="reverse-mode"):
    """The Jacobian of func at `inputs`: J[i][j] of shape output_i.shape + input_j.shape, one
    backward per output element (nested as the outputs and inputs were given)."""
    ember = _ember()
    if strategy not in ("forward-mode", "reverse-mode"):
        raise AssertionError('Expected strategy to be either "forward-mode" or "reverse-mode". Hint: If your '
                             'function has more outputs than inputs, "forward-mode" tends to be more performant. '
                             'Otherwise, prefer to use "reverse-mode".')
    if strategy == "forward-mode":
        _needs_vmap('ember.autograd.functional.jacobian: strategy="forward-mode"')
    with ember.enable_grad():
        is_inputs_tuple, inputs = _differentiable_inputs(inputs, "jacobian", create_graph)
        is_outputs_tuple, outputs = _outputs(func, inputs, "jacobian", strict)
        if vectorize:
            raise NotImplementedError("ember.autograd.functional.jacobian: vectorize=True needs vmap "
                                      "(autograd.grad's is_grads_batched), which ember does not implement; "
                                      "use vectorize=False")
        result = ()
        for i, out in enumerate(outputs):
            jac_i = tuple([] for _ in inputs)
            flat = out.reshape(-1)
            for j in range(out.nelement()):
                vj = _autograd_grad((flat[j],), inputs, retain_graph=True, create_graph=create_graph)
                for el_idx, (jac_i_el, vj_el, inp_el) in enumerate(zip(jac_i, vj, inputs)):
                    if vj_el is not None:
                        if strict and create_graph and not vj_el.requires_grad:
                            raise RuntimeError(f"The jacobian of the user-provided function is independent of input "
                                               f"{i}. This is not allowed in strict mode when create_graph=True.")
                        jac_i_el.append(vj_el)
                    else:
                        if strict:
                            raise RuntimeError(f"Output {i} of the user-provided function is independent of input "
                                               f"{el_idx}. This is not allowed in strict mode.")
                        jac_i_el.append(ember.zeros_like(inp_el))
            result += (tuple(ember.stack(rows, 0).view(tuple(out.shape) + tuple(inputs[el_idx].shape))
                               for el_idx, rows in enumerate(jac_i)),)
        result = _grad_postprocess(result, create_graph)
        return _tuple_postprocess(result, (is_outputs_tuple, is_inputs_tuple))


def hessian(func, inputs, create_graph=False, strict=False, vectorize=False, outer_jacobian_strategy="reverse-mode"):
    """The Hessian of a function returning one element: H[i][j] of shape input_i.shape +
    input_j.shape (the Jacobian of its gradient)."""
    is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "hessian")
    if outer_jacobian_strategy not in ("forward-mode", "reverse-mode"):
        raise AssertionError('Expected strategy to be either "forward-mode" or "reverse-mode".')
    if outer_jacobian_strategy == "forward-mode":
        _needs_vmap('ember.autograd.functional.hessian: outer_jacobian_strategy="forward-mode"')
    if vectorize:
        raise NotImplementedError("ember.autograd.functional.hessian: vectorize=True needs vmap, which ember does "
                                  "not implement; use vectorize=False")

    def ensure_single_output_function(*inp):
        out = func(*inp)
        is_out_tuple, t_out = _as_tuple(out, "outputs of the user-provided function", "hessian")
        _check_requires_grad(t_out, "outputs", strict=strict)
        if is_out_tuple or not isinstance(out, _C.TensorBase):
            raise RuntimeError("The function given to hessian should return a single Tensor")
        if out.nelement() != 1:
            raise RuntimeError("The Tensor returned by the function given to hessian should contain a single element")
        return out.squeeze()

    def jac_func(*inp):
        jac = jacobian(ensure_single_output_function, inp, create_graph=True)
        _check_requires_grad(jac, "jacobian", strict=strict)
        return jac

    res = jacobian(jac_func, inputs, create_graph=create_graph, strict=strict, vectorize=vectorize,
                   strategy=outer_jacobian_strategy)
    return _tuple_postprocess(res, (is_inputs_tuple, is_inputs_tuple))


def _single_element_outputs(func, inputs, fn_name, strict):
    is_outputs_tuple, outputs = _outputs(func, inputs, fn_name, strict)
    if is_outputs_tuple or not isinstance(outputs[0], _C.TensorBase):
        raise RuntimeError(f"The function given to {fn_name} should return a single Tensor")
    if outputs[0].nelement() != 1:
        raise RuntimeError(f"The Tensor returned by the function given to {fn_name} should contain a single element")
    return is_outputs_tuple, outputs


def _scalar_gradient(func, inputs, v, fn_name, create_graph, strict):
    """vhp/hvp's common start, under enable_grad: the prepared inputs and v, the single-element
    output and its gradient with a graph."""
    is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", fn_name)
    inputs = _grad_preprocess(inputs, create_graph=create_graph, need_graph=True)
    v = _prepare_v(v, inputs, is_inputs_tuple, fn_name, create_graph, _V_NONE_FOR_INPUT)
    is_outputs_tuple, outputs = _single_element_outputs(func, inputs, fn_name, strict)
    jac = _autograd_grad(outputs, inputs, create_graph=True)
    _check_requires_grad(jac, "jacobian", strict=strict)
    return is_inputs_tuple, inputs, v, is_outputs_tuple, outputs, jac


def vhp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), v^T H) for a function returning one element."""
    with _ember().enable_grad():
        is_inputs_tuple, inputs, v, is_outputs_tuple, outputs, jac = _scalar_gradient(
            func, inputs, v, "vhp", create_graph, strict)
    result = _final_product(jac, inputs, v, inputs, "double_back", create_graph, strict)
    return _package(outputs, result, create_graph, is_outputs_tuple, is_inputs_tuple)


def hvp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), H v) for a function returning one element, by the double-vjp trick on
    the gradient (the same as vhp for a symmetric Hessian, computed as PyTorch does)."""
    ember = _ember()
    with ember.enable_grad():
        is_inputs_tuple, inputs, v, is_outputs_tuple, outputs, jac = _scalar_gradient(
            func, inputs, v, "hvp", create_graph, strict)
        grad_jac = tuple(ember.zeros_like(inp, requires_grad=True) for inp in inputs)
        double_back = _autograd_grad(jac, inputs, grad_jac, create_graph=True)
        _check_requires_grad(jac, "hessian", strict=strict)
    result = _final_product(double_back, grad_jac, v, inputs, "double_back_trick", create_graph, strict)
    return _package(outputs, result, create_graph, is_outputs_tuple, is_inputs_tuple)
