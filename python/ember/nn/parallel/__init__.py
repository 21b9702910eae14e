"""ember.nn.parallel, as torch.nn.parallel: DataParallel and DistributedDataParallel, which on
ember's one device and one process wrap a module and call it."""
from .data_parallel import DataParallel, data_parallel  # noqa: F401
from .distributed import DistributedDataParallel  # noqa: F401

__all__ = ["DataParallel", "DistributedDataParallel", "data_parallel"]
