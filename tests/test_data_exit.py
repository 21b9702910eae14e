"""DataLoader workers at interpreter exit: one stuck in dataset code is ended at once (as torch's are,
by multiprocessing's exit handler), not waited for; idle ones still exit cleanly; nothing is left."""
import os
import subprocess
import sys
import textwrap
import time

import pytest

from child_process import child_env

SCRIPT = """
    import sys, time
    from {module}.utils.data import DataLoader

    class StuckFrom:
        # Items from `first` on never come: the worker sits in __getitem__.
        def __init__(self, n, first):
            self.n, self.first = n, first

        def __getitem__(self, i):
            if i >= self.first:
                time.sleep(600)
            return i

        def __len__(self):
            return self.n

    loader = DataLoader(StuckFrom(100, {first}), batch_size=1, num_workers={workers}, {extra})
    it = iter(loader)
    assert [next(it).tolist() for _ in range({first})] == [[i] for i in range({first})]
    print(" ".join(str(w.pid) for w in it._workers), flush=True)
    time.sleep(0.5)  # the workers reach the stuck items
    print(time.monotonic(), flush=True)
"""


def _exit_seconds(module, first, workers, extra=""):
    """Runs SCRIPT; returns the workers' pids and the seconds from its last line to the process's end."""
    code = textwrap.dedent(SCRIPT.format(module=module, first=first, workers=workers, extra=extra))
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          env=child_env())
    ended = time.monotonic()
    assert proc.returncode == 0, proc.stderr
    pids_line, time_line = proc.stdout.split("\n")[:2]
    assert "Traceback" not in proc.stderr, proc.stderr
    return [int(p) for p in pids_line.split()], ended - float(time_line)


def _gone(pids, seconds=15):
    deadline = time.monotonic() + seconds
    while any(os.path.exists(f"/proc/{p}") for p in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    return [p for p in pids if os.path.exists(f"/proc/{p}")]


@pytest.mark.parametrize("workers,extra", [(1, ""), (2, ""), (2, "persistent_workers=True")])
def test_worker_stuck_in_dataset_code_is_ended_at_exit(workers, extra):
    pids, seconds = _exit_seconds("ember", 2, workers, extra)
    # Not the 5 s status-check interval the drain used to wait (interpreter teardown is the rest).
    assert seconds < 3.0, seconds
    assert len(pids) == workers and _gone(pids) == []
    assert not [n for n in os.listdir("/dev/shm") if n.startswith("ember_") and int(n.split("_")[1]) in pids]

