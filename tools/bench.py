#!/usr/bin/env python3
"""ember vs PyTorch vs NumPy, side by side in one process.

Prints a table (one row per benchmark, one column per library), then the
ember/PyTorch ratios against the issue's targets, last. Absolute numbers move
from run to run by 10-30%; the ratios taken within one run are what counts.

    python tools/bench.py                  # full run, about 2 minutes on 2 idle cores
    python tools/bench.py --quick          # fewer repeats, about 30 s
    python tools/bench.py --only matmul    # rows whose name contains "matmul"
    python tools/bench.py --json out.json  # also dump every figure and batch time
    python tools/bench.py --device cuda    # the GPU rows, ember and torch on the GPU (needs ember.cuda)

Every library gets THREADS threads. PyTorch is optional (its column is left
out when it does not import), so is `scipy_openblas32`, which gives the
"openblas" column: cblas_sgemm called directly, the ceiling for ember's matmul.
The rows themselves are in tools/bench_rows.py.
"""
import argparse
import ctypes
import gc
import glob
import json
import math
import os
import platform
import statistics
import subprocess
import sys
import time
from typing import NamedTuple

THREADS = 2

# NumPy's OpenBLAS reads its thread count once, when it loads: set it first.
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS"):
    os.environ.setdefault(_var, str(THREADS))

import numpy as np  # noqa: E402

from bench_rows import (  # noqa: E402  (after the thread settings above)
    CONV_SHAPES, MLP_BATCH, MLP_SIZES, Lib, SelfTimed, all_benches, conv_row_name, cuda_benches, lstm_row_name)
from bench_io import LOAD_ROW, MMAP_ROW, SAVE_ROW, dataloader_row_name  # noqa: E402
from bench_models import MODEL_ROWS, model_benches  # noqa: E402



def import_optional(name):
    """The module, or None and the reason it did not import."""
    try:
        return __import__(name), None
    except Exception as exc:  # any failure to import means: no column
        return None, f"{type(exc).__name__}: {exc}"


class DirectSgemm:
    """cblas_sgemm from PyPI's scipy_openblas32, the library ember links, via ctypes."""

    ROW_MAJOR, NO_TRANS = 101, 111

    def __init__(self):
        import scipy_openblas32

        path = os.path.join(scipy_openblas32.get_lib_dir(),
                            f"lib{scipy_openblas32.get_library()}.so")
        self.lib = ctypes.CDLL(path)
        self.lib.scipy_openblas_get_corename.restype = ctypes.c_char_p
        self.corename = self.lib.scipy_openblas_get_corename().decode()
        self.sgemm = self.lib.scipy_cblas_sgemm
        i, f, p = ctypes.c_int, ctypes.c_float, ctypes.c_void_p
        self.sgemm.argtypes = [i, i, i, i, i, i, f, p, i, p, i, f, p, i]
        self.sgemm.restype = None

    def matmul_into(self, a, b, c):
        """c = a @ b for C-contiguous float32 2-D arrays."""
        m, k = a.shape
        n = b.shape[1]
        # ember shares this library and keeps it single-threaded between its calls.
        self.lib.scipy_openblas_set_num_threads(THREADS)
        self.sgemm(self.ROW_MAJOR, self.NO_TRANS, self.NO_TRANS, m, n, k, 1.0,
                   a.ctypes.data, k, b.ctypes.data, n, 0.0, c.ctypes.data, n)


def numpy_openblas_corename():
    """The kernel set of NumPy's bundled OpenBLAS, or None when it cannot be asked."""
    libs = glob.glob(os.path.join(os.path.dirname(np.__file__) + ".libs", "*openblas*.so*"))
    for path in libs:
        try:
            lib = ctypes.CDLL(path)  # already loaded by NumPy: this returns the same handle
        except OSError:
            continue
        for symbol in ("scipy_openblas_get_corename64_", "scipy_openblas_get_corename",
                       "openblas_get_corename64_", "openblas_get_corename"):
            fn = getattr(lib, symbol, None)
            if fn is not None:
                fn.restype = ctypes.c_char_p
                return fn().decode()
    return None


