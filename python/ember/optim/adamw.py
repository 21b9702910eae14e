"""AdamW (PyTorch's torch.optim.AdamW): Adam whose weight decay does not enter the moments."""
from __future__ import annotations

from typing import Any, Optional

from .adam import Adam, adam

__all__ = ["AdamW", "adamw"]


class AdamW(Adam):
    r"""Implements the AdamW algorithm: Adam with decoupled weight decay (default 1e-2), as PyTorch's.

    Args: as :class:`Adam`'s, without ``decoupled_weight_decay`` (always True).
    """

    def __init__(self, params: Any, lr: Any = 1e-3, betas: tuple = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 1e-2, amsgrad: bool = False, *, maximize: bool = False,
                 foreach: Optional[bool] = None, capturable: bool = False, differentiable: bool = False,
                 fused: Optional[bool] = None) -> None:
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, foreach=foreach, maximize=maximize,
                         capturable=capturable, differentiable=differentiable, fused=fused,
                         decoupled_weight_decay=True)

    def __setstate__(self, state: dict[str, Any]) -> None:
        # Loading any state into AdamW keeps decoupled_weight_decay True.
        super().__setstate__(state)
        for group in self.param_groups:
            group["decoupled_weight_decay"] = True


def adamw(*args: Any, **kwargs: Any) -> None:
    r"""Functional API that performs AdamW algorithm computation (adam with decoupled weight decay)."""
    kwargs["decoupled_weight_decay"] = True
    adam(*args, **kwargs)
