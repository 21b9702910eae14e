"""The typed model of ops.yaml and derivatives.yaml, validated on load.

Every problem is a SpecError pointing at `file:line`.
"""
import ast
import re
from dataclasses import dataclass, field
from pathlib import Path

from . import expr
from .errors import SpecError
from .signature import SignatureError, Type, parse_signature
from .yamlio import LineDict, load

ALL_DTYPES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64"]
KINDS = ("pointwise", "reduction", "kernel", "view", "composite", "factory")
PROMOTE = ("common", "float", "bool")
REDUCE_RESULTS = ("same", "long_for_integral", "bool")
OP_KEYS = {"func", "kind", "variants", "derive", "promote", "cast", "dtypes", "scalar", "reduce", "kernels",
           "doc", "test", "nonzero", "nonnegative", "reject_bool", "require_one_of", "allow_internal_overlap",
           "special", "fits_self", "out_overlap", "numbers", "fit_numbers", "python_module", "promote_scalars",
           "same_dtype", "node_name", "node_inputs", "plain_tuple", "autocast", "inplace_variants"}
SPECIAL_KEYS = {"when", "scalar", "dtypes"}
DEVICES = ("cpu", "cuda")
# The ember submodules a `python_module:` may name: each has a package that exports its table.
PYTHON_MODULES = ("linalg", "nn")
# `autocast:` policies (PyTorch's CastPolicy): what an op's entry does to its floating tensor arguments
# while autocast is on for their device type (docs/SPEC.md).
AUTOCAST_POLICIES = ("lower", "fp32", "promote", "fp32_set_opt_dtype", "banned")


@dataclass
class Derivative:
    line: int
    name: str               # the node class name (e.g. "DivBackward0"), or "" for the default
    name_if_given: dict     # optional argument -> the node's name when that argument is given (SumBackward1)
    formulas: dict          # argument name -> ast.Expression
    formula_lines: dict     # argument name -> line
    text: dict              # argument name -> source text
    forward: object = None  # `forward:` the output's tangent (ast.Expression), or None
    forward_text: str = ""
    forward_line: int = 0
    no_forward: str = ""    # `no_forward:` why the op has no forward derivative (it raises)
    groups: list = None     # argument names sharing one formula that returns a tuple (`input, weight: f(...)`)


@dataclass
class Special:
    """A pointwise op's other body, chosen once per call when `when` (over its Scalar arguments) holds."""
    when: object            # ast.Expression over Scalar argument names
    scalar: object          # ast.Expression, as Op.scalar
    scalar_text: str
    dtypes: list            # the compute dtypes it applies to


