"""Forward-mode transforms (jvp, jacfwd) over ember.autograd.forward_ad, and hessian.

forward_ad has one dual level at a time, so forward mode does not nest (jacfwd of jacfwd
raises PyTorch's "Nested forward mode AD is not supported"); forward over reverse does,
which is what hessian uses.
"""
import functools

import ember
from ember.autograd import forward_ad as fwAD

from ._common import DiffArgs, check_outputs, split_aux
from ._pytree import tree_flatten, tree_unflatten
from ._reverse import jacrev

_JVP = "jvp(f, primals, tangents)"


def _jvp_flat(func, flat_primals, flat_tangents, unflatten, has_aux, api, strict=False):
    """(output leaves, their tangents, output spec, aux) of func at duals of the primals; an
    output without a tangent gets zeros, or raises when `strict`."""
    with fwAD.dual_level():
        duals = [fwAD.make_dual(p, t) for p, t in zip(flat_primals, flat_tangents)]
        out, aux = split_aux(func(*unflatten(duals)), has_aux, api)
        flat_out, out_spec = tree_flatten(out)
        check_outputs(flat_out, api)
        pairs = [fwAD.unpack_dual(o) for o in flat_out]
        if strict and any(t is None for _, t in pairs):
            raise RuntimeError("jvp(f, primals, tangents, strict=True): The output of f is independent of the inputs. "
                               "This is not allowed with strict=True.")
        primals = [p for p, _ in pairs]
        tangents = [ember.zeros_like(p) if t is None else t for p, t in pairs]
        if has_aux:
            aux_leaves, aux_spec = tree_flatten(aux)
            check_outputs(aux_leaves, api)
            aux = tree_unflatten([fwAD.unpack_dual(a).primal for a in aux_leaves], aux_spec)
    return primals, tangents, out_spec, aux


def jvp(func, primals, tangents, *, strict=False, has_aux=False):
    """(func(*primals), the Jacobian-vector product along `tangents`[, aux]), as torch.func.jvp;
    with `strict`, an output independent of the inputs raises instead of getting zeros."""
    if not isinstance(primals, tuple):
        raise RuntimeError(f"{_JVP}: Expected primals to be a tuple. E.g. it should be valid to call f(*primals).")
    flat_p, p_spec = tree_flatten(primals)
    flat_t, t_spec = tree_flatten(tangents)
    if p_spec != t_spec:
        raise RuntimeError(f"{_JVP}: Expected primals and tangents to have the same python structure. For example, "
                           "if primals is a tuple of 3 tensors, tangents also must be. Got primals with structure "
                           f"{p_spec} and tangents with structure {t_spec}")
    for what, leaves in (("primals", flat_p), ("tangents", flat_t)):
        for x in leaves:
            if not isinstance(x, ember.Tensor):
                raise RuntimeError(f"{_JVP}: Expected {what} to only contain Tensors, got {type(x)}")
    outs, tans, out_spec, aux = _jvp_flat(func, flat_p, flat_t, lambda d: tree_unflatten(d, p_spec), has_aux, _JVP,
                                          strict)
    result = (tree_unflatten(outs, out_spec), tree_unflatten(tans, out_spec))
    return result + (aux,) if has_aux else result


def jacfwd(func, argnums=0, has_aux=False):
    """A function giving the Jacobian of func with respect to the argnums inputs, one jvp per
    input element (no vmap): for each output leaf, the argnums' structure of blocks shaped
    (*output.shape, *input.shape)."""

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        diff = DiffArgs(args, argnums)
        call = lambda *leaves: func(*diff.with_leaves(list(leaves)), **kwargs)  # noqa: E731
        columns, outs, out_spec, aux = [[] for _ in diff.flat], None, None, None
        for k, x in enumerate(diff.flat):
            for j in range(x.numel()):
                basis = [ember.zeros_like(y) for y in diff.flat]
                basis[k].view(-1)[j] = 1
                outs, tans, out_spec, aux = _jvp_flat(call, diff.flat, basis, lambda d: d, has_aux, _JVP)
                columns[k].append(tans)
        if outs is None:   # no input element: evaluate once for the output's shapes
            with ember.no_grad():
                out, aux = split_aux(call(*diff.flat), has_aux, _JVP)
            outs, out_spec = tree_flatten(out)
        blocks = []
        for i, o in enumerate(outs):
            per_input = []
            for x, cols in zip(diff.flat, columns):
                shape = tuple(o.shape) + tuple(x.shape)
                block = ember.stack([c[i] for c in cols], -1).reshape(shape) if cols else \
                    ember.zeros(shape, dtype=o.dtype)
                per_input.append(block)
            blocks.append(diff.structure(per_input))
        jac = tree_unflatten(blocks, out_spec)
        return (jac, aux) if has_aux else jac

    return wrapper


def hessian(func, argnums=0):
    """The Hessian of func's scalar output with respect to the argnums inputs: jacfwd of
    jacrev (forward over reverse), as torch.func.hessian."""
    return jacfwd(jacrev(func, argnums), argnums)

