"""ember.amp.GradScaler and its two ops (_amp_foreach_non_finite_check_and_unscale_, _amp_update_scale_)
against hand-computed values and PyTorch's GradScaler, plus a small bf16 autocast training loop."""
import pickle
import warnings

import numpy as np
import pytest

import ember
import ember.nn as nn

try:
    import torch
except ImportError:
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch is not installed")


def test_unscale_op_scales_in_place_and_flags_non_finite():
    grads = [ember.tensor([1.0, 2.0, 4.0]), ember.tensor([[2.0, 8.0], [6.0, 4.0]]).t(),  # non-contiguous
             ember.tensor([4.0, -8.0]).bfloat16(), ember.tensor([2.0]).double()]
    found_inf, inv_scale = ember.zeros(()), ember.full((), 0.25)
    ember._amp_foreach_non_finite_check_and_unscale_(grads, found_inf, inv_scale)
    assert found_inf.item() == 0.0
    assert grads[0].tolist() == [0.25, 0.5, 1.0]
    assert grads[1].tolist() == [[0.5, 1.5], [2.0, 1.0]]
    assert grads[2].dtype == ember.bfloat16 and grads[2].tolist() == [1.0, -2.0]
    assert grads[3].tolist() == [0.5]
    bad = [ember.tensor([1.0, float("nan")]), ember.tensor([float("inf"), 4.0])]
    ember._amp_foreach_non_finite_check_and_unscale_(bad, found_inf, inv_scale)
    assert found_inf.item() == 1.0
    assert np.isnan(bad[0][1].item()) and bad[0][0].item() == 0.25 and bad[1][1].item() == 1.0
    with pytest.raises(RuntimeError, match="inv_scale must be a 1-element tensor."):
        ember._amp_foreach_non_finite_check_and_unscale_(grads, found_inf, ember.ones(2))


def _update(scale, tracker, found, growth=2.0, backoff=0.5, interval=3):
    s, t = ember.full((), scale), ember.full((), tracker, dtype=ember.int32)
    out = ember._amp_update_scale_(s, t, ember.full((), found), growth, backoff, interval)
    assert out is s or ember.equal(out, s)
    return s.item(), t.item()


def test_update_scale_op():
    assert _update(8.0, 0, 0.0) == (8.0, 1)
    assert _update(8.0, 2, 0.0) == (16.0, 0)  # the third clean step grows
    assert _update(8.0, 2, 1.0) == (4.0, 0)  # an inf backs off and resets
    assert _update(3e38, 2, 0.0) == (pytest.approx(3e38), 0)  # never grows to inf
    with pytest.raises(RuntimeError, match="growth_tracker must be a single-element int tensor."):
        ember._amp_update_scale_(ember.ones(()), ember.zeros(()), ember.zeros(()), 2.0, 0.5, 3)
    if torch is not None:
        for scale, tracker, found in [(8.0, 0, 0.0), (8.0, 2, 0.0), (8.0, 2, 1.0), (3e38, 2, 0.0)]:
            s, t = torch.full((), scale), torch.full((), tracker, dtype=torch.int32)
            torch._amp_update_scale_(s, t, torch.full((), found), 2.0, 0.5, 3)
            assert _update(scale, tracker, found) == (s.item(), t.item())


def _model(lib, seed=0):
    rng = np.random.default_rng(seed)
    model = lib.nn.Sequential(lib.nn.Linear(6, 16), lib.nn.ReLU(), lib.nn.Linear(16, 4))
    with lib.no_grad():
        for p in model.parameters():
            p.copy_(lib.tensor(rng.standard_normal(tuple(p.shape)).astype(np.float32) * 0.3))
    return model


def _data(lib, steps):
    """One batch to fit, seen every step (so the loss must fall)."""
    rng = np.random.default_rng(1)
    batch = (lib.tensor(rng.standard_normal((8, 6)).astype(np.float32)), lib.tensor(rng.integers(0, 4, 8)))
    return [batch] * steps


