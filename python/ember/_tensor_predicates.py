"""torch.* forms of Tensor predicates and of the conjugation no-ops of real tensors
(ember has no complex dtypes: conj and friends return their input, as torch's do for real ones)."""
from . import _C


def _tensor_arg(name, input):
    if not isinstance(input, _C.TensorBase):
        raise TypeError(f"{name}(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}")
    return input


def is_nonzero(input):
    """The value of a one-element tensor as a bool (RuntimeError for more or fewer elements)."""
    return _tensor_arg("is_nonzero", input).is_nonzero()


def is_same_size(input, other):
    return _tensor_arg("is_same_size", input).is_same_size(other)


def is_signed(input):
    return _tensor_arg("is_signed", input).is_signed()


def is_conj(input):
    return _tensor_arg("is_conj", input).is_conj()


def is_neg(input):
    return _tensor_arg("is_neg", input).is_neg()


def is_inference(input):
    return _tensor_arg("is_inference", input).is_inference()


def is_complex(input):
    """False: ember has no complex dtypes."""
    _tensor_arg("is_complex", input)
    return False


def conj(input):
    return _tensor_arg("conj", input)


def conj_physical(input, *, out=None):
    _tensor_arg("conj_physical", input)
    return input if out is None else out.copy_(input)


def conj_physical_(input):
    return _tensor_arg("conj_physical_", input)


def resolve_conj(input):
    return _tensor_arg("resolve_conj", input)


def resolve_neg(input):
    return _tensor_arg("resolve_neg", input)
