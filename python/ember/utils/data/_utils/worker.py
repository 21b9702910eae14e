"""The DataLoader's worker processes, as torch.utils.data._utils.worker: the
loop each worker runs, its seeding, and get_worker_info()."""
from __future__ import annotations

import multiprocessing
import os
import queue
import random
from dataclasses import dataclass

import ember

from . import MP_STATUS_CHECK_INTERVAL, ExceptionWrapper


class ManagerWatchdog:
    """Tells a worker whether the process that started it is still alive (an
    orphan is re-parented, so its parent pid changes)."""

    def __init__(self):
        # The pid multiprocessing recorded before starting us: os.getppid() here would already be
        # the new parent's if the main process died while this worker was starting.
        parent = multiprocessing.parent_process()
        self.manager_pid = parent.pid if parent is not None else os.getppid()
        self.manager_dead = False

    def is_alive(self):
        if not self.manager_dead:
            self.manager_dead = os.getppid() != self.manager_pid
        return not self.manager_dead


_worker_info = None


@dataclass(frozen=True, slots=True)
class WorkerInfo:
    """What get_worker_info() returns in a worker: its id in [0, num_workers),
    its seed, and its own copy of the dataset."""

    id: int
    num_workers: int
    seed: int
    dataset: object
    rng: object = None
    worker_method: str | None = "multiprocessing"


def get_worker_info():
    """The WorkerInfo of this DataLoader worker process; None in the main process."""
    return _worker_info


@dataclass(frozen=True)
class _IterableDatasetStopIteration:
    """A worker's answer when its copy of an IterableDataset is exhausted."""

    worker_id: int


@dataclass(frozen=True)
class _ResumeIteration:
    """Sent to persistent workers at a new epoch: reset the fetcher and echo back."""

    seed: int | None = None


def _generate_state(base_seed, worker_id):
    """NumPy's seed for a worker: base_seed and worker_id mixed as NumPy's
    SeedSequence does (PyTorch's function, so NumPy streams match PyTorch's)."""
    INIT_A, MULT_A, INIT_B, MULT_B = 0x43B0D7E5, 0x931E8875, 0x8B51F9DD, 0x58F38DED
    MIX_MULT_L, MIX_MULT_R, XSHIFT, MASK32 = 0xCA01F9DD, 0x4973F715, 16, 0xFFFFFFFF
    entropy = [worker_id, base_seed & MASK32, base_seed >> 32, 0]
    hash_const_a = INIT_A

    def hash(value):
        nonlocal hash_const_a
        value = (value ^ hash_const_a) & MASK32
        hash_const_a = (hash_const_a * MULT_A) & MASK32
        value = (value * hash_const_a) & MASK32
        return (value ^ (value >> XSHIFT)) & MASK32

    def mix(x, y):
        result = (((MIX_MULT_L * x) & MASK32) - ((MIX_MULT_R * y) & MASK32)) & MASK32
        return (result ^ (result >> XSHIFT)) & MASK32

    pool = [hash(value) for value in entropy]
    for i_src in range(4):
        for i_dst in range(4):
            if i_src != i_dst:
                pool[i_dst] = mix(pool[i_dst], hash(pool[i_src]))
    hash_const_b = INIT_B
    state = []
    for value in pool:
        value = (value ^ hash_const_b) & MASK32
        hash_const_b = (hash_const_b * MULT_B) & MASK32
        value = (value * hash_const_b) & MASK32
        state.append((value ^ (value >> XSHIFT)) & MASK32)
    return state


def _seed_worker(base_seed, worker_id):
    """Seeds `random`, ember and NumPy in a worker as PyTorch's workers do; returns the seed."""
    seed = base_seed + worker_id
    random.seed(seed)
    ember.manual_seed(seed)
    import numpy as np
    np.random.seed(_generate_state(base_seed, worker_id))
    return seed


def _worker_loop(dataset_kind, dataset, index_queue, data_queue, done_event, auto_collation, collate_fn,
                 drop_last, base_seed, init_fn, worker_id, num_workers, persistent_workers, shared_seed):
    """Answers (task index, sampler index) from index_queue with (task index,
    batch or ExceptionWrapper) on data_queue until it gets None (the main
    process's stop signal) or the main process dies."""
    from ..dataloader import _WORKER_SHARING_STRATEGY, _DatasetKind, _multiprocessing_module
    multiprocessing_module = _multiprocessing_module()  # a spawned worker registers ember's reductions too
    if hasattr(multiprocessing_module, "set_sharing_strategy"):
        multiprocessing_module.set_sharing_strategy(_WORKER_SHARING_STRATEGY)
    try:
        ember.set_num_threads(1)  # the workers are the parallelism; threads would only fight over cores
        seed = _seed_worker(base_seed, worker_id)
        global _worker_info
        _worker_info = WorkerInfo(id=worker_id, num_workers=num_workers, seed=seed, dataset=dataset)
        init_exception = None
        try:
            if init_fn is not None:
                init_fn(worker_id)
            fetcher = _DatasetKind.create_fetcher(dataset_kind, dataset, auto_collation, collate_fn, drop_last)
        except Exception:
            init_exception = ExceptionWrapper(where=f"in DataLoader worker process {worker_id}")
        iteration_end = False  # an IterableDataset ran out: ignore tasks until the next epoch
        watchdog = ManagerWatchdog()
        while watchdog.is_alive():
            try:
                r = index_queue.get(timeout=MP_STATUS_CHECK_INTERVAL)
            except queue.Empty:
                continue
            if isinstance(r, _ResumeIteration):
                data_queue.put((r, None))
                iteration_end = False
                fetcher = _DatasetKind.create_fetcher(dataset_kind, dataset, auto_collation, collate_fn, drop_last)
                continue
            if r is None:
                break
            if done_event.is_set() or iteration_end:
                continue
            idx, index = r
            if init_exception is not None:
                data, init_exception = init_exception, None
            else:
                try:
                    data = fetcher.fetch(index)
                except Exception as e:
                    if isinstance(e, StopIteration) and dataset_kind == _DatasetKind.Iterable:
                        data = _IterableDatasetStopIteration(worker_id)
                        iteration_end = True
                    else:
                        data = ExceptionWrapper(where=f"in DataLoader worker process {worker_id}")
            data_queue.put((idx, data))
            del data, idx, index, r  # a batch held here would keep its shared memory alive
    except KeyboardInterrupt:
        pass  # Ctrl-C reaches the whole process group: the main process handles it
    # On exit the queue's feeder thread flushes what was put: the main process drains the queue while it
    # joins the workers, so every batch sent (and its shared-memory segment) reaches it and is freed.