def _train(lib, steps, poison=(), **scaler_kwargs):
    model = _model(lib)
    opt = lib.optim.AdamW(model.parameters(), lr=1e-2)
    scaler = lib.amp.GradScaler("cpu", **scaler_kwargs)
    losses, scales = [], []
    for i, (x, y) in enumerate(_data(lib, steps)):
        opt.zero_grad()
        with lib.autocast("cpu", dtype=lib.bfloat16):
            loss = lib.nn.functional.cross_entropy(model(x), y)
        scaled = scaler.scale(loss)
        if i in poison:
            scaled = scaled * float("inf")
        scaled.backward()
        scaler.step(opt)
        scaler.update()
        losses.append(loss.item())
        scales.append(scaler.get_scale())
    return losses, scales, model, scaler


def test_training_loop_learns_with_bf16_autocast_and_grad_scaler():
    losses, scales, _, _ = _train(ember, 30)
    assert losses[-1] < 0.5 * losses[0]
    assert scales == [2.0 ** 16] * 30  # no inf: no backoff; growth_interval 2000 not reached


@needs_torch
def test_training_loop_matches_torch():
    ours, our_scales, model, scaler = _train(ember, 12, poison=(3,), growth_interval=4)
    theirs, their_scales, tmodel, tscaler = _train(torch, 12, poison=(3,), growth_interval=4)
    np.testing.assert_allclose(ours, theirs, rtol=3e-2, atol=3e-2)
    assert our_scales == their_scales
    assert scaler.state_dict() == tscaler.state_dict()
    for p, q in zip(model.parameters(), tmodel.parameters()):
        np.testing.assert_allclose(p.detach().numpy(), q.detach().numpy(), rtol=5e-2, atol=5e-2)


def test_inf_skips_the_step_and_backs_off():
    param = nn.Parameter(ember.tensor([1.0, 2.0]))
    opt = ember.optim.SGD([param], lr=0.1)
    scaler = ember.amp.GradScaler("cpu", init_scale=4.0, growth_interval=2)
    (scaler.scale(param.sum()) * float("inf")).backward()
    assert scaler.step(opt) is None
    assert param.tolist() == [1.0, 2.0]  # skipped
    scaler.update()
    assert scaler.get_scale() == 2.0 and scaler._get_growth_tracker() == 0
    for expected_scale, expected_tracker in [(2.0, 1), (4.0, 0)]:  # grows after growth_interval clean steps
        opt.zero_grad()
        scaler.scale((param * 3).sum()).backward()
        scaler.step(opt)
        scaler.update()
        assert (scaler.get_scale(), scaler._get_growth_tracker()) == (expected_scale, expected_tracker)
    np.testing.assert_allclose(param.detach().numpy(), [1.0 - 0.6, 2.0 - 0.6], rtol=1e-6)  # unscaled grad 3


def test_unscale_then_clip_and_errors():
    param = nn.Parameter(ember.tensor([3.0, 4.0]))
    opt = ember.optim.SGD([param], lr=1.0)
    scaler = ember.amp.GradScaler("cpu", init_scale=8.0)
    with pytest.raises(AssertionError, match="Attempted unscale_ but _scale is None."):
        scaler.unscale_(opt)
    scaler.scale((param * param).sum() / 2).backward()
    assert param.grad.tolist() == [24.0, 32.0]
    scaler.unscale_(opt)
    assert param.grad.tolist() == [3.0, 4.0]
    with pytest.raises(RuntimeError, match=r"unscale_\(\) has already been called on this optimizer since the last "
                                           r"update\(\)."):
        scaler.unscale_(opt)
    scaler.step(opt)
    with pytest.raises(RuntimeError, match=r"step\(\) has already been called since the last update\(\)."):
        scaler.step(opt)
    with pytest.raises(RuntimeError, match=r"unscale_\(\) is being called after step\(\)."):
        scaler.unscale_(opt)
    with pytest.raises(RuntimeError, match="Closure use is not currently supported if GradScaler is enabled."):
        scaler.step(opt, closure=lambda: None)
    scaler.update()
    assert param.tolist() == [0.0, 0.0]
    scaler.update(2.0)
    assert scaler.get_scale() == 2.0
    scaler.update(ember.full((), 32.0))
    assert scaler.get_scale() == 32.0
    with pytest.raises(ValueError, match="outputs must be a Tensor or an iterable of Tensors"):
        scaler.scale([1.0])
    a, b = scaler.scale([ember.ones(2), (ember.ones(1),)])
    assert a.tolist() == [32.0, 32.0] and b[0].tolist() == [32.0]


