"""ember: a PyTorch-style tensor library whose operators are generated from one spec."""


def _load_blas():
    # The extension links scipy-openblas32's library; load it first so the
    # dynamic linker finds it wherever pip put the package (found without
    # importing the package, which costs 40 ms).
    import ctypes
    import importlib.util
    import os
    spec = importlib.util.find_spec("scipy_openblas32")
    if spec is None or not spec.submodule_search_locations:
        return
    lib = os.path.join(spec.submodule_search_locations[0], "lib", "libscipy_openblas.so")
    if os.path.exists(lib):
        ctypes.CDLL(lib, mode=ctypes.RTLD_GLOBAL)


_load_blas()
del _load_blas


# libgomp keeps its default wait policy (a waiting thread spins ~5 ms before sleeping, as under
# torch): a forced short spin (GOMP_SPINCOUNT=1000) cost small ops a wake-up each region on an idle
# machine (MLP step 3.2 -> 5.1 ms, matmul 256 115 -> 79 GFLOP/s at 2 threads). On a machine busier
# than its cores, OMP_WAIT_POLICY=passive is the user's switch, as for any OpenMP program.
from . import _C  # noqa: E402
from ._tensor import Tensor  # noqa: E402  (first: every tensor object made from now on is one)
from ._C import (  # noqa: E402
    dtype, device, Generator, default_generator, UntypedStorage,
    bool, uint8, int8, int16, int32, int64, float16, bfloat16, float32, float64,
    is_grad_enabled, is_anomaly_enabled, is_anomaly_check_nan_enabled, set_anomaly_enabled, initial_seed, get_num_threads, set_num_threads,
    get_default_dtype, set_default_dtype, promote_types,
)
# The generated ops of ember itself (add, sum, zeros, ...; those with a `python_module:`
# are in that submodule). Private ones (_div_trunc) come too, as PyTorch's torch._foo.
from ._C._VariableFunctions import *  # noqa: E402,F401,F403
# torch.functional's Python forms (einsum's sublists, tensordot's dims, varargs, nonzero's as_tuple)
# replace the bare ops.
from .functional import (  # type: ignore[assignment,no-redef]  # noqa: E402,F401
    atleast_1d, atleast_2d, atleast_3d, broadcast_tensors, cartesian_prod, cdist, einsum, meshgrid, nonzero,
    tensordot, unique, unique_consecutive, histogram,
)


# As torch's PRIVATE_OPS: unique_dim stays in _C._VariableFunctions only (ember.unique(dim=) calls it).
_PRIVATE_OPS = ("unique_dim",)
del unique_dim  # type: ignore[name-defined]  # noqa: F821

# dtype aliases, as PyTorch names them.
float = float32
double = float64
half = float16
long = int64
int = int32
short = int16

from ._size import Size  # noqa: E402
from . import _storage  # noqa: E402,F401  (adds the Python-level storage methods)
from ._creation import (  # noqa: E402,F401
    tensor, as_tensor, from_numpy, zeros_like, ones_like, empty_like, full_like, rand_like, randn_like,
    randint_like, is_tensor, is_floating_point, numel, result_type, set_default_device, get_default_device,
)
from ._comparison import allclose, equal  # noqa: E402,F401  (Python bools: no ops.yaml entry)
from ._small_api import compile, detach, detach_, fill, square, square_, triu_indices, tril_indices  # noqa: E402,F401
from ._tuple_out import frexp, geqrf, lu_unpack  # type: ignore[assignment]  # noqa: E402,F401  (their out= tuples)
from ._layout import layout, strided  # noqa: E402,F401
from ._tensor_api import _attach_function_methods  # noqa: E402

_attach_function_methods()  # Tensor.cov, Tensor.storage(), ...: each loads its module on first use
del _attach_function_methods

