"""ember.optim.lr_scheduler: every scheduler's lr (and momentum) sequence equals PyTorch's exactly
when torch is installed, and the closed-form schedules hold without it."""
import math

import numpy as np
import pytest

import ember
from ember.optim import lr_scheduler

try:
    import torch
except ImportError:
    torch = None

LRS = (0.1, 0.05)  # two param groups, so per-group lists and lengths are exercised


def make_optimizer(lib, kind="sgd", lrs=LRS):
    groups = [{"params": [lib.zeros(2, requires_grad=True)], "lr": lr} for lr in lrs]
    if kind == "sgd":
        return lib.optim.SGD(groups, lr=lrs[0], momentum=0.9)
    return lib.optim.Adam(groups, lr=lrs[0])


def value(x):
    """A number of the schedule as a Python float (a tensor lr is filled in place: keep its value now)."""
    return x.item() if hasattr(x, "item") else x


def snapshot(scheduler, optimizer):
    """The lrs the scheduler reports and each group's lr, momentum and betas."""
    groups = [(value(g["lr"]), g.get("momentum"), g.get("betas")) for g in optimizer.param_groups]
    return [value(lr) for lr in scheduler.get_last_lr()], groups


def run(lib, build, steps, kind="sgd", metrics=None):
    """Snapshots after construction and after each of `steps` optimizer+scheduler steps."""
    optimizer = make_optimizer(lib, kind)
    scheduler = build(lib.optim.lr_scheduler, optimizer)
    rows = [snapshot(scheduler, optimizer)]
    for i in range(steps):
        optimizer.step()
        if metrics is None:
            scheduler.step()
        else:
            scheduler.step(metrics[i])
        rows.append(snapshot(scheduler, optimizer))
    return rows


def assert_rows_equal(ours, theirs):
    assert len(ours) == len(theirs)
    for step, (a, b) in enumerate(zip(ours, theirs)):
        assert a == b, f"step {step}: ember {a} != torch {b}"


def _sequential(S, opt):
    return S.SequentialLR(opt, [S.LinearLR(opt, start_factor=0.1, total_iters=5),
                                S.CosineAnnealingLR(opt, T_max=20, eta_min=0.001)], milestones=[5])


def _sequential3(S, opt):
    return S.SequentialLR(opt, [S.ConstantLR(opt, factor=0.5, total_iters=3), S.ExponentialLR(opt, gamma=0.9),
                                S.StepLR(opt, step_size=4, gamma=0.5)], milestones=[4, 12])


def _chained(S, opt):
    return S.ChainedScheduler([S.ConstantLR(opt, factor=0.1, total_iters=20), S.ExponentialLR(opt, gamma=0.9)])


def _chained3(S, opt):
    return S.ChainedScheduler([S.LinearLR(opt, start_factor=0.2, total_iters=8),
                               S.MultiStepLR(opt, milestones=[10, 25], gamma=0.3),
                               S.CosineAnnealingLR(opt, T_max=15)], optimizer=opt)


def _sequential_of_chained(S, opt):
    warm = S.ChainedScheduler([S.LinearLR(opt, start_factor=0.25, total_iters=4), S.ExponentialLR(opt, 0.97)])
    return S.SequentialLR(opt, [warm, S.PolynomialLR(opt, total_iters=30, power=2.0)], milestones=[6])