def ember_blas_corename(ember):
    blas_corename = getattr(getattr(ember, "_C", None), "_blas_corename", None)
    return blas_corename() if blas_corename else None


# --------------------------------------------------------------------------
# Timing
# --------------------------------------------------------------------------
def wait_until_quiet(max_wait_s=0.5, probe_s=0.01):
    """Sleep until no thread of this process burns CPU.

    OpenBLAS's workers spin for about 0.1 s after each call, OpenMP's for a few
    ms; on 2 cores that would steal a core from the next library's batch.
    """
    deadline = time.perf_counter() + max_wait_s
    while time.perf_counter() < deadline:
        # CPU time of all this process's threads; other threads' time moves in
        # scheduler ticks (a few ms), hence a probe of several ticks.
        cpu_before = time.process_time()
        time.sleep(probe_s)
        if time.process_time() - cpu_before < probe_s / 2:
            return


class Timer:
    """Seconds per call for several libraries on the same row, in batches.

    The machine's speed drifts (shared cores, frequency), so the libraries'
    batches run in turns, ember, torch, numpy, ember, ...: drift then hits every
    column alike instead of whichever happened to run during it. Before each
    batch we wait until the previous library's thread pool stops spinning.
    """

    def __init__(self, budget_s, rounds, warmup_s):
        # budget_s: timed seconds per library and row, split into `rounds` batches;
        # an op slower than budget_s / rounds gets one call per batch.
        self.budget_s, self.rounds, self.warmup_s = budget_s, rounds, warmup_s

    @staticmethod
    def _run_batch(fn, calls, sync):
        start = time.perf_counter()
        self_timed = None  # the sum of what fn reports, when it times itself (SelfTimed)
        for _ in range(calls):
            result = fn()
            if type(result) is SelfTimed:
                self_timed = (self_timed or 0.0) + result
        sync()
        elapsed = time.perf_counter() - start
        return elapsed if self_timed is None else self_timed

    def _warm_up(self, fn, sync):
        """Seconds per call, estimated after warmup_s of calls (lazy init, page faults, caches)."""
        wait_until_quiet()
        fn()
        sync()
        calls, spent = 1, 0.0
        while True:
            elapsed = self._run_batch(fn, calls, sync)
            spent += elapsed
            if elapsed >= 0.01 and spent >= self.warmup_s:
                return elapsed / calls
            calls *= 2

    def samples(self, fns):
        """{name: (fn, sync)} -> {name: [seconds per call in each batch]}."""
        per_call = {name: self._warm_up(fn, sync) for name, (fn, sync) in fns.items()}
        calls = {name: max(1, round(self.budget_s / self.rounds / t))
                 for name, t in per_call.items()}
        per_batch = {name: [] for name in fns}
        gc_was_enabled = gc.isenabled()
        gc.disable()  # a collection inside a batch would be charged to the op
        try:
            for _ in range(self.rounds):
                for name, (fn, sync) in fns.items():
                    wait_until_quiet()
                    per_batch[name].append(self._run_batch(fn, calls[name], sync) / calls[name])
        finally:
            if gc_was_enabled:
                gc.enable()
        return per_batch


# --------------------------------------------------------------------------
# Import cost, in fresh interpreters so nothing is loaded already.
# --------------------------------------------------------------------------
IMPORT_PROBE = r"""
import json, sys, time
def rss_kib():
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmRSS:"))
before = rss_kib()
start = time.perf_counter()
__import__(sys.argv[1])
seconds = time.perf_counter() - start
print(json.dumps({"seconds": seconds, "rss_mib": (rss_kib() - before) / 1024}))
"""


def measure_import(module_name, runs):
    """(min seconds, min MiB of RSS added) over runs, or None when it fails to import."""
    results = []
    for _ in range(runs):
        proc = subprocess.run([sys.executable, "-c", IMPORT_PROBE, module_name],
                              capture_output=True, text=True)
        if proc.returncode != 0:
            return None
        results.append(json.loads(proc.stdout.strip().splitlines()[-1]))
    return min(r["seconds"] for r in results), min(r["rss_mib"] for r in results)