@dataclass
class Op:
    sig: object
    line: int
    kind: str
    variants: list
    derive: list
    doc: str
    test: dict              # the `test:` mapping ({} when absent): codegen generates nothing from it
    promote: str = None
    cast: dict = field(default_factory=dict)
    dtypes: list = field(default_factory=list)
    scalar: object = None
    scalar_text: str = ""
    reduce: dict = None
    kernels: dict = field(default_factory=dict)
    nonzero: str = None
    reject_bool: str = ""   # the error raised when any input is bool
    nonnegative: str = None  # an integer input that must not hold negative values (pow's exponent)
    require_one_of: list = field(default_factory=list)  # optional arguments of which one must be given
    allow_internal_overlap: bool = False  # an in-place op that may write into an expanded self (fill_)
    fits_self: str = None  # a Scalar argument written into self: checked against self's dtype before dispatch
    out_overlap: str = None  # what a derived non-pointwise out= refuses besides internal overlap: partial | any
    numbers: list = field(default_factory=list)  # Tensor arguments that also take a Python number
    fit_numbers: bool = False  # those numbers must fit the compute dtype (PyTorch's where.Scalar*)
    special: list = field(default_factory=list)  # [Special]: per-call fast paths of a pointwise op
    python_module: str = ""  # the ember submodule of the function form ("" is ember itself)
    promote_scalars: list = field(default_factory=list)  # Scalar arguments that take part in type promotion
    same_dtype: dict = field(default_factory=dict)  # {tensor arg: always | unless_0d}: must have self's dtype (lerp)
    plain_tuple: bool = False  # several returns as a plain tuple (PyTorch's std_mean), not ember.return_types
    node_name: str = ""     # a composite's node name for what its result ends with (PyTorch's: MseLossBackward0)
    node_inputs: list = field(default_factory=list)  # the tensor args that node shows as next_functions
    autocast: dict = field(default_factory=dict)  # device type -> policy (AUTOCAST_POLICIES) under autocast
    inplace_variants: list = None  # the Python forms of the derived `op_` (default: see python_groups)
    derivative: Derivative = None
    test_dtypes: list = field(default_factory=list)  # `test: dtypes:` resolved, for an op without `dtypes:`

    @property
    def name(self):
        return self.sig.name

    @property
    def full_name(self):
        return self.sig.full_name

    @property
    def cpp_name(self):
        return f"{self.sig.name}_{self.sig.overload}" if self.sig.overload else self.sig.name

    @property
    def is_inplace(self):
        """The op itself writes into `self` (its name ends with `_`)."""
        return self.sig.name.endswith("_")

    @property
    def tensor_params(self):
        return [p for p in self.sig.params if p.type.is_tensor]

    @property
    def returns_tensor(self):
        return len(self.sig.returns) == 1 and self.sig.returns[0].type.is_tensor

    @property
    def is_foreach_inplace(self):
        """PyTorch's in-place multi-tensor ops (_foreach_add_): `-> ()`, on a `Tensor[] self`."""
        return self.sig.name.startswith("_foreach_") and self.is_inplace

    @property
    def returns_nothing(self):
        """`-> ()`: the op only writes into (or checks) its arguments; C++ void, None in Python."""
        return not self.sig.returns


@dataclass
class Model:
    ops: list
    dtype_sets: dict

    def overloads(self, name):
        return [op for op in self.ops if op.name == name]

    def by_full_name(self, full):
        return next((op for op in self.ops if op.full_name == full), None)


def _dtype_set_expr(text, sets, file, line):
    """Evaluates `floating + integral + [bool]` against earlier sets."""
    result = []
    for term in [t.strip() for t in str(text).split("+")]:
        if term.startswith("[") and term.endswith("]"):
            names = [n.strip() for n in term[1:-1].split(",") if n.strip()]
            for n in names:
                if n not in ALL_DTYPES:
                    raise SpecError(file, line, f"unknown dtype '{n}' (known: {', '.join(ALL_DTYPES)})")
            result += names
        elif term in sets:
            result += sets[term]
        elif term in ALL_DTYPES:
            result.append(term)
        else:
            raise SpecError(file, line, f"unknown dtype set '{term}' (known: {', '.join(sets) or 'none'})")
    return [d for d in ALL_DTYPES if d in result]


def _dtypes(value, sets, file, line):
    if isinstance(value, list):
        return _dtype_set_expr("[" + ", ".join(map(str, value)) + "]", sets, file, line)
    return _dtype_set_expr(value, sets, file, line)


