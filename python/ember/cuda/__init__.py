"""ember.cuda: devices, streams, events and the caching allocator's figures.

Importable everywhere: without a GPU (or without a CUDA build) is_available()
is False, device_count() is 0, and anything that needs a device raises
RuntimeError.
"""
import contextlib as _contextlib
import importlib.util as _importlib_util
import os as _os

from .. import _C


def is_built():
    """Whether ember was compiled with its CUDA backend."""
    return bool(_C._cuda_built)


def is_available():
    return _C._cuda_device_count() > 0


def device_count():
    return _C._cuda_device_count()


def is_initialized():
    return is_available()


def _lazy_check():
    if not is_built():
        raise RuntimeError("ember was built without CUDA (nvcc was not found at build time)")
    if not is_available():
        raise RuntimeError("CUDA is not available: no CUDA device was found")


def _index(device, optional=True):
    """A device index from an int, a str ("cuda:1"), an ember.device or None.

    Unnamed ("cuda", None) is -1 when `optional`, else the current device."""
    from .. import device as _device
    if isinstance(device, str):
        device = _device(device)
    if isinstance(device, _device):
        if device.type != "cuda":
            raise ValueError(f"Expected a cuda device, but got: {device}")
        device = device.index
    if device is None:
        return -1 if optional else current_device()
    if isinstance(device, int):
        return device
    raise TypeError(f"expected a device index, a device string or an ember.device, got {type(device).__name__}")


def current_device():
    _lazy_check()
    return _C._cuda_current_device()


class _CudaDeviceProperties:
    """What ember.cuda.get_device_properties returns (PyTorch's field names)."""

    def __init__(self, name, total_memory, major, minor, multi_processor_count):
        self.name, self.total_memory = name, total_memory
        self.major, self.minor, self.multi_processor_count = major, minor, multi_processor_count

    def __repr__(self):
        return (f"_CudaDeviceProperties(name='{self.name}', major={self.major}, minor={self.minor}, "
                f"total_memory={self.total_memory // 2**20}MB, multi_processor_count={self.multi_processor_count})")


def get_device_properties(device=None):
    _lazy_check()
    return _CudaDeviceProperties(*_C._cuda_device_properties(_index(device, optional=False)))


def get_device_name(device=None):
    return get_device_properties(device).name


def get_device_capability(device=None):
    p = get_device_properties(device)
    return p.major, p.minor


def is_bf16_supported():
    """Whether the current GPU computes in bfloat16 natively (compute capability 8.0 or newer)."""
    return is_available() and get_device_capability()[0] >= 8


def set_device(device):
    index = _index(device)
    if index >= 0:
        _lazy_check()
        _C._cuda_set_device(index)


class device:
    """Context manager that makes `device` current and restores the previous one."""

    def __init__(self, device):
        self.idx = _index(device)
        self.prev_idx = -1

    def __enter__(self):
        if self.idx >= 0:
            self.prev_idx = current_device()
            if self.prev_idx != self.idx:
                _C._cuda_set_device(self.idx)

    def __exit__(self, *exc):
        if self.idx >= 0 and self.prev_idx != self.idx:
            _C._cuda_set_device(self.prev_idx)
        return False


class device_of(device):
    """device(tensor.device) for a CUDA tensor; does nothing for a CPU one."""

    def __init__(self, obj):
        super().__init__(obj.device.index if obj.is_cuda else -1)


def synchronize(device=None):
    _lazy_check()
    _C._cuda_synchronize(_index(device))


# ---------------------------------------------------------------- streams
class Stream:
    """A CUDA stream from ember's per-device pool (streams are never destroyed)."""

    def __init__(self, device=None, priority=0, _handle=None):
        _lazy_check()
        self.device_index = _index(device, optional=False)
        self.priority = priority
        self.cuda_stream = (_handle if _handle is not None
                            else _C._cuda_pool_stream(self.device_index, -1 if priority < 0 else 0))

    @property
    def device(self):
        from .. import device as _device
        return _device("cuda", self.device_index)

    def query(self):
        return _C._cuda_stream_query(self.cuda_stream)

    def synchronize(self):
        _C._cuda_stream_synchronize(self.cuda_stream)

    def wait_event(self, event):
        _C._cuda_stream_wait_event(self.cuda_stream, event._handle)

    def wait_stream(self, stream):
        self.wait_event(stream.record_event())

    def record_event(self, event=None):
        event = Event() if event is None else event
        event.record(self)
        return event

    def __eq__(self, other):
        return (isinstance(other, Stream) and self.cuda_stream == other.cuda_stream
                and self.device_index == other.device_index)

    def __hash__(self):
        return hash((self.cuda_stream, self.device_index))

    def __repr__(self):
        return f"<ember.cuda.Stream device=cuda:{self.device_index} cuda_stream={self.cuda_stream:#x}>"


def current_stream(device=None):
    _lazy_check()
    index = _index(device, optional=False)
    return Stream(index, _handle=_C._cuda_current_stream(index))


def default_stream(device=None):
    _lazy_check()
    index = _index(device, optional=False)
    return Stream(index, _handle=_C._cuda_default_stream(index))


