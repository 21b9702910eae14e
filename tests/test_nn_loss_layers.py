"""Loss modules (issue 12): every torch.nn loss whose functional ember has, against that functional and
(when installed) the same torch.nn module: values and gradients for each reduction, reprs, the
weight/pos_weight buffers, the legacy size_average/reduce arguments and PyTorch's errors. Also the
multi-class margin functionals added for MultiMarginLoss and MultiLabelMarginLoss."""
import warnings

import numpy as np
import pytest

import ember
import ember.nn as nn
import ember.nn.functional as F
from harness.nn_modules import assert_same_step, assert_same_structure, copy_state

try:
    import torch
except ImportError:  # the torch comparisons are skipped without it
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="needs PyTorch")
RNG = np.random.default_rng(3)
N, C = 4, 5


def randn(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def labels(*shape, high=C):
    return RNG.integers(0, high, shape).astype(np.int64)


def signs(*shape):
    return np.where(RNG.random(shape) < 0.5, -1.0, 1.0).astype(np.float32)


def log_probs():
    x = randn(N, C)
    return x - np.log(np.exp(x).sum(1, keepdims=True))


def probs():
    x = np.exp(randn(N, C))
    return (x / x.sum(1, keepdims=True)).astype(np.float32)


def label_lists(n=N):
    """MultiLabelMarginLoss targets: each row's classes, then -1 (and anything after it is ignored)."""
    rows = np.full((n, C), -1, np.int64)
    for i in range(n):
        k = i % C + 1
        rows[i, :k] = RNG.permutation(C)[:k]
    rows[0, 3] = 2  # after the -1: ignored
    return rows


def weight():
    return np.abs(randn(C)) + 0.5


# name, kwargs (numpy arrays become ember/torch tensors), inputs, which inputs get gradients, functional
CASES = [
    ("L1Loss", {}, lambda: (randn(N, C), randn(N, C)), (True, True), F.l1_loss),
    ("MSELoss", {}, lambda: (randn(N, C), randn(N, C)), (True, True), F.mse_loss),
    ("SmoothL1Loss", dict(beta=0.5), lambda: (randn(N, C), randn(N, C)), (True, True),
     lambda a, b, reduction: F.smooth_l1_loss(a, b, reduction=reduction, beta=0.5)),
    ("HuberLoss", dict(delta=0.7), lambda: (randn(N, C), randn(N, C)), (True, True),
     lambda a, b, reduction: F.huber_loss(a, b, reduction=reduction, delta=0.7)),
    ("CrossEntropyLoss", {}, lambda: (randn(N, C), labels(N)), (True, False), F.cross_entropy),
    ("CrossEntropyLoss", dict(weight=weight(), ignore_index=1, label_smoothing=0.1),
     lambda: (randn(N, C, 3), labels(N, 3)), (True, False), None),
    ("CrossEntropyLoss", dict(label_smoothing=0.2), lambda: (randn(N, C), probs()), (True, False), None),
    ("NLLLoss", {}, lambda: (log_probs(), labels(N)), (True, False), F.nll_loss),
    ("NLLLoss", dict(weight=weight(), ignore_index=0), lambda: (log_probs(), labels(N)), (True, False), None),
    ("BCELoss", {}, lambda: (probs(), RNG.random((N, C)).astype(np.float32)), (True, False),
     F.binary_cross_entropy),
    ("BCELoss", dict(weight=weight()), lambda: (probs(), RNG.random((N, C)).astype(np.float32)), (True, False),
     None),
    ("BCEWithLogitsLoss", {}, lambda: (randn(N, C), RNG.random((N, C)).astype(np.float32)), (True, True),
     F.binary_cross_entropy_with_logits),
    ("BCEWithLogitsLoss", dict(weight=weight(), pos_weight=weight()),
     lambda: (randn(N, C), RNG.random((N, C)).astype(np.float32)), (True, True), None),
    ("KLDivLoss", dict(reduction="batchmean"), lambda: (log_probs(), probs()), (True, True), None),
    ("KLDivLoss", dict(log_target=True), lambda: (log_probs(), log_probs()), (True, True), None),
    ("SoftMarginLoss", {}, lambda: (randn(N, C), signs(N, C)), (True, False), F.soft_margin_loss),
    ("PoissonNLLLoss", {}, lambda: (randn(N, C), labels(N, C).astype(np.float32)), (True, False),
     F.poisson_nll_loss),
    ("PoissonNLLLoss", dict(log_input=False, full=True, eps=1e-4),
     lambda: (np.abs(randn(N, C)) + 0.1, labels(N, C).astype(np.float32)), (True, False), None),
    ("GaussianNLLLoss", {}, lambda: (randn(N, C), randn(N, C), np.abs(randn(N, C)) + 0.1), (True, True, True),
     F.gaussian_nll_loss),
    ("GaussianNLLLoss", dict(full=True, eps=1e-3), lambda: (randn(N, C), randn(N, C), np.abs(randn(N, 1))),
     (True, True, True), None),
    ("CosineEmbeddingLoss", dict(margin=0.2), lambda: (randn(N, C), randn(N, C), signs(N)), (True, True, False),
     None),
    ("MarginRankingLoss", dict(margin=0.3), lambda: (randn(N), randn(N), signs(N)), (True, True, False), None),
    ("HingeEmbeddingLoss", dict(margin=0.5), lambda: (randn(N, C), signs(N, C)), (True, False), None),
    ("TripletMarginLoss", {}, lambda: (randn(N, C), randn(N, C), randn(N, C)), (True, True, True),
     F.triplet_margin_loss),
    ("TripletMarginLoss", dict(margin=0.5, p=1.0, swap=True), lambda: (randn(N, C), randn(N, C), randn(N, C)),
     (True, True, True), None),
    ("TripletMarginWithDistanceLoss", {}, lambda: (randn(N, C), randn(N, C), randn(N, C)), (True, True, True),
     F.triplet_margin_with_distance_loss),
    ("MultiLabelSoftMarginLoss", {}, lambda: (randn(N, C), labels(N, C, high=2).astype(np.float32)),
     (True, False), F.multilabel_soft_margin_loss),
    ("MultiLabelSoftMarginLoss", dict(weight=weight()),
     lambda: (randn(N, C), labels(N, C, high=2).astype(np.float32)), (True, False), None),
    ("MultiMarginLoss", {}, lambda: (randn(N, C), labels(N)), (True, False), F.multi_margin_loss),
    ("MultiMarginLoss", dict(p=2, margin=0.5, weight=weight()), lambda: (randn(N, C), labels(N)), (True, False),
     None),
    ("MultiLabelMarginLoss", {}, lambda: (randn(N, C), label_lists()), (True, False), F.multilabel_margin_loss),
]
REDUCTIONS = ["mean", "sum", "none"]


def ember_kwargs(kwargs):
    return {k: ember.tensor(v) if isinstance(v, np.ndarray) else v for k, v in kwargs.items()}


def case_id(case):
    return case[0] + "".join(f"-{k}" for k in case[1])


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("case", [c for c in CASES if c[4] is not None], ids=case_id)
def test_loss_module_against_its_functional(case, reduction):
    name, kwargs, make_inputs, _, functional = case
    module = getattr(nn, name)(reduction=reduction, **ember_kwargs(kwargs))
    assert repr(module) == (f"{name}()" if name != "TripletMarginWithDistanceLoss" else
                            f"{name}(\n  (distance_function): PairwiseDistance()\n)")
    assert module.reduction == reduction
    inputs = [ember.tensor(a) for a in make_inputs()]
    np.testing.assert_allclose(module(*inputs).numpy(), functional(*inputs, reduction=reduction).numpy(),
                               rtol=1e-6, atol=1e-7)


@needs_torch
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_loss_module_matches_torch(case, reduction):
    name, kwargs, make_inputs, grads, _ = case
    if name == "KLDivLoss" and kwargs.get("reduction"):
        kwargs = dict(kwargs, reduction=reduction if reduction != "mean" else "batchmean")
    else:
        kwargs = dict(kwargs, reduction=reduction)
    t_mod = getattr(torch.nn, name)(**{k: torch.tensor(v) if isinstance(v, np.ndarray) else v
                                       for k, v in kwargs.items()})
    e_mod = getattr(nn, name)(**ember_kwargs(kwargs))
    copy_state(t_mod, e_mod)
    assert_same_structure(e_mod, t_mod)
    assert_same_step(e_mod, t_mod, *make_inputs(), grad_inputs=grads, rtol=1e-5, atol=1e-6)


# ---------------------------------------------------------------- buffers and legacy arguments

def test_weight_buffers_in_state_dict_and_conversions():
    w = ember.tensor(weight())
    ce = nn.CrossEntropyLoss(weight=w)
    assert list(ce.state_dict()) == ["weight"] and ce.weight is w
    assert [n for n, _ in ce.named_buffers()] == ["weight"] and list(ce.parameters()) == []
    assert ce.double().weight.dtype == ember.float64
    assert list(nn.CrossEntropyLoss().state_dict()) == [] and nn.NLLLoss().weight is None
    bce = nn.BCEWithLogitsLoss(pos_weight=ember.ones(C))
    assert list(bce.state_dict()) == ["pos_weight"] and bce.weight is None
    bce = nn.BCEWithLogitsLoss(weight=ember.ones(C), pos_weight=ember.ones(C))
    assert list(bce.state_dict()) == ["weight", "pos_weight"]
    assert list(nn.MultiMarginLoss(weight=ember.ones(C)).state_dict()) == ["weight"]


@pytest.mark.parametrize("size_average, reduce, expected", [
    (False, None, "sum"), (True, None, "mean"), (None, False, "none"), (True, False, "none"), (None, True, "mean"),
    (False, True, "sum"),
])
def test_legacy_size_average_and_reduce(size_average, reduce, expected):
    for cls in (nn.MSELoss, nn.L1Loss, nn.NLLLoss, nn.CrossEntropyLoss, nn.BCELoss, nn.KLDivLoss,
                nn.MultiMarginLoss, nn.MarginRankingLoss):
        with pytest.warns(UserWarning, match=f"size_average and reduce args will be deprecated, please use "
                                             f"reduction='{expected}' instead."):
            module = cls(size_average=size_average, reduce=reduce, reduction="ignored")
        assert module.reduction == expected


def test_legacy_reduce_false_gives_per_element_losses():
    with pytest.warns(UserWarning):
        module = nn.MSELoss(reduce=False)
    a, b = randn(3, 2), randn(3, 2)
    np.testing.assert_allclose(module(ember.tensor(a), ember.tensor(b)).numpy(), (a - b) ** 2, rtol=1e-6)


def test_loss_constructor_errors():
    with pytest.raises(TypeError, match="delta must be a float or int, got: <class 'str'>"):
        nn.HuberLoss(delta="1")
    with pytest.raises(ValueError, match="TripletMarginLoss: expected margin to be greater than 0, got 0 instead"):
        nn.TripletMarginLoss(margin=0)
    with pytest.raises(ValueError, match="TripletMarginWithDistanceLoss: expected margin to be greater than 0, "
                                         "got -1.0 instead"):
        nn.TripletMarginWithDistanceLoss(margin=-1.0)
    with pytest.raises(ValueError, match="only p == 1 and p == 2 supported"):
        nn.MultiMarginLoss(p=3)
    with pytest.raises(ValueError, match="MultiMarginLoss: expected weight to be None or 1D tensor, got 2D instead"):
        nn.MultiMarginLoss(weight=ember.ones(2, 2))
    with pytest.raises(TypeError):
        nn.GaussianNLLLoss(True)  # its options are keyword-only
    with pytest.warns(FutureWarning, match="`NLLLoss2d` has been deprecated"):
        m = nn.NLLLoss2d()
    assert isinstance(m, nn.NLLLoss) and repr(m) == "NLLLoss2d()"
    with pytest.raises(ValueError, match="bogus is not a valid value for reduction"):
        nn.MSELoss(reduction="bogus")(ember.randn(2), ember.randn(2))


def test_triplet_with_distance_function_and_swap():
    def l1(a, b):
        return (a - b).abs().sum(-1)

    module = nn.TripletMarginWithDistanceLoss(distance_function=l1, margin=2.0, swap=True)
    assert repr(module) == "TripletMarginWithDistanceLoss()"  # a function is no submodule
    a, p, n = randn(N, C), randn(N, C), randn(N, C)
    d_pos, d_neg = np.abs(a - p).sum(-1), np.minimum(np.abs(a - n).sum(-1), np.abs(p - n).sum(-1))
    expected = np.maximum(2.0 + d_pos - d_neg, 0).mean()
    assert float(module(ember.tensor(a), ember.tensor(p), ember.tensor(n))) == pytest.approx(expected, rel=1e-5)


def test_loss_modules_in_a_training_step():
    model = nn.Sequential(nn.Linear(3, C))
    x, y = ember.randn(N, 3), ember.tensor(labels(N))
    loss = nn.CrossEntropyLoss()(model(x), y)
    loss.backward()
    assert loss.dim() == 0 and model[0].weight.grad.shape == (C, 3)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        nn.MSELoss()(model(x), ember.randn(N, C)).backward()


# ---------------------------------------------------------------- the multi-class margin functionals

def np_multi_margin(x, y, p=1, margin=1.0, w=None):
    losses = []
    for row, t in zip(x, y):
        z = np.maximum(margin - row[t] + row, 0) ** p * (1 if w is None else w[t])
        losses.append((z.sum() - z[t]) / len(row))
    return np.array(losses)


def np_multilabel_margin(x, y):
    losses = []
    for row, targets in zip(x, y):
        listed = []
        for t in targets:
            if t < 0:
                break
            listed.append(t)
        others = [i for i in range(len(row)) if i not in listed]
        losses.append(sum(max(0.0, 1 - (row[j] - row[i])) for j in listed for i in others) / len(row))
    return np.array(losses)


@pytest.mark.parametrize("p, margin, use_weight", [(1, 1.0, False), (2, 0.4, True), (1, 2.5, True)])
def test_multi_margin_loss_against_numpy(p, margin, use_weight):
    x, y = randn(6, C), labels(6)
    w = weight() if use_weight else None
    et = ember.tensor(x, requires_grad=True)
    out = F.multi_margin_loss(et, ember.tensor(y), p, margin, None if w is None else ember.tensor(w),
                              reduction="none")
    np.testing.assert_allclose(out.detach().numpy(), np_multi_margin(x, y, p, margin, w), rtol=1e-5, atol=1e-6)
    out.sum().backward()
    # d/dx[i] (i != y) of max(0, m - x[y] + x[i])^p / C; x[y] gets minus their sum
    z = np.maximum(margin - x[np.arange(6), y][:, None] + x, 0)
    g = (p * z ** (p - 1) * (z > 0)) / C * (1 if w is None else w[y][:, None])
    g[np.arange(6), y] = 0
    g[np.arange(6), y] = -g.sum(1)
    np.testing.assert_allclose(et.grad.numpy(), g, rtol=1e-5, atol=1e-6)


def test_multilabel_margin_loss_against_numpy():
    x, y = randn(N, C), label_lists()
    for reduction, reduce in (("none", lambda v: v), ("mean", np.mean), ("sum", np.sum)):
        out = F.multilabel_margin_loss(ember.tensor(x), ember.tensor(y), reduction=reduction)
        np.testing.assert_allclose(out.numpy(), reduce(np_multilabel_margin(x, y)), rtol=1e-5, atol=1e-6)


def test_margin_losses_unbatched_shapes():
    x = ember.randn(C)
    assert F.multi_margin_loss(x, ember.tensor(2), reduction="none").shape == ()
    assert F.multi_margin_loss(x, ember.tensor([2]), reduction="none").shape == (1,)
    assert F.multilabel_margin_loss(x, ember.tensor([1, 3, -1, 0, 0]), reduction="none").shape == ()
    assert F.multilabel_margin_loss(x.reshape(1, C), ember.tensor([[1, 3, -1, 0, 0]]),
                                    reduction="none").shape == (1,)


def test_margin_loss_errors():
    x = ember.randn(2, 3)
    with pytest.raises(RuntimeError, match="target out of range"):
        F.multi_margin_loss(x, ember.tensor([0, 3]))
    with pytest.raises(RuntimeError, match=r"Expected non-empty vector or matrix with optional 0-dim batch size, "
                                           r"but got: \[2, 3, 4\]"):
        F.multi_margin_loss(ember.randn(2, 3, 4), ember.tensor([0, 1]))
    with pytest.raises(RuntimeError, match=r"multi_margin_loss: target tensor should be 1-D with size equal to the "
                                           r"number of input samples \(batch size\). Expected target size \[2\], "
                                           r"but got \[3\]. Input has shape \[2, 3\]."):
        F.multi_margin_loss(x, ember.tensor([0, 1, 1]))
    with pytest.raises(RuntimeError, match="expected scalar type Long but found Float"):
        F.multi_margin_loss(x, ember.tensor([0.0, 1.0]))
    with pytest.raises(RuntimeError, match=r"inconsistent weight size, expected 3 but got \[4\]"):
        F.multi_margin_loss(x, ember.tensor([0, 1]), weight=ember.ones(4))
    with pytest.raises(ValueError, match="weight must be one-dimensional"):
        F.multi_margin_loss(x, ember.tensor([0, 1]), weight=ember.ones(1, 3))
    with pytest.raises(RuntimeError, match="argument #2 'target' is out of range"):
        F.multilabel_margin_loss(x, ember.tensor([[0, 3, -1], [0, 1, 1]]))
    with pytest.raises(RuntimeError, match=r"inconsistent target size: \[2, 2\] for input of size: \[2, 3\]"):
        F.multilabel_margin_loss(x, ember.tensor([[0, 1], [0, 1]]))


@needs_torch
@pytest.mark.parametrize("shape", [(C,), (1, C), (6, C)])
def test_margin_functionals_match_torch(shape):
    import torch.nn.functional as TF
    x = randn(*shape)
    y = labels(*shape[:-1]) if len(shape) == 2 else np.array(3)
    ml = label_lists(shape[0]) if len(shape) == 2 else label_lists()[1]
    for reduction in REDUCTIONS:
        for e_out, t_out in [
            (F.multi_margin_loss(ember.tensor(x), ember.tensor(y), 2, 0.7, reduction=reduction),
             TF.multi_margin_loss(torch.tensor(x), torch.tensor(y), 2, 0.7, reduction=reduction)),
            (F.multilabel_margin_loss(ember.tensor(x), ember.tensor(ml), reduction=reduction),
             TF.multilabel_margin_loss(torch.tensor(x), torch.tensor(ml), reduction=reduction)),
        ]:
            assert tuple(e_out.shape) == tuple(t_out.shape)
            np.testing.assert_allclose(e_out.numpy(), t_out.numpy(), rtol=1e-5, atol=1e-6)


# ---------------------------------------------------------------- LinearCrossEntropyLoss (new in PyTorch 2.13)

LCE_CASES = [
    (dict(), (N, 3), lambda: labels(N)),
    (dict(bias=True, weight=weight(), label_smoothing=0.1, reduction="sum"), (N, 3), lambda: labels(N)),
    (dict(out_features=(2,), bias=True, ignore_index=1), (N, 3), lambda: labels(N, 2)),
    (dict(reduction="none"), (3,), lambda: np.array(2)),
    (dict(options=nn.LinearCrossEntropyOptions(batch_chunk_size=2)), (N, 3), lambda: labels(N)),
    (dict(), (N, 3), probs),
]


@pytest.mark.parametrize("kwargs, shape, make_target", LCE_CASES)
def test_linear_cross_entropy_loss_is_linear_then_cross_entropy(kwargs, shape, make_target):
    module = nn.LinearCrossEntropyLoss(3, C, **ember_kwargs(kwargs))
    x, target = ember.tensor(randn(*shape)), ember.tensor(make_target())
    out_features = kwargs.get("out_features", ())
    logits = F.linear(x, module.linear.weight, module.linear.bias)
    logits = logits.reshape(tuple(x.shape[:-1]) + (C,) + out_features)
    expected = F.cross_entropy(logits, target, weight=module.weight, reduction=kwargs.get("reduction", "mean"),
                               ignore_index=kwargs.get("ignore_index", -100),
                               label_smoothing=kwargs.get("label_smoothing", 0.0))
    np.testing.assert_allclose(module(x, target).detach().numpy(), expected.detach().numpy(), rtol=1e-6)
    assert module.linear.weight.shape == (C * int(np.prod(out_features)), 3)


@needs_torch
@pytest.mark.parametrize("kwargs, shape, make_target", LCE_CASES)
def test_linear_cross_entropy_loss_matches_torch(kwargs, shape, make_target):
    t_kwargs = {k: torch.tensor(v) if isinstance(v, np.ndarray) else v for k, v in kwargs.items()}
    if "options" in kwargs:
        t_kwargs["options"] = torch.nn.LinearCrossEntropyOptions(batch_chunk_size=2)
    t_mod = torch.nn.LinearCrossEntropyLoss(3, C, **t_kwargs)
    e_mod = nn.LinearCrossEntropyLoss(3, C, **ember_kwargs(kwargs))
    copy_state(t_mod, e_mod)
    assert_same_structure(e_mod, t_mod)
    target = make_target()
    assert_same_step(e_mod, t_mod, randn(*shape), target, grad_inputs=(True, False), rtol=1e-5, atol=1e-6)


def test_linear_cross_entropy_errors_and_options():
    with pytest.raises(RuntimeError, match=r"expected weight shape to be \(5,\), got \(4,\)"):
        nn.LinearCrossEntropyLoss(3, 5, weight=ember.ones(4))
    with pytest.raises(RuntimeError, match=r"expected label_smoothing to be in range \[0, 1\], got 1.5"):
        nn.LinearCrossEntropyLoss(3, 5, label_smoothing=1.5)
    w = ember.randn(5, 3)
    with pytest.raises(RuntimeError, match="expected input with dimensionality 1 or 2, got 3"):
        F.linear_cross_entropy(ember.randn(2, 2, 3), w, ember.tensor([0, 1]))
    with pytest.raises(RuntimeError, match=r"expected equal input and linear_weight last dimensions \(in_features\), "
                                           "got 4 and 3, respectively"):
        F.linear_cross_entropy(ember.randn(2, 4), w, ember.tensor([0, 1]))
    with pytest.raises(RuntimeError, match=r"expected linear_bias shape \(5,\), got \(3,\)"):
        F.linear_cross_entropy(ember.randn(2, 3), w, ember.tensor([0, 1]), linear_bias=ember.zeros(3))
    with pytest.raises(RuntimeError, match="K-dimensional loss defined by linear_weight shape"):
        F.linear_cross_entropy(ember.randn(3), ember.randn(5, 2, 3), ember.tensor([0, 1]))
    with pytest.raises(RuntimeError, match="ignore_index cannot be specified when target contains probabilities"):
        F.linear_cross_entropy(ember.randn(2, 3), w, ember.softmax(ember.randn(2, 5), 1), ignore_index=0)
    with pytest.warns(UserWarning, match=r"linear_cross_entropy: ``options`` ignored; chunked path needs"):
        F.linear_cross_entropy(ember.randn(2, 3), w, ember.tensor([0, 1]), label_smoothing=0.1,
                               options=nn.LinearCrossEntropyOptions())
    for bad, message in ((dict(acc_policy="fast"), "invalid acc_policy: 'fast'"),
                         (dict(chunking_method="aspect_ratio:0"), "invalid chunking_method: 'aspect_ratio:0'"),
                         (dict(batch_chunk_size=0), "batch_chunk_size must be positive int or None, got 0"),
                         (dict(acc_dtype=ember.int32), "acc_dtype must be one of")):
        with pytest.raises(ValueError, match=message):
            nn.LinearCrossEntropyOptions(**bad)
    assert repr(nn.LinearCrossEntropyOptions(chunking_method="aspect_ratio:2")) == (
        "LinearCrossEntropyOptions(allow_retain_graph=False, batch_chunk_size=None, chunking_method='aspect_ratio:2', "
        "acc_policy='auto', acc_dtype=None)")