def _parse_op(entry, sets, file):
    if not isinstance(entry, LineDict) or "func" not in entry:
        raise SpecError(file, getattr(entry, "line", 0), "each op needs a `func:` signature")
    line = entry.line
    for key in entry:
        if key not in OP_KEYS:
            raise SpecError(file, entry.line_of(key), f"unknown key '{key}' (known: {', '.join(sorted(OP_KEYS))})")
    try:
        sig = parse_signature(str(entry["func"]))
    except SignatureError as e:
        raise SpecError(file, entry.line_of("func"), f"{entry['func']!r}: {e}") from None
    kind = entry.get("kind")
    if kind not in KINDS:
        raise SpecError(file, entry.line_of("kind") if "kind" in entry else line,
                        f"{sig.full_name}: kind must be one of {', '.join(KINDS)}, not {kind!r}")
    variants = entry.get("variants", ["function"] if kind == "factory" else ["function", "method"])
    if not isinstance(variants, list) or any(v not in ("function", "method") for v in variants):
        raise SpecError(file, entry.line_of("variants"), f"{sig.full_name}: variants are [function, method]")
    if not sig.returns:
        _check_returns_nothing(entry, sig, kind, file)
    derive = entry.get("derive", ["inplace", "out"] if kind == "pointwise" else [])
    if not isinstance(derive, list) or any(d not in ("inplace", "out") for d in derive):
        raise SpecError(file, entry.line_of("derive"), f"{sig.full_name}: derive lists inplace and/or out")
    if derive and not (len(sig.returns) == 1 and sig.returns[0].type.is_tensor):
        raise SpecError(file, entry.line_of("derive"), f"{sig.full_name}: only ops returning one Tensor derive variants")
    test = entry.get("test", {})
    if not isinstance(test, dict):
        raise SpecError(file, entry.line_of("test"), f"{sig.full_name}: test is a mapping (docs/SPEC.md section 8)")
    op = Op(sig, line, kind, variants, derive, str(entry.get("doc", "")).strip(), test)
    if not op.doc:
        raise SpecError(file, line, f"{sig.full_name}: every op needs a `doc:`")
    if "dtypes" in test:
        op.test_dtypes = _dtypes(test["dtypes"], sets, file, test.line_of("dtypes"))
    if "dtypes" in entry:
        op.dtypes = _dtypes(entry["dtypes"], sets, file, entry.line_of("dtypes"))
    elif kind in ("pointwise", "reduction", "kernel"):
        raise SpecError(file, line, f"{sig.full_name}: a {kind} op needs `dtypes:`")
    names = {p.name for p in sig.params}
    if "nonzero" in entry:
        if entry["nonzero"] not in names:
            raise SpecError(file, entry.line_of("nonzero"), f"{sig.full_name}: unknown argument '{entry['nonzero']}'")
        op.nonzero = entry["nonzero"]

    if "nonnegative" in entry:
        if entry["nonnegative"] not in names:
            raise SpecError(file, entry.line_of("nonnegative"), f"{sig.full_name}: unknown argument '{entry['nonnegative']}'")
        op.nonnegative = entry["nonnegative"]
    if "require_one_of" in entry:
        for n in entry["require_one_of"]:
            p = sig.param(n)
            if p is None or not p.type.optional:
                raise SpecError(file, entry.line_of("require_one_of"), f"{sig.full_name}: '{n}' is not an optional argument")
        op.require_one_of = list(entry["require_one_of"])
    if "allow_internal_overlap" in entry:
        if not op.is_inplace or not isinstance(entry["allow_internal_overlap"], bool):
            raise SpecError(file, entry.line_of("allow_internal_overlap"),
                            f"{sig.full_name}: allow_internal_overlap is true or false, on an in-place op (name_)")
        op.allow_internal_overlap = entry["allow_internal_overlap"]
    if "fits_self" in entry:
        p = sig.param(entry["fits_self"])
        if p is None or p.type.base != "Scalar" or p.type.optional or not sig.param("self"):
            raise SpecError(file, entry.line_of("fits_self"),
                            f"{sig.full_name}: fits_self names a Scalar argument of an op with `self`")
        op.fits_self = entry["fits_self"]
    if "out_overlap" in entry:
        if entry["out_overlap"] not in ("partial", "any") or "out" not in derive or kind in ("pointwise", "reduction"):
            raise SpecError(file, entry.line_of("out_overlap"),
                            f"{sig.full_name}: out_overlap is partial or any, on a non-pointwise op deriving out")
        op.out_overlap = entry["out_overlap"]
    if "numbers" in entry:
        nums = entry["numbers"]
        if not isinstance(nums, list) or any(not (sig.param(n) and sig.param(n).type.base == "Tensor"
                                                  and not sig.param(n).type.is_list) for n in nums):
            raise SpecError(file, entry.line_of("numbers"), f"{sig.full_name}: numbers lists Tensor arguments")
        op.numbers = list(nums)
    if "fit_numbers" in entry:
        if kind != "pointwise" or not op.numbers or not isinstance(entry["fit_numbers"], bool):
            raise SpecError(file, entry.line_of("fit_numbers"),
                            f"{sig.full_name}: fit_numbers is true or false, on a pointwise op with numbers")
        op.fit_numbers = entry["fit_numbers"]
    if "python_module" in entry:
        module = entry["python_module"]
        if module not in PYTHON_MODULES:
            raise SpecError(file, entry.line_of("python_module"), f"{sig.full_name}: unknown python_module "
                            f"{module!r} (known: {', '.join(PYTHON_MODULES)})")
        if "function" not in variants:
            raise SpecError(file, entry.line_of("python_module"),
                            f"{sig.full_name}: python_module places the function form; the op has none")
        op.python_module = module
    if "plain_tuple" in entry:
        if not isinstance(entry["plain_tuple"], bool) or len(sig.returns) < 2:
            raise SpecError(file, entry.line_of("plain_tuple"),
                            f"{sig.full_name}: plain_tuple is true or false, on an op with several returns")
        op.plain_tuple = entry["plain_tuple"]
    if "node_name" in entry:
        if kind != "composite" or not re.fullmatch(r"[A-Z]\w*", str(entry["node_name"])):
            raise SpecError(file, entry.line_of("node_name"),
                            f"{sig.full_name}: node_name is a node class name, on a composite op")
        op.node_name = str(entry["node_name"])
    if "node_inputs" in entry:
        tensors = {p.name for p in sig.params if p.type.base == "Tensor" and not p.type.is_list}
        names = entry["node_inputs"]
        if not op.node_name or not isinstance(names, list) or not names or any(n not in tensors for n in names):
            raise SpecError(file, entry.line_of("node_inputs"),
                            f"{sig.full_name}: node_inputs lists Tensor arguments, beside node_name")
        op.node_inputs = list(names)
    if "autocast" in entry:
        op.autocast = _autocast(entry, sig, kind, file)
    if "inplace_variants" in entry:
        forms = entry["inplace_variants"]
        if ("inplace" not in derive or not sig.param("self") or not isinstance(forms, list) or not forms
                or any(v not in variants for v in forms)):
            raise SpecError(file, entry.line_of("inplace_variants"), f"{sig.full_name}: inplace_variants lists "
                            "variants of the op (function, method) for its derived inplace form")
        op.inplace_variants = list(forms)
    if "reject_bool" in entry:
        op.reject_bool = str(entry["reject_bool"])
    if "same_dtype" in entry:
        same = entry["same_dtype"]
        if (kind != "pointwise" or not sig.param("self") or not isinstance(same, dict)
                or any(not (sig.param(n) and sig.param(n).type.base == "Tensor" and not sig.param(n).type.is_list)
                       or rule not in ("always", "unless_0d") for n, rule in same.items())):
            raise SpecError(file, entry.line_of("same_dtype"), f"{sig.full_name}: same_dtype maps Tensor arguments "
                            "of a pointwise op with self to always or unless_0d")
        op.same_dtype = dict(same)
    if kind == "pointwise":
        op.promote = entry.get("promote")
        if op.promote not in PROMOTE:
            raise SpecError(file, entry.line_of("promote") if "promote" in entry else line,
                            f"{sig.full_name}: promote must be one of {', '.join(PROMOTE)}")
        cast = entry.get("cast", {})
        for arg, dt in cast.items():
            if arg not in names:
                raise SpecError(file, entry.line_of("cast"), f"{sig.full_name}: cast of unknown argument '{arg}'")
            if dt != "bool":
                raise SpecError(file, entry.line_of("cast"), f"{sig.full_name}: only casts to bool are supported")
        op.cast = dict(cast)
        if len(op.tensor_params) > 3:
            raise SpecError(file, line, f"{sig.full_name}: pointwise ops take at most 3 tensors")
        if "scalar" not in entry:
            raise SpecError(file, line, f"{sig.full_name}: a pointwise op needs `scalar:`")
        op.scalar_text = str(entry["scalar"])
        try:
            op.scalar = expr.parse(op.scalar_text)
            scalar_names = {p.name for p in sig.params if p.type.base in ("Tensor", "Scalar")}
            expr.scalar_cpp(op.scalar, {n: n for n in scalar_names})
        except expr.ExprError as e:
            raise SpecError(file, entry.line_of("scalar"), f"{sig.full_name}: {e}") from None
        op.special = _specials(entry, op, sets, file)
        scalars = {p.name for p in sig.params if p.type.base == "Scalar"}
        promote_scalars = entry.get("promote_scalars", [])
        if not isinstance(promote_scalars, list) or not set(promote_scalars) <= scalars:
            raise SpecError(file, entry.line_of("promote_scalars"),
                            f"{sig.full_name}: promote_scalars lists Scalar arguments")
        op.promote_scalars = list(promote_scalars)
    elif "scalar" in entry or "special" in entry:
        key = "scalar" if "scalar" in entry else "special"
        raise SpecError(file, entry.line_of(key), f"{sig.full_name}: only pointwise ops take `{key}:`")

    if kind == "reduction":
        red = entry.get("reduce")
        if not isinstance(red, dict) or not {"init", "combine", "result"} <= set(red):
            raise SpecError(file, entry.line_of("reduce") if "reduce" in entry else line,
                            f"{sig.full_name}: a reduction needs `reduce: {{init, combine, result}}`")
        if red["result"] not in REDUCE_RESULTS:
            raise SpecError(file, entry.line_of("reduce"), f"{sig.full_name}: reduce.result is one of {', '.join(REDUCE_RESULTS)}")
        if str(red["init"]) not in ("lowest", "highest") and not isinstance(red["init"], (int, float)):
            raise SpecError(file, entry.line_of("reduce"), f"{sig.full_name}: reduce.init is a number, lowest or highest")
        try:
            combine = expr.parse(str(red["combine"]))
            expr.scalar_cpp(combine, {"a": "a", "b": "b"})
        except expr.ExprError as e:
            raise SpecError(file, entry.line_of("reduce"), f"{sig.full_name}: reduce.combine: {e}") from None
        op.reduce = {"init": red["init"], "combine": combine, "result": red["result"]}

    if kind == "kernel":
        kernels = entry.get("kernels")
        if not isinstance(kernels, dict) or "cpu" not in kernels:
            raise SpecError(file, line, f"{sig.full_name}: a kernel op needs `kernels: {{cpu: name}}`")
        for dev in kernels:
            if dev not in DEVICES:
                raise SpecError(file, entry.line_of("kernels"), f"{sig.full_name}: unknown device '{dev}'")
            if not re.fullmatch(r"[A-Za-z_]\w*", str(kernels[dev])):
                raise SpecError(file, entry.line_of("kernels"), f"{sig.full_name}: bad kernel name {kernels[dev]!r}")
        op.kernels = dict(kernels)
    return op


