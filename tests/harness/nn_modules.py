"""Side-by-side checks of an ember.nn module against the same torch.nn module: the torch module's
state copied into ember's, then forward outputs, input and parameter gradients, buffers, reprs and
state_dict keys compared (float32 rounding by default)."""
import numpy as np

import ember


def to_ember(t):
    """A torch tensor's values as an ember tensor of the same dtype (bools and integers kept)."""
    return ember.tensor(t.detach().numpy())


def to_torch(e):
    import torch
    return torch.tensor(e.detach().numpy())


def assert_close(e, t, rtol=1e-5, atol=1e-6):
    """An ember tensor (or None) against a torch tensor (or None)."""
    assert (e is None) == (t is None), (e, t)
    if e is not None:
        np.testing.assert_allclose(e.detach().numpy(), t.detach().numpy(), rtol=rtol, atol=atol)


def copy_state(torch_module, ember_module):
    """Loads torch_module's state_dict (values, dtypes) into ember_module, strictly."""
    result = ember_module.load_state_dict({k: to_ember(v) for k, v in torch_module.state_dict().items()})
    assert not result.missing_keys and not result.unexpected_keys


def assert_same_structure(ember_module, torch_module):
    """Equal reprs, state_dict keys (in order) and parameter names."""
    assert repr(ember_module) == repr(torch_module)
    assert list(ember_module.state_dict()) == list(torch_module.state_dict())
    assert [n for n, _ in ember_module.named_parameters()] == [n for n, _ in torch_module.named_parameters()]


def assert_same_step(ember_module, torch_module, *inputs, grad_inputs=True, rtol=1e-5, atol=1e-6, seed=0):
    """One forward and backward of both modules on the same NumPy `inputs` (floating ones get
    gradients when grad_inputs, a bool or one per input): outputs, input gradients, parameter
    gradients and buffers equal."""
    import torch
    wanted = grad_inputs if isinstance(grad_inputs, (list, tuple)) else [grad_inputs] * len(inputs)
    float_input = [np.issubdtype(np.asarray(a).dtype, np.floating) and g for a, g in zip(inputs, wanted)]
    e_in = [ember.tensor(a, requires_grad=g) for a, g in zip(inputs, float_input)]
    t_in = [torch.tensor(a, requires_grad=g) for a, g in zip(inputs, float_input)]
    e_out, t_out = ember_module(*e_in), torch_module(*t_in)
    assert_close(e_out, t_out, rtol, atol)
    if e_out.requires_grad:
        g = np.random.default_rng(seed).standard_normal(tuple(t_out.shape)).astype(t_out.detach().numpy().dtype)
        e_out.backward(ember.tensor(g))
        t_out.backward(torch.tensor(g))
        for e, t, needs in zip(e_in, t_in, float_input):
            if needs:
                assert_close(e.grad, t.grad, rtol, atol)
        e_params, t_params = dict(ember_module.named_parameters()), dict(torch_module.named_parameters())
        for name, t in t_params.items():
            assert_close(e_params[name].grad, t.grad, rtol, atol)
    e_buffers = dict(ember_module.named_buffers())
    for name, t in torch_module.named_buffers():
        assert_close(e_buffers[name], t, rtol, atol)
    return e_out, t_out