def set_stream(stream):
    if stream is not None:
        _C._cuda_set_current_stream(stream.device_index, stream.cuda_stream)


@_contextlib.contextmanager
def stream(stream):
    """Makes `stream` current (on its device) for the block; None does nothing."""
    if stream is None:
        yield
        return
    prev = current_stream(stream.device_index)
    with device(stream.device_index):
        set_stream(stream)
        try:
            yield
        finally:
            set_stream(prev)


class Event:
    """A CUDA event: record on a stream, wait on it, time between two."""

    def __init__(self, enable_timing=False, blocking=False, interprocess=False):
        if interprocess:
            raise NotImplementedError("ember.cuda.Event: interprocess events are not supported")
        _lazy_check()
        self.enable_timing = enable_timing
        self._handle = _C._cuda_event_create(enable_timing, blocking)

    def record(self, stream=None):
        stream = current_stream() if stream is None else stream
        _C._cuda_event_record(self._handle, stream.cuda_stream)

    def wait(self, stream=None):
        stream = current_stream() if stream is None else stream
        stream.wait_event(self)

    def query(self):
        return _C._cuda_event_query(self._handle)

    def synchronize(self):
        _C._cuda_event_synchronize(self._handle)

    def elapsed_time(self, end_event):
        """Milliseconds between this event and `end_event` (both recorded, timing enabled)."""
        if not (self.enable_timing and end_event.enable_timing):
            raise RuntimeError("ember.cuda.Event.elapsed_time: both events need enable_timing=True")
        return _C._cuda_event_elapsed_ms(self._handle, end_event._handle)

    def __del__(self):
        handle = getattr(self, "_handle", None)
        if handle:
            _C._cuda_event_destroy(handle)

    def __repr__(self):
        return f"<ember.cuda.Event {self._handle:#x}>"


# ---------------------------------------------------------------- memory
def memory_stats(device=None):
    if not is_available():
        return {"allocated_bytes": 0, "max_allocated_bytes": 0, "reserved_bytes": 0, "max_reserved_bytes": 0}
    return _C._cuda_memory_stats(_index(device))


def memory_allocated(device=None):
    """Bytes held by live tensors on `device`."""
    return memory_stats(device)["allocated_bytes"]


def max_memory_allocated(device=None):
    return memory_stats(device)["max_allocated_bytes"]


def memory_reserved(device=None):
    """Bytes the caching allocator holds from the driver (live and cached)."""
    return memory_stats(device)["reserved_bytes"]


def max_memory_reserved(device=None):
    return memory_stats(device)["max_reserved_bytes"]


def reset_peak_memory_stats(device=None):
    if is_available():
        _C._cuda_reset_peak_memory_stats(_index(device))


reset_max_memory_allocated = reset_peak_memory_stats


def empty_cache():
    """Returns cached blocks that hold no tensor to the driver."""
    _C._cuda_empty_cache()


# ---------------------------------------------------------------- cuBLAS
def _nvidia_library_dirs():
    """Directories of PyPI's nvidia-* packages that may hold libcublas.

    CUDA 13 wheels install to nvidia/cu13/lib, CUDA 12 ones to nvidia/cublas/lib.
    The nvidia namespace package is located without importing it (or torch)."""
    try:
        spec = _importlib_util.find_spec("nvidia")
    except Exception:  # a broken sys.path entry must not break `import ember`
        return []
    roots = list(spec.submodule_search_locations or []) if spec else []
    dirs = []
    for root in roots:
        for sub in ("cu13", "cublas", "cu12"):
            lib = _os.path.join(root, sub, "lib")
            if _os.path.isdir(lib) and lib not in dirs:
                dirs.append(lib)
    return dirs


if is_built():
    # Only consulted when mm first loads cuBLAS (ember/backends says which path runs).
    _C._cuda_set_cublas_search_dirs(_nvidia_library_dirs())


# ---------------------------------------------------------------- random
def manual_seed(seed):
    """Seeds the generator of the current GPU; a no-op without one, so CPU programs run unchanged."""
    if is_available():
        _cuda_generator(current_device()).manual_seed(seed)


def manual_seed_all(seed):
    for i in range(device_count()):
        _cuda_generator(i).manual_seed(seed)


def _cuda_generator(index):
    # The C++ default Philox generator of that GPU, the one rand(device="cuda:i") draws from.
    return _C._cuda_default_generator(index)


class _DefaultGenerators:
    """ember.cuda.default_generators: one generator per GPU, as in PyTorch."""

    def __len__(self):
        return device_count()

    def __getitem__(self, index):
        if not -len(self) <= index < len(self):
            raise IndexError("default_generators index out of range")
        return _cuda_generator(index % len(self))

    def __iter__(self):
        return (self[i] for i in range(len(self)))


default_generators = _DefaultGenerators()


def __getattr__(name):
    if name == "amp":  # ember.cuda.amp (deprecated spellings of ember.amp) loads on first use
        import importlib
        return importlib.import_module(f"{__name__}.amp")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