def _check_returns_nothing(entry, sig, kind, file):
    """`-> ()` is PyTorch's schema of ops that only write into their arguments (_foreach_add_): a kernel or
    composite taking a tensor, with nothing derived from a result it does not have."""
    name = sig.full_name
    if kind not in ("kernel", "composite"):
        raise SpecError(file, entry.line_of("func"), f"{name}: `-> ()` (returns nothing) is for kernel and "
                        f"composite ops that write into their arguments, not a {kind} op")
    if not any(p.type.base == "Tensor" for p in sig.params):
        raise SpecError(file, entry.line_of("func"),
                        f"{name}: `-> ()` (returns nothing) needs a Tensor or Tensor[] argument to write into")
    if sig.name.startswith("_foreach_") and sig.name.endswith("_") and not (
            sig.params and sig.params[0].name == "self" and sig.params[0].type.is_tensor_list):
        raise SpecError(file, entry.line_of("func"), f"{name}: an in-place _foreach_ op takes `Tensor[] self` "
                        "first (its Python function returns it, as PyTorch's)")
    if entry.get("derive"):
        raise SpecError(file, entry.line_of("derive"), f"{name}: an op returning nothing (`-> ()`) derives no "
                        "in-place or out= variant (PyTorch's out= ops return their `out`)")
    for key in ("autocast", "node_name"):
        if key in entry:
            raise SpecError(file, entry.line_of(key), f"{name}: {key} needs a result; the op returns nothing (`-> ()`)")


