"""nn.factory_kwargs, as PyTorch's (defined in torch/nn/__init__.py)."""


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