class Halving:
    """A callable object: LambdaLR saves its __dict__ in state_dict (a function is saved as None)."""

    def __init__(self, every):
        self.every = every

    def __call__(self, epoch):
        return 0.5 ** (epoch // self.every)


# name -> (builder(lr_scheduler module, optimizer), steps, optimizer kind)
CASES = {
    "lambda": (lambda S, o: S.LambdaLR(o, lambda e: 0.95 ** e), 60, "sgd"),
    "lambda_list": (lambda S, o: S.LambdaLR(o, [lambda e: 1.0 / (e + 1), Halving(7)]), 60, "sgd"),
    "multiplicative": (lambda S, o: S.MultiplicativeLR(o, lambda e: 0.97 if e % 2 else 0.99), 60, "sgd"),
    "step": (lambda S, o: S.StepLR(o, step_size=3, gamma=0.5), 60, "sgd"),
    "step_default_gamma": (lambda S, o: S.StepLR(o, step_size=7), 60, "adam"),
    "multistep": (lambda S, o: S.MultiStepLR(o, milestones=[3, 7, 7, 20], gamma=0.3), 40, "sgd"),
    "constant": (lambda S, o: S.ConstantLR(o, factor=0.25, total_iters=6), 30, "sgd"),
    "constant_default": (lambda S, o: S.ConstantLR(o), 30, "sgd"),
    "linear": (lambda S, o: S.LinearLR(o, start_factor=0.2, end_factor=0.9, total_iters=10), 40, "sgd"),
    "linear_default": (lambda S, o: S.LinearLR(o), 30, "sgd"),
    "linear_decay": (lambda S, o: S.LinearLR(o, start_factor=1.0, end_factor=0.1, total_iters=25), 40, "sgd"),
    "exponential": (lambda S, o: S.ExponentialLR(o, gamma=0.93), 100, "sgd"),
    "polynomial": (lambda S, o: S.PolynomialLR(o, total_iters=20, power=2.0), 40, "sgd"),
    "polynomial_sqrt": (lambda S, o: S.PolynomialLR(o, total_iters=33, power=0.5), 40, "adam"),
    "cosine": (lambda S, o: S.CosineAnnealingLR(o, T_max=10, eta_min=0.001), 100, "sgd"),
    "cosine_zero_min": (lambda S, o: S.CosineAnnealingLR(o, T_max=7), 60, "sgd"),
    "warm_restarts": (lambda S, o: S.CosineAnnealingWarmRestarts(o, T_0=5), 60, "sgd"),
    "warm_restarts_mult": (lambda S, o: S.CosineAnnealingWarmRestarts(o, T_0=3, T_mult=2, eta_min=0.01), 60, "sgd"),
    "cyclic": (lambda S, o: S.CyclicLR(o, 0.01, 0.1, step_size_up=4, step_size_down=6), 60, "sgd"),
    "cyclic_triangular2": (lambda S, o: S.CyclicLR(o, [0.01, 0.02], [0.1, 0.3], step_size_up=5,
                                                   mode="triangular2"), 60, "sgd"),
    "cyclic_exp_range": (lambda S, o: S.CyclicLR(o, 0.01, 0.1, step_size_up=3, mode="exp_range", gamma=0.95,
                                                 base_momentum=[0.7, 0.75], max_momentum=0.95), 60, "sgd"),
    "cyclic_scale_fn": (lambda S, o: S.CyclicLR(o, 0.01, 0.1, step_size_up=4, scale_fn=lambda x: 1 / (1 + 0.01 * x),
                                                scale_mode="iterations"), 60, "sgd"),
    "cyclic_betas": (lambda S, o: S.CyclicLR(o, 0.001, 0.01, step_size_up=5, step_size_down=2), 60, "adam"),
    "cyclic_no_momentum": (lambda S, o: S.CyclicLR(o, 0.001, 0.01, step_size_up=5, cycle_momentum=False), 60, "adam"),
    "one_cycle": (lambda S, o: S.OneCycleLR(o, max_lr=0.1, total_steps=60), 60, "sgd"),
    "one_cycle_linear": (lambda S, o: S.OneCycleLR(o, max_lr=[0.1, 0.2], epochs=5, steps_per_epoch=12,
                                                   anneal_strategy="linear"), 60, "sgd"),
    "one_cycle_three_phase": (lambda S, o: S.OneCycleLR(o, max_lr=0.05, total_steps=80, pct_start=0.25,
                                                        three_phase=True, div_factor=10.0,
                                                        final_div_factor=100.0), 80, "sgd"),
    "one_cycle_betas": (lambda S, o: S.OneCycleLR(o, max_lr=0.01, total_steps=50, base_momentum=[0.8, 0.85],
                                                  max_momentum=0.92), 50, "adam"),
    "one_cycle_no_momentum": (lambda S, o: S.OneCycleLR(o, max_lr=0.01, total_steps=40, cycle_momentum=False),
                              40, "adam"),
    "sequential": (_sequential, 60, "sgd"),
    "sequential3": (_sequential3, 40, "sgd"),
    "chained": (_chained, 40, "sgd"),
    "chained3": (_chained3, 60, "adam"),
    "sequential_of_chained": (_sequential_of_chained, 40, "sgd"),
}


# A ChainedScheduler inside a SequentialLR steps its schedulers in SequentialLR's constructor,
# before any optimizer step: PyTorch warns there too.
@pytest.mark.filterwarnings("ignore:Detected call of `lr_scheduler.step\\(\\)` before")
@pytest.mark.parametrize("name", CASES)
def test_sequence_matches_torch(name):
    if torch is None:
        pytest.skip("torch not installed")
    build, steps, kind = CASES[name]
    assert_rows_equal(run(ember, build, steps, kind), run(torch, build, steps, kind))


# ---- Closed forms (no torch needed) ----

def lrs_of(build, steps, kind="sgd"):
    """Group 0's lr after construction and each step."""
    return [row[1][0][0] for row in run(ember, build, steps, kind)]


def assert_close_seq(ours, expected, tol=1e-12):
    assert len(ours) == len(expected)
    for e, (a, b) in enumerate(zip(ours, expected)):
        assert abs(a - b) <= tol * LRS[0], f"epoch {e}: {a} != {b}"


def test_step_lr_closed_form():
    seq = lrs_of(CASES["step"][0], 60)
    assert_close_seq(seq, [0.1 * 0.5 ** (e // 3) for e in range(61)])
    assert seq[:4] == [0.1, 0.1, 0.1, 0.05]  # decays at epoch 3, not before


def test_exponential_lr_closed_form():
    assert_close_seq(lrs_of(CASES["exponential"][0], 100), [0.1 * 0.93 ** e for e in range(101)])


def test_multistep_lr_closed_form():
    expected = [0.1 * 0.3 ** sum(m <= e for m in (3, 7, 7, 20)) for e in range(41)]
    assert_close_seq(lrs_of(CASES["multistep"][0], 40), expected)


def test_cosine_annealing_follows_the_cosine_formula():
    # The recursive form stays on the closed form over several periods (it rises back after T_max).
    expected = [0.001 + (0.1 - 0.001) * (1 + math.cos(math.pi * e / 10)) / 2 for e in range(101)]
    assert_close_seq(lrs_of(CASES["cosine"][0], 100), expected)
    expected = [0.1 * (1 + math.cos(math.pi * e / 7)) / 2 for e in range(61)]
    assert_close_seq(lrs_of(CASES["cosine_zero_min"][0], 60), expected)


def test_linear_constant_polynomial_lambda_closed_forms():
    assert_close_seq(lrs_of(CASES["linear"][0], 40), [0.1 * (0.2 + 0.7 * min(e, 10) / 10) for e in range(41)])
    assert_close_seq(lrs_of(CASES["constant"][0], 30), [0.1 * (0.25 if e < 6 else 1.0) for e in range(31)])
    assert_close_seq(lrs_of(CASES["polynomial"][0], 40), [0.1 * (1 - min(e, 20) / 20) ** 2 for e in range(41)])
    assert lrs_of(CASES["lambda"][0], 60) == [0.1 * 0.95 ** e for e in range(61)]


def test_warm_restarts_closed_form():
    # T_0=3, T_mult=2: periods of 3, 6, 12, 24 epochs starting at 0, 3, 9, 21, 45.
    expected = []
    for e in range(61):
        start, period = 0, 3
        while e >= start + period:
            start, period = start + period, period * 2
        expected.append(0.01 + (0.1 - 0.01) * (1 + math.cos(math.pi * (e - start) / period)) / 2)
    assert_close_seq(lrs_of(CASES["warm_restarts_mult"][0], 60), expected)


def test_cyclic_triangular_closed_form():
    # Up from 0.01 to 0.1 in 4 steps, down in 6; momentum mirrors it between 0.9 and 0.8.
    rows = run(ember, CASES["cyclic"][0], 30)
    for e, (_, groups) in enumerate(rows):
        pos = e % 10
        frac = pos / 4 if pos <= 4 else (10 - pos) / 6
        lr, momentum, _ = groups[0]
        assert abs(lr - (0.01 + 0.09 * frac)) < 1e-15
        assert abs(momentum - (0.9 - 0.1 * frac)) < 1e-15


def test_one_cycle_closed_form():
    # Cosine from max_lr/25 up to max_lr over 30% of the steps, then down to max_lr/25/1e4.
    total, peak = 60, 0.3 * 60 - 1
    lo, hi = 0.1 / 25, 0.1
    low = lo / 1e4

    def cos_anneal(start, end, pct):
        return end + (start - end) / 2 * (1 + math.cos(math.pi * pct))

    rows = run(ember, CASES["one_cycle"][0], total - 1)
    for e, (_, groups) in enumerate(rows):
        if e <= peak:
            lr, m = cos_anneal(lo, hi, e / peak), cos_anneal(0.95, 0.85, e / peak)
        else:
            pct = (e - peak) / (total - 1 - peak)
            lr, m = cos_anneal(hi, low, pct), cos_anneal(0.85, 0.95, pct)
        assert abs(groups[0][0] - lr) < 1e-15 and abs(groups[0][1] - m) < 1e-15
    assert abs(rows[0][1][0][0] - lo) < 1e-17 and abs(rows[-1][1][0][0] - low) < 1e-18


def test_sequential_switches_schedulers_at_milestones():
    seq = lrs_of(_sequential, 30)
    assert_close_seq(seq[:5], [0.1 * (0.1 + 0.9 * e / 5) for e in range(5)])
    # From the milestone the cosine runs from its own epoch 0.
    assert_close_seq(seq[5:], [0.001 + 0.099 * (1 + math.cos(math.pi * e / 20)) / 2 for e in range(26)])


def test_chained_multiplies_the_factors():
    expected = [0.1 * (0.1 if e < 20 else 1.0) * 0.9 ** e for e in range(41)]
    assert_close_seq(lrs_of(_chained, 40), expected)


# ---- ReduceLROnPlateau on fixed metric series ----

PLATEAU_METRICS = [1.0, 0.9, 0.9, 0.9, 0.95, 0.91, 0.8, 0.8, 0.8001, 0.85, 0.85, 0.85, 0.7, 0.7, 0.7, 0.7, 0.7,
                   0.6999, 0.7, 0.7, 0.7, 0.7, 0.7, 0.7, 0.7, 0.2, 0.2, 0.2, 0.2, 0.2, 0.2, 0.2, 0.2, 0.2, 0.2,
                   0.2, 0.2, 0.2, 0.2, 0.2]
PLATEAU_CASES = {
    "default": lambda S, o: S.ReduceLROnPlateau(o),
    "patience": lambda S, o: S.ReduceLROnPlateau(o, factor=0.5, patience=2),
    "cooldown": lambda S, o: S.ReduceLROnPlateau(o, factor=0.5, patience=1, cooldown=3),
    "abs": lambda S, o: S.ReduceLROnPlateau(o, factor=0.5, patience=1, threshold=0.05, threshold_mode="abs"),
    "max": lambda S, o: S.ReduceLROnPlateau(o, mode="max", factor=0.3, patience=0),
    "max_abs": lambda S, o: S.ReduceLROnPlateau(o, mode="max", factor=0.3, patience=1, threshold=0.01,
                                                threshold_mode="abs"),
    "min_lr_list": lambda S, o: S.ReduceLROnPlateau(o, factor=0.5, patience=0, min_lr=[0.02, 0.001]),
    "min_lr": lambda S, o: S.ReduceLROnPlateau(o, factor=0.5, patience=0, min_lr=0.01),
    "eps": lambda S, o: S.ReduceLROnPlateau(o, factor=0.9, patience=0, eps=0.004),
}


@pytest.mark.parametrize("name", PLATEAU_CASES)
def test_plateau_matches_torch(name):
    if torch is None:
        pytest.skip("torch not installed")
    build, n = PLATEAU_CASES[name], len(PLATEAU_METRICS)
    ours = run(ember, build, n, metrics=PLATEAU_METRICS)
    assert_rows_equal(ours, run(torch, build, n, metrics=[torch.tensor(m) for m in PLATEAU_METRICS]))


def test_plateau_hand_traced():
    metrics = [1.0, 0.9, 0.9, 0.9, 0.9, 0.5, 0.6, 0.6, 0.6, 0.6, 0.6]
    seq = [row[1][0][0] for row in run(ember, PLATEAU_CASES["patience"], len(metrics), metrics=metrics)]
    # Three epochs without improvement (> patience 2) halve the lr; the counter then restarts.
    assert seq == [0.1, 0.1, 0.1, 0.1, 0.1, 0.05, 0.05, 0.05, 0.05, 0.025, 0.025, 0.025]
    seq = [row[1][0][0] for row in run(ember, PLATEAU_CASES["cooldown"], len(metrics), metrics=metrics)]
    # patience 1, cooldown 3: reduce at epoch 3, ignore bad epochs 4-6, reduce again after two more.
    assert seq == [0.1, 0.1, 0.1, 0.1, 0.05, 0.05, 0.05, 0.05, 0.05, 0.025, 0.025, 0.025]
    # min_lr per group stops the second group at 0.001 and the first at 0.02.
    rows = run(ember, PLATEAU_CASES["min_lr_list"], 8, metrics=[1.0] * 8)
    assert [g[0] for g in rows[-1][1]] == [0.02, 0.001]
    # eps: a reduction of at most eps is skipped, so the lr stops once lr * 0.1 <= 0.004.
    rows = run(ember, PLATEAU_CASES["eps"], 40, metrics=[1.0] * 40)
    assert rows[-1][1][1][0] == rows[-2][1][1][0] and 0.04 * 0.9 < rows[-1][1][1][0] <= 0.04


def test_plateau_accepts_a_zero_dim_tensor_metric():
    optimizer = make_optimizer(ember)
    scheduler = lr_scheduler.ReduceLROnPlateau(optimizer, patience=0)
    for value in (1.0, 2.0):
        scheduler.step(ember.tensor(value))
    assert scheduler.best == 1.0 and scheduler.get_last_lr() == [0.1 * 0.1, 0.05 * 0.1]


# ---- In a training loop: the optimizer reads the lr and momentum the scheduler sets ----

def train(lib, kind, build, steps=25):
    """A float64 least-squares fit (convex: the two libraries' rounding differences do not grow)."""
    weight = lib.tensor([[0.5, -1.0, 2.0], [1.5, 0.25, -0.75]], dtype=lib.float64, requires_grad=True)
    x = lib.tensor([[1.0, 2.0, 3.0], [-1.0, 0.5, 2.0], [0.0, -2.0, 1.0], [3.0, 1.0, -1.0]], dtype=lib.float64)
    optimizer = lib.optim.SGD([weight], lr=0.1, momentum=0.9) if kind == "sgd" else lib.optim.Adam([weight], lr=0.1)
    scheduler = build(lib.optim.lr_scheduler, optimizer)
    for _ in range(steps):
        optimizer.zero_grad()
        ((x @ weight.T - 1.0) ** 2).mean().backward()
        optimizer.step()
        scheduler.step()
    return weight.detach().numpy()


@pytest.mark.parametrize("kind, build", [
    ("sgd", lambda S, o: S.OneCycleLR(o, max_lr=0.05, total_steps=25)),
    ("adam", lambda S, o: S.CyclicLR(o, 0.01, 0.2, step_size_up=4)),
    ("sgd", lambda S, o: S.SequentialLR(o, [S.LinearLR(o, 0.1, total_iters=5), S.ExponentialLR(o, 0.8)], [5])),
])
def test_training_loop(kind, build):
    ours = train(ember, kind, build)
    frozen = train(ember, kind, lambda S, o: S.ConstantLR(o, factor=1.0))
    assert abs(ours - frozen).max() > 1e-3  # the schedule changed the trajectory
    if torch is not None:
        np.testing.assert_allclose(ours, train(torch, kind, build), rtol=1e-12, atol=1e-12)
