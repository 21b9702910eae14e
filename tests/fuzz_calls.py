"""A seeded generator of bad and edge-case calls to ember's public API, for
tests/test_fuzz.py.

Call `i` of seed `s` is a pure function of (s, i): the parent process names a
call by rebuilding its description, and a child process (`python
fuzz_calls.py SEED FIRST COUNT`) rebuilds and runs it. A call is a target (an
`ember.*` function, a Tensor method or operator) and arguments made from
recipes: nested tuples describing tensors (shape, dtype, layout, values),
sizes, dims, numbers, None, strings, dtypes, lists, slices, out= tensors.
Ops declared in ops.yaml get arguments typed after their signature, each of
them replaced by something of the wrong kind now and then; other public names
get arguments from the whole pool.
"""
import random
import sys

import numpy as np

DTYPES = ("bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64")
SHAPES = ((), (0,), (1,), (3,), (2, 3), (1, 3), (3, 1), (2, 0, 3), (4, 5), (2, 3, 4), (1, 1, 1, 2))
# Expanded views whose element count passes int64: ember must refuse them when they are made.
# (Legal but enormous views are left out: summing 2**40 elements is slow, not wrong.)
OVERFLOWING_SHAPES = ((2**62, 5), (2**61, 5), (2**32, 2**32), (3, 2**62), (2**31, 2**31, 4))
LAYOUTS = ("contiguous", "contiguous", "transposed", "expanded", "strided")
SMALL_INTS = (0, 1, -1, 2, 3, -2, 5)
HUGE_INTS = (2**31, 2**31 - 1, 2**32, 2**62, -2**62, 2**63 - 1, -2**63, 2**64, -2**31)
FLOATS = (0.5, -1.5, 0.0, float("nan"), float("inf"), float("-inf"), 1e308, 3.0)

# The address-space cap of every fuzzing process (test_fuzz.py's children, and main() run by hand):
# a legal but enormous request (randperm(2**31), zeros(2**32): 16 GB, which PyTorch attempts too)
# then fails with "can't allocate memory" instead of filling the machine until the OOM killer ends the run.
MEMORY_LIMIT = 3 << 30

# Names left out: they reconfigure the process itself rather than compute (a huge thread count
# makes every later parallel region start that many threads).
EXCLUDED = {"set_num_threads"}


def function_label_of(path, name):
    """ember.add, ember.linalg.vector_norm; the nn table is driven directly (ember._C._nn.elu), as
    ember.nn.functional wraps it in Python functions with PyTorch's signatures."""
    return ".".join(filter(None, ("ember", "_C._nn" if path == "nn" else path, name)))


def public_targets():
    """Sorted (label, kind, signature or None): kind is 'function', 'method' or 'operator'."""
    import ember
    from harness.spec import load_spec

    targets = {}
    # Where each op's function is public: ember.add, ember.linalg.vector_norm (python_module: linalg).
    function_label = {getattr(table, name).__name__: function_label_of(path, name)
                      for path, table in ember._C._op_modules.items() for name in table.__all__}
    for op in load_spec().ops:
        if op.name.startswith("_"):
            continue
        if "function" in op.variants and op.name in function_label:
            targets.setdefault((function_label[op.name], "function"), []).append(op)
        if op.variants == ["function"] and op.name + "_" in function_label:   # ember.selu_, _C._nn.elu_
            targets.setdefault((function_label[op.name + "_"], "function"), []).append(op)
        if "method" in op.variants and hasattr(ember.Tensor, op.name):
            targets.setdefault(("Tensor." + op.name, "method"), []).append(op)
        if "method" in op.variants and not op.name.endswith("_") and hasattr(ember.Tensor, op.name + "_"):
            targets.setdefault(("Tensor." + op.name + "_", "method"), []).append(op)   # the in-place variant
    for name in dir(ember):
        obj = getattr(ember, name)
        if not name.startswith("_") and callable(obj) and name not in EXCLUDED and not isinstance(obj, ember.dtype):
            targets.setdefault(("ember." + name, "function"), None)
    for name in dir(ember.Tensor):
        if name.startswith("_") and not (name.startswith("__") and name.endswith("__")):
            continue
        if name in ("__init_subclass__", "__subclasshook__", "__new__", "__init__", "__class__", "__delattr__",
                    "__getattribute__", "__setattr__", "__dir__", "__sizeof__", "__reduce__", "__reduce_ex__",
                    "__getstate__", "__format__"):
            continue
        if callable(getattr(ember.Tensor, name)):
            targets.setdefault(("Tensor." + name, "operator" if name.startswith("__") else "method"), None)
    return sorted((label, kind, ops) for (label, kind), ops in targets.items())


