"""Memory-overlap checks on every write path, as PyTorch makes them.

A written tensor with a stride-0 dim of size > 1 ("internal" overlap) raises for
pointwise in-place and out= ops, copy_, `t[...] = number` and the derived
in-place/out= variants; fill_/zero_ may write into it. A written tensor that shares
some but not all of an input's memory ("partial" overlap) raises; the very same view
(`a.add_(a)`) works, except for cat/stack's out=, which may share nothing with an
input; layouts too hard to decide (strided, non-dense) pass. Each case runs on
ember and, when PyTorch is importable, on torch with the same outcome.
"""
import numpy as np
import pytest

import ember

try:
    import torch
except ImportError:  # the suite runs without PyTorch; only the comparisons need it
    torch = None

INTERNAL = "more than one element of the written-to tensor refers to a single memory location"
PARTIAL = "some elements of the input tensor and the written-to tensor refer to a single memory location"


def expanded(lib, *shape, dtype=None):
    """zeros of `shape` that are one row in memory: every row aliases the first."""
    return lib.zeros(1, *shape[1:], dtype=dtype or lib.float32).expand(*shape)


def ramp(lib, n=6):
    return lib.arange(1.0, n + 1.0)


def mat(lib, n=3):
    return lib.arange(1.0, n * n + 1.0).reshape(n, n)


def _index(lib, *values):
    return lib.tensor(list(values), dtype=lib.int64)


