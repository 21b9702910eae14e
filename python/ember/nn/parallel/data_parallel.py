"""nn.DataParallel. PyTorch replicates the module over its visible CUDA devices; without CUDA it keeps
device_ids empty and calls the module, as here. ember does not replicate yet: with CUDA devices it
runs on one (NotImplementedError for more)."""
from ... import cuda
from ..modules.module import Module

__all__ = ["DataParallel", "data_parallel"]


class DataParallel(Module):
    r"""Implements data parallelism at the module level: on one device, calls `module` as is.

    Args:
        module (Module): module to be parallelized
        device_ids (list of int or torch.device): CUDA devices (default: all devices; ember: none)
        output_device (int or torch.device): device location of output (default: device_ids[0])
    """

    def __init__(self, module, device_ids=None, output_device=None, dim=0):
        super().__init__()
        self.module = module
        self.device_ids = _device_ids(device_ids, "DataParallel")
        self.dim = dim

    def forward(self, *inputs, **kwargs):
        return self.module(*inputs, **kwargs)


def data_parallel(module, inputs, device_ids=None, output_device=None, dim=0, module_kwargs=None):
    r"""Evaluate module(input) in parallel across the GPUs given in device_ids: on one device, module(*inputs)."""
    _device_ids(device_ids, "data_parallel")
    if not isinstance(inputs, tuple):
        inputs = (inputs,) if inputs is not None else ()
    return module(*inputs, **(module_kwargs or {}))


def _device_ids(device_ids, name):
    """The CUDA device indices used: none without CUDA (the module is called as is), else one."""
    if not cuda.is_available():
        return []
    ids = list(range(cuda.device_count())) if device_ids is None else list(device_ids)
    if len(ids) > 1:
        raise NotImplementedError(f"{name}: ember does not replicate a module over {len(ids)} devices yet")
    return [getattr(d, "index", d) for d in ids]
