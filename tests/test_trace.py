"""ember.utils.trace: the trace hook in every generated op entry and the TraceMode handler API."""
import gc
import sys
import threading
import weakref

import pytest

import ember
from ember import _C
from ember.utils.trace import OpCall, TraceMode


class Recorder(TraceMode):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.calls = []

    def on_call(self, call):
        self.calls.append(call)

    def names(self):
        return [c.full_name for c in self.calls]


@pytest.fixture(autouse=True)
def nothing_left_installed():
    assert _C._trace_state() == (0, 0, 0)
    yield
    assert _C._trace_state() == (0, 0, 0)


def describe(calls):
    """Each call as (name, args, kwargs, outputs, depth, in_backward), tensors as `tN:dtype[shape]`
    where N numbers the distinct tensor objects in order of appearance (so the labels spell the dataflow)."""
    labels = {}

    def d(v):
        if isinstance(v, ember.Tensor):
            label = labels.setdefault(id(v), f"t{len(labels)}")
            return f"{label}:{str(v.dtype).removeprefix('ember.')}{list(v.shape)}"
        if isinstance(v, list):
            return [d(x) for x in v]
        if isinstance(v, tuple):
            return tuple(d(x) for x in v)
        if isinstance(v, dict):
            return {k: d(x) for k, x in v.items()}
        return v

    return [(c.full_name, d(c.args), d(c.kwargs), d(c.outputs), c.depth, c.in_backward) for c in calls]


def test_a_short_program_is_recorded_call_by_call():
    with Recorder() as r:
        x = ember.ones(2, 3, requires_grad=True)
        w = ember.arange(3.0)
        y = x * w + 1
        s = y.sum()
        z = ember.zeros(3)
        z.add_(w)
        ember.mul(w, 2, out=z)
        row = y[1]
        m = x @ w
        s.backward()
    none3 = {"dtype": None, "device": None, "requires_grad": False}
    assert describe(r.calls) == [
        ("ones", ([2, 3],), {**none3, "requires_grad": True}, ("t0:float32[2, 3]",), 0, False),
        ("arange", (3.0, None, 1), none3, ("t1:float32[3]",), 0, False),
        ("mul", ("t0:float32[2, 3]", "t1:float32[3]"), {}, ("t2:float32[2, 3]",), 0, False),
        ("add", ("t2:float32[2, 3]", "t3:int64[]"), {"alpha": 1}, ("t4:float32[2, 3]",), 0, False),
        ("sum", ("t4:float32[2, 3]", None, False), {"dtype": None}, ("t5:float32[]",), 0, False),
        ("zeros", ([3],), none3, ("t6:float32[3]",), 0, False),
        ("add_", ("t6:float32[3]", "t1:float32[3]"), {"alpha": 1}, ("t6:float32[3]",), 0, False),
        ("mul.out", ("t1:float32[3]", "t7:int64[]"), {"out": "t6:float32[3]"}, ("t6:float32[3]",), 0, False),
        ("select", ("t4:float32[2, 3]", 0, 1), {}, ("t8:float32[3]",), 0, False),
        ("matmul", ("t0:float32[2, 3]", "t1:float32[3]"), {}, ("t9:float32[2]",), 0, False),
        # backward(): the root gradient, SumBackward0 (expand_reduced), MulBackward0 for x
        # (AddBackward0 passes the gradient through), then x's accumulator stores a copy.
        ("ones", ([],), {"dtype": ember.float32, "device": ember.device("cpu"), "requires_grad": False},
         ("t10:float32[]",), 0, True),
        ("unsqueeze", ("t10:float32[]", 0), {}, ("t11:float32[1]",), 0, True),
        ("unsqueeze", ("t11:float32[1]", 1), {}, ("t12:float32[1, 1]",), 0, True),
        ("expand", ("t12:float32[1, 1]", [2, 3]), {}, ("t13:float32[2, 3]",), 0, True),
        ("mul", ("t13:float32[2, 3]", "t1:float32[3]"), {}, ("t14:float32[2, 3]",), 0, True),
        ("clone", ("t14:float32[2, 3]",), {}, ("t15:float32[2, 3]",), 0, True),
    ]
    calls = r.calls
    # The recorded tensors are the program's own: same memory, autograd state and values.
    for call, mine in ((calls[0], x), (calls[1], w), (calls[3], y), (calls[4], s), (calls[8], row), (calls[9], m)):
        out = call.outputs[0]
        assert out.data_ptr() == mine.data_ptr() and out.shape == mine.shape
        assert out.requires_grad == mine.requires_grad
    assert calls[3].outputs[0].grad_fn.name() == y.grad_fn.name() == "AddBackward0"
    assert calls[3].args[1].item() == 1 and calls[7].args[1].item() == 2
    assert calls[1].outputs[0].tolist() == [0.0, 1.0, 2.0]
    assert calls[-1].outputs[0].data_ptr() == x.grad.data_ptr()
    assert x.grad.tolist() == [[0.0, 1.0, 2.0]] * 2
    # z is shared too: the tensor in the add_ record sees later writes (tensors are recorded by reference).
    z.fill_(7)
    assert calls[6].args[0].tolist() == [7.0, 7.0, 7.0]