def _autocast(entry, sig, kind, file):
    """`autocast: POLICY` (every device type) or `{cpu: POLICY, cuda: POLICY}` (either may be absent)."""
    value, line = entry["autocast"], entry.line_of("autocast")
    policies = dict(value) if isinstance(value, dict) else {d: value for d in DEVICES}
    if not policies or any(d not in DEVICES or p not in AUTOCAST_POLICIES for d, p in policies.items()):
        raise SpecError(file, line, f"{sig.full_name}: autocast is one of {', '.join(AUTOCAST_POLICIES)}, "
                        f"or a mapping {{cpu: POLICY, cuda: POLICY}}")
    if kind == "factory" or sig.name.endswith("_") or not any(p.type.is_tensor or p.type.is_tensor_list
                                                               for p in sig.params):
        raise SpecError(file, line, f"{sig.full_name}: autocast is for out-of-place ops with tensor arguments")
    dtype = sig.param("dtype")
    if "fp32_set_opt_dtype" in policies.values() and not (dtype and dtype.type.base == "ScalarType"
                                                          and dtype.type.optional):
        raise SpecError(file, line, f"{sig.full_name}: fp32_set_opt_dtype needs a `ScalarType? dtype` argument")
    return policies


def _specials(entry, op, sets, file):
    """`special:` cases: [{when, scalar, dtypes}], tried in order before the op's own `scalar:`."""
    cases = entry.get("special", [])
    line = entry.line_of("special") if "special" in entry else op.line
    name = op.full_name
    if not isinstance(cases, list):
        raise SpecError(file, line, f"{name}: special is a list of {{when, scalar, dtypes}}")
    scalars = {p.name for p in op.sig.params if p.type.base == "Scalar" and not p.type.optional}
    tensors = {p.name for p in op.sig.params if p.type.base == "Tensor"}
    result = []
    for case in cases:
        case_line = getattr(case, "line", line)
        if not isinstance(case, dict) or not {"when", "scalar"} <= set(case) or not set(case) <= SPECIAL_KEYS:
            raise SpecError(file, case_line, f"{name}: each special case is {{when, scalar, dtypes}} (dtypes optional)")
        try:
            when = expr.parse(str(case["when"]))
            expr.scalar_cpp(when, {n: n for n in scalars})
        except expr.ExprError as e:
            raise SpecError(file, case_line, f"{name}: special.when (over Scalar arguments only): {e}") from None
        try:
            body = expr.parse(str(case["scalar"]))
            expr.scalar_cpp(body, {n: n for n in scalars | tensors})
        except expr.ExprError as e:
            raise SpecError(file, case_line, f"{name}: special.scalar: {e}") from None
        dtypes = _dtypes(case["dtypes"], sets, file, case_line) if "dtypes" in case else list(op.dtypes)
        if not set(dtypes) <= set(op.dtypes):
            raise SpecError(file, case_line, f"{name}: special.dtypes {sorted(set(dtypes) - set(op.dtypes))} "
                            f"are not among the op's dtypes")
        result.append(Special(when, body, str(case["scalar"]), dtypes))
    return result