# --------------------------------------------------------------------------
# Output
# --------------------------------------------------------------------------
NAME_WIDTH, UNIT_WIDTH, CELL_WIDTH = 42, 8, 10


def format_number(value):
    if value is None:
        return ""
    if value >= 100:
        return f"{value:.0f}"
    if value >= 10:
        return f"{value:.1f}"
    if value >= 0.1:
        return f"{value:.2f}"
    return f"{value:.3g}"


def print_table_header(columns):
    cells = "".join(f"{c:>{CELL_WIDTH}}" for c in columns)
    line = f"{'benchmark':<{NAME_WIDTH}}{'unit':>{UNIT_WIDTH}}{cells}"
    print(line)
    print("-" * len(line), flush=True)


def print_row(name, unit, values, columns):
    cells = "".join(f"{format_number(values.get(c)):>{CELL_WIDTH}}" for c in columns)
    print(f"{name:<{NAME_WIDTH}}{unit:>{UNIT_WIDTH}}{cells}", flush=True)


# --------------------------------------------------------------------------
# Ratios against the targets
# --------------------------------------------------------------------------
AVX512_CORENAMES = ("SkylakeX", "Cooperlake", "SapphireRapids")  # OpenBLAS's "Zen" core runs AVX2 kernels


def matmul_target(corename):
    """(target, why): the issue asks more of ember where OpenBLAS runs AVX-512 kernels."""
    if corename and any(name.lower() in corename.lower() for name in AVX512_CORENAMES):
        return 2.0, f"AVX-512 kernels ({corename})"
    return 1.1, f"AVX2 kernels ({corename or 'kernel set unknown'})"


def geomean(values):
    return math.exp(sum(math.log(v) for v in values) / len(values))


class Goal(NamedTuple):
    label: str
    rows: tuple        # table rows whose ember/other ratios are combined
    other: str         # the column ember is divided by; None: ember's own value
    what: str
    op: str            # "<=" or ">="
    target: float
    note: str = ""


