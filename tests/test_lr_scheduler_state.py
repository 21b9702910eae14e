"""ember.optim.lr_scheduler: state_dict round trips and resuming mid-run, PyTorch's state_dict layout,
explicit and fractional epochs, the order warnings, and PyTorch's errors."""
import math
import pickle
import warnings
from collections import Counter

import pytest

import ember
from ember.optim import lr_scheduler
from test_lr_scheduler import CASES, LRS, Halving, assert_rows_equal, make_optimizer, run, snapshot

try:
    import torch
except ImportError:
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="torch not installed")
# SequentialLR over a ChainedScheduler steps the chain in its constructor (PyTorch warns too).
quiet_order_warning = pytest.mark.filterwarnings("ignore:Detected call of `lr_scheduler.step\\(\\)` before")


def advance(optimizer, scheduler, steps):
    rows = []
    for _ in range(steps):
        optimizer.step()
        scheduler.step()
        rows.append(snapshot(scheduler, optimizer))
    return rows


@quiet_order_warning
@pytest.mark.parametrize("name", CASES)
def test_state_dict_round_trip_mid_run(name):
    """A run saved after k steps and loaded into a fresh optimizer and scheduler continues exactly as
    the uninterrupted run (the state pickles, as torch.save needs)."""
    build, steps, kind = CASES[name]
    k = steps // 3
    optimizer = make_optimizer(ember, kind)
    scheduler = build(lr_scheduler, optimizer)
    advance(optimizer, scheduler, k)
    saved = pickle.dumps((optimizer.state_dict(), scheduler.state_dict()))
    expected = advance(optimizer, scheduler, steps - k)

    resumed_optimizer = make_optimizer(ember, kind)
    resumed = build(lr_scheduler, resumed_optimizer)  # built before loading, as PyTorch advises
    optimizer_state, scheduler_state = pickle.loads(saved)
    resumed_optimizer.load_state_dict(optimizer_state)
    resumed.load_state_dict(scheduler_state)
    assert resumed.get_last_lr() == scheduler_state["_last_lr"]
    assert_rows_equal(advance(resumed_optimizer, resumed, steps - k), expected)


def plain(value):
    """A state_dict value with callables dropped and Counters as dicts, for comparing two libraries'."""
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items() if not callable(v)}
    if isinstance(value, (list, tuple)):
        return type(value)(plain(v) for v in value)
    return value