class Gen:
    """Draws argument recipes from one call's random stream."""

    def __init__(self, rng):
        self.rng = rng

    def pick(self, seq):
        return seq[self.rng.randrange(len(seq))]

    def chance(self, p):
        return self.rng.random() < p

    def tensor(self, shape=None, dtype=None):
        if shape is None and self.chance(0.03):
            return ("tensor", self.pick(OVERFLOWING_SHAPES), dtype or self.pick(DTYPES), "expanded", 0)
        shape = self.pick(SHAPES) if shape is None else shape
        return ("tensor", tuple(shape), dtype or self.pick(DTYPES), self.pick(LAYOUTS), self.rng.randrange(1 << 30))

    def index_tensor(self):
        return ("index", self.pick(((3,), (2, 2), (), (0,), (5,))), self.pick(("int64", "int32", "bool", "uint8",
                                                                               "float32")),
                self.rng.randrange(1 << 30))

    def int_(self):
        return self.pick(HUGE_INTS) if self.chance(0.25) else self.pick(SMALL_INTS)

    def size_list(self):
        if self.chance(0.2):   # numel or bytes past int64, or legal but beyond any allocator
            return list(self.pick(([2**62], [2**61], [2**60], [2**32, 2**32], [2**31, 2**31, 4], [2**62, 4],
                                   [2**63 - 1], [2**40], [0, 2**62, 2**62], [2**62, -1])))
        n = self.pick((0, 1, 1, 2, 2, 3))
        return [self.pick(HUGE_INTS + SMALL_INTS + (4, -1)) if self.chance(0.3) else self.pick((0, 1, 2, 3, -1))
                for _ in range(n)]

    def scalar(self):
        return self.pick((self.int_(), self.pick(FLOATS), True, False, ("tensor", (), self.pick(DTYPES),
                                                                         "contiguous", 1)))

    def out_tensor(self, like):
        """A bad or doubtful out= target: wrong dtype or shape, non-contiguous, expanded, or an input."""
        shape = like[1] if like and like[0] == "tensor" else self.pick(SHAPES)
        kind = self.pick(("dtype", "shape", "transposed", "expanded", "alias", "empty"))
        if kind == "alias" and like:
            return like
        if kind == "shape":
            return self.tensor()
        if kind == "empty":
            return ("tensor", (0,), self.pick(DTYPES), "contiguous", 0)
        layout = kind if kind in ("transposed", "expanded") else "contiguous"
        return ("tensor", shape, self.pick(DTYPES), layout, 0)

    def any_value(self):
        choice = self.rng.randrange(16)
        if choice < 4:
            return self.tensor()
        return [lambda: None, self.int_, lambda: self.pick(FLOATS), lambda: self.pick(("x", "cpu", "cuda", "sum")),
                lambda: ("dtype", self.pick(DTYPES)), self.size_list,
                lambda: [self.tensor() for _ in range(self.rng.randrange(3))], lambda: [[1, 2], [3]],
                self.index_tensor, lambda: ("slice", self.int_(), self.int_(), self.pick((1, 2, -1, 0, 2**62))),
                lambda: ("ndarray", self.pick(((4,), (2,), (3, 1)))), lambda: True][choice - 4]()

    def typed(self, ptype, misuse):
        """A value of the declared type (with edge values), or, in a misuse call, now and then anything."""
        if misuse and self.chance(0.15):
            return self.any_value()
        base = ptype.rstrip("?")
        if ptype.endswith("?") and self.chance(0.2):
            return None
        if base == "Tensor":
            return self.tensor() if self.chance(0.85) else self.scalar()
        if base in ("Tensor[]", "Tensor?[]"):
            items = [self.tensor() if not base.startswith("Tensor?") else self.index_tensor()
                     for _ in range(self.rng.randrange(4))]
            if base == "Tensor?[]" and items and self.chance(0.3):
                items[0] = None
            return items
        if base == "int":
            return self.int_()
        if base.startswith("int["):
            return self.size_list() if self.chance(0.7) else self.int_()
        if base == "bool":
            return self.chance(0.5)
        if base == "Scalar":
            return self.scalar()
        if base == "ScalarType":
            return ("dtype", self.pick(DTYPES))
        if base == "Device":
            return self.pick(("cpu",) * 6 + ("cuda", "cuda:1", "meta", 0))
        if base == "Generator":
            return ("generator",)
        if base == "str":
            return self.pick(("trunc", "floor", "x"))
        return self.any_value()

    def index_key(self):
        parts = [self.pick((lambda: self.int_(), lambda: ("slice", self.int_(), None, self.pick((1, 2, 0, -1, 2**62))),
                            lambda: None, lambda: Ellipsis, self.index_tensor, lambda: [0, 2, -1, 100],
                            lambda: ("ndarray", (2,)), lambda: True, lambda: "x"))() for _ in range(
                                self.rng.randrange(1, 4))]
        return parts[0] if len(parts) == 1 else tuple(parts)