def goals(corename):
    # The goal's original rows; the x**2 / x**1.7 rows only report.
    elementwise = tuple(f"{op} 1e7" for op in ("add", "mul", "exp", "sigmoid")) + ("add 5e7",)
    sums = ("sum 1e7", "sum 5e7", "sum dim 0 of 4096x4096", "sum dim 1 of 4096x4096")
    target_2048, why_2048 = matmul_target(corename)
    mlp = f"MLP {'-'.join(map(str, MLP_SIZES))} step, batch {MLP_BATCH}"
    return [
        Goal("per-op overhead", ("overhead a+b", "overhead a.sum()", "overhead a.relu()"),
             "torch", "ember/torch time", "<=", 0.6),
        Goal("tiny autograd graph", ("autograd (x*w+b).relu().sum() fwd+bwd",),
             "torch", "ember/torch time", "<=", 0.6),
        Goal("out-of-place elementwise, large", elementwise,
             "torch", "ember/torch GB/s", ">=", 2.0),
        Goal("transposed add", ("transposed add X.t()+Y 4096x4096",),
             "torch", "ember/torch GB/s", ">=", 3.0),
        Goal("sums", sums, "torch", "ember/torch GB/s", ">=", 1.0),
        Goal("softmax", ("softmax 4096x4096 dim -1",), "torch", "ember/torch GB/s", ">=", 2.0),
        Goal("matmul 2048", ("matmul 2048",), "torch", "ember/torch GFLOP/s", ">=",
             target_2048, f"target for {why_2048}"),
        Goal("matmul 2048 vs direct sgemm", ("matmul 2048",), "openblas", "ember/sgemm GFLOP/s",
             ">=", 0.9),
        Goal("MLP step", (mlp,), "torch", "ember/torch time", "<=", 0.8),
        Goal("import ember", ("import time",), None, "ember seconds", "<=", 0.25),
        Goal("cross_entropy", ("cross_entropy fwd+bwd 4096x32000",), "torch", "ember/torch time", "<=", 1 / 1.2),
        Goal("gather/scatter_add", ("gather 1e7", "scatter_add 1e7"), "torch", "ember/torch GB/s", ">=", 1.2),
        Goal("sdpa", ("sdpa causal b8 h8 512x64",), "torch", "ember/torch time", "<=", 1 / 1.5),
        Goal("sdpa fwd+bwd", ("sdpa causal b8 h8 512x64 fwd+bwd",), "torch", "ember/torch time", "<=", 1 / 1.2),
        Goal("conv2d fwd+bwd", tuple(conv_row_name(s, True) for s in CONV_SHAPES), "torch", "ember/torch time",
             "<=", 1.0),
        Goal("conv2d fwd", tuple(conv_row_name(s, False) for s in CONV_SHAPES), "torch", "ember/torch time",
             "<=", 1.0, "no target in the issue"),
        Goal("blas", ("addmm 1024", "einsum bhqd,bhkd->bhqk (8,8,512,64)"), "torch", "ember/torch GFLOP/s", ">=", 1.0,
             "no target in the issue"),
        Goal("batch_norm", ("batch_norm 2d train fwd+bwd b32 64ch 56x56",), "torch", "ember/torch time", "<=", 1 / 1.2),
        Goal("layer_norm", ("layer_norm fwd+bwd 4096x1024",), "torch", "ember/torch time", "<=", 1 / 1.5),
        Goal("embedding", ("embedding fwd+bwd 50000x512, 8192 indices",), "torch", "ember/torch time", "<=", 1 / 1.2),
        Goal("max_pool2d", ("max_pool2d 64x64x56x56 k3s2p1 fwd", "max_pool2d 64x64x56x56 k3s2p1 fwd+bwd"), "torch",
             "ember/torch time", "<=", 1 / 1.2),
        Goal("sort/topk", ("sort 1e6", "topk 1e6 k=100"), "torch", "ember/torch GB/s", ">=", 1.2),
        Goal("mse_loss", ("mse_loss fwd+bwd 1e7",), "torch", "ember/torch time", "<=", 1 / 1.2),
        Goal("pad reflect", ("pad reflect b8 64ch 224x224 p3 fwd", "pad reflect b8 64ch 224x224 p3 fwd+bwd"), "torch",
             "ember/torch time", "<=", 1 / 1.2),
        Goal("lapack", ("linalg.inv 512", "linalg.qr 512"), "torch", "ember/torch time", "<=", 1.0,
             "no target in the issue"),
        Goal("topk short rows", ("topk 8192x1000 k=5",), "torch", "ember/torch GB/s", ">=", 1.2),
        Goal("Adam step", ("Adam step 10M params in 100 tensors",), "torch", "ember/torch time", "<=", 0.5),
        Goal("SGD momentum step", ("SGD momentum step 10M params in 100 tensors",), "torch", "ember/torch time", "<=",
             0.5, "the Adam target applied to SGD"),
        Goal("LSTM fwd+bwd", (lstm_row_name(),), "torch", "ember/torch time", "<=", 0.8,
             "the issue's model-step target, for the recurrent layer alone"),
        Goal("save 500 MB state_dict", (SAVE_ROW,), "torch", "ember/torch GB/s", ">=", 1.0),
        Goal("load 500 MB state_dict", (LOAD_ROW,), "torch", "ember/torch GB/s", ">=", 1.0),
        Goal("mmap load vs full read", (MMAP_ROW,), f"row:{LOAD_ROW}", "ember mmap/read GB/s", ">=", 10.0),
        Goal("DataLoader batches/s", tuple(dataloader_row_name(w, "epoch") for w in (0, 2)), "torch",
             "ember/torch batches/s", ">=", 1.0),
        Goal("DataLoader first batch", tuple(dataloader_row_name(w, "first batch") for w in (0, 2)), "torch",
             "ember/torch time", "<=", 1.0),
    ] + [Goal(row.removeprefix("train step "), (row,), "torch", "ember/torch time", "<=", 0.8) for row in MODEL_ROWS]


