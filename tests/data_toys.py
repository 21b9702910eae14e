"""Datasets and functions for the DataLoader tests, in a module of their own so
that spawned workers can import them (a spawned child unpickles by name)."""
import os
import random
import time

import numpy as np

import ember
from ember.utils.data import Dataset, IterableDataset, get_worker_info


class Range(Dataset):
    """Sample i is i (an int); every slow_every-th sample first sleeps `delay` seconds (out-of-order arrivals)."""

    def __init__(self, n, slow_every=0, delay=0.0):
        self.n, self.slow_every, self.delay = n, slow_every, delay

    def __getitem__(self, i):
        if self.slow_every and i % self.slow_every == 0:
            time.sleep(self.delay)
        return i

    def __len__(self):
        return self.n


class Images(Dataset):
    """A 3x4x4 float32 tensor and a label per sample, built from NumPy."""

    def __init__(self, n):
        self.n = n

    def __getitem__(self, i):
        return ember.from_numpy(np.full((3, 4, 4), i, dtype=np.float32)) * 2, i % 3

    def __len__(self):
        return self.n


class FailsAt(Dataset):
    def __init__(self, n, bad):
        self.n, self.bad = n, bad

    def __getitem__(self, i):
        if i == self.bad:
            raise ValueError(f"bad sample {i}")
        return i

    def __len__(self):
        return self.n


class KeyErrorAt(FailsAt):
    def __getitem__(self, i):
        if i == self.bad:
            return {}["missing"]
        return i


class DiesAt(FailsAt):
    """Its worker process exits abruptly (as if killed) at sample `bad`."""

    def __getitem__(self, i):
        if i == self.bad and get_worker_info() is not None:
            os._exit(3)
        return i


class Sleeps(Dataset):
    def __init__(self, n, seconds):
        self.n, self.seconds = n, seconds

    def __getitem__(self, i):
        time.sleep(self.seconds)
        return i

    def __len__(self):
        return self.n


class WorkerIds(Dataset):
    """Sample i is (i, worker id, worker seed, random draws from random, NumPy and ember)."""

    def __init__(self, n):
        self.n = n

    def __getitem__(self, i):
        info = get_worker_info()
        return {"i": i, "id": info.id, "num_workers": info.num_workers, "seed": info.seed, "pid": os.getpid(),
                "random": random.random(), "numpy": float(np.random.rand()), "ember": ember.rand(1).item(),
                "same_dataset": info.dataset is self}

    def __len__(self):
        return self.n


class Stream(IterableDataset):
    """range(start, end), each worker taking its contiguous share (as PyTorch's docs do)."""

    def __init__(self, start, end, shard=True):
        self.start, self.end, self.shard = start, end, shard

    def __iter__(self):
        info = get_worker_info()
        if info is None or not self.shard:
            return iter(range(self.start, self.end))
        per_worker = -(-(self.end - self.start) // info.num_workers)
        begin = self.start + info.id * per_worker
        return iter(range(begin, min(begin + per_worker, self.end)))

    def __len__(self):
        return self.end - self.start


def record_init(worker_id):
    """worker_init_fn: marks the worker's dataset copy with its id."""
    get_worker_info().dataset.init_id = worker_id


class InitMarked(Dataset):
    def __getitem__(self, i):
        return (i, getattr(self, "init_id", None))

    def __len__(self):
        return 4


def failing_init(worker_id):
    raise RuntimeError(f"init failed in {worker_id}")


def pid_collate(batch):
    return (os.getpid(), batch)


def shared_flags(batch):
    """collate_fn: default_collate, then whether each collated tensor is in shared memory (seen in the worker)."""
    from ember.utils.data import default_collate
    images, labels = default_collate(batch)
    return images, labels, images.is_shared(), labels.is_shared()
