"""DataLoader worker processes (issue 13, point 2): results as in the main
process with 1 and 2 workers under fork and spawn, order (and in_order=False),
seeds, worker_init_fn, IterableDataset sharding, errors re-raised with the
worker's traceback, a dead worker reported, timeout, persistent workers, and no
process left behind (after break, deletion, interpreter exit, a killed parent)."""
import gc
import multiprocessing
import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

import ember
import data_toys
from child_process import child_env
from data_toys import (DiesAt, FailsAt, Images, InitMarked, KeyErrorAt, Range, Sleeps, Stream, WorkerIds,
                       failing_init, pid_collate, record_init)
from ember.utils.data import DataLoader
from ember.utils.data._utils.worker import _generate_state

CONTEXTS = ["fork", "spawn"]


@pytest.fixture(autouse=True)
def no_leftover_workers():
    yield
    gc.collect()  # an exception's traceback keeps its iterator (and so its workers) in a reference cycle
    deadline = time.monotonic() + 10
    while multiprocessing.active_children() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert multiprocessing.active_children() == []


def values(loader):
    return [b.tolist() if hasattr(b, "tolist") else b for b in loader]


def pid_gone(pid):
    """True once `pid` neither runs nor lingers as a zombie (which keeps its /proc entry)."""
    return not os.path.exists(f"/proc/{pid}")


def segments_of(pids):
    """The /dev/shm segments that processes `pids` created (ember names them ember_<pid>_<random>)."""
    return [n for n in os.listdir("/dev/shm") if n.startswith("ember_") and int(n.split("_")[1]) in pids]