def cuda_goals():
    overhead = ("overhead a+b", "overhead a.sum()", "overhead a.relu()")
    return [
        Goal("launch overhead, small tensors", overhead, "torch", "ember/torch time", "<=", 1.0),
        Goal("add 1e8 vs device copy", ("add 1e8",), "row:copy 1e8 device-to-device",
             "ember add/copy GB/s", ">=", 0.9),
        Goal("add 1e8", ("add 1e8",), "torch", "ember/torch GB/s", ">=", 1.0),
        Goal("sum 1e8", ("sum 1e8",), "torch", "ember/torch GB/s", ">=", 1.0, "no target in the issue"),
        Goal("softmax 8192x8192", ("softmax 8192x8192 dim -1",), "torch", "ember/torch GB/s", ">=", 1.0,
             "no target in the issue"),
        Goal("matmul 8192 float32", ("matmul 8192 float32",), "torch", "ember/torch GFLOP/s", ">=", 0.9),
        Goal("matmul 8192 bfloat16", ("matmul 8192 bfloat16",), "torch", "ember/torch GFLOP/s", ">=", 0.9),
    ]


def ember_ratios(rows, goal):
    """{row: ember/other} in each row's own unit (a time ratio or a rate ratio);
    other "row:NAME" divides by ember's own figure on row NAME."""
    ratios = {}
    for name in goal.rows:
        values = rows.get(name, {})
        ember = values.get("ember")
        if goal.other and goal.other.startswith("row:"):
            other = rows.get(goal.other[4:], {}).get("ember")
        else:
            other = 1.0 if goal.other is None else values.get(goal.other)
        if ember and other:
            ratios[name] = ember / other
    return ratios


def compute_ratios(rows, columns, corename, device="cpu"):
    results = []
    for goal in (cuda_goals() if device == "cuda" else goals(corename)):
        per_row = ember_ratios(rows, goal)
        entry = {**goal._asdict(), "rows": per_row, "value": None, "passed": None}
        if per_row:
            value = geomean(list(per_row.values()))
            entry["value"] = value
            entry["worst"] = max(per_row.values()) if goal.op == "<=" else min(per_row.values())
            entry["passed"] = value <= goal.target if goal.op == "<=" else value >= goal.target
        elif "ember" not in columns:
            entry["note"] = "needs ember"
        elif goal.other == "torch" and "torch" not in columns:
            entry["note"] = "needs torch"
        elif goal.other == "openblas" and "openblas" not in columns:
            entry["note"] = "needs scipy_openblas32"
        else:
            entry["note"] = "its rows were not run"
        results.append(entry)
    return results


def print_ratios(ratios):
    print("\nratios (value: geometric mean over the rows named; PASS/MISS judged on it)")
    for r in ratios:
        head = f"  {r['label']:<32} {r['what']:<20}"
        target = f"target {r['op']} {r['target']:g}"
        if r["value"] is None:
            print(f"{head} {'n/a':>7}   {target:<12}  -     ({r['note']})")
            continue
        verdict = "PASS" if r["passed"] else "MISS"
        extra = []
        if len(r["rows"]) > 1:
            extra.append(f"{len(r['rows'])} rows, worst {r['worst']:.2f}")
        if r["note"]:
            extra.append(r["note"])
        tail = f"  ({'; '.join(extra)})" if extra else ""
        print(f"{head} {r['value']:>7.2f}   {target:<12}  {verdict}{tail}")


# --------------------------------------------------------------------------
# Main
# --------------------------------------------------------------------------
def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer repeats, for a smoke run")
    parser.add_argument("--only", metavar="SUBSTRING",
                        help="run only the rows whose name contains SUBSTRING")
    parser.add_argument("--json", metavar="FILE", help="also write all results to FILE")
    parser.add_argument("--device", default="cpu", choices=("cpu", "cuda"),
                        help="where ember and torch run (NumPy and sgemm stay CPU-only)")
    return parser.parse_args()