# api-gaps' Python functions and classes: each module loads on first use of one of its names
# (ember.quantile, ember.FloatStorage, ...), binding all of them, so `import ember` does not pay for them.
_LEGACY_STORAGES = ("DoubleStorage FloatStorage HalfStorage BFloat16Storage LongStorage IntStorage ShortStorage "
                    "CharStorage ByteStorage BoolStorage")
_COPY_FUNCTIONS = ("alias_copy as_strided_copy detach_copy diagonal_copy expand_copy narrow_copy permute_copy "
                   "select_copy slice_copy split_copy split_with_sizes_copy squeeze_copy t_copy transpose_copy "
                   "unbind_copy unfold_copy unsqueeze_copy view_copy")  # the view ops' copying forms
_LAZY_MODULE_NAMES = {
    "_type_info": "finfo iinfo",
    "_factories": "empty_strided empty_permuted scalar_tensor asarray frombuffer logspace range hann_window "
                  "hamming_window blackman_window bartlett_window kaiser_window",
    "_composites": "hsplit vsplit dsplit block_diag broadcast_shapes trapezoid trapz cumulative_trapezoid "
                   "unravel_index isin chain_matmul addr",
    "_scatter_composites": "index_put index_reduce select_scatter slice_scatter diagonal_scatter as_strided_scatter",
    "_quantile": "quantile nanquantile",
    "_aliases": "adjoint split_with_sizes unsafe_chunk unsafe_split unsafe_split_with_sizes " + _COPY_FUNCTIONS,
    "_legacy_linalg": "svd qr triangular_solve cholesky_solve cholesky_inverse matrix_exp orgqr ormqr solve lstsq eig "
                      "symeig",
    "_runtime_flags": "use_deterministic_algorithms are_deterministic_algorithms_enabled "
                      "is_deterministic_algorithms_warn_only_enabled set_deterministic_debug_mode "
                      "get_deterministic_debug_mode get_num_interop_threads set_num_interop_threads "
                      "set_flush_denormal seed can_cast set_printoptions",
    "_typed_storage": "TypedStorage is_storage " + _LEGACY_STORAGES,
    "_tensor_predicates": "is_nonzero is_same_size is_signed is_conj is_neg is_inference is_complex conj "
                          "conj_physical conj_physical_ resolve_conj resolve_neg",
}
from ._legacy import TYPES as _LEGACY_TYPES  # noqa: E402

globals().update(_LEGACY_TYPES)  # ember.FloatTensor, ember.LongTensor, ...
from .autograd import no_grad, enable_grad, set_grad_enabled, inference_mode  # noqa: E402,F401
from . import autograd, cuda, backends, linalg, utils  # noqa: E402,F401
from typing import TYPE_CHECKING as _TYPE_CHECKING  # noqa: E402

# These load on first use (ember.nn, `import ember.nn`): nn, optim and distributed are most of
# `import ember`'s time, the others pull in pickle, zip or multiprocessing machinery.
_LAZY_SUBMODULES = ("nn", "optim", "distributed", "serialization", "return_types", "multiprocessing", "amp", "cpu",
                    "func")
