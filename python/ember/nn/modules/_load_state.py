"""Module.load_state_dict and the default Module._load_from_state_dict (as PyTorch's):
copy each tensor into the module's (or, with assign, make it the module's), collecting
missing and unexpected keys and size mismatches into one RuntimeError."""
from __future__ import annotations

import itertools
from collections import OrderedDict
from typing import Any, Mapping

from ... import _C
from ...autograd import no_grad
from ..parameter import Parameter, is_lazy

_EXTRA_STATE_KEY_SUFFIX = "_extra_state"


def _overrides(module: Any, name: str) -> bool:
    from .module import Module
    return getattr(type(module), name, None) is not getattr(Module, name)


def _load_one(module: Any, name: str, key: str, param: Any, input_param: Any, assign: bool,
              error_msgs: list) -> None:
    if not isinstance(input_param, _C.TensorBase):
        error_msgs.append(f'While copying the parameter named "{key}", expected ember.Tensor or Tensor-like object '
                          f"from checkpoint but received {type(input_param)}")
        return
    lazy = is_lazy(param)
    # Old checkpoints saved scalars as 1-element tensors.
    if not lazy and len(param.shape) == 0 and len(input_param.shape) == 1 and input_param.shape[0] == 1:
        input_param = input_param[0]
    if not lazy and input_param.shape != param.shape:
        error_msgs.append(f"size mismatch for {key}: copying a param with shape {input_param.shape} from checkpoint, "
                          f"the shape in current model is {param.shape}.")
        return
    try:
        with no_grad():
            if assign:
                if isinstance(param, Parameter):
                    if not isinstance(input_param, Parameter):
                        input_param = Parameter(input_param, requires_grad=param.requires_grad)
                    else:
                        input_param.requires_grad_(param.requires_grad)
                setattr(module, name, input_param)
            else:
                param.copy_(input_param)
    except Exception as ex:
        error_msgs.append(f'While copying the parameter named "{key}", whose dimensions in the model are '
                          f"{param.size()} and whose dimensions in the checkpoint are {input_param.size()}, "
                          f"an exception occurred : {ex.args}.")


def load_own_state(module: Any, state_dict: Mapping[str, Any], prefix: str, local_metadata: dict, strict: bool,
                   missing_keys: list, unexpected_keys: list, error_msgs: list) -> None:
    """The default Module._load_from_state_dict."""
    for hook in module._load_state_dict_pre_hooks.values():
        hook(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys, error_msgs)
    persistent_buffers = {k: v for k, v in module._buffers.items() if k not in module._non_persistent_buffers_set}
    local_state = {k: v for k, v in itertools.chain(module._parameters.items(), persistent_buffers.items())
                   if v is not None}
    assign = local_metadata.get("assign_to_params_buffers", False)
    for name, param in local_state.items():
        key = prefix + name
        if key in state_dict:
            _load_one(module, name, key, param, state_dict[key], assign, error_msgs)
        elif strict:
            missing_keys.append(key)

    extra_state_key = prefix + _EXTRA_STATE_KEY_SUFFIX
    if _overrides(module, "set_extra_state"):
        if extra_state_key in state_dict:
            module.set_extra_state(state_dict[extra_state_key])
        elif strict:
            missing_keys.append(extra_state_key)
    elif strict and extra_state_key in state_dict:
        unexpected_keys.append(extra_state_key)

    if strict:
        for key in state_dict:
            if key.startswith(prefix) and key != extra_state_key:
                input_name = key[len(prefix):].split(".", 1)
                # A dotted rest names a child module's entry.
                if len(input_name) > 1:
                    if input_name[0] not in module._modules:
                        unexpected_keys.append(key)
                elif input_name[0] not in local_state:
                    unexpected_keys.append(key)


def load_state_dict(root: Any, state_dict: Mapping[str, Any], strict: bool, assign: bool) -> Any:
    """Module.load_state_dict."""
    from .module import _IncompatibleKeys

    if not isinstance(state_dict, Mapping):
        raise TypeError(f"Expected state_dict to be dict-like, got {type(state_dict)}.")
    missing_keys: list[str] = []
    unexpected_keys: list[str] = []
    error_msgs: list[str] = []
    # A copy, so that _load_from_state_dict overrides may modify it.
    metadata = getattr(state_dict, "_metadata", None)
    state_dict = OrderedDict(state_dict)
    if metadata is not None:
        state_dict._metadata = metadata  # type: ignore[attr-defined]

    def load(module: Any, local_state_dict: Mapping[str, Any], prefix: str = "") -> None:
        local_metadata = {} if metadata is None else metadata.get(prefix[:-1], {})
        if assign:
            local_metadata["assign_to_params_buffers"] = assign
        module._load_from_state_dict(local_state_dict, prefix, local_metadata, True, missing_keys, unexpected_keys,
                                     error_msgs)
        for name, child in module._modules.items():
            if child is not None:
                child_prefix = prefix + name + "."
                child_state_dict = {k: v for k, v in local_state_dict.items() if k.startswith(child_prefix)}
                load(child, child_state_dict, child_prefix)
        # The post hooks may change the key lists in place.
        incompatible_keys = _IncompatibleKeys(missing_keys, unexpected_keys)
        for hook in module._load_state_dict_post_hooks.values():
            if hook(module, incompatible_keys) is not None:
                raise AssertionError("Hooks registered with ``register_load_state_dict_post_hook`` are not "
                                     "expected to return new values, if incompatible_keys need to be modified, "
                                     "it should be done inplace.")

    load(root, state_dict)
    if strict:
        if unexpected_keys:
            error_msgs.insert(0, "Unexpected key(s) in state_dict: {}. ".format(
                ", ".join(f'"{k}"' for k in unexpected_keys)))
        if missing_keys:
            error_msgs.insert(0, "Missing key(s) in state_dict: {}. ".format(
                ", ".join(f'"{k}"' for k in missing_keys)))
    if error_msgs:
        raise RuntimeError("Error(s) in loading state_dict for {}:\n\t{}".format(
            root.__class__.__name__, "\n\t".join(error_msgs)))
    return _IncompatibleKeys(missing_keys, unexpected_keys)
