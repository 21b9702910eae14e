"""The expression language of `scalar:`, `reduce:` and derivative formulas.

Expressions are Python syntax, parsed with `ast` and restricted to a small
set of forms; names are checked against what is in scope. Two emitters turn
them into C++: one for scalar kernels, one for tensor formulas.
"""
import ast

BINARY = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.Pow: "**", ast.Mod: "%"}
WRAPPING = {ast.Add: "add", ast.Sub: "sub", ast.Mult: "mul"}
COMPARE = {ast.Eq: "==", ast.NotEq: "!=", ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">="}

# Functions of the scalar language: name -> arity (see aten/include/ember/math.h).
SCALAR_FUNCTIONS = {
    "exp": 1, "log": 1, "log1p": 1, "expm1": 1, "sqrt": 1, "sin": 1, "cos": 1, "tan": 1, "tanh": 1,
    "erf": 1, "erfc": 1, "erfinv": 1, "asin": 1, "acos": 1, "atan": 1, "sinh": 1, "cosh": 1, "asinh": 1, "acosh": 1,
    "atanh": 1, "exp2": 1, "log2": 1, "log10": 1, "abs": 1, "sign": 1, "floor": 1, "ceil": 1, "round": 1, "trunc": 1, "isnan": 1, "isinf": 1,
    "pow": 2, "maximum": 2, "minimum": 2, "floor_divide": 2, "trunc_divide": 2, "remainder": 2,
    "atan2": 2, "hypot": 2, "copysign": 2, "fmod": 2, "lgamma": 1, "digamma": 1, "trigamma": 1,
    "where": 3, "clamp": 3, "clamp_mask": 3,
    "bitwise_and": 2, "bitwise_or": 2, "bitwise_xor": 2, "bitwise_not": 1, "left_shift": 2, "right_shift": 2,
    "gcd": 2, "lcm": 2, "nextafter": 2, "signbit": 1, "i0": 1, "i1": 1, "gelu_erf": 1, "gelu_erf_grad": 1,
}
# Those defined in aten/include/ember/math_extra.h: only the functors that call them include it,
# so adding one recompiles those ops' kernels, not every kernel (as an edit of math.h does).
EXTRA_FUNCTIONS = {"gcd", "lcm", "nextafter", "signbit", "i0", "i1", "gelu_erf", "gelu_erf_grad"}


class ExprError(Exception):
    """A bad expression; `offset` is the line within the expression (0-based)."""

    def __init__(self, message, offset=0):
        super().__init__(message)
        self.offset = offset


def parse(text):
    """Parses `text` into an ast.Expression, allowing only the language's forms."""
    if not isinstance(text, str):
        text = str(text)
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError as e:
        raise ExprError(f"syntax error in expression {text!r}: {e.msg}", (e.lineno or 1) - 1) from None
    for node in ast.walk(tree):
        ok = isinstance(node, (ast.Expression, ast.BinOp, ast.UnaryOp, ast.BoolOp, ast.Compare, ast.Call,
                               ast.Name, ast.Constant, ast.Attribute, ast.keyword, ast.Load, ast.operator,
                               ast.unaryop, ast.boolop, ast.cmpop))
        if not ok:
            raise ExprError(f"unsupported syntax {type(node).__name__} in {text!r}")
        if isinstance(node, ast.BinOp) and type(node.op) not in BINARY:
            raise ExprError(f"unsupported operator in {text!r}")
        if isinstance(node, ast.Compare) and (len(node.ops) != 1 or type(node.ops[0]) not in COMPARE):
            raise ExprError(f"only single comparisons (a < b) are supported in {text!r}")
        if isinstance(node, ast.Constant) and not isinstance(node.value, (int, float, bool, type(None))):
            raise ExprError(f"unsupported literal {node.value!r} in {text!r}")
        if isinstance(node, ast.Attribute) and not any(
                isinstance(p, ast.Call) and p.func is node for p in ast.walk(tree)):
            raise ExprError(f"attributes are only allowed as method calls (x.{node.attr}(...)) in {text!r}")
    return tree


def free_names(tree):
    """Names used as values (not as called functions or method names)."""
    called = {id(n.func) for n in ast.walk(tree) if isinstance(n, ast.Call)}
    return [n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and id(n) not in called]


def called_functions(tree):
    return [n.func.id for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)]


# ------------------------------------------------------------------ scalar C++
def scalar_cpp(tree, names):
    """C++ for a scalar expression. `names` maps spec names to C++ names; every
    literal becomes the math type `M`, so float16 math happens in float."""

    def emit(n):
        if isinstance(n, ast.Expression):
            return emit(n.body)
        if isinstance(n, ast.Constant):
            if isinstance(n.value, bool):
                return "M(true)" if n.value else "M(false)"
            if n.value is None:
                raise ExprError("None is not a value in a scalar expression")
            return f"M({n.value!r})"
        if isinstance(n, ast.Name):
            if n.id not in names:
                raise ExprError(f"unknown name '{n.id}' (in scope: {', '.join(sorted(names))})")
            return names[n.id]
        if isinstance(n, ast.UnaryOp):
            inner = emit(n.operand)
            return {ast.USub: f"(-{inner})", ast.UAdd: inner, ast.Not: f"(!{inner})"}[type(n.op)]
        if isinstance(n, ast.BinOp):
            a, b = emit(n.left), emit(n.right)
            if isinstance(n.op, ast.Pow):
                return f"math::pow(M({a}), M({b}))"
            if isinstance(n.op, ast.Mod):
                return f"math::remainder(M({a}), M({b}))"
            if isinstance(n.op, (ast.Add, ast.Sub, ast.Mult)):  # integers wrap, as in PyTorch
                return f"math::wrapping_{WRAPPING[type(n.op)]}({a}, {b})"
            return f"({a} {BINARY[type(n.op)]} {b})"
        if isinstance(n, ast.BoolOp):
            op = " && " if isinstance(n.op, ast.And) else " || "
            return "(" + op.join(f"bool({emit(v)})" for v in n.values) + ")"
        if isinstance(n, ast.Compare):
            return f"({emit(n.left)} {COMPARE[type(n.ops[0])]} {emit(n.comparators[0])})"
        if isinstance(n, ast.Call):
            if not isinstance(n.func, ast.Name):
                raise ExprError("method calls are not part of the scalar language")
            fn = n.func.id
            if fn not in SCALAR_FUNCTIONS:
                raise ExprError(f"unknown function '{fn}' (known: {', '.join(sorted(SCALAR_FUNCTIONS))})")
            if n.keywords or len(n.args) != SCALAR_FUNCTIONS[fn]:
                raise ExprError(f"'{fn}' takes {SCALAR_FUNCTIONS[fn]} positional arguments")
            args = [emit(a) for a in n.args]
            if fn == "where":
                return f"(bool({args[0]}) ? M({args[1]}) : M({args[2]}))"
            if fn in ("clamp", "clamp_mask"):
                return f"math::{fn}(M({args[0]}), {args[1]}, {args[2]})"
            if fn == "nextafter":  # steps by the storage type's ulp (Half, BFloat16), see math_extra.h
                return f"math::nextafter_in<T>(M({args[0]}), M({args[1]}))"
            return f"math::{fn}(" + ", ".join(f"M({a})" for a in args) + ")"
        raise ExprError(f"unsupported expression {ast.dump(n)}")

    return emit(tree)
