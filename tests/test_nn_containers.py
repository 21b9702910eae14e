"""nn containers: Sequential, ModuleList, ModuleDict, ParameterList, ParameterDict
(indexing, editing, registration, reprs equal to PyTorch's)."""
from collections import OrderedDict

import pytest
from nn_toys import toys

import ember
from ember import nn

try:
    import torch
except ImportError:
    torch = None

E = toys(ember)


def names(module):
    return [n for n, _ in module.named_children()]


def both(build):
    """build(lib) for ember, and for torch when installed (a list of one or two results)."""
    return [build(lib) for lib in (ember, torch) if lib is not None]


# ---------------------------------------------------------------- Sequential
def test_sequential_runs_in_order_and_indexes():
    a, b, c = E.Scale(2), E.TinyLinear(2, 2), E.Scale(2)
    seq = nn.Sequential(a, b, c)
    x = ember.tensor([[1.0, -1.0]])
    assert seq(x).tolist() == c(b(a(x))).tolist()
    assert len(seq) == 3 and seq[0] is a and seq[-1] is c and seq[-3] is a and list(seq) == [a, b, c]
    with pytest.raises(IndexError, match="index 3 is out of range"):
        seq[3]
    with pytest.raises(IndexError, match="index -4 is out of range"):
        seq[-4]
    part = seq[1:]
    assert type(part) is nn.Sequential and list(part) == [b, c] and names(part) == ["1", "2"]
    assert list(seq[::-1]) == [c, b, a]
    named = nn.Sequential(OrderedDict([("first", a), ("second", b)]))
    assert names(named) == ["first", "second"] and named.second is b and named[1] is b
    assert names(named[1:]) == ["second"]


def test_sequential_editing():
    mods = [E.Scale(1) for _ in range(5)]
    seq = nn.Sequential(*mods[:2])
    assert seq.append(mods[2]) is seq and list(seq) == mods[:3]
    seq.insert(0, mods[3])
    assert list(seq) == [mods[3]] + mods[:3] and names(seq) == ["0", "1", "2", "3"]
    seq.insert(-1, mods[4])
    assert list(seq) == [mods[3], mods[0], mods[1], mods[4], mods[2]]
    with pytest.raises(IndexError, match="Index out of range: 9"):
        seq.insert(9, mods[0])
    with pytest.raises(AssertionError, match="module should be of type"):
        seq.insert(0, 3)
    del seq[1]
    assert list(seq) == [mods[3], mods[1], mods[4], mods[2]] and names(seq) == ["0", "1", "2", "3"]
    del seq[1:3]
    assert list(seq) == [mods[3], mods[2]] and names(seq) == ["0", "1"]
    assert seq.pop(0) is mods[3] and list(seq) == [mods[2]]
    seq[0] = mods[1]
    assert list(seq) == [mods[1]]
    seq.extend([mods[2], mods[3]])
    assert list(seq) == [mods[1], mods[2], mods[3]]
    joined = seq + nn.Sequential(mods[4])
    assert type(joined) is nn.Sequential and list(joined) == [mods[1], mods[2], mods[3], mods[4]]
    seq += nn.Sequential(mods[0])
    assert list(seq) == [mods[1], mods[2], mods[3], mods[0]]
    with pytest.raises(ValueError, match="add operator supports only objects of Sequential class"):
        seq + [mods[0]]
    twice = nn.Sequential(mods[0], mods[1]) * 2
    assert list(twice) == [mods[0], mods[1], mods[0], mods[1]]
    assert list(2 * nn.Sequential(mods[0])) == [mods[0], mods[0]]
    grown = nn.Sequential(mods[0], mods[1])
    grown *= 3
    assert list(grown) == [mods[0], mods[1]] * 3
    with pytest.raises(ValueError, match="Non-positive multiplication factor 0"):
        grown * 0
    assert "0" not in dir(grown) and "append" in dir(grown)


def test_sequential_registers_parameters_and_state():
    seq = nn.Sequential(E.TinyLinear(2, 3), E.Scale(3))
    assert [n for n, _ in seq.named_parameters()] == ["0.weight", "0.bias", "1.gain"]
    assert list(seq.state_dict()) == ["0.weight", "0.bias", "1.gain", "1.running"]


# ---------------------------------------------------------------- ModuleList
def test_module_list():
    mods = [E.Scale(1) for _ in range(4)]
    ml = nn.ModuleList(mods[:2])
    assert len(ml) == 2 and ml[0] is mods[0] and ml[-1] is mods[1]
    ml.append(mods[2])
    ml.extend([mods[3]])
    assert list(ml) == mods and names(ml) == ["0", "1", "2", "3"]
    assert type(ml[1:3]) is nn.ModuleList and list(ml[1:3]) == mods[1:3]
    ml.insert(1, mods[3])
    assert list(ml) == [mods[0], mods[3], mods[1], mods[2], mods[3]]
    del ml[1]
    assert list(ml) == mods and names(ml) == ["0", "1", "2", "3"]
    del ml[::2]
    assert list(ml) == [mods[1], mods[3]]
    assert ml.pop(-1) is mods[3]
    ml[0] = mods[2]
    assert list(ml) == [mods[2]]
    with pytest.raises(IndexError, match="index 5 is out of range"):
        ml[5]
    combined = ml + [mods[0]]
    assert type(combined) is nn.ModuleList and list(combined) == [mods[2], mods[0]]
    ml += [mods[1]]
    assert list(ml) == [mods[2], mods[1]]
    with pytest.raises(TypeError, match="ModuleList.extend should be called with an iterable, but got int"):
        ml.extend(3)
    with pytest.raises(NotImplementedError, match=r'Module \[ModuleList\] is missing the required "forward"'):
        ml(ember.ones(1))
    assert [n for n, _ in ml.named_parameters()] == ["0.gain", "1.gain"]


