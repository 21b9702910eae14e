"""Reverse over forward: tangents stay part of the reverse graph (issue 12).

Composites that compute their result without grad and record their own node (cat, stack, clone, to,
contiguous, mean, split, unbind) used to compute their tangent under that no-grad scope too, so
differentiating a JVP through them was silently zero. Each case differentiates
g(x, t) = sum(w * J(x) t + (J(x) t)^2) with respect to the primals and the tangents, and checks it
against central finite differences of g in float64 and, when installed, against torch.
"""
import numpy as np
import pytest

import ember
from ember.autograd import forward_ad as fwAD

try:
    import torch
    import torch.autograd.forward_ad as torch_fwAD
except ImportError:
    torch = None


# (name, fn(m, *inputs), input shapes, which inputs get a tangent)
CASES = [
    ("cat dim 1", lambda m, a, b: m.cat([a * a, b.sin()], 1), [(2, 3), (2, 2)], [1, 1]),
    ("cat dim 0, one tangent", lambda m, a, b: m.cat([a * a, b.sin()], 0), [(2, 3), (1, 3)], [1, 0]),
    ("cat dim -1, 3-D, second tangent", lambda m, a, b, c: m.cat([a.exp(), b, c * 2], -1),
     [(2, 2, 1), (2, 2, 3), (2, 2, 2)], [0, 1, 1]),
    ("cat with a legacy empty input", lambda m, a: m.cat([m.zeros(0, dtype=m.float64), a * a], 0), [(3,)], [1]),
    ("stack dim 1", lambda m, a, b: m.stack([a * a, b.sin()], 1), [(2, 3), (2, 3)], [1, 1]),
    ("stack dim 2, one tangent", lambda m, a, b: m.stack([a.exp(), b], 2), [(2, 3), (2, 3)], [0, 1]),
    ("stack dim 0, 3-D", lambda m, a, b: m.stack([a, b * a], 0), [(2, 1, 3), (2, 1, 3)], [1, 0]),
    ("hstack", lambda m, a, b: m.hstack([a * a, b]), [(2, 3), (2, 3)], [1, 1]),
    ("vstack", lambda m, a, b: m.vstack([a * a, b]), [(2, 3), (1, 3)], [0, 1]),
    ("clone", lambda m, a: (a * a).clone(), [(2, 3)], [1]),
    ("contiguous", lambda m, a: (a * a).t().contiguous(), [(2, 3)], [1]),
    ("to (copy)", lambda m, a: (a * a).to(m.float64, copy=True), [(2, 3)], [1]),
    ("mean dim", lambda m, a: (a * a).mean(1), [(2, 3)], [1]),
    ("mean all", lambda m, a: (a * a).mean(), [(2, 3)], [1]),
    ("mean keepdim", lambda m, a: (a * a).mean((0, 2), keepdim=True), [(2, 3, 2)], [1]),
    ("std_mean", lambda m, a: m.std_mean(a * a, 1)[1], [(2, 3)], [1]),
    ("split", lambda m, a: (a * a).split(2, 1)[1], [(2, 5)], [1]),
    ("split sizes", lambda m, a: (a * a).split([1, 3], 1)[1] * 2, [(2, 4)], [1]),
    ("chunk", lambda m, a: (a * a).chunk(2, 0)[0], [(4, 3)], [1]),
    ("unbind", lambda m, a: (a * a).unbind(1)[2], [(2, 3)], [1]),
    ("constant pad", lambda m, a: m.nn.functional.pad(a * a, (1, 2)), [(2, 3)], [1]),
    ("diag of 1-D", lambda m, a: m.diag(a * a), [(3,)], [1]),
    ("repeat", lambda m, a: (a * a).repeat(2, 1), [(2, 3)], [1]),
    ("roll", lambda m, a: (a * a).roll(1, 1), [(2, 3)], [1]),
    ("tile", lambda m, a: (a * a).tile(2), [(2, 3)], [1]),
    ("cross", lambda m, a, b: m.linalg.cross(a, b), [(2, 3), (2, 3)], [1, 1]),
    ("index_put_ into a clone", lambda m, a, b: a.clone().index_put_((m.tensor([0]),), b * b),
     [(2, 3), (1, 3)], [1, 1]),
]


def inputs_for(name, shapes):
    rng = np.random.default_rng(sum(map(ord, name)))
    primals = [rng.standard_normal(s) for s in shapes]
    tangents = [rng.standard_normal(s) for s in shapes]
    return primals, tangents


def objective(m, fwd, fn, primals, tangents, has_tangent, weight):
    """g = sum(w * jvp + jvp^2) for the given primal and tangent tensors, and the jvp."""
    with fwd.dual_level():
        duals = [fwd.make_dual(x, t) if has else x for x, t, has in zip(primals, tangents, has_tangent)]
        out = fn(m, *duals)
        jvp = fwd.unpack_dual(out).tangent
    w = m.tensor(weight) if weight is not None else None
    return jvp, w


