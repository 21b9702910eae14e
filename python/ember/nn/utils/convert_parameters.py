"""Parameters to one flat vector and back, as torch.nn.utils.convert_parameters."""
import ember

__all__ = ["parameters_to_vector", "vector_to_parameters"]


def parameters_to_vector(parameters):
    r"""Flatten an iterable of parameters into a single vector."""
    param_device = None
    vec = []
    for param in parameters:
        param_device = _check_param_device(param, param_device)
        vec.append(param.view(-1))
    return ember.cat(vec)


def vector_to_parameters(vec, parameters):
    r"""Copy slices of a vector into an iterable of parameters (each parameter's .data becomes a view of `vec`)."""
    if not isinstance(vec, ember.Tensor):
        raise TypeError(f"expected torch.Tensor, but got: {_typename(vec)}")
    param_device = None
    pointer = 0
    for param in parameters:
        param_device = _check_param_device(param, param_device)
        num_param = param.numel()
        param.data = vec[pointer:pointer + num_param].view(param.shape).data
        pointer += num_param


def _check_param_device(param, old_param_device):
    """The device index of the first parameter (-1 for the CPU); TypeError when a later one is elsewhere."""
    device = param.device
    index = device.index if device.type == "cuda" else -1
    if old_param_device is None:
        return index
    if index != old_param_device:
        raise TypeError("Found two parameters on different devices, this is currently not supported.")
    return old_param_device


def _typename(obj):
    """torch.typename's name of an object's type: 'list', 'numpy.ndarray'."""
    cls = type(obj)
    module = cls.__module__ or ""
    return cls.__qualname__ if module in ("", "builtins") else f"{module}.{cls.__qualname__}"
