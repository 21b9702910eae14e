"""Process-wide switches PyTorch has at its top level: deterministic algorithms (ember's kernels are
deterministic already: the flags are kept and reported), interop threads, flush-denormal, seed,
can_cast and set_printoptions."""
import os

from . import _C, _tensor_str

_deterministic = {"mode": False, "warn_only": False}
_interop_threads = [0]  # 0: not set, reported as the intra-op count (as torch's default)


def use_deterministic_algorithms(mode, *, warn_only=False):
    """Asks for deterministic algorithms. Every ember kernel is deterministic, so this only records it."""
    if not isinstance(mode, bool):
        raise TypeError(f"_set_deterministic_algorithms(): argument 'mode' (position 1) must be bool, not "
                        f"{type(mode).__name__}")
    _deterministic.update(mode=mode, warn_only=bool(warn_only))


def are_deterministic_algorithms_enabled():
    return _deterministic["mode"]


def is_deterministic_algorithms_warn_only_enabled():
    return _deterministic["warn_only"]


_DEBUG_MODES = {"default": 0, "warn": 1, "error": 2}


def set_deterministic_debug_mode(debug_mode):
    """0/'default', 1/'warn' or 2/'error': the same switch as use_deterministic_algorithms."""
    if isinstance(debug_mode, str):
        if debug_mode not in _DEBUG_MODES:
            raise RuntimeError(f"invalid value of debug_mode, expected one of `default`, `warn`, `error`, but got "
                               f"{debug_mode}")
        debug_mode = _DEBUG_MODES[debug_mode]
    if debug_mode not in (0, 1, 2):
        raise RuntimeError(f"invalid value of debug_mode, expected 0, 1, or 2, but got {debug_mode}")
    use_deterministic_algorithms(debug_mode != 0, warn_only=debug_mode == 1)


def get_deterministic_debug_mode():
    if not _deterministic["mode"]:
        return 0
    return 1 if _deterministic["warn_only"] else 2


def get_num_interop_threads():
    """The number of threads for inter-op parallelism (ember runs ops one after another: only recorded)."""
    return _interop_threads[0] or _C.get_num_threads()


def set_num_interop_threads(num):
    if not isinstance(num, int) or num <= 0:
        raise RuntimeError("set_num_interop_threads expects a positive integer")
    _interop_threads[0] = num


def set_flush_denormal(mode):
    """ember does not change the CPU's denormal mode: returns False (not supported), as PyTorch
    does on CPUs without the flag."""
    return False


def seed():
    """Seeds the default generators with a non-deterministic number, which it returns."""
    from . import manual_seed
    value = int.from_bytes(os.urandom(8), "little") >> 1
    manual_seed(value)
    return value


def _category(dtype):
    return 0 if dtype == _C.bool else (2 if dtype.is_floating_point else 1)


def can_cast(from_, to):
    """Whether PyTorch's casting rules allow from_ -> to in type promotion (no float -> int, no -> bool)."""
    return _category(from_) <= _category(to)


_PROFILES = {"default": (4, 1000, 3, 80), "short": (2, 1000, 2, 80), "full": (4, float("inf"), 3, 80)}


def set_printoptions(precision=None, threshold=None, edgeitems=None, linewidth=None, profile=None, sci_mode=None):
    """How tensors print: digits after the point, the element count past which they are summarized,
    the items shown at each edge, the line width; `profile` (default, short, full) sets all four
    (and resets sci_mode); sci_mode True/False forces or forbids scientific notation."""
    if profile is not None:
        (_tensor_str.PRECISION, _tensor_str.THRESHOLD, _tensor_str.EDGEITEMS,
         _tensor_str.LINEWIDTH) = _PROFILES[profile]
        _tensor_str.SCI_MODE = None
    if precision is not None:
        _tensor_str.PRECISION = precision
    if threshold is not None:
        _tensor_str.THRESHOLD = threshold
    if edgeitems is not None:
        _tensor_str.EDGEITEMS = edgeitems
    if linewidth is not None:
        _tensor_str.LINEWIDTH = linewidth
    _tensor_str.SCI_MODE = sci_mode