@needs_torch
@quiet_order_warning
@pytest.mark.parametrize("name", CASES)
def test_state_dict_layout_matches_torch(name):
    """Same keys in the same order and the same values: checkpoints move between the libraries."""
    build, steps, kind = CASES[name]
    states = []
    for lib in (ember, torch):
        optimizer = make_optimizer(lib, kind)
        scheduler = build(lib.optim.lr_scheduler, optimizer)
        advance(optimizer, scheduler, steps // 2)
        states.append(scheduler.state_dict())
    ours, theirs = states
    assert list(ours) == list(theirs)
    assert plain(ours) == plain(theirs)


@needs_torch
@quiet_order_warning
@pytest.mark.parametrize("name", ["step", "cosine", "warm_restarts_mult", "cyclic_exp_range", "one_cycle_betas",
                                  "sequential3", "chained3", "lambda_list"])
def test_loads_a_torch_scheduler_state(name):
    build, steps, kind = CASES[name]
    k = steps // 3
    torch_opt = make_optimizer(torch, kind)
    torch_sched = build(torch.optim.lr_scheduler, torch_opt)
    advance(torch_opt, torch_sched, k)
    ours_opt = make_optimizer(ember, kind)
    ours = build(lr_scheduler, ours_opt)
    for ours_group, torch_group in zip(ours_opt.param_groups, torch_opt.state_dict()["param_groups"]):
        ours_group.update({key: v for key, v in torch_group.items() if key != "params"})
    ours.load_state_dict(torch_sched.state_dict())
    assert_rows_equal(advance(ours_opt, ours, steps - k), advance(torch_opt, torch_sched, steps - k))


def test_lambda_objects_keep_their_state_and_functions_are_not_saved():
    optimizer = make_optimizer(ember)
    scheduler = lr_scheduler.LambdaLR(optimizer, [lambda e: 1.0, Halving(7)])
    state = scheduler.state_dict()
    assert state["lr_lambdas"] == [None, {"every": 7}]
    other = lr_scheduler.LambdaLR(make_optimizer(ember), [lambda e: 2.0, Halving(3)])
    other.load_state_dict(state)
    assert other.lr_lambdas[1].every == 7 and other.lr_lambdas[0](0) == 2.0
    assert "lr_lambdas" in state  # load_state_dict leaves the caller's dict whole


def test_composed_schedulers_save_each_scheduler():
    optimizer = make_optimizer(ember)
    first, second = lr_scheduler.ConstantLR(optimizer, 0.5, 3), lr_scheduler.ExponentialLR(optimizer, 0.9)
    sequential = lr_scheduler.SequentialLR(optimizer, [first, second], milestones=[3])
    advance(optimizer, sequential, 5)
    state = sequential.state_dict()
    assert state["_schedulers"] == [first.state_dict(), second.state_dict()]
    assert state["_milestones"] == [3] and state["last_epoch"] == 5 and "optimizer" not in state


def test_plateau_round_trip():
    metrics = [1.0, 0.5, 0.6, 0.6, 0.6, 0.4, 0.45, 0.45, 0.45, 0.45, 0.45, 0.45]
    optimizer = make_optimizer(ember)
    scheduler = lr_scheduler.ReduceLROnPlateau(optimizer, mode="min", factor=0.5, patience=1, cooldown=1)
    for m in metrics[:4]:
        scheduler.step(m)
    state = pickle.loads(pickle.dumps(scheduler.state_dict()))
    assert "optimizer" not in state and state["best"] == 0.5 and state["num_bad_epochs"] == 0
    resumed_optimizer = make_optimizer(ember)
    resumed = lr_scheduler.ReduceLROnPlateau(resumed_optimizer, mode="max")  # load restores mode too
    resumed_optimizer.load_state_dict(optimizer.state_dict())
    resumed.load_state_dict(state)
    for m in metrics[4:]:
        scheduler.step(m)
        resumed.step(m)
        assert resumed.get_last_lr() == scheduler.get_last_lr()
    assert resumed.mode == "min" and resumed.get_last_lr()[0] < 0.05


# ---- Resuming with last_epoch ----

# name -> (builder(lr_scheduler, optimizer, last_epoch), alignment). Built with last_epoch=k on a
# restored optimizer, a scheduler's constructor step moves to epoch k+1: alignment 1 when it then
# follows the uninterrupted run from epoch k+1, 0 when it holds epoch k's lr one step (the schedulers
# guarding the constructor step), None when PyTorch's resume arithmetic matches neither (compared
# with PyTorch only).
RESUME = {
    "step": (lambda S, o, e: S.StepLR(o, step_size=3, gamma=0.5, last_epoch=e), 1),
    "multistep": (lambda S, o, e: S.MultiStepLR(o, milestones=[5, 12, 14, 14], gamma=0.5, last_epoch=e), 1),
    "cyclic": (lambda S, o, e: S.CyclicLR(o, 0.01, 0.1, step_size_up=3, mode="triangular2", last_epoch=e), 1),
    "exponential": (lambda S, o, e: S.ExponentialLR(o, gamma=0.9, last_epoch=e), 0),
    "one_cycle": (lambda S, o, e: S.OneCycleLR(o, max_lr=0.2, total_steps=40, last_epoch=e), 1),
    "linear": (lambda S, o, e: S.LinearLR(o, start_factor=0.1, total_iters=15, last_epoch=e), None),
    "polynomial": (lambda S, o, e: S.PolynomialLR(o, total_iters=20, power=1.5, last_epoch=e), None),
    "cosine": (lambda S, o, e: S.CosineAnnealingLR(o, T_max=9, eta_min=0.002, last_epoch=e), None),
    "warm_restarts": (lambda S, o, e: S.CosineAnnealingWarmRestarts(o, T_0=4, T_mult=2, last_epoch=e), None),
}


def resume_run(lib, build, k, steps):
    """Run k steps, then build a new scheduler with last_epoch=k on an optimizer restored from the
    first; return group 0's lr after its construction and after each of `steps` further steps."""
    optimizer = make_optimizer(lib)
    scheduler = build(lib.optim.lr_scheduler, optimizer, -1)
    advance(optimizer, scheduler, k)
    resumed_optimizer = make_optimizer(lib)
    resumed_optimizer.load_state_dict(optimizer.state_dict())
    resumed = build(lib.optim.lr_scheduler, resumed_optimizer, k)
    assert resumed.last_epoch == k + 1
    return [snapshot(resumed, resumed_optimizer)] + advance(resumed_optimizer, resumed, steps)


@pytest.mark.parametrize("name", RESUME)
def test_resume_with_last_epoch(name):
    build, alignment = RESUME[name]
    k, steps = 13, 25
    ours = resume_run(ember, build, k, steps)
    if alignment is not None:
        optimizer = make_optimizer(ember)
        scheduler = build(lr_scheduler, optimizer, -1)
        uninterrupted = advance(optimizer, scheduler, k + 1 + steps)  # [i]: after i + 1 steps
        expected = uninterrupted[k - 1 + alignment:][:steps + 1]
        assert [row[1] for row in ours] == [row[1] for row in expected]
    if torch is not None:
        assert_rows_equal(ours, resume_run(torch, build, k, steps))


def test_resume_without_initial_lr_raises_key_error():
    optimizer = make_optimizer(ember)
    message = ("param 'initial_lr' is not specified in param_groups[0] when resuming scheduler with "
               "last_epoch >= 0.\nThis typically happens when:\n1. You're trying to resume training from a "
               "checkpoint but haven't properly loaded the optimizer state\n2. You're using last_epoch >= 0 "
               "for a fresh training run (not recommended)")
    with pytest.raises(KeyError) as info:
        lr_scheduler.StepLR(optimizer, step_size=3, last_epoch=4)
    assert info.value.args[0] == message
    if torch is not None:
        with pytest.raises(KeyError) as info:
            torch.optim.lr_scheduler.StepLR(make_optimizer(torch), step_size=3, last_epoch=4)
        assert info.value.args[0] == message


def test_initial_lr_is_recorded_once_per_group():
    optimizer = make_optimizer(ember)
    lr_scheduler.StepLR(optimizer, step_size=2, gamma=0.5)
    assert [g["initial_lr"] for g in optimizer.param_groups] == list(LRS)
    optimizer.param_groups[0]["lr"] = 0.7
    second = lr_scheduler.ExponentialLR(optimizer, gamma=0.5)  # keeps the recorded initial_lr
    assert optimizer.param_groups[0]["initial_lr"] == 0.1 and second.base_lrs == list(LRS)


# ---- Explicit and fractional epochs ----

@pytest.mark.parametrize("T_mult", [1, 2, 3])
def test_warm_restarts_fractional_epochs(T_mult):
    """step(epoch + i / iters) once per batch, as PyTorch documents; the lr is the closed form at
    that fractional epoch."""
    def go(lib):
        optimizer = make_optimizer(lib)
        scheduler = lib.optim.lr_scheduler.CosineAnnealingWarmRestarts(optimizer, T_0=2, T_mult=T_mult, eta_min=0.001)
        rows = []
        for epoch in range(12):
            for i in range(7):
                optimizer.step()
                scheduler.step(epoch + i / 7)
                rows.append((snapshot(scheduler, optimizer), scheduler.T_cur, scheduler.T_i, scheduler.last_epoch))
        return rows

    ours = go(ember)
    for n, (row, t_cur, t_i, last_epoch) in enumerate(ours):
        epoch = n // 7 + (n % 7) / 7
        start, period = 0, 2
        while epoch >= start + period:
            start, period = start + period, period * T_mult
        assert t_i == period and t_cur == pytest.approx(epoch - start, abs=1e-12)
        assert last_epoch == math.floor(epoch)
        assert row[1][0][0] == pytest.approx(0.001 + 0.099 * (1 + math.cos(math.pi * (epoch - start) / period)) / 2,
                                             rel=1e-12)
    if torch is not None:
        assert ours == go(torch)


def test_warm_restarts_interleaved_epochs():
    def go(lib):
        optimizer = make_optimizer(lib)
        scheduler = lib.optim.lr_scheduler.CosineAnnealingWarmRestarts(optimizer, T_0=10, T_mult=2)
        rows = advance(optimizer, scheduler, 20)
        scheduler.step(26)  # then step() continues from 27
        rows.append(snapshot(scheduler, optimizer))
        return rows + advance(optimizer, scheduler, 10)

    ours = go(ember)
    # Periods of 10 then 20 epochs: epoch 26 is T_cur 16 of 20, and the next step() is epoch 27.
    assert ours[20][1][0][0] == pytest.approx(0.1 * (1 + math.cos(math.pi * 16 / 20)) / 2, rel=1e-12)
    assert ours[21][1][0][0] == pytest.approx(0.1 * (1 + math.cos(math.pi * 17 / 20)) / 2, rel=1e-12)
    if torch is not None:
        assert_rows_equal(ours, go(torch))


@pytest.mark.parametrize("build, epoch, expected", [
    (lambda S, o: S.StepLR(o, 3, 0.5), 10, 0.1 * 0.5 ** 3),
    (lambda S, o: S.MultiStepLR(o, [2, 5, 5], 0.5), 6, 0.1 * 0.5 ** 3),
    (lambda S, o: S.ExponentialLR(o, 0.9), 4, 0.1 * 0.9 ** 4),
    (lambda S, o: S.ConstantLR(o, 0.5, 4), 2, 0.05),
    (lambda S, o: S.LinearLR(o, 0.5, 1.0, 4), 2, 0.1 * 0.75),
    (lambda S, o: S.PolynomialLR(o, 4, 2.0), 2, 0.1 * 0.25),
    (lambda S, o: S.CosineAnnealingLR(o, 8), 4, 0.05),
    (lambda S, o: S.LambdaLR(o, lambda e: 1 / (1 + e)), 3, 0.025),  # no closed form: get_lr at that epoch
])
def test_step_with_epoch_uses_the_closed_form_and_warns(build, epoch, expected):
    optimizer = make_optimizer(ember)
    scheduler = build(lr_scheduler, optimizer)
    optimizer.step()
    with pytest.warns(UserWarning, match="The epoch parameter in `scheduler.step\\(\\)` was not necessary"):
        scheduler.step(epoch)
    assert scheduler.last_epoch == epoch
    assert scheduler.get_last_lr()[0] == pytest.approx(expected, rel=1e-15)
    if torch is not None:
        torch_opt = make_optimizer(torch)
        torch_sched = build(torch.optim.lr_scheduler, torch_opt)
        torch_opt.step()
        with pytest.warns(UserWarning):
            torch_sched.step(epoch)
        assert scheduler.get_last_lr() == torch_sched.get_last_lr()


# ---- Warnings ----

def test_no_warning_in_the_right_order():
    optimizer = make_optimizer(ember)
    scheduler = lr_scheduler.StepLR(optimizer, 2)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        advance(optimizer, scheduler, 3)


def test_warns_when_the_scheduler_steps_before_the_optimizer():
    optimizer = make_optimizer(ember)
    scheduler = lr_scheduler.StepLR(optimizer, 2)
    with pytest.warns(UserWarning, match=r"^Detected call of `lr_scheduler.step\(\)` before `optimizer.step\(\)`"):
        scheduler.step()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # only the first step checks
        scheduler.step()
    assert optimizer.step._wrapped_by_lr_sched and not getattr(optimizer, "_opt_called", False)
    optimizer.step()
    assert optimizer._opt_called


def test_warns_when_optimizer_step_is_replaced():
    optimizer = make_optimizer(ember)
    scheduler = lr_scheduler.ExponentialLR(optimizer, 0.5)
    optimizer.step = lambda: None
    with pytest.warns(UserWarning, match=r"^Seems like `optimizer.step\(\)` has been overridden after"):
        scheduler.step()


def test_optimizer_step_is_wrapped_once():
    optimizer = make_optimizer(ember)
    lr_scheduler.StepLR(optimizer, 2)
    wrapped = optimizer.step
    lr_scheduler.ExponentialLR(optimizer, 0.5)
    assert optimizer.step is wrapped
    assert wrapped() is None  # still the optimizer's step (no closure: returns None)


def test_get_lr_outside_step_warns():
    optimizer = make_optimizer(ember)
    scheduler = lr_scheduler.StepLR(optimizer, 2)
    with pytest.warns(UserWarning, match=r"^To get the last learning rate computed by the scheduler, please use"):
        assert scheduler.get_lr() == list(LRS)


def test_subclassing_the_base():
    class Halve(lr_scheduler.LRScheduler):
        def get_lr(self):
            return [base * 0.5 ** self.last_epoch for base in self.base_lrs]

    optimizer = make_optimizer(ember)
    scheduler = Halve(optimizer)
    advance(optimizer, scheduler, 3)
    assert scheduler.get_last_lr() == [0.1 / 8, 0.05 / 8]
    assert issubclass(lr_scheduler._LRScheduler, lr_scheduler.LRScheduler)
    assert lr_scheduler._LRScheduler.__name__ == "_LRScheduler"
    assert isinstance(lr_scheduler.ReduceLROnPlateau(optimizer), lr_scheduler.LRScheduler)
    with pytest.raises(NotImplementedError):
        lr_scheduler.LRScheduler(optimizer)


# ---- Errors (PyTorch's classes and messages) ----

def _momentumless(lib):
    class Plain(lib.optim.Optimizer):
        def __init__(self, params):
            super().__init__(params, {"lr": 0.1})
    return Plain([lib.zeros(2, requires_grad=True)])


def _added_group(lib):
    optimizer = make_optimizer(lib)
    scheduler = lib.optim.lr_scheduler.ReduceLROnPlateau(optimizer, patience=0, min_lr=[0.0, 0.0])
    optimizer.add_param_group({"params": [lib.zeros(1, requires_grad=True)]})
    scheduler.step(1.0)
    scheduler.step(2.0)


def _stepped_past_the_end(lib):
    optimizer = make_optimizer(lib)
    scheduler = lib.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=0.1, total_steps=3)
    advance(optimizer, scheduler, 4)


