"""DataLoader, as torch.utils.data.dataloader: iterates a dataset in batches,
in the main process (num_workers=0) or in worker processes.

With workers: each worker has its own index queue and all answer on one result
queue; prefetch_factor * num_workers tasks are in flight; a reorder buffer hands
batches back in sampler order (unless in_order=False). The main process waits
on the result queue and on the workers' exit sentinels together, so a dead
worker is an error at once, not a hang. Batches come back in shared memory
(named segments: see docs/ARCHITECTURE.md), drained and freed at shutdown.
"""
import atexit
import itertools
import math
import multiprocessing as python_multiprocessing
import os
import queue
import time
import warnings
import weakref
from multiprocessing import connection

import ember

from . import _utils
from ._utils import ExceptionWrapper
from .dataset import IterableDataset
from .sampler import BatchSampler, RandomSampler, Sampler, SequentialSampler

__all__ = ["DataLoader", "get_worker_info", "default_collate", "default_convert"]

default_collate = _utils.collate.default_collate
default_convert = _utils.collate.default_convert
get_worker_info = _utils.worker.get_worker_info


def _multiprocessing_module():
    """ember.multiprocessing when it is there (tensors travel through shared
    memory), else the standard library's (tensors are pickled)."""
    try:
        from ember import multiprocessing
    except ImportError:
        return python_multiprocessing
    return multiprocessing


# Workers send batches as named /dev/shm segments: the main process opens one by its name. An fd (the
# file_descriptor strategy) would come from the worker's resource-sharer thread, a socket round trip that
# waits for the worker's GIL while its dataset code runs (measured: ~15 ms per batch vs 0.2 ms).
_WORKER_SHARING_STRATEGY = "file_system"


def _start_resource_tracker():
    """Starts multiprocessing's resource tracker before forking workers, so that they share it: a
    segment a worker creates is then unregistered by the main process that frees it."""
    if _multiprocessing_module() is python_multiprocessing or _WORKER_SHARING_STRATEGY != "file_system":
        return
    from ember.multiprocessing import _shared_memory
    _shared_memory.start_tracker()


_EXIT_PATIENCE = 0.5  # seconds without progress after which workers still running at exit are terminated
_live_iterators: "weakref.WeakSet[_MultiProcessingDataLoaderIter]" = weakref.WeakSet()  # workers may still run


def _shut_down_live_iterators():
    # Before multiprocessing's own exit handler (atexit runs in reverse order) would terminate the workers
    # and strand the batches they were sending.
    for iterator in list(_live_iterators):
        iterator._shutdown_workers(at_exit=True)


atexit.register(_shut_down_live_iterators)


class _DatasetKind:
    Map = 0
    Iterable = 1

    @staticmethod
    def create_fetcher(kind, dataset, auto_collation, collate_fn, drop_last):
        fetcher = _utils.fetch._MapDatasetFetcher if kind == _DatasetKind.Map else _utils.fetch._IterableDatasetFetcher
        return fetcher(dataset, auto_collation, collate_fn, drop_last)


class _InfiniteConstantSampler(Sampler):
    """The sampler of an IterableDataset: None forever (the data decide when to stop)."""

    def __iter__(self):
        while True:
            yield None


def _cpu_count():
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()


