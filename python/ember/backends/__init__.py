"""ember.backends: what the build contains and which libraries ops use."""
import types

from .. import _C


def _preferred_blas_library(backend=None):
    """The library mm/bmm/matmul use on CUDA: "cublas" or "ember" (ember's tiled kernel).

    Like torch.backends.cuda.preferred_blas_library: pass "cublas" or "ember" to
    choose (this overrides EMBER_DISABLE_CUBLAS). "cublas" needs a GPU and a
    libcublas that loads; otherwise the answer stays "ember"."""
    if backend is not None:
        name = str(backend).lower()
        if name not in ("cublas", "ember"):
            raise ValueError(f"preferred_blas_library: expected 'cublas' or 'ember', got {backend!r}")
        _C._cuda_set_cublas_enabled(name == "cublas")
    return "cublas" if _C._cuda_cublas_available() else "ember"


class _MatmulSettings:
    """ember.backends.cuda.matmul: `allow_tf32` lets cuBLAS multiply float32 in
    TF32 (faster, about 10 bits of mantissa); False by default, as in PyTorch."""

    @property
    def allow_tf32(self):
        return bool(_C._cuda_allow_tf32())

    @allow_tf32.setter
    def allow_tf32(self, allow):
        _C._cuda_set_allow_tf32(bool(allow))


cuda = types.SimpleNamespace(
    is_built=lambda: bool(_C._cuda_built),
    matmul=_MatmulSettings(),
    # True when mm/bmm on CUDA run through cuBLAS; False without a GPU, without
    # libcublas, or with EMBER_DISABLE_CUBLAS=1. Never raises.
    cublas_available=lambda: bool(_C._cuda_cublas_available()),
    # Where cuBLAS was loaded from, or why it was not.
    cublas_status=_C._cuda_cublas_status,
    preferred_blas_library=_preferred_blas_library,
)
openblas = types.SimpleNamespace(corename=_C._blas_corename)


def _cudnn_unavailable():
    return False


# ember has no cuDNN: these flags are PyTorch's defaults and are read by no kernel; scripts set them
# (torch.backends.cudnn.benchmark = True) and read them back.
cudnn = types.SimpleNamespace(is_available=_cudnn_unavailable, version=lambda: None, enabled=True, benchmark=False,
                              deterministic=False, allow_tf32=True)
