"""Sample inputs for the ops in ops.yaml, by generator name (`test: samples:`) or `cases:`.

A Sample holds NumPy values and the dtype/layout each input tensor gets; the
tensors are made at test time (tensors.py). Values come from a domain so that
every dtype stays exact and nothing overflows: integers stay small (uint8
non-negative), floats are O(1), and `distinct`, `near_one`, `away_from_bounds`
keep inputs off ties and kinks so the float64 gradcheck is meaningful.
"""
from dataclasses import dataclass, field, replace

import numpy as np

from .dtypes import category, is_floating
from .spec import tensor_args

# A partner dtype per dtype for mixed-dtype binary samples (dimensioned tensors) ...
PARTNER = {
    "bool": "int32", "uint8": "int8", "int8": "float16", "int16": "int32", "int32": "float32",
    "int64": "float64", "float16": "bfloat16", "bfloat16": "float16", "float32": "int64",
    "float64": "float32",
}
# ... and for a 0-d partner, which may raise the category but never the width.
ZERO_D_PARTNER = {
    "bool": "int64", "uint8": "int64", "int8": "float64", "int16": "int64", "int32": "int64",
    "int64": "float32", "float16": "float64", "bfloat16": "float32", "float32": "float64",
    "float64": "int64",
}


@dataclass
class Arg:
    """One input tensor: its logical values, dtype and memory layout.

    layout: "contig"; "transposed" (made as the transpose of a contiguous tensor,
    last two dims); "strided" (every other row of a taller tensor).
    """
    values: np.ndarray
    dtype: str
    layout: str = "contig"

    @property
    def shape(self):
        return tuple(self.values.shape)

    @property
    def ndim(self):
        return self.values.ndim


@dataclass
class Sample:
    name: str
    inputs: dict                                 # role -> Arg | Python number | [Arg]; roles a, b, c, tensors
    kwargs: dict = field(default_factory=dict)   # passed by keyword (and bound by name in `ref`)
    args: list = field(default_factory=list)     # positional extra arguments (cases: args)
    names: dict = field(default_factory=dict)    # extra `ref` bindings (dim=None when no dim is passed)
    mixed: bool = False                          # inputs of more than one dtype
    out_ok: bool = True                          # the `out=` form is a valid PyTorch call

    def args_of_role(self):
        for role, value in self.inputs.items():
            if isinstance(value, Arg):
                yield role, value
            elif isinstance(value, list):
                for v in value:
                    yield role, v

    @property
    def numel(self):
        return sum(a.values.size for _, a in self.args_of_role())


def shape_str(shape):
    return "x".join(str(s) for s in shape) if len(shape) else "0d"


def fmt(value):
    if isinstance(value, (list, tuple)):
        return "_".join(fmt(v) for v in value) or "empty"
    return str(value)


# ----------------------------------------------------------------------------- values