class DataLoader:
    """Combines a dataset and a sampler, and provides an iterable over the dataset
    (batches of batch_size samples collated by collate_fn), loading in
    num_workers worker processes when num_workers > 0."""

    _DataLoader__initialized = False

    def __init__(self, dataset, batch_size=1, shuffle=None, sampler=None, batch_sampler=None, num_workers=0,
                 collate_fn=None, pin_memory=False, drop_last=False, timeout=0, worker_init_fn=None,
                 multiprocessing_context=None, generator=None, *, prefetch_factor=None, persistent_workers=False,
                 pin_memory_device="", in_order=True):
        if num_workers < 0:
            raise ValueError("num_workers option should be non-negative; use num_workers=0 to disable multiprocessing.")
        if timeout < 0:
            raise ValueError("timeout option should be non-negative")
        if num_workers == 0 and prefetch_factor is not None:
            raise ValueError("prefetch_factor option could only be specified in multiprocessing."
                             "let num_workers > 0 to enable multiprocessing, otherwise set prefetch_factor to None.")
        if num_workers > 0 and prefetch_factor is None:
            prefetch_factor = 2
        elif prefetch_factor is not None and prefetch_factor < 0:
            raise ValueError("prefetch_factor option should be non-negative")
        if persistent_workers and num_workers == 0:
            raise ValueError("persistent_workers option needs num_workers > 0")
        self.dataset = dataset
        self.num_workers = num_workers
        self.prefetch_factor = prefetch_factor
        self.pin_memory = pin_memory
        self.pin_memory_device = pin_memory_device
        self.timeout = timeout
        self.worker_init_fn = worker_init_fn
        self.multiprocessing_context = multiprocessing_context
        self.in_order = in_order

        if isinstance(dataset, IterableDataset):
            self._dataset_kind = _DatasetKind.Iterable
            if shuffle not in {False, None}:
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified shuffle option, "
                                 f"but got shuffle={shuffle}")
            if sampler is not None:
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified sampler option, "
                                 f"but got sampler={sampler}")
            if batch_sampler is not None:
                raise ValueError("DataLoader with IterableDataset: expected unspecified "
                                 f"batch_sampler option, but got batch_sampler={batch_sampler}")
        else:
            shuffle = bool(shuffle)
            self._dataset_kind = _DatasetKind.Map

        if sampler is not None and shuffle:
            raise ValueError("sampler option is mutually exclusive with shuffle")
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError("batch_sampler option is mutually exclusive with batch_size, shuffle, sampler, "
                                 "and drop_last")
            batch_size = None
            drop_last = False
        elif batch_size is None and drop_last:
            raise ValueError("batch_size=None option disables auto-batching and is mutually exclusive with drop_last")

        if sampler is None:
            if self._dataset_kind == _DatasetKind.Iterable:
                sampler = _InfiniteConstantSampler()
            elif shuffle:
                sampler = RandomSampler(dataset, generator=generator)
            else:
                sampler = SequentialSampler(dataset)
        if batch_size is not None and batch_sampler is None:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)

        self.batch_size = batch_size
        self.drop_last = drop_last
        self.sampler = sampler
        self.batch_sampler = batch_sampler
        self.generator = generator
        if collate_fn is None:
            collate_fn = default_collate if self._auto_collation else default_convert
        self.collate_fn = collate_fn
        self.persistent_workers = persistent_workers
        self.__initialized = True
        self._IterableDataset_len_called = None  # len(self) of an IterableDataset: warn if more come
        self._iterator = None
        self.check_worker_number_rationality()

    def _get_iterator(self):
        if self.num_workers == 0:
            return _SingleProcessDataLoaderIter(self)
        self.check_worker_number_rationality()
        return _MultiProcessingDataLoaderIter(self)

    @property
    def multiprocessing_context(self):
        return self.__multiprocessing_context

    @multiprocessing_context.setter
    def multiprocessing_context(self, multiprocessing_context):
        if multiprocessing_context is not None:
            if self.num_workers <= 0:
                raise ValueError("multiprocessing_context can only be used with multi-process loading "
                                 f"(num_workers > 0), but got num_workers={self.num_workers}")
            if isinstance(multiprocessing_context, str):
                valid_start_methods = python_multiprocessing.get_all_start_methods()
                if multiprocessing_context not in valid_start_methods:
                    raise ValueError("multiprocessing_context option should specify a valid start method in "
                                     f"{valid_start_methods!r}, but got "
                                     f"multiprocessing_context={multiprocessing_context!r}")
                multiprocessing_context = _multiprocessing_module().get_context(multiprocessing_context)
            if not isinstance(multiprocessing_context, python_multiprocessing.context.BaseContext):
                raise TypeError("multiprocessing_context option should be a valid context object or a string "
                                "specifying the start method, but got "
                                f"multiprocessing_context={multiprocessing_context}")
        self.__multiprocessing_context = multiprocessing_context

    def __setattr__(self, attr, val):
        if self.__initialized and attr in ("batch_size", "batch_sampler", "sampler", "drop_last", "dataset",
                                           "persistent_workers"):
            raise ValueError(f"{attr} attribute should not be set after {self.__class__.__name__} is initialized")
        super().__setattr__(attr, val)

    def __iter__(self):
        # Persistent workers: one iterator, reset at each epoch; otherwise a new one (new workers) per epoch.
        if self.persistent_workers and self.num_workers > 0:
            if self._iterator is None:
                self._iterator = self._get_iterator()
            else:
                self._iterator._reset(self)
            return self._iterator
        return self._get_iterator()

    @property
    def _auto_collation(self):
        return self.batch_sampler is not None

    @property
    def _index_sampler(self):
        return self.batch_sampler if self._auto_collation else self.sampler

    def __len__(self):
        if self._dataset_kind == _DatasetKind.Iterable:
            # The dataset's own length (it may be wrong with workers: __next__ warns when more come).
            length = self._IterableDataset_len_called = len(self.dataset)
            if self.batch_size is not None:
                length = length // self.batch_size if self.drop_last else math.ceil(length / self.batch_size)
            return length
        return len(self._index_sampler)

    def check_worker_number_rationality(self):
        """Warns when the loader would start more workers than this process has CPUs."""
        if not self.num_workers:
            return
        max_num_worker_suggest = _cpu_count()
        cpuset_checked = hasattr(os, "sched_getaffinity")
        if max_num_worker_suggest is not None and self.num_workers <= max_num_worker_suggest:
            return
        if max_num_worker_suggest is None:
            suggested = "DataLoader is not able to compute a suggested max number of worker in current system."
        else:
            suggested = (f"Our suggested max number of worker in current system is {max_num_worker_suggest}"
                         f"{'' if cpuset_checked else ' (`cpuset` is not taken into account)'}, which is smaller "
                         "than what this DataLoader is going to create.")
        warnings.warn(f"This DataLoader will create {self.num_workers} worker processes in total. {suggested} "
                      "Please be aware that excessive worker creation might get DataLoader running slow or even "
                      "freeze, lower the worker number to avoid potential slowness/freeze if necessary.",
                      stacklevel=2)