# (id, fn(lib) -> tensor or None, expected) with expected INTERNAL, PARTIAL or "ok". An
# "ok" tensor is compared with torch's too; None where PyTorch's values depend on its loop order.
CASES = [
    # pointwise in-place (the iterator writes into self)
    ("add_-expanded-self", lambda L: expanded(L, 4, 3).add_(1), INTERNAL),
    ("add_-transposed-self", lambda L: (lambda a: a.add_(a.t()))(mat(L)), PARTIAL),
    ("add_-shifted-forward", lambda L: (lambda v: v[1:].add_(v[:-1]))(ramp(L)), PARTIAL),
    ("add_-shifted-back", lambda L: (lambda v: v[:-1].add_(v[1:]))(ramp(L)), PARTIAL),
    ("add_-same-view", lambda L: (lambda a: a.add_(a))(mat(L)), "ok"),
    ("add_-same-layout-other-object", lambda L: (lambda a: a.add_(a[:]))(mat(L)), "ok"),
    ("add_-disjoint-halves", lambda L: (lambda v: (v[:3].add_(v[3:]), v)[1])(ramp(L)), "ok"),
    ("add_-interleaved-strided", lambda L: (lambda v: (v[::2].add_(v[1::2]), v)[1])(ramp(L)), "ok"),
    ("exp_-transposed-self-alone", lambda L: (lambda a: (a.t().mul_(2), a)[1])(mat(L)), "ok"),
    ("add_-empty-expanded", lambda L: L.zeros(1, 0).expand(4, 0).add_(1), "ok"),
    ("add_-input-expanded", lambda L: (lambda a: a.add_(expanded(L, 4, 3)))(L.ones(4, 3)), "ok"),
    ("clamp_-expanded-self", lambda L: expanded(L, 4, 3).clamp_(0, 1), INTERNAL),
    ("mul_-size1-stride0", lambda L: L.zeros(3).expand(1, 3).mul_(2), "ok"),
    # pointwise out=
    ("add-out-expanded", lambda L: L.add(L.ones(4, 3), 1, out=expanded(L, 4, 3)), INTERNAL),
    ("add-out-expanded-cast", lambda L: L.add(L.ones(4, 3, dtype=L.int32), 1, out=expanded(L, 4, 3, dtype=L.float64)),
     INTERNAL),
    ("add-out-shifted", lambda L: (lambda v: L.add(v[:-1], 1, out=v[1:]))(ramp(L)), PARTIAL),
    ("add-out-same-view", lambda L: (lambda v: L.add(v, 1, out=v))(ramp(L)), "ok"),
    ("add-out-input-expanded-from-out", lambda L: (lambda v: L.add(v[:1].expand(4), 1, out=v[:4]))(ramp(L)), "ok"),
    ("where-out-shifted", lambda L: (lambda v: L.where(v[:-1] > 2, v[:-1], L.zeros(5), out=v[1:]))(ramp(L)),
     PARTIAL),
    ("where-out-expanded", lambda L: L.where(L.ones(4, 3) > 0, L.ones(4, 3), L.zeros(4, 3),
                                             out=expanded(L, 4, 3)), INTERNAL),
    # copy_ (and assignment through basic indexing, which copies)
    ("copy_-expanded-self", lambda L: expanded(L, 4, 3).copy_(L.ones(4, 3)), INTERNAL),
    ("copy_-shifted-forward", lambda L: (lambda v: (v[1:].copy_(v[:-1]), v)[1])(ramp(L)), PARTIAL),
    ("copy_-shifted-back", lambda L: (lambda v: (v[:-1].copy_(v[1:]), v)[1])(ramp(L)), PARTIAL),
    ("copy_-transposed-self", lambda L: (lambda a: a.copy_(a.t()))(mat(L)), PARTIAL),
    ("copy_-same-view", lambda L: (lambda v: v.copy_(v))(ramp(L)), "ok"),
    ("copy_-from-expanded-element", lambda L: (lambda v: (v[1:].copy_(v[0].expand(5)), v)[1])(ramp(L)), "ok"),
    ("setitem-shifted", lambda L: (lambda v: (v.__setitem__(slice(1, None), v[:-1]), v)[1])(ramp(L)), PARTIAL),
    ("setitem-tensor-into-expanded", lambda L: expanded(L, 4, 3).__setitem__(slice(None), L.ones(3)), INTERNAL),
    # a number assigned through basic indexing is copied in, as PyTorch does: fill_'s allowance does not apply
    ("setitem-number-into-expanded", lambda L: expanded(L, 4, 3).__setitem__(slice(None), 1.0), INTERNAL),
    ("setitem-number-ellipsis-expanded", lambda L: expanded(L, 4, 3).__setitem__(Ellipsis, 1), INTERNAL),
    ("setitem-number-into-expanded-column", lambda L: expanded(L, 4, 3).__setitem__((slice(None), 0), 1.0),
     INTERNAL),
    ("setitem-number-into-row-of-expanded", lambda L: (lambda a: (a.__setitem__(0, 2.0), a)[1])(expanded(L, 4, 3)),
     "ok"),
    # fill_ / zero_ give every element one value: an expanded self is fine
    ("fill_-expanded-self", lambda L: expanded(L, 4, 3).fill_(2), "ok"),
    ("zero_-expanded-self", lambda L: L.ones(1, 3).expand(4, 3).zero_(), "ok"),
    # index_put_ and advanced-index assignment
    ("index_put_-values-overlap", lambda L: (lambda v: v[1:].index_put_((_index(L, 0, 1),), v[:2]))(ramp(L)),
     PARTIAL),
    ("index_put_-values-inside-self", lambda L: (lambda v: v.index_put_((_index(L, 0, 1),), v[:2]))(ramp(L)),
     PARTIAL),
    ("index_put_-indices-in-self", lambda L: (lambda a: a.index_put_((a[:2],), L.tensor(1, dtype=L.int64)))(
        L.zeros(5, dtype=L.int64)), PARTIAL),
    ("index_put_-disjoint-values", lambda L: (lambda v: (v[:3].index_put_((_index(L, 0, 2),), v[4:]), v)[1])(
        ramp(L)), "ok"),
    ("setitem-advanced-shifted", lambda L: (lambda v: v.__setitem__(_index(L, 1, 2), v[:2]))(ramp(L)), PARTIAL),
    # div_: an in-place variant derived by copying the functional result into self
    ("div_-shifted", lambda L: (lambda v: v[1:].div_(v[:-1]))(ramp(L)), PARTIAL),
    ("div_-floor-shifted", lambda L: (lambda v: v[1:].div_(v[:-1], rounding_mode="floor"))(ramp(L)), PARTIAL),
    ("div_-trunc-transposed", lambda L: (lambda a: a.div_(a.t(), rounding_mode="trunc"))(mat(L)), PARTIAL),
    ("div_-floor-expanded-self", lambda L: L.ones(1, 3).expand(4, 3).div_(2, rounding_mode="floor"), INTERNAL),
    ("div_-same-view", lambda L: (lambda v: v.div_(v, rounding_mode="floor"))(ramp(L)), "ok"),
    # out= of kernel and composite ops: the result is copied into out
    ("div-out-expanded", lambda L: L.div(L.ones(4, 3), 2.0, out=expanded(L, 4, 3)), INTERNAL),
    ("mm-out-expanded", lambda L: L.mm(L.ones(4, 3), L.ones(3, 3), out=expanded(L, 4, 3)), INTERNAL),
    ("matmul-out-expanded", lambda L: L.matmul(L.ones(4, 3), L.ones(3, 3), out=expanded(L, 4, 3)), INTERNAL),
    ("mean-out-expanded", lambda L: L.mean(L.ones(4, 4), 1, out=expanded(L, 4)), INTERNAL),
    ("cat-out-expanded", lambda L: L.cat([L.ones(2, 3), L.ones(2, 3)], out=expanded(L, 4, 3)), INTERNAL),
    # div's out= follows PyTorch's pointwise rule (the same view is fine); cat's and stack's refuse
    # any input sharing out's memory, the same view included (PyTorch's cat)
    ("div-out-shifted-self", lambda L: (lambda v: L.div(v[:4], 2.0, out=v[1:5]))(ramp(L)), PARTIAL),
    ("div-out-shifted-other", lambda L: (lambda v: L.div(L.ones(4), v[:4], out=v[1:5]))(ramp(L)), PARTIAL),
    ("div-floor-out-shifted", lambda L: (lambda v: L.div(v[:4], 2.0, rounding_mode="floor", out=v[1:5]))(ramp(L)),
     PARTIAL),
    ("div-trunc-out-transposed", lambda L: (lambda a: L.div(a.t(), 2.0, rounding_mode="trunc", out=a))(mat(L)),
     PARTIAL),
    ("div-out-same-view", lambda L: (lambda v: L.div(v, 2.0, out=v))(ramp(L)), "ok"),
    ("cat-out-is-input", lambda L: (lambda v: L.cat([v], out=v))(ramp(L)), PARTIAL),
    ("cat-out-overlaps-inputs", lambda L: (lambda v: L.cat([v[:2], v[2:4]], out=v[1:5]))(ramp(L)), PARTIAL),
    ("cat-out-holds-an-input", lambda L: (lambda v: L.cat([v[:3], L.ones(3)], out=v))(ramp(L)), PARTIAL),
    ("cat-out-disjoint-view", lambda L: (lambda v: (L.cat([v[:2], v[2:4]], out=v[4:8]), v)[1])(ramp(L, 8)), "ok"),
    ("stack-out-is-base-of-inputs", lambda L: (lambda a: L.stack([a[0], a[1]], out=a))(mat(L, 2)), PARTIAL),
    ("stack-out-same-memory", lambda L: (lambda a: L.stack([a[0]], out=a))(ramp(L, 4).reshape(1, 4)), PARTIAL),
    ("stack-out-disjoint-view", lambda L: (lambda v: (L.stack([v[:2], v[2:4]], out=v[4:8].view(2, 2)), v)[1])(
        ramp(L, 8)), "ok"),
    ("stack-out-expanded", lambda L: L.stack([L.ones(3), L.ones(3)], out=expanded(L, 2, 3)), INTERNAL),
    # reductions with out= (PyTorch checks neither overlap there; all elements agree here)
    ("sum-out-expanded", lambda L: (L.sum(L.ones(4, 4), 1, out=expanded(L, 4)), None)[1], "ok"),
]