def load_libraries(device):
    """Import ember and torch, give them THREADS threads, and return the columns."""
    libs, notes = [], []
    ember, ember_error = import_optional("ember")
    torch, torch_error = import_optional("torch")
    if device == "cuda":
        cuda = getattr(ember, "cuda", None)
        if ember is None or cuda is None or not cuda.is_available():
            reason = ember_error or "ember.cuda.is_available() is False"
            print(f"--device cuda: no CUDA for ember ({reason})", file=sys.stderr)
            sys.exit(1)
        if torch is not None and not torch.cuda.is_available():
            torch, torch_error = None, "torch.cuda.is_available() is False"
    for name, mod, error in (("ember", ember, ember_error), ("torch", torch, torch_error)):
        if mod is None:
            notes.append(f"{name}: not importable, column left out ({error})")
            continue
        if hasattr(mod, "set_num_threads"):
            mod.set_num_threads(THREADS)
        libs.append(Lib(name, mod, device))
    sgemm = None
    if device == "cpu":
        libs.append(Lib("numpy", np))
        try:
            sgemm = DirectSgemm()
            libs.append(Lib("openblas", sgemm))
        except Exception as exc:  # package missing, or a build without these symbols
            notes.append(f"openblas: direct sgemm column left out; `pip install "
                         f"scipy_openblas32` to get it ({type(exc).__name__}: {exc})")
    return libs, sgemm, ember, torch, notes


def l3_cache_size():
    try:
        with open("/sys/devices/system/cpu/cpu0/cache/index3/size") as f:
            return f.read().strip()
    except OSError:
        return "unknown"


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            return next(line.split(":", 1)[1].strip() for line in f
                        if line.startswith("model name"))
    except (OSError, StopIteration):
        return platform.processor() or "unknown"


class OtherLoad:
    """How much CPU other processes took while we ran: they make every figure noisy."""

    def __init__(self):
        self.start = self._snapshot()

    @staticmethod
    def _snapshot():
        try:
            with open("/proc/stat") as f:
                fields = [int(v) for v in f.readline().split()[1:]]
        except (OSError, ValueError):
            return None
        idle_and_iowait = fields[3] + fields[4]
        busy_s = (sum(fields[:8]) - idle_and_iowait) / os.sysconf("SC_CLK_TCK")
        own = os.times()  # this process and the import probes it waited for
        own_s = own.user + own.system + own.children_user + own.children_system
        return time.perf_counter(), busy_s, own_s

    def fraction(self):
        """Share of all CPUs busy with other processes since start, or None off Linux."""
        end = self._snapshot()
        if self.start is None or end is None:
            return None
        wall_s = end[0] - self.start[0]
        other_s = (end[1] - self.start[1]) - (end[2] - self.start[2])
        return max(0.0, other_s / (wall_s * (os.cpu_count() or 1)))


def describe_environment(ember, torch, sgemm, notes):
    info = {
        "cpu": cpu_model(),
        "l3_cache": l3_cache_size(),
        "python": platform.python_version(),
        "threads": THREADS,
        "OPENBLAS_NUM_THREADS": os.environ.get("OPENBLAS_NUM_THREADS"),
        "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS"),
        "OPENBLAS_CORETYPE": os.environ.get("OPENBLAS_CORETYPE", "(unset)"),
        "ember": getattr(ember, "__version__", "?") if ember else None,
        "torch": getattr(torch, "__version__", "?") if torch else None,
        "numpy": np.__version__,
        "openblas_corename_sgemm": sgemm.corename if sgemm else None,
        "openblas_corename_numpy": numpy_openblas_corename(),
        "openblas_corename_ember": ember_blas_corename(ember) if ember else None,
    }
    print(f"cpu: {info['cpu']} (L3 {info['l3_cache']}), python {info['python']}, "
          f"{THREADS} threads per library")
    print(f"versions: ember {info['ember']}, torch {info['torch']}, numpy {info['numpy']}")
    print(f"OpenBLAS kernels: OPENBLAS_CORETYPE={info['OPENBLAS_CORETYPE']}; "
          f"direct sgemm (scipy_openblas32) {info['openblas_corename_sgemm']}; "
          f"ember {info['openblas_corename_ember'] or '(no ember._C._blas_corename)'}; "
          f"numpy {info['openblas_corename_numpy']}")
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS"):
        if info[var] != str(THREADS):
            print(f"warning: {var}={info[var]} was set outside; NumPy uses that, not {THREADS}")
    if ember is not None and ember.cuda.is_available():
        info["gpu"] = ember.cuda.get_device_name()
        print(f"gpu: {info['gpu']} (device 0 of {ember.cuda.device_count()})")
    for note in notes:
        print(f"note: {note}")
    print(flush=True)
    return info