def test_fp16_gradients_refused_by_unscale():
    param = nn.Parameter(ember.ones(2, dtype=ember.float16))
    scaler = ember.amp.GradScaler("cpu")
    scaler.scale(param.float().sum()).backward()
    with pytest.raises(ValueError, match="Attempting to unscale FP16 gradients."):
        scaler.unscale_(ember.optim.SGD([param], lr=1.0))


def test_state_dict_round_trip_and_pickle():
    scaler = ember.amp.GradScaler("cpu", init_scale=128.0, growth_factor=3.0, backoff_factor=0.25,
                                  growth_interval=7)
    state = scaler.state_dict()
    assert state == {"scale": 128.0, "growth_factor": 3.0, "backoff_factor": 0.25, "growth_interval": 7,
                     "_growth_tracker": 0}
    scaler.scale(ember.ones(()))
    other = ember.amp.GradScaler("cpu")
    other.load_state_dict(dict(state, scale=64.0, _growth_tracker=5))
    assert other.get_scale() == 64.0 and other._get_growth_tracker() == 5 and other.get_growth_interval() == 7
    other.scale(ember.ones(()))
    assert other._scale.item() == 64.0 and other._growth_tracker.item() == 5
    clone = pickle.loads(pickle.dumps(other))
    assert clone.state_dict() == other.state_dict() and clone._scale is None
    with pytest.raises(RuntimeError, match="The source state dict is empty"):
        other.load_state_dict({})
    if torch is not None:
        theirs = torch.amp.GradScaler("cpu", init_scale=128.0, growth_factor=3.0, backoff_factor=0.25,
                                      growth_interval=7)
        assert theirs.state_dict() == state


def test_disabled_scaler_passes_through():
    scaler = ember.amp.GradScaler("cpu", enabled=False)
    loss = ember.ones(())
    assert scaler.scale(loss) is loss and scaler.get_scale() == 1.0 and scaler.state_dict() == {}
    assert not scaler.is_enabled()
    with pytest.warns(UserWarning, match="torch.cuda.amp.GradScaler is enabled, but CUDA is not available.  Disabl"):
        cuda_scaler = ember.amp.GradScaler()  # device="cuda" by default, as PyTorch
    assert not cuda_scaler.is_enabled()
    with pytest.warns(FutureWarning, match=r"`torch\.cuda\.amp\.GradScaler\(args\.\.\.\)` is deprecated"), \
            warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        ember.cuda.amp.GradScaler()
    with pytest.warns(FutureWarning, match=r"`torch\.cpu\.amp\.GradScaler\(args\.\.\.\)` is deprecated"):
        assert ember.cpu.amp.GradScaler().is_enabled()
    with pytest.raises(AssertionError, match="The growth factor must be > 1.0."):
        ember.amp.GradScaler("cpu", growth_factor=1.0)


def test_unscale_op_returns_none_as_torch():
    libs = [ember] + ([torch] if torch is not None else [])
    for lib in libs:
        grads = [lib.tensor([2.0, 4.0])]
        assert lib._amp_foreach_non_finite_check_and_unscale_(grads, lib.zeros(()), lib.full((), 0.5)) is None
        assert grads[0].tolist() == [1.0, 2.0]
    # A `-> ()` op of the codegen (no Python wrapper): the function of the op table itself.
    assert ember._amp_foreach_non_finite_check_and_unscale_ is ember._C._VariableFunctions.\
        _amp_foreach_non_finite_check_and_unscale_


