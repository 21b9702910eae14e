"""Modules that hold other modules or parameters: Sequential, ModuleList, ModuleDict,
ParameterList, ParameterDict (as PyTorch's torch.nn.modules.container)."""
from __future__ import annotations

import operator
from collections import OrderedDict, abc as container_abcs
from itertools import chain, islice
from typing import Any, Iterable, Iterator, Mapping, Optional, TypeVar, Union

from ... import _C
from ..parameter import Parameter
from .module import Module, _typename

__all__ = ["Container", "Sequential", "ModuleList", "ModuleDict", "ParameterList", "ParameterDict"]

_V = TypeVar("_V")
_S = TypeVar("_S", bound="Sequential")


def _addindent(s_: str, num_spaces: int) -> str:
    # ModuleList's own copy, as PyTorch's: blank lines are indented too.
    s = s_.split("\n")
    if len(s) == 1:
        return s_
    first = s.pop(0)
    return first + "\n" + "\n".join((num_spaces * " ") + line for line in s)


def _abs_index(idx: Any, size: int) -> int:
    idx = operator.index(idx)
    if not (-size <= idx < size):
        raise IndexError(f"index {idx} is out of range")
    return idx + size if idx < 0 else idx


def _renumbered(modules: dict) -> OrderedDict:
    # After a deletion the keys are 0..n-1 again.
    return OrderedDict(zip([str(i) for i in range(len(modules))], modules.values()))


def _not_digit_dir(keys: list[str]) -> list[str]:
    return [key for key in keys if not key.isdigit()]


class Container(Module):
    """Deprecated: subclass Module instead."""

    def __init__(self, **kwargs: Any) -> None:
        import warnings

        warnings.warn("`nn.Container` is deprecated. All of its functionality is now implemented in `nn.Module`. "
                      "Subclass that instead.", FutureWarning, stacklevel=2)
        super().__init__()
        for key, value in kwargs.items():
            self.add_module(key, value)


def _check_sequential(other: Any) -> None:
    if not isinstance(other, Sequential):
        raise ValueError(f"add operator supports only objects of Sequential class, but {str(type(other))} is given.")


class Sequential(Module):
    """A sequential container: forward calls the modules in the order they were
    passed (as arguments, or as an OrderedDict of named modules), each on the
    previous one's output."""

    def __init__(self, *args: Any) -> None:
        super().__init__()
        if len(args) == 1 and isinstance(args[0], OrderedDict):
            for key, module in args[0].items():
                self.add_module(key, module)
        else:
            for idx, module in enumerate(args):
                self.add_module(str(idx), module)

    def _get_item_by_idx(self, iterator: Iterable[_V], idx: int) -> _V:
        return next(islice(iterator, _abs_index(idx, len(self)), None))

    def __getitem__(self, idx: Union[slice, int]) -> Any:
        if isinstance(idx, slice):
            return self.__class__(OrderedDict(list(self._modules.items())[idx]))
        return self._get_item_by_idx(self._modules.values(), idx)

    def __setitem__(self, idx: int, module: Module) -> None:
        key = self._get_item_by_idx(self._modules.keys(), idx)
        setattr(self, key, module)

    def __delitem__(self, idx: Union[slice, int]) -> None:
        if isinstance(idx, slice):
            for key in list(self._modules.keys())[idx]:
                delattr(self, key)
        else:
            delattr(self, self._get_item_by_idx(self._modules.keys(), idx))
        self._modules = _renumbered(self._modules)

    def __len__(self) -> int:
        return len(self._modules)

    def __add__(self, other: Any) -> Sequential:
        _check_sequential(other)
        ret = Sequential()
        for layer in chain(self, other):
            ret.append(layer)
        return ret

    def pop(self, key: Union[int, slice]) -> Module:
        """Removes and returns the module at `key`."""
        v = self[key]
        del self[key]
        return v

    def __iadd__(self: _S, other: Any) -> _S:
        _check_sequential(other)
        offset = len(self)
        for i, module in enumerate(other):
            self.add_module(str(i + offset), module)
        return self

    def _check_factor(self, other: Any) -> None:
        if not isinstance(other, int):
            raise TypeError(f"unsupported operand type(s) for *: {type(self)} and {type(other)}")
        if other <= 0:
            raise ValueError(f"Non-positive multiplication factor {other} for {type(self)}")

    def __mul__(self, other: int) -> Sequential:
        self._check_factor(other)
        combined = Sequential()
        for offset, module in enumerate(m for _ in range(other) for m in self):
            combined.add_module(str(offset), module)
        return combined

    def __rmul__(self, other: int) -> Sequential:
        return self.__mul__(other)

    def __imul__(self: _S, other: int) -> _S:
        self._check_factor(other)
        len_original = len(self)
        for offset in range(len_original, len_original * other, len_original):
            for i in range(len_original):
                self.add_module(str(i + offset), self._modules[str(i)])
        return self

    def __dir__(self) -> list[str]:
        return _not_digit_dir(super().__dir__())

    def __iter__(self) -> Iterator[Module]:
        return iter(self._modules.values())

    def forward(self, input: Any) -> Any:
        """Runs the modules in order, each on the previous one's output."""
        for module in self:
            input = module(input)
        return input

    def append(self: _S, module: Module) -> _S:
        """Appends a module at the end."""
        self.add_module(str(len(self)), module)
        return self

    def insert(self: _S, index: int, module: Module) -> _S:
        """Inserts a module before position `index`."""
        if not isinstance(module, Module):
            raise AssertionError(f"module should be of type: {Module}")
        n = len(self._modules)
        if not (-n <= index <= n):
            raise IndexError(f"Index out of range: {index}")
        if index < 0:
            index += n
        for i in range(n, index, -1):
            self._modules[str(i)] = self._modules[str(i - 1)]
        self._modules[str(index)] = module
        return self

    def extend(self: _S, sequential: Iterable[Module]) -> _S:
        """Appends each module of an iterable."""
        for layer in sequential:
            self.append(layer)
        return self


