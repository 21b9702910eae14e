"""Issue 12's "Done when": short training loops (20 steps) of zoo models (tests/zoo_models.py) with SGD
(momentum, nesterov, weight_decay), Adam(amsgrad), AdamW and StepLR/OneCycleLR give PyTorch's loss at every
step to float32 rounding from the same initial weights and data, and close final weights; the optimizer's
state_dict loads across the libraries. Without torch: the losses fall, and a checkpoint (model + optimizer
+ scheduler state_dicts) resumed in a fresh ember model continues exactly as the uninterrupted run."""
import numpy as np
import pytest

import ember
from zoo_models import to_lib, without_dropout, zoo

try:
    import torch
except ImportError:  # the torch comparisons are skipped without it
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="needs PyTorch")
STEPS = 20


def _sgd_steplr(lib, model):
    opt = lib.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, nesterov=True, weight_decay=1e-3)
    return opt, lib.optim.lr_scheduler.StepLR(opt, step_size=6, gamma=0.5)


def _adam_amsgrad_steplr(lib, model):
    opt = lib.optim.Adam(model.parameters(), lr=0.01, amsgrad=True, weight_decay=1e-4)
    return opt, lib.optim.lr_scheduler.StepLR(opt, step_size=5, gamma=0.7)


def _adamw_onecycle(lib, model):
    opt = lib.optim.AdamW(model.parameters(), lr=0.01, weight_decay=0.05)
    return opt, lib.optim.lr_scheduler.OneCycleLR(opt, max_lr=0.02, total_steps=STEPS)


def _sgd_momentum_onecycle(lib, model):
    opt = lib.optim.SGD(model.parameters(), lr=0.05, momentum=0.8, dampening=0.1, weight_decay=5e-4)
    return opt, lib.optim.lr_scheduler.OneCycleLR(opt, max_lr=0.1, total_steps=STEPS, cycle_momentum=True)


# (zoo model, optimizer + schedule, number of classes of its output's last dim)
CASES = {
    "lenet5-sgd-nesterov-steplr": ("lenet5", _sgd_steplr, 10),
    "resnet_block-adam-amsgrad-steplr": ("resnet_block", _adam_amsgrad_steplr, 4),
    "tiny_gpt-adamw-onecycle": ("tiny_gpt", _adamw_onecycle, 32),
    "text_classifier-sgd-momentum-onecycle": ("text_classifier", _sgd_momentum_onecycle, 4),
    "lstm_tagger-adamw-onecycle": ("lstm_tagger", _adamw_onecycle, 5),
}


def _data(name, classes, steps=STEPS):
    """A batch per step: the model's inputs and integer targets (one per output row)."""
    item = zoo(ember)[name]
    rng = np.random.default_rng(7)
    rows = int(np.prod(item.out_shape[:-1]))
    return [(item.inputs(rng), rng.integers(0, classes, rows).astype(np.int64)) for _ in range(steps)]


def _model(lib, name, seed=0):
    build = zoo(lib)[name].build
    if build is None:
        pytest.skip(f"{lib.__name__}.nn.LSTM is not in this build (the fused recurrent kernel is on branch i12-rnn)")
    lib.manual_seed(seed)
    return without_dropout(build())


def _train(lib, model, make_opt, batches, opt_state=None, sched_state=None):
    """Trains over `batches`; returns the losses (floats), the optimizer and the scheduler."""
    opt, sched = make_opt(lib, model)
    if opt_state is not None:
        opt.load_state_dict(opt_state)
        sched.load_state_dict(sched_state)
    loss_fn = lib.nn.CrossEntropyLoss()
    model.train()
    losses = []
    for arrays, target in batches:
        opt.zero_grad()
        out = model(*[to_lib(lib, a) for a in arrays])
        loss = loss_fn(out.reshape(-1, out.shape[-1]), to_lib(lib, target))
        loss.backward()
        opt.step()
        sched.step()
        losses.append(loss.item())
    return losses, opt, sched


