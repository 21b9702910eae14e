"""ember.return_types: the named tuples ops return, with PyTorch's repr (one field a line)."""
import pickle

import pytest

import ember

X = [[1.0, 3.0, 2.0], [2.0, 0.0, 5.0]]
CALLS = {
    "sort": lambda m, x: x.sort(),
    "topk": lambda m, x: x.topk(2),
    "max": lambda m, x: x.max(0),
    "min": lambda m, x: x.min(1, keepdim=True),
    "kthvalue": lambda m, x: x.kthvalue(1),
    "median": lambda m, x: x.median(0),
    "mode": lambda m, x: x.mode(0),
    "aminmax": lambda m, x: m.aminmax(x),
    "cummax": lambda m, x: x.cummax(0),
    "linalg_slogdet": lambda m, x: m.linalg.slogdet(m.eye(2)),
}


def test_repr_one_field_a_line():
    r = ember.tensor(X).max(0)
    assert repr(r) == str(r) == ("ember.return_types.max(\nvalues=tensor([2., 3., 5.]),\n"
                                 "indices=tensor([1, 0, 1]))")
    assert repr(ember.tensor(X).sort(dim=0)) == (
        "ember.return_types.sort(\nvalues=tensor([[1., 0., 2.],\n        [2., 3., 5.]]),\n"
        "indices=tensor([[0, 1, 0],\n        [1, 0, 1]]))")


@pytest.mark.parametrize("name", sorted(CALLS))
def test_types_live_in_ember_return_types(name):
    import ember.return_types as return_types
    r = CALLS[name](ember, ember.tensor(X))
    assert type(r) is getattr(return_types, name) and type(r).__name__ == name and name in return_types.__all__
    assert isinstance(r, tuple) and len(r) == 2
    back = pickle.loads(pickle.dumps(r))
    assert type(back) is type(r) and all(a.equal(b) for a, b in zip(back, r))


@pytest.mark.parametrize("name", sorted(CALLS))
def test_repr_as_torch(name):
    torch = pytest.importorskip("torch")
    ours = repr(CALLS[name](ember, ember.tensor(X)))
    theirs = repr(CALLS[name](torch, torch.tensor(X)))
    assert ours.replace("ember.", "torch.") == theirs


def test_std_mean_and_var_mean_return_plain_tuples():
    x = ember.tensor(X)
    for fn in (ember.std_mean, ember.var_mean):
        r = fn(x, 1)
        assert type(r) is tuple and len(r) == 2
    std, mean = ember.std_mean(x)
    assert abs(float(mean) - 13 / 6) < 1e-6 and abs(float(std) - 1.7224014243685084) < 1e-6
    assert repr(ember.var_mean(ember.tensor([1.0, 3.0]))) == "(tensor(2.), tensor(2.))"
