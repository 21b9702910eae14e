"""LazyModuleMixin: modules whose parameter shapes come from their first input
(nn.LazyLinear and the like), as PyTorch's torch.nn.modules.lazy."""
from __future__ import annotations

import itertools
from typing import Any, Optional

from ...autograd import no_grad
from ..parameter import is_lazy

__all__ = ["LazyModuleMixin"]


class LazyModuleMixin:
    """Mixin (before the Module class) for modules with UninitializedParameters:
    the first forward calls `initialize_parameters(*args, **kwargs)`, which
    materializes them; the module then becomes `cls_to_become` if set. Loading a
    state_dict into an uninitialized module materializes its parameters too."""

    cls_to_become: Optional[type] = None

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._load_hook = self._register_load_state_dict_pre_hook(self._lazy_load_hook)
        self._initialize_hook = self.register_forward_pre_hook(self._infer_parameters, with_kwargs=True)

    def _save_to_state_dict(self: Any, destination: dict, prefix: str, keep_vars: bool) -> None:
        # Uninitialized parameters are saved as they are (detach() would lose their kind).
        for name, param in self._parameters.items():
            if param is not None:
                destination[prefix + name] = param if is_lazy(param) or keep_vars else param.detach()
        for name, buf in self._buffers.items():
            if buf is not None and name not in self._non_persistent_buffers_set:
                destination[prefix + name] = buf if is_lazy(buf) or keep_vars else buf.detach()

    def _lazy_load_hook(self: Any, state_dict: Any, prefix: str, local_metadata: dict, strict: bool,
                        missing_keys: list, unexpected_keys: list, error_msgs: list) -> None:
        # An uninitialized parameter takes the shape of the initialized one being loaded.
        for name, param in itertools.chain(self._parameters.items(), self._buffers.items()):
            key = prefix + name
            if key in state_dict and param is not None and is_lazy(param) and not is_lazy(state_dict[key]):
                with no_grad():
                    param.materialize(state_dict[key].shape)

    def initialize_parameters(self: Any, *args: Any, **kwargs: Any) -> None:
        """Materializes the parameters from the first forward's arguments; override it."""
        raise NotImplementedError(f"initialize_parameters is not implemented for {self.__class__.__name__}")

    def has_uninitialized_params(self: Any) -> bool:
        """Whether some parameter or buffer is still uninitialized."""
        return any(is_lazy(t) for t in itertools.chain(self._parameters.values(), self._buffers.values()))

    def _infer_parameters(self: Any, module: Any, args: tuple, kwargs: Optional[dict] = None) -> None:
        # The forward pre-hook of the first call; it removes itself.
        module.initialize_parameters(*args, **(kwargs or {}))
        if module.has_uninitialized_params():
            raise RuntimeError(f"module {self._get_name()} has not been fully initialized")
        module._initialize_hook.remove()
        module._load_hook.remove()
        delattr(module, "_initialize_hook")
        delattr(module, "_load_hook")
        if module.cls_to_become is not None:
            module.__class__ = module.cls_to_become

    def _replicate_for_data_parallel(self: Any) -> Any:
        raise RuntimeError("Modules with uninitialized parameters can't be used with `DataParallel`. "
                           "Run a dummy forward pass to correctly initialize the modules")
