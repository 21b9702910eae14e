"""ember.multiprocessing: tensors and storages travel between processes through shared memory
(written on one side, seen on the other), with both start methods and both sharing strategies;
nothing is left in /dev/shm or among the fds afterwards (spawn: test_multiprocessing_spawn.py)."""
import gc
import multiprocessing
import os
import pickle
import signal
import subprocess
import sys
import time
from multiprocessing.reduction import ForkingPickler
from pathlib import Path

import numpy as np
import pytest

import ember
import ember.multiprocessing as mp
from child_process import child_env
from ember import nn
from ember.multiprocessing import _shared_memory

START_METHODS = ["fork", "spawn"]
STRATEGIES = sorted(mp.get_all_sharing_strategies())
TIMEOUT = 120


@pytest.fixture(params=STRATEGIES)
def strategy(request):
    prev = mp.get_sharing_strategy()
    mp.set_sharing_strategy(request.param)
    yield request.param
    mp.set_sharing_strategy(prev)


def _run(ctx, target, *args):
    p = ctx.Process(target=target, args=args)
    p.start()
    p.join(TIMEOUT)
    assert p.exitcode == 0, f"child exited with {p.exitcode}"


def _close(*queues):
    for q in queues:
        q.close()
        q.join_thread()


def _our_segments(pids):
    return {name for name in os.listdir("/dev/shm") if any(name.startswith(f"ember_{pid}_") for pid in pids)}


# ---------------------------------------------------------------- children (module level: spawn pickles them)
def _fill(t, value):
    t.fill_(value)


def _inspect_and_write(q, r):
    sent = q.get()
    base, view, param, plain = sent["base"], sent["view"], sent["param"], sent["plain"]
    r.put(dict(
        same_storage=view.untyped_storage().data_ptr() == base.untyped_storage().data_ptr(),
        view_geometry=(view.storage_offset(), tuple(view.shape), view.stride()),
        shared=[t.is_shared() for t in (base, view, param, param.grad, plain)],
        param_type=type(param).__name__, param_requires_grad=param.requires_grad,
        plain_requires_grad=plain.requires_grad, plain_is_leaf=plain.is_leaf, plain_grad=plain.grad,
        empty=(tuple(sent["empty"].shape), sent["empty"].dtype), ints=sent["ints"].tolist(),
    ))
    view.fill_(-1)  # through the view: the parent's base changes
    param.grad.add_(1)
    with ember.no_grad():
        param.mul_(2)
    r.put(ember.arange(4, dtype=ember.float64) * 3)  # a tensor made here goes back through shared memory too
    assert q.get() == "done"  # the parent has received it: the memory may be freed here


def _mark_and_report(q, r):
    while (t := q.get()) is not None:
        t[0] = 42.0
        t[-1] = 43.0
        r.put((t.is_shared(), t.numel()))
        del t


def _drop_inherited(box, ptr):
    assert _shared_memory.segment_of(box[0].untyped_storage()) is not None
    box.pop()  # the child's last reference: the mapping dies here; the reference it counts is the parent's
    gc.collect()
    assert ptr not in _shared_memory._segments  # no stale entry: new memory may come at that address


def _train_step(model):
    with ember.no_grad():
        for p in model.parameters():
            p.add_(p.grad)


# ---------------------------------------------------------------- share_memory_ in one process
def test_share_memory_moves_storage_in_place(strategy):
    x = ember.arange(12, dtype=ember.float32).view(3, 4)
    view = x[1:, ::2]
    assert not x.is_shared() and not x.untyped_storage().is_shared()
    old_ptr = x.data_ptr()
    assert x.share_memory_() is x
    assert x.is_shared() and view.is_shared() and x.data_ptr() != old_ptr
    np.testing.assert_array_equal(x.numpy(), np.arange(12, dtype=np.float32).reshape(3, 4))
    ptr = x.data_ptr()
    x.share_memory_()
    assert x.data_ptr() == ptr  # already shared: a no-op
    view.fill_(0)
    assert x.tolist() == [[0, 1, 2, 3], [0, 5, 0, 7], [0, 9, 0, 11]]
    assert x.untyped_storage().share_memory_() is x.untyped_storage()
    empty = ember.zeros(0).share_memory_()
    assert empty.is_shared() and empty.shape == (0,)
    named = _our_segments([os.getpid()])
    assert len(named) == (2 if strategy == "file_system" else 0)  # fds are anonymous
    del x, view, empty
    gc.collect()
    assert not _our_segments([os.getpid()])