class ModuleList(Module):
    """Holds submodules in a list, indexed like one; its modules are registered
    (parameters(), to(), state_dict() see them)."""

    def __init__(self, modules: Optional[Iterable[Module]] = None) -> None:
        super().__init__()
        if modules is not None:
            self += modules

    def _get_abs_string_index(self, idx: Any) -> str:
        return str(_abs_index(idx, len(self)))

    def __getitem__(self, idx: Union[int, slice]) -> Any:
        if isinstance(idx, slice):
            return self.__class__(list(self._modules.values())[idx])
        return self._modules[self._get_abs_string_index(idx)]

    def __setitem__(self, idx: int, module: Module) -> None:
        setattr(self, self._get_abs_string_index(idx), module)

    def __delitem__(self, idx: Union[int, slice]) -> None:
        if isinstance(idx, slice):
            for k in range(len(self._modules))[idx]:
                delattr(self, str(k))
        else:
            delattr(self, self._get_abs_string_index(idx))
        self._modules = _renumbered(self._modules)

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[Module]:
        return iter(self._modules.values())

    def __iadd__(self, modules: Iterable[Module]) -> ModuleList:
        return self.extend(modules)

    def __add__(self, other: Iterable[Module]) -> ModuleList:
        combined = ModuleList()
        for i, module in enumerate(chain(self, other)):
            combined.add_module(str(i), module)
        return combined

    def __repr__(self) -> str:
        # Runs of equal reprs print once: "(0-2): 3 x Linear(...)".
        list_of_reprs = [repr(item) for item in self]
        if not list_of_reprs:
            return self._get_name() + "()"
        start_end_indices = [[0, 0]]
        repeated_blocks = [list_of_reprs[0]]
        for i, r in enumerate(list_of_reprs[1:], 1):
            if r == repeated_blocks[-1]:
                start_end_indices[-1][1] += 1
                continue
            start_end_indices.append([i, i])
            repeated_blocks.append(r)
        lines = []
        for (start_id, end_id), b in zip(start_end_indices, repeated_blocks):
            local_repr = f"({start_id}): {b}"
            if start_id != end_id:
                local_repr = f"({start_id}-{end_id}): {end_id - start_id + 1} x {b}"
            lines.append(_addindent(local_repr, 2))
        return self._get_name() + "(" + "\n  " + "\n  ".join(lines) + "\n" + ")"

    def __dir__(self) -> list[str]:
        return _not_digit_dir(super().__dir__())

    def insert(self, index: int, module: Module) -> None:
        """Inserts a module before position `index`."""
        for i in range(len(self._modules), index, -1):
            self._modules[str(i)] = self._modules[str(i - 1)]
        self._modules[str(index)] = module

    def append(self, module: Module) -> ModuleList:
        """Appends a module at the end."""
        self.add_module(str(len(self)), module)
        return self

    def pop(self, key: Union[int, slice]) -> Module:
        v = self[key]
        del self[key]
        return v

    def extend(self, modules: Iterable[Module]) -> ModuleList:
        """Appends each module of an iterable."""
        if not isinstance(modules, container_abcs.Iterable):
            raise TypeError("ModuleList.extend should be called with an iterable, but got " + type(modules).__name__)
        offset = len(self)
        for i, module in enumerate(modules):
            self.add_module(str(offset + i), module)
        return self


