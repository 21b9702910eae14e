"""ember.cuda: importable everywhere; reports no GPU until the CUDA backend has kernels here."""
from .. import _C


def is_available():
    return False


def device_count():
    return 0


def is_built():
    return bool(_C._cuda_built)


def manual_seed(seed):
    """Seeds the GPU generators (none here); kept so CPU programs run unchanged."""


manual_seed_all = manual_seed


def synchronize(device=None):
    pass