def _outcome(lib, fn):
    try:
        result = fn(lib)
    except RuntimeError as e:
        for kind in (INTERNAL, PARTIAL):
            if kind in str(e):
                return kind, str(e)
        raise
    return "ok", result


@pytest.mark.parametrize("fn,expected", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_overlap(fn, expected):
    kind, value = _outcome(ember, fn)
    assert kind == expected, f"expected {expected!r}, got {kind!r}: {value}"
    if kind != "ok":
        assert "Please clone() the tensor before performing the operation." in value
        assert value.split(":")[0].replace("_", "").isalpha(), f"the message names no op: {value}"
    if torch is not None:
        torch_kind, torch_value = _outcome(torch, fn)
        assert torch_kind == kind, f"torch: {torch_kind!r}, ember: {kind!r}"
        if kind == "ok" and value is not None:
            np.testing.assert_allclose(value.numpy(), torch_value.numpy())


def test_message_names_the_op():
    with pytest.raises(RuntimeError, match=r"^add_: unsupported operation: more than one element"):
        expanded(ember, 4, 3).add_(1)
    with pytest.raises(RuntimeError, match=r"^copy_: unsupported operation: some elements"):
        v = ramp(ember)
        v[1:].copy_(v[:-1])
    with pytest.raises(RuntimeError, match=r"^mm: unsupported operation: more than one element"):
        ember.mm(ember.ones(4, 3), ember.ones(3, 3), out=expanded(ember, 4, 3))


def test_rejected_write_leaves_the_target_unchanged():
    v = ramp(ember)
    for write in (lambda: v[1:].add_(v[:-1]), lambda: v[1:].copy_(v[:-1]), lambda: v[1:].div_(v[:-1])):
        with pytest.raises(RuntimeError, match=PARTIAL):
            write()
        np.testing.assert_array_equal(v.numpy(), np.arange(1.0, 7.0))


def test_issue_examples_no_longer_give_silent_wrong_answers():
    with pytest.raises(RuntimeError, match=INTERNAL):
        ember.zeros(1, 3).expand(4, 3).add_(1)
    a = mat(ember)
    with pytest.raises(RuntimeError, match=PARTIAL):
        a.add_(a.t())
    a.add_(a.t().clone())  # what the message asks for gives the symmetric result
    np.testing.assert_array_equal(a.numpy(), a.numpy().T)
    v = ramp(ember)
    with pytest.raises(RuntimeError, match=PARTIAL):
        v[1:].add_(v[:-1])


def test_out_of_place_results_are_right_where_pytorch_does_not_check():
    # mm/matmul out= overlapping an input: ember computes first, then copies, so the
    # result is the product of the inputs as they were (PyTorch overwrites as it goes).
    a = ember.arange(1.0, 17.0)
    want = (a[:12].reshape(4, 3) @ ember.ones(3, 3)).numpy()
    ember.mm(a[:12].reshape(4, 3), ember.ones(3, 3), out=a[2:14].reshape(4, 3))
    np.testing.assert_allclose(a[2:14].reshape(4, 3).numpy(), want)
    b = mat(ember)
    want = (b @ b).numpy()
    ember.matmul(b, b, out=b)
    np.testing.assert_allclose(b.numpy(), want)


@pytest.mark.parametrize("op", ["var", "std"])
def test_every_derived_out_refuses_an_expanded_out(op):
    # One rule for kernel and composite out= (PyTorch happens not to check var/std/bmm):
    # several results written to one address cannot all be kept.
    with pytest.raises(RuntimeError, match=f"^{op}: unsupported operation: " + INTERNAL):
        getattr(ember, op)(ember.rand(4, 4), 1, out=expanded(ember, 4))
    with pytest.raises(RuntimeError, match="^bmm: unsupported operation: " + INTERNAL):
        ember.bmm(ember.ones(2, 4, 3), ember.ones(2, 3, 3), out=expanded(ember, 2, 4, 3))