if _TYPE_CHECKING:
    from . import distributed, func, nn, optim, serialization  # noqa: F401
    from .serialization import load, save  # noqa: F401
    from .utils.dlpack import from_dlpack  # noqa: F401
    from ._type_info import finfo, iinfo  # noqa: F401
    from ._factories import (  # noqa: F401
        empty_strided, empty_permuted, scalar_tensor, asarray, frombuffer, logspace, range, hann_window,
        hamming_window, blackman_window, bartlett_window, kaiser_window,
    )
    from ._composites import (  # noqa: F401
        hsplit, vsplit, dsplit, block_diag, broadcast_shapes, trapezoid, trapz, cumulative_trapezoid, unravel_index,
        isin, chain_matmul, addr,
    )
    from ._scatter_composites import (  # noqa: F401
        index_put, index_reduce, select_scatter, slice_scatter, diagonal_scatter, as_strided_scatter,
    )
    from ._quantile import quantile, nanquantile  # noqa: F401
    from ._aliases import adjoint, split_with_sizes, unsafe_chunk, unsafe_split, unsafe_split_with_sizes  # noqa: F401
    from ._legacy_linalg import (  # noqa: F401
        svd, qr, triangular_solve, cholesky_solve, cholesky_inverse, matrix_exp, orgqr, ormqr, solve, lstsq, eig,
        symeig,
    )
    from ._runtime_flags import (  # noqa: F401
        use_deterministic_algorithms, are_deterministic_algorithms_enabled,
        is_deterministic_algorithms_warn_only_enabled, set_deterministic_debug_mode, get_deterministic_debug_mode,
        get_num_interop_threads, set_num_interop_threads, set_flush_denormal, seed, can_cast, set_printoptions,
    )
    from ._typed_storage import TypedStorage, is_storage  # noqa: F401
    from ._tensor_predicates import (  # noqa: F401
        is_nonzero, is_same_size, is_signed, is_conj, is_neg, is_inference, is_complex, conj, conj_physical,
        conj_physical_, resolve_conj, resolve_neg,
    )


