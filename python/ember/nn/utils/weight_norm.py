r"""Weight Normalization from https://arxiv.org/abs/1602.07868 (the hook-based form PyTorch deprecates
but still ships): the weight recomputed as g * v / ||v|| before every forward."""
import warnings

import ember

from ..parameter import Parameter, UninitializedParameter

__all__ = ["WeightNorm", "weight_norm", "remove_weight_norm"]


def _norm_except_dim(v, pow, dim):
    """The `pow`-norm of v over every dim but `dim`, kept as size-1 dims (dim -1: over all, a 0-d tensor)."""
    if dim == -1:
        return ember.linalg.vector_norm(v, pow)
    dim = dim % v.dim()
    others = [d for d in range(v.dim()) if d != dim]
    return ember.linalg.vector_norm(v, pow, dim=others, keepdim=True)


class WeightNorm:
    def __init__(self, name, dim):
        self.name = name
        self.dim = -1 if dim is None else dim

    def compute_weight(self, module):
        g = getattr(module, self.name + "_g")
        v = getattr(module, self.name + "_v")
        return v * (g / _norm_except_dim(v, 2, self.dim))

    @staticmethod
    def apply(module, name, dim):
        warnings.warn("`torch.nn.utils.weight_norm` is deprecated in favor of "
                      "`torch.nn.utils.parametrizations.weight_norm`.", FutureWarning, stacklevel=3)
        for hook in module._forward_pre_hooks.values():
            if isinstance(hook, WeightNorm) and hook.name == name:
                raise RuntimeError(f"Cannot register two weight_norm hooks on the same parameter {name}")
        fn = WeightNorm(name, dim)
        weight = getattr(module, name)
        if isinstance(weight, UninitializedParameter):
            raise ValueError("The module passed to `WeightNorm` can't have uninitialized parameters. "
                             "Make sure to run the dummy forward before applying weight normalization")
        del module._parameters[name]
        # g and v are registered first so that the weight computed from them can be set as a plain attribute.
        module.register_parameter(name + "_g", Parameter(_norm_except_dim(weight, 2, fn.dim).data))
        module.register_parameter(name + "_v", Parameter(weight.data))
        setattr(module, name, fn.compute_weight(module))
        module.register_forward_pre_hook(fn)
        return fn

    def remove(self, module):
        weight = self.compute_weight(module)
        delattr(module, self.name)
        del module._parameters[self.name + "_g"]
        del module._parameters[self.name + "_v"]
        setattr(module, self.name, Parameter(weight.data))

    def __call__(self, module, inputs):
        setattr(module, self.name, self.compute_weight(module))


def weight_norm(module, name="weight", dim=0):
    r"""Apply weight normalization to a parameter in the given module: ``name`` becomes
    ``name_g * name_v / ||name_v||``, recomputed before every forward; ``dim=None`` takes the norm
    over the whole tensor. Returns the module."""
    WeightNorm.apply(module, name, dim)
    return module


def remove_weight_norm(module, name="weight"):
    r"""Remove the weight normalization reparameterization from a module."""
    _remove_reparametrization(module, WeightNorm, name, "weight_norm")
    return module


def _remove_reparametrization(module, cls, name, what):
    """Undo and drop the `cls` forward pre-hook of parameter `name` (PyTorch's ValueError when none)."""
    for k, hook in module._forward_pre_hooks.items():
        if isinstance(hook, cls) and hook.name == name:
            hook.remove(module)
            del module._forward_pre_hooks[k]
            return
    raise ValueError(f"{what} of '{name}' not found in {module}")
