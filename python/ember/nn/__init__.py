"""ember.nn: neural-network building blocks, as torch.nn: Module and its containers,
Parameter and Buffer, the layers, the initializers (ember.nn.init) and the functional
interface (ember.nn.functional)."""
from .parameter import Buffer, Parameter, UninitializedBuffer, UninitializedParameter  # noqa: F401
from .modules import *  # noqa: F401,F403
from . import functional, init, modules, parameter  # noqa: F401
from . import parallel, utils  # noqa: F401
from .parallel import DataParallel  # noqa: F401


def factory_kwargs(kwargs: "dict | None") -> dict:
    """The factory arguments (device, dtype, memory_format) of a module's `**kwargs`, checked:
    unknown keys raise TypeError, and `factory_kwargs={...}` may name them when they clash."""
    if kwargs is None:
        return {}
    simple_keys = {"device", "dtype", "memory_format"}
    expected_keys = simple_keys | {"factory_kwargs"}
    if not kwargs.keys() <= expected_keys:
        raise TypeError(f"unexpected kwargs {kwargs.keys() - expected_keys}")
    r = dict(kwargs.get("factory_kwargs", {}))
    for k in simple_keys:
        if k in kwargs:
            if k in r:
                raise TypeError(f"{k} specified twice, in **kwargs and in factory_kwargs")
            r[k] = kwargs[k]
    return r


from . import grad  # noqa: F401,E402  (conv input/weight gradients, i12-extras)
