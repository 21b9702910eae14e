"""Reads ops.yaml and derivatives.yaml: just enough of each entry for the harness.

The harness parses the spec itself (it must not depend on codegen/): dtype-set
expressions, the `func:` signature (name, overload, parameters, returns) and the
keys that shape tests. Errors name the op so a bad entry is easy to find.
"""
import ast
import os
import re
from dataclasses import dataclass, field
from functools import lru_cache

import yaml

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# Every dtype ember knows, in PyTorch's order of promotion within a category.
ALL_DTYPES = ("bool", "uint8", "int8", "int16", "int32", "int64",
              "float16", "bfloat16", "float32", "float64")

# Keys a `test:` entry may use; anything else is a typo the lint test reports.
TEST_KEYS = {"samples", "cases", "ref", "kwargs", "domain_a", "domain_b", "distinct",
             "specials", "tol", "dtypes", "grad", "skip"}
CASE_KEYS = {"shape", "args", "kwargs", "noncontig"}
DOMAINS = {"positive", "nonzero", "small", "distinct", "near_one", "away_from_bounds"}


class SpecError(ValueError):
    pass


@dataclass(frozen=True)
class Param:
    name: str
    type: str                 # as written: "Tensor", "int[1]?", "Scalar?", "Tensor[]"
    default: object = None
    has_default: bool = False
    kw_only: bool = False

    @property
    def optional(self):
        return self.type.endswith("?")

    @property
    def is_tensor(self):
        return self.type in ("Tensor", "Tensor?")

    @property
    def is_tensor_list(self):
        return self.type.startswith("Tensor") and "[" in self.type

    @property
    def is_scalar(self):
        return self.type.rstrip("?") == "Scalar"

    @property
    def takes_list(self):
        return "[" in self.type


@dataclass
class Op:
    name: str                       # the Python name: "max" for max.dim
    overload: str                   # "dim" for max.dim, "" otherwise
    params: list                    # [Param]
    returns: list                   # [(type, name or None)]
    kind: str
    variants: tuple
    derive: tuple
    promote: str                    # "common" | "float" | "bool" | None
    dtypes: tuple                   # declared dtypes, or None when the entry has none
    reduce: dict
    cast: dict
    test: dict                      # the raw `test:` mapping (None when absent)
    differentiable: bool
    test_dtypes_given: tuple = None   # `test: dtypes:`, resolved
    numbers: tuple = ()               # Tensor arguments that also take a Python number
    line: int = 0

    @property
    def full_name(self):
        return f"{self.name}.{self.overload}" if self.overload else self.name

    @property
    def tensor_params(self):
        return [p for p in self.params if p.is_tensor or p.is_tensor_list]

    @property
    def extra_params(self):
        """The parameters that are not tensors, in signature order."""
        return [p for p in self.params if not (p.is_tensor or p.is_tensor_list)]

    def param(self, name):
        for p in self.params:
            if p.name == name:
                return p
        return None

    @property
    def returns_list(self):
        return len(self.returns) == 1 and self.returns[0][0] == "Tensor[]"

    @property
    def n_returns(self):
        return len(self.returns)

    @property
    def test_dtypes(self):
        """The dtypes the harness runs: declared ones, else `test: dtypes:`, else float32/64."""
        if self.dtypes is not None:
            return self.dtypes
        return self.test_dtypes_given or ("float32", "float64")

    def role_of(self, param):
        """Which sample input feeds a tensor parameter: a (self), b, c (bool condition), tensors."""
        if param.is_tensor_list:
            return "tensors"
        if param.name == "self":
            return "a"
        if self.cast.get(param.name) == "bool":
            return "c"
        return "b"


# ----------------------------------------------------------------------------- dtype sets

def _split_top(text, sep):
    """Split on `sep` outside brackets and parentheses."""
    parts, depth, cur = [], 0, ""
    for ch in text:
        if ch in "[(":
            depth += 1
        elif ch in "])":
            depth -= 1
        if ch == sep and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    parts.append(cur)
    return [p.strip() for p in parts if p.strip()]


def resolve_dtypes(expr, sets, where="dtypes"):
    """`floating + integral + [bool]`, a set name, a list, or a mix; order kept, duplicates dropped."""
    if isinstance(expr, (list, tuple)):
        terms = list(expr)
    elif isinstance(expr, str):
        terms = _split_top(expr, "+")
    else:
        raise SpecError(f"{where}: cannot read dtype set {expr!r}")
    out = []
    for term in terms:
        if isinstance(term, str) and term.startswith("["):
            names = [n.strip() for n in term.strip("[]").split(",") if n.strip()]
            items = []
            for n in names:
                items += resolve_dtypes(n, sets, where)
        elif term in ALL_DTYPES:
            items = [term]
        elif term in sets:
            items = resolve_dtypes(sets[term], sets, where)
        else:
            raise SpecError(f"{where}: unknown dtype or dtype set {term!r}")
        out += [d for d in items if d not in out]
    return out


