"""Function transforms, as torch.func: grad, grad_and_value, vjp, jacrev (reverse mode),
jvp, jacfwd (forward mode, through ember.autograd.forward_ad) and hessian (jacfwd of
jacrev). They are functional: the leaves' .grad is never written. No vmap: the Jacobians
loop over basis vectors."""
from ._forward import hessian, jacfwd, jvp
from ._reverse import grad, grad_and_value, jacrev, vjp

__all__ = ["grad", "grad_and_value", "vjp", "jacrev", "jvp", "jacfwd", "hessian"]