def wait_no_segments(pids, seconds=15):
    deadline = time.monotonic() + seconds
    while segments_of(pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    return segments_of(pids)


def wait_gone(pids, seconds=15):
    deadline = time.monotonic() + seconds
    while not all(pid_gone(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    return [p for p in pids if not pid_gone(p)]


@pytest.mark.parametrize("context", CONTEXTS)
@pytest.mark.parametrize("workers", [1, 2])
def test_same_batches_as_main_process(context, workers):
    expected = [[i, i + 1, i + 2][: 10 - i] for i in range(0, 10, 3)]
    loader = DataLoader(Range(10), batch_size=3, num_workers=workers, multiprocessing_context=context)
    assert values(loader) == expected
    images, labels = next(iter(DataLoader(Images(6), batch_size=4, num_workers=workers,
                                          multiprocessing_context=context)))
    assert images.shape == (4, 3, 4, 4) and images[3].flatten().tolist() == [6.0] * 48
    assert labels.tolist() == [0, 1, 2, 0]


@pytest.mark.parametrize("workers", [1, 2, 3])
def test_order_kept_with_uneven_work(workers):
    loader = DataLoader(Range(24, slow_every=4, delay=0.05), batch_size=2, num_workers=workers, prefetch_factor=3)
    assert values(loader) == [[i, i + 1] for i in range(0, 24, 2)]
    loader = DataLoader(Range(9, slow_every=2, delay=0.02), batch_size=None, num_workers=workers)
    assert values(loader) == list(range(9))


def test_out_of_order():
    # Worker 0's first batch sleeps; worker 1's is ready first and comes first.
    loader = DataLoader(Range(8, slow_every=8, delay=1.0), batch_size=2, num_workers=2, in_order=False)
    got = values(loader)
    assert got[0] == [2, 3] and sorted(map(tuple, got)) == [(0, 1), (2, 3), (4, 5), (6, 7)]


def test_batches_collated_in_workers_and_shuffle():
    pids = {pid for pid, _ in DataLoader(Range(8), batch_size=2, num_workers=2, collate_fn=pid_collate)}
    assert len(pids) == 2 and os.getpid() not in pids
    g = ember.Generator().manual_seed(4)
    shuffled = sum(values(DataLoader(Range(20), batch_size=3, shuffle=True, num_workers=2, generator=g)), [])
    g.manual_seed(4)
    same = sum(values(DataLoader(Range(20), batch_size=3, shuffle=True, num_workers=0, generator=g)), [])
    assert sorted(shuffled) == list(range(20))
    # The loader draws its base seed first, then the sampler its order: the same with or without workers.
    assert shuffled == same


@pytest.mark.parametrize("context", CONTEXTS)
def test_worker_info_and_seeds(context):
    g = ember.Generator().manual_seed(11)
    rows = list(DataLoader(WorkerIds(4), batch_size=None, num_workers=2, generator=g, multiprocessing_context=context))
    base_seed = ember.empty((), dtype=ember.int64).random_(generator=ember.Generator().manual_seed(11)).item()
    assert [r["id"] for r in rows] == [0, 1, 0, 1] and all(r["num_workers"] == 2 for r in rows)
    assert [r["seed"] for r in rows] == [base_seed, base_seed + 1, base_seed, base_seed + 1]
    assert rows[0]["pid"] != rows[1]["pid"] and all(r["same_dataset"] for r in rows)
    import random
    import numpy as np
    for r in rows[:2]:  # each worker's first draws, from its seeds as PyTorch sets them
        assert r["random"] == random.Random(r["seed"]).random()
        assert r["numpy"] == np.random.RandomState(_generate_state(base_seed, r["id"])).rand()
        assert r["ember"] == ember.rand(1, generator=ember.Generator().manual_seed(r["seed"])).item()
    again = list(DataLoader(WorkerIds(4), batch_size=None, num_workers=2, generator=g.manual_seed(11)))
    assert [r["random"] for r in again] == [r["random"] for r in rows]


def test_generate_state_against_torch():
    torch = pytest.importorskip("torch")
    from torch.utils.data._utils.worker import _generate_state as torch_generate_state
    for base_seed in (0, 1, 2**32 + 5, 2**63 - 1, 7846449035093816799):
        for worker_id in (0, 1, 7):
            assert _generate_state(base_seed, worker_id) == torch_generate_state(base_seed, worker_id)


def test_worker_init_fn():
    rows = values(DataLoader(InitMarked(), batch_size=None, num_workers=2, worker_init_fn=record_init))
    assert rows == [[0, 0], [1, 1], [2, 0], [3, 1]]
    with pytest.raises(RuntimeError, match="Caught RuntimeError in DataLoader worker process 0.") as info:
        list(DataLoader(Range(4), num_workers=1, worker_init_fn=failing_init))
    assert "init failed in 0" in str(info.value)


@pytest.mark.parametrize("workers", [1, 2, 3])
def test_iterable_dataset_sharding(workers):
    items = sorted(sum(values(DataLoader(Stream(0, 10), batch_size=2, num_workers=workers)), []))
    assert items == list(range(10))  # each worker its own share, nothing twice
    items = sorted(values(DataLoader(Stream(0, 3, shard=False), batch_size=None, num_workers=2)))
    assert items == [0, 0, 1, 1, 2, 2]  # unsharded: every worker yields everything, as PyTorch documents
    batches = values(DataLoader(Stream(0, 10), batch_size=4, drop_last=True, num_workers=2))
    assert sorted(sum(batches, [])) == [0, 1, 2, 3, 5, 6, 7, 8]  # shares 0-4 and 5-9, each with one full batch


@pytest.mark.parametrize("context", CONTEXTS)
def test_worker_exception_reraised_with_traceback(context):
    loader = DataLoader(FailsAt(8, bad=5), batch_size=2, num_workers=2, multiprocessing_context=context)
    it = iter(loader)
    assert next(it).tolist() == [0, 1] and next(it).tolist() == [2, 3]
    with pytest.raises(ValueError) as info:
        next(it)
    text = str(info.value)
    assert text.startswith("Caught ValueError in DataLoader worker process 0.\nOriginal Traceback (most recent "
                           "call last):\n")
    assert "data_toys.py" in text and "in __getitem__" in text and text.rstrip().endswith("ValueError: bad sample 5")
    assert next(it).tolist() == [6, 7]  # the loader goes on after a failed batch, as PyTorch's
    del it
    with pytest.raises(KeyError) as info:
        list(DataLoader(KeyErrorAt(4, bad=0), num_workers=1))
    assert "Caught KeyError in DataLoader worker process 0.\nOriginal Traceback" in str(info.value)
    assert "\\n" not in str(info.value)  # newlines kept, not a repr


def test_dead_worker_reported():
    loader = DataLoader(DiesAt(8, bad=4), batch_size=2, num_workers=2)
    it = iter(loader)
    pids = [w.pid for w in it._workers]
    start = time.monotonic()
    with pytest.raises(RuntimeError, match=r"DataLoader worker \(pid\(s\) \d+\) exited unexpectedly"):
        list(it)
    # Seen through its exit sentinel, well before the 5 s polling interval.
    assert time.monotonic() - start < 4.0
    del it
    assert wait_gone(pids) == []


def test_timeout():
    loader = DataLoader(Sleeps(4, 1.0), num_workers=1, timeout=0.2)
    with pytest.raises(RuntimeError, match=r"DataLoader timed out after 0.2 seconds"):
        next(iter(loader))


def test_break_and_delete_leave_no_process():
    loader = DataLoader(Range(100), batch_size=2, num_workers=2)
    it = iter(loader)
    next(it)
    pids = [w.pid for w in it._workers]
    assert all(not pid_gone(p) for p in pids)
    for i, batch in enumerate(it):
        if i == 2:
            break
    del it, batch
    assert wait_gone(pids, 5) == []
    assert segments_of(pids) == []  # the batches in flight were drained and freed
    loader = DataLoader(Images(40), batch_size=4, num_workers=2, prefetch_factor=4)
    it = iter(loader)
    kept = next(it)  # a batch still alive after its loader is gone
    pids = [w.pid for w in it._workers]
    del it
    assert wait_gone(pids, 5) == [] and len(segments_of(pids)) == 2  # only the kept batch's two tensors
    assert kept[1].tolist() == [0, 1, 2, 0]
    del kept
    gc.collect()
    assert segments_of(pids) == []
    for _ in DataLoader(Range(6), num_workers=2):  # an epoch run to its end shuts its workers down
        pass


def test_persistent_workers():
    loader = DataLoader(Range(6), batch_size=2, num_workers=2, persistent_workers=True, collate_fn=pid_collate)
    first = list(loader)
    second = list(loader)
    assert [b for _, b in first] == [b for _, b in second] == [[0, 1], [2, 3], [4, 5]]
    assert {p for p, _ in first} == {p for p, _ in second} and len({p for p, _ in first}) == 2  # same workers
    it = iter(loader)
    next(it)  # a partial epoch: the next one starts afresh
    assert [b for _, b in loader] == [[0, 1], [2, 3], [4, 5]]
    pids = [w.pid for w in loader._iterator._workers]
    del it, loader
    assert wait_gone(pids, 10) == [] and segments_of(pids) == []
    loader = DataLoader(Stream(0, 5), batch_size=2, num_workers=2, persistent_workers=True)
    assert sorted(sum(values(loader), [])) == sorted(sum(values(loader), [])) == [0, 1, 2, 3, 4]
    del loader


SCRIPT = """
    import os, sys, time
    sys.path.insert(0, {tests!r})
    from ember.utils.data import DataLoader
    from data_toys import Images, Range
    loader = DataLoader({dataset}, batch_size=2, num_workers=2, prefetch_factor=4, {extra})
    it = iter(loader)
    next(it)
    print(" ".join(str(w.pid) for w in it._workers), flush=True)
    {end}
"""


@pytest.mark.parametrize("extra", ["", "persistent_workers=True", "multiprocessing_context='spawn'"])
def test_interpreter_exit_leaves_no_process(extra):
    code = SCRIPT.format(tests=os.path.dirname(__file__), dataset="Images(1000)", extra=extra, end="")
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          timeout=120, env=child_env())
    assert proc.returncode == 0, proc.stderr
    pids = [int(p) for p in proc.stdout.split()]
    assert len(pids) == 2 and wait_gone(pids) == []
    assert segments_of(pids) == []  # the batches in flight at exit were drained, not left in /dev/shm
    assert "Traceback" not in proc.stderr and "leaked" not in proc.stderr


def test_killed_parent_leaves_no_process():
    # A parent killed outright runs no exit handler: the workers notice they were orphaned and exit.
    code = SCRIPT.format(tests=os.path.dirname(__file__), dataset="Images(1000)", extra="",
                         end="time.sleep(60)")
    proc = subprocess.Popen([sys.executable, "-c", textwrap.dedent(code)], stdout=subprocess.PIPE, text=True,
                            env=child_env())
    try:
        pids = [int(p) for p in proc.stdout.readline().split()]
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        proc.stdout.close()
    assert len(pids) == 2 and wait_gone(pids, 20) == []
    # What they were sending is lost with the parent: the resource tracker removes it when they are all gone.
    assert wait_no_segments(pids, 20) == []


def test_against_torch():
    torch = pytest.importorskip("torch")
    tdata = torch.utils.data
    methods = {k: v for k, v in vars(Stream).items() if callable(v)}
    TorchStream = type("TorchStream", (tdata.IterableDataset,), methods)
    for kwargs in ({"batch_size": 3}, {"batch_size": 4, "drop_last": True}, {"batch_size": None}):
        ours = values(DataLoader(Range(10), num_workers=2, **kwargs))
        assert ours == values(tdata.DataLoader(Range(10), num_workers=2, **kwargs))
    for kwargs in ({"batch_size": 2}, {"batch_size": 4, "drop_last": True}):
        ours = sorted(sum(values(DataLoader(Stream(0, 10), num_workers=2, **kwargs)), []))
        data_toys.get_worker_info = tdata.get_worker_info  # the torch loader's workers shard by torch's info
        try:
            theirs = sorted(sum(values(tdata.DataLoader(TorchStream(0, 10), num_workers=2, **kwargs)), []))
        finally:
            data_toys.get_worker_info = ember.utils.data.get_worker_info
        assert ours == theirs
    with pytest.raises(ValueError) as theirs:
        list(tdata.DataLoader(FailsAt(4, bad=1), num_workers=1))
    with pytest.raises(ValueError) as ours:
        list(DataLoader(FailsAt(4, bad=1), num_workers=1))
    first_line = str(theirs.value).splitlines()[:2]
    assert str(ours.value).splitlines()[:2] == first_line



@pytest.mark.parametrize("context", CONTEXTS)
def test_batches_travel_through_shared_memory(context):
    loader = DataLoader(Images(8), batch_size=4, num_workers=2, multiprocessing_context=context,
                        collate_fn=data_toys.shared_flags)
    for images, labels, images_shared_in_worker, labels_shared_in_worker in loader:
        assert images_shared_in_worker  # tensors are stacked straight into shared memory
        assert not labels_shared_in_worker  # Python ints make an ordinary tensor (moved when sent), as in PyTorch
        assert images.is_shared() and labels.is_shared()  # and received as shared memory, not a pickled copy
        assert images.shape == (4, 3, 4, 4) and labels.tolist()[:2] in ([0, 1], [1, 2])
    images, _ = next(iter(DataLoader(Images(4), batch_size=2)))
    assert not images.is_shared()  # the main process stacks into ordinary memory


def test_file_system_strategy_leaves_no_segment():
    import ember.multiprocessing as emp
    before = {n for n in os.listdir("/dev/shm") if n.startswith("ember_")}
    previous = emp.get_sharing_strategy()
    emp.set_sharing_strategy("file_system")
    try:
        batches = list(DataLoader(Images(12), batch_size=4, num_workers=2))
        assert [b[1].tolist() for b in batches] == [[0, 1, 2, 0], [1, 2, 0, 1], [2, 0, 1, 2]]
        assert all(b[0].is_shared() for b in batches)
        del batches
        gc.collect()
    finally:
        emp.set_sharing_strategy(previous)
    after = {n for n in os.listdir("/dev/shm") if n.startswith("ember_")}
    assert after - before == set()


@pytest.mark.parametrize("context", CONTEXTS)
def test_tensor_dataset_and_batch_sampler(context):
    x = ember.arange(20.).reshape(10, 2)
    dataset = ember.utils.data.TensorDataset(x, ember.arange(10))
    loader = DataLoader(dataset, batch_sampler=[[9, 0], [4], [1, 2, 3]], num_workers=2, multiprocessing_context=context)
    got = [(a.tolist(), b.tolist()) for a, b in loader]
    assert got == [([[18., 19.], [0., 1.]], [9, 0]), ([[8., 9.]], [4]), ([[2., 3.], [4., 5.], [6., 7.]], [1, 2, 3])]
    assert x.tolist()[3] == [6., 7.]  # the dataset's tensors are intact after the workers read them


def test_unpicklable_arguments_under_spawn():
    with pytest.warns(UserWarning, match="Got pickle error when attempting to start a worker Process"):
        with pytest.raises((AttributeError, TypeError, __import__("pickle").PicklingError)):
            list(DataLoader(Range(4), num_workers=1, collate_fn=lambda batch: batch, multiprocessing_context="spawn"))


def test_worker_info_is_frozen():
    import dataclasses
    from ember.utils.data._utils.worker import WorkerInfo
    info = WorkerInfo(id=1, num_workers=2, seed=5, dataset=None)
    with pytest.raises(dataclasses.FrozenInstanceError):
        info.id = 3
    assert (info.rng, info.worker_method) == (None, "multiprocessing")