# ----------------------------------------------------------------------------- signatures

_FUNC = re.compile(r"^\s*(?P<name>[A-Za-z_]\w*)(?:\.(?P<overload>\w+))?\s*\((?P<params>.*)\)\s*->\s*(?P<returns>.+?)\s*$")


def _literal(text):
    text = text.strip()
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text          # e.g. a bare word; kept as a string


def parse_func(func):
    m = _FUNC.match(func)
    if not m:
        raise SpecError(f"cannot parse func: {func!r}")
    params, kw_only = [], False
    for raw in _split_top(m["params"], ","):
        if raw == "*":
            kw_only = True
            continue
        decl, eq, default = raw.partition("=")
        bits = decl.split()
        if len(bits) != 2:
            raise SpecError(f"{func!r}: cannot parse parameter {raw!r}")
        params.append(Param(bits[1], bits[0], _literal(default) if eq else None, bool(eq), kw_only))
    ret = m["returns"].strip()
    if ret.startswith("("):
        returns = []
        for r in _split_top(ret[1:-1], ","):
            bits = r.split()
            returns.append((bits[0], bits[1] if len(bits) > 1 else None))
    else:
        bits = ret.split()
        returns = [(bits[0], bits[1] if len(bits) > 1 else None)]
    return m["name"], m["overload"] or "", params, returns


# ----------------------------------------------------------------------------- loading

@dataclass
class Spec:
    ops: list
    dtype_sets: dict
    derivatives: set
    derivative_keys: dict = field(default_factory=dict)   # op -> the keys of its derivatives.yaml entry
    errors: list = field(default_factory=list)   # problems found while reading (for the lint test)

    def op(self, full_name):
        for op in self.ops:
            if op.full_name == full_name:
                return op
        raise KeyError(full_name)

    def overloads(self, name):
        return [op for op in self.ops if op.name == name]


def _line_numbers(path):
    lines = {}
    with open(path) as f:
        for i, line in enumerate(f, 1):
            m = re.match(r"\s*-\s*func:\s*(\S+?)\(", line)
            if m:
                lines[m.group(1)] = i
    return lines


@lru_cache(maxsize=None)
def load_spec(ops_path=None, derivatives_path=None):
    ops_path = ops_path or os.environ.get("EMBER_OPS_YAML") or os.path.join(REPO, "ops.yaml")
    derivatives_path = derivatives_path or os.path.join(REPO, "derivatives.yaml")
    with open(ops_path) as f:
        raw = yaml.safe_load(f)
    with open(derivatives_path) as f:
        derivs = yaml.safe_load(f) or []
    derivatives = {d["op"] for d in derivs}
    derivative_keys = {d["op"]: set(d) for d in derivs}
    lines = _line_numbers(ops_path)
    sets = dict(raw.get("dtype_sets") or {})
    errors, ops = [], []
    for entry in raw["ops"]:
        func = entry.get("func", "")
        try:
            name, overload, params, returns = parse_func(func)
        except SpecError as e:
            errors.append(str(e))
            continue
        full = f"{name}.{overload}" if overload else name
        where = f"ops.yaml:{lines.get(full, '?')}: {full}"
        kind = entry.get("kind", "")
        try:
            dtypes = tuple(resolve_dtypes(entry["dtypes"], sets, where)) if "dtypes" in entry else None
        except SpecError as e:
            errors.append(str(e))
            dtypes = None
        test = dict(entry["test"]) if isinstance(entry.get("test"), dict) else None
        test_dtypes = None
        if test is not None and "dtypes" in test:
            try:
                test_dtypes = tuple(resolve_dtypes(test["dtypes"], sets, where + " test"))
            except SpecError as e:
                errors.append(str(e))
        default_derive = ("inplace", "out") if kind == "pointwise" else ()
        returns_tensors = all(t.startswith("Tensor") for t, _ in returns)
        ops.append(Op(
            name=name, overload=overload, params=params, returns=returns, kind=kind,
            variants=tuple(entry.get("variants", ("function", "method"))),
            derive=tuple(entry.get("derive", default_derive)),
            promote=entry.get("promote"),
            dtypes=dtypes,
            reduce=dict(entry.get("reduce") or {}),
            cast=dict(entry.get("cast") or {}),
            test=test,
            differentiable=(full in derivatives) or (kind in ("composite", "view") and returns_tensors),
            test_dtypes_given=test_dtypes,
            numbers=tuple(entry.get("numbers") or ()),
            line=lines.get(full, 0),
        ))
    return Spec(ops, sets, derivatives, derivative_keys, errors)