def test_new_shared_storage(strategy):
    storage = ember.UntypedStorage._new_shared(24)
    assert isinstance(storage, ember.UntypedStorage) and storage.nbytes() == 24 and storage.is_shared()
    t = ember._utils._rebuild_tensor(storage, 0, (2, 3), (3, 1), ember.float32)
    ember.stack([ember.ones(3), ember.full((3,), 2.0)], out=t)  # a batch collated straight into shared memory
    assert t.tolist() == [[1, 1, 1], [2, 2, 2]] and t.is_shared()
    with pytest.raises(RuntimeError, match="only CPU memory"):
        ember.UntypedStorage._new_shared(8, device="cuda")


def test_storages_round_trip_through_the_forking_pickler(strategy):
    # In one process: the loaded storage maps the same segment anew (by fd or by name).
    storage = ember.arange(5, dtype=ember.int64).untyped_storage()
    loaded = ForkingPickler.loads(ForkingPickler.dumps(storage))
    assert storage.is_shared() and loaded.is_shared() and loaded.nbytes() == 40
    t = ember._utils._rebuild_tensor(loaded, 0, (5,), (1,), ember.int64)
    original = ember._utils._rebuild_tensor(storage, 0, (5,), (1,), ember.int64)
    t[2] = 99
    assert original.tolist() == [0, 1, 99, 3, 4]
    empty = ForkingPickler.loads(ForkingPickler.dumps(ember.zeros(0).untyped_storage()))
    assert empty.nbytes() == 0


def test_module_share_memory_shares_parameters_and_grads():
    model = nn.Linear(3, 2)
    model(ember.ones(1, 3)).sum().backward()
    assert model.share_memory() is model
    for p in model.parameters():
        assert p.is_shared() and p.grad.is_shared() and isinstance(p, nn.Parameter)
    before = [p.detach().clone() for p in model.parameters()]
    grads = [p.grad.clone() for p in model.parameters()]
    _run(multiprocessing.get_context("fork"), _train_step, model)
    for p, b, g in zip(model.parameters(), before, grads):
        assert ember.allclose(p.detach(), b + g)


# ---------------------------------------------------------------- across processes
@pytest.mark.parametrize("method", START_METHODS)
def test_child_writes_into_a_shared_tensor(method, strategy):
    x = ember.zeros(2, 3).share_memory_()
    _run(mp.get_context(method), _fill, x[1], 5.0)  # a view: the child writes into the parent's storage
    assert x.tolist() == [[0, 0, 0], [5, 5, 5]]


@pytest.mark.parametrize("method", START_METHODS)
def test_queue_keeps_views_requires_grad_grad_and_parameters(method):
    ctx = mp.get_context(method)
    q, r = ctx.Queue(), ctx.Queue()
    base = ember.zeros(8)
    param = nn.Parameter(ember.ones(2, 2))
    param.grad = ember.full((2, 2), 0.5)
    plain = ember.ones(3, requires_grad=True)
    p = ctx.Process(target=_inspect_and_write, args=(q, r))
    p.start()
    q.put(dict(base=base, view=base[2:6:2], param=param, plain=plain, empty=ember.zeros(0, 2, dtype=ember.int32),
               ints=ember.arange(3)))
    facts = r.get(timeout=TIMEOUT)
    back = r.get(timeout=TIMEOUT)
    q.put("done")
    p.join(TIMEOUT)
    _close(q, r)
    assert p.exitcode == 0
    assert facts["same_storage"] and facts["view_geometry"] == (2, (2,), (2,))
    assert facts["shared"] == [True] * 5
    assert facts["param_type"] == "Parameter" and facts["param_requires_grad"]
    assert facts["plain_requires_grad"] and facts["plain_is_leaf"] and facts["plain_grad"] is None
    assert facts["empty"] == ((0, 2), ember.int32) and facts["ints"] == [0, 1, 2]
    assert base.tolist() == [0, 0, -1, 0, -1, 0, 0, 0]
    assert param.grad.tolist() == [[1.5, 1.5], [1.5, 1.5]] and param.tolist() == [[2, 2], [2, 2]]
    assert back.tolist() == [0, 3, 6, 9] and back.dtype == ember.float64 and back.is_shared()


