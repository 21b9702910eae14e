"""ember.multiprocessing's storage cache, as torch's shared_cache: a storage that arrives twice (in two
messages) or comes back to its sender is the storage already mapped there, so tensors that shared a
storage in the sender share it in the receiver; a dead one is mapped anew; nothing leaks."""
import gc
import os
from multiprocessing.reduction import ForkingPickler

import pytest

import ember
import ember.multiprocessing as mp
from ember.multiprocessing import _shared_memory
from test_multiprocessing import TIMEOUT, strategy  # noqa: F401  (the sharing-strategy fixture)


def _our_segments(pids):
    return {name for name in os.listdir("/dev/shm") if any(name.startswith(f"ember_{pid}_") for pid in pids)}


def _send_base_and_views(r, q):
    base = ember.arange(6, dtype=ember.float32)
    r.put(base)
    r.put(base[2:4])  # a view, in a message of its own
    r.put(base)
    assert q.get(timeout=TIMEOUT) == "again"  # the parent has dropped the three: the cache entry is dead
    r.put(base[1:])
    assert q.get(timeout=TIMEOUT) == "done"


def test_one_process_round_trip_gives_back_the_same_storage(strategy):
    storage = ember.arange(5, dtype=ember.int64).untyped_storage()
    first = ForkingPickler.loads(ForkingPickler.dumps(storage))
    second = ForkingPickler.loads(ForkingPickler.dumps(storage))
    assert first.data_ptr() == second.data_ptr() == storage.data_ptr()
    t = ember.arange(4.0)
    back = ForkingPickler.loads(ForkingPickler.dumps(t[1:3]))
    assert back.data_ptr() == t.data_ptr() + 4 and back.untyped_storage().data_ptr() == t.untyped_storage().data_ptr()
    torch = pytest.importorskip("torch")
    s = torch.arange(5).untyped_storage()
    assert ForkingPickler.loads(ForkingPickler.dumps(s)).data_ptr() == s.data_ptr()  # torch does the same


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_storage_received_twice_is_mapped_once(method, strategy):
    ctx = mp.get_context(method)
    r, q = ctx.Queue(), ctx.Queue()
    p = ctx.Process(target=_send_base_and_views, args=(r, q))
    p.start()
    try:
        a, view, b = (r.get(timeout=TIMEOUT) for _ in range(3))
        storage_ptr = a.untyped_storage().data_ptr()
        assert view.untyped_storage().data_ptr() == storage_ptr == b.untyped_storage().data_ptr()
        assert view.data_ptr() == a.data_ptr() + 8 and view.storage_offset() == 2
        gc.collect()  # earlier tests' garbage must not leave the registry during the count below
        mapped = len(_shared_memory._segments)
        view[0] = 20.0
        assert a.tolist() == b.tolist() == [0, 1, 20, 3, 4, 5]
        del a, view, b
        gc.collect()
        assert len(_shared_memory._segments) == mapped - 1  # one mapping for the three, gone with them
        q.put("again")
        tail = r.get(timeout=TIMEOUT)  # the cached entry is dead: mapped anew, the child's memory all the same
        assert tail.tolist() == [1, 20, 3, 4, 5] and tail.storage_offset() == 1
        del tail
        gc.collect()
        q.put("done")
        p.join(TIMEOUT)
        assert p.exitcode == 0
    finally:
        if p.is_alive():
            p.kill()
            p.join()
        for queue in (r, q):
            queue.close()
            queue.join_thread()
    assert not _our_segments({p.pid, os.getpid()})  # each message's reference was given back


def test_cache_drops_entries_of_dead_storages(strategy):
    from ember.multiprocessing import reductions
    for _ in range(300):
        ForkingPickler.loads(ForkingPickler.dumps(ember.zeros(3).untyped_storage()))
    gc.collect()
    alive = [k for k, segment in reductions._storage_cache.items() if segment.mapping() is not None]
    assert len(reductions._storage_cache) < 300 and len(alive) <= 2
    assert not _our_segments({os.getpid()})
