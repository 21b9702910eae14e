"""What the transforms share: argnums, input checks, and moving tensors into and out of a
transform's reverse-mode graph."""
import ember
from ember.autograd import forward_ad

from ._pytree import tree_flatten, tree_unflatten


def normalize_argnums(argnums, nargs):
    """argnums as a tuple of non-negative positions (torch.func's checks and messages)."""
    if isinstance(argnums, int) and not isinstance(argnums, bool):
        nums = (argnums,)
    elif isinstance(argnums, tuple) and all(isinstance(n, int) and not isinstance(n, bool) for n in argnums):
        if not argnums:
            raise RuntimeError("argnums must be non-empty")
        if len(set(argnums)) != len(argnums):
            raise RuntimeError(f"argnums elements must be unique, got {argnums}")
        nums = argnums
    else:
        raise RuntimeError(f"argnums must be int or Tuple[int, ...], got: {type(argnums)}")
    for n in nums:
        if not -nargs <= n < nargs:
            raise RuntimeError(f"Got argnum={n}, but only {nargs} positional inputs")
    return tuple(n % nargs for n in nums)


def check_tensors(leaves):
    for x in leaves:
        if not isinstance(x, ember.Tensor):
            raise ValueError(f"Thing passed to transform API must be Tensor, got {type(x)}")


def track(x):
    """An alias of `x` that reverse mode differentiates to: a view keeps x's own graph (an
    outer transform's) and its tangent; a view of a tensor not requiring grad is a leaf."""
    y = x.view(tuple(x.shape))
    if not y.requires_grad:
        y.requires_grad_()
    return y


def untrack(x, keep_graph):
    """`x` without this transform's graph (kept when an outer transform differentiates
    through it); a forward-mode tangent stays on it. (A view made under no_grad would still
    require grad through its base, as in PyTorch.)"""
    if keep_graph or not isinstance(x, ember.Tensor):
        return x
    _, tangent = forward_ad.unpack_dual(x) if forward_ad._current_level >= 0 else (x, None)
    y = x.detach()
    return y if tangent is None else forward_ad.make_dual(y, tangent)


def reverse_mode_outside(leaves):
    """Whether an enclosing reverse-mode computation needs gradients through the inputs."""
    return ember.is_grad_enabled() and any(isinstance(x, ember.Tensor) and x.requires_grad for x in leaves)


def split_aux(out, has_aux, api):
    if not has_aux:
        return out, None
    if not (isinstance(out, tuple) and len(out) == 2):
        raise RuntimeError(f"{api}: output of function f should be a tuple: (output, aux) if has_aux is True")
    return out


def check_outputs(leaves, api):
    for x in leaves:
        if not isinstance(x, ember.Tensor):
            raise RuntimeError(f"{api}: expected f(*primals) to return only tensors, got unsupported type {type(x)}")


class DiffArgs:
    """The argnums inputs of a call: flattened to tensor leaves, and put back into the
    positional arguments (a transform's tracked or dual copies replace them)."""

    def __init__(self, args, argnums):
        self.args, self.nums = list(args), normalize_argnums(argnums, len(args))
        self.single = isinstance(argnums, int)
        self.flat, self.specs = [], []
        for n in self.nums:
            leaves, spec = tree_flatten(self.args[n])
            check_tensors(leaves)
            self.flat += leaves
            self.specs.append((spec, len(leaves)))

    def with_leaves(self, leaves):
        """The positional arguments with the argnums inputs built from `leaves`."""
        args, start = list(self.args), 0
        for n, (spec, count) in zip(self.nums, self.specs):
            args[n] = tree_unflatten(leaves[start:start + count], spec)
            start += count
        return args

    def structure(self, leaves):
        """`leaves` (one per input leaf) in the argnums' structure: one arg's tree for an
        int argnums, a tuple of them for a tuple."""
        trees, start = [], 0
        for spec, count in self.specs:
            trees.append(tree_unflatten(leaves[start:start + count], spec))
            start += count
        return trees[0] if self.single else tuple(trees)
