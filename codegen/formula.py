"""Derivative formulas: type-checked against the ops and helpers, emitted as
C++ calls to ember ops (so higher-order gradients work), and analysed for the
state a backward node must save: the free names of its formulas."""
import ast

from . import expr
from .errors import SpecError
from .signature import Type, parse_signature

# C++ helpers for formulas (aten/src/autograd/helpers.cpp), in signature grammar.
HELPERS = {s.name: s for s in map(parse_signature, [
    "zeros_like(Tensor self) -> Tensor",
    "ones_like(Tensor self) -> Tensor",
    "rounded_div_backward(Tensor grad, Tensor saved) -> Tensor",
    "maybe_multiply(Tensor grad, Scalar factor) -> Tensor",
    "mm_mat2_backward(Tensor grad, Tensor self, int[] mat2_strides) -> Tensor",
    "sum_to(Tensor grad, int[] shape) -> Tensor",
    "sum_over(Tensor self, int[1]? dim, bool keepdim) -> Tensor",
    "expand_reduced(Tensor grad, int[] shape, int[1]? dim, bool keepdim) -> Tensor",
    "prod_backward(Tensor grad, Tensor self, Tensor result, int[1]? dim, bool keepdim) -> Tensor",
    "select_extreme_backward(Tensor grad, Tensor self, Tensor result, int[1]? dim, bool keepdim) -> Tensor",
    "index_reduction_backward(Tensor grad, Tensor indices, int[] shape, int dim, bool keepdim) -> Tensor",
    "vector_norm_backward(Tensor grad, Tensor self, Scalar ord, Tensor result, int[1]? dim, bool keepdim) -> Tensor",
    "invert_permutation(int[] dims) -> int[]",
    "select_backward(Tensor grad, int[] shape, int dim, int index) -> Tensor",
    "slice_backward(Tensor grad, int[] shape, int dim, int? start, int? end, int step) -> Tensor",
    "index_backward(Tensor grad, int[] shape, Tensor?[] indices) -> Tensor",
    "index_put(Tensor self, Tensor?[] indices, Tensor values, bool accumulate) -> Tensor",
    "index_values_backward(Tensor grad, Tensor?[] indices, int[] shape) -> Tensor",
    "clamp_mask(Tensor self, Scalar? min, Scalar? max) -> Tensor",
])}

BINARY_OPS = {ast.Add: "add", ast.Sub: "sub", ast.Mult: "mul", ast.Div: "true_divide", ast.Pow: "pow",
              ast.Mod: "remainder"}
SCALAR_OPS = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/"}
COMPARE_OPS = {ast.Eq: "eq", ast.NotEq: "ne", ast.Lt: "lt", ast.LtE: "le", ast.Gt: "gt", ast.GtE: "ge"}

TENSOR = Type("Tensor")
NUMBER = Type("Scalar")
INT_LIST = Type("int", is_list=True)
# Geometry a formula may read of a tensor argument without saving it (as_strided's input):
# name -> (C++ member type, Tensor getter, formula type, PyTorch's saved-field suffix).
GEOMETRY = {"shape": ("DimVector", "sizes", INT_LIST, "sym_sizes"),
            "strides": ("DimVector", "strides", INT_LIST, "sym_strides"),
            "storage_offset": ("int64_t", "offset", Type("int"), "sym_storage_offset")}


class FormulaError(Exception):
    pass


def _is_number(t):
    return t.base in ("Scalar", "int", "float", "bool") and not t.is_list


def coerce(cpp, have, want, wrap=True):
    """C++ that passes a value of type `have` where `want` is expected (a number as a wrapped
    0-d tensor only when `wrap`)."""
    if have is None:  # the None literal
        if want.optional or want.is_tensor:
            return "std::nullopt" if not want.is_tensor else "Tensor()"
        raise FormulaError(f"None passed where {want} is expected")
    if want.is_tensor:
        if have.is_tensor:
            return cpp
        if _is_number(have) and not have.optional and wrap:
            return f"wrap_number(Scalar({cpp}))"
    elif want.base == "Scalar" and not want.is_list:
        if _is_number(have) and not have.optional:
            return f"Scalar({cpp})"
        if have.base == "Scalar" and have.optional and want.optional:
            return cpp
    elif want.is_list and want.base == "int":
        if have.is_list and have.base == "int":
            if have.optional and not want.optional:
                raise FormulaError(f"optional {have} passed where {want} is expected")
            return cpp
        if have.base == "int" and not have.is_list:
            if have.optional:
                return f"optional_int_list({cpp})"
            return f"IntList{{{cpp}}}"
    elif want.base == have.base and want.is_list == have.is_list:
        if have.optional and not want.optional:
            raise FormulaError(f"optional {have} passed where {want} is expected")
        return cpp
    elif want.base in ("int", "float") and have.base in ("int", "float", "Scalar") and not have.is_list:
        return cpp
    raise FormulaError(f"cannot pass {have} where {want} is expected")