def _other_optimizer(lib, kind):
    S, a, b = lib.optim.lr_scheduler, make_optimizer(lib), make_optimizer(lib)
    schedulers = [S.StepLR(a, 2), S.StepLR(b, 2)]
    return S.SequentialLR(a, schedulers, [2]) if kind == "sequential" else S.ChainedScheduler(schedulers)


def _with_plateau(lib, kind):
    S, o = lib.optim.lr_scheduler, make_optimizer(lib)
    schedulers = [S.StepLR(o, 2), S.ReduceLROnPlateau(o)]
    return S.SequentialLR(o, schedulers, [2]) if kind == "sequential" else S.ChainedScheduler(schedulers)


def _one_scheduler_two_milestones(lib):
    optimizer = make_optimizer(lib)
    return lib.optim.lr_scheduler.SequentialLR(optimizer, [lib.optim.lr_scheduler.StepLR(optimizer, 2)], [3])


ERRORS = [
    (lambda lib: lib.optim.lr_scheduler.StepLR([1.0], 2), TypeError, "list is not an Optimizer"),
    (lambda lib: lib.optim.lr_scheduler.ReduceLROnPlateau("sgd"), TypeError, "str is not an Optimizer"),
    (lambda lib: lib.optim.lr_scheduler.LambdaLR(make_optimizer(lib), [lambda e: 1.0]), ValueError,
     "Expected 2 lr_lambdas, but got 1"),
    (lambda lib: lib.optim.lr_scheduler.MultiplicativeLR(make_optimizer(lib), 0.9), TypeError,
     "lr_lambda should be a function, but got float"),
    (lambda lib: lib.optim.lr_scheduler.ConstantLR(make_optimizer(lib), factor=1.5), ValueError,
     "Constant multiplicative factor expected to be between 0 and 1."),
    (lambda lib: lib.optim.lr_scheduler.LinearLR(make_optimizer(lib), start_factor=0), ValueError,
     "Starting multiplicative factor expected to be greater than 0 and less or equal to 1."),
    (lambda lib: lib.optim.lr_scheduler.LinearLR(make_optimizer(lib), end_factor=-0.1), ValueError,
     "Ending multiplicative factor expected to be between 0 and 1."),
    (lambda lib: lib.optim.lr_scheduler.CosineAnnealingWarmRestarts(make_optimizer(lib), T_0=0), ValueError,
     "Expected positive integer T_0, but got 0"),
    (lambda lib: lib.optim.lr_scheduler.CosineAnnealingWarmRestarts(make_optimizer(lib), 2, T_mult=1.5), ValueError,
     "Expected integer T_mult >= 1, but got 1.5"),
    (lambda lib: lib.optim.lr_scheduler.CosineAnnealingWarmRestarts(make_optimizer(lib), 2, eta_min="0"), ValueError,
     "Expected float or int eta_min, but got 0 of type <class 'str'>"),
    (lambda lib: lib.optim.lr_scheduler.CosineAnnealingWarmRestarts(make_optimizer(lib), 2).step(-1), ValueError,
     "Expected non-negative epoch, but got -1"),
    (lambda lib: lib.optim.lr_scheduler.CyclicLR(make_optimizer(lib), 0.01, 0.1, mode="square"), ValueError,
     "mode is invalid and scale_fn is None"),
    (lambda lib: lib.optim.lr_scheduler.CyclicLR(make_optimizer(lib), 0.01, [0.1, 0.2, 0.3]), ValueError,
     "max_lr must have the same length as optimizer.param_groups. max_lr has 3 values, param_groups has 2."),
    (lambda lib: lib.optim.lr_scheduler.CyclicLR(_momentumless(lib), 0.01, 0.1), ValueError,
     "optimizer must support momentum or beta1 with `cycle_momentum` option enabled"),
    (lambda lib: lib.optim.lr_scheduler.OneCycleLR(_momentumless(lib), 0.1, 10), ValueError,
     "optimizer must support momentum or beta1 with `cycle_momentum` option enabled"),
    (lambda lib: lib.optim.lr_scheduler.OneCycleLR(make_optimizer(lib), 0.1), ValueError,
     "You must define either total_steps OR (epochs AND steps_per_epoch)"),
    (lambda lib: lib.optim.lr_scheduler.OneCycleLR(make_optimizer(lib), 0.1, total_steps=0), ValueError,
     "Expected positive integer total_steps, but got 0"),
    (lambda lib: lib.optim.lr_scheduler.OneCycleLR(make_optimizer(lib), 0.1, epochs=2, steps_per_epoch=1.5),
     ValueError, "Expected positive integer steps_per_epoch, but got 1.5"),
    (lambda lib: lib.optim.lr_scheduler.OneCycleLR(make_optimizer(lib), 0.1, epochs=-2, steps_per_epoch=3),
     ValueError, "Expected positive integer epochs, but got -2"),
    (lambda lib: lib.optim.lr_scheduler.OneCycleLR(make_optimizer(lib), 0.1, 10, pct_start=1), ValueError,
     "Expected float between 0 and 1 pct_start, but got 1"),
    (lambda lib: lib.optim.lr_scheduler.OneCycleLR(make_optimizer(lib), 0.1, 10, anneal_strategy="exp"), ValueError,
     "anneal_strategy must be one of 'cos' or 'linear', instead got exp"),
    (_stepped_past_the_end, ValueError, "Tried to step 4 times. The specified number of total steps is 3"),
    (lambda lib: lib.optim.lr_scheduler.ReduceLROnPlateau(make_optimizer(lib), factor=1.0), ValueError,
     "Factor should be < 1.0."),
    (lambda lib: lib.optim.lr_scheduler.ReduceLROnPlateau(make_optimizer(lib), mode="avg"), ValueError,
     "mode avg is unknown!"),
    (lambda lib: lib.optim.lr_scheduler.ReduceLROnPlateau(make_optimizer(lib), threshold_mode="pct"), ValueError,
     "threshold mode pct is unknown!"),
    (lambda lib: lib.optim.lr_scheduler.ReduceLROnPlateau(make_optimizer(lib), min_lr=[0.1]), ValueError,
     "expected 2 min_lrs, got 1"),
    (_added_group, RuntimeError,
     "The number of param groups in the `optimizer` (3) differs from when `ReduceLROnPlateau` was initialized (2), "
     "usually due to a new param group being added to the optimizer. Please modify the `min_lrs` field to match "
     "the length of the `optimizer` param groups."),
    (lambda lib: lib.optim.lr_scheduler.SequentialLR(make_optimizer(lib), [], []), ValueError,
     "SequentialLR expects at least one scheduler, but got no scheduler."),
    (lambda lib: lib.optim.lr_scheduler.ChainedScheduler([]), ValueError,
     "ChainedScheduler expects at least one scheduler to be chained, but got no scheduler."),
    (lambda lib: lib.optim.lr_scheduler.SequentialLR(make_optimizer(lib), [object()], []), TypeError,
     "SequentialLR at index 0 should have `optimizer` as its attribute."),
    (lambda lib: _with_plateau(lib, "sequential"), ValueError,
     "SequentialLR does not support `ReduceLROnPlateau` scheduler as it requires additional kwargs to be "
     "specified when calling `step`, but got one at index 1 in the given schedulers sequence."),
    (lambda lib: _with_plateau(lib, "chained"), ValueError,
     "ChainedScheduler does not support `ReduceLROnPlateau` scheduler"),
    (lambda lib: _other_optimizer(lib, "sequential"), ValueError,
     "SequentialLR expects all schedulers to belong to the same optimizer, but got scheduler StepLR at index 1 has"),
    (lambda lib: _other_optimizer(lib, "chained"), ValueError,
     "ChainedScheduler expects all schedulers to belong to the same optimizer"),
    (lambda lib: _one_scheduler_two_milestones(lib), ValueError,
     "Sequential Schedulers expects number of schedulers provided to be one more than the number of milestone "
     "points, but got number of schedulers 1 and the number of milestones to be equal to 1"),
]