def test_module_list_repr_groups_repeats():
    def build(lib):
        t = toys(lib)
        return repr(lib.nn.ModuleList([t.TinyLinear(2, 2), t.TinyLinear(2, 2), t.Block(2), t.Block(2),
                                       t.TinyLinear(2, 2)]))

    expected = """ModuleList(
  (0-1): 2 x TinyLinear(in_features=2, out_features=2, bias=True)
  (2-3): 2 x Block(
    (fc): TinyLinear(in_features=2, out_features=2, bias=True)
    (scale): Scale()
  )
  (4): TinyLinear(in_features=2, out_features=2, bias=True)
)"""
    assert both(build) == [expected] * len(both(build))
    assert repr(nn.ModuleList()) == "ModuleList()"


# ---------------------------------------------------------------- ModuleDict
def test_module_dict():
    a, b, c = E.Scale(1), E.Scale(2), E.MultiLine()
    md = nn.ModuleDict({"b": b, "a": a})
    assert list(md) == ["b", "a"] and md["a"] is a and "a" in md and len(md) == 2
    md["c"] = c
    assert list(md.keys()) == ["b", "a", "c"] and list(md.values()) == [b, a, c]
    assert list(md.items())[2] == ("c", c)
    assert md.pop("b") is b and list(md) == ["a", "c"]
    del md["a"]
    assert list(md) == ["c"]
    md.update([("x", a), ("y", b)])
    md.update(nn.ModuleDict({"z": c}))
    assert list(md) == ["c", "x", "y", "z"]
    assert [n for n, _ in md.named_parameters()] == ["x.gain", "y.gain"]
    with pytest.raises(ValueError, match="ModuleDict update sequence element #0 has length 1; 2 is required"):
        md.update([(a,)])
    with pytest.raises(TypeError, match="ModuleDict.update should be called with an iterable of key/value pairs, "
                                        "but got int"):
        md.update(1)
    md.clear()
    assert len(md) == 0


# ---------------------------------------------------------------- ParameterList and ParameterDict
def test_parameter_list():
    pl = nn.ParameterList([ember.zeros(2), nn.Parameter(ember.ones(3))])
    assert len(pl) == 2 and all(type(p) is nn.Parameter for p in pl) and pl[0].requires_grad
    pl.append(ember.ones(1, 2))
    pl.extend([ember.zeros(1)])
    pl.append("text")
    assert [n for n, _ in pl.named_parameters()] == ["0", "1", "2", "3"]
    assert pl[-1] == "text" and type(pl[1:3]) is nn.ParameterList and len(pl[1:3]) == 2
    assert pl[1:3][0] is pl[1]
    with pytest.raises(TypeError, match="ParameterList.extend should be called with an iterable, but got Tensor"):
        pl.extend(ember.zeros(2))
    with pytest.raises(RuntimeError, match="ParameterList should not be called."):
        pl()
    pl[0] = ember.full((2,), 4.0)
    assert type(pl[0]) is nn.Parameter and pl[0].tolist() == [4.0, 4.0]


def test_parameter_dict():
    pd = nn.ParameterDict({"b": ember.zeros(2), "a": ember.ones(1)})  # a plain dict: sorted keys
    assert list(pd) == ["a", "b"] and type(pd["a"]) is nn.Parameter
    pd["c"] = nn.Parameter(ember.ones(3), requires_grad=False)
    pd.update(OrderedDict([("z", ember.zeros(1)), ("y", ember.zeros(1))]))
    assert list(pd.keys()) == ["a", "b", "c", "z", "y"]
    assert [n for n, _ in pd.named_parameters()] == ["a", "b", "c", "z", "y"]
    assert "c" in pd and pd.get("nope", 5) == 5 and len(pd) == 5
    assert pd.pop("z").shape == (1,) and "z" not in pd
    assert pd.popitem()[0] == "y" and list(pd) == ["a", "b", "c"]
    assert pd.setdefault("d", ember.zeros(1)).shape == (1,)
    merged = pd | nn.ParameterDict({"e": ember.zeros(1)})
    assert list(merged) == ["a", "b", "c", "d", "e"] and merged["a"] is pd["a"]
    assert list(reversed(pd)) == ["d", "c", "b", "a"]
    with pytest.raises(TypeError, match="Index given to ParameterDict cannot be used as a key as it is not a string "
                                        r"\(type is 'int'\)"):
        pd[1]
    del pd["a"]
    pd.clear()
    assert len(pd) == 0 and list(pd.named_parameters()) == []
    with pytest.raises(RuntimeError, match="ParameterDict should not be called."):
        pd(1)


def test_parameter_container_reprs():
    def build(lib):
        pl = lib.nn.ParameterList([lib.zeros(2, 3), lib.nn.Parameter(lib.ones(4, dtype=lib.float64))])
        pl.append("x")
        pd = lib.nn.ParameterDict(OrderedDict([("w", lib.zeros(2)), ("n", None)]))
        return repr(pl), repr(pd)

    pl_repr, pd_repr = build(ember)
    assert pl_repr == ("ParameterList(\n    (0): Parameter containing: [ember.float32 of size 2x3]\n"
                       "    (1): Parameter containing: [ember.float64 of size 4]\n    (2): Object of type: str\n)")
    assert pd_repr == ("ParameterDict(\n    (w): Parameter containing: [ember.FloatTensor of size 2]\n"
                       "    (n): Object of type: NoneType\n)")
    if torch is not None:
        assert build(torch) == (pl_repr.replace("ember.", "torch."), pd_repr.replace("ember.", "torch."))
    assert repr(nn.ParameterList()) == "ParameterList()"