def _convert(lib, value):
    """An optimizer/scheduler state_dict with its tensors moved to `lib` (dicts, lists kept)."""
    if hasattr(value, "detach"):
        return lib.tensor(value.detach().numpy().copy())
    if isinstance(value, dict):
        return {k: _convert(lib, v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_convert(lib, v) for v in value)
    return value


def _copy_weights(source, target_lib, target):
    target.load_state_dict({k: _convert(target_lib, v) for k, v in source.state_dict().items()})


def _assert_weights_close(e_model, t_model, rtol, atol):
    t_state = t_model.state_dict()
    for key, value in e_model.state_dict().items():
        np.testing.assert_allclose(value.detach().numpy(), t_state[key].detach().numpy(), rtol=rtol, atol=atol,
                                   err_msg=key)


@pytest.mark.parametrize("case", CASES)
def test_losses_fall(case):
    name, make_opt, classes = CASES[case]
    batch = _data(name, classes, steps=1)
    losses, _, _ = _train(ember, _model(ember, name), make_opt, batch * STEPS)
    assert np.isfinite(losses).all()
    assert losses[-1] < 0.7 * losses[0], losses


@pytest.mark.parametrize("case", CASES)
def test_checkpoint_resumes_exactly(case):
    name, make_opt, classes = CASES[case]
    batches = _data(name, classes)
    whole = _model(ember, name)
    losses, _, _ = _train(ember, whole, make_opt, batches)
    first = _model(ember, name)
    first_losses, opt, sched = _train(ember, first, make_opt, batches[:STEPS // 2])
    resumed = _model(ember, name, seed=1)
    resumed.load_state_dict(first.state_dict())
    rest, _, _ = _train(ember, resumed, make_opt, batches[STEPS // 2:], opt.state_dict(), sched.state_dict())
    np.testing.assert_allclose(first_losses + rest, losses, rtol=1e-6, atol=1e-7)
    for (key, a), b in zip(whole.state_dict().items(), resumed.state_dict().values()):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-5, atol=1e-6, err_msg=key)


@needs_torch
@pytest.mark.parametrize("case", CASES)
def test_losses_and_weights_match_torch(case):
    name, make_opt, classes = CASES[case]
    batches = _data(name, classes)
    t_model, e_model = _model(torch, name), _model(ember, name)
    _copy_weights(t_model, ember, e_model)
    t_losses, t_opt, t_sched = _train(torch, t_model, make_opt, batches)
    e_losses, e_opt, e_sched = _train(ember, e_model, make_opt, batches)
    np.testing.assert_allclose(e_losses, t_losses, rtol=2e-5, atol=1e-6)
    _assert_weights_close(e_model, t_model, rtol=1e-3, atol=2e-5)
    assert e_sched.get_last_lr() == pytest.approx(t_sched.get_last_lr(), rel=1e-12)
    e_groups, t_groups = e_opt.state_dict()["param_groups"], t_opt.state_dict()["param_groups"]
    assert [sorted(g) for g in e_groups] == [sorted(g) for g in t_groups]
    for e_group, t_group in zip(e_groups, t_groups):
        for key, value in t_group.items():
            assert e_group[key] == (value if key == "params" else pytest.approx(value, rel=1e-12)), key


@needs_torch
@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("direction", ["torch_to_ember", "ember_to_torch"])
def test_optimizer_state_dict_loads_across_libraries(case, direction):
    """Train 10 steps in one library, move model + optimizer + scheduler state to the other, train 10 more:
    the same losses as 20 steps in torch alone."""
    name, make_opt, classes = CASES[case]
    batches = _data(name, classes)
    reference = _model(torch, name)
    start = _model(ember, name)
    _copy_weights(reference, ember, start)
    ref_losses, _, _ = _train(torch, reference, make_opt, batches)

    first_lib, second_lib = (torch, ember) if direction == "torch_to_ember" else (ember, torch)
    first = _model(first_lib, name)
    _copy_weights(start, first_lib, first)
    first_losses, opt, sched = _train(first_lib, first, make_opt, batches[:STEPS // 2])
    second = _model(second_lib, name, seed=1)
    _copy_weights(first, second_lib, second)
    opt_state = _convert(second_lib, opt.state_dict())
    rest, second_opt, _ = _train(second_lib, second, make_opt, batches[STEPS // 2:], opt_state, sched.state_dict())
    np.testing.assert_allclose(first_losses + rest, ref_losses, rtol=2e-5, atol=1e-6)
    state = second_opt.state_dict()["state"]
    assert sorted(state) == sorted(opt.state_dict()["state"])
    assert [sorted(s) for s in state.values()] == [sorted(s) for s in opt.state_dict()["state"].values()]
