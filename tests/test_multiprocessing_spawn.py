"""ember.multiprocessing.spawn and start_processes: fn(i, *args) runs in each process; a child's
exception comes back as ProcessRaisedException with its traceback, an exit code or signal as
ProcessExitedException; the traceback files are removed."""
import os
import pickle
import signal
import tempfile

import pytest

import ember
import ember.multiprocessing as mp


# ---------------------------------------------------------------- children (module level: spawn pickles them)
def _write_index(i, shared):
    shared[i] = i + 1


def _raise(i):
    if i == 1:
        raise ValueError(f"boom from {i}")


def _exit_with(i, code):
    os._exit(code)


def _kill_self(i):
    os.kill(os.getpid(), signal.SIGKILL)


def _nothing(i):
    pass


# ---------------------------------------------------------------- tests
def test_spawn_runs_fn_with_each_index():
    shared = ember.zeros(3).share_memory_()
    assert mp.spawn(_write_index, args=(shared,), nprocs=2) is None
    assert shared.tolist() == [1, 2, 0]
    shared.zero_()
    mp.start_processes(_write_index, args=(shared,), nprocs=3, start_method="fork")
    assert shared.tolist() == [1, 2, 3]


def test_spawn_join_false_returns_a_process_context():
    context = mp.spawn(_nothing, nprocs=2, join=False)
    assert isinstance(context, mp.ProcessContext) and len(context.pids()) == 2
    while not context.join():
        pass
    assert context.join() and all(p.exitcode == 0 for p in context.processes)


def _error_files():
    return {n for n in os.listdir(tempfile.gettempdir()) if n.startswith("ember-errorfile-")}


def test_spawn_reraises_a_childs_exception_with_its_traceback():
    before = _error_files()
    with pytest.raises(mp.ProcessRaisedException) as info:
        mp.spawn(_raise, nprocs=2)
    err = info.value
    assert err.error_index == 1 and isinstance(err.error_pid, int)
    assert "-- Process 1 terminated with the following error:" in str(err)
    assert "Traceback (most recent call last)" in str(err) and "in _raise" in str(err)
    assert "ValueError: boom from 1" in str(err)
    assert pickle.loads(pickle.dumps(err)).error_index == 1
    assert _error_files() == before  # read and removed


def test_spawn_reports_exit_codes_and_signals():
    with pytest.raises(mp.ProcessExitedException, match="process 0 terminated with exit code 3") as info:
        mp.start_processes(_exit_with, args=(3,), start_method="fork")
    assert info.value.exit_code == 3
    with pytest.raises(mp.ProcessExitedException, match="process 0 terminated with signal SIGKILL") as info:
        mp.start_processes(_kill_self, start_method="fork")
    assert info.value.exit_code == -signal.SIGKILL and info.value.signal_name == "SIGKILL"


def test_spawn_other_start_method_warns_and_spawns():
    with pytest.warns(FutureWarning, match="only supports start_method=spawn"):
        mp.spawn(_nothing, start_method="fork")