def test_unscale_op_traces_without_outputs():
    """A trace mode sees the call with no outputs, as a TorchDispatchMode sees PyTorch's op return None."""
    from ember.utils.trace import TraceMode

    calls = []

    class Recorder(TraceMode):
        def on_call(self, call):
            calls.append(call)

    grads, found_inf, inv_scale = [ember.tensor([2.0, float("inf")])], ember.zeros(()), ember.full((), 0.5)
    with Recorder():
        ember._amp_foreach_non_finite_check_and_unscale_(grads, found_inf, inv_scale)
    (call,) = calls
    assert call.full_name == "_amp_foreach_non_finite_check_and_unscale_" and call.outputs == ()
    assert call.args[0][0] is not grads[0] and call.args[0][0].tolist() == [1.0, float("inf")]
    assert call.args[1].item() == 1.0 and call.args[2].item() == 0.5
    if torch is None:
        return
    from torch.utils._python_dispatch import TorchDispatchMode

    class Returns(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.seen = []

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            out = func(*args, **(kwargs or {}))
            self.seen.append((func.__name__, out))
            return out

    with Returns() as mode:
        torch._amp_foreach_non_finite_check_and_unscale_([torch.tensor([2.0])], torch.zeros(()),
                                                         torch.full((), 0.5))
    assert ("_amp_foreach_non_finite_check_and_unscale_.default", None) in mode.seen


def _train_fused(lib, opt_name, fused, steps=5, poison=(2,), unscale_first=False):
    """float32 steps of a small linear model under GradScaler; step `poison` gets an inf gradient."""
    rng = np.random.default_rng(3)
    model = lib.nn.Linear(4, 3)
    with lib.no_grad():
        model.weight.copy_(lib.tensor(rng.standard_normal((3, 4)).astype(np.float32)))
        model.bias.copy_(lib.tensor(rng.standard_normal(3).astype(np.float32)))
    opt_cls = getattr(lib.optim, opt_name)
    opt = opt_cls(model.parameters(), lr=0.1, fused=fused, **({"momentum": 0.9} if opt_name == "SGD" else {}))
    scaler = lib.amp.GradScaler("cpu", init_scale=1024.0, growth_interval=2)
    x = lib.tensor(rng.standard_normal((6, 4)).astype(np.float32))
    grads, weights = [], []
    for i in range(steps):
        opt.zero_grad()
        loss = (model(x) ** 2).mean()
        scaled = scaler.scale(loss)
        (scaled * float("inf") if i in poison else scaled).backward()
        if unscale_first:
            scaler.unscale_(opt)
        scaler.step(opt)
        scaler.update()
        grads.append(model.weight.grad.numpy().copy())
        weights.append(model.weight.detach().numpy().copy())
    return grads, weights, scaler.get_scale(), opt


@pytest.mark.parametrize("opt_name", ["Adam", "AdamW", "SGD"])
@pytest.mark.parametrize("unscale_first", [False, True])
def test_fused_optimizer_unscales_itself(opt_name, unscale_first):
    """fused=True sets _step_supports_amp_scaling: GradScaler.step only checks for inf and hands grad_scale
    and found_inf to the optimizer, which divides the gradients and skips the update after an inf; the result
    is the unfused path's (which unscales first)."""
    grads, weights, scale, opt = _train_fused(ember, opt_name, True, unscale_first=unscale_first)
    assert opt._step_supports_amp_scaling is True and not hasattr(opt, "grad_scale") and not hasattr(opt, "found_inf")
    assert not hasattr(_train_fused(ember, opt_name, False, steps=1)[3], "_step_supports_amp_scaling")
    ref_grads, ref_weights, ref_scale, _ = _train_fused(ember, opt_name, False, unscale_first=unscale_first)
    assert scale == ref_scale == 2048.0  # grown after steps 0-1, backed off at 2, grown after 3-4
    np.testing.assert_array_equal(weights[2], weights[1])  # the inf step was skipped
    for i in (0, 1, 3, 4):
        np.testing.assert_allclose(grads[i], ref_grads[i], rtol=1e-5, atol=1e-6)  # left unscaled in place
        np.testing.assert_allclose(weights[i], ref_weights[i], rtol=1e-5, atol=1e-6)
    if opt_name != "SGD":
        assert opt.state[opt.param_groups[0]["params"][0]]["step"].item() == 4  # the skipped step not counted
    if torch is not None:
        t_grads, t_weights, t_scale, t_opt = _train_fused(torch, opt_name, True, unscale_first=unscale_first)
        assert t_opt._step_supports_amp_scaling is True and t_scale == scale
        for i in (0, 1, 3, 4):
            np.testing.assert_allclose(grads[i], t_grads[i], rtol=1e-5, atol=1e-6)
            np.testing.assert_allclose(weights[i], t_weights[i], rtol=1e-5, atol=1e-6)