def test_every_argument_kind_becomes_its_python_value():
    g = ember.Generator()
    v = ember.arange(6.0).view(2, 3)
    idx = ember.tensor([0, 2])
    with Recorder() as r:
        v[:, idx]                                      # Tensor?[] with None
        v.to("cpu", copy=True)                         # Device
        v.split(1)                                     # a Tensor[] return
        v.max(0)                                       # two returns
        ember.full((2,), True)                         # a bool Scalar
        v.sum(1, keepdim=True, dtype=ember.float64)    # int[1], bool, ScalarType
        ember.div(v, v, rounding_mode="floor")         # str
        ember.rand(2, generator=g)                     # Generator
        v.add(v, alpha=2.5)                            # float Scalar
        ember.cat([v, v])                              # Tensor[]
    by_name = {c.full_name: c for c in r.calls}
    index = by_name["index"]
    assert index.args[1][0] is None and index.args[1][1].tolist() == [0, 2]
    assert index.args[0] is by_name["slice"].outputs[0]
    assert by_name["to.device"].args[1:] == (ember.device("cpu"), None, False, True)
    parts = by_name["split"].outputs
    assert len(parts) == 1 and isinstance(parts[0], list) and [p.shape for p in parts[0]] == [(1, 3), (1, 3)]
    values, indices = by_name["max.dim"].outputs
    assert values.tolist() == [3.0, 4.0, 5.0] and indices.tolist() == [1, 1, 1]
    assert by_name["full"].args == ([2], True) and type(by_name["full"].args[1]) is bool
    total = by_name["sum"]
    assert total.args[1:] == ([1], True) and total.kwargs == {"dtype": ember.float64}
    assert total.kwargs["dtype"] is ember.float64
    assert by_name["div"].kwargs == {"rounding_mode": "floor"}
    assert by_name["rand"].kwargs["generator"] is g
    assert by_name["add"].kwargs == {"alpha": 2.5} and type(by_name["add"].kwargs["alpha"]) is float
    assert [t.shape for t in by_name["cat"].args[0]] == [(2, 3), (2, 3)] and by_name["cat"].args[1] == 0
    assert all(isinstance(c, OpCall) for c in r.calls)


def test_one_tensor_is_one_object_within_a_mode():
    with Recorder() as r:
        a = ember.ones(3)
        b = a.add_(1)
        c = b * 2
    ones, add_, mul = r.calls
    assert add_.args[0] is ones.outputs[0] and add_.outputs[0] is ones.outputs[0]
    assert mul.args[0] is ones.outputs[0]
    assert c.tolist() == mul.outputs[0].tolist() == [4.0, 4.0, 4.0]


def test_top_level_by_default_and_the_decomposition_when_nested():
    a, b = ember.ones(2, 3), ember.arange(3.0)
    with Recorder() as top:
        ember.matmul(a, b)
        a.var()
    assert top.names() == ["matmul", "var"]
    with Recorder(nested=True) as all_calls:
        ember.matmul(a, b)
        a.var()
        ember.cat([a, a], out=ember.empty(0))
    got = [(c.full_name, c.depth) for c in all_calls.calls]
    assert got == [
        ("unsqueeze", 2), ("mm", 2), ("squeeze", 2), ("mv", 1), ("matmul", 0),  # 2-D @ 1-D is mv, as PyTorch's
        # var -> _var_std, which casts its float64 accumulation back with to -> copy_
        ("copy_", 3), ("to.dtype", 2), ("_var_std", 1), ("var", 0),
        ("empty", 0),
        # a derived non-pointwise out=: the functional op (contiguous inputs: block copies, no
        # slice/copy_ calls), then the copy into out
        ("cat", 1), ("cat.out", 0),
    ]
    var_std = all_calls.calls[7]
    assert var_std.args[2] == 1.0 and type(var_std.args[2]) is float

    def parent(i):  # a call is reported when it returns: its parent is the next call one level up
        return next(j for j in range(i + 1, len(got)) if got[j][1] == got[i][1] - 1)

    assert [got[parent(i)][0] for i in (1, 3, 5, 6, 10)] == ["mv", "matmul", "to.dtype", "_var_std", "cat.out"]


def test_backward_calls_are_marked_and_visible_at_top_level():
    x = ember.ones(3, requires_grad=True)
    with Recorder() as r:
        y = (x * x).sum()
        (gx,) = ember.autograd.grad(y, [x], create_graph=True)
        gx.sum().backward()
    forward = [c.full_name for c in r.calls if not c.in_backward]
    assert forward == ["mul", "sum", "sum"]
    assert all(c.depth == 0 for c in r.calls)
    assert any(c.in_backward for c in r.calls)
    assert x.grad.tolist() == [2.0, 2.0, 2.0]