def make_call(seed, index, targets):
    """The recipe of call `index`: (label, kind, args, kwargs)."""
    rng = random.Random(f"{seed}:{index}")
    gen = Gen(rng)
    # Two thirds of the calls go to ops.yaml's ops, whose typed arguments reach the kernels.
    declared = [t for t in targets if t[2]]
    label, kind, ops = gen.pick(declared) if gen.chance(0.67) else gen.pick(targets)
    name = label.split(".", 1)[1]
    # Half the calls are well-formed with edge values; the other half also get wrong kinds and counts.
    misuse = gen.chance(0.5)
    if ops:
        op = gen.pick(ops)
        params = list(op.sig.params)
        if kind == "method":
            params = params[1:] if params and params[0].type.is_tensor else params
        args, kwargs = [], {}
        for p in params:
            if p.has_default and gen.chance(0.4):
                continue
            value = gen.typed(str(p.type), misuse)
            if p.kw_only or (p.has_default and gen.chance(0.3)):
                kwargs[p.name] = value
            else:
                args.append(value)
        if misuse and gen.chance(0.2) and args:
            args.pop(rng.randrange(len(args)))          # too few
        if misuse and gen.chance(0.2):
            args.append(gen.any_value())                 # too many
        if kind == "function" and gen.chance(0.2) and (misuse or op.kind != "factory"):
            first = next((a for a in args if isinstance(a, tuple) and a and a[0] == "tensor"), None)
            kwargs["out"] = gen.out_tensor(first)
    elif name in ("__getitem__", "__setitem__", "__delitem__"):
        args = [gen.index_key()] + ([gen.tensor() if gen.chance(0.5) else gen.scalar()]
                                    if name == "__setitem__" else [])
        kwargs = {}
    else:
        args = [gen.any_value() for _ in range(rng.randrange(4))]
        kwargs = {gen.pick(("dim", "dtype", "out", "keepdim", "size", "device")): gen.any_value()} \
            if gen.chance(0.2) else {}
    receiver = gen.tensor() if kind != "function" else None
    return label, receiver, args, kwargs


def describe_value(v):
    if isinstance(v, tuple) and v and isinstance(v[0], str):
        tag = v[0]
        if tag == "tensor":
            return f"tensor(shape={v[1]}, {v[2]}, {v[3]})"
        if tag == "index":
            return f"index_tensor(shape={v[1]}, {v[2]})"
        if tag == "dtype":
            return f"ember.{v[1]}"
        if tag == "slice":
            return f"slice({v[1]}, {v[2]}, {v[3]})"
        if tag == "ndarray":
            return f"np.arange({int(np.prod(v[1]))}).reshape({v[1]})"
        if tag == "generator":
            return "ember.Generator()"
    if isinstance(v, (list, tuple)):
        inner = ", ".join(describe_value(x) for x in v)
        return f"[{inner}]" if isinstance(v, list) else f"({inner})"
    return repr(v)