class _BaseDataLoaderIter:
    def __init__(self, loader):
        self._dataset = loader.dataset
        self._shared_seed = None
        self._dataset_kind = loader._dataset_kind
        self._IterableDataset_len_called = loader._IterableDataset_len_called
        self._auto_collation = loader._auto_collation
        self._drop_last = loader.drop_last
        self._index_sampler = loader._index_sampler
        self._num_workers = loader.num_workers
        if loader.pin_memory and loader.pin_memory_device:
            warnings.warn("pin_memory_device is deprecated, the current accelerator will be used as the device,"
                          f"ignore pin_memory_device='{loader.pin_memory_device}'.", stacklevel=2)
        if loader.pin_memory and not ember.cuda.is_available():
            warnings.warn("'pin_memory' argument is set as true but no accelerator is found, "
                          "then device pinned memory won't be used.", stacklevel=2)
        self._pin_memory = False  # accepted, a no-op: ember's host memory needs no pinning to reach the GPU
        self._timeout = loader.timeout
        self._collate_fn = loader.collate_fn
        self._sampler_iter = iter(self._index_sampler)
        self._base_seed = ember.empty((), dtype=ember.int64).random_(generator=loader.generator).item()
        self._persistent_workers = loader.persistent_workers
        self._num_yielded = 0

    def __iter__(self):
        return self

    def _reset(self, loader, first_iter=False):
        self._sampler_iter = iter(self._index_sampler)
        self._num_yielded = 0
        self._IterableDataset_len_called = loader._IterableDataset_len_called

    def _next_index(self):
        return next(self._sampler_iter)  # may raise StopIteration

    def _next_data(self):
        raise NotImplementedError

    def __next__(self):
        data = self._next_data()
        self._num_yielded += 1
        if (self._dataset_kind == _DatasetKind.Iterable and self._IterableDataset_len_called is not None
                and self._num_yielded > self._IterableDataset_len_called):
            warn_msg = (f"Length of IterableDataset {self._dataset} was reported to be "
                        f"{self._IterableDataset_len_called}(when accessing len(dataloader)), but "
                        f"{self._num_yielded} samples have been fetched. ")
            if self._num_workers > 0:
                warn_msg += ("For multiprocessing data-loading, this could be caused by not properly configuring "
                             "the IterableDataset replica at each worker. Please see "
                             "https://pytorch.org/docs/stable/data.html#torch.utils.data.IterableDataset for examples.")
            warnings.warn(warn_msg, stacklevel=2)
        return data

    def __len__(self):
        return len(self._index_sampler)

    def __getstate__(self):
        raise NotImplementedError(f"{self.__class__.__name__} cannot be pickled")


