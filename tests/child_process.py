"""Running test code in a fresh interpreter, so that a crash (a signal) or a hang
fails one test instead of killing or stalling the whole run."""
import os
import resource
import subprocess
import sys
import textwrap

import ember


def child_env():
    """The environment for a child interpreter that imports the same ember as this one."""
    env = dict(os.environ)
    package_parent = os.path.dirname(os.path.dirname(os.path.abspath(ember.__file__)))
    tests_dir = os.path.dirname(os.path.abspath(__file__))
    env["PYTHONPATH"] = os.pathsep.join([package_parent, tests_dir, env.get("PYTHONPATH", "")])
    env.setdefault("OMP_NUM_THREADS", "2")
    return env


def limit_address_space(limit_bytes):
    """A preexec_fn capping the child's virtual memory: an oversized allocation then fails cleanly.
    Under tools/sanitize.sh (EMBER_SANITIZED) ASan's own max_allocation_size_mb caps allocations
    instead: its shadow memory needs terabytes of address space."""
    def apply():
        if not os.environ.get("EMBER_SANITIZED"):
            resource.setrlimit(resource.RLIMIT_AS, (limit_bytes, limit_bytes))
    return apply


def run_isolated(code, timeout=120, memory_limit=None, stdin=None):
    """Runs `code` (dedented) in a fresh interpreter; raises subprocess.TimeoutExpired on a hang."""
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          timeout=timeout, env=child_env(), input=stdin,
                          preexec_fn=limit_address_space(memory_limit) if memory_limit else None)


def torch_available():
    try:
        import torch  # noqa: F401
    except ImportError:
        return False
    return True