@pytest.mark.parametrize("make, error, message", ERRORS, ids=[e[2][:40] for e in ERRORS])
def test_errors_as_pytorch(make, error, message):
    libs = [ember] if torch is None else [ember, torch]
    for lib in libs:
        with pytest.raises(error) as info:
            make(lib)
        assert str(info.value).startswith(message), (lib.__name__, str(info.value))


def test_milestones_are_a_counter():
    scheduler = lr_scheduler.MultiStepLR(make_optimizer(ember), milestones=[4, 2, 4])
    assert scheduler.milestones == Counter({4: 2, 2: 1})


# ---- Tensor learning rates (updated in place, as PyTorch) ----

TENSOR_LR = {
    "exponential": lambda lib, o: lib.optim.lr_scheduler.ExponentialLR(o, gamma=0.9),
    "step": lambda lib, o: lib.optim.lr_scheduler.StepLR(o, 4, gamma=0.3),
    "cosine": lambda lib, o: lib.optim.lr_scheduler.CosineAnnealingLR(o, T_max=8, eta_min=0.01),
    "linear": lambda lib, o: lib.optim.lr_scheduler.LinearLR(o, start_factor=0.25, total_iters=6),
    "one_cycle": lambda lib, o: lib.optim.lr_scheduler.OneCycleLR(o, max_lr=lib.tensor(0.2), total_steps=20),
}