def geometry_members(shapes):
    """The node members that keep `shape(x)`, `strides(x)`, `storage_offset(x)` of the formulas
    (`shapes`: (name, what) pairs), with the field names PyTorch shows them by."""
    out = []
    for name, what in sorted(shapes):
        cpp_type, getter, _, field = GEOMETRY[what]
        out.append({"member": f"{name}_{what}", "type": cpp_type, "value": f"{name}.{getter}()",
                    "field": f"{name}_{field}"})
    return out


class Emitter:
    """Turns one formula into C++; records which names it reads."""

    def __init__(self, model, scope):
        self.model, self.scope = model, scope  # scope: name -> (cpp, Type)
        self.used, self.shapes = set(), set()

    def bind(self, sig, args, kwargs, skip_self=False, wrap=True):
        params = sig.params
        out = []
        positional = [p for p in params if not p.kw_only]
        if len(args) > len(positional):
            raise FormulaError(f"{sig.name}() takes {len(positional)} positional arguments, got {len(args)}")
        given = {p.name: a for p, a in zip(positional, args)}
        for k, v in kwargs.items():
            if not sig.param(k):
                raise FormulaError(f"{sig.name}() has no argument '{k}'")
            given[k] = v
        for p in params:
            if p.name in given:
                cpp, ty = given[p.name]
                out.append(coerce(cpp, ty, p.type, wrap))
            elif p.has_default:
                from .cpp import default_cpp
                out.append(default_cpp(p))
            else:
                raise FormulaError(f"{sig.name}() is missing argument '{p.name}'")
        return out

    def call_op(self, name, args, kwargs):
        ops = self.model.overloads(name)
        if not ops:
            raise FormulaError(f"unknown function '{name}'")
        errors = []
        # Overloads taking the numbers as Scalars first (pow(self, exponent - 1) is pow.Tensor_Scalar,
        # as PyTorch's formula), then any, wrapping numbers as 0-d tensors.
        for op, wrap in [(op, False) for op in ops] + [(op, True) for op in ops]:
            try:
                cpp_args = self.bind(op.sig, args, kwargs, wrap=wrap)
            except FormulaError as e:
                errors.append(str(e))
                continue
            rets = op.sig.returns
            if not rets:
                errors.append(f"{op.full_name} returns nothing (`-> ()`): a formula cannot use its result")
                continue
            ty = rets[0].type if len(rets) == 1 else Type("tuple")
            return f"ember::{op.cpp_name}({', '.join(cpp_args)})", ty
        raise FormulaError("; ".join(dict.fromkeys(errors)))

    def emit(self, n):
        if isinstance(n, ast.Expression):
            return self.emit(n.body)
        if isinstance(n, ast.Constant):
            v = n.value
            if v is None:
                return "std::nullopt", None
            if isinstance(v, bool):
                return ("true" if v else "false"), Type("bool")
            if isinstance(v, int):
                return f"int64_t({v})", Type("int")
            return repr(float(v)), Type("float")
        if isinstance(n, ast.Name):
            if n.id not in self.scope:
                raise FormulaError(f"unknown name '{n.id}' (in scope: {', '.join(sorted(self.scope))})")
            self.used.add(n.id)
            return self.scope[n.id]
        if isinstance(n, ast.UnaryOp):
            if isinstance(n.operand, ast.Constant) and isinstance(n.op, ast.USub):
                cpp, ty = self.emit(n.operand)
                return f"(-{cpp})", ty
            name = {ast.USub: "neg", ast.Not: "logical_not", ast.UAdd: None}[type(n.op)]
            cpp, ty = self.emit(n.operand)
            return (cpp, ty) if name is None else self.call_op(name, [(cpp, ty)], {})
        if isinstance(n, ast.BinOp):
            left, right = self.emit(n.left), self.emit(n.right)
            symbol = SCALAR_OPS.get(type(n.op))
            if symbol and all(t is not None and _is_number(t) and not t.optional for _, t in (left, right)):
                # Two numbers: C++ Scalar arithmetic in double (a tensor op would round to float32).
                return f"autograd::scalar_arith('{symbol}', Scalar({left[0]}), Scalar({right[0]}))", NUMBER
            return self.call_op(BINARY_OPS[type(n.op)], [left, right], {})
        if isinstance(n, ast.Compare):
            return self.call_op(COMPARE_OPS[type(n.ops[0])], [self.emit(n.left), self.emit(n.comparators[0])], {})
        if isinstance(n, ast.BoolOp):
            name = "logical_and" if isinstance(n.op, ast.And) else "logical_or"
            acc = self.emit(n.values[0])
            for v in n.values[1:]:
                acc = self.call_op(name, [acc, self.emit(v)], {})
            return acc
        if isinstance(n, ast.Subscript):  # one return of a grouped formula's call (model.py builds these)
            cpp, ty = self.emit(n.value)
            if ty is None or ty.base != "tuple":
                raise FormulaError(f"a formula for several arguments must return a tuple, not {ty}")
            return f"std::get<{n.slice.value}>({cpp})", TENSOR
        if isinstance(n, ast.Call):
            kwargs = {k.arg: self.emit(k.value) for k in n.keywords}
            if isinstance(n.func, ast.Attribute):  # x.method(...): the op with x first
                receiver = self.emit(n.func.value)
                return self.call_op(n.func.attr, [receiver] + [self.emit(a) for a in n.args], kwargs)
            name = n.func.id
            if name in GEOMETRY:
                if len(n.args) != 1 or not isinstance(n.args[0], ast.Name) or n.args[0].id not in self.scope:
                    raise FormulaError(f"{name}() takes one argument name")
                self.shapes.add((n.args[0].id, name))
                return f"{n.args[0].id}_{name}", GEOMETRY[name][2]
            args = [self.emit(a) for a in n.args]
            if name in HELPERS:
                sig = HELPERS[name]
                cpp_args = self.bind(sig, args, kwargs)
                return f"autograd::{name}({', '.join(cpp_args)})", sig.returns[0].type
            return self.call_op(name, args, kwargs)
        raise FormulaError(f"unsupported expression {ast.dump(n)}")