class _SingleProcessDataLoaderIter(_BaseDataLoaderIter):
    def __init__(self, loader):
        super().__init__(loader)
        self._dataset_fetcher = _DatasetKind.create_fetcher(self._dataset_kind, self._dataset,
                                                            self._auto_collation, self._collate_fn, self._drop_last)

    def _next_data(self):
        index = self._next_index()  # may raise StopIteration
        return self._dataset_fetcher.fetch(index)  # may raise StopIteration


class _MultiProcessingDataLoaderIter(_BaseDataLoaderIter):
    """Worker processes fetch and collate; this process hands out tasks and
    returns their results (see the module docstring)."""

    def __init__(self, loader):
        super().__init__(loader)
        self._prefetch_factor = loader.prefetch_factor
        if self._prefetch_factor <= 0:
            raise AssertionError("prefetch_factor must be greater than 0 for MultiProcessingDataLoaderIter")
        self._in_order = loader.in_order
        context = loader.multiprocessing_context or _multiprocessing_module()
        self._worker_init_fn = loader.worker_init_fn
        self._worker_result_queue = context.Queue()
        self._shutdown = False
        self._workers_done_event = context.Event()
        self._index_queues = []
        self._workers = []
        self._reset_tasks()
        _start_resource_tracker()
        _live_iterators.add(self)
        for i in range(self._num_workers):
            index_queue = context.Queue()
            index_queue.cancel_join_thread()  # at exit, do not wait to flush indices to a worker that stopped
            worker = context.Process(
                target=_utils.worker._worker_loop,
                args=(self._dataset_kind, self._dataset, index_queue, self._worker_result_queue,
                      self._workers_done_event, self._auto_collation, self._collate_fn, self._drop_last,
                      self._base_seed, self._worker_init_fn, i, self._num_workers, self._persistent_workers,
                      self._shared_seed))
            worker.daemon = True  # multiprocessing ends daemonic children when the interpreter exits
            self._start_worker(worker)
            self._index_queues.append(index_queue)
            self._workers.append(worker)
            self._try_put_index()  # worker i's first task, so it starts while the next worker is forked
        self._data_queue = self._worker_result_queue
        self._fill_prefetch()

    @staticmethod
    def _start_worker(worker):
        import pickle
        try:
            worker.start()
        except (TypeError, AttributeError, pickle.PicklingError):
            warnings.warn("Got pickle error when attempting to start a worker Process. This might be because the "
                          "worker Process arguments are not picklable. Python 3.14+ changed the multiprocessing "
                          "start method in non-Mac POSIX platforms to 'forkserver', which requires the worker "
                          "Process arguments to be picklable. You can also try "
                          "multiprocessing.set_start_method('fork').", stacklevel=3)
            raise

    def _reset_tasks(self):
        self._send_idx = 0  # idx of the next task to be sent to workers
        self._rcvd_idx = 0  # idx of the next task to be returned in __next__
        # task idx -> (worker id,) while in flight, (worker id, data) when it came back early
        self._task_info = {}
        self._tasks_outstanding = 0
        self._workers_status = [True] * self._num_workers
        self._workers_num_tasks = [0] * self._num_workers
        self._worker_queue_idx_cycle = itertools.cycle(range(self._num_workers))

    def _reset(self, loader, first_iter=False):
        """A new epoch for persistent workers: drop what is left of the last one, then prefetch."""
        super()._reset(loader, first_iter)
        self._reset_tasks()
        for index_queue in self._index_queues:
            index_queue.put(_utils.worker._ResumeIteration(self._shared_seed))
        resume_iteration_cnt = self._num_workers
        while resume_iteration_cnt > 0:  # every worker has answered: no result of the last epoch is left
            return_idx, _ = self._get_data()
            if isinstance(return_idx, _utils.worker._ResumeIteration):
                resume_iteration_cnt -= 1
        self._fill_prefetch()

    def _fill_prefetch(self):
        """Sends tasks until prefetch_factor * num_workers are in flight or the sampler runs out."""
        while self._tasks_outstanding < self._prefetch_factor * self._num_workers:
            sent = self._send_idx
            self._try_put_index()
            if self._send_idx == sent:
                break

    def _live_sentinels(self):
        return [w.sentinel for i, w in enumerate(self._workers) if self._workers_status[i]]

    def _try_get_data(self, timeout=_utils.MP_STATUS_CHECK_INTERVAL):
        """(True, result) or (False, None) after `timeout` seconds; RuntimeError if a worker died."""
        reader = getattr(self._data_queue, "_reader", None)
        if reader is not None:
            # Wake on a result or on any active worker's exit, whichever comes first.
            connection.wait([reader, *self._live_sentinels()], timeout)
            timeout = 0
        try:
            return True, self._data_queue.get(timeout=timeout)
        except Exception as e:
            failed_workers = []
            for worker_id, w in enumerate(self._workers):
                if self._workers_status[worker_id] and not w.is_alive():
                    failed_workers.append(w)
                    self._mark_worker_as_unavailable(worker_id)
            if failed_workers:
                pids_str = ", ".join(str(w.pid) for w in failed_workers)
                raise RuntimeError(f"DataLoader worker (pid(s) {pids_str}) exited unexpectedly") from e
            if isinstance(e, queue.Empty):
                return False, None
            raise

    def _get_data(self):
        if self._timeout > 0:
            success, data = self._try_get_data(self._timeout)
            if not success:
                raise RuntimeError(f"DataLoader timed out after {self._timeout} seconds")
            return data
        while True:
            success, data = self._try_get_data()
            if success:
                return data

    def _next_data(self):
        while True:
            # Skip tasks whose worker is gone (an IterableDataset's worker that ran out) and has no result.
            while self._rcvd_idx < self._send_idx:
                info = self._task_info.get(self._rcvd_idx, None)
                if info:
                    worker_id = info[0]
                    if len(info) == 2 or self._workers_status[worker_id]:
                        break
                    del self._task_info[self._rcvd_idx]
                self._rcvd_idx += 1
            else:
                if not self._persistent_workers:
                    self._shutdown_workers()
                raise StopIteration
            if len(self._task_info[self._rcvd_idx]) == 2:  # arrived earlier, out of order
                worker_id, data = self._task_info.pop(self._rcvd_idx)
                self._rcvd_idx += 1
                return self._process_data(data, worker_id)
            idx, data = self._get_data()
            self._tasks_outstanding -= 1
            if self._dataset_kind == _DatasetKind.Iterable and isinstance(
                    data, _utils.worker._IterableDatasetStopIteration):
                if self._persistent_workers:
                    self._workers_status[data.worker_id] = False
                else:
                    self._mark_worker_as_unavailable(data.worker_id)
                self._try_put_index()
                continue
            if idx != self._rcvd_idx:
                if not self._in_order:
                    worker_id = self._task_info.pop(idx)[0]
                    return self._process_data(data, worker_id)
                self._task_info[idx] += (data,)  # keep it until its turn
            else:
                worker_id = self._task_info.pop(idx)[0]
                self._rcvd_idx += 1
                return self._process_data(data, worker_id)

    def _try_put_index(self):
        max_tasks = self._prefetch_factor * self._num_workers
        try:
            index = self._next_index()
        except StopIteration:
            return
        for _ in range(self._num_workers):  # the next active worker (with room, when out of order)
            worker_queue_idx = next(self._worker_queue_idx_cycle)
            if not self._workers_status[worker_queue_idx]:
                continue
            if self._in_order or self._workers_num_tasks[worker_queue_idx] < max_tasks // sum(self._workers_status):
                break
        else:
            return  # no active worker: the IterableDataset is exhausted
        self._index_queues[worker_queue_idx].put((self._send_idx, index))
        self._task_info[self._send_idx] = (worker_queue_idx,)
        self._workers_num_tasks[worker_queue_idx] += 1
        self._tasks_outstanding += 1
        self._send_idx += 1

    def _process_data(self, data, worker_idx):
        self._workers_num_tasks[worker_idx] -= 1
        self._try_put_index()
        if isinstance(data, ExceptionWrapper):
            data.reraise()
        return data

    def _mark_worker_as_unavailable(self, worker_id):
        # The worker gets None (stop); a worker that died never reads it, which is harmless.
        self._index_queues[worker_id].put(None)
        self._workers_status[worker_id] = False

    def _shutdown_workers(self, at_exit=False):
        if _utils is None or _utils.python_exit_status is not False:
            return  # interpreter exit: multiprocessing's exit handler ends the daemonic workers
        if self._shutdown:
            return
        self._shutdown = True
        _live_iterators.discard(self)
        try:
            self._workers_done_event.set()
            for worker_id in range(len(self._workers)):
                if self._persistent_workers or self._workers_status[worker_id]:
                    self._mark_worker_as_unavailable(worker_id)
            # At interpreter exit a worker stuck in dataset code is ended at once, as torch's are (by
            # multiprocessing's exit handler), not waited for: draining stops as soon as nothing moves.
            self._drain_until_workers_exit(_utils.MP_STATUS_CHECK_INTERVAL, _EXIT_PATIENCE if at_exit else None)
            for q in self._index_queues:
                q.cancel_join_thread()
                q.close()
        finally:
            for w in self._workers:
                if w.is_alive():  # stuck (e.g. in the dataset): end it rather than leave it behind
                    w.terminate()
                    w.join(timeout=_utils.MP_STATUS_CHECK_INTERVAL)
            self._discard_results()
            self._worker_result_queue.cancel_join_thread()
            self._worker_result_queue.close()

    def _drain_until_workers_exit(self, timeout, patience=None):
        """Joins the workers, meanwhile reading (and dropping) what they still send: a result left in
        the queue would keep its shared-memory segment alive, and a full pipe would block its worker.
        patience: stop once that long passes with no worker exiting and no result arriving."""
        reader = getattr(self._worker_result_queue, "_reader", None)
        deadline = time.monotonic() + timeout
        alive = [w for w in self._workers if w.is_alive()]
        moved = time.monotonic()  # when a worker last exited or a result last arrived
        while alive:
            now = time.monotonic()
            until = deadline if patience is None else min(deadline, moved + patience)
            if now >= until:
                break
            if reader is None:
                alive[0].join(timeout=min(0.05, until - now))
            else:
                connection.wait([reader, *(w.sentinel for w in alive)], until - now)
                if self._discard_results():
                    moved = time.monotonic()
            still = [w for w in alive if w.is_alive()]
            if len(still) < len(alive):
                moved = time.monotonic()
            alive = still

    def _discard_results(self):
        """Reads and drops the results waiting in the queue; how many there were."""
        reader = getattr(self._worker_result_queue, "_reader", None)
        count = 0
        try:
            while reader is not None and reader.poll(0):
                count += 1
                self._worker_result_queue.get(timeout=0)  # unpickled, then dropped: its segments are freed
        except Exception:  # a result that cannot be unpickled here is dropped all the same
            pass
        return count

    def __del__(self):
        if hasattr(self, "_workers"):  # __init__ may have failed before starting any
            self._shutdown_workers()