@pytest.mark.parametrize("method", START_METHODS)
def test_queue_passes_100mb_without_copying(method):
    ctx = mp.get_context(method)
    q, r = ctx.Queue(), ctx.Queue()
    p = ctx.Process(target=_mark_and_report, args=(q, r))
    p.start()
    q.put(ember.zeros(1))
    r.get(timeout=TIMEOUT)  # the child is up
    x = ember.zeros(25 * 1024 * 1024)  # 100 MB of float32
    start = time.perf_counter()
    x.share_memory_()  # the one copy: into shared memory
    shared = time.perf_counter()
    q.put(x)
    child_shared, numel = r.get(timeout=TIMEOUT)
    sent = time.perf_counter()
    copy = pickle.loads(pickle.dumps(x, protocol=pickle.HIGHEST_PROTOCOL))  # what a copying transfer costs at least
    pickled = time.perf_counter()
    q.put(None)
    p.join(TIMEOUT)
    _close(q, r)
    assert p.exitcode == 0 and child_shared and numel == x.numel()
    assert x[0].item() == 42.0 and x[-1].item() == 43.0  # the child wrote into our memory
    assert copy[0].item() == 42.0 and copy.data_ptr() != x.data_ptr()
    print(f"\n[{method}] 100 MB tensor: share_memory_ {shared - start:.3f} s, Queue put -> child get -> reply "
          f"{sent - shared:.4f} s, pickle dumps+loads copy {pickled - sent:.3f} s")


@pytest.mark.parametrize("method", START_METHODS)
def test_nothing_left_in_dev_shm_or_among_fds(method, strategy):
    ctx = mp.get_context(method)

    def exchange():
        q, r = ctx.Queue(), ctx.Queue()
        p = ctx.Process(target=_mark_and_report, args=(q, r))
        p.start()
        tensors = [ember.ones(1000) * i for i in range(3)]
        for t in tensors:
            q.put(t)
            assert r.get(timeout=TIMEOUT) == (True, 1000)
        q.put(None)
        p.join(TIMEOUT)
        assert p.exitcode == 0 and all(t[0].item() == 42.0 for t in tensors)
        assert len(_our_segments([os.getpid(), p.pid])) == (3 if strategy == "file_system" else 0)
        _close(q, r)
        return p.pid

    exchange()  # the first run starts what stays (the fd sharer's socket, the resource tracker)
    gc.collect()
    fds = len(os.listdir("/proc/self/fd"))
    child = exchange()
    gc.collect()
    # Only this test's processes' segments: another program on the machine may be sharing tensors now.
    assert not _our_segments([os.getpid(), child])
    assert len(os.listdir("/proc/self/fd")) == fds


def test_segment_of_a_dead_child_is_removed_with_its_last_user():
    # file_system: a child's tensor outlives the child while the parent holds it, then goes.
    ctx = mp.get_context("fork")
    prev = mp.get_sharing_strategy()
    mp.set_sharing_strategy("file_system")
    try:
        q, r = ctx.Queue(), ctx.Queue()
        p = ctx.Process(target=_inspect_and_write, args=(q, r))
        p.start()
        param = nn.Parameter(ember.ones(1))
        param.grad = ember.ones(1)
        q.put(dict(base=ember.zeros(8), view=ember.zeros(2), param=param, plain=ember.ones(1),
                   empty=ember.zeros(0), ints=ember.arange(1)))
        r.get(timeout=TIMEOUT)
        back = r.get(timeout=TIMEOUT)
        q.put("done")
        p.join(TIMEOUT)
        _close(q, r)
        assert _our_segments([p.pid])  # the child made it; we hold the last reference
        assert back.tolist() == [0, 3, 6, 9]
        del back
        gc.collect()
        assert not _our_segments([p.pid])
    finally:
        mp.set_sharing_strategy(prev)