def _pairs(owner: str, items: Any) -> Iterator[tuple[Any, Any]]:
    # update()'s sequence form: an iterable of (key, value) pairs.
    for j, m in enumerate(items):
        if not isinstance(m, container_abcs.Iterable):
            raise TypeError(f"{owner} update sequence element #{j} should be Iterable; is" + type(m).__name__)
        if not len(m) == 2:
            raise ValueError(f"{owner} update sequence element #{j} has length {len(m)}; 2 is required")
        yield m[0], m[1]


class ModuleDict(Module):
    """Holds submodules in a dict (insertion ordered); its modules are registered."""

    def __init__(self, modules: Optional[Mapping[str, Module]] = None) -> None:
        super().__init__()
        if modules is not None:
            self.update(modules)

    def __getitem__(self, key: str) -> Module:
        return self._modules[key]

    def __setitem__(self, key: str, module: Module) -> None:
        self.add_module(key, module)

    def __delitem__(self, key: str) -> None:
        del self._modules[key]

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[str]:
        return iter(self._modules)

    def __contains__(self, key: str) -> bool:
        return key in self._modules

    def clear(self) -> None:
        """Removes every module."""
        self._modules.clear()

    def pop(self, key: str) -> Module:
        """Removes and returns the module under `key`."""
        v = self[key]
        del self[key]
        return v

    def keys(self) -> Any:
        return self._modules.keys()

    def items(self) -> Any:
        return self._modules.items()

    def values(self) -> Any:
        return self._modules.values()

    def update(self, modules: Any) -> None:
        """Adds the modules of a mapping, or of an iterable of (key, module) pairs."""
        if not isinstance(modules, container_abcs.Iterable):
            raise TypeError("ModuleDict.update should be called with an iterable of key/value pairs, but got "
                            + type(modules).__name__)
        pairs = modules.items() if isinstance(modules, (ModuleDict, container_abcs.Mapping)) \
            else _pairs("ModuleDict", modules)
        for key, module in pairs:
            self[key] = module


def _tensor_summary(p: Any, type_name: str) -> str:
    # "Parameter containing: [ember.float32 of size 2x3]", as the parameter containers print entries.
    if not isinstance(p, _C.TensorBase):
        return "Object of type: " + type(p).__name__
    size_str = "x".join(str(size) for size in p.size())
    device_str = f" ({p.device})" if p.device.type == "cuda" else ""
    kind = "Parameter" if isinstance(p, Parameter) else "Tensor"
    return f"{kind} containing: [{type_name} of size {size_str}{device_str}]"


class ParameterList(Module):
    """Holds parameters in a list; tensors added to it become Parameters."""

    def __init__(self, values: Optional[Iterable[Any]] = None) -> None:
        super().__init__()
        self._size = 0
        if values is not None:
            self += values

    def _get_abs_string_index(self, idx: Any) -> str:
        return str(_abs_index(idx, len(self)))

    def __getitem__(self, idx: Any) -> Any:
        if isinstance(idx, slice):
            out = self.__class__()
            for i in range(*idx.indices(len(self))):
                out.append(self[i])
            return out
        return getattr(self, self._get_abs_string_index(idx))

    def __setitem__(self, idx: int, param: Any) -> None:
        # Every way of adding to the list comes here, so this is where tensors become Parameters.
        idx_str = self._get_abs_string_index(idx)
        if isinstance(param, _C.TensorBase) and not isinstance(param, Parameter):
            param = Parameter(param)
        setattr(self, idx_str, param)

    def __len__(self) -> int:
        return self._size

    def __iter__(self) -> Iterator[Any]:
        return iter(self[i] for i in range(len(self)))

    def __iadd__(self, parameters: Iterable[Any]) -> ParameterList:
        return self.extend(parameters)

    def __dir__(self) -> list[str]:
        return _not_digit_dir(super().__dir__())

    def append(self, value: Any) -> ParameterList:
        """Appends a value (a tensor becomes a Parameter)."""
        new_idx = len(self)
        self._size += 1
        self[new_idx] = value
        return self

    def extend(self, values: Iterable[Any]) -> ParameterList:
        """Appends each value of an iterable (not of a tensor)."""
        if not isinstance(values, container_abcs.Iterable) or isinstance(values, _C.TensorBase):
            raise TypeError("ParameterList.extend should be called with an iterable, but got "
                            + type(values).__name__)
        for value in values:
            self.append(value)
        return self

    def extra_repr(self) -> str:
        return "\n".join(f"  ({k}): " + _tensor_summary(p, str(getattr(p, "dtype", "")))
                         for k, p in enumerate(self))

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("ParameterList should not be called.")


