"""nn.parallel.DistributedDataParallel over ember.distributed's single process: gradients need no
averaging across one process, so the wrapper calls the module; it needs the default process group
initialised, as PyTorch's does."""
import contextlib

from ... import distributed as dist
from ..modules.module import Module

__all__ = ["DistributedDataParallel"]


class DistributedDataParallel(Module):
    r"""Implement distributed data parallelism at the module level (one process: the module itself).

    Needs ``ember.distributed.init_process_group`` first (ValueError otherwise, as PyTorch's)."""

    def __init__(self, module, device_ids=None, output_device=None, dim=0, broadcast_buffers=True, init_sync=True,
                 process_group=None, bucket_cap_mb=None, find_unused_parameters=False, check_reduction=False,
                 gradient_as_bucket_view=False, static_graph=False, delay_all_reduce_named_params=None,
                 param_to_hook_all_reduce=None, mixed_precision=None, device_mesh=None,
                 skip_all_reduce_unused_params=False, bucket_cap_mb_list=None, batched_grad_copy=False,
                 forward_sync_buffers=None):
        super().__init__()
        if process_group is None and device_mesh is None and not dist.is_initialized():
            raise ValueError(dist._NOT_INITIALIZED)
        if not any(p.requires_grad for p in module.parameters()):
            raise RuntimeError("DistributedDataParallel is not needed when a module doesn't have any parameter that "
                               "requires a gradient.")
        self.module = module
        self.device_ids = list(device_ids) if device_ids else None
        self.output_device = output_device
        self.dim = dim
        self.broadcast_buffers = True if broadcast_buffers is None else broadcast_buffers
        self.find_unused_parameters = find_unused_parameters
        self.gradient_as_bucket_view = gradient_as_bucket_view
        self.static_graph = static_graph
        self.process_group = process_group
        self.require_backward_grad_sync = True  # read by gradient-accumulation loops (and no_sync)
        self.require_forward_param_sync = True

    def forward(self, *inputs, **kwargs):
        return self.module(*inputs, **kwargs)

    @contextlib.contextmanager
    def no_sync(self):
        r"""Disable gradient synchronization across processes inside the block (none happens on one process)."""
        old = self.require_backward_grad_sync
        self.require_backward_grad_sync = False
        try:
            yield
        finally:
            self.require_backward_grad_sync = old
