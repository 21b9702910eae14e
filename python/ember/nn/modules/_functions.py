"""autograd Functions the modules use (as PyTorch's torch.nn.modules._functions)."""
from __future__ import annotations

from typing import Any

from ...autograd.function import Function


class BackwardHookFunction(Function):
    """Identity on its tensor arguments: its node is where a module's full backward
    hooks see (and may replace) the gradients of the module's inputs and outputs."""

    @staticmethod
    def forward(ctx: Any, *args: Any) -> Any:
        ctx.mark_non_differentiable(*[arg for arg in args if not arg.requires_grad])
        return args

    @staticmethod
    def backward(ctx: Any, *args: Any) -> Any:
        return args