def make_values(rng, shape, dtype, domain=None, specials=False, bounds=()):
    """Values for a tensor of `dtype`, exact in that dtype, drawn from `domain`."""
    shape = tuple(shape)
    n = int(np.prod(shape, dtype=np.int64))
    cat = category(dtype)
    if cat == 0:
        if domain in ("positive", "nonzero", "near_one", "above_one"):
            return np.ones(shape, dtype=bool)
        if domain == "open_unit":
            return np.zeros(shape, dtype=bool)
        return rng.random(shape) < 0.5
    if cat == 1:
        lo = 0 if dtype == "uint8" else None
        if domain == "positive":
            v = rng.integers(1, 5, shape)
        elif domain == "nonzero":
            v = rng.integers(1, 5, shape) * (1 if lo == 0 else rng.choice([-1, 1], shape))
        elif domain == "small":
            v = rng.integers(0, 4, shape)          # |x| <= 3 and >= 0: integers to negative powers are undefined
        elif domain == "near_one":
            v = rng.choice([1, 1, 2] if lo == 0 else [1, 1, 2, -1], shape)
        elif domain == "open_unit":
            v = np.zeros(shape, dtype=np.int64)        # the only integer inside (-1, 1)
        elif domain == "above_one":
            v = rng.integers(2, 5, shape)
        elif domain == "distinct_a":
            v = 2 * rng.integers(0 if lo == 0 else -2, 3, shape)            # even
        elif domain == "distinct_b":
            v = 2 * rng.integers(0 if lo == 0 else -3, 3, shape) + 1        # odd
        elif domain == "unique":
            v = rng.permutation(n).reshape(shape) - (0 if lo == 0 else n // 2)
        else:
            v = rng.integers(0 if lo == 0 else -4, 5, shape)
        return np.asarray(v, dtype=np.int64)
    if domain == "positive":
        v = rng.uniform(0.5, 2.0, shape)
    elif domain == "nonzero":
        v = rng.uniform(0.5, 2.0, shape) * rng.choice([-1.0, 1.0], shape)
    elif domain == "small":
        v = rng.uniform(-1.5, 1.5, shape)
    elif domain == "near_one":
        v = rng.uniform(0.75, 1.25, shape)
    elif domain == "open_unit":
        v = rng.uniform(-0.9, 0.9, shape)
    elif domain == "above_one":                 # acosh: real and smooth beyond 1
        v = rng.uniform(1.25, 3.0, shape)
    elif domain == "distinct_a":                # odd multiples of 1/4: never equal to distinct_b or an integer
        v = (2 * rng.integers(-4, 4, shape) + 1) * 0.25
    elif domain == "distinct_b":                # odd multiples of 1/2
        v = (2 * rng.integers(-2, 2, shape) + 1) * 0.5
    elif domain == "unique":                    # no ties; exact even in bfloat16
        v = (2 * (rng.permutation(n).reshape(shape) - n // 2) + 1) * 0.125
    elif domain == "away_from_bounds":
        v = rng.uniform(-1.0, 1.0, shape)
        for m in bounds:
            d = v - m
            v = np.where(np.abs(d) < 0.05, m + np.where(d < 0, -0.05, 0.05), v)
    else:
        v = rng.uniform(-2.0, 2.0, shape)
    v = np.asarray(v, dtype=np.float64)
    if specials and v.size:
        flat = v.reshape(-1)
        for i, s in enumerate((np.nan, np.inf, -np.inf)):
            if i < flat.size:
                flat[(i * 5) % flat.size] = s
    return v


class Ctx:
    """What a generator needs: the op, the dtype, a seeded RNG and the test's domains."""

    def __init__(self, op, dtype, rng, kwargs=None, overloads=()):
        self.op, self.dtype, self.rng, self.overloads = op, dtype, rng, overloads
        test = op.test or {}
        self.domains = {"a": test.get("domain_a"), "b": test.get("domain_b")}
        if "distinct" in self.domains.values():      # a and b never equal, even when broadcast
            self.domains = {"a": "distinct_a", "b": "distinct_b"}
        if test.get("distinct"):
            self.domains["a"] = "unique"
        self.specials = bool(test.get("specials"))
        self.bounds = [v for v in (kwargs or {}).values()
                       if isinstance(v, (int, float)) and not isinstance(v, bool)]

    def arg(self, shape, role="a", dtype=None, layout="contig"):
        dtype = dtype or self.dtype
        values = make_values(self.rng, shape, dtype, self.domains.get(role),
                             self.specials and is_floating(dtype), self.bounds)
        return Arg(values, dtype, layout)

    def cond(self, shape, layout="contig"):
        return Arg(self.rng.random(shape) < 0.5, "bool", layout)

    def scalar(self, kind, role="b"):
        """A Python number operand of category `kind` ('bool', 'int', 'float') inside the domain."""
        distinct = self.domains.get(role) == "distinct_b"
        if kind == "bool":
            return True
        if kind == "int":
            return 3 if distinct else 2
        return 1.5 if distinct else 2.0

    @property
    def scalar_kind(self):
        return ("bool", "int", "float")[category(self.dtype)]

    @property
    def scalar_operand_ok(self):
        """A Python number can stand for `other` where the op declares it (`numbers:`, as PyTorch
        takes one) and no other overload of the name takes a non-tensor there (max(t, 2) is max.dim)."""
        tensors = tensor_args(self.op)
        if len(tensors) < 2 or tensors[1].name not in self.op.numbers:
            return False
        for other in self.overloads:
            params = other.sig.params
            if other is not self.op and len(params) > 1 and not params[1].type.is_tensor:
                return False
        return True


def S(name, **kw):
    return Sample(name, **kw)


# ----------------------------------------------------------------------------- generators

def gen_unary(g):
    return [
        S("2x3", inputs={"a": g.arg((2, 3))}),
        S("0d", inputs={"a": g.arg(())}),
        S("empty-0x3", inputs={"a": g.arg((0, 3))}),
        S("5", inputs={"a": g.arg((5,))}),
        S("noncontig-t", inputs={"a": g.arg((3, 4), layout="transposed")}),
        S("noncontig-stride", inputs={"a": g.arg((3, 4), layout="strided")}),
    ]


def gen_binary(g):
    d = g.dtype
    out = [
        S("2x3", inputs={"a": g.arg((2, 3)), "b": g.arg((2, 3), "b")}),
        S("bcast-3x1-1x4", inputs={"a": g.arg((3, 1)), "b": g.arg((1, 4), "b")}),
        S("bcast-2x3-3", inputs={"a": g.arg((2, 3)), "b": g.arg((3,), "b")}),
        S("bcast-0d-2x3", inputs={"a": g.arg(()), "b": g.arg((2, 3), "b")}),
        S("bcast-2x3-0d", inputs={"a": g.arg((2, 3)), "b": g.arg((), "b")}),
        S("0d-0d", inputs={"a": g.arg(()), "b": g.arg((), "b")}),
        S("empty-0x3-1x3", inputs={"a": g.arg((0, 3)), "b": g.arg((1, 3), "b")}),
        S("noncontig", inputs={"a": g.arg((3, 4), layout="transposed"),
                               "b": g.arg((3, 4), "b", layout="strided")}),
    ]
    if g.scalar_operand_ok:
        out.append(S("pyscalar", inputs={"a": g.arg((2, 3)), "b": g.scalar(g.scalar_kind)}))
        if not is_floating(d):
            out.append(S("pyscalar-float", inputs={"a": g.arg((2, 3)), "b": g.scalar("float")}))
        if d == "bool":
            out.append(S("pyscalar-int", inputs={"a": g.arg((2, 3)), "b": g.scalar("int")}))
    if g.op.same_dtype:     # lerp: a partner of another dtype raises (tested by the op's own tests)
        return out
    e, z = PARTNER[d], ZERO_D_PARTNER[d]
    out += [
        S(f"mixed-{e}", inputs={"a": g.arg((2, 3)), "b": g.arg((2, 3), "b", e)}, mixed=True),
        S(f"mixed-{e}-first", inputs={"a": g.arg((2, 3), "a", e), "b": g.arg((2, 3), "b")}, mixed=True),
        S(f"0d-{z}", inputs={"a": g.arg((2, 3)), "b": g.arg((), "b", z)}, mixed=True),
    ]
    return out


def gen_where(g):
    d = g.dtype
    out = [
        S("2x3", inputs={"c": g.cond((2, 3)), "a": g.arg((2, 3)), "b": g.arg((2, 3), "b")}),
        S("bcast-3x1-1x4-3x4", inputs={"c": g.cond((3, 1)), "a": g.arg((1, 4)), "b": g.arg((3, 4), "b")}),
        S("bcast-2x3-0d-3", inputs={"c": g.cond((2, 3)), "a": g.arg(()), "b": g.arg((3,), "b")}),
        S("0d", inputs={"c": g.cond(()), "a": g.arg(()), "b": g.arg((), "b")}),
        S("empty-0x3", inputs={"c": g.cond((0, 3)), "a": g.arg((0, 3)), "b": g.arg((0, 3), "b")}),
        S("noncontig", inputs={"c": g.cond((3, 4), "transposed"), "a": g.arg((3, 4), layout="strided"),
                               "b": g.arg((3, 4), "b", layout="transposed")}),
        S("pyscalar", inputs={"c": g.cond((2, 3)), "a": g.arg((2, 3)), "b": g.scalar(g.scalar_kind)}),
    ]
    if not is_floating(d):
        out.append(S("pyscalar-float", inputs={"c": g.cond((2, 3)), "a": g.arg((2, 3)), "b": g.scalar("float")}))
    e = PARTNER[d]
    out.append(S(f"mixed-{e}", inputs={"c": g.cond((2, 3)), "a": g.arg((2, 3)), "b": g.arg((2, 3), "b", e)},
                 mixed=True))
    return out


def _reduction_sample(g, shape, dim, keepdim, layout="contig"):
    """dim=None reduces everything: no dim is passed (only keepdim=True needs one: None, or
    [] where the parameter is not optional, as amax's `int[1] dim=[]`)."""
    p = g.op.sig.param("dim")
    kwargs, out_ok = {}, True
    if dim is None:
        if keepdim:
            kwargs = {"dim": None if p.type.optional else p.default, "keepdim": True}
        else:
            out_ok = False       # torch.sum(t, out=o) is not a PyTorch call: sum/prod's out= needs a dim
    else:
        kwargs = {"dim": dim}
        if keepdim:
            kwargs["keepdim"] = True
    name = f"{shape_str(shape)}{'-' + layout if layout != 'contig' else ''}-" \
           f"{'all' if dim is None else 'dim' + fmt(dim)}{'-keepdim' if keepdim else ''}"
    return S(name, inputs={"a": g.arg(shape, layout=layout)}, kwargs=kwargs,
             names={"dim": dim, "keepdim": keepdim}, out_ok=out_ok)


def _reductions(g, dims_2d, extra):
    r = _reduction_sample
    out = [r(g, (3, 4), d, k) for d, k in dims_2d]
    out += [r(g, s, d, k) for s, d, k in extra]
    out += [r(g, (3, 4), 0, False, "transposed"), r(g, (3, 4), None, False, "transposed"),
            r(g, (3, 4), -1, True, "strided")]
    return out


def gen_reduction(g):
    tuples = g.op.sig.param("dim").type.is_list
    dims = [(None, False), (None, True), (0, False), (0, True), (-1, False), (-1, True)]
    if tuples:
        dims += [((0, 1), False), ((0, 1), True)]
    extra = [((2, 3, 4), 1, False), ((2, 3, 4), (0, 2) if tuples else -1, True), ((), None, False),
             ((0, 3), None, False), ((0, 3), 0, False), ((0, 3), 1, True)]
    return _reductions(g, dims, extra)


def gen_reduction_single(g):
    dims = [(None, False), (0, False), (0, True), (-1, False), (-1, True)]
    extra = [((2, 3, 4), 1, False), ((), None, False), ((0, 3), None, False),
             ((0, 3), 0, False), ((0, 3), 1, True)]
    return _reductions(g, dims, extra)


def gen_reduction_dim(g):
    # No 0-d input: NumPy has no axis 0 there (PyTorch accepts dim 0 / -1).
    r = _reduction_sample
    return [r(g, (3, 4), 0, False), r(g, (3, 4), 0, True), r(g, (3, 4), -1, False),
            r(g, (3, 4), -1, True), r(g, (2, 3, 4), 1, False), r(g, (5,), 0, False),
            r(g, (0, 3), 1, False), r(g, (0, 3), 0, False),
            r(g, (3, 4), 0, False, "transposed"), r(g, (3, 4), -1, True, "strided")]


def gen_reduction_all(g):
    return [S(f"{shape_str(s)}{'-' + l if l != 'contig' else ''}", inputs={"a": g.arg(s, layout=l)})
            for s, l in [((3, 4), "contig"), ((2, 3, 4), "contig"), ((), "contig"), ((0, 3), "contig"),
                         ((5,), "contig"), ((3, 4), "transposed"), ((3, 4), "strided")]]


def _pairs(g, specs):
    out = []
    for name, sa, sb, la, lb in specs:
        out.append(S(name, inputs={"a": g.arg(sa, layout=la), "b": g.arg(sb, "b", layout=lb)}))
    return out


C, T, ST = "contig", "transposed", "strided"


def gen_mm(g):
    return _pairs(g, [("3x4-4x2", (3, 4), (4, 2), C, C), ("noncontig", (3, 4), (4, 2), T, T),
                      ("noncontig-stride", (3, 4), (4, 2), ST, C), ("1x1-1x1", (1, 1), (1, 1), C, C),
                      ("empty-0x4-4x2", (0, 4), (4, 2), C, C), ("k0-3x0-0x2", (3, 0), (0, 2), C, C)])


def gen_bmm(g):
    return _pairs(g, [("2x2x3-2x3x2", (2, 2, 3), (2, 3, 2), C, C), ("noncontig", (2, 2, 3), (2, 3, 2), T, T),
                      ("noncontig-stride", (2, 2, 3), (2, 3, 2), ST, C), ("1x3x1-1x1x2", (1, 3, 1), (1, 1, 2), C, C),
                      ("empty-0x2x3-0x3x2", (0, 2, 3), (0, 3, 2), C, C)])


def gen_dot(g):
    return _pairs(g, [("5", (5,), (5,), C, C), ("1", (1,), (1,), C, C), ("strided", (5,), (5,), ST, ST),
                      ("empty", (0,), (0,), C, C)])


def gen_mv(g):
    return _pairs(g, [("3x4-4", (3, 4), (4,), C, C), ("noncontig", (3, 4), (4,), T, ST), ("1x1-1", (1, 1), (1,), C, C),
                      ("empty-0x4-4", (0, 4), (4,), C, C), ("k0-3x0-0", (3, 0), (0,), C, C)])


def gen_matmul(g):
    return _pairs(g, [("1d-1d", (4,), (4,), C, C), ("2d-1d", (3, 4), (4,), C, C), ("1d-2d", (4,), (4, 2), C, C),
                      ("2d-2d", (3, 4), (4, 2), C, C), ("bcast-2x1x2x3-3x3x2", (2, 1, 2, 3), (3, 3, 2), C, C),
                      ("bcast-2x1x3x4-5x4x2", (2, 1, 3, 4), (5, 4, 2), C, C),
                      ("3d-1d", (2, 3, 4), (4,), C, C), ("1d-3d", (3,), (2, 3, 2), C, C),
                      ("noncontig", (3, 4), (4, 2), T, ST), ("empty-0x3-3x2", (0, 3), (3, 2), C, C)])


def gen_inner(g):
    return _pairs(g, [("2x3-4x3", (2, 3), (4, 3), C, C), ("3-2x3", (3,), (2, 3), C, C), ("0d-2x3", (), (2, 3), C, C),
                      ("2x3-0d", (2, 3), (), C, C), ("noncontig", (3, 4), (2, 4), T, ST),
                      ("empty-0x3-2x3", (0, 3), (2, 3), C, C), ("k0-2x0-3x0", (2, 0), (3, 0), C, C)])


def _lists(g, specs):
    out = []
    for name, shapes, kwargs in specs:
        tensors = [g.arg(s, layout=l) for s, l in shapes]
        out.append(S(name, inputs={"tensors": tensors}, kwargs=kwargs))
    return out


def gen_cat(g):
    return _lists(g, [
        ("dim0", [((2, 3), C), ((4, 3), C)], {"dim": 0}),
        ("dim1", [((2, 3), C), ((2, 1), C)], {"dim": 1}),
        ("dim-1-three", [((2, 3), C), ((2, 2), C), ((2, 1), C)], {"dim": -1}),
        ("default-dim", [((1, 3), C), ((2, 3), C)], {}),
        ("empty", [((0, 3), C), ((2, 3), C)], {"dim": 0}),
        ("noncontig", [((2, 3), T), ((2, 3), ST)], {"dim": 1}),
    ])


def gen_stack(g):
    return _lists(g, [
        ("dim0", [((2, 3), C)] * 3, {"dim": 0}),
        ("dim1", [((2, 3), C)] * 2, {"dim": 1}),
        ("dim-1", [((2, 3), C)] * 2, {"dim": -1}),
        ("0d", [((), C)] * 2, {}),
        ("empty", [((0, 3), C)] * 2, {"dim": 1}),
        ("noncontig", [((2, 3), T), ((2, 3), ST)], {"dim": 1}),
    ])


def gen_column_stack(g):
    return _lists(g, [
        ("1d-2d", [((3,), C), ((3, 2), C)], {}),
        ("1d-1d", [((4,), C), ((4,), C)], {}),
        ("0d", [((), C), ((), C)], {}),
        ("one", [((2, 3), C)], {}),
        ("empty", [((0,), C), ((0, 2), C)], {}),
        ("noncontig", [((3, 2), T), ((3,), ST)], {}),
    ])


def gen_softmax(g):
    out = []
    for shape, dim, layout in [((2, 3, 4), 0, C), ((2, 3, 4), -1, C), ((2, 3, 4), 1, C), ((), 0, C),
                               ((2, 3), 1, C), ((0, 3), 1, C), ((3, 4), -1, T), ((3, 4), 0, ST)]:
        name = f"{shape_str(shape)}{'-' + layout if layout != C else ''}-dim{dim}"
        out.append(S(name, inputs={"a": g.arg(shape, layout=layout)}, kwargs={"dim": dim}))
    return out


def gen_cases(g):
    out = []
    for i, case in enumerate(g.op.test["cases"]):
        shape = tuple(case.get("shape", ()))
        layout = C
        if case.get("noncontig"):
            layout = T if len(shape) >= 2 else ST
        name = f"case{i}-{shape_str(shape)}" + ("-noncontig" if case.get("noncontig") else "")
        out.append(S(name, inputs={"a": g.arg(shape, layout=layout)}, args=list(case.get("args", [])),
                     kwargs=dict(case.get("kwargs") or {})))
    return out


GENERATORS = {
    "unary": gen_unary, "binary": gen_binary, "where": gen_where,
    "reduction": gen_reduction, "reduction_single": gen_reduction_single,
    "reduction_all": gen_reduction_all, "reduction_dim": gen_reduction_dim,
    "mm": gen_mm, "bmm": gen_bmm, "dot": gen_dot, "mv": gen_mv, "matmul": gen_matmul,
    "inner": gen_inner, "cat": gen_cat, "stack": gen_stack, "column_stack": gen_column_stack, "softmax": gen_softmax,
}


def kwarg_variants(op):
    """`test: kwargs:` is a list of dicts, each its own case ([{}] when absent)."""
    variants = (op.test or {}).get("kwargs") or [{}]
    return [dict(v or {}) for v in variants]


def generate(op, dtype, rng_for, overloads=()):
    """All samples of `op` at `dtype`; rng_for(tag) gives a seeded numpy Generator;
    overloads: the ops sharing op's name (a Python number operand must not be ambiguous)."""
    test = op.test
    gen = gen_cases if "cases" in test else GENERATORS[test["samples"]]
    out = []
    for i, kw in enumerate(kwarg_variants(op)):
        g = Ctx(op, dtype, rng_for(f"{op.full_name}|{dtype}|{i}"), kw, overloads)
        suffix = ",".join(f"{k}={fmt(v)}" for k, v in kw.items())
        for s in gen(g):
            if kw:
                s = replace(s, name=f"{s.name}-{suffix}", kwargs={**s.kwargs, **kw})
            out.append(s)
    return out