def __getattr__(name):
    if name in _LAZY_SUBMODULES:
        import importlib
        return importlib.import_module(f"{__name__}.{name}")  # binds ember.<name> as it imports
    if name in _LAZY_FUNCTIONS:
        import importlib
        where = _LAZY_FUNCTIONS[name]
        module = importlib.import_module(f"{__name__}.{where}")
        for other in [n for n, w in _LAZY_FUNCTIONS.items() if w == where]:  # later uses skip __getattr__
            globals()[other] = getattr(module, other)
        return globals()[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# ember.save/ember.load live in ember.serialization (zip and pickle machinery), loaded on first use, as do
# ember.autocast and from_dlpack (DLPack interop, issue 13).
_LAZY_FUNCTIONS = {"save": "serialization", "load": "serialization", "autocast": "amp.autocast_mode",
                   "from_dlpack": "utils.dlpack"}
for _where, _names in _LAZY_MODULE_NAMES.items():
    _LAZY_FUNCTIONS.update(dict.fromkeys(_names.split(), _where))
del _where, _names


def __dir__():
    return sorted(set(globals()) | set(_LAZY_FUNCTIONS))




def manual_seed(seed):
    """Seeds the default generator of the CPU and of every GPU; returns the CPU's."""
    _C.manual_seed(seed)
    cuda.manual_seed_all(seed)
    return default_generator


def get_rng_state():
    """The CPU default generator's state as a uint8 tensor (for set_rng_state)."""
    return default_generator.get_state()


def set_rng_state(new_state):
    """Restores the CPU default generator to a state from get_rng_state."""
    default_generator.set_state(new_state)


def set_float32_matmul_precision(precision):
    """"highest" keeps float32 products in float32; "high" and "medium" let
    cuBLAS use TF32 (ember.backends.cuda.matmul.allow_tf32), as in PyTorch."""
    if precision not in ("highest", "high", "medium"):
        raise RuntimeError(f"Invalid precision {precision!r}: expected 'highest', 'high' or 'medium'")
    backends.cuda.matmul.allow_tf32 = precision != "highest"
    global _float32_matmul_precision
    _float32_matmul_precision = precision


def get_float32_matmul_precision():
    # Follows allow_tf32 when a program sets that flag directly, as PyTorch does.
    if not backends.cuda.matmul.allow_tf32:
        return "highest"
    return "high" if _float32_matmul_precision == "highest" else _float32_matmul_precision


_float32_matmul_precision = "highest"

# Mixed precision (session 13): the per-thread autocast state; ember.autocast (ember.amp) loads on first use.
from ._C import (  # noqa: E402,F401
    is_autocast_enabled, set_autocast_enabled, get_autocast_dtype, set_autocast_dtype, is_autocast_cpu_enabled,
    set_autocast_cpu_enabled, get_autocast_cpu_dtype, set_autocast_cpu_dtype, get_autocast_gpu_dtype,
    set_autocast_gpu_dtype, is_autocast_cache_enabled, set_autocast_cache_enabled, autocast_increment_nesting,
    autocast_decrement_nesting, clear_autocast_cache,
)
_AUTOCAST_NAMES = [
    "autocast", "is_autocast_enabled", "set_autocast_enabled", "get_autocast_dtype", "set_autocast_dtype",
    "is_autocast_cpu_enabled", "set_autocast_cpu_enabled", "get_autocast_cpu_dtype", "set_autocast_cpu_dtype",
    "get_autocast_gpu_dtype", "set_autocast_gpu_dtype", "is_autocast_cache_enabled", "set_autocast_cache_enabled",
    "autocast_increment_nesting", "autocast_decrement_nesting", "clear_autocast_cache",
]


__version__ = "0.1.0"

# The public names: `from ember import *` gives these (submodules are imported by name, as in PyTorch).
__all__ = [name for name in _C._VariableFunctions.__all__ if not name.startswith("_") and name not in _PRIVATE_OPS] + [
    "Tensor", "Size", "dtype", "device", "Generator", "default_generator", "UntypedStorage",
    "bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64",
    "float", "double", "half", "long", "int", "short",
    "tensor", "as_tensor", "from_numpy", "zeros_like", "ones_like", "empty_like", "full_like", "rand_like",
    "randn_like", "randint_like", "is_tensor", "is_floating_point", "numel", "result_type",
    "no_grad", "enable_grad", "set_grad_enabled", "inference_mode", "is_grad_enabled",
    "is_anomaly_enabled", "is_anomaly_check_nan_enabled", "set_anomaly_enabled",
    "manual_seed", "initial_seed", "get_rng_state", "set_rng_state",
    "get_num_threads", "set_num_threads", "get_default_dtype", "set_default_dtype",
    "set_default_device", "get_default_device",
    "promote_types", "set_float32_matmul_precision", "get_float32_matmul_precision",
    "allclose", "equal", "unique", "from_dlpack", "save", "load",
    "square", "finfo", "iinfo", "triu_indices", "tril_indices", "compile",
    # api-gaps: Python composites and factories (see the modules imported above)
    "layout", "strided", "empty_strided", "empty_permuted", "scalar_tensor", "asarray", "frombuffer", "logspace",
    "range", "hann_window", "hamming_window", "blackman_window", "bartlett_window", "kaiser_window",
    "hsplit", "vsplit", "dsplit", "block_diag", "broadcast_shapes", "trapezoid", "trapz", "cumulative_trapezoid",
    "unravel_index", "isin", "chain_matmul", "addr", "index_put", "index_reduce", "select_scatter", "slice_scatter",
    "diagonal_scatter", "as_strided_scatter", "quantile", "nanquantile", "svd", "qr", "triangular_solve",
    "cholesky_solve", "cholesky_inverse", "matrix_exp", "orgqr", "ormqr", "solve", "lstsq", "eig", "symeig",
    "use_deterministic_algorithms",
    "are_deterministic_algorithms_enabled", "is_deterministic_algorithms_warn_only_enabled",
    "set_deterministic_debug_mode", "get_deterministic_debug_mode", "get_num_interop_threads",
    "set_num_interop_threads", "set_flush_denormal", "seed", "can_cast", "set_printoptions", "TypedStorage",
    "is_storage", "is_nonzero", "is_same_size", "is_signed", "is_conj", "is_neg", "is_inference", "is_complex",
    "conj", "conj_physical", "conj_physical_", "resolve_conj", "resolve_neg",
    "adjoint", "split_with_sizes", "unsafe_chunk", "unsafe_split", "unsafe_split_with_sizes",
    "square_", "fill", "detach", "detach_",
] + list(_LEGACY_TYPES) + _LEGACY_STORAGES.split() + _COPY_FUNCTIONS.split() + _AUTOCAST_NAMES