def describe(call):
    label, receiver, args, kwargs = call
    parts = [describe_value(a) for a in args] + [f"{k}={describe_value(v)}" for k, v in kwargs.items()]
    head = label if receiver is None else f"{describe_value(receiver)}.{label.split('.', 1)[1]}"
    return f"{head}({', '.join(parts)})"


def build_value(v, ember):
    """Materialises a recipe into the object passed to ember."""
    if isinstance(v, tuple) and v and isinstance(v[0], str):
        tag = v[0]
        if tag == "tensor":
            return build_tensor(ember, *v[1:])
        if tag == "index":
            shape, dtype, seed = v[1:]
            values = np.random.default_rng(seed).integers(-6, 8, size=shape)
            if dtype == "int64" and shape == (5,):
                values[-1] = 2**62                      # far out of bounds
            return ember.tensor(values.tolist(), dtype=getattr(ember, dtype))
        if tag == "dtype":
            return getattr(ember, v[1])
        if tag == "slice":
            return slice(v[1], v[2], v[3])
        if tag == "ndarray":
            return np.arange(int(np.prod(v[1]))).reshape(v[1])
        if tag == "generator":
            return ember.Generator()
    if isinstance(v, list):
        return [build_value(x, ember) for x in v]
    if isinstance(v, tuple):
        return tuple(build_value(x, ember) for x in v)
    return v


NUMPY_DTYPES = {"bool": np.bool_, "uint8": np.uint8, "int8": np.int8, "int16": np.int16, "int32": np.int32,
                "int64": np.int64, "float16": np.float16, "bfloat16": np.float32, "float32": np.float32,
                "float64": np.float64}


def build_tensor(ember, shape, dtype, layout, seed):
    rng = np.random.default_rng(seed)
    expanded_from = None
    if layout == "expanded" and shape:
        # Expanded along the last dim, or along every dim for the enormous shapes.
        expanded_from = shape[:-1] + (1,) if max(shape) < 2**20 else (1,) * len(shape)
    values = rng.standard_normal(expanded_from or shape) * 3
    if dtype != "bool" and values.size and rng.random() < 0.2:
        values.flat[0] = rng.choice([np.nan, np.inf, -np.inf, 0.0, 100.0])
    if dtype == "bool":
        values = values > 0
    elif not dtype.startswith(("float", "bfloat")):
        values = np.nan_to_num(values, posinf=7, neginf=-7).round()
        if dtype == "uint8":
            values = np.abs(values)

    def make(array):
        t = ember.from_numpy(np.ascontiguousarray(array.astype(NUMPY_DTYPES[dtype])))
        return t.to(ember.bfloat16) if dtype == "bfloat16" else t

    if layout == "transposed" and len(shape) >= 2:
        return make(values.swapaxes(0, -1)).transpose(0, -1)
    if expanded_from:
        return make(values).expand(*shape)
    if layout == "strided" and len(shape) >= 1:
        return make(np.repeat(values, 2, axis=-1))[..., ::2]
    return make(values)


def run_call(call, ember):
    label, receiver, args, kwargs = call
    args = [build_value(a, ember) for a in args]
    kwargs = {k: build_value(v, ember) for k, v in kwargs.items()}
    owner, name = label.split(".", 1)
    if receiver is None:
        fn = ember
        for part in name.split("."):   # linalg.vector_norm
            fn = getattr(fn, part)
    else:
        fn = getattr(build_value(receiver, ember), name)
    result = fn(*args, **kwargs)
    # Touch the result, so a wrong size or a dangling pointer shows up here.
    if isinstance(result, ember.Tensor) and result.numel() < 10**6:
        repr(result)
    return result


def cap_memory():
    from child_process import limit_address_space
    limit_address_space(MEMORY_LIMIT)()


def main(seed, first, count):
    """Runs calls first..first+count-1, printing each index before it starts (flushed), so that
    the parent can name the call running when the process died or hung."""
    cap_memory()
    import ember
    targets = public_targets()
    for i in range(first, first + count):
        call = make_call(seed, i, targets)
        print(i, flush=True)
        try:
            run_call(call, ember)
        except Exception:   # noqa: BLE001 - any Python exception is a clean refusal
            pass
    print("DONE", flush=True)


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]))