def tensor_lr_run(lib, build, steps=19):
    lr = lib.tensor(0.1)
    optimizer = lib.optim.SGD([lib.zeros(2, requires_grad=True)], lr=lr, momentum=0.9)
    scheduler = build(lib, optimizer)
    values = []
    for _ in range(steps):
        optimizer.step()
        scheduler.step()
        (last,) = scheduler.get_last_lr()
        assert optimizer.param_groups[0]["lr"] is lr and last is not lr  # filled in place; a copy reported
        assert isinstance(last, lib.Tensor) and last.dtype == lib.float32
        values.append(last.item())
    return values


@pytest.mark.parametrize("name", TENSOR_LR)
def test_tensor_lr(name):
    ours = tensor_lr_run(ember, TENSOR_LR[name])
    float_run = run(ember, lambda S, o: TENSOR_LR[name](ember, o), 19)
    assert ours == pytest.approx([row[1][0][0] for row in float_run[1:]], rel=1e-6)
    if torch is not None:
        assert ours == tensor_lr_run(torch, TENSOR_LR[name])


def test_plateau_step_with_epoch_warns_and_sets_it():
    scheduler = lr_scheduler.ReduceLROnPlateau(make_optimizer(ember), patience=0)
    with pytest.warns(UserWarning, match="The epoch parameter in `scheduler.step\\(\\)` was not necessary"):
        scheduler.step(1.0, epoch=5)
    scheduler.step(2.0)
    assert scheduler.last_epoch == 6 and scheduler.num_bad_epochs == 0 and scheduler.get_last_lr()[1] == 0.05 * 0.1


def test_public_names():
    names = {"LambdaLR", "MultiplicativeLR", "StepLR", "MultiStepLR", "ConstantLR", "LinearLR", "ExponentialLR",
             "SequentialLR", "CosineAnnealingLR", "ChainedScheduler", "ReduceLROnPlateau", "CyclicLR",
             "CosineAnnealingWarmRestarts", "OneCycleLR", "PolynomialLR", "LRScheduler"}
    assert set(lr_scheduler.__all__) == names and all(hasattr(lr_scheduler, n) for n in names)
    assert ember.optim.lr_scheduler is lr_scheduler
    assert {getattr(lr_scheduler, n).__module__ for n in names} == {"ember.optim.lr_scheduler"}
    if torch is not None:
        assert lr_scheduler.__all__ == torch.optim.lr_scheduler.__all__
        assert ember.optim.swa_utils.__all__ == torch.optim.swa_utils.__all__