def test_a_failed_call_is_not_reported_and_leaves_no_depth():
    with Recorder(nested=True) as r:
        a, b = ember.ones(2), ember.ones(3)
        with pytest.raises(RuntimeError, match="must match the size of tensor b"):
            a + b
        assert _C._trace_state() == (1, 1, 0)
        a + a
    assert r.names() == ["ones", "ones", "add"]


def test_a_handler_that_raises_propagates_and_the_mode_is_removed():
    class Boom(Exception):
        pass

    class Raising(TraceMode):
        def __init__(self, name, in_backward):
            super().__init__()
            self.target, self.seen = (name, in_backward), []

        def on_call(self, call):
            self.seen.append((call.full_name, call.in_backward))
            if self.seen[-1] == self.target:
                raise Boom(call.full_name)

    x = ember.ones(3, requires_grad=True)
    big = ember.ones(_C._thresholds()["gil_release_work"])
    for name, in_backward, program in (
            ("neg", False, lambda: -x),
            ("add", False, lambda: big + big),  # the op runs with the GIL released
            ("mul", True, lambda: (x * 2).sum().backward()),  # raised inside the backward pass
            ("ones", True, lambda: (x * 2).sum().backward())):  # ... at its first call
        mode = Raising(name, in_backward)
        with pytest.raises(Boom, match=name):
            with mode:
                program()
        assert _C._trace_state() == (0, 0, 0)
        assert mode.seen[-1] == (name, in_backward)
    assert x.grad is None
    (x * 2).sum().backward()  # autograd is unharmed
    assert x.grad.tolist() == [2.0, 2.0, 2.0]


def test_a_handler_does_not_see_its_own_calls_but_outer_modes_do():
    log = []

    class Named(TraceMode):
        def __init__(self, tag, work=False):
            super().__init__()
            self.tag, self.work = tag, work

        def on_call(self, call):
            log.append((self.tag, call.full_name, call.in_backward))
            if self.work:
                call.outputs[0].sum()  # an op inside the handler

    def program():
        x = ember.ones(2, requires_grad=True)
        x.neg().sum().backward()

    with Named("plain"):  # keeps no tensor, so the gradient accumulator steals as below
        program()
    calls = [e[1:] for e in log]
    assert ("neg", True) in calls
    log.clear()
    with Named("outer"):
        with Named("inner", work=True):
            program()
    # Each call reaches the innermost mode first; the inner handler's sum reaches only the
    # outer mode, before the call itself, and is not part of the backward pass.
    assert [e[1:] for e in log if e[0] == "inner"] == calls
    assert [e[1:] for e in log if e[0] == "outer"] == [x for call in calls for x in (("sum", False), call)]
    assert log[:3] == [("inner", "ones", False), ("outer", "sum", False), ("outer", "ones", False)]


def test_modes_exit_innermost_first():
    a, b = Recorder(), Recorder()
    a.__enter__()
    b.__enter__()
    with pytest.raises(RuntimeError, match="innermost first"):
        a.__exit__(None, None, None)
    ember.zeros(1)
    b.__exit__(None, None, None)
    ember.zeros(2)
    a.__exit__(None, None, None)
    assert b.names() == ["zeros"] and a.names() == ["zeros", "zeros"]


def test_a_mode_without_on_call_is_refused():
    with pytest.raises(TypeError, match="on_call"):
        with TraceMode():
            pass


def test_a_mode_sees_only_the_thread_that_entered_it():
    from_thread = {}

    def worker(key, enter):
        from_thread[key + " state"] = _C._trace_state()
        if enter:
            with Recorder() as mine:
                ember.ones(4).neg()
                ember.ones(_C._thresholds()["gil_release_work"]).exp()
            from_thread[key] = mine.names()
        else:
            ember.ones(4).neg()

    with Recorder() as r:
        for key, enter in (("plain", False), ("own mode", True)):
            t = threading.Thread(target=worker, args=(key, enter))
            t.start()
            t.join()
        ember.zeros(1)
    assert r.names() == ["zeros"]
    assert from_thread["own mode"] == ["ones", "neg", "ones", "exp"]
    assert from_thread["plain state"] == (1, 0, 0)  # installed elsewhere, not here


def test_recorded_tensors_are_freed_with_the_recorder():
    x = ember.ones(3)
    refs_before = sys.getrefcount(x)
    with Recorder() as r:
        (x + 1).sum()
    temporary = weakref.ref(r.calls[0].outputs[0])  # x + 1: only the recording holds it
    mode = weakref.ref(r)
    del r
    gc.collect()
    assert temporary() is None and mode() is None
    assert sys.getrefcount(x) == refs_before


def test_a_mode_holds_no_tensor_it_did_not_keep():
    class Watching(TraceMode):
        def __init__(self):
            super().__init__()
            self.refs = []

        def on_call(self, call):
            self.refs.append(weakref.ref(call.outputs[0]))

    with Watching() as w:
        for _ in range(100):  # past the point where dead entries are dropped
            ember.ones(2) + 1
        alive = [ref() for ref in w.refs]
    assert len(alive) == 200 and all(t is None for t in alive)