def _parse_derivative(entry, model, file):
    if not isinstance(entry, LineDict) or "op" not in entry:
        raise SpecError(file, getattr(entry, "line", 0), "each derivative needs `op:`")
    op = model.by_full_name(str(entry["op"]))
    if op is None:
        raise SpecError(file, entry.line_of("op"), f"derivative of unknown op '{entry['op']}'")
    if op.derivative is not None:
        raise SpecError(file, entry.line, f"duplicate derivative for '{op.full_name}'")
    if op.kind in ("composite", "factory"):
        raise SpecError(file, entry.line, f"'{op.full_name}' is {op.kind}: autograd records the ops it is made of")
    if op.returns_nothing:
        raise SpecError(file, entry.line,
                        f"'{op.full_name}' returns nothing (`-> ()`): it has no result to differentiate")
    formulas, lines, texts = {}, {}, {}
    node_name = str(entry.get("name", ""))
    if node_name and not re.fullmatch(r"[A-Z]\w*", node_name):
        raise SpecError(file, entry.line_of("name"), f"bad node name {node_name!r}")
    name_if_given = entry.get("name_if_given", {})
    if not isinstance(name_if_given, dict) or any(
            not (op.sig.param(a) and op.sig.param(a).type.optional) or not re.fullmatch(r"[A-Z]\w*", str(n))
            for a, n in name_if_given.items()):
        raise SpecError(file, entry.line_of("name_if_given"),
                        f"{op.full_name}: name_if_given maps optional arguments to node names")
    forward, forward_text, no_forward = None, "", ""
    if "forward" in entry and "no_forward" in entry:
        raise SpecError(file, entry.line_of("no_forward"), f"{op.full_name}: give `forward:` or `no_forward:`, not both")
    if "forward" in entry:
        forward_text = str(entry["forward"])
        try:
            forward = expr.parse(forward_text)
        except expr.ExprError as e:
            raise SpecError(file, entry.line_of("forward"), f"{op.full_name}.forward: {e}") from None
    if "no_forward" in entry:
        no_forward = str(entry["no_forward"] or "").strip()
        if not no_forward:
            raise SpecError(file, entry.line_of("no_forward"), f"{op.full_name}: no_forward is the reason (non-empty)")
    groups = []
    for key, text in entry.items():
        if key in ("op", "name", "name_if_given", "forward", "no_forward"):
            continue
        # `input, weight, bias: f(...)`: one call computes them all (its i-th return is the i-th gradient)
        names = [a.strip() for a in str(key).split(",")]
        for arg in names:
            param = op.sig.param(arg)
            if param is None:
                raise SpecError(file, entry.line_of(key), f"{op.full_name} has no argument '{arg}'")
            if param.type.base != "Tensor":
                raise SpecError(file, entry.line_of(key), f"{op.full_name}: '{arg}' is not a Tensor and has no gradient")
        try:
            tree = expr.parse(str(text))
        except expr.ExprError as e:
            raise SpecError(file, entry.line_of(key), f"{op.full_name}.{key}: {e}") from None
        if len(names) > 1:
            groups.append(names)
        for i, arg in enumerate(names):
            formulas[arg] = tree if len(names) == 1 else ast.Expression(
                ast.Subscript(tree.body, ast.Constant(i), ast.Load()))
            lines[arg], texts[arg] = entry.line_of(key), str(text)
    return Derivative(entry.line, node_name, dict(name_if_given), formulas, lines, texts, forward, forward_text,
                      entry.line_of("forward") if forward is not None else entry.line, no_forward, groups)