class ParameterDict(Module):
    """Holds parameters in a dict (insertion ordered; a plain dict given to the
    constructor or update is added in sorted key order); tensors become Parameters."""

    def __init__(self, parameters: Any = None) -> None:
        super().__init__()
        self._keys: dict[str, None] = {}
        if parameters is not None:
            self.update(parameters)

    def _key_to_attr(self, key: Any) -> str:
        if not isinstance(key, str):
            raise TypeError("Index given to ParameterDict cannot be used as a key as it is "
                            f"not a string (type is '{type(key).__name__}'). Open an issue on "
                            "github if you need non-string keys.")
        return key

    def __getitem__(self, key: str) -> Any:
        return getattr(self, self._key_to_attr(key))

    def __setitem__(self, key: str, value: Any) -> None:
        # Every way of adding to the dict comes here, so this is where tensors become Parameters.
        self._keys[key] = None
        attr = self._key_to_attr(key)
        if isinstance(value, _C.TensorBase) and not isinstance(value, Parameter):
            value = Parameter(value)
        setattr(self, attr, value)

    def __delitem__(self, key: str) -> None:
        del self._keys[key]
        delattr(self, self._key_to_attr(key))

    def __len__(self) -> int:
        return len(self._keys)

    def __iter__(self) -> Iterator[str]:
        return iter(self._keys)

    def __reversed__(self) -> Iterator[str]:
        return reversed(self._keys)

    def copy(self) -> ParameterDict:
        """A new ParameterDict holding the same parameters."""
        return ParameterDict(OrderedDict((k, self[k]) for k in self._keys))

    def __contains__(self, key: str) -> bool:
        return key in self._keys

    def setdefault(self, key: str, default: Any = None) -> Any:
        if key not in self:
            self[key] = default
        return self[key]

    def clear(self) -> None:
        for k in self._keys.copy():
            del self[k]

    def pop(self, key: str) -> Any:
        v = self[key]
        del self[key]
        return v

    def popitem(self) -> tuple[str, Any]:
        """Removes and returns the last inserted (key, value)."""
        k = next(reversed(self._keys))
        val = self[k]
        del self[k]
        return k, val

    def get(self, key: str, default: Any = None) -> Any:
        return self[key] if key in self else default

    def fromkeys(self, keys: Iterable[str], default: Any = None) -> ParameterDict:
        return ParameterDict((k, default) for k in keys)

    def keys(self) -> Any:
        return self._keys.keys()

    def items(self) -> Iterable[tuple[str, Any]]:
        return ((k, self[k]) for k in self._keys)

    def values(self) -> Iterable[Any]:
        return (self[k] for k in self._keys)

    def update(self, parameters: Any) -> None:
        """Adds the entries of a mapping (an OrderedDict or ParameterDict in order, another
        mapping sorted by key) or of an iterable of (key, value) pairs."""
        if not isinstance(parameters, container_abcs.Iterable):
            raise TypeError("ParametersDict.update should be called with an iterable of key/value pairs, but got "
                            + type(parameters).__name__)
        if isinstance(parameters, (OrderedDict, ParameterDict)):
            pairs: Any = parameters.items()
        elif isinstance(parameters, container_abcs.Mapping):
            pairs = sorted(parameters.items())
        else:
            pairs = _pairs("ParameterDict", parameters)
        for key, parameter in pairs:
            self[key] = parameter

    def extra_repr(self) -> str:
        return "\n".join(f"  ({k}): " + _tensor_summary(p, _typename(p)) for k, p in self.items())

    def __call__(self, input: Any) -> Any:
        raise RuntimeError("ParameterDict should not be called.")

    def __or__(self, other: ParameterDict) -> ParameterDict:
        copy = self.copy()
        copy.update(other)
        return copy

    def __ror__(self, other: ParameterDict) -> ParameterDict:
        copy = other.copy()
        copy.update(self)
        return copy

    def __ior__(self, other: ParameterDict) -> ParameterDict:
        self.update(other)
        return self
