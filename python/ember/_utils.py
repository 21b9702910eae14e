"""The functions pickles of tensors and storages call to rebuild them.

Their names and arguments are part of the pickle format: a pickle made today
names them, so they keep their names and accept the arguments they accept
now (new arguments get defaults).
"""
from . import _C


def _rebuild_storage(data, device):
    """An UntypedStorage holding a copy of `data` (any bytes-like object) on `device`."""
    storage = _C._storage_from_buffer(data)
    if device == "cpu":
        return storage
    if device.startswith("cuda"):
        from . import cuda
        if not cuda.is_available():
            raise RuntimeError(f"Attempting to deserialize object on a CUDA device ({device}) but "
                               "ember.cuda.is_available() is False. Unpickle it on a machine with a GPU, or "
                               "move the tensors to the CPU before pickling them.")
    return _C._storage_bytes(storage).to(device).untyped_storage()


def _rebuild_tensor(storage, storage_offset, size, stride, dtype):
    """A tensor viewing `storage` (shared, not copied) with the given geometry."""
    return _C._tensor_from_storage(storage, storage_offset, size, stride, dtype)


def _rebuild_tensor_v2(storage, storage_offset, size, stride, dtype, requires_grad):
    """_rebuild_tensor, then requires_grad: an unpickled tensor is a leaf, as in PyTorch."""
    tensor = _rebuild_tensor(storage, storage_offset, size, stride, dtype)
    if requires_grad:
        tensor.requires_grad_(True)
    return tensor


def _rebuild_from_type(func, new_type, args, state):
    """func(*args) made an instance of the Tensor subclass `new_type`, with the
    instance's attributes `state` (what a pickled subclass or a tensor with
    attributes carries)."""
    tensor = func(*args)
    if type(tensor) is not new_type:
        tensor = _C.TensorBase._make_subclass(new_type, tensor, tensor.requires_grad)
    if state:
        if hasattr(type(tensor), "__setstate__"):
            tensor.__setstate__(state)
        else:
            for name, value in state.items():
                setattr(tensor, name, value)
    return tensor


def _rebuild_parameter(data, requires_grad, backward_hooks):
    """An nn.Parameter of `data` (the pickle of a Parameter). `backward_hooks` is
    always empty: hooks are not pickled, as in PyTorch."""
    from .nn.parameter import Parameter
    return Parameter(data, requires_grad)


def _rebuild_parameter_with_state(data, requires_grad, backward_hooks, state):
    """_rebuild_parameter, then the Parameter's Python attributes `state`."""
    param = _rebuild_parameter(data, requires_grad, backward_hooks)
    for name, value in state.items():
        setattr(param, name, value)
    return param
