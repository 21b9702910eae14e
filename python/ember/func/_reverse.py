"""Reverse-mode transforms (grad, grad_and_value, vjp, jacrev) over ember's autograd engine.

Each differentiates to tracked aliases of its inputs (views, so an enclosing transform's
graph and forward-mode tangents pass through) with autograd.grad, which never writes the
leaves' .grad. The graph is kept (create_graph) only when an enclosing reverse-mode
computation differentiates through the inputs.
"""
import functools

import ember

from ._common import DiffArgs, check_outputs, check_tensors, reverse_mode_outside, split_aux, track, untrack
from ._pytree import tree_flatten, tree_map, tree_unflatten


def _gradients(outputs, cotangents, inputs, keep_graph):
    """d(sum of outputs . cotangents)/d inputs; zeros for an input nothing depends on."""
    pairs = [(o, c) for o, c in zip(outputs, cotangents) if o.requires_grad]
    grads = [None] * len(inputs)
    if pairs:
        grads = ember.autograd.grad([o for o, _ in pairs], inputs, grad_outputs=[c for _, c in pairs],
                                    retain_graph=True, create_graph=keep_graph, allow_unused=True)
    return [ember.zeros_like(x) if g is None else g for g, x in zip(grads, inputs)]


class _TrackedCall:
    """func called (in grad mode) with tracked aliases of its argnums inputs."""

    def __init__(self, func, args, kwargs, argnums, has_aux, api):
        self.diff = DiffArgs(args, argnums)
        self.keep = reverse_mode_outside(self.diff.flat)
        with ember.enable_grad():
            self.tracked = [track(x) for x in self.diff.flat]
            self.out, self.aux = split_aux(func(*self.diff.with_leaves(self.tracked), **kwargs), has_aux, api)

    def untracked_aux(self):
        return tree_map(lambda x: untrack(x, self.keep), self.aux)


def grad_and_value(func, argnums=0, has_aux=False):
    """A function giving (the gradient of func's scalar output with respect to the argnums
    inputs, the output) — or (gradient, (output, aux)) with has_aux."""
    api = "grad_and_value(f)(*args)"

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        call = _TrackedCall(func, args, kwargs, argnums, has_aux, api)
        out = call.out
        if not isinstance(out, ember.Tensor):
            raise RuntimeError(f"{api}: Expected f(*args) to return a Tensor, got {type(out)}")
        if out.dim() != 0:
            raise RuntimeError(f"{api}: Expected f(*args) to return a scalar Tensor, got tensor with {out.dim()} "
                               "dims. Maybe you wanted to use the vjp or jacrev APIs instead?")
        with ember.enable_grad():
            grads = call.diff.structure(_gradients([out], [ember.ones_like(out)], call.tracked, call.keep))
        value = untrack(out, call.keep)
        return (grads, (value, call.untracked_aux())) if has_aux else (grads, value)

    return wrapper


def grad(func, argnums=0, has_aux=False):
    """A function giving the gradient of func's scalar output with respect to the argnums
    inputs (and aux with has_aux), as torch.func.grad."""
    inner = grad_and_value(func, argnums, has_aux)

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        grads, value = inner(*args, **kwargs)
        return (grads, value[1]) if has_aux else grads

    return wrapper


def vjp(func, *primals, has_aux=False):
    """(func(*primals), vjp_fn[, aux]): vjp_fn(cotangents) gives the vector-Jacobian product
    for every primal, as a tuple; cotangents have the output's structure."""
    api = "vjp(f, *primals)"
    flat_in, in_spec = tree_flatten(primals)
    check_tensors(flat_in)
    keep = reverse_mode_outside(flat_in)
    with ember.enable_grad():
        tracked = [track(x) for x in flat_in]
        out, aux = split_aux(func(*tree_unflatten(tracked, in_spec)), has_aux, api)
        flat_out, out_spec = tree_flatten(out)
        check_outputs(flat_out, api)

    def vjp_fn(cotangents):
        flat_ct, ct_spec = tree_flatten(cotangents)
        if ct_spec != out_spec:
            raise RuntimeError("Expected pytree structure of cotangents to be the same as pytree structure of outputs "
                               f"to the function. cotangents: {ct_spec}, primal output: {out_spec}")
        check_tensors(flat_ct)
        for i, (o, c) in enumerate(zip(flat_out, flat_ct)):
            if tuple(o.shape) != tuple(c.shape):
                raise RuntimeError(f"Mismatch in shape: grad_output[{i}] has a shape of {c.shape} and output[{i}] "
                                   f"has a shape of {o.shape}.")
        with ember.enable_grad():
            grads = _gradients(flat_out, flat_ct, tracked, keep or reverse_mode_outside(flat_ct))
        return tree_unflatten(grads, in_spec)

    output = tree_map(lambda x: untrack(x, keep), out)
    if has_aux:
        return output, vjp_fn, tree_map(lambda x: untrack(x, keep), aux)
    return output, vjp_fn


def _stack_rows(rows, out_shape, x):
    """The Jacobian block (*out_shape, *x.shape) from one row per output element."""
    if not rows:
        return ember.zeros(tuple(out_shape) + tuple(x.shape), dtype=x.dtype)
    return ember.stack(rows).reshape(tuple(out_shape) + tuple(x.shape))


def jacrev(func, argnums=0, has_aux=False):
    """A function giving the Jacobian of func with respect to the argnums inputs, one
    reverse pass per output element: for each output leaf, the argnums' structure of
    blocks shaped (*output.shape, *input.shape)."""
    api = "jacrev(f)(*args)"

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        call = _TrackedCall(func, args, kwargs, argnums, has_aux, api)
        flat_out, out_spec = tree_flatten(call.out)
        check_outputs(flat_out, "vjp(f, *primals)")
        blocks = []
        with ember.enable_grad():
            for o in flat_out:
                rows = [[] for _ in call.tracked]
                flat_o = o.reshape(-1)
                for j in range(o.numel()):
                    onehot = ember.zeros(o.numel(), dtype=o.dtype)
                    onehot[j] = 1
                    for k, g in enumerate(_gradients([flat_o], [onehot], call.tracked, call.keep)):
                        rows[k].append(g)
                blocks.append(call.diff.structure([_stack_rows(r, o.shape, x) for r, x in zip(rows, call.tracked)]))
        jac = tree_unflatten(blocks, out_spec)
        return (jac, call.untracked_aux()) if has_aux else jac

    return wrapper
