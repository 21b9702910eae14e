"""ember.multiprocessing is a wrapper around the native :mod:`multiprocessing` module.

It registers custom reducers that use shared memory to provide shared views on
the same data in different processes. Once a tensor or storage is moved to
shared memory (see :meth:`ember.Tensor.share_memory_`, done for you when one is
sent), it is sent to other processes without a copy.

The API is that of the original module: changing ``import multiprocessing`` to
``import ember.multiprocessing`` makes tensors sent through queues, pipes and
process arguments travel through shared memory.
"""
import multiprocessing
import sys

from . import _shared_memory
from .reductions import init_reductions

__all__ = ["set_sharing_strategy", "get_sharing_strategy", "get_all_sharing_strategies"]

from multiprocessing import *  # noqa: F401,F403,E402

__all__ += multiprocessing.__all__

from .spawn import (  # noqa: E402,F401
    ProcessContext, ProcessExitedException, ProcessRaisedException, SpawnContext, spawn, start_processes,
)

if sys.platform.startswith("linux"):
    _all_sharing_strategies = {"file_descriptor", "file_system"}
else:
    _all_sharing_strategies = {"file_system"}


def set_sharing_strategy(new_strategy):
    """Set the strategy for sharing CPU tensors.

    Args:
        new_strategy (str): Name of the selected strategy. Should be one of
            the values returned by :func:`get_all_sharing_strategies()`.
    """
    if new_strategy not in _all_sharing_strategies:
        raise AssertionError(f"invalid sharing strategy {new_strategy!r}, expected one of {_all_sharing_strategies}")
    if new_strategy == "file_system":
        _shared_memory.start_tracker()  # before any fork, so children share it
    _shared_memory._strategy = new_strategy


def get_sharing_strategy():
    """Return the current strategy for sharing CPU tensors."""
    return _shared_memory._strategy


def get_all_sharing_strategies():
    """Return a set of sharing strategies supported on a current system."""
    return _all_sharing_strategies


init_reductions()