def load_model(ops_path, derivatives_path):
    ops_file, der_file = Path(ops_path).name, Path(derivatives_path).name
    doc = load(ops_path, ops_file)
    if not isinstance(doc, LineDict) or "ops" not in doc:
        raise SpecError(ops_file, 1, "expected a mapping with `dtype_sets:` and `ops:`")
    sets = {}
    for name, value in (doc.get("dtype_sets") or {}).items():
        sets[name] = _dtypes(value, sets, ops_file, doc["dtype_sets"].line_of(name))
    ops, seen, first_of_name = [], {}, {}
    for entry in doc["ops"]:
        op = _parse_op(entry, sets, ops_file)
        if op.full_name in seen:
            raise SpecError(ops_file, op.line, f"duplicate op '{op.full_name}' (first at line {seen[op.full_name]})")
        seen[op.full_name] = op.line
        first = first_of_name.setdefault(op.name, op)
        if first.python_module != op.python_module:
            raise SpecError(ops_file, op.line, f"{op.full_name}: python_module {op.python_module or 'ember'!r} differs "
                            f"from that of {first.full_name} ({first.python_module or 'ember'!r}); overloads "
                            "share one function")
        ops.append(op)
    model = Model(ops, sets)
    derivs = load(derivatives_path, der_file) or []
    if not isinstance(derivs, list):
        raise SpecError(der_file, 1, "expected a list of derivative entries")
    for entry in derivs:
        op = model.by_full_name(str(entry.get("op"))) if isinstance(entry, dict) else None
        d = _parse_derivative(entry, model, der_file)
        op.derivative = d
    # Formulas are checked against the whole model once every op is known.
    from .formula import check_formulas
    from .forward import check_forward
    check_formulas(model, der_file)
    check_forward(model, der_file)
    return model
