"""ember.optim.swa_utils: SWALR's lr sequences, AveragedModel's SWA/EMA averages and update_bn's
BatchNorm statistics, against hand-computed values and PyTorch's when installed."""
import math
import pickle

import numpy as np
import pytest

import ember
from ember.optim import swa_utils
from test_lr_scheduler import assert_rows_equal, make_optimizer, snapshot

try:
    import torch
except ImportError:
    torch = None


def swalr_run(lib, build, steps_before, steps):
    """`steps_before` steps of a cosine schedule, then SWALR's: as PyTorch's SWA recipe."""
    optimizer = make_optimizer(lib)
    before = lib.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=20)
    swa = build(lib.optim.swa_utils, optimizer)
    rows = [snapshot(swa, optimizer)]
    for i in range(steps_before + steps):
        optimizer.step()
        (before if i < steps_before else swa).step()
        rows.append(snapshot(before if i < steps_before else swa, optimizer))
    return rows


SWALR_CASES = {
    "cos": lambda S, o: S.SWALR(o, swa_lr=0.01, anneal_epochs=5),
    "linear": lambda S, o: S.SWALR(o, swa_lr=[0.02, 0.005], anneal_epochs=3, anneal_strategy="linear"),
    "no_annealing": lambda S, o: S.SWALR(o, swa_lr=0.03, anneal_epochs=0),
    "default": lambda S, o: S.SWALR(o, swa_lr=0.05),
}


@pytest.mark.parametrize("name", SWALR_CASES)
@pytest.mark.parametrize("steps_before", [0, 7])
def test_swalr_matches_torch(name, steps_before):
    if torch is None:
        pytest.skip("torch not installed")
    build = SWALR_CASES[name]
    assert_rows_equal(swalr_run(ember, build, steps_before, 30), swalr_run(torch, build, steps_before, 30))


def test_swalr_anneals_to_the_swa_lr():
    # From lr 0.1 to 0.01 over 5 steps: lr = 0.01 * alpha + 0.1 * (1 - alpha), alpha = (1 - cos(pi t)) / 2.
    lrs = [row[1][0][0] for row in swalr_run(ember, SWALR_CASES["cos"], 0, 12)]
    for step, lr in enumerate(lrs):
        alpha = (1 - math.cos(math.pi * min(1, step / 5))) / 2
        assert lr == pytest.approx(0.01 * alpha + 0.1 * (1 - alpha), rel=1e-12)
    lrs = [row[1][1][0] for row in swalr_run(ember, SWALR_CASES["linear"], 0, 6)]
    assert lrs == pytest.approx([0.05 + (0.005 - 0.05) * min(1, s / 3) for s in range(7)], rel=1e-12)
    lrs = [row[1][0][0] for row in swalr_run(ember, SWALR_CASES["no_annealing"], 0, 3)]
    assert lrs == [0.03] * 4  # anneal_epochs=0 jumps to swa_lr in the constructor


def test_swalr_state_dict():
    optimizer = make_optimizer(ember)
    scheduler = swa_utils.SWALR(optimizer, swa_lr=0.01, anneal_epochs=6, anneal_strategy="linear")
    for _ in range(2):
        optimizer.step()
        scheduler.step()
    state = pickle.loads(pickle.dumps(scheduler.state_dict()))
    assert "anneal_func" not in state and state["_anneal_strategy"] == "linear"
    resumed_optimizer = make_optimizer(ember)
    resumed = swa_utils.SWALR(resumed_optimizer, swa_lr=0.01, anneal_strategy="cos")
    resumed_optimizer.load_state_dict(optimizer.state_dict())
    resumed.load_state_dict(state)
    assert resumed.anneal_func(0.5) == 0.5  # linear again
    for _ in range(6):
        optimizer.step()
        scheduler.step()
        resumed_optimizer.step()
        resumed.step()
        assert resumed.get_last_lr() == scheduler.get_last_lr()
    if torch is not None:
        torch_optimizer = make_optimizer(torch)
        theirs = torch.optim.swa_utils.SWALR(torch_optimizer, swa_lr=0.01, anneal_epochs=6, anneal_strategy="linear")
        assert list(theirs.state_dict()) == list(swa_utils.SWALR(make_optimizer(ember), 0.01, 6, "linear").state_dict())


@pytest.mark.parametrize("make, message", [
    (lambda o: swa_utils.SWALR(o, 0.01, anneal_strategy="exp"),
     "anneal_strategy must be one of 'cos' or 'linear', instead got exp"),
    (lambda o: swa_utils.SWALR(o, 0.01, anneal_epochs=-1), "anneal_epochs must be equal or greater than 0, got -1"),
    (lambda o: swa_utils.SWALR(o, [0.01]),
     "swa_lr must have the same length as optimizer.param_groups. swa_lr has 1 values, param_groups has 2."),
    (lambda o: swa_utils.get_ema_avg_fn(1.5), "Invalid decay value 1.5 provided. Please provide a value in [0,1] range."),
    (lambda o: swa_utils.get_ema_multi_avg_fn(-0.1),
     "Invalid decay value -0.1 provided. Please provide a value in [0,1] range."),
])
def test_swa_errors(make, message):
    with pytest.raises(ValueError) as info:
        make(make_optimizer(ember))
    assert str(info.value) == message


# ---- AveragedModel ----

SNAPSHOTS = [np.array([[0.5, -1.0, 2.0], [1.5, 0.25, -0.75]], dtype=np.float32) * (k + 1) + k
             for k in range(4)]