def formula_scope(op):
    """Names a formula of `op` may read, with their C++ spellings and types."""
    scope = {"grad": ("grad", TENSOR)}
    for p in op.sig.params:
        scope[p.name] = (p.name, p.type)
    for r in op.sig.returns:
        scope[r.name] = (r.name, r.type)
    return scope


def emit_formulas(model, op):
    """-> {arg: cpp}, the set of names/shapes the node must save, and the grouped
    formulas' calls ({"var", "cpp", "args"}: computed once into `var`, read by each arg)."""
    out, used, shapes, groups = {}, set(), set(), []
    grouped = {a: k for k, names in enumerate(op.derivative.groups or []) for a in names}
    for k, names in enumerate(op.derivative.groups or []):
        em = Emitter(model, formula_scope(op))
        cpp, _ = em.emit(ast.Expression(op.derivative.formulas[names[0]].body.value))
        groups.append({"var": f"grads{k}__", "cpp": cpp, "args": names})
        used |= em.used
        shapes |= em.shapes
    for arg, tree in op.derivative.formulas.items():
        if arg in grouped:
            out[arg] = f"std::get<{tree.body.slice.value}>(grads{grouped[arg]}__)"
            continue
        em = Emitter(model, formula_scope(op))
        cpp, ty = em.emit(tree)
        if not ty or not ty.is_tensor:
            raise FormulaError(f"the formula for '{arg}' must give a Tensor, not {ty}")
        out[arg] = cpp
        used |= em.used
        shapes |= em.shapes
    used.discard("grad")
    return out, used, shapes, groups


def check_formulas(model, file):
    for op in model.ops:
        if op.derivative is None:
            continue
        for arg, tree in op.derivative.formulas.items():
            try:
                em = Emitter(model, formula_scope(op))
                _, ty = em.emit(tree)
                if not ty or not ty.is_tensor:
                    raise FormulaError(f"the formula must give a Tensor, not {ty}")
            except FormulaError as e:
                raise SpecError(file, op.derivative.formula_lines[arg], f"{op.full_name}.{arg}: {e}") from None