def grads(m, fwd, fn, primals_np, tangents_np, has_tangent):
    xs = [m.tensor(p, dtype=m.float64, requires_grad=True) for p in primals_np]
    ts = [m.tensor(t, dtype=m.float64, requires_grad=True) for t in tangents_np]
    jvp, _ = objective(m, fwd, fn, xs, ts, has_tangent, None)
    assert jvp is not None and jvp.requires_grad, "the tangent lost its reverse graph"
    weight = np.random.default_rng(7).standard_normal(tuple(jvp.shape))
    g = (m.tensor(weight) * jvp + jvp * jvp).sum()
    wanted = xs + [t for t, has in zip(ts, has_tangent) if has]
    got = m.autograd.grad(g, wanted, allow_unused=True)
    return [np.zeros(w.shape) if r is None else to_numpy(r) for w, r in zip(wanted, got)], weight


def to_numpy(t):
    t = t.detach()
    if torch is not None and isinstance(t, torch.Tensor) and t._is_zerotensor():
        return np.zeros(tuple(t.shape))  # torch's ZeroTensor (an unused input), which .numpy() refuses
    return t.numpy()


def finite_differences(fn, primals_np, tangents_np, has_tangent, weight, eps=1e-6):
    def g(values):
        n = len(primals_np)
        xs = [ember.tensor(v, dtype=ember.float64) for v in values[:n]]
        it = iter(values[n:])
        ts = [ember.tensor(next(it) if has else t, dtype=ember.float64) for t, has in zip(tangents_np, has_tangent)]
        jvp, _ = objective(ember, fwAD, fn, xs, ts, has_tangent, None)
        j = jvp.numpy()
        return float((weight * j + j * j).sum())

    values = [p.copy() for p in primals_np] + [t.copy() for t, has in zip(tangents_np, has_tangent) if has]
    out = []
    for v in values:
        d = np.zeros(v.shape)
        for idx in np.ndindex(v.shape):
            keep = v[idx]
            v[idx] = keep + eps
            hi = g(values)
            v[idx] = keep - eps
            lo = g(values)
            v[idx] = keep
            d[idx] = (hi - lo) / (2 * eps)
        out.append(d)
    return out


@pytest.mark.parametrize("name, fn, shapes, has_tangent", CASES, ids=[c[0] for c in CASES])
def test_reverse_over_forward_matches_finite_differences(name, fn, shapes, has_tangent):
    primals, tangents = inputs_for(name, shapes)
    got, weight = grads(ember, fwAD, fn, primals, tangents, has_tangent)
    expected = finite_differences(fn, primals, tangents, has_tangent, weight)
    assert any(np.abs(e).max() > 1e-3 for e in expected)  # the case differentiates something
    for g, e in zip(got, expected):
        np.testing.assert_allclose(g, e, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("name, fn, shapes, has_tangent", CASES, ids=[c[0] for c in CASES])
def test_reverse_over_forward_as_torch(name, fn, shapes, has_tangent):
    if torch is None:
        pytest.skip("torch is not installed")
    primals, tangents = inputs_for(name, shapes)
    got, _ = grads(ember, fwAD, fn, primals, tangents, has_tangent)
    expected, _ = grads(torch, torch_fwAD, fn, primals, tangents, has_tangent)
    for g, e in zip(got, expected):
        np.testing.assert_allclose(g, e, rtol=1e-10, atol=1e-12)


def test_func_jvp_through_cat_then_grad():
    """ember.func.jvp inside a function differentiated by autograd.grad: d/dx of J(x) v through cat."""
    x = ember.tensor([0.5, -1.0, 2.0], dtype=ember.float64, requires_grad=True)
    v = ember.tensor([1.0, 2.0, -1.0], dtype=ember.float64)
    _, jvp = ember.func.jvp(lambda a: ember.cat([a * a, a.sin()]), (x,), (v,))
    (g,) = ember.autograd.grad(jvp.sum(), x)
    # d/dx sum(2 x v + cos(x) v) = 2 v - sin(x) v
    expected = 2 * v.numpy() - np.sin(x.detach().numpy()) * v.numpy()
    np.testing.assert_allclose(g.numpy(), expected, rtol=1e-12)
    if torch is not None:
        tx = torch.tensor(x.detach().numpy(), requires_grad=True)
        _, tjvp = torch.func.jvp(lambda a: torch.cat([a * a, a.sin()]), (tx,), (torch.tensor(v.numpy()),))
        (tg,) = torch.autograd.grad(tjvp.sum(), tx)
        np.testing.assert_allclose(g.numpy(), tg.numpy(), rtol=1e-12)


def test_tangent_without_grad_mode_records_nothing():
    """Under no_grad the tangent is computed but joins no graph (as torch)."""
    x = ember.tensor([1.0, 2.0], dtype=ember.float64)
    t = ember.tensor([1.0, -1.0], dtype=ember.float64, requires_grad=True)
    with fwAD.dual_level():
        with ember.no_grad():
            out = ember.cat([fwAD.make_dual(x, t), x])
        jvp = fwAD.unpack_dual(out).tangent
    np.testing.assert_array_equal(jvp.detach().numpy(), [1.0, -1.0, 0.0, 0.0])
    assert not jvp.requires_grad