def run_benches(benches, libs, timer):
    """Time every bench for every library, printing each row as it completes.

    Returns {row: {column: value in the row's unit}} and the raw batch samples.
    """
    columns = [lib.name for lib in libs]
    rows, all_samples = {}, {}
    section = None
    for bench in benches:
        if bench.section != section:
            section = bench.section
            print(f"[{section}]")
        fns = {}
        for lib in libs:
            fn = bench.build(lib) if lib.name in bench.columns else None
            if fn is not None:
                fns[lib.name] = (fn, lib.sync)
        samples = timer.samples(fns) if fns else {}
        values = {name: bench.value(statistics.median(s)) for name, s in samples.items()}
        all_samples[bench.name] = samples
        del fns
        gc.collect()  # free this row's inputs before the next row makes its own
        rows[bench.name] = values
        print_row(bench.name, bench.unit, values, columns)
    return rows, all_samples


IMPORT_ROWS = ("import time", "import RSS added")


def run_import_rows(libs, runs, rows):
    columns = [lib.name for lib in libs]
    print("[import in a fresh interpreter (min of runs)]")
    times, memory = {}, {}
    for lib in libs:
        if lib.name == "openblas":
            continue
        measured = measure_import(lib.name, runs)
        if measured:
            times[lib.name], memory[lib.name] = measured
    rows["import time"], rows["import RSS added"] = times, memory
    print_row("import time", "s", times, columns)
    print_row("import RSS added", "MiB", memory, columns)


def main():
    args = parse_args()
    started = time.perf_counter()
    other_load = OtherLoad()
    every = cuda_benches() if args.device == "cuda" else all_benches() + model_benches()
    benches = [b for b in every if not args.only or args.only in b.name]
    run_imports = args.device == "cpu" and (not args.only or any(args.only in name for name in IMPORT_ROWS))
    if not benches and not run_imports:
        sys.exit(f"--only {args.only!r} matches no row")
    libs, sgemm, ember, torch, notes = load_libraries(args.device)
    info = describe_environment(ember, torch, sgemm, notes)
    timer = Timer(0.06, 3, 0.02) if args.quick else Timer(0.35, 7, 0.1)
    print_table_header([lib.name for lib in libs])
    rows, samples = run_benches(benches, libs, timer)
    if run_imports:
        run_import_rows(libs, 1 if args.quick else 3, rows)

    # The kernel set ember's matmul runs on; the others are the same CPU probe or the user's pick.
    corename = (info["openblas_corename_ember"] or info["openblas_corename_sgemm"]
                or info["openblas_corename_numpy"] or os.environ.get("OPENBLAS_CORETYPE"))
    columns = [lib.name for lib in libs]
    ratios = compute_ratios(rows, columns, corename, args.device)
    print(f"\ntotal run time {time.perf_counter() - started:.0f} s")
    info["other_processes_cpu_share"] = busy = other_load.fraction()
    if busy is not None and busy > 0.1:
        print(f"warning: other processes kept {busy:.0%} of the CPUs busy during this run; "
              "the figures are unreliable, run again on an idle machine")
    print_ratios(ratios)
    if "torch" not in columns:
        print("  (ratios against torch need PyTorch: pip install torch==2.13.0)")

    if args.json:
        units = {b.name: b.unit for b in benches}
        units.update({"import time": "s", "import RSS added": "MiB"})
        dump = {"environment": info, "quick": args.quick,
                "rows": [{"name": name, "unit": units[name], "values": values,
                          "batch_seconds_per_call": samples.get(name, {})}
                         for name, values in rows.items()],
                "ratios": ratios}
        with open(args.json, "w") as f:
            json.dump(dump, f, indent=2)


if __name__ == "__main__":
    main()
