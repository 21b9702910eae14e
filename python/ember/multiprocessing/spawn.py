"""spawn and start_processes: run fn(i, *args) in nprocs processes; a child's exception is
re-raised in the parent (as ProcessRaisedException, with the child's traceback)."""
import multiprocessing
import multiprocessing.connection
import os
import pickle
import signal
import sys
import tempfile
import time
import warnings

__all__ = ["ProcessContext", "ProcessException", "ProcessExitedException", "ProcessRaisedException", "spawn",
           "SpawnContext", "start_processes"]


class ProcessException(Exception):
    __slots__ = ["error_index", "error_pid"]

    def __init__(self, msg: str, error_index: int, error_pid: int):
        super().__init__(msg)
        self.msg = msg
        self.error_index = error_index
        self.error_pid = error_pid

    def __reduce__(self):
        return type(self), (self.msg, self.error_index, self.error_pid)


class ProcessRaisedException(ProcessException):
    """Exception raised when a process failed due to an exception raised by the code."""


class ProcessExitedException(ProcessException):
    """Exception raised when a process failed due to signal or exited with a specific code."""
    __slots__ = ["exit_code"]

    def __init__(self, msg: str, error_index: int, error_pid: int, exit_code: int, signal_name=None):
        super().__init__(msg, error_index, error_pid)
        self.exit_code = exit_code
        self.signal_name = signal_name

    def __reduce__(self):
        return type(self), (self.msg, self.error_index, self.error_pid, self.exit_code, self.signal_name)


def _die_with_parent():
    # A non-daemonic child gets SIGINT when its parent dies (prctl PR_SET_PDEATHSIG, Linux only).
    if sys.platform.startswith("linux"):
        import ctypes
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGINT)


def _wrap(fn, i, args, error_file):
    _die_with_parent()
    try:
        fn(i, *args)
    except KeyboardInterrupt:
        pass  # SIGINT: the parent is stopping us
    except Exception:
        import traceback
        with open(error_file, "wb") as fh:
            pickle.dump(traceback.format_exc(), fh)
        sys.exit(1)


class ProcessContext:
    def __init__(self, processes, error_files):
        self.error_files = error_files
        self.processes = processes
        self.sentinels = {process.sentinel: index for index, process in enumerate(processes)}

    def pids(self):
        return [int(process.pid) for process in self.processes]

    def _join_procs_with_timeout(self, timeout):
        end = time.monotonic() + timeout
        for process in self.processes:
            process.join(max(0, end - time.monotonic()))

    def join(self, timeout=None, grace_period=None):
        """Joins the processes. If one exited with a non-zero status, terminates the others (after
        grace_period seconds, if given) and raises the cause. True once all have been joined."""
        if len(self.sentinels) == 0:
            return True
        ready = multiprocessing.connection.wait(self.sentinels.keys(), timeout=timeout)
        error_index = None
        for sentinel in ready:
            index = self.sentinels.pop(sentinel)
            process = self.processes[index]
            process.join()
            if process.exitcode != 0:
                error_index = index
                break
        if error_index is None:
            return len(self.sentinels) == 0
        self._stop_all(grace_period)
        self._cleanup_error_files(keep=error_index)
        raise self._error(error_index)

    def _stop_all(self, grace_period):
        if grace_period is not None:
            self._join_procs_with_timeout(grace_period)
        for process in self.processes:
            if process.is_alive():
                process.terminate()
        self._join_procs_with_timeout(30 if grace_period is None else grace_period)
        for process in self.processes:
            if process.is_alive():
                process.kill()
            process.join()

    def _cleanup_error_files(self, keep=None):
        for index, path in enumerate(self.error_files):
            if index != keep and os.path.exists(path):
                os.unlink(path)

    def _error(self, error_index):
        failed = self.processes[error_index]
        path = self.error_files[error_index]
        if not os.access(path, os.R_OK):  # written only when fn raised
            exitcode = failed.exitcode
            if exitcode < 0:
                try:
                    name = signal.Signals(-exitcode).name
                except ValueError:
                    name = f"<Unknown signal {-exitcode}>"
                return ProcessExitedException(f"process {error_index:d} terminated with signal {name}",
                                              error_index=error_index, error_pid=failed.pid, exit_code=exitcode,
                                              signal_name=name)
            return ProcessExitedException(f"process {error_index:d} terminated with exit code {exitcode:d}",
                                          error_index=error_index, error_pid=failed.pid, exit_code=exitcode)
        with open(path, "rb") as fh:
            original_trace = pickle.load(fh)
        os.unlink(path)
        msg = f"\n\n-- Process {error_index:d} terminated with the following error:\n" + original_trace
        return ProcessRaisedException(msg, error_index, failed.pid)


class SpawnContext(ProcessContext):
    def __init__(self, processes, error_files):
        warnings.warn("SpawnContext is renamed to ProcessContext since 1.4 release.", stacklevel=2)
        super().__init__(processes, error_files)


def start_processes(fn, args=(), nprocs=1, join=True, daemon=False, start_method="spawn"):
    """spawn with any start method ("spawn", "fork", "forkserver")."""
    mp = multiprocessing.get_context(start_method)
    error_files, processes = [], []
    for i in range(nprocs):
        # Each child writes its traceback to its own file (a name only: the file exists only if it failed).
        tf = tempfile.NamedTemporaryFile(prefix="ember-errorfile-", suffix=".pickle", delete=False)
        tf.close()
        os.unlink(tf.name)
        process = mp.Process(target=_wrap, args=(fn, i, args, tf.name), daemon=daemon)
        process.start()
        error_files.append(tf.name)
        processes.append(process)
    context = ProcessContext(processes, error_files)
    if not join:
        return context
    while not context.join():
        pass


def spawn(fn, args=(), nprocs=1, join=True, daemon=False, start_method="spawn"):
    r"""Spawns ``nprocs`` processes that run ``fn(i, *args)``, ``i`` the process index.

    If one of the processes exits with a non-zero exit status, the remaining processes are
    killed and an exception is raised with the cause of termination; an exception raised in
    the child is re-raised with its traceback. Returns None if ``join`` is True, else a
    :class:`ProcessContext`.
    """
    if start_method != "spawn":
        msg = (f"This method only supports start_method=spawn (got: {start_method}).\n"
               "To use a different start_method use:\n\t\t ember.multiprocessing.start_processes(...)")
        warnings.warn(msg, FutureWarning, stacklevel=2)
    return start_processes(fn, args, nprocs, join, daemon, start_method="spawn")
