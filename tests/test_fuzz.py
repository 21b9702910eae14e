"""Fuzzing the public API (issue 8, point 7): seeded batches of bad and edge
calls (tests/fuzz_calls.py) run in child processes; any Python exception is a
clean refusal, but a child killed by a signal or one that stops making
progress fails the test, naming the call and the seed.

Each child's address space is capped, so a legal but enormous request ends in
ember's "can't allocate memory" RuntimeError instead of taking the machine's
memory. CI runs a bounded number of calls; `--long` runs many more."""
import os
import subprocess
import sys

import pytest

from child_process import child_env, limit_address_space, run_isolated
from fuzz_calls import MEMORY_LIMIT

FUZZ_SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fuzz_calls.py")
BATCH = 250
CALLS = 4000
LONG_CALLS = 100000
# A batch is about a second of work; this much without finishing is a hang.
BATCH_TIMEOUT = 60
# Enough failures to act on; beyond this the run stops instead of waiting out more hangs.
MAX_REPORTED = 8
SEEDS = (0, 1)


def run_batch(seed, first, count, script=FUZZ_SCRIPT, timeout=BATCH_TIMEOUT):
    """(return code or None on timeout, the last call index started, stderr tail)."""
    proc = subprocess.Popen([sys.executable, script, str(seed), str(first), str(count)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=child_env(),
                            preexec_fn=limit_address_space(MEMORY_LIMIT))
    try:
        out, err = proc.communicate(timeout=timeout)
        code = proc.returncode
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        code = None
    started = [int(line) for line in out.split() if line.isdigit()]
    if code == 0 and "DONE" not in out:
        code = -1
    return code, (started[-1] if started else None), err[-1500:]


def describe_call(seed, index):
    import fuzz_calls
    return fuzz_calls.describe(fuzz_calls.make_call(seed, index, fuzz_calls.public_targets()))


def failure_report(seed, first, count, code, last, err):
    what = "hung" if code is None else f"died with return code {code}"
    if last is None:
        return f"seed {seed}: the batch of calls {first}..{first + count - 1} {what} before its first call\n{err}"
    # Rerun the call alone: the report says whether it fails by itself or only after the calls before it.
    alone, _, alone_err = run_batch(seed, last, 1)
    alone_note = ("it does so alone too" if alone != 0 else
                  f"alone it runs cleanly, so an earlier call of the batch (from {first}) set it up")
    return (f"seed {seed}, call {last}: {describe_call(seed, last)} {what}; {alone_note}\n"
            f"{alone_err or err}")


def test_fuzz_targets_cover_the_public_api():
    import ember
    import fuzz_calls
    labels = {label for label, _, _ in fuzz_calls.public_targets()}
    for path, table in ember._C._op_modules.items():
        for name in table.__all__:
            if not name.startswith("_"):
                assert fuzz_calls.function_label_of(path, name) in labels, name
    for name in ("Tensor.view", "Tensor.expand", "Tensor.__getitem__", "Tensor.__setitem__", "ember.tensor",
                 "ember.as_tensor", "Tensor.type_as", "Tensor.__add__", "Tensor.__contains__"):
        assert name in labels, name


def test_fuzz_calls_are_reproducible():
    import fuzz_calls
    targets = fuzz_calls.public_targets()
    first = [fuzz_calls.describe(fuzz_calls.make_call(7, i, targets)) for i in range(50)]
    again = [fuzz_calls.describe(fuzz_calls.make_call(7, i, targets)) for i in range(50)]
    assert first == again
    assert len(set(first)) > 40   # and they differ from call to call


# A stand-in for fuzz_calls.py whose call 3 crashes (or hangs), to check what the runner reports.
BROKEN_CHILD = """
import ctypes, sys, time
seed, first, count = map(int, sys.argv[1:])
for i in range(first, first + count):
    print(i, flush=True)
    if i == 3:
        if seed == 0:
            ctypes.string_at(0)
        time.sleep(60)
print("DONE", flush=True)
"""


# Under tools/sanitize.sh ASan turns the segfault into an abort (SIGABRT).
SEGFAULT = -6 if os.environ.get("EMBER_SANITIZED") else -11


@pytest.mark.parametrize("seed,expected", [(0, SEGFAULT), (1, None)], ids=["segfault", "hang"])
def test_runner_names_the_call_that_crashes_or_hangs(tmp_path, seed, expected):
    script = tmp_path / "broken.py"
    script.write_text(BROKEN_CHILD)
    code, last, _ = run_batch(seed, 0, 10, script=str(script), timeout=5)
    assert (code, last) == (expected, 3)
    assert run_batch(seed, 4, 5, script=str(script), timeout=5)[:2] == (0, 8)


@pytest.mark.skipif(bool(os.environ.get("EMBER_SANITIZED")), reason="ASan caps allocations its own way")
def test_fuzz_script_run_by_hand_caps_its_own_memory():
    # `python tests/fuzz_calls.py 0 750 250` was once killed by the OOM killer: uncapped, a
    # randperm(2**31) (16 GB of int64, as in PyTorch) got its memory and filled it.
    # 4 GB left untouched by empty(): harmless without the cap, refused with it.
    result = run_isolated("""
        import fuzz_calls
        fuzz_calls.cap_memory()
        import ember
        ember.empty(2**30)
        """, timeout=60)
    assert result.returncode != 0 and "RuntimeError: DefaultCPUAllocator: can't allocate memory" in result.stderr


@pytest.mark.parametrize("seed", SEEDS)
def test_fuzz_public_api_never_crashes_or_hangs(seed, long_mode):
    total = (LONG_CALLS if long_mode else CALLS) // len(SEEDS)
    failures = []
    for first in range(0, total, BATCH):
        if len(failures) >= MAX_REPORTED:
            break
        end = min(first + BATCH, total)
        while first < end:
            code, last, err = run_batch(seed, first, end - first)
            if code == 0:
                break
            failures.append(failure_report(seed, first, end - first, code, last, err))
            if last is None:
                break
            first = last + 1   # go on after the call that failed, so one run lists every failing call
    assert not failures, f"{len(failures)} calls crashed or hung:\n\n" + "\n\n".join(failures)