def test_forked_child_does_not_trust_an_inherited_segment_that_died(strategy):
    box = [ember.ones(1000).share_memory_()]
    ptr = box[0].untyped_storage().data_ptr()
    _run(multiprocessing.get_context("fork"), _drop_inherited, box, ptr)
    assert box[0].is_shared() and box[0].sum().item() == 1000
    segment = _shared_memory.segment_of(box[0].untyped_storage())
    if strategy == "file_system":  # still only ours
        count = Path(f"/dev/shm/{segment.name}").read_bytes()[-8:]
        assert int.from_bytes(count, "little") == 1


# ---------------------------------------------------------------- API and errors
def test_drop_in_for_multiprocessing():
    assert set(multiprocessing.__all__) <= set(mp.__all__)
    assert {"set_sharing_strategy", "get_sharing_strategy", "get_all_sharing_strategies"} <= set(mp.__all__)
    assert mp.Queue is not None and mp.get_context("spawn").get_start_method() == "spawn"
    assert mp.cpu_count() == multiprocessing.cpu_count()
    assert mp.get_all_sharing_strategies() == {"file_descriptor", "file_system"}
    assert mp.get_sharing_strategy() == "file_descriptor"  # the default on Linux


def test_sharing_strategy_errors():
    with pytest.raises(AssertionError, match="invalid sharing strategy 'bogus', expected one of"):
        mp.set_sharing_strategy("bogus")
    assert mp.get_sharing_strategy() == "file_descriptor"


def test_non_leaf_requiring_grad_is_refused():
    y = ember.ones(2, requires_grad=True) * 2
    with pytest.raises(RuntimeError, match="Cowardly refusing to serialize non-leaf tensor which requires_grad"):
        ForkingPickler.dumps(y)
    assert ForkingPickler.loads(ForkingPickler.dumps(y.detach())).tolist() == [2, 2]


def test_bad_segment_names_are_refused():
    from ember.multiprocessing import reductions
    with pytest.raises(RuntimeError, match="no longer exists"):
        reductions.rebuild_storage_filename(ember.UntypedStorage, f"ember_{os.getpid()}_missing", 8)
    with pytest.raises(RuntimeError, match="invalid shared memory segment name"):
        reductions.rebuild_storage_filename(ember.UntypedStorage, "../etc/passwd", 8)


@pytest.mark.skipif(not ember.cuda.is_available(), reason="needs a GPU")
def test_cuda_tensors_are_refused():
    t = ember.zeros(2, device="cuda")
    with pytest.raises(RuntimeError, match="no CUDA IPC"):
        ForkingPickler.dumps(t)
    with pytest.raises(RuntimeError, match="no CUDA IPC"):
        t.share_memory_()
    assert not t.is_shared()


_IMPORT_ORDER = """
import sys, ember
from multiprocessing.reduction import ForkingPickler
from pathlib import Path
assert 'ember.multiprocessing' not in sys.modules
if sys.argv[1] == 'nn-first':
    from ember import nn
assert ember.multiprocessing.get_sharing_strategy() == 'file_descriptor'
assert sys.argv[1] == 'nn-first' or 'ember.nn' not in sys.modules  # ember.nn stays unloaded
from ember import nn
assert ForkingPickler._extra_reducers[nn.Parameter] is ForkingPickler._extra_reducers[ember.Tensor]
print('ok')
"""


@pytest.mark.parametrize("order", ["nn-first", "multiprocessing-first"])
def test_lazy_imports_and_parameter_reduction_in_either_order(order):
    out = subprocess.run([sys.executable, "-c", _IMPORT_ORDER, order], capture_output=True, text=True,
                         timeout=TIMEOUT, env=child_env())
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr


