"""The ``out=`` forms of ops returning several tensors (frexp, geqrf, linalg.lu_factor, linalg.lu_factor_ex,
lu_unpack), as PyTorch's: each ``out`` tensor is resized and filled, and the call returns them as the named
tuple ``return_types.<op>_out``. The generated bindings derive ``out=`` for one-tensor ops only."""
from . import _C
from ._tensor import Tensor

__all__ = ["frexp", "geqrf", "lu_unpack", "linalg_lu_factor", "linalg_lu_factor_ex", "OUT_TYPES"]

# dtype names as PyTorch's out= messages print them (C types).
_C_NAMES = {"float32": "float", "float64": "double", "float16": "c10::Half", "bfloat16": "c10::BFloat16",
            "int64": "long int", "int32": "int", "int16": "short int", "int8": "signed char", "uint8": "unsigned char",
            "bool": "bool"}


def _c_name(dtype):
    return _C_NAMES[str(dtype).rsplit(".", 1)[-1]]


def _out_type(name, fields):
    """A tuple type named ``name`` with a property per field, printed and pickled as a torch.return_types entry."""
    def __new__(cls, values):
        return tuple.__new__(cls, values)

    def __repr__(self):
        body = ",\n".join(f"{field}={value!r}" for field, value in zip(fields, self))
        return f"ember.return_types.{name}(\n{body})"

    def __reduce__(self):
        return (type(self), (tuple(self),))

    namespace = {"__new__": __new__, "__repr__": __repr__, "__str__": __repr__, "__reduce__": __reduce__,
                 "__slots__": (), "_fields": fields, "n_fields": len(fields), "n_sequence_fields": len(fields),
                 "__module__": "ember.return_types", "__doc__": f"The out= result of {name[:-4]}."}
    for i, field in enumerate(fields):
        namespace[field] = property(lambda self, i=i: tuple.__getitem__(self, i))
    return type(name, (tuple,), namespace)


_frexp_out = _out_type("frexp_out", ("mantissa", "exponent"))
_geqrf_out = _out_type("geqrf_out", ("a", "tau"))
_lu_unpack_out = _out_type("lu_unpack_out", ("P", "L", "U"))
_lu_factor_out = _out_type("linalg_lu_factor_out", ("LU", "pivots"))
_lu_factor_ex_out = _out_type("linalg_lu_factor_ex_out", ("LU", "pivots", "info"))
OUT_TYPES = (_frexp_out, _geqrf_out, _lu_unpack_out, _lu_factor_out, _lu_factor_ex_out)


def _fill(name, out_type, compute, inputs, out, check_dtypes=True, dtype_error=None):
    """Computes the op and writes each result into its `out` tensor (resized), with PyTorch's checks."""
    size = len(out_type._fields)
    if not isinstance(out, (tuple, list)):
        raise TypeError(f"{name}(): argument 'out' must be tuple of Tensors, not {type(out).__name__}")
    if len(out) != size:
        raise TypeError(f"expected tuple of {size} elements but got {len(out)}")
    if _C.is_grad_enabled() and any(t.requires_grad for t in (*inputs, *out) if isinstance(t, Tensor)):
        raise RuntimeError(f"{name}(): functions with out=... arguments don't support automatic differentiation, "
                           "but one of the arguments requires grad.")
    results = compute()  # records no graph: nothing requires grad, or grad mode is off
    for field, target, value in zip(out_type._fields, out, results):
        if check_dtypes and target.dtype != value.dtype:
            if dtype_error:
                raise RuntimeError(dtype_error(field, target.dtype))
            raise RuntimeError(f"Expected out tensor to have dtype {_c_name(value.dtype)}, but got "
                               f"{_c_name(target.dtype)} instead")
    for target, value in zip(out, results):
        _C.mul(value, 1, out=target)  # resizes `target` and writes `value` into it (casting for geqrf)
    return out_type(tuple(out))


def frexp(input, *, out=None):
    """frexp(input, *, out=None) -> (Tensor mantissa, Tensor exponent)

    Decomposes input into mantissa (in (-1, 1)) and an int32 exponent with input = mantissa * 2 ** exponent."""
    if out is None:
        return _C.frexp(input)

    def frexp_dtype_error(field, got):
        if field == "mantissa":
            return f"torch.frexp() expects mantissa to have dtype {_c_name(input.dtype)} but got {_c_name(got)}"
        return f"torch.frexp() expects exponent to have int dtype but got {_c_name(got)}"
    return _fill("frexp", _frexp_out, lambda: _C.frexp(input), (input,), out,
                 dtype_error=frexp_dtype_error)


def geqrf(input, *, out=None):
    """geqrf(input, *, out=None) -> (Tensor a, Tensor tau)

    LAPACK's geqrf: R on and above the diagonal of a, the Householder reflectors below it and their scales tau."""
    if out is None:
        return _C.geqrf(input)
    return _fill("geqrf", _geqrf_out, lambda: _C.geqrf(input), (input,), out, check_dtypes=False)


def lu_unpack(LU_data, LU_pivots, unpack_data=True, unpack_pivots=True, *, out=None):
    """lu_unpack(LU_data, LU_pivots, unpack_data=True, unpack_pivots=True, *, out=None) -> (Tensor P, Tensor L, Tensor U)

    Unpacks linalg.lu_factor's LU and pivots into P, L and U with A = P L U."""
    def compute():
        return _C.lu_unpack(LU_data, LU_pivots, unpack_data, unpack_pivots)
    if out is None:
        return compute()
    return _fill("lu_unpack", _lu_unpack_out, compute, (LU_data,), out)


def linalg_lu_factor(A, *, pivot=True, out=None):
    """linalg.lu_factor(A, *, bool pivot=True, out=None) -> (Tensor LU, Tensor pivots)

    The compact LU factorization with partial pivoting of each matrix of A; raises when a U[i, i] is zero."""
    def compute():
        return _C.linalg_lu_factor(A, pivot=pivot)
    if out is None:
        return compute()
    return _fill("linalg_lu_factor", _lu_factor_out, compute, (A,), out)


def linalg_lu_factor_ex(A, *, pivot=True, check_errors=False, out=None):
    """linalg.lu_factor_ex(A, *, pivot=True, check_errors=False, out=None) -> (Tensor LU, Tensor pivots, Tensor info)

    linalg.lu_factor without the error check: info is 0, or i > 0 when U[i, i] (1-based) is zero."""
    def compute():
        return _C.linalg_lu_factor_ex(A, pivot=pivot, check_errors=check_errors)
    if out is None:
        return compute()
    return _fill("linalg_lu_factor_ex", _lu_factor_ex_out, compute, (A,), out)
