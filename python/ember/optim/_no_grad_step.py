"""The step of optimizers that have no `differentiable` option (Adafactor, Muon): always under no_grad."""
from __future__ import annotations

from typing import Any

import ember

from .optimizer import _GroupStepOptimizer, _closure_loss


class _NoGradStepOptimizer(_GroupStepOptimizer):
    def step(self, closure: Any = None) -> Any:
        """Performs a single optimization step.

        Args:
            closure (Callable, optional): A closure that reevaluates the model and returns the loss.
        """
        loss = _closure_loss(closure)
        with ember.no_grad():
            for group in self.param_groups:
                self._update_group(group)
        return loss