def test_strategies_and_errors_match_pytorch():
    torch_mp = pytest.importorskip("torch.multiprocessing")
    assert mp.get_all_sharing_strategies() == torch_mp.get_all_sharing_strategies()
    assert mp.get_sharing_strategy() == torch_mp.get_sharing_strategy()
    messages = []
    for module in (mp, torch_mp):
        with pytest.raises(AssertionError) as info:
            module.set_sharing_strategy("bogus")
        messages.append(str(info.value))
    assert messages[0] == messages[1]


_FILE_SYSTEM_SCRIPT = """
import os, signal, sys
import ember, ember.multiprocessing as mp

def make_and_send(r):
    r.put(ember.arange(4.0))

def make_and_die(r):
    t = ember.ones(3).share_memory_()
    r.put(sorted(n for n in os.listdir("/dev/shm") if n.startswith(f"ember_{os.getpid()}_")))
    r.close(); r.join_thread()
    os.kill(os.getpid(), signal.SIGKILL)

if __name__ == "__main__":
    mp.set_sharing_strategy("file_system")
    ctx = mp.get_context("fork")
    r = ctx.Queue()
    p = ctx.Process(target=make_and_send if sys.argv[1] == "send" else make_and_die, args=(r,))
    p.start()
    got = r.get(timeout=60)
    p.join(60)
    print(got.tolist() if sys.argv[1] == "send" else " ".join(got), p.exitcode)
"""


_FORKSERVER_SCRIPT = """
import gc, os
import ember, ember.multiprocessing as mp

def fill(t):
    t.fill_(3)

if __name__ == "__main__":
    for strategy in ("file_descriptor", "file_system"):
        mp.set_sharing_strategy(strategy)
        x = ember.zeros(4)
        p = mp.get_context("forkserver").Process(target=fill, args=(x,))
        p.start()
        p.join(60)
        print(strategy, p.exitcode, x.tolist())
        del x
        gc.collect()
    print(sorted(n for n in os.listdir("/dev/shm") if n.startswith(f"ember_{os.getpid()}_")))
"""


def test_forkserver_children_give_their_references_back(tmp_path):
    # A forkserver child drops the finalizers made before it starts (its arguments'): ours survive that.
    script = tmp_path / "fsrv.py"
    script.write_text(_FORKSERVER_SCRIPT)
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=TIMEOUT,
                         env=child_env())
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == ["file_descriptor 0 [3.0, 3.0, 3.0, 3.0]",
                                       "file_system 0 [3.0, 3.0, 3.0, 3.0]", "[]"]
    assert "resource_tracker" not in out.stderr, out.stderr


def _run_script(tmp_path, mode):
    script = tmp_path / "fs.py"
    script.write_text(_FILE_SYSTEM_SCRIPT)
    return subprocess.run([sys.executable, str(script), mode], capture_output=True, text=True, timeout=TIMEOUT,
                          env=child_env())


def test_file_system_segments_made_in_a_child_leave_no_tracker_noise(tmp_path):
    # The child makes the segment, the parent unlinks it: both talk to the one resource tracker.
    out = _run_script(tmp_path, "send")
    assert out.returncode == 0 and out.stdout.split() == ["[0.0,", "1.0,", "2.0,", "3.0]", "0"], out.stderr
    assert "resource_tracker" not in out.stderr and "Traceback" not in out.stderr, out.stderr


def test_file_system_segment_of_a_killed_process_is_unlinked(tmp_path):
    out = _run_script(tmp_path, "die")
    names, code = out.stdout.split()[:-1], out.stdout.split()[-1]
    assert out.returncode == 0 and code == str(-signal.SIGKILL) and len(names) == 1, out.stderr
    deadline = time.monotonic() + 30
    while os.path.exists(f"/dev/shm/{names[0]}") and time.monotonic() < deadline:
        time.sleep(0.1)  # the tracker cleans up once every process using it has gone
    assert not os.path.exists(f"/dev/shm/{names[0]}")