def affine(lib):
    """x @ weight.T + bias (a Linear(3, 2) of zeros), written here so only Module is needed of the layers."""

    class Affine(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.weight = lib.nn.Parameter(lib.zeros(2, 3))
            self.bias = lib.nn.Parameter(lib.zeros(2))

        def forward(self, x):
            return x @ self.weight.T + self.bias

    return Affine()


def make_model(lib):
    return lib.nn.Sequential(affine(lib), lib.nn.BatchNorm1d(2))


def load_snapshot(lib, model, k):
    with lib.no_grad():
        model[0].weight.copy_(lib.tensor(SNAPSHOTS[k]))
        model[0].bias.copy_(lib.tensor(SNAPSHOTS[k][:, 0]))
        model[1].running_mean.fill_(float(k))


def average_run(lib, **kwargs):
    model = make_model(lib)
    averaged = lib.optim.swa_utils.AveragedModel(model, **kwargs)
    for k in range(len(SNAPSHOTS)):
        load_snapshot(lib, model, k)
        averaged.update_parameters(model)
    return averaged


def test_swa_average_is_the_mean_of_the_snapshots():
    averaged = average_run(ember)
    np.testing.assert_allclose(averaged.module[0].weight.detach().numpy(), np.mean(SNAPSHOTS, axis=0), rtol=1e-6)
    assert averaged.n_averaged.item() == len(SNAPSHOTS) and averaged.n_averaged.dtype == ember.long
    # Buffers are copied from the model, not averaged (use_buffers=False).
    assert averaged.module[1].running_mean.tolist() == [3.0, 3.0]
    assert list(averaged.state_dict())[:3] == ["n_averaged", "module.0.weight", "module.0.bias"]


def test_ema_average():
    decay = 0.8
    averaged = average_run(ember, multi_avg_fn=swa_utils.get_ema_multi_avg_fn(decay), use_buffers=True)
    expected = SNAPSHOTS[0].astype(np.float64)
    for snap in SNAPSHOTS[1:]:
        expected = decay * expected + (1 - decay) * snap
    np.testing.assert_allclose(averaged.module[0].weight.detach().numpy(), expected, rtol=1e-6)
    # use_buffers=True averages the buffers too: running_mean 0, 1, 2, 3 under the same EMA.
    mean = 0.0
    for k in range(1, 4):
        mean = decay * mean + (1 - decay) * k
    np.testing.assert_allclose(averaged.module[1].running_mean.numpy(), [mean, mean], rtol=1e-6)
    single = average_run(ember, avg_fn=swa_utils.get_ema_avg_fn(decay))
    np.testing.assert_allclose(single.module[0].weight.detach().numpy(), expected, rtol=1e-6)


@pytest.mark.parametrize("kwargs", [
    {},
    {"use_buffers": True},
    {"avg_fn": "ema"},
    {"multi_avg_fn": "ema", "use_buffers": True},
    {"multi_avg_fn": "swa"},
])
def test_averaged_model_matches_torch(kwargs):
    if torch is None:
        pytest.skip("torch not installed")
    results = []
    for lib in (ember, torch):
        fns = {"ema": {"avg_fn": lib.optim.swa_utils.get_ema_avg_fn(0.7),
                       "multi_avg_fn": lib.optim.swa_utils.get_ema_multi_avg_fn(0.7)},
               "swa": {"multi_avg_fn": lib.optim.swa_utils.get_swa_multi_avg_fn()}}
        args = {k: (fns[v][k] if isinstance(v, str) else v) for k, v in kwargs.items()}
        averaged = average_run(lib, **args)
        results.append({k: v.detach().numpy() for k, v in averaged.state_dict().items()})
    ours, theirs = results
    assert list(ours) == list(theirs)
    for key in ours:
        np.testing.assert_array_equal(ours[key], theirs[key], err_msg=key)


def test_averaged_model_forwards_and_rejects_two_fns():
    model = make_model(ember).eval()
    load_snapshot(ember, model, 2)
    averaged = swa_utils.AveragedModel(model)
    x = ember.tensor(np.arange(6, dtype=np.float32).reshape(2, 3))
    assert averaged(x).tolist() == model(x).tolist()
    with pytest.raises(AssertionError, match="Only one of avg_fn and multi_avg_fn should be provided"):
        swa_utils.AveragedModel(model, avg_fn=swa_utils.get_swa_avg_fn(),
                                multi_avg_fn=swa_utils.get_swa_multi_avg_fn())


# ---- update_bn ----

def test_update_bn_recomputes_the_statistics():
    rng = np.random.default_rng(0)
    batches = [rng.standard_normal((8, 3)).astype(np.float32) for _ in range(5)]
    model = make_model(ember)
    load_snapshot(ember, model, 1)
    model[1].momentum = 0.3
    model.eval()
    loader = [(ember.tensor(b), ember.zeros(8)) for b in batches[:3]] + [ember.tensor(b) for b in batches[3:]]
    swa_utils.update_bn(loader, model)
    weight, bias = model[0].weight.detach().numpy(), model[0].bias.detach().numpy()
    outs = [b @ weight.T + bias for b in batches]
    # momentum=None during the pass: the running stats are the plain average over the batches.
    np.testing.assert_allclose(model[1].running_mean.numpy(), np.mean([o.mean(0) for o in outs], 0), rtol=1e-5)
    np.testing.assert_allclose(model[1].running_var.numpy(), np.mean([o.var(0, ddof=1) for o in outs], 0), rtol=1e-5)
    assert model[1].num_batches_tracked.item() == 5
    assert model[1].momentum == 0.3 and not model.training and not model[1].training


def test_update_bn_without_batchnorm_leaves_the_model():
    def unread():
        raise AssertionError("update_bn read the loader of a model without BatchNorm")
        yield

    model = affine(ember)
    swa_utils.update_bn(unread(), model)
    assert model.training
